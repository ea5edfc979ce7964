//! The response cache and the per-cell accounting of model calls: a wrapping executor (and
//! processor) registered under a derived provider key (`eval+openai`) that delegates to the real
//! one, answering a request from a recorded response when the cache has it.
//!
//! A request's key is the SHA-256 of what decides its answer: the provider, `model.id`,
//! `model.apiType`, `model.options`, the connection's endpoint (never a key or any other field of
//! the connection), the messages, the declared tools' function definitions and the output schema.
//! Each recorded response is one JSON file `<key>.json` in the cache folder holding the raw
//! response and the milliseconds it took; it is written to a temporary file and renamed, so a
//! crash never leaves half a file. A file larger than [`MAX_CACHE_FILE_BYTES`] is refused when
//! read. The raw responses are what the HTTP layer returns, already scrubbed of the connection's
//! secrets; requests are not stored.

use super::CacheMode;
use crate::registry::{declared_functions, Unprojectable};
use crate::{
    get_executor, get_processor, Agent, BoxFuture, ChunkStream, Error, Executor, Message, Processed, Processor,
    RawStream, Result,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The largest cache file read, in bytes (16 MiB); a larger one is an error naming it.
pub const MAX_CACHE_FILE_BYTES: u64 = 16 << 20;

/// The format version written in cache files (part of the key: a new format never reads an old
/// file as its own).
const CACHE_VERSION: u32 = 1;

/// The prefix of the derived provider keys the wrapping executors are registered under.
const PREFIX: &str = "eval+";

/// Where and how the cells of one run read and write responses.
#[derive(Debug)]
pub(crate) struct Cache {
    pub(crate) mode: CacheMode,
    pub(crate) dir: PathBuf,
}

/// What the model calls of one cell (or one judge) did.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    /// Every raw response, in order (for token usage).
    pub(crate) responses: Vec<Value>,
    /// Calls answered from the cache.
    pub(crate) hits: u64,
    /// Calls sent to a model.
    pub(crate) misses: u64,
    /// Milliseconds the replayed responses took when recorded.
    pub(crate) replayed_ms: u64,
    /// Replay mode and a request without a recorded response: its key.
    pub(crate) replay_miss: Option<String>,
    /// The cache could not be read or written: why (the run stops).
    pub(crate) cache_failure: Option<String>,
    /// The model calls were rate-limited (HTTP 429) after the HTTP layer's retries.
    pub(crate) rate_limited: bool,
}

/// The context of one cell's model calls, reached by the wrapping executor through a task-local.
#[derive(Debug)]
pub(crate) struct CallContext {
    pub(crate) cache: Arc<Cache>,
    pub(crate) calls: Mutex<Calls>,
}

impl CallContext {
    pub(crate) fn new(cache: Arc<Cache>) -> Arc<CallContext> {
        Arc::new(CallContext { cache, calls: Mutex::new(Calls::default()) })
    }

    pub(crate) fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

tokio::task_local! {
    static CALLS: Arc<CallContext>;
}

/// Runs `future` with `context` as the one its model calls report to.
pub(crate) async fn with_context<F: std::future::Future>(context: Arc<CallContext>, future: F) -> F::Output {
    CALLS.scope(context, future).await
}

fn current() -> Option<Arc<CallContext>> {
    CALLS.try_with(Arc::clone).ok()
}

/// Points `agent` (a clone the runner owns) at the wrapping executor of its provider, registering
/// it (and its processor) on first use.
pub(crate) fn wrap(agent: &mut Agent) -> Result<()> {
    let Some(model) = agent.model.as_mut() else { return Ok(()) };
    let Some(real) = model.provider.clone() else { return Ok(()) };
    if real.starts_with(PREFIX) {
        return Ok(());
    }
    // The real components must exist: a missing provider is reported as the prompt's error.
    get_executor(&real)?;
    get_processor(&real)?;
    let key = format!("{PREFIX}{real}");
    static REGISTERED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut registered = REGISTERED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !registered.contains(&key) {
        crate::register_executor(key.clone(), Wrapping { real: real.clone() });
        crate::register_processor(key.clone(), Wrapping { real: real.clone() });
        registered.push(key.clone());
    }
    model.provider = Some(key);
    Ok(())
}

/// The agent as the real provider must see it: its own provider key back.
fn restored(agent: &Agent, real: &str) -> Agent {
    let mut agent = agent.clone();
    if let Some(model) = agent.model.as_mut() {
        model.provider = Some(real.to_owned());
    }
    agent
}

/// The request's key: the SHA-256 (hex) of what decides its answer (see the module doc).
pub(crate) fn request_key(agent: &Agent, messages: &[Message]) -> Result<String> {
    let model = agent.model.as_ref();
    let outputs = match agent.outputs.as_deref() {
        Some(outputs) if !outputs.is_empty() => crate::properties_schema(outputs, false)?,
        _ => Value::Null,
    };
    let request = json!({
        "version": CACHE_VERSION,
        "provider": model.and_then(|m| m.provider.as_deref()),
        "model": model.map(|m| m.id.as_str()),
        "apiType": model.and_then(|m| m.api_type.as_deref()),
        "options": model.and_then(|m| m.options.as_ref()).map(serde_json::to_value).transpose().map_err(exec)?,
        "endpoint": model.and_then(|m| m.connection.as_ref()).and_then(|c| c.endpoint()),
        "messages": messages,
        "tools": declared_functions(agent, Unprojectable::Skip)?,
        "outputs": outputs,
    });
    let text = serde_json::to_string(&request).map_err(exec)?;
    let digest = Sha256::digest(text.as_bytes());
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

fn exec(e: impl std::fmt::Display) -> Error {
    Error::Execution { message: e.to_string() }
}

fn file_of(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.json"))
}

/// A recorded response: the raw response and the milliseconds it took.
fn read(dir: &Path, key: &str) -> std::result::Result<Option<(Value, u64)>, String> {
    let path = file_of(dir, key);
    let text = match crate::text::read_file(&path, MAX_CACHE_FILE_BYTES) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the cached response {}: {e}", path.display())),
    };
    let record: Value = serde_json::from_str(&text).map_err(|e| {
        format!("the cached response {} is not valid JSON ({e}): delete it to record it again", path.display())
    })?;
    match (record.get("response"), record.get("latencyMs").and_then(Value::as_u64)) {
        (Some(response), Some(ms)) => Ok(Some((response.clone(), ms))),
        _ => Err(format!(
            "the cached response {} has no `response` or `latencyMs`: delete it to record it again",
            path.display()
        )),
    }
}

/// Writes a response atomically (a temporary file in the same folder, then a rename).
fn write(
    dir: &Path,
    key: &str,
    provider: &str,
    model: &str,
    response: &Value,
    ms: u64,
) -> std::result::Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write the response cache in {}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(fail)?;
    let record =
        json!({"version": CACHE_VERSION, "provider": provider, "model": model, "latencyMs": ms, "response": response});
    let text = serde_json::to_string_pretty(&record).map_err(|e| e.to_string())?;
    let tmp = dir.join(format!(".{key}.{}.{}.tmp", std::process::id(), rand::random::<u64>()));
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, file_of(dir, key)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

/// The executor and processor registered under `eval+<real>`.
struct Wrapping {
    real: String,
}

impl Wrapping {
    async fn execute(&self, agent: &Agent, messages: &[Message]) -> Result<Value> {
        let agent = restored(agent, &self.real);
        let executor = get_executor(&self.real)?;
        let Some(context) = current() else { return executor.execute_async(&agent, messages).await };
        let cache = &context.cache;
        let key = match cache.mode {
            CacheMode::Off => None,
            _ => Some(request_key(&agent, messages)?),
        };
        if let (Some(key), CacheMode::ReadWrite | CacheMode::Replay) = (&key, cache.mode) {
            match read(&cache.dir, key) {
                Ok(Some((response, ms))) => {
                    let mut calls = context.calls();
                    calls.hits += 1;
                    calls.replayed_ms += ms;
                    calls.responses.push(response.clone());
                    return Ok(response);
                }
                Ok(None) => {}
                Err(message) => return Err(cache_failure(&context, message)),
            }
            if cache.mode == CacheMode::Replay {
                context.calls().replay_miss = Some(key.clone());
                return Err(Error::Config {
                    setting: "cache".into(),
                    message: format!("no recorded response in {} for this request (key {key})", cache.dir.display()),
                });
            }
        }
        let started = Instant::now();
        let result = executor.execute_async(&agent, messages).await;
        let ms = started.elapsed().as_millis() as u64;
        let response = match result {
            Ok(response) => response,
            Err(e) => {
                if matches!(&e, Error::Http(f) if f.status == Some(429)) {
                    context.calls().rate_limited = true;
                }
                return Err(e);
            }
        };
        {
            let mut calls = context.calls();
            calls.misses += 1;
            calls.responses.push(response.clone());
        }
        if let (Some(key), CacheMode::ReadWrite | CacheMode::Record) = (&key, cache.mode) {
            let model = agent.model.as_ref().map(|m| m.id.as_str()).unwrap_or_default();
            if let Err(message) = write(&cache.dir, key, &self.real, model, &response, ms) {
                return Err(cache_failure(&context, message));
            }
        }
        Ok(response)
    }
}

fn cache_failure(context: &CallContext, message: String) -> Error {
    context.calls().cache_failure = Some(message.clone());
    Error::Execution { message }
}

impl Executor for Wrapping {
    fn execute_async<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        Box::pin(self.execute(agent, messages))
    }

    fn format_tool_messages(&self, agent: &Agent, round: &crate::ToolRound<'_>) -> Result<Vec<Message>> {
        get_executor(&self.real)?.format_tool_messages(&restored(agent, &self.real), round)
    }

    fn assemble_stream(&self, agent: &Agent, events: &[Value]) -> Option<Value> {
        get_executor(&self.real).ok()?.assemble_stream(&restored(agent, &self.real), events)
    }

    fn execute_stream<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<RawStream>> {
        Box::pin(async move {
            let agent = restored(agent, &self.real);
            get_executor(&self.real)?.execute_stream(&agent, messages).await
        })
    }
}

impl Processor for Wrapping {
    fn process(&self, agent: &Agent, response: Value) -> Result<Processed> {
        get_processor(&self.real)?.process(&restored(agent, &self.real), response)
    }

    fn process_async<'a>(&'a self, agent: &'a Agent, response: Value) -> BoxFuture<'a, Result<Processed>> {
        Box::pin(async move {
            let agent = restored(agent, &self.real);
            get_processor(&self.real)?.process_async(&agent, response).await
        })
    }

    fn process_stream(&self, agent: &Agent, events: RawStream) -> ChunkStream {
        match get_processor(&self.real) {
            Ok(processor) => processor.process_stream(&restored(agent, &self.real), events),
            Err(e) => Box::pin(futures_util::stream::once(std::future::ready(crate::StreamChunk::Failure(
                crate::StreamFailure { outcome: crate::Outcome::Determinate, message: e.to_string() },
            )))),
        }
    }
}

/// Token usage of raw responses: `usage.prompt_tokens`/`input_tokens` and
/// `usage.completion_tokens`/`output_tokens`, summed.
pub(crate) fn usage_of(responses: &[Value]) -> super::TokenUsage {
    let mut usage = super::TokenUsage::default();
    for raw in responses {
        let (input, output) = crate::trace::genai::usage(raw);
        usage.input += input.unwrap_or(0);
        usage.output += output.unwrap_or(0);
    }
    usage
}
