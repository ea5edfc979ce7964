//! Reading a `.prompty` file at compile time into the description of its typed module
//! ([`TypedPrompt`]), after every check that needs only the files ([`prompty_core::analysis`], the
//! same analysis as the runtime's `prompty::check`) and the checks of its Rust form.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("prompty-typed-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("greet.prompty");
//! std::fs::write(&path, "---\ninputs:\n  question:\n    kind: string\n---\nuser:\n{{ questoin }}").unwrap();
//! let analysis = prompty_build::typed::analyze(&path, "prompts/greet.prompty");
//! assert!(analysis.prompt.is_none());
//! assert_eq!(analysis.errors().next().unwrap().to_string(),
//!     "prompts/greet.prompty:7:4: the template uses `questoin`, which no input declares (did you mean `question`?)");
//! ```

use crate::names;
use prompty_core::analysis::{self, Report};
use prompty_core::{Agent, LoadOptions, Property, PropertyKind, ToolKind};
use std::path::{Path, PathBuf};

pub use prompty_core::analysis::{Diagnostic, Severity, MAX_CHILD_DEPTH};

/// The Rust type of a field.
///
/// ```
/// use prompty_build::typed::{analyze, FieldType};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-field-type-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("tags.prompty");
/// std::fs::write(&path, "---
/// inputs:
///   tags:
///     kind: array
///     items: {kind: string}
/// ---
/// user:
/// {{ tags }}").unwrap();
/// let prompt = analyze(&path, "tags.prompty").prompt.unwrap();
/// assert_eq!(prompt.inputs[0].ty, FieldType::Array(Box::new(FieldType::String))); // Vec<String>
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// `string` → `String`
    String,
    /// `integer` → `i64`
    Integer,
    /// `float` → `f64`
    Float,
    /// `boolean` → `bool`
    Boolean,
    /// `array` → `Vec<T>` (of `serde_json::Value` without `items`)
    Array(Box<FieldType>),
    /// `object` without `properties`, `union` → `serde_json::Value`
    Json,
    /// `object` with `properties` → a generated struct of that name
    Struct(String),
    /// `thread` → `Vec<prompty::Message>`
    Thread,
    /// `image`, `file`, `audio` → `prompty::Media`
    Media,
}

/// One field of a generated struct.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-field-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---
/// inputs:
///   firstName: {kind: string, required: true}
///   mood: {kind: string}
/// ---
/// user:
/// {{ firstName }} {{ mood }}").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "greet.prompty").prompt.unwrap();
/// let (first_name, mood) = (&prompt.inputs[0], &prompt.inputs[1]);
/// assert_eq!((first_name.rust_name.as_str(), first_name.name.as_str()), ("first_name", "firstName"));
/// assert!(!first_name.optional && mood.optional);
/// assert_eq!(first_name.doc, ["`firstName` (string). Required."]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The Rust field name (snake_case).
    pub rust_name: String,
    /// The name in the file (and in JSON).
    pub name: String,
    /// Its type.
    pub ty: FieldType,
    /// Whether it is an `Option` (optional or defaulted).
    pub optional: bool,
    /// Its rustdoc: the description, then what the file says about required/default/values.
    pub doc: Vec<String>,
}

/// A struct generated for an `object` with `properties` (nested inputs or outputs).
///
/// ```
/// use prompty_build::typed::{analyze, FieldType};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-struct-def-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("visit.prompty");
/// std::fs::write(&path, "---
/// inputs:
///   address:
///     kind: object
///     properties:
///       city: {kind: string}
/// ---
/// user:
/// {{ address.city }}").unwrap();
/// let prompt = analyze(&path, "visit.prompty").prompt.unwrap();
/// assert_eq!(prompt.inputs[0].ty, FieldType::Struct("Address".into()));
/// assert_eq!((prompt.structs[0].name.as_str(), prompt.structs[0].fields[0].name.as_str()), ("Address", "city"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructDef {
    /// Its name.
    pub name: String,
    /// Its rustdoc.
    pub doc: String,
    /// Its fields.
    pub fields: Vec<Field>,
}

/// The kind of a declared tool parameter, for the handler check.
///
/// ```
/// use prompty_build::typed::{analyze, ParamKind};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-param-kind-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("weather.prompty");
/// std::fs::write(&path, "---
/// tools:
///   - name: get-weather
///     kind: function
///     parameters:
///       city: {kind: string}
///       days: {kind: array, items: {kind: integer}}
/// ---
/// user:
/// Hi").unwrap();
/// let prompt = analyze(&path, "weather.prompty").prompt.unwrap();
/// assert_eq!(prompt.tools[0].params[0].kind, ParamKind::String);
/// assert_eq!(prompt.tools[0].params[1].kind, ParamKind::Array(Some(Box::new(ParamKind::Integer))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamKind {
    /// `string`
    String,
    /// `integer`
    Integer,
    /// `float`
    Float,
    /// `boolean`
    Boolean,
    /// `array`, with its `items` kind
    Array(Option<Box<ParamKind>>),
    /// `object`
    Object,
    /// Anything else: not checked.
    Any,
}

/// A declared parameter of a `kind: function` tool.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-tool-param-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("weather.prompty");
/// std::fs::write(&path, "---
/// tools:
///   - name: get-weather
///     kind: function
///     parameters:
///       city: {kind: string}
///       days: {kind: array, items: {kind: integer}}
/// ---
/// user:
/// Hi").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "weather.prompty").prompt.unwrap();
/// let days = &prompt.tools[0].params[1];
/// assert_eq!((days.name.as_str(), days.kind_text.as_str()), ("days", "an array of integer"));
/// assert_eq!(days.at, "weather.prompty:7:7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolParam {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: ParamKind,
    /// Its kind as a phrase (`a string`, `an array of integer`).
    pub kind_text: String,
    /// `file:line:column` of its declaration.
    pub at: String,
}

/// A declared `kind: function` tool, which needs a `#[prompty::tool]` handler.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-function-tool-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("weather.prompty");
/// std::fs::write(&path, "---
/// tools:
///   - name: get-weather
///     kind: function
///     parameters:
///       city: {kind: string}
///       days: {kind: array, items: {kind: integer}}
/// ---
/// user:
/// Hi").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "weather.prompty").prompt.unwrap();
/// let tool = &prompt.tools[0];
/// assert_eq!((tool.name.as_str(), tool.handler.as_str()), ("get-weather", "get_weather"));
/// assert_eq!((tool.at.as_str(), tool.params.len()), ("weather.prompty:3:5", 2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionTool {
    /// The tool's name.
    pub name: String,
    /// The Rust name the handler is looked up by.
    pub handler: String,
    /// `file:line:column` of its declaration.
    pub at: String,
    /// Its parameters.
    pub params: Vec<ToolParam>,
}

/// Everything the code generator needs to know about one `.prompty` file.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-typed-prompt-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---
/// name: greet
/// description: Says hello.
/// inputs: [who]
/// ---
/// user:
/// Hi {{ who }}").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "prompts/greet.prompty").prompt.unwrap();
/// assert_eq!((prompt.name.as_str(), prompt.description.as_deref()), ("greet", Some("Says hello.")));
/// assert_eq!((prompt.display_path.as_str(), prompt.body_line), ("prompts/greet.prompty", 6));
/// assert!(prompt.outputs.is_none() && prompt.tools.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct TypedPrompt {
    /// The file as named in messages (relative to the crate, as written).
    pub display_path: String,
    /// The file, absolute.
    pub path: PathBuf,
    /// Its folder, absolute (`${file:}` references and child prompts are relative to it).
    pub base_dir: PathBuf,
    /// The line of the file where the template body starts.
    pub body_line: usize,
    /// The prompt's `name`.
    pub name: String,
    /// The prompt's `description`.
    pub description: Option<String>,
    /// The canonical JSON of the agent, `${env:}` references unresolved.
    pub agent_json: String,
    /// The fields of `Inputs`.
    pub inputs: Vec<Field>,
    /// The fields of `Output`, when `outputs:` is declared.
    pub outputs: Option<Vec<Field>>,
    /// Generated nested structs.
    pub structs: Vec<StructDef>,
    /// The function tools whose handlers must be in scope.
    pub tools: Vec<FunctionTool>,
    /// Whether the prompt declares any tool (of any kind): the module then gets `turn`.
    pub has_tools: bool,
    /// The `mcp` declarations, described (`files` (MCP server `fs`)): their tools are listed by
    /// their servers at run time, never at compile time.
    pub mcp_tools: Vec<String>,
    /// Warnings (inputs the template never uses).
    pub warnings: Vec<Diagnostic>,
    /// The child prompts of its `kind: prompty` tools, checked like the prompt itself and
    /// compiled into the module with it.
    pub children: Vec<ChildPrompt>,
}

/// The child prompt of a `kind: prompty` tool: another `.prompty` file, checked at compile time
/// with the same analysis as its parent and compiled into the parent's module (so the program
/// never reads it from the build machine's folder).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-child-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("child.prompty"), "---\ninputs: [topic]\n---\nuser:\n{{ topic }}").unwrap();
/// let path = dir.join("parent.prompty");
/// std::fs::write(&path, "---\ntools:\n  - name: research\n    kind: prompty\n    path: child.prompty\n---\nuser:\nHi").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "prompts/parent.prompty").prompt.unwrap();
/// let child = &prompt.children[0];
/// assert_eq!((child.tool_path.as_str(), child.prompt.display_path.as_str()), ("child.prompty", "prompts/child.prompty"));
/// ```
#[derive(Debug, Clone)]
pub struct ChildPrompt {
    /// The tool's `path`, as written in the parent.
    pub tool_path: String,
    /// The child, analyzed.
    pub prompt: Box<TypedPrompt>,
}

/// The result of [`analyze`]: the prompt when it has no error, every diagnostic, and every file
/// that was read (the prompt and the files its `${file:}` references read), to rebuild on change.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-analysis-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(dir.join("about.txt"), "Says hello.").unwrap();
/// std::fs::write(&path, "---\ndescription: ${file:about.txt}\n---\nuser:\nHi").unwrap();
/// let analysis = prompty_build::typed::analyze(&path, "greet.prompty");
/// assert_eq!(analysis.errors().count(), 0);
/// assert_eq!(analysis.prompt.unwrap().description.as_deref(), Some("Says hello."));
/// assert_eq!(analysis.files.len(), 2); // greet.prompty and about.txt
/// ```
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The prompt, when there is no error.
    pub prompt: Option<TypedPrompt>,
    /// Errors and warnings, in file order.
    pub diagnostics: Vec<Diagnostic>,
    /// The files read.
    pub files: Vec<PathBuf>,
    /// The report of [`prompty_core::analysis`] the prompt was built from (`None` when the file
    /// cannot be read): what [`prompty_core::analysis::check_variant`] compares a locale variant
    /// with.
    pub report: Option<Report>,
}

/// A locale variant is compared with its default only when both analyses are free of errors.
impl analysis::Analyzed for Analysis {
    fn report(&self) -> Option<&Report> {
        self.report.as_ref().filter(|r| !r.has_errors())
    }
}

impl Analysis {
    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error)
    }
}

/// Reads `path` (absolute or relative to the current folder), naming it `display` in messages,
/// checks it with [`prompty_core::analysis`] (the same analysis as the runtime's
/// `prompty::check`), then adds the checks of its Rust form (two names that would be the same
/// field). `${env:}` references are kept as written: nothing from the build machine's environment
/// reaches the generated code.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-analyze-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
/// let prompt = prompty_build::typed::analyze(&path, "prompts/greet.prompty").prompt.unwrap();
/// assert_eq!(prompt.inputs[0].rust_name, "who");
/// let missing = prompty_build::typed::analyze(&dir.join("nope.prompty"), "prompts/nope.prompty");
/// assert!(missing.errors().next().unwrap().to_string().starts_with("prompts/nope.prompty: file not found"));
/// ```
pub fn analyze(path: &Path, display: &str) -> Analysis {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            let message = if e.kind() == std::io::ErrorKind::NotFound {
                "file not found (paths are relative to the folder of the crate's Cargo.toml)".to_owned()
            } else {
                format!("cannot read the file: {e}")
            };
            return Analysis {
                prompt: None,
                diagnostics: vec![Diagnostic::error(display, message).with_code(
                    if e.kind() == std::io::ErrorKind::NotFound { "file-not-found" } else { "unreadable-file" },
                )],
                files: vec![path.to_path_buf()],
                report: None,
            };
        }
    };
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = abs.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let options = LoadOptions::new().keep_env_references();
    let mut report = analysis::check_str(&text, &dir, display, &options);
    let mut files = vec![path.to_path_buf()];
    files.extend(report.files.iter().cloned());
    let prompt = if report.has_errors() { None } else { typed_prompt(&mut report, abs, dir) };
    let prompt = prompt.filter(|_| !report.has_errors()).map(|mut p| {
        p.warnings = report.warnings().cloned().collect();
        p
    });
    let diagnostics = report.diagnostics.clone();
    Analysis { prompt, diagnostics, files, report: Some(report) }
}

/// The Rust form of a prompt whose analysis has no error; errors of that form (field name
/// collisions, in the prompt or its children) are added to `report`.
fn typed_prompt(report: &mut Report, path: PathBuf, base_dir: PathBuf) -> Option<TypedPrompt> {
    let agent = report.agent.clone()?;
    let mut builder = Builder { report, structs: Vec::new(), names: ["Inputs", "Output"].map(str::to_owned).to_vec() };
    let inputs = agent.inputs.clone().unwrap_or_default();
    let input_fields = builder.fields(&inputs, "inputs", "input", "");
    let outputs = agent.outputs.as_ref().map(|outputs| builder.fields(outputs, "outputs", "output", "Output"));
    let tools = builder.tools(&agent);
    let structs = builder.structs;
    let mut children = Vec::new();
    for child in std::mem::take(&mut report.children) {
        let mut child_report = child.report;
        let base = child.path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let prompt = typed_prompt(&mut child_report, child.path.clone(), base);
        let at = report.locate(&format!("tools[{}].path", tool_index(&agent, &child.tool)));
        for d in child_report.errors() {
            let what = format!("the child prompt `{}` of the prompty tool `{}`", child.tool_path, child.tool);
            report.add(d.clone().in_context(format!("in {what}, declared at {at}")));
        }
        if let Some(prompt) = prompt.filter(|_| !child_report.has_errors()) {
            children.push(ChildPrompt { tool_path: child.tool_path, prompt: Box::new(prompt) });
        }
    }
    let source = agent.source.as_ref()?;
    Some(TypedPrompt {
        display_path: report.display().to_owned(),
        path,
        base_dir,
        body_line: source.body_line,
        name: agent.name.clone(),
        description: agent.description.clone(),
        agent_json: serde_json::to_string(&agent).unwrap_or_default(),
        inputs: input_fields,
        outputs,
        structs,
        tools,
        has_tools: agent.tools.as_ref().is_some_and(|t| !t.is_empty()),
        mcp_tools: agent
            .tools
            .iter()
            .flatten()
            .filter_map(|t| match &t.kind {
                ToolKind::Mcp(m) => Some(format!("`{}` (MCP server `{}`)", t.name, m.server_name)),
                _ => None,
            })
            .collect(),
        warnings: Vec::new(),
        children,
    })
}

fn tool_index(agent: &Agent, tool: &str) -> usize {
    agent.tools.iter().flatten().position(|t| t.name == tool).unwrap_or(0)
}

/// Builds the Rust types of a prompt the analysis accepted.
struct Builder<'r> {
    report: &'r mut Report,
    structs: Vec<StructDef>,
    /// Type names taken in the module.
    names: Vec<String>,
}

impl Builder<'_> {
    /// The fields for a list of properties at key path `path` (checking that no two names become
    /// the same field); nested structs are named `prefix` + the property's name.
    fn fields(&mut self, props: &[Property], path: &str, what: &str, prefix: &str) -> Vec<Field> {
        let mut fields: Vec<Field> = Vec::new();
        for (i, p) in props.iter().enumerate() {
            let here = format!("{path}[{i}]");
            let ty = self.field_type(p, &here, what, &format!("{prefix}{}", names::pascal_case(&p.name)));
            let rust_name = names::snake_case(&p.name);
            if let Some(other) = fields.iter().find(|f| f.rust_name == rust_name) {
                let at = self.report.locate(&here);
                let message = format!(
                    "the {what}s `{}` and `{}` would both be the field `{rust_name}`: rename one of them",
                    other.name, p.name
                );
                self.report.add(Diagnostic::error(at, message).with_code("rust-name-collision"));
                continue;
            }
            let optional = !p.required || p.default.is_some();
            fields.push(Field { rust_name, name: p.name.clone(), ty, optional, doc: field_doc(p) });
        }
        fields
    }

    fn field_type(&mut self, p: &Property, here: &str, what: &str, type_name: &str) -> FieldType {
        match &p.kind {
            PropertyKind::String => FieldType::String,
            PropertyKind::Integer => FieldType::Integer,
            PropertyKind::Float => FieldType::Float,
            PropertyKind::Boolean => FieldType::Boolean,
            PropertyKind::Thread => FieldType::Thread,
            PropertyKind::Image | PropertyKind::File | PropertyKind::Audio => FieldType::Media,
            PropertyKind::Union | PropertyKind::Other(_) => FieldType::Json,
            PropertyKind::Array => match &p.items {
                Some(items) => {
                    let item_name = format!("{type_name}Item");
                    let item = self.field_type(items, &format!("{here}.items"), what, &item_name);
                    FieldType::Array(Box::new(item))
                }
                None => FieldType::Array(Box::new(FieldType::Json)),
            },
            PropertyKind::Object => match &p.properties {
                Some(props) if !props.is_empty() => {
                    let name = self.type_name(type_name);
                    let fields = self.fields(props, &format!("{here}.properties"), "property", &name);
                    let doc = p.description.clone().unwrap_or_else(|| format!("The {what} `{}`.", p.name));
                    self.structs.push(StructDef { name: name.clone(), doc, fields });
                    FieldType::Struct(name)
                }
                _ => FieldType::Json,
            },
        }
    }

    /// A fresh type name based on `wanted`.
    fn type_name(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while self.names.contains(&name)
            || ["Message", "Media", "Value", "Option", "Vec", "String", "Self"].contains(&&*name)
        {
            name = format!("{wanted}{n}");
            n += 1;
        }
        self.names.push(name.clone());
        name
    }

    /// The function tools, whose handlers the generated code checks.
    fn tools(&mut self, agent: &Agent) -> Vec<FunctionTool> {
        let mut out = Vec::new();
        for (i, tool) in agent.tools.iter().flatten().enumerate() {
            let ToolKind::Function(f) = &tool.kind else { continue };
            let here = format!("tools[{i}]");
            let params = f
                .parameters
                .iter()
                .enumerate()
                .map(|(j, p)| {
                    let kind = param_kind(p);
                    let at = self.report.locate(&format!("{here}.parameters[{j}].name")).to_string();
                    ToolParam { name: p.name.clone(), kind_text: kind_phrase(&kind), kind, at }
                })
                .collect();
            out.push(FunctionTool {
                name: tool.name.clone(),
                handler: names::handler_name(&tool.name),
                at: self.report.locate(&format!("{here}.name")).to_string(),
                params,
            });
        }
        out
    }
}

fn param_kind(p: &Property) -> ParamKind {
    match &p.kind {
        PropertyKind::String => ParamKind::String,
        PropertyKind::Integer => ParamKind::Integer,
        PropertyKind::Float => ParamKind::Float,
        PropertyKind::Boolean => ParamKind::Boolean,
        PropertyKind::Object => ParamKind::Object,
        PropertyKind::Array => ParamKind::Array(p.items.as_ref().map(|i| Box::new(param_kind(i)))),
        _ => ParamKind::Any,
    }
}

fn kind_phrase(kind: &ParamKind) -> String {
    match kind {
        ParamKind::String => "a string".to_owned(),
        ParamKind::Integer => "an integer".to_owned(),
        ParamKind::Float => "a float".to_owned(),
        ParamKind::Boolean => "a boolean".to_owned(),
        ParamKind::Object => "an object".to_owned(),
        ParamKind::Any => "any value".to_owned(),
        ParamKind::Array(None) => "an array".to_owned(),
        ParamKind::Array(Some(items)) => {
            let inner = kind_phrase(items);
            let inner = inner.split_once(' ').map_or(inner.as_str(), |(_, k)| k).to_owned();
            format!("an array of {inner}")
        }
    }
}

fn field_doc(p: &Property) -> Vec<String> {
    let mut doc: Vec<String> = p.description.iter().flat_map(|d| d.lines().map(str::to_owned)).collect();
    let mut facts = Vec::new();
    match (&p.default, p.required) {
        (Some(default), _) => facts.push(format!("Default: `{default}` (applied when `None`).")),
        (None, true) => facts.push("Required.".to_owned()),
        (None, false) => facts.push("Optional.".to_owned()),
    }
    if let Some(values) = &p.enum_values {
        let shown: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        facts.push(format!("One of {}.", shown.join(", ")));
    }
    if let Some(example) = &p.example {
        facts.push(format!("Example: `{example}`."));
    }
    if !doc.is_empty() {
        doc.push(String::new());
    }
    doc.push(format!("`{}` ({}). {}", p.name, p.kind.as_str(), facts.join(" ")));
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        // One folder per test (the test harness names each test's thread after it): tests run in
        // parallel and several write a file of the same name.
        let test = std::thread::current().name().unwrap_or("main").replace("::", "-");
        let dir = std::env::temp_dir().join(format!("prompty-build-typed-{}", std::process::id())).join(test);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn errors(name: &str, text: &str) -> Vec<String> {
        let a = analyze(&write(name, text), name);
        a.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| d.to_string()).collect()
    }

    #[test]
    fn kinds_map_to_types() {
        let text = "---\ninputs:\n  s: hi\n  i: 1\n  f: 1.5\n  b: true\n  req:\n    kind: string\n    required: true\n  list:\n    kind: array\n    items: integer\n  any_list:\n    kind: array\n  obj:\n    kind: object\n  profile:\n    kind: object\n    properties:\n      firstName:\n        kind: string\n        required: true\n      tags:\n        kind: array\n        items:\n          kind: object\n          properties:\n            label: {kind: string}\n  u:\n    kind: union\n  t:\n    kind: thread\n  img:\n    kind: image\n  doc:\n    kind: file\n  snd:\n    kind: audio\n---\n{{s}}{{i}}{{f}}{{b}}{{req}}{{list}}{{any_list}}{{obj}}{{profile}}{{u}}{{t}}{{img}}{{doc}}{{snd}}";
        let a = analyze(&write("kinds.prompty", text), "kinds.prompty");
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
        let p = a.prompt.unwrap();
        let types: Vec<(&str, &FieldType, bool)> =
            p.inputs.iter().map(|f| (f.rust_name.as_str(), &f.ty, f.optional)).collect();
        use FieldType::*;
        assert_eq!(
            types,
            [
                ("s", &String, true),
                ("i", &Integer, true),
                ("f", &Float, true),
                ("b", &Boolean, true),
                ("req", &String, false),
                ("list", &Array(Box::new(Integer)), true),
                ("any_list", &Array(Box::new(Json)), true),
                ("obj", &Json, true),
                ("profile", &Struct("Profile".into()), true),
                ("u", &Json, true),
                ("t", &Thread, true),
                ("img", &Media, true),
                ("doc", &Media, true),
                ("snd", &Media, true),
            ]
        );
        let names: Vec<&str> = p.structs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ProfileTagsItem", "Profile"]);
        assert_eq!(p.structs[1].fields[0].rust_name, "first_name");
        assert!(!p.structs[1].fields[0].optional);
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let e = errors("k.prompty", "---\ninputs:\n  - name: q\n    kind: strng\n---\n{{q}}");
        assert_eq!(e, ["k.prompty:4:5: unknown kind `strng` for the input `q` (did you mean `string`?): the kinds are string, integer, float, boolean, array, object, union, thread, image, file, audio"]);
        let e = errors("d.prompty", "---\ninputs:\n  - name: q\n  - name: q\n---\n{{q}}");
        assert_eq!(e, ["d.prompty:4:5: the input `q` is declared twice (first on line 3)"]);
        let e = errors("t.prompty", "---\ninputs: [q]\n---\nuser:\n{% if q %}");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("t.prompty:5:"), "{e:?}");
        let e = errors(
            "b.prompty",
            "---\ninputs: [q, unit]\ntools:\n  - name: w\n    kind: function\n    parameters: [unit]\n    bindings:\n      unit:\n        input: units\n---\n{{q}}",
        );
        assert_eq!(
            e,
            ["b.prompty:8:7: the tool `w` binds its parameter `unit` to the input `units`, which is not declared (did you mean `unit`?)"]
        );
        let e = errors("n.prompty", "---\ninputs: [firstName, first_name]\n---\n{{firstName}}{{first_name}}");
        assert_eq!(e.len(), 1, "{e:?}");
    }

    #[test]
    fn unused_inputs_are_warnings() {
        let a = analyze(&write("w.prompty", "---\ninputs: [q, extra]\n---\n{{ q }}"), "w.prompty");
        assert_eq!(a.errors().count(), 0);
        assert_eq!(a.diagnostics[0].severity, Severity::Warning);
        assert_eq!(
            a.diagnostics[0].to_string(),
            "w.prompty:2:13: the input `extra` is declared, but the template never uses it"
        );
        assert!(a.prompt.is_some());
    }

    #[test]
    fn env_references_stay_unresolved() {
        std::env::set_var("PROMPTY_BUILD_TEST_SECRET", "sk-from-the-build-machine");
        let a = analyze(
            &write("e.prompty", "---\nmodel:\n  id: x\n  connection:\n    kind: key\n    apiKey: ${env:PROMPTY_BUILD_TEST_SECRET}\n---\nHi"),
            "e.prompty",
        );
        let json = a.prompt.unwrap().agent_json;
        assert!(json.contains("${env:PROMPTY_BUILD_TEST_SECRET}"), "{json}");
        assert!(!json.contains("sk-from-the-build-machine"));
    }

    #[test]
    fn duplicate_keys_in_the_mapping_form() {
        let e = errors("m.prompty", "---\ninputs:\n  q: a\n  q: b\n---\n{{q}}");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("m.prompty:4:"), "{e:?}");
    }

    /// Two shared fixtures read `question` without declaring it: as typed prompts they are
    /// rejected (the runtime renders the missing variable as nothing).
    #[test]
    fn fixtures_with_undeclared_variables_are_rejected() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        for (file, line) in [("tools_mcp.prompty", 18), ("tools_openapi.prompty", 19)] {
            let a = analyze(&dir.join(file), file);
            let mut errors: Vec<String> = a.errors().map(|d| d.to_string()).collect();
            if file == "tools_openapi.prompty" {
                // The shared fixture names a specification file it does not ship.
                assert_eq!(
                    errors.remove(0),
                    "tools_openapi.prompty:13:5: the specification `./weather_spec.json` of the openapi tool \
                     `weather_api` was not found (the path is relative to the prompt's folder)"
                );
            }
            assert_eq!(
                errors,
                [format!(
                    "{file}:{line}:3: the template uses `question`, which no input declares (the prompt declares no `inputs:`)"
                )]
            );
        }
        for file in [
            "basic",
            "embedding",
            "image",
            "minimal",
            "multimodal",
            "responses",
            "structured",
            "summarize",
            "threaded",
            "tools_function",
        ] {
            let a = analyze(&dir.join(format!("{file}.prompty")), file);
            assert!(a.diagnostics.is_empty(), "{file}: {:?}", a.diagnostics);
        }
    }

    #[test]
    fn openapi_specifications_are_checked() {
        let dir = std::env::temp_dir().join(format!("prompty-build-openapi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write_in = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        write_in("pets.yaml", "openapi: 3.0.0\npaths:\n  /pets/{id}:\n    get:\n      operationId: getPet\n      parameters: [{name: verbose, in: query, schema: {type: boolean}}]\n");
        write_in("empty.json", r#"{"swagger": "2.0", "paths": {}}"#);
        write_in("notes.txt", "not an api");
        let prompt = |spec: &str, binding: &str| {
            format!(
                "---\ninputs: [q, pet]\ntools:\n  - name: pets\n    kind: openapi\n    specification: {spec}\n    bindings:\n      {binding}:\n        input: pet\n---\n{{{{q}}}}"
            )
        };
        let check = |name: &str, text: String| {
            let a = analyze(&write_in(name, &text), name);
            (a.errors().map(|d| d.to_string()).collect::<Vec<_>>(), a.files)
        };
        let (errors, files) = check("ok.prompty", prompt("./pets.yaml", "id"));
        assert!(errors.is_empty(), "{errors:?}");
        assert!(files.iter().any(|f| f.ends_with("pets.yaml")), "{files:?}");
        let (errors, _) = check("b.prompty", prompt("./pets.yaml", "ids"));
        assert_eq!(errors, ["b.prompty:8:7: the tool `pets` binds `ids`, which is not a parameter of any operation of its specification (did you mean `id`?)"]);
        let (errors, _) = check("m.prompty", prompt("./nope.yaml", "id"));
        assert_eq!(errors, ["m.prompty:6:5: the specification `./nope.yaml` of the openapi tool `pets` was not found (the path is relative to the prompt's folder)"]);
        let (errors, files) = check("n.prompty", prompt("notes.txt", "id"));
        assert_eq!(errors, ["n.prompty:6:5: the specification `notes.txt` of the openapi tool `pets` is not a valid OpenAPI document: an OpenAPI document is a mapping (with `openapi:` or `swagger:`)"]);
        assert!(files.iter().any(|f| f.ends_with("notes.txt")), "an invalid specification is tracked too: {files:?}");
        let (errors, _) = check("e.prompty", prompt("empty.json", "id"));
        assert_eq!(errors, ["e.prompty:6:5: the specification `empty.json` of the openapi tool `pets` has no operations (no `paths` with a method): the model could call nothing"]);
        let (errors, _) = check("o.prompty", prompt("../outside.yaml", "id"));
        assert_eq!(errors, ["o.prompty:6:5: the specification `../outside.yaml` of the openapi tool `pets` is outside the prompt's folder"]);
        // URLs and `${env:}` references are left to the runtime.
        for spec in ["https://api.example/openapi.json", "${env:SPEC_PATH}"] {
            let (errors, _) = check("u.prompty", prompt(spec, "anything"));
            assert!(errors.is_empty(), "{spec}: {errors:?}");
        }
    }

    fn warnings(name: &str, text: &str) -> Vec<String> {
        let a = analyze(&write(name, text), name);
        a.diagnostics.iter().filter(|d| d.severity == Severity::Warning).map(|d| d.to_string()).collect()
    }

    #[test]
    fn template_format_and_parser_keys() {
        let prompt = |template: &str| format!("---\ninputs: [q]\ntemplate:\n{template}\n---\n{{{{ q }}}}");
        let e = errors("f.prompty", &prompt("  format: Jinja2"));
        assert_eq!(
            e,
            ["f.prompty:4:3: unknown template format `Jinja2` (did you mean `jinja2`?): renderer keys are case-sensitive"]
        );
        let e = errors("p.prompty", &prompt("  format: {kind: mustache}\n  parser:\n    kind: Prompty"));
        assert_eq!(
            e,
            ["p.prompty:6:5: unknown template parser `Prompty` (did you mean `prompty`?): parser keys are case-sensitive"]
        );
        // A custom renderer or parser is a warning only; the template is then not checked.
        let a = analyze(&write("c.prompty", &prompt("  format: handlebars\n  parser: chatml")), "c.prompty");
        assert_eq!(a.errors().count(), 0, "{:?}", a.diagnostics);
        let w: Vec<String> = a.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            w,
            [
                "c.prompty:4:3: unknown template format `handlebars`: the built-in ones are `jinja2`, `jinja`, `nunjucks`, `mustache`; a renderer must be registered under `handlebars` at run time; the template is not checked",
                "c.prompty:5:3: unknown template parser `chatml`: the built-in ones are `prompty`; a parser must be registered under `chatml` at run time",
            ]
        );
        assert!(a.prompt.is_some());
        let w = warnings("t.prompty", &prompt("  format: jinja3"));
        assert!(w[0].contains("`jinja3` (did you mean `jinja2`?)"), "{w:?}");
        for ok in
            ["  format: jinja2", "  format: jinja", "  format: mustache", "  format: {kind: jinja2}\n  parser: prompty"]
        {
            let a = analyze(&write("ok.prompty", &prompt(ok)), "ok.prompty");
            assert!(a.diagnostics.is_empty(), "{ok}: {:?}", a.diagnostics);
        }
    }

    #[test]
    fn unknown_model_options() {
        let prompt = |provider: &str, options: &str| {
            format!("---\nmodel:\n  id: m\n  provider: {provider}\n  options:\n{options}\n---\nHi")
        };
        let w = warnings("o.prompty", &prompt("openai", "    temprature: 0.2\n    maxOutputTokens: 5"));
        assert_eq!(
            w,
            ["o.prompty:6:5: unknown model option `temprature` (did you mean `temperature`?): the `openai` provider \
              ignores it; the options are temperature, maxOutputTokens, topP, topK, frequencyPenalty, presencePenalty, \
              seed, stopSequences, allowMultipleToolCalls, toolChoice, structuredOutput, additionalProperties, and options sent to the API as \
              written go under `additionalProperties`"]
        );
        let w = warnings("a.prompty", &prompt("anthropic", "    max_tokens: 5"));
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("a.prompty:6:5: unknown model option `max_tokens`: the `anthropic` provider"),
            "{w:?}"
        );
        for provider in ["azure", "foundry"] {
            assert_eq!(warnings("z.prompty", &prompt(provider, "    topp: 1")).len(), 1, "{provider}");
        }
        // Every known key, passthrough keys under `additionalProperties`, custom providers: no warning.
        let all = "    temperature: 0.1\n    maxOutputTokens: 1\n    topP: 1\n    topK: 1\n    frequencyPenalty: 0\n    presencePenalty: 0\n    seed: 1\n    stopSequences: [x]\n    allowMultipleToolCalls: true\n    additionalProperties:\n      logprobs: true\n      reasoning_effort: low";
        for provider in ["openai", "azure", "foundry", "anthropic"] {
            let a = analyze(&write("k.prompty", &prompt(provider, all)), "k.prompty");
            assert!(a.diagnostics.is_empty(), "{provider}: {:?}", a.diagnostics);
        }
        // A provider that is not built in: its key is a warning (an executor may be registered under
        // it), its options are its own.
        let a = analyze(&write("u.prompty", &prompt("my-provider", "    anything: 1")), "u.prompty");
        let codes: Vec<&str> = a.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["unknown-provider"], "{:?}", a.diagnostics);
        // No provider: the options every built-in provider reads.
        let w = warnings("n.prompty", "---\nmodel:\n  id: m\n  options:\n    temprature: 1\n---\nHi");
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with(
                "n.prompty:5:5: unknown model option `temprature` (did you mean `temperature`?): no built-in provider \
                 reads it;"
            ),
            "{w:?}"
        );
        let a = analyze(&write("s.prompty", "---\nmodel: gpt-4o\n---\nHi"), "s.prompty");
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    }

    #[test]
    fn defaults_and_examples_fit_their_inputs() {
        let e = errors("i.prompty", "---\ninputs:\n  count:\n    kind: integer\n    default: ten\n---\n{{count}}");
        assert_eq!(
            e,
            ["i.prompty:5:5: the default of the input `count` does not fit it: expected an integer, found the string `\"ten\"`"]
        );
        let e = errors("f.prompty", "---\ninputs:\n  - name: n\n    kind: integer\n    example: 1.5\n---\n{{n}}");
        assert_eq!(
            e,
            ["f.prompty:5:5: the example of the input `n` does not fit it: expected an integer, found the float `1.5`"]
        );
        let e = errors(
            "e.prompty",
            "---\ninputs:\n  unit:\n    kind: string\n    enumValues: [celsius, fahrenheit]\n    default: kelvin\n---\n{{unit}}",
        );
        assert_eq!(
            e,
            ["e.prompty:6:5: the default of the input `unit` does not fit it: expected one of `\"celsius\"`, `\"fahrenheit\"` (its `enumValues`), found the string `\"kelvin\"`"]
        );
        let e = errors(
            "o.prompty",
            "---\ninputs:\n  place:\n    kind: object\n    properties:\n      city: {kind: string}\n      zip: {kind: integer}\n    default: {city: Paris, zip: \"75001\"}\n---\n{{place}}",
        );
        assert_eq!(
            e,
            ["o.prompty:8:5: the default of the input `place` does not fit it: expected an integer at `zip`, found the string `\"75001\"`"]
        );
        let e = errors(
            "a.prompty",
            "---\ninputs:\n  days:\n    kind: array\n    items: {kind: integer}\n    default: [1, two]\n---\n{{days}}",
        );
        assert_eq!(e, ["a.prompty:6:5: the default of the input `days` does not fit it: expected an integer at `[1]`, found the string `\"two\"`"]);
        let e = errors(
            "n.prompty",
            "---\ninputs:\n  place:\n    kind: object\n    properties:\n      zip:\n        kind: integer\n        default: abc\n---\n{{place}}",
        );
        assert_eq!(e, ["n.prompty:8:9: the default of the property `zip` does not fit it: expected an integer, found the string `\"abc\"`"]);
        let e = errors("b.prompty", "---\ninputs:\n  flag:\n    kind: boolean\n    default: 1\n---\n{{flag}}");
        assert_eq!(e, ["b.prompty:5:5: the default of the input `flag` does not fit it: expected a boolean, found the integer `1`"]);
        // Valid defaults and examples of every kind.
        let ok = "---\ninputs:\n  s: hi\n  i: 3\n  f: 1.5\n  b: false\n  f2:\n    kind: float\n    default: 2\n  e:\n    kind: string\n    enumValues: [a, b]\n    default: b\n    example: a\n  l:\n    kind: array\n    items: {kind: string}\n    default: [x, y]\n  l2:\n    kind: array\n    default: [1, x]\n  o:\n    kind: object\n    properties:\n      n: {kind: integer}\n      t:\n        kind: array\n        items: {kind: object, properties: {k: {kind: boolean}}}\n    default: {n: 1, t: [{k: true}], extra: 1}\n    example: {n: 2}\n  j:\n    kind: object\n    default: {any: [1]}\n  u:\n    kind: union\n    oneOf: [{kind: string}, {kind: integer}]\n    default: 3\n  z:\n    kind: string\n    nullable: true\n    example: null\n  t:\n    kind: thread\n    example: [{role: user, content: hi}]\n---\n{{s}}{{i}}{{f}}{{b}}{{f2}}{{e}}{{l}}{{l2}}{{o}}{{j}}{{u}}{{z}}{{t}}";
        let a = analyze(&write("ok.prompty", ok), "ok.prompty");
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
        let e = errors(
            "u.prompty",
            "---\ninputs:\n  u:\n    kind: union\n    anyOf: [{kind: string}, {kind: integer}]\n    default: true\n---\n{{u}}",
        );
        assert_eq!(e, ["u.prompty:6:5: the default of the input `u` does not fit it: expected a string or an integer, found the boolean `true`"]);
    }

    #[test]
    fn missing_file_references_name_the_reference() {
        let e = errors("r.prompty", "---\nname: r\ndescription: ${file:notes/missing.md}\n---\nHi");
        assert_eq!(
            e,
            ["r.prompty:3:14: description: file reference 'notes/missing.md' was not found (the path is relative to the prompt's folder)"]
        );
    }

    #[test]
    fn child_prompts_are_checked_like_their_parents() {
        let dir = std::env::temp_dir().join(format!("prompty-build-child-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("kids")).unwrap();
        let write_in = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        write_in("kids/ok.prompty", "---\ninputs: [topic, depth]\n---\nuser:\n{{ topic }} {{ depth }}");
        write_in("kids/bad.prompty", "---\ninputs: [topic]\n---\nuser:\n{{ topci }}");
        write_in("self.prompty", "---\ntools:\n  - name: again\n    kind: prompty\n    path: self.prompty\n---\nHi");
        let parent = |child: &str, binding: &str| {
            format!(
                "---\ninputs: [q, level]\ntools:\n  - name: research\n    kind: prompty\n    path: {child}\n    bindings:\n      {binding}:\n        input: level\n---\n{{{{q}}}}"
            )
        };
        let check = |name: &str, text: String| {
            let a = analyze(&write_in(name, &text), &format!("prompts/{name}"));
            (a.errors().map(|d| d.to_string()).collect::<Vec<_>>(), a.files, a.prompt)
        };
        let (errors, files, prompt) = check("p.prompty", parent("kids/ok.prompty", "depth"));
        assert!(errors.is_empty(), "{errors:?}");
        assert!(files.iter().any(|f| f.ends_with("kids/ok.prompty")), "the child is tracked: {files:?}");
        let prompt = prompt.unwrap();
        assert_eq!(prompt.children[0].tool_path, "kids/ok.prompty");
        assert_eq!(prompt.children[0].prompt.display_path, "prompts/kids/ok.prompty");
        assert!(prompt.children[0].prompt.agent_json.contains("topic"));

        let (errors, _, _) = check("b.prompty", parent("./kids/ok.prompty", "dept"));
        assert_eq!(errors, ["prompts/b.prompty:8:7: the tool `research` binds `dept`, which is not an input of its child prompt `prompts/kids/ok.prompty` (did you mean `depth`?)"]);
        let (errors, _, _) = check("m.prompty", parent("kids/nope.prompty", "depth"));
        assert_eq!(errors, ["prompts/m.prompty:6:5: the child prompt `kids/nope.prompty` of the prompty tool `research` was not found (the path is relative to the prompt's folder)"]);
        let (errors, _, _) = check("o.prompty", parent("../outside.prompty", "depth"));
        assert_eq!(errors, ["prompts/o.prompty:6:5: the child prompt `../outside.prompty` of the prompty tool `research` is outside the prompt's folder"]);
        let (errors, files, _) = check("t.prompty", parent("kids/bad.prompty", "topic"));
        assert_eq!(errors, ["prompts/kids/bad.prompty:5:4: the template uses `topci`, which no input declares (did you mean `topic`?) (in the child prompt `kids/bad.prompty` of the prompty tool `research`, declared at prompts/t.prompty:6:5)"]);
        assert!(files.iter().any(|f| f.ends_with("kids/bad.prompty")), "a failing child is tracked: {files:?}");
        let a = analyze(&dir.join("self.prompty"), "self.prompty");
        let errors: Vec<_> = a.errors().map(|d| d.to_string()).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("nests prompts more than 4 deep"), "{errors:?}");
        // `${env:}` paths are left to the runtime.
        let (errors, _, _) = check("e.prompty", parent("${env:CHILD}", "depth"));
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn missing_files() {
        let a = analyze(Path::new("/nonexistent/x.prompty"), "prompts/x.prompty");
        assert_eq!(
            a.diagnostics[0].to_string(),
            "prompts/x.prompty: file not found (paths are relative to the folder of the crate's Cargo.toml)"
        );
    }
}
