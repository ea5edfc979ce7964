//! End-to-end tests of the OpenAI and Azure OpenAI executors against a real `@copilotkit/aimock`
//! server on 127.0.0.1: chat, streamed chat, tool calls (plain and streamed), embeddings, images,
//! the Responses API (plain and streamed), Azure deployments, connections and model discovery.
//! Each test checks the result and what the server received (its request journal).

#[path = "e2e/common.rs"]
mod common;

use common::{collect, prompt, text_of, tool_calls_of, user_agent, within, Aimock};
use prompty::{Outcome, StreamChunk, ToolCall};
use serde_json::{json, Value};

fn chat_prompt(server: &Aimock, extra: &str, user: &str) -> prompty::Agent {
    prompt(&format!(
        "---\nname: e2e\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    endpoint: {}/v1\n    \
         apiKey: sk-e2e-test\n{extra}---\nsystem:\nYou are terse.\n\nuser:\n{user}",
        server.url()
    ))
}

const WEATHER_TOOL: &str = "tools:\n  - name: get_weather\n    kind: function\n    description: Current weather\n    \
                            parameters:\n      - name: city\n        kind: string\n        required: true\n";

/// The one request of a test, checked for what every OpenAI request carries.
fn only_request(server: &Aimock, path: &str) -> Value {
    let entries = server.requests_to(path);
    assert_eq!(entries.len(), 1, "expected one request to {path}: {:#?}", server.journal());
    let e = entries.into_iter().next().unwrap_or_default();
    assert_eq!(e["method"], "POST");
    assert_eq!(e["headers"]["user-agent"], user_agent().as_str());
    assert_eq!(e["headers"]["content-type"], "application/json");
    e
}

#[tokio::test]
async fn chat() {
    // The server accepts only this key: the answer proves it was sent as it is.
    let server = Aimock::start_with_keys(&["sk-e2e-test"]);
    let agent = chat_prompt(&server, "", "hello");
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap();
    assert_eq!(out, json!("Hi there!"));

    let e = only_request(&server, "/v1/chat/completions");
    assert!(e["headers"]["authorization"].is_string(), "the key is sent: {e:#}");
    let body = &e["body"];
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}])
    );
    assert!(body.get("stream").is_none() && body.get("tools").is_none(), "{body:#}");
}

#[test]
fn chat_from_sync_code() {
    let server = Aimock::start();
    let agent = chat_prompt(&server, "", "hello");
    // Twice: the second call reuses the pooled connection of the HTTP layer's own runtime.
    for _ in 0..2 {
        assert_eq!(prompty::invoke::<serde_json::Value>(&agent, &json!({})).unwrap(), json!("Hi there!"));
    }
    assert_eq!(server.requests_to("/v1/chat/completions").len(), 2);
}

#[tokio::test]
async fn chat_streamed() {
    let server = Aimock::start();
    let agent = chat_prompt(&server, "", "stream me");
    let chunks = collect(within(prompty::invoke_stream(&agent, &json!({}))).await.unwrap()).await;
    assert_eq!(text_of(&chunks), "Streaming works, one small piece at a time.");
    assert!(chunks.iter().filter(|c| c.text().is_some()).count() > 3, "several deltas: {chunks:?}");
    assert!(chunks.iter().any(|c| matches!(c, StreamChunk::Usage(_))), "usage requested and reported: {chunks:?}");
    assert!(!chunks.iter().any(|c| matches!(c, StreamChunk::Failure(_))), "{chunks:?}");

    let e = only_request(&server, "/v1/chat/completions");
    assert_eq!(e["body"]["stream"], true);
    assert_eq!(e["body"]["stream_options"], json!({"include_usage": true}));
    assert_eq!(e["headers"]["accept"], "text/event-stream");
}

#[tokio::test]
async fn tool_calls() {
    let server = Aimock::start();
    let agent = chat_prompt(&server, WEATHER_TOOL, "What is the weather in Paris?");
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap();
    assert_eq!(out, json!([{"id": "call_weather_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}]));

    let e = only_request(&server, "/v1/chat/completions");
    let tools = &e["body"]["tools"];
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "get_weather");
    assert_eq!(tools[0]["function"]["parameters"]["properties"]["city"]["type"], "string");
    assert_eq!(tools[0]["function"]["parameters"]["required"], json!(["city"]));
}

#[tokio::test]
async fn tool_calls_streamed() {
    let server = Aimock::start();
    let agent = chat_prompt(&server, WEATHER_TOOL, "What is the weather in Paris?");
    let chunks = collect(within(prompty::invoke_stream(&agent, &json!({}))).await.unwrap()).await;
    let calls = tool_calls_of(&chunks);
    assert_eq!(calls, [&ToolCall::new("call_weather_1", "get_weather", "{\"city\":\"Paris\"}")], "{chunks:?}");

    let e = only_request(&server, "/v1/chat/completions");
    assert_eq!(e["body"]["stream"], true);
    assert_eq!(e["body"]["tools"][0]["function"]["name"], "get_weather");
}

#[tokio::test]
async fn embeddings() {
    let server = Aimock::start();
    let agent = prompt(&format!(
        "---\nmodel:\n  id: text-embedding-3-small\n  provider: openai\n  apiType: embedding\n  connection:\n    \
         kind: key\n    endpoint: {}/v1\n    apiKey: sk-e2e-test\n---\nuser:\nhello world",
        server.url()
    ));
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap();
    assert_eq!(out, json!([0.25, -0.5, 0.75]));

    let e = only_request(&server, "/v1/embeddings");
    assert_eq!(e["body"]["model"], "text-embedding-3-small");
    // aimock's journal keeps the embedding input it matched on.
    assert_eq!(e["body"]["embeddingInput"], "hello world");
}

#[tokio::test]
async fn images() {
    let server = Aimock::start();
    let agent = prompt(&format!(
        "---\nmodel:\n  id: dall-e-3\n  provider: openai\n  apiType: image\n  connection:\n    kind: key\n    \
         endpoint: {}/v1\n    apiKey: sk-e2e-test\n---\nuser:\nA cat on a windowsill",
        server.url()
    ));
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap();
    assert_eq!(out, json!("https://images.example/cat.png"));

    let e = only_request(&server, "/v1/images/generations");
    assert_eq!(e["body"]["model"], "dall-e-3");
    assert_eq!(e["body"]["messages"][0]["content"], "A cat on a windowsill");
}

fn responses_prompt(server: &Aimock, user: &str) -> prompty::Agent {
    prompt(&format!(
        "---\nmodel:\n  id: gpt-4o\n  provider: openai\n  apiType: responses\n  connection:\n    kind: key\n    \
         endpoint: {}/v1\n    apiKey: sk-e2e-test\n---\nsystem:\nYou are terse.\n\nuser:\n{user}",
        server.url()
    ))
}

#[tokio::test]
async fn responses() {
    let server = Aimock::start();
    let out = within(prompty::invoke_async::<serde_json::Value>(&responses_prompt(&server, "hello"), &json!({})))
        .await
        .unwrap();
    assert_eq!(out, json!("Hi there!"));

    let e = only_request(&server, "/v1/responses");
    assert_eq!(e["body"]["model"], "gpt-4o");
    assert!(e["body"].get("stream").is_none());
    let messages = e["body"]["messages"].as_array().cloned().unwrap_or_default();
    assert!(messages.iter().any(|m| m["role"] == "user" && m["content"] == "hello"), "{e:#}");
}

#[tokio::test]
async fn responses_streamed() {
    let server = Aimock::start();
    let agent = responses_prompt(&server, "stream me");
    let chunks = collect(within(prompty::invoke_stream(&agent, &json!({}))).await.unwrap()).await;
    assert_eq!(text_of(&chunks), "Streaming works, one small piece at a time.");
    assert!(!chunks.iter().any(|c| matches!(c, StreamChunk::Failure(_))), "{chunks:?}");

    let e = only_request(&server, "/v1/responses");
    assert_eq!(e["body"]["stream"], true);
    assert!(e["body"].get("stream_options").is_none(), "chat-only option: {e:#}");
}

#[tokio::test]
async fn azure_deployment() {
    let server = Aimock::start();
    let agent = prompt(&format!(
        "---\nmodel:\n  id: my-gpt4o-deployment\n  provider: azure\n  connection:\n    kind: key\n    endpoint: {}\n    \
         apiKey: azure-e2e-key\n---\nuser:\nhello",
        server.url()
    ));
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap();
    assert_eq!(out, json!("Hi there!"));

    let path = format!("/openai/deployments/my-gpt4o-deployment/chat/completions?api-version={}", {
        std::env::var("AZURE_OPENAI_API_VERSION")
            .unwrap_or_else(|_| prompty::providers::openai::AZURE_API_VERSION.into())
    });
    let e = only_request(&server, &path);
    assert!(e["headers"]["api-key"].is_string(), "api-key header: {e:#}");
    assert!(e["headers"].get("authorization").is_none(), "no bearer token: {e:#}");
}

#[tokio::test]
async fn azure_streamed() {
    let server = Aimock::start();
    let agent = prompt(&format!(
        "---\nmodel:\n  id: dep\n  provider: foundry\n  connection:\n    kind: key\n    endpoint: {}\n    \
         apiKey: azure-e2e-key\n---\nuser:\nstream me",
        server.url()
    ));
    let chunks = collect(within(prompty::invoke_stream(&agent, &json!({}))).await.unwrap()).await;
    assert_eq!(text_of(&chunks), "Streaming works, one small piece at a time.");
    let e = server.journal().pop().unwrap_or_default();
    assert!(e["path"].as_str().unwrap_or("").starts_with("/openai/deployments/dep/chat/completions?api-version="));
    assert_eq!(e["body"]["stream"], true);
}

/// Chats through a prompt with `connection` (YAML lines under `connection:`) and checks that no
/// `Authorization` header reached the server.
async fn assert_no_auth_header(connection: &str) {
    let server = Aimock::start();
    let agent = prompt(&format!(
        "---\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n{connection}    endpoint: {}/v1\n---\nuser:\nhello",
        server.url()
    ));
    assert_eq!(
        within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap(),
        json!("Hi there!")
    );
    let e = only_request(&server, "/v1/chat/completions");
    assert!(e["headers"].get("authorization").is_none(), "{e:#}");
}

#[tokio::test]
async fn anonymous_connection_sends_no_key() {
    assert_no_auth_header("    kind: anonymous\n").await;
}

#[tokio::test]
async fn empty_key_sends_no_auth_header() {
    assert_no_auth_header("    kind: key\n    apiKey: \"\"\n").await;
}

#[tokio::test]
async fn reference_connection() {
    let server = Aimock::start();
    prompty::register_connection(
        "e2e-openai-ref",
        prompty::Connection::Key {
            endpoint: Some(format!("{}/v1", server.url())),
            api_key: Some(prompty::Secret::new("sk-from-registry")),
            common: Default::default(),
        },
    );
    let agent = prompt(
        "---\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: reference\n    name: e2e-openai-ref\n---\n\
         user:\nhello",
    );
    assert_eq!(
        within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap(),
        json!("Hi there!")
    );
    let e = only_request(&server, "/v1/chat/completions");
    assert!(e["headers"]["authorization"].is_string());
}

#[tokio::test]
async fn list_models() {
    // GET /v1/models is not journaled by aimock; its key check proves the request carried the key.
    let server = Aimock::start_with_keys(&["sk-e2e-test"]);
    let connection = |key: &str| prompty::Connection::Key {
        endpoint: Some(format!("{}/v1", server.url())),
        api_key: Some(prompty::Secret::new(key)),
        common: Default::default(),
    };
    let models = within(prompty::providers::openai::list_models(Some(&connection("sk-e2e-test")))).await.unwrap();
    let gpt4o = models.iter().find(|m| m.id == "gpt-4o").unwrap_or_else(|| panic!("no gpt-4o in {models:?}"));
    assert_eq!(gpt4o.owned_by.as_deref(), Some("aimock"));
    assert_eq!(gpt4o.context_window, Some(128000), "enriched from the capabilities table");
    assert_eq!(gpt4o.additional_properties.as_ref().map(|p| p["object"].clone()), Some(json!("model")));

    let err = within(prompty::providers::openai::list_models(Some(&connection("sk-wrong")))).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("openai request failed: HTTP 401 Unauthorized: Invalid API key"), "{msg}");
    assert!(!msg.contains("sk-wrong"), "{msg}");
}

#[tokio::test]
async fn stream_that_breaks_midway_is_indeterminate() {
    let server = Aimock::start();
    let agent = chat_prompt(&server, "", "cut short");
    let chunks = collect(within(prompty::invoke_stream(&agent, &json!({}))).await.unwrap()).await;
    let text = text_of(&chunks);
    assert!(
        !text.is_empty()
            && "This answer is long enough to be cut short by the server after a few chunks.".starts_with(&text)
    );
    assert!(text.len() < 40, "only part of the answer arrived: {text:?}");
    match chunks.last() {
        Some(StreamChunk::Failure(f)) => {
            assert_eq!(f.outcome, Outcome::Indeterminate, "{f:?}");
            assert!(f.message.contains("stream"), "{f:?}");
        }
        other => panic!("the stream must end with a failure, got {other:?} in {chunks:?}"),
    }
    assert_eq!(server.requests_to("/v1/chat/completions").len(), 1, "a started stream is never retried");
}
