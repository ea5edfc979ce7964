//! The agent loop (spec §9, §13, §14): [`turn`] prepares a prompt, calls the model, runs the
//! tools it asks for, hands the results back, and repeats until the model answers.
//!
//! | function | starts from | gives |
//! |---|---|---|
//! | [`turn`], [`turn_async`] | a prompt (or its path) and inputs | the final answer, cast to `T` |
//! | [`run_turn`], [`run_turn_async`] | an agent and a conversation | [`TurnOutput`]: answer, conversation, iterations |
//! | [`turn_stream`], [`run_turn_stream`] | either | a [`TurnStream`] of the final answer's chunks |
//! | [`resume_turn`], [`resume_turn_async`] | an agent and a durable session | the [`TurnOutput`] of its last turn, continued |
//!
//! Every one of them runs on the turn engine ([`crate::engine::TurnEngine`]): this module is the
//! engine's adapter to a `.prompty` file, not a loop of its own. The prompt's machinery becomes the
//! engine's ports (`ports.rs`): its executor and processor the model port (whole or streamed calls,
//! remote tool lists, the forced tool choice relaxed after the first tool round, the output
//! guardrail, retries sharing the HTTP layer's request budget, the provider's formatting of each
//! tool round from the raw response kept in the checkpoint); its tools the tool port (unknown
//! tools, the per-response call limit, arguments, bindings, the tool kinds, bounded results,
//! attachments, idempotency); its refusals, approvals and tool guardrail the permission port;
//! steering, the context budget and the input guardrail a context transform. `run.rs` builds the
//! engine from them and reads its result; the [`AgentEvent`]s come from the engine's events and
//! from the ports. With [`TurnOptions::durable`] the engine commits the turn's events and
//! checkpoints to a store as it goes, and [`resume_turn`] continues it after an interruption.
//!
//! Where the spec's prose and its conformance vectors disagree, the loop follows the vectors:
//! - the iteration limit counts model calls: with `max_iterations(10)` the loop makes ten calls,
//!   and when the tenth still asks for tools, the eleventh iteration fails with `Agent loop
//!   exceeded 10 iterations` ([`crate::TurnFailure::iterations`] is then 11);
//! - events carry the vectors' payloads: `status` `Starting agent loop` when the model first asks
//!   for tools, `cancelled {reason}`, `done {response, messages}` (see [`AgentEvent`]);
//! - the summary that replaces trimmed messages is a `system` message `[Summary of earlier
//!   conversation] ...` and a trim keeps only the current exchange besides the instructions
//!   (see [`ContextBudget`]);
//! - a denied tool reads `Tool denied by guardrail: <reason>`.
//!
//! Parallel tool calls (spec §13.6, optional) are supported: [`TurnOptions::parallel_tool_calls`]
//! (the engine's `parallel_tools`: the calls are authorized in order, run concurrently, and their
//! results committed in call order).

mod context;
mod events;
mod options;
mod ports;
mod run;
mod stream;

pub use events::{AgentEvent, EventLog, SinkResult};
pub use options::{
    CancellationToken, ContextBudget, Guardrails, Steering, TurnOptions, Verdict, DEFAULT_LLM_RETRIES,
    DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_TOOL_CALLS, DEFAULT_MAX_TOOL_RESULT_BYTES, MAX_AGENT_DEPTH, STEERING_CAPACITY,
};
pub use stream::TurnStream;

use crate::tools::scope::{ChildRunner, ChildTurn};
use crate::{Agent, BoxFuture, Message, Result};
use run::PromptTurn;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// What a finished turn gives: the final answer, the whole conversation (the answer last), and
/// how many model calls it took.
///
/// ```
/// let out = prompty::TurnOutput { result: serde_json::json!("Hi"), messages: Vec::new(), iterations: 1 };
/// assert_eq!(out.result, "Hi");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutput {
    /// The final answer: text, or the parsed structured output.
    pub result: Value,
    /// The conversation: the prepared messages, every tool round, steering messages, the answer.
    pub messages: Vec<Message>,
    /// The model calls made.
    pub iterations: usize,
}

/// The prompt a turn runs: an [`Agent`] already loaded, or the path of a `.prompty` file, which is
/// loaded first: with the process's default options ([`crate::LoadOptions::process_default`]),
/// or with options of its own ([`PromptRef::path_with`]).
///
/// ```
/// let agent = prompty::Agent::default();
/// assert!(matches!(prompty::PromptRef::from(&agent), prompty::PromptRef::Agent(_)));
/// assert!(matches!(prompty::PromptRef::from("prompts/chat.prompty"), prompty::PromptRef::Path(_)));
/// let options = prompty::LoadOptions::new().allow_root("/srv/shared");
/// assert!(matches!(prompty::PromptRef::path_with("prompts/chat.prompty", &options), prompty::PromptRef::PathWith(..)));
/// ```
#[derive(Debug, Clone, Copy)]
pub enum PromptRef<'a> {
    /// A loaded prompt.
    Agent(&'a Agent),
    /// A `.prompty` file, loaded with the process's default options.
    Path(&'a Path),
    /// A `.prompty` file, loaded with these options.
    PathWith(&'a Path, &'a crate::LoadOptions),
}

impl<'a> From<&'a Agent> for PromptRef<'a> {
    fn from(agent: &'a Agent) -> Self {
        PromptRef::Agent(agent)
    }
}

impl<'a> From<&'a Path> for PromptRef<'a> {
    fn from(path: &'a Path) -> Self {
        PromptRef::Path(path)
    }
}

impl<'a> From<&'a PathBuf> for PromptRef<'a> {
    fn from(path: &'a PathBuf) -> Self {
        PromptRef::Path(path)
    }
}

impl<'a> From<&'a str> for PromptRef<'a> {
    fn from(path: &'a str) -> Self {
        PromptRef::Path(Path::new(path))
    }
}

impl<'a> From<&'a String> for PromptRef<'a> {
    fn from(path: &'a String) -> Self {
        PromptRef::Path(Path::new(path))
    }
}

impl<'a> PromptRef<'a> {
    /// A `.prompty` file loaded with `options` ([`crate::load_with_async`]): the allowed roots
    /// reach its `${file:}` references, and, since the agent remembers them, its OpenAPI
    /// documents and child prompts.
    ///
    /// ```no_run
    /// # async fn f() -> prompty::Result<()> {
    /// let options = prompty::LoadOptions::new().allow_root("/srv/specs");
    /// let answer: String = prompty::turn_async(prompty::PromptRef::path_with("prompts/pets.prompty", &options),
    ///     &serde_json::json!({}), prompty::TurnOptions::new()).await?;
    /// # Ok(()) }
    /// ```
    pub fn path_with(path: &'a (impl AsRef<Path> + ?Sized), options: &'a crate::LoadOptions) -> PromptRef<'a> {
        PromptRef::PathWith(path.as_ref(), options)
    }

    async fn load(self) -> Result<Cow<'a, Agent>> {
        match self {
            PromptRef::Agent(agent) => Ok(Cow::Borrowed(agent)),
            PromptRef::Path(path) => Ok(Cow::Owned(crate::load_async(path).await?)),
            PromptRef::PathWith(path, options) => Ok(Cow::Owned(crate::load_with_async(path, options).await?)),
        }
    }
}

/// Runs a child agent loop for a `kind: prompty` tool in `mode: agentic`: the runner the tool layer
/// gets in the scope of each call of a turn, and at link time for calls made outside one.
pub(crate) fn run_child_turn(agent: Agent, inputs: Value, child: ChildTurn) -> BoxFuture<'static, Result<Value>> {
    Box::pin(async move {
        let mut options = TurnOptions::new().tools(child.tools);
        options.depth = child.depth;
        if let Some(cancel) = child.cancel {
            options = options.cancel(cancel);
        }
        turn_async::<Value>(&agent, &inputs, options).await
    })
}

inventory::submit!(ChildRunner(run_child_turn));

/// The agent a turn offers the model: the prompt's tools, plus the per-call functions that know
/// their declaration and the prompt does not declare.
fn with_call_tools<'a>(agent: &'a Agent, options: &TurnOptions) -> Cow<'a, Agent> {
    let extra: Vec<crate::Tool> = options
        .tools
        .names()
        .filter(|name| crate::tools::catalog::dispatch::declared_tool(agent, name).is_none())
        .filter_map(|name| {
            let mut tool = options.tools.get(name)?.definition()?;
            tool.name = name.to_owned();
            Some(tool)
        })
        .collect();
    if extra.is_empty() {
        return Cow::Borrowed(agent);
    }
    let mut agent = agent.clone();
    agent.tools.get_or_insert_with(Vec::new).extend(extra);
    Cow::Owned(agent)
}

/// The inputs a turn binds tool parameters from, as a map.
fn input_map(inputs: &Value) -> Map<String, Value> {
    inputs.as_object().cloned().unwrap_or_default()
}

/// Runs the agent loop from a conversation already prepared: `messages` go to the model, the
/// tools it asks for run (bound parameters taken from `inputs`), and so on until it answers.
/// With no tools declared or passed, that is one model call.
///
/// A turn that stops without an answer fails with [`crate::Error::Turn`], which carries the
/// conversation so far. See [`TurnOptions`] for what a turn can be given.
///
/// ```
/// use prompty::{Agent, BoxFuture, Executor, Message, Role, TurnOptions};
/// use serde_json::{json, Value};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// // A scripted model in OpenAI's format: first a tool call, then an answer using its result.
/// #[derive(Default)]
/// struct Scripted(AtomicUsize);
/// impl Executor for Scripted {
///     fn execute_async<'a>(&'a self, _: &'a Agent, m: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
///         let first = self.0.fetch_add(1, Ordering::SeqCst) == 0;
///         let last = m.last().map(|m| m.text()).unwrap_or_default();
///         Box::pin(async move { Ok(if first {
///             json!({"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function",
///                 "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]}}]})
///         } else {
///             json!({"choices": [{"message": {"content": format!("The sum is {last}.")}}]})
///         }) })
///     }
/// }
/// prompty::register_executor("scripted-doc", Scripted::default());
/// prompty::register_processor("scripted-doc", prompty::providers::openai::OpenAiProcessor);
///
/// let agent = Agent::from_value(json!({"model": {"id": "m", "provider": "scripted-doc"},
///     "tools": [{"name": "add", "kind": "function", "parameters": {"a": {"kind": "integer"}, "b": {"kind": "integer"}}}]}))?;
/// let options = TurnOptions::new().tool("add", prompty::tool_fn_sync(|a| Ok(json!(a["a"].as_i64().unwrap_or(0) + a["b"].as_i64().unwrap_or(0)))));
/// let out = prompty::run_turn(&agent, vec![Message::new(Role::User, "2 + 3?")], &json!({}), options)?;
/// assert_eq!(out.result, "The sum is 5.");
/// assert_eq!(out.iterations, 2);
/// assert_eq!(out.messages.len(), 4); // user, assistant (tool call), tool, assistant
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn run_turn(agent: &Agent, messages: Vec<Message>, inputs: &Value, options: TurnOptions) -> Result<TurnOutput> {
    crate::blocking::block_on(run_turn_async(agent, messages, inputs, options))?
}

/// Async form of [`run_turn`]; gives the same results.
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// let agent = prompty::load_async("prompts/agent.prompty").await?;
/// let messages = prompty::prepare_async(&agent, &serde_json::json!({"question": "Weather in Oslo?"})).await?;
/// let out = prompty::run_turn_async(&agent, messages, &serde_json::json!({}), prompty::TurnOptions::new()).await?;
/// println!("{} (after {} model calls)", out.result, out.iterations);
/// # Ok(()) }
/// ```
pub async fn run_turn_async(
    agent: &Agent,
    messages: Vec<Message>,
    inputs: &Value,
    options: TurnOptions,
) -> Result<TurnOutput> {
    let count = messages.len();
    let recorded = |_: &mut crate::trace::Attributes| json!({"messages": count, "inputs": inputs});
    let stage = crate::trace::Stage::new("turn", "prompty.turn");
    crate::trace::in_span_async(stage, recorded, run_loop(agent, messages, inputs, options), turn_result).await
}

/// The agent loop, unrecorded (its callers record it as the `turn` span).
pub(crate) async fn run_loop(
    agent: &Agent,
    messages: Vec<Message>,
    inputs: &Value,
    options: TurnOptions,
) -> Result<TurnOutput> {
    PromptTurn::new(agent, input_map(inputs), options, None)?.run(messages).await
}

/// The recorded result of a turn: the answer and the number of model calls.
pub(crate) fn turn_result(out: &TurnOutput, _: &mut serde_json::Map<String, Value>) -> Value {
    json!({"result": out.result, "iterations": out.iterations})
}

/// Prepares the prompt with `inputs` (loading it first when given a path) and runs the agent loop
/// ([`run_turn`]) until the model answers; the answer is cast to `T` like [`crate::invoke`]'s.
///
/// ```
/// use prompty::{Agent, BoxFuture, Executor, Message, TurnOptions};
/// use serde_json::{json, Value};
/// struct Answer;
/// impl Executor for Answer {
///     fn execute_async<'a>(&'a self, _: &'a Agent, m: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
///         let q = m.last().map(|m| m.text()).unwrap_or_default();
///         Box::pin(async move { Ok(json!({"choices": [{"message": {"content": format!("You said: {q}")}}]})) })
///     }
/// }
/// prompty::register_executor("answer-doc", Answer);
/// prompty::register_processor("answer-doc", prompty::providers::openai::OpenAiProcessor);
/// let agent = prompty::load_str("---\nmodel: {id: m, provider: answer-doc}\n---\nuser:\n{{q}}", ".", "a.prompty")?;
/// let answer: String = prompty::turn(&agent, &json!({"q": "hi"}), TurnOptions::new())?;
/// assert_eq!(answer, "You said: hi");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn turn<'a, T: DeserializeOwned>(
    prompt: impl Into<PromptRef<'a>>,
    inputs: &Value,
    options: TurnOptions,
) -> Result<T> {
    let prompt = prompt.into();
    let out = crate::blocking::block_on(turn_output(prompt, inputs, options))??;
    crate::invoke::cast_owned(out.result)
}

/// Async form of [`turn`]; gives the same results.
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// let answer: String = prompty::turn_async("prompts/agent.prompty",
///     &serde_json::json!({"question": "Weather in Oslo?"}), prompty::TurnOptions::new()).await?;
/// # Ok(()) }
/// ```
pub async fn turn_async<'a, T: DeserializeOwned>(
    prompt: impl Into<PromptRef<'a>>,
    inputs: &Value,
    options: TurnOptions,
) -> Result<T> {
    let out = turn_output(prompt.into(), inputs, options).await?;
    crate::invoke::cast_owned(out.result)
}

/// A turn from a prompt and inputs, to its [`TurnOutput`].
pub(crate) async fn turn_output(prompt: PromptRef<'_>, inputs: &Value, options: TurnOptions) -> Result<TurnOutput> {
    let turn = async {
        let agent = prompt.load().await?;
        let inputs = Value::Object(crate::validate_inputs(&agent, inputs)?);
        let messages = crate::prepare_async(&agent, &inputs).await?;
        run_loop(&agent, messages, &inputs, options).await
    };
    let stage = crate::trace::Stage::new("turn", "prompty.turn");
    crate::trace::in_span_async(stage, |_| json!({"inputs": inputs}), turn, turn_result).await
}

/// Streamed form of [`turn`]: the final answer's chunks (text, thinking, usage) as a
/// [`TurnStream`]. Every model call of the loop is streamed; an iteration that asks for tools is
/// held back whole (nothing of it reaches the stream), and the final answer's chunks are released
/// once its response has ended, so no text of a tool-calling response ever leaks.
///
/// ```no_run
/// use futures_util::StreamExt;
/// # async fn f() -> prompty::Result<()> {
/// let mut stream = prompty::turn_stream("prompts/agent.prompty",
///     &serde_json::json!({"question": "Weather in Oslo?"}), prompty::TurnOptions::new()).await?;
/// while let Some(chunk) = stream.next().await {
///     if let Some(text) = chunk.text() { print!("{text}"); }
/// }
/// let out = stream.finish().await?; // the conversation, the iterations
/// # Ok(()) }
/// ```
pub async fn turn_stream<'a>(
    prompt: impl Into<PromptRef<'a>>,
    inputs: &Value,
    options: TurnOptions,
) -> Result<TurnStream<'a>> {
    let agent = prompt.into().load().await?;
    let inputs = Value::Object(crate::validate_inputs(&agent, inputs)?);
    let messages = crate::prepare_async(&agent, &inputs).await?;
    Ok(TurnStream::new(agent, messages, input_map(&inputs), options))
}

/// Streamed form of [`run_turn`] (see [`turn_stream`]).
///
/// ```no_run
/// use futures_util::StreamExt;
/// # async fn f(agent: prompty::Agent, messages: Vec<prompty::Message>) -> prompty::Result<()> {
/// let mut stream = prompty::run_turn_stream(&agent, messages, &serde_json::json!({}), prompty::TurnOptions::new());
/// while let Some(chunk) = stream.next().await {
///     if let Some(text) = chunk.text() { print!("{text}"); }
/// }
/// # Ok(()) }
/// ```
pub fn run_turn_stream<'a>(
    agent: &'a Agent,
    messages: Vec<Message>,
    inputs: &Value,
    options: TurnOptions,
) -> TurnStream<'a> {
    TurnStream::new(Cow::Borrowed(agent), messages, input_map(inputs), options)
}

/// Continues the last turn of a durable session ([`TurnOptions::durable`]) after an interruption,
/// in this process or another: from its last checkpoint in the store, with the ports of `agent`
/// (the prompt the turn ran, loaded again) and `inputs` (what its tools' bindings read). A model
/// response already committed is not requested again, a tool result already committed is not
/// computed again; a turn that had ended is given back as it ended.
///
/// `options` must name the store and the same session (`TurnOptions::durable(store,
/// session_id)`); give it the tools, guardrails and events the turn had. A tool whose call began
/// and whose result was never committed runs again only if it is idempotent
/// ([`TurnOptions::idempotent`], `#[prompty::tool(idempotent)]`); otherwise the turn fails with
/// [`crate::TurnStop::ReconciliationRequired`] naming the call (check its effect, then continue
/// with [`crate::engine::TurnEngine::resolve_tool`]).
///
/// ```
/// use prompty::engine::{Durability, MemoryStore};
/// use prompty::{Agent, BoxFuture, Executor, Message, Role, TurnOptions};
/// use serde_json::{json, Value};
/// use std::sync::Arc;
/// struct Hello;
/// impl Executor for Hello {
///     fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
///         Box::pin(async { Ok(json!({"choices": [{"message": {"content": "Hello"}}]})) })
///     }
/// }
/// prompty::register_executor("resume-doc", Hello);
/// prompty::register_processor("resume-doc", prompty::providers::openai::OpenAiProcessor);
/// let agent = Agent::from_value(json!({"model": {"id": "m", "provider": "resume-doc"}}))?;
///
/// let store: Arc<dyn Durability> = Arc::new(MemoryStore::new()); // or a store on disk
/// let options = || TurnOptions::new().durable(Arc::clone(&store), "session-1");
/// let out = prompty::run_turn(&agent, vec![Message::new(Role::User, "Hi")], &json!({}), options())?;
/// // Later, maybe in another process: the turn had ended, so it is given back as it ended.
/// let again = prompty::resume_turn(&agent, "session-1", &json!({}), options())?;
/// assert_eq!((again.result, again.messages), (out.result, out.messages));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn resume_turn(agent: &Agent, session_id: &str, inputs: &Value, options: TurnOptions) -> Result<TurnOutput> {
    crate::blocking::block_on(resume_turn_async(agent, session_id, inputs, options))?
}

/// Async form of [`resume_turn`]; gives the same results.
///
/// ```no_run
/// # async fn f(store: std::sync::Arc<dyn prompty::engine::Durability>) -> prompty::Result<()> {
/// let agent = prompty::load_async("prompts/agent.prompty").await?;
/// let options = prompty::TurnOptions::new().durable(store, "session-1");
/// let out = prompty::resume_turn_async(&agent, "session-1", &serde_json::json!({}), options).await?;
/// println!("{}", out.result);
/// # Ok(()) }
/// ```
pub async fn resume_turn_async(
    agent: &Agent,
    session_id: &str,
    inputs: &Value,
    options: TurnOptions,
) -> Result<TurnOutput> {
    let resume = async { PromptTurn::new(agent, input_map(inputs), options, None)?.resume(session_id).await };
    let recorded = |_: &mut crate::trace::Attributes| json!({"session": session_id, "inputs": inputs});
    let stage = crate::trace::Stage::new("turn", "prompty.turn");
    crate::trace::in_span_async(stage, recorded, resume, turn_result).await
}
