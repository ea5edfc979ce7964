//! Processing of Anthropic Messages responses (spec §8.5) and streams.

use crate::providers::common::{drive, error_message, structured, PartialCall, Sink, StreamHandler};
use crate::{Agent, ChunkStream, Error, Processed, Processor, RawStream, Result, ToolCall};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The processor of the `anthropic` provider: [`process_response`] and [`process_stream`].
///
/// ```
/// let p = prompty::get_processor("anthropic")?;
/// let agent = prompty::Agent::from_value(serde_json::json!({"model": "claude-sonnet-4-20250514"}))?;
/// let out = p.process(&agent, serde_json::json!({"type": "message", "content": [{"type": "text", "text": "Hi"}]}))?;
/// assert_eq!(out, prompty::Processed::Answer("Hi".into()));
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
#[prompty_macros::processor("anthropic")]
pub struct AnthropicProcessor;

impl Processor for AnthropicProcessor {
    fn process(&self, agent: &Agent, response: Value) -> Result<Processed> {
        process_response(agent, response)
    }

    fn process_stream(&self, agent: &Agent, events: RawStream) -> ChunkStream {
        process_stream(agent, events)
    }
}

/// The result of a Messages API response: the `tool_use` blocks as [`Processed::ToolCalls`]
/// (arguments re-serialized as compact JSON) when there are any; else the text of all text blocks,
/// concatenated, JSON-parsed when the agent declares outputs (the raw text when it is not JSON),
/// as a [`Processed::Answer`]. An `error` body is an error carrying the provider's message.
///
/// ```
/// use prompty::{Processed, ToolCall};
/// use serde_json::json;
/// let agent = prompty::Agent::from_value(json!({"model": "claude-sonnet-4-20250514"}))?;
/// let response = json!({"type": "message", "content": [
///     {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]});
/// assert_eq!(prompty::providers::anthropic::process_response(&agent, response)?,
///            Processed::ToolCalls(vec![ToolCall::new("toolu_1", "get_weather", "{\"city\":\"Paris\"}")]));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn process_response(agent: &Agent, response: Value) -> Result<Processed> {
    if response["type"] == "error" || response.get("error").is_some_and(|e| !e.is_null()) {
        let message = error_message(&response).unwrap_or_else(|| "unknown error".into());
        return Err(Error::Execution { message: format!("the model returned an error: {message}") });
    }
    let blocks = response.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let calls: Vec<ToolCall> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| ToolCall {
            id: b["id"].as_str().unwrap_or_default().to_owned(),
            name: b["name"].as_str().unwrap_or_default().to_owned(),
            arguments: match b.get("input") {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(input) => input.to_string(),
            },
        })
        .collect();
    if !calls.is_empty() {
        return Ok(Processed::ToolCalls(calls));
    }
    let text: String = blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect();
    Ok(Processed::Answer(structured(agent, text)))
}

/// The typed chunks of a streamed Messages API response:
/// - `text_delta`s (and the text of `content_block_start`) are text, `thinking_delta`s thinking;
/// - `tool_use` blocks are accumulated from their `input_json_delta`s and yielded whole (arguments
///   as compact JSON), in block order, when the message ends (`message_stop` or the end of the
///   stream);
/// - `message_delta` usage (with the input tokens of `message_start`) is a usage chunk;
/// - `stop_reason: refusal` is a determinate failure `Model refused: <text>`;
/// - an `error` event or a transport error ends the stream with a failure, indeterminate when
///   output had already started.
///
/// ```
/// use futures_util::StreamExt;
/// use prompty::{RawEvent, StreamChunk, ToolCall};
/// use serde_json::json;
/// let agent = prompty::Agent::from_value(json!({"model": "claude-sonnet-4-20250514"}))?;
/// let events = futures_util::stream::iter([
///     RawEvent::Data(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}})),
///     RawEvent::Data(json!({"type": "content_block_start", "index": 1,
///         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}})),
///     RawEvent::Data(json!({"type": "content_block_delta", "index": 1,
///         "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 1}"}})),
///     RawEvent::Data(json!({"type": "message_stop"})),
/// ]);
/// let chunks: Vec<StreamChunk> = tokio::runtime::Builder::new_current_thread().build().unwrap()
///     .block_on(prompty::providers::anthropic::process_stream(&agent, Box::pin(events)).collect());
/// assert_eq!(chunks, [StreamChunk::Text("Hi".into()), StreamChunk::ToolCall(ToolCall::new("toolu_1", "f", "{\"a\":1}"))]);
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn process_stream(_agent: &Agent, events: RawStream) -> ChunkStream {
    drive(events, AnthropicStream::default())
}

/// Messages API stream events.
#[derive(Default)]
struct AnthropicStream {
    /// `tool_use` blocks by content-block index.
    calls: BTreeMap<u64, PartialCall>,
    /// The text yielded so far (for the message of a refusal).
    text: String,
    /// Usage so far: `message_start` input tokens, updated by `message_delta`.
    usage: Map<String, Value>,
}

impl AnthropicStream {
    fn finish(&mut self, sink: &mut Sink) {
        for (_, call) in std::mem::take(&mut self.calls) {
            let mut call = call.into_call();
            if let Ok(v) = serde_json::from_str::<Value>(&call.arguments) {
                call.arguments = v.to_string();
            }
            sink.tool_call(call);
        }
    }
}

impl StreamHandler for AnthropicStream {
    fn on_event(&mut self, event: Value, sink: &mut Sink) {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                if let Some(u) = event["message"].get("usage").and_then(Value::as_object) {
                    self.usage.extend(u.clone());
                }
            }
            "content_block_start" => {
                let block = &event["content_block"];
                match block["type"].as_str().unwrap_or_default() {
                    "text" => {
                        let text = block["text"].as_str().unwrap_or_default();
                        self.text.push_str(text);
                        sink.text(text);
                    }
                    "thinking" => sink.thinking(block["thinking"].as_str().unwrap_or_default()),
                    "tool_use" => {
                        sink.start();
                        let input = block.get("input").filter(|i| i.as_object().is_some_and(|o| !o.is_empty()));
                        self.calls.insert(
                            index,
                            PartialCall {
                                id: block["id"].as_str().unwrap_or_default().to_owned(),
                                name: block["name"].as_str().unwrap_or_default().to_owned(),
                                arguments: input.map(Value::to_string).unwrap_or_default(),
                                item_id: String::new(),
                            },
                        );
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                match delta["type"].as_str().unwrap_or_default() {
                    "text_delta" => {
                        let text = delta["text"].as_str().unwrap_or_default();
                        self.text.push_str(text);
                        sink.text(text);
                    }
                    "thinking_delta" => sink.thinking(delta["thinking"].as_str().unwrap_or_default()),
                    "input_json_delta" => {
                        sink.start();
                        if let Some(call) = self.calls.get_mut(&index) {
                            call.arguments.push_str(delta["partial_json"].as_str().unwrap_or_default());
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(u) = event.get("usage").and_then(Value::as_object) {
                    for (k, v) in u {
                        if !v.is_null() {
                            self.usage.insert(k.clone(), v.clone());
                        }
                    }
                    sink.usage(Value::Object(self.usage.clone()));
                    self.usage.clear();
                }
                if event["delta"]["stop_reason"] == "refusal" {
                    let text = if self.text.is_empty() { "the model declined to answer" } else { &self.text };
                    sink.refuse(text);
                }
            }
            "message_stop" => {
                self.on_end(sink);
                sink.close();
            }
            "error" => {
                let message = error_message(&event).unwrap_or_else(|| "the stream reported an error".into());
                sink.fail_after_output(message);
            }
            _ => {}
        }
    }

    fn on_end(&mut self, sink: &mut Sink) {
        if !self.usage.is_empty() {
            sink.usage(json!(std::mem::take(&mut self.usage)));
        }
        self.finish(sink);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, RawEvent, StreamChunk, StreamFailure};
    use futures_util::StreamExt;

    fn agent(outputs: bool) -> Agent {
        let mut a = json!({"name": "t", "model": {"id": "claude", "provider": "anthropic"}});
        if outputs {
            a["outputs"] = json!([{"name": "result", "kind": "string"}]);
        }
        Agent::from_value(a).unwrap()
    }

    fn run(events: Vec<Value>) -> Vec<StreamChunk> {
        let events = events.into_iter().map(RawEvent::Data).collect::<Vec<_>>();
        let stream = process_stream(&agent(false), Box::pin(futures_util::stream::iter(events)));
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(stream.collect())
    }

    #[test]
    fn text_blocks_are_concatenated_and_parsed_with_outputs() {
        let r = json!({"type": "message", "content": [{"type": "text", "text": "A"}, {"type": "thinking", "thinking": "x"},
                                                       {"type": "text", "text": "B"}]});
        assert_eq!(process_response(&agent(false), r).unwrap(), Processed::Answer(json!("AB")));
        let r = json!({"content": [{"type": "text", "text": "{\"city\": \"Paris\"}"}]});
        assert_eq!(process_response(&agent(true), r).unwrap(), Processed::Answer(json!({"city": "Paris"})));
        let r = json!({"content": [{"type": "text", "text": "nope"}]});
        assert_eq!(process_response(&agent(true), r).unwrap(), Processed::Answer(json!("nope")));
        assert_eq!(process_response(&agent(false), json!({"content": []})).unwrap(), Processed::Answer(json!("")));
    }

    #[test]
    fn tool_use_wins_and_arguments_are_compact() {
        let r = json!({"content": [{"type": "text", "text": "Checking"},
                                   {"type": "tool_use", "id": "t", "name": "f", "input": {"a": [1, 2]}}]});
        assert_eq!(
            process_response(&agent(false), r).unwrap(),
            Processed::ToolCalls(vec![ToolCall::new("t", "f", "{\"a\":[1,2]}")])
        );
    }

    #[test]
    fn error_bodies_are_errors() {
        let r = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert!(process_response(&agent(false), r).unwrap_err().to_string().contains("Overloaded"));
    }

    #[test]
    fn stream_text_thinking_tools_and_usage() {
        let chunks = run(vec![
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2,
                   "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": "}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "1}"}}),
            json!({"type": "content_block_start", "index": 3,
                   "content_block": {"type": "tool_use", "id": "t2", "name": "g", "input": {}}}),
            json!({"type": "ping"}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
            json!({"type": "message_stop"}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "never"}}),
        ]);
        assert_eq!(
            chunks,
            [
                StreamChunk::Thinking("hmm".into()),
                StreamChunk::Text("Hi".into()),
                StreamChunk::Usage(json!({"input_tokens": 10, "output_tokens": 20})),
                StreamChunk::ToolCall(ToolCall::new("t1", "f", "{\"a\":1}")),
                StreamChunk::ToolCall(ToolCall::new("t2", "g", "{}")),
            ]
        );
    }

    #[test]
    fn stream_errors_and_refusals() {
        let chunks = run(vec![
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ]);
        assert_eq!(
            chunks[1],
            StreamChunk::Failure(StreamFailure { outcome: Outcome::Indeterminate, message: "Overloaded".into() })
        );
        let chunks = run(vec![json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}})]);
        assert_eq!(
            chunks,
            [StreamChunk::Failure(StreamFailure {
                outcome: Outcome::Determinate,
                message: "Model refused: the model declined to answer".into()
            })]
        );
    }

    #[test]
    fn processor_is_registered() {
        assert!(crate::get_processor("anthropic").is_ok());
    }
}
