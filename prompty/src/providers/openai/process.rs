//! Processing of OpenAI responses (spec §8.1 to §8.4, §8.6, §10): the result of a chat completion,
//! embeddings, generated images or a Responses API response, and the typed chunks of a stream.

use super::wire::api_type;
use crate::lookup::get;
use crate::providers::common::{drive, embedding_vectors, error_message, structured, PartialCall, Sink, StreamHandler};
use crate::{
    Agent, ChunkStream, Error, Outcome, Processed, Processor, RawStream, Result, StreamChunk, StreamFailure, ToolCall,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The processor of the `openai`, `foundry` and `azure` providers: [`process_response`] and
/// [`process_stream`].
///
/// ```
/// let p = prompty::get_processor("azure")?;
/// let agent = prompty::Agent::from_value(serde_json::json!({"model": "gpt-4o"}))?;
/// let out = p.process(&agent, serde_json::json!({"choices": [{"message": {"content": "Hi"}}]}))?;
/// assert_eq!(out, prompty::Processed::Answer("Hi".into()));
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
#[prompty_macros::processor("openai", "foundry", "azure")]
pub struct OpenAiProcessor;

impl Processor for OpenAiProcessor {
    fn process(&self, agent: &Agent, response: Value) -> Result<Processed> {
        process_response(agent, response)
    }

    fn process_stream(&self, agent: &Agent, events: RawStream) -> ChunkStream {
        process_stream(agent, events)
    }
}

/// The result of a raw OpenAI response, by the agent's `model.apiType`:
/// - `chat`: the tool calls ([`Processed::ToolCalls`]) when there are any; else the text (`""` for
///   none, the refusal text for a refusal), JSON-parsed when the agent declares outputs (the raw
///   text when it is not JSON);
/// - `embedding`: the vector of a single input, or the list of vectors; none is an error;
/// - `image`: the URL (else the base64 data) of a single image, or the list; none is an error;
/// - `responses`: the `function_call` items as tool calls (`id` = `call_id`), else the output text,
///   JSON-parsed as for chat.
///
/// Every result but tool calls is a [`Processed::Answer`].
///
/// An `error` in the body is an error carrying the provider's message.
///
/// ```
/// use prompty::{Processed, ToolCall};
/// use serde_json::json;
/// let agent = prompty::Agent::from_value(json!({"model": "gpt-4o"}))?;
/// let response = json!({"choices": [{"message": {"content": null, "tool_calls": [
///     {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}]});
/// assert_eq!(prompty::providers::openai::process_response(&agent, response)?,
///            Processed::ToolCalls(vec![ToolCall::new("call_1", "get_weather", "{\"city\":\"Paris\"}")]));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn process_response(agent: &Agent, response: Value) -> Result<Processed> {
    if let Some(message) = error_message(&response) {
        return Err(Error::Execution { message: format!("the model returned an error: {message}") });
    }
    match api_type(agent) {
        "chat" => process_chat(agent, &response),
        "embedding" | "embeddings" => embedding_vectors(&response).map(Processed::Answer),
        "image" | "images" => process_image(&response).map(Processed::Answer),
        "responses" => process_responses(agent, &response),
        other => {
            Err(crate::providers::common::unsupported_api_type("OpenAI", other, "chat, embedding, image or responses"))
        }
    }
}

fn process_chat(agent: &Agent, response: &Value) -> Result<Processed> {
    let choices = get(response, "choices").and_then(Value::as_array).filter(|c| !c.is_empty());
    let Some(choice) = choices.and_then(|c| c.iter().find(|c| get(c, "index").is_some_and(|i| i == 0)).or(c.first()))
    else {
        return Err(Error::Execution { message: "the chat completion has no choices".into() });
    };
    let message = get(choice, "message").unwrap_or(&Value::Null);
    if let Some(calls) = get(message, "tool_calls").and_then(Value::as_array).filter(|c| !c.is_empty()) {
        return Ok(Processed::ToolCalls(calls.iter().map(chat_tool_call).collect()));
    }
    let text = match get(message, "content").unwrap_or(&Value::Null) {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    };
    if text.is_empty() {
        if let Some(refusal) = get(message, "refusal").and_then(Value::as_str).filter(|r| !r.is_empty()) {
            return Ok(Processed::Answer(json!(refusal)));
        }
    }
    Ok(Processed::Answer(structured(agent, text)))
}

/// A tool call of a chat completion (`function` calls, and `custom` calls with their raw input).
fn chat_tool_call(call: &Value) -> ToolCall {
    let f = call.get("function").or_else(|| call.get("custom")).unwrap_or(call);
    ToolCall {
        id: str_of(call.get("id")),
        name: str_of(f.get("name")),
        arguments: arguments_string(f.get("arguments").or_else(|| f.get("input"))),
    }
}

fn process_image(response: &Value) -> Result<Value> {
    let data = response.get("data").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let non_empty = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(|s| json!(s));
    let mut results: Vec<Value> =
        data.iter().filter_map(|d| non_empty(&d["url"]).or_else(|| non_empty(&d["b64_json"]))).collect();
    match results.len() {
        0 => Err(Error::Execution { message: "Empty image response".into() }),
        1 => Ok(results.remove(0)),
        _ => Ok(Value::Array(results)),
    }
}

fn process_responses(agent: &Agent, response: &Value) -> Result<Processed> {
    if response["status"] == "failed" {
        return Err(Error::Execution { message: "the model returned an error: the response failed".into() });
    }
    let output = response.get("output").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let calls: Vec<ToolCall> =
        output.iter().filter(|i| i["type"] == "function_call").map(responses_tool_call).collect();
    if !calls.is_empty() {
        return Ok(Processed::ToolCalls(calls));
    }
    let text = match response.get("output_text").and_then(Value::as_str) {
        Some(t) => t.to_owned(),
        None => output_parts(output, "output_text", "text"),
    };
    if text.is_empty() {
        let refusal = output_parts(output, "refusal", "refusal");
        if !refusal.is_empty() {
            return Ok(Processed::Answer(json!(refusal)));
        }
    }
    Ok(Processed::Answer(structured(agent, text)))
}

/// The concatenated `field` of the message content parts of type `kind`.
fn output_parts(output: &[Value], kind: &str, field: &str) -> String {
    output
        .iter()
        .filter(|i| i["type"] == "message")
        .flat_map(|i| i.get("content").and_then(Value::as_array).into_iter().flatten())
        .filter(|p| p["type"] == kind)
        .filter_map(|p| p.get(field).and_then(Value::as_str))
        .collect()
}

fn responses_tool_call(item: &Value) -> ToolCall {
    let id = item.get("call_id").and_then(Value::as_str).or_else(|| item.get("id").and_then(Value::as_str));
    ToolCall {
        id: id.unwrap_or_default().to_owned(),
        name: str_of(item.get("name")),
        arguments: arguments_string(item.get("arguments")),
    }
}

/// The arguments of a tool call as a JSON string: a string as it is, a JSON value serialized
/// compactly, nothing as `{}`.
pub(crate) fn arguments_string(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn str_of(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_owned()
}

// ---------------------------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------------------------

/// The typed chunks of a streamed OpenAI response (spec §8.6, §10). For `apiType: responses` this is
/// [`responses_process_stream`]; otherwise the events are chat completion chunks:
/// - content deltas are [`StreamChunk::Text`], reasoning deltas [`StreamChunk::Thinking`];
/// - tool-call deltas are accumulated by `index` and yielded whole, in index order, when the stream
///   ends;
/// - `usage` is a [`StreamChunk::Usage`];
/// - a refusal ends the stream with a determinate failure `Model refused: <text>`;
/// - a transport error or an `error` event ends it with a failure, indeterminate when output had
///   already started.
///
/// ```
/// use futures_util::StreamExt;
/// use prompty::{RawEvent, StreamChunk};
/// use serde_json::json;
/// let agent = prompty::Agent::from_value(json!({"model": "gpt-4o"}))?;
/// let events = futures_util::stream::iter([
///     RawEvent::Data(json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})),
///     RawEvent::Data(json!({"choices": [{"index": 0, "delta": {"content": "lo"}}]})),
/// ]);
/// let chunks: Vec<StreamChunk> = tokio::runtime::Builder::new_current_thread().build().unwrap()
///     .block_on(prompty::providers::openai::process_stream(&agent, Box::pin(events)).collect());
/// assert_eq!(chunks, [StreamChunk::Text("Hel".into()), StreamChunk::Text("lo".into())]);
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn process_stream(agent: &Agent, events: RawStream) -> ChunkStream {
    match api_type(agent) {
        "responses" => responses_process_stream(agent, events),
        "embedding" | "embeddings" | "image" | "images" => {
            let failure = StreamChunk::Failure(StreamFailure {
                outcome: Outcome::Determinate,
                message: format!("model.apiType '{}' does not stream", api_type(agent)),
            });
            Box::pin(futures_util::stream::iter([failure]))
        }
        _ => drive(events, ChatStream::default()),
    }
}

/// The typed chunks of a streamed Responses API response: `response.output_text.delta` is text,
/// reasoning deltas are thinking, function calls (`response.output_item.added`, then
/// `response.function_call_arguments.delta`/`.done`, `response.output_item.done`) are accumulated and
/// yielded whole at the end (`id` = `call_id`), the usage of `response.completed` is a usage chunk,
/// a refusal is a determinate failure, and `error` / `response.failed` end the stream with a failure.
///
/// ```
/// use futures_util::StreamExt;
/// use prompty::{RawEvent, StreamChunk, ToolCall};
/// use serde_json::json;
/// let agent = prompty::Agent::from_value(json!({"model": {"id": "gpt-4o", "apiType": "responses"}}))?;
/// let events = futures_util::stream::iter([
///     RawEvent::Data(json!({"type": "response.output_item.added", "output_index": 0,
///         "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}})),
///     RawEvent::Data(json!({"type": "response.function_call_arguments.delta", "output_index": 0,
///         "item_id": "fc_1", "delta": "{}"})),
/// ]);
/// let chunks: Vec<StreamChunk> = tokio::runtime::Builder::new_current_thread().build().unwrap()
///     .block_on(prompty::providers::openai::responses_process_stream(&agent, Box::pin(events)).collect());
/// assert_eq!(chunks, [StreamChunk::ToolCall(ToolCall::new("call_1", "f", "{}"))]);
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn responses_process_stream(_agent: &Agent, events: RawStream) -> ChunkStream {
    drive(events, ResponsesStream::default())
}

/// Chat completion chunks.
#[derive(Default)]
struct ChatStream {
    calls: BTreeMap<u64, PartialCall>,
    /// Refusal text received so far: the stream fails with it at the next other event.
    refusal: Option<String>,
}

impl ChatStream {
    fn index_of(&self, delta: &Value) -> u64 {
        if let Some(i) = delta.get("index").and_then(Value::as_u64) {
            return i;
        }
        // No index (some compatible servers): the call with this id, or a new one, or the last.
        match delta.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
            Some(id) => self
                .calls
                .iter()
                .find(|(_, c)| c.id == id)
                .map_or_else(|| self.calls.keys().next_back().map_or(0, |k| k.saturating_add(1)), |(k, _)| *k),
            None => self.calls.keys().next_back().copied().unwrap_or(0),
        }
    }
}

impl StreamHandler for ChatStream {
    fn on_event(&mut self, event: Value, sink: &mut Sink) {
        if let Some(message) = error_message(&event) {
            match self.refusal.take() {
                Some(r) => sink.refuse(&r),
                None => sink.fail_after_output(message),
            }
            return;
        }
        let choices = event.get("choices").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let choice = choices.iter().find(|c| c["index"] == 0).or(choices.first());
        let delta = choice.and_then(|c| c.get("delta")).filter(|d| d.is_object());

        if let Some(piece) = delta.and_then(|d| d.get("refusal")).and_then(Value::as_str).filter(|r| !r.is_empty()) {
            self.refusal.get_or_insert_with(String::new).push_str(piece);
            return;
        }
        if let Some(refusal) = self.refusal.take() {
            sink.refuse(&refusal);
            return;
        }
        if let Some(d) = delta {
            if let Some(text) = d.get("reasoning_content").or_else(|| d.get("reasoning")).and_then(Value::as_str) {
                sink.thinking(text);
            }
            if let Some(text) = d.get("content").and_then(Value::as_str) {
                sink.text(text);
            }
            for tc in d.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                sink.start();
                let index = self.index_of(tc);
                let call = self.calls.entry(index).or_default();
                if let Some(id) = tc.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    if call.id.is_empty() {
                        call.id = id.to_owned();
                    }
                }
                let f = tc.get("function").unwrap_or(&Value::Null);
                if let Some(name) = f.get("name").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    if call.name.is_empty() {
                        call.name = name.to_owned();
                    }
                }
                if let Some(args) = f.get("arguments").and_then(Value::as_str) {
                    call.arguments.push_str(args);
                }
            }
        }
        if let Some(usage) = event.get("usage").filter(|u| u.is_object()) {
            sink.usage(usage.clone());
        }
    }

    fn on_end(&mut self, sink: &mut Sink) {
        if let Some(refusal) = self.refusal.take() {
            return sink.refuse(&refusal);
        }
        for (_, call) in std::mem::take(&mut self.calls) {
            sink.tool_call(call.into_call());
        }
    }

    fn on_transport_error(&mut self, message: String, sink: &mut Sink) {
        match self.refusal.take() {
            Some(r) => sink.refuse(&r),
            None => sink.fail_after_output(message),
        }
    }
}

/// Responses API events.
#[derive(Default)]
struct ResponsesStream {
    /// Function calls by output index.
    calls: BTreeMap<u64, PartialCall>,
    refusal: Option<String>,
}

impl ResponsesStream {
    /// The call an event refers to, by `output_index`, else by `item_id`.
    fn call_for(&mut self, event: &Value) -> Option<&mut PartialCall> {
        if let Some(i) = event.get("output_index").and_then(Value::as_u64) {
            return Some(self.calls.entry(i).or_default());
        }
        let item_id = event.get("item_id").and_then(Value::as_str)?;
        self.calls.values_mut().find(|c| c.item_id == item_id)
    }

    fn set_item(&mut self, event: &Value) {
        let item = &event["item"];
        if item["type"] != "function_call" {
            return;
        }
        if let Some(call) = self.call_for(event) {
            let text = |k: &str| item.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
            if let Some(id) = text("call_id") {
                call.id = id;
            }
            if let Some(id) = text("id") {
                if call.id.is_empty() {
                    call.id.clone_from(&id);
                }
                call.item_id = id;
            }
            if let Some(name) = text("name") {
                call.name = name;
            }
            if let Some(args) = text("arguments") {
                call.arguments = args;
            }
        }
    }
}

impl StreamHandler for ResponsesStream {
    fn on_event(&mut self, event: Value, sink: &mut Sink) {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        let delta = event.get("delta").and_then(Value::as_str).unwrap_or_default();
        if let Some(r) = self.refusal.take() {
            match kind {
                "response.refusal.delta" => self.refusal = Some(r + delta),
                "response.refusal.done" => {
                    sink.refuse(event.get("refusal").and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or(&r))
                }
                _ => sink.refuse(&r),
            }
            return;
        }
        match kind {
            "response.output_text.delta" => sink.text(delta),
            "response.refusal.delta" => self.refusal = Some(delta.to_owned()),
            "response.refusal.done" => sink.refuse(event.get("refusal").and_then(Value::as_str).unwrap_or_default()),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => sink.thinking(delta),
            "response.output_item.added" | "response.output_item.done" if event["item"]["type"] == "function_call" => {
                sink.start();
                self.set_item(&event);
            }
            "response.function_call_arguments.delta" => {
                sink.start();
                if let Some(call) = self.call_for(&event) {
                    call.arguments.push_str(delta);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(args), Some(call)) =
                    (event.get("arguments").and_then(Value::as_str).map(str::to_owned), self.call_for(&event))
                {
                    call.arguments = args;
                }
            }
            "response.completed" | "response.incomplete" => {
                if let Some(usage) = event["response"].get("usage").filter(|u| u.is_object()) {
                    sink.usage(usage.clone());
                }
            }
            "response.failed" => {
                let message = error_message(&event["response"]).unwrap_or_else(|| "the response failed".into());
                sink.fail_after_output(message);
            }
            "error" => {
                let message = event
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| error_message(&event))
                    .unwrap_or_else(|| "the stream reported an error".into());
                sink.fail_after_output(message);
            }
            _ => {}
        }
    }

    fn on_end(&mut self, sink: &mut Sink) {
        if let Some(refusal) = self.refusal.take() {
            return sink.refuse(&refusal);
        }
        for (_, call) in std::mem::take(&mut self.calls) {
            if !call.name.is_empty() {
                sink.tool_call(call.into_call());
            }
        }
    }

    fn on_transport_error(&mut self, message: String, sink: &mut Sink) {
        match self.refusal.take() {
            Some(r) => sink.refuse(&r),
            None => sink.fail_after_output(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RawEvent;
    use futures_util::StreamExt;

    fn agent(model: Value, outputs: bool) -> Agent {
        let mut a = json!({"name": "t", "model": model});
        if outputs {
            a["outputs"] = json!([{"name": "result", "kind": "string"}]);
        }
        Agent::from_value(a).unwrap()
    }

    fn chat(content: Value) -> Value {
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null}}]})
    }

    fn run(agent: &Agent, events: Vec<RawEvent>) -> Vec<StreamChunk> {
        let stream = process_stream(agent, Box::pin(futures_util::stream::iter(events)));
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(stream.collect())
    }

    fn data(v: Value) -> RawEvent {
        RawEvent::Data(v)
    }

    #[test]
    fn chat_text_null_and_refusal() {
        let a = agent(json!("gpt-4o"), false);
        assert_eq!(process_response(&a, chat(json!("Hello!"))).unwrap(), Processed::Answer(json!("Hello!")));
        assert_eq!(process_response(&a, chat(Value::Null)).unwrap(), Processed::Answer(json!("")));
        let refusal = json!({"choices": [{"message": {"content": null, "refusal": "No."}}]});
        assert_eq!(process_response(&a, refusal).unwrap(), Processed::Answer(json!("No.")));
    }

    #[test]
    fn chat_structured_output_parses_or_falls_back() {
        let a = agent(json!("gpt-4o"), true);
        assert_eq!(process_response(&a, chat(json!("{\"a\":1}"))).unwrap(), Processed::Answer(json!({"a": 1})));
        assert_eq!(process_response(&a, chat(json!("not json"))).unwrap(), Processed::Answer(json!("not json")));
        assert_eq!(process_response(&a, chat(json!(""))).unwrap(), Processed::Answer(json!("")));
        // Without outputs JSON text stays text.
        let plain = agent(json!("gpt-4o"), false);
        assert_eq!(process_response(&plain, chat(json!("{\"a\":1}"))).unwrap(), Processed::Answer(json!("{\"a\":1}")));
    }

    #[test]
    fn chat_tool_calls_win_over_content() {
        let a = agent(json!("gpt-4o"), true);
        let r = json!({"choices": [{"message": {"content": "ignored", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": {"x": 1}}}]}}]});
        assert_eq!(
            process_response(&a, r).unwrap(),
            Processed::ToolCalls(vec![ToolCall::new("a", "f", "{}"), ToolCall::new("b", "g", "{\"x\":1}")])
        );
    }

    #[test]
    fn api_errors_in_a_body_are_errors() {
        let a = agent(json!("gpt-4o"), false);
        let err = process_response(&a, json!({"error": {"message": "Rate limited", "type": "x"}})).unwrap_err();
        assert!(err.to_string().contains("Rate limited"));
        assert!(process_response(&a, json!({"choices": []})).is_err());
    }

    #[test]
    fn embeddings() {
        let a = agent(json!({"id": "e", "apiType": "embedding"}), false);
        let one = json!({"data": [{"index": 0, "embedding": [0.1, 0.2]}]});
        assert_eq!(process_response(&a, one).unwrap(), Processed::Answer(json!([0.1, 0.2])));
        let two = json!({"data": [{"index": 1, "embedding": [2.0]}, {"index": 0, "embedding": [1.0]}]});
        assert_eq!(process_response(&a, two).unwrap(), Processed::Answer(json!([[1.0], [2.0]])));
        assert!(process_response(&a, json!({"data": []})).is_err());
    }

    #[test]
    fn images_prefer_url() {
        let a = agent(json!({"id": "d", "apiType": "image"}), false);
        let both = json!({"data": [{"url": "https://x/1.png", "b64_json": "AAA"}]});
        assert_eq!(process_response(&a, both).unwrap(), Processed::Answer(json!("https://x/1.png")));
        let b64 = json!({"data": [{"url": null, "b64_json": "AAA"}, {"url": "https://x/2.png"}]});
        assert_eq!(process_response(&a, b64).unwrap(), Processed::Answer(json!(["AAA", "https://x/2.png"])));
        assert!(process_response(&a, json!({"data": []})).is_err());
    }

    #[test]
    fn responses_processing() {
        let a = agent(json!({"id": "r", "apiType": "responses"}), false);
        let calls = json!({"output": [{"type": "function_call", "id": "fc", "call_id": "call_1", "name": "f", "arguments": "{}"}]});
        assert_eq!(
            process_response(&a, calls).unwrap(),
            Processed::ToolCalls(vec![ToolCall::new("call_1", "f", "{}")])
        );
        let text = json!({"output": [{"type": "message", "content": [{"type": "output_text", "text": "Hi"},
                                                                      {"type": "output_text", "text": "!"}]}]});
        assert_eq!(process_response(&a, text).unwrap(), Processed::Answer(json!("Hi!")));
        assert_eq!(
            process_response(&a, json!({"output": [], "output_text": ""})).unwrap(),
            Processed::Answer(json!(""))
        );
        let err = process_response(&a, json!({"error": {"message": "bad"}, "output": []})).unwrap_err();
        assert!(err.to_string().contains("bad"));
        let structured = agent(json!({"id": "r", "apiType": "responses"}), true);
        assert_eq!(
            process_response(&structured, json!({"output_text": "{\"c\":1}"})).unwrap(),
            Processed::Answer(json!({"c": 1}))
        );
    }

    #[test]
    fn unknown_api_type_is_an_error() {
        let a = agent(json!({"id": "x", "apiType": "speech"}), false);
        assert!(process_response(&a, json!({})).is_err());
    }

    #[test]
    fn stream_text_tool_calls_and_usage() {
        let a = agent(json!("gpt-4o"), false);
        let chunks = run(
            &a,
            vec![
                data(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})),
                data(json!({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})),
                data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 1, "id": "b", "function": {"name": "g", "arguments": ""}}]}}]})),
                data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"x\""}}]}}]})),
                data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "function": {"arguments": ":1}"}}]}}]})),
                data(json!({"choices": [], "usage": {"total_tokens": 5}})),
            ],
        );
        assert_eq!(
            chunks,
            [
                StreamChunk::Text("Hi".into()),
                StreamChunk::Usage(json!({"total_tokens": 5})),
                StreamChunk::ToolCall(ToolCall::new("a", "f", "{\"x\":1}")),
                StreamChunk::ToolCall(ToolCall::new("b", "g", "{}")),
            ]
        );
    }

    #[test]
    fn stream_refusal_is_determinate_and_ends_the_stream() {
        let a = agent(json!("gpt-4o"), false);
        let chunks = run(
            &a,
            vec![
                data(json!({"choices": [{"delta": {"refusal": "I cannot"}}]})),
                data(json!({"choices": [{"delta": {"refusal": " help"}}]})),
                data(json!({"choices": [{"delta": {}, "finish_reason": "stop"}]})),
                data(json!({"choices": [{"delta": {"content": "never"}}]})),
            ],
        );
        assert_eq!(
            chunks,
            [StreamChunk::Failure(StreamFailure {
                outcome: Outcome::Determinate,
                message: "Model refused: I cannot help".into()
            })]
        );
    }

    #[test]
    fn transport_errors_are_indeterminate_after_output() {
        let a = agent(json!("gpt-4o"), false);
        let before = run(&a, vec![RawEvent::TransportError("reset".into()), data(json!({}))]);
        assert_eq!(
            before,
            [StreamChunk::Failure(StreamFailure { outcome: Outcome::Determinate, message: "reset".into() })]
        );
        let after = run(
            &a,
            vec![
                data(
                    json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}}]}),
                ),
                RawEvent::TransportError("reset".into()),
            ],
        );
        assert_eq!(
            after,
            [StreamChunk::Failure(StreamFailure { outcome: Outcome::Indeterminate, message: "reset".into() })]
        );
        let error_event = run(&a, vec![data(json!({"error": {"message": "overloaded"}}))]);
        assert_eq!(
            error_event,
            [StreamChunk::Failure(StreamFailure { outcome: Outcome::Determinate, message: "overloaded".into() })]
        );
    }

    #[test]
    fn stream_reasoning_is_thinking() {
        let a = agent(json!("gpt-4o"), false);
        let chunks = run(&a, vec![data(json!({"choices": [{"delta": {"reasoning_content": "hmm"}}]}))]);
        assert_eq!(chunks, [StreamChunk::Thinking("hmm".into())]);
    }

    #[test]
    fn responses_stream() {
        let a = agent(json!({"id": "r", "apiType": "responses"}), false);
        let chunks = run(
            &a,
            vec![
                data(json!({"type": "response.created", "response": {}})),
                data(json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "delta": "Hi"})),
                data(json!({"type": "response.output_item.added", "output_index": 1,
                    "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}})),
                data(
                    json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"a\""}),
                ),
                data(
                    json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": ":1}"}),
                ),
                data(
                    json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"a\":1}"}),
                ),
                data(json!({"type": "response.output_item.done", "output_index": 1,
                    "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{\"a\":1}"}})),
                data(json!({"type": "response.completed", "response": {"usage": {"total_tokens": 9}}})),
            ],
        );
        assert_eq!(
            chunks,
            [
                StreamChunk::Text("Hi".into()),
                StreamChunk::Usage(json!({"total_tokens": 9})),
                StreamChunk::ToolCall(ToolCall::new("call_1", "f", "{\"a\":1}")),
            ]
        );
    }

    #[test]
    fn responses_stream_refusal_and_errors() {
        let a = agent(json!({"id": "r", "apiType": "responses"}), false);
        let refused = run(
            &a,
            vec![
                data(json!({"type": "response.refusal.delta", "delta": "No"})),
                data(json!({"type": "response.refusal.done", "refusal": "No way"})),
            ],
        );
        assert_eq!(
            refused,
            [StreamChunk::Failure(StreamFailure {
                outcome: Outcome::Determinate,
                message: "Model refused: No way".into()
            })]
        );
        let failed = run(
            &a,
            vec![
                data(json!({"type": "response.output_text.delta", "delta": "x"})),
                data(json!({"type": "response.failed", "response": {"error": {"message": "server"}}})),
            ],
        );
        assert_eq!(
            failed[1],
            StreamChunk::Failure(StreamFailure { outcome: Outcome::Indeterminate, message: "server".into() })
        );
        let error = run(&a, vec![data(json!({"type": "error", "message": "bad request"}))]);
        assert_eq!(
            error,
            [StreamChunk::Failure(StreamFailure { outcome: Outcome::Determinate, message: "bad request".into() })]
        );
    }

    #[test]
    fn processor_is_registered_for_openai_foundry_and_azure() {
        for key in ["openai", "foundry", "azure"] {
            assert!(crate::get_processor(key).is_ok(), "{key}");
        }
    }
}
