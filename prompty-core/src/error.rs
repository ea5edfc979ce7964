//! The one error type of prompty.

use std::fmt;
use std::path::PathBuf;

/// Where a problem was found: the file (or `<string>` for an in-memory prompt), and, when known, the
/// 1-based line and column in that file.
///
/// ```
/// use prompty_core::Location;
/// let at = Location::file("chat.prompty").at(3, 5);
/// assert_eq!(at.to_string(), "chat.prompty:3:5");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// The file that holds the problem, as given by the caller.
    pub file: String,
    /// 1-based line in `file`, when known.
    pub line: Option<u32>,
    /// 1-based column in `file`, when known.
    pub column: Option<u32>,
}

impl Location {
    /// A location naming only a file.
    pub fn file(file: impl Into<String>) -> Self {
        Location { file: file.into(), line: None, column: None }
    }

    /// The same file, at a line and column.
    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(to_u32(line));
        self.column = Some(to_u32(column));
        self
    }

    /// The same file, at a line.
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(to_u32(line));
        self
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// Everything that can go wrong while loading, validating, rendering or parsing a prompt.
///
/// Every variant says what was wrong and where; none of them carries a secret value (an API key read
/// from the environment is never part of a message).
///
/// ```
/// let err = prompty_core::load_str("---\nname: [broken\n---\nHi", ".", "chat.prompty").unwrap_err();
/// assert!(err.to_string().starts_with("chat.prompty:"));
/// assert!(err.to_string().contains("invalid frontmatter"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The prompt file (or a file it references) does not exist.
    #[error("{path}: file not found")]
    FileNotFound {
        /// The path that was looked up.
        path: PathBuf,
    },

    /// A file exists but could not be read.
    #[error("{path}: cannot read file: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// The frontmatter is not valid YAML, is not closed, or is not a mapping.
    #[error("{at}: invalid frontmatter: {message}")]
    Frontmatter {
        /// File, line and column of the problem.
        at: Location,
        /// What was wrong.
        message: String,
    },

    /// A field of the frontmatter has the wrong shape or value.
    #[error("{at}: {field}: {message}")]
    InvalidField {
        /// File (and line, when known) of the field.
        at: Location,
        /// The key path of the field, such as `inputs[1].kind`.
        field: String,
        /// What was wrong.
        message: String,
    },

    /// `${env:VAR}` names a variable that is not set and has no default.
    #[error("{at}: {field}: Environment variable '{var}' not set (use ${{env:{var}:default}} to give a default)")]
    EnvVarNotSet {
        /// The file (and line, when known) of the reference.
        at: Location,
        /// The key path holding the reference.
        field: String,
        /// The variable's name.
        var: String,
    },

    /// `${file:path}` points outside the prompt's folder and the extra roots the host allowed.
    #[error("{at}: {field}: file reference '{reference}' is outside allowed roots (the prompt's folder and the roots the host allowed)")]
    FileOutsideRoots {
        /// The file (and line, when known) of the reference.
        at: Location,
        /// The key path holding the reference.
        field: String,
        /// The path as written in the reference.
        reference: String,
    },

    /// A `${file:path}` target could not be parsed as JSON or YAML.
    #[error("{at}: {field}: referenced file '{reference}' is not valid {message}")]
    FileReferenceInvalid {
        /// The file (and line, when known) of the reference.
        at: Location,
        /// The key path holding the reference.
        field: String,
        /// The path as written in the reference.
        reference: String,
        /// The format expected (`JSON` or `YAML`) and what its parser said.
        message: String,
    },

    /// A required input has no value and no default.
    #[error("Missing required input: {name}")]
    MissingInput {
        /// The input's name.
        name: String,
    },

    /// The inputs handed to the pipeline are of the wrong shape.
    #[error("invalid inputs: {message}")]
    InvalidInputs {
        /// What was wrong.
        message: String,
    },

    /// An input marked strict carries a role marker that would forge a message boundary.
    #[error("input '{input}' is marked strict but its value contains the role marker '{marker}': a value may not start a new message")]
    StrictViolation {
        /// The strict input.
        input: String,
        /// The offending line, shortened.
        marker: String,
    },

    /// The template could not be compiled or rendered.
    #[error("{at}: template error: {message}")]
    Template {
        /// The prompt file, with the line inside it when known.
        at: Location,
        /// What the template engine said.
        message: String,
    },

    /// The rendered prompt could not be parsed into messages.
    #[error("{at}: parse error: {message}")]
    Parse {
        /// The prompt file.
        at: Location,
        /// What was wrong.
        message: String,
    },

    /// No component is registered for a key (renderer, parser, executor, processor, connection, ...).
    #[error("no {component} registered for '{key}' (registered: {known}). Register one with `{register}`{hint}")]
    UnknownComponent {
        /// The kind of component: `renderer`, `parser`, ...
        component: &'static str,
        /// The key that was looked up.
        key: String,
        /// The keys that are registered, comma separated (`none` when empty).
        known: String,
        /// The function that registers one, e.g. `prompty::register_renderer(key, ...)`.
        register: &'static str,
        /// More ways to register one (starts with `; ` or is empty).
        hint: String,
    },

    /// A tool call that no handler can serve.
    #[error("No handler registered for tool: {name} (kind: {kind}). {hint}")]
    NoToolHandler {
        /// The tool's name.
        name: String,
        /// The tool's kind (`unknown` when the agent does not declare it).
        kind: String,
        /// What to register or enable.
        hint: String,
    },

    /// A tool ran and failed.
    #[error("Tool '{name}' failed: {message}")]
    Tool {
        /// The tool's name.
        name: String,
        /// What went wrong.
        message: String,
    },

    /// Tool handlers and the agent's tool declarations do not fit together.
    #[error("tool binding error: {message}")]
    ToolBinding {
        /// What does not fit.
        message: String,
    },

    /// An HTTP request to a provider failed: status, the provider's message, the request id.
    #[error("{0}")]
    Http(Box<HttpFailure>),

    /// A model call failed (no provider configured, an executor error, ...).
    #[error("{message}")]
    Execution {
        /// What went wrong.
        message: String,
    },

    /// A model's result does not fit the type it was cast to.
    #[error("the result does not fit `{target}`: {message}")]
    Cast {
        /// The Rust type asked for.
        target: &'static str,
        /// What did not fit.
        message: String,
    },

    /// The runtime could not run a step: a background task failed, no async runtime could be
    /// started, the operating system's random source failed.
    #[error("{0}")]
    Task(String),
}

/// What an HTTP request to a provider failed with ([`Error::Http`]). It never holds a credential.
///
/// ```
/// let f = prompty_core::HttpFailure {
///     provider: "openai".into(), status: Some(429), reason: Some("Too Many Requests".into()),
///     message: "slow down".into(), request_id: Some("req-1".into()), body: None, attempts: 3 };
/// assert_eq!(f.to_string(), "openai request failed: HTTP 429 Too Many Requests: slow down (request id req-1; 3 attempts)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpFailure {
    /// The provider the request went to (`openai`, `azure`, `anthropic`, ...).
    pub provider: String,
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// The status's reason phrase (`Too Many Requests`).
    pub reason: Option<String>,
    /// The provider's error message, or what went wrong locally (no response, unreadable body).
    pub message: String,
    /// The request id the server gave.
    pub request_id: Option<String>,
    /// The raw response body (shortened), when it could not be parsed.
    pub body: Option<String>,
    /// How many attempts were made.
    pub attempts: u32,
}

impl fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} request failed: ", self.provider)?;
        if let Some(status) = self.status {
            write!(f, "HTTP {status}")?;
            if let Some(reason) = &self.reason {
                write!(f, " {reason}")?;
            }
            f.write_str(": ")?;
        }
        f.write_str(&self.message)?;
        let mut notes = Vec::new();
        if let Some(id) = &self.request_id {
            notes.push(format!("request id {id}"));
        }
        if self.attempts > 1 {
            notes.push(format!("{} attempts", self.attempts));
        }
        if !notes.is_empty() {
            write!(f, " ({})", notes.join("; "))?;
        }
        if let Some(body) = &self.body {
            write!(f, "; response body: {body}")?;
        }
        Ok(())
    }
}

/// `Result` with prompty's [`Error`].
///
/// ```
/// fn agent_name(text: &str) -> prompty_core::Result<String> {
///     Ok(prompty_core::load_str(text, ".", "x.prompty")?.name)
/// }
/// assert_eq!(agent_name("---\nname: greet\n---\nHi")?, "greet");
/// assert!(agent_name("---\nname: [unclosed\n---\nHi").is_err());
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
