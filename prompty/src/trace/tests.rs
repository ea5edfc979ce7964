use super::*;
use crate::{Agent, BoxFuture, Error, Executor, Message, Result, TurnOptions};
use futures_util::StreamExt;
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Keeps every finished span; tests pick theirs by trace id (backends are process-wide and tests
/// run side by side).
#[derive(Default)]
struct Collect(Mutex<Vec<FinishedSpan>>);

impl TraceBackend for Collect {
    fn span_ended(&self, span: &FinishedSpan) {
        self.0.lock().unwrap().push(span.clone());
    }
}

impl Collect {
    /// The spans of the trace whose root is named `root`.
    fn trace(&self, root: &str) -> Vec<FinishedSpan> {
        let spans = self.0.lock().unwrap();
        let id = spans.iter().find(|s| s.parent_id.is_none() && s.name == root).map(|s| s.trace_id);
        let id = id.unwrap_or_else(|| panic!("no root span `{root}`"));
        spans.iter().filter(|s| s.trace_id == id).cloned().collect()
    }
}

/// Registers a collector under a name of its own for the life of the guard.
struct Collecting(String, Arc<Collect>);

impl Collecting {
    fn new(name: &str) -> Collecting {
        let c = Arc::new(Collect::default());
        add(name, c.clone());
        Collecting(name.to_owned(), c)
    }
}

impl Drop for Collecting {
    fn drop(&mut self) {
        remove(&self.0);
    }
}

/// A model that answers from a script of chat-completion responses.
struct Script(Mutex<VecDeque<Value>>);

impl Executor for Script {
    fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        let next = self.0.lock().unwrap().pop_front();
        Box::pin(async move { next.ok_or_else(|| Error::Execution { message: "the script ran out".into() }) })
    }
}

fn scripted(provider: &str, responses: Vec<Value>) -> Agent {
    crate::register_executor(provider, Script(Mutex::new(responses.into())));
    crate::register_processor(provider, crate::providers::openai::OpenAiProcessor);
    let text = format!("---\nmodel: {{id: m, provider: {provider}}}\ninputs: [q]\n---\nuser:\n{{{{ q }}}}");
    crate::load_str(&text, ".", "traced.prompty").unwrap()
}

fn tool_calls(calls: &[(&str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}}))
        .collect();
    json!({"id": "r1", "model": "m", "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
}

fn answer(text: &str) -> Value {
    json!({"id": "r2", "model": "m", "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}})
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn by_name<'a>(spans: &'a [FinishedSpan], name: &str) -> &'a FinishedSpan {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no span `{name}` in {:?}", names_of(spans)))
}

fn names_of(spans: &[FinishedSpan]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

/// A turn whose model asks for two tools at once, run in parallel: each tool span's parent is the
/// iteration that asked for it, interleaved as they are.
#[test]
fn a_turn_with_two_parallel_tools_nests_every_span_under_its_parent() {
    let c = Collecting::new("tree");
    let agent = scripted("trace-tree", vec![tool_calls(&[("a", "slow"), ("b", "fast")]), answer("done")]);
    let slow = crate::tool_fn(|_| async {
        for _ in 0..5 {
            tokio::task::yield_now().await;
        }
        Ok(json!("slow result"))
    });
    let fast = crate::tool_fn(|_| async { Ok(json!("fast result")) });
    let options = TurnOptions::new().parallel_tool_calls(true).tool("slow", slow).tool("fast", fast);
    let out: String = rt()
        .block_on(traced_async("tree root", &json!({}), crate::turn_async(&agent, &json!({"q": "go"}), options)))
        .unwrap();
    assert_eq!(out, "done");
    let spans = c.1.trace("tree root");
    let root = by_name(&spans, "tree root");
    let turn = by_name(&spans, "turn");
    let first = by_name(&spans, "turn 1");
    let second = by_name(&spans, "turn 2");
    assert_eq!(turn.parent_id, Some(root.span_id));
    assert_eq!((first.parent_id, second.parent_id), (Some(turn.span_id), Some(turn.span_id)));
    for tool in ["slow", "fast"] {
        let t = by_name(&spans, tool);
        assert_eq!(t.signature, "prompty.tool");
        assert_eq!(t.parent_id, Some(first.span_id), "{tool}");
        assert_eq!(t.result, json!(format!("{tool} result")));
    }
    let prepare = by_name(&spans, "prepare");
    assert_eq!(prepare.parent_id, Some(turn.span_id));
    let executes: Vec<&FinishedSpan> = spans.iter().filter(|s| s.name == "execute").collect();
    assert_eq!(executes.len(), 2);
    assert_eq!(executes[0].kind, SpanKind::Client);
    assert_eq!(executes[0].parent_id, Some(first.span_id));
    assert_eq!(executes[1].parent_id, Some(second.span_id));
    assert_eq!(executes[0].attributes["gen_ai.request.model"], "m");
    assert_eq!(executes[0].attributes["gen_ai.response.finish_reasons"], json!(["tool_calls"]));
    assert_eq!(by_name(&spans, "process").kind, SpanKind::Internal);
    // The frames nest the same way.
    let frames = root.frames[0]["__frames"].as_array().unwrap();
    let iteration = frames.iter().find(|f| f["name"] == "turn 1").unwrap();
    let inner: Vec<&str> =
        iteration["__frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(inner.len(), 4, "{inner:?}");
    assert!(inner.contains(&"slow") && inner.contains(&"fast") && inner[0] == "execute", "{inner:?}");
    // Usage: both model calls summed up to the turn and the root, under the provider's names.
    assert_eq!(
        first.usage,
        json!({"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}).as_object().unwrap().clone()
    );
    let total = json!({"prompt_tokens": 14, "completion_tokens": 5, "total_tokens": 19});
    assert_eq!(Value::Object(turn.usage.clone()), total);
    assert_eq!(Value::Object(root.usage.clone()), total);
    assert_eq!(root.frame()["__usage"], total);
}

#[test]
fn a_failed_stage_records_the_error_and_the_caller_still_gets_it() {
    let c = Collecting::new("failure");
    let agent = scripted("trace-fail", vec![]);
    let err = traced("failing root", &json!({}), || crate::invoke::<String>(&agent, &json!({"q": "x"}))).unwrap_err();
    assert!(err.to_string().contains("the script ran out"), "{err}");
    let spans = c.1.trace("failing root");
    let execute = by_name(&spans, "execute");
    assert!(execute.failed);
    assert_eq!(execute.result["exception"]["type"], "Execution");
    assert_eq!(execute.result["exception"]["message"], "the script ran out");
    assert!(by_name(&spans, "invoke").failed);
    assert!(!by_name(&spans, "prepare").failed);
}

#[test]
fn secrets_never_reach_a_backend() {
    let c = Collecting::new("secrets");
    let inputs = json!({
        "q": "hi",
        "apiKey": "sk-live-1",
        "nested": {"deeper": [{"client_secret": "s3", "author": "Ann"}], "Authorization": "Bearer abc"},
        "usage": {"prompt_tokens": 3, "promptTokenCount": 4},
        "session_cookie": "c=1",
    });
    let agent = crate::load_str("---\ninputs: [q]\n---\nuser:\n{{ q }}", ".", "s.prompty").unwrap();
    traced("secret root", &inputs, || crate::prepare(&agent, &inputs)).unwrap();
    let spans = c.1.trace("secret root");
    let root = by_name(&spans, "secret root");
    assert_eq!(root.inputs["apiKey"], "[REDACTED]");
    assert_eq!(root.inputs["nested"]["deeper"][0]["client_secret"], "[REDACTED]");
    assert_eq!(root.inputs["nested"]["deeper"][0]["author"], "Ann");
    assert_eq!(root.inputs["nested"]["Authorization"], "[REDACTED]");
    assert_eq!(root.inputs["usage"], json!({"prompt_tokens": 3, "promptTokenCount": 4}));
    assert_eq!(root.inputs["session_cookie"], "[REDACTED]");
    let prepare = by_name(&spans, "prepare");
    assert_eq!(prepare.inputs["inputs"]["apiKey"], "[REDACTED]");
    let all = serde_json::to_string(&spans.iter().map(FinishedSpan::frame).collect::<Vec<_>>()).unwrap();
    for secret in ["sk-live-1", "s3", "Bearer abc", "c=1"] {
        assert!(!all.contains(secret), "{secret} leaked");
    }
}

#[test]
fn a_secret_value_is_redacted_whatever_its_key() {
    let c = Collecting::new("secret-type");
    let connection: crate::Connection =
        serde_json::from_value(json!({"kind": "key", "endpoint": "https://x", "apiKey": "sk-typed"})).unwrap();
    let result = std::collections::BTreeMap::from([("anything", crate::Secret::new("sk-typed-2"))]);
    traced("typed secret", &(connection, crate::Secret::new("sk-bare")), || Ok(result)).unwrap();
    let root = by_name(&c.1.trace("typed secret"), "typed secret").clone();
    let text = root.frame().to_string();
    assert!(!text.contains("sk-typed") && !text.contains("sk-bare"), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    // The load span's result is the agent, with its key redacted.
    let dir = std::env::temp_dir().join(format!("prompty-trace-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keyed.prompty");
    std::fs::write(&file, "---\nmodel:\n  id: m\n  connection:\n    kind: key\n    apiKey: sk-in-file\n---\nHi")
        .unwrap();
    traced("load root", &json!({}), || crate::load(&file)).unwrap();
    let spans = c.1.trace("load root");
    let load = by_name(&spans, "load");
    assert_eq!(load.signature, "prompty.load");
    assert_eq!(load.result["model"]["connection"]["apiKey"], "[REDACTED]");
    assert!(!load.frame().to_string().contains("sk-in-file"));
}

#[test]
fn a_panicking_backend_blocks_neither_the_others_nor_the_pipeline() {
    struct Panics;
    impl TraceBackend for Panics {
        fn span_ended(&self, _: &FinishedSpan) {
            panic!("backend down");
        }
    }
    add("0-panics", Arc::new(Panics));
    let c = Collecting::new("after-panic");
    let agent = crate::load_str("user:\nHi", ".", "p.prompty").unwrap();
    let messages = traced("panic root", &json!({}), || crate::prepare(&agent, &json!({})));
    remove("0-panics");
    assert_eq!(messages.unwrap()[0].text(), "Hi");
    assert_eq!(names_of(&c.1.trace("panic root")), ["render", "parse", "prepare", "panic root"]);
}

#[test]
fn tracy_files_are_named_and_shaped_like_the_reference() {
    let dir = std::env::temp_dir().join(format!("prompty-tracy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tracy = Arc::new(TracyBackend::new(&dir));
    add("tracy-test", tracy.clone());
    let agent = scripted("trace-tracy", vec![answer("Paris")]);
    let before = SystemTime::now();
    let out: String = traced("capital: France?", &json!({"country": "France"}), || {
        crate::invoke(&agent, &json!({"q": "Capital of France?"}))
    })
    .unwrap();
    remove("tracy-test");
    assert_eq!(out, "Paris");
    let path = tracy.last_written().expect("a file");
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    // `<sanitized name>.<YYYYMMDD.HHMMSS>.tracy`, in UTC.
    assert!(name.starts_with("capital__France_."), "{name}");
    let stamp = &name["capital__France_.".len()..name.len() - ".tracy".len()];
    assert_eq!(stamp.len(), 15, "{name}");
    assert!(stamp.as_bytes()[8] == b'.' && stamp.chars().filter(char::is_ascii_digit).count() == 14, "{name}");
    assert!(stamp[..8] >= time::stamp(before)[..8], "{name}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["runtime"], "rust");
    assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
    let trace = &doc["trace"];
    let keys: Vec<&str> = trace.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["name", "__time", "signature", "inputs", "__frames", "result", "__usage"]);
    assert_eq!(trace["name"], "capital: France?");
    assert_eq!(trace["inputs"], json!({"country": "France"}));
    assert_eq!(trace["result"], "Paris");
    let time_keys: Vec<&str> = trace["__time"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(time_keys, ["start", "end", "duration"]);
    assert_eq!(trace["__time"]["start"].as_str().unwrap().len(), "2026-11-25T08:10:01.123456".len());
    let invoke = &trace["__frames"][0];
    assert_eq!((invoke["name"].as_str(), invoke["signature"].as_str()), (Some("invoke"), Some("prompty.invoke")));
    let stages: Vec<&str> =
        invoke["__frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(stages, ["prepare", "run"]);
    let run: Vec<&str> =
        invoke["__frames"][1]["__frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(run, ["execute", "process"]);
    assert_eq!(trace["__usage"], json!({"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}));
    // Only roots are written: one file.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn a_stream_is_one_span_ended_when_exhausted_or_dropped() {
    struct Streams;
    impl Executor for Streams {
        fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
            Box::pin(async { Ok(json!({})) })
        }
        fn execute_stream<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, Result<crate::RawStream>> {
            let events: Vec<crate::RawEvent> = [
                json!({"choices": [{"delta": {"content": "Hel"}}]}),
                json!({"choices": [{"delta": {"content": "lo"}}]}),
                json!({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}),
            ]
            .into_iter()
            .map(crate::RawEvent::Data)
            .collect();
            Box::pin(async move { Ok(Box::pin(futures_util::stream::iter(events)) as crate::RawStream) })
        }
    }
    crate::register_executor("trace-stream", Streams);
    crate::register_processor("trace-stream", crate::providers::openai::OpenAiProcessor);
    let agent =
        crate::load_str("---\nmodel: {id: m, provider: trace-stream}\n---\nuser:\nHi", ".", "s.prompty").unwrap();
    let c = Collecting::new("streams");
    let rt = rt();
    rt.block_on(traced_async("stream read", &json!({}), async {
        let mut s = crate::invoke_stream(&agent, &json!({})).await?;
        let mut text = String::new();
        while let Some(chunk) = s.next().await {
            text.push_str(chunk.text().unwrap_or(""));
        }
        assert_eq!(text, "Hello");
        Ok(())
    }))
    .unwrap();
    let spans = c.1.trace("stream read");
    let streams: Vec<&FinishedSpan> = spans.iter().filter(|s| s.signature == "prompty.stream").collect();
    assert_eq!(streams.len(), 1, "recorded once");
    assert_eq!(streams[0].result["text"], "Hello");
    assert_eq!(streams[0].result["complete"], true);
    assert_eq!(streams[0].usage["total_tokens"], 6);
    assert_eq!(by_name(&spans, "stream read").usage["total_tokens"], 6);

    rt.block_on(traced_async("stream dropped", &json!({}), async {
        let mut s = crate::invoke_stream(&agent, &json!({})).await?;
        let first = s.next().await;
        assert_eq!(first.and_then(|c| c.text().map(str::to_owned)).as_deref(), Some("Hel"));
        drop(s);
        Ok(())
    }))
    .unwrap();
    let spans = c.1.trace("stream dropped");
    let streams: Vec<&FinishedSpan> = spans.iter().filter(|s| s.signature == "prompty.stream").collect();
    assert_eq!(streams.len(), 1, "recorded once");
    assert_eq!(streams[0].result["text"], "Hel");
    assert_eq!(streams[0].result["complete"], false);
}

#[test]
fn registry_operations() {
    struct Nop;
    impl TraceBackend for Nop {
        fn span_ended(&self, _: &FinishedSpan) {}
    }
    add("zz-registry-a", Arc::new(Nop));
    add("zz-registry-b", Arc::new(Nop));
    let listed = names();
    assert!(listed.contains(&"zz-registry-a".to_owned()) && listed.contains(&"zz-registry-b".to_owned()));
    assert!(remove("zz-registry-a"));
    assert!(!remove("zz-registry-a"));
    assert!(!names().contains(&"zz-registry-a".to_owned()));
    remove("zz-registry-b");
}

#[test]
fn long_strings_are_cut_and_frames_bounded() {
    let c = Collecting::new("bounds");
    let long = "x".repeat(MAX_TRACE_STRING + 100);
    traced("bounds root", &json!({"text": long}), || {
        for _ in 0..MAX_FRAMES + 3 {
            traced("child", &json!({}), || Ok(()))?;
        }
        Ok(())
    })
    .unwrap();
    let spans = c.1.trace("bounds root");
    let root = by_name(&spans, "bounds root");
    let text = root.inputs["text"].as_str().unwrap();
    assert!(text.len() < MAX_TRACE_STRING + 40 && text.ends_with("…[100 more bytes]"), "{}", text.len());
    assert_eq!(root.frames.len(), MAX_FRAMES);
    assert_eq!(root.dropped_frames, 3);
    assert_eq!(root.frame()["__dropped_frames"], 3);
}

#[test]
fn an_async_load_nests_under_its_caller() {
    let c = Collecting::new("async-load");
    let dir = std::env::temp_dir().join(format!("prompty-trace-async-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("plain.prompty");
    std::fs::write(&file, "---\nname: plain\n---\nuser:\nHi").unwrap();
    rt().block_on(traced_async("load caller", &json!({}), crate::load_async(&file))).unwrap();
    let spans = c.1.trace("load caller");
    assert_eq!(by_name(&spans, "load").parent_id, Some(by_name(&spans, "load caller").span_id));
}

#[test]
fn calls_by_id_are_invoke_and_turn_spans() {
    let c = Collecting::new("registry");
    let agent = scripted("trace-registry", vec![answer("one"), answer("two")]);
    let registry = crate::PromptRegistry::new();
    registry.register("ask", agent).unwrap();
    traced("by id", &json!({}), || {
        let a: String = registry.invoke("ask", &json!({"q": "x"}), Some("fr"))?;
        let b: String = registry.turn("ask", &json!({"q": "y"}), None, TurnOptions::new())?;
        Ok((a, b))
    })
    .unwrap();
    let spans = c.1.trace("by id");
    let root = by_name(&spans, "by id");
    let invoke = by_name(&spans, "invoke");
    let turn = by_name(&spans, "turn");
    assert_eq!((invoke.parent_id, turn.parent_id), (Some(root.span_id), Some(root.span_id)));
    assert_eq!((invoke.inputs["id"].as_str(), invoke.inputs["locale"].as_str()), (Some("ask"), Some("fr")));
    let parents: Vec<Option<u64>> = spans.iter().filter(|s| s.name == "prepare").map(|s| s.parent_id).collect();
    assert_eq!(parents, [Some(invoke.span_id), Some(turn.span_id)]);
    assert_eq!(spans.iter().filter(|s| s.signature == "prompty.turn").count(), 2, "the turn and its one iteration");
}

/// A `tracing` span's name and the fields it received.
type SpanFields = (String, Map<String, Value>);

/// The fields every `tracing` span received, by span, in creation order.
#[derive(Clone, Default)]
struct Fields(Arc<Mutex<Vec<SpanFields>>>);

struct Visit<'a>(&'a mut Map<String, Value>);

impl tracing::field::Visit for Visit<'_> {
    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}").into());
    }
}

impl tracing::Subscriber for Fields {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = Map::new();
        span.record(&mut Visit(&mut fields));
        let mut spans = self.0.lock().unwrap();
        spans.push((span.metadata().name().to_owned(), fields));
        tracing::span::Id::from_u64(spans.len() as u64)
    }
    fn record(&self, id: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut spans = self.0.lock().unwrap();
        let i = usize::try_from(id.into_u64()).unwrap() - 1;
        values.record(&mut Visit(&mut spans[i].1));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The GenAI attributes are fields of the `tracing` spans: what a `tracing-opentelemetry` layer
/// exports. (The export itself: `tests/otel.rs`.)
#[test]
fn the_tracing_spans_carry_the_genai_attributes_as_fields() {
    let fields = Fields::default();
    let agent = scripted("trace-fields", vec![tool_calls(&[("call-7", "lookup")]), answer("done")]);
    let lookup = crate::tool_fn(|_| async { Ok(json!("found")) });
    let options = TurnOptions::new().tool("lookup", lookup);
    let out: String = tracing::subscriber::with_default(fields.clone(), || {
        rt().block_on(crate::turn_async(&agent, &json!({"q": "find it"}), options))
    })
    .unwrap();
    assert_eq!(out, "done");
    let failing = scripted("trace-fields-fail", vec![]);
    tracing::subscriber::with_default(fields.clone(), || crate::invoke::<String>(&failing, &json!({"q": "x"})))
        .unwrap_err();
    let spans = fields.0.lock().unwrap();
    let named = |name: &str| spans.iter().filter(|(n, _)| n == name).map(|(_, f)| f).collect::<Vec<_>>();
    let calls = named("prompty.execute");
    assert_eq!(calls.len(), 3);
    let first = calls[0];
    assert_eq!(first["otel.name"], "chat m");
    assert_eq!(first["otel.kind"], "client");
    assert_eq!(first["gen_ai.operation.name"], "chat");
    assert_eq!(first["gen_ai.provider.name"], "trace-fields");
    assert_eq!(first["gen_ai.request.model"], "m");
    assert_eq!(first["gen_ai.response.id"], "r1");
    assert_eq!(first["gen_ai.response.finish_reasons"], r#"["tool_calls"]"#);
    assert_eq!((&first["gen_ai.usage.input_tokens"], &first["gen_ai.usage.output_tokens"]), (&json!(5), &json!(2)));
    assert!(first.get("error.type").is_none());
    let tool = named("prompty.tool")[0];
    assert_eq!(tool["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["gen_ai.tool.name"], "lookup");
    assert_eq!(tool["gen_ai.tool.call.id"], "call-7");
    let failed = calls[2];
    assert_eq!(failed["error.type"], "Execution");
    assert_eq!(failed["otel.status_code"], "error");
    assert_eq!(failed["otel.status_description"], "the script ran out");
    assert_eq!(named("prompty.invoke")[0]["otel.status_code"], "error");
    assert!(named("prompty.prepare").iter().all(|p| p.get("otel.status_code").is_none()));
}

#[tokio::test]
async fn the_prepare_span_records_the_segments_of_every_message() {
    let c = Collecting::new("segments");
    let agent = crate::load_str(
        "---\ninputs:\n  name: {kind: string}\n  history: {kind: thread}\n  apiKey: {kind: string}\n---\nsystem:\nHelp {{ name }}.\n{{ history }}\nuser:\nkey {{ apiKey }}",
        ".",
        "seg.prompty",
    )
    .unwrap();
    let inputs = json!({"name": "Ann", "history": [{"role": "assistant", "content": "Hello!"}], "apiKey": "sk-seg-1"});
    let expected = crate::prepare_with_segments(&agent, &inputs).unwrap();
    let want = serde_json::to_value(&expected.segments).unwrap();
    assert_eq!(want[1][0][0]["source"], "history", "{want}");
    assert_eq!(want[0][0][0]["range"], json!({"start": 5, "end": 8}), "{want}");

    let messages = traced("segments root", &json!({}), || crate::prepare(&agent, &inputs)).unwrap();
    assert_eq!(messages, expected.messages);
    let spans = c.1.trace("segments root");
    let prepare = by_name(&spans, "prepare");
    assert_eq!(prepare.attributes[SEGMENTS_ATTRIBUTE], want);
    let frame = prepare.frame();
    assert_eq!(frame["__segments"], want, "the .tracy frame keeps them");
    assert_eq!(frame["result"], serde_json::to_value(&expected.messages).unwrap(), "the result is still the messages");
    // Ranges and input names only: the values (and the secret) are in the messages, redacted there.
    assert!(!frame["__segments"].to_string().contains("sk-seg-1"));
    assert_eq!(prepare.inputs["inputs"]["apiKey"], "[REDACTED]");

    traced_async("segments async root", &json!({}), crate::prepare_async(&agent, &inputs)).await.unwrap();
    let spans = c.1.trace("segments async root");
    assert_eq!(by_name(&spans, "prepare").frame()["__segments"], want);
    // A span of something else carries none.
    assert!(by_name(&spans, "render").frame().get("__segments").is_none());
}
