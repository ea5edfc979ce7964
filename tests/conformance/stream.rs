//! The `processStream` stage (digest §2.7): feed the vector's events (provider payloads and
//! transport errors) to the provider's registered processor and compare the typed chunks it yields
//! (`chunks` only: text and failures as `{"kind":"text","value"}` and `{"kind":"failure",
//! "failure":{outcome,message}}`).

use crate::compare::Check;
use futures_util::StreamExt;
use prompty::{Agent, RawEvent, StreamChunk};
use serde_json::{json, Value};

/// Runs one processStream vector.
pub fn run(vector: &Value) -> Check {
    let expected = json!({ "chunks": vector["expected"]["chunks"].clone() });
    let got = match chunks(&vector["input"]) {
        Ok(chunks) => json!({ "chunks": chunks }),
        Err(message) => json!({ "error": message }),
    };
    Check::new(expected, got)
}

fn chunks(input: &Value) -> Result<Vec<Value>, String> {
    let provider = input["provider"].as_str().unwrap_or("openai");
    let api_type = input["apiType"].as_str().unwrap_or("chat");
    let agent = Agent::from_value(json!({
        "name": "stream", "model": {"id": "gpt-4", "provider": provider, "apiType": api_type}}))
    .map_err(|e| format!("agent: {e}"))?;
    let events: Vec<RawEvent> = input["events"]
        .as_array()
        .ok_or("input.events must be a list")?
        .iter()
        .map(|e| match e["kind"].as_str() {
            Some("transportError") => RawEvent::TransportError(e["message"].as_str().unwrap_or_default().to_owned()),
            _ => RawEvent::Data(e["value"].clone()),
        })
        .collect();
    let processor = prompty::get_processor(provider).map_err(|e| e.to_string())?;
    let stream = processor.process_stream(&agent, Box::pin(futures_util::stream::iter(events)));
    let runtime = tokio::runtime::Builder::new_current_thread().build().map_err(|e| e.to_string())?;
    let chunks: Vec<StreamChunk> = runtime.block_on(stream.collect());
    Ok(chunks.iter().map(chunk_json).collect())
}

fn chunk_json(chunk: &StreamChunk) -> Value {
    match chunk {
        StreamChunk::Text(t) => json!({"kind": "text", "value": t}),
        StreamChunk::Thinking(t) => json!({"kind": "thinking", "value": t}),
        StreamChunk::ToolCall(c) => json!({"kind": "toolCall", "value": c}),
        StreamChunk::Usage(u) => json!({"kind": "usage", "value": u}),
        StreamChunk::Failure(f) => json!({"kind": "failure", "failure": f}),
    }
}
