//! End-to-end tests against a real model on 127.0.0.1: SmolLM2-135M-Instruct served by
//! llama-cpp-python's OpenAI-compatible server (see `e2e/llama.rs`; the server is built once per
//! machine into a cache outside the repository). This is what a user of a local or third-party
//! OpenAI-compatible server meets: `max_tokens` instead of `max_completion_tokens`,
//! `response_format` limited to `text` and `json_object`, a key or none.
//!
//! Free text is checked for structure only (an answer that is not empty, the token limit, the
//! status of an error). Where the model's output is held to a schema or a tool's parameters, the
//! values are asserted exactly: they are deterministic (see the note above `Weather`).
//!
//! One chat server is shared by the tests running at the same time; the embedding server and the
//! server killed mid-stream are their own.

#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/llama.rs"]
mod llama;
#[path = "e2e/peers.rs"]
mod peers;

use common::within;
use futures_util::StreamExt;
use llama::{KEY, MODEL};
use peers::Peer;
use prompty::{Agent, Connection, Error, Outcome, StreamChunk, StructuredOutput, ToolChoice, TurnOptions};
use serde_json::{json, Value};
use std::sync::Mutex;

/// A prompt on `server` with `key`, `model_extra` under `model:` (indented by two) and a
/// `question` input.
fn local_prompt(server: &Peer, key: &str, model_extra: &str, after_model: &str) -> Agent {
    let text = format!(
        "---\nname: local\nmodel:\n  id: {MODEL}\n  provider: openai\n  connection:\n    kind: key\n    endpoint: {}/v1\n    \
         apiKey: \"{key}\"\n{model_extra}{after_model}inputs:\n  - name: question\n    kind: string\n    required: true\n  \
         - name: history\n    kind: thread\n---\nsystem:\nYou are a terse assistant.\n\n{{{{ history }}}}\n\nuser:\n{{{{ question }}}}\n",
        server.url()
    );
    prompty::load_str(&text, ".", "local.prompty").unwrap_or_else(|e| panic!("bad test prompt: {e}\n{text}"))
}

/// Options under `model:` with greedy sampling and `max` output tokens.
fn options(max: u32, extra: &str) -> String {
    format!("  options:\n    temperature: 0\n    maxOutputTokens: {max}\n{extra}")
}

async fn raw_call(agent: &Agent, inputs: &Value) -> Value {
    let messages = prompty::prepare_async(agent, inputs).await.unwrap();
    let executor = prompty::get_executor("openai").unwrap();
    within(executor.execute_async(agent, &messages)).await.unwrap()
}

#[tokio::test]
async fn chat_answers_and_the_model_is_listed() {
    let server = llama::shared_chat_server();
    let agent = local_prompt(&server, KEY, &options(24, ""), "");
    let answer: String = within(prompty::invoke_async(&agent, &json!({"question": "Name a colour."}))).await.unwrap();
    assert!(!answer.trim().is_empty(), "an answer");

    // `prompty::list_models` dispatches on the provider; the connection is the prompt's.
    let connection: Option<&Connection> = agent.model.as_ref().and_then(|m| m.connection.as_ref());
    let models = within(prompty::list_models("openai", connection)).await.unwrap();
    assert!(models.iter().any(|m| m.id == MODEL), "{models:?}");
}

#[tokio::test]
async fn the_output_token_limit_is_honoured() {
    let server = llama::shared_chat_server();
    let agent = local_prompt(&server, KEY, &options(6, ""), "");
    let raw = raw_call(&agent, &json!({"question": "Write a long story about a dragon and a knight."})).await;
    assert_eq!(raw["choices"][0]["finish_reason"], "length", "{raw:#}");
    let used = raw["usage"]["completion_tokens"].as_u64().unwrap();
    assert!((1..=6).contains(&used), "{used} tokens for a limit of 6");
}

#[tokio::test]
async fn streamed_chat_yields_text() {
    let server = llama::shared_chat_server();
    let agent = local_prompt(&server, KEY, &options(16, ""), "");
    let stream = within(prompty::invoke_stream(&agent, &json!({"question": "Say hello."}))).await.unwrap();
    let chunks = common::collect(stream).await;
    let text: String = chunks.iter().filter_map(StreamChunk::text).collect();
    assert!(!text.trim().is_empty(), "{chunks:?}");
    for chunk in &chunks {
        match chunk {
            StreamChunk::Failure(f) => panic!("the stream failed: {f:?}"),
            // Usage when the server sends it (llama-cpp-python does not).
            StreamChunk::Usage(u) => assert!(u["completion_tokens"].as_u64().is_some_and(|n| n > 0), "{u}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_thread_reaches_the_model() {
    let server = llama::shared_chat_server();
    let agent = local_prompt(&server, KEY, &options(12, ""), "");
    let question = json!({"question": "And my name?"});
    let alone = raw_call(&agent, &question).await;
    let with_thread = json!({"question": "And my name?", "history": [
        {"role": "user", "content": "Hello, my name is Ada and I write prompts."},
        {"role": "assistant", "content": "Nice to meet you, Ada."}]});
    let threaded = raw_call(&agent, &with_thread).await;
    let tokens = |raw: &Value| raw["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(tokens(&threaded) > tokens(&alone) + 10, "the earlier turns were sent as messages");
    assert!(threaded["choices"][0]["message"]["content"].as_str().is_some_and(|t| !t.trim().is_empty()));
}

// Determinism: why the model's structured values are asserted exactly. Decoding is greedy: every
// prompt here sends `temperature: 0`, which llama-cpp-python turns into picking the most likely
// token at each step (no sampling, so no random numbers; the server is started with `--seed 1` all
// the same). The weights are one fixed file (pinned in `llama/requirements.txt`), the context is
// fresh for each request, and the server is built with `-DGGML_NATIVE=OFF`, the same CPU kernels on
// every x86-64 machine. The same prompt therefore yields the same tokens, run after run; the values
// below were read from two runs and agree. A change of model, server version or prompt text may
// change them, and should then be read again, not loosened.
#[derive(Debug, PartialEq, serde::Deserialize)]
struct Weather {
    city: String,
    temperature: f64,
}

const WEATHER_OUTPUTS: &str =
    "outputs:\n  - name: city\n    kind: string\n    required: true\n  - name: temperature\n    \
                               kind: float\n    required: true\n";

#[tokio::test]
async fn structured_output_through_the_json_object_modes() {
    let server = llama::shared_chat_server();
    let report = json!({"question": "Paris today: sunny, 22 degrees."});

    // Strict `json_schema`, chosen in the prompt, is refused by this server (HTTP 500), once,
    // with an error that names the settings that choose another mode.
    let strict = local_prompt(&server, KEY, &options(60, "    structuredOutput: jsonSchema\n"), WEATHER_OUTPUTS);
    let refused = within(prompty::invoke_async::<Value>(&strict, &report)).await.unwrap_err();
    let setting = "model.options.structuredOutput";
    assert!(matches!(&refused, Error::Config { setting: s, .. } if s == setting), "{refused:?}");
    let text = refused.to_string();
    assert!(text.contains("HTTP 500") && text.contains("'json_object'") && !text.contains("attempts"), "{text}");
    assert!(text.contains("PROMPTY_STRUCTURED_OUTPUT") && text.contains("--structured-output"), "{text}");

    // The default falls back to `json_object` with the schema, which this server enforces.
    let default = local_prompt(&server, KEY, &options(60, ""), WEATHER_OUTPUTS);
    // The values are deterministic (greedy decoding, see the note above `Weather`): the city of the
    // report and a temperature this small model makes up (not the report's 22) under the schema.
    let weather: Weather = within(prompty::invoke_async(&default, &report)).await.unwrap();
    assert_eq!(weather, Weather { city: "Paris".into(), temperature: 23.56 });

    // The connection's mode: `json_object` with the schema, which llama.cpp's servers enforce.
    let mut connection_mode = local_prompt(&server, KEY, &options(60, ""), WEATHER_OUTPUTS);
    match connection_mode.model.as_mut().and_then(|m| m.connection.as_mut()) {
        Some(Connection::Key { common, .. }) => common.structured_output = Some(StructuredOutput::JsonObjectSchema),
        other => panic!("{other:?}"),
    }
    let weather: Weather = within(prompty::invoke_async(&connection_mode, &report)).await.unwrap();
    assert_eq!(weather, Weather { city: "Paris".into(), temperature: 23.56 }, "the same request as the fallback's");

    // The prompt's mode: plain JSON mode, the schema only in the prompt. The server holds the
    // model to JSON (not to the schema), so the answer is an object, whole unless the token
    // limit cut it.
    let option_mode = local_prompt(&server, KEY, &options(60, "    structuredOutput: jsonObject\n"), WEATHER_OUTPUTS);
    let raw = raw_call(&option_mode, &report).await;
    let content = raw["choices"][0]["message"]["content"].as_str().unwrap_or_default();
    assert!(content.trim_start().starts_with('{'), "{raw:#}");
    if raw["choices"][0]["finish_reason"] == "stop" {
        assert!(serde_json::from_str::<Value>(content).is_ok_and(|v| v.is_object()), "{content}");
    }
}

static WEATHER_CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The weather in a city (a test handler: it records the call).
#[prompty::tool]
async fn local_weather(city: String) -> String {
    WEATHER_CALLS.lock().unwrap_or_else(|e| e.into_inner()).push(city);
    "sunny, 22 degrees".to_owned()
}

#[tokio::test]
async fn a_forced_tool_call_through_turn() {
    let server = llama::shared_chat_server();
    let tools = "tools:\n  - name: local_weather\n    kind: function\n    description: The weather in a city\n    \
                 parameters:\n      - name: city\n        kind: string\n        required: true\n";
    let agent = local_prompt(&server, KEY, &options(48, "    toolChoice: local_weather\n"), tools);
    // This small model calls the tool again when it may: after the forced call it must answer.
    let options = TurnOptions::new().after_forced_tool(ToolChoice::None).max_iterations(3);
    let answer: String =
        within(prompty::turn_async(&agent, &json!({"question": "What is the weather in Paris?"}), options))
            .await
            .unwrap();
    assert!(!answer.trim().is_empty());
    // The forced call's arguments are held to the tool's parameters and decoded greedily (see
    // the note above `Weather`): the handler ran once, with the question's city.
    let calls = WEATHER_CALLS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(calls, ["Paris"], "the #[tool] handler ran once, with the city");
}

#[tokio::test]
async fn embeddings_from_a_keyless_second_instance() {
    let server = llama::embedding_server();
    let text = format!(
        "---\nmodel:\n  id: {MODEL}\n  provider: openai\n  apiType: embedding\n  connection:\n    kind: anonymous\n    \
         endpoint: {}/v1\n---\nuser:\n{{{{ text }}}}\n",
        server.url()
    );
    let agent = prompty::load_str(&text, ".", "embed.prompty").unwrap();
    // One vector, or (llama-cpp-python with a model that has no pooling) one vector per token.
    let embedding: Value = within(prompty::invoke_async(&agent, &json!({"text": "a red apple"}))).await.unwrap();
    let vectors: Vec<Vec<f64>> = match serde_json::from_value::<Vec<f64>>(embedding.clone()) {
        Ok(one) => vec![one],
        Err(_) => serde_json::from_value(embedding).unwrap(),
    };
    assert!(!vectors.is_empty());
    for v in &vectors {
        assert!(v.len() >= 64 && v.iter().all(|x| x.is_finite()), "{} numbers", v.len());
    }
}

#[tokio::test]
async fn a_wrong_key_is_refused_once_and_never_shown() {
    let server = llama::shared_chat_server();
    let wrong = "sk-wrong-e2e-Zq8Xv3Lp";
    for key in [wrong, ""] {
        let agent = local_prompt(&server, key, &options(8, ""), "");
        let err = within(prompty::invoke_async::<String>(&agent, &json!({"question": "Hi"}))).await.unwrap_err();
        let Error::Http(failure) = &err else { panic!("expected an HTTP error, got {err:?}") };
        assert_eq!(failure.status, Some(401), "{err}");
        assert_eq!(failure.attempts, 1, "a 401 is not retried");
        for shown in [err.to_string(), format!("{err:?}"), format!("{agent:?}")] {
            assert!(!shown.contains(wrong) && !shown.contains("Zq8Xv3Lp"), "the key leaked: {shown}");
        }
    }
}

#[tokio::test]
async fn a_server_killed_mid_stream_ends_the_stream_with_a_failure() {
    let mut server = llama::start("llama-killed", &[]);
    let agent = local_prompt(&server, "", &options(1000, ""), "");
    let question = json!({"question": "Write a very long story about a dragon, a knight and a castle."});
    let mut stream = within(prompty::invoke_stream(&agent, &question)).await.unwrap();
    let first = within(stream.next()).await;
    assert!(matches!(first, Some(StreamChunk::Text(_))), "{first:?}");
    server.kill();
    let rest: Vec<StreamChunk> = within(stream.collect()).await;
    let failure = rest.iter().find_map(|c| match c {
        StreamChunk::Failure(f) => Some(f),
        _ => None,
    });
    let failure = failure.unwrap_or_else(|| panic!("no failure after the kill: {rest:?}"));
    assert_eq!(failure.outcome, Outcome::Indeterminate, "output had started: {failure:?}");
    assert!(matches!(rest.last(), Some(StreamChunk::Failure(_))), "nothing follows the failure");
}
