//! Compile-time checks of typed prompts against `#[prompty::tool]` handlers.
//!
//! `#[prompty::tool]` gives its handle struct a `__PROMPTY_TOOL` constant ([`ToolInfo`]: the
//! tool's name and, per argument, its JSON name, its type as written and the JSON shape of that
//! type). A typed prompt with a `kind: function` tool resolves the tool's name where the prompt is
//! included and evaluates [`check_tool`] on the handler's `ToolInfo` and the declared tool in a
//! constant: a mismatch is a constant-evaluation panic, i.e. a compile error with the message built
//! here (it names the `.prompty` file, line and column). A name with no handler resolves to a
//! fallback (the generated module's own item, or [`NotATool`] for any type without the constant),
//! whose `ToolInfo` is [`ToolInfo::MISSING`].

/// The JSON shape of a tool argument's Rust type, as far as the compiler can tell.
#[derive(Debug, Clone, Copy)]
pub enum ArgShape {
    /// `String`, `char`, `Box<str>`, `Cow<str>`...
    String,
    /// Integer types.
    Integer,
    /// `f32`, `f64`.
    Float,
    /// `bool`.
    Boolean,
    /// `Vec<T>`, slices, arrays, sets...: the element's shape.
    Array(&'static ArgShape),
    /// Maps and `serde_json::Map`.
    Object,
    /// `serde_json::Value`: takes anything.
    Any,
    /// Any other type (the user's own, deriving `Deserialize`): not checked.
    Other,
}

/// One argument of a `#[prompty::tool]` handler.
#[derive(Debug, Clone, Copy)]
pub struct ArgInfo {
    /// Its JSON property name (the parameter's name, or its `#[serde(rename)]`).
    pub name: &'static str,
    /// Its type as written.
    pub ty: &'static str,
    /// The JSON shape of its type (of `T` for `Option<T>`).
    pub shape: ArgShape,
    /// Whether the model may leave it out (`Option<T>` or `#[serde(default)]`).
    pub optional: bool,
}

/// What a `#[prompty::tool]` handler looks like to the compile-time checks.
#[derive(Debug, Clone, Copy)]
pub struct ToolInfo {
    /// The tool's name (what it is registered and called under); empty when missing.
    pub name: &'static str,
    /// The fn's name.
    pub fn_name: &'static str,
    /// Its arguments.
    pub args: &'static [ArgInfo],
    /// False for the fallback found when no handler is in scope.
    pub found: bool,
}

impl ToolInfo {
    /// What a name without a `#[prompty::tool]` handler resolves to.
    pub const MISSING: ToolInfo = ToolInfo { name: "", fn_name: "", args: &[], found: false };
}

/// What a tool name without a `#[prompty::tool]` handler resolves to in a typed prompt (whose
/// compile-time check then fails, so no value of it is ever called).
#[derive(Debug, Clone, Copy, Default)]
pub struct MissingHandler {}

impl crate::ToolFunction for MissingHandler {
    fn call<'a>(&'a self, _args: serde_json::Value) -> crate::BoxFuture<'a, crate::Result<serde_json::Value>> {
        Box::pin(std::future::ready(Err(crate::Error::Execution {
            message: "this tool has no #[prompty::tool] handler".to_owned(),
        })))
    }
}

/// Gives every type a `__PROMPTY_TOOL` that says "no handler"; a `#[prompty::tool]` handle
/// struct's inherent constant takes precedence.
pub trait NotATool {
    /// The missing handler.
    const __PROMPTY_TOOL: ToolInfo = ToolInfo::MISSING;
}

impl<T: ?Sized> NotATool for T {}

/// `Classify::<T>::SHAPE` is the shape of `T`: an inherent constant for the types listed here,
/// else (with [`ClassifyFallback`] in scope) [`ArgShape::Other`].
pub struct Classify<T: ?Sized>(core::marker::PhantomData<T>);

/// The shape of types `Classify` does not list.
pub trait ClassifyFallback {
    /// Not checked.
    const SHAPE: ArgShape = ArgShape::Other;
}

impl<T: ?Sized> ClassifyFallback for Classify<T> {}

macro_rules! shapes {
    ($shape:ident: $($ty:ty),* $(,)?) => {
        $(impl Classify<$ty> {
            /// The JSON shape of the type.
            pub const SHAPE: ArgShape = ArgShape::$shape;
        })*
    };
}

shapes!(String: String, char, Box<str>, std::borrow::Cow<'static, str>, std::rc::Rc<str>, std::sync::Arc<str>);
shapes!(Integer: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
shapes!(Float: f32, f64);
shapes!(Boolean: bool);
shapes!(Any: serde_json::Value);
shapes!(Object: serde_json::Map<String, serde_json::Value>);

impl<K, V, S> Classify<std::collections::HashMap<K, V, S>> {
    /// A JSON object.
    pub const SHAPE: ArgShape = ArgShape::Object;
}

impl<K, V> Classify<std::collections::BTreeMap<K, V>> {
    /// A JSON object.
    pub const SHAPE: ArgShape = ArgShape::Object;
}

impl<T, S> Classify<std::collections::HashSet<T, S>> {
    /// A JSON array.
    pub const SHAPE: ArgShape = ArgShape::Array(&ArgShape::Other);
}

impl<T> Classify<std::collections::BTreeSet<T>> {
    /// A JSON array.
    pub const SHAPE: ArgShape = ArgShape::Array(&ArgShape::Other);
}

impl<T> Classify<std::collections::VecDeque<T>> {
    /// A JSON array.
    pub const SHAPE: ArgShape = ArgShape::Array(&ArgShape::Other);
}

impl<T, const N: usize> Classify<[T; N]> {
    /// A JSON array.
    pub const SHAPE: ArgShape = ArgShape::Array(&ArgShape::Other);
}

/// The kind of a declared tool parameter.
#[derive(Debug, Clone, Copy)]
pub enum DeclaredKind {
    /// `string`
    String,
    /// `integer`
    Integer,
    /// `float`
    Float,
    /// `boolean`
    Boolean,
    /// `array`, with its `items` kind when declared.
    Array(Option<&'static DeclaredKind>),
    /// `object`
    Object,
    /// Anything else (`union`, ...): not checked.
    Any,
}

/// One declared parameter of a `kind: function` tool.
#[derive(Debug, Clone, Copy)]
pub struct DeclaredParam {
    /// Its name.
    pub name: &'static str,
    /// Its kind.
    pub kind: DeclaredKind,
    /// The kind as written (`string`, `array of integer`...), for messages.
    pub kind_text: &'static str,
    /// `file:line:column` of its declaration.
    pub at: &'static str,
}

/// A declared `kind: function` tool.
#[derive(Debug, Clone, Copy)]
pub struct DeclaredTool {
    /// Its name.
    pub name: &'static str,
    /// The Rust name its handler is looked up by.
    pub rust_name: &'static str,
    /// `file:line:column` of its declaration.
    pub at: &'static str,
    /// Where its handler is looked up, as a phrase (`the module that includes the prompt`,
    /// `` `crate::tools` ``), for the message when none is found.
    pub scope: &'static str,
    /// How to fix a missing handler, as a phrase completing "define `#[prompty::tool] fn x(...)`".
    pub fix: &'static str,
    /// Its parameters.
    pub params: &'static [DeclaredParam],
}

const CAPACITY: usize = 4096;

/// The problems found by [`check_tool`], as one message (lines joined with newlines).
pub struct Report {
    buf: [u8; CAPACITY],
    len: usize,
    problems: usize,
}

impl Report {
    const fn new() -> Report {
        Report { buf: [0; CAPACITY], len: 0, problems: 0 }
    }

    /// Whether a problem was found.
    pub const fn failed(&self) -> bool {
        self.problems > 0
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => s,
            Err(_) => "the tool does not match its #[prompty::tool] handler",
        }
    }

    /// Appends `s` when it fits whole (so the text stays valid UTF-8).
    const fn push(mut self, s: &str) -> Report {
        let bytes = s.as_bytes();
        if self.len + bytes.len() > CAPACITY {
            return self;
        }
        let mut i = 0;
        while i < bytes.len() {
            self.buf[self.len + i] = bytes[i];
            i += 1;
        }
        self.len += bytes.len();
        self
    }

    const fn problem(mut self) -> Report {
        if self.problems > 0 {
            self = self.push("\n");
        }
        self.problems += 1;
        self
    }
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether an argument of this shape takes values of the declared kind.
pub const fn accepts(kind: &DeclaredKind, shape: &ArgShape) -> bool {
    match (kind, shape) {
        (_, ArgShape::Other | ArgShape::Any) | (DeclaredKind::Any, _) => true,
        (DeclaredKind::String, ArgShape::String)
        | (DeclaredKind::Integer, ArgShape::Integer | ArgShape::Float)
        | (DeclaredKind::Float, ArgShape::Float)
        | (DeclaredKind::Boolean, ArgShape::Boolean)
        | (DeclaredKind::Object, ArgShape::Object)
        | (DeclaredKind::Array(None), ArgShape::Array(_)) => true,
        (DeclaredKind::Array(Some(items)), ArgShape::Array(inner)) => accepts(items, inner),
        _ => false,
    }
}

/// Checks a handler against the declared tool.
pub const fn check_tool(handler: &ToolInfo, tool: &DeclaredTool) -> Report {
    let mut r = Report::new();
    if !handler.found {
        return r
            .problem()
            .push(tool.at)
            .push(": the tool `")
            .push(tool.name)
            .push("` is declared `kind: function`, but no `#[prompty::tool]` handler named `")
            .push(tool.rust_name)
            .push("` is visible in ")
            .push(tool.scope)
            .push(": define `#[prompty::tool] fn ")
            .push(tool.rust_name)
            .push("(...)` ")
            .push(tool.fix);
    }
    if !eq(handler.name, tool.name) {
        r = r
            .problem()
            .push(tool.at)
            .push(": the tool is declared as `")
            .push(tool.name)
            .push("`, but the `#[prompty::tool]` handler `")
            .push(tool.rust_name)
            .push("` is registered as `")
            .push(handler.name)
            .push("`: the model would call a tool no handler serves (use `#[prompty::tool(name = \"")
            .push(tool.name)
            .push("\")]`)");
    }
    let mut i = 0;
    while i < tool.params.len() {
        let p = &tool.params[i];
        let mut j = 0;
        let mut found = false;
        while j < handler.args.len() {
            let a = &handler.args[j];
            if eq(a.name, p.name) {
                found = true;
                if !accepts(&p.kind, &a.shape) {
                    r = r
                        .problem()
                        .push(p.at)
                        .push(": the tool `")
                        .push(tool.name)
                        .push("` declares the parameter `")
                        .push(p.name)
                        .push("` as ")
                        .push(p.kind_text)
                        .push(", but the argument `")
                        .push(a.name)
                        .push("` of its `#[prompty::tool]` handler `")
                        .push(handler.fn_name)
                        .push("` is `")
                        .push(a.ty)
                        .push("`");
                }
            }
            j += 1;
        }
        if !found {
            r = r
                .problem()
                .push(p.at)
                .push(": the tool `")
                .push(tool.name)
                .push("` declares the parameter `")
                .push(p.name)
                .push("` (")
                .push(p.kind_text)
                .push("), but its `#[prompty::tool]` handler `")
                .push(handler.fn_name)
                .push("` has no argument `")
                .push(p.name)
                .push("`");
        }
        i += 1;
    }
    let mut j = 0;
    while j < handler.args.len() {
        let a = &handler.args[j];
        let mut declared = false;
        let mut i = 0;
        while i < tool.params.len() {
            if eq(a.name, tool.params[i].name) {
                declared = true;
            }
            i += 1;
        }
        if !declared && !a.optional {
            r = r
                .problem()
                .push(tool.at)
                .push(": the `#[prompty::tool]` handler `")
                .push(handler.fn_name)
                .push("` takes the argument `")
                .push(a.name)
                .push(": ")
                .push(a.ty)
                .push("`, which the tool `")
                .push(tool.name)
                .push("` does not declare, so the model never sends it: declare it under `parameters:`, or make it an `Option`");
        }
        j += 1;
    }
    r
}
