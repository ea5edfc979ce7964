//! The `turn` stage (`TurnConformance.runTurn`): the turn engine with scripted ports. Each vector
//! gives the conversation, the model's responses in order, the tools' outputs and the tools to
//! deny; the adapter runs `prompty::engine::TurnEngine` with a fixed clock and sequential ids and
//! reports the fields the vector expects.

use crate::compare::Check;
use prompty::engine::{
    ContextState, DelegatedStateReference, FixedClock, MemoryStore, ModelResponse, PermissionDecision, PermissionPort,
    Portability, ScriptedModel, SequentialIds, ToolContext, ToolOutput, ToolPort, ToolRequest, TurnEngine, TurnRequest,
};
use prompty::{BoxFuture, CancellationToken, Message, TurnStop};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};

/// Tools that answer with the vector's `toolOutputs` (by call id), or echo their arguments.
struct VectorTools(Map<String, Value>);

impl ToolPort for VectorTools {
    fn execute<'a>(
        &'a self,
        request: &'a ToolRequest,
        _: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        let output = self.0.get(&request.id).cloned().unwrap_or_else(|| request.arguments.clone());
        Box::pin(async move { Ok(ToolOutput::success(&request.id, &request.name, output)) })
    }
}

/// Denies the tools the vector names.
struct VectorPermissions(Vec<String>);

impl PermissionPort for VectorPermissions {
    fn resolve<'a>(&'a self, request: &'a ToolRequest) -> BoxFuture<'a, PermissionDecision> {
        let denied = self.0.contains(&request.name);
        Box::pin(async move {
            if denied {
                PermissionDecision::deny(format!("Permission denied for tool '{}'", request.name))
            } else {
                PermissionDecision::allow()
            }
        })
    }
}

fn response(step: &Value) -> ModelResponse {
    let mut response = match step.get("output") {
        Some(output) => ModelResponse::output(output.clone()),
        None => ModelResponse::default(),
    };
    if let Some(text) = step["assistant"].as_str() {
        let mut m = Message::new(prompty::Role::Assistant, text);
        m.tool_calls = step["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let args = t["arguments"].to_string();
                prompty::ToolCall::new(t["id"].as_str().unwrap_or(""), t["name"].as_str().unwrap_or(""), args)
            })
            .collect();
        response.assistant_messages.push(m);
    }
    response.tool_requests = step["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            ToolRequest::new(t["id"].as_str().unwrap_or(""), t["name"].as_str().unwrap_or(""), t["arguments"].clone())
        })
        .collect();
    if let Some(portability) = step.get("nextPortability") {
        let portability: Portability = serde_json::from_value(portability.clone()).unwrap_or_default();
        let delegated_state: Vec<DelegatedStateReference> =
            serde_json::from_value(step["delegatedState"].clone()).unwrap_or_default();
        response.next_context_state = Some(ContextState { portability, delegated_state });
    }
    response
}

pub fn run(vector: &Value) -> Check {
    let input = &vector["input"];
    let expected = vector["expected"].clone();
    let messages: Vec<Message> = serde_json::from_value(input["messages"].clone()).unwrap_or_default();
    let steps: Vec<ModelResponse> = input["model"].as_array().into_iter().flatten().map(response).collect();
    let outputs = input["toolOutputs"].as_object().cloned().unwrap_or_default();
    let deny: Vec<String> = serde_json::from_value(input["denyTools"].clone()).unwrap_or_default();
    let kinds = Arc::new(Mutex::new(Vec::<(u64, String)>::new()));
    let log = Arc::clone(&kinds);
    let engine = TurnEngine::new(ScriptedModel::new(steps))
        .tools(VectorTools(outputs))
        .permissions(VectorPermissions(deny))
        .store(Arc::new(MemoryStore::new()))
        .clock(FixedClock("2026-07-21T00:00:00Z".into()))
        .ids(SequentialIds::default())
        .observe(move |e| log.lock().unwrap().push((e.sequence, e.kind.as_str().to_owned())));
    let cancel = CancellationToken::new();
    if input["cancelBeforeRun"].as_bool() == Some(true) {
        cancel.cancel();
    }
    let request = TurnRequest::new("session-1", "turn-1", messages).cancel(cancel);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let result = match runtime.block_on(engine.run(request)) {
        Ok(result) => result,
        Err(e) => return Check::new(expected, json!({"error": e.to_string()})),
    };
    let events = kinds.lock().unwrap().clone();
    let contiguous = events.iter().enumerate().all(|(i, (seq, _))| *seq == i as u64 + 1);
    let mut got = Map::new();
    for key in expected.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
        let value = match key.as_str() {
            "status" => json!(result.commit.status),
            "output" => result.commit.output.clone().unwrap_or(Value::Null),
            "iterations" => json!(result.commit.iterations),
            "snapshots" => json!(result.snapshots.len()),
            "snapshotStablePrefixes" => {
                json!(result.snapshots.iter().map(|s| s.stable_prefix_messages).collect::<Vec<_>>())
            }
            "snapshotPortability" => {
                json!(result.snapshots.iter().map(|s| s.context_state.portability).collect::<Vec<_>>())
            }
            "toolResults" => json!(result.tool_results.len()),
            "toolResultOrder" => json!(result.tool_results.iter().map(|r| &r.request_id).collect::<Vec<_>>()),
            "commitPortability" => json!(result.commit.context_state.portability),
            "delegatedState" => json!(result.commit.context_state.delegated_state.len()),
            "eventKinds" if contiguous => json!(events.iter().map(|(_, k)| k).collect::<Vec<_>>()),
            "eventKinds" => json!({"not contiguous": events}),
            _ => json!({"unknown expected key": key}),
        };
        got.insert(key, value);
    }
    Check::new(expected, Value::Object(got))
}
