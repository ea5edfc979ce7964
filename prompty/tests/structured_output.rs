//! Structured output on a server that rejects OpenAI's `json_schema` (as llama-cpp-python's does,
//! with an HTTP 500), what inspection shows beside what is sent, and the hint of a 404: against
//! small HTTP servers of this file on 127.0.0.1 that record every request body.
//!
//! The settings involved are process-wide (environment variables, `set_structured_output`, the
//! remembered modes, trace backends): every test holds [`LOCK`] and starts from a clean state.

#[path = "support/captured_log.rs"]
mod captured_log;

use prompty::providers::openai::{
    request_body, set_structured_output, set_structured_output_fallback, STRUCTURED_OUTPUT_ENV,
    STRUCTURED_OUTPUT_FALLBACK_ENV,
};
use prompty::trace::{FinishedSpan, TraceBackend};
use prompty::{Agent, Error, StreamChunk, StructuredOutput};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The lock of this file's tests, with the process-wide settings back to their defaults.
async fn clean() -> tokio::sync::MutexGuard<'static, ()> {
    let guard = LOCK.lock().await;
    for name in
        [STRUCTURED_OUTPUT_ENV, STRUCTURED_OUTPUT_FALLBACK_ENV, "OPENAI_BASE_URL", "OPENAI_ENDPOINT", "OPENAI_API_KEY"]
    {
        std::env::remove_var(name);
    }
    set_structured_output(None);
    set_structured_output_fallback(None);
    guard
}

// ------------------------------------------------------------------------------- the servers

/// How a test server answers a request body.
type Answer = fn(&Value) -> (u16, &'static str, String);

/// A server on 127.0.0.1: one request per connection, each body recorded.
struct Server {
    port: u16,
    bodies: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Server {
    fn start(answer: Answer) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve(stream, answer, &seen));
            }
        });
        Server { port, bodies }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bodies received so far (path, JSON body), and forgets them.
    fn take(&self) -> Vec<(String, Value)> {
        std::mem::take(&mut *self.bodies.lock().unwrap())
    }
}

fn serve(mut stream: TcpStream, answer: Answer, seen: &Mutex<Vec<(String, Value)>>) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>()))
        .and_then(Result::ok)
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
    let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    let (status, content_type, text) = answer(&body);
    seen.lock().unwrap().push((path, body));
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Other",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// A chat completion (or its stream) whose text is `{"city": "Paris"}`.
fn answer_ok(body: &Value) -> (u16, &'static str, String) {
    let content = r#"{"city": "Paris"}"#;
    if body["stream"] == true {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]});
        let last = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        return (200, "text/event-stream", format!("data: {chunk}\n\ndata: {last}\n\ndata: [DONE]\n\n"));
    }
    let answer = json!({"id": "c1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]});
    (200, "application/json", answer.to_string())
}

/// What llama-cpp-python's server does: `json_schema` is refused with a 500 naming the types it
/// takes; `json_object` (with or without a schema) is answered.
fn like_llama_cpp_python(body: &Value) -> (u16, &'static str, String) {
    if body["response_format"]["type"] == "json_schema" {
        let message = "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should \
                       be 'text' or 'json_object'\", 'input': 'json_schema'}]";
        let error = json!({"error": {"message": message, "type": "internal_server_error", "code": null}});
        return (500, "application/json", error.to_string());
    }
    answer_ok(body)
}

/// A server that answers any `response_format` with a bare 500 that names nothing.
fn bare_500_for_formats(body: &Value) -> (u16, &'static str, String) {
    if body.get("response_format").is_some() {
        return (500, "text/plain", "Internal Server Error".to_owned());
    }
    answer_ok(body)
}

/// A server that refuses every `response_format`.
fn no_formats(body: &Value) -> (u16, &'static str, String) {
    if body.get("response_format").is_some() {
        let error = json!({"error": {"message": "response_format is not supported by this server"}});
        return (400, "application/json", error.to_string());
    }
    answer_ok(body)
}

/// A Responses API server that takes `text.format` of type `json_object` only.
fn responses_without_json_schema(body: &Value) -> (u16, &'static str, String) {
    if body["text"]["format"]["type"] == "json_schema" {
        let error = json!({"error": {"message": "text.format.type: expected 'text' or 'json_object'"}});
        return (400, "application/json", error.to_string());
    }
    let answer = json!({"id": "r1", "object": "response", "output": [{"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "{\"city\": \"Paris\"}"}]}]});
    (200, "application/json", answer.to_string())
}

/// A server that is unavailable (a transient failure, never a format rejection).
fn unavailable(_: &Value) -> (u16, &'static str, String) {
    (503, "application/json", json!({"error": {"message": "overloaded"}}).to_string())
}

/// A server that has nothing at any path.
fn not_found(_: &Value) -> (u16, &'static str, String) {
    (404, "text/plain", String::new())
}

// ------------------------------------------------------------------------------- the prompts

/// A prompt with one output on `endpoint`; `options` are added under `model.options`.
fn prompt(endpoint: &str, options: &str) -> Agent {
    let text = format!(
        "---\nname: so\nmodel:\n  id: m\n  provider: openai\n  connection:\n    kind: anonymous\n    endpoint: \
         {endpoint}\n  options:\n    maxOutputTokens: 20\n{options}outputs:\n  - name: city\n    kind: string\n    \
         required: true\n---\nuser:\nParis, 22 degrees\n"
    );
    prompty::load_str(&text, ".", "so.prompty").unwrap()
}

async fn ask(agent: &Agent) -> prompty::Result<Value> {
    tokio::time::timeout(Duration::from_secs(30), prompty::invoke_async::<Value>(agent, &json!({})))
        .await
        .expect("the call ends within 30 s")
}

/// The `response_format` of each body received.
fn formats(bodies: &[(String, Value)]) -> Vec<Value> {
    bodies.iter().map(|(_, b)| b.get("response_format").cloned().unwrap_or(Value::Null)).collect()
}

fn json_object_with_schema() -> Value {
    json!({"type": "json_object", "schema": {"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"]}})
}

// ------------------------------------------------------------------------------- tracing

/// A trace backend that keeps the spans that end.
#[derive(Default)]
struct Spans(Mutex<Vec<FinishedSpan>>);

impl TraceBackend for Spans {
    fn span_ended(&self, span: &FinishedSpan) {
        self.0.lock().unwrap().push(span.clone());
    }
}

// ------------------------------------------------------------------------------- the tests

#[tokio::test]
async fn the_default_falls_back_once_and_the_endpoint_remembers_the_mode() {
    let _guard = clean().await;
    let log = captured_log::global(tracing::Level::INFO);
    let spans = Arc::new(Spans::default());
    prompty::trace::add("structured-output-test", spans.clone());
    let server = Server::start(like_llama_cpp_python);
    let agent = prompt(&format!("{}/v1", server.url()), "");

    let out = ask(&agent).await;
    prompty::trace::remove("structured-output-test");
    assert_eq!(out.unwrap(), json!({"city": "Paris"}));
    let bodies = server.take();
    assert_eq!(formats(&bodies)[1], json_object_with_schema());
    assert_eq!(formats(&bodies).len(), 2, "one refused request (not retried) and one fallback: {bodies:?}");
    assert_eq!(formats(&bodies)[0]["type"], "json_schema");
    assert_eq!(bodies[1].1["messages"][0]["role"], "system", "the schema is in the prompt too");

    // Traced: an event, and an attribute of the model call's span.
    let text = log.text();
    let event = text.lines().find(|l| l.contains("prompty::structured_output")).unwrap_or_else(|| panic!("{text}"));
    assert!(event.contains("from=jsonSchema") && event.contains("to=jsonObjectSchema"), "{event}");
    assert!(event.contains(&format!("127.0.0.1:{}/v1/chat/completions", server.port)), "{event}");
    let execute = spans.0.lock().unwrap().iter().find(|s| s.signature == "prompty.execute").cloned();
    let execute = execute.expect("an execute span");
    assert_eq!(execute.attributes["prompty.structured_output.fallback"], "jsonSchema -> jsonObjectSchema");

    // The next call (another agent, the same endpoint and model) sends the working mode first.
    let again = prompt(&format!("{}/v1", server.url()), "");
    assert_eq!(ask(&again).await.unwrap(), json!({"city": "Paris"}));
    assert_eq!(formats(&server.take()), [json_object_with_schema()]);

    // A stream to the same endpoint, too.
    let stream = prompty::invoke_stream(&again, &json!({})).await.unwrap();
    let chunks: Vec<StreamChunk> = futures_util::StreamExt::collect(stream).await;
    let text: String = chunks.iter().filter_map(StreamChunk::text).collect();
    assert_eq!(text, r#"{"city": "Paris"}"#);
    assert_eq!(formats(&server.take()), [json_object_with_schema()]);
}

#[tokio::test]
async fn a_stream_falls_back_too() {
    let _guard = clean().await;
    let server = Server::start(like_llama_cpp_python);
    let agent = prompt(&format!("{}/v1", server.url()), "");
    let stream = prompty::invoke_stream(&agent, &json!({})).await.unwrap();
    let chunks: Vec<StreamChunk> = futures_util::StreamExt::collect(stream).await;
    let text: String = chunks.iter().filter_map(StreamChunk::text).collect();
    assert_eq!(text, r#"{"city": "Paris"}"#, "{chunks:?}");
    let bodies = server.take();
    assert_eq!(formats(&bodies).iter().map(|f| f["type"].clone()).collect::<Vec<_>>(), ["json_schema", "json_object"]);
    assert!(bodies.iter().all(|(_, b)| b["stream"] == true));
}

#[tokio::test]
async fn a_bare_500_from_a_compatible_server_counts_as_a_rejection() {
    let _guard = clean().await;
    let server = Server::start(bare_500_for_formats);
    let agent = prompt(&format!("{}/v1", server.url()), "");
    // Both JSON modes are refused: the fallback happens once, and the error says what to set.
    let err = ask(&agent).await.unwrap_err();
    let bodies = server.take();
    assert_eq!(bodies.len(), 1 + 3, "jsonSchema once, then jsonObjectSchema with the usual retries: {bodies:?}");
    assert_eq!(formats(&bodies)[0]["type"], "json_schema");
    assert!(formats(&bodies)[1..].iter().all(|f| *f == json_object_with_schema()));
    assert!(matches!(&err, Error::Config { setting, .. } if setting == "model.options.structuredOutput"), "{err:?}");
    let text = err.to_string();
    for needle in [
        "mode jsonSchema (the default)",
        "again in mode jsonObjectSchema (the automatic fallback)",
        "--structured-output",
        "PROMPTY_STRUCTURED_OUTPUT",
        "model.options.structuredOutput",
        "connection's `structuredOutput`",
        "jsonSchema, jsonObjectSchema, jsonObject or none",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
}

#[tokio::test]
async fn a_transient_failure_is_retried_as_usual_and_never_falls_back() {
    let _guard = clean().await;
    let server = Server::start(unavailable);
    let agent = prompt(&format!("{}/v1", server.url()), "");
    let err = ask(&agent).await.unwrap_err();
    let bodies = server.take();
    assert_eq!(bodies.len(), 3, "the default three attempts");
    assert!(formats(&bodies).iter().all(|f| f["type"] == "json_schema"), "{bodies:?}");
    assert!(!err.to_string().contains("structured output"), "{err}");
}

#[tokio::test]
async fn an_explicit_mode_is_never_changed_and_the_error_names_the_setting() {
    let _guard = clean().await;
    let server = Server::start(like_llama_cpp_python);
    let endpoint = format!("{}/v1", server.url());

    // The prompt's own choice.
    let agent = prompt(&endpoint, "    structuredOutput: jsonSchema\n");
    let err = ask(&agent).await.unwrap_err();
    assert!(matches!(&err, Error::Config { setting, .. } if setting == "model.options.structuredOutput"), "{err:?}");
    let err = err.to_string();
    assert_eq!(formats(&server.take()).len(), 1, "refused once: neither retried nor changed");
    assert!(err.contains("HTTP 500") && err.contains("Input should be 'text' or 'json_object'"), "{err}");
    assert!(err.contains("mode jsonSchema (chosen with the prompt's model.options.structuredOutput)"), "{err}");
    assert!(err.contains("PROMPTY_STRUCTURED_OUTPUT") && err.contains("--structured-output"), "{err}");
    // Nor does the agent loop send the same request again.
    let messages = prompty::prepare(&agent, &json!({})).unwrap();
    let options = prompty::TurnOptions::new().retry_backoff(Duration::from_millis(1));
    let failed = prompty::run_turn_async(&agent, messages, &json!({}), options).await.unwrap_err();
    assert!(failed.to_string().contains("model.options.structuredOutput"), "{failed}");
    assert_eq!(formats(&server.take()).len(), 1, "the agent loop does not retry it either");

    // The environment's choice, over the prompt's.
    std::env::set_var(STRUCTURED_OUTPUT_ENV, "jsonSchema");
    let err = ask(&prompt(&endpoint, "    structuredOutput: jsonObjectSchema\n")).await.unwrap_err();
    assert!(matches!(&err, Error::Config { setting, .. } if setting == STRUCTURED_OUTPUT_ENV), "{err:?}");
    let err = err.to_string();
    assert_eq!(formats(&server.take()).len(), 1);
    assert!(err.contains("mode jsonSchema (chosen with PROMPTY_STRUCTURED_OUTPUT)"), "{err}");
    std::env::set_var(STRUCTURED_OUTPUT_ENV, "jsonObjectSchema");
    assert_eq!(ask(&prompt(&endpoint, "    structuredOutput: jsonSchema\n")).await.unwrap(), json!({"city": "Paris"}));
    assert_eq!(formats(&server.take()), [json_object_with_schema()]);

    // An override (what `--structured-output` sets), over the environment.
    set_structured_output(Some(StructuredOutput::JsonObject));
    assert_eq!(ask(&agent).await.unwrap(), json!({"city": "Paris"}));
    assert_eq!(formats(&server.take()), [json!({"type": "json_object"})]);

    // A value the environment cannot mean: an error naming the variable and the modes.
    set_structured_output(None);
    std::env::set_var(STRUCTURED_OUTPUT_ENV, "jsonObjectShema");
    let err = ask(&agent).await.unwrap_err();
    assert!(matches!(&err, Error::Config { setting, .. } if setting == STRUCTURED_OUTPUT_ENV), "{err:?}");
    assert!(err.to_string().contains("did you mean 'jsonObjectSchema'?"), "{err}");
    assert!(server.take().is_empty(), "nothing sent");
    std::env::remove_var(STRUCTURED_OUTPUT_ENV);
}

#[tokio::test]
async fn the_fallback_can_be_switched_off() {
    let _guard = clean().await;
    let server = Server::start(like_llama_cpp_python);
    let endpoint = format!("{}/v1", server.url());

    std::env::set_var(STRUCTURED_OUTPUT_FALLBACK_ENV, "off");
    let err = ask(&prompt(&endpoint, "")).await.unwrap_err().to_string();
    assert_eq!(formats(&server.take()).len(), 1, "no fallback, no retry");
    assert!(err.contains("mode jsonSchema (the default) and the automatic fallback is off"), "{err}");

    // The API wins over the environment, both ways.
    set_structured_output_fallback(Some(true));
    assert_eq!(ask(&prompt(&endpoint, "")).await.unwrap(), json!({"city": "Paris"}));
    assert_eq!(formats(&server.take()).len(), 2);
    std::env::remove_var(STRUCTURED_OUTPUT_FALLBACK_ENV);
    set_structured_output_fallback(Some(false));
    // Off: what was remembered is not used either.
    assert!(ask(&prompt(&endpoint, "")).await.is_err());
    assert_eq!(formats(&server.take())[0]["type"], "json_schema");

    set_structured_output_fallback(None);
    std::env::set_var(STRUCTURED_OUTPUT_FALLBACK_ENV, "sometimes");
    let err = ask(&prompt(&endpoint, "")).await.unwrap_err();
    assert!(matches!(&err, Error::Config { setting, .. } if setting == STRUCTURED_OUTPUT_FALLBACK_ENV), "{err:?}");
    std::env::remove_var(STRUCTURED_OUTPUT_FALLBACK_ENV);
}

#[tokio::test]
async fn a_server_that_takes_no_format_gets_one_fallback_and_a_clear_error() {
    let _guard = clean().await;
    let server = Server::start(no_formats);
    let err = ask(&prompt(&format!("{}/v1", server.url()), "")).await.unwrap_err().to_string();
    assert_eq!(formats(&server.take()).len(), 2, "the fallback once, neither retried");
    assert!(
        err.starts_with(
            "configuration error (model.options.structuredOutput): openai request failed: HTTP 400 Bad Request: \
             response_format is not supported"
        ),
        "{err}"
    );
    assert!(err.contains("again in mode jsonObjectSchema (the automatic fallback): HTTP 400 Bad Request"), "{err}");
    assert!(err.contains("(`none` sends no response_format)"), "{err}");
}

#[tokio::test]
async fn the_responses_api_falls_back_the_same_way() {
    let _guard = clean().await;
    let server = Server::start(responses_without_json_schema);
    let mut agent = prompt(&format!("{}/v1", server.url()), "");
    agent.model.as_mut().unwrap().api_type = Some("responses".into());
    assert_eq!(ask(&agent).await.unwrap(), json!({"city": "Paris"}));
    let bodies = server.take();
    let sent: Vec<Value> = bodies.iter().map(|(_, b)| b["text"]["format"]["type"].clone()).collect();
    assert_eq!(sent, ["json_schema", "json_object"]);
    assert!(bodies.iter().all(|(path, _)| path == "/v1/responses"));
    assert_eq!(bodies[1].1["text"]["format"]["schema"]["required"], json!(["city"]));
}

// ------------------------------------------------------------------------------- inspection

#[tokio::test]
async fn what_is_inspected_is_what_is_sent_with_the_endpoint_from_the_environment() {
    let _guard = clean().await;
    let server = Server::start(like_llama_cpp_python);
    std::env::set_var("OPENAI_BASE_URL", format!("{}/v1", server.url()));
    let text =
        "---\nname: env\nmodel:\n  id: m\n  provider: openai\n  options:\n    maxOutputTokens: 20\n---\nuser:\nHi\n";
    let agent = prompty::load_str(text, ".", "env.prompty").unwrap();
    let messages = prompty::prepare(&agent, &json!({})).unwrap();
    let inspected = request_body(&agent, &messages).unwrap();
    assert_eq!(inspected["max_tokens"], 20, "a compatible server's field: {inspected}");
    let answered = ask(&agent).await;
    let sent = server.take();
    assert_eq!(sent.len(), 1, "{answered:?}");
    assert_eq!(sent[0].0, "/v1/chat/completions");
    assert_eq!(sent[0].1, inspected);

    // With outputs: the mode remembered after the fallback is what inspection shows.
    let outputs = prompt(&format!("{}/v1", server.url()), "");
    let messages = prompty::prepare(&outputs, &json!({})).unwrap();
    assert_eq!(request_body(&outputs, &messages).unwrap()["response_format"]["type"], "json_schema");
    ask(&outputs).await.unwrap();
    let sent = server.take();
    assert_eq!(sent.len(), 2);
    assert_eq!(request_body(&outputs, &messages).unwrap(), sent[1].1);
    ask(&outputs).await.unwrap();
    assert_eq!(request_body(&outputs, &messages).unwrap(), server.take()[0].1);

    // And the mode of the environment.
    std::env::set_var(STRUCTURED_OUTPUT_ENV, "jsonObject");
    let inspected = request_body(&outputs, &messages).unwrap();
    assert_eq!(inspected["response_format"], json!({"type": "json_object"}));
    ask(&outputs).await.unwrap();
    assert_eq!(server.take()[0].1, inspected);
    std::env::remove_var(STRUCTURED_OUTPUT_ENV);
    std::env::remove_var("OPENAI_BASE_URL");
}

// ------------------------------------------------------------------------------- 404

#[tokio::test]
async fn a_404_names_the_url_and_suggests_the_v1_endpoint() {
    let _guard = clean().await;
    let server = Server::start(not_found);
    let secret = "sk-userinfo-secret-1234";
    let endpoint = format!("http://user:{secret}@127.0.0.1:{}", server.port);
    let text = format!(
        "---\nname: nf\nmodel:\n  id: m\n  provider: openai\n  connection:\n    kind: anonymous\n    endpoint: \
         {endpoint}\n---\nuser:\nHi\n"
    );
    let agent = prompty::load_str(&text, ".", "nf.prompty").unwrap();
    let err = ask(&agent).await.unwrap_err();
    let text = err.to_string();
    let url = server.url();
    assert!(matches!(&err, Error::Http(f) if f.status == Some(404) && f.attempts == 1), "{err:?}");
    assert!(text.contains(&format!("the request went to POST {url}/chat/completions")), "{text}");
    assert!(text.contains(&format!("the endpoint `{url}` has no version segment")), "{text}");
    assert!(text.contains(&format!("to `{url}/v1`")), "{text}");
    assert!(!text.contains(secret) && !text.contains("user:"), "{text}");

    // With a version, the URL alone: the hint would be wrong.
    let agent = prompt(&format!("{url}/v1"), "");
    let text = ask(&agent).await.unwrap_err().to_string();
    assert!(text.contains(&format!("the request went to POST {url}/v1/chat/completions")), "{text}");
    assert!(!text.contains("version segment"), "{text}");
    assert!(!text.contains("structured output"), "a 404 is never a format rejection: {text}");
}
