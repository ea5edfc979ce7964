//! The format's error type: what can go wrong while loading and validating a `.prompty` file.
//!
//! The runtime's failures (rendering, model calls, tools, the agent loop) are `prompty::Error`,
//! which wraps this one as its `Format` variant.

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

impl From<&str> for Location {
    /// A location naming only the file `file`.
    fn from(file: &str) -> Self {
        Location::file(file)
    }
}

impl From<String> for Location {
    /// A location naming only the file `file`.
    fn from(file: String) -> Self {
        Location::file(file)
    }
}

impl From<&String> for Location {
    /// A location naming only the file `file`.
    fn from(file: &String) -> Self {
        Location::file(file.as_str())
    }
}

impl From<&Location> for Location {
    fn from(at: &Location) -> Self {
        at.clone()
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

/// Everything that can go wrong while loading a prompt (reading it, its frontmatter, its
/// references) or validating its inputs and locales: the format's errors, raised by this crate at
/// compile time and at run time alike.
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
    #[error(
        "{at}: {field}: Environment variable '{var}' not set, so ${{env:{var}}} cannot be resolved (set {var}, or give the reference a default: ${{env:{var}:default}})"
    )]
    EnvVarNotSet {
        /// The file (and line, when known) of the reference.
        at: Location,
        /// The key path holding the reference.
        field: String,
        /// The variable's name.
        var: String,
    },

    /// `${file:path}` names a file that does not exist. The message names the prompt, the line and
    /// column of the reference, its key, and the path as written (never the absolute path it was
    /// looked up at, which belongs to the machine that loaded the prompt).
    ///
    /// ```
    /// let err = prompty_core::load_str("---\ndescription: ${file:nope.txt}\n---\nHi", ".", "chat.prompty")
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "chat.prompty:2:14: description: file reference 'nope.txt' was not found \
    ///     (the path is relative to the prompt's folder)");
    /// ```
    #[error("{at}: {field}: file reference '{reference}' was not found (the path is relative to the prompt's folder)")]
    FileReferenceNotFound {
        /// The file, line and column of the reference.
        at: Location,
        /// The key path holding the reference.
        field: String,
        /// The path as written in the reference.
        reference: String,
    },

    /// `${file:path}` points outside the prompt's folder and the extra roots the host allowed.
    #[error("{at}: {field}: file reference '{reference}' is outside allowed roots (the prompt's folder and the roots the host allowed): allow its folder with `LoadOptions::allow_root` (for every load without options: `LoadOptions::set_process_default`; on the command line: `--allow-root DIR`)")]
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

    /// A locale tag is not a well-formed BCP 47 tag (see [`crate::locale`]).
    #[error("`{tag}` is not a locale tag (BCP 47, e.g. `fr` or `pt-BR`): {message}")]
    InvalidLocale {
        /// The tag as given (shortened when long).
        tag: String,
        /// Why it is not one.
        message: String,
    },
}

impl Error {
    /// The same error with every remembered secret value ([`crate::Secret::scrub`]) replaced by
    /// `[REDACTED]` in its text fields, so that neither its `Display` nor its `Debug` form shows a
    /// secret that landed in a field no one expected (the runtime applies it to every error
    /// leaving a stage of its pipeline). Unchanged, at the cost of one atomic load, while no
    /// secret is remembered.
    ///
    /// ```
    /// use prompty_core::{Error, Secret};
    /// Secret::remember("sk-in-a-message-0123");
    /// let e = Error::InvalidInputs { message: "bad sk-in-a-message-0123".into() }.redacted();
    /// assert_eq!(e.to_string(), "invalid inputs: bad [REDACTED]");
    /// ```
    pub fn redacted(self) -> Error {
        let remembered = crate::Secret::remembered();
        if remembered.is_empty() {
            return self;
        }
        let mut e = self;
        let r = |s: &mut String| remembered.scrub_in_place(s);
        match &mut e {
            Error::FileNotFound { .. } | Error::Io { .. } => {}
            Error::Frontmatter { message, .. }
            | Error::InvalidInputs { message }
            | Error::FileReferenceInvalid { message, .. } => r(message),
            Error::InvalidField { field, message, .. } => {
                r(field);
                r(message);
            }
            Error::EnvVarNotSet { field, .. }
            | Error::FileReferenceNotFound { field, .. }
            | Error::FileOutsideRoots { field, .. } => r(field),
            Error::MissingInput { name } => r(name),
            Error::InvalidLocale { tag, message } => {
                r(tag);
                r(message);
            }
        }
        e
    }
}

/// `Result` with the format's [`Error`].
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
