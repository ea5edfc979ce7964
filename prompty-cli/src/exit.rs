//! Exit codes and the error type every command returns.

use std::fmt;

/// How the process ends. The numbers are part of the interface (documented in `--help` and the
/// README); scripts and CI rely on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Everything worked.
    Ok = 0,
    /// `check` found an error (or a warning with `--deny warnings`); results could not be written.
    Failure = 1,
    /// Bad arguments (clap's own code for usage errors).
    Usage = 2,
    /// The prompt, its inputs or a file next to it cannot be loaded, validated or rendered.
    Prompt = 3,
    /// The model call, a tool server or the network failed.
    Provider = 4,
    /// Cancelled with Ctrl-C.
    Cancelled = 130,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// A failure of a command: what to print (on stderr) and the exit code.
#[derive(Debug)]
pub struct CliError {
    /// The exit code.
    pub exit: Exit,
    /// The message, without the leading `error: `.
    pub message: String,
}

impl CliError {
    /// A failure with exit code `exit`.
    pub fn new(exit: Exit, message: impl fmt::Display) -> Self {
        CliError { exit, message: message.to_string() }
    }

    /// A usage error (exit 2).
    pub fn usage(message: impl fmt::Display) -> Self {
        CliError::new(Exit::Usage, message)
    }

    /// A prompt error (exit 3).
    pub fn prompt(message: impl fmt::Display) -> Self {
        CliError::new(Exit::Prompt, message)
    }

    /// A provider error (exit 4).
    pub fn provider(message: impl fmt::Display) -> Self {
        CliError::new(Exit::Provider, message)
    }

    /// Ctrl-C (exit 130).
    pub fn cancelled() -> Self {
        CliError::new(Exit::Cancelled, "cancelled")
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<prompty::Error> for CliError {
    fn from(e: prompty::Error) -> Self {
        CliError::new(classify(&e), e)
    }
}

impl From<prompty::FormatError> for CliError {
    fn from(e: prompty::FormatError) -> Self {
        prompty::Error::from(e).into()
    }
}

/// The exit code a prompty error stands for, by its variant: a prompt error for everything found
/// before a request is sent (every format error: load, validation; rendering, parsing, a
/// component nobody registered, tools that do not bind, a setting found unusable
/// ([`prompty::Error::Config`]): an unknown `apiType`, a `toolChoice` naming an undeclared tool, a
/// connection that cannot be resolved, no model or provider), a provider error for what failed
/// once one was (HTTP, the provider's answer, a tool, the agent loop), or a cancelled turn. An
/// agent loop that stopped on an error is classified by that error.
pub fn classify(e: &prompty::Error) -> Exit {
    use prompty::{Error as E, TurnStop};
    match e {
        E::Format(_)
        | E::StrictViolation { .. }
        | E::Template { .. }
        | E::Parse { .. }
        | E::UnknownComponent { .. }
        | E::ToolBinding { .. }
        | E::Config { .. } => Exit::Prompt,
        E::Turn(failure) => match &failure.stop {
            TurnStop::Cancelled { .. } => Exit::Cancelled,
            TurnStop::Model { source, .. } | TurnStop::Failed(source) => classify(source),
            _ => Exit::Provider,
        },
        _ => Exit::Provider,
    }
}

/// The result of a command.
pub type CliResult<T = Exit> = Result<T, CliError>;
