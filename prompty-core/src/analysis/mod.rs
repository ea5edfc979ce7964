//! Static analysis of a `.prompty` file: every mistake knowable from the files alone, as
//! [`Diagnostic`]s that name `file:line:column`.
//!
//! One analysis serves every side of prompty, so they cannot disagree: the compile-time side
//! (`include_prompty!` and `prompty-build`, which turn its errors into compile errors), the
//! runtime (`prompty::check`, which adds what only the running program knows: registered
//! renderers, executors and tools), and the command line.
//!
//! What it checks:
//! - the loader's own errors (frontmatter syntax, references, field types);
//! - inputs, outputs and tool parameters: duplicate and empty names (also in the mapping form that
//!   YAML would silently collapse), unknown kinds (with the closest kind), `default`s and
//!   `example`s that do not fit their property (kind, `enumValues`, nested `properties`, `items`);
//! - `template.format` / `template.parser`: a built-in key in the wrong case is an error, an
//!   unknown key a warning (a renderer may be registered under it at run time);
//! - `model:` ([`BUILTIN_PROVIDERS`]): an unknown `provider` (a warning naming the closest built-in
//!   one: a crate may register an executor under it), an `apiType` the provider's executor refuses
//!   (an error naming the ones it serves), unknown `options` keys for a built-in provider or none
//!   (a warning with the closest key); values written as `${env:}` references are not checked;
//! - `${env:…}`/`${file:…}` written inside other text anywhere in the frontmatter
//!   (`endpoint: http://h:${env:PORT}/v1`): a warning, since only a value that is one whole
//!   reference is resolved and the rest stays literal;
//! - connections (`model.connection`, a tool's `connection`): keys a built-in kind does not read
//!   ([`crate::Connection::keys_of`], a warning with the closest key), a kind one typo away from
//!   a built-in one;
//! - tools: duplicate names, an `mcp` declaration whose `name` (the namespace its tools are
//!   offered under) differs from its `serverName` (the namespace of earlier versions; a warning),
//!   bindings naming undeclared inputs or unknown parameters, local
//!   OpenAPI specifications (found, confined to the prompt's folder, valid, with operations), and
//!   `kind: prompty` children (found, confined, and checked by this same analysis, up to
//!   [`MAX_CHILD_DEPTH`] deep);
//! - locale variants ([`check_variant`]): the inputs, outputs and tools of `greeting.fr.prompty`
//!   are those of `greeting.prompty` ([`find_prompts`] groups a folder's files by prompt id);
//! - the template (`jinja2` and `mustache`): syntax, variables no input declares, unknown Jinja
//!   filters and tests, property typos on inputs with declared `properties` (through `for`, `set`
//!   and `with`), misspelt role markers, and inputs it never uses (a warning).
//!
//! ```
//! use prompty_core::analysis::{check_str, Severity};
//! let text = "---\ninputs:\n  question: {kind: string}\n---\nuser:\n{{ questoin | upcase }}";
//! let report = check_str(text, ".".as_ref(), "ask.prompty", &Default::default());
//! let messages: Vec<String> = report.errors().map(|d| d.to_string()).collect();
//! assert_eq!(messages, [
//!     "ask.prompty:6:4: the template uses `questoin`, which no input declares (did you mean `question`?)",
//!     "ask.prompty:6:15: unknown Jinja filter `upcase` (did you mean `upper`?)",
//! ]);
//! assert_eq!(report.warnings().next().unwrap().severity, Severity::Warning); // `question` is unused
//! ```

mod model;
mod outline;
mod references;
mod suggest;
mod template;
pub(crate) mod values;
mod variants;

pub use model::{BuiltinProvider, BUILTIN_PROVIDERS, LOCAL_OPTIONS};
pub use outline::{outline, Marker, Name, Outline};
pub use suggest::{closest, did_you_mean, ranked};
pub use template::NameKind;
pub use variants::{
    check_prompts, check_variant, find_prompts, Analyzed, CheckedFile, CheckedPrompt, CheckedVariant, PromptFiles,
    MAX_FOLDER_DEPTH, MAX_PROMPT_FILES,
};

use crate::{Agent, LoadOptions, Location, Property, PropertyKind, ToolKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How serious a [`Diagnostic`] is.
///
/// ```
/// use prompty_core::analysis::{check_str, Severity};
/// let report = check_str("---\ninputs: [name, mood]\n---\nuser:\nHi {{ name }}", ".".as_ref(), "greet.prompty", &Default::default());
/// assert_eq!(report.diagnostics[0].severity, Severity::Warning); // `mood` is never used
/// assert!(!report.has_errors());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The prompt cannot work as written.
    Error,
    /// Worth a look (an input the template never uses, a key only a runtime registration can
    /// make valid).
    Warning,
}

/// A byte range in the text of a diagnostic's file (`start..end`, `start <= end`).
///
/// ```
/// use prompty_core::analysis::check_str;
/// let text = "---\ninputs: [q]\n---\nuser:\n{{ qq }}";
/// let report = check_str(text, ".".as_ref(), "ask.prompty", &Default::default());
/// let span = report.errors().next().unwrap().span.unwrap();
/// assert_eq!(&text[span.start..span.end], "qq");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// A problem found in a `.prompty` file, with its place as fields: the file, the 1-based line and
/// column (when known), the byte range in the file's text (when known), a stable `code` naming the
/// rule, the `message` (without the place) and an optional `help`. Its text (`Display`) is
/// `file:line:column: message` (then ` (help)`).
///
/// ```
/// use prompty_core::analysis::{check_str, Diagnostic, Severity};
/// let report = check_str("---\ninputs: [name, mood]\n---\nuser:\nHi {{ name }}", ".".as_ref(), "prompts/greet.prompty", &Default::default());
/// let d = &report.diagnostics[0];
/// assert_eq!(d.to_string(),
///     "prompts/greet.prompty:2:16: the input `mood` is declared, but the template never uses it");
/// assert_eq!((d.file.as_str(), d.line, d.column, d.code), ("prompts/greet.prompty", Some(2), Some(16), "unused-input"));
/// assert_eq!(d.message, "the input `mood` is declared, but the template never uses it");
/// let own = Diagnostic::error(prompty_core::Location::file("greet.prompty").at(3, 1), "no good");
/// assert_eq!(own.to_string(), "greet.prompty:3:1: no good");
/// assert_eq!(own.severity, Severity::Error);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// A stable short name of the rule that found it (`undeclared-variable`, `unused-input`, ...;
    /// [`Diagnostic::CUSTOM`] for diagnostics made with [`Diagnostic::error`] and
    /// [`Diagnostic::warning`] without [`Diagnostic::with_code`]).
    pub code: &'static str,
    /// The file, as named in messages (empty when the diagnostic names no file).
    pub file: String,
    /// 1-based line in `file`, when known.
    pub line: Option<u32>,
    /// 1-based column (in characters) in `file`, when known.
    pub column: Option<u32>,
    /// The bytes of `file`'s text the problem is about, when known.
    pub span: Option<Span>,
    /// What is wrong (without the place).
    pub message: String,
    /// How to fix it, when the rule knows (a close name: `did you mean `question`?`); the text
    /// shows it after the message, in parentheses.
    pub help: Option<String>,
    /// Other places the problem involves (the declaration in a locale variant's default file, the
    /// tool of the parent prompt that runs a child), each with what it is; the text does not show
    /// them (editors do).
    pub related: Vec<Related>,
    /// The edit that fixes it, when the rule suggests a name: the misspelt word's bytes and the
    /// name (a quick fix in editors).
    pub fix: Option<Fix>,
}

/// An edit that fixes a [`Diagnostic`]: replace the bytes `span` of its file with `replacement`.
///
/// ```
/// use prompty_core::analysis::check_str;
/// let text = "---\ninputs:\n  q: {kind: strng}\n---\n{{ q }}";
/// let report = check_str(text, ".".as_ref(), "a.prompty", &Default::default());
/// let fix = report.errors().next().unwrap().fix.clone().unwrap();
/// assert_eq!((&text[fix.span.start..fix.span.end], fix.replacement.as_str()), ("strng", "string"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// The bytes to replace.
    pub span: Span,
    /// What to put there.
    pub replacement: String,
}

/// A place a [`Diagnostic`] involves besides its own.
///
/// ```
/// use prompty_core::{analysis::Diagnostic, Location};
/// let d = Diagnostic::error(Location::file("a.fr.prompty").at(3, 3), "differs")
///     .with_related(Location::file("a.prompty").at(3, 3), "declared here in the default prompt");
/// assert_eq!(d.related[0].at.to_string(), "a.prompty:3:3");
/// assert_eq!(d.to_string(), "a.fr.prompty:3:3: differs");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    /// The place.
    pub at: Location,
    /// What is there.
    pub message: String,
}

impl Diagnostic {
    /// The `code` of diagnostics made by [`Diagnostic::error`] and [`Diagnostic::warning`].
    pub const CUSTOM: &'static str = "custom";

    /// A diagnostic at `at` (a [`Location`], or a file name as `&str`/`String`).
    ///
    /// ```
    /// use prompty_core::analysis::{Diagnostic, Severity};
    /// let d = Diagnostic::new(Severity::Warning, "odd-thing", "a.prompty", "odd");
    /// assert_eq!((d.code, d.line, d.to_string().as_str()), ("odd-thing", None, "a.prompty: odd"));
    /// ```
    pub fn new(
        severity: Severity,
        code: &'static str,
        at: impl Into<Location>,
        message: impl fmt::Display,
    ) -> Diagnostic {
        let at = at.into();
        Diagnostic {
            severity,
            code,
            file: at.file,
            line: at.line,
            column: at.column,
            span: None,
            // A value from the prompt may be a secret that landed in an unexpected field.
            message: crate::Secret::scrub(&message.to_string()).into_owned(),
            help: None,
            related: Vec::new(),
            fix: None,
        }
    }

    /// The same diagnostic with another place it involves (see [`Diagnostic::related`]).
    ///
    /// ```
    /// use prompty_core::{analysis::Diagnostic, Location};
    /// let d = Diagnostic::error("child.prompty", "no").with_related(Location::file("parent.prompty").at(5, 11), "the tool");
    /// assert_eq!((d.related[0].at.line, d.related[0].message.as_str()), (Some(5), "the tool"));
    /// ```
    pub fn with_related(mut self, at: Location, message: impl Into<String>) -> Diagnostic {
        self.related.push(Related { at, message: message.into() });
        self
    }

    /// An error at `at` (a [`Location`], or a file name).
    ///
    /// ```
    /// let d = prompty_core::analysis::Diagnostic::error("a.prompty", "broken");
    /// assert_eq!(d.severity, prompty_core::analysis::Severity::Error);
    /// assert_eq!(d.to_string(), "a.prompty: broken");
    /// ```
    pub fn error(at: impl Into<Location>, message: impl fmt::Display) -> Diagnostic {
        Diagnostic::new(Severity::Error, Diagnostic::CUSTOM, at, message)
    }

    /// A warning at `at`.
    ///
    /// ```
    /// let d = prompty_core::analysis::Diagnostic::warning(prompty_core::Location::file("a.prompty").at(1, 1), "odd");
    /// assert_eq!(d.to_string(), "a.prompty:1:1: odd");
    /// ```
    pub fn warning(at: impl Into<Location>, message: impl fmt::Display) -> Diagnostic {
        Diagnostic::new(Severity::Warning, Diagnostic::CUSTOM, at, message)
    }

    /// The same diagnostic under the rule name `code`.
    ///
    /// ```
    /// let d = prompty_core::analysis::Diagnostic::error("a.prompty", "no").with_code("rust-keyword");
    /// assert_eq!(d.code, "rust-keyword");
    /// ```
    pub fn with_code(mut self, code: &'static str) -> Diagnostic {
        self.code = code;
        self
    }

    /// The same diagnostic with a help text (shown after the message, in parentheses).
    ///
    /// ```
    /// let d = prompty_core::analysis::Diagnostic::error("a.prompty", "no").with_help("add it");
    /// assert_eq!((d.message.as_str(), d.help.as_deref()), ("no", Some("add it")));
    /// assert_eq!(d.to_string(), "a.prompty: no (add it)");
    /// ```
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        let mut help = help.into();
        crate::Secret::scrub_in_place(&mut help);
        self.help = Some(help);
        self
    }

    /// The same diagnostic covering the bytes `span` of its file.
    ///
    /// ```
    /// use prompty_core::analysis::{Diagnostic, Span};
    /// let d = Diagnostic::error("a.prompty", "no").with_span(Span { start: 3, end: 5 });
    /// assert_eq!(d.span, Some(Span { start: 3, end: 5 }));
    /// ```
    pub fn with_span(mut self, span: Span) -> Diagnostic {
        self.span = Some(span);
        self
    }

    /// The same diagnostic seen from another file: `context` is added to its message (after its
    /// help, which becomes part of the message), as a parent prompt reports its child's problems.
    ///
    /// ```
    /// use prompty_core::{analysis::Diagnostic, Location};
    /// let d = Diagnostic::error(Location::file("child.prompty").at(2, 1), "no").with_help("did you mean `x`?");
    /// let d = d.in_context("in the child prompt of the tool `t`");
    /// assert_eq!(d.to_string(), "child.prompty:2:1: no (did you mean `x`?) (in the child prompt of the tool `t`)");
    /// assert_eq!(d.help, None);
    /// ```
    pub fn in_context(mut self, context: impl fmt::Display) -> Diagnostic {
        let help = self.help.take().map(|h| format!(" ({h})")).unwrap_or_default();
        self.message = format!("{}{help} ({context})", self.message);
        self
    }

    /// The place (`file`, `file:line` or `file:line:column`) and the message, for tools that show
    /// the two apart (the command line's rustc-style and JSON output).
    ///
    /// ```
    /// use prompty_core::{analysis::Diagnostic, Location};
    /// let d = Diagnostic::error(Location::file("prompts/a.prompty").at(3, 14), "no good");
    /// let (at, message) = d.location();
    /// assert_eq!((at.file.as_str(), at.line, at.column, message), ("prompts/a.prompty", Some(3), Some(14), "no good"));
    /// let missing = Diagnostic::error("a.prompty", "file not found");
    /// let (at, message) = missing.location();
    /// assert_eq!((at.file.as_str(), at.line, message), ("a.prompty", None, "file not found"));
    /// ```
    pub fn location(&self) -> (Location, &str) {
        (Location { file: self.file.clone(), line: self.line, column: self.column }, &self.message)
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !(self.file.is_empty() && self.line.is_none()) {
            let at = Location { file: self.file.clone(), line: self.line, column: self.column };
            write!(f, "{at}: ")?;
        }
        f.write_str(&self.message)?;
        match &self.help {
            Some(help) => write!(f, " ({help})"),
            None => Ok(()),
        }
    }
}

/// The result of an analysis: the agent (when it loads), every diagnostic in file order (the
/// children's after the prompt's own), every file read, and the checked children.
///
/// ```
/// use prompty_core::analysis::check_file;
/// let dir = std::env::temp_dir().join(format!("prompty-doc-report-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("about.txt"), "Says hello.").unwrap();
/// let path = dir.join("greet.prompty");
/// std::fs::write(&path, "---\ndescription: ${file:about.txt}\n---\nuser:\nHi").unwrap();
/// let report = check_file(&path, "greet.prompty", &Default::default());
/// assert!(!report.has_errors());
/// assert_eq!(report.agent.unwrap().description.as_deref(), Some("Says hello."));
/// assert_eq!(report.files.len(), 2); // greet.prompty and about.txt
/// ```
#[derive(Debug, Clone)]
pub struct Report {
    /// The agent, when the file loads.
    pub agent: Option<Agent>,
    /// Errors and warnings, in file order.
    pub diagnostics: Vec<Diagnostic>,
    /// The files read (the prompt, its `${file:}` targets, local OpenAPI specifications, child
    /// prompts), to rebuild on change.
    pub files: Vec<PathBuf>,
    /// The child prompts of its `kind: prompty` tools that were checked without error.
    pub children: Vec<ChildReport>,
    display: String,
    text: Arc<str>,
}

impl Report {
    /// The errors.
    ///
    /// ```
    /// let r = prompty_core::analysis::check_str("{{ x | nope }}", ".".as_ref(), "a.prompty", &Default::default());
    /// assert_eq!(r.errors().count(), 2); // `x` is not declared, `nope` is no filter
    /// ```
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error)
    }

    /// The warnings.
    ///
    /// ```
    /// let r = prompty_core::analysis::check_str("---\ninputs: [a]\n---\nHi", ".".as_ref(), "a.prompty", &Default::default());
    /// assert_eq!(r.warnings().count(), 1); // `a` is never used
    /// ```
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Warning)
    }

    /// Whether any diagnostic is an error.
    ///
    /// ```
    /// let r = prompty_core::analysis::check_str("Hi", ".".as_ref(), "a.prompty", &Default::default());
    /// assert!(!r.has_errors());
    /// ```
    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }

    /// The file as named in messages.
    ///
    /// ```
    /// let r = prompty_core::analysis::check_str("Hi", ".".as_ref(), "prompts/a.prompty", &Default::default());
    /// assert_eq!(r.display(), "prompts/a.prompty");
    /// ```
    pub fn display(&self) -> &str {
        &self.display
    }

    /// Where the frontmatter field at key path `field` (`inputs[0].kind`) is in the file (just the
    /// file when the text is unknown).
    ///
    /// ```
    /// let r = prompty_core::analysis::check_str("---\ninputs:\n  q: {kind: string}\n---\n{{ q }}", ".".as_ref(), "a.prompty", &Default::default());
    /// assert_eq!(r.locate("inputs[0]").to_string(), "a.prompty:3:3");
    /// ```
    pub fn locate(&self, field: &str) -> Location {
        crate::locate_field(&self.text, &self.display, field)
    }

    /// The span of the word at a 1-based line and column of the file (see [`Diagnostic::span`]).
    pub(crate) fn span_at(&self, line: u32, column: u32) -> Option<Span> {
        word_span(&self.text, line, column)
    }

    /// Adds a diagnostic in its place (by line and column); a diagnostic of this file without a
    /// span gets the one of the word at its line and column.
    ///
    /// ```
    /// use prompty_core::analysis::{check_str, Diagnostic};
    /// let mut r = check_str("---\ninputs: [a]\n---\n{{ a }}", ".".as_ref(), "a.prompty", &Default::default());
    /// r.add(Diagnostic::error(r.locate("inputs[0]"), "not in Rust"));
    /// assert_eq!(r.errors().next().unwrap().to_string(), "a.prompty:2:10: not in Rust");
    /// ```
    pub fn add(&mut self, mut diagnostic: Diagnostic) {
        if diagnostic.span.is_none() && diagnostic.file == self.display {
            if let (Some(line), Some(column)) = (diagnostic.line, diagnostic.column) {
                diagnostic.span = self.span_at(line, column);
            }
        }
        self.diagnostics.push(diagnostic);
        let display = self.display.clone();
        self.diagnostics.sort_by_key(|d| sort_key(d, &display));
    }
}

/// The analysis of the child prompt of a `kind: prompty` tool.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-child-report-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("child.prompty"), "---\ninputs: [topic]\n---\nuser:\n{{ topic }}").unwrap();
/// let path = dir.join("parent.prompty");
/// std::fs::write(&path, "---\ntools:\n  - name: research\n    kind: prompty\n    path: child.prompty\n---\nHi").unwrap();
/// let report = prompty_core::analysis::check_file(&path, "prompts/parent.prompty", &Default::default());
/// let child = &report.children[0];
/// assert_eq!((child.tool.as_str(), child.tool_path.as_str()), ("research", "child.prompty"));
/// assert_eq!(child.report.display(), "prompts/child.prompty");
/// ```
#[derive(Debug, Clone)]
pub struct ChildReport {
    /// The name of the tool that runs it.
    pub tool: String,
    /// The tool's `path`, as written in the parent.
    pub tool_path: String,
    /// The child file, absolute.
    pub path: PathBuf,
    /// Its analysis (without errors).
    pub report: Report,
}

/// How deep `kind: prompty` children are checked (a parent, its child, the child's child, ...);
/// deeper, or a prompt that runs itself as a tool, is an error.
pub const MAX_CHILD_DEPTH: usize = 4;

/// Analyzes the `.prompty` file at `path`, naming it `display` in messages.
///
/// ```
/// let missing = prompty_core::analysis::check_file("nope.prompty".as_ref(), "nope.prompty", &Default::default());
/// assert_eq!(missing.errors().next().unwrap().to_string(), "nope.prompty: file not found");
/// ```
pub fn check_file(path: &Path, display: &str, options: &LoadOptions) -> Report {
    check_file_at(path, display, options, 0)
}

/// Analyzes the text of a `.prompty` file whose relative paths start at `base_dir`, naming it
/// `display` in messages.
///
/// ```
/// let r = prompty_core::analysis::check_str("---\ninputs:\n  n: {kind: integer, default: ten}\n---\n{{ n }}",
///     ".".as_ref(), "a.prompty", &Default::default());
/// assert_eq!(r.errors().next().unwrap().to_string(),
///     "a.prompty:3:3: the default of the input `n` does not fit it: expected an integer, found the string `\"ten\"`");
/// ```
pub fn check_str(text: &str, base_dir: &Path, display: &str, options: &LoadOptions) -> Report {
    check_str_at(text, base_dir, display, options, 0)
}

/// Analyzes an agent already loaded: from the text it was loaded from when the loader kept it
/// ([`crate::AgentSource::text`]), so diagnostics have lines and columns; else from its fields
/// alone (messages then name just the file). Children compiled into the program
/// ([`crate::AgentSource::embedded`]) were checked when it was built and are not read again.
///
/// ```
/// let agent = prompty_core::load_str("---\ninputs: [q]\n---\nuser:\n{{ qq }}", ".", "ask.prompty")?;
/// let report = prompty_core::analysis::check_agent(&agent);
/// assert_eq!(report.errors().next().unwrap().to_string(),
///     "ask.prompty:5:4: the template uses `qq`, which no input declares (did you mean `q`?)");
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn check_agent(agent: &Agent) -> Report {
    let (display, base_dir, text, options, embedded) = match &agent.source {
        Some(source) => {
            let options = source.allowed_roots.iter().fold(LoadOptions::new(), |o, root| o.allow_root(root));
            let text = source.text.clone().unwrap_or_else(|| Arc::from(""));
            (source.path.clone(), source.base_dir.clone(), text, options, source.embedded.clone())
        }
        None => {
            let display = if agent.name.is_empty() { "<prompt>".to_owned() } else { agent.name.clone() };
            (display, PathBuf::from("."), Arc::from(""), LoadOptions::new(), Vec::new())
        }
    };
    let mut checker = Checker::new(&text, &display, &base_dir, &options, 0);
    checker.embedded = embedded.iter().map(|e| e.tool_path.clone()).collect();
    checker.check(agent);
    checker.into_report(Some(agent.clone()), Vec::new(), Arc::clone(&text))
}

fn check_file_at(path: &Path, display: &str, options: &LoadOptions, depth: usize) -> Report {
    let unsaved = std::fs::canonicalize(path).ok().and_then(|c| options.unsaved(&c).map(|t| t.to_string()));
    let text = match unsaved.map_or_else(|| std::fs::read_to_string(path), Ok) {
        Ok(t) => t,
        Err(e) => {
            let problem = if e.kind() == std::io::ErrorKind::NotFound {
                "file not found".to_owned()
            } else {
                format!("cannot read the file: {e}")
            };
            let code = if e.kind() == std::io::ErrorKind::NotFound { "file-not-found" } else { "unreadable-file" };
            return failed(display, Diagnostic::error(display, problem).with_code(code), vec![path.to_path_buf()]);
        }
    };
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = abs.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let mut report = check_str_at(&text, &dir, display, options, depth);
    report.files.insert(0, path.to_path_buf());
    report
}

fn check_str_at(text: &str, base_dir: &Path, display: &str, options: &LoadOptions, depth: usize) -> Report {
    let (agent, read) = crate::load_str_tracked(text, base_dir, display, options);
    let agent = match agent {
        Ok(a) => a,
        Err(e) => {
            let mut d = load_error(&e, display);
            if let (true, Some(line), Some(column)) = (d.file == display, d.line, d.column) {
                d.span = word_span(text, line, column);
            }
            return failed(display, d, read);
        }
    };
    let mut checker = Checker::new(text, display, base_dir, options, depth);
    checker.check(&agent);
    checker.into_report(Some(agent), read, Arc::from(text))
}

fn failed(display: &str, diagnostic: Diagnostic, files: Vec<PathBuf>) -> Report {
    Report {
        agent: None,
        diagnostics: vec![diagnostic],
        files,
        children: Vec::new(),
        display: display.to_owned(),
        text: Arc::from(""),
    }
}

/// Orders diagnostics by line and column (those of other files last, in the order found).
fn sort_key(d: &Diagnostic, display: &str) -> (u32, u32) {
    if d.file != display {
        return (u32::MAX, 0);
    }
    (d.line.unwrap_or(0), d.column.unwrap_or(0))
}

/// A loader error as a diagnostic: its place as fields, the rest of its text as the message.
fn load_error(e: &crate::Error, display: &str) -> Diagnostic {
    use crate::Error as E;
    let (at, code) = match e {
        E::FileNotFound { path } => (Location::file(path.display().to_string()), "file-not-found"),
        E::Io { path, .. } => (Location::file(path.display().to_string()), "unreadable-file"),
        E::Frontmatter { at, .. } => (at.clone(), "invalid-frontmatter"),
        E::InvalidField { at, .. } => (at.clone(), "invalid-field"),
        E::EnvVarNotSet { at, .. } => (at.clone(), "env-not-set"),
        E::FileReferenceNotFound { at, .. } => (at.clone(), "file-reference-not-found"),
        E::FileOutsideRoots { at, .. } => (at.clone(), "file-outside-roots"),
        E::FileReferenceInvalid { at, .. } => (at.clone(), "file-reference-invalid"),
        _ => (Location::file(display), "load-error"),
    };
    let text = e.to_string();
    let prefix = format!("{at}: ");
    match text.strip_prefix(&prefix) {
        Some(message) => Diagnostic::new(Severity::Error, code, at, message),
        // A message that does not start with its place keeps its whole text, under the file.
        None => Diagnostic::new(Severity::Error, code, display, text),
    }
}

/// Splits a rule's message ending with a hint (`... (did you mean `x`?)`) into the message and
/// the help (`did you mean `x`?`).
fn split_help(message: &str) -> Option<(String, String)> {
    let body = message.strip_suffix("?)")?;
    let i = body.rfind(" (did you mean ")?;
    Some((message[..i].to_owned(), message[i + 2..message.len() - 1].to_owned()))
}

/// The fix of a diagnostic whose message suggests a name (`... (did you mean `x`?)`): the
/// misspelt word (of the words in backticks in the message, the closest to `x`, found as a whole
/// word on the diagnostic's line, from its column, else from the line's start, else in the deeper
/// indented lines below it) and `x`.
fn fix_of(text: &str, line: u32, column: u32, message: &str) -> Option<Fix> {
    let (_, after) = message.split_once("did you mean `")?;
    let replacement = after.split('`').next().filter(|x| !x.is_empty())?;
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let line_start = offset_of(text, line, 1)?;
    let rest = &text[line_start..];
    let line_end = line_start + rest.find('\n').unwrap_or(rest.len());
    let from = offset_of(text, line, column).unwrap_or(line_start);
    let mut words: Vec<&str> = message
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|w| w.trim_matches(|c: char| !ident(c)))
        .filter(|w| !w.is_empty() && *w != replacement)
        .collect();
    words.sort_by_key(|w| suggest::distance(w, replacement));
    let find = |word: &str, from: usize, to: usize| {
        let hay = text.get(from..to)?;
        hay.match_indices(word).map(|(i, _)| from + i).find(|&start| {
            let end = start + word.len();
            !text[..start].ends_with(ident) && !text[end..].starts_with(ident)
        })
    };
    // The lines below that are indented deeper: the value of a key written as a block
    // (`unit:\n  input: units` of a binding).
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let own = indent(&text[line_start..line_end]);
    let mut block_end = (line_end + 1).min(text.len());
    for l in text[line_end..].split_inclusive('\n').skip(1) {
        if !l.trim().is_empty() && indent(l) <= own {
            break;
        }
        block_end += l.len();
    }
    // The closest word is the misspelt one; when it is not on the line or in its block (it is in
    // another file), there is nothing to fix here.
    let word = words.first()?;
    let start = find(word, from, line_end)
        .or_else(|| find(word, line_start, line_end))
        .or_else(|| find(word, line_end, block_end))?;
    Some(Fix { span: Span { start, end: start + word.len() }, replacement: replacement.to_owned() })
}

/// For a diagnostic placed on a YAML key (`toolChoice:`) whose message names a word of the key's
/// value in backticks (`names the tool `wether``), that word's span: the value is what is wrong.
fn value_word(text: &str, key: Span, message: &str) -> Option<Span> {
    let rest = text.get(key.end..)?;
    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let value = line.strip_prefix(':')?;
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|w| w.trim_matches(|c: char| !ident(c)))
        .filter(|w| !w.is_empty())
        .find_map(|word| {
            let i = value
                .match_indices(word)
                .map(|(i, _)| i)
                .find(|&i| !value[..i].ends_with(ident) && !value[i + word.len()..].starts_with(ident))?;
            let start = key.end + 1 + i;
            Some(Span { start, end: start + word.len() })
        })
}

/// The byte offset of a 1-based line and column (in characters) of `text`.
fn offset_of(text: &str, line: u32, column: u32) -> Option<usize> {
    let mut start = 0usize;
    for _ in 1..line {
        start += text.get(start..)?.find('\n')? + 1;
    }
    let rest = text.get(start..)?;
    let col = usize::try_from(column).ok()?.checked_sub(1)?;
    let end_of_line = rest.find('\n').unwrap_or(rest.len());
    rest[..end_of_line].char_indices().nth(col).map(|(i, _)| start + i)
}

/// The span of the word (letters, digits, `_`) that starts at a 1-based line and column of
/// `text`, or of the one character there when it is not a word character (empty at a line's end).
fn word_span(text: &str, line: u32, column: u32) -> Option<Span> {
    let start = offset_of(text, line, column)?;
    let rest = &text[start..];
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let len = match rest.chars().next() {
        Some(c) if word(c) => rest.find(|c: char| !word(c)).unwrap_or(rest.len()),
        // An `${env:…}`/`${file:…}` reference: the whole of it.
        Some('$') if rest.starts_with("${") => {
            rest.find(['}', '\n']).map_or(1, |i| if rest.as_bytes()[i] == b'}' { i + 1 } else { 1 })
        }
        Some('\n') | None => 0,
        Some(c) => c.len_utf8(),
    };
    Some(Span { start, end: start + len })
}

/// The renderer keys the runtime has built in (`prompty/src/renderers`): the Jinja ones
/// ([`crate::jinja::FORMATS`]) and `mustache`; the values of `template.format` the analysis knows.
///
/// ```
/// assert_eq!(prompty_core::analysis::FORMATS, ["jinja2", "jinja", "nunjucks", "mustache"]);
/// ```
pub const FORMATS: [&str; 4] =
    [crate::jinja::FORMATS[0], crate::jinja::FORMATS[1], crate::jinja::FORMATS[2], "mustache"];
/// The parser keys the runtime has built in (`prompty/src/parser.rs`): the values of
/// `template.parser` the analysis knows.
///
/// ```
/// assert_eq!(prompty_core::analysis::PARSERS, ["prompty"]);
/// ```
pub const PARSERS: [&str; 1] = ["prompty"];
/// The property kinds of the format (the `kind` of an input, an output, a tool parameter), as
/// written in a file; any other kind is an error.
///
/// ```
/// use prompty_core::{analysis::KINDS, PropertyKind};
/// assert!(KINDS.iter().all(|k| !matches!(PropertyKind::from(*k), PropertyKind::Other(_))));
/// ```
pub const KINDS: [&str; 11] =
    ["string", "integer", "float", "boolean", "array", "object", "union", "thread", "image", "file", "audio"];

struct Checker<'a> {
    /// The file's text (empty when unknown: locations then name just the file).
    text: &'a str,
    display: &'a str,
    base_dir: &'a Path,
    options: &'a LoadOptions,
    /// How many parents the prompt has (0 for the prompt checked).
    depth: usize,
    /// `kind: prompty` paths compiled into the program (not read again).
    embedded: Vec<String>,
    diagnostics: Vec<Diagnostic>,
    /// Files read by the checks (OpenAPI specifications, child prompts).
    files: Vec<PathBuf>,
    children: Vec<ChildReport>,
}

impl<'a> Checker<'a> {
    fn new(text: &'a str, display: &'a str, base_dir: &'a Path, options: &'a LoadOptions, depth: usize) -> Self {
        Checker {
            text,
            display,
            base_dir,
            options,
            depth,
            embedded: Vec::new(),
            diagnostics: Vec::new(),
            files: Vec::new(),
            children: Vec::new(),
        }
    }

    fn into_report(self, agent: Option<Agent>, mut files: Vec<PathBuf>, text: Arc<str>) -> Report {
        files.extend(self.files);
        let mut diagnostics = self.diagnostics;
        diagnostics.sort_by_key(|d| sort_key(d, self.display));
        Report { agent, diagnostics, files, children: self.children, display: self.display.to_owned(), text }
    }

    fn at(&self, field: &str) -> Location {
        crate::locate_field(self.text, self.display, field)
    }

    /// Records an error of the rule `code`; its span is the word at its place, when the text is
    /// known.
    fn error(&mut self, code: &'static str, at: Location, message: impl fmt::Display) -> &mut Diagnostic {
        self.push(Severity::Error, code, at, message)
    }

    fn warning(&mut self, code: &'static str, at: Location, message: impl fmt::Display) -> &mut Diagnostic {
        self.push(Severity::Warning, code, at, message)
    }

    fn push(
        &mut self,
        severity: Severity,
        code: &'static str,
        at: Location,
        message: impl fmt::Display,
    ) -> &mut Diagnostic {
        let mut d = Diagnostic::new(severity, code, at, message);
        if d.file == self.display {
            if let (Some(line), Some(column)) = (d.line, d.column) {
                d.span = word_span(self.text, line, column);
                d.fix = fix_of(self.text, line, column, &d.message);
                if let Some(fix) = &d.fix {
                    d.span = Some(fix.span);
                } else if let Some(span) = d.span {
                    d.span = Some(value_word(self.text, span, &d.message).unwrap_or(span));
                }
            }
        }
        if let Some((message, help)) = split_help(&d.message) {
            d.message = message;
            d.help = Some(help);
        }
        self.diagnostics.push(d);
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    fn check(&mut self, agent: &Agent) {
        let inputs = agent.inputs.clone().unwrap_or_default();
        self.properties(&inputs, "inputs", "input");
        if let Some(outputs) = &agent.outputs {
            self.properties(outputs, "outputs", "output");
        }
        for (section, what) in [("inputs", "input"), ("outputs", "output"), ("tools", "tool")] {
            self.duplicate_keys(section, what);
        }
        self.template_keys(agent);
        self.model(agent);
        self.references_inside_text();
        self.values_fit(&inputs, "inputs", "input");
        if let Some(outputs) = &agent.outputs {
            self.values_fit(outputs, "outputs", "output");
        }
        self.tools(agent, &inputs);
        self.tool_choice(agent);
        let body_line = agent.source.as_ref().map_or(1, |s| s.body_line);
        let used = self.template(agent, &inputs, body_line);
        let bound: Vec<&str> =
            agent.tools.iter().flatten().flat_map(|t| &t.bindings).map(|b| b.input.as_str()).collect();
        if let Some(used) = used {
            for (i, input) in inputs.iter().enumerate() {
                if !input.name.is_empty() && !used.contains(&input.name) && !bound.contains(&input.name.as_str()) {
                    let at = self.at(&format!("inputs[{i}]"));
                    self.warning(
                        "unused-input",
                        at,
                        format!("the input `{}` is declared, but the template never uses it", input.name),
                    );
                }
            }
        }
    }

    /// A list of properties at key path `path`: duplicate and empty names, kinds.
    fn properties(&mut self, props: &[Property], path: &str, what: &str) {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, p) in props.iter().enumerate() {
            let here = format!("{path}[{i}]");
            if let Some(&first) = seen.get(p.name.as_str()) {
                let first_line = self.at(&format!("{path}[{first}]")).line.unwrap_or(0);
                let at = self.at(&here);
                self.error(
                    "duplicate-property",
                    at,
                    format!("the {what} `{}` is declared twice (first on line {first_line})", p.name),
                );
                continue;
            }
            seen.insert(&p.name, i);
            if p.name.is_empty() {
                let at = self.at(&here);
                self.error("unnamed-property", at, format!("every {what} needs a name"));
                continue;
            }
            self.kind(p, &here, what, &p.name);
        }
    }

    /// The kind of `p` (at key path `here`) and of its items and properties.
    fn kind(&mut self, p: &Property, here: &str, what: &str, name: &str) {
        match &p.kind {
            PropertyKind::Array => {
                if let Some(items) = &p.items {
                    self.kind(items, &format!("{here}.items"), what, name);
                }
            }
            PropertyKind::Object => {
                if let Some(props) = p.properties.as_ref().filter(|p| !p.is_empty()) {
                    self.properties(props, &format!("{here}.properties"), "property");
                }
            }
            PropertyKind::Other(kind) => {
                let at = self.at(&format!("{here}.kind"));
                let hint = did_you_mean(kind, KINDS);
                self.error(
                    "unknown-kind",
                    at,
                    format!("unknown kind `{kind}` for the {what} `{name}`{hint}: the kinds are {}", KINDS.join(", ")),
                );
            }
            _ => {}
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
                self.error(
                    "duplicate-key",
                    at,
                    format!("the {what} `{key}` is declared twice (first on line {})", first + 1),
                );
            } else {
                seen.insert(key, i);
            }
        }
    }

    /// `template.format` and `template.parser`: a built-in key in the wrong case is an error (keys
    /// are case-sensitive, so the runtime would not find it); any other unknown key is a warning
    /// (a crate may register a renderer or parser under it), and its template goes unchecked.
    fn template_keys(&mut self, agent: &Agent) {
        let checks = [
            ("format", agent.template.format.kind.as_str(), &FORMATS[..], "renderer"),
            ("parser", agent.template.parser.kind.as_str(), &PARSERS[..], "parser"),
        ];
        for (key, kind, known, component) in checks {
            if known.contains(&kind) {
                continue;
            }
            let at = self.at(&format!("template.{key}.kind"));
            let list = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
            if let Some(right) = known.iter().find(|k| k.eq_ignore_ascii_case(kind)) {
                self.error("template-key-case", 
                    at,
                    format!("unknown template {key} `{kind}` (did you mean `{right}`?): {component} keys are case-sensitive"),
                );
            } else {
                let hint = did_you_mean(kind, known.iter().copied());
                let unchecked = if key == "format" { "; the template is not checked" } else { "" };
                self.warning(
                    "unknown-template-key",
                    at,
                    format!(
                        "unknown template {key} `{kind}`{hint}: the built-in ones are {list}; a {component} must be \
                         registered under `{kind}` at run time{unchecked}"
                    ),
                );
            }
        }
    }

    /// Checks every `default` and `example` of `props` (and of their nested properties) against
    /// its property: kind, `enumValues`, `properties` of objects, `items` of arrays.
    fn values_fit(&mut self, props: &[Property], path: &str, what: &str) {
        for (i, p) in props.iter().enumerate() {
            let here = format!("{path}[{i}]");
            for (key, value) in [("default", &p.default), ("example", &p.example)] {
                let Some(value) = value else { continue };
                if let Err(problem) = values::value_fits(value, p, "") {
                    let at = self.at(&format!("{here}.{key}"));
                    let shown = if p.name.is_empty() { what.to_owned() } else { format!("{what} `{}`", p.name) };
                    self.error(
                        "value-does-not-fit",
                        at,
                        format!("the {key} of the {shown} does not fit it: {problem}"),
                    );
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

    fn tools(&mut self, agent: &Agent, inputs: &[Property]) {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, tool) in agent.tools.iter().flatten().enumerate() {
            let here = format!("tools[{i}]");
            if let Some(first) = seen.get(&tool.name) {
                let first_line = self.at(&format!("tools[{first}]")).line.unwrap_or(0);
                let at = self.at(&here);
                self.error(
                    "duplicate-tool",
                    at,
                    format!("the tool `{}` is declared twice (first on line {first_line})", tool.name),
                );
                continue;
            }
            seen.insert(tool.name.clone(), i);
            if let ToolKind::Mcp(m) = &tool.kind {
                // The bounds the runtime enforces when it starts the server, known from the file.
                let timeouts = [
                    ("handshakeTimeout", m.handshake_duration()),
                    ("callTimeout", m.call_duration()),
                    ("idleTimeout", m.idle_duration()),
                ];
                for (field, read) in timeouts {
                    if let Err(problem) = read {
                        let at = self.at(&format!("{here}.{field}"));
                        self.error("invalid-timeout", at, format!("the MCP tool `{}`: {problem}", tool.name));
                    }
                }
                if !m.server_name.is_empty() && m.server_name != tool.name {
                    let at = self.at(&format!("{here}.name"));
                    let (name, server) = (&tool.name, &m.server_name);
                    let d = self.warning(
                        "mcp-namespace",
                        at,
                        format!(
                            "the tools of the MCP server `{server}` are offered to the model as `{name}__<tool>`, \
                             under the declaration's `name`; earlier versions offered them as `{server}__<tool>`, \
                             under its `serverName`"
                        ),
                    );
                    d.help = Some(format!(
                        "a conversation recorded with the old names still runs; to keep them, name the declaration \
                         `{server}`"
                    ));
                }
            }
            let params: &[Property] = match &tool.kind {
                ToolKind::Function(f) => &f.parameters,
                _ => &[],
            };
            let openapi_arguments = match &tool.kind {
                ToolKind::OpenApi(o) => self.openapi(&tool.name, &o.specification, &here),
                _ => None,
            };
            let child_inputs = match &tool.kind {
                ToolKind::Prompty(p) => self.child(&tool.name, &p.path, &here),
                _ => None,
            };
            for binding in &tool.bindings {
                let at = self.at(&format!("{here}.bindings.{}", binding.name));
                if !inputs.iter().any(|p| p.name == binding.input) {
                    let hint = did_you_mean(&binding.input, inputs.iter().map(|p| p.name.as_str()));
                    self.error(
                        "binding-undeclared-input",
                        at,
                        format!(
                            "the tool `{}` binds its parameter `{}` to the input `{}`, which is not declared{hint}",
                            tool.name, binding.name, binding.input
                        ),
                    );
                } else if let Some(arguments) = openapi_arguments.as_ref().filter(|a| !a.contains(&binding.name)) {
                    let hint = did_you_mean(&binding.name, arguments.iter().map(String::as_str));
                    self.error("binding-unknown-parameter", 
                        at,
                        format!(
                            "the tool `{}` binds `{}`, which is not a parameter of any operation of its specification{hint}",
                            tool.name, binding.name
                        ),
                    );
                } else if let Some((child, names)) = child_inputs.as_ref().filter(|(_, n)| !n.contains(&binding.name)) {
                    let hint = did_you_mean(&binding.name, names.iter().map(String::as_str));
                    self.error(
                        "binding-unknown-parameter",
                        at,
                        format!(
                            "the tool `{}` binds `{}`, which is not an input of its child prompt `{child}`{hint}",
                            tool.name, binding.name
                        ),
                    );
                } else if matches!(tool.kind, ToolKind::Function(_)) && !params.iter().any(|p| p.name == binding.name) {
                    let hint = did_you_mean(&binding.name, params.iter().map(|p| p.name.as_str()));
                    self.error(
                        "binding-unknown-parameter",
                        at,
                        format!(
                            "the tool `{}` binds `{}`, which is not one of its parameters{hint}",
                            tool.name, binding.name
                        ),
                    );
                }
            }
            let mut seen_params: HashMap<&str, usize> = HashMap::new();
            for (j, p) in params.iter().enumerate() {
                let phere = format!("{here}.parameters[{j}]");
                if let Some(&first) = seen_params.get(p.name.as_str()) {
                    let first_line = self.at(&format!("{here}.parameters[{first}]")).line.unwrap_or(0);
                    let at = self.at(&phere);
                    self.error(
                        "duplicate-parameter",
                        at,
                        format!(
                            "the parameter `{}` of the tool `{}` is declared twice (first on line {first_line})",
                            p.name, tool.name
                        ),
                    );
                    continue;
                }
                seen_params.insert(&p.name, j);
                self.kind(p, &phere, "parameter", &p.name);
            }
            self.values_fit(params, &format!("{here}.parameters"), "parameter");
        }
    }

    /// `model.options.toolChoice` naming a tool: the prompt must declare it (unless an `mcp` or
    /// `openapi` declaration brings tools whose names only its server or document knows).
    fn tool_choice(&mut self, agent: &Agent) {
        let choice = agent.model.as_ref().and_then(|m| m.options.as_ref()).and_then(|o| o.tool_choice.as_ref());
        let Some(crate::ToolChoice::Tool(name)) = choice else { return };
        let tools: Vec<&crate::Tool> = agent.tools.iter().flatten().collect();
        if tools.iter().any(|t| t.name == *name || matches!(t.kind, ToolKind::Mcp(_) | ToolKind::OpenApi(_))) {
            return;
        }
        let at = self.at("model.options.toolChoice");
        let hint = did_you_mean(name, tools.iter().map(|t| t.name.as_str()));
        let declared = if tools.is_empty() {
            "the prompt declares no tools".to_owned()
        } else {
            format!("its tools are {}", tools.iter().map(|t| format!("`{}`", t.name)).collect::<Vec<_>>().join(", "))
        };
        self.error(
            "unknown-tool-choice",
            at,
            format!("`toolChoice` names the tool `{name}`, which the prompt does not declare{hint}: {declared}"),
        );
    }

    /// Checks the `specification` of an `openapi` tool when it is a local file: it exists inside
    /// the prompt's folder, is an OpenAPI 3.0/3.1 or Swagger 2.0 document (read by the same
    /// [`crate::openapi`] reader as the runtime) and has an operation. Returns the argument names
    /// of all its operations (for the bindings), or `None` when it was not checked (a URL, an
    /// `${env:}` reference, an error).
    fn openapi(&mut self, tool: &str, specification: &str, here: &str) -> Option<Vec<String>> {
        use crate::Error;
        let written = specification.trim();
        if written.is_empty() {
            let at = self.at(&format!("{here}.name"));
            self.error(
                "openapi-no-specification",
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
        let joined = self.base_dir.join(written);
        if joined.is_file() {
            // Tracked even when it is not a valid document, so fixing it triggers a rebuild.
            self.files.push(std::fs::canonicalize(&joined).unwrap_or(joined));
        }
        let what = format!("the specification `{written}` of the openapi tool `{tool}`");
        match crate::openapi::read_spec_file(self.base_dir, written, self.options, self.display) {
            Ok((_, spec)) if spec.operations.is_empty() => {
                self.error(
                    "openapi-no-operations",
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
                self.error(
                    "openapi-not-found",
                    at,
                    format!("{what} was not found (the path is relative to the prompt's folder)"),
                );
                None
            }
            Err(Error::FileOutsideRoots { .. }) => {
                self.error("openapi-outside-folder", at, format!("{what} is outside the prompt's folder"));
                None
            }
            Err(Error::InvalidField { field, message, .. }) => {
                let field = if field == "#" || field == "specification" { String::new() } else { format!("{field}: ") };
                self.error("openapi-invalid", at, format!("{what} is not a valid OpenAPI document: {field}{message}"));
                None
            }
            Err(e) => {
                self.error("openapi-unreadable", at, format!("{what} cannot be read: {e}"));
                None
            }
        }
    }

    /// Checks the child prompt of a `kind: prompty` tool: it exists inside the prompt's folder
    /// (confined like `${file:}` references) and passes this same analysis, its diagnostics naming
    /// the child's file, line and column and the tool that runs it. Returns the child as named in
    /// messages and its input names (for the bindings), or `None` when it was not checked (an
    /// `${env:}` reference, a child compiled into the program, an error).
    fn child(&mut self, tool: &str, written: &str, here: &str) -> Option<(String, Vec<String>)> {
        use crate::Error;
        if written.trim().is_empty() || written.contains("${") || self.embedded.iter().any(|e| e == written) {
            return None;
        }
        let at = self.at(&format!("{here}.path"));
        let what = format!("the child prompt `{written}` of the prompty tool `{tool}`");
        let path = match crate::confine_path(self.base_dir, written, self.options) {
            Ok(path) => path,
            Err(Error::FileNotFound { .. }) => {
                self.error(
                    "child-not-found",
                    at,
                    format!("{what} was not found (the path is relative to the prompt's folder)"),
                );
                return None;
            }
            Err(Error::FileOutsideRoots { .. }) => {
                self.error("child-outside-folder", at, format!("{what} is outside the prompt's folder"));
                return None;
            }
            Err(e) => {
                self.error("child-unreadable", at, format!("{what} cannot be read: {e}"));
                return None;
            }
        };
        if self.depth + 1 >= MAX_CHILD_DEPTH {
            self.error(
                "child-too-deep",
                at,
                format!("{what} nests prompts more than {MAX_CHILD_DEPTH} deep (does a prompt run itself as a tool?)"),
            );
            return None;
        }
        let display = child_display(self.display, written);
        let report = check_file_at(&path, &display, self.options, self.depth + 1);
        self.files.extend(report.files.iter().cloned());
        for d in &report.diagnostics {
            let d = d.clone().in_context(format!("in {what}, declared at {at}"));
            self.diagnostics
                .push(d.with_related(at.clone(), format!("the prompty tool `{tool}` runs this child prompt")));
        }
        if report.has_errors() {
            return None;
        }
        let inputs = report.agent.iter().flat_map(|a| a.inputs.iter().flatten()).map(|p| p.name.clone()).collect();
        self.children.push(ChildReport { tool: tool.to_owned(), tool_path: written.to_owned(), path, report });
        Some((display, inputs))
    }

    /// Checks the template; returns the root names it mentions (`None` for a renderer whose
    /// syntax is unknown, or when the template does not parse).
    fn template(&mut self, agent: &Agent, inputs: &[Property], body_line: usize) -> Option<BTreeSet<String>> {
        let source = agent.instructions.as_deref().unwrap_or("");
        let format = agent.template.format.kind.as_str();
        let display = self.display;
        let place = |line: usize, column: usize| Location::file(display).at(body_line + line - 1, column);
        for ((line, column), word, role) in template::misspelt_role_markers(source) {
            self.warning(
                "misspelt-role-marker",
                place(line, column),
                format!("the line `{word}:` is not a role marker (did you mean `{role}`?)"),
            );
        }
        match template::analyze(format, source)? {
            Err(e) => {
                self.error(
                    "template-syntax",
                    place(e.line, e.column),
                    format!("template error ({format}): {}", e.message),
                );
                None
            }
            Ok(vars) => {
                for unknown in &vars.unknown {
                    let (line, column) = unknown.at;
                    let message = format!("unknown Jinja {} `{}`{}", unknown.what, unknown.name, unknown.hint);
                    self.error("unknown-jinja-function", place(line, column), message);
                }
                let declared: Vec<&str> = inputs.iter().map(|p| p.name.as_str()).collect();
                let mut undeclared: BTreeMap<(usize, usize), String> = BTreeMap::new();
                for (name, at) in &vars.required {
                    if declared.contains(&name.as_str()) {
                        continue;
                    }
                    match vars.guarded.get(name) {
                        // Read only where the template tests whether it is there: not an error.
                        Some(((line, column), test)) => {
                            self.warning(
                                "test-of-undeclared",
                                place(*line, *column),
                                format!("the template tests `{name} is {test}`, but no input declares `{name}`: it is never an input"),
                            );
                        }
                        None => {
                            undeclared.insert(*at, name.clone());
                        }
                    }
                }
                for access in &vars.accesses {
                    self.template_access(access, inputs, &place);
                }
                for ((line, column), name) in undeclared {
                    let hint = did_you_mean(&name, declared.iter().copied());
                    let message = if declared.is_empty() {
                        format!(
                            "the template uses `{name}`, which no input declares (the prompt declares no `inputs:`)"
                        )
                    } else {
                        format!("the template uses `{name}`, which no input declares{hint}")
                    };
                    self.error("undeclared-variable", place(line, column), message);
                }
                Some(vars.mentioned)
            }
        }
    }

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
        let hint = did_you_mean(&access.name, known.iter().copied());
        let (line, column) = access.at;
        self.error(
            "unknown-property",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prompty-analysis-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_childs_warnings_are_its_parents() {
        let dir = folder("child-warnings");
        std::fs::write(dir.join("child.prompty"), "---\ninputs: [topic, unused]\n---\nuser:\n{{ topic }}").unwrap();
        let parent = "---\ntools:\n  - name: research\n    kind: prompty\n    path: child.prompty\n---\nHi";
        std::fs::write(dir.join("parent.prompty"), parent).unwrap();
        let report = check_file(&dir.join("parent.prompty"), "p/parent.prompty", &LoadOptions::new());
        assert!(!report.has_errors(), "{:?}", report.diagnostics);
        let warnings: Vec<String> = report.warnings().map(|d| d.to_string()).collect();
        assert_eq!(
            warnings,
            ["p/child.prompty:2:17: the input `unused` is declared, but the template never uses it (in the child \
              prompt `child.prompty` of the prompty tool `research`, declared at p/parent.prompty:5:5)"]
        );
        assert_eq!(report.children.len(), 1);
    }

    #[test]
    fn an_mcp_declaration_named_other_than_its_server_warns_of_the_namespace() {
        let text = "---\ntools:\n  - name: files\n    kind: mcp\n    serverName: fs\n  - name: docs\n    kind: mcp\n    serverName: docs\n  - name: pets\n    kind: openapi\n    specification: https://example.com/pets.json\n---\nHi";
        let report = check_str(text, Path::new("."), "n.prompty", &LoadOptions::new());
        let found: Vec<(&str, String)> = report.warnings().map(|d| (d.code, d.to_string())).collect();
        assert_eq!(
            found,
            [(
                "mcp-namespace",
                "n.prompty:3:5: the tools of the MCP server `fs` are offered to the model as `files__<tool>`, under \
                 the declaration's `name`; earlier versions offered them as `fs__<tool>`, under its `serverName` (a \
                 conversation recorded with the old names still runs; to keep them, name the declaration `fs`)"
                    .to_owned()
            )]
        );
    }

    #[test]
    fn mcp_timeouts_out_of_their_bounds_are_errors_at_the_field() {
        let text = "---\ntools:\n  - name: fs\n    kind: mcp\n    serverName: fs\n    handshakeTimeout: 0\n    \
                    callTimeout: \"10\"\n    idleTimeout: 90000\n  - name: ok\n    kind: mcp\n    serverName: ok\n    \
                    handshakeTimeout: 2.5\n    callTimeout: 3600\n    idleTimeout: 1\n---\nHi";
        let report = check_str(text, Path::new("."), "t.prompty", &LoadOptions::new());
        let found: Vec<(&str, String)> = report.errors().map(|d| (d.code, d.to_string())).collect();
        assert_eq!(
            found,
            [
                ("invalid-timeout", "t.prompty:6:5: the MCP tool `fs`: `handshakeTimeout` is 0; it must be a number of seconds from 1 to 600".to_owned()),
                ("invalid-timeout", "t.prompty:7:5: the MCP tool `fs`: `callTimeout` is \"10\" (a string); it must be a number of seconds from 1 to 3600".to_owned()),
                ("invalid-timeout", "t.prompty:8:5: the MCP tool `fs`: `idleTimeout` is 90000; it must be a number of seconds from 1 to 86400".to_owned()),
            ]
        );
    }

    #[test]
    fn tool_parameter_defaults_must_fit() {
        let text = "---\ntools:\n  - name: forecast\n    kind: function\n    parameters:\n      days:\n        kind: integer\n        default: three\n      unit:\n        kind: string\n        enumValues: [c, f]\n        default: k\n---\nHi";
        let report = check_str(text, Path::new("."), "f.prompty", &LoadOptions::new());
        let errors: Vec<String> = report.errors().map(|d| d.to_string()).collect();
        assert_eq!(
            errors,
            [
                "f.prompty:8:9: the default of the parameter `days` does not fit it: expected an integer, found the string `\"three\"`",
                "f.prompty:12:9: the default of the parameter `unit` does not fit it: expected one of `\"c\"`, `\"f\"` (its `enumValues`), found the string `\"k\"`",
            ]
        );
    }

    #[test]
    fn unknown_kinds_of_items_and_parameters_name_their_property() {
        let text = "---\ninputs:\n  tags:\n    kind: array\n    items: {kind: strnig}\ntools:\n  - name: t\n    kind: function\n    parameters:\n      n: {kind: integr}\n---\n{{ tags }}";
        let report = check_str(text, Path::new("."), "k.prompty", &LoadOptions::new());
        let errors: Vec<String> = report.errors().map(|d| d.to_string()).collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].contains("unknown kind `strnig` for the input `tags` (did you mean `string`?)"),
            "{errors:?}"
        );
        assert!(
            errors[1].contains("unknown kind `integr` for the parameter `n` (did you mean `integer`?)"),
            "{errors:?}"
        );
    }

    #[test]
    fn tool_choice_must_name_a_declared_tool() {
        let prompt = |choice: &str| {
            format!("---\nmodel:\n  id: m\n  options:\n    toolChoice: {choice}\ntools:\n  - name: get_weather\n    kind: function\n---\nHi")
        };
        let r = check_str(&prompt("get_wether"), Path::new("."), "c.prompty", &LoadOptions::new());
        let errors: Vec<String> = r.errors().map(|d| d.to_string()).collect();
        assert_eq!(
            errors,
            ["c.prompty:5:5: `toolChoice` names the tool `get_wether`, which the prompt does not declare (did you mean \
              `get_weather`?): its tools are `get_weather`"]
        );
        for ok in ["get_weather", "auto", "required", "none", "{name: get_weather}"] {
            let r = check_str(&prompt(ok), Path::new("."), "c.prompty", &LoadOptions::new());
            assert!(!r.has_errors(), "{ok}: {:?}", r.diagnostics);
        }
    }

    #[test]
    fn diagnostics_of_other_files_sort_last() {
        let d = |file: &str, at: Option<(usize, usize)>| {
            let loc = Location::file(file);
            Diagnostic::error(at.map_or(loc.clone(), |(l, c)| loc.at(l, c)), "x")
        };
        assert!(
            sort_key(&d("a.prompty", Some((3, 1))), "a.prompty")
                < sort_key(&d("a.prompty", Some((10, 1))), "a.prompty")
        );
        assert_eq!(sort_key(&d("b.prompty", Some((1, 1))), "a.prompty"), (u32::MAX, 0));
        assert_eq!(sort_key(&d("a.prompty", None), "a.prompty"), (0, 0));
    }
}
