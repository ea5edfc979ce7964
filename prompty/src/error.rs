//! The runtime's error: everything that can fail once a prompt is loaded (rendering, parsing,
//! model calls, HTTP, tools, the agent loop), plus the format's errors ([`FormatError`]) wrapped
//! as [`Error::Format`].
//!
//! The bottom layer of the runtime: it imports nothing of `prompty` but `prompty_core`.

use std::fmt;

use prompty_core::Location;

/// The format's error: what [`prompty_core`] raises while loading a `.prompty` file (its
/// frontmatter, `${env:}`/`${file:}` references) or validating inputs and locale tags. The runtime
/// carries it as [`Error::Format`], with the same message.
///
/// ```
/// use prompty::{Error, FormatError};
/// let err = prompty::load("no/such/file.prompty").unwrap_err();
/// assert!(matches!(err, Error::Format(FormatError::FileNotFound { .. })));
/// assert_eq!(err.to_string(), "no/such/file.prompty: file not found");
/// ```
pub use prompty_core::Error as FormatError;

fn closest_ids(closest: &[String]) -> String {
    match closest {
        [] => " (none is close to it)".to_owned(),
        ids => format!(" (closest: {})", ids.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", ")),
    }
}

/// Everything that can go wrong while loading, validating, rendering, parsing or running a prompt.
///
/// Every variant says what was wrong and where; none of them carries a secret value (an API key read
/// from the environment is never part of a message, nor of its `Debug` form).
///
/// ```
/// use prompty::{Error, FormatError};
/// let err = prompty::load_str("---\nname: [broken\n---\nHi", ".", "chat.prompty").map_err(Error::from).unwrap_err();
/// assert!(matches!(err, Error::Format(FormatError::Frontmatter { .. })));
/// assert!(err.to_string().starts_with("chat.prompty:"));
///
/// let err = Error::Tool { name: "weather".into(), message: "timed out".into() };
/// assert_eq!(err.to_string(), "Tool 'weather' failed: timed out");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The prompt's file or its inputs do not fit the format: a file not found or unreadable, bad
    /// frontmatter, a field of the wrong shape, a reference that cannot be resolved, a missing or
    /// malformed input, a malformed locale tag. The message is the format error's own.
    #[error(transparent)]
    Format(#[from] FormatError),

    /// An input marked strict carries a role marker that would forge a message boundary.
    #[error("input '{input}' is marked strict but its value contains the role marker '{marker}': a value may not start a new message")]
    StrictViolation {
        /// The strict input.
        input: String,
        /// The offending line, shortened.
        marker: String,
    },

    /// No prompt is registered under an id (`PromptRegistry`).
    #[error("no prompt is registered under the id `{id}`{}", closest_ids(closest))]
    UnknownPrompt {
        /// The id asked for.
        id: String,
        /// The registered ids closest to it, closest first (at most three).
        closest: Vec<String>,
    },

    /// A prompt registry refused a change, or a folder of prompts could not be loaded into one
    /// (then every problem, one per line, each naming its file).
    #[error("prompt registry: {message}")]
    PromptRegistry {
        /// What was wrong.
        message: String,
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

    /// The model called a registered tool that the prompt does not declare and the call was not
    /// handed: registration alone never offers a tool to a model.
    #[error(
        "Tool '{name}' is not available to this prompt: it is registered, but a model may call only the tools the \
         prompt declares (`tools:`) and those handed to the call"
    )]
    ToolNotDeclared {
        /// The name the model used.
        name: String,
    },

    /// A tool ran and failed.
    #[error("Tool '{name}' failed: {message}")]
    Tool {
        /// The tool's name.
        name: String,
        /// What went wrong.
        message: String,
    },

    /// The tool catalog refused an operation: a duplicate tool, a loader that failed, a call that
    /// names no tool of the catalog, an enrichment cycle.
    #[error("tool catalog: {message}")]
    Catalog {
        /// What went wrong, naming the tools and sources involved.
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

    /// A setting is unusable as given, found before any request is sent: a request URL that
    /// cannot be built from the connection's endpoint (`relative URL without a base`), a
    /// `model.apiType` the provider does not serve, a `model.options.toolChoice` naming a tool the
    /// prompt does not declare, a connection that cannot be resolved, no `model` or
    /// `model.provider`. Nothing was sent; never retried (the `prompty` command exits 3, a prompt
    /// error).
    ///
    /// ```
    /// let e = prompty::Error::Config { setting: "model.connection.endpoint".into(), message: "not absolute".into() };
    /// assert_eq!(e.to_string(), "configuration error (model.connection.endpoint): not absolute");
    /// ```
    #[error("configuration error ({setting}): {message}")]
    Config {
        /// The setting to fix, such as `model.connection.endpoint`.
        setting: String,
        /// What is wrong and what to do.
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

    /// The model answered with tool calls where a final answer was expected: `invoke` does not
    /// run tools (`turn` does).
    #[error(
        "the model asked to call tools ({}) instead of answering: `invoke` does not run tools; call \
         `prompty::turn` (or the typed prompt's `turn`), which runs them and returns the model's final answer",
        names.join(", ")
    )]
    UnexpectedToolCalls {
        /// The names of the tools the model asked for, in call order.
        names: Vec<String>,
    },

    /// The agent loop (`turn`) stopped without a final answer: cancelled, denied by a guardrail,
    /// out of iterations, a tool nobody declared, or a model call that kept failing. It carries the
    /// conversation so far.
    #[error("{0}")]
    Turn(Box<TurnFailure>),

    /// A turn's checkpoint store or event journal failed, or refused a write: the store could not
    /// be opened or written, a record in it is unreadable, another worker holds the session's
    /// lease, or the session's journal moved on under this worker. `store` names the store
    /// (`sqlite:/path/turns.db`, `postgres://host/db` without credentials, `memory`).
    #[error("the turn store {store} failed: {message}")]
    Durability {
        /// The store (its location, never its credentials).
        store: String,
        /// What failed, and what to do.
        message: String,
    },
}

impl Error {
    /// The same error with every remembered secret value (see [`crate::Secret::scrub`]: the
    /// credentials of loaded prompts, the values of `${env:}` references to variables named as
    /// secrets) replaced by `[REDACTED]` in its text, so that neither `Display` nor `Debug` shows a
    /// secret that landed in a field no one expected (`template.format: ${env:MY_API_KEY}`).
    /// Every error leaving a stage of the pipeline (`prepare`, `execute`, `turn`, a tool call,
    /// ...) has been through it. The conversation a [`TurnFailure`] carries is left as it is.
    ///
    /// ```
    /// prompty::Secret::remember("sk-landed-0123456789");
    /// let e = prompty::Error::Execution { message: "model.apiType 'sk-landed-0123456789' is unknown".into() };
    /// assert_eq!(e.redacted().to_string(), "model.apiType '[REDACTED]' is unknown");
    /// ```
    pub fn redacted(self) -> Error {
        let remembered = prompty_core::Secret::remembered();
        if remembered.is_empty() {
            return self;
        }
        let mut e = self;
        e.scrub(&remembered);
        e
    }

    fn scrub(&mut self, remembered: &prompty_core::Remembered) {
        let r = |s: &mut String| remembered.scrub_in_place(s);
        match self {
            Error::Format(format) => {
                *format = std::mem::replace(format, FormatError::InvalidInputs { message: String::new() }).redacted();
            }
            Error::StrictViolation { input, marker } => {
                r(input);
                r(marker);
            }
            Error::UnknownPrompt { id, closest } => {
                r(id);
                closest.iter_mut().for_each(r);
            }
            Error::PromptRegistry { message }
            | Error::Template { message, .. }
            | Error::Parse { message, .. }
            | Error::Catalog { message }
            | Error::ToolBinding { message }
            | Error::Execution { message }
            | Error::Cast { message, .. }
            | Error::Task(message) => r(message),
            Error::Durability { store, message } => {
                r(store);
                r(message);
            }
            Error::UnknownComponent { key, known, hint, .. } => {
                r(key);
                r(known);
                r(hint);
            }
            Error::NoToolHandler { name, kind, hint } => {
                r(name);
                r(kind);
                r(hint);
            }
            Error::ToolNotDeclared { name } => r(name),
            Error::Tool { name, message } | Error::Config { setting: name, message } => {
                r(name);
                r(message);
            }
            Error::Http(failure) => {
                let HttpFailure { provider, reason, message, request_id, body, .. } = &mut **failure;
                r(provider);
                r(message);
                reason.iter_mut().chain(request_id.iter_mut()).chain(body.iter_mut()).for_each(r);
            }
            Error::UnexpectedToolCalls { names } => names.iter_mut().for_each(r),
            Error::Turn(failure) => match &mut failure.stop {
                TurnStop::Cancelled { reason }
                | TurnStop::Guardrail { reason, .. }
                | TurnStop::OutputRejected { reason } => r(reason),
                TurnStop::ReconciliationRequired { request_id, name } => {
                    r(request_id);
                    r(name);
                }
                TurnStop::MaxIterations { .. } => {}
                TurnStop::UnknownTool { name } => r(name),
                TurnStop::NoHandler(e) | TurnStop::Failed(e) | TurnStop::Model { source: e, .. } => e.scrub(remembered),
            },
        }
    }
}

/// Why the agent loop stopped without a final answer ([`Error::Turn`]), how far it got, and the
/// conversation up to that point (the messages that would have been sent next).
///
/// ```
/// use prompty::{TurnFailure, TurnStop};
/// let f = TurnFailure { stop: TurnStop::MaxIterations { max: 10 }, iterations: 11, messages: Vec::new() };
/// assert_eq!(f.to_string(), "Agent loop exceeded 10 iterations");
/// ```
#[derive(Debug)]
pub struct TurnFailure {
    /// Why the loop stopped.
    pub stop: TurnStop,
    /// How many times the loop reached its model call: the model calls made (one cancelled while
    /// in flight included), plus one when the iteration limit refused the next call (so
    /// `max + 1` for [`TurnStop::MaxIterations`], as the conformance vectors count). A turn stopped
    /// by the input guardrail or a cancellation before its first call has 0.
    pub iterations: usize,
    /// The conversation so far.
    pub messages: Vec<prompty_core::Message>,
}

/// Why the agent loop stopped ([`TurnFailure::stop`]).
///
/// ```
/// let stop = prompty::TurnStop::UnknownTool { name: "rm_rf".into() };
/// assert!(stop.to_string().starts_with("Tool not registered: rm_rf"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TurnStop {
    /// The cancellation token was cancelled.
    Cancelled {
        /// Where the loop noticed it (`Cancellation requested before iteration 2`, ...).
        reason: String,
    },
    /// A guardrail denied the input, the model's output (a denied tool call is not an error).
    Guardrail {
        /// `input` or `output`.
        stage: &'static str,
        /// The guardrail's reason.
        reason: String,
    },
    /// The model still asked for tools after `max_iterations` rounds.
    MaxIterations {
        /// The limit.
        max: usize,
    },
    /// The model called a tool that the prompt does not declare and the call was not handed.
    UnknownTool {
        /// The name the model used.
        name: String,
    },
    /// A declared tool has no handler to run it.
    NoHandler(Box<Error>),
    /// Another step of the loop failed (the provider could not format a tool round's messages).
    Failed(Box<Error>),
    /// A tool began to run and the turn was interrupted before its result was committed: whether
    /// its effect happened is unknown, so the turn was not continued (the tool is not declared
    /// idempotent). Resolve it with [`crate::engine::TurnEngine::resolve_tool`].
    ReconciliationRequired {
        /// The tool request's id (its effect's stable identity).
        request_id: String,
        /// The tool.
        name: String,
    },
    /// The final-output policy rejected the answer.
    OutputRejected {
        /// The policy's reason.
        reason: String,
    },
    /// The model call failed, after the retries the loop allows.
    Model {
        /// What the last attempt failed with.
        source: Box<Error>,
        /// How many attempts were made.
        attempts: u32,
    },
}

impl fmt::Display for TurnStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnStop::Cancelled { reason } => write!(f, "the turn was cancelled: {reason}"),
            TurnStop::Guardrail { stage, reason } => write!(f, "the {stage} guardrail denied the turn: {reason}"),
            TurnStop::MaxIterations { max } => write!(f, "Agent loop exceeded {max} iterations"),
            TurnStop::UnknownTool { name } => write!(
                f,
                "Tool not registered: {name} (the model called a tool the prompt does not declare and the call was \
                 not given: declare it under `tools:` or pass it in `TurnOptions::tools`)"
            ),
            TurnStop::NoHandler(e) | TurnStop::Failed(e) => e.fmt(f),
            TurnStop::ReconciliationRequired { request_id, name } => write!(
                f,
                "the tool call {request_id} ({name}) began and its result was never committed: whether it took \
                 effect is unknown, so the turn needs reconciliation (check the tool's side effect, then resolve \
                 the call with TurnEngine::resolve_tool, or declare the tool idempotent to run it again)"
            ),
            TurnStop::OutputRejected { reason } => write!(f, "the final-output policy rejected the answer: {reason}"),
            TurnStop::Model { source, attempts } if *attempts > 1 => {
                write!(f, "the model call failed after {attempts} attempts: {source}")
            }
            TurnStop::Model { source, .. } => write!(f, "the model call failed: {source}"),
        }
    }
}

impl fmt::Display for TurnFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.stop.fmt(f)
    }
}

/// What an HTTP request to a provider failed with ([`Error::Http`]). It never holds a credential.
///
/// ```
/// let f = prompty::HttpFailure {
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

/// `Result` with the runtime's [`Error`].
///
/// ```
/// fn agent_name(text: &str) -> prompty::Result<String> {
///     Ok(prompty::load_str(text, ".", "x.prompty")?.name)
/// }
/// assert_eq!(agent_name("---\nname: greet\n---\nHi")?, "greet");
/// assert!(agent_name("---\nname: [unclosed\n---\nHi").is_err());
/// # Ok::<(), prompty::Error>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
