//! End-to-end tests of the shared HTTP behaviour against a real `@copilotkit/aimock` server on
//! 127.0.0.1: a 429 then success (honouring `Retry-After`), a 500 that exhausts the retries, a 4xx
//! that is never retried, a malformed body, a refused connection, configured retry policies,
//! endpoint and key from the environment, and keys that never show in errors. Attempt counts come
//! from the server's request journal.

#[path = "e2e/common.rs"]
mod common;

use common::{prompt, user_agent, within, Aimock};
use prompty::providers::http::{HttpClient, HttpConfig, RetryPolicy};
use prompty::providers::openai::OpenAiExecutor;
use prompty::Executor;
use serde_json::json;
use std::time::{Duration, Instant};

const SECRET: &str = "sk-e2e-very-secret-4242";

fn chat_prompt(endpoint: &str, user: &str) -> prompty::Agent {
    prompt(&format!(
        "---\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    endpoint: {endpoint}\n    \
         apiKey: {SECRET}\n---\nuser:\n{user}"
    ))
}

fn fast_retries(max_attempts: u32) -> OpenAiExecutor {
    let policy = RetryPolicy { max_attempts, base_delay: Duration::from_millis(10), max_delay: Duration::from_secs(2) };
    OpenAiExecutor::with_client(HttpClient::shared().with_retry(policy))
}

#[tokio::test]
async fn rate_limited_then_success() {
    let server = Aimock::start();
    let agent = chat_prompt(&format!("{}/v1", server.url()), "flaky");
    let started = Instant::now();
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap();
    assert_eq!(out, json!("recovered after a 429"));
    assert!(started.elapsed() >= Duration::from_millis(950), "Retry-After: 1 honoured, waited {:?}", started.elapsed());

    let entries = server.requests_to("/v1/chat/completions");
    let statuses: Vec<_> = entries.iter().map(|e| e["response"]["status"].clone()).collect();
    assert_eq!(statuses, [json!(429), json!(200)]);
    for e in &entries {
        assert_eq!(e["body"]["messages"], json!([{"role": "user", "content": "flaky"}]), "the same body is resent");
        assert_eq!(e["headers"]["user-agent"], user_agent().as_str());
    }
}

#[tokio::test]
async fn server_error_exhausts_the_default_retries() {
    let server = Aimock::start();
    let agent = chat_prompt(&format!("{}/v1", server.url()), "broken");
    let err = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(&err, prompty::Error::Http(f) if f.status == Some(500) && f.attempts == 3), "{err:?}");
    assert!(msg.starts_with("openai request failed: HTTP 500 Internal Server Error: "), "{msg}");
    assert!(msg.contains("The server had an error while processing your request"), "{msg}");
    assert!(msg.contains("request id req-") && msg.contains("3 attempts"), "{msg}");
    assert!(!msg.contains(SECRET), "{msg}");

    let entries = server.requests_to("/v1/chat/completions");
    assert_eq!(entries.len(), 3, "RetryPolicy::default() makes 3 attempts");
    assert!(entries.iter().all(|e| e["response"]["status"] == 500));
}

#[tokio::test]
async fn configured_retry_policy() {
    let server = Aimock::start();
    let agent = chat_prompt(&format!("{}/v1", server.url()), "broken");
    let executor = fast_retries(5);
    let started = Instant::now();
    let err = within(executor.execute_async(&agent, &prompty::prepare(&agent, &json!({})).unwrap())).await.unwrap_err();
    assert!(err.to_string().contains("5 attempts"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "short backoff: {:?}", started.elapsed());
    assert_eq!(server.requests_to("/v1/chat/completions").len(), 5);

    let none = OpenAiExecutor::new().with_retry(RetryPolicy::none());
    let before = server.journal().len();
    let err = within(none.execute_async(&agent, &prompty::prepare(&agent, &json!({})).unwrap())).await.unwrap_err();
    assert!(!err.to_string().contains("attempts"), "{err}");
    assert_eq!(server.journal().len(), before + 1);
}

#[tokio::test]
async fn client_errors_are_never_retried() {
    let server = Aimock::start();
    let agent = chat_prompt(&format!("{}/v1", server.url()), "forbidden");
    let msg = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap_err().to_string();
    assert!(msg.starts_with("openai request failed: HTTP 401 Unauthorized: Incorrect API key provided"), "{msg}");
    assert!(msg.contains("(request id req-"), "{msg}");
    assert!(!msg.contains(SECRET), "the key never shows: {msg}");
    assert_eq!(server.requests_to("/v1/chat/completions").len(), 1);
}

#[tokio::test]
async fn malformed_body() {
    let server = Aimock::start();
    let agent = chat_prompt(&format!("{}/v1", server.url()), "garbled");
    let msg = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await.unwrap_err().to_string();
    assert!(msg.starts_with("openai request failed: HTTP 200 OK: the response is not valid JSON"), "{msg}");
    assert!(msg.contains("; response body: {malformed json: <<<chaos>>>"), "the raw body is kept: {msg}");
    assert_eq!(server.requests_to("/v1/chat/completions").len(), 1, "a malformed answer is not retried");
}

#[tokio::test]
async fn stream_refused_before_it_starts() {
    let server = Aimock::start();
    let agent = chat_prompt(&format!("{}/v1", server.url()), "forbidden");
    let err = within(prompty::invoke_stream(&agent, &json!({}))).await.err().expect("a 401 fails the call");
    assert!(err.to_string().contains("HTTP 401"), "{err}");
    assert_eq!(server.requests_to("/v1/chat/completions")[0]["body"]["stream"], true);
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    // A port nothing listens on: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let agent = chat_prompt(&format!("http://127.0.0.1:{port}/v1"), "hello");
    let executor = fast_retries(2);
    let msg = within(executor.execute_async(&agent, &prompty::prepare(&agent, &json!({})).unwrap()))
        .await
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with("openai request failed: error sending request"), "{msg}");
    assert!(msg.contains("2 attempts"), "{msg}");
    assert!(!msg.contains(SECRET), "{msg}");
}

#[tokio::test]
async fn request_timeout() {
    // A server that accepts and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let config = HttpConfig {
        request_timeout: Duration::from_millis(200),
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(1),
        },
        ..HttpConfig::default()
    };
    let executor = OpenAiExecutor::with_client(HttpClient::new(config).unwrap());
    let agent = chat_prompt(&format!("http://127.0.0.1:{port}/v1"), "hello");
    let started = Instant::now();
    let msg = within(executor.execute_async(&agent, &prompty::prepare(&agent, &json!({})).unwrap()))
        .await
        .unwrap_err()
        .to_string();
    assert!(msg.contains("2 attempts"), "{msg}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    hold.abort();
}

#[tokio::test]
async fn endpoint_and_key_from_the_environment() {
    let server = Aimock::start();
    // Only this test reads these variables: every other prompt names its endpoint and key.
    std::env::set_var("OPENAI_BASE_URL", format!("{}/v1", server.url()));
    std::env::set_var("OPENAI_API_KEY", SECRET);
    let agent = prompt("---\nmodel:\n  id: gpt-4o\n  provider: openai\n---\nuser:\nhello");
    let out = within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({}))).await;
    std::env::remove_var("OPENAI_BASE_URL");
    std::env::remove_var("OPENAI_API_KEY");
    assert_eq!(out.unwrap(), json!("Hi there!"));
    let e = &server.requests_to("/v1/chat/completions")[0];
    assert_eq!(e["headers"]["authorization"], "[REDACTED]", "aimock redacts the bearer token it received");
}

#[tokio::test]
async fn executor_and_processor_used_directly() {
    let server = Aimock::start();
    let agent = chat_prompt(&format!("{}/v1", server.url()), "hello");
    let messages = prompty::prepare(&agent, &json!({})).unwrap();
    let raw = within(fast_retries(1).execute_async(&agent, &messages)).await.unwrap();
    assert_eq!(raw["object"], "chat.completion");
    assert_eq!(raw["usage"]["total_tokens"], 15);
    let processor = prompty::get_processor("openai").unwrap();
    assert_eq!(processor.process(&agent, raw).unwrap(), prompty::Processed::Answer(json!("Hi there!")));
    assert!(!format!("{agent:?} {:?}", fast_retries(1)).contains(SECRET), "Debug never shows the key");
}

#[test]
fn runtimes_come_and_go() {
    // The shared client's pooled connections belong to the runtime that opened them; a later
    // runtime (each `#[tokio::test]`, each blocking call of a library) must still get answers.
    let server = Aimock::start();
    let agent = chat_prompt(&format!("{}/v1", server.url()), "hello");
    for _ in 0..3 {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        assert_eq!(
            rt.block_on(within(prompty::invoke_async::<serde_json::Value>(&agent, &json!({})))).unwrap(),
            json!("Hi there!")
        );
        drop(rt);
    }
    let entries = server.requests_to("/v1/chat/completions");
    assert_eq!(entries.len(), 3, "one request per call, no retry needed: {entries:#?}");
}

/// The API types each built-in executor serves are those the compile-time checks know
/// (`prompty::analysis::BUILTIN_PROVIDERS`): every one of them reaches the server (which answers,
/// or refuses a path it does not know with a 404), any other is refused before a request, with an
/// error naming `model.apiType`.
#[tokio::test]
async fn each_built_in_executor_serves_the_api_types_the_checks_know() {
    use prompty::analysis::BUILTIN_PROVIDERS;
    use prompty::providers::anthropic::AnthropicExecutor;
    use prompty::providers::openai::FoundryExecutor;
    let server = Aimock::start();
    let mut candidates: Vec<&str> = BUILTIN_PROVIDERS.iter().flat_map(|p| p.api_types.iter().copied()).collect();
    candidates.extend(["audio", "Chat", "completions"]);
    candidates.sort_unstable();
    candidates.dedup();
    // The local provider sends no HTTP request (its API types are held to the checks in its own tests).
    for provider in BUILTIN_PROVIDERS.iter().filter(|p| p.key != "local") {
        let executor: Box<dyn Executor> = match provider.key {
            "openai" => Box::new(OpenAiExecutor::new().with_retry(RetryPolicy::none())),
            "azure" | "foundry" => Box::new(FoundryExecutor::new().with_retry(RetryPolicy::none())),
            "anthropic" => Box::new(AnthropicExecutor::new().with_retry(RetryPolicy::none())),
            other => panic!("the built-in provider `{other}` has no executor in this test"),
        };
        for api in &candidates {
            let agent = prompt(&format!(
                "---\nmodel:\n  id: gpt-4o\n  provider: {}\n  apiType: {api}\n  connection:\n    kind: key\n    \
                 endpoint: {}/v1\n    apiKey: {SECRET}\n---\nuser:\nhello",
                provider.key,
                server.url()
            ));
            let messages = [prompty::Message::new(prompty::Role::User, "hello")];
            let result = within(executor.execute_async(&agent, &messages)).await;
            // The server answered (whatever it answered: aimock knows only some of these paths).
            let sent = matches!(&result, Ok(_) | Err(prompty::Error::Http(_)));
            let served = provider.api_types.contains(api);
            assert_eq!(sent, served, "{}: apiType {api}: {result:?}", provider.key);
            if !served {
                // Refused before any request, as a configuration error naming the setting.
                match result {
                    Err(prompty::Error::Config { setting, message }) => {
                        assert_eq!(setting, "model.apiType", "{}: {message}", provider.key);
                        assert!(message.contains(&format!("'{api}' is not supported")), "{}: {message}", provider.key);
                    }
                    other => panic!("{}: apiType {api}: expected Error::Config, got {other:?}", provider.key),
                }
            }
        }
    }
}
