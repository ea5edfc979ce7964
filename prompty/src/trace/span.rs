//! Spans: started around a stage, ended with its result, nested through a per-thread "current
//! span" that sync code sets around a call and async code sets around each poll of its future
//! (so the parent survives `.await` and futures polled side by side, never a shared stack).

use super::redaction::{add_usage, redact_in_place, usage_of};
use super::{any_backend, emit, FinishedSpan, SpanKind, MAX_FRAMES};
use crate::{Error, Result};
use futures_util::future::Either;
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::SystemTime;

/// What a span is: its name, signature, kind and the attributes known when it starts.
pub(crate) struct Stage {
    pub(crate) name: Cow<'static, str>,
    pub(crate) signature: &'static str,
    pub(crate) kind: SpanKind,
}

/// The attributes of a span (`gen_ai.*`), filled by the closures that record its inputs and
/// result, which only run when something listens.
pub(crate) type Attributes = Map<String, Value>;

impl Stage {
    /// An internal stage: `Stage::new("prepare", "prompty.prepare")`.
    pub(crate) fn new(name: impl Into<Cow<'static, str>>, signature: &'static str) -> Stage {
        Stage { name: name.into(), signature, kind: SpanKind::Internal }
    }

    /// A call to a model provider (its inputs closure adds the request attributes).
    pub(crate) fn client(name: &'static str, signature: &'static str) -> Stage {
        Stage { name: Cow::Borrowed(name), signature, kind: SpanKind::Client }
    }
}

/// A span's place in the tree, and what its children hand up when they end.
pub(crate) struct Node {
    trace_id: u128,
    span_id: u64,
    record: bool,
    children: Mutex<Children>,
}

#[derive(Default)]
struct Children {
    frames: Vec<Value>,
    dropped: usize,
    usage: Map<String, Value>,
    /// Attributes added while the span runs ([`annotate`]).
    attributes: Attributes,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Node>>> = const { RefCell::new(None) };
}

fn current() -> Option<Arc<Node>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Adds an attribute to the span current now, recorded when it ends: what a stage learns while
/// it runs (a structured-output fallback, ...). Nothing happens when no span records.
#[cfg(any(feature = "openai", feature = "local"))]
pub(crate) fn annotate(key: &str, value: impl FnOnce() -> Value) {
    CURRENT.with(|c| {
        if let Some(node) = c.borrow().as_ref().filter(|n| n.record) {
            node.children.lock().unwrap_or_else(|e| e.into_inner()).attributes.insert(key.to_owned(), value());
        }
    });
}

/// Sets the current span for the life of the guard.
struct SetCurrent(Option<Arc<Node>>);

impl SetCurrent {
    fn new(node: Option<Arc<Node>>) -> SetCurrent {
        SetCurrent(CURRENT.with(|c| c.replace(node)))
    }
}

impl Drop for SetCurrent {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

fn next_span_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static BASE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let base = *BASE.get_or_init(|| rand::random::<u64>() | 1);
    // Distinct for 2^64 spans; never 0 (OpenTelemetry's invalid id).
    match base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15)) {
        0 => 1,
        id => id,
    }
}

/// The `tracing` span of a stage: named after its signature, so a subscriber can filter on it.
///
/// Every span declares the fields its attributes are recorded into when they are known (see
/// [`record_attributes`], [`record_failure`]): on every span `error.type` and the status fields `tracing-opentelemetry`
/// reads (`otel.status_code`, `otel.status_description`); on the model call (`prompty.execute`,
/// `prompty.stream`) `otel.name` (`"chat gpt-4o"`), `otel.kind = "client"` and the GenAI
/// attributes of [`super::genai`]; on a tool call `gen_ai.operation.name`, `gen_ai.tool.name` and
/// `gen_ai.tool.call.id`.
fn tracing_span(signature: &'static str, name: &str) -> tracing::Span {
    use tracing::field::Empty;
    macro_rules! span {
        ($sig:literal $(, $($field:tt)*)?) => {
            tracing::info_span!(
                $sig,
                prompty.name = name,
                inputs = Empty,
                result = Empty,
                "error.type" = Empty,
                otel.status_code = Empty,
                otel.status_description = Empty
                $(, $($field)*)?
            )
        };
    }
    macro_rules! model_call {
        ($sig:literal) => {
            span!(
                $sig,
                otel.name = Empty,
                otel.kind = "client",
                gen_ai.operation.name = Empty,
                gen_ai.provider.name = Empty,
                gen_ai.request.model = Empty,
                gen_ai.request.temperature = Empty,
                gen_ai.request.max_tokens = Empty,
                gen_ai.request.top_p = Empty,
                gen_ai.request.top_k = Empty,
                gen_ai.request.frequency_penalty = Empty,
                gen_ai.request.presence_penalty = Empty,
                gen_ai.request.seed = Empty,
                gen_ai.request.stop_sequences = Empty,
                gen_ai.response.id = Empty,
                gen_ai.response.model = Empty,
                gen_ai.response.finish_reasons = Empty,
                gen_ai.usage.input_tokens = Empty,
                gen_ai.usage.output_tokens = Empty
            )
        };
    }
    match signature {
        "prompty.load" => span!("prompty.load"),
        "prompty.prepare" => span!("prompty.prepare"),
        "prompty.render" => span!("prompty.render"),
        "prompty.parse" => span!("prompty.parse"),
        "prompty.execute" => model_call!("prompty.execute"),
        "prompty.process" => span!("prompty.process"),
        "prompty.run" => span!("prompty.run"),
        "prompty.invoke" => span!("prompty.invoke"),
        "prompty.turn" => span!("prompty.turn"),
        "prompty.tool" => {
            span!("prompty.tool", gen_ai.operation.name = Empty, gen_ai.tool.name = Empty, gen_ai.tool.call.id = Empty)
        }
        "prompty.stream" => model_call!("prompty.stream"),
        _ => span!("prompty.span", prompty.signature = signature),
    }
}

/// Records attributes (redacted) into the fields of a `tracing` span that declare them: strings,
/// integers, numbers and booleans as they are, arrays and objects as JSON text; an attribute with
/// no field of that name is skipped.
fn record_attributes<'a>(tspan: &tracing::Span, attributes: impl Iterator<Item = (&'a String, &'a Value)>) {
    for (key, value) in attributes {
        let key = key.as_str();
        match value {
            Value::String(s) => tspan.record(key, s.as_str()),
            Value::Bool(b) => tspan.record(key, *b),
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => tspan.record(key, i),
                (None, Some(f)) => tspan.record(key, f),
                (None, None) => tspan.record(key, tracing::field::display(n)),
            },
            Value::Null => tspan,
            Value::Array(_) | Value::Object(_) => tspan.record(key, tracing::field::display(value)),
        };
    }
}

/// Records a failure into a `tracing` span: `error.type` and the status fields
/// `tracing-opentelemetry` reads (`otel.status_code = "error"`, `otel.status_description`).
fn record_failure(tspan: &tracing::Span, result: &Value) {
    let exception = &result["exception"];
    if let Some(kind) = exception["type"].as_str().filter(|s| !s.is_empty()) {
        tspan.record("error.type", kind);
    }
    tspan.record("otel.status_code", "error");
    tspan.record("otel.status_description", exception["message"].as_str().unwrap_or("failed"));
}

/// A span that has started and not ended.
pub(crate) struct Active {
    stage: Stage,
    node: Arc<Node>,
    parent: Option<Arc<Node>>,
    tspan: tracing::Span,
    start: SystemTime,
    inputs: Value,
    attributes: Attributes,
    /// The attributes recorded into the `tracing` span when it started (those known then).
    opened_with: Vec<String>,
}

/// Runs `f` to get a value for a trace: secrets redacted by type and by key.
fn recorded(f: impl FnOnce() -> Value) -> Value {
    let mut v = crate::Secret::redacted(f);
    redact_in_place(&mut v);
    v
}

impl Active {
    /// Starts a span when anything listens (a backend, or a `tracing` subscriber interested in
    /// it); `None` costs nothing more.
    pub(crate) fn start(stage: Stage, inputs: impl FnOnce(&mut Attributes) -> Value) -> Option<Active> {
        // The generic part is only the call of `inputs`: the rest is compiled once, not once per
        // caller (see `open` and `opened`).
        let mut active = Active::open(stage)?;
        active.inputs = recorded(|| inputs(&mut active.attributes));
        Some(active.opened())
    }

    /// The span without its inputs, or `None` when nothing listens.
    fn open(mut stage: Stage) -> Option<Active> {
        let record = any_backend();
        // Nothing listens: no backend, and no subscriber takes INFO spans (one atomic load each).
        if !record && !tracing::level_enabled!(tracing::Level::INFO) {
            return None;
        }
        // The name may come from the prompt (a tool's, an agent's): no secret value in it.
        if let Cow::Owned(name) = crate::Secret::scrub(&stage.name) {
            stage.name = Cow::Owned(name);
        }
        let tspan = tracing_span(stage.signature, &stage.name);
        if !record && tspan.is_disabled() {
            return None;
        }
        let parent = current();
        let trace_id = match &parent {
            Some(p) => p.trace_id,
            None => rand::random::<u128>() | 1,
        };
        let node = Arc::new(Node {
            trace_id,
            span_id: next_span_id(),
            record: record || parent.as_ref().is_some_and(|p| p.record),
            children: Mutex::new(Children::default()),
        });
        Some(Active {
            stage,
            node,
            parent,
            tspan,
            start: SystemTime::UNIX_EPOCH,
            inputs: Value::Null,
            attributes: Attributes::new(),
            opened_with: Vec::new(),
        })
    }

    /// The span once its inputs are recorded: they go to the `tracing` span too.
    fn opened(mut self) -> Active {
        self.start = SystemTime::now();
        if !self.tspan.is_disabled() {
            if super::tracing_content() {
                self.tspan.record("inputs", tracing::field::display(&self.inputs));
            }
            // Recorded before the span is entered: `tracing-opentelemetry` takes the span's name
            // and kind only until then.
            let mut known = Value::Object(std::mem::take(&mut self.attributes));
            redact_in_place(&mut known);
            if let Value::Object(known) = known {
                self.attributes = known;
            }
            record_attributes(&self.tspan, self.attributes.iter());
            if self.stage.kind == SpanKind::Client {
                if let Some(name) = super::genai::client_span_name(&self.attributes) {
                    self.tspan.record("otel.name", name.as_str());
                }
            }
            self.opened_with = self.attributes.keys().cloned().collect();
        }
        self
    }

    /// Runs sync code inside the span.
    fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        let _current = SetCurrent::new(Some(Arc::clone(&self.node)));
        let _entered = self.tspan.enter();
        f()
    }

    /// Ends the span with the outcome of its work.
    pub(crate) fn finish<T>(mut self, out: &Result<T>, result: impl FnOnce(&T, &mut Map<String, Value>) -> Value) {
        let end = SystemTime::now();
        // As in `start`, only the call of `result` is generic.
        let (result, failed) = match out {
            Ok(v) => (recorded(|| result(v, &mut self.attributes)), false),
            Err(e) => (exception(e), true),
        };
        self.close(end, result, failed);
    }

    /// Ends the span with its recorded result: to the `tracing` span, the backends and the parent.
    fn close(mut self, end: SystemTime, result: Value, failed: bool) {
        let children = match self.node.record {
            true => std::mem::take(&mut *self.node.children.lock().unwrap_or_else(|e| e.into_inner())),
            false => Children::default(),
        };
        self.attributes.extend(children.attributes);
        let mut attrs = Value::Object(self.attributes);
        redact_in_place(&mut attrs);
        let attributes = match attrs {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        if !self.tspan.is_disabled() {
            if super::tracing_content() {
                self.tspan.record("result", tracing::field::display(&result));
            }
            record_attributes(&self.tspan, attributes.iter().filter(|(k, _)| !self.opened_with.contains(k)));
            if failed {
                record_failure(&self.tspan, &result);
            }
        }
        if !self.node.record {
            return;
        }
        let mut usage = usage_of(&result);
        add_usage(&mut usage, &children.usage);
        let span = FinishedSpan {
            trace_id: self.node.trace_id,
            span_id: self.node.span_id,
            parent_id: self.parent.as_ref().map(|p| p.span_id),
            name: self.stage.name.into_owned(),
            signature: self.stage.signature.to_owned(),
            kind: self.stage.kind,
            start: self.start,
            end,
            inputs: self.inputs,
            result,
            failed,
            attributes,
            usage,
            frames: children.frames,
            dropped_frames: children.dropped,
        };
        emit(&span);
        if let Some(parent) = &self.parent {
            let mut up = parent.children.lock().unwrap_or_else(|e| e.into_inner());
            add_usage(&mut up.usage, &span.usage);
            if up.frames.len() < MAX_FRAMES {
                up.frames.push(span.into_frame());
            } else {
                up.dropped += 1;
            }
        }
    }
}

/// The `result` of a failed span.
fn exception(e: &Error) -> Value {
    let debug = format!("{e:?}");
    let kind: String = debug.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    let mut v = serde_json::json!({"exception": {"type": kind, "message": e.to_string(), "traceback": Value::Null}});
    redact_in_place(&mut v);
    v
}

/// A future run inside a span: the span is current during each of its polls.
struct Scoped<F> {
    node: Option<Arc<Node>>,
    tspan: tracing::Span,
    fut: Pin<Box<F>>,
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _current = SetCurrent::new(this.node.clone());
        let _entered = this.tspan.enter();
        this.fut.as_mut().poll(cx)
    }
}

/// A span opened by hand: for a stage whose work is not one future or closure (an iteration of
/// the turn engine, whose model call and tools are separate calls of its ports). Work runs inside
/// it through [`OpenSpan::within`]; [`OpenSpan::finish`] ends it. Dropped unfinished, it records
/// nothing (like a span whose future was dropped).
pub(crate) struct OpenSpan {
    active: Active,
}

impl OpenSpan {
    /// Starts a span under the span current now, when anything listens (see [`in_span`]).
    pub(crate) fn start(stage: Stage, inputs: impl FnOnce(&mut Attributes) -> Value) -> Option<OpenSpan> {
        Active::start(stage, inputs).map(|active| OpenSpan { active })
    }

    /// Where work runs inside this span: hand it to [`within`].
    pub(crate) fn place(&self) -> SpanPlace {
        SpanPlace { node: Arc::clone(&self.active.node), tspan: self.active.tspan.clone() }
    }

    /// Ends the span with the outcome of its work.
    pub(crate) fn finish<T>(self, out: &Result<T>, result: impl FnOnce(&T, &mut Map<String, Value>) -> Value) {
        self.active.finish(out, result);
    }
}

/// The place of an [`OpenSpan`] in the tree, cheap to clone.
#[derive(Clone)]
pub(crate) struct SpanPlace {
    node: Arc<Node>,
    tspan: tracing::Span,
}

/// Runs `fut` inside the span of `place` (its spans are that span's children); with no place,
/// `fut` itself.
pub(crate) fn within<F: Future>(place: Option<SpanPlace>, fut: F) -> impl Future<Output = F::Output> {
    match place {
        None => Either::Left(fut),
        Some(SpanPlace { node, tspan }) => Either::Right(Scoped { node: Some(node), tspan, fut: Box::pin(fut) }),
    }
}

/// Runs `f` in a span of `stage`; `inputs` and `result` are only called when something listens.
/// An error leaves it [`Error::redacted`] (listened to or not): a secret that landed in a field
/// no one expected is not in it.
pub(crate) fn in_span<T>(
    stage: Stage,
    inputs: impl FnOnce(&mut Attributes) -> Value,
    f: impl FnOnce() -> Result<T>,
    result: impl FnOnce(&T, &mut Map<String, Value>) -> Value,
) -> Result<T> {
    let Some(active) = Active::start(stage, inputs) else { return f().map_err(Error::redacted) };
    let out = active.enter(f).map_err(Error::redacted);
    active.finish(&out, result);
    out
}

/// [`in_span`] whose work depends on whether anything listens: `quiet` runs when nothing does
/// (and costs what it costs without a span), `heard` when something does, so it can compute what
/// only the trace needs (recorded by `result` as the span's attributes); `into` makes its value
/// the caller's.
pub(crate) fn in_span_heard<T, U>(
    stage: Stage,
    inputs: impl FnOnce(&mut Attributes) -> Value,
    quiet: impl FnOnce() -> Result<T>,
    heard: impl FnOnce() -> Result<U>,
    result: impl FnOnce(&U, &mut Map<String, Value>) -> Value,
    into: impl FnOnce(U) -> T,
) -> Result<T> {
    let Some(active) = Active::start(stage, inputs) else { return quiet().map_err(Error::redacted) };
    let out = active.enter(heard).map_err(Error::redacted);
    active.finish(&out, result);
    out.map(into)
}

/// Async form of [`in_span_heard`]: `quiet` and `heard` make the future to run.
pub(crate) async fn in_span_heard_async<T, U, Q, H>(
    stage: Stage,
    inputs: impl FnOnce(&mut Attributes) -> Value,
    quiet: impl FnOnce() -> Q,
    heard: impl FnOnce() -> H,
    result: impl FnOnce(&U, &mut Map<String, Value>) -> Value,
    into: impl FnOnce(U) -> T,
) -> Result<T>
where
    Q: Future<Output = Result<T>>,
    H: Future<Output = Result<U>>,
{
    let Some(active) = Active::start(stage, inputs) else { return quiet().await.map_err(Error::redacted) };
    let scoped = Scoped { node: Some(Arc::clone(&active.node)), tspan: active.tspan.clone(), fut: Box::pin(heard()) };
    let out = scoped.await.map_err(Error::redacted);
    active.finish(&out, result);
    out.map(into)
}

/// Runs `fut` in a span of `stage` (see [`in_span`]). The span starts now, under the span
/// current now (call it where the future is awaited); when nothing listens, `fut` itself is
/// returned, with no state added (only its error [`Error::redacted`]).
pub(crate) fn in_span_async<T, F: Future<Output = Result<T>>>(
    stage: Stage,
    inputs: impl FnOnce(&mut Attributes) -> Value,
    fut: F,
    result: impl FnOnce(&T, &mut Map<String, Value>) -> Value,
) -> impl Future<Output = Result<T>> {
    match Active::start(stage, inputs) {
        None => Either::Left(futures_util::FutureExt::map(fut, |out| out.map_err(Error::redacted))),
        // Boxed: the future of a recorded span stays the size of `fut` plus a pointer.
        Some(active) => Either::Right(Box::pin(async move {
            let scoped =
                Scoped { node: Some(Arc::clone(&active.node)), tspan: active.tspan.clone(), fut: Box::pin(fut) };
            let out = scoped.await.map_err(Error::redacted);
            active.finish(&out, result);
            out
        })),
    }
}

/// `fut` with the current span (ours and `tracing`'s) carried along: for a future that another
/// thread will run (a blocking call's helper thread, a spawned task).
pub(crate) fn carry<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    Scoped { node: current(), tspan: tracing::Span::current(), fut: Box::pin(fut) }
}

/// `f` with the current span (ours and `tracing`'s) carried along: for a closure another thread
/// will run (`spawn_blocking`).
pub(crate) fn carry_fn<T>(f: impl FnOnce() -> T) -> impl FnOnce() -> T {
    let (node, tspan) = (current(), tracing::Span::current());
    move || {
        let _current = SetCurrent::new(node);
        tspan.in_scope(f)
    }
}

/// Runs `f` as a span named `name` (signature `name` too) for every backend and subscriber, with
/// `inputs` and its result recorded (redacted): for your own steps around prompty's.
///
/// ```
/// let n = prompty::trace::traced("count words", &serde_json::json!({"text": "a b c"}), || Ok(3))?;
/// assert_eq!(n, 3);
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn traced<T: Serialize, I: Serialize + ?Sized>(
    name: &'static str,
    inputs: &I,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    in_span(
        Stage::new(name, name),
        |_| serde_json::to_value(inputs).unwrap_or(Value::Null),
        f,
        |v, _| serde_json::to_value(v).unwrap_or(Value::Null),
    )
}

/// Async form of [`traced`]: the span is the parent of every span started while `fut` runs.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let n = prompty::trace::traced_async("fetch", &"id-1", async { Ok(7) }).await?;
/// assert_eq!(n, 7);
/// # Ok::<(), prompty::Error>(()) }).unwrap();
/// ```
pub async fn traced_async<T: Serialize, I: Serialize + ?Sized>(
    name: &'static str,
    inputs: &I,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    let inputs = |_: &mut Attributes| serde_json::to_value(inputs).unwrap_or(Value::Null);
    in_span_async(Stage::new(name, name), inputs, fut, |v, _| serde_json::to_value(v).unwrap_or(Value::Null)).await
}

/// What the span of a traced stream records of one item (see [`traced_stream`]): the stream's item
/// type stays the caller's, so this layer needs no stream type of its own.
pub(crate) enum Seen<'a> {
    /// A piece of the answer's text.
    Text(&'a str),
    /// Token usage, added up over the stream.
    Usage(&'a Map<String, Value>),
    /// A whole tool call, as recorded.
    ToolCall(Value),
    /// The stream failed: the span ends in this error.
    Failure(&'a str),
    /// Nothing to record but the count.
    Other,
}

/// A stream of items recorded as one span, ended when the stream is exhausted or dropped.
struct TracedStream<T> {
    inner: Pin<Box<dyn futures_core::Stream<Item = T> + Send>>,
    see: for<'a> fn(&'a T) -> Seen<'a>,
    active: Option<Active>,
    text: String,
    usage: Map<String, Value>,
    tool_calls: Vec<Value>,
    failure: Option<String>,
    chunks: usize,
}

impl<T> TracedStream<T> {
    fn end(&mut self, complete: bool) {
        let Some(active) = self.active.take() else { return };
        let mut summary =
            serde_json::json!({"text": std::mem::take(&mut self.text), "chunks": self.chunks, "complete": complete});
        if !self.usage.is_empty() {
            summary["usage"] = Value::Object(std::mem::take(&mut self.usage));
        }
        if !self.tool_calls.is_empty() {
            summary["tool_calls"] = Value::Array(std::mem::take(&mut self.tool_calls));
        }
        let out = match self.failure.take() {
            Some(message) => Err(Error::Execution { message }),
            None => Ok(summary),
        };
        active.finish(&out, |v, _| v.clone());
    }
}

impl<T> futures_core::Stream for TracedStream<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let polled = self.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(item)) => {
                self.chunks += 1;
                match (self.see)(item) {
                    Seen::Text(t) if self.text.len() + t.len() <= super::MAX_TRACE_STRING => self.text.push_str(t),
                    Seen::Usage(u) => add_usage(&mut self.usage, u),
                    Seen::ToolCall(call) => self.tool_calls.push(call),
                    Seen::Failure(message) => self.failure = Some(message.to_owned()),
                    Seen::Text(_) | Seen::Other => {}
                }
            }
            Poll::Ready(None) => self.end(true),
            Poll::Pending => {}
        }
        polled
    }
}

impl<T> Drop for TracedStream<T> {
    fn drop(&mut self) {
        self.end(false);
    }
}

/// `stream` recorded as a span of `stage` (started now, under the current span), ended once:
/// when the stream is exhausted, or when it is dropped before (`complete: false`). The result
/// holds the text, the usage, the tool calls and the number of items, as `see` reads them.
pub(crate) fn traced_stream<T: Send + 'static>(
    stage: Stage,
    inputs: impl FnOnce(&mut Attributes) -> Value,
    stream: Pin<Box<dyn futures_core::Stream<Item = T> + Send>>,
    see: for<'a> fn(&'a T) -> Seen<'a>,
) -> Pin<Box<dyn futures_core::Stream<Item = T> + Send>> {
    match Active::start(stage, inputs) {
        None => stream,
        Some(active) => Box::pin(TracedStream {
            inner: stream,
            see,
            active: Some(active),
            text: String::new(),
            usage: Map::new(),
            tool_calls: Vec::new(),
            failure: None,
            chunks: 0,
        }),
    }
}
