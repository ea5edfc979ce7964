//! What `run` and `chat` share: loading the prompt, deciding whether the agent loop runs, one
//! model call (or turn), streamed or not, raced against Ctrl-C.

use crate::exit::{CliError, CliResult};
use crate::ui;
use futures_util::StreamExt;
use prompty::{Agent, AgentEvent, Message, StreamChunk, ToolKind, TurnOptions};
use serde_json::{Map, Value};
use std::future::Future;
use std::path::Path;

/// Loads the prompt at `path` (a prompt error, exit 3, when it cannot be), with the model id
/// replaced by `model` when given.
pub async fn load(path: &Path, model: Option<&str>) -> CliResult<Agent> {
    if !path.is_file() {
        return Err(CliError::prompt(format!("{}: file not found", path.display())));
    }
    let mut agent = prompty::load_async(path).await?;
    if let Some(id) = model {
        agent.model.get_or_insert_with(Default::default).id = id.to_owned();
    }
    Ok(agent)
}

/// The folder of a prompt file, for `.env`.
pub fn folder_of(path: &Path) -> Option<&Path> {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Some(Path::new(".")),
        other => other,
    }
}

/// Whether the prompt runs through the agent loop: it declares tools and every one of them has
/// a handler here. The command line has no `#[tool]` functions of its own, so a `kind: function`
/// tool has none; `mcp`, `openapi` and `prompty` tools have the built-in ones. Without the loop,
/// the model is called once and the tool calls it asks for are the result.
pub fn uses_turn(agent: &Agent) -> bool {
    let tools = agent.tools.as_deref().unwrap_or_default();
    if tools.is_empty() {
        return false;
    }
    let missing: Vec<&str> = tools
        .iter()
        .filter(|t| match &t.kind {
            ToolKind::Function(_) => prompty::get_tool(&t.name).is_none(),
            ToolKind::Mcp(_) | ToolKind::OpenApi(_) | ToolKind::Prompty(_) => false,
            _ => true,
        })
        .map(|t| t.name.as_str())
        .collect();
    if missing.is_empty() {
        ui::note("the prompt's tools all have handlers: running the agent loop");
        return true;
    }
    ui::info(format!(
        "note: no handler for the tool{} {} here (the command line has no `#[prompty::tool]` functions): \
         the model is called once, and the tool calls it asks for are the result",
        if missing.len() == 1 { "" } else { "s" },
        missing.join(", ")
    ));
    false
}

/// Options of a turn: tool calls and their results shown on stderr as they happen (unless
/// `--quiet`).
pub fn turn_options() -> TurnOptions {
    TurnOptions::new().on_event(|e: &AgentEvent| {
        if !ui::shows_info() {
            return;
        }
        match e {
            AgentEvent::ToolCallStart { name, arguments, .. } => eprintln!("[tool] {name}({})", clip(arguments, 200)),
            AgentEvent::ToolResult { name, result, is_error, .. } => {
                let how = if *is_error { "failed" } else { "returned" };
                eprintln!("[tool] {name} {how}: {}", clip(result, 200));
            }
            AgentEvent::Error { message, .. } => eprintln!("[tool] error: {}", clip(message, 400)),
            AgentEvent::Warning { message, .. } => eprintln!("[tool] warning: {}", clip(message, 400)),
            _ => {}
        }
    })
}

/// At most `max` characters of `text` on one line.
fn clip(text: &str, max: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    match prompty::text::chars(&one_line, max) {
        (part, true) => format!("{part}…"),
        _ => one_line,
    }
}

/// The end of a model call.
pub enum Answer {
    /// The result: text, structured output, or the tool calls the model asked for.
    Done(Value),
    /// Ctrl-C came first.
    Cancelled,
}

/// Sends `messages` to the model (through the agent loop with `turn`'s options when it is given),
/// streaming the answer's text to stdout as it arrives when `stream`, until it answers or
/// `interrupt` completes.
pub async fn call(
    agent: &Agent,
    messages: Vec<Message>,
    inputs: &Map<String, Value>,
    turn: Option<TurnOptions>,
    stream: bool,
    interrupt: impl Future<Output = ()>,
) -> CliResult<Answer> {
    let work = async {
        let inputs = Value::Object(inputs.clone());
        match (turn, stream) {
            (Some(options), false) => Ok(prompty::run_turn_async(agent, messages, &inputs, options).await?.result),
            (None, false) => Ok(prompty::run_async(agent, &messages).await?),
            (Some(options), true) => {
                let mut chunks = prompty::run_turn_stream(agent, messages, &inputs, options);
                while let Some(chunk) = chunks.next().await {
                    print_chunk(&chunk)?;
                }
                Ok(chunks.finish().await?.result)
            }
            (None, true) => {
                let mut chunks = prompty::run_stream(agent, &messages).await?;
                let (mut text, mut calls) = (String::new(), Vec::new());
                while let Some(chunk) = chunks.next().await {
                    print_chunk(&chunk)?;
                    match chunk {
                        StreamChunk::Text(t) => text.push_str(&t),
                        StreamChunk::ToolCall(c) => calls.push(c),
                        StreamChunk::Failure(f) => return Err(CliError::provider(f.message)),
                        _ => {}
                    }
                }
                if text.is_empty() && !calls.is_empty() {
                    let calls = serde_json::to_value(&calls).unwrap_or_default();
                    ui::out(&format!("{}\n", serde_json::to_string_pretty(&calls).unwrap_or_default()))
                        .map_err(write_error)?;
                    return Ok(calls);
                }
                Ok(Value::String(text))
            }
        }
    };
    tokio::select! {
        result = work => result.map(Answer::Done),
        () = interrupt => Ok(Answer::Cancelled),
    }
}

/// Prints a streamed chunk: text to stdout, thinking to stderr (with `-v`).
fn print_chunk(chunk: &StreamChunk) -> CliResult<()> {
    match chunk {
        StreamChunk::Text(t) => ui::out(t).map_err(write_error),
        StreamChunk::Thinking(t) if ui::level() >= 1 => {
            eprint!("{t}");
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Stdout closed or full.
pub fn write_error(e: std::io::Error) -> CliError {
    CliError::new(crate::exit::Exit::Failure, format!("cannot write the result: {e}"))
}

/// Prints a result: `--json` as one line of JSON; otherwise text as it is and anything else as
/// indented JSON.
pub fn print_result(result: &Value, json: bool) -> CliResult<()> {
    let text = match (result, json) {
        (_, true) => serde_json::to_string(result).unwrap_or_default(),
        (Value::String(s), false) => s.clone(),
        (other, false) => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    ui::out(&format!("{text}{newline}")).map_err(write_error)
}

/// Completes at the next Ctrl-C.
pub async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        // No signal handling on this platform: never completes.
        std::future::pending::<()>().await;
    }
}

/// A command's result as its root span records it: the exit code and the error message.
struct Recorded<T>(CliResult<T>);

impl<T> serde::Serialize for Recorded<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Ok(_) => serde_json::json!({"ok": true}).serialize(s),
            Err(e) => serde_json::json!({"ok": false, "exit": e.exit.code(), "error": e.message}).serialize(s),
        }
    }
}

/// Runs `work` as a root span named `name` (so `--trace` writes one `.tracy` file with every
/// stage below it), recording `inputs` and whether it failed.
pub async fn traced<T>(name: &'static str, inputs: &Value, work: impl Future<Output = CliResult<T>>) -> CliResult<T> {
    match prompty::trace::traced_async(name, inputs, async { Ok(Recorded(work.await)) }).await {
        Ok(Recorded(result)) => result,
        Err(e) => Err(e.into()),
    }
}
