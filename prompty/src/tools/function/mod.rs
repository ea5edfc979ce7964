//! Tool functions: what runs when the model calls a tool, per-call sets of them ([`Tools`]), and the
//! name registry that `#[prompty::tool]` fills at link time.

mod context;
pub(crate) mod kind;

pub use context::{ToolContext, MAX_ATTACHMENTS};

use crate::registry::store::Store;
use crate::{BoxFuture, Result, Tool};
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, LazyLock};

/// Something the model can call: takes the JSON arguments, returns a JSON result.
///
/// `#[prompty::tool]` implements it for a plain (async) fn; [`tool_fn`] and [`tool_fn_sync`] wrap
/// closures.
///
/// ```
/// use prompty::{ToolFunction, tool_fn_sync};
/// let add = tool_fn_sync(|args| Ok(serde_json::json!(args["a"].as_i64().unwrap_or(0) + 1)));
/// # let rt = tokio::runtime::Runtime::new().unwrap();
/// assert_eq!(rt.block_on(add.call(serde_json::json!({"a": 1})))?, serde_json::json!(2));
/// # Ok::<(), prompty::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a tool",
    label = "not a tool function",
    note = "annotate a fn with `#[prompty::tool]`, or wrap a closure with `prompty::tool_fn` / `prompty::tool_fn_sync`"
)]
pub trait ToolFunction: Send + Sync + 'static {
    /// Runs the tool with its arguments.
    fn call<'a>(&'a self, args: Value) -> BoxFuture<'a, Result<Value>>;

    /// Runs the tool with its arguments, knowing the call's context: a tool that produces
    /// content beyond its JSON result (an image) attaches it with [`crate::ToolContext::attach`].
    /// By default, [`Self::call`].
    ///
    /// ```
    /// use prompty::{BoxFuture, ContentPart, Result, ToolContext, ToolFunction};
    /// use serde_json::Value;
    /// struct Chart;
    /// impl ToolFunction for Chart {
    ///     fn call<'a>(&'a self, _args: Value) -> BoxFuture<'a, Result<Value>> {
    ///         Box::pin(async { Ok(Value::from("a chart (image not shown)")) })
    ///     }
    ///     fn call_in<'a>(&'a self, _args: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
    ///         ctx.attach(ContentPart::Image { source: "iVBORw0KGgo=".into(), detail: None, media_type: Some("image/png".into()) });
    ///         Box::pin(async { Ok(Value::from("a chart")) })
    ///     }
    /// }
    /// ```
    fn call_in<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
        let _ = ctx;
        self.call(args)
    }

    /// The tool's declaration, when the function knows it (`#[prompty::tool]` functions do).
    fn definition(&self) -> Option<Tool> {
        None
    }

    /// Whether running the tool twice has the effect of running it once (a lookup, a write keyed
    /// by its arguments). A durable turn resumed after an interruption during a call of an
    /// idempotent tool runs the call again; any other tool's interrupted call needs reconciliation
    /// ([`crate::TurnStop::ReconciliationRequired`]). `#[prompty::tool(idempotent)]` fns say true;
    /// by default false. (For a closure, [`crate::TurnOptions::idempotent`].)
    ///
    /// ```
    /// use prompty::ToolFunction;
    /// assert!(!prompty::tool_fn_sync(|_| Ok(serde_json::json!(1))).idempotent());
    /// ```
    fn idempotent(&self) -> bool {
        false
    }
}

struct AsyncFn<F>(F);

impl<F, Fut> ToolFunction for AsyncFn<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value>> + Send + 'static,
{
    fn call<'a>(&'a self, args: Value) -> BoxFuture<'a, Result<Value>> {
        Box::pin((self.0)(args))
    }
}

struct SyncFn<F>(F);

impl<F> ToolFunction for SyncFn<F>
where
    F: Fn(Value) -> Result<Value> + Send + Sync + 'static,
{
    fn call<'a>(&'a self, args: Value) -> BoxFuture<'a, Result<Value>> {
        let out = (self.0)(args);
        Box::pin(async move { out })
    }
}

/// Wraps an async closure `|args| async { ... }` as a tool function.
///
/// ```
/// let t = prompty::tool_fn(|args: serde_json::Value| async move { Ok(args) });
/// prompty::register_tool("echo", t);
/// assert!(prompty::get_tool("echo").is_some());
/// ```
pub fn tool_fn<F, Fut>(f: F) -> impl ToolFunction
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value>> + Send + 'static,
{
    AsyncFn(f)
}

/// Wraps a sync closure `|args| ...` as a tool function.
///
/// ```
/// let t = prompty::tool_fn_sync(|_args| Ok(serde_json::json!("sunny")));
/// let tools = prompty::Tools::new().with("weather", t);
/// assert!(tools.get("weather").is_some());
/// ```
pub fn tool_fn_sync<F>(f: F) -> impl ToolFunction
where
    F: Fn(Value) -> Result<Value> + Send + Sync + 'static,
{
    SyncFn(f)
}

/// A link-time tool registration, submitted by `#[prompty::tool]`.
#[doc(hidden)]
pub struct ToolRegistration {
    /// The tool's name.
    pub name: &'static str,
    /// Its namespace in the tool catalog (`#[tool(namespace = "...")]`, else the crate's name).
    pub namespace: &'static str,
    /// Builds the tool function.
    pub make: fn() -> Arc<dyn ToolFunction>,
}

inventory::collect!(ToolRegistration);

static TOOLS: LazyLock<Store<dyn ToolFunction>> = LazyLock::new(|| {
    Store::new(|| inventory::iter::<ToolRegistration>.into_iter().map(|r| (r.name, (r.make)())).collect())
});

/// Registers a tool function under `name` in the process-wide name registry, overriding a
/// `#[prompty::tool]` function of the same name.
///
/// ```
/// prompty::register_tool("now", prompty::tool_fn_sync(|_| Ok(serde_json::json!("12:00"))));
/// assert!(prompty::get_tool("now").is_some());
/// ```
pub fn register_tool(name: impl Into<String>, function: impl ToolFunction) {
    TOOLS.register(name.into(), Arc::new(function));
}

/// The tool function registered under `name` (explicitly or with `#[prompty::tool]`).
///
/// ```
/// assert!(prompty::get_tool("no-such-tool").is_none());
/// ```
pub fn get_tool(name: &str) -> Option<Arc<dyn ToolFunction>> {
    TOOLS.get(name)
}

/// The names of every registered tool function, sorted.
///
/// ```
/// prompty::register_tool("listed", prompty::tool_fn_sync(|_| Ok(serde_json::Value::Null)));
/// assert!(prompty::registered_tools().contains(&"listed".to_string()));
/// ```
pub fn registered_tools() -> Vec<String> {
    TOOLS.keys()
}

/// Forgets explicitly registered tool functions (`#[prompty::tool]` functions stay).
///
/// ```
/// prompty::register_tool("gone", prompty::tool_fn_sync(|_| Ok(serde_json::Value::Null)));
/// prompty::clear_tools();
/// assert!(prompty::get_tool("gone").is_none());
/// ```
pub fn clear_tools() {
    TOOLS.clear_explicit();
}

/// Tool functions handed to one call (`turn`, [`crate::execute_tool`], [`crate::bind_tools`]): they
/// win over the name registry.
///
/// ```
/// let tools = prompty::Tools::new()
///     .with("a", prompty::tool_fn_sync(|_| Ok(serde_json::json!(1))))
///     .with("b", prompty::tool_fn_sync(|_| Ok(serde_json::json!(2))));
/// assert_eq!(tools.names().collect::<Vec<_>>(), vec!["a", "b"]);
/// ```
#[derive(Clone, Default)]
pub struct Tools {
    map: BTreeMap<String, Arc<dyn ToolFunction>>,
}

impl Tools {
    /// No tools.
    pub fn new() -> Self {
        Tools::default()
    }

    /// The same set, with `function` under `name`.
    pub fn with(mut self, name: impl Into<String>, function: impl ToolFunction) -> Self {
        self.insert(name, function);
        self
    }

    /// Adds `function` under `name`.
    pub fn insert(&mut self, name: impl Into<String>, function: impl ToolFunction) {
        self.map.insert(name.into(), Arc::new(function));
    }

    /// Adds an already shared function under `name`.
    pub fn insert_shared(&mut self, name: impl Into<String>, function: Arc<dyn ToolFunction>) {
        self.map.insert(name.into(), function);
    }

    /// The function under `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolFunction>> {
        self.map.get(name)
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.map.keys()).finish()
    }
}
