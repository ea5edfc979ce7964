//! The agent loop (`turn`) rule by rule, against scripted executors registered under a key per
//! test and the real OpenAI processor: tool rounds, failures the model reads, failures that end the
//! turn, limits, retries, cancellation, parallel calls, events, steering, guardrails, the context
//! budget, streaming, typed answers, agentic child prompts.

use futures_util::StreamExt;
use prompty::providers::openai::OpenAiProcessor;
use prompty::{
    Agent, AgentEvent, BoxFuture, CancellationToken, ContextBudget, Error, Executor, Guardrails, HttpFailure, Message,
    RawEvent, RawStream, Role, Steering, StreamChunk, ToolRound, TurnOptions, TurnStop, Verdict,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Reply = dyn Fn(usize, &[Message]) -> prompty::Result<Value> + Send + Sync;

/// A scripted model: `reply(k, messages)` answers call `k` (0-based), in OpenAI's format.
struct Scripted {
    reply: Box<Reply>,
    calls: AtomicUsize,
    seen: Mutex<Vec<Vec<Message>>>,
    offered: Mutex<Vec<Vec<String>>>,
    /// The `toolChoice` of the agent of each call.
    choices: Mutex<Vec<Option<prompty::ToolChoice>>>,
    /// Calls that never answer (to be cancelled).
    hang: bool,
}

struct Shared(Arc<Scripted>);

impl Executor for Shared {
    fn execute_async<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
        let s = &self.0;
        let k = s.calls.fetch_add(1, Ordering::SeqCst);
        s.seen.lock().unwrap().push(messages.to_vec());
        s.offered.lock().unwrap().push(agent.tools.iter().flatten().map(|t| t.name.clone()).collect());
        s.choices.lock().unwrap().push(agent.model.as_ref().and_then(|m| m.options.as_ref()?.tool_choice.clone()));
        let answer = (s.reply)(k, messages);
        let hang = s.hang;
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            answer
        })
    }

    fn execute_stream<'a>(
        &'a self,
        agent: &'a Agent,
        messages: &'a [Message],
    ) -> BoxFuture<'a, prompty::Result<RawStream>> {
        let whole = self.execute_async(agent, messages);
        Box::pin(async move { Ok(Box::pin(futures_util::stream::iter(to_events(whole.await?))) as RawStream) })
    }

    fn format_tool_messages(&self, agent: &Agent, round: &ToolRound<'_>) -> prompty::Result<Vec<Message>> {
        prompty::providers::openai::tool_messages(agent, round)
    }
}

/// A chat completion as stream events: the content in pieces of 3 characters, tool calls by index.
fn to_events(response: Value) -> Vec<RawEvent> {
    let message = &response["choices"][0]["message"];
    let mut events = Vec::new();
    let content: Vec<char> = message["content"].as_str().unwrap_or("").chars().collect();
    for piece in content.chunks(3) {
        let piece: String = piece.iter().collect();
        events.push(RawEvent::Data(json!({"choices": [{"index": 0, "delta": {"content": piece}}]})));
    }
    for (i, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        events.push(RawEvent::Data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": call["id"], "type": "function", "function": call["function"]}]}}]})));
    }
    events.push(RawEvent::Data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})));
    events
}

fn model(
    key: &str,
    reply: impl Fn(usize, &[Message]) -> prompty::Result<Value> + Send + Sync + 'static,
) -> Arc<Scripted> {
    model_with(key, false, reply)
}

fn model_with(
    key: &str,
    hang: bool,
    reply: impl Fn(usize, &[Message]) -> prompty::Result<Value> + Send + Sync + 'static,
) -> Arc<Scripted> {
    let s = Arc::new(Scripted {
        reply: Box::new(reply),
        calls: AtomicUsize::new(0),
        seen: Mutex::new(Vec::new()),
        offered: Mutex::new(Vec::new()),
        choices: Mutex::new(Vec::new()),
        hang,
    });
    prompty::register_executor(key, Shared(Arc::clone(&s)));
    prompty::register_processor(key, OpenAiProcessor);
    s
}

fn answer(text: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": text}}]})
}

fn calls(list: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = list
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls}}]})
}

/// An agent of provider `key` declaring `tools` (function tools with one string parameter `city`
/// unless given as JSON).
fn agent(key: &str, tools: &[&str]) -> Agent {
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t, "kind": "function", "parameters": [{"name": "city", "kind": "string"}]}))
        .collect();
    Agent::from_value(json!({"name": "t", "model": {"id": "m", "provider": key}, "tools": tools})).unwrap()
}

fn user(text: &str) -> Vec<Message> {
    vec![Message::new(Role::System, "Be brief."), Message::new(Role::User, text)]
}

fn sync_tool(f: impl Fn(Value) -> prompty::Result<Value> + Send + Sync + 'static) -> impl prompty::ToolFunction {
    prompty::tool_fn_sync(f)
}

fn failure(e: Error) -> Box<prompty::TurnFailure> {
    match e {
        Error::Turn(f) => f,
        other => panic!("expected a turn failure, got {other:?}"),
    }
}

fn http(status: u16) -> Error {
    Error::Http(Box::new(HttpFailure {
        provider: "scripted".into(),
        status: Some(status),
        reason: None,
        message: format!("status {status}"),
        request_id: None,
        body: None,
        attempts: 1,
    }))
}

#[test]
fn without_tools_a_turn_is_one_model_call() {
    let m = model("t-plain", |_, _| Ok(answer("4")));
    let out = prompty::run_turn(&agent("t-plain", &[]), user("2+2?"), &json!({}), TurnOptions::new()).unwrap();
    assert_eq!((out.result, out.iterations), (json!("4"), 1));
    assert_eq!(m.calls.load(Ordering::SeqCst), 1);
    assert_eq!(out.messages.last().unwrap(), &Message::new(Role::Assistant, "4"));
}

#[test]
fn a_tool_round_feeds_results_back_and_the_model_answers() {
    let m = model("t-round", |k, msgs| match k {
        0 => Ok(calls(&[("c1", "get_weather", r#"{"city": "Paris"}"#)])),
        _ => Ok(answer(&format!("It is {}", msgs.last().unwrap().text()))),
    });
    let options = TurnOptions::new()
        .tool("get_weather", sync_tool(|a| Ok(json!(format!("sunny in {}", a["city"].as_str().unwrap())))));
    let out = prompty::run_turn(&agent("t-round", &["get_weather"]), user("weather?"), &json!({}), options).unwrap();
    assert_eq!(out.result, json!("It is sunny in Paris"));
    assert_eq!(out.iterations, 2);
    let second = &m.seen.lock().unwrap()[1];
    assert_eq!(second[2].role, Role::Assistant);
    assert_eq!(second[2].tool_calls[0].id, "c1");
    // In JSON, where the spec puts them.
    assert_eq!(json!(second[2])["metadata"]["tool_calls"][0]["id"], "c1");
    assert_eq!((second[3].role, second[3].text()), (Role::Tool, "sunny in Paris".to_owned()));
    assert_eq!(second[3].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(json!(second[3])["metadata"]["tool_call_id"], "c1");
}

#[test]
fn a_forced_tool_choice_holds_until_the_first_tool_round() {
    use prompty::ToolChoice;
    for (forced, after) in [(json!("get_weather"), ToolChoice::Auto), (json!("required"), ToolChoice::None)] {
        let key = format!("t-forced-{after:?}");
        let m = model(&key, |k, _| match k {
            0 | 1 => Ok(calls(&[(&format!("c{k}"), "get_weather", r#"{"city": "Paris"}"#)])),
            _ => Ok(answer("done")),
        });
        let mut a = agent(&key, &["get_weather"]);
        a.model.as_mut().unwrap().options = Some(serde_json::from_value(json!({"toolChoice": forced})).unwrap());
        let mut options = TurnOptions::new().tool("get_weather", sync_tool(|_| Ok(json!("sunny"))));
        if after != ToolChoice::Auto {
            options = options.after_forced_tool(after.clone());
        }
        let out = prompty::run_turn(&a, user("weather?"), &json!({}), options).unwrap();
        assert_eq!(out.result, json!("done"));
        let first = serde_json::from_value(forced).unwrap();
        assert_eq!(*m.choices.lock().unwrap(), vec![Some(first), Some(after.clone()), Some(after)]);
    }
}

#[test]
fn the_typed_answer_is_cast_and_a_path_is_loaded_first() {
    model("t-typed", |_, _| Ok(answer(r#"{"city": "Oslo", "celsius": -3}"#)));
    let dir = std::env::temp_dir().join(format!("prompty-turn-typed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w.prompty");
    std::fs::write(
        &path,
        "---\nmodel: {id: m, provider: t-typed}\noutputs:\n  - {name: city, kind: string}\n  - {name: celsius, kind: integer}\n---\nuser:\n{{q}}",
    )
    .unwrap();
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Weather {
        city: String,
        celsius: i64,
    }
    let w: Weather = prompty::turn(&path, &json!({"q": "Oslo?"}), TurnOptions::new()).unwrap();
    assert_eq!(w, Weather { city: "Oslo".into(), celsius: -3 });
    let err =
        prompty::turn::<Weather>(dir.join("missing.prompty").as_path(), &json!({}), TurnOptions::new()).unwrap_err();
    assert!(matches!(err, Error::Format(prompty::FormatError::FileNotFound { .. })), "{err}");
}

#[test]
fn invoke_answered_with_tool_calls_points_to_turn() {
    model("t-invoke", |_, _| Ok(calls(&[("c1", "get_weather", "{}")])));
    let a = agent("t-invoke", &["get_weather"]);
    let err = prompty::invoke::<String>(&a, &json!({})).unwrap_err();
    assert!(matches!(&err, Error::UnexpectedToolCalls { names } if names == &["get_weather"]), "{err:?}");
    assert!(err.to_string().contains("`prompty::turn`"), "{err}");
    // As a JSON value, the calls themselves (spec §8.1).
    let v: Value = prompty::invoke(&a, &json!({})).unwrap();
    assert_eq!(v[0]["name"], "get_weather");
}

#[test]
fn failing_and_panicking_handlers_and_bad_arguments_become_results_the_model_reads() {
    let m = model("t-fail", |k, _| match k {
        0 => Ok(calls(&[
            ("c1", "broken", r#"{"city": "a"}"#),
            ("c2", "boom", r#"{"city": "b"}"#),
            ("c3", "fine", "this is not JSON"),
        ])),
        _ => Ok(answer("recovered")),
    });
    let ran_fine = Arc::new(AtomicUsize::new(0));
    let ran = Arc::clone(&ran_fine);
    let (options, events) = TurnOptions::new()
        .tool("broken", sync_tool(|_| Err(Error::Tool { name: "broken".into(), message: "service down".into() })))
        .tool("boom", sync_tool(|_| panic!("handler exploded")))
        .tool("fine", sync_tool(move |_| Ok(json!(ran.fetch_add(1, Ordering::SeqCst)))))
        .record_events();
    let out =
        prompty::run_turn(&agent("t-fail", &["broken", "boom", "fine"]), user("go"), &json!({}), options).unwrap();
    assert_eq!(out.result, json!("recovered"));
    assert_eq!(ran_fine.load(Ordering::SeqCst), 0, "a call whose arguments are not JSON never runs");
    let seen = &m.seen.lock().unwrap()[1];
    let results: Vec<String> = seen.iter().filter(|m| m.role == Role::Tool).map(Message::text).collect();
    assert_eq!(results[0], "Error: Tool 'broken' failed: service down");
    assert_eq!(results[1], "Error: Tool 'boom' failed: panicked: handler exploded");
    assert!(results[2].starts_with("Error: Tool 'fine' failed: arguments are not valid JSON"), "{}", results[2]);
    assert!(seen.iter().filter(|m| m.role == Role::Tool).all(|m| m.metadata["is_error"] == true));
    let errors = events.kinds().into_iter().filter(|k| *k == "error").count();
    assert_eq!(errors, 3);
    assert_eq!(events.kinds().last(), Some(&"done"));
}

#[test]
fn an_undeclared_tool_or_one_without_a_handler_ends_the_turn_with_the_conversation() {
    model("t-unknown", |_, _| Ok(calls(&[("c1", "rm_rf", "{}")])));
    let err = prompty::run_turn(&agent("t-unknown", &["get_weather"]), user("go"), &json!({}), TurnOptions::new())
        .unwrap_err();
    let f = failure(err);
    assert!(matches!(&f.stop, TurnStop::UnknownTool { name } if name == "rm_rf"));
    assert!(f.to_string().starts_with("Tool not registered: rm_rf"), "{f}");
    assert_eq!(f.messages.len(), 2);

    model("t-nohandler", |_, _| Ok(calls(&[("c1", "declared_only", "{}")])));
    let err = prompty::run_turn(&agent("t-nohandler", &["declared_only"]), user("go"), &json!({}), TurnOptions::new())
        .unwrap_err();
    let f = failure(err);
    assert!(matches!(f.stop, TurnStop::NoHandler(_)), "{f}");
    assert!(f.to_string().contains("No handler registered for tool: declared_only"), "{f}");
}

#[test]
fn the_iteration_limit_is_an_error_carrying_every_round() {
    let m = model("t-limit", |k, _| Ok(calls(&[(&format!("c{k}"), "get_weather", "{}")])));
    let options = TurnOptions::new().max_iterations(3).tool("get_weather", sync_tool(|_| Ok(json!("sunny"))));
    let f =
        failure(prompty::run_turn(&agent("t-limit", &["get_weather"]), user("loop"), &json!({}), options).unwrap_err());
    assert_eq!(f.to_string(), "Agent loop exceeded 3 iterations");
    assert_eq!(m.calls.load(Ordering::SeqCst), 3, "no model call beyond the limit");
    assert_eq!(f.iterations, 4);
    assert_eq!(f.messages.len(), 2 + 3 * 2);
}

#[test]
fn transient_failures_are_retried_with_status_events_and_other_failures_are_not() {
    let m = model("t-retry", |k, _| if k < 2 { Err(http(503)) } else { Ok(answer("finally")) });
    let (options, events) = TurnOptions::new().retry_backoff(Duration::from_millis(5)).record_events();
    let out = prompty::run_turn(&agent("t-retry", &[]), user("hi"), &json!({}), options).unwrap();
    assert_eq!((out.result, out.iterations), (json!("finally"), 1));
    assert_eq!(m.calls.load(Ordering::SeqCst), 3);
    let statuses: Vec<String> = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Status { message } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(statuses.len(), 2);
    assert!(statuses[0].contains("retry 1 of 3") && statuses[1].contains("retry 2 of 3"), "{statuses:?}");

    let m = model("t-noretry", |_, _| Err(http(401)));
    let f =
        failure(prompty::run_turn(&agent("t-noretry", &[]), user("hi"), &json!({}), TurnOptions::new()).unwrap_err());
    assert!(matches!(f.stop, TurnStop::Model { attempts: 1, .. }), "{f}");
    assert_eq!(m.calls.load(Ordering::SeqCst), 1);

    let m = model("t-exhausted", |_, _| Err(http(429)));
    let options = TurnOptions::new().llm_retries(2).retry_backoff(Duration::from_millis(1));
    let f = failure(prompty::run_turn(&agent("t-exhausted", &[]), user("hi"), &json!({}), options).unwrap_err());
    assert!(matches!(f.stop, TurnStop::Model { attempts: 3, .. }), "{f}");
    assert!(f.to_string().contains("after 3 attempts"), "{f}");
    assert_eq!(f.messages.len(), 2, "the error carries the conversation");
    assert_eq!(m.calls.load(Ordering::SeqCst), 3);
}

#[test]
fn cancellation_abandons_a_model_call_and_a_retry_wait_at_once() {
    model_with("t-hang", true, |_, _| Ok(answer("never")));
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        canceller.cancel();
    });
    let started = Instant::now();
    let (options, events) = TurnOptions::new().cancel(cancel).record_events();
    let f = failure(prompty::run_turn(&agent("t-hang", &[]), user("hi"), &json!({}), options).unwrap_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(&f.stop, TurnStop::Cancelled { reason } if reason.contains("during the model call")), "{f}");
    assert_eq!(events.kinds(), ["cancelled"]);

    model("t-wait", |_, _| Err(http(500)));
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        canceller.cancel();
    });
    let started = Instant::now();
    let options = TurnOptions::new().cancel(cancel).retry_backoff(Duration::from_secs(30));
    let f = failure(prompty::run_turn(&agent("t-wait", &[]), user("hi"), &json!({}), options).unwrap_err());
    assert!(started.elapsed() < Duration::from_secs(5), "the 30 s wait was abandoned");
    assert!(matches!(&f.stop, TurnStop::Cancelled { reason } if reason.contains("retry")), "{f}");
}

#[test]
fn cancellation_between_tools_stops_the_next_one() {
    model("t-cancel-tools", |_, _| Ok(calls(&[("c1", "a", "{}"), ("c2", "b", "{}")])));
    let cancel = CancellationToken::new();
    let in_handler = cancel.clone();
    let ran_b = Arc::new(AtomicUsize::new(0));
    let b = Arc::clone(&ran_b);
    let options = TurnOptions::new()
        .cancel(cancel)
        .tool(
            "a",
            sync_tool(move |_| {
                in_handler.cancel();
                Ok(json!("a done"))
            }),
        )
        .tool("b", sync_tool(move |_| Ok(json!(b.fetch_add(1, Ordering::SeqCst)))));
    let f =
        failure(prompty::run_turn(&agent("t-cancel-tools", &["a", "b"]), user("go"), &json!({}), options).unwrap_err());
    assert!(
        matches!(&f.stop, TurnStop::Cancelled { reason } if reason == "Cancellation requested after tool execution")
    );
    assert_eq!(ran_b.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_run_concurrently_keep_call_order_and_survive_a_failing_sibling() {
    let m = model("t-parallel", |k, _| match k {
        0 => Ok(calls(&[("c1", "slow", "{}"), ("c2", "fast", "{}"), ("c3", "failing", "{}")])),
        _ => Ok(answer("done")),
    });
    // `slow` finishes only after `fast` has started: sequential calls would wait forever.
    let started = Arc::new(tokio::sync::Notify::new());
    let (s1, s2) = (Arc::clone(&started), Arc::clone(&started));
    let options = TurnOptions::new()
        .parallel_tool_calls(true)
        .tool(
            "slow",
            prompty::tool_fn(move |_| {
                let s = Arc::clone(&s1);
                async move {
                    s.notified().await;
                    Ok(json!("slow result"))
                }
            }),
        )
        .tool(
            "fast",
            prompty::tool_fn(move |_| {
                let s = Arc::clone(&s2);
                async move {
                    s.notify_one();
                    Ok(json!("fast result"))
                }
            }),
        )
        .tool("failing", sync_tool(|_| Err(Error::Tool { name: "failing".into(), message: "nope".into() })));
    let a = agent("t-parallel", &["slow", "fast", "failing"]);
    let inputs = json!({});
    let run = prompty::run_turn_async(&a, user("go"), &inputs, options);
    let out = tokio::time::timeout(Duration::from_secs(10), run).await.expect("the calls ran concurrently").unwrap();
    assert_eq!(out.result, json!("done"));
    let seen = &m.seen.lock().unwrap()[1];
    let results: Vec<(String, String)> =
        seen.iter().filter(|m| m.role == Role::Tool).map(|m| (m.tool_call_id.clone().unwrap(), m.text())).collect();
    assert_eq!(
        results,
        [
            ("c1".into(), "slow result".into()),
            ("c2".into(), "fast result".into()),
            ("c3".into(), "Error: Tool 'failing' failed: nope".into())
        ]
    );
}

#[test]
fn calls_run_one_after_the_other_by_default() {
    model("t-seq", |k, _| match k {
        0 => Ok(calls(&[("c1", "a", "{}"), ("c2", "a", "{}"), ("c3", "a", "{}")])),
        _ => Ok(answer("done")),
    });
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (f, m2) = (Arc::clone(&in_flight), Arc::clone(&most));
    let options = TurnOptions::new().tool(
        "a",
        prompty::tool_fn(move |_| {
            let (f, m2) = (Arc::clone(&f), Arc::clone(&m2));
            async move {
                let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                m2.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                f.fetch_sub(1, Ordering::SeqCst);
                Ok(json!("ok"))
            }
        }),
    );
    prompty::run_turn(&agent("t-seq", &["a"]), user("go"), &json!({}), options).unwrap();
    assert_eq!(most.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failing_or_panicking_event_sink_never_stops_the_loop() {
    model("t-sink", |k, _| if k == 0 { Ok(calls(&[("c1", "a", "{}")])) } else { Ok(answer("fine")) });
    let options = TurnOptions::new().tool("a", sync_tool(|_| Ok(json!(1)))).on_event(|e: &AgentEvent| {
        if e.kind() == "tool_call_start" {
            panic!("sink bug");
        }
    });
    let out = prompty::run_turn(&agent("t-sink", &["a"]), user("go"), &json!({}), options).unwrap();
    assert_eq!(out.result, json!("fine"));
    let options = TurnOptions::new()
        .tool("a", sync_tool(|_| Ok(json!(1))))
        .on_event(|_: &AgentEvent| -> Result<(), String> { Err("disk full".into()) });
    assert_eq!(
        prompty::run_turn(&agent("t-sink", &["a"]), user("go"), &json!({}), options).unwrap().result,
        json!("fine")
    );
}

#[test]
fn recorded_events_go_beside_a_sink_and_clones_of_the_options_share_the_log() {
    model("t-record", |k, _| if k % 2 == 0 { Ok(calls(&[("c1", "a", "{}")])) } else { Ok(answer("fine")) });
    let (options, events) = TurnOptions::new().tool("a", sync_tool(|_| Ok(json!(1)))).record_events();
    // A sink set after the log does not replace it: each event goes to both.
    let sunk = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&sunk);
    let options = options.on_event(move |e: &AgentEvent| into.lock().unwrap().push(e.kind()));
    let one_turn = ["status", "tool_call_start", "tool_result", "messages_updated", "done"];
    prompty::run_turn(&agent("t-record", &["a"]), user("go"), &json!({}), options.clone()).unwrap();
    assert_eq!(events.kinds(), one_turn);
    assert_eq!(*sunk.lock().unwrap(), one_turn);
    // The clone used above and the options record into the same log: a second turn adds to it.
    prompty::run_turn(&agent("t-record", &["a"]), user("go"), &json!({}), options).unwrap();
    assert_eq!(events.len(), 2 * one_turn.len());
    let taken = events.take();
    assert_eq!(taken.len(), 2 * one_turn.len());
    assert!(matches!(taken.last(), Some(AgentEvent::Done { response, .. }) if response == "fine"));
    assert!(events.is_empty(), "take() empties the log: {events:?}");
}

#[tokio::test]
async fn the_sync_form_works_inside_a_runtime_and_gives_the_same_result() {
    model("t-sync", |k, _| if k % 2 == 0 { Ok(calls(&[("c1", "a", "{}")])) } else { Ok(answer("same")) });
    let opts = || TurnOptions::new().tool("a", sync_tool(|_| Ok(json!(1))));
    let a = agent("t-sync", &["a"]);
    let sync = prompty::run_turn(&a, user("go"), &json!({}), opts()).unwrap();
    let asynchronous = prompty::run_turn_async(&a, user("go"), &json!({}), opts()).await.unwrap();
    assert_eq!(sync, asynchronous);
}

#[test]
fn steering_is_appended_as_user_messages_at_the_next_iteration() {
    let steering = Steering::new();
    let from_tool = steering.clone();
    let m = model("t-steer", |k, _| if k == 0 { Ok(calls(&[("c1", "a", "{}")])) } else { Ok(answer("ok")) });
    let (options, events) = TurnOptions::new()
        .steering(steering)
        .tool(
            "a",
            sync_tool(move |_| {
                from_tool.send("Use Celsius.").unwrap();
                from_tool.send("And be brief.").unwrap();
                Ok(json!("72F"))
            }),
        )
        .record_events();
    let out = prompty::run_turn(&agent("t-steer", &["a"]), user("weather"), &json!({}), options).unwrap();
    let second = &m.seen.lock().unwrap()[1];
    let tail: Vec<(Role, String)> = second[3..].iter().map(|m| (m.role, m.text())).collect();
    assert_eq!(
        tail,
        [(Role::Tool, "72F".into()), (Role::User, "Use Celsius.".into()), (Role::User, "And be brief.".into())]
    );
    assert_eq!(out.messages.len(), 7);
    assert_eq!(
        events.kinds(),
        ["status", "tool_call_start", "tool_result", "messages_updated", "status", "messages_updated", "done"]
    );
}

#[test]
fn guardrails_deny_input_output_and_tools() {
    let m = model("t-guard", |_, _| Ok(answer("secret stuff")));
    let options = TurnOptions::new().guardrails(Guardrails::new().input(|_| Verdict::deny("PII")));
    let f = failure(prompty::run_turn(&agent("t-guard", &[]), user("hi"), &json!({}), options).unwrap_err());
    assert!(matches!(&f.stop, TurnStop::Guardrail { stage: "input", reason } if reason == "PII"));
    assert_eq!((f.iterations, m.calls.load(Ordering::SeqCst)), (0, 0));

    let options = TurnOptions::new().guardrails(Guardrails::new().output(|r| {
        if r.as_str().is_some_and(|t| t.contains("secret")) {
            Verdict::deny("leak")
        } else {
            Verdict::Allow
        }
    }));
    let f = failure(prompty::run_turn(&agent("t-guard", &[]), user("hi"), &json!({}), options).unwrap_err());
    assert!(matches!(&f.stop, TurnStop::Guardrail { stage: "output", .. }), "{f}");

    // A panicking guardrail denies.
    let options = TurnOptions::new().guardrails(Guardrails::new().input(|_| panic!("bug")));
    let f = failure(prompty::run_turn(&agent("t-guard", &[]), user("hi"), &json!({}), options).unwrap_err());
    assert!(matches!(&f.stop, TurnStop::Guardrail { reason, .. } if reason.contains("panicked")), "{f}");

    let m = model("t-guard-tool", |k, _| {
        if k == 0 {
            Ok(calls(&[("c1", "rm", r#"{"city": "x"}"#), ("c2", "ls", "{}")]))
        } else {
            Ok(answer("ok"))
        }
    });
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    let options = TurnOptions::new()
        .tool("rm", sync_tool(move |_| Ok(json!(r.fetch_add(1, Ordering::SeqCst)))))
        .tool("ls", sync_tool(|_| Ok(json!("a b"))))
        .guardrails(Guardrails::new().tool(|call, args| {
            if call.name == "rm" && args["city"] == "x" {
                Verdict::deny("not allowed")
            } else {
                Verdict::Allow
            }
        }));
    prompty::run_turn(&agent("t-guard-tool", &["rm", "ls"]), user("go"), &json!({}), options).unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    let texts: Vec<String> =
        m.seen.lock().unwrap()[1].iter().filter(|m| m.role == Role::Tool).map(Message::text).collect();
    assert_eq!(texts, ["Tool denied by guardrail: not allowed", "a b"]);
}

#[test]
fn bindings_override_the_model_and_the_tool_guardrail_sees_them() {
    let a = Agent::from_value(
        json!({"model": {"id": "m", "provider": "t-bind"}, "tools": [{"name": "w", "kind": "function",
        "parameters": [{"name": "city", "kind": "string"}, {"name": "unit", "kind": "string"}],
        "bindings": {"unit": {"input": "preferred"}}}]}),
    )
    .unwrap();
    model("t-bind", |k, _| {
        if k == 0 {
            Ok(calls(&[("c1", "w", r#"{"city": "Oslo", "unit": "kelvin"}"#)]))
        } else {
            Ok(answer("ok"))
        }
    });
    let got = Arc::new(Mutex::new(Value::Null));
    let (g1, g2) = (Arc::clone(&got), Arc::new(Mutex::new(Value::Null)));
    let guard_saw = Arc::clone(&g2);
    let options = TurnOptions::new()
        .tool(
            "w",
            sync_tool(move |a| {
                *g1.lock().unwrap() = a;
                Ok(json!(""))
            }),
        )
        .guardrails(Guardrails::new().tool(move |_, args| {
            *guard_saw.lock().unwrap() = args.clone();
            Verdict::Allow
        }));
    prompty::run_turn(&a, user("go"), &json!({"preferred": "celsius"}), options).unwrap();
    assert_eq!(*got.lock().unwrap(), json!({"city": "Oslo", "unit": "celsius"}));
    assert_eq!(*g2.lock().unwrap(), json!({"city": "Oslo", "unit": "celsius"}));
}

#[test]
fn the_context_budget_trims_before_the_model_call() {
    let m = model("t-budget", |_, _| Ok(answer("ok")));
    let mut messages = vec![Message::new(Role::System, "sys")];
    for i in 0..5 {
        messages.push(Message::new(Role::User, format!("question {i}")));
        messages.push(Message::new(Role::Assistant, "x".repeat(200)));
    }
    messages.push(Message::new(Role::User, "last"));
    let (options, events) = TurnOptions::new().context_budget(ContextBudget::chars(300)).record_events();
    prompty::run_turn(&agent("t-budget", &[]), messages, &json!({}), options).unwrap();
    let sent = &m.seen.lock().unwrap()[0];
    assert_eq!(sent[0].text(), "sys");
    assert!(sent[1].text().starts_with("[Summary of earlier conversation] User asked: question 0"), "{:?}", sent[1]);
    assert_eq!(sent.last().unwrap().text(), "last");
    assert!(sent.iter().map(|m| m.text().len()).sum::<usize>() <= 300);
    assert!(events.events().iter().any(|e| matches!(e, AgentEvent::ContextTrimmed { dropped } if *dropped >= 8)));
}

/// A `#[prompty::tool]` fn handed to the turn but not declared by the prompt.
#[prompty::tool]
fn local_time(
    /// The city
    city: String,
) -> String {
    format!("12:00 in {city}")
}

#[test]
fn a_handed_tool_function_is_offered_to_the_model_and_ids_are_filled_in() {
    let m = model("t-offered", |k, _| {
        if k == 0 {
            Ok(calls(&[("", "local_time", r#"{"city": "Rome"}"#)]))
        } else {
            Ok(answer("noon"))
        }
    });
    let options = TurnOptions::new().tool("local_time", local_time {});
    let out = prompty::run_turn(&agent("t-offered", &[]), user("time?"), &json!({}), options).unwrap();
    assert_eq!(m.offered.lock().unwrap()[0], ["local_time"]);
    let tool = out.messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool.text(), "12:00 in Rome");
    assert!(!tool.tool_call_id.as_deref().unwrap().is_empty());
}

#[tokio::test]
async fn a_tool_fn_argument_error_names_the_argument() {
    use prompty::ToolFunction;
    let err = local_time {}.call(json!({"city": 5})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Tool 'local_time' failed: invalid arguments: city: invalid type: integer `5`, expected a string"
    );
}

#[tokio::test]
async fn a_streamed_turn_hides_tool_rounds_and_streams_the_final_answer() {
    model("t-stream", |k, _| {
        if k == 0 {
            let mut r = calls(&[("c1", "a", "{}")]);
            r["choices"][0]["message"]["content"] = json!("Let me check that for you.");
            Ok(r)
        } else {
            Ok(answer("It is sunny and warm."))
        }
    });
    let (options, events) = TurnOptions::new().tool("a", sync_tool(|_| Ok(json!("sunny")))).record_events();
    let a = agent("t-stream", &["a"]);
    let mut stream = prompty::run_turn_stream(&a, user("weather"), &json!({}), options);
    let mut chunks = Vec::new();
    while let Some(c) = stream.next().await {
        chunks.push(c);
    }
    let text: String = chunks.iter().filter_map(StreamChunk::text).collect();
    assert_eq!(text, "It is sunny and warm.");
    assert!(chunks.iter().filter(|c| c.text().is_some()).count() > 3, "several chunks: {chunks:?}");
    let out = stream.finish().await.unwrap();
    assert_eq!(out.iterations, 2);
    // The text beside the tool call is kept in the conversation, never streamed.
    assert_eq!(out.messages[2].text(), "Let me check that for you.");
    let tokens: String = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Token { text } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(tokens, "It is sunny and warm.");
}

#[tokio::test]
async fn a_streamed_turn_that_fails_ends_with_a_failure_chunk_and_finish_gives_the_error() {
    model("t-stream-fail", |_, _| Ok(answer("x")));
    let a = agent("t-stream-fail", &[]);
    let options = TurnOptions::new().guardrails(Guardrails::new().input(|_| Verdict::deny("no")));
    let mut stream = prompty::run_turn_stream(&a, user("hi"), &json!({}), options.clone());
    let chunks: Vec<StreamChunk> = (&mut stream).collect().await;
    assert!(matches!(chunks.as_slice(), [StreamChunk::Failure(f)] if f.message.contains("guardrail")), "{chunks:?}");
    let stream = prompty::run_turn_stream(&a, user("hi"), &json!({}), options);
    assert!(matches!(stream.finish().await, Err(Error::Turn(_))));
}

#[test]
fn agentic_prompty_tools_run_the_childs_own_loop_without_steering_and_nest_boundedly() {
    let dir = std::env::temp_dir().join(format!("prompty-turn-agentic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("child.prompty"),
        "---\nmodel: {id: m, provider: t-child}\ninputs: [topic]\ntools:\n  - {name: lookup, kind: function}\n---\nuser:\nResearch {{topic}}",
    )
    .unwrap();
    std::fs::write(
        dir.join("parent.prompty"),
        "---\nmodel: {id: m, provider: t-parent}\ntools:\n  - {name: research, kind: prompty, path: child.prompty, mode: agentic}\n---\nuser:\nGo",
    )
    .unwrap();
    let child =
        model(
            "t-child",
            |k, _| if k % 2 == 0 { Ok(calls(&[("l1", "lookup", "{}")])) } else { Ok(answer("child found 42")) },
        );
    let parent = model("t-parent", |k, _| {
        if k == 0 {
            Ok(calls(&[("r1", "research", r#"{"topic": "answers"}"#)]))
        } else {
            Ok(answer("done"))
        }
    });
    let steering = Steering::new();
    steering.send("parent only").unwrap();
    let options = TurnOptions::new().steering(steering).tool("lookup", sync_tool(|_| Ok(json!("42"))));
    let out: String = prompty::turn(dir.join("parent.prompty").as_path(), &json!({}), options).unwrap();
    assert_eq!(out, "done");
    assert_eq!(child.calls.load(Ordering::SeqCst), 2, "the child ran its own two-iteration loop");
    let child_saw = &child.seen.lock().unwrap()[0];
    assert!(child_saw.iter().all(|m| m.text() != "parent only"), "steering never reaches a child");
    let tool = parent.seen.lock().unwrap()[1].iter().find(|m| m.role == Role::Tool).unwrap().text();
    assert_eq!(tool, "child found 42");

    // A prompt that calls itself agentically stops at the depth bound, as a result the model reads.
    std::fs::write(
        dir.join("recursive.prompty"),
        "---\nmodel: {id: m, provider: t-rec}\ninputs: [q]\ntools:\n  - {name: again, kind: prompty, path: recursive.prompty, mode: agentic}\n---\nuser:\n{{q}}",
    )
    .unwrap();
    let rec = model("t-rec", |_, msgs| match msgs.last() {
        Some(m) if m.role == Role::Tool => Ok(answer(&m.text())),
        _ => Ok(calls(&[("a1", "again", r#"{"q": "deeper"}"#)])),
    });
    let out: String =
        prompty::turn(dir.join("recursive.prompty").as_path(), &json!({"q": "start"}), TurnOptions::new()).unwrap();
    assert!(out.contains("nest at most 4 deep"), "{out}");
    assert_eq!(rec.calls.load(Ordering::SeqCst), 2 * (prompty::MAX_AGENT_DEPTH + 1));
}

#[test]
fn a_registered_tool_the_prompt_does_not_declare_is_refused_and_never_runs() {
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    prompty::register_tool("t_refused_admin", sync_tool(move |_| Ok(json!(r.fetch_add(1, Ordering::SeqCst)))));
    let m = model(
        "t-refused",
        |k, _| if k == 0 { Ok(calls(&[("c1", "t_refused_admin", "{}")])) } else { Ok(answer("ok")) },
    );
    let (options, events) = TurnOptions::new().record_events();
    let out = prompty::run_turn(&agent("t-refused", &["get_weather"]), user("go"), &json!({}), options).unwrap();
    assert_eq!(out.result, json!("ok"), "the loop goes on");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "never run");
    let tool = m.seen.lock().unwrap()[1].iter().find(|m| m.role == Role::Tool).unwrap().text();
    assert!(tool.starts_with("Error: Tool 't_refused_admin' is not available to this prompt"), "{tool}");
    assert!(events
        .events()
        .iter()
        .any(|e| matches!(e, AgentEvent::Error { tool: Some(t), .. } if t == "t_refused_admin")));
    // Handed to the call, the same function runs.
    let options = TurnOptions::new().tool("t_refused_admin", sync_tool(|_| Ok(json!("handed"))));
    let m = model(
        "t-refused-2",
        |k, _| if k == 0 { Ok(calls(&[("c1", "t_refused_admin", "{}")])) } else { Ok(answer("ok")) },
    );
    prompty::run_turn(&agent("t-refused-2", &[]), user("go"), &json!({}), options).unwrap();
    assert_eq!(m.seen.lock().unwrap()[1].iter().find(|m| m.role == Role::Tool).unwrap().text(), "handed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_among_parallel_calls_is_that_calls_result_only() {
    let m = model("t-par-panic", |k, _| match k {
        0 => Ok(calls(&[("c1", "ok_tool", "{}"), ("c2", "panics", "{}"), ("c3", "ok_tool", "{}")])),
        _ => Ok(answer("done")),
    });
    let options = TurnOptions::new()
        .parallel_tool_calls(true)
        .tool("ok_tool", sync_tool(|_| Ok(json!("fine"))))
        .tool("panics", prompty::tool_fn(|_| async { panic!("parallel handler bug") }));
    let a = agent("t-par-panic", &["ok_tool", "panics"]);
    let inputs = json!({});
    let out = prompty::run_turn_async(&a, user("go"), &inputs, options).await.unwrap();
    assert_eq!(out.result, json!("done"));
    let texts: Vec<String> =
        m.seen.lock().unwrap()[1].iter().filter(|m| m.role == Role::Tool).map(Message::text).collect();
    assert_eq!(texts, ["fine", "Error: Tool 'panics' failed: panicked: parallel handler bug", "fine"]);
}

#[test]
fn a_response_asking_for_too_many_tool_calls_ends_the_turn_before_any_runs() {
    let many: Vec<(String, &str, &str)> = (0..5).map(|i| (format!("c{i}"), "a", "{}")).collect();
    let refs: Vec<(&str, &str, &str)> = many.iter().map(|(id, n, a)| (id.as_str(), *n, *a)).collect();
    let response = calls(&refs);
    model("t-too-many", move |_, _| Ok(response.clone()));
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    let options =
        TurnOptions::new().max_tool_calls(4).tool("a", sync_tool(move |_| Ok(json!(r.fetch_add(1, Ordering::SeqCst)))));
    let f = failure(prompty::run_turn(&agent("t-too-many", &["a"]), user("go"), &json!({}), options).unwrap_err());
    assert!(f.to_string().contains("5 tool calls") && f.to_string().contains("allows 4"), "{f}");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn a_huge_tool_result_is_cut_before_it_reaches_the_model() {
    let m = model("t-huge", |k, _| if k == 0 { Ok(calls(&[("c1", "big", "{}")])) } else { Ok(answer("ok")) });
    let options =
        TurnOptions::new().max_tool_result_bytes(1000).tool("big", sync_tool(|_| Ok(json!("x".repeat(5_000_000)))));
    prompty::run_turn(&agent("t-huge", &["big"]), user("go"), &json!({}), options).unwrap();
    let tool = m.seen.lock().unwrap()[1].iter().find(|m| m.role == Role::Tool).unwrap().text();
    assert!(tool.len() < 1100, "{}", tool.len());
    assert!(tool.ends_with("[cut: 5000000 bytes, limit 1000]"), "{}", &tool[tool.len() - 40..]);
}

// Durable turns: `TurnOptions::durable` and `resume_turn`.

use prompty::engine::store::{Intercepted, Interception};
use prompty::engine::{Commit, Durability, EngineEvent, EventKind, MemoryStore};
use std::sync::atomic::AtomicBool;

/// A store that keeps what it is given as a store on disk does (each commit written as JSON and
/// read back) and refuses the first commit holding an event `interrupt` picks: the turn stops
/// there as a process that died would, with everything committed before it kept.
struct Interrupting {
    store: Arc<dyn Durability>,
    fired: Arc<AtomicBool>,
}

impl Interrupting {
    fn new(interrupt: impl Fn(&EngineEvent) -> bool + Send + Sync + 'static) -> Interrupting {
        let fired = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&fired);
        let store = Intercepted::new(Arc::new(MemoryStore::new()), move |commit: &Commit| {
            if !seen.load(Ordering::SeqCst) && commit.events.iter().any(&interrupt) {
                seen.store(true, Ordering::SeqCst);
                let message = "the process stopped".to_owned();
                return Interception::Refuse(Error::Durability { store: "interrupting memory".into(), message });
            }
            Interception::Replace(Box::new(Commit {
                session_id: commit.session_id.clone(),
                events: through_json(&commit.events),
                checkpoint: commit.checkpoint.as_ref().map(through_json),
                owner: commit.owner.clone(),
            }))
        });
        Interrupting { store: Arc::new(store), fired }
    }

    fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

fn through_json<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
}

/// An event of a tool named `tool`.
fn of_tool(kind: EventKind, tool: &'static str) -> impl Fn(&EngineEvent) -> bool + Send + Sync {
    move |e| e.kind == kind && e.payload["toolName"] == tool
}

/// A model that asks for `lookup` and `book` (with a sentence beside the calls), then answers.
fn booking_model(key: &str) -> Arc<Scripted> {
    model(key, |k, msgs| match k {
        0 => {
            let mut r = calls(&[("c1", "lookup", r#"{"city": "Oslo"}"#), ("c2", "book", r#"{"city": "Oslo"}"#)]);
            r["choices"][0]["message"]["content"] = json!("Let me look that up.");
            Ok(r)
        }
        _ => {
            let results: Vec<String> = msgs.iter().filter(|m| m.role == Role::Tool).map(Message::text).collect();
            Ok(answer(&format!("done: {}", results.join(", "))))
        }
    })
}

/// Counting tools `lookup` and `book` for the turn's options.
fn booking_tools(lookups: &Arc<AtomicUsize>, bookings: &Arc<AtomicUsize>) -> TurnOptions {
    let (l, b) = (Arc::clone(lookups), Arc::clone(bookings));
    TurnOptions::new()
        .tool(
            "lookup",
            sync_tool(move |a| Ok(json!(format!("{} is open #{}", a["city"], l.fetch_add(1, Ordering::SeqCst))))),
        )
        .tool("book", sync_tool(move |_| Ok(json!(format!("booking #{}", b.fetch_add(1, Ordering::SeqCst))))))
}

fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

#[test]
fn a_durable_turn_resumed_after_an_interruption_repeats_no_committed_model_call_or_tool() {
    // Interrupted after `lookup`'s result was committed, before `book` began.
    let store = Interrupting::new(of_tool(EventKind::ToolExecutionStarted, "book"));
    let m = booking_model("t-durable");
    let a = agent("t-durable", &["lookup", "book"]);
    let (lookups, bookings) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let options = || booking_tools(&lookups, &bookings).durable(store.store.clone(), "session-1");
    let err = prompty::run_turn(&a, user("Book Oslo"), &json!({}), options()).unwrap_err();
    assert!(matches!(&err, Error::Durability { message, .. } if message == "the process stopped"), "{err}");
    assert!(store.fired());
    assert_eq!(
        (m.calls.load(Ordering::SeqCst), lookups.load(Ordering::SeqCst), bookings.load(Ordering::SeqCst)),
        (1, 1, 0)
    );

    // Resumed (new ports, the checkpoint read back from JSON): the committed response is not
    // requested again and `lookup` does not run again; `book` runs, then the model answers.
    let (options, events) = options().record_events();
    let out = prompty::resume_turn(&a, "session-1", &json!({}), options).unwrap();
    assert_eq!(out.result, json!("done: \"Oslo\" is open #0, booking #0"));
    assert_eq!(
        (m.calls.load(Ordering::SeqCst), lookups.load(Ordering::SeqCst), bookings.load(Ordering::SeqCst)),
        (2, 1, 1)
    );
    assert_eq!(out.iterations, 2);
    assert_eq!(
        roles(&out.messages),
        [Role::System, Role::User, Role::Assistant, Role::Tool, Role::Tool, Role::Assistant]
    );
    // The provider formatted the round from the raw response kept in the checkpoint: the text it
    // wrote beside its calls is there.
    assert_eq!(out.messages[2].text(), "Let me look that up.");
    assert_eq!(out.messages[2].tool_calls.len(), 2);
    assert_eq!(m.seen.lock().unwrap()[1], out.messages[..5]);
    assert_eq!(events.kinds(), ["tool_call_start", "tool_result", "messages_updated", "done"]);
    assert!(
        matches!(&events.events()[2], AgentEvent::MessagesUpdated { messages } if messages[..] == out.messages[..5])
    );

    // The same turn uninterrupted ends with the same conversation.
    booking_model("t-durable-whole");
    let whole = agent("t-durable-whole", &["lookup", "book"]);
    let (l2, b2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let uninterrupted = prompty::run_turn(&whole, user("Book Oslo"), &json!({}), booking_tools(&l2, &b2)).unwrap();
    assert_eq!(uninterrupted.messages, out.messages);

    // The journal: one session, its turn committed, resumed once.
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let sessions = rt.block_on(store.store.sessions()).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].status, Some(prompty::engine::TurnStatus::Success));
    let journal = rt.block_on(store.store.events("session-1", 0)).unwrap();
    let resumed = journal.iter().filter(|e| e.kind == EventKind::TurnStarted && e.payload["resumed"] == true).count();
    assert_eq!(resumed, 1);
    // Resuming a turn that has ended gives it back as it ended, calling nothing.
    let again = prompty::resume_turn(
        &a,
        "session-1",
        &json!({}),
        booking_tools(&lookups, &bookings).durable(store.store.clone(), "session-1"),
    )
    .unwrap();
    assert_eq!((again.result, again.messages), (out.result, out.messages));
    assert_eq!((m.calls.load(Ordering::SeqCst), bookings.load(Ordering::SeqCst)), (2, 1));
}

#[test]
fn a_committed_answer_is_committed_on_resume_without_calling_the_model() {
    let store = Interrupting::new(|e| e.kind == EventKind::TurnCommitted);
    let m = model("t-durable-answer", |_, _| Ok(answer("forty-two")));
    let a = agent("t-durable-answer", &[]);
    let options = || TurnOptions::new().durable(store.store.clone(), "session-2").turn_id("turn-7");
    assert!(matches!(prompty::run_turn(&a, user("?"), &json!({}), options()), Err(Error::Durability { .. })));
    let out = prompty::resume_turn(&a, "session-2", &json!({}), options()).unwrap();
    assert_eq!((out.result, out.iterations), (json!("forty-two"), 1));
    assert_eq!(m.calls.load(Ordering::SeqCst), 1, "the answer was committed: the model is not called again");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let journal = rt.block_on(store.store.events("session-2", 0)).unwrap();
    assert!(journal.iter().all(|e| e.turn_id == "turn-7"));
}

#[test]
fn a_tool_interrupted_in_flight_needs_reconciliation_unless_it_is_idempotent() {
    // `book` ran and the process stopped before its result was committed.
    let in_flight = || Interrupting::new(of_tool(EventKind::ToolExecutionCompleted, "book"));
    let store = in_flight();
    let m = booking_model("t-reconcile");
    let a = agent("t-reconcile", &["lookup", "book"]);
    let (lookups, bookings) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let options = |store: &Interrupting| booking_tools(&lookups, &bookings).durable(store.store.clone(), "session-3");
    assert!(matches!(prompty::run_turn(&a, user("Book"), &json!({}), options(&store)), Err(Error::Durability { .. })));
    assert_eq!(bookings.load(Ordering::SeqCst), 1);
    let f = failure(prompty::resume_turn(&a, "session-3", &json!({}), options(&store)).unwrap_err());
    assert!(
        matches!(&f.stop, TurnStop::ReconciliationRequired { request_id, name } if request_id == "c2" && name == "book"),
        "{f}"
    );
    assert!(f.to_string().contains("the tool call c2 (book)"), "{f}");
    assert_eq!((m.calls.load(Ordering::SeqCst), bookings.load(Ordering::SeqCst)), (1, 1), "nothing ran again");
    assert_eq!(roles(&f.messages), [Role::System, Role::User]);
    assert_eq!(f.iterations, 1);

    // Declared idempotent for this turn: the interrupted call runs again.
    let store = in_flight();
    let m = booking_model("t-reconcile-idem");
    let a = agent("t-reconcile-idem", &["lookup", "book"]);
    bookings.store(0, Ordering::SeqCst);
    assert!(prompty::run_turn(&a, user("Book"), &json!({}), options(&store)).is_err());
    let out = prompty::resume_turn(&a, "session-3", &json!({}), options(&store).idempotent("book")).unwrap();
    assert_eq!(out.result, json!("done: \"Oslo\" is open #1, booking #1"));
    assert_eq!((m.calls.load(Ordering::SeqCst), bookings.load(Ordering::SeqCst)), (2, 2));
}

static TABLES_BOOKED: AtomicUsize = AtomicUsize::new(0);

/// Books a table (the restaurant's system keeps one booking per city and name).
#[prompty::tool(idempotent)]
fn book_table(city: String) -> String {
    format!("table #{} in {city}", TABLES_BOOKED.fetch_add(1, Ordering::SeqCst))
}

#[test]
fn an_idempotent_tool_fn_is_run_again_after_an_interruption_in_flight() {
    let store = Interrupting::new(of_tool(EventKind::ToolExecutionCompleted, "book_table"));
    let m = model("t-idem-fn", |k, msgs| match k {
        0 => Ok(calls(&[("c1", "book_table", r#"{"city": "Rome"}"#)])),
        _ => Ok(answer(&msgs.last().unwrap().text())),
    });
    let a = agent("t-idem-fn", &["book_table"]);
    let options = || TurnOptions::new().tool("book_table", book_table {}).durable(store.store.clone(), "session-4");
    assert!(prompty::run_turn(&a, user("Book"), &json!({}), options()).is_err());
    assert_eq!(TABLES_BOOKED.load(Ordering::SeqCst), 1);
    let out = prompty::resume_turn(&a, "session-4", &json!({}), options()).unwrap();
    assert_eq!(out.result, json!("table #1 in Rome"));
    assert_eq!((m.calls.load(Ordering::SeqCst), TABLES_BOOKED.load(Ordering::SeqCst)), (2, 2));
}

#[test]
fn resuming_needs_the_store_and_a_recorded_session() {
    model("t-resume-bad", |_, _| Ok(answer("x")));
    let a = agent("t-resume-bad", &[]);
    let err = prompty::resume_turn(&a, "s", &json!({}), TurnOptions::new()).unwrap_err();
    assert!(
        matches!(&err, Error::Config { message, .. } if message.contains("TurnOptions::durable(store, \"s\")")),
        "{err}"
    );
    let store: Arc<dyn Durability> = Arc::new(MemoryStore::new());
    let err =
        prompty::resume_turn(&a, "s", &json!({}), TurnOptions::new().durable(store.clone(), "other")).unwrap_err();
    assert!(matches!(&err, Error::Config { message, .. } if message.contains("session other")), "{err}");
    let err = prompty::resume_turn(&a, "s", &json!({}), TurnOptions::new().durable(store, "s")).unwrap_err();
    assert!(
        matches!(&err, Error::Durability { message, .. } if message.contains("no turn of session s is recorded")),
        "{err}"
    );
}
