//! End-to-end tests of the Anthropic executor against a real `@copilotkit/aimock` server on
//! 127.0.0.1: Messages plain and streamed, tool_use plain and streamed, errors and model discovery.
//! Each test checks the result and what the server received (its request journal).

#[path = "e2e/common.rs"]
mod common;

use common::{collect, prompt, text_of, tool_calls_of, user_agent, within, Aimock};
use prompty::StreamChunk;
use serde_json::{json, Value};

const WEATHER_TOOL: &str = "tools:\n  - name: get_weather\n    kind: function\n    description: Current weather\n    \
                            parameters:\n      - name: city\n        kind: string\n        required: true\n";

fn claude_prompt(server: &Aimock, extra: &str, user: &str) -> prompty::Agent {
    prompt(&format!(
        "---\nname: e2e\nmodel:\n  id: claude-sonnet-4-5\n  provider: anthropic\n  connection:\n    kind: key\n    \
         endpoint: {}\n    apiKey: sk-ant-e2e\n{extra}---\nsystem:\nYou are terse.\n\nuser:\n{user}",
        server.url()
    ))
}

fn only_request(server: &Aimock) -> Value {
    let entries = server.requests_to("/v1/messages");
    assert_eq!(entries.len(), 1, "expected one request: {:#?}", server.journal());
    let e = entries.into_iter().next().unwrap_or_default();
    assert_eq!(e["method"], "POST");
    assert_eq!(e["headers"]["user-agent"], user_agent().as_str());
    assert_eq!(e["headers"]["anthropic-version"], "2023-06-01");
    assert!(e["headers"]["x-api-key"].is_string(), "x-api-key sent: {e:#}");
    assert!(e["headers"].get("authorization").is_none(), "no bearer token: {e:#}");
    e
}

#[tokio::test]
async fn messages() {
    // The server accepts only this key: the answer proves it was sent as it is.
    let server = Aimock::start_with_keys(&["sk-ant-e2e"]);
    let agent = claude_prompt(&server, "", "hello");
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap();
    assert_eq!(out, json!("Hi there!"));

    let body = only_request(&server)["body"].clone();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["max_tokens"], 4096, "the spec's default");
    // aimock's journal shows the request normalized to chat messages: the top-level `system` first.
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}])
    );
    assert!(body.get("stream").is_none());
}

#[tokio::test]
async fn messages_streamed() {
    let server = Aimock::start();
    let agent = claude_prompt(&server, "", "stream me");
    let chunks = collect(within(prompty::invoke_stream(&agent, &json!({}))).await.unwrap()).await;
    assert_eq!(text_of(&chunks), "Streaming works, one small piece at a time.");
    assert!(!chunks.iter().any(|c| matches!(c, StreamChunk::Failure(_))), "{chunks:?}");
    assert_eq!(only_request(&server)["body"]["stream"], true);
}

#[tokio::test]
async fn tool_use() {
    let server = Aimock::start();
    let agent = claude_prompt(&server, WEATHER_TOOL, "What is the weather in Paris?");
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap();
    let calls = out.as_array().cloned().unwrap_or_default();
    assert_eq!(calls.len(), 1, "{out:#}");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(calls[0]["arguments"], "{\"city\":\"Paris\"}");
    assert!(calls[0]["id"].as_str().is_some_and(|id| !id.is_empty()));

    // Journal: the tool as Anthropic received it (normalized by aimock to the function shape).
    let body = only_request(&server)["body"].clone();
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(body["tools"][0]["function"]["parameters"]["properties"]["city"]["type"], "string");
}

#[tokio::test]
async fn tool_use_streamed() {
    let server = Aimock::start();
    let agent = claude_prompt(&server, WEATHER_TOOL, "What is the weather in Paris?");
    let chunks = collect(within(prompty::invoke_stream(&agent, &json!({}))).await.unwrap()).await;
    let calls = tool_calls_of(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].arguments_value().unwrap(), json!({"city": "Paris"}));
    assert_eq!(only_request(&server)["body"]["stream"], true);
}

#[tokio::test]
async fn server_error_is_retried_then_reported() {
    let server = Aimock::start();
    let agent = claude_prompt(&server, "", "broken");
    let err = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap_err().to_string();
    assert!(err.starts_with("anthropic request failed: HTTP 500"), "{err}");
    assert!(err.contains("The server had an error while processing your request"), "{err}");
    assert!(err.contains("3 attempts") && err.contains("request id req-"), "{err}");
    assert!(!err.contains("sk-ant-e2e"), "{err}");
    assert_eq!(server.requests_to("/v1/messages").len(), 3);
}

#[tokio::test]
async fn list_models() {
    // GET /v1/models is not journaled by aimock; its key check proves the request carried the key.
    let server = Aimock::start_with_keys(&["sk-ant-e2e"]);
    let connection = |key: &str| prompty::Connection::Key {
        endpoint: Some(server.url()),
        api_key: Some(prompty::Secret::new(key)),
        common: Default::default(),
    };
    let models = within(prompty::providers::anthropic::list_models(Some(&connection("sk-ant-e2e")))).await.unwrap();
    let claude = models.iter().find(|m| m.id.starts_with("claude")).unwrap_or_else(|| panic!("{models:?}"));
    assert_eq!(claude.owned_by.as_deref(), Some("anthropic"));

    let msg =
        within(prompty::providers::anthropic::list_models(Some(&connection("sk-bad")))).await.unwrap_err().to_string();
    assert!(msg.starts_with("anthropic request failed: HTTP 401 Unauthorized: Invalid API key"), "{msg}");
}
