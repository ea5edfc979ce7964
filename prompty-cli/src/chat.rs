//! `prompty chat`: an interactive session with a prompt.
//!
//! Each line read from stdin (a terminal or not) is one user message:
//! - it goes into the prompt's *message input*: the first required `string` input without a
//!   default (`question` in `chat.prompty`); when there is none, it is added as a user message
//!   after the prepared ones;
//! - the conversation so far goes into the prompt's first `thread` input (`history`), so the
//!   template decides where it goes; a prompt without one gets the earlier turns appended after
//!   the messages prepared for the first line, in order.
//!
//! Answers are streamed to stdout; tool calls (when every tool has a handler, the agent loop
//! runs) are shown on stderr as they happen. Ctrl-C while an answer streams cancels that answer
//! (the turn is left out of the history) and returns to the prompt; Ctrl-C at the prompt leaves
//! with exit code 130, Ctrl-D (end of input) leaves with 0, or with the exit code of the last
//! turn when it failed (so a script piping lines in sees a failure).

use crate::call::{self, Answer};
use crate::exit::{CliResult, Exit};
use crate::{inputs, ui, ChatArgs};
use prompty::{Agent, Message, PropertyKind, Role};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// The longest line read as a message, in bytes.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// What the session reads: a line, the end of input, or a line too long.
enum Read {
    Line(String),
    TooLong,
    End,
}

/// Reads stdin on a thread of its own, one line at a time, so Ctrl-C can be waited for too.
fn read_lines() -> mpsc::Receiver<Read> {
    let (tx, rx) = mpsc::channel(1);
    std::thread::spawn(move || {
        use std::io::{BufRead, Read as _};
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        loop {
            let mut buf = Vec::new();
            let read =
                (&mut lock).take(u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 1).read_until(b'\n', &mut buf);
            let item = match read {
                Ok(0) | Err(_) => Read::End,
                Ok(_) if buf.len() > MAX_LINE_BYTES && !buf.ends_with(b"\n") => {
                    // Skip the rest of the line.
                    let mut rest = Vec::new();
                    let _ = lock.read_until(b'\n', &mut rest);
                    Read::TooLong
                }
                Ok(_) => Read::Line(String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_owned()),
            };
            let end = matches!(item, Read::End);
            if tx.blocking_send(item).is_err() || end {
                return;
            }
        }
    });
    rx
}

/// The input a line goes into: the first required string input without a default.
fn message_input(agent: &Agent) -> Option<String> {
    agent
        .inputs
        .iter()
        .flatten()
        .find(|p| p.kind == PropertyKind::String && p.required && p.default.is_none())
        .map(|p| p.name.clone())
}

/// The input the conversation goes into: the first `thread` input.
fn thread_input(agent: &Agent) -> Option<String> {
    agent.inputs.iter().flatten().find(|p| p.kind == PropertyKind::Thread).map(|p| p.name.clone())
}

/// Runs `prompty chat`.
pub async fn run(args: &ChatArgs) -> CliResult {
    let mut agent = call::load(&args.file, args.model.as_deref()).await?;
    let fixed = inputs::one_call(args.inputs.as_deref(), &args.input, &agent, args.extra.allow_extra_inputs)?;
    crate::embedded::choose(&mut agent, args.local.as_deref());
    let message = message_input(&agent);
    let thread = thread_input(&agent);
    let turn = call::uses_turn(&agent);
    ui::info(format!(
        "chatting with {} (Ctrl-C cancels an answer, Ctrl-D or Ctrl-C at the prompt leaves)",
        args.file.display()
    ));
    let mut lines = read_lines();
    // The turns so far: user and assistant messages (the thread input's value), or, without a
    // thread input, the whole conversation sent last time.
    let mut history: Vec<Message> = Vec::new();
    let mut conversation: Vec<Message> = Vec::new();
    // The exit code of the last turn that failed.
    let mut failure = None;
    loop {
        prompt_marker();
        let read = tokio::select! {
            read = lines.recv() => read.unwrap_or(Read::End),
            () = call::ctrl_c() => {
                eprintln!();
                return Ok(Exit::Cancelled);
            }
        };
        let line = match read {
            Read::End => {
                eprintln!();
                return Ok(failure.unwrap_or(Exit::Ok));
            }
            Read::TooLong => {
                ui::error(format!("the line is longer than {MAX_LINE_BYTES} bytes: ignored"));
                continue;
            }
            Read::Line(line) if line.trim().is_empty() => continue,
            Read::Line(line) => line,
        };
        let user = Message::new(Role::User, line.clone());
        let inputs = {
            let mut inputs = fixed.clone();
            if let Some(name) = &message {
                inputs.insert(name.clone(), Value::String(line.clone()));
            }
            inputs
        };
        let turn_of = async {
            let messages = build(&agent, &fixed, &message, &thread, &history, &conversation, &line).await?;
            let answer =
                call::call(&agent, messages.clone(), &inputs, turn.then(call::turn_options), true, call::ctrl_c())
                    .await?;
            Ok((messages, answer))
        };
        let outcome = call::traced("cli-chat-turn", &serde_json::json!({"line": line}), turn_of).await;
        match outcome {
            Ok((messages, Answer::Done(result))) => {
                ui::out("\n").map_err(call::write_error)?;
                let text = match &result {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let answer = Message::new(Role::Assistant, text);
                failure = None;
                history.push(user);
                history.push(answer.clone());
                conversation = messages;
                conversation.push(answer);
            }
            Ok((_, Answer::Cancelled)) => {
                eprintln!();
                ui::info("[cancelled]");
            }
            Err(e) if e.exit == Exit::Cancelled => {
                eprintln!();
                ui::info("[cancelled]");
            }
            Err(e) => {
                eprintln!();
                ui::error(&e);
                failure = Some(e.exit);
            }
        }
    }
}

/// Prints the prompt marker on stderr (unless `--quiet`).
fn prompt_marker() {
    if ui::shows_info() {
        use std::io::Write;
        eprint!("> ");
        let _ = std::io::stderr().flush();
    }
}

/// The messages of the next turn.
async fn build(
    agent: &Agent,
    fixed: &Map<String, Value>,
    message: &Option<String>,
    thread: &Option<String>,
    history: &[Message],
    conversation: &[Message],
    line: &str,
) -> CliResult<Vec<Message>> {
    let user = Message::new(Role::User, line);
    if thread.is_none() && !conversation.is_empty() {
        let mut messages = conversation.to_vec();
        messages.push(user);
        return Ok(messages);
    }
    let mut inputs = fixed.clone();
    if let Some(name) = message {
        inputs.insert(name.clone(), Value::String(line.to_owned()));
    }
    let mut thread_messages = history.to_vec();
    if message.is_none() && thread.is_some() {
        thread_messages.push(user.clone());
    }
    if let Some(name) = thread {
        inputs.insert(name.clone(), serde_json::to_value(&thread_messages).unwrap_or_default());
    }
    let (_, mut messages) = crate::run::prepare(agent, &Value::Object(inputs)).await?;
    if message.is_none() && thread.is_none() {
        messages.push(user);
    }
    Ok(messages)
}
