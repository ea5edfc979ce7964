//! The executor of `model.provider: local` ([`LocalExecutor`]): loads the model (cached), renders
//! the messages with its chat template and generates on a thread of its own.

use super::constraint::TextOrJson;
use super::store::{self, Resolved};
use super::wire::{self, Decoding, Plan};
use crate::{Agent, BoxFuture, Error, Executor, Message, RawEvent, RawStream, Result};
use prompty_local::constrain::JsonSchema;
use prompty_local::{Constraint, GenerateOptions, Generation, Model};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{OnceCell, Semaphore};

/// How many loaded models are kept in memory, process-wide, by canonical path: loading one takes
/// time (SmolLM2-135M: about a second), so the next call of the same model reuses it. A model
/// beyond this drops the least recently used one (its memory is freed when no generation uses it
/// any more).
pub const MAX_LOADED_MODELS: usize = 2;

/// How many generations run at once on one loaded model; other calls wait their turn, in order.
/// Inference is bound by the CPU and already uses every core for one generation: on a small
/// machine two at once are no faster than one after the other, and each holds its own memory.
pub const MAX_PARALLEL_GENERATIONS: usize = 1;

/// The executor of `model.provider: local`: a GGUF model run inside the process, on the CPU (see
/// [`crate::providers::local`]). Chat (`apiType: chat`, streamed or not) and embeddings
/// (`apiType: embedding`); the raw response is shaped as OpenAI's Chat Completions
/// (`chat.completion`, `chat.completion.chunk` events) and embeddings (`list`) responses.
///
/// ```no_run
/// let agent = prompty::load("hello.prompty")?; // model: {provider: local, id: smollm2-135m}
/// let answer: String = prompty::invoke(&agent, &serde_json::json!({}))?;
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
#[prompty_macros::executor("local")]
pub struct LocalExecutor {
    _private: (),
}

impl LocalExecutor {
    /// The executor (as registered under `local`).
    ///
    /// ```
    /// prompty::register_executor("local", prompty::providers::local::LocalExecutor::new());
    /// ```
    pub fn new() -> Self {
        LocalExecutor::default()
    }
}

impl Executor for LocalExecutor {
    fn execute_async<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            match api_type(agent)? {
                Api::Chat => chat(agent, messages).await,
                Api::Embedding => embed(agent, messages).await,
            }
        })
    }

    fn execute_stream<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<RawStream>> {
        Box::pin(async move {
            match api_type(agent)? {
                Api::Chat => chat_stream(agent, messages).await,
                Api::Embedding => Err(Error::Config {
                    setting: "model.apiType".to_owned(),
                    message: "the local provider streams chat only, not embeddings: call it without streaming"
                        .to_owned(),
                }),
            }
        })
    }
}

enum Api {
    Chat,
    Embedding,
}

fn api_type(agent: &Agent) -> Result<Api> {
    match agent.model.as_ref().map_or("chat", |m| m.api_type()) {
        "chat" => Ok(Api::Chat),
        "embedding" | "embeddings" => Ok(Api::Embedding),
        other => Err(crate::providers::common::unsupported_api_type("local", other, "chat or embedding")),
    }
}

/// A loaded model and the queue of its generations.
struct Loaded {
    model: Model,
    gate: Arc<Semaphore>,
}

type Slot = Arc<OnceCell<Arc<Loaded>>>;

/// The loaded models, least recently used first.
static LOADED: Mutex<Vec<(PathBuf, Slot)>> = Mutex::new(Vec::new());

/// The model at `path`, loaded once per process while it stays among the [`MAX_LOADED_MODELS`]
/// most recently used.
async fn loaded(path: &Path, setting: &str) -> Result<Arc<Loaded>> {
    let key = std::fs::canonicalize(path).map_err(|e| Error::Config {
        setting: setting.to_owned(),
        message: format!("cannot read the model file {}: {e}", path.display()),
    })?;
    let slot = {
        let mut list = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = match list.iter().position(|(p, _)| *p == key) {
            Some(i) => list.remove(i).1,
            None => Slot::default(),
        };
        list.push((key.clone(), Arc::clone(&slot)));
        let excess = list.len().saturating_sub(MAX_LOADED_MODELS);
        list.drain(..excess);
        slot
    };
    let result = slot
        .get_or_try_init(|| async {
            let file = key.clone();
            let model = off_runtime("loading the model", move || Model::load(&file)).await?;
            let model = model.map_err(|e| Error::Config { setting: setting.to_owned(), message: e.to_string() })?;
            Ok(Arc::new(Loaded { model, gate: Arc::new(Semaphore::new(MAX_PARALLEL_GENERATIONS)) }))
        })
        .await
        .cloned();
    if result.is_err() {
        let mut list = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|(p, s)| !(*p == key && Arc::ptr_eq(s, &slot)));
    }
    result
}

/// Runs `work` on a thread of its own (never on a worker of the async runtime) and awaits it.
async fn off_runtime<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("prompty-local".to_owned())
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|e| Error::Task(format!("{what}: cannot start a thread: {e}")))?;
    rx.await.map_err(|_| Error::Task(format!("{what} failed: its thread ended without a result")))
}

/// Sets the flag when dropped: the generation it watches stops at its next token.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The model of the agent, downloaded and loaded as needed; and its name in responses.
async fn model_of(agent: &Agent) -> Result<(Arc<Loaded>, String)> {
    let resolved = store::resolve(agent)?;
    let path = store::ensure(&resolved).await?;
    let setting =
        if agent.model.as_ref().is_some_and(|m| !m.id.trim().is_empty()) { "model.id" } else { store::LOCAL_MODEL_ENV };
    let shown = path.display().to_string();
    crate::trace::annotate("prompty.local.model_path", || Value::String(shown));
    let loaded = loaded(&path, setting).await?;
    let name = match &resolved {
        Resolved::Alias(..) => resolved.display(),
        Resolved::File(_) => agent
            .model
            .as_ref()
            .map(|m| m.id.trim())
            .filter(|id| !id.is_empty())
            .map_or_else(|| resolved.display(), str::to_owned),
    };
    Ok((loaded, name))
}

/// A chat call ready to run: what the generation thread takes.
struct Job {
    loaded: Arc<Loaded>,
    prompt: Vec<u32>,
    options: GenerateOptions,
    constraint: Option<Box<dyn Constraint>>,
}

/// What the response needs besides the generation.
struct Meta {
    model: String,
    id: String,
    created: u64,
    plan: Plan,
}

fn engine_error(e: prompty_local::Error) -> Error {
    match e {
        prompty_local::Error::ContextOverflow { .. } => {
            Error::Config { setting: "model.options.maxOutputTokens".to_owned(), message: e.to_string() }
        }
        other => Error::Execution { message: format!("local model: {other}") },
    }
}

fn next_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{prefix}{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Compiles the schema the plan constrains decoding to.
fn constraint(agent: &Agent, plan: &Plan) -> Result<Option<Box<dyn Constraint>>> {
    let compile = |schema: &Value| {
        JsonSchema::new(schema).map_err(|e| Error::Config {
            setting: if plan.tools.is_empty() { "outputs" } else { "tools" }.to_owned(),
            message: format!(
                "the local provider constrains its answer to this JSON schema and cannot: {e} (prompt '{}')",
                agent.name
            ),
        })
    };
    Ok(match &plan.decoding {
        Decoding::Free => None,
        Decoding::Json(schema) => Some(Box::new(compile(schema)?)),
        Decoding::TextOrJson(schema) => Some(Box::new(TextOrJson::new(compile(schema)?))),
    })
}

async fn prepare(agent: &Agent, messages: &[Message]) -> Result<(Job, Meta)> {
    let options = agent.model.as_ref().and_then(|m| m.options.as_ref());
    if let Some(o) = options {
        let ignored = wire::ignored_options(o);
        if !ignored.is_empty() {
            tracing::warn!(
                target: "prompty::local",
                prompt = %agent.name,
                "model options not supported by the local provider are ignored: {}",
                ignored.join(", ")
            );
        }
    }
    let plan = wire::plan(agent)?;
    let chat = wire::chat_messages(messages, plan.instruction.as_deref())?;
    let constraint = constraint(agent, &plan)?;
    let (loaded, model) = model_of(agent).await?;
    let text = loaded.model.render_chat(&chat, true).map_err(engine_error)?;
    let prompt = loaded.model.tokenize(&text).map_err(engine_error)?;
    let room = loaded.model.info().context_length.saturating_sub(prompt.len());
    let options = wire::generate_options(options, room)?;
    let meta = Meta { model, id: next_id("chatcmpl-local-"), created: now(), plan };
    Ok((Job { loaded, prompt, options, constraint }, meta))
}

/// What a finished generation is: its text, or a tool call (`{id, type, function}`).
fn outcome(plan: &Plan, g: &Generation) -> Option<Value> {
    if plan.tools.is_empty() {
        return None;
    }
    let (name, arguments) = wire::tool_call_of(&g.text, &plan.tools)?;
    Some(wire::wire_call(&next_id("call_"), &name, &arguments))
}

/// Waits for the model's turn (see [`MAX_PARALLEL_GENERATIONS`]).
async fn turn(loaded: &Arc<Loaded>) -> Result<tokio::sync::OwnedSemaphorePermit> {
    Arc::clone(&loaded.gate).acquire_owned().await.map_err(|_| Error::Task("the local model's queue is closed".into()))
}

/// Generates (on the calling thread: a thread of its own); `on_text` gets each piece, and
/// generation stops at the next token once `cancel` is set or `on_text` says so.
fn run(mut job: Job, cancel: &AtomicBool, on_text: &mut dyn FnMut(&str) -> ControlFlow<()>) -> Result<Generation> {
    let mut piece = |text: &str| {
        if cancel.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        on_text(text)
    };
    let constraint = job.constraint.as_mut().map(|c| &mut **c as &mut dyn Constraint);
    job.loaded.model.generate(&job.prompt, &job.options, constraint, &mut piece).map_err(engine_error)
}

async fn chat(agent: &Agent, messages: &[Message]) -> Result<Value> {
    let (job, meta) = prepare(agent, messages).await?;
    let permit = turn(&job.loaded).await?;
    let cancel = Arc::new(AtomicBool::new(false));
    let _stop = CancelOnDrop(Arc::clone(&cancel));
    let g = off_runtime("generating with the local model", move || {
        let _turn = permit;
        run(job, &cancel, &mut |_| ControlFlow::Continue(()))
    })
    .await??;
    let call = outcome(&meta.plan, &g);
    Ok(wire::completion(&meta.id, meta.created, &meta.model, &g, call.as_ref()))
}

/// What a streamed answer holds back: with tools offered, text that may turn out to be a tool
/// call (an answer whose first character is `{`, or any answer that is JSON by constraint).
struct Held {
    /// Whether every piece is held until the end.
    all: bool,
    /// Whether the first character that is not whitespace has been seen.
    decided: bool,
    text: String,
}

impl Held {
    fn new(plan: &Plan) -> Self {
        let tools = !plan.tools.is_empty();
        Held { all: tools && matches!(plan.decoding, Decoding::Json(_)), decided: !tools, text: String::new() }
    }

    /// The text to send now of a new piece.
    fn piece(&mut self, text: &str) -> Option<String> {
        if self.all {
            self.text.push_str(text);
            return None;
        }
        if self.decided {
            return Some(text.to_owned());
        }
        self.text.push_str(text);
        match self.text.trim_start().chars().next() {
            None => None,
            Some('{') => {
                self.all = true;
                None
            }
            Some(_) => {
                self.decided = true;
                Some(std::mem::take(&mut self.text))
            }
        }
    }
}

async fn chat_stream(agent: &Agent, messages: &[Message]) -> Result<RawStream> {
    let (job, meta) = prepare(agent, messages).await?;
    let permit = turn(&job.loaded).await?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<RawEvent>();
    let cancel = Arc::new(AtomicBool::new(false));
    let watch = Arc::clone(&cancel);
    let work = move || {
        let _turn = permit;
        let Meta { model, id, created, plan } = meta;
        let mut held = Held::new(&plan);
        let mut on_text = |text: &str| match held.piece(text) {
            Some(text) => {
                let event = wire::chunk(&id, created, &model, Some(json!({"content": text})), None);
                if tx.send(RawEvent::Data(event)).is_ok() {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            }
            None if tx.is_closed() => ControlFlow::Break(()),
            None => ControlFlow::Continue(()),
        };
        let result = run(job, &watch, &mut on_text);
        let send = |v: Value| tx.send(RawEvent::Data(v)).is_ok();
        match result {
            Err(e) => {
                send(json!({"error": {"message": e.to_string()}}));
            }
            Ok(g) => {
                let call = outcome(&plan, &g);
                let rest = std::mem::take(&mut held.text);
                let delta = match &call {
                    Some(call) => {
                        let mut call = call.clone();
                        call["index"] = json!(0);
                        json!({"tool_calls": [call]})
                    }
                    None if !rest.is_empty() => json!({"content": rest}),
                    None => json!({}),
                };
                let finish = wire::finish_reason(g.finish, call.is_some());
                if send(wire::chunk(&id, created, &model, Some(delta), Some(finish))) {
                    let mut last = wire::chunk(&id, created, &model, None, None);
                    last["usage"] = wire::usage(g.prompt_tokens, g.completion_tokens);
                    send(last);
                }
            }
        }
    };
    std::thread::Builder::new()
        .name("prompty-local".to_owned())
        .spawn(work)
        .map_err(|e| Error::Task(format!("generating with the local model: cannot start a thread: {e}")))?;
    let state = (rx, CancelOnDrop(cancel));
    Ok(Box::pin(futures_util::stream::unfold(state, |mut state| async move {
        let event = state.0.recv().await?;
        Some((event, state))
    })))
}

async fn embed(agent: &Agent, messages: &[Message]) -> Result<Value> {
    let texts: Vec<String> = wire::chat_messages(messages, None)?.into_iter().map(|m| m.content).collect();
    if texts.is_empty() {
        return Err(Error::Config {
            setting: "messages".to_owned(),
            message: "an embedding call needs at least one message whose text is embedded".to_owned(),
        });
    }
    let (loaded, model) = model_of(agent).await?;
    let permit = turn(&loaded).await?;
    let (vectors, tokens) = off_runtime("embedding with the local model", move || {
        let _turn = permit;
        let mut vectors = Vec::with_capacity(texts.len());
        let mut tokens = 0;
        for text in &texts {
            tokens += loaded.model.tokenize(text)?.len();
            vectors.push(loaded.model.embed(text)?);
        }
        Ok::<_, prompty_local::Error>((vectors, tokens))
    })
    .await?
    .map_err(engine_error)?;
    Ok(wire::embeddings(&model, vectors, tokens))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API types the executor serves are those the checks know for `local`
    /// (`BUILTIN_PROVIDERS`): a served one goes on to find the model (here a file that is not
    /// there), any other is refused first, naming `model.apiType`.
    #[test]
    fn the_api_types_served_are_those_the_checks_know() {
        let local = prompty_core::analysis::BUILTIN_PROVIDERS.iter().find(|p| p.key == "local").unwrap();
        let mut candidates: Vec<&str> =
            prompty_core::analysis::BUILTIN_PROVIDERS.iter().flat_map(|p| p.api_types.iter().copied()).collect();
        candidates.extend(["audio", "Chat"]);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for api in candidates {
            let agent =
                Agent::from_value(json!({"model": {"id": "/nonexistent/m.gguf", "provider": "local", "apiType": api}}))
                    .unwrap();
            let messages = [Message::new(crate::Role::User, "Hi")];
            let e = rt.block_on(LocalExecutor::new().execute_async(&agent, &messages)).unwrap_err();
            let Error::Config { setting, message } = e else { panic!("{api}: {e:?}") };
            if local.api_types.contains(&api) {
                assert_eq!(setting, "model.id", "{api}: {message}");
                assert!(message.contains("/nonexistent/m.gguf"), "{message}");
            } else {
                assert_eq!(setting, "model.apiType", "{api}: {message}");
                assert!(message.contains(&format!("'{api}' is not supported by the local provider")), "{message}");
            }
        }
    }

    fn plan(tools: bool, decoding: Decoding) -> Plan {
        let f = crate::FunctionDefinition {
            name: "f".into(),
            description: None,
            parameters: json!({"type": "object"}),
            strict: false,
        };
        Plan { tools: if tools { vec![f] } else { Vec::new() }, decoding, instruction: None }
    }

    /// With tools offered, a streamed answer is held back while it may be a tool call.
    #[test]
    fn streamed_text_is_held_back_while_it_may_be_a_call() {
        // No tools: every piece goes out.
        let mut h = Held::new(&plan(false, Decoding::Free));
        assert_eq!(h.piece(" {"), Some(" {".into()));
        // auto: whitespace is held, text frees it and the rest.
        let mut h = Held::new(&plan(true, Decoding::TextOrJson(json!({}))));
        assert_eq!(h.piece("  "), None);
        assert_eq!(h.piece("Hi"), Some("  Hi".into()));
        assert_eq!(h.piece(" {x}"), Some(" {x}".into()));
        // auto: `{` first holds everything to the end.
        let mut h = Held::new(&plan(true, Decoding::TextOrJson(json!({}))));
        assert_eq!(h.piece("\n"), None);
        assert_eq!(h.piece("{\"name\""), None);
        assert_eq!(h.piece(" more"), None);
        assert_eq!(h.text, "\n{\"name\" more");
        // A forced call (or JSON with tools): all held.
        let mut h = Held::new(&plan(true, Decoding::Json(json!({}))));
        assert_eq!(h.piece("Hi"), None);
    }
}
