//! The `replay` stage (`TurnConformance.replay`): a scripted turn run by `prompty::engine`, its
//! journal written to a file as JSON lines, read back, projected onto the specification's replay
//! records and normalized (digest §2.10). The scenario is keyed by the vector's name:
//! - `no_tool`: the model answers `{"text": "hello <inputs.name>"}`;
//! - `tool_success`, `max_iterations`: round 0 asks for `add` with `{a: 2, b: 3}`, round 1 answers
//!   with its result;
//! - `tool_failure`: the same with `fail`, a tool that raises (a failed result of kind `exception`);
//! - `permission_denied`: the same as `tool_success`, every request denied.
//!
//! The tool request ids come from a counter of their own (`exec-1`, ...), the engine's from
//! sequential ids; the clock is the vector's.

use crate::compare::Check;
use prompty::engine::replay::{project, read_journal, JournalWriter};
use prompty::engine::{
    DenyAll, FixedClock, IdGenerator, MemoryStore, ModelResponse, ScriptedModel, SequentialIds, ToolContext,
    ToolOutput, ToolPort, ToolRequest, TurnEngine, TurnRequest,
};
use prompty::{BoxFuture, Message, Role, TurnStop};
use serde_json::{json, Value};
use std::sync::Arc;

/// `add` sums `a` and `b`; `fail` raises (its failure is the result the model reads).
struct Tools;

impl ToolPort for Tools {
    fn check(&self, requests: &[ToolRequest]) -> Result<(), TurnStop> {
        match requests.iter().find(|r| r.name != "add" && r.name != "fail") {
            Some(r) => Err(TurnStop::UnknownTool { name: r.name.clone() }),
            None => Ok(()),
        }
    }

    fn execute<'a>(
        &'a self,
        request: &'a ToolRequest,
        _: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            Ok(match request.name.as_str() {
                "add" => {
                    let arg = |k: &str| request.arguments[k].as_i64().unwrap_or_default();
                    ToolOutput::success(&request.id, &request.name, json!(arg("a") + arg("b")))
                }
                _ => ToolOutput::failed(&request.id, &request.name, "exception", "the tool `fail` raised"),
            })
        })
    }
}

pub fn run(vector: &Value) -> Check {
    let expected = vector["expected"].clone();
    match journal(vector) {
        Ok(got) => Check::new(expected, got),
        Err(e) => Check::new(expected, json!({"error": e})),
    }
}

/// The normalized records of the vector's scenario, read back from its journal file.
fn journal(vector: &Value) -> Result<Value, String> {
    let name = vector["name"].as_str().unwrap_or_default();
    let input = &vector["input"];
    let session = input["sessionId"].as_str().unwrap_or("session-1");
    let turn = input["turnId"].as_str().unwrap_or("turn-1");
    let requests = SequentialIds::default();
    let tool = |tool: &str| ToolRequest::new(requests.next("exec"), tool, json!({"a": 2, "b": 3}));
    let steps = match name {
        "no_tool" => {
            let who = input["inputs"]["name"].as_str().unwrap_or_default();
            vec![ModelResponse::output(json!({"text": format!("hello {who}")}))]
        }
        "tool_success" | "max_iterations" => {
            vec![ModelResponse::tools(vec![tool("add")]), ModelResponse::output(json!(5))]
        }
        "permission_denied" => vec![
            ModelResponse::tools(vec![tool("add")]),
            ModelResponse::output(json!("Permission denied for tool 'add'")),
        ],
        "tool_failure" => {
            vec![ModelResponse::tools(vec![tool("fail")]), ModelResponse::output(json!("the tool `fail` raised"))]
        }
        other => return Err(format!("no scenario is named {other}")),
    };
    let path = std::env::temp_dir().join(format!("prompty-conformance-replay-{}-{name}.jsonl", std::process::id()));
    let writer = JournalWriter::create(&path).map_err(|e| e.to_string())?;
    let clock = input["clock"].as_str().unwrap_or_default().to_owned();
    let mut engine = TurnEngine::new(ScriptedModel::new(steps))
        .tools(Tools)
        .store(Arc::new(MemoryStore::new()))
        .clock(FixedClock(clock))
        .ids(SequentialIds::default())
        .observe(writer.observer());
    if name == "permission_denied" {
        engine = engine.permissions(DenyAll);
    }
    if let Some(max) = input["maxIterations"].as_u64() {
        engine = engine.max_iterations(u32::try_from(max).unwrap_or(u32::MAX));
    }
    let request = TurnRequest::new(session, turn, vec![Message::new(Role::User, "Add 2 and 3.")]);
    let runtime = tokio::runtime::Builder::new_current_thread().build().map_err(|e| e.to_string())?;
    let outcome = runtime.block_on(engine.run(request)).map(|_| ()).and_then(|()| writer.finish().map(|_| ()));
    let events = outcome.and_then(|()| read_journal(&path));
    std::fs::remove_file(&path).ok();
    let records = project(&events.map_err(|e| e.to_string())?);
    Ok(json!(records.iter().map(ToString::to_string).collect::<Vec<_>>()))
}
