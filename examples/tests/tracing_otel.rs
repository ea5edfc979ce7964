//! A program's own OpenTelemetry pipeline, as a service installs it: a `tracing_subscriber`
//! registry with a `tracing-opentelemetry` layer over the `opentelemetry` SDK and the
//! `opentelemetry-otlp` HTTP exporter, its own resource. No `prompty::otel::OtelBackend`: the
//! `prompty.*` `tracing` spans carry the GenAI attributes as fields, and this test checks they reach
//! a real OTLP/HTTP receiver on 127.0.0.1 (`prompty/tests/e2e/otlp_receiver.py`, decoding with the
//! official protobuf definitions), and that neither the API key nor, with the content off, a prompt
//! does. One test in its binary: the subscriber is process-wide.
//!
//! Run: `cargo test -p prompty-examples --test tracing_otel`.

#[path = "../../prompty/tests/e2e/common.rs"]
mod common;
#[path = "../../prompty/tests/e2e/peers.rs"]
mod peers;
#[path = "../../prompty/tests/e2e/scripted.rs"]
mod scripted;

use prompty::trace;
use prompty::TurnOptions;
use scripted::{answer, contains, rt, scripted, tool_call, API_KEY};
use serde_json::{json, Value};

fn names(spans: &[Value]) -> String {
    spans.iter().map(|s| s["name"].as_str().unwrap_or("?")).collect::<Vec<_>>().join(", ")
}

/// A program's own `tracing-opentelemetry` pipeline (no `OtelBackend`): its resource, its batch
/// exporter (`opentelemetry-otlp` over HTTP), its tracer. The `prompty.*` `tracing` spans carry the
/// GenAI attributes as fields, so they reach the collector with the program's resource; with
/// `set_tracing_content(false)` no prompt or answer does, and the API key never does.
#[test]
fn a_users_tracing_opentelemetry_pipeline_exports_the_genai_attributes() {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig as _};
    use tracing_subscriber::layer::SubscriberExt as _;

    let peer = peers::otlp_receiver();
    // The exporter builds a reqwest client of its own: the workspace's reqwest has no TLS provider
    // of its own, so a program installs one first (prompty's, here).
    assert!(prompty::providers::http::ensure_tls_provider());
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{}/v1/traces", peer.url()))
        .build()
        .expect("an OTLP/HTTP exporter");
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(opentelemetry_sdk::Resource::builder_empty().with_service_name("users-service").build())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("users-service")));
    // The prompts and answers stay out of the collector; the GenAI attributes go.
    trace::set_tracing_content(false);
    // Process-wide, as a service installs it (prompty's blocking calls run on helper threads).
    tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber of this test binary");

    let agent = scripted("tracing-invoke", vec![answer("resp-t1", "Paris")]);
    let out: String = tracing::info_span!("user request invoke")
        .in_scope(|| prompty::invoke(&agent, &json!({"q": "Capital of France?"})))
        .unwrap();
    assert_eq!(out, "Paris");
    let agent = scripted("tracing-turn", vec![tool_call("resp-t2", "weather"), answer("resp-t3", "Sunny")]);
    let weather = prompty::tool_fn(|args| async move { Ok(json!({"city": args["city"], "sky": "sunny"})) });
    let root = tracing::info_span!("user request turn");
    let inputs = json!({"q": "Weather in Oslo?"});
    let turn = prompty::turn_async(&agent, &inputs, TurnOptions::new().tool("weather", weather));
    let out: String = rt().block_on(tracing::Instrument::instrument(turn, root)).unwrap();
    assert_eq!(out, "Sunny");
    let failing = scripted("tracing-error", vec![]);
    let err = tracing::info_span!("user request error")
        .in_scope(|| prompty::invoke::<String>(&failing, &json!({"q": "x"})))
        .unwrap_err();
    assert!(err.to_string().contains("the script ran out"), "{err}");
    provider.force_flush().expect("the batch reaches the receiver");

    let all = peers::otlp_spans(&peer);
    let trace_named = |root: &str| -> Vec<Value> {
        let id = all
            .iter()
            .find(|s| s["parent_span_id"] == "" && s["name"] == root)
            .unwrap_or_else(|| panic!("no root `{root}` in {}", names(&all)))["trace_id"]
            .clone();
        all.iter().filter(|s| s["trace_id"] == id).cloned().collect()
    };
    let by_name = |spans: &[Value], name: &str| -> Value {
        spans.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no `{name}` in {}", names(spans))).clone()
    };

    // The invoke: the model call is a CLIENT span named after the conventions, under run, under
    // invoke, under the program's own span; the resource is the program's.
    let spans = trace_named("user request invoke");
    let (root, invoke, run, execute) = (
        by_name(&spans, "user request invoke"),
        by_name(&spans, "prompty.invoke"),
        by_name(&spans, "prompty.run"),
        by_name(&spans, "chat m"),
    );
    assert_eq!(invoke["parent_span_id"], root["span_id"]);
    assert_eq!(run["parent_span_id"], invoke["span_id"]);
    assert_eq!(execute["parent_span_id"], run["span_id"]);
    assert_eq!(execute["kind"], "CLIENT");
    assert_eq!(execute["resource"]["service.name"], "users-service");
    let a = &execute["attributes"];
    assert_eq!(a["gen_ai.operation.name"], "chat");
    assert_eq!(a["gen_ai.provider.name"], "tracing-invoke");
    assert_eq!(a["gen_ai.request.model"], "m");
    assert_eq!(a["gen_ai.request.temperature"], 0.3);
    assert_eq!(a["gen_ai.usage.input_tokens"], 9);
    assert_eq!(a["gen_ai.usage.output_tokens"], 3);
    assert_eq!(a["gen_ai.response.id"], "resp-t1");
    assert_eq!(a["gen_ai.response.model"], "m-2026");
    assert_eq!(a["gen_ai.response.finish_reasons"], r#"["stop"]"#);
    assert_eq!(execute["status"]["code"], "UNSET");
    for s in &spans {
        for key in ["inputs", "result"] {
            assert!(s["attributes"].get(key).is_none(), "{key} recorded with the content off: {s}");
        }
    }

    // The turn: the tool call's span carries the tool's name and the model's call id.
    let spans = trace_named("user request turn");
    let tool = by_name(&spans, "prompty.tool");
    assert_eq!(tool["attributes"]["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "weather");
    assert_eq!(tool["attributes"]["gen_ai.tool.call.id"], "call-1");
    assert_eq!(tool["attributes"]["prompty.name"], "weather");
    let calls: Vec<&Value> = spans.iter().filter(|s| s["name"] == "chat m").collect();
    assert_eq!(calls.len(), 2, "{}", names(&spans));
    let first = calls.iter().find(|c| c["attributes"]["gen_ai.response.id"] == "resp-t2").expect("the first call");
    assert_eq!(first["attributes"]["gen_ai.response.finish_reasons"], r#"["tool_calls"]"#);
    assert_eq!(first["attributes"]["gen_ai.usage.output_tokens"], 2);
    assert_eq!(tool["parent_span_id"], first["parent_span_id"], "the tool runs in the iteration that asked for it");

    // A failed model call: status ERROR with the message, and error.type.
    let spans = trace_named("user request error");
    let execute = by_name(&spans, "chat m");
    assert_eq!(execute["status"], json!({"code": "ERROR", "message": "the script ran out"}));
    assert_eq!(execute["attributes"]["error.type"], "Execution");
    assert_eq!(by_name(&spans, "prompty.invoke")["status"]["code"], "ERROR");

    // No byte received holds the API key or the prompt.
    let raw = peers::otlp_raw(&peer);
    assert!(!raw.is_empty());
    for (body, _) in &raw {
        assert!(!contains(body, API_KEY), "the API key reached the collector");
        assert!(!contains(body, "Capital of France"), "a prompt reached the collector with the content off");
    }
    provider.shutdown().expect("the pipeline shuts down");
}
