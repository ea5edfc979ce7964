//! Bad input never panics: 20,000 mutated prompts (bytes flipped, lines cut, delimiters and
//! template tags inserted) go through `load_str`, `prepare` and `parse`; each must return `Ok` or
//! `Err`, never panic. Deterministic (a fixed-seed generator), bounded in count.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// xorshift64*: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SNIPPETS: &[&str] = &[
    "---\n",
    "+++\n",
    "{{",
    "}}",
    "{%",
    "%}",
    "{% for x in y %}",
    "{% endfor %}",
    "{% if a %}",
    "{{#s}}",
    "{{/s}}",
    "{{^s}}",
    "user:\n",
    "system[a=\"b\", c=1]:\n",
    "assistant[:\n",
    "${env:",
    "${file:../x}",
    "${env:PROMPTY_NOPE}",
    "inputs:\n  - name: q\n",
    "  kind: thread\n",
    "model: [",
    ": :",
    "\t",
    "\u{FDD0}",
    "\u{FDD1}00000000",
    "\r\n",
    "\"",
    "'",
    "- ",
    "&anchor",
    "*anchor",
    "!!binary",
    "~",
    "__PROMPTY_THREAD_0000abcd_q__",
];

fn mutate(rng: &mut Rng, base: &str) -> String {
    let mut bytes = base.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(4) {
            0 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                bytes[i] = (rng.next() & 0x7f) as u8;
            }
            1 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                bytes.truncate(i);
            }
            2 => {
                let i = rng.below(bytes.len() + 1);
                let s = SNIPPETS[rng.below(SNIPPETS.len())];
                bytes.splice(i..i, s.bytes());
            }
            _ if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                let j = (i + rng.below(40)).min(bytes.len());
                bytes.drain(i..j);
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn fixtures() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures folder")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "prompty"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    out.push("---\ntemplate:\n  format: mustache\n---\n{{#items}}{{.}}{{/items}}{{^x}}n{{/x}}".to_owned());
    assert!(out.len() >= 10, "fixtures not found in {}", dir.display());
    out
}

#[test]
fn mutated_prompts_never_panic() {
    std::env::set_var("OPENAI_API_KEY", "sk-robustness");
    let bases = fixtures();
    let mut rng = Rng(0x5eed_1234_abcd_9876);
    let inputs = serde_json::json!({
        "question": "q\nsystem:\nx", "firstName": "A", "text": "t", "conversation": [{"role": "user", "content": "hi"}],
        "q": [{"role": "assistant", "content": "x"}], "items": ["a", {"b": 1}], "photo": "https://x/p.png"
    });
    let mut loaded = 0;
    for round in 0..20_000 {
        let base = &bases[round % bases.len()];
        let text = mutate(&mut rng, base);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if let Ok(agent) = prompty::load_str(&text, ".", "fuzz.prompty") {
                let _ = prompty::prepare(&agent, &inputs);
                let _ = prompty::render(&agent, &serde_json::json!({}));
                let _ = prompty::parse(&agent, agent.instructions.as_deref().unwrap_or(""));
                return true;
            }
            false
        }));
        match outcome {
            Ok(ok) => loaded += usize::from(ok),
            Err(_) => panic!("panicked on input #{round}:\n{text:?}"),
        }
    }
    // The mutations must not all be rejected at load: the later stages need exercising too.
    assert!(loaded > 3000, "only {loaded} of 20000 mutated prompts loaded");
}

/// Replaces or removes one random node of a JSON value.
fn mutate_json(rng: &mut Rng, v: &mut serde_json::Value) {
    use serde_json::Value;
    let replacement = |rng: &mut Rng| match rng.below(6) {
        0 => Value::Null,
        1 => serde_json::json!(42),
        2 => serde_json::json!("text"),
        3 => serde_json::json!([]),
        4 => serde_json::json!({}),
        _ => serde_json::json!([{"a": null}]),
    };
    match v {
        Value::Object(map) if !map.is_empty() && rng.below(3) > 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[rng.below(keys.len())];
            if rng.below(4) == 0 {
                map.remove(key);
            } else if let Some(child) = map.get_mut(key) {
                mutate_json(rng, child);
            }
        }
        Value::Array(items) if !items.is_empty() && rng.below(3) > 0 => {
            let i = rng.below(items.len());
            mutate_json(rng, &mut items[i]);
        }
        other => *other = replacement(rng),
    }
}

#[test]
fn mutated_provider_responses_never_panic() {
    let vectors: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/vectors.json")).unwrap(),
    )
    .unwrap();
    let responses: Vec<serde_json::Value> = vectors["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["vector"]["stage"] == "process")
        .map(|e| e["vector"]["input"]["response"].clone())
        .collect();
    assert!(responses.len() >= 10);
    let agents: Vec<prompty::Agent> = ["chat", "embedding", "image", "responses"]
        .iter()
        .flat_map(|api| {
            [false, true].map(|outputs| {
                let mut a = serde_json::json!({"model": {"id": "m", "provider": "openai", "apiType": api}});
                if outputs {
                    a["outputs"] = serde_json::json!([{"name": "result", "kind": "string"}]);
                }
                prompty::Agent::from_value(a).unwrap()
            })
        })
        .collect();
    let mut rng = Rng(0xfeed_beef_0bad_cafe);
    for round in 0..5_000 {
        let mut response = responses[round % responses.len()].clone();
        for _ in 0..1 + rng.below(3) {
            mutate_json(&mut rng, &mut response);
        }
        let agent = &agents[rng.below(agents.len())];
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let _ = prompty::providers::openai::process_response(agent, response.clone());
            let _ = prompty::providers::anthropic::process_response(agent, response.clone());
        }));
        assert!(outcome.is_ok(), "panicked on response #{round}: {response}");
    }
}

/// Sample stream events of each provider, to mutate.
fn stream_events() -> Vec<serde_json::Value> {
    use serde_json::json;
    vec![
        json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{\"a\""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"refusal": "no"}}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}),
        json!({"type": "response.output_text.delta", "delta": "Hi"}),
        json!({"type": "response.output_item.added", "item": {"type": "function_call", "call_id": "c", "name": "f"}}),
        json!({"type": "response.function_call_arguments.delta", "delta": "{}"}),
        json!({"type": "response.completed", "response": {"usage": {"input_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"x\":"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "yo"}}),
        json!({"type": "message_delta", "usage": {"output_tokens": 3}, "delta": {"stop_reason": "end_turn"}}),
        json!({"type": "message_stop"}),
    ]
}

#[test]
fn mutated_stream_events_never_panic() {
    use futures_util::StreamExt;
    let base = stream_events();
    let agents: Vec<prompty::Agent> = ["chat", "responses"]
        .iter()
        .map(|api| prompty::Agent::from_value(serde_json::json!({"model": {"id": "m", "apiType": api}})).unwrap())
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for round in 0..2_000 {
        let mut events = Vec::new();
        for _ in 0..1 + rng.below(8) {
            let mut e = base[rng.below(base.len())].clone();
            if rng.below(2) == 0 {
                mutate_json(&mut rng, &mut e);
            }
            events.push(if rng.below(10) == 0 {
                prompty::RawEvent::TransportError("connection reset".into())
            } else {
                prompty::RawEvent::Data(e)
            });
        }
        let agent = &agents[rng.below(agents.len())];
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(async {
                let raw = || -> prompty::RawStream { Box::pin(futures_util::stream::iter(events.clone())) };
                let _: Vec<_> = prompty::providers::openai::process_stream(agent, raw()).collect().await;
                let _: Vec<_> = prompty::providers::anthropic::process_stream(agent, raw()).collect().await;
            })
        }));
        assert!(outcome.is_ok(), "panicked on stream #{round}: {events:?}");
    }
}
