//! Adversarial tests of the HTTP layer against small fault servers of its own, on 127.0.0.1 and
//! (for another host) 127.0.0.2: redirects to another origin never carry a credential, keys
//! echoed by a server never show in an error or an event, `Debug` redacts secret-looking fields,
//! garbage `Retry-After` values never panic, hostile tool-call indexes never panic, streams and
//! bodies are bounded in time and size, and a 2xx cut short is never re-sent. Every probe runs
//! under a timeout.

use futures_util::StreamExt;
use prompty::providers::anthropic::AnthropicExecutor;
use prompty::providers::http::{HttpClient, HttpConfig, RetryPolicy};
use prompty::providers::openai::{FoundryExecutor, OpenAiExecutor};
use prompty::{Agent, Executor, RawEvent, StreamChunk};
use serde_json::{json, Value};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[path = "../../prompty-core/tests/support/scaling.rs"]
mod scaling;

const KEY: &str = "sk-adv/Secret+Key-9f8e7d6c5b4a";

// ---------------------------------------------------------------------------------------------
// A fault server: accepts connections, reads one request per connection, hands it to a handler.

#[derive(Debug, Clone)]
struct Request {
    head: String,
}

impl Request {
    fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("")
    }
}

type Handler = Arc<dyn Fn(Request, TcpStream) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

fn handler<F, Fut>(f: F) -> Handler
where
    F: Fn(Request, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |r, s| Box::pin(f(r, s)))
}

struct Server {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<Request>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(ip: &str, handle: Handler) -> Server {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (handle, seen) = (handle.clone(), seen.clone());
                tokio::spawn(async move {
                    if let Some(req) = read_request(&mut socket).await {
                        seen.lock().unwrap().push(req.clone());
                        handle(req, socket).await;
                    }
                });
            }
        });
        Server { addr, log, task }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 1 << 20 {
            return None;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>()))
        .and_then(Result::ok)
        .unwrap_or(0)
        .min(1 << 24);
    let mut read = buf.len() - head_end;
    while read < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        read += n;
    }
    Some(Request { head })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Whatever",
    }
}

async fn respond(mut socket: TcpStream, status: u16, headers: &[(&str, String)], body: &[u8]) {
    let mut head =
        format!("HTTP/1.1 {status} {}\r\ncontent-length: {}\r\nconnection: close\r\n", reason(status), body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body).await;
    let _ = socket.shutdown().await;
}

/// Starts an SSE response (no length: the body runs until the connection closes).
async fn start_sse(socket: &mut TcpStream) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let _ = socket.write_all(head.as_bytes()).await;
}

// ---------------------------------------------------------------------------------------------
// Agents and calls.

#[derive(Debug, Clone, Copy, PartialEq)]
enum Provider {
    OpenAi,
    Azure,
    Anthropic,
}

const PROVIDERS: [Provider; 3] = [Provider::OpenAi, Provider::Azure, Provider::Anthropic];

impl Provider {
    fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Azure => "azure",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The header that carries the key, lower-cased.
    fn auth_header(self) -> &'static str {
        match self {
            Provider::OpenAi => "authorization",
            Provider::Azure => "api-key",
            Provider::Anthropic => "x-api-key",
        }
    }

    fn ok_body(self) -> Vec<u8> {
        let v = match self {
            Provider::Anthropic => {
                json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"})
            }
            _ => json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}),
        };
        serde_json::to_vec(&v).unwrap()
    }

    fn endpoint(self, base: &str) -> String {
        match self {
            Provider::OpenAi => format!("{base}/v1"),
            _ => base.to_owned(),
        }
    }

    fn executor(self, client: HttpClient) -> Box<dyn Executor> {
        match self {
            Provider::OpenAi => Box::new(OpenAiExecutor::with_client(client)),
            Provider::Azure => Box::new(FoundryExecutor::with_client(client)),
            Provider::Anthropic => Box::new(AnthropicExecutor::with_client(client)),
        }
    }
}

fn agent(provider: Provider, endpoint: &str, key: &str) -> Agent {
    Agent::from_value(json!({
        "name": "adversarial",
        "model": {"id": "gpt-4o", "provider": provider.name(),
                  "options": {"maxOutputTokens": 16},
                  "connection": {"kind": "key", "endpoint": provider.endpoint(endpoint), "apiKey": key}},
        "instructions": "user:\nHi",
    }))
    .unwrap()
}

fn client(config: HttpConfig) -> HttpClient {
    HttpClient::new(config).unwrap()
}

fn fast_retries(max_attempts: u32) -> HttpConfig {
    HttpConfig {
        retry: RetryPolicy { max_attempts, base_delay: Duration::from_millis(5), max_delay: Duration::from_secs(2) },
        ..HttpConfig::default()
    }
}

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f).await.expect("the probe finished in time")
}

async fn call(provider: Provider, config: HttpConfig, agent: &Agent) -> prompty::Result<Value> {
    let messages = prompty::prepare(agent, &json!({})).unwrap();
    let executor = provider.executor(client(config));
    bounded(executor.execute_async(agent, &messages)).await
}

async fn call_stream(config: HttpConfig, agent: &Agent) -> prompty::Result<Vec<RawEvent>> {
    let messages = prompty::prepare(agent, &json!({})).unwrap();
    let executor = OpenAiExecutor::with_client(client(config));
    let stream = bounded(executor.execute_stream(agent, &messages)).await?;
    Ok(bounded(stream.collect::<Vec<_>>()).await)
}

fn assert_no_key(what: &str, text: &str) {
    for form in [KEY, "Secret+Key", "Secret%2BKey", "9f8e7d6c5b4a"] {
        assert!(!text.contains(form), "{what} shows the key ({form}): {text}");
    }
}

fn assert_error_clean(err: &prompty::Error) {
    let (display, debug) = (err.to_string(), format!("{err:?}"));
    assert_no_key("Display", &display);
    assert_no_key("Debug", &debug);
    assert!(display.len() < 10_000 && debug.len() < 12_000, "error text is capped: {} bytes", display.len());
}

// ---------------------------------------------------------------------------------------------
// 1. Redirects never carry a credential to another origin.

#[tokio::test]
async fn cross_origin_redirects_carry_no_credential() {
    let ok = |p: Provider| handler(move |_, s| async move { respond(s, 200, &[], &p.ok_body()).await });
    for provider in PROVIDERS {
        // Another host (127.0.0.2) and another port on the same host.
        let other_host = Server::start("127.0.0.2", ok(provider)).await;
        let other_port = Server::start("127.0.0.1", ok(provider)).await;
        for target in [&other_host, &other_port] {
            for code in [301, 302, 303, 307, 308] {
                let to = format!("{}/landing", target.url());
                let origin = Server::start(
                    "127.0.0.1",
                    handler(move |_, s| {
                        let to = to.clone();
                        async move { respond(s, code, &[("location", to)], b"").await }
                    }),
                )
                .await;
                let a = agent(provider, &origin.url(), KEY);
                let err = call(provider, fast_retries(3), &a).await.expect_err("a cross-origin redirect fails");
                let msg = err.to_string();
                assert!(
                    msg.contains("refused a redirect") && msg.contains(&target.url()),
                    "{provider:?} {code}: {msg}"
                );
                assert!(matches!(&err, prompty::Error::Http(f) if f.attempts == 1), "not retried: {err:?}");
                assert_error_clean(&err);
                assert_eq!(origin.requests().len(), 1, "{provider:?} {code}");
                assert!(origin.requests()[0].head.to_ascii_lowercase().contains(provider.auth_header()));
            }
            for req in target.requests() {
                assert_no_key("the other origin's request", &req.head);
            }
            assert!(target.requests().is_empty(), "{provider:?}: nothing reaches another origin");
        }
    }
}

#[tokio::test]
async fn streamed_calls_refuse_cross_origin_redirects_too() {
    let other =
        Server::start("127.0.0.2", handler(|_, s| async move { respond(s, 200, &[], b"data: [DONE]\n\n").await }))
            .await;
    let to = format!("{}/v1/chat/completions", other.url());
    let origin = Server::start(
        "127.0.0.1",
        handler(move |_, s| {
            let to = to.clone();
            async move { respond(s, 307, &[("location", to)], b"").await }
        }),
    )
    .await;
    let err = call_stream(fast_retries(3), &agent(Provider::OpenAi, &origin.url(), KEY)).await.unwrap_err();
    assert!(err.to_string().contains("refused a redirect"), "{err}");
    assert!(other.requests().is_empty());
}

#[tokio::test]
async fn same_origin_redirects_are_followed() {
    for provider in PROVIDERS {
        let server = Server::start(
            "127.0.0.1",
            handler(move |r, s| async move {
                if r.path().starts_with("/moved") {
                    respond(s, 200, &[], &provider.ok_body()).await;
                } else {
                    respond(s, 307, &[("location", "/moved".to_owned())], b"").await;
                }
            }),
        )
        .await;
        let raw = call(provider, fast_retries(1), &agent(provider, &server.url(), KEY)).await.unwrap();
        assert!(raw.get("choices").or(raw.get("content")).is_some(), "{raw}");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        assert!(reqs[1].head.to_ascii_lowercase().contains(provider.auth_header()), "same origin keeps the key");
    }
}

// ---------------------------------------------------------------------------------------------
// 2. A key echoed by the server never shows.

/// A status, extra headers and a body.
type Reply = (u16, Vec<(&'static str, String)>, Vec<u8>);

fn echo_bodies() -> Vec<Reply> {
    let json_msg =
        serde_json::to_vec(&json!({"error": {"message": format!("Incorrect API key provided: {KEY}.")}})).unwrap();
    let escaped = format!(r#"{{"error":{{"message":"bad key {}"}}}}"#, KEY.replace('/', "\\/")).into_bytes();
    let html = format!("<html><body><h1>401</h1><p>Invalid key <b>{KEY}</b></p></body></html>").into_bytes();
    let header_like = format!("Authorization: Bearer {KEY}\r\napi-key: {KEY}\r\nx-api-key: {KEY}\r\n").into_bytes();
    let huge = serde_json::to_vec(&json!({"error": {"message": format!("{}{KEY}", "x".repeat(1 << 20))}})).unwrap();
    let huge_raw = format!("{}{KEY}{}", "<p>".repeat(100_000), "</p>".repeat(100_000)).into_bytes();
    let detail = serde_json::to_vec(&json!({"detail": {"key": KEY, "nested": [KEY]}})).unwrap();
    vec![
        (401, vec![], json_msg.clone()),
        (401, vec![], escaped),
        (401, vec![("content-type", "text/html".into())], html),
        (401, vec![], header_like),
        (401, vec![("x-request-id", format!("req-{KEY}"))], b"{}".to_vec()),
        (403, vec![], huge),
        (401, vec![], huge_raw),
        (400, vec![], detail),
        (500, vec![], json_msg),
        (200, vec![], format!("not json {KEY}").into_bytes()),
    ]
}

#[tokio::test]
async fn echoed_keys_never_show_in_errors() {
    for provider in PROVIDERS {
        for (status, headers, body) in echo_bodies() {
            let server = Server::start(
                "127.0.0.1",
                handler(move |_, s| {
                    let (headers, body) = (headers.clone(), body.clone());
                    async move { respond(s, status, &headers, &body).await }
                }),
            )
            .await;
            let err = call(provider, fast_retries(2), &agent(provider, &server.url(), KEY)).await.unwrap_err();
            assert!(err.to_string().contains(&format!("HTTP {status}")), "{err}");
            assert_error_clean(&err);
        }
    }
}

#[tokio::test]
async fn keys_from_the_environment_are_scrubbed_too() {
    std::env::set_var("ADVERSARIAL_HTTP_KEY", KEY);
    let server = Server::start(
        "127.0.0.1",
        handler(|r, s| async move {
            // Echo every header back, as some proxies do.
            let body = serde_json::to_vec(&json!({"error": {"message": r.head}})).unwrap();
            respond(s, 401, &[], &body).await
        }),
    )
    .await;
    let text = format!(
        "---\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    endpoint: {}/v1\n    \
         apiKey: ${{env:ADVERSARIAL_HTTP_KEY}}\n---\nuser:\nHi",
        server.url()
    );
    let a = prompty::load_str(&text, ".", "env.prompty").unwrap();
    let err = bounded(prompty::invoke_async::<Value>(&a, &json!({}))).await.unwrap_err();
    assert!(err.to_string().contains("authorization: [REDACTED]"), "{err}");
    assert_error_clean(&err);
    assert_no_key("Debug of the agent", &format!("{a:?}"));
}

#[tokio::test]
async fn echoed_keys_never_show_in_stream_events() {
    let server = Server::start(
        "127.0.0.1",
        handler(|_, mut s| async move {
            start_sse(&mut s).await;
            let text = json!({"choices": [{"index": 0, "delta": {"content": format!("your key is {KEY}")}}]});
            let _ = s.write_all(format!("data: {text}\n\n").as_bytes()).await;
            let _ = s.write_all(format!("data: not json {KEY}\n\n").as_bytes()).await;
        }),
    )
    .await;
    let events = call_stream(fast_retries(1), &agent(Provider::OpenAi, &server.url(), KEY)).await.unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(&events[1], RawEvent::TransportError(m) if m.contains("not JSON")), "{events:?}");
    assert_no_key("stream events", &format!("{events:?}"));

    let error_event = Server::start(
        "127.0.0.1",
        handler(|_, mut s| async move {
            start_sse(&mut s).await;
            let e =
                json!({"type": "error", "error": {"type": "authentication_error", "message": format!("bad {KEY}")}});
            let _ = s.write_all(format!("event: error\ndata: {e}\n\n").as_bytes()).await;
        }),
    )
    .await;
    let a = agent(Provider::Anthropic, &error_event.url(), KEY);
    let chunks: Vec<StreamChunk> =
        bounded(async { prompty::invoke_stream(&a, &json!({})).await.unwrap().collect().await }).await;
    assert!(chunks.iter().any(|c| matches!(c, StreamChunk::Failure(_))), "{chunks:?}");
    assert_no_key("stream chunks", &format!("{chunks:?}"));
}

// ---------------------------------------------------------------------------------------------
// 3. Debug redaction of connections of every kind.

#[test]
fn debug_redacts_unknown_connection_kinds() {
    let a = Agent::from_value(json!({
        "name": "x",
        "metadata": {"authors": ["me"], "deployToken": KEY},
        "model": {"id": "m", "provider": "openai", "connection": {
            "kind": "my-vault", "endpoint": "https://vault.example",
            "apiKey": KEY, "API_KEY": KEY, "x-api-key": KEY, "token": KEY, "clientSecret": KEY,
            "password": KEY, "Authorization": format!("Bearer {KEY}"),
            "settings": {"credentials": {"user": "u", "pass": KEY}, "list": [{"sasToken": KEY}]},
        }},
        "instructions": "user:\nHi",
    }))
    .unwrap();
    let debug = format!("{a:?} {:#?}", a.model.as_ref().unwrap().connection);
    assert_no_key("Debug of an unknown connection kind", &debug);
    assert!(debug.contains("vault.example") && debug.contains("my-vault") && debug.contains("[REDACTED]"), "{debug}");
    assert!(debug.contains("\"me\""), "non-secret metadata stays visible: {debug}");
    for kind in ["key", "oauth"] {
        let c: prompty::Connection =
            serde_json::from_value(json!({"kind": kind, "apiKey": KEY, "clientSecret": KEY})).unwrap();
        assert_no_key(kind, &format!("{c:?}"));
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Retry-After garbage and hostile numbers never panic.

fn retry_after_values() -> Vec<(&'static str, &'static str)> {
    vec![
        ("retry-after-ms", "1e30"),
        ("retry-after-ms", "1e400"),
        ("retry-after-ms", "-5"),
        ("retry-after-ms", "NaN"),
        ("retry-after-ms", "inf"),
        ("retry-after-ms", "-inf"),
        ("retry-after-ms", "18446744073709551616"),
        ("retry-after-ms", "garbage"),
        ("retry-after", "1e30"),
        ("retry-after", "-1"),
        ("retry-after", "NaN"),
        ("retry-after", "99999999999999999999999"),
        ("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
        ("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT"),
        ("retry-after", "1.5.3"),
        ("retry-after-ms", ""),
    ]
}

fn rate_limited(name: &'static str, value: &'static str) -> Handler {
    handler(move |_, s| async move {
        let body = br#"{"error":{"message":"slow down"}}"#;
        respond(s, 429, &[(name, value.to_owned())], body).await
    })
}

#[tokio::test]
async fn retry_after_garbage_async() {
    for (name, value) in retry_after_values() {
        let server = Server::start("127.0.0.1", rate_limited(name, value)).await;
        let a = agent(Provider::OpenAi, &server.url(), KEY);
        let started = Instant::now();
        let err = call(Provider::OpenAi, fast_retries(2), &a).await.unwrap_err();
        assert!(err.to_string().contains("HTTP 429"), "{name}: {value}: {err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{name}: {value}: {:?}", started.elapsed());
        // Through the registered executor (shared client, default policy) too; the values that
        // panicked it before (a huge wait means no retry, so this is quick).
        if !value.contains("1e30") {
            continue;
        }
        let err = bounded(prompty::invoke_async::<Value>(&a, &json!({}))).await.unwrap_err();
        assert!(err.to_string().contains("HTTP 429"), "{err}");
    }
}

#[test]
fn retry_after_garbage_sync() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (name, value) in [("retry-after-ms", "1e30"), ("retry-after", "1e30"), ("retry-after-ms", "NaN")] {
        let server = rt.block_on(Server::start("127.0.0.1", rate_limited(name, value)));
        let a = agent(Provider::OpenAi, &server.url(), KEY);
        let (tx, rx) = std::sync::mpsc::channel();
        let probe = a.clone();
        std::thread::spawn(move || {
            let _ = tx.send(prompty::invoke::<Value>(&probe, &json!({})).map_err(|e| e.to_string()));
        });
        let out = rx.recv_timeout(Duration::from_secs(30)).expect("invoke returned (no panic, no hang)");
        assert!(out.unwrap_err().contains("HTTP 429"));
        let messages = prompty::prepare(&a, &json!({})).unwrap();
        let err = OpenAiExecutor::with_client(client(fast_retries(2))).execute(&a, &messages).unwrap_err();
        assert!(err.to_string().contains("HTTP 429"), "{err}");
        drop(server);
    }
}

fn sse_server(events: Vec<Value>, done: bool) -> Handler {
    handler(move |_, mut s| {
        let events = events.clone();
        async move {
            start_sse(&mut s).await;
            for e in events {
                let _ = s.write_all(format!("data: {e}\n\n").as_bytes()).await;
            }
            if done {
                let _ = s.write_all(b"data: [DONE]\n\n").await;
            }
        }
    })
}

#[tokio::test]
async fn hostile_tool_call_indexes_never_panic() {
    let tc = |index: Value, id: &str| {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]})
    };
    let no_index = |id: &str| {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"id": id, "type": "function", "function": {"name": "g", "arguments": "{}"}}]}}]})
    };
    let openai = vec![
        tc(json!(u64::MAX), "a"),
        no_index("b"),
        tc(json!(-1), "c"),
        tc(json!(1e300), "d"),
        tc(json!("7"), "e"),
        tc(json!(i64::MIN), "f"),
        no_index("g"),
    ];
    let server = Server::start("127.0.0.1", sse_server(openai, true)).await;
    let a = agent(Provider::OpenAi, &server.url(), KEY);
    let chunks: Vec<StreamChunk> =
        bounded(async { prompty::invoke_stream(&a, &json!({})).await.unwrap().collect().await }).await;
    assert!(chunks.iter().any(|c| matches!(c, StreamChunk::ToolCall(_))), "{chunks:?}");

    let block = |index: Value| {
        vec![
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
            json!({"type": "content_block_stop", "index": index}),
        ]
    };
    let mut anthropic = vec![json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})];
    for index in [json!(u64::MAX), json!(-1), json!(1e300), json!(null)] {
        anthropic.extend(block(index));
    }
    anthropic.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": u64::MAX}}),
    );
    anthropic.push(json!({"type": "message_stop"}));
    let server = Server::start("127.0.0.1", sse_server(anthropic, false)).await;
    let a = agent(Provider::Anthropic, &server.url(), KEY);
    let chunks: Vec<StreamChunk> =
        bounded(async { prompty::invoke_stream(&a, &json!({})).await.unwrap().collect().await }).await;
    assert!(!chunks.is_empty());
}

// ---------------------------------------------------------------------------------------------
// 5. Bounds: stream deadlines, event sizes, body sizes, no re-send after a 2xx.

#[tokio::test]
async fn an_endless_keep_alive_stream_ends_by_its_deadline() {
    let server = Server::start(
        "127.0.0.1",
        handler(|_, mut s| async move {
            start_sse(&mut s).await;
            for _ in 0..10_000 {
                if s.write_all(b": keep-alive\n\ndata: \n\n").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }),
    )
    .await;
    let config = HttpConfig {
        stream_timeout: Duration::from_millis(600),
        stream_idle_timeout: Duration::from_secs(5),
        ..fast_retries(1)
    };
    // The deadline ended it: its message names `stream_timeout` (`bounded` is the hang guard).
    let events = call_stream(config, &agent(Provider::OpenAi, &server.url(), KEY)).await.unwrap();
    assert!(matches!(events.as_slice(), [RawEvent::TransportError(m)] if m.contains("stream_timeout")), "{events:?}");
}

#[tokio::test]
async fn a_silent_stream_ends_by_its_idle_timeout() {
    let server = Server::start(
        "127.0.0.1",
        handler(|_, mut s| async move {
            start_sse(&mut s).await;
            tokio::time::sleep(Duration::from_secs(20)).await;
        }),
    )
    .await;
    let config = HttpConfig { stream_idle_timeout: Duration::from_millis(300), ..fast_retries(1) };
    let events = call_stream(config, &agent(Provider::OpenAi, &server.url(), KEY)).await.unwrap();
    assert!(matches!(events.as_slice(), [RawEvent::TransportError(m)] if m.contains("sent nothing")), "{events:?}");
}

fn long_line_server(len: usize) -> Handler {
    handler(move |_, mut s| async move {
        start_sse(&mut s).await;
        let _ = s.write_all(br#"data: {"choices":[{"index":0,"delta":{"content":""#).await;
        let chunk = vec![b'a'; 64 * 1024];
        let mut sent = 0;
        while sent < len {
            let n = chunk.len().min(len - sent);
            if s.write_all(&chunk[..n]).await.is_err() {
                return;
            }
            sent += n;
        }
        let _ = s.write_all(b"\"}}]}\n\ndata: [DONE]\n\n").await;
    })
}

/// The events of a stream whose one `data:` line is `len` bytes long, and how long reading it took.
async fn long_line_events(config: &HttpConfig, len: usize) -> (Vec<RawEvent>, Duration) {
    let server = Server::start("127.0.0.1", long_line_server(len)).await;
    let a = agent(Provider::OpenAi, &server.url(), KEY);
    let started = Instant::now();
    let events = call_stream(config.clone(), &a).await.unwrap();
    (events, started.elapsed())
}

#[tokio::test]
async fn a_16_mb_sse_line_is_handled_in_linear_time_or_rejected() {
    // Read whole: a 16 MB line, in time linear in its length (4 MB against 16 MB; every probe
    // runs under `bounded`'s 30 s, the only absolute limit: a hang guard).
    let (mut small, mut large) = (Vec::new(), Vec::new());
    for _ in 0..scaling::RUNS {
        for (len, runs) in [(4_000_000, &mut small), (16_000_000, &mut large)] {
            let (events, took) = long_line_events(&fast_retries(1), len).await;
            match events.as_slice() {
                [RawEvent::Data(v)] => assert_eq!(v["choices"][0]["delta"]["content"].as_str().unwrap().len(), len),
                other => panic!(
                    "{:?}",
                    other.iter().map(|e| format!("{e:?}").chars().take(200).collect::<String>()).collect::<Vec<_>>()
                ),
            }
            runs.push(took);
        }
    }
    scaling::assert_ratio("parsing a long SSE line", &small, &large);

    // With a smaller limit the event is rejected as soon as it passes the limit: a line 4 times
    // as long costs no more (within the ratio).
    let config = HttpConfig { max_event_bytes: 1 << 20, ..fast_retries(1) };
    let (mut small, mut large) = (Vec::new(), Vec::new());
    for _ in 0..scaling::RUNS {
        for (len, runs) in [(4_000_000, &mut small), (16_000_000, &mut large)] {
            let (events, took) = long_line_events(&config, len).await;
            assert!(
                matches!(events.as_slice(), [RawEvent::TransportError(m)] if m.contains("max_event_bytes")),
                "{events:?}"
            );
            runs.push(took);
        }
    }
    scaling::assert_ratio("rejecting a long SSE line", &small, &large);
}

#[tokio::test]
async fn an_oversized_body_is_rejected_and_not_retried() {
    // With a Content-Length, and without one (the body runs until the connection closes).
    for declared in [true, false] {
        let server = Server::start(
            "127.0.0.1",
            handler(move |_, mut s| async move {
                let body = vec![b' '; 3 << 20];
                if declared {
                    respond(s, 200, &[], &body).await;
                } else {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n").await;
                    let _ = s.write_all(&body).await;
                }
            }),
        )
        .await;
        let config = HttpConfig { max_response_bytes: 1 << 20, ..fast_retries(3) };
        let err = call(Provider::OpenAi, config, &agent(Provider::OpenAi, &server.url(), KEY)).await.unwrap_err();
        assert!(err.to_string().contains("max_response_bytes"), "{err}");
        assert_eq!(server.requests().len(), 1, "not retried");
    }
}

#[tokio::test]
async fn a_success_cut_short_is_not_resent() {
    let server = Server::start(
        "127.0.0.1",
        handler(|_, mut s| async move {
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\ncontent-type: application/json\r\n\r\n{\"cho")
                .await;
            let _ = s.shutdown().await;
        }),
    )
    .await;
    let err = call(Provider::OpenAi, fast_retries(3), &agent(Provider::OpenAi, &server.url(), KEY)).await.unwrap_err();
    assert!(err.to_string().contains("cut short") && err.to_string().contains("not retried"), "{err}");
    assert_eq!(server.requests().len(), 1, "a generation is never duplicated");

    // A server error is still retried.
    let server = Server::start("127.0.0.1", handler(|_, s| async move { respond(s, 500, &[], b"{}").await })).await;
    let err = call(Provider::OpenAi, fast_retries(3), &agent(Provider::OpenAi, &server.url(), KEY)).await.unwrap_err();
    assert!(err.to_string().contains("3 attempts"), "{err}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_slow_body_is_bounded_by_the_request_timeout() {
    let server = Server::start(
        "127.0.0.1",
        handler(|_, mut s| async move {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n").await;
            for _ in 0..1000 {
                if s.write_all(b" ").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }),
    )
    .await;
    let config = HttpConfig { request_timeout: Duration::from_millis(500), ..fast_retries(3) };
    // The 100 000-byte body would take 50 s: the request timeout ended it, once (`bounded` is the
    // hang guard).
    let err = call(Provider::OpenAi, config, &agent(Provider::OpenAi, &server.url(), KEY)).await.unwrap_err();
    assert!(err.to_string().contains("not retried"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Retries do not multiply: the agent loop and the HTTP layer share one budget per model call.

/// A server that always answers 429 (with `Retry-After: 0`, so that the HTTP layer's own waits are
/// short), counting the requests it receives.
fn always_429() -> Handler {
    handler(|_, s| async move {
        respond(s, 429, &[("retry-after", "0".to_owned())], br#"{"error":{"message":"slow down"}}"#).await
    })
}

fn turn_failure(e: prompty::Error) -> Box<prompty::TurnFailure> {
    match e {
        prompty::Error::Turn(f) => f,
        other => panic!("expected a turn failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_persistent_429_costs_at_most_one_plus_llm_retries_requests_per_model_call() {
    use prompty::{TurnOptions, TurnStop, DEFAULT_LLM_RETRIES};
    let attempts = RetryPolicy::default().max_attempts;
    assert_eq!((attempts, DEFAULT_LLM_RETRIES), (3, 3), "the defaults this test measures");
    let cases: [(Option<u32>, usize); 4] = [(None, 4), (Some(0), 1), (Some(1), 2), (Some(5), 6)];
    for (retries, expected) in cases {
        let server = Server::start("127.0.0.1", always_429()).await;
        let a = agent(Provider::OpenAi, &server.url(), KEY);
        let mut options = TurnOptions::new().retry_backoff(Duration::from_millis(1));
        if let Some(n) = retries {
            options = options.llm_retries(n);
        }
        let messages = prompty::prepare_async(&a, &json!({})).await.unwrap();
        let err = bounded(prompty::run_turn_async(&a, messages, &json!({}), options)).await.unwrap_err();
        let f = turn_failure(err);
        assert!(matches!(&f.stop, TurnStop::Model { .. }), "{f}");
        assert!(f.to_string().contains("HTTP 429"), "{f}");
        let sent = server.requests().len();
        assert_eq!(sent, expected, "llm_retries {retries:?}: {sent} requests for one model call (12 before)");
    }
    // Outside the loop, the HTTP layer's policy alone: `max_attempts` requests.
    let server = Server::start("127.0.0.1", always_429()).await;
    let a = agent(Provider::OpenAi, &server.url(), KEY);
    let err = bounded(prompty::invoke_async::<Value>(&a, &json!({}))).await.unwrap_err();
    assert!(matches!(&err, prompty::Error::Http(f) if f.status == Some(429) && f.attempts == 3), "{err:?}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_streamed_model_call_shares_the_same_budget() {
    let server = Server::start("127.0.0.1", always_429()).await;
    let a = agent(Provider::OpenAi, &server.url(), KEY);
    let messages = prompty::prepare_async(&a, &json!({})).await.unwrap();
    let options = prompty::TurnOptions::new().retry_backoff(Duration::from_millis(1));
    let stream = prompty::run_turn_stream(&a, messages, &json!({}), options);
    let err = bounded(stream.finish()).await.unwrap_err();
    assert!(err.to_string().contains("HTTP 429"), "{err}");
    assert_eq!(server.requests().len(), 4, "1 + DEFAULT_LLM_RETRIES requests, not 12");
}

#[tokio::test]
async fn a_server_that_asks_for_a_long_wait_is_not_retried_by_the_loop_either() {
    let server = Server::start(
        "127.0.0.1",
        handler(|_, s| async move { respond(s, 429, &[("retry-after", "3600".to_owned())], b"{}").await }),
    )
    .await;
    let a = agent(Provider::OpenAi, &server.url(), KEY);
    let messages = prompty::prepare_async(&a, &json!({})).await.unwrap();
    let options = prompty::TurnOptions::new().retry_backoff(Duration::from_millis(1));
    // An hour's wait would end at `bounded`'s hang guard; one request and the 429 show no retry.
    let err = bounded(prompty::run_turn_async(&a, messages, &json!({}), options)).await.unwrap_err();
    assert!(err.to_string().contains("HTTP 429"), "{err}");
    assert_eq!(server.requests().len(), 1, "the server asked for an hour: no retry");
}

// ---------------------------------------------------------------------------------------------
// A URL that cannot be built is a configuration error: one attempt, no wait, the setting named.

#[tokio::test]
async fn a_relative_endpoint_is_a_configuration_error_never_retried() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let a = Agent::from_value(json!({
            "name": "relative",
            "model": {"id": "gpt-4o", "provider": provider.name(),
                      "connection": {"kind": "key", "endpoint": "v1", "apiKey": KEY}},
            "instructions": "user:\nHi",
        }))
        .unwrap();
        let err = bounded(prompty::invoke_async::<Value>(&a, &json!({}))).await.unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(&err, prompty::Error::Config { setting, .. } if setting == "model.connection.endpoint"),
            "{err:?}"
        );
        assert!(text.contains("relative URL without a base") && text.contains("absolute URL"), "{text}");
        assert!(text.contains("not retried"), "{text}");
        assert_error_clean(&err);

        let messages = prompty::prepare_async(&a, &json!({})).await.unwrap();
        let (options, events) = prompty::TurnOptions::new().record_events();
        let err = bounded(prompty::run_turn_async(&a, messages, &json!({}), options)).await.unwrap_err();
        let f = turn_failure(err);
        assert!(
            matches!(&f.stop, prompty::TurnStop::Model { attempts: 1, source } if matches!(**source, prompty::Error::Config { .. })),
            "{f}"
        );
        let statuses: Vec<String> = events
            .take()
            .into_iter()
            .filter_map(|e| match e {
                prompty::AgentEvent::Status { message } => Some(message),
                _ => None,
            })
            .collect();
        assert!(!statuses.iter().any(|m| m.contains("retry")), "{statuses:?}");
    }
}
