//! Processing of the `local` provider's responses, which are shaped as OpenAI's: a
//! `chat.completion` (or its `chat.completion.chunk` events) and an embeddings `list`.

use crate::lookup::get;
use crate::providers::common::{drive, embedding_vectors, error_message, structured, PartialCall, Sink, StreamHandler};
use crate::{
    Agent, ChunkStream, Error, Outcome, Processed, Processor, RawStream, Result, StreamChunk, StreamFailure, ToolCall,
};
use serde_json::Value;

/// The processor of `model.provider: local`:
/// - chat: the tool call ([`Processed::ToolCalls`], `finish_reason: tool_calls`) when the model
///   made one; else the text, JSON-parsed when the agent declares `outputs:`;
/// - embedding: the vector of a single input, or the list of vectors.
///
/// ```
/// use prompty::{Processed, ToolCall};
/// use serde_json::json;
/// let agent = prompty::Agent::from_value(json!({"model": {"id": "smollm2-135m", "provider": "local"}}))?;
/// let p = prompty::get_processor("local")?;
/// let raw = json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
///     "message": {"role": "assistant", "content": "Hello!"}}]});
/// assert_eq!(p.process(&agent, raw)?, Processed::Answer(json!("Hello!")));
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
#[prompty_macros::processor("local")]
pub struct LocalProcessor;

impl Processor for LocalProcessor {
    fn process(&self, agent: &Agent, response: Value) -> Result<Processed> {
        if let Some(message) = error_message(&response) {
            return Err(Error::Execution { message: format!("the local model failed: {message}") });
        }
        match agent.model.as_ref().map_or("chat", |m| m.api_type()) {
            "embedding" | "embeddings" => embedding_vectors(&response).map(Processed::Answer),
            _ => chat(agent, &response),
        }
    }

    fn process_stream(&self, agent: &Agent, events: RawStream) -> ChunkStream {
        match agent.model.as_ref().map_or("chat", |m| m.api_type()) {
            "chat" => drive(events, ChatStream::default()),
            other => {
                let failure = StreamChunk::Failure(StreamFailure {
                    outcome: Outcome::Determinate,
                    message: format!("model.apiType '{other}' does not stream"),
                });
                Box::pin(futures_util::stream::iter([failure]))
            }
        }
    }
}

fn chat(agent: &Agent, response: &Value) -> Result<Processed> {
    let message = get(response, "choices")
        .and_then(|c| c.get(0))
        .and_then(|c| get(c, "message"))
        .ok_or_else(|| Error::Execution { message: "the local model's response has no choices".into() })?;
    if let Some(calls) = get(message, "tool_calls").and_then(Value::as_array).filter(|c| !c.is_empty()) {
        return Ok(Processed::ToolCalls(calls.iter().map(tool_call).collect()));
    }
    let text = get(message, "content").and_then(Value::as_str).unwrap_or_default().to_owned();
    Ok(Processed::Answer(structured(agent, text)))
}

fn tool_call(call: &Value) -> ToolCall {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let f = call.get("function").unwrap_or(&Value::Null);
    let arguments = text(f.get("arguments"));
    ToolCall {
        id: text(call.get("id")),
        name: text(f.get("name")),
        arguments: if arguments.trim().is_empty() { "{}".to_owned() } else { arguments },
    }
}

/// `chat.completion.chunk` events: content is text, a tool call (sent whole in one delta) is
/// yielded at the end, the usage of the last event is a usage chunk, an `error` ends the stream.
#[derive(Default)]
struct ChatStream {
    calls: Vec<PartialCall>,
}

impl StreamHandler for ChatStream {
    fn on_event(&mut self, event: Value, sink: &mut Sink) {
        if let Some(message) = error_message(&event) {
            return sink.fail_after_output(format!("the local model failed: {message}"));
        }
        let delta = event.get("choices").and_then(|c| c.get(0)).and_then(|c| c.get("delta"));
        if let Some(d) = delta {
            if let Some(text) = d.get("content").and_then(Value::as_str) {
                sink.text(text);
            }
            for c in d.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                sink.start();
                let call = tool_call(c);
                self.calls.push(PartialCall {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                    ..Default::default()
                });
            }
        }
        if let Some(usage) = event.get("usage").filter(|u| u.is_object()) {
            sink.usage(usage.clone());
        }
    }

    fn on_end(&mut self, sink: &mut Sink) {
        for call in self.calls.drain(..) {
            sink.tool_call(call.into_call());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RawEvent;
    use futures_util::StreamExt;
    use serde_json::json;

    fn agent(outputs: bool, api: &str) -> Agent {
        let mut a = json!({"name": "t", "model": {"id": "smollm2-135m", "provider": "local", "apiType": api}});
        if outputs {
            a["outputs"] = json!([{"name": "city", "kind": "string"}]);
        }
        Agent::from_value(a).unwrap()
    }

    #[test]
    fn answers_calls_structured_output_and_embeddings() {
        let p = LocalProcessor;
        let text = json!({"choices": [{"message": {"role": "assistant", "content": "{\"city\":\"Paris\"}"}}]});
        assert_eq!(
            p.process(&agent(false, "chat"), text.clone()).unwrap(),
            Processed::Answer(json!("{\"city\":\"Paris\"}"))
        );
        assert_eq!(p.process(&agent(true, "chat"), text).unwrap(), Processed::Answer(json!({"city": "Paris"})));
        let call = json!({"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_3", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]}}]});
        assert_eq!(
            p.process(&agent(false, "chat"), call).unwrap(),
            Processed::ToolCalls(vec![ToolCall::new("call_3", "weather", "{\"city\":\"Oslo\"}")])
        );
        let one = json!({"object": "list", "data": [{"index": 0, "embedding": [0.1, 0.2]}]});
        assert_eq!(p.process(&agent(false, "embedding"), one).unwrap(), Processed::Answer(json!([0.1, 0.2])));
        let two = json!({"data": [{"index": 1, "embedding": [2]}, {"index": 0, "embedding": [1]}]});
        assert_eq!(p.process(&agent(false, "embedding"), two).unwrap(), Processed::Answer(json!([[1], [2]])));
        assert!(p
            .process(&agent(false, "chat"), json!({"error": {"message": "boom"}}))
            .unwrap_err()
            .to_string()
            .contains("boom"));
    }

    #[test]
    fn streams_text_a_call_and_usage() {
        let events = [
            json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {"tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
        ];
        let stream = LocalProcessor
            .process_stream(&agent(false, "chat"), Box::pin(futures_util::stream::iter(events.map(RawEvent::Data))));
        let chunks: Vec<StreamChunk> =
            tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(stream.collect());
        assert_eq!(
            chunks,
            [
                StreamChunk::Text("Hel".into()),
                StreamChunk::Text("lo".into()),
                StreamChunk::Usage(json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})),
                StreamChunk::ToolCall(ToolCall::new("call_1", "f", "{}")),
            ]
        );
    }
}
