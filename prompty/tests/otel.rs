//! The OpenTelemetry exporter (`prompty::otel::OtelBackend`) against a real OTLP/HTTP receiver on
//! 127.0.0.1 (a program's own `tracing-opentelemetry` pipeline: `examples/tests/tracing_otel.rs`): `e2e/otlp_receiver.py`, which decodes what it receives with the official protobuf
//! definitions of PyPI's `opentelemetry-proto` (pinned in `e2e/requirements.txt`) and serves the
//! spans back as JSON. The model is a scripted executor returning Chat Completions responses,
//! processed by the OpenAI processor.
//!
//! Run: `cargo test -p prompty --features otel,openai --test otel`.

#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/peers.rs"]
mod peers;
#[path = "e2e/scripted.rs"]
mod scripted;

use prompty::otel::OtelBackend;
use prompty::trace;
use prompty::TurnOptions;
use scripted::{answer, contains, rt, scripted, tool_call, API_KEY};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The spans of the trace whose root is `root` (backends are process-wide and the tests run side
/// by side: each picks its own traces).
fn trace_of(spans: &[Value], root: &str) -> Vec<Value> {
    let id = spans
        .iter()
        .find(|s| s["parent_span_id"] == "" && s["attributes"]["prompty.name"] == root)
        .unwrap_or_else(|| panic!("no root `{root}` in {}", names(spans)))["trace_id"]
        .clone();
    spans.iter().filter(|s| s["trace_id"] == id).cloned().collect()
}

fn names(spans: &[Value]) -> String {
    spans.iter().map(|s| s["name"].as_str().unwrap_or("?")).collect::<Vec<_>>().join(", ")
}

/// The span whose `prompty.name` is `name`.
fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["attributes"]["prompty.name"] == name)
        .unwrap_or_else(|| panic!("no span `{name}` in {}", names(spans)))
}

/// Registers `backend` under `name` for the life of the guard.
struct Registered(&'static str, Arc<OtelBackend>);

impl Registered {
    fn new(name: &'static str, backend: OtelBackend) -> Registered {
        let backend = Arc::new(backend);
        trace::add(name, backend.clone());
        Registered(name, backend)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        trace::remove(self.0);
    }
}

#[test]
fn invoke_and_turn_reach_a_real_receiver_with_genai_attributes() {
    let peer = peers::otlp_receiver();
    let otel = Registered::new("otel-e2e", OtelBackend::new(&peer.url()).with_header("x-collector-key", "hdr-1"));
    // invoke
    let agent = scripted("otel-invoke", vec![answer("resp-1", "Paris")]);
    let out: String =
        trace::traced("otel invoke", &json!({}), || prompty::invoke(&agent, &json!({"q": "Capital of France?"})))
            .unwrap();
    assert_eq!(out, "Paris");
    // turn with one tool call
    let agent = scripted("otel-turn", vec![tool_call("resp-2", "weather"), answer("resp-3", "Sunny")]);
    let weather = prompty::tool_fn(|args| async move { Ok(json!({"city": args["city"], "sky": "sunny"})) });
    let options = TurnOptions::new().tool("weather", weather);
    let out: String = rt()
        .block_on(trace::traced_async(
            "otel turn",
            &json!({}),
            prompty::turn_async(&agent, &json!({"q": "Weather in Oslo?"}), options),
        ))
        .unwrap();
    assert_eq!(out, "Sunny");
    assert!(otel.1.flush(), "flush settles everything queued");
    let all = peers::otlp_spans(&peer);

    // The invoke: root -> invoke -> {prepare -> {render, parse}, run -> {execute, process}}.
    let spans = trace_of(&all, "otel invoke");
    let root = named(&spans, "otel invoke");
    let invoke = named(&spans, "invoke");
    let run = named(&spans, "run");
    let execute = named(&spans, "execute");
    assert_eq!(invoke["parent_span_id"], root["span_id"]);
    assert_eq!(named(&spans, "prepare")["parent_span_id"], invoke["span_id"]);
    assert_eq!(named(&spans, "render")["parent_span_id"], named(&spans, "prepare")["span_id"]);
    assert_eq!(run["parent_span_id"], invoke["span_id"]);
    assert_eq!(execute["parent_span_id"], run["span_id"]);
    assert_eq!(named(&spans, "process")["parent_span_id"], run["span_id"]);
    for s in &spans {
        assert_eq!(s["trace_id"].as_str().unwrap().len(), 32);
        assert_eq!(s["span_id"].as_str().unwrap().len(), 16);
        assert!(s["end"].as_u64().unwrap() >= s["start"].as_u64().unwrap());
        assert!(s["start"].as_u64().unwrap() > 1_600_000_000_000_000_000, "unix nanos");
        assert_eq!(s["resource"]["service.name"], "prompty");
        assert_eq!(s["scope"]["name"], "prompty");
        assert_eq!(s["status"]["code"], "UNSET");
        let content = ["prompty.inputs", "prompty.result", "gen_ai.input.messages", "gen_ai.output.messages"];
        for key in content {
            assert!(s["attributes"].get(key).is_none(), "{key} sent without with_content: {s}");
        }
        if s["span_id"] != execute["span_id"] {
            assert_eq!(s["kind"], "INTERNAL", "{s}");
        }
    }
    // The model call: a CLIENT span named after the GenAI conventions.
    assert_eq!(execute["kind"], "CLIENT");
    assert_eq!(execute["name"], "chat m");
    let a = &execute["attributes"];
    assert_eq!(a["gen_ai.operation.name"], "chat");
    assert_eq!(a["gen_ai.provider.name"], "otel-invoke");
    assert_eq!(a["gen_ai.request.model"], "m");
    assert_eq!(a["gen_ai.request.temperature"], 0.3);
    assert_eq!(a["gen_ai.usage.input_tokens"], 9);
    assert_eq!(a["gen_ai.usage.output_tokens"], 3);
    assert_eq!(a["gen_ai.response.finish_reasons"], json!(["stop"]));
    assert_eq!(a["gen_ai.response.id"], "resp-1");
    assert_eq!(a["gen_ai.response.model"], "m-2026");
    assert_eq!(a["prompty.signature"], "prompty.execute");
    assert_eq!(invoke["name"], "prompty.invoke");
    assert_eq!(named(&spans, "prepare")["name"], "prompty.prepare");

    // The turn: root -> turn -> {prepare, turn 1 -> {execute, process, weather}, turn 2 -> ...}.
    let spans = trace_of(&all, "otel turn");
    let root = named(&spans, "otel turn");
    let turn = named(&spans, "turn");
    let first = named(&spans, "turn 1");
    let second = named(&spans, "turn 2");
    let tool = named(&spans, "weather");
    assert_eq!(turn["parent_span_id"], root["span_id"]);
    assert_eq!(turn["name"], "prompty.turn");
    assert_eq!((&first["parent_span_id"], &second["parent_span_id"]), (&turn["span_id"], &turn["span_id"]));
    assert_eq!(tool["parent_span_id"], first["span_id"], "the tool runs in the iteration that asked for it");
    assert_eq!((tool["name"].as_str(), tool["kind"].as_str()), (Some("prompty.tool"), Some("INTERNAL")));
    assert_eq!(tool["attributes"]["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "weather");
    assert_eq!(tool["attributes"]["gen_ai.tool.call.id"], "call-1");
    let calls: Vec<&Value> = spans.iter().filter(|s| s["kind"] == "CLIENT").collect();
    assert_eq!(calls.len(), 2, "{}", names(&spans));
    assert!(calls.iter().all(|c| c["name"] == "chat m"));
    let by_parent = |p: &Value| calls.iter().find(|c| c["parent_span_id"] == p["span_id"]).copied().unwrap();
    assert_eq!(by_parent(first)["attributes"]["gen_ai.response.finish_reasons"], json!(["tool_calls"]));
    assert_eq!(by_parent(first)["attributes"]["gen_ai.response.id"], "resp-2");
    assert_eq!(by_parent(second)["attributes"]["gen_ai.usage.input_tokens"], 9);

    // Never the API key (nor anything of the connection), in any byte received; the header went.
    let raw = peers::otlp_raw(&peer);
    assert!(!raw.is_empty());
    for (body, headers) in &raw {
        assert!(!contains(body, API_KEY), "the API key reached the collector");
        assert!(!contains(body, "Capital of France"), "content without with_content");
        assert_eq!(headers["content-type"], "application/x-protobuf");
        assert_eq!(headers["x-collector-key"], "hdr-1");
    }
    let stats = otel.1.stats();
    assert!(stats.exported >= 20 && stats.failed == 0, "{stats:?}");
}

#[test]
fn content_is_exported_only_when_asked() {
    let peer = peers::otlp_receiver();
    let otel = Registered::new(
        "otel-content",
        OtelBackend::new(&peer.url()).with_content(true).with_service_name("otel-content-test"),
    );
    let agent = scripted("otel-content", vec![answer("resp-c", "Bonjour")]);
    let out: String =
        trace::traced("otel content", &json!({}), || prompty::invoke(&agent, &json!({"q": "Say hello in French"})))
            .unwrap();
    assert_eq!(out, "Bonjour");
    assert!(otel.1.flush());
    let spans = trace_of(&peers::otlp_spans(&peer), "otel content");
    let execute = named(&spans, "execute");
    assert_eq!(execute["resource"]["service.name"], "otel-content-test");
    let input: Value = serde_json::from_str(execute["attributes"]["gen_ai.input.messages"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!([{"role": "user", "parts": [{"type": "text", "content": "Say hello in French"}]}]));
    let output: Value =
        serde_json::from_str(execute["attributes"]["gen_ai.output.messages"].as_str().unwrap()).unwrap();
    assert_eq!(
        output,
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "Bonjour"}], "finish_reason": "stop"}])
    );
    let invoke = named(&spans, "invoke");
    let inputs: Value = serde_json::from_str(invoke["attributes"]["prompty.inputs"].as_str().unwrap()).unwrap();
    assert_eq!(inputs["inputs"]["q"], "Say hello in French", "{inputs}");
    assert_eq!(invoke["attributes"]["prompty.result"], "\"Bonjour\"");
    for (body, _) in peers::otlp_raw(&peer) {
        assert!(!contains(&body, API_KEY), "the API key reached the collector with content on");
    }
}

#[test]
fn a_failed_call_has_status_error() {
    let peer = peers::otlp_receiver();
    let otel = Registered::new("otel-error", OtelBackend::new(&peer.url()));
    let agent = scripted("otel-error", vec![]);
    let err =
        trace::traced("otel error", &json!({}), || prompty::invoke::<String>(&agent, &json!({"q": "x"}))).unwrap_err();
    assert!(err.to_string().contains("the script ran out"), "{err}");
    assert!(otel.1.flush());
    let spans = trace_of(&peers::otlp_spans(&peer), "otel error");
    let execute = named(&spans, "execute");
    assert_eq!(execute["status"], json!({"code": "ERROR", "message": "the script ran out"}));
    assert_eq!(execute["attributes"]["error.type"], "Execution");
    assert_eq!(named(&spans, "invoke")["status"]["code"], "ERROR");
    assert_eq!(named(&spans, "prepare")["status"]["code"], "UNSET");
}

#[test]
fn a_receiver_that_is_down_never_blocks_the_pipeline() {
    // A port nothing listens on: connections are refused.
    let port = common::free_port();
    let otel = Registered::new(
        "otel-down",
        OtelBackend::new(&format!("http://127.0.0.1:{port}")).with_timeout(Duration::from_secs(2)),
    );
    let agent = scripted("otel-down", vec![answer("r", "one"), answer("r", "two")]);
    for expected in ["one", "two"] {
        let out: String =
            trace::traced("otel down", &json!({}), || prompty::invoke(&agent, &json!({"q": "x"}))).unwrap();
        assert_eq!(out, expected);
    }
    // Every span queued so far has been settled (here: failed, the connection refused) when the
    // flush returns true; none was exported.
    let queued = otel.1.stats().queued;
    assert!(otel.1.flush_within(Duration::from_secs(60)), "the refused exports settled: {:?}", otel.1.stats());
    let stats = otel.1.stats();
    assert!(queued >= 14 && stats.failed >= queued && stats.exported == 0, "{stats:?}");
    assert!(otel.1.shutdown(Duration::from_secs(5)));
    // After the shutdown, spans are dropped (counted), never queued.
    trace::traced("otel after shutdown", &json!({}), || Ok(1)).unwrap();
    assert!(otel.1.stats().dropped >= 1);
}

#[test]
fn a_receiver_that_never_answers_does_not_hold_up_the_pipeline() {
    // A port that accepts connections (the kernel's backlog) and never reads or answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let otel = Registered::new(
        "otel-silent",
        OtelBackend::new(&format!("http://127.0.0.1:{port}")).with_timeout(Duration::from_secs(5)),
    );
    let agent = scripted("otel-silent", vec![answer("r", "one"), answer("r", "two")]);
    for expected in ["one", "two"] {
        let out: String =
            trace::traced("otel silent", &json!({}), || prompty::invoke(&agent, &json!({"q": "x"}))).unwrap();
        assert_eq!(out, expected);
    }
    // The invocations returned while their spans were still on their way: none settled yet, so
    // the pipeline did not wait for the exporter.
    let stats = otel.1.stats();
    assert!(stats.queued >= 14 && stats.exported == 0 && stats.failed == 0, "{stats:?}");
    // A flush that cannot finish in time says so.
    assert!(!otel.1.flush_within(Duration::from_millis(200)), "nothing can have settled: {:?}", otel.1.stats());
    // The export's own timeout (5 s) ends the silent posts: every span queued before the flush
    // settles as failed, none hangs the export thread. (Other tests of this binary trace into the
    // same process-wide backend list, so spans queued after the flush are not counted.)
    let queued = otel.1.stats().queued;
    assert!(otel.1.flush_within(Duration::from_secs(60)), "the export never timed out: {:?}", otel.1.stats());
    let stats = otel.1.stats();
    assert!(stats.failed >= queued && stats.exported == 0, "{queued} queued before the flush: {stats:?}");
    drop(silent);
}
