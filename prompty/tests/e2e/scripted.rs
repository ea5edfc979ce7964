//! A scripted model for the OpenTelemetry tests (`prompty/tests/otel.rs` and
//! `examples/tests/tracing_otel.rs`): a prompt whose executor answers from a list of Chat
//! Completions responses, with an API key in its connection that must never reach a collector.

#![allow(dead_code)]

use prompty::{Agent, BoxFuture, Error, Executor, Message, Result};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Mutex;

/// The API key in the prompts' connection: it must never reach the collector.
pub const API_KEY: &str = "sk-otel-never-exported-4711";

/// A model that answers from a script of Chat Completions responses.
struct Script(Mutex<VecDeque<Value>>);

impl Executor for Script {
    fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        let next = self.0.lock().unwrap().pop_front();
        Box::pin(async move { next.ok_or_else(|| Error::Execution { message: "the script ran out".into() }) })
    }
}

/// A prompt whose model (`m`, temperature 0.3, a keyed connection) answers from `responses`.
pub fn scripted(provider: &str, responses: Vec<Value>) -> Agent {
    prompty::register_executor(provider, Script(Mutex::new(responses.into())));
    prompty::register_processor(provider, prompty::providers::openai::OpenAiProcessor);
    let text = format!(
        "---\nname: otel-test\nmodel:\n  id: m\n  provider: {provider}\n  connection:\n    kind: key\n    endpoint: https://models.invalid\n    apiKey: {API_KEY}\n  options:\n    temperature: 0.3\ninputs: [q]\n---\nuser:\n{{{{ q }}}}"
    );
    prompty::load_str(&text, ".", "otel.prompty").unwrap()
}

/// A final answer `text` with usage 9 + 3.
pub fn answer(id: &str, text: &str) -> Value {
    json!({"id": id, "model": "m-2026", "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}})
}

/// A call of `tool` with `{"city": "Oslo"}`, usage 5 + 2.
pub fn tool_call(id: &str, tool: &str) -> Value {
    json!({"id": id, "model": "m-2026", "choices": [{"message": {"role": "assistant", "content": null,
           "tool_calls": [{"id": "call-1", "type": "function", "function": {"name": tool, "arguments": "{\"city\":\"Oslo\"}"}}]},
           "finish_reason": "tool_calls"}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
}

/// A current-thread runtime.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}
