//! An OpenTelemetry exporter: every finished span sent over OTLP/HTTP (protobuf) to a collector
//! ([`OtelBackend`], feature `otel`), built on the `opentelemetry` SDK's span data and the
//! `opentelemetry-otlp` exporter (HTTP with protobuf, over prompty's own HTTP client).
//!
//! ```no_run
//! let otel = std::sync::Arc::new(prompty::otel::OtelBackend::from_env());
//! prompty::trace::add("otel", otel.clone());
//! ```
//!
//! A program that already exports with `tracing-opentelemetry` does not need this backend: the
//! `prompty.*` `tracing` spans carry the same GenAI attributes as fields (see [`crate::trace`]),
//! so its own pipeline (resource, sampler, exporter) sends them.

use crate::http::{self, Secrets};
use crate::trace::{FinishedSpan, SpanKind, TraceBackend};
use opentelemetry::trace::{SpanContext, SpanId, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};

/// The most spans waiting to be exported; a span that ends while the queue is full is dropped
/// and counted ([`OtelStats::dropped`]).
///
/// ```
/// assert_eq!(prompty::otel::QUEUE_CAPACITY, 2048);
/// ```
pub const QUEUE_CAPACITY: usize = 2048;

/// The most spans in one export request.
///
/// ```
/// assert_eq!(prompty::otel::MAX_BATCH, 512);
/// ```
pub const MAX_BATCH: usize = 512;

/// How long a span waits for others to join its batch before the batch is sent.
///
/// ```
/// assert_eq!(prompty::otel::BATCH_INTERVAL, std::time::Duration::from_secs(1));
/// ```
pub const BATCH_INTERVAL: Duration = Duration::from_secs(1);

/// The time limit of one export request, unless [`OtelBackend::with_timeout`] sets another.
///
/// ```
/// assert_eq!(prompty::otel::DEFAULT_TIMEOUT, std::time::Duration::from_secs(10));
/// ```
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long dropping an [`OtelBackend`] waits for its queue to be sent.
///
/// ```
/// assert_eq!(prompty::otel::DROP_TIMEOUT, std::time::Duration::from_secs(5));
/// ```
pub const DROP_TIMEOUT: Duration = Duration::from_secs(5);

/// The default collector: OTLP/HTTP on the local machine.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// Exports every finished span to an OpenTelemetry collector over OTLP/HTTP with protobuf
/// (`POST {endpoint}/v1/traces`, `Content-Type: application/x-protobuf`), following the GenAI
/// semantic conventions for the model call. The spans are `opentelemetry_sdk` span data, encoded
/// and sent by `opentelemetry-otlp`'s HTTP exporter through prompty's HTTP client (its TLS
/// provider and redirect rule).
///
/// ## What is sent
/// - ids: the trace id (16 bytes), the span id and the parent's (8 bytes) of the [`FinishedSpan`];
/// - kind `CLIENT` for the model call (`prompty.execute`, `prompty.stream`), `INTERNAL` for the
///   rest; the model call is named `"{gen_ai.operation.name} {gen_ai.request.model}"`
///   (`chat gpt-4o`), every other span after its signature (`prompty.prepare`);
/// - every attribute of the span as a typed attribute (strings, integers, doubles, booleans and
///   arrays of them; any other JSON as JSON text): `gen_ai.operation.name`,
///   `gen_ai.provider.name`, `gen_ai.request.*`, `gen_ai.response.*`, `gen_ai.usage.*`; plus
///   `prompty.name` and `prompty.signature`;
/// - status `ERROR` with the error's message (and `error.type`) when the span failed;
/// - the resource attribute `service.name` (`prompty` unless [`OtelBackend::with_service_name`]
///   says otherwise) with the SDK's `telemetry.sdk.*`, and the instrumentation scope `prompty`.
///
/// Content (the span's inputs and result as JSON text under `prompty.inputs` /
/// `prompty.result`, and on the model call `gen_ai.input.messages` / `gen_ai.output.messages`)
/// is only sent with [`OtelBackend::with_content`]`(true)`. Values are redacted before any
/// backend sees them (see [`crate::trace`]).
///
/// ## Never in the way
/// [`TraceBackend::span_ended`] converts the span and pushes it into a queue of at most
/// [`QUEUE_CAPACITY`] spans, or drops it when the queue is full; it never waits. A thread of the
/// exporter's own (with a one-thread tokio runtime, started with the first span) sends batches of
/// up to [`MAX_BATCH`] spans, at the latest [`BATCH_INTERVAL`] after the first span of the batch.
/// A request that fails or takes longer than [`DEFAULT_TIMEOUT`] is logged through `tracing`
/// (never with header values) and its spans are dropped. [`OtelBackend::flush`] waits until what
/// was queued is sent; dropping the exporter flushes for at most [`DROP_TIMEOUT`].
///
/// ```no_run
/// use std::sync::Arc;
/// use prompty::otel::OtelBackend;
///
/// let otel = Arc::new(OtelBackend::new("http://localhost:4318").with_service_name("my-app"));
/// prompty::trace::add("otel", otel.clone());
/// // ... run prompts ...
/// otel.flush();
/// ```
pub struct OtelBackend {
    config: Arc<Config>,
    worker: OnceLock<Option<Worker>>,
    counters: Arc<Counters>,
}

/// What the exporter was told.
#[derive(Clone)]
struct Config {
    url: String,
    headers: HeaderMap,
    service_name: String,
    content: bool,
    timeout: Duration,
}

/// The queue's side of the exporter thread.
struct Worker {
    tx: Mutex<Option<mpsc::Sender<SpanData>>>,
    flush: Arc<Notify>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// What happened to the spans so far.
#[derive(Default)]
struct Counters {
    queued: AtomicU64,
    exported: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    /// Spans exported or failed, and whether the thread stopped.
    settled: Mutex<(u64, bool)>,
    changed: Condvar,
}

impl Counters {
    fn settle(&self, n: u64) {
        let mut s = self.settled.lock().unwrap_or_else(|e| e.into_inner());
        s.0 += n;
        self.changed.notify_all();
    }

    fn stop(&self) {
        let mut s = self.settled.lock().unwrap_or_else(|e| e.into_inner());
        s.1 = true;
        self.changed.notify_all();
    }

    /// Waits until `done(settled, stopped)` holds, at most `timeout`; whether it does.
    fn wait(&self, timeout: Duration, done: impl Fn(u64, bool) -> bool) -> bool {
        let s = self.settled.lock().unwrap_or_else(|e| e.into_inner());
        let (s, _) =
            self.changed.wait_timeout_while(s, timeout, |s| !done(s.0, s.1)).unwrap_or_else(|e| e.into_inner());
        done(s.0, s.1)
    }
}

/// How many spans an [`OtelBackend`] queued, sent, failed to send and dropped.
///
/// ```
/// let stats = prompty::otel::OtelBackend::new("http://127.0.0.1:4318").stats();
/// assert_eq!(stats, prompty::otel::OtelStats::default());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OtelStats {
    /// Spans accepted into the queue.
    pub queued: u64,
    /// Spans the collector accepted (a 2xx answer).
    pub exported: u64,
    /// Spans whose request failed (no connection, a timeout, a non-2xx answer).
    pub failed: u64,
    /// Spans dropped because the queue was full or the exporter was shut down.
    pub dropped: u64,
}

impl std::fmt::Debug for OtelBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header names only: their values may hold keys.
        let headers: Vec<&str> = self.config.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("OtelBackend")
            .field("url", &self.config.url)
            .field("headers", &headers)
            .field("service_name", &self.config.service_name)
            .field("content", &self.config.content)
            .field("timeout", &self.config.timeout)
            .finish_non_exhaustive()
    }
}

impl OtelBackend {
    /// Exports to the collector at `endpoint` (its base URL: spans are posted to
    /// `{endpoint}/v1/traces`). As every `opentelemetry-otlp` exporter, it also sends the headers
    /// of `OTEL_EXPORTER_OTLP_TRACES_HEADERS` / `OTEL_EXPORTER_OTLP_HEADERS` when they are set.
    /// Bodies are not compressed (`OTEL_EXPORTER_OTLP_COMPRESSION` is ignored).
    ///
    /// ```
    /// let otel = prompty::otel::OtelBackend::new("http://localhost:4318/");
    /// assert_eq!(otel.traces_url(), "http://localhost:4318/v1/traces");
    /// ```
    pub fn new(endpoint: &str) -> OtelBackend {
        OtelBackend::with_url(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
    }

    fn with_url(url: String) -> OtelBackend {
        OtelBackend {
            config: Arc::new(Config {
                url,
                headers: HeaderMap::new(),
                service_name: "prompty".to_owned(),
                content: false,
                timeout: DEFAULT_TIMEOUT,
            }),
            worker: OnceLock::new(),
            counters: Arc::new(Counters::default()),
        }
    }

    /// Configured the standard way, from the environment:
    ///
    /// - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL, used as it is), else
    ///   `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL, `/v1/traces` appended), else
    ///   `http://localhost:4318/v1/traces`;
    /// - `OTEL_EXPORTER_OTLP_HEADERS` then `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (which wins for a
    ///   name in both): `name=value` pairs separated by commas, values percent-decoded;
    /// - `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds);
    /// - `OTEL_SERVICE_NAME` for `service.name`.
    ///
    /// A header that is not valid is skipped with a warning that names it (never its value).
    ///
    /// ```
    /// let otel = prompty::otel::OtelBackend::from_env();
    /// assert!(otel.traces_url().starts_with("http"));
    /// ```
    pub fn from_env() -> OtelBackend {
        OtelBackend::from_vars(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> OtelBackend {
        let url = match (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(url), _) => url.trim().to_owned(),
            (None, Some(base)) => format!("{}/v1/traces", base.trim().trim_end_matches('/')),
            (None, None) => format!("{DEFAULT_ENDPOINT}/v1/traces"),
        };
        let mut otel = OtelBackend::with_url(url);
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            if let Some(list) = var(name) {
                for (key, value) in parse_headers(&list) {
                    otel = otel.with_header(&key, &value);
                }
            }
        }
        let timeout = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT").or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"));
        if let Some(ms) = timeout.and_then(|t| t.trim().parse::<u64>().ok()) {
            otel = otel.with_timeout(Duration::from_millis(ms));
        }
        if let Some(service) = var("OTEL_SERVICE_NAME") {
            otel = otel.with_service_name(service.trim());
        }
        otel
    }

    fn config_mut(&mut self) -> &mut Config {
        // Only before the first span: the worker holds a clone of the `Arc` after that.
        Arc::make_mut(&mut self.config)
    }

    /// Adds a header to every export request (e.g. `authorization` or `api-key` for a hosted
    /// collector). Its value is marked sensitive and never logged or shown by `Debug`; a name or
    /// value that cannot be a header is skipped with a warning that names it.
    ///
    /// ```
    /// let otel = prompty::otel::OtelBackend::new("https://otlp.example").with_header("api-key", "k-123");
    /// assert!(!format!("{otel:?}").contains("k-123"));
    /// ```
    pub fn with_header(mut self, name: &str, value: &str) -> OtelBackend {
        match (HeaderName::from_bytes(name.trim().as_bytes()), HeaderValue::from_str(value.trim())) {
            (Ok(name), Ok(mut value)) => {
                value.set_sensitive(true);
                self.config_mut().headers.insert(name, value);
            }
            _ => tracing::warn!("the OTLP export header `{}` is not a valid header: skipped", name.trim()),
        }
        self
    }

    /// Sets the resource attribute `service.name` (default `prompty`).
    ///
    /// ```
    /// let otel = prompty::otel::OtelBackend::new("http://localhost:4318").with_service_name("billing");
    /// assert_eq!(otel.service_name(), "billing");
    /// ```
    pub fn with_service_name(mut self, name: &str) -> OtelBackend {
        self.config_mut().service_name = name.to_owned();
        self
    }

    /// Whether message content is exported (default `false`): the inputs and result of every span
    /// as JSON text (`prompty.inputs`, `prompty.result`), and on the model call the messages sent
    /// and received (`gen_ai.input.messages`, `gen_ai.output.messages`). Prompts and answers may
    /// hold personal data: turn it on only where the collector may keep them.
    ///
    /// ```
    /// let otel = prompty::otel::OtelBackend::new("http://localhost:4318").with_content(true);
    /// assert!(otel.content());
    /// ```
    pub fn with_content(mut self, content: bool) -> OtelBackend {
        self.config_mut().content = content;
        self
    }

    /// The time limit of one export request (default [`DEFAULT_TIMEOUT`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let otel = prompty::otel::OtelBackend::new("http://localhost:4318").with_timeout(Duration::from_secs(3));
    /// assert_eq!(otel.timeout(), Duration::from_secs(3));
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> OtelBackend {
        self.config_mut().timeout = timeout;
        self
    }

    /// The URL spans are posted to.
    ///
    /// ```
    /// assert_eq!(prompty::otel::OtelBackend::new("http://c:4318").traces_url(), "http://c:4318/v1/traces");
    /// ```
    pub fn traces_url(&self) -> &str {
        &self.config.url
    }

    /// The `service.name` sent.
    ///
    /// ```
    /// assert_eq!(prompty::otel::OtelBackend::new("http://c:4318").service_name(), "prompty");
    /// ```
    pub fn service_name(&self) -> &str {
        &self.config.service_name
    }

    /// Whether message content is exported.
    ///
    /// ```
    /// assert!(!prompty::otel::OtelBackend::new("http://c:4318").content());
    /// ```
    pub fn content(&self) -> bool {
        self.config.content
    }

    /// The time limit of one export request.
    ///
    /// ```
    /// let otel = prompty::otel::OtelBackend::new("http://c:4318");
    /// assert_eq!(otel.timeout(), prompty::otel::DEFAULT_TIMEOUT);
    /// ```
    pub fn timeout(&self) -> Duration {
        self.config.timeout
    }

    /// How many spans were queued, exported, failed and dropped so far.
    ///
    /// ```
    /// assert_eq!(prompty::otel::OtelBackend::new("http://c:4318").stats().dropped, 0);
    /// ```
    pub fn stats(&self) -> OtelStats {
        let c = &self.counters;
        OtelStats {
            queued: c.queued.load(Ordering::Acquire),
            exported: c.exported.load(Ordering::Acquire),
            failed: c.failed.load(Ordering::Acquire),
            dropped: c.dropped.load(Ordering::Acquire),
        }
    }

    /// Sends what is queued now and waits until it was sent or failed, at most the request time
    /// limit plus one second per batch queued; whether everything was settled in time. It blocks
    /// the calling thread: from async code, call it through `spawn_blocking`.
    ///
    /// ```
    /// // Nothing queued: returns at once.
    /// assert!(prompty::otel::OtelBackend::new("http://127.0.0.1:9").flush());
    /// ```
    pub fn flush(&self) -> bool {
        let batches = (self.counters.queued.load(Ordering::Acquire) as usize).min(QUEUE_CAPACITY) / MAX_BATCH + 1;
        let batches = u32::try_from(batches).unwrap_or(u32::MAX);
        self.flush_within(self.config.timeout.saturating_add(Duration::from_secs(1)).saturating_mul(batches))
    }

    /// [`OtelBackend::flush`] waiting at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(prompty::otel::OtelBackend::new("http://127.0.0.1:9").flush_within(Duration::from_secs(1)));
    /// ```
    pub fn flush_within(&self, timeout: Duration) -> bool {
        let Some(Some(worker)) = self.worker.get() else { return true };
        let target = self.counters.queued.load(Ordering::Acquire);
        worker.flush.notify_one();
        self.counters.wait(timeout, |settled, stopped| settled >= target || stopped)
    }

    /// Stops taking spans, sends what is queued (waiting at most `timeout`) and stops the export
    /// thread; whether it stopped in time. Spans that end afterwards are dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// let otel = prompty::otel::OtelBackend::new("http://127.0.0.1:9");
    /// assert!(otel.shutdown(Duration::from_secs(1)));
    /// ```
    pub fn shutdown(&self, timeout: Duration) -> bool {
        let Some(Some(worker)) = self.worker.get() else { return true };
        // Closing the queue ends the thread once it has sent what the queue holds.
        drop(worker.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        let stopped = self.counters.wait(timeout, |_, stopped| stopped);
        if stopped {
            if let Some(thread) = worker.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = thread.join();
            }
        }
        stopped
    }

    /// The export thread, started on first use; `None` when it could not be started.
    fn worker(&self) -> Option<&Worker> {
        self.worker
            .get_or_init(|| {
                let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
                let flush = Arc::new(Notify::new());
                let (config, counters, notify) = (Arc::clone(&self.config), Arc::clone(&self.counters), flush.clone());
                let spawned = std::thread::Builder::new()
                    .name("prompty-otel".into())
                    .spawn(move || export_thread(&config, rx, &notify, &counters));
                match spawned {
                    Ok(thread) => Some(Worker { tx: Mutex::new(Some(tx)), flush, thread: Mutex::new(Some(thread)) }),
                    Err(e) => {
                        tracing::warn!("cannot start the OpenTelemetry export thread: {e}; spans are dropped");
                        None
                    }
                }
            })
            .as_ref()
    }
}

impl Drop for OtelBackend {
    fn drop(&mut self) {
        self.shutdown(DROP_TIMEOUT);
    }
}

impl TraceBackend for OtelBackend {
    fn span_ended(&self, span: &FinishedSpan) {
        let Some(worker) = self.worker() else {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let sent = match &*worker.tx.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(tx) => tx.try_send(to_span_data(span, self.config.content)).is_ok(),
            None => false,
        };
        if sent {
            self.counters.queued.fetch_add(1, Ordering::AcqRel);
        } else {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `name=value` pairs separated by commas, values percent-decoded (the OTLP exporter
/// configuration's format); pairs without `=` are skipped.
fn parse_headers(list: &str) -> Vec<(String, String)> {
    list.split(',')
        .filter_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            let name = name.trim();
            (!name.is_empty()).then(|| (name.to_owned(), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// A typed array of scalars, or `None` when the items are not all strings, all booleans, all
/// integers or all numbers.
fn array(items: &[Value]) -> Option<Array> {
    if let Some(v) = items.iter().map(|v| v.as_str().map(|s| StringValue::from(s.to_owned()))).collect() {
        return Some(Array::String(v));
    }
    if let Some(v) = items.iter().map(Value::as_bool).collect() {
        return Some(Array::Bool(v));
    }
    if let Some(v) = items.iter().map(Value::as_i64).collect() {
        return Some(Array::I64(v));
    }
    items.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>().map(Array::F64)
}

/// A JSON value as an attribute value: scalars typed, arrays of one scalar type as arrays,
/// anything else as its JSON text; `None` for null.
fn any_value(v: &Value) -> Option<opentelemetry::Value> {
    Some(match v {
        Value::Null => return None,
        Value::String(s) => s.clone().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::Array(items) => match array(items) {
            Some(a) => opentelemetry::Value::Array(a),
            None => v.to_string().into(),
        },
        Value::Object(_) => v.to_string().into(),
    })
}

fn text(key: &'static str, value: String) -> KeyValue {
    KeyValue::new(key, value)
}

/// The span's name: `"{operation} {model}"` for a model call, the signature otherwise.
fn span_name(span: &FinishedSpan) -> String {
    if span.kind == SpanKind::Client {
        if let Some(name) = crate::trace::genai::client_span_name(&span.attributes) {
            return name;
        }
    }
    if span.signature.is_empty() {
        span.name.clone()
    } else {
        span.signature.clone()
    }
}

/// The instrumentation scope of every exported span: `prompty` and its version.
fn scope() -> InstrumentationScope {
    static SCOPE: OnceLock<InstrumentationScope> = OnceLock::new();
    SCOPE
        .get_or_init(|| InstrumentationScope::builder("prompty").with_version(env!("CARGO_PKG_VERSION")).build())
        .clone()
}

/// A finished span as the SDK's span data (sampled; ids and times as recorded).
fn to_span_data(span: &FinishedSpan, content: bool) -> SpanData {
    let mut attributes: Vec<KeyValue> =
        span.attributes.iter().filter_map(|(k, v)| Some(KeyValue::new(k.clone(), any_value(v)?))).collect();
    attributes.push(text("prompty.name", span.name.clone()));
    attributes.push(text("prompty.signature", span.signature.clone()));
    let mut status = Status::Unset;
    if span.failed {
        let exception = &span.result["exception"];
        if let Some(kind) = exception["type"].as_str().filter(|s| !s.is_empty()) {
            attributes.push(text("error.type", kind.to_owned()));
        }
        status = Status::error(exception["message"].as_str().unwrap_or("failed").to_owned());
    }
    if content {
        attributes.push(text("prompty.inputs", span.inputs.to_string()));
        attributes.push(text("prompty.result", span.result.to_string()));
        if span.kind == SpanKind::Client {
            if let Some(messages) = input_messages(&span.inputs) {
                attributes.push(text("gen_ai.input.messages", messages.to_string()));
            }
            if let Some(messages) = output_messages(&span.result).filter(|_| !span.failed) {
                attributes.push(text("gen_ai.output.messages", messages.to_string()));
            }
        }
    }
    SpanData {
        span_context: SpanContext::new(
            TraceId::from_bytes(span.trace_id.to_be_bytes()),
            SpanId::from_bytes(span.span_id.to_be_bytes()),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
        parent_span_id: span.parent_id.map_or(SpanId::INVALID, |p| SpanId::from_bytes(p.to_be_bytes())),
        parent_span_is_remote: false,
        span_kind: match span.kind {
            SpanKind::Client => opentelemetry::trace::SpanKind::Client,
            SpanKind::Internal => opentelemetry::trace::SpanKind::Internal,
        },
        name: Cow::Owned(span_name(span)),
        start_time: span.start,
        end_time: span.end,
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status,
        instrumentation_scope: scope(),
    }
}

/// The messages sent to the model (`{"messages": [Message...]}`) in the GenAI conventions'
/// shape: `[{role, parts: [{type: "text", content}, ...]}]`.
fn input_messages(inputs: &Value) -> Option<Value> {
    let messages = inputs.get("messages")?.as_array()?;
    let mapped = messages
        .iter()
        .map(|m| {
            let parts: Vec<Value> = match &m["content"] {
                Value::String(s) => vec![json!({"type": "text", "content": s})],
                Value::Array(parts) => parts
                    .iter()
                    .map(|p| match (p["kind"].as_str(), p.get("value")) {
                        (Some("text"), Some(text)) => json!({"type": "text", "content": text}),
                        (kind, _) => json!({"type": kind.unwrap_or("unknown")}),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            json!({"role": m["role"], "parts": parts})
        })
        .collect();
    Some(Value::Array(mapped))
}

/// The model's answer (a raw Chat Completions or Anthropic Messages response) in the GenAI
/// conventions' shape: `[{role, parts, finish_reason}]`.
fn output_messages(result: &Value) -> Option<Value> {
    if let Some(choices) = result.get("choices").and_then(Value::as_array) {
        let mapped = choices
            .iter()
            .map(|c| {
                let m = &c["message"];
                let mut parts = Vec::new();
                if let Some(text) = m["content"].as_str() {
                    parts.push(json!({"type": "text", "content": text}));
                }
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    parts.push(json!({"type": "tool_call", "id": call["id"], "name": call["function"]["name"],
                                      "arguments": call["function"]["arguments"]}));
                }
                json!({"role": m.get("role").cloned().unwrap_or_else(|| "assistant".into()), "parts": parts,
                       "finish_reason": c["finish_reason"]})
            })
            .collect();
        return Some(Value::Array(mapped));
    }
    let blocks = result.get("content").and_then(Value::as_array)?;
    let parts: Vec<Value> = blocks
        .iter()
        .map(|b| match b["type"].as_str() {
            Some("text") => json!({"type": "text", "content": b["text"]}),
            Some("tool_use") => json!({"type": "tool_call", "id": b["id"], "name": b["name"], "arguments": b["input"]}),
            other => json!({"type": other.unwrap_or("unknown")}),
        })
        .collect();
    Some(json!([{"role": "assistant", "parts": parts, "finish_reason": result["stop_reason"]}]))
}

/// What woke the export thread.
enum Wake {
    Span(Option<Box<SpanData>>),
    Flush,
    Tick,
}

async fn next(rx: &mut mpsc::Receiver<SpanData>, flush: &Notify, deadline: Option<tokio::time::Instant>) -> Wake {
    use futures_util::future::{select, Either};
    let far = tokio::time::Instant::now() + Duration::from_secs(24 * 3600);
    let recv = std::pin::pin!(rx.recv());
    let flushed = std::pin::pin!(flush.notified());
    let tick = std::pin::pin!(tokio::time::sleep_until(deadline.unwrap_or(far)));
    match select(recv, select(flushed, tick)).await {
        Either::Left((span, _)) => Wake::Span(span.map(Box::new)),
        Either::Right((Either::Left(_), _)) => Wake::Flush,
        Either::Right((Either::Right(_), _)) => Wake::Tick,
    }
}

/// The body of the export thread: batches the queue and posts each batch.
fn export_thread(config: &Config, mut rx: mpsc::Receiver<SpanData>, flush: &Notify, counters: &Counters) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            tracing::warn!("cannot start the OpenTelemetry export runtime: {e}; spans are dropped");
            counters.stop();
            return;
        }
    };
    runtime.block_on(async {
        let exporter = exporter(config);
        let exporter = exporter.as_ref();
        let mut batch = Vec::new();
        let mut deadline = None;
        loop {
            match next(&mut rx, flush, deadline).await {
                Wake::Span(Some(span)) => {
                    batch.push(*span);
                    deadline.get_or_insert_with(|| tokio::time::Instant::now() + BATCH_INTERVAL);
                    if batch.len() >= MAX_BATCH {
                        export(exporter, config, &mut batch, counters).await;
                        deadline = None;
                    }
                }
                Wake::Span(None) => {
                    export(exporter, config, &mut batch, counters).await;
                    break;
                }
                Wake::Flush => {
                    while let Ok(span) = rx.try_recv() {
                        batch.push(span);
                        if batch.len() >= MAX_BATCH {
                            export(exporter, config, &mut batch, counters).await;
                        }
                    }
                    export(exporter, config, &mut batch, counters).await;
                    deadline = None;
                }
                Wake::Tick => {
                    export(exporter, config, &mut batch, counters).await;
                    deadline = None;
                }
            }
        }
    });
    counters.stop();
}

/// The OTLP/HTTP exporter of the export thread, posting with the HTTP layer's client (its TLS
/// provider, `User-Agent`, and redirect rule: a redirect to another origin is refused, so the
/// export headers never reach it), with the resource (`service.name` and the SDK's
/// `telemetry.sdk.*`) set; `None` (logged) when it cannot be built. Export requests are not
/// retried: a failed batch is dropped and counted.
fn exporter(config: &Config) -> Option<opentelemetry_otlp::SpanExporter> {
    // The HTTP layer's builder (TLS provider, `User-Agent`, redirect rule) with a whole-request
    // timeout of its own: the exporter posts with the bare client, so a receiver that accepts the
    // connection and never answers must end at `config.timeout`, not hang the export thread.
    let built = http::reqwest_builder(config.timeout)
        .and_then(|builder| builder.timeout(config.timeout).build().map_err(|e| e.to_string()));
    let client = match built {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!("cannot build the OpenTelemetry exporter's HTTP client: {e}; spans are dropped");
            return None;
        }
    };
    let headers = config
        .headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
        .collect();
    let built = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(config.url.clone())
        .with_timeout(config.timeout)
        .with_headers(headers)
        .with_http_client(client)
        .build();
    match built {
        Ok(mut exporter) => {
            let resource = opentelemetry_sdk::Resource::builder_empty()
                .with_detector(Box::new(opentelemetry_sdk::resource::TelemetryResourceDetector))
                .with_service_name(config.service_name.clone())
                .build();
            exporter.set_resource(&resource);
            Some(exporter)
        }
        Err(e) => {
            let why = Secrets::from_headers(&config.headers).scrub(&e.to_string()).into_owned();
            tracing::warn!("cannot build the OpenTelemetry exporter for {}: {why}; spans are dropped", config.url);
            None
        }
    }
}

/// Posts `batch` (emptied) and settles its spans, exported or failed.
async fn export(
    exporter: Option<&opentelemetry_otlp::SpanExporter>,
    config: &Config,
    batch: &mut Vec<SpanData>,
    counters: &Counters,
) {
    if batch.is_empty() {
        return;
    }
    let spans = std::mem::take(batch);
    let n = spans.len() as u64;
    let started = Instant::now();
    let outcome = match exporter {
        None => Err("no OTLP exporter".to_owned()),
        Some(exporter) => exporter.export(spans).await.map_err(|e| e.to_string()),
    };
    match outcome {
        Ok(()) => {
            counters.exported.fetch_add(n, Ordering::AcqRel);
        }
        Err(why) => {
            let why = Secrets::from_headers(&config.headers).scrub(&why).into_owned();
            counters.failed.fetch_add(n, Ordering::AcqRel);
            tracing::warn!(
                url = %config.url,
                spans = n,
                "cannot export {n} spans to {} (after {} ms): {why}; they are dropped",
                config.url,
                started.elapsed().as_millis()
            );
        }
    }
    counters.settle(n);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use std::time::{SystemTime, UNIX_EPOCH};

    /// Nanoseconds since the Unix epoch.
    fn unix_nanos(t: SystemTime) -> u128 {
        t.duration_since(UNIX_EPOCH).unwrap().as_nanos()
    }

    #[test]
    fn headers_and_endpoints_from_the_environment() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(OtelBackend::from_vars(vars(&[])).traces_url(), "http://localhost:4318/v1/traces");
        let base = OtelBackend::from_vars(vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318/")]));
        assert_eq!(base.traces_url(), "https://c:4318/v1/traces");
        let full = OtelBackend::from_vars(vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t/custom"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=abc%3D%3D, x-team = red ,broken"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-team=blue"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_SERVICE_NAME", "svc"),
        ]));
        assert_eq!(full.traces_url(), "https://t/custom");
        assert_eq!(full.config.headers["api-key"], "abc==");
        assert!(full.config.headers["api-key"].is_sensitive());
        assert_eq!(full.config.headers["x-team"], "blue");
        assert_eq!(full.config.headers.len(), 2);
        assert_eq!(full.timeout(), Duration::from_millis(2500));
        assert_eq!(full.service_name(), "svc");
        let debug = format!("{full:?}");
        assert!(debug.contains("api-key") && !debug.contains("abc"), "{debug}");
    }

    #[test]
    fn a_span_maps_to_a_typed_otlp_span() {
        let mut attributes = Map::new();
        for (k, v) in [
            ("gen_ai.operation.name", json!("chat")),
            ("gen_ai.request.model", json!("gpt-4o")),
            ("gen_ai.request.temperature", json!(0.5)),
            ("gen_ai.usage.input_tokens", json!(7)),
            ("gen_ai.response.finish_reasons", json!(["stop"])),
            ("flag", json!(true)),
            ("nested", json!({"a": [1, {"b": 2}]})),
            ("nothing", Value::Null),
        ] {
            attributes.insert(k.into(), v);
        }
        let span = FinishedSpan {
            trace_id: 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10,
            span_id: 0x1112_1314_1516_1718,
            parent_id: Some(7),
            name: "execute".into(),
            signature: "prompty.execute".into(),
            kind: SpanKind::Client,
            start: UNIX_EPOCH + Duration::from_nanos(1_500),
            end: UNIX_EPOCH + Duration::from_nanos(2_500),
            inputs: json!({"messages": [{"role": "user", "content": [{"kind": "text", "value": "Hi"}]}]}),
            result: json!({"exception": {"type": "Execution", "message": "boom"}}),
            failed: true,
            attributes,
            ..Default::default()
        };
        let p = to_span_data(&span, false);
        assert_eq!(p.name, "chat gpt-4o");
        assert_eq!(p.span_kind, opentelemetry::trace::SpanKind::Client);
        assert_eq!(p.span_context.trace_id().to_bytes().to_vec(), (1..=16).collect::<Vec<u8>>());
        assert_eq!(p.span_context.span_id().to_bytes().to_vec(), (0x11..=0x18).collect::<Vec<u8>>());
        assert!(p.span_context.is_sampled());
        assert_eq!(p.parent_span_id.to_bytes(), 7u64.to_be_bytes());
        assert_eq!((unix_nanos(p.start_time), unix_nanos(p.end_time)), (1_500, 2_500));
        assert_eq!(p.status, Status::error("boom"));
        assert_eq!(p.instrumentation_scope.name(), "prompty");
        let get = |k: &str| p.attributes.iter().find(|a| a.key.as_str() == k).map(|a| a.value.clone());
        assert_eq!(get("gen_ai.request.temperature"), Some(0.5.into()));
        assert_eq!(get("gen_ai.usage.input_tokens"), Some(7i64.into()));
        assert_eq!(get("flag"), Some(true.into()));
        assert_eq!(
            get("gen_ai.response.finish_reasons"),
            Some(opentelemetry::Value::Array(Array::String(vec!["stop".into()])))
        );
        assert_eq!(get("nested"), Some(r#"{"a":[1,{"b":2}]}"#.into()));
        assert_eq!(get("nothing"), None);
        assert_eq!(get("error.type"), Some("Execution".into()));
        assert_eq!(get("prompty.signature"), Some("prompty.execute".into()));
        assert_eq!(get("prompty.inputs"), None);
        let with = to_span_data(&span, true);
        let get = |k: &str| with.attributes.iter().find(|a| a.key.as_str() == k).map(|a| a.value.clone());
        assert_eq!(
            get("gen_ai.input.messages"),
            Some(r#"[{"role":"user","parts":[{"type":"text","content":"Hi"}]}]"#.into())
        );
    }

    #[test]
    fn arrays_keep_one_type_or_become_json_text() {
        let v = |j: Value| any_value(&j);
        assert_eq!(v(json!([1, 2])), Some(opentelemetry::Value::Array(Array::I64(vec![1, 2]))));
        assert_eq!(v(json!([1, 2.5])), Some(opentelemetry::Value::Array(Array::F64(vec![1.0, 2.5]))));
        assert_eq!(v(json!([true])), Some(opentelemetry::Value::Array(Array::Bool(vec![true]))));
        assert_eq!(v(json!(["a", 1])), Some(r#"["a",1]"#.into()));
    }

    #[test]
    fn internal_spans_are_named_after_their_signature() {
        let span = FinishedSpan { name: "turn 1".into(), signature: "prompty.turn".into(), ..Default::default() };
        let p = to_span_data(&span, false);
        assert_eq!(
            (p.name.as_ref(), p.span_kind, p.status),
            ("prompty.turn", opentelemetry::trace::SpanKind::Internal, Status::Unset)
        );
        assert_eq!(p.parent_span_id, SpanId::INVALID);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("Bearer%20a%2Cb%zz%4"), "Bearer a,b%zz%4");
    }
}
