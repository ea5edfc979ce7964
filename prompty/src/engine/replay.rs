//! Replay: a turn's event journal projected onto the specification's `ReplayJournalRecord`, and
//! verified against a recorded run (`ReplayVerificationResult`), so that a run can be pinned in a
//! test.
//!
//! The engine's events ([`EngineEvent`]) carry timestamps, ids, messages, arguments and outputs
//! that differ from run to run. [`project`] keeps what a deterministic orchestration must repeat —
//! which model rounds ran, which tools were asked for, allowed, run, and how they ended, where the
//! turn checkpointed and how it ended — as [`ReplayRecord`]s, and their normalized text form
//! (`turn:tool_result:0:add:true`) is what [`verify`] compares.
//!
//! A journal is a file of JSON lines, one [`EngineEvent`] each: [`JournalWriter`] writes it as the
//! engine commits events, [`read_journal`] reads it back, [`pin`] verifies a run against a journal
//! recorded once and kept with the tests. The CLI's `prompty replay JOURNAL.jsonl [--verify
//! EXPECTED]` does the same from the command line.
//!
//! # The projection
//!
//! | engine event | records |
//! |---|---|
//! | the session's first event in the journal | `session:session_start:<session>:<turn>` |
//! | `turn_started` | `turn:turn_start:0`; nothing when it is a resumed run's (`resumed: true`), see below |
//! | `model_invocation_started` (each attempt) | `turn:llm_start:<i>` |
//! | `model_invocation_failed` that is retried | `turn:retry:<i>` |
//! | `model_invocation_completed` | `turn:llm_complete:<i>` |
//! | `checkpoint_created` after a model response | `session:checkpoint_created:<session>:<turn>` (counted in the summary); other checkpoints (after a tool result, after a tool round, before a reconciliation stop) make no record |
//! | `permission_requested` | `turn:permission_requested:<i>:<requestId>` (`<tool request id>-permission`) |
//! | `permission_resolved` | `turn:permission_completed:<i>:<approved>` |
//! | `tool_execution_started` | `turn:tool_execution_start:<i>:<tool>` |
//! | `tool_execution_completed` | `turn:tool_execution_complete:<i>:<tool>:<success>[:<errorKind>]` |
//! | `tool_result_reconciled` (a result a host established) | `turn:tool_execution_complete:<i>:<tool>:<success>[:<errorKind>]` |
//! | `tool_result_committed` | `turn:tool_result:<i>:<tool>:<success>[:<errorKind>]` (a denied request: `false:permission_denied`, with no execution records) |
//! | `conversation_updated` | `turn:messages_updated:<i>` |
//! | `turn_committed` | `turn:turn_end:<n>:success` |
//! | `turn_failed` | `turn:error:<n>:<kind>` (`max_iterations`, `model`, `unknown_tool`, `output_rejected`, ...), then `turn:turn_end:<n>:error` |
//! | `turn_cancelled` | `turn:turn_end:<n>:cancelled` |
//! | `turn_reconciliation_required` | `turn:error:<n>:reconciliation_required` (the turn has not ended: no `turn_end`) |
//! | the end of the journal, per session whose last turn ended | `session:session_end:<session>:<last turn>:<status>`, `summary:<session>:<status>:turns=<t>:checkpoints=<c>` |
//!
//! `<i>` is the model round an event belongs to, from 0; `<n>` on a turn's end is the number of
//! model rounds completed. Context preparation, post-commit effects and a model reconciliation's
//! own events make no record (a host's resolved response shows as the `llm_complete` it
//! completes). The engine's status `failed` is the specification's `error`; a turn waiting for
//! reconciliation has no status yet. A session's `turns` counts the distinct turns the journal has
//! events of; `checkpoints` the checkpoints after a model response.
//!
//! **Resumed runs.** A resume starts another run of the same turn with a `turn_started` whose
//! payload says `resumed: true`. It makes no record: a resume is a property of the process, not of
//! the turn, so a turn interrupted right after a checkpoint and resumed projects exactly as the
//! same turn run without interruption. Work that was repeated because it had not been
//! checkpointed shows as it happened: a model round sent again after a crash adds its
//! `llm_start` again, an idempotent tool run again adds its permission and execution records
//! again, and a tool whose outcome was unknown adds `turn:error:<n>:reconciliation_required`
//! before the host's result. Verification then reports the difference, because the work did happen
//! twice.
//!
//! **The normalized form** (the specification's conformance vectors): `session:<type>:<session
//! id>:<turn id>[:<status>]`, `turn:<type>:<iteration>[:<detail>]` where the detail is the record's
//! `requestId`, `toolName`, `success`, `errorKind` and `status` that are present, in that order,
//! joined by `:`; and `summary:<session id>:<status>:turns=<n>:checkpoints=<m>`. Turn records carry
//! their session and turn ids in the typed form ([`ReplayRecord::session_id`]) but not in the
//! normalized one.
//!
//! ```
//! use prompty::engine::replay::{project, verify};
//! use prompty::engine::{FixedClock, ModelResponse, ScriptedModel, SequentialIds, TurnEngine, TurnRequest};
//! use std::sync::{Arc, Mutex};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let events = Arc::new(Mutex::new(Vec::new()));
//! let seen = Arc::clone(&events);
//! let engine = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(serde_json::json!("hi"))]))
//!     .clock(FixedClock("2026-06-28T00:00:00Z".into()))
//!     .ids(SequentialIds::default())
//!     .observe(move |e| seen.lock().unwrap().push(e.clone()));
//! engine.run(TurnRequest::new("session-1", "turn-1", Vec::new())).await?;
//! let records = project(&events.lock().unwrap());
//! let text: Vec<String> = records.iter().map(ToString::to_string).collect();
//! assert_eq!(text, [
//!     "session:session_start:session-1:turn-1",
//!     "turn:turn_start:0",
//!     "turn:llm_start:0",
//!     "turn:llm_complete:0",
//!     "session:checkpoint_created:session-1:turn-1",
//!     "turn:turn_end:1:success",
//!     "session:session_end:session-1:turn-1:success",
//!     "summary:session-1:success:turns=1:checkpoints=1",
//! ]);
//! let expected: Vec<prompty::engine::replay::ReplayRecord> = text.iter().map(|s| s.parse().unwrap()).collect();
//! assert!(verify(&expected, &records).passed());
//! # Ok::<(), prompty::Error>(()) }).unwrap();
//! ```

use super::events::{EngineEvent, EventKind};
use super::machine::CHECKPOINT_AFTER_MODEL_RESPONSE;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// The longest line of a journal, in bytes (without its newline). [`JournalWriter`] writes an
/// event whose line would be longer with its payload reduced to its short scalar fields (which
/// keeps every field the projection reads) and `"truncated": true`; [`read_journal`] refuses a
/// longer line.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// The largest journal [`read_journal`] reads, in bytes (it holds the events in memory).
pub const MAX_JOURNAL_BYTES: u64 = 64 * 1024 * 1024;

/// The longest string a truncated event's payload keeps, in bytes.
const MAX_KEPT_STRING_BYTES: usize = 256;

/// The environment variable that makes [`pin`] record the run as the pin: `PROMPTY_PIN=record`.
pub const PIN_ENV: &str = "PROMPTY_PIN";

// The record types this projection writes (the specification's turn and session event types).
const SESSION_START: &str = "session_start";
const SESSION_END: &str = "session_end";
const CHECKPOINT_CREATED: &str = "checkpoint_created";
const TURN_START: &str = "turn_start";
const TURN_END: &str = "turn_end";
const LLM_START: &str = "llm_start";
const LLM_COMPLETE: &str = "llm_complete";
const RETRY: &str = "retry";
const PERMISSION_REQUESTED: &str = "permission_requested";
const PERMISSION_COMPLETED: &str = "permission_completed";
const TOOL_EXECUTION_START: &str = "tool_execution_start";
const TOOL_EXECUTION_COMPLETE: &str = "tool_execution_complete";
const TOOL_RESULT: &str = "tool_result";
const MESSAGES_UPDATED: &str = "messages_updated";
const ERROR: &str = "error";

/// What a [`ReplayRecord`] describes: a session, a turn, or the summary of a session.
///
/// ```
/// use prompty::engine::replay::RecordKind;
/// assert_eq!(serde_json::to_value(RecordKind::Summary).unwrap(), "summary");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordKind {
    /// A session's start, end or checkpoint.
    Session,
    /// An event of a turn.
    Turn,
    /// The summary of a session, after its end.
    Summary,
}

impl RecordKind {
    /// The specification's name.
    ///
    /// ```
    /// assert_eq!(prompty::engine::replay::RecordKind::Turn.as_str(), "turn");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Session => "session",
            RecordKind::Turn => "turn",
            RecordKind::Summary => "summary",
        }
    }
}

/// How a turn or a session ended (the specification's `ReplayRecordStatus`). The engine's
/// [`TurnStatus::Failed`](super::TurnStatus::Failed) is `Error` here.
///
/// ```
/// use prompty::engine::replay::ReplayStatus;
/// assert_eq!(serde_json::to_value(ReplayStatus::Error).unwrap(), "error");
/// assert_eq!("cancelled".parse::<ReplayStatus>(), Ok(ReplayStatus::Cancelled));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayStatus {
    /// Committed with an answer.
    Success,
    /// Failed.
    Error,
    /// Cancelled.
    Cancelled,
}

impl ReplayStatus {
    /// The specification's name.
    ///
    /// ```
    /// assert_eq!(prompty::engine::replay::ReplayStatus::Success.as_str(), "success");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayStatus::Success => "success",
            ReplayStatus::Error => "error",
            ReplayStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for ReplayStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReplayStatus {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "success" => Ok(ReplayStatus::Success),
            "error" => Ok(ReplayStatus::Error),
            "cancelled" => Ok(ReplayStatus::Cancelled),
            other => Err(format!("`{other}` is not a status (success, error or cancelled)")),
        }
    }
}

/// One record of a projected journal (the specification's `ReplayJournalRecord`): the stable,
/// comparable shape of an engine event. See the [module](self) for what each event becomes.
///
/// ```
/// use prompty::engine::replay::{RecordKind, ReplayRecord};
/// let r: ReplayRecord = "turn:tool_result:0:add:false:permission_denied".parse()?;
/// assert_eq!(r.kind, RecordKind::Turn);
/// assert_eq!(r.tool_name.as_deref(), Some("add"));
/// assert_eq!(r.success, Some(false));
/// assert_eq!(serde_json::to_value(&r)?["errorKind"], "permission_denied");
/// assert_eq!(r.to_string(), "turn:tool_result:0:add:false:permission_denied");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayRecord {
    /// A session, a turn, or a summary record.
    pub kind: RecordKind,
    /// The turn or session event type (`llm_start`, `session_end`, ...); none on a summary.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    /// The session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The model round of a turn record, from 0 (on `turn_end`, the rounds completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// How the turn or session ended (`turn_end`, `session_end`, summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ReplayStatus>,
    /// The permission request (`permission_requested`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The tool (tool execution and result records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Whether a permission was granted or a tool succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// The category of a failure (`permission_denied`, `exception`, `max_iterations`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// The turns of a summarized session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// The checkpoints after a model response in a summarized session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<u32>,
}

impl ReplayRecord {
    /// A record of `kind` with no field set.
    ///
    /// ```
    /// use prompty::engine::replay::{RecordKind, ReplayRecord};
    /// let mut r = ReplayRecord::new(RecordKind::Turn);
    /// r.event_type = Some("llm_start".into());
    /// r.iteration = Some(0);
    /// assert_eq!(r.to_string(), "turn:llm_start:0");
    /// ```
    pub fn new(kind: RecordKind) -> Self {
        ReplayRecord {
            kind,
            event_type: None,
            session_id: None,
            turn_id: None,
            iteration: None,
            status: None,
            request_id: None,
            tool_name: None,
            success: None,
            error_kind: None,
            turns: None,
            checkpoints: None,
        }
    }

    fn session(event_type: &str, session_id: &str, turn_id: &str) -> Self {
        ReplayRecord {
            event_type: Some(event_type.to_owned()),
            session_id: Some(session_id.to_owned()),
            turn_id: Some(turn_id.to_owned()),
            ..ReplayRecord::new(RecordKind::Session)
        }
    }

    fn turn(event_type: &str, event: &EngineEvent, iteration: u32) -> Self {
        ReplayRecord {
            event_type: Some(event_type.to_owned()),
            session_id: Some(event.session_id.clone()),
            turn_id: Some(event.turn_id.clone()),
            iteration: Some(iteration),
            ..ReplayRecord::new(RecordKind::Turn)
        }
    }
}

/// The normalized form (see the [module](self)): what [`verify`] compares.
impl fmt::Display for ReplayRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        let number = |v: Option<u32>| v.map(|n| n.to_string()).unwrap_or_default();
        let status = self.status.map(ReplayStatus::as_str).unwrap_or_default();
        match self.kind {
            RecordKind::Session => {
                write!(f, "session:{}:{}:{}", text(&self.event_type), text(&self.session_id), text(&self.turn_id))?;
                if self.status.is_some() {
                    write!(f, ":{status}")?;
                }
                Ok(())
            }
            RecordKind::Turn => {
                write!(f, "turn:{}:{}", text(&self.event_type), number(self.iteration))?;
                for detail in [&self.request_id, &self.tool_name].into_iter().flatten() {
                    write!(f, ":{detail}")?;
                }
                if let Some(success) = self.success {
                    write!(f, ":{success}")?;
                }
                if let Some(kind) = &self.error_kind {
                    write!(f, ":{kind}")?;
                }
                if self.status.is_some() {
                    write!(f, ":{status}")?;
                }
                Ok(())
            }
            RecordKind::Summary => write!(
                f,
                "summary:{}:{status}:turns={}:checkpoints={}",
                text(&self.session_id),
                number(self.turns),
                number(self.checkpoints)
            ),
        }
    }
}

/// A text that is not a normalized replay record.
///
/// ```
/// let e = "turn:llm_start:zero".parse::<prompty::engine::replay::ReplayRecord>().unwrap_err();
/// assert!(e.to_string().contains("`turn:llm_start:zero`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseRecordError {
    /// The text.
    pub input: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for ParseRecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a normalized replay record: {}", self.input, self.message)
    }
}

impl std::error::Error for ParseRecordError {}

/// Reads the normalized form back (the inverse of `Display` for every record [`project`] makes).
/// A colon inside an id is kept with the id: the session id ends at the first colon, the turn id,
/// a permission request id and a tool name take the rest.
impl FromStr for ReplayRecord {
    type Err = ParseRecordError;

    fn from_str(s: &str) -> std::result::Result<Self, ParseRecordError> {
        parse_record(s).map_err(|message| ParseRecordError { input: s.to_owned(), message })
    }
}

fn parse_record(s: &str) -> std::result::Result<ReplayRecord, String> {
    let (kind, rest) = s.split_once(':').ok_or("it has no `:`; it starts with session:, turn: or summary:")?;
    match kind {
        "session" => {
            let (event_type, rest) = split_type(rest)?;
            let mut parts: Vec<&str> = rest.split(':').collect();
            let mut record = ReplayRecord::new(RecordKind::Session);
            if parts.len() >= 3 {
                if let Ok(status) = parts[parts.len() - 1].parse() {
                    record.status = Some(status);
                    parts.pop();
                }
            }
            if parts.len() < 2 || parts[0].is_empty() {
                return Err("a session record is session:<type>:<session id>:<turn id>[:<status>]".into());
            }
            record.event_type = Some(event_type.to_owned());
            record.session_id = Some(parts[0].to_owned());
            record.turn_id = Some(parts[1..].join(":"));
            Ok(record)
        }
        "turn" => {
            let (event_type, rest) = split_type(rest)?;
            let (iteration, detail) = match rest.split_once(':') {
                Some((i, d)) => (i, Some(d)),
                None => (rest, None),
            };
            let mut record = ReplayRecord::new(RecordKind::Turn);
            record.iteration =
                Some(iteration.parse().map_err(|_| format!("the iteration `{iteration}` is not a whole number"))?);
            record.event_type = Some(event_type.to_owned());
            let need = |what: &str| {
                detail.filter(|d| !d.is_empty()).ok_or_else(|| format!("a {event_type} record ends with {what}"))
            };
            match event_type {
                PERMISSION_REQUESTED => record.request_id = Some(need("the permission request id")?.to_owned()),
                PERMISSION_COMPLETED => record.success = Some(parse_bool(need("true or false")?)?),
                TOOL_EXECUTION_START => record.tool_name = Some(need("the tool name")?.to_owned()),
                TOOL_EXECUTION_COMPLETE | TOOL_RESULT => {
                    let detail = need("<tool>:<success>[:<error kind>]")?;
                    let (tool, success, error_kind) = parse_tool_detail(detail)?;
                    record.tool_name = Some(tool.to_owned());
                    record.success = Some(success);
                    record.error_kind = error_kind.map(str::to_owned);
                }
                ERROR => record.error_kind = Some(need("the error kind")?.to_owned()),
                TURN_END => record.status = Some(need("the status")?.parse()?),
                _ => {
                    if let Some(detail) = detail {
                        return Err(format!("a {event_type} record has no detail, and this one has `{detail}`"));
                    }
                }
            }
            Ok(record)
        }
        "summary" => {
            let parts: Vec<&str> = rest.rsplitn(4, ':').collect();
            let shape = "a summary is summary:<session id>:<status>:turns=<n>:checkpoints=<m>";
            let &[checkpoints, turns, status, session] = parts.as_slice() else { return Err(shape.into()) };
            let count = |text: &str, key: &str| -> std::result::Result<u32, String> {
                let n = text.strip_prefix(key).ok_or(shape)?;
                n.parse().map_err(|_| format!("`{text}`: the count is not a whole number"))
            };
            let mut record = ReplayRecord::new(RecordKind::Summary);
            record.session_id = Some(session.to_owned());
            record.status = Some(status.parse()?);
            record.turns = Some(count(turns, "turns=")?);
            record.checkpoints = Some(count(checkpoints, "checkpoints=")?);
            Ok(record)
        }
        other => Err(format!("the kind `{other}` is not session, turn or summary")),
    }
}

fn split_type(rest: &str) -> std::result::Result<(&str, &str), String> {
    match rest.split_once(':') {
        Some((t, rest)) if !t.is_empty() => Ok((t, rest)),
        _ => Err("the type is missing".into()),
    }
}

fn parse_bool(text: &str) -> std::result::Result<bool, String> {
    match text {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("`{other}` is not true or false")),
    }
}

/// `<tool>:<success>[:<error kind>]`, the tool name taking any colons before them.
fn parse_tool_detail(detail: &str) -> std::result::Result<(&str, bool, Option<&str>), String> {
    let shape = || format!("`{detail}` is not <tool>:<true|false>[:<error kind>]");
    let (before, last) = detail.rsplit_once(':').ok_or_else(shape)?;
    if let Ok(success) = parse_bool(last) {
        return Ok((before, success, None));
    }
    let (tool, success) = before.rsplit_once(':').ok_or_else(shape)?;
    let success = parse_bool(success).map_err(|_| shape())?;
    Ok((tool, success, Some(last)))
}

/// What the projection knows of one session.
struct SessionTally {
    id: String,
    turns: Vec<String>,
    checkpoints: u32,
    /// The last turn and how it ended; `None` while a turn is open.
    ended: Option<(String, ReplayStatus)>,
}

fn payload_str<'e>(event: &'e EngineEvent, key: &str) -> Option<&'e str> {
    event.payload.get(key).and_then(Value::as_str)
}

/// The engine's events as replay records (see the [module](self) for the mapping). Events of
/// several sessions and turns may be interleaved; each session ends with its `session_end` and
/// summary, in the order the sessions first appear, when its last turn has ended.
///
/// ```
/// use prompty::engine::{EngineEvent, EventKind};
/// use prompty::engine::replay::project;
/// let event = |sequence, kind, iteration, payload| EngineEvent { sequence, id: format!("e{sequence}"),
///     timestamp: String::new(), session_id: "s".into(), turn_id: "t".into(), run_id: "r".into(),
///     invocation_id: None, iteration, kind, payload };
/// let records = project(&[
///     event(1, EventKind::TurnStarted, None, serde_json::json!({"resumed": false})),
///     event(2, EventKind::TurnCancelled, Some(0), serde_json::json!({"kind": "cancelled"})),
/// ]);
/// let text: Vec<String> = records.iter().map(ToString::to_string).collect();
/// assert_eq!(text, ["session:session_start:s:t", "turn:turn_start:0", "turn:turn_end:0:cancelled",
///     "session:session_end:s:t:cancelled", "summary:s:cancelled:turns=1:checkpoints=0"]);
/// ```
pub fn project(events: &[EngineEvent]) -> Vec<ReplayRecord> {
    let mut out = Vec::new();
    let mut sessions: Vec<SessionTally> = Vec::new();
    for event in events {
        let at = match sessions.iter().position(|s| s.id == event.session_id) {
            Some(at) => at,
            None => {
                out.push(ReplayRecord::session(SESSION_START, &event.session_id, &event.turn_id));
                sessions.push(SessionTally {
                    id: event.session_id.clone(),
                    turns: Vec::new(),
                    checkpoints: 0,
                    ended: None,
                });
                sessions.len() - 1
            }
        };
        let session = &mut sessions[at];
        if !session.turns.contains(&event.turn_id) {
            session.turns.push(event.turn_id.clone());
        }
        let i = event.iteration.unwrap_or(0);
        let turn = |event_type: &str| ReplayRecord::turn(event_type, event, i);
        let tool = |event_type: &str| {
            let mut record = turn(event_type);
            record.tool_name = payload_str(event, "toolName").map(str::to_owned);
            record.success = Some(payload_str(event, "outcome") == Some("success"));
            record.error_kind = payload_str(event, "errorKind").map(str::to_owned);
            record
        };
        match event.kind {
            EventKind::TurnStarted => {
                session.ended = None;
                if event.payload.get("resumed") != Some(&Value::Bool(true)) {
                    out.push(ReplayRecord::turn(TURN_START, event, 0));
                }
            }
            EventKind::ModelInvocationStarted => out.push(turn(LLM_START)),
            EventKind::ModelInvocationFailed if event.payload.get("retry") == Some(&Value::Bool(true)) => {
                out.push(turn(RETRY));
            }
            EventKind::ModelInvocationCompleted => out.push(turn(LLM_COMPLETE)),
            EventKind::CheckpointCreated if payload_str(event, "reason") == Some(CHECKPOINT_AFTER_MODEL_RESPONSE) => {
                session.checkpoints += 1;
                out.push(ReplayRecord::session(CHECKPOINT_CREATED, &event.session_id, &event.turn_id));
            }
            EventKind::PermissionRequested => {
                let mut record = turn(PERMISSION_REQUESTED);
                record.request_id = payload_str(event, "requestId").map(str::to_owned);
                out.push(record);
            }
            EventKind::PermissionResolved => {
                let mut record = turn(PERMISSION_COMPLETED);
                record.success = Some(event.payload.get("approved") == Some(&Value::Bool(true)));
                out.push(record);
            }
            EventKind::ToolExecutionStarted => {
                let mut record = turn(TOOL_EXECUTION_START);
                record.tool_name = payload_str(event, "toolName").map(str::to_owned);
                out.push(record);
            }
            EventKind::ToolExecutionCompleted | EventKind::ToolResultReconciled => {
                out.push(tool(TOOL_EXECUTION_COMPLETE));
            }
            EventKind::ToolResultCommitted => out.push(tool(TOOL_RESULT)),
            EventKind::ConversationUpdated => out.push(turn(MESSAGES_UPDATED)),
            EventKind::TurnReconciliationRequired => {
                let mut record = turn(ERROR);
                record.error_kind = Some("reconciliation_required".into());
                out.push(record);
            }
            EventKind::TurnCommitted | EventKind::TurnFailed | EventKind::TurnCancelled => {
                let status = match event.kind {
                    EventKind::TurnCommitted => ReplayStatus::Success,
                    EventKind::TurnFailed => ReplayStatus::Error,
                    _ => ReplayStatus::Cancelled,
                };
                if status == ReplayStatus::Error {
                    let mut record = turn(ERROR);
                    record.error_kind = Some(payload_str(event, "kind").unwrap_or("failed").to_owned());
                    out.push(record);
                }
                let mut record = turn(TURN_END);
                record.status = Some(status);
                out.push(record);
                session.ended = Some((event.turn_id.clone(), status));
            }
            EventKind::ContextPrepared
            | EventKind::ModelInvocationFailed
            | EventKind::ModelReconciliationRequired
            | EventKind::ModelInvocationReconciled
            | EventKind::CheckpointCreated
            | EventKind::PostCommitStarted
            | EventKind::PostCommitCompleted
            | EventKind::PostCommitFailed => {}
        }
    }
    for session in sessions {
        let Some((turn_id, status)) = session.ended else { continue };
        let mut end = ReplayRecord::session(SESSION_END, &session.id, &turn_id);
        end.status = Some(status);
        out.push(end);
        let mut summary = ReplayRecord::new(RecordKind::Summary);
        summary.session_id = Some(session.id);
        summary.status = Some(status);
        summary.turns = Some(u32::try_from(session.turns.len()).unwrap_or(u32::MAX));
        summary.checkpoints = Some(session.checkpoints);
        out.push(summary);
    }
    out
}

/// Whether a verification passed (the specification's `ReplayVerificationStatus`).
///
/// ```
/// assert_eq!(serde_json::to_value(prompty::engine::replay::VerificationStatus::Passed).unwrap(), "passed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerificationStatus {
    /// Every record matched.
    Passed,
    /// At least one did not.
    Failed,
}

/// A record where the runs differ (the specification's `ReplayMismatch`).
///
/// ```
/// use prompty::engine::replay::verify;
/// use prompty::engine::replay::ReplayRecord;
/// let a = ["turn:llm_start:0".parse::<ReplayRecord>()?];
/// let b = ["turn:llm_start:1".parse::<ReplayRecord>()?];
/// let mismatch = &verify(&a, &b).mismatches[0];
/// assert_eq!(mismatch.index, 0);
/// assert_eq!(mismatch.message, "expected `turn:llm_start:0`, got `turn:llm_start:1`");
/// # Ok::<(), prompty::engine::replay::ParseRecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayMismatch {
    /// The position of the record, from 0.
    pub index: usize,
    /// The expected record, when the expected run has one there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<ReplayRecord>,
    /// The actual record, when the run has one there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<ReplayRecord>,
    /// What differs.
    pub message: String,
}

impl fmt::Display for ReplayMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "record {}: {}", self.index, self.message)
    }
}

/// The outcome of [`verify`] (the specification's `ReplayVerificationResult`).
///
/// ```
/// let v = prompty::engine::replay::verify(&[], &[]);
/// assert!(v.passed());
/// assert_eq!(serde_json::to_value(&v).unwrap(),
///     serde_json::json!({"status": "passed", "mismatches": [], "expectedCount": 0, "actualCount": 0}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayVerification {
    /// Passed when every record matched.
    pub status: VerificationStatus,
    /// The records that differ, in order; empty when passed.
    #[serde(default)]
    pub mismatches: Vec<ReplayMismatch>,
    /// The records of the expected run.
    pub expected_count: usize,
    /// The records of the actual run.
    pub actual_count: usize,
}

impl ReplayVerification {
    /// Whether every record matched.
    ///
    /// ```
    /// assert!(prompty::engine::replay::verify(&[], &[]).passed());
    /// ```
    pub fn passed(&self) -> bool {
        self.status == VerificationStatus::Passed
    }
}

/// One line of outcome, then one line per mismatch: what a failing test prints.
impl fmt::Display for ReplayVerification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed() {
            return write!(f, "replay verification passed: {} records match", self.expected_count);
        }
        write!(
            f,
            "replay verification failed: {} mismatches (expected {} records, got {})",
            self.mismatches.len(),
            self.expected_count,
            self.actual_count
        )?;
        for mismatch in &self.mismatches {
            write!(f, "\n  {mismatch}")?;
        }
        Ok(())
    }
}

/// Compares two projected runs record by record, by their normalized form (so a record's ids
/// that the form leaves out do not count): a mismatch for each position where they differ, and
/// for each record one run has beyond the other's end.
///
/// ```
/// use prompty::engine::replay::{verify, ReplayRecord};
/// let expected: Vec<ReplayRecord> = ["turn:turn_start:0", "turn:llm_start:0"].iter().map(|s| s.parse().unwrap()).collect();
/// let v = verify(&expected, &expected[..1]);
/// assert!(!v.passed());
/// assert_eq!((v.expected_count, v.actual_count), (2, 1));
/// assert_eq!(v.mismatches[0].message, "expected `turn:llm_start:0`, but the run ends after 1 records");
/// ```
pub fn verify(expected: &[ReplayRecord], actual: &[ReplayRecord]) -> ReplayVerification {
    let mut mismatches = Vec::new();
    for index in 0..expected.len().max(actual.len()) {
        let (e, a) = (expected.get(index), actual.get(index));
        let message = match (e, a) {
            (Some(e), Some(a)) => {
                let (e, a) = (e.to_string(), a.to_string());
                if e == a {
                    continue;
                }
                format!("expected `{e}`, got `{a}`")
            }
            (Some(e), None) => format!("expected `{e}`, but the run ends after {} records", actual.len()),
            (None, Some(a)) => {
                format!("unexpected `{a}`: the expected run ends after {} records", expected.len())
            }
            (None, None) => continue,
        };
        mismatches.push(ReplayMismatch { index, expected: e.cloned(), actual: a.cloned(), message });
    }
    ReplayVerification {
        status: if mismatches.is_empty() { VerificationStatus::Passed } else { VerificationStatus::Failed },
        mismatches,
        expected_count: expected.len(),
        actual_count: actual.len(),
    }
}

fn journal_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Durability { store: format!("journal {}", path.display()), message: message.into() }
}

#[derive(Debug)]
struct JournalState {
    path: PathBuf,
    file: File,
    written: u64,
    /// The first write that failed: nothing is written after it.
    failed: Option<String>,
}

impl JournalState {
    fn write(&mut self, event: &EngineEvent) -> std::result::Result<(), String> {
        if let Some(failed) = &self.failed {
            return Err(failed.clone());
        }
        let outcome = journal_line(event).and_then(|mut line| {
            line.push('\n');
            self.file
                .write_all(line.as_bytes())
                .map_err(|e| format!("writing event {} of session {} failed: {e}", event.sequence, event.session_id))
        });
        match outcome {
            Ok(()) => {
                self.written += 1;
                Ok(())
            }
            Err(message) => {
                let message = format!(
                    "{message}; the journal stops after {} events (the store still holds every event)",
                    self.written
                );
                self.failed = Some(message.clone());
                Err(message)
            }
        }
    }
}

/// The JSON line of an event: whole, or with its payload reduced to short scalars when the whole
/// line would pass [`MAX_LINE_BYTES`].
fn journal_line(event: &EngineEvent) -> std::result::Result<String, String> {
    let unserializable = |e: serde_json::Error| format!("event {} cannot be written as JSON: {e}", event.sequence);
    let line = serde_json::to_string(event).map_err(unserializable)?;
    if line.len() <= MAX_LINE_BYTES {
        return Ok(line);
    }
    let mut kept = serde_json::Map::new();
    if let Value::Object(payload) = &event.payload {
        for (key, value) in payload {
            let short = match value {
                Value::String(s) => s.len() <= MAX_KEPT_STRING_BYTES,
                Value::Array(_) | Value::Object(_) => false,
                Value::Null | Value::Bool(_) | Value::Number(_) => true,
            };
            if short {
                kept.insert(key.clone(), value.clone());
            }
        }
    }
    kept.insert("truncated".into(), Value::Bool(true));
    kept.insert("originalBytes".into(), Value::from(line.len()));
    let reduced = EngineEvent { payload: Value::Object(kept), ..event.clone() };
    let line = serde_json::to_string(&reduced).map_err(unserializable)?;
    if line.len() <= MAX_LINE_BYTES {
        return Ok(line);
    }
    Err(format!(
        "event {} is {} bytes even without its payload's long fields; a journal line holds at most {MAX_LINE_BYTES}",
        event.sequence,
        line.len()
    ))
}

/// Writes a journal: each event the engine commits, as one JSON line ([`EngineEvent`]'s JSON),
/// through [`JournalWriter::observer`] (or [`JournalWriter::write`]). A line is at most
/// [`MAX_LINE_BYTES`]: a longer event is written with its payload reduced to its short scalar
/// fields and `"truncated": true` (the store keeps it whole). Lines are written as events arrive,
/// unbuffered, so a journal stops where its process stopped.
///
/// An observer cannot fail the turn, so a failed write (a full disk) is kept: nothing more is
/// written, and [`JournalWriter::finish`] returns the error.
///
/// ```
/// use prompty::engine::replay::{project, read_journal, JournalWriter};
/// use prompty::engine::{ModelResponse, ScriptedModel, TurnEngine, TurnRequest};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let path = std::env::temp_dir().join(format!("prompty-doc-journal-{}.jsonl", std::process::id()));
/// let journal = JournalWriter::create(&path)?;
/// let engine = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(serde_json::json!("hi"))]))
///     .observe(journal.observer());
/// engine.run(TurnRequest::new("session-1", "turn-1", Vec::new())).await?;
/// let written = journal.finish()?;
/// let events = read_journal(&path)?;
/// assert_eq!(events.len() as u64, written);
/// assert_eq!(project(&events).last().unwrap().to_string(), "summary:session-1:success:turns=1:checkpoints=1");
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), prompty::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct JournalWriter {
    state: Arc<Mutex<JournalState>>,
}

impl JournalWriter {
    /// A new journal at `path` (an existing file is emptied). An error names the path when the
    /// file cannot be created.
    ///
    /// ```
    /// let e = prompty::engine::replay::JournalWriter::create("/nonexistent-folder/run.jsonl").unwrap_err();
    /// assert!(e.to_string().contains("/nonexistent-folder/run.jsonl"));
    /// ```
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        JournalWriter::open(path.as_ref(), OpenOptions::new().write(true).create(true).truncate(true))
    }

    /// The journal at `path`, continued: events are appended after its lines (a resume in
    /// another process adds its run to the first run's journal). Created when missing.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("prompty-doc-append-{}.jsonl", std::process::id()));
    /// let journal = prompty::engine::replay::JournalWriter::append(&path)?;
    /// assert_eq!(journal.finish()?, 0);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn append(path: impl AsRef<Path>) -> Result<Self> {
        JournalWriter::open(path.as_ref(), OpenOptions::new().create(true).append(true))
    }

    fn open(path: &Path, options: &OpenOptions) -> Result<Self> {
        let file = options.open(path).map_err(|e| {
            journal_error(
                path,
                format!("cannot open it for writing: {e}; check that its folder exists and is writable"),
            )
        })?;
        let state = JournalState { path: path.to_owned(), file, written: 0, failed: None };
        Ok(JournalWriter { state: Arc::new(Mutex::new(state)) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, JournalState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends one event. After a failed write every later one fails with the same error.
    ///
    /// ```
    /// use prompty::engine::{EngineEvent, EventKind};
    /// let path = std::env::temp_dir().join(format!("prompty-doc-write-{}.jsonl", std::process::id()));
    /// let journal = prompty::engine::replay::JournalWriter::create(&path)?;
    /// journal.write(&EngineEvent { sequence: 1, id: "e1".into(), timestamp: String::new(), session_id: "s".into(),
    ///     turn_id: "t".into(), run_id: "r".into(), invocation_id: None, iteration: None,
    ///     kind: EventKind::TurnStarted, payload: serde_json::Value::Null })?;
    /// assert_eq!(prompty::engine::replay::read_journal(&path)?.len(), 1);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn write(&self, event: &EngineEvent) -> Result<()> {
        let mut state = self.lock();
        let path = state.path.clone();
        state.write(event).map_err(|message| journal_error(&path, message))
    }

    /// An observer for [`TurnEngine::observe`](super::TurnEngine::observe) that writes every event
    /// it is told about.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("prompty-doc-observer-{}.jsonl", std::process::id()));
    /// let journal = prompty::engine::replay::JournalWriter::create(&path)?;
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()))
    ///     .observe(journal.observer());
    /// # let _ = engine; std::fs::remove_file(&path).ok();
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn observer(&self) -> impl Fn(&EngineEvent) + Send + Sync + 'static {
        let journal = self.clone();
        move |event| {
            // A failure is kept in the state and returned by `finish`.
            let _ = journal.write(event);
        }
    }

    /// Flushes the journal to disk and returns the number of events written so far; the error
    /// of the first write that failed, if one did. It can be called again after more events.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("prompty-doc-finish-{}.jsonl", std::process::id()));
    /// assert_eq!(prompty::engine::replay::JournalWriter::create(&path)?.finish()?, 0);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn finish(&self) -> Result<u64> {
        let state = self.lock();
        if let Some(failed) = &state.failed {
            return Err(journal_error(&state.path, failed.clone()));
        }
        state.file.sync_data().map_err(|e| journal_error(&state.path, format!("cannot flush it to disk: {e}")))?;
        Ok(state.written)
    }
}

/// Reads a journal written by [`JournalWriter`]: its events in order. Blank lines are skipped. An
/// error names the line of a line that is not an event, that is longer than [`MAX_LINE_BYTES`],
/// or whose sequence number does not follow the previous event's of its session (two writers
/// on one file); a file larger than [`MAX_JOURNAL_BYTES`] is refused.
///
/// ```
/// let path = std::env::temp_dir().join(format!("prompty-doc-read-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "{\"sequence\": 1}\n")?;
/// let e = prompty::engine::replay::read_journal(&path).unwrap_err();
/// assert!(e.to_string().contains("line 1: not an engine event"), "{e}");
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_journal(path: impl AsRef<Path>) -> Result<Vec<EngineEvent>> {
    let path = path.as_ref();
    let file = open_bounded(path)?;
    let mut reader = BufReader::new(file.take(MAX_JOURNAL_BYTES + 1));
    let mut events: Vec<EngineEvent> = Vec::new();
    let mut last: Vec<(String, u64)> = Vec::new();
    let mut line = Vec::new();
    let mut total = 0u64;
    for number in 1u64.. {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 2)
            .read_until(b'\n', &mut line)
            .map_err(|e| journal_error(path, format!("reading line {number} failed: {e}")))?;
        if read == 0 {
            break;
        }
        total += read as u64;
        if total > MAX_JOURNAL_BYTES {
            return Err(journal_error(path, format!("it is larger than {MAX_JOURNAL_BYTES} bytes")));
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.len() > MAX_LINE_BYTES {
            return Err(journal_error(path, format!("line {number}: longer than {MAX_LINE_BYTES} bytes")));
        }
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let event: EngineEvent = serde_json::from_slice(text).map_err(|e| {
            journal_error(path, format!("line {number}: not an engine event (column {}): {e}", e.column()))
        })?;
        match last.iter_mut().find(|(s, _)| *s == event.session_id) {
            Some((_, previous)) if event.sequence <= *previous => {
                return Err(journal_error(
                    path,
                    format!(
                        "line {number}: event {} of session {} comes after event {}: the journal is out of order (were \
                         two runs of the session written into one file?)",
                        event.sequence,
                        event.session_id,
                        previous
                    ),
                ));
            }
            Some((_, previous)) => *previous = event.sequence,
            None => last.push((event.session_id.clone(), event.sequence)),
        }
        events.push(event);
    }
    Ok(events)
}

fn open_bounded(path: &Path) -> Result<File> {
    let file = File::open(path).map_err(|e| journal_error(path, format!("cannot read it: {e}")))?;
    let size = file.metadata().map_err(|e| journal_error(path, format!("cannot read it: {e}")))?.len();
    if size > MAX_JOURNAL_BYTES {
        return Err(journal_error(path, format!("it is {size} bytes, larger than {MAX_JOURNAL_BYTES}")));
    }
    Ok(file)
}

/// The records of an expected run, from a file that is either a journal ([`read_journal`], then
/// [`project`]) or a JSON array whose items are normalized records (`"turn:llm_start:0"`, as in the
/// specification's vectors) or [`ReplayRecord`] objects (what `prompty replay --json` prints). A
/// file whose first character is `[` is an array.
///
/// ```
/// let path = std::env::temp_dir().join(format!("prompty-doc-expected-{}.json", std::process::id()));
/// std::fs::write(&path, r#"["turn:turn_start:0", {"kind": "turn", "type": "llm_start", "iteration": 0}]"#)?;
/// let records = prompty::engine::replay::load_expected(&path)?;
/// assert_eq!(records[1].to_string(), "turn:llm_start:0");
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_expected(path: impl AsRef<Path>) -> Result<Vec<ReplayRecord>> {
    let path = path.as_ref();
    let mut text = String::new();
    open_bounded(path)?
        .take(MAX_JOURNAL_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| journal_error(path, format!("cannot read it: {e}")))?;
    if !text.trim_start().starts_with('[') {
        return Ok(project(&read_journal(path)?));
    }
    let items: Vec<Value> = serde_json::from_str(&text).map_err(|e| {
        journal_error(path, format!("line {}, column {}: not a JSON array of records: {e}", e.line(), e.column()))
    })?;
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(s) => {
                s.parse().map_err(|e: ParseRecordError| journal_error(path, format!("item {index}: {e}")))
            }
            other => serde_json::from_value(other)
                .map_err(|e| journal_error(path, format!("item {index} is not a replay record: {e}"))),
        })
        .collect()
}

/// Pins a run in a test: verifies the journal of this run (`run`, written by a [`JournalWriter`])
/// against the pinned one (`pinned`, a file kept with the tests: a journal, or a JSON array of
/// records as [`load_expected`] reads). Both are projected by the same code, so a pin stays valid
/// when the projection learns more.
///
/// With `PROMPTY_PIN=record` in the environment ([`PIN_ENV`]), the run's journal is copied to
/// `pinned` first (creating its folder), to record the pin or to accept a change; commit the file.
/// Without it a missing pin is an error saying so, never a silent pass.
///
/// ```
/// use prompty::engine::replay::{pin, JournalWriter};
/// use prompty::engine::{FixedClock, ModelResponse, ScriptedModel, SequentialIds, ToolOutput, ToolPort, ToolRequest,
///     ToolContext, TurnEngine, TurnRequest};
/// use prompty::{BoxFuture, Message, Role, TurnStop};
///
/// struct Add;
/// impl ToolPort for Add {
///     fn execute<'a>(&'a self, r: &'a ToolRequest, _: ToolContext<'a>) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
///         let sum = r.arguments["a"].as_i64().unwrap_or(0) + r.arguments["b"].as_i64().unwrap_or(0);
///         Box::pin(async move { Ok(ToolOutput::success(&r.id, &r.name, serde_json::json!(sum))) })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let run = std::env::temp_dir().join(format!("prompty-doc-pin-{}.jsonl", std::process::id()));
/// let journal = JournalWriter::create(&run)?;
/// let model = ScriptedModel::new(vec![
///     ModelResponse::tools(vec![ToolRequest::new("call-1", "add", serde_json::json!({"a": 2, "b": 3}))]),
///     ModelResponse::output(serde_json::json!("5")),
/// ]);
/// let engine = TurnEngine::new(model)
///     .tools(Add)
///     .clock(FixedClock("2026-06-28T00:00:00Z".into()))
///     .ids(SequentialIds::default())
///     .observe(journal.observer());
/// engine.run(TurnRequest::new("session-1", "turn-1", vec![Message::new(Role::User, "2 + 3?")])).await?;
/// journal.finish()?;
///
/// // Recorded once with PROMPTY_PIN=record; committed with the tests.
/// let pinned = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/replay/add.jsonl");
/// let verification = pin(pinned, &run)?;
/// assert!(verification.passed(), "{verification}");
/// # std::fs::remove_file(&run).ok();
/// # Ok::<(), prompty::Error>(()) }).unwrap();
/// ```
pub fn pin(pinned: impl AsRef<Path>, run: impl AsRef<Path>) -> Result<ReplayVerification> {
    let (pinned, run) = (pinned.as_ref(), run.as_ref());
    let actual = project(&read_journal(run)?);
    match std::env::var(PIN_ENV) {
        Ok(value) if value == "record" => {
            if let Some(folder) = pinned.parent().filter(|f| !f.as_os_str().is_empty()) {
                std::fs::create_dir_all(folder)
                    .map_err(|e| journal_error(pinned, format!("cannot create its folder: {e}")))?;
            }
            std::fs::copy(run, pinned)
                .map_err(|e| journal_error(pinned, format!("cannot record the pin from {}: {e}", run.display())))?;
        }
        Ok(value) => {
            return Err(journal_error(
                pinned,
                format!("{PIN_ENV}={value}: the only value is `record` (record this run as the pin)"),
            ))
        }
        Err(_) if !pinned.exists() => {
            return Err(journal_error(
                pinned,
                format!(
                    "no pinned journal here: run the test once with {PIN_ENV}=record to record this run's journal as \
                     the pin, then commit the file"
                ),
            ))
        }
        Err(_) => {}
    }
    Ok(verify(&load_expected(pinned)?, &actual))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Hand-built events of one session: `(kind, iteration, payload)`, numbered from 1.
    fn events(turn: &str, steps: &[(EventKind, Option<u32>, Value)]) -> Vec<EngineEvent> {
        steps
            .iter()
            .enumerate()
            .map(|(n, (kind, iteration, payload))| EngineEvent {
                sequence: n as u64 + 1,
                id: format!("event-{}", n + 1),
                timestamp: "2026-06-28T00:00:00Z".into(),
                session_id: "s".into(),
                turn_id: turn.into(),
                run_id: "run-1".into(),
                invocation_id: None,
                iteration: *iteration,
                kind: *kind,
                payload: payload.clone(),
            })
            .collect()
    }

    fn text(records: &[ReplayRecord]) -> Vec<String> {
        records.iter().map(ToString::to_string).collect()
    }

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("prompty-replay-{}-{name}", std::process::id()))
    }

    use EventKind as K;

    fn start() -> (EventKind, Option<u32>, Value) {
        (K::TurnStarted, None, json!({"resumed": false}))
    }

    fn checkpoint(i: u32, reason: &str) -> (EventKind, Option<u32>, Value) {
        (K::CheckpointCreated, Some(i), json!({"reason": reason}))
    }

    #[test]
    fn a_cancelled_turn_ends_cancelled_without_an_error_record() {
        let records = project(&events(
            "t",
            &[
                start(),
                (K::ContextPrepared, Some(0), json!({})),
                (K::ModelInvocationStarted, Some(0), json!({"attempt": 0})),
                (K::TurnCancelled, Some(0), json!({"status": "cancelled", "kind": "cancelled"})),
            ],
        ));
        assert_eq!(
            text(&records),
            [
                "session:session_start:s:t",
                "turn:turn_start:0",
                "turn:llm_start:0",
                "turn:turn_end:0:cancelled",
                "session:session_end:s:t:cancelled",
                "summary:s:cancelled:turns=1:checkpoints=0",
            ]
        );
        assert_eq!(records[3].status, Some(ReplayStatus::Cancelled));
        assert_eq!(records[3].session_id.as_deref(), Some("s"), "turn records keep their ids in the typed form");
    }

    #[test]
    fn a_failed_turn_is_an_error_with_its_kind_and_retries_show() {
        let records = project(&events(
            "t",
            &[
                start(),
                (K::ModelInvocationStarted, Some(0), json!({"attempt": 0})),
                (K::ModelInvocationFailed, Some(0), json!({"attempt": 0, "retry": true})),
                (K::ModelInvocationStarted, Some(0), json!({"attempt": 1})),
                (K::ModelInvocationFailed, Some(0), json!({"attempt": 1, "retry": false})),
                (K::TurnFailed, Some(0), json!({"status": "failed", "kind": "model"})),
                (K::PostCommitStarted, Some(0), json!({})),
            ],
        ));
        assert_eq!(
            text(&records)[2..],
            [
                "turn:llm_start:0",
                "turn:retry:0",
                "turn:llm_start:0",
                "turn:error:0:model",
                "turn:turn_end:0:error",
                "session:session_end:s:t:error",
                "summary:s:error:turns=1:checkpoints=0",
            ]
        );
    }

    #[test]
    fn only_checkpoints_after_a_model_response_are_records() {
        let records = project(&events(
            "t",
            &[
                start(),
                (K::ModelInvocationCompleted, Some(0), json!({})),
                checkpoint(1, "model_response"),
                (K::ToolExecutionCompleted, Some(0), json!({"toolName": "add", "outcome": "success"})),
                checkpoint(1, "tool_result"),
                (K::ToolResultCommitted, Some(0), json!({"toolName": "add", "outcome": "success"})),
                (K::ConversationUpdated, Some(0), json!({})),
                checkpoint(1, "tool_round"),
                (K::ModelInvocationCompleted, Some(1), json!({})),
                checkpoint(2, "model_response"),
                (K::TurnCommitted, Some(2), json!({"status": "success"})),
            ],
        ));
        assert_eq!(
            text(&records),
            [
                "session:session_start:s:t",
                "turn:turn_start:0",
                "turn:llm_complete:0",
                "session:checkpoint_created:s:t",
                "turn:tool_execution_complete:0:add:true",
                "turn:tool_result:0:add:true",
                "turn:messages_updated:0",
                "turn:llm_complete:1",
                "session:checkpoint_created:s:t",
                "turn:turn_end:2:success",
                "session:session_end:s:t:success",
                "summary:s:success:turns=1:checkpoints=2",
            ]
        );
    }

    #[test]
    fn a_resumed_run_adds_no_record_and_a_reconciliation_leaves_the_turn_open() {
        // Run 1 stops with a tool whose outcome is unknown.
        let first = events(
            "t",
            &[
                start(),
                (K::ModelInvocationStarted, Some(0), json!({"attempt": 0})),
                (K::ModelInvocationCompleted, Some(0), json!({})),
                checkpoint(1, "model_response"),
                (K::PermissionRequested, Some(0), json!({"requestId": "c1-permission", "toolName": "mail"})),
                (K::PermissionResolved, Some(0), json!({"requestId": "c1-permission", "approved": true})),
                (K::ToolExecutionStarted, Some(0), json!({"requestId": "c1", "toolName": "mail"})),
                (K::TurnStarted, None, json!({"resumed": true, "runId": "run-2"})),
                checkpoint(1, "reconciliation"),
                (K::TurnReconciliationRequired, Some(1), json!({"status": "reconciliation_required"})),
            ],
        );
        let open = project(&first);
        assert_eq!(
            text(&open)[5..],
            [
                "turn:permission_requested:0:c1-permission",
                "turn:permission_completed:0:true",
                "turn:tool_execution_start:0:mail",
                "turn:error:1:reconciliation_required",
            ],
            "no session_end or summary while the turn waits"
        );
        // The host resolves it; the turn goes on in a third run.
        let mut all = first;
        let rest = events(
            "t",
            &[
                (K::TurnStarted, None, json!({"resumed": true, "runId": "run-3"})),
                (K::ToolResultReconciled, Some(0), json!({"toolName": "mail", "outcome": "failed"})),
                (K::ToolResultCommitted, Some(0), json!({"toolName": "mail", "outcome": "failed"})),
                (K::ConversationUpdated, Some(0), json!({})),
                checkpoint(1, "tool_round"),
                (K::ModelInvocationStarted, Some(1), json!({"attempt": 0})),
                (K::ModelInvocationCompleted, Some(1), json!({})),
                checkpoint(2, "model_response"),
                (K::TurnCommitted, Some(2), json!({"status": "success"})),
            ],
        );
        let offset = all.len() as u64;
        all.extend(rest.into_iter().map(|mut e| {
            e.sequence += offset;
            e
        }));
        assert_eq!(
            text(&project(&all))[9..],
            [
                "turn:tool_execution_complete:0:mail:false",
                "turn:tool_result:0:mail:false",
                "turn:messages_updated:0",
                "turn:llm_start:1",
                "turn:llm_complete:1",
                "session:checkpoint_created:s:t",
                "turn:turn_end:2:success",
                "session:session_end:s:t:success",
                "summary:s:success:turns=1:checkpoints=2",
            ]
        );
    }

    #[test]
    fn a_journal_that_begins_with_a_resumed_run_starts_its_session_there() {
        let records = project(&events(
            "t",
            &[
                (K::TurnStarted, None, json!({"resumed": true})),
                (K::ModelInvocationCompleted, Some(1), json!({})),
                checkpoint(2, "model_response"),
                (K::TurnCommitted, Some(2), json!({})),
            ],
        ));
        assert_eq!(
            text(&records),
            [
                "session:session_start:s:t",
                "turn:llm_complete:1",
                "session:checkpoint_created:s:t",
                "turn:turn_end:2:success",
                "session:session_end:s:t:success",
                "summary:s:success:turns=1:checkpoints=1",
            ]
        );
    }

    #[test]
    fn several_turns_of_a_session_share_its_start_end_and_summary() {
        let mut all = events("t1", &[start(), (K::TurnCommitted, Some(1), json!({}))]);
        let mut second = events("t2", &[start(), (K::TurnFailed, Some(0), json!({"kind": "max_iterations"}))]);
        for e in &mut second {
            e.sequence += 2;
        }
        all.extend(second);
        assert_eq!(
            text(&project(&all)),
            [
                "session:session_start:s:t1",
                "turn:turn_start:0",
                "turn:turn_end:1:success",
                "turn:turn_start:0",
                "turn:error:0:max_iterations",
                "turn:turn_end:0:error",
                "session:session_end:s:t2:error",
                "summary:s:error:turns=2:checkpoints=0",
            ]
        );
    }

    #[test]
    fn every_projected_record_reads_back_from_its_normalized_form() {
        let cases = [
            "session:session_start:s:t",
            "session:session_end:s:t:error",
            "session:session_start:user:42:turn:7",
            "turn:turn_start:0",
            "turn:permission_requested:0:exec-1-permission",
            "turn:permission_completed:0:false",
            "turn:tool_execution_start:3:ns.add",
            "turn:tool_execution_complete:0:add:true",
            "turn:tool_result:0:mcp:fs:read:false:exception",
            "turn:error:1:max_iterations",
            "turn:turn_end:2:cancelled",
            "turn:retry:4",
            "summary:session:1:success:turns=12:checkpoints=0",
        ];
        for case in cases {
            let record: ReplayRecord = case.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(record.to_string(), case);
            let json = serde_json::to_value(&record).unwrap();
            assert_eq!(serde_json::from_value::<ReplayRecord>(json).unwrap(), record);
        }
        let r: ReplayRecord = "turn:tool_result:0:mcp:fs:read:false:exception".parse().unwrap();
        assert_eq!(r.tool_name.as_deref(), Some("mcp:fs:read"));
        let r: ReplayRecord = "summary:session:1:success:turns=12:checkpoints=0".parse().unwrap();
        assert_eq!(r.session_id.as_deref(), Some("session:1"));
        for bad in [
            "",
            "turn",
            "tool:x:0",
            "turn::0",
            "turn:llm_start:-1",
            "turn:llm_start:0:extra",
            "turn:turn_end:1:failed",
            "turn:permission_completed:0:yes",
            "turn:tool_result:0:add",
            "turn:error:1",
            "session:session_start:s",
            "summary:s:success:turns=1",
            "summary:s:done:turns=1:checkpoints=1",
            "summary:s:success:turns=x:checkpoints=1",
        ] {
            let e = bad.parse::<ReplayRecord>().expect_err(bad);
            assert!(e.to_string().starts_with(&format!("`{bad}` is not a normalized replay record: ")), "{e}");
        }
    }

    #[test]
    fn verify_reports_each_differing_position_and_the_extra_records() {
        let parse = |items: &[&str]| items.iter().map(|s| s.parse::<ReplayRecord>().unwrap()).collect::<Vec<_>>();
        let expected = parse(&["turn:turn_start:0", "turn:llm_start:0", "turn:llm_complete:0"]);
        let actual = parse(&["turn:turn_start:0", "turn:llm_start:1", "turn:llm_complete:0", "turn:retry:0"]);
        let v = verify(&expected, &actual);
        assert_eq!(v.status, VerificationStatus::Failed);
        assert_eq!((v.expected_count, v.actual_count), (3, 4));
        assert_eq!(v.mismatches.iter().map(|m| m.index).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(v.mismatches[1].expected, None);
        assert_eq!(v.mismatches[1].message, "unexpected `turn:retry:0`: the expected run ends after 3 records");
        let shown = v.to_string();
        assert!(shown.starts_with("replay verification failed: 2 mismatches (expected 3 records, got 4)"), "{shown}");
        assert!(shown.contains("\n  record 1: expected `turn:llm_start:0`, got `turn:llm_start:1`"), "{shown}");
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["mismatches"][0]["expected"]["type"], "llm_start");
        assert_eq!(json["mismatches"][0]["actual"]["iteration"], 1);
        // Ids the normalized form leaves out do not count.
        let mut with_ids = expected.clone();
        with_ids[0].session_id = Some("another".into());
        assert!(verify(&expected, &with_ids).passed());
    }

    #[test]
    fn the_journal_keeps_an_oversized_event_with_the_fields_the_projection_reads() {
        let mut big = events("t", &[(K::ToolExecutionCompleted, Some(0), json!({}))]).remove(0);
        big.payload = json!({
            "requestId": "c1", "toolName": "read", "outcome": "success", "errorKind": null,
            "output": "x".repeat(MAX_LINE_BYTES), "note": "y".repeat(MAX_KEPT_STRING_BYTES + 1),
        });
        let path = temp("oversized.jsonl");
        let journal = JournalWriter::create(&path).unwrap();
        journal.write(&big).unwrap();
        assert_eq!(journal.finish().unwrap(), 1);
        let back = read_journal(&path).unwrap();
        assert_eq!(back[0].payload["truncated"], true);
        assert!(back[0].payload.get("output").is_none() && back[0].payload.get("note").is_none());
        assert_eq!(back[0].payload["toolName"], "read");
        assert_eq!(project(&back)[1].to_string(), "turn:tool_execution_complete:0:read:true");
        // An event too large even without its payload stops the journal, and finish says so.
        let mut huge = big.clone();
        huge.sequence = 2;
        huge.id = "i".repeat(MAX_LINE_BYTES);
        let e = journal.write(&huge).unwrap_err().to_string();
        assert!(e.contains("event 2 is") && e.contains("the journal stops after 1 events"), "{e}");
        assert!(journal.finish().unwrap_err().to_string().contains("event 2 is"));
        assert!(journal.write(&big).is_err(), "nothing is written after a failed write");
        assert_eq!(read_journal(&path).unwrap().len(), 1);
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn read_journal_names_the_line_that_is_wrong() {
        let path = temp("bad.jsonl");
        let good = serde_json::to_string(&events("t", &[start()])[0]).unwrap();
        std::fs::write(&path, format!("{good}\n\n{{\"kind\": \"turn_started\"}}\n")).unwrap();
        let e = read_journal(&path).unwrap_err().to_string();
        assert!(e.contains(&format!("journal {} failed: line 3: not an engine event", path.display())), "{e}");
        std::fs::write(&path, format!("{good}\n{good}\n")).unwrap();
        let e = read_journal(&path).unwrap_err().to_string();
        assert!(e.contains("line 2: event 1 of session s comes after event 1"), "{e}");
        std::fs::write(&path, format!("{good}\n{}\n", "x".repeat(MAX_LINE_BYTES + 1))).unwrap();
        let e = read_journal(&path).unwrap_err().to_string();
        assert!(e.contains("line 2: longer than 1048576 bytes"), "{e}");
        std::fs::write(&path, format!("{good}\r\n\n  \n")).unwrap();
        assert_eq!(read_journal(&path).unwrap().len(), 1, "CRLF and blank lines are accepted");
        std::fs::write(&path, [0xff, 0xfe, b'\n']).unwrap();
        assert!(read_journal(&path).unwrap_err().to_string().contains("line 1: not an engine event"));
        std::fs::remove_file(&path).ok();
        let e = read_journal(temp("missing.jsonl")).unwrap_err().to_string();
        assert!(e.contains("missing.jsonl") && e.contains("cannot read it"), "{e}");
    }

    #[test]
    fn load_expected_names_the_bad_item() {
        let path = temp("expected.json");
        std::fs::write(&path, r#"["turn:turn_start:0", "turn:llm_start"]"#).unwrap();
        let e = load_expected(&path).unwrap_err().to_string();
        assert!(e.contains("item 1: `turn:llm_start` is not a normalized replay record"), "{e}");
        std::fs::write(&path, r#"["turn:turn_start:0", {"kind": "round"}]"#).unwrap();
        assert!(load_expected(&path).unwrap_err().to_string().contains("item 1 is not a replay record"));
        std::fs::write(&path, "[\n  \"turn:turn_start:0\",\n").unwrap();
        assert!(load_expected(&path).unwrap_err().to_string().contains("not a JSON array of records"));
        std::fs::remove_file(&path).ok();
    }
}
