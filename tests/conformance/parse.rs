//! The `parse` stage (digest §2.2): parse already-rendered text with the default agent, expand the
//! thread nonces of `input.thread_inputs`, and compare the messages by projection.

use crate::compare::{check, Check};
use prompty::{Agent, Message, RichInputs};
use serde_json::{json, Value};

/// The prefix of every rich-input nonce token.
const TOKEN_PREFIX: &str = "__PROMPTY_THREAD_";

/// Runs one parse vector.
pub fn run(vector: &Value) -> Check {
    let expected = &vector["expected"];
    let observed = match parse(&vector["input"]) {
        Ok(messages) => json!({ "messages": messages }),
        Err(message) => json!({ "error": message }),
    };
    check(expected, &observed)
}

fn parse(input: &Value) -> Result<Value, String> {
    let rendered = input["rendered"].as_str().ok_or("input.rendered must be a string")?;
    let mut messages = prompty::parse(&Agent::default(), rendered).map_err(|e| e.to_string())?;
    if let Some(threads) = input.get("thread_inputs").and_then(Value::as_object) {
        let mut rich = RichInputs::new();
        for (name, value) in threads {
            // A thread value that is not a list is not expanded: its token stays as text.
            let Value::Array(items) = value else { continue };
            let thread = items
                .iter()
                .map(|m| serde_json::from_value::<Message>(m.clone()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("thread_inputs.{name}: {e}"))?;
            for token in tokens_for(&messages, name) {
                rich.insert_thread(token, thread.clone());
            }
        }
        messages = prompty::expand_rich(messages, &rich);
    }
    serde_json::to_value(&messages).map_err(|e| e.to_string())
}

/// The distinct tokens `__PROMPTY_THREAD_<hex+>_<name>__` found in the messages' text parts.
fn tokens_for(messages: &[Message], name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for text in messages.iter().flat_map(|m| m.content.iter().filter_map(|p| p.as_text())) {
        for token in scan_tokens(text, name) {
            if !found.contains(&token) {
                found.push(token);
            }
        }
    }
    found
}

/// The tokens for input `name` in `text` (any number of hex digits, at least one).
fn scan_tokens(text: &str, name: &str) -> Vec<String> {
    let suffix = format!("_{name}__");
    let mut tokens = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find(TOKEN_PREFIX) {
        let start = from + offset;
        let hex_start = start + TOKEN_PREFIX.len();
        let hex_len = text[hex_start..].bytes().take_while(u8::is_ascii_hexdigit).count();
        let end = hex_start + hex_len + suffix.len();
        if hex_len > 0 && text[hex_start + hex_len..].starts_with(&suffix) {
            tokens.push(text[start..end].to_owned());
            from = end;
        } else {
            from = hex_start;
        }
    }
    tokens
}
