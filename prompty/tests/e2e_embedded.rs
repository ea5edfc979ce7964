//! End-to-end tests of the embedded model: the `local` provider running SmolLM2-135M-Instruct
//! (`smollm2-135m`, from the cache: see `e2e/embedded.rs`) inside this process, on the CPU. The
//! same structural assertions as `e2e_local_model.rs` makes against llama.cpp's server (an answer
//! that is not empty, the token limit, a thread, a struct that parses, a tool called through
//! `turn`, embeddings' dimension, cancellation), plus seeded sampling.
//!
//! Free text is checked for structure only. Where the output is held to a schema (structured
//! output, tool arguments) the values are asserted exactly: decoding is greedy (see the note above
//! `Weather`).
//!
//! Every test holds [`ALONE`] for reading, the cancellation test for writing: it measures the
//! CPU time of the whole process, so it runs with no other generation going on.

#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/embedded.rs"]
mod embedded;
#[path = "e2e/peers.rs"]
mod peers;

use common::within;
use embedded::{cached_model, ALIAS, EMBEDDING_LENGTH};
use futures_util::StreamExt;
use prompty::{Agent, StreamChunk, ToolChoice, TurnOptions};
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::RwLock;

/// Held for reading by every test, for writing by the one that must run alone.
static ALONE: RwLock<()> = RwLock::const_new(());

/// A prompt for the embedded model with `model_extra` under `model:` (indented by two),
/// `after_model` after it, and the inputs `question` and `history`.
fn local_prompt(model_extra: &str, after_model: &str) -> Agent {
    cached_model();
    let text = format!(
        "---\nname: embedded\nmodel:\n  id: {ALIAS}\n  provider: local\n{model_extra}{after_model}inputs:\n  - name: question\n    \
         kind: string\n    required: true\n  - name: history\n    kind: thread\n---\nsystem:\nYou are a terse assistant.\n\n\
         {{{{ history }}}}\n\nuser:\n{{{{ question }}}}\n"
    );
    prompty::load_str(&text, ".", "embedded.prompty").unwrap_or_else(|e| panic!("bad test prompt: {e}\n{text}"))
}

/// Options under `model:` with greedy decoding and `max` output tokens.
fn options(max: u32, extra: &str) -> String {
    format!("  options:\n    temperature: 0\n    maxOutputTokens: {max}\n{extra}")
}

/// The raw response of the `local` executor (shaped as OpenAI's chat completions).
async fn raw_call(agent: &Agent, inputs: &Value) -> Value {
    let messages = prompty::prepare_async(agent, inputs).await.unwrap();
    let executor = prompty::get_executor("local").expect("the local executor is registered");
    within(executor.execute_async(agent, &messages)).await.unwrap()
}

#[tokio::test]
async fn chat_answers_and_the_model_is_listed() {
    let _shared = ALONE.read().await;
    let agent = local_prompt(&options(24, ""), "");
    let answer: String = within(prompty::invoke_async(&agent, &json!({"question": "Name a colour."}))).await.unwrap();
    assert!(!answer.trim().is_empty(), "an answer");

    let models = within(prompty::list_models("local", None)).await.unwrap();
    let listed = models.iter().find(|m| m.id == ALIAS).unwrap_or_else(|| panic!("{ALIAS} is not listed: {models:?}"));
    let extra = listed.additional_properties.as_ref().expect("the cache's details");
    assert_eq!(extra["downloaded"], true, "{listed:?}");
}

#[tokio::test]
async fn the_output_token_limit_is_honoured() {
    let _shared = ALONE.read().await;
    let agent = local_prompt(&options(6, ""), "");
    let raw = raw_call(&agent, &json!({"question": "Write a long story about a dragon and a knight."})).await;
    assert_eq!(raw["choices"][0]["finish_reason"], "length", "{raw:#}");
    let used = raw["usage"]["completion_tokens"].as_u64().unwrap();
    assert!((1..=6).contains(&used), "{used} tokens for a limit of 6");
}

#[tokio::test]
async fn streamed_chat_yields_text_and_usage() {
    let _shared = ALONE.read().await;
    let agent = local_prompt(&options(16, ""), "");
    let stream = within(prompty::invoke_stream(&agent, &json!({"question": "Say hello."}))).await.unwrap();
    let chunks = common::collect(stream).await;
    let text: String = chunks.iter().filter_map(StreamChunk::text).collect();
    assert!(!text.trim().is_empty(), "{chunks:?}");
    let mut usage = 0;
    for chunk in &chunks {
        match chunk {
            StreamChunk::Failure(f) => panic!("the stream failed: {f:?}"),
            StreamChunk::Usage(u) => {
                usage += 1;
                let completion = u["completion_tokens"].as_u64().unwrap_or(0);
                assert!((1..=16).contains(&completion), "{u}");
                assert!(u["prompt_tokens"].as_u64().is_some_and(|n| n > 10), "{u}");
            }
            _ => {}
        }
    }
    assert_eq!(usage, 1, "one usage chunk: {chunks:?}");
}

#[tokio::test]
async fn a_thread_reaches_the_model() {
    let _shared = ALONE.read().await;
    let agent = local_prompt(&options(12, ""), "");
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

// Determinism: why the model's structured values are asserted exactly. `temperature: 0` is greedy
// decoding: the most likely token at each step, no random numbers. The weights are one file pinned
// by its SHA-256, the prompt is rendered by the file's own chat template, and the arithmetic is
// the same code on every run, so the same prompt yields the same tokens, run after run; the values
// below were read from two runs and agree. A change of model, engine or prompt text may change
// them, and they should then be read again, not loosened.
#[derive(Debug, PartialEq, serde::Deserialize)]
struct Weather {
    city: String,
    temperature: f64,
}

const WEATHER_OUTPUTS: &str =
    "outputs:\n  - name: city\n    kind: string\n    required: true\n  - name: temperature\n    \
                               kind: float\n    required: true\n";

#[tokio::test]
async fn structured_output_parses_even_when_the_token_limit_cuts_it() {
    let _shared = ALONE.read().await;
    let report = json!({"question": "Paris today: sunny, 22 degrees."});
    let agent = local_prompt(&options(60, ""), WEATHER_OUTPUTS);
    // The values are deterministic (greedy decoding, see the note above `Weather`): here the
    // report's own city and temperature.
    let weather: Weather = within(prompty::invoke_async(&agent, &report)).await.unwrap();
    assert_eq!(weather, Weather { city: "Paris".into(), temperature: 22.0 });

    // Far too few tokens for the object (4: `{"city":"` and no more): the constraint closes it
    // with its shortest completion, and it parses.
    let cut = local_prompt(&options(4, ""), WEATHER_OUTPUTS);
    let raw = raw_call(&cut, &report).await;
    assert_eq!(raw["choices"][0]["finish_reason"], "length", "{raw:#}");
    let content = raw["choices"][0]["message"]["content"].as_str().unwrap_or_default();
    assert_eq!(content, r#"{"city":"","temperature":0}"#, "{raw:#}");
    let through_invoke: Weather = within(prompty::invoke_async(&cut, &report)).await.unwrap();
    assert_eq!(through_invoke, Weather { city: String::new(), temperature: 0.0 });
}

static WEATHER_CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static FORECAST_CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The weather in a city (a test handler: it records the call).
#[prompty::tool]
async fn embedded_weather(city: String) -> String {
    WEATHER_CALLS.lock().unwrap_or_else(|e| e.into_inner()).push(city);
    "sunny, 22 degrees".to_owned()
}

/// Tomorrow's weather in a city (a test handler: it records the call).
#[prompty::tool]
async fn embedded_forecast(city: String) -> String {
    FORECAST_CALLS.lock().unwrap_or_else(|e| e.into_inner()).push(city);
    "rain, 15 degrees".to_owned()
}

fn tool(name: &str, description: &str) -> String {
    format!(
        "tools:\n  - name: {name}\n    kind: function\n    description: {description}\n    parameters:\n      - name: city\n        \
         kind: string\n        required: true\n"
    )
}

#[tokio::test]
async fn a_forced_tool_call_through_turn() {
    let _shared = ALONE.read().await;
    let tools = tool("embedded_weather", "The weather in a city");
    let agent = local_prompt(&options(48, "    toolChoice: embedded_weather\n"), &tools);
    // After the forced call the model must answer.
    let options = TurnOptions::new().after_forced_tool(ToolChoice::None).max_iterations(3);
    let answer: String =
        within(prompty::turn_async(&agent, &json!({"question": "What is the weather in Paris?"}), options))
            .await
            .unwrap();
    assert!(!answer.trim().is_empty());
    // The forced call's arguments are held to the tool's parameters and decoded greedily: the
    // handler ran once, with the question's city.
    let calls = WEATHER_CALLS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(calls, ["Paris"], "the #[tool] handler ran once, with the city");
}

#[tokio::test]
async fn tool_choice_auto_answers_or_calls_and_never_fails() {
    let _shared = ALONE.read().await;
    let tools = tool("embedded_forecast", "Tomorrow's weather in a city");
    let agent = local_prompt(&options(48, "    toolChoice: auto\n"), &tools);
    let options = TurnOptions::new().max_iterations(4);
    let answer: String =
        within(prompty::turn_async(&agent, &json!({"question": "Will it rain in Oslo tomorrow?"}), options))
            .await
            .unwrap();
    assert!(!answer.trim().is_empty());
    // Whatever the model chose, a call it made reached the handler with a city that parses.
    for city in FORECAST_CALLS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        assert!(!city.trim().is_empty());
    }
}

#[tokio::test]
async fn embeddings_have_the_model_width() {
    let _shared = ALONE.read().await;
    cached_model();
    let text =
        format!("---\nmodel:\n  id: {ALIAS}\n  provider: local\n  apiType: embedding\n---\nuser:\n{{{{ text }}}}\n");
    let agent = prompty::load_str(&text, ".", "embed.prompty").unwrap();
    let embedding: Value = within(prompty::invoke_async(&agent, &json!({"text": "a red apple"}))).await.unwrap();
    let vector: Vec<f64> = serde_json::from_value(embedding.clone()).unwrap_or_else(|e| panic!("{e}: {embedding}"));
    assert_eq!(vector.len(), EMBEDDING_LENGTH);
    assert!(vector.iter().all(|x| x.is_finite()), "{vector:?}");
    let norm: f64 = vector.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "L2-normalised: {norm}");
}

#[tokio::test]
async fn a_fixed_seed_gives_the_same_text_and_another_seed_another() {
    let _shared = ALONE.read().await;
    let sampled = |seed: u64| {
        local_prompt(&format!("  options:\n    temperature: 0.9\n    maxOutputTokens: 24\n    seed: {seed}\n"), "")
    };
    let question = json!({"question": "Tell me about the sea."});
    let text = |agent: Agent| {
        let question = question.clone();
        async move { within(prompty::invoke_async::<String>(&agent, &question)).await.unwrap() }
    };
    let first = text(sampled(7)).await;
    let second = text(sampled(7)).await;
    let other = text(sampled(8)).await;
    assert!(!first.trim().is_empty());
    assert_eq!(first, second, "seed 7 twice");
    assert_ne!(first, other, "seeds 7 and 8");
}

/// The CPU time this process has used (user and system), from `/proc/self/stat`.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command name in parentheses: utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // USER_HZ is 100 on Linux.
    ticks / 100.0
}

#[tokio::test]
async fn a_dropped_stream_stops_the_generation() {
    // Alone: the CPU time measured below is the whole process's.
    let _alone = ALONE.write().await;
    let agent = local_prompt(&options(2000, ""), "");
    let question = json!({"question": "Write a very long story about a dragon, a knight and a castle."});
    let mut stream = within(prompty::invoke_stream(&agent, &question)).await.unwrap();
    let first = within(stream.next()).await;
    assert!(matches!(first, Some(StreamChunk::Text(_))), "{first:?}");
    drop(stream);
    // A generation left running would keep a core busy for many seconds (up to 2000 tokens):
    // after the drop, this process must go (almost) idle. Give the generator a moment to see the
    // closed stream, then measure a quiet second and a half.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cpu_seconds();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let used = cpu_seconds() - before;
    assert!(used < 0.3, "{used:.2} s of CPU in 1.5 s after the stream was dropped: the generation went on");
    // And the model serves the next request.
    let short = local_prompt(&options(4, ""), "");
    let raw = raw_call(&short, &json!({"question": "Say yes."})).await;
    assert!(raw["usage"]["completion_tokens"].as_u64().is_some_and(|n| (1..=4).contains(&n)), "{raw:#}");
}
