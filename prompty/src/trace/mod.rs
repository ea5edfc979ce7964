//! Tracing: every stage of the pipeline and every tool call as a span.
//!
//! The pipeline is instrumented once; two kinds of consumers see it:
//!
//! - the [`tracing`](https://docs.rs/tracing) crate: every span is a `tracing` span named after its
//!   signature (`prompty.load`, `prompty.prepare`, `prompty.execute`, ...) with the fields
//!   `prompty.name`, `inputs` and `result` (JSON, redacted; [`set_tracing_content`] turns these
//!   two off), so a subscriber the program already has (`tracing_subscriber::fmt`, an
//!   OpenTelemetry layer) sees them with no extra code. The spans also carry the OpenTelemetry
//!   GenAI semantic conventions as fields, recorded when the span ends: on the model call
//!   (`prompty.execute`, `prompty.stream`) `gen_ai.operation.name`, `gen_ai.provider.name`,
//!   `gen_ai.request.model` and the request options (`gen_ai.request.temperature`, `max_tokens`,
//!   `top_p`, `top_k`, `frequency_penalty`, `presence_penalty`, `seed`, `stop_sequences`),
//!   `gen_ai.response.id`, `gen_ai.response.model`, `gen_ai.response.finish_reasons` (JSON text),
//!   `gen_ai.usage.input_tokens` and `output_tokens`, with `otel.name` (`"chat gpt-4o"`) and
//!   `otel.kind = "client"`; on a tool call (`prompty.tool`) `gen_ai.operation.name =
//!   "execute_tool"`, `gen_ai.tool.name` and `gen_ai.tool.call.id`; on any failed span
//!   `error.type`, `otel.status_code = "error"` and `otel.status_description`. So a
//!   `tracing-opentelemetry` layer exports them with the program's own resource, sampler and
//!   exporter, no `otel` feature needed;
//! - the backends of the spec's tracer registry ([`add`], [`remove`], [`clear`]): each gets every
//!   finished span ([`FinishedSpan`]), children before their parent, with its inputs, result,
//!   times, usage and nested frames. [`TracyBackend`] writes the `.tracy` files the Prompty trace
//!   viewer opens, [`ConsoleBackend`] prints to stderr; `prompty::otel::OtelBackend` (feature `otel`) exports
//!   them to an OpenTelemetry collector over OTLP/HTTP.
//!
//! With no subscriber and no backend, a span costs one atomic load and one check of the `tracing`
//! callsite: nothing is serialized.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use prompty::trace::{self, FinishedSpan, TraceBackend};
//!
//! #[derive(Default)]
//! struct Names(Mutex<Vec<String>>);
//! impl TraceBackend for Names {
//!     fn span_ended(&self, span: &FinishedSpan) {
//!         self.0.lock().unwrap().push(format!("{} ({})", span.name, span.signature));
//!     }
//! }
//!
//! let names = Arc::new(Names::default());
//! trace::add("names", names.clone());
//! let agent = prompty::load_str("---\ninputs: [q]\n---\nuser:\n{{ q }}", ".", "ask.prompty")?;
//! prompty::prepare(&agent, &serde_json::json!({"q": "Hi"}))?;
//! trace::remove("names");
//! let names = names.0.lock().unwrap();
//! assert_eq!(names.as_slice(), ["render (prompty.render)", "parse (prompty.parse)", "prepare (prompty.prepare)"]);
//! # Ok::<(), prompty::Error>(())
//! ```
//!
//! ## Redaction
//! Before any backend or subscriber sees a value, [`redact`] ([`redaction`]) replaces the value of every key that
//! contains `secret`, `password`, `api_key`, `apikey`, `token`, `auth`, `credential` or `cookie`
//! (case-insensitive, `-` and `.` taken as `_` so `x-api-key` counts, at any depth) with `[REDACTED]`, except usage counts (`prompt_tokens`,
//! `completion_tokens`, `total_tokens`, `input_tokens`, `cached_tokens`, `totalTokenCount`, ...:
//! `token` followed by `s` or `count`) and look-alikes such as `author`; [`crate::Secret`] values
//! serialize as `[REDACTED]` whatever their key; and every secret value the process remembers
//! (a credential of a loaded prompt, a `${env:}` reference to a variable named as a secret:
//! see [`crate::Secret::scrub`]) is replaced inside any string, whatever key holds it, as it is in
//! the names of spans.
//!
//! ## Bounds
//! A string in a recorded value is cut at [`MAX_TRACE_STRING`] bytes; a span keeps at most
//! [`MAX_FRAMES`] child frames (the rest are counted in `__dropped_frames`).

mod backends;
pub(crate) mod genai;
pub mod redaction;
mod span;
pub(crate) mod time;

pub use backends::{ConsoleBackend, TracyBackend};
pub use redaction::{redact, redact_value};
#[cfg(any(feature = "openai", feature = "local"))]
pub(crate) use span::annotate;
pub(crate) use span::{
    carry, carry_fn, in_span, in_span_async, in_span_heard, in_span_heard_async, traced_stream, within, Attributes,
    OpenSpan, Seen, SpanPlace, Stage,
};
pub use span::{traced, traced_async};

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

/// The longest string kept in a recorded value, in bytes; longer ones are cut and say how much
/// was left out.
pub const MAX_TRACE_STRING: usize = 64 * 1024;

/// The attribute of the `prepare` span that holds the segments of the prepared messages (JSON:
/// per message, per content part, a list of `{"range": {"start", "end"}, "source", "strict"}`,
/// see [`crate::PartSegment`]); a `.tracy` frame holds it as `__segments`.
pub const SEGMENTS_ATTRIBUTE: &str = "prompty.segments";

/// The most child frames one span keeps.
pub const MAX_FRAMES: usize = 4096;

static TRACING_CONTENT: AtomicBool = AtomicBool::new(true);

/// Whether the `tracing` spans record their content in the fields `inputs` and `result` (the
/// rendered messages, the model's raw answers, tool arguments and results, redacted): on unless
/// turned off. Turn it off where a `tracing` pipeline sends spans to a store that may not keep
/// prompts and answers (an OpenTelemetry collector through `tracing-opentelemetry`): the GenAI
/// attributes (`gen_ai.*`, `error.type`) are still recorded. The backends ([`add`]) are not
/// affected: each has its own setting (`OtelBackend::with_content`).
///
/// ```
/// prompty::trace::set_tracing_content(false);
/// assert!(!prompty::trace::tracing_content());
/// prompty::trace::set_tracing_content(true);
/// ```
pub fn set_tracing_content(on: bool) {
    TRACING_CONTENT.store(on, Ordering::Release);
}

/// Whether the `tracing` spans record `inputs` and `result` (see [`set_tracing_content`]).
///
/// ```
/// assert!(prompty::trace::tracing_content());
/// ```
pub fn tracing_content() -> bool {
    TRACING_CONTENT.load(Ordering::Acquire)
}

/// What kind of work a span stands for (OpenTelemetry's span kind).
///
/// ```
/// assert_eq!(prompty::trace::SpanKind::default(), prompty::trace::SpanKind::Internal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpanKind {
    /// Work inside the program.
    #[default]
    Internal,
    /// A call to a model provider.
    Client,
}

/// A span that has ended, as handed to every [`TraceBackend`]: children end (and are handed
/// over) before their parent.
///
/// ```
/// let span = prompty::trace::FinishedSpan::default();
/// assert_eq!(span.frame()["name"], "");
/// ```
#[derive(Debug, Clone)]
pub struct FinishedSpan {
    /// The trace (the root span and everything below it), the same for all its spans.
    pub trace_id: u128,
    /// This span, unique in the process.
    pub span_id: u64,
    /// The span it ran in, when it is not a root.
    pub parent_id: Option<u64>,
    /// Its name: the stage (`prepare`, `execute`), `turn N` for an iteration of the agent loop,
    /// the tool's name for a tool call.
    pub name: String,
    /// What ran: `prompty.load`, `prompty.prepare`, `prompty.render`, `prompty.parse`,
    /// `prompty.execute`, `prompty.process`, `prompty.run`, `prompty.invoke`, `prompty.turn`,
    /// `prompty.tool`, `prompty.stream`, or a name given to [`traced`].
    pub signature: String,
    /// OpenTelemetry's span kind: `Client` for the model call (`prompty.execute`).
    pub kind: SpanKind,
    /// When it started.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// Its inputs, redacted.
    pub inputs: Value,
    /// Its result, redacted; for a failure, `{"exception": {"type", "message", "traceback"}}`.
    pub result: Value,
    /// Whether it failed.
    pub failed: bool,
    /// Attributes for observability backends (`gen_ai.*` on the model call), redacted.
    pub attributes: Map<String, Value>,
    /// Token usage: the numbers of `result.usage`, summed with the children's, under the
    /// provider's names.
    pub usage: Map<String, Value>,
    /// The frames of its children, as in a `.tracy` file.
    pub frames: Vec<Value>,
    /// How many child frames were left out beyond [`MAX_FRAMES`].
    pub dropped_frames: usize,
}

impl Default for FinishedSpan {
    fn default() -> Self {
        FinishedSpan {
            trace_id: 0,
            span_id: 0,
            parent_id: None,
            name: String::new(),
            signature: String::new(),
            kind: SpanKind::Internal,
            start: SystemTime::UNIX_EPOCH,
            end: SystemTime::UNIX_EPOCH,
            inputs: Value::Null,
            result: Value::Null,
            failed: false,
            attributes: Map::new(),
            usage: Map::new(),
            frames: Vec::new(),
            dropped_frames: 0,
        }
    }
}

impl FinishedSpan {
    /// The span as a `.tracy` frame: `{name, __time{start, end, duration}, signature, inputs,
    /// __frames, result, __usage}` (in the reference runtime's order) (times in UTC, duration in milliseconds).
    ///
    /// ```
    /// use prompty::trace::FinishedSpan;
    /// use std::time::{Duration, SystemTime};
    /// let span = FinishedSpan {
    ///     name: "prepare".into(),
    ///     signature: "prompty.prepare".into(),
    ///     start: SystemTime::UNIX_EPOCH,
    ///     end: SystemTime::UNIX_EPOCH + Duration::from_millis(1500),
    ///     ..Default::default()
    /// };
    /// let frame = span.frame();
    /// assert_eq!(frame["__time"]["start"], "1970-01-01T00:00:00.000000");
    /// assert_eq!(frame["__time"]["duration"], 1500);
    /// ```
    pub fn frame(&self) -> Value {
        self.clone().into_frame()
    }

    /// [`FinishedSpan::frame`], taking the span apart instead of copying it.
    ///
    /// ```
    /// let frame = prompty::trace::FinishedSpan::default().into_frame();
    /// assert!(frame["__time"]["start"].is_string());
    /// ```
    pub fn into_frame(self) -> Value {
        let mut frame = Map::new();
        frame.insert("name".into(), Value::String(self.name));
        let mut t = Map::new();
        t.insert("start".into(), Value::String(time::iso(self.start)));
        t.insert("end".into(), Value::String(time::iso(self.end)));
        let ms = self.end.duration_since(self.start).map(|d| d.as_millis()).unwrap_or(0);
        t.insert("duration".into(), Value::from(u64::try_from(ms).unwrap_or(u64::MAX)));
        frame.insert("__time".into(), Value::Object(t));
        frame.insert("signature".into(), Value::String(self.signature));
        frame.insert("inputs".into(), self.inputs);
        if !self.frames.is_empty() {
            frame.insert("__frames".into(), Value::Array(self.frames));
        }
        if self.dropped_frames > 0 {
            frame.insert("__dropped_frames".into(), Value::from(self.dropped_frames));
        }
        frame.insert("result".into(), self.result);
        if let Some(segments) = self.attributes.get(SEGMENTS_ATTRIBUTE) {
            frame.insert("__segments".into(), segments.clone());
        }
        if !self.usage.is_empty() {
            frame.insert("__usage".into(), Value::Object(self.usage));
        }
        Value::Object(frame)
    }
}

/// A consumer of finished spans: a `.tracy` writer, an exporter, your own.
///
/// A backend that panics is caught and logged (through `tracing`), and the other backends and
/// the pipeline go on. Calls are made on the thread that ends the span: a backend that does slow
/// work (network) hands it to a thread of its own.
///
/// ```
/// use prompty::trace::{FinishedSpan, TraceBackend};
/// struct Count(std::sync::atomic::AtomicUsize);
/// impl TraceBackend for Count {
///     fn span_ended(&self, _span: &FinishedSpan) {
///         self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///     }
/// }
/// ```
pub trait TraceBackend: Send + Sync {
    /// A span ended.
    fn span_ended(&self, span: &FinishedSpan);
}

type Backends = BTreeMap<String, Arc<dyn TraceBackend>>;

static BACKENDS: RwLock<Backends> = RwLock::new(BTreeMap::new());
static ANY_BACKEND: AtomicBool = AtomicBool::new(false);

fn backends_changed(map: &Backends) {
    ANY_BACKEND.store(!map.is_empty(), Ordering::Release);
}

/// Registers a backend under `name` (replacing one of the same name). Every span that ends from
/// now on reaches it.
///
/// ```
/// prompty::trace::add("tracy", std::sync::Arc::new(prompty::trace::TracyBackend::new(std::env::temp_dir())));
/// assert!(prompty::trace::names().contains(&"tracy".to_owned()));
/// prompty::trace::remove("tracy");
/// ```
pub fn add(name: &str, backend: Arc<dyn TraceBackend>) {
    let mut map = BACKENDS.write().unwrap_or_else(|e| e.into_inner());
    map.insert(name.to_owned(), backend);
    backends_changed(&map);
}

/// Removes the backend registered under `name`; whether there was one.
///
/// ```
/// assert!(!prompty::trace::remove("never-added"));
/// ```
pub fn remove(name: &str) -> bool {
    let mut map = BACKENDS.write().unwrap_or_else(|e| e.into_inner());
    let removed = map.remove(name).is_some();
    backends_changed(&map);
    removed
}

/// Removes every backend.
///
/// ```
/// prompty::trace::clear();
/// assert!(prompty::trace::names().is_empty());
/// ```
pub fn clear() {
    let mut map = BACKENDS.write().unwrap_or_else(|e| e.into_inner());
    map.clear();
    backends_changed(&map);
}

/// The names of the registered backends, sorted.
///
/// ```
/// let _ = prompty::trace::names();
/// ```
pub fn names() -> Vec<String> {
    BACKENDS.read().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect()
}

/// Whether any backend is registered.
fn any_backend() -> bool {
    ANY_BACKEND.load(Ordering::Acquire)
}

/// Hands a finished span to every backend; a panicking one is logged and skipped.
fn emit(span: &FinishedSpan) {
    let backends: Vec<(String, Arc<dyn TraceBackend>)> =
        BACKENDS.read().unwrap_or_else(|e| e.into_inner()).iter().map(|(n, b)| (n.clone(), Arc::clone(b))).collect();
    for (name, backend) in backends {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backend.span_ended(span)));
        if let Err(payload) = outcome {
            tracing::warn!(
                backend = %name,
                "the trace backend `{name}` panicked on the span `{}`: {}",
                span.name,
                crate::support::panic_text(payload.as_ref())
            );
        }
    }
}

#[cfg(test)]
mod tests;
