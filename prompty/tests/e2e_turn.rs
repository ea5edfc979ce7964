//! End-to-end tests of the agent loop (`prompty::turn` and its relatives) against a real
//! `@copilotkit/aimock` server on 127.0.0.1, with the fixtures of `e2e/fixtures/turn.json`: tool
//! rounds (typed prompt and `#[prompty::tool]` handlers, parallel calls, a panicking handler,
//! unreadable arguments, a denied call), cancellation, steering, a streamed final answer, the
//! Anthropic and Responses tool shapes, and a retried model call. Each test checks the result and
//! what the server received (its request journal).
//!
//! aimock's journal holds every request body normalized to the Chat Completions shape: for the
//! Anthropic Messages and the Responses API it shows the tool calls and results as chat
//! `tool_calls` / `tool` messages, not the provider's own blocks or items.

#[path = "e2e/common.rs"]
mod common;

use common::{prompt, within, Aimock, RecordingProxy};
use futures_util::StreamExt;
use prompty::{
    AgentEvent, CancellationToken, EventLog, Guardrails, Steering, StreamChunk, TurnOptions, TurnStop, Verdict,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Prompts

const WEATHER_TOOL: &str =
    "  - name: get_weather\n    kind: function\n    description: Current weather in a city\n    \
                            parameters:\n      - name: city\n        kind: string\n        required: true\n";
const TIME_TOOL: &str = "  - name: get_time\n    kind: function\n    description: Local time in a city\n    \
                         parameters:\n      - name: city\n        kind: string\n        required: true\n";
const EXPLODE_TOOL: &str = "  - name: explode\n    kind: function\n    description: A tool that always breaks\n";
const DELETE_TOOL: &str =
    "  - name: delete_files\n    kind: function\n    description: Delete files under a path\n    \
                           parameters:\n      - name: path\n        kind: string\n        required: true\n";

/// The `model:` block of an OpenAI Chat Completions prompt aimed at the server.
fn openai_model(server: &Aimock) -> String {
    format!(
        "model:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    endpoint: {}/v1\n    apiKey: sk-e2e-test\n",
        server.url()
    )
}

/// The `model:` block of an Anthropic Messages prompt aimed at the server (which serves `/v1/messages`).
fn anthropic_model(server: &Aimock) -> String {
    anthropic_model_at(&server.url())
}

/// The `model:` block of an Anthropic Messages prompt aimed at `url`.
fn anthropic_model_at(url: &str) -> String {
    format!(
        "model:\n  id: claude-sonnet-4-5\n  provider: anthropic\n  connection:\n    kind: key\n    endpoint: {}\n    \
         apiKey: sk-ant-e2e\n",
        url
    )
}

/// The `model:` block of an OpenAI Responses API prompt aimed at the server.
fn responses_model(server: &Aimock) -> String {
    responses_model_at(&server.url())
}

/// The `model:` block of an OpenAI Responses API prompt aimed at `url`.
fn responses_model_at(url: &str) -> String {
    format!(
        "model:\n  id: gpt-4o\n  provider: openai\n  apiType: responses\n  connection:\n    kind: key\n    endpoint: {}/v1\n    \
         apiKey: sk-e2e-test\n",
        url
    )
}

/// A prompt with `model`, the `tools` (YAML list items) and one user message.
fn agent(model: &str, tools: &[&str], user: &str) -> prompty::Agent {
    prompt(&format!(
        "---\nname: e2e-turn\n{model}tools:\n{}---\nsystem:\nYou are terse.\n\nuser:\n{user}",
        tools.concat()
    ))
}

// ---------------------------------------------------------------------------------------------
// Events and journal

/// The `message` of every `status` event.
fn statuses(events: &EventLog) -> Vec<String> {
    events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Status { message } => Some(message),
            _ => None,
        })
        .collect()
}

/// `(id, name, result, is_error)` of every `tool_result` event.
fn tool_results(events: &EventLog) -> Vec<(String, String, String, bool)> {
    events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { id, name, result, is_error } => Some((id, name, result, is_error)),
            _ => None,
        })
        .collect()
}

/// `(message, tool)` of every `error` event.
fn errors(events: &EventLog) -> Vec<(String, Option<String>)> {
    events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Error { message, tool } => Some((message, tool)),
            _ => None,
        })
        .collect()
}

/// The bodies of the requests to `path`, oldest first; exactly `n` of them, each answered 200.
fn bodies(server: &Aimock, path: &str, n: usize) -> Vec<Value> {
    let entries = server.requests_to(path);
    assert_eq!(entries.len(), n, "expected {n} requests to {path}: {:#?}", server.journal());
    for e in &entries {
        assert_eq!(e["method"], "POST");
        assert_eq!(e["response"]["status"], 200, "{e:#}");
    }
    entries.into_iter().map(|e| e["body"].clone()).collect()
}

/// The `messages` of a journaled body.
fn sent(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// The `tool` messages of a journaled body, in order.
fn tool_messages(body: &Value) -> Vec<Value> {
    sent(body).into_iter().filter(|m| m["role"] == "tool").collect()
}

/// The text of a journaled message's content.
fn text(message: &Value) -> &str {
    message["content"].as_str().unwrap_or_default()
}

/// The first request of a round trip: the prompt's messages only, the tools offered.
fn assert_first_request(body: &Value, user: &str, tools: &[&str]) {
    assert_eq!(
        sent(body),
        [json!({"role": "system", "content": "You are terse."}), json!({"role": "user", "content": user})],
        "{body:#}"
    );
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["function"]["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(offered, tools, "{body:#}");
}

/// The journaled assistant message that asked for tools: `(id, name, arguments)` of its calls.
fn assistant_calls(message: &Value) -> Vec<(String, String, String)> {
    assert_eq!(message["role"], "assistant", "{message:#}");
    message["tool_calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no tool_calls: {message:#}"))
        .iter()
        .map(|c| {
            assert_eq!(c["type"], "function", "{c:#}");
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (s(&c["id"]), s(&c["function"]["name"]), s(&c["function"]["arguments"]))
        })
        .collect()
}

/// The messages of the request after the three-city round (`call_par_1..3`): system, user, the
/// assistant's three calls in order, then the three tool messages; checked up to the calls.
fn three_city_round(body: &Value) -> Vec<Value> {
    let m = sent(body);
    assert_eq!(m.len(), 6, "system, user, assistant, three tool results: {body:#}");
    assert_eq!(
        assistant_calls(&m[2]),
        [
            ("call_par_1".into(), "get_weather".into(), r#"{"city":"Paris"}"#.into()),
            ("call_par_2".into(), "get_weather".into(), r#"{"city":"Oslo"}"#.into()),
            ("call_par_3".into(), "get_time".into(), r#"{"city":"Tokyo"}"#.into()),
        ]
    );
    m
}

/// The second request of a one-tool round trip: the prompt's messages, the assistant's call,
/// the tool's result, nothing else.
fn assert_round_replayed(body: &Value, user: &str, call: (&str, &str, &str), result: &str) {
    let m = sent(body);
    assert_eq!(m.len(), 4, "system, user, assistant, tool: {body:#}");
    assert_eq!(m[0], json!({"role": "system", "content": "You are terse."}));
    assert_eq!(m[1], json!({"role": "user", "content": user}));
    let (id, name, arguments) = call;
    assert_eq!(assistant_calls(&m[2]), [(id.to_owned(), name.to_owned(), arguments.to_owned())], "{body:#}");
    assert_eq!(m[3]["role"], "tool");
    assert_eq!(m[3]["tool_call_id"], id, "{body:#}");
    assert_eq!(text(&m[3]), result, "{body:#}");
}

/// The body of the `index`th request to `path` exactly as the server received it (recorded by the
/// proxy in front of it: the journal keeps bodies normalized to the chat shape), parsed as JSON,
/// after checking that the proxy saw as many requests to `path` as the server journaled.
fn received(proxy: &RecordingProxy, server: &Aimock, path: &str, index: usize) -> Value {
    let recorded = proxy.requests_to(path);
    assert_eq!(recorded.len(), server.requests_to(path).len(), "every request went through the proxy: {recorded:#?}");
    recorded[index].json()
}

/// An Anthropic tool definition with one required string parameter `city`, written out by hand.
fn anthropic_city_tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "input_schema": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A tool function that counts its calls and answers with the weather of `args.city`.
fn counted_weather(calls: &Arc<AtomicUsize>) -> impl prompty::ToolFunction {
    let calls = Arc::clone(calls);
    prompty::tool_fn_sync(move |args: Value| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(json!(format!("21°C and sunny in {}", args["city"].as_str().unwrap_or("?"))))
    })
}

// ---------------------------------------------------------------------------------------------
// 1. A typed prompt with a `#[prompty::tool]` handler

static TYPED_WEATHER_CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Current weather in a city.
#[prompty::tool]
async fn get_weather(city: String) -> Result<String, String> {
    lock(&TYPED_WEATHER_CALLS).push(city.clone());
    Ok(format!("21°C and sunny in {city}"))
}

prompty::include_prompty!("tests/e2e/prompts/turn_weather.prompty");

#[tokio::test]
async fn typed_turn_runs_the_tool_and_answers_with_its_result() {
    let server = Aimock::start_with("turn.json", &[]);
    // Read by the typed `turn` when it runs (`${env:...}` in the prompt); no other test uses it.
    std::env::set_var("PROMPTY_E2E_TURN_TYPED_ENDPOINT", format!("{}/v1", server.url()));
    let (options, events) = TurnOptions::new().record_events();
    let question = "What is the weather in Paris?";
    let inputs = turn_weather::Inputs { question: question.into() };
    let answer = within(turn_weather::turn(&inputs, options)).await.unwrap();
    assert_eq!(answer, "It is 21°C and sunny in Paris today.");
    assert_eq!(*lock(&TYPED_WEATHER_CALLS), ["Paris"], "the #[prompty::tool] handler ran once");

    assert_eq!(
        events.kinds(),
        ["status", "tool_call_start", "tool_result", "messages_updated", "done"],
        "{:#?}",
        events.events()
    );
    assert_eq!(statuses(&events), ["Starting agent loop"]);
    assert_eq!(
        tool_results(&events),
        [("call_weather_1".into(), "get_weather".into(), "21°C and sunny in Paris".into(), false)]
    );

    let b = bodies(&server, "/v1/chat/completions", 2);
    assert_first_request(&b[0], question, &["get_weather"]);
    assert_round_replayed(
        &b[1],
        question,
        ("call_weather_1", "get_weather", r#"{"city":"Paris"}"#),
        "21°C and sunny in Paris",
    );
    assert_eq!(b[1]["tools"], b[0]["tools"], "the tools are offered again");
}

// ---------------------------------------------------------------------------------------------
// 1b. A typed prompt's agent in the untyped loop: its `${env:}` references resolved when the
//     program runs, or named when they cannot be

prompty::include_prompty!("tests/e2e/prompts/typed_agent.prompty");
prompty::include_prompty!("tests/e2e/prompts/typed_unset.prompty");

#[tokio::test]
async fn a_typed_agent_runs_in_the_untyped_loop_with_its_references_resolved() {
    let key = "sk-typed-agent-0123456789";
    // The server refuses any other key: a request with the reference unresolved would fail.
    let server = Aimock::start_with("turn.json", &[key]);
    // Read by `typed_agent::agent()` at its first call, just below; no other test uses them.
    std::env::set_var("PROMPTY_E2E_TYPED_AGENT_ENDPOINT", format!("{}/v1", server.url()));
    std::env::set_var("PROMPTY_E2E_TYPED_AGENT_MODEL", "smollm2-typed");
    std::env::set_var("PROMPTY_E2E_TYPED_AGENT_KEY", key);
    let agent = typed_agent::agent();
    // What the program inspects is what is sent, and the key stays out of what it shows.
    assert!(!agent.has_env_references());
    assert_eq!(agent.model.as_ref().map(|m| m.id.as_str()), Some("smollm2-typed"));
    let debug = format!("{agent:?}");
    assert!(debug.contains("smollm2-typed") && !debug.contains(key), "{debug}");

    let question = "Answer in French: how is the weather?";
    let messages = typed_agent::prepare(&typed_agent::Inputs { question: question.into() }).unwrap();
    let (options, events) = TurnOptions::new().record_events();
    let out = within(prompty::run_turn_async(agent, messages, &json!({}), options)).await.unwrap();
    assert_eq!(out.result, json!("Il fait 21°C et beau à Paris."));
    assert_eq!(events.kinds(), ["done"]);
    let b = bodies(&server, "/v1/chat/completions", 1);
    assert_eq!(b[0]["model"], "smollm2-typed", "{:#}", b[0]);
}

/// An error about the API key of `typed_unset.prompty`, whose variable is not set.
fn assert_names_the_unset_key(err: &prompty::Error) {
    let text = err.to_string();
    for part in [
        "typed_unset.prompty",
        "model.connection.apiKey",
        "${env:PROMPTY_E2E_TYPED_UNSET_KEY}",
        "set PROMPTY_E2E_TYPED_UNSET_KEY",
    ] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
}

#[tokio::test]
async fn an_unset_reference_without_default_is_named_and_nothing_is_sent() {
    let server = Aimock::start_with("turn.json", &[]);
    // Read by `typed_unset::agent()` at its first call, just below; nothing sets the key's variable.
    std::env::set_var("PROMPTY_E2E_TYPED_UNSET_ENDPOINT", format!("{}/v1", server.url()));
    assert!(std::env::var_os("PROMPTY_E2E_TYPED_UNSET_KEY").is_none());
    let agent = typed_unset::agent();
    // What can be resolved is; the unset reference stays as written.
    assert!(agent.has_env_references());
    assert_eq!(agent.model.as_ref().map(|m| m.id.as_str()), Some("gpt-4o"));
    let connection = serde_json::to_string(&agent.model.as_ref().unwrap().connection).unwrap();
    assert!(
        connection.contains(&server.url()) && connection.contains("${env:PROMPTY_E2E_TYPED_UNSET_KEY}"),
        "{connection}"
    );

    // Preparing needs no key; every way of sending names the reference.
    let inputs = typed_unset::Inputs { question: "Answer in French, please.".into() };
    let messages = typed_unset::prepare(&inputs).unwrap();
    let err =
        within(prompty::run_turn_async(agent, messages.clone(), &json!({}), TurnOptions::new())).await.unwrap_err();
    assert_names_the_unset_key(&err);
    assert_names_the_unset_key(&within(prompty::run_async(agent, &messages)).await.unwrap_err());
    assert_names_the_unset_key(&within(typed_unset::invoke(&inputs)).await.unwrap_err());
    assert_names_the_unset_key(&within(typed_unset::invoke_stream(&inputs)).await.err().unwrap());
    assert!(server.journal().is_empty(), "nothing was sent: {:#?}", server.journal());
}

// ---------------------------------------------------------------------------------------------
// 2. Parallel tool calls

#[tokio::test]
async fn parallel_calls_run_together_and_their_results_keep_the_call_order() {
    let server = Aimock::start_with("turn.json", &[]);
    let user = "What is the weather in three cities?";
    let agent = agent(&openai_model(&server), &[WEATHER_TOOL, TIME_TOOL], user);

    // Each handler waits until all three have started (proof that they run at the same time), then
    // the first call takes longest, so they finish in the reverse of the call order.
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let together = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(Mutex::new(Vec::<String>::new()));
    let handler = |answer: fn(&str) -> String| {
        let (barrier, together, finished) = (Arc::clone(&barrier), Arc::clone(&together), Arc::clone(&finished));
        prompty::tool_fn(move |args: Value| {
            let (barrier, together, finished) = (Arc::clone(&barrier), Arc::clone(&together), Arc::clone(&finished));
            async move {
                let city = args["city"].as_str().unwrap_or_default().to_owned();
                if tokio::time::timeout(Duration::from_secs(5), barrier.wait()).await.is_ok() {
                    together.fetch_add(1, Ordering::SeqCst);
                }
                let delay = match city.as_str() {
                    "Paris" => 300,
                    "Oslo" => 150,
                    _ => 0,
                };
                tokio::time::sleep(Duration::from_millis(delay)).await;
                lock(&finished).push(city.clone());
                Ok::<Value, prompty::Error>(json!(answer(&city)))
            }
        })
    };
    let (options, events) = TurnOptions::new()
        .parallel_tool_calls(true)
        .tool("get_weather", handler(|city| if city == "Paris" { "21°C, sunny".into() } else { "8°C, rainy".into() }))
        .tool("get_time", handler(|_| "09:00".into()))
        .record_events();
    let messages = prompty::prepare_async(&agent, &json!({})).await.unwrap();
    let out = within(prompty::run_turn_async(&agent, messages, &json!({}), options)).await.unwrap();
    assert_eq!(out.result, json!("Paris is sunny, Oslo is rainy, and it is 09:00 in Tokyo."));
    assert_eq!(out.iterations, 2);
    assert_eq!(together.load(Ordering::SeqCst), 3, "the three handlers ran concurrently");
    assert_eq!(*lock(&finished), ["Tokyo", "Oslo", "Paris"], "they finished in the reverse order");

    let b = bodies(&server, "/v1/chat/completions", 2);
    assert_first_request(&b[0], user, &["get_weather", "get_time"]);
    let m = three_city_round(&b[1]);
    // The results follow the assistant message at once, in call order (not in finishing order).
    let results: Vec<(Value, Value)> =
        m[3..].iter().map(|t| (t["tool_call_id"].clone(), t["content"].clone())).collect();
    assert_eq!(
        results,
        [
            (json!("call_par_1"), json!("21°C, sunny")),
            (json!("call_par_2"), json!("8°C, rainy")),
            (json!("call_par_3"), json!("09:00")),
        ],
        "{:#}",
        b[1]
    );
    assert!(m[3..].iter().all(|t| t["role"] == "tool"));

    // The recorded events: the calls start in call order, their `tool_result` events come as they
    // finish, while the conversation they carry keeps call order.
    let recorded = events.events();
    let starts: Vec<&str> = recorded
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallStart { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, ["call_par_1", "call_par_2", "call_par_3"], "{recorded:#?}");
    let finished_ids: Vec<String> = tool_results(&events).into_iter().map(|r| r.0).collect();
    assert_eq!(finished_ids, ["call_par_3", "call_par_2", "call_par_1"], "completion order: {recorded:#?}");
    let tool_ids = |messages: &[prompty::Message]| -> Vec<String> {
        messages.iter().filter_map(|m| m.tool_call_id.clone()).collect()
    };
    let call_order = ["call_par_1", "call_par_2", "call_par_3"];
    let Some(AgentEvent::MessagesUpdated { messages }) = recorded.iter().find(|e| e.kind() == "messages_updated")
    else {
        panic!("no messages_updated event: {recorded:#?}")
    };
    assert_eq!(tool_ids(messages), call_order);
    let Some(AgentEvent::Done { messages, .. }) = recorded.last() else { panic!("done is not last: {recorded:#?}") };
    assert_eq!(tool_ids(messages), call_order);
    assert_eq!(messages, &out.messages);
}

// ---------------------------------------------------------------------------------------------
// 3. A handler that panics

#[tokio::test]
async fn a_panicking_handler_becomes_an_error_result_and_the_loop_goes_on() {
    let server = Aimock::start_with("turn.json", &[]);
    let user = "Use the exploding tool.";
    let agent = agent(&openai_model(&server), &[EXPLODE_TOOL], user);
    let (options, events) = TurnOptions::new()
        .tool("explode", prompty::tool_fn_sync(|_args: Value| -> prompty::Result<Value> { panic!("the fuse blew") }))
        .record_events();
    let messages = prompty::prepare_async(&agent, &json!({})).await.unwrap();
    let out = within(prompty::run_turn_async(&agent, messages, &json!({}), options)).await.unwrap();
    assert_eq!(out.result, json!("The tool broke, sorry."));
    assert_eq!(out.iterations, 2);

    let b = bodies(&server, "/v1/chat/completions", 2);
    let tools = tool_messages(&b[1]);
    assert_eq!(tools.len(), 1, "{:#}", b[1]);
    assert_eq!(tools[0]["tool_call_id"], "call_boom_1");
    let result = text(&tools[0]);
    assert!(result.starts_with("Error: Tool 'explode' failed: "), "{result}");
    assert!(result.contains("the fuse blew"), "the panic's message reaches the model: {result}");

    assert_eq!(errors(&events), [(result.to_owned(), Some("explode".to_owned()))], "{:#?}", events.events());
    assert_eq!(tool_results(&events), [("call_boom_1".into(), "explode".into(), result.to_owned(), true)]);
    assert_eq!(events.kinds().last(), Some(&"done"));
}

// ---------------------------------------------------------------------------------------------
// 4. Arguments that are not JSON

#[tokio::test]
async fn unreadable_arguments_are_reported_to_the_model_and_the_tool_is_not_called() {
    let server = Aimock::start_with("turn.json", &[]);
    let user = "Call it with garbled arguments.";
    let agent = agent(&openai_model(&server), &[WEATHER_TOOL], user);
    let calls = Arc::new(AtomicUsize::new(0));
    let (options, events) = TurnOptions::new().tool("get_weather", counted_weather(&calls)).record_events();
    let answer: String = within(prompty::turn_async(&agent, &json!({}), options)).await.unwrap();
    assert_eq!(answer, "My arguments were unreadable.");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler never ran");

    let b = bodies(&server, "/v1/chat/completions", 2);
    let m = sent(&b[1]);
    assert_eq!(m.len(), 4, "{:#}", b[1]);
    // The call is replayed as the model sent it.
    assert_eq!(assistant_calls(&m[2]), [("call_garbled_1".into(), "get_weather".into(), r#"{"city": "Paris""#.into())]);
    assert_eq!(m[3]["tool_call_id"], "call_garbled_1");
    let result = text(&m[3]);
    assert!(result.starts_with("Error: Tool 'get_weather' failed: "), "{result}");
    assert!(result.contains("not valid JSON"), "{result}");
    assert!(result.contains(r#"{"city": "Paris""#), "the model sees what it sent: {result}");
    assert_eq!(errors(&events), [(result.to_owned(), Some("get_weather".to_owned()))]);
    assert!(tool_results(&events).iter().all(|r| r.3), "an error result: {:#?}", events.events());
}

// ---------------------------------------------------------------------------------------------
// 5. A tool call denied by the tool guardrail (from sync code)

#[test]
fn a_denied_tool_call_is_answered_by_the_guardrail_and_never_runs() {
    let server = Aimock::start_with("turn.json", &[]);
    let user = "Please delete all files.";
    let agent = agent(&openai_model(&server), &[DELETE_TOOL], user);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let (options, events) = TurnOptions::new()
        .tool(
            "delete_files",
            prompty::tool_fn_sync(move |_args: Value| {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(json!("deleted"))
            }),
        )
        .guardrails(Guardrails::new().tool(|call, args| {
            if call.name == "delete_files" {
                Verdict::deny(format!("deleting {} is not allowed", args["path"].as_str().unwrap_or("?")))
            } else {
                Verdict::Allow
            }
        }))
        .record_events();
    let answer: String = prompty::turn(&agent, &json!({}), options).unwrap();
    assert_eq!(answer, "I am not allowed to delete files.");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler never ran");

    let b = bodies(&server, "/v1/chat/completions", 2);
    assert_round_replayed(
        &b[1],
        user,
        ("call_rm_1", "delete_files", r#"{"path":"/"}"#),
        "Tool denied by guardrail: deleting / is not allowed",
    );
    assert_eq!(
        tool_results(&events),
        [(
            "call_rm_1".into(),
            "delete_files".into(),
            "Tool denied by guardrail: deleting / is not allowed".into(),
            true
        )]
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Cancellation

#[tokio::test]
async fn cancelling_when_the_first_result_arrives_stops_before_the_next_model_call() {
    let server = Aimock::start_with("turn.json", &[]);
    let user = "Look it up, then cancel after the tool.";
    let agent = agent(&openai_model(&server), &[WEATHER_TOOL], user);
    let calls = Arc::new(AtomicUsize::new(0));
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    // The sink acts on an event; the log records them all.
    let (options, events) = TurnOptions::new()
        .tool("get_weather", counted_weather(&calls))
        .cancel(cancel)
        .on_event(move |e: &AgentEvent| {
            if e.kind() == "tool_result" {
                token.cancel();
            }
        })
        .record_events();
    let err = within(prompty::turn_async::<String>(&agent, &json!({}), options)).await.unwrap_err();
    let prompty::Error::Turn(failure) = err else { panic!("not a turn failure: {err:?}") };
    match &failure.stop {
        TurnStop::Cancelled { reason } => assert_eq!(reason, "Cancellation requested before iteration 2"),
        other => panic!("not cancelled: {other:?}"),
    }
    assert_eq!(failure.iterations, 1);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the tool call in progress ran to its end");
    let last = failure.messages.last().unwrap_or_else(|| panic!("no messages: {failure:?}"));
    assert_eq!(last.text(), "21°C and sunny in Paris", "the conversation keeps the result: {failure:?}");
    assert_eq!(events.kinds().last(), Some(&"cancelled"), "{:#?}", events.events());

    let b = bodies(&server, "/v1/chat/completions", 1);
    assert_first_request(&b[0], user, &["get_weather"]);
}

// ---------------------------------------------------------------------------------------------
// 7. Steering

#[tokio::test]
async fn a_steering_message_sent_during_a_round_follows_its_tool_results() {
    let server = Aimock::start_with("turn.json", &[]);
    let user = "steer me to the weather";
    let agent = agent(&openai_model(&server), &[WEATHER_TOOL], user);
    let steering = Steering::new();
    let from_handler = steering.clone();
    let (options, events) = TurnOptions::new()
        .steering(steering)
        .tool(
            "get_weather",
            prompty::tool_fn_sync(move |args: Value| {
                from_handler.send("Answer in French, please.")?;
                Ok(json!(format!("21°C and sunny in {}", args["city"].as_str().unwrap_or("?"))))
            }),
        )
        .record_events();
    let answer: String = within(prompty::turn_async(&agent, &json!({}), options)).await.unwrap();
    assert_eq!(answer, "Il fait 21°C et beau à Paris.");
    assert_eq!(statuses(&events), ["Starting agent loop", "Injecting steering message"]);

    let b = bodies(&server, "/v1/chat/completions", 2);
    let m = sent(&b[1]);
    assert_eq!(m.len(), 5, "system, user, assistant, tool, steering: {:#}", b[1]);
    assert_eq!(assistant_calls(&m[2]), [("call_steer_1".into(), "get_weather".into(), r#"{"city":"Paris"}"#.into())]);
    assert_eq!(m[3]["role"], "tool");
    assert_eq!(m[3]["tool_call_id"], "call_steer_1");
    assert_eq!(text(&m[3]), "21°C and sunny in Paris");
    assert_eq!(m[4], json!({"role": "user", "content": "Answer in French, please."}));
}

// ---------------------------------------------------------------------------------------------
// 8. A streamed final answer

/// A streamed turn over the weather round trip with the model of `model`, whose requests go to
/// `path`: the tool round never shows in the chunks, the final answer arrives in several.
async fn streamed_round_trip(model: fn(&Aimock) -> String, path: &str) {
    let server = Aimock::start_with("turn.json", &[]);
    let user = "What is the weather in Paris?";
    let agent = agent(&model(&server), &[WEATHER_TOOL], user);
    let calls = Arc::new(AtomicUsize::new(0));
    let (options, events) = TurnOptions::new().tool("get_weather", counted_weather(&calls)).record_events();
    let mut stream = within(prompty::turn_stream(&agent, &json!({}), options)).await.unwrap();
    let mut chunks = Vec::new();
    while let Some(chunk) = within(stream.next()).await {
        chunks.push(chunk);
    }
    let out = within(stream.finish()).await.unwrap();

    let final_text = "It is 21°C and sunny in Paris today.";
    let texts: Vec<&str> = chunks.iter().filter_map(StreamChunk::text).collect();
    assert_eq!(texts.concat(), final_text, "{chunks:?}");
    assert!(texts.len() > 3, "the answer arrives in several chunks: {chunks:?}");
    assert!(
        chunks.iter().all(|c| matches!(c, StreamChunk::Text(_) | StreamChunk::Usage(_))),
        "no tool call and no failure in the stream: {chunks:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(out.result, json!(final_text));
    assert_eq!(out.iterations, 2);
    let tokens: Vec<String> = events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Token { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(tokens, texts, "one token event per text chunk");

    let b = bodies(&server, path, 2);
    assert!(b.iter().all(|b| b["stream"] == true), "both model calls are streamed: {b:#?}");
    assert_first_request(&b[0], user, &["get_weather"]);
    assert_round_replayed(
        &b[1],
        user,
        ("call_weather_1", "get_weather", r#"{"city":"Paris"}"#),
        "21°C and sunny in Paris",
    );
}

#[tokio::test]
async fn a_streamed_turn_shows_only_the_final_answer_in_several_chunks() {
    streamed_round_trip(openai_model, "/v1/chat/completions").await;
}

#[tokio::test]
async fn a_streamed_anthropic_turn_shows_only_the_final_answer() {
    streamed_round_trip(anthropic_model, "/v1/messages").await;
}

#[tokio::test]
async fn a_streamed_responses_turn_shows_only_the_final_answer() {
    streamed_round_trip(responses_model, "/v1/responses").await;
}

// ---------------------------------------------------------------------------------------------
// 9. The same round trip through Anthropic Messages and the Responses API

/// The id the fixtures give the weather call.
const WEATHER_CALL: &str = "call_weather_1";

/// The two-round weather conversation through `model` (the provider's endpoint `path`), checked
/// as far as the journal shows it: the call's id came back with its result, the first request
/// offered the tool, the second replayed the call and its result. Gives the server, the agent and
/// the turn's output, for the provider-shape checks the journal cannot show.
async fn weather_round_trip(model: fn(&str) -> String, path: &str) -> (Aimock, RecordingProxy) {
    let server = Aimock::start_with("turn.json", &[]);
    let proxy = RecordingProxy::start(server.port);
    let user = "What is the weather in Paris?";
    let agent = agent(&model(&proxy.url()), &[WEATHER_TOOL], user);
    let calls = Arc::new(AtomicUsize::new(0));
    let (options, events) = TurnOptions::new().tool("get_weather", counted_weather(&calls)).record_events();
    let messages = prompty::prepare_async(&agent, &json!({})).await.unwrap();
    let out = within(prompty::run_turn_async(&agent, messages, &json!({}), options)).await.unwrap();
    assert_eq!(out.result, json!("It is 21°C and sunny in Paris today."));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let id = WEATHER_CALL;
    assert_eq!(tool_results(&events), [(id.into(), "get_weather".into(), "21°C and sunny in Paris".into(), false)]);
    let b = bodies(&server, path, 2);
    assert_first_request(&b[0], user, &["get_weather"]);
    // Anthropic: the `tool_use` block of the replayed assistant content shows as a chat tool call,
    // the `tool_result` block of the user message after it as a `tool` message. Responses: a
    // `function_call_output` with no `function_call` item before it would show as a tool call
    // without name or arguments, so these prove the item was replayed.
    assert_round_replayed(&b[1], user, (id, "get_weather", r#"{"city":"Paris"}"#), "21°C and sunny in Paris");
    (server, proxy)
}

#[tokio::test]
async fn anthropic_round_trip_sends_tool_use_and_tool_result() {
    let (server, proxy) = weather_round_trip(anthropic_model_at, "/v1/messages").await;
    let (user, id) = ("What is the weather in Paris?", WEATHER_CALL);
    assert_eq!(bodies(&server, "/v1/messages", 2)[1]["max_tokens"], 4096);

    // What the journal cannot show: the Messages API shape itself, in the bytes the server
    // received, whole: the `tool_use` block and, in the user message after it, the `tool_result`
    // block.
    let body = received(&proxy, &server, "/v1/messages", 1);
    assert_eq!(
        body,
        json!({
            "model": "claude-sonnet-4-5",
            "system": "You are terse.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": user}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "21°C and sunny in Paris"}]},
            ],
            "max_tokens": 4096,
            "tools": [anthropic_city_tool("get_weather", "Current weather in a city")],
        }),
        "{body:#}"
    );
}

#[tokio::test]
async fn anthropic_results_of_one_round_go_back_in_one_user_message() {
    let server = Aimock::start_with("turn.json", &[]);
    let proxy = RecordingProxy::start(server.port);
    let user = "What is the weather in three cities?";
    let agent = agent(&anthropic_model_at(&proxy.url()), &[WEATHER_TOOL, TIME_TOOL], user);
    let calls = Arc::new(AtomicUsize::new(0));
    let options = TurnOptions::new().tool("get_weather", counted_weather(&calls)).tool(
        "get_time",
        prompty::tool_fn_sync(|_args: Value| -> prompty::Result<Value> {
            Err(prompty::Error::Execution { message: "the clock is broken".into() })
        }),
    );
    let messages = prompty::prepare_async(&agent, &json!({})).await.unwrap();
    let out = within(prompty::run_turn_async(&agent, messages, &json!({}), options)).await.unwrap();
    assert_eq!(out.result, json!("Paris is sunny, Oslo is rainy, and it is 09:00 in Tokyo."));
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let b = bodies(&server, "/v1/messages", 2);
    let m = three_city_round(&b[1]);
    let ids: Vec<&Value> = m[3..].iter().map(|t| &t["tool_call_id"]).collect();
    assert_eq!(ids, [&json!("call_par_1"), &json!("call_par_2"), &json!("call_par_3")]);
    assert_eq!(text(&m[3]), "21°C and sunny in Paris");
    assert_eq!(text(&m[4]), "21°C and sunny in Oslo");
    let failed = text(&m[5]);
    assert!(
        failed.starts_with("Error: Tool 'get_time' failed: ") && failed.contains("the clock is broken"),
        "{failed}"
    );

    // Not in the journal: the three `tool_result` blocks travel in ONE user message, the failed
    // one flagged `is_error` (the bytes the server received, whole).
    let body = received(&proxy, &server, "/v1/messages", 1);
    let city = |name: &str, city: &str| json!({"type": "tool_use", "id": name, "name": "get_weather", "input": {"city": city}});
    assert_eq!(
        body,
        json!({
            "model": "claude-sonnet-4-5",
            "system": "You are terse.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": user}]},
                {"role": "assistant", "content": [
                    city("call_par_1", "Paris"),
                    city("call_par_2", "Oslo"),
                    {"type": "tool_use", "id": "call_par_3", "name": "get_time", "input": {"city": "Tokyo"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_par_1", "content": "21°C and sunny in Paris"},
                    {"type": "tool_result", "tool_use_id": "call_par_2", "content": "21°C and sunny in Oslo"},
                    {"type": "tool_result", "tool_use_id": "call_par_3",
                     "content": "Error: Tool 'get_time' failed: the clock is broken", "is_error": true},
                ]},
            ],
            "max_tokens": 4096,
            "tools": [
                anthropic_city_tool("get_weather", "Current weather in a city"),
                anthropic_city_tool("get_time", "Local time in a city"),
            ],
        }),
        "{body:#}"
    );
}

#[tokio::test]
async fn responses_round_trip_sends_function_call_and_its_output() {
    let (server, proxy) = weather_round_trip(responses_model_at, "/v1/responses").await;
    let id = WEATHER_CALL;

    // What the journal cannot show: the items themselves, in the bytes the server received,
    // whole: the response's `function_call` item replayed, then a `function_call_output` item.
    let mut body = received(&proxy, &server, "/v1/responses", 1);
    // The item id is aimock's, random per response (`fc-` and 16 characters): replayed as given.
    let item_id = body["input"][1]["id"].take();
    assert!(item_id.as_str().is_some_and(|i| i.starts_with("fc-") && i.len() == 19), "{item_id}");
    body["input"][1]["id"] = json!("fc-<from the response>");
    assert_eq!(
        body,
        json!({
            "model": "gpt-4o",
            "instructions": "You are terse.",
            "input": [
                {"role": "user", "content": "What is the weather in Paris?"},
                {"type": "function_call", "id": "fc-<from the response>", "call_id": id, "name": "get_weather",
                 "arguments": r#"{"city":"Paris"}"#, "status": "completed"},
                {"type": "function_call_output", "call_id": id, "output": "21°C and sunny in Paris"},
            ],
            "tools": [{"type": "function", "name": "get_weather", "description": "Current weather in a city",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
        }),
        "{body:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// A model call retried by the loop

#[tokio::test]
async fn a_rate_limited_model_call_is_retried_by_the_loop() {
    let server = Aimock::start_with("turn.json", &[]);
    let user = "Check the flaky weather.";
    let agent = agent(&openai_model(&server), &[WEATHER_TOOL], user);
    let calls = Arc::new(AtomicUsize::new(0));
    let (options, events) = TurnOptions::new()
        .tool("get_weather", counted_weather(&calls))
        .retry_backoff(Duration::from_millis(10))
        .record_events();
    let messages = prompty::prepare_async(&agent, &json!({})).await.unwrap();
    let out = within(prompty::run_turn_async(&agent, messages, &json!({}), options)).await.unwrap();
    assert_eq!(out.result, json!("Recovered: 21°C and sunny in Paris."));
    assert_eq!(out.iterations, 2, "a retried call is one iteration");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the tool is not run again");

    let statuses = statuses(&events);
    assert_eq!(statuses.len(), 2, "{statuses:#?}");
    assert_eq!(statuses[0], "Starting agent loop");
    assert!(statuses[1].starts_with("The model call failed ("), "{statuses:#?}");
    assert!(statuses[1].contains("429"), "{statuses:#?}");
    assert!(statuses[1].contains("retry 1 of 3"), "{statuses:#?}");

    // The HTTP layer makes its own attempts (the fixtures answer 429 three times, its default
    // number of attempts) before the loop sees the failure and calls the model again.
    let attempts = prompty::providers::http::RetryPolicy::default().max_attempts as usize;
    assert_eq!(attempts, 3, "turn.json holds three 429 answers for the HTTP layer's attempts");
    let entries = server.requests_to("/v1/chat/completions");
    let statuses: Vec<Value> = entries.iter().map(|e| e["response"]["status"].clone()).collect();
    assert_eq!(statuses, [json!(200), json!(429), json!(429), json!(429), json!(200)], "{entries:#?}");
    let last = &entries[4]["body"];
    assert_round_replayed(
        last,
        user,
        ("call_flaky_1", "get_weather", r#"{"city":"Paris"}"#),
        "21°C and sunny in Paris",
    );
    assert_eq!(entries[1]["body"], *last, "the retried request is the same request");
}

// ---------------------------------------------------------------------------------------------
// Anthropic extended thinking across a tool round

/// The weather round trip with Anthropic extended thinking on: the model thinks, then calls the
/// tool. Anthropic requires the assistant turn replayed before the `tool_result` to begin with its
/// `thinking` block (signature included); aimock checks that rule and, outside strict mode, logs
/// `THINKING: ...` for a request that breaks it (the real API answers 400).
async fn thinking_round_trip(streamed: bool) {
    let server = Aimock::start_with("turn.json", &[]);
    let proxy = RecordingProxy::start(server.port);
    let user = "Please think about the weather in town.";
    let model = format!(
        "{}  options:\n    maxOutputTokens: 4096\n    additionalProperties:\n      thinking:\n        type: enabled\n        \
         budget_tokens: 1024\n",
        anthropic_model_at(&proxy.url())
    );
    let agent = agent(&model, &[WEATHER_TOOL], user);
    let calls = Arc::new(AtomicUsize::new(0));
    let options = TurnOptions::new().tool("get_weather", counted_weather(&calls));
    let out = if streamed {
        let stream = within(prompty::turn_stream(&agent, &json!({}), options)).await.unwrap();
        within(stream.finish()).await.unwrap()
    } else {
        let messages = prompty::prepare_async(&agent, &json!({})).await.unwrap();
        within(prompty::run_turn_async(&agent, messages, &json!({}), options)).await.unwrap()
    };
    assert_eq!(out.result, json!("Thought it through: 21°C and sunny in Paris."));
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let b = bodies(&server, "/v1/messages", 2);
    assert_round_replayed(
        &b[1],
        user,
        ("call_think_1", "get_weather", r#"{"city":"Paris"}"#),
        "21°C and sunny in Paris",
    );

    // aimock's own check of the body it received (its log, named by common.rs after the port).
    let log_path = std::env::temp_dir().join(format!("prompty-aimock-{}.log", server.port));
    let log = std::fs::read_to_string(&log_path).unwrap_or_else(|e| panic!("{}: {e}", log_path.display()));
    assert!(!log.contains("THINKING"), "aimock found the thinking block missing from the replay:\n{log}");

    // The bytes the server received, whole (`stream: true` on a streamed turn).
    let body = received(&proxy, &server, "/v1/messages", 1);
    let mut expected = json!({
        "model": "claude-sonnet-4-5",
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": user}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants the weather in Paris: call get_weather.",
                 "signature": "aimock-placeholder-signature"},
                {"type": "tool_use", "id": "call_think_1", "name": "get_weather", "input": {"city": "Paris"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_think_1", "content": "21°C and sunny in Paris"},
            ]},
        ],
        "max_tokens": 4096,
        "tools": [anthropic_city_tool("get_weather", "Current weather in a city")],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    });
    if streamed {
        expected["stream"] = json!(true);
    }
    assert_eq!(body, expected, "{body:#}");
}

#[tokio::test]
async fn anthropic_thinking_block_is_replayed_before_the_tool_result() {
    thinking_round_trip(false).await;
}

/// A streamed turn replays the `thinking` block (and its signature) of the tool-calling response
/// too.
#[tokio::test]
async fn a_streamed_anthropic_turn_replays_the_thinking_block_before_the_tool_result() {
    thinking_round_trip(true).await;
}
