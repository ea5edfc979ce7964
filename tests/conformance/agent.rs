//! The `agent` stage (digest §2.8): the agent loop, run with `prompty::run_turn` through the real
//! OpenAI processor and the OpenAI tool-message format, against a scripted executor that answers
//! call *k* with the vector's `sequence[k].llm_response`.
//!
//! What the adapter builds from a vector's `input`:
//! - the agent: `tools` as declared, `model.provider` a key of this case's scripted executor;
//! - tool handlers for `tool_functions`: each returns the `tool_results` entry of the call it
//!   serves (found by name and arguments in the current scripted response); a function described
//!   as `raises ...` fails with that entry's text;
//! - `parent_inputs` as the turn's inputs (binding sources); `guardrails` as closures
//!   (`action: deny` with its reason; `deny_tools`); `parallel_tool_calls`; `context_budget`;
//! - `cancel.cancelled_at`: `before_iteration` cancels before the turn, `before_iteration_N` when
//!   iteration N-1 has appended its tool round (`messages_updated`), `after_tool_K` when the K-th
//!   tool (0-based) has its result;
//! - `steering.messages`: sent by the scripted model while it serves the call before
//!   `inject_before_iteration`, so the loop drains them at the top of that iteration.
//!
//! What it observes, compared by subset projection (digest §2.0): `result`, `iterations`,
//! `message_sequence` (`{role, content: text, metadata?}`), `assistant_tool_calls_message`,
//! `tool_result_message`, `events`
//! (`{type, data}` with the vectors' payloads), `trimmed_messages` (what the model received on its
//! first call, `null` when untrimmed), `summary_contains`, `denied_tools`, `tool_execution_order`,
//! `tools_executed`, errors (`CancelledError`, `GuardrailError` + `error_reason`, `Tool not
//! registered: <name>` + `ValueError`, the loop's message). Each step's `expected_tool_calls` is
//! checked against the OpenAI processor's reading of its response, `expected_execution_args`
//! against the arguments the handler received.
//!
//! Where the vectors disagree with themselves or with the spec, the adapter adjusts the comparison
//! under one of the rules below (the constants `COUNT`, `EVENT_TYPES`, `SUMMARY`, `WHOLE_FLOATS`,
//! `TOOL_BLOCKS`, `PARALLEL`) and reports each adjustment (an `ADJUSTED` line; the case counts as
//! adjusted, not as passed as is):
//! - `total_messages` and `messages_updated.message_count`: once a tool round has run, the vectors
//!   count one message more than the conversation holds (their own `message_sequence` lists one
//!   fewer: `single_tool_call` lists five messages and counts six; `cancellation_between_iterations`
//!   names four and counts five); so after a tool round the adapter counts the conversation's
//!   length plus one, in every such case (a vector counting otherwise fails), and every listed
//!   message is still compared;
//! - an `events` list that gives types only (`events_error_logged`) leaves out the leading `status`
//!   event that `events_basic_tool_loop` shows for the same flow (digest C11) and the `error` event
//!   spec §9.9 requires for a failing tool: those two kinds, and only those, are left out of the
//!   observed types before they are compared in order;
//! - a summary message of `trimmed_messages` is compared by its role, its place and its prefix
//!   `[Summary of earlier conversation] ` (digest C10): the vectors' text is written by a model,
//!   the spec prescribes none; `summary_contains` checks the runtime's text;
//! - tool-call arguments that the scripted response writes as whole floats (`72.0`) are accepted
//!   where the same vector expects the integer (`72`): `ToolCall.arguments` is the model's own
//!   JSON text (spec §8.7), which the vector contradicts;
//! - `tool_result_message` content is written as text blocks where the vector writes it so (digest
//!   C12: the same vectors write a tool message's content as a string in `message_sequence`);
//! - `rust_expected_error` (a canonical engine that rejects parallel tool calls) is not followed:
//!   parallel tool calls are optional (spec §13.6) and prompty runs them. `notes` are prose.

use crate::compare::{check, Adjustment, Check, Rule};
use prompty::providers::openai::{process_response, tool_messages, OpenAiProcessor};
use prompty::{
    Agent, AgentEvent, BoxFuture, CancellationToken, Error, Executor, Guardrails, Message, Result, Steering, ToolRound,
    TurnOptions, TurnStop, Verdict,
};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The summary prefix the runtime writes (spec §13.3 as the vectors show it).
const SUMMARY_PREFIX: &str = "[Summary of earlier conversation] ";

/// What a case records while it runs.
#[derive(Default)]
struct Log {
    /// Messages the model received, per call.
    received: Vec<Vec<Message>>,
    /// `(tool, arguments)` of each handler run, in order.
    executed: Vec<(String, Value)>,
    /// Tool call ids whose scripted result was handed out.
    served: Vec<String>,
    /// Tools the guardrail denied.
    denied: Vec<String>,
    /// Events, rendered with the vectors' payloads, each with whether a tool round had started.
    events: Vec<(Value, bool)>,
    /// Whether a tool call has started (the vectors then count one message more).
    tool_round: bool,
    /// Tool results seen.
    results: usize,
}

/// The scripted model of one case.
struct Script {
    steps: Vec<Value>,
    calls: AtomicUsize,
    log: Arc<Mutex<Log>>,
    steering: Vec<(usize, String)>,
    steer: Steering,
}

impl Executor for Script {
    fn execute_async<'a>(&'a self, _agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        let k = self.calls.fetch_add(1, Ordering::SeqCst);
        lock(&self.log).received.push(messages.to_vec());
        for (before, text) in &self.steering {
            if *before == k + 2 {
                let _ = self.steer.send(text.clone());
            }
        }
        let answer = self.steps.get(k).map(|s| s["llm_response"].clone()).ok_or_else(|| Error::Execution {
            message: format!("the vector scripts {} model responses; call {} has none", self.steps.len(), k + 1),
        });
        Box::pin(async move { answer })
    }

    fn format_tool_messages(&self, agent: &Agent, round: &ToolRound<'_>) -> Result<Vec<Message>> {
        tool_messages(agent, round)
    }
}

fn lock(log: &Mutex<Log>) -> std::sync::MutexGuard<'_, Log> {
    log.lock().unwrap_or_else(|e| e.into_inner())
}

/// `total_messages` and `message_count` one more than the conversation.
const COUNT: Rule = Rule {
    name: "count+1",
    why: "once a tool round has run, the vectors count one message more than the conversation holds, and \
          their own message_sequence lists one fewer (single_tool_call lists 5, counts 6)",
};
/// `status` and `error` events left out of a list of types.
const EVENT_TYPES: Rule = Rule {
    name: "event-types",
    why: "a list of event types only leaves out the leading status that events_basic_tool_loop shows for the \
          same flow (digest C11) and the error event spec §9.9 requires for a failing tool",
};
/// A summary compared by its prefix.
const SUMMARY: Rule = Rule {
    name: "summary-prefix",
    why: "the vector's summary text is written by a model and the spec prescribes none (digest C10); role, \
          place and prefix are compared, the runtime's text by summary_contains where the vector has it",
};
/// Whole floats accepted for integers in tool-call arguments.
const WHOLE_FLOATS: Rule = Rule {
    name: "whole-floats",
    why: "the vector's own scripted response sends the float, and ToolCall.arguments is the model's JSON text \
          (spec §8.7), so its expected_tool_calls contradict it",
};
/// Tool result content written as text blocks.
const TOOL_BLOCKS: Rule = Rule {
    name: "tool-blocks",
    why: "digest C12: the vectors write a tool message's content as text blocks in tool_result_message and as a \
          string in message_sequence",
};
/// `rust_expected_error` not followed.
const PARALLEL: Rule = Rule {
    name: "parallel",
    why: "parallel tool calls are optional (spec §13.6, digest §2.8) and prompty runs them; the key names what \
          turn-engine.md's Rust engine does",
};

/// Runs one agent vector.
pub fn run(vector: &Value) -> Check {
    let name = vector["name"].as_str().unwrap_or("case");
    let input = &vector["input"];
    let steps: Vec<Value> = vector["sequence"].as_array().cloned().unwrap_or_default();
    let mut adjustments = Vec::new();
    let mut expected = vector["expected"].clone();
    if let Some(e) = expected.as_object_mut() {
        e.remove("notes");
        if let Some(error) = e.remove("rust_expected_error") {
            adjustments.push(Adjustment { what: format!("rust_expected_error {error} not followed"), rule: &PARALLEL });
        }
    }

    let provider = format!("scripted-{name}");
    let agent = match Agent::from_value(json!({
        "name": name,
        "model": {"id": "scripted", "provider": provider},
        "tools": input["tools"],
    })) {
        Ok(agent) => agent,
        Err(e) => return Check::new(expected, json!({"agent": e.to_string()})),
    };
    let log = Arc::new(Mutex::new(Log::default()));
    let steer = Steering::new();
    let steering = input["steering"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| (m["inject_before_iteration"].as_u64().unwrap_or(0) as usize, text(&m["text"])))
        .collect();
    let script = Arc::new(Script {
        steps: steps.clone(),
        calls: AtomicUsize::new(0),
        log: Arc::clone(&log),
        steering,
        steer: steer.clone(),
    });
    prompty::register_executor(provider.clone(), SharedScript(Arc::clone(&script)));
    prompty::register_processor(provider, OpenAiProcessor);

    let cancel = CancellationToken::new();
    let mut options = TurnOptions::new()
        .llm_retries(0)
        .parallel_tool_calls(input["parallel_tool_calls"] == true)
        .cancel(cancel.clone())
        .steering(steer)
        .guardrails(guardrails(&input["guardrails"], &log))
        .on_event(sink(&input["cancel"]["cancelled_at"], cancel.clone(), Arc::clone(&script), Arc::clone(&log)));
    if let Some(budget) = input["context_budget"].as_u64() {
        options = options.context_budget(budget as usize);
    }
    for (tool, description) in input["tool_functions"].as_object().into_iter().flatten() {
        options = options.tool(tool.clone(), handler(tool, &text(description), &script, &log));
    }
    if input["cancel"]["cancelled_at"] == "before_iteration" {
        cancel.cancel();
    }

    let messages: Vec<Message> = match serde_json::from_value(input["messages"].clone()) {
        Ok(m) => m,
        Err(e) => return Check::new(expected, json!({"messages": e.to_string()})),
    };
    let inputs = if input["parent_inputs"].is_object() { input["parent_inputs"].clone() } else { json!({}) };
    let outcome = prompty::run_turn(&agent, messages.clone(), &inputs, options);

    let log = lock(&log);
    let blocks = expected["tool_result_message"]["content"].is_array();
    let mut got = match outcome {
        Ok(out) => {
            let assistant = out.messages.iter().find(|m| !m.tool_calls.is_empty()).map(render);
            let tool = out.messages.iter().find(|m| m.role == prompty::Role::Tool).map(|m| {
                let content = if blocks { json!([{"type": "text", "text": m.text()}]) } else { json!(m.text()) };
                json!({"role": "tool", "content": content, "metadata": m.metadata_json()})
            });
            if blocks && tool.is_some() {
                adjustments
                    .push(Adjustment { what: "tool_result_message.content as text blocks".into(), rule: &TOOL_BLOCKS });
            }
            json!({
                "result": out.result,
                "iterations": out.iterations,
                "total_messages": out.messages.len(),
                "message_sequence": out.messages.iter().map(render).collect::<Vec<_>>(),
                "assistant_tool_calls_message": assistant,
                "tool_result_message": tool,
            })
        }
        Err(Error::Turn(f)) => {
            let mut o = json!({"iterations": f.iterations, "total_messages": f.messages.len()});
            match &f.stop {
                TurnStop::Cancelled { .. } => o["error"] = json!("CancelledError"),
                TurnStop::Guardrail { reason, .. } => {
                    o["error"] = json!("GuardrailError");
                    o["error_reason"] = json!(reason);
                }
                TurnStop::UnknownTool { name } => {
                    o["error"] = json!(format!("Tool not registered: {name}"));
                    o["error_type"] = json!("ValueError");
                }
                other => o["error"] = json!(other.to_string()),
            }
            o
        }
        Err(other) => json!({"error": other.to_string()}),
    };
    count_after_tool_round(&expected, &mut got, log.tool_round, &mut adjustments);
    let observed = got.as_object_mut().expect("an object");
    observed.insert("events".into(), events_as_expected(&log.events, &expected["events"], &mut adjustments));
    observed.insert("denied_tools".into(), json!(log.denied));
    observed.insert("tool_execution_order".into(), json!(log.executed.iter().map(|(n, _)| n).collect::<Vec<_>>()));
    observed.insert("tools_executed".into(), json!(log.executed.len()));
    let first = log.received.first();
    let trimmed = first.filter(|r| **r != messages).map(|r| {
        let rendered: Vec<Value> = r.iter().map(|m| json!({"role": m.role.as_str(), "content": m.text()})).collect();
        summary_by_prefix(rendered, &expected["trimmed_messages"], &mut adjustments)
    });
    observed.insert("trimmed_messages".into(), json!(trimmed));
    if let Some(want) = expected["summary_contains"].as_str() {
        let summary = first.into_iter().flatten().map(Message::text).find(|t| t.starts_with(SUMMARY_PREFIX));
        let found = summary.as_deref().is_some_and(|s| s.contains(want));
        observed.insert("summary_contains".into(), json!(if found { Some(want.to_owned()) } else { summary }));
    }

    // Per step: the processor's reading of the scripted response, and the arguments handlers got.
    let (want_calls, got_calls) = step_tool_calls(&agent, &steps, &mut adjustments);
    expected["sequence_tool_calls"] = want_calls;
    observed.insert("sequence_tool_calls".into(), got_calls);
    let want_args: Map<String, Value> = steps
        .iter()
        .filter_map(|s| s["expected_execution_args"].as_object())
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let got_args: Map<String, Value> = want_args
        .keys()
        .map(|tool| {
            (tool.clone(), log.executed.iter().rev().find(|(n, _)| n == tool).map_or(Value::Null, |(_, a)| a.clone()))
        })
        .collect();
    expected["sequence_execution_args"] = Value::Object(want_args);
    observed.insert("sequence_execution_args".into(), Value::Object(got_args));
    drop(log);
    let mut outcome = check(&expected, &got);
    outcome.adjustments = adjustments;
    outcome
}

/// Counts one message more than the conversation holds once a tool round has run, as the vectors
/// do (see [`COUNT`]), and says so: applied to every such case, so that a vector counting
/// otherwise, or a runtime adding a message, fails.
fn count_after_tool_round(expected: &Value, got: &mut Value, tool_round: bool, adjustments: &mut Vec<Adjustment>) {
    let (Some(want), Some(have)) = (expected["total_messages"].as_u64(), got["total_messages"].as_u64()) else {
        return;
    };
    if tool_round {
        got["total_messages"] = json!(have + 1);
        let listed = expected["message_sequence"]
            .as_array()
            .map(|l| format!(", and its message_sequence lists {}", l.len()))
            .unwrap_or_default();
        adjustments.push(Adjustment {
            what: format!("total_messages: the conversation holds {have} messages, counted as {}; the vector counts {want}{listed}", have + 1),
            rule: &COUNT,
        });
    }
}

/// The executor registered for a case (the registry wants an owned value).
struct SharedScript(Arc<Script>);

impl Executor for SharedScript {
    fn execute_async<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        self.0.execute_async(agent, messages)
    }

    fn format_tool_messages(&self, agent: &Agent, round: &ToolRound<'_>) -> Result<Vec<Message>> {
        self.0.format_tool_messages(agent, round)
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// A message as the vectors write it: `{role, content: text, metadata?}` (the metadata as the
/// message serializes it, typed tool calls and call id included).
fn render(m: &Message) -> Value {
    let mut v = json!({"role": m.role.as_str(), "content": m.text()});
    if m.has_metadata() {
        v["metadata"] = json!(m.metadata_json());
    }
    v
}

/// The observed `trimmed_messages`, where a summary message that has the role, the place and the
/// prefix of the vector's summary takes the vector's text (see [`SUMMARY`]), and says so.
fn summary_by_prefix(mut got: Vec<Value>, want: &Value, adjustments: &mut Vec<Adjustment>) -> Vec<Value> {
    for (i, w) in want.as_array().into_iter().flatten().enumerate() {
        let Some(g) = got.get_mut(i) else { break };
        let (Some(want_text), Some(got_text)) = (w["content"].as_str(), g["content"].as_str()) else { continue };
        if want_text.starts_with(SUMMARY_PREFIX)
            && got_text.starts_with(SUMMARY_PREFIX)
            && g["role"] == w["role"]
            && got_text != want_text
        {
            adjustments.push(Adjustment {
                what: format!(
                    "trimmed_messages[{i}].content compared by its prefix: the runtime wrote {}, the vector {}",
                    json!(got_text),
                    json!(want_text)
                ),
                rule: &SUMMARY,
            });
            g["content"] = json!(want_text);
        }
    }
    got
}

/// The tool guardrail and the input/output guardrails of a vector.
fn guardrails(spec: &Value, log: &Arc<Mutex<Log>>) -> Guardrails {
    let mut g = Guardrails::new();
    let deny = |v: &Value| (v["action"] == "deny").then(|| text(&v["reason"]));
    if let Some(reason) = deny(&spec["input"]) {
        g = g.input(move |_| Verdict::deny(reason.clone()));
    }
    if let Some(reason) = deny(&spec["output"]) {
        g = g.output(move |_| Verdict::deny(reason.clone()));
    }
    let denied: Vec<String> = spec["tool"]["deny_tools"].as_array().into_iter().flatten().map(text).collect();
    if !denied.is_empty() {
        let reason = text(&spec["tool"]["reason"]);
        let log = Arc::clone(log);
        g = g.tool(move |call, _args| {
            if denied.contains(&call.name) {
                lock(&log).denied.push(call.name.clone());
                Verdict::deny(reason.clone())
            } else {
                Verdict::Allow
            }
        });
    }
    g
}

/// The handler of one `tool_functions` entry.
fn handler(tool: &str, description: &str, script: &Arc<Script>, log: &Arc<Mutex<Log>>) -> impl prompty::ToolFunction {
    let (tool, raises) = (tool.to_owned(), description.starts_with("raises"));
    let (script, log) = (Arc::clone(script), Arc::clone(log));
    prompty::tool_fn(move |args: Value| {
        let step = script.calls.load(Ordering::SeqCst).saturating_sub(1);
        let mut log_guard = lock(&log);
        log_guard.executed.push((tool.clone(), args.clone()));
        let served = log_guard.served.clone();
        let scripted = &script.steps.get(step).cloned().unwrap_or_default();
        let call = scripted["llm_response"]["choices"][0]["message"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| {
                let id = text(&c["id"]);
                let given: Value =
                    serde_json::from_str(c["function"]["arguments"].as_str().unwrap_or("{}")).unwrap_or_default();
                c["function"]["name"] == tool.as_str()
                    && !served.contains(&id)
                    && given.as_object().into_iter().flatten().all(|(k, v)| args.get(k) == Some(v))
            })
            .map(|c| text(&c["id"]));
        let result = call.as_ref().and_then(|id| {
            scripted["tool_results"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|r| r["tool_call_id"] == id.as_str())
                .map(|r| text(&r["result"]))
        });
        if let Some(id) = call {
            log_guard.served.push(id);
        }
        drop(log_guard);
        let name = tool.clone();
        async move {
            match result {
                Some(message) if raises => Err(Error::Tool { name, message }),
                Some(result) => Ok(Value::String(result)),
                None => Ok(Value::String(format!("<no scripted result for {name}({args})>"))),
            }
        }
    })
}

/// Records events with the vectors' payloads, and cancels where the vector says.
fn sink(
    at: &Value,
    cancel: CancellationToken,
    script: Arc<Script>,
    log: Arc<Mutex<Log>>,
) -> impl Fn(&AgentEvent) + Send + Sync + 'static {
    let before_iteration =
        at.as_str().and_then(|a| a.strip_prefix("before_iteration_")).and_then(|n| n.parse::<usize>().ok());
    let after_tool = at.as_str().and_then(|a| a.strip_prefix("after_tool_")).and_then(|n| n.parse::<usize>().ok());
    move |event| {
        let mut log = lock(&log);
        let rendered = match event {
            AgentEvent::Status { message } => json!({"type": "status", "data": {"message": message}}),
            AgentEvent::ToolCallStart { name, arguments, .. } => {
                log.tool_round = true;
                json!({"type": "tool_call_start", "data": {"name": name, "arguments": arguments}})
            }
            AgentEvent::ToolResult { name, result, .. } => {
                log.results += 1;
                if after_tool.is_some_and(|k| log.results == k + 1) {
                    cancel.cancel();
                }
                json!({"type": "tool_result", "data": {"name": name, "result": result}})
            }
            AgentEvent::MessagesUpdated { messages } => {
                if before_iteration.is_some_and(|n| script.calls.load(Ordering::SeqCst) + 1 == n) {
                    cancel.cancel();
                }
                json!({"type": "messages_updated", "data": {"message_count": messages.len()}})
            }
            AgentEvent::Done { response, .. } => json!({"type": "done", "data": {"response": response}}),
            AgentEvent::Cancelled { reason } => json!({"type": "cancelled", "data": {"reason": reason}}),
            other => serde_json::to_value(other).unwrap_or_default(),
        };
        let after_tool_round = log.tool_round;
        log.events.push((rendered, after_tool_round));
    }
}

/// The observed events, compared with the vector's list:
/// - a full list (`{type, data}`): a `messages_updated` after a tool round counts one message more
///   than the conversation holds (see [`COUNT`]);
/// - a list of types only: the observed `status` and `error` events are left out when the rest
///   then has exactly the listed types (see [`EVENT_TYPES`]).
///
/// Each adjustment is recorded.
fn events_as_expected(observed: &[(Value, bool)], expected: &Value, adjustments: &mut Vec<Adjustment>) -> Value {
    let mut events: Vec<Value> = observed.iter().map(|(e, _)| e.clone()).collect();
    let Some(want) = expected.as_array() else { return json!(events) };
    if want.iter().any(|e| e.get("data").is_some()) {
        let mut counts = Vec::new();
        for (i, (event, after_tool_round)) in observed.iter().enumerate() {
            match event["data"]["message_count"].as_u64() {
                Some(have) if *after_tool_round => {
                    events[i]["data"]["message_count"] = json!(have + 1);
                    counts.push(format!("events[{i}] {have} counted as {}", have + 1));
                }
                _ => {}
            }
        }
        if !counts.is_empty() {
            adjustments.push(Adjustment {
                what: format!("messages_updated.message_count: {}", counts.join(", ")),
                rule: &COUNT,
            });
        }
        return json!(events);
    }
    let left_out = |e: &Value| e["type"] == "status" || e["type"] == "error";
    let rest: Vec<Value> = events.iter().filter(|e| !left_out(e)).cloned().collect();
    let types = |l: &[Value]| l.iter().map(|e| e["type"].clone()).collect::<Vec<_>>();
    if rest.len() < events.len() && types(&rest) == types(want) {
        let dropped: Vec<String> = events.iter().filter(|e| left_out(e)).map(crate::compare::compact).collect();
        adjustments.push(Adjustment {
            what: format!("events: {} left out of the observed types", dropped.join(", ")),
            rule: &EVENT_TYPES,
        });
        events = rest;
    }
    json!(events)
}

/// `72.0` as `72`: the model sends `"value": 72.0` where the vector expects `72`
/// (`multi_turn_tool_calls`), so tool-call arguments are compared with whole floats as integers.
fn whole_numbers(v: Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(whole_numbers).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, whole_numbers(v))).collect()),
        other => other,
    }
}

/// Each step's expected tool calls, and what the OpenAI processor reads in its response (the
/// arguments parsed as JSON, as the vectors write them). Whole floats are read as the integers the
/// vector expects where that alone makes them equal (see [`WHOLE_FLOATS`]).
fn step_tool_calls(agent: &Agent, steps: &[Value], adjustments: &mut Vec<Adjustment>) -> (Value, Value) {
    let (mut want, mut got) = (Vec::new(), Vec::new());
    for (k, step) in steps.iter().enumerate() {
        let wanted = step["expected_tool_calls"].clone();
        let mut calls = match process_response(agent, step["llm_response"].clone()) {
            Ok(prompty::Processed::ToolCalls(calls)) => Value::Array(
                calls
                    .into_iter()
                    .map(|c| {
                        let args = serde_json::from_str::<Value>(&c.arguments).unwrap_or_default();
                        json!({"id": c.id, "name": c.name, "arguments": args})
                    })
                    .collect(),
            ),
            Ok(_) => Value::Null,
            Err(e) => json!({"error": e.to_string()}),
        };
        let whole = whole_numbers(calls.clone());
        if calls != wanted && whole == wanted {
            adjustments.push(Adjustment {
                what: format!(
                    "sequence[{k}] tool-call arguments {} read as {}",
                    compact_args(&calls),
                    compact_args(&whole)
                ),
                rule: &WHOLE_FLOATS,
            });
            calls = whole;
        }
        want.push(wanted);
        got.push(calls);
    }
    (json!(want), json!(got))
}

/// The arguments of a list of tool calls, as compact JSON.
fn compact_args(calls: &Value) -> String {
    let args: Vec<Value> = calls.as_array().into_iter().flatten().map(|c| c["arguments"].clone()).collect();
    crate::compare::compact(&json!(args))
}
