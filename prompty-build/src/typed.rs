//! Reading a `.prompty` file at compile time into the description of its typed module
//! ([`TypedPrompt`]), with every check that needs only the file: the loader's own errors, input
//! kinds, duplicate names, bindings, the template's syntax and variables.
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
use crate::template;
use prompty_core::{Agent, LoadOptions, Location, Property, PropertyKind, ToolKind};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

/// How serious a [`Diagnostic`] is.
///
/// ```
/// use prompty_build::typed::{analyze, Severity};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-severity-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---\ninputs: [name, mood]\n---\nuser:\nHi {{ name }}").unwrap();
/// let analysis = analyze(&path, "greet.prompty");
/// assert_eq!(analysis.diagnostics[0].severity, Severity::Warning); // `mood` is never used
/// assert!(analysis.prompt.is_some()); // a warning does not stop the prompt
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The prompt cannot be compiled.
    Error,
    /// Worth a look (an input the template never uses).
    Warning,
}

/// A problem found in a `.prompty` file. Its text starts with `file:line:column: `.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-diagnostic-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---\ninputs: [name, mood]\n---\nuser:\nHi {{ name }}").unwrap();
/// let analysis = prompty_build::typed::analyze(&path, "prompts/greet.prompty");
/// assert_eq!(analysis.diagnostics[0].to_string(),
///     "prompts/greet.prompty:2:16: the input `mood` is declared, but the template never uses it");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong and where.
    pub message: String,
}

impl Diagnostic {
    fn error(at: impl fmt::Display, message: impl fmt::Display) -> Diagnostic {
        Diagnostic { severity: Severity::Error, message: format!("{at}: {message}") }
    }

    fn warning(at: impl fmt::Display, message: impl fmt::Display) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, message: format!("{at}: {message}") }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

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

/// How deep `kind: prompty` children are checked (a parent, its child, the child's child, ...);
/// deeper, or a prompt that includes itself, is an error.
pub const MAX_CHILD_DEPTH: usize = 4;

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
}

impl Analysis {
    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error)
    }
}

const KINDS: [&str; 11] =
    ["string", "integer", "float", "boolean", "array", "object", "union", "thread", "image", "file", "audio"];

/// Reads `path` (absolute or relative to the current folder), naming it `display` in messages.
/// `${env:}` references are kept as written: nothing from the build machine's environment reaches
/// the generated code.
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
    analyze_at(path, display, 0)
}

/// [`analyze`] of a prompt `depth` levels below the one being compiled (a `kind: prompty` child).
fn analyze_at(path: &Path, display: &str, depth: usize) -> Analysis {
    let mut files = vec![path.to_path_buf()];
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return failed(
                Diagnostic::error(
                    display,
                    "file not found (paths are relative to the folder of the crate's Cargo.toml)",
                ),
                files,
            )
        }
        Err(e) => return failed(Diagnostic::error(display, format!("cannot read the file: {e}")), files),
    };
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = abs.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let options = LoadOptions::new().keep_env_references();
    let (agent, read) = prompty_core::load_str_tracked(&text, &dir, display, &options);
    files.extend(read);
    let agent = match agent {
        Ok(a) => a,
        Err(e) => return failed(Diagnostic { severity: Severity::Error, message: e.to_string() }, files),
    };
    let mut checker = Checker {
        text: &text,
        display,
        diagnostics: Vec::new(),
        structs: Vec::new(),
        names: Vec::new(),
        files: Vec::new(),
        depth,
        children: Vec::new(),
    };
    let prompt = checker.check(&agent, abs, dir);
    files.append(&mut checker.files);
    let mut diagnostics = checker.diagnostics;
    let has_errors = diagnostics.iter().any(|d| d.severity == Severity::Error);
    let prompt = if has_errors {
        None
    } else {
        prompt.map(|mut p| {
            p.warnings = diagnostics.iter().filter(|d| d.severity == Severity::Warning).cloned().collect();
            p
        })
    };
    diagnostics.sort_by_key(|d| sort_key(&d.message, display));
    Analysis { prompt, diagnostics, files }
}

fn failed(diagnostic: Diagnostic, files: Vec<PathBuf>) -> Analysis {
    Analysis { prompt: None, diagnostics: vec![diagnostic], files }
}

/// Orders diagnostics by line and column.
fn sort_key(message: &str, display: &str) -> (usize, usize) {
    let rest = message.strip_prefix(display).and_then(|r| r.strip_prefix(':')).unwrap_or("");
    let mut parts = rest.splitn(3, ':').map(|p| p.parse::<usize>().unwrap_or(usize::MAX));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

struct Checker<'a> {
    text: &'a str,
    display: &'a str,
    diagnostics: Vec<Diagnostic>,
    structs: Vec<StructDef>,
    /// Type names taken in the module.
    names: Vec<String>,
    /// Files read by the checks (OpenAPI specifications, child prompts), for rebuild tracking.
    files: Vec<PathBuf>,
    /// How many parents the prompt has (0 for the prompt being compiled).
    depth: usize,
    /// The checked children of its `kind: prompty` tools.
    children: Vec<ChildPrompt>,
}

impl Checker<'_> {
    fn at(&self, field: &str) -> Location {
        prompty_core::locate_field(self.text, self.display, field)
    }

    fn error(&mut self, at: impl fmt::Display, message: impl fmt::Display) {
        self.diagnostics.push(Diagnostic::error(at, message));
    }

    fn warning(&mut self, at: impl fmt::Display, message: impl fmt::Display) {
        self.diagnostics.push(Diagnostic::warning(at, message));
    }

    /// `template.format` and `template.parser`: a built-in key in the wrong case is an error (keys
    /// are case-sensitive, so the runtime would not find it); any other unknown key is a warning
    /// (a crate may register a renderer or parser under it), and its template goes unchecked.
    fn template_keys(&mut self, agent: &Agent) {
        let checks = [
            ("format", "format", agent.template.format.kind.as_str(), &FORMATS[..], "renderer"),
            ("parser", "parser", agent.template.parser.kind.as_str(), &PARSERS[..], "parser"),
        ];
        for (key, what, kind, known, component) in checks {
            if known.contains(&kind) {
                continue;
            }
            let at = self.at(&format!("template.{key}.kind"));
            let list = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
            if let Some(right) = known.iter().find(|k| k.eq_ignore_ascii_case(kind)) {
                self.error(
                    at,
                    format!(
                        "unknown template {what} `{kind}` (did you mean `{right}`?): {component} keys are case-sensitive"
                    ),
                );
            } else {
                let hint = names::did_you_mean(kind, known.iter().copied());
                let unchecked = if key == "format" { "; the template is not checked" } else { "" };
                self.warning(
                    at,
                    format!(
                        "unknown template {what} `{kind}`{hint}: the built-in ones are {list}; a {component} must be \
                         registered under `{kind}` at run time{unchecked}"
                    ),
                );
            }
        }
    }

    /// Keys of `model.options` that the runtime ignores, for the built-in providers: a warning
    /// with the closest known key ([`prompty_core::ModelOptions::KNOWN_KEYS`]).
    fn model_options(&mut self, agent: &Agent) {
        let Some(provider) = agent.model.as_ref().and_then(|m| m.provider.as_deref()) else { return };
        if !PROVIDERS.contains(&provider) {
            return;
        }
        let Some(frontmatter) = frontmatter_text(self.text) else { return };
        let Ok(value) = prompty_core::parse_yaml(frontmatter) else { return };
        let Some(options) = value.get("model").and_then(|m| m.get("options")).and_then(|o| o.as_object()) else {
            return;
        };
        let known = prompty_core::ModelOptions::KNOWN_KEYS;
        for key in options.keys() {
            if known.contains(&key.as_str()) {
                continue;
            }
            let at = self.at(&format!("model.options.{key}"));
            let hint = names::did_you_mean(key, known);
            self.warning(
                at,
                format!(
                    "unknown model option `{key}`{hint}: the `{provider}` provider ignores it; the options are {}, and \
                     options sent to the API as written go under `additionalProperties`",
                    known.join(", ")
                ),
            );
        }
    }

    /// Checks every `default` and `example` of `props` (and of their nested properties) against
    /// its property: kind, `enumValues`, `properties` of objects, `items` of arrays.
    fn values_fit(&mut self, props: &[Property], path: &str, what: &str) {
        for (i, p) in props.iter().enumerate() {
            let here = format!("{path}[{i}]");
            for (key, value) in [("default", &p.default), ("example", &p.example)] {
                let Some(value) = value else { continue };
                if let Err(problem) = value_fits(value, p, "") {
                    let at = self.at(&format!("{here}.{key}"));
                    let shown = if p.name.is_empty() { what.to_owned() } else { format!("{what} `{}`", p.name) };
                    self.error(at, format!("the {key} of the {shown} does not fit it: {problem}"));
                }
            }
            if let Some(nested) = &p.properties {
                self.values_fit(nested, &format!("{here}.properties"), "property");
            }
            if let Some(items) = &p.items {
                self.values_fit(std::slice::from_ref(&**items), &format!("{here}.items"), "items");
            }
        }
    }

    fn check(&mut self, agent: &Agent, path: PathBuf, base_dir: PathBuf) -> Option<TypedPrompt> {
        let source = agent.source.as_ref()?;
        let body_line = source.body_line;
        self.names = ["Inputs", "Output"].map(str::to_owned).to_vec();
        let inputs = agent.inputs.clone().unwrap_or_default();
        let input_fields = self.fields(&inputs, "inputs", "input", "");
        let outputs = agent.outputs.as_ref().map(|outputs| self.fields(outputs, "outputs", "output", "Output"));
        for (section, what) in [("inputs", "input"), ("outputs", "output"), ("tools", "tool")] {
            self.duplicate_keys(section, what);
        }
        self.template_keys(agent);
        self.model_options(agent);
        self.values_fit(&inputs, "inputs", "input");
        if let Some(outputs) = &agent.outputs {
            self.values_fit(outputs, "outputs", "output");
        }
        let tools = self.tools(agent, &inputs, &base_dir);
        let used = self.template(agent, &inputs, body_line);
        let mut used_by_bindings = Vec::new();
        for tool in agent.tools.iter().flatten() {
            used_by_bindings.extend(tool.bindings.iter().map(|b| b.input.clone()));
        }
        if let Some(used) = used {
            for (i, input) in inputs.iter().enumerate() {
                if !used.contains(&input.name) && !used_by_bindings.contains(&input.name) {
                    let at = self.at(&format!("inputs[{i}]"));
                    self.diagnostics.push(Diagnostic::warning(
                        at,
                        format!("the input `{}` is declared, but the template never uses it", input.name),
                    ));
                }
            }
        }
        let agent_json = serde_json::to_string(agent).unwrap_or_default();
        Some(TypedPrompt {
            display_path: self.display.to_owned(),
            path,
            base_dir,
            body_line,
            name: agent.name.clone(),
            description: agent.description.clone(),
            agent_json,
            inputs: input_fields,
            outputs,
            structs: std::mem::take(&mut self.structs),
            tools,
            has_tools: agent.tools.as_ref().is_some_and(|t| !t.is_empty()),
            mcp_tools: agent
                .tools
                .iter()
                .flatten()
                .filter_map(|t| match &t.kind {
                    prompty_core::ToolKind::Mcp(m) => Some(format!("`{}` (MCP server `{}`)", t.name, m.server_name)),
                    _ => None,
                })
                .collect(),
            warnings: Vec::new(),
            children: std::mem::take(&mut self.children),
        })
    }

    /// The fields for a list of properties at key path `path`, checking kinds, duplicate names and
    /// field name collisions; nested structs are named `prefix` + the property's name.
    fn fields(&mut self, props: &[Property], path: &str, what: &str, prefix: &str) -> Vec<Field> {
        let mut fields: Vec<Field> = Vec::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, p) in props.iter().enumerate() {
            let here = format!("{path}[{i}]");
            if let Some(&first) = seen.get(p.name.as_str()) {
                let first_line = self.at(&format!("{path}[{first}]")).line.unwrap_or(0);
                let at = self.at(&here);
                self.error(at, format!("the {what} `{}` is declared twice (first on line {first_line})", p.name));
                continue;
            }
            seen.insert(&p.name, i);
            if p.name.is_empty() {
                let at = self.at(&here);
                self.error(at, format!("every {what} needs a name"));
                continue;
            }
            let ty = self.field_type(p, &here, what, &format!("{prefix}{}", names::pascal_case(&p.name)));
            let rust_name = names::snake_case(&p.name);
            if let Some(other) = fields.iter().find(|f| f.rust_name == rust_name) {
                let at = self.at(&here);
                let message = format!(
                    "the {what}s `{}` and `{}` would both be the field `{rust_name}`: rename one of them",
                    other.name, p.name
                );
                self.error(at, message);
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
            PropertyKind::Union => FieldType::Json,
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
            PropertyKind::Other(kind) => {
                let at = self.at(&format!("{here}.kind"));
                let hint = names::did_you_mean(kind, KINDS);
                let shown = if p.name.is_empty() { what.to_owned() } else { format!("{what} `{}`", p.name) };
                self.error(
                    at,
                    format!("unknown kind `{kind}` for the {shown}{hint}: the kinds are {}", KINDS.join(", ")),
                );
                FieldType::Json
            }
        }
    }

    /// Duplicate names in the mapping form of a top-level section (`inputs:\n  q: ...\n  q: ...`),
    /// which YAML loading silently collapses into the last one.
    fn duplicate_keys(&mut self, section: &str, what: &str) {
        let Some(yaml_start) = self.text.lines().position(|l| l.trim() == "---") else { return };
        let lines: Vec<&str> = self.text.lines().collect();
        let header = format!("{section}:");
        let Some(start) = (yaml_start + 1..lines.len()).find(|&i| lines[i].trim_end() == header) else { return };
        let mut child_indent = None;
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, line) in lines.iter().enumerate().skip(start + 1) {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if line.trim() == "---" {
                break;
            }
            let indent = line.len() - trimmed.len();
            if indent == 0 {
                break;
            }
            let child = *child_indent.get_or_insert(indent);
            if indent != child || trimmed.starts_with("- ") {
                if indent < child {
                    break;
                }
                continue;
            }
            let Some((key, _)) = trimmed.split_once(':') else { continue };
            let key = key.trim().trim_matches(|c| c == '"' || c == '\'').to_owned();
            if let Some(first) = seen.get(&key) {
                let at = Location::file(self.display).at(i + 1, indent + 1);
                self.error(at, format!("the {what} `{key}` is declared twice (first on line {})", first + 1));
            } else {
                seen.insert(key, i);
            }
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

    fn tools(&mut self, agent: &Agent, inputs: &[Property], base_dir: &Path) -> Vec<FunctionTool> {
        let mut out = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, tool) in agent.tools.iter().flatten().enumerate() {
            let here = format!("tools[{i}]");
            if let Some(first) = seen.get(&tool.name) {
                let first_line = self.at(&format!("tools[{first}]")).line.unwrap_or(0);
                let at = self.at(&here);
                self.error(at, format!("the tool `{}` is declared twice (first on line {first_line})", tool.name));
                continue;
            }
            seen.insert(tool.name.clone(), i);
            let params: &[Property] = match &tool.kind {
                ToolKind::Function(f) => &f.parameters,
                _ => &[],
            };
            let openapi_arguments = match &tool.kind {
                ToolKind::OpenApi(o) => self.openapi(&tool.name, &o.specification, &here, base_dir),
                _ => None,
            };
            let child_inputs = match &tool.kind {
                ToolKind::Prompty(p) => self.child(&tool.name, &p.path, &here, base_dir),
                _ => None,
            };
            for binding in &tool.bindings {
                let at = self.at(&format!("{here}.bindings.{}", binding.name));
                if !inputs.iter().any(|p| p.name == binding.input) {
                    let hint = names::did_you_mean(&binding.input, inputs.iter().map(|p| p.name.as_str()));
                    self.error(
                        at,
                        format!(
                            "the tool `{}` binds its parameter `{}` to the input `{}`, which is not declared{hint}",
                            tool.name, binding.name, binding.input
                        ),
                    );
                } else if let Some(arguments) = openapi_arguments.as_ref().filter(|a| !a.contains(&binding.name)) {
                    let hint = names::did_you_mean(&binding.name, arguments.iter().map(String::as_str));
                    self.error(
                        at,
                        format!(
                            "the tool `{}` binds `{}`, which is not a parameter of any operation of its specification{hint}",
                            tool.name, binding.name
                        ),
                    );
                } else if let Some((child, names)) = child_inputs.as_ref().filter(|(_, n)| !n.contains(&binding.name)) {
                    let hint = names::did_you_mean(&binding.name, names.iter().map(String::as_str));
                    self.error(
                        at,
                        format!(
                            "the tool `{}` binds `{}`, which is not an input of its child prompt `{child}`{hint}",
                            tool.name, binding.name
                        ),
                    );
                } else if matches!(tool.kind, ToolKind::Function(_)) && !params.iter().any(|p| p.name == binding.name) {
                    let hint = names::did_you_mean(&binding.name, params.iter().map(|p| p.name.as_str()));
                    self.error(
                        at,
                        format!(
                            "the tool `{}` binds `{}`, which is not one of its parameters{hint}",
                            tool.name, binding.name
                        ),
                    );
                }
            }
            let ToolKind::Function(_) = &tool.kind else { continue };
            let mut checked = Vec::new();
            let mut seen_params: HashMap<&str, usize> = HashMap::new();
            for (j, p) in params.iter().enumerate() {
                let phere = format!("{here}.parameters[{j}]");
                if let Some(&first) = seen_params.get(p.name.as_str()) {
                    let first_line = self.at(&format!("{here}.parameters[{first}]")).line.unwrap_or(0);
                    let at = self.at(&phere);
                    self.error(
                        at,
                        format!(
                            "the parameter `{}` of the tool `{}` is declared twice (first on line {first_line})",
                            p.name, tool.name
                        ),
                    );
                    continue;
                }
                seen_params.insert(&p.name, j);
                let kind = self.param_kind(p, &phere);
                let at = self.at(&format!("{phere}.name")).to_string();
                checked.push(ToolParam { name: p.name.clone(), kind_text: kind_phrase(&kind), kind, at });
            }
            out.push(FunctionTool {
                name: tool.name.clone(),
                handler: names::handler_name(&tool.name),
                at: self.at(&format!("{here}.name")).to_string(),
                params: checked,
            });
        }
        out
    }

    /// Checks the `specification` of an `openapi` tool when it is a local file: it exists inside
    /// the prompt's folder, is an OpenAPI 3.0/3.1 or Swagger 2.0 document (read by the same
    /// `prompty_core::openapi` reader as the runtime) and has an operation. Returns the argument
    /// names of all its operations (for the bindings), or `None` when it was not checked (a URL,
    /// an `${env:}` reference, an error).
    fn openapi(&mut self, tool: &str, specification: &str, here: &str, base_dir: &Path) -> Option<Vec<String>> {
        use prompty_core::Error;
        let written = specification.trim();
        if written.is_empty() {
            let at = self.at(&format!("{here}.name"));
            self.error(
                at,
                format!(
                    "the openapi tool `{tool}` needs a `specification` (a file next to the prompt, or an http(s) URL)"
                ),
            );
            return None;
        }
        if written.starts_with("http://") || written.starts_with("https://") || written.contains("${") {
            return None;
        }
        let at = self.at(&format!("{here}.specification"));
        let joined = base_dir.join(written);
        if joined.is_file() {
            // Tracked even when it is not a valid document, so fixing it triggers a rebuild.
            self.files.push(std::fs::canonicalize(&joined).unwrap_or(joined));
        }
        let what = format!("the specification `{written}` of the openapi tool `{tool}`");
        match prompty_core::openapi::read_spec_file(base_dir, written, &LoadOptions::new(), self.display) {
            Ok((_, spec)) if spec.operations.is_empty() => {
                self.error(
                    at,
                    format!("{what} has no operations (no `paths` with a method): the model could call nothing"),
                );
                None
            }
            Ok((_, spec)) => {
                let mut arguments: Vec<String> = Vec::new();
                for op in &spec.operations {
                    for name in op.argument_names() {
                        if !arguments.iter().any(|a| a == name) {
                            arguments.push(name.to_owned());
                        }
                    }
                }
                Some(arguments)
            }
            Err(Error::FileNotFound { .. }) => {
                self.error(at, format!("{what} was not found (the path is relative to the prompt's folder)"));
                None
            }
            Err(Error::FileOutsideRoots { .. }) => {
                self.error(at, format!("{what} is outside the prompt's folder"));
                None
            }
            Err(Error::InvalidField { field, message, .. }) => {
                let field = if field == "#" || field == "specification" { String::new() } else { format!("{field}: ") };
                self.error(at, format!("{what} is not a valid OpenAPI document: {field}{message}"));
                None
            }
            Err(e) => {
                self.error(at, format!("{what} cannot be read: {e}"));
                None
            }
        }
    }

    /// Checks the child prompt of a `kind: prompty` tool: it exists inside the prompt's folder
    /// (confined like `${file:}` references) and passes the same analysis as a prompt of its own,
    /// its errors naming the child's file, line and column and the tool that runs it. Returns the
    /// child as named in messages and its input names (for the bindings), or `None` when it was
    /// not checked (an `${env:}` reference, an error).
    fn child(&mut self, tool: &str, written: &str, here: &str, base_dir: &Path) -> Option<(String, Vec<String>)> {
        use prompty_core::Error;
        if written.trim().is_empty() || written.contains("${") {
            return None;
        }
        let at = self.at(&format!("{here}.path"));
        let what = format!("the child prompt `{written}` of the prompty tool `{tool}`");
        let path = match prompty_core::confine_path(base_dir, written, &LoadOptions::new()) {
            Ok(path) => path,
            Err(Error::FileNotFound { .. }) => {
                self.error(at, format!("{what} was not found (the path is relative to the prompt's folder)"));
                return None;
            }
            Err(Error::FileOutsideRoots { .. }) => {
                self.error(at, format!("{what} is outside the prompt's folder"));
                return None;
            }
            Err(e) => {
                self.error(at, format!("{what} cannot be read: {e}"));
                return None;
            }
        };
        if self.depth + 1 >= MAX_CHILD_DEPTH {
            self.error(
                at,
                format!("{what} nests prompts more than {MAX_CHILD_DEPTH} deep (does a prompt run itself as a tool?)"),
            );
            return None;
        }
        let display = child_display(self.display, written);
        let analysis = analyze_at(&path, &display, self.depth + 1);
        self.files.extend(analysis.files.iter().cloned());
        let mut failed = false;
        for d in analysis.errors() {
            failed = true;
            self.diagnostics.push(Diagnostic {
                severity: Severity::Error,
                message: format!("{} (in {what}, declared at {at})", d.message),
            });
        }
        let prompt = analysis.prompt.filter(|_| !failed)?;
        let inputs = prompt.inputs.iter().map(|f| f.name.clone()).collect();
        self.children.push(ChildPrompt { tool_path: written.to_owned(), prompt: Box::new(prompt) });
        Some((display, inputs))
    }

    fn param_kind(&mut self, p: &Property, here: &str) -> ParamKind {
        match &p.kind {
            PropertyKind::String => ParamKind::String,
            PropertyKind::Integer => ParamKind::Integer,
            PropertyKind::Float => ParamKind::Float,
            PropertyKind::Boolean => ParamKind::Boolean,
            PropertyKind::Object => ParamKind::Object,
            PropertyKind::Array => {
                ParamKind::Array(p.items.as_ref().map(|i| Box::new(self.param_kind(i, &format!("{here}.items")))))
            }
            PropertyKind::Other(kind) => {
                let at = self.at(&format!("{here}.kind"));
                let hint = names::did_you_mean(kind, KINDS);
                self.error(
                    at,
                    format!(
                        "unknown kind `{kind}` for the parameter `{}`{hint}: the kinds are {}",
                        p.name,
                        KINDS.join(", ")
                    ),
                );
                ParamKind::Any
            }
            _ => ParamKind::Any,
        }
    }

    /// Checks the template; returns the root names it mentions (`None` for a renderer whose
    /// syntax is unknown, or when the template does not parse).
    fn template(
        &mut self,
        agent: &Agent,
        inputs: &[Property],
        body_line: usize,
    ) -> Option<std::collections::BTreeSet<String>> {
        let source = agent.instructions.as_deref().unwrap_or("");
        let format = agent.template.format.kind.as_str();
        let display = self.display;
        let place = |line: usize, column: usize| Location::file(display).at(body_line + line - 1, column);
        for ((line, column), word, role) in template::misspelt_role_markers(source) {
            self.diagnostics.push(Diagnostic::warning(
                place(line, column),
                format!("the line `{word}:` is not a role marker: did you mean `{role}:`?"),
            ));
        }
        match template::analyze(format, source)? {
            Err(e) => {
                let at = place(e.line, e.column);
                self.error(at, format!("template error ({format}): {}", e.message));
                None
            }
            Ok(vars) => {
                for unknown in &vars.unknown {
                    let (line, column) = unknown.at;
                    let message = format!("unknown Jinja {} `{}`{}", unknown.what, unknown.name, unknown.hint);
                    self.error(place(line, column), message);
                }
                let declared: Vec<&str> = inputs.iter().map(|p| p.name.as_str()).collect();
                let mut undeclared: BTreeMap<(usize, usize), String> = BTreeMap::new();
                for (name, at) in &vars.required {
                    if declared.contains(&name.as_str()) {
                        continue;
                    }
                    match vars.guarded.get(name) {
                        // Read only where the template tests whether it is there: not an error.
                        Some(((line, column), test)) => self.diagnostics.push(Diagnostic::warning(
                            place(*line, *column),
                            format!(
                                "the template tests `{name} is {test}`, but no input declares `{name}`: it is never an input"
                            ),
                        )),
                        None => {
                            undeclared.insert(*at, name.clone());
                        }
                    }
                }
                for access in &vars.accesses {
                    self.template_access(access, inputs, &place);
                }
                for ((line, column), name) in undeclared {
                    let hint = names::did_you_mean(&name, declared.iter().copied());
                    let message = if declared.is_empty() {
                        format!(
                            "the template uses `{name}`, which no input declares (the prompt declares no `inputs:`)"
                        )
                    } else {
                        format!("the template uses `{name}`, which no input declares{hint}")
                    };
                    self.error(place(line, column), message);
                }
                Some(vars.mentioned)
            }
        }
    }
}

impl Checker<'_> {
    /// Checks a property read in the template (`user.name`, `item["title"]`) against the declared
    /// `properties` of the input it comes from; objects without `properties` are open.
    fn template_access(
        &mut self,
        access: &template::Access,
        inputs: &[Property],
        place: &dyn Fn(usize, usize) -> Location,
    ) {
        let Some(mut base) = inputs.iter().find(|p| p.name == access.root) else { return };
        for step in &access.steps {
            let next = match step {
                template::Step::Field(name) => {
                    base.properties.as_ref().and_then(|props| props.iter().find(|p| p.name == *name))
                }
                template::Step::Element if matches!(base.kind, PropertyKind::Array) => base.items.as_deref(),
                template::Step::Element => None,
            };
            let Some(next) = next else { return };
            base = next;
        }
        let Some(props) =
            base.properties.as_ref().filter(|props| matches!(base.kind, PropertyKind::Object) && !props.is_empty())
        else {
            return;
        };
        if props.iter().any(|p| p.name == access.name) {
            return;
        }
        let known: Vec<&str> = props.iter().map(|p| p.name.as_str()).collect();
        let hint = names::did_you_mean(&access.name, known.iter().copied());
        let (line, column) = access.at;
        self.error(
            place(line, column),
            format!(
                "`{}` has no property `{}`{hint}: its properties are {}",
                access.shown,
                access.name,
                known.join(", ")
            ),
        );
    }
}

/// The renderer keys the runtime has built in (`prompty/src/renderers`).
const FORMATS: [&str; 3] = ["jinja2", "jinja", "mustache"];
/// The parser keys the runtime has built in (`prompty/src/parser.rs`).
const PARSERS: [&str; 1] = ["prompty"];
/// The providers the runtime has built in, whose options are [`prompty_core::ModelOptions`].
const PROVIDERS: [&str; 4] = ["openai", "azure", "foundry", "anthropic"];

/// The frontmatter of a `.prompty` file: after leading blank lines, the lines between a `---`
/// (or `+++`) line and the next one, as the loader splits it.
fn frontmatter_text(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let delimiter = |line: &str| matches!(line.trim(), "---" | "+++");
    let mut offset = 0;
    let mut start = None;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        match start {
            None if line.trim().is_empty() => {}
            None if delimiter(line) => start = Some(offset),
            None => return None,
            Some(begin) if delimiter(line) => return Some(&text[begin..offset - line.len()]),
            Some(_) => {}
        }
    }
    None
}

/// Whether `value` fits the property `p`; else what was expected where (`at` is the path inside
/// the value, `""` at its root).
fn value_fits(value: &Value, p: &Property, at: &str) -> Result<(), String> {
    let place = if at.is_empty() { String::new() } else { format!(" at `{at}`") };
    if value.is_null() {
        return if p.nullable { Ok(()) } else { Err(format!("expected {}{place}, found null", expected(p))) };
    }
    let fits = match &p.kind {
        PropertyKind::String => value.is_string(),
        PropertyKind::Integer => value.is_i64() || value.is_u64(),
        PropertyKind::Float => value.is_number(),
        PropertyKind::Boolean => value.is_boolean(),
        PropertyKind::Array => value.is_array(),
        PropertyKind::Object => value.is_object(),
        PropertyKind::Union => {
            let alternatives: Vec<&Property> = p.one_of.iter().chain(p.any_of.iter()).flatten().collect();
            if !alternatives.is_empty() && !alternatives.iter().any(|alt| value_fits(value, alt, at).is_ok()) {
                let kinds: Vec<String> = alternatives.iter().map(|alt| expected(alt)).collect();
                return Err(format!("expected {}{place}, found {}", kinds.join(" or "), found(value)));
            }
            true
        }
        // Rich kinds and unknown kinds: not checked.
        _ => true,
    };
    if !fits {
        return Err(format!("expected {}{place}, found {}", expected(p), found(value)));
    }
    if let Some(values) = p.enum_values.as_ref().filter(|v| !v.is_empty()) {
        if !values.contains(value) {
            let shown: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
            return Err(format!(
                "expected one of {}{place} (its `enumValues`), found {}",
                shown.join(", "),
                found(value)
            ));
        }
    }
    match value {
        Value::Array(items) => {
            if let Some(item) = &p.items {
                for (i, v) in items.iter().enumerate() {
                    value_fits(v, item, &format!("{at}[{i}]"))?;
                }
            }
        }
        Value::Object(map) => {
            for property in p.properties.iter().flatten() {
                if let Some(v) = map.get(&property.name) {
                    let inner = if at.is_empty() { property.name.clone() } else { format!("{at}.{}", property.name) };
                    value_fits(v, property, &inner)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// What a property's kind expects, as a phrase (`an integer`, `an array of string`).
fn expected(p: &Property) -> String {
    match &p.kind {
        PropertyKind::Array => match &p.items {
            Some(items) => format!("an array of {}", items.kind.as_str()),
            None => "an array".to_owned(),
        },
        PropertyKind::Integer => "an integer".to_owned(),
        PropertyKind::Object => "an object".to_owned(),
        PropertyKind::Union => "a union".to_owned(),
        PropertyKind::Image => "an image".to_owned(),
        PropertyKind::Audio => "an audio".to_owned(),
        kind => format!("a {}", kind.as_str()),
    }
}

/// A value as a phrase (`the string "ten"`, `the float 1.5`).
fn found(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!("the float `{n}`"),
        Value::Number(n) => format!("the integer `{n}`"),
        Value::String(s) => format!("the string `{s:?}`"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// A child's path as named in messages: `written` next to the parent as named (`prompts/a.prompty`
/// and `./b.prompty` → `prompts/b.prompty`).
fn child_display(parent: &str, written: &str) -> String {
    let joined = Path::new(parent).parent().unwrap_or_else(|| Path::new("")).join(written);
    let parts: Vec<String> = joined
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/").replace("//", "/")
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
        let dir = std::env::temp_dir().join(format!("prompty-build-typed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn errors(name: &str, text: &str) -> Vec<String> {
        let a = analyze(&write(name, text), name);
        a.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| d.message.clone()).collect()
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
            a.diagnostics[0].message,
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
            let mut errors: Vec<String> = a.errors().map(|d| d.message.clone()).collect();
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
            (a.errors().map(|d| d.message.clone()).collect::<Vec<_>>(), a.files)
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
        a.diagnostics.iter().filter(|d| d.severity == Severity::Warning).map(|d| d.message.clone()).collect()
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
        let w: Vec<&str> = a.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            w,
            [
                "c.prompty:4:3: unknown template format `handlebars`: the built-in ones are `jinja2`, `jinja`, `mustache`; a renderer must be registered under `handlebars` at run time; the template is not checked",
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
              seed, stopSequences, allowMultipleToolCalls, additionalProperties, and options sent to the API as \
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
        let a = analyze(&write("u.prompty", &prompt("my-provider", "    anything: 1")), "u.prompty");
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
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
            (a.errors().map(|d| d.message.clone()).collect::<Vec<_>>(), a.files, a.prompt)
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
        let errors: Vec<_> = a.errors().map(|d| d.message.clone()).collect();
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
            a.diagnostics[0].message,
            "prompts/x.prompty: file not found (paths are relative to the folder of the crate's Cargo.toml)"
        );
    }
}
