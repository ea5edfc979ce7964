//! [`TurnOptions`], the builder of everything a turn can be given, and the parts it takes:
//! [`Guardrails`], [`Steering`], [`ContextBudget`].

use super::events::{AgentEvent, EventLog, EventSink, SinkResult};
use crate::engine::Durability;
use crate::{Error, Message, Result, ToolCall, ToolFunction, Tools};
use serde_json::Value;
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use tokio_util::sync::CancellationToken;

/// The iterations a turn allows by default (spec §9.1).
///
/// ```
/// assert_eq!(prompty::DEFAULT_MAX_ITERATIONS, 10);
/// ```
pub const DEFAULT_MAX_ITERATIONS: usize = 10;

/// The retries of a failed model call a turn allows by default (spec §9.1).
///
/// ```
/// assert_eq!(prompty::DEFAULT_LLM_RETRIES, 3);
/// ```
pub const DEFAULT_LLM_RETRIES: u32 = 3;

pub use crate::tools::scope::MAX_AGENT_DEPTH;

/// The tool calls one model response may ask for by default; more end the turn
/// ([`crate::TurnStop::Failed`]) before any of them runs.
///
/// ```
/// assert_eq!(prompty::DEFAULT_MAX_TOOL_CALLS, 128);
/// ```
pub const DEFAULT_MAX_TOOL_CALLS: usize = 128;

/// The longest tool result (bytes of text) sent back to the model by default; a longer one is cut
/// at a character boundary and says so.
///
/// ```
/// assert_eq!(prompty::DEFAULT_MAX_TOOL_RESULT_BYTES, 1 << 20);
/// ```
pub const DEFAULT_MAX_TOOL_RESULT_BYTES: usize = 1 << 20;

/// The steering messages a [`Steering`] handle holds before the loop drains them.
///
/// ```
/// assert_eq!(prompty::STEERING_CAPACITY, 256);
/// ```
pub const STEERING_CAPACITY: usize = 256;

/// Everything a turn can be given besides the prompt and its inputs. Build it by chaining; every
/// option has a default.
///
/// ```
/// use prompty::{CancellationToken, Guardrails, Steering, TurnOptions, Verdict};
/// let cancel = CancellationToken::new();
/// let options = TurnOptions::new()
///     .max_iterations(5)
///     .parallel_tool_calls(true)
///     .tool("now", prompty::tool_fn_sync(|_| Ok(serde_json::json!("12:00"))))
///     .on_event(|event: &prompty::AgentEvent| println!("{}", event.kind()))
///     .cancel(cancel.clone())
///     .guardrails(Guardrails::new().input(|_messages| Verdict::Allow))
///     .steering(Steering::new())
///     .context_budget(20_000)
///     .llm_retries(2);
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct TurnOptions {
    pub(crate) max_iterations: usize,
    pub(crate) parallel_tool_calls: bool,
    pub(crate) tools: Tools,
    pub(crate) on_event: Option<EventSink>,
    pub(crate) events: Option<EventLog>,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) guardrails: Guardrails,
    pub(crate) steering: Option<Steering>,
    pub(crate) context_budget: Option<ContextBudget>,
    pub(crate) llm_retries: u32,
    pub(crate) retry_backoff: Duration,
    pub(crate) max_tool_calls: usize,
    pub(crate) max_tool_result_bytes: usize,
    pub(crate) after_forced_tool: crate::ToolChoice,
    /// How many agentic tool turns this turn runs inside (0 for a turn the program started).
    pub(crate) depth: usize,
    /// Where the turn's events and checkpoints go, and under which session.
    pub(crate) durable: Option<Durable>,
    /// The turn's id (generated when `None`).
    pub(crate) turn_id: Option<String>,
    /// Tools whose interrupted calls may run again on resume.
    pub(crate) idempotent: BTreeSet<String>,
    /// The host's data kept with a durable turn.
    pub(crate) metadata: serde_json::Map<String, serde_json::Value>,
    /// Effects run once the turn is committed.
    pub(crate) post_commit: Vec<Arc<dyn crate::engine::PostCommitEffect>>,
    /// The worker name and lease time of a durable turn.
    pub(crate) worker: Option<(String, Duration)>,
}

/// The store and session of a durable turn ([`TurnOptions::durable`]).
#[derive(Clone)]
pub(crate) struct Durable {
    pub(crate) store: Arc<dyn Durability>,
    pub(crate) session_id: String,
}

impl Default for TurnOptions {
    fn default() -> Self {
        TurnOptions {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            parallel_tool_calls: false,
            tools: Tools::new(),
            on_event: None,
            events: None,
            cancel: None,
            guardrails: Guardrails::default(),
            steering: None,
            context_budget: None,
            llm_retries: DEFAULT_LLM_RETRIES,
            retry_backoff: Duration::from_secs(1),
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_tool_result_bytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
            after_forced_tool: crate::ToolChoice::Auto,
            depth: 0,
            durable: None,
            turn_id: None,
            idempotent: BTreeSet::new(),
            metadata: serde_json::Map::new(),
            post_commit: Vec::new(),
            worker: None,
        }
    }
}

impl std::fmt::Debug for TurnOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnOptions")
            .field("max_iterations", &self.max_iterations)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .field("tools", &self.tools)
            .field("on_event", &self.on_event.is_some())
            .field("record_events", &self.events.is_some())
            .field("cancel", &self.cancel.as_ref().map(CancellationToken::is_cancelled))
            .field("guardrails", &self.guardrails)
            .field("steering", &self.steering.as_ref().map(Steering::pending))
            .field("context_budget", &self.context_budget.as_ref().map(|b| b.chars))
            .field("llm_retries", &self.llm_retries)
            .field("retry_backoff", &self.retry_backoff)
            .field("max_tool_calls", &self.max_tool_calls)
            .field("max_tool_result_bytes", &self.max_tool_result_bytes)
            .field("after_forced_tool", &self.after_forced_tool)
            .field("durable", &self.durable.as_ref().map(|d| (d.store.describe(), &d.session_id)))
            .field("turn_id", &self.turn_id)
            .field("idempotent", &self.idempotent)
            .field("metadata", &self.metadata.keys().collect::<Vec<_>>())
            .field("post_commit", &self.post_commit.iter().map(|e| e.name()).collect::<Vec<_>>())
            .field("worker", &self.worker)
            .finish()
    }
}

impl TurnOptions {
    /// The defaults: 10 iterations, tools one at a time, no per-call tools, no events, no
    /// cancellation, no guardrails, no steering, no context budget, 3 retries of a failed model
    /// call (backoff from 1 s, capped at 60 s), at most 128 tool calls per model response, tool
    /// results cut at 1 MiB.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new();
    /// assert!(format!("{options:?}").contains("max_iterations: 10"));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// How many model calls the loop may make (default 10). The model asking for tools once more
    /// after that is the error `Agent loop exceeded N iterations` ([`crate::TurnStop::MaxIterations`]).
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().max_iterations(3);
    /// # let _ = options;
    /// ```
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = n;
        self
    }

    /// Runs the tool calls of one model response concurrently (default: one after the other).
    /// Results are still appended to the conversation in call order; each call has its own events
    /// and guardrail check, and a failing call does not stop its siblings. The `tool_result`
    /// events come as the calls finish, in completion order (match them to calls by `id`).
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().parallel_tool_calls(true);
    /// # let _ = options;
    /// ```
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = parallel;
        self
    }

    /// Tool functions for this turn: they win over the name registry. A function that knows its
    /// declaration (a `#[prompty::tool]` fn) and that the prompt does not declare is offered to
    /// the model as well.
    ///
    /// ```
    /// let tools = prompty::Tools::new().with("now", prompty::tool_fn_sync(|_| Ok(serde_json::json!("12:00"))));
    /// let options = prompty::TurnOptions::new().tools(tools);
    /// # let _ = options;
    /// ```
    pub fn tools(mut self, tools: Tools) -> Self {
        for name in tools.names().map(str::to_owned).collect::<Vec<_>>() {
            if let Some(f) = tools.get(&name) {
                self.tools.insert_shared(name, Arc::clone(f));
            }
        }
        self
    }

    /// One tool function for this turn (see [`TurnOptions::tools`]).
    ///
    /// ```
    /// let options = prompty::TurnOptions::new()
    ///     .tool("add", prompty::tool_fn_sync(|a| Ok(serde_json::json!(a["a"].as_i64().unwrap_or(0) + 1))));
    /// # let _ = options;
    /// ```
    pub fn tool(mut self, name: impl Into<String>, function: impl ToolFunction) -> Self {
        self.tools.insert(name, function);
        self
    }

    /// Calls `sink` with every [`AgentEvent`] of the turn, in order, on the task running the
    /// turn: keep it quick (forward into a channel for slow work). A sink that panics, or
    /// returns an `Err`, is logged (`tracing`, target `prompty::turn`) and never stops the loop.
    /// It replaces a sink set before; [`TurnOptions::record_events`] records besides it. To
    /// collect the events rather than act on each, use [`TurnOptions::record_events`].
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().on_event(|e: &prompty::AgentEvent| {
    ///     if let prompty::AgentEvent::ToolCallStart { name, .. } = e {
    ///         eprintln!("calling {name}");
    ///     }
    /// });
    /// // A sink may also fail: the error is logged, the turn goes on.
    /// let options = options.on_event(|_e: &prompty::AgentEvent| -> Result<(), String> { Err("full".into()) });
    /// # let _ = options;
    /// ```
    pub fn on_event<F, R>(mut self, sink: F) -> Self
    where
        F: Fn(&AgentEvent) -> R + Send + Sync + 'static,
        R: SinkResult,
    {
        self.on_event = Some(Arc::new(move |e: &AgentEvent| sink(e).into_sink_result()));
        self
    }

    /// Records every [`AgentEvent`] of the turn, in order, into an [`EventLog`]: returns the
    /// options and the log, to read during or after the turn (`events()`, `take()`, `kinds()`).
    /// Works with every turn that takes options: [`crate::run_turn`], [`crate::turn`], the streamed
    /// turns, and a typed prompt's `turn`. Independent of [`TurnOptions::on_event`]: set both and
    /// each event goes to both.
    ///
    /// The options' clones record into the same log, so a second turn with them adds to it
    /// (`take()` between turns). With [`TurnOptions::parallel_tool_calls`], `tool_result` events
    /// are recorded as the calls finish (completion order), while the conversation keeps call order.
    ///
    /// ```
    /// use prompty::{Agent, BoxFuture, Executor, Message, Role, TurnOptions};
    /// use serde_json::{json, Value};
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// // A model in OpenAI's format: first a tool call, then an answer.
    /// #[derive(Default)]
    /// struct Scripted(AtomicBool);
    /// impl Executor for Scripted {
    ///     fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
    ///         let called = self.0.swap(true, Ordering::SeqCst);
    ///         Box::pin(async move { Ok(if called {
    ///             json!({"choices": [{"message": {"content": "It is noon."}}]})
    ///         } else {
    ///             json!({"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function",
    ///                 "function": {"name": "now", "arguments": "{}"}}]}}]})
    ///         }) })
    ///     }
    /// }
    /// prompty::register_executor("record-doc", Scripted::default());
    /// prompty::register_processor("record-doc", prompty::providers::openai::OpenAiProcessor);
    /// let agent = Agent::from_value(json!({"model": {"id": "m", "provider": "record-doc"},
    ///     "tools": [{"name": "now", "kind": "function"}]}))?;
    ///
    /// let (options, events) = TurnOptions::new()
    ///     .tool("now", prompty::tool_fn_sync(|_| Ok(json!("12:00"))))
    ///     .record_events();
    /// prompty::run_turn(&agent, vec![Message::new(Role::User, "Time?")], &json!({}), options)?;
    /// assert_eq!(events.kinds(), ["status", "tool_call_start", "tool_result", "messages_updated", "done"]);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn record_events(mut self) -> (Self, EventLog) {
        let log = EventLog::new();
        self.events = Some(log.clone());
        (self, log)
    }

    /// A cancellation token: once cancelled, the turn makes no further model or tool call. It is
    /// checked at the top of each iteration, before each model call and before each tool call; a
    /// model call or retry wait in progress is abandoned at once (a tool call in progress runs to
    /// its end). The turn then fails with [`crate::TurnStop::Cancelled`] after a `cancelled` event.
    ///
    /// ```
    /// let cancel = prompty::CancellationToken::new();
    /// let options = prompty::TurnOptions::new().cancel(cancel.clone());
    /// cancel.cancel(); // from any thread or task
    /// # let _ = options;
    /// ```
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Guardrails checking the input before each model call, each model response, and each tool
    /// call.
    ///
    /// ```
    /// use prompty::{Guardrails, Verdict};
    /// let options = prompty::TurnOptions::new().guardrails(
    ///     Guardrails::new().tool(|call, _args| if call.name == "rm" { Verdict::deny("no deleting") } else { Verdict::Allow }));
    /// # let _ = options;
    /// ```
    pub fn guardrails(mut self, guardrails: Guardrails) -> Self {
        self.guardrails = guardrails;
        self
    }

    /// A steering handle: messages sent through it while the turn runs are appended as `user`
    /// messages at the top of the next iteration (never into a child prompt's turn).
    ///
    /// ```
    /// let steering = prompty::Steering::new();
    /// let options = prompty::TurnOptions::new().steering(steering.clone());
    /// steering.send("Answer in French.")?;
    /// # let _ = options;
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn steering(mut self, steering: Steering) -> Self {
        self.steering = Some(steering);
        self
    }

    /// Keeps what is sent to the model under a size, in characters (see [`ContextBudget`]).
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().context_budget(50_000);
    /// let options = options.context_budget(
    ///     prompty::ContextBudget::chars(50_000).summarizer(|dropped| format!("{} messages dropped", dropped.len())));
    /// # let _ = options;
    /// ```
    pub fn context_budget(mut self, budget: impl Into<ContextBudget>) -> Self {
        self.context_budget = Some(budget.into());
        self
    }

    /// How many times a failed model call is retried (default 3): connection failures and
    /// timeouts (no response), HTTP 429 and 5xx, and executor errors; never another 4xx, never a
    /// response that arrived with a success status and then failed (a body cut short: the model
    /// may have generated already), never a processing error, never a stream that failed after it
    /// started, never a configuration error (a URL that cannot be built). A `status` event
    /// precedes each retry.
    ///
    /// **At most `1 + retries` requests per model call** (default 4), whatever the HTTP client's
    /// [`RetryPolicy`](crate::http::RetryPolicy): the loop and the HTTP layer's retries of 429, 5xx
    /// and connection failures share that one budget. One persistent 429 costs 4 requests by
    /// default, not the 12 (3 HTTP attempts × 4 model calls) it cost before the budget was shared;
    /// with `llm_retries(0)`, one request and no retry at all.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().llm_retries(0); // fail at the first error
    /// # let _ = options;
    /// ```
    pub fn llm_retries(mut self, retries: u32) -> Self {
        self.llm_retries = retries;
        self
    }

    /// The first wait before a retry (default 1 s): retry `n` waits `min(base · 2ⁿ⁻¹ + jitter,
    /// 60 s)`, the jitter being up to one `base`.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().retry_backoff(std::time::Duration::from_millis(200));
    /// # let _ = options;
    /// ```
    pub fn retry_backoff(mut self, base: Duration) -> Self {
        self.retry_backoff = base;
        self
    }
}

impl TurnOptions {
    /// How many tool calls one model response may ask for (default [`DEFAULT_MAX_TOOL_CALLS`]).
    /// A response asking for more ends the turn before any of its calls runs.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().max_tool_calls(16);
    /// # let _ = options;
    /// ```
    pub fn max_tool_calls(mut self, n: usize) -> Self {
        self.max_tool_calls = n;
        self
    }

    /// The longest tool result sent back to the model, in bytes (default
    /// [`DEFAULT_MAX_TOOL_RESULT_BYTES`]). A longer result is cut at a character boundary and
    /// ends with `… [cut: N bytes, limit M]`, so the model knows it is partial.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().max_tool_result_bytes(64 * 1024);
    /// # let _ = options;
    /// ```
    pub fn max_tool_result_bytes(mut self, n: usize) -> Self {
        self.max_tool_result_bytes = n;
        self
    }

    /// The tool choice of the model calls after the first tool round when the prompt forces a
    /// tool call (`model.options.toolChoice` `required` or a tool's name): the forced call has
    /// happened, so the loop stops forcing (default [`crate::ToolChoice::Auto`], as OpenAI
    /// advises; without this the model would be made to call tools until the iteration limit).
    /// [`crate::ToolChoice::None`] makes the model answer right after the forced call, which
    /// small models that call tools again and again need.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().after_forced_tool(prompty::ToolChoice::None);
    /// assert!(format!("{options:?}").contains("after_forced_tool: None"));
    /// ```
    pub fn after_forced_tool(mut self, choice: crate::ToolChoice) -> Self {
        self.after_forced_tool = choice;
        self
    }
}

impl TurnOptions {
    /// Makes the turn durable: its events and checkpoints are committed to `store` under the
    /// session `session_id` as it runs (the turn engine's journal, [`crate::engine`]), so that
    /// [`crate::resume_turn`] can continue it in this or another process after an interruption,
    /// without calling the model again for a response already committed and without running a
    /// committed tool again. A tool whose call began and whose result was never committed is not
    /// run again unless it is idempotent ([`TurnOptions::idempotent`], `#[prompty::tool(idempotent)]`):
    /// the resumed turn then fails with [`crate::TurnStop::ReconciliationRequired`] naming the call.
    ///
    /// A failure of the store ends the turn with [`crate::Error::Durability`]; what was committed
    /// before stays resumable. Without this option a turn keeps its journal in memory, for its
    /// own length only. Agentic child turns (`kind: prompty` tools) are never durable themselves.
    ///
    /// ```
    /// let store = std::sync::Arc::new(prompty::engine::MemoryStore::new());
    /// let options = prompty::TurnOptions::new().durable(store, "session-42");
    /// assert!(format!("{options:?}").contains("session-42"));
    /// ```
    pub fn durable(mut self, store: Arc<dyn Durability>, session_id: impl Into<String>) -> Self {
        self.durable = Some(Durable { store, session_id: session_id.into() });
        self
    }

    /// The turn's id in its session's journal (default: a random `turn-<32 hex digits>`).
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().turn_id("turn-1");
    /// assert!(format!("{options:?}").contains("turn-1"));
    /// ```
    pub fn turn_id(mut self, id: impl Into<String>) -> Self {
        self.turn_id = Some(id.into());
        self
    }

    /// Declares the tool `name` idempotent: running it twice has the effect of running it once,
    /// so when a durable turn is resumed after an interruption during a call of it, the call runs
    /// again instead of requiring reconciliation. For a tool handed to the turn or declared in the
    /// prompt (an MCP or OpenAPI tool, a `kind: prompty` tool); a `#[prompty::tool(idempotent)]`
    /// fn says so itself.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().idempotent("get_weather");
    /// assert!(format!("{options:?}").contains("get_weather"));
    /// ```
    pub fn idempotent(mut self, name: impl Into<String>) -> Self {
        self.idempotent.insert(name.into());
        self
    }

    /// Keeps `value` under `key` with a durable turn: in its start event and every checkpoint,
    /// where [`crate::engine::Checkpoint::metadata`] gives it back (the command line keeps the
    /// prompt's path and inputs there, for `prompty resume`). Values are not secrets: they are
    /// stored as they are.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().metadata("prompt", serde_json::json!("prompts/agent.prompty"));
    /// assert!(format!("{options:?}").contains("prompt"));
    /// ```
    pub fn metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Runs `effect` after the turn is committed (the engine's post-commit effects: it gets an
    /// identity derived from the session and turn and must be idempotent — a durable turn resumed
    /// after a crash during the effects runs them again). A failing effect never fails the turn.
    ///
    /// ```
    /// struct Notify;
    /// impl prompty::engine::PostCommitEffect for Notify {
    ///     fn name(&self) -> &str { "notify" }
    ///     fn run<'a>(&'a self, _: &'a prompty::engine::TurnCommit, _: &'a str) -> prompty::BoxFuture<'a, prompty::Result<()>> {
    ///         Box::pin(async { Ok(()) })
    ///     }
    /// }
    /// let options = prompty::TurnOptions::new().post_commit(Notify);
    /// assert!(format!("{options:?}").contains("notify"));
    /// ```
    pub fn post_commit(mut self, effect: impl crate::engine::PostCommitEffect + 'static) -> Self {
        self.post_commit.push(Arc::new(effect));
        self
    }

    /// Runs a durable turn as the worker `name` ([`crate::engine::TurnEngine::worker`]): the
    /// session's lease is taken before the turn runs or resumes (refused with
    /// [`crate::Error::Durability`] while another live worker holds it), renewed by every commit
    /// for `ttl`, and given back at the end. For many processes sharing one store (PostgreSQL):
    /// a dead worker's session can be resumed by another once `ttl` has passed.
    ///
    /// ```
    /// let options = prompty::TurnOptions::new().worker("worker-7", std::time::Duration::from_secs(60));
    /// assert!(format!("{options:?}").contains("worker-7"));
    /// ```
    pub fn worker(mut self, name: impl Into<String>, ttl: Duration) -> Self {
        self.worker = Some((name.into(), ttl));
        self
    }
}

/// What a guardrail decides.
///
/// ```
/// let v = prompty::Verdict::deny("contains a card number");
/// assert_eq!(v, prompty::Verdict::Deny("contains a card number".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go on.
    Allow,
    /// Stop, for this reason.
    Deny(String),
}

impl Verdict {
    /// A denial.
    pub fn deny(reason: impl Into<String>) -> Self {
        Verdict::Deny(reason.into())
    }
}

type InputGuard = dyn Fn(&[Message]) -> Verdict + Send + Sync;
type OutputGuard = dyn Fn(&Value) -> Verdict + Send + Sync;
type ToolGuard = dyn Fn(&ToolCall, &Value) -> Verdict + Send + Sync;

/// Checks a turn makes (spec §13.4). A guardrail that panics denies (fails closed).
///
/// - **input**: the messages about to be sent, before every model call. A denial ends the turn
///   with [`crate::TurnStop::Guardrail`] (stage `input`).
/// - **output**: every processed model response (the final answer, or the list of tool calls).
///   A denial ends the turn (stage `output`).
/// - **tool**: each tool call and its arguments (bindings injected), before it runs. A denial
///   does not end the turn: the model reads `Tool denied by guardrail: <reason>` as the result.
///
/// ```
/// use prompty::{Guardrails, Verdict};
/// let g = Guardrails::new()
///     .input(|messages| if messages.iter().any(|m| m.text().contains("password")) {
///         Verdict::deny("no passwords") } else { Verdict::Allow })
///     .output(|result| if result.as_str().is_some_and(|t| t.contains("http://")) {
///         Verdict::deny("no plain links") } else { Verdict::Allow })
///     .tool(|call, args| if call.name == "transfer" && args["amount"].as_f64() > Some(100.0) {
///         Verdict::deny("over the limit") } else { Verdict::Allow });
/// # let _ = g;
/// ```
#[derive(Clone, Default)]
pub struct Guardrails {
    pub(crate) input: Option<Arc<InputGuard>>,
    pub(crate) output: Option<Arc<OutputGuard>>,
    pub(crate) tool: Option<Arc<ToolGuard>>,
}

impl std::fmt::Debug for Guardrails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guardrails")
            .field("input", &self.input.is_some())
            .field("output", &self.output.is_some())
            .field("tool", &self.tool.is_some())
            .finish()
    }
}

impl Guardrails {
    /// No guardrails.
    ///
    /// ```
    /// let g = prompty::Guardrails::new();
    /// assert!(format!("{g:?}").contains("input: false"));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The input guardrail.
    ///
    /// ```
    /// let g = prompty::Guardrails::new().input(|messages| {
    ///     if messages.len() > 100 { prompty::Verdict::deny("conversation too long") } else { prompty::Verdict::Allow }
    /// });
    /// # let _ = g;
    /// ```
    pub fn input(mut self, check: impl Fn(&[Message]) -> Verdict + Send + Sync + 'static) -> Self {
        self.input = Some(Arc::new(check));
        self
    }

    /// The output guardrail.
    ///
    /// ```
    /// let g = prompty::Guardrails::new().output(|result| {
    ///     if result.to_string().contains("secret") { prompty::Verdict::deny("leak") } else { prompty::Verdict::Allow }
    /// });
    /// # let _ = g;
    /// ```
    pub fn output(mut self, check: impl Fn(&Value) -> Verdict + Send + Sync + 'static) -> Self {
        self.output = Some(Arc::new(check));
        self
    }

    /// The tool guardrail.
    ///
    /// ```
    /// let g = prompty::Guardrails::new().tool(|call, _args| {
    ///     if call.name.starts_with("admin_") { prompty::Verdict::deny("admins only") } else { prompty::Verdict::Allow }
    /// });
    /// # let _ = g;
    /// ```
    pub fn tool(mut self, check: impl Fn(&ToolCall, &Value) -> Verdict + Send + Sync + 'static) -> Self {
        self.tool = Some(Arc::new(check));
        self
    }
}

/// A handle for steering a running turn (spec §13.5): clone it, give one clone to
/// [`TurnOptions::steering`], and [`Steering::send`] text from any thread or task. At the top of
/// each iteration the loop takes every pending message at once and appends them, in order, as
/// `user` messages. Nothing is sent to the model because of a steering message by itself.
///
/// ```
/// let steering = prompty::Steering::new();
/// steering.send("Use metric units.")?;
/// assert_eq!(steering.pending(), 1);
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Steering {
    queue: Arc<Mutex<VecDeque<String>>>,
}

impl std::fmt::Debug for Steering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steering").field("pending", &self.pending()).finish()
    }
}

impl Steering {
    /// An empty handle.
    ///
    /// ```
    /// assert_eq!(prompty::Steering::new().pending(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a message for the next iteration. At most [`STEERING_CAPACITY`] messages wait; a
    /// message beyond that is refused (an error), never dropped silently.
    ///
    /// ```
    /// let s = prompty::Steering::new();
    /// for i in 0..prompty::STEERING_CAPACITY { s.send(format!("note {i}"))?; }
    /// assert!(s.send("one too many").is_err());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn send(&self, text: impl Into<String>) -> Result<()> {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if queue.len() >= STEERING_CAPACITY {
            return Err(Error::Execution {
                message: format!(
                    "the steering queue is full ({STEERING_CAPACITY} messages wait for the next iteration)"
                ),
            });
        }
        queue.push_back(text.into());
        Ok(())
    }

    /// How many messages wait.
    ///
    /// ```
    /// assert_eq!(prompty::Steering::new().pending(), 0);
    /// ```
    pub fn pending(&self) -> usize {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Takes every waiting message, atomically.
    pub(crate) fn drain(&self) -> VecDeque<String> {
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

type Summarizer = dyn Fn(&[Message]) -> String + Send + Sync;

/// A budget for what is sent to the model, in characters (spec §13.3), checked before each model
/// call. The size of a message is the characters of its text parts plus those of its metadata as
/// JSON (tool calls, tool call ids); an image, file or audio part counts as its source's length.
///
/// When the conversation is over budget, whole exchanges (a `user` message and everything up to
/// the next one) are dropped, oldest first, until it fits, and one `system` message
/// `[Summary of earlier conversation] ...` takes their place, after the last system message.
/// Never dropped: system and developer messages, and the current exchange (the last `user`
/// message and what follows it, so tool calls stay with their results). A conversation whose
/// kept part alone is over budget is sent as it is.
///
/// The summary is the summarizer's text: by default `User asked: ` and the start of each dropped
/// user message (at most 200 characters each, 2,000 in all).
///
/// ```
/// let budget = prompty::ContextBudget::chars(8_000)
///     .summarizer(|dropped| format!("{} earlier messages", dropped.len()));
/// # let _ = budget;
/// let simple: prompty::ContextBudget = 8_000.into();
/// # let _ = simple;
/// ```
#[derive(Clone)]
pub struct ContextBudget {
    pub(crate) chars: usize,
    pub(crate) summarizer: Option<Arc<Summarizer>>,
}

impl ContextBudget {
    /// A budget of `chars` characters with the default summary.
    ///
    /// ```
    /// let b = prompty::ContextBudget::chars(4_000);
    /// # let _ = b;
    /// ```
    pub fn chars(chars: usize) -> Self {
        ContextBudget { chars, summarizer: None }
    }

    /// Writes the summary of the dropped messages (the text after `[Summary of earlier
    /// conversation] `). A summarizer that panics falls back to the default summary.
    ///
    /// ```
    /// let b = prompty::ContextBudget::chars(4_000).summarizer(|dropped| format!("{} messages", dropped.len()));
    /// # let _ = b;
    /// ```
    pub fn summarizer(mut self, summarize: impl Fn(&[Message]) -> String + Send + Sync + 'static) -> Self {
        self.summarizer = Some(Arc::new(summarize));
        self
    }
}

impl From<usize> for ContextBudget {
    fn from(chars: usize) -> Self {
        ContextBudget::chars(chars)
    }
}
