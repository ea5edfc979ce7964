//! Durable turns on the command line: `prompty run --session ID`, `prompty resume ID` and
//! `prompty sessions`. A session's turns live in a store (`--store`, `PROMPTY_STORE`, else one
//! SQLite file in the user's state folder); `run` keeps the prompt's path, inputs and model choice
//! with the turn, so `resume` needs only the session's id.

use crate::call;
use crate::exit::{CliError, CliResult, Exit};
use crate::{embedded, ui, ResumeArgs, SessionsAction, SessionsArgs};
use prompty::engine::{Durability, EventKind, Phase, SessionInfo};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The store when neither `--store` nor `PROMPTY_STORE` names one:
/// `$XDG_STATE_HOME/prompty-rs/turns.db`, else `~/.local/state/prompty-rs/turns.db`.
pub fn default_location() -> String {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    format!("sqlite:{}", state.join("prompty-rs").join("turns.db").display())
}

/// Opens the store `location` (else `PROMPTY_STORE`, else [`default_location`]); a SQLite
/// store creates its file's folder.
pub async fn open(location: Option<&str>) -> CliResult<Arc<dyn Durability>> {
    let location = match location {
        Some(l) => l.to_owned(),
        None => std::env::var("PROMPTY_STORE").ok().filter(|v| !v.is_empty()).unwrap_or_else(default_location),
    };
    let store = prompty::engine::store::open(&location).await?;
    ui::note(format!("turn store: {}", store.describe()));
    Ok(store)
}

/// What `run --session` keeps with the turn, for `resume`.
pub fn metadata(
    file: &Path,
    inputs: &Map<String, Value>,
    model: Option<&str>,
    local: Option<&str>,
) -> Vec<(&'static str, Value)> {
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
    vec![
        ("prompt", json!(file.display().to_string())),
        ("inputs", Value::Object(inputs.clone())),
        ("model", json!(model)),
        ("local", json!(local)),
    ]
}

/// The host data of the session's last turn: its checkpoint's, else its start event's.
async fn recorded(store: &dyn Durability, session: &str) -> CliResult<Map<String, Value>> {
    if let Some(checkpoint) = store.checkpoint(session).await? {
        let events = store.events(session, checkpoint.sequence).await?;
        let newer = events.iter().rev().find(|e| started_fresh(e) && e.turn_id != checkpoint.turn_id);
        return Ok(match newer {
            Some(start) => start.payload["metadata"].as_object().cloned().unwrap_or_default(),
            None => checkpoint.metadata,
        });
    }
    let events = store.events(session, 0).await?;
    match events.iter().rev().find(|e| started_fresh(e)) {
        Some(start) => Ok(start.payload["metadata"].as_object().cloned().unwrap_or_default()),
        None => Err(CliError::usage(format!(
            "no session {session} in {} (`prompty sessions` lists them; --store or PROMPTY_STORE names another store)",
            store.describe()
        ))),
    }
}

fn started_fresh(e: &prompty::engine::EngineEvent) -> bool {
    e.kind == EventKind::TurnStarted && e.payload.get("resumed") == Some(&Value::Bool(false))
}

/// `prompty resume ID`: continues the session's last turn and prints its answer.
pub async fn resume(args: &ResumeArgs) -> CliResult {
    let store = open(args.store.as_deref()).await?;
    let data = recorded(store.as_ref(), &args.session).await?;
    let Some(file) = data.get("prompt").and_then(Value::as_str).map(PathBuf::from) else {
        return Err(CliError::usage(format!(
            "session {} was not started by `prompty run --session`: it records no prompt file to resume with",
            args.session
        )));
    };
    let mut agent = call::load(&file, data.get("model").and_then(Value::as_str)).await?;
    embedded::choose(&mut agent, data.get("local").and_then(Value::as_str));
    let inputs = Value::Object(data.get("inputs").and_then(Value::as_object).cloned().unwrap_or_default());
    let options = call::turn_options().durable(Arc::clone(&store), &args.session);
    let work = prompty::resume_turn_async(&agent, &args.session, &inputs, options);
    let out = tokio::select! {
        out = work => out?,
        () = call::ctrl_c() => return Err(CliError::cancelled()),
    };
    call::print_result(&out.result, args.json)?;
    Ok(Exit::Ok)
}

/// `prompty sessions`: the sessions of the store, or one session's turn.
pub async fn sessions(args: &SessionsArgs) -> CliResult {
    let store = open(args.store.as_deref()).await?;
    match &args.action {
        None => list(store.as_ref(), args.json).await,
        Some(SessionsAction::Show { session }) => show(store.as_ref(), session, args.json).await,
    }
}

fn status_text(info: &SessionInfo) -> &'static str {
    info.status.map_or("interrupted or running", |s| s.as_str())
}

async fn list(store: &dyn Durability, json: bool) -> CliResult {
    let sessions = store.sessions().await?;
    if json {
        let text = serde_json::to_string(&sessions).unwrap_or_default();
        ui::out(&format!("{text}\n")).map_err(call::write_error)?;
        return Ok(Exit::Ok);
    }
    if sessions.is_empty() {
        ui::info(format!("no sessions in {}", store.describe()));
        return Ok(Exit::Ok);
    }
    let mut text = String::from("SESSION\tTURN\tSTATUS\tMODEL CALLS\tEVENTS\tUPDATED\tHELD BY\n");
    for s in &sessions {
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            s.session_id,
            s.turn_id,
            status_text(s),
            s.iterations,
            s.last_sequence,
            s.updated_at,
            s.lease_owner.as_deref().unwrap_or("-")
        ));
    }
    ui::out(&text).map_err(call::write_error)?;
    Ok(Exit::Ok)
}

async fn show(store: &dyn Durability, session: &str, json: bool) -> CliResult {
    let info = store.sessions().await?.into_iter().find(|s| s.session_id == session);
    let Some(info) = info else {
        return Err(CliError::usage(format!(
            "no session {session} in {} (`prompty sessions` lists them)",
            store.describe()
        )));
    };
    let checkpoint = store.checkpoint(session).await?;
    let events = store.events(session, 0).await?;
    if json {
        let value = json!({"session": info, "checkpoint": checkpoint, "events": events});
        ui::out(&format!("{}\n", serde_json::to_string(&value).unwrap_or_default())).map_err(call::write_error)?;
        return Ok(Exit::Ok);
    }
    let mut text = format!(
        "session {} — turn {} — {} after {} model call(s), {} events\n",
        info.session_id,
        info.turn_id,
        status_text(&info),
        info.iterations,
        info.last_sequence
    );
    if let Some(c) = &checkpoint {
        let next = match &c.phase {
            Phase::Ready => "the next model call".to_owned(),
            Phase::Tools { response, results, .. } => {
                format!("tool calls: {} of {} committed", results.len(), response.tool_requests.len())
            }
            Phase::Final { .. } => "the answer, received, to commit".to_owned(),
            Phase::ToolReconciliation { request, .. } => {
                format!("reconciliation of tool call {} ({}): its outcome is unknown", request.id, request.name)
            }
            Phase::ModelReconciliation { reconciliation, .. } => {
                format!("reconciliation of model call {}", reconciliation.invocation_id)
            }
            Phase::Done { status, .. } => format!("nothing: the turn ended ({})", status.as_str()),
        };
        text.push_str(&format!(
            "last checkpoint: event {} at {}, {} message(s); then: {next}\n",
            c.sequence,
            c.created_at,
            c.messages.len()
        ));
        if let Some(prompt) = c.metadata.get("prompt").and_then(Value::as_str) {
            text.push_str(&format!("prompt: {prompt}\n"));
        }
    }
    text.push_str("events:\n");
    for e in &events {
        let detail = e
            .payload
            .get("toolName")
            .or_else(|| e.payload.get("reason"))
            .and_then(Value::as_str)
            .map(|d| format!(" {d}"))
            .unwrap_or_default();
        let iteration = e.iteration.map(|i| format!(" [{i}]")).unwrap_or_default();
        text.push_str(&format!("  {:>4} {}{iteration}{detail}\n", e.sequence, e.kind));
    }
    ui::out(&text).map_err(call::write_error)?;
    Ok(Exit::Ok)
}
