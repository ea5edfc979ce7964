//! Every entry point of a typed prompt builds its messages the same way: from the Rust values, with
//! the typed `prepare`. The inputs here serialize to JSON differently from what they hand the
//! renderer, so a path that went through JSON would show in the messages the model receives.

use futures_util::StreamExt;
use prompty::__private::{invoke_stream_typed, invoke_typed, prepare_typed, turn_typed, InputSink, TypedInputs};
use prompty::{
    Agent, BoxFuture, ChunkStream, Executor, Message, Processed, Processor, RawEvent, RawStream, Result, StreamChunk,
    Tools, TurnOptions,
};
use serde::ser::SerializeMap;
use serde_json::{json, Value};
use std::sync::Mutex;

/// What the model received, per call.
static RECEIVED: Mutex<Vec<Vec<Message>>> = Mutex::new(Vec::new());

fn received() -> Vec<Vec<Message>> {
    std::mem::take(&mut *RECEIVED.lock().unwrap_or_else(|e| e.into_inner()))
}

fn record(messages: &[Message]) {
    RECEIVED.lock().unwrap_or_else(|e| e.into_inner()).push(messages.to_vec());
}

/// Answers `ok` to every call, whole or streamed, and records the messages it was sent.
#[derive(Default)]
struct Recorder;

impl Executor for Recorder {
    fn execute_async<'a>(&'a self, _: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        record(messages);
        Box::pin(async { Ok(json!("ok")) })
    }

    fn execute_stream<'a>(&'a self, _: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<RawStream>> {
        record(messages);
        Box::pin(async {
            let events: RawStream = Box::pin(futures_util::stream::iter([RawEvent::Data(json!("ok"))]));
            Ok(events)
        })
    }
}

impl Processor for Recorder {
    fn process(&self, _: &Agent, response: Value) -> Result<Processed> {
        Ok(Processed::Answer(response))
    }

    fn process_stream(&self, _: &Agent, events: RawStream) -> ChunkStream {
        Box::pin(events.map(|e| match e {
            RawEvent::Data(v) => StreamChunk::Text(v.as_str().unwrap_or_default().to_owned()),
            RawEvent::TransportError(m) => StreamChunk::Text(m),
        }))
    }
}

/// Inputs whose JSON form (`from json`) differs from what they render (`from typed`).
struct TwoFaced;

impl serde::Serialize for TwoFaced {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("name", "from json")?;
        map.end()
    }
}

impl TypedInputs for TwoFaced {
    fn visit(&self, sink: &mut InputSink<'_>) {
        sink.str("name", "from typed");
    }
}

fn agent() -> Agent {
    prompty::register_executor("typed-paths", Recorder);
    prompty::register_processor("typed-paths", Recorder);
    let source = "---\nname: typed-paths\nmodel: {id: m, provider: typed-paths}\ninputs:\n  name: {kind: string}\n---\nsystem:\nBe brief.\n\nuser:\nHi {{ name }}";
    prompty::load_str(source, ".", "typed-paths.prompty").unwrap()
}

#[tokio::test]
async fn invoke_turn_and_invoke_stream_send_the_messages_of_the_typed_prepare() {
    let agent = agent();
    let prepared = prepare_typed(&agent, &TwoFaced).unwrap();
    assert_eq!(prepared.last().map(Message::text).as_deref(), Some("Hi from typed"));
    // The JSON path would have sent other messages.
    let untyped = prompty::prepare(&agent, &serde_json::to_value(TwoFaced).unwrap()).unwrap();
    assert_eq!(untyped.last().map(Message::text).as_deref(), Some("Hi from json"));
    received();

    let answer: String = invoke_typed(&agent, &TwoFaced).await.unwrap();
    assert_eq!(answer, "ok");
    assert_eq!(received(), vec![prepared.clone()], "invoke");

    let answer: String = turn_typed(&agent, &TwoFaced, Tools::new(), TurnOptions::new()).await.unwrap();
    assert_eq!(answer, "ok");
    assert_eq!(received(), vec![prepared.clone()], "turn");

    let chunks: Vec<StreamChunk> = invoke_stream_typed(&agent, &TwoFaced).await.unwrap().collect().await;
    assert_eq!(chunks, vec![StreamChunk::Text("ok".into())]);
    assert_eq!(received(), vec![prepared], "invoke_stream");
}
