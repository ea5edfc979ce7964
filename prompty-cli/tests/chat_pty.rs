//! `prompty chat` in a pseudo-terminal, as a person uses it: a two-turn conversation, Ctrl-C
//! during a streamed answer (cancelled, the session goes on), Ctrl-D and Ctrl-C at the prompt;
//! and `prompty render --segments`, which colours values only on a terminal.

#![cfg(unix)]

mod common;

use common::{aimock, chat_prompt, scratch, Aimock};
use expectrl::process::unix::WaitStatus;
use expectrl::{ControlCode, Expect, Session};
use std::time::Duration;

/// `prompty chat` on the example chat prompt in a pty, talking to `server`.
fn spawn(server: &Aimock, tag: &str) -> expectrl::session::OsSession {
    let dir = scratch(tag);
    let mut command = std::process::Command::new(common::bin());
    command.current_dir(&dir).arg("chat").arg(chat_prompt()).args(["-i", "name=Ana"]);
    for v in common::CLEARED {
        command.env_remove(v);
    }
    command.env("OPENAI_BASE_URL", format!("{}/v1", server.url()));
    let mut session = Session::spawn(command).expect("cannot spawn prompty chat in a pty");
    session.set_expect_timeout(Some(Duration::from_secs(30)));
    session.expect("Ctrl-D or Ctrl-C at the prompt leaves").unwrap();
    session
}

/// Waits for the process to end and gives its exit code.
fn exit_code(session: &expectrl::session::OsSession) -> i32 {
    for _ in 0..300 {
        match session.get_process().status() {
            Ok(WaitStatus::Exited(_, code)) => return code,
            Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(50)),
            other => panic!("prompty chat ended oddly: {other:?}"),
        }
    }
    panic!("prompty chat did not end within 15 s");
}

#[test]
fn a_two_turn_conversation_then_ctrl_d() {
    let server = aimock();
    let mut p = spawn(&server, "pty-two-turns");
    p.expect("> ").unwrap();
    p.send_line("my name is Ana").unwrap();
    p.expect("Nice to meet you, Ana.").unwrap();
    p.expect("> ").unwrap();
    p.send_line("what is my name").unwrap();
    p.expect("You told me: Ana.").unwrap();
    p.expect("> ").unwrap();
    p.send(ControlCode::EndOfTransmission).unwrap();
    assert_eq!(exit_code(&p), 0);
    let requests = server.requests_to("/v1/chat/completions");
    assert_eq!(requests.len(), 2);
    assert_eq!(common::user_texts(&requests[1]), ["my name is Ana", "what is my name"], "the first turn is history");
}

#[test]
fn ctrl_c_cancels_a_streamed_answer_and_the_session_goes_on() {
    let server = aimock();
    let mut p = spawn(&server, "pty-ctrl-c");
    p.expect("> ").unwrap();
    p.send_line("tell me a long story").unwrap();
    // The answer streams slowly (4 characters every 60 ms): cancel it after its first words.
    p.expect("Once upon a time").unwrap();
    p.send(ControlCode::EndOfText).unwrap();
    let cancelled = p.expect("[cancelled]").unwrap();
    let streamed = String::from_utf8_lossy(cancelled.before()).into_owned();
    assert!(!streamed.contains("THE END"), "the answer ran to its end: {streamed}");
    // The session goes on, and the cancelled turn is not part of the history.
    p.expect("> ").unwrap();
    p.send_line("my name is Ana").unwrap();
    p.expect("Nice to meet you, Ana.").unwrap();
    p.expect("> ").unwrap();
    let requests = server.requests_to("/v1/chat/completions");
    assert_eq!(requests.len(), 2);
    assert_eq!(common::user_texts(&requests[1]), ["my name is Ana"]);
    // Ctrl-C at the prompt leaves, with the cancellation exit code.
    p.send(ControlCode::EndOfText).unwrap();
    assert_eq!(exit_code(&p), 130);
}

#[test]
fn a_batch_draws_a_progress_bar_on_a_terminal() {
    let server = aimock();
    let dir = scratch("pty-batch");
    std::fs::write(dir.join("in.jsonl"), "{\"question\": \"quick one\"}\n{\"question\": \"slow one\"}\n").unwrap();
    let mut command = std::process::Command::new(common::bin());
    command.current_dir(&dir).arg("run").arg(chat_prompt()).args(["--inputs", "in.jsonl", "--jobs", "1"]);
    for v in common::CLEARED {
        command.env_remove(v);
    }
    command.env("OPENAI_BASE_URL", format!("{}/v1", server.url()));
    let mut p = Session::spawn(command).unwrap();
    p.set_expect_timeout(Some(Duration::from_secs(30)));
    // The first result line, then the bar while the slow line runs, then the second line.
    p.expect("\"the quick answer\"").unwrap();
    p.expect("1/2 lines").unwrap();
    p.expect("\"the slow answer\"").unwrap();
    p.expect("2 lines: 2 succeeded, 0 failed").unwrap();
    assert_eq!(exit_code(&p), 0);
}

#[test]
fn render_segments_colours_values_on_a_terminal() {
    let dir = scratch("pty-segments");
    std::fs::write(dir.join("seg.prompty"), "---\ninputs: [name]\n---\nuser:\nHello {{ name }}!\n").unwrap();
    let mut command = std::process::Command::new(common::bin());
    command.current_dir(&dir).args(["render", "seg.prompty", "--segments", "-i", "name=Ana"]);
    for v in ["NO_COLOR", "CLICOLOR_FORCE"] {
        command.env_remove(v);
    }
    let mut session = Session::spawn(command).expect("cannot spawn prompty render in a pty");
    session.set_expect_timeout(Some(Duration::from_secs(30)));
    // No marker on a terminal: the value in the first colour, the legend on stderr (same pty).
    session.expect("values from: \x1b[36m").unwrap();
    session.expect("Hello \x1b[36mAna\x1b[0m!").unwrap();
    assert_eq!(exit_code(&session), 0);
}
