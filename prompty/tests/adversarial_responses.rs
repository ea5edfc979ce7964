//! Property tests: whatever a provider (or something pretending to be one) answers, processing it
//! never panics, and neither does the agent loop fed that answer. Arbitrary JSON, and JSON shaped
//! like each API's responses and stream events with arbitrary values in every field.

use futures_util::StreamExt;
use prompty::providers::{anthropic, openai};
use prompty::{Agent, BoxFuture, Executor, Message, RawEvent, Role, TurnOptions};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::sync::Mutex;

/// Any JSON value, nested a few levels.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("tool_calls"),
            Just("function"),
            Just("arguments"),
            Just("index"),
            Just("content"),
            Just("text"),
            Just("tool_use"),
            Just("function_call"),
            Just("message"),
            Just("output_text"),
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Keys the processors look at, and others.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![
            Just("choices"),
            Just("message"),
            Just("delta"),
            Just("content"),
            Just("tool_calls"),
            Just("id"),
            Just("function"),
            Just("name"),
            Just("arguments"),
            Just("index"),
            Just("refusal"),
            Just("error"),
            Just("data"),
            Just("embedding"),
            Just("url"),
            Just("b64_json"),
            Just("output"),
            Just("type"),
            Just("call_id"),
            Just("status"),
            Just("usage"),
            Just("input"),
            Just("text"),
            Just("content_block"),
            Just("partial_json"),
            Just("stop_reason"),
            Just("response"),
            Just("finish_reason"),
        ]
        .prop_map(str::to_owned),
        "[a-z_]{1,8}",
    ]
}

fn agent(api: &str, outputs: bool) -> Agent {
    let mut a = json!({"name": "p", "model": {"id": "m", "apiType": api},
                       "tools": [{"name": "f", "kind": "function"}]});
    if outputs {
        a["outputs"] = json!([{"name": "x", "kind": "string"}]);
    }
    Agent::from_value(a).expect("agent")
}

/// A scripted model answering every call with the next of its values (then an answer).
struct Replay(Mutex<Vec<Value>>);

impl Executor for Replay {
    fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
        let next =
            self.0.lock().unwrap().pop().unwrap_or_else(|| json!({"choices": [{"message": {"content": "end"}}]}));
        Box::pin(async move { Ok(next) })
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn processing_any_response_never_panics(response in any_json(), outputs in any::<bool>()) {
        for api in ["chat", "embedding", "image", "responses"] {
            let _ = openai::process_response(&agent(api, outputs), response.clone());
        }
        let _ = anthropic::process_response(&agent("chat", outputs), response);
    }

    #[test]
    fn processing_any_stream_never_panics(events in prop::collection::vec(any_json(), 0..12)) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for api in ["chat", "responses"] {
            let raw: Vec<RawEvent> = events.iter().cloned().map(RawEvent::Data).collect();
            let chunks = openai::process_stream(&agent(api, false), Box::pin(futures_util::stream::iter(raw)));
            rt.block_on(chunks.collect::<Vec<_>>());
        }
        let raw: Vec<RawEvent> = events.into_iter().map(RawEvent::Data).collect();
        rt.block_on(anthropic::process_stream(&agent("chat", false), Box::pin(futures_util::stream::iter(raw))).collect::<Vec<_>>());
    }

    #[test]
    fn the_agent_loop_fed_any_answers_never_panics(answers in prop::collection::vec(any_json(), 1..4)) {
        prompty::register_executor("prop-replay", Replay(Mutex::new(answers)));
        prompty::register_processor("prop-replay", openai::OpenAiProcessor);
        let a = Agent::from_value(json!({"model": {"id": "m", "provider": "prop-replay"},
                                          "tools": [{"name": "f", "kind": "function"}]})).unwrap();
        let options = TurnOptions::new().max_iterations(4).llm_retries(0)
            .tool("f", prompty::tool_fn_sync(Ok));
        let _ = prompty::run_turn(&a, vec![Message::new(Role::User, "go")], &Value::Object(Map::new()), options);
    }
}
