//! The stdio transport: `Content-Length` framed JSON-RPC messages on stdin and stdout, read so that
//! no input stops the server. A frame whose body is not JSON, not a JSON-RPC message the server can
//! read, too large, or whose headers are broken is answered with a JSON-RPC error (`-32700` parse
//! error, or `-32600` invalid request with the message's `id` when it has one) and the server
//! reads the next frame. Text that is not UTF-8 is read with U+FFFD in place of the bad bytes, and
//! a lone UTF-16 surrogate escaped in a JSON string (`"\ud800"`, which a JavaScript client can
//! send and JSON parsers refuse) as U+FFFD: one UTF-16 unit for one, so the positions the client
//! sends later still match.
//!
//! Bounds: a message body up to [`MAX_MESSAGE_BYTES`]; a header line up to 8 KiB.

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use serde_json::{json, Value};
use std::io::{self, BufRead, Read, Write};
use std::thread::JoinHandle;

/// The largest message body the server reads (256 MiB: a 10 MB document whose every character the
/// client escapes as `\u0001` fits); a larger one is skipped and answered with an error.
///
/// ```
/// assert_eq!(prompty_lsp::transport::MAX_MESSAGE_BYTES, 256 * 1024 * 1024);
/// ```
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// The longest header line read (8 KiB); the rest of a longer one is skipped.
const MAX_HEADER_LINE: usize = 8 << 10;

/// What one frame of the input was.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A JSON-RPC message.
    Message(Message),
    /// A frame the server cannot read: the error to answer with (`id` is `null` when unknown).
    Invalid {
        /// The `id` of the broken request, if it has one.
        id: Value,
        /// The JSON-RPC error code.
        code: ErrorCode,
        /// What was wrong.
        message: String,
    },
    /// A frame not to answer (a response with an id the server never gave): why.
    Dropped(String),
}

impl Incoming {
    /// The JSON-RPC error response for an invalid frame.
    fn error_response(id: &Value, code: ErrorCode, message: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code as i32, "message": message}})
    }
}

/// Reads the next frame of `input`; `None` at the end of the input (also within a frame).
///
/// # Errors
/// Reading `input` failed.
pub(crate) fn read(input: &mut impl BufRead) -> io::Result<Option<Incoming>> {
    read_bounded(input, MAX_MESSAGE_BYTES)
}

/// [`read`] with bodies up to `max` bytes.
fn read_bounded(input: &mut impl BufRead, max: usize) -> io::Result<Option<Incoming>> {
    let mut length: Option<usize> = None;
    let mut problem: Option<String> = None;
    let mut headers = 0;
    loop {
        let Some(line) = read_line(input)? else { return Ok(None) };
        let line = match line {
            Line::Text(text) => text,
            Line::TooLong => {
                problem.get_or_insert_with(|| format!("a header line is longer than {MAX_HEADER_LINE} bytes"));
                headers += 1;
                continue;
            }
        };
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if headers == 0 {
                continue; // blank lines between frames
            }
            break;
        }
        headers += 1;
        let Some((name, value)) = line.split_once(':') else {
            problem.get_or_insert_with(|| format!("the header line {line:?} is not `Name: value`"));
            continue;
        };
        if name.trim().eq_ignore_ascii_case("Content-Length") {
            match value.trim().parse::<usize>() {
                Ok(n) => length = Some(n),
                Err(_) => {
                    problem
                        .get_or_insert_with(|| format!("Content-Length {:?} is not a number of bytes", value.trim()));
                }
            }
        }
    }
    let invalid = |message: String| Incoming::Invalid { id: Value::Null, code: ErrorCode::ParseError, message };
    let Some(length) = length else {
        let why = problem.unwrap_or_else(|| "the message has no Content-Length header".to_owned());
        return Ok(Some(invalid(format!("{why}: every message starts with `Content-Length: <bytes>`"))));
    };
    if length > max {
        let skipped = io::copy(&mut input.take(length as u64), &mut io::sink())?;
        if skipped < length as u64 {
            return Ok(None);
        }
        return Ok(Some(invalid(format!(
            "the message is {length} bytes: the prompty language server reads messages up to {max} bytes"
        ))));
    }
    let mut body = Vec::new();
    input.take(length as u64).read_to_end(&mut body)?;
    if body.len() < length {
        return Ok(None);
    }
    if let Some(why) = problem {
        return Ok(Some(invalid(why)));
    }
    Ok(Some(decode(body)))
}

/// The fields of a JSON-RPC message, read in one pass (the server tells a request from a
/// notification by its `id`, also an `id` the protocol layer cannot hold, like 2^40).
#[derive(serde::Deserialize)]
struct Fields {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Value,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    error: Option<lsp_server::ResponseError>,
}

/// The message of a frame's body.
pub(crate) fn decode(body: Vec<u8>) -> Incoming {
    let text = String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    if !text.trim_start().starts_with('{') {
        return unreadable(&text, None);
    }
    let fields = match serde_json::from_str::<Fields>(&text) {
        Ok(fields) => fields,
        Err(first) => {
            // A lone surrogate makes the whole body unreadable: read it again without them.
            let repaired = replace_lone_surrogates(&text);
            let text = repaired.as_deref().unwrap_or(&text);
            match serde_json::from_str::<Fields>(text) {
                Ok(fields) => fields,
                Err(e) => return unreadable(text, Some(if repaired.is_some() { e } else { first })),
            }
        }
    };
    let id = fields.id.map(|id| match &id {
        Value::String(s) => Ok(RequestId::from(s.clone())),
        Value::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()).map(RequestId::from).ok_or(id),
        _ => Err(id),
    });
    let invalid = |id: Value, message: String| Incoming::Invalid { id, code: ErrorCode::InvalidRequest, message };
    match (id, fields.method) {
        (Some(Ok(id)), Some(method)) => Incoming::Message(Message::Request(Request { id, method, params: fields.params })),
        (Some(Err(id)), Some(method)) => invalid(
            id,
            format!("the id of the `{method}` request is neither a string nor a number the server can answer (a 32-bit integer)"),
        ),
        (None, Some(method)) => Incoming::Message(Message::Notification(Notification { method, params: fields.params })),
        (Some(Ok(id)), None) => {
            let response_result = fields.error.map_or(Ok(fields.result), Err);
            Incoming::Message(Message::Response(Response { id, response_result }))
        }
        (Some(Err(_)), None) => Incoming::Dropped("a response to no request of the server (its id is no request id)".to_owned()),
        (None, None) => invalid(Value::Null, "a message with neither `method` nor `id`: no JSON-RPC message".to_owned()),
    }
}

/// The error for a body that is no JSON-RPC message: invalid (with its `id` when it has one) if it
/// is JSON, else a parse error.
fn unreadable(text: &str, error: Option<serde_json::Error>) -> Incoming {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => Incoming::Invalid {
            id: value.get("id").filter(|id| id.is_number() || id.is_string()).cloned().unwrap_or(Value::Null),
            code: ErrorCode::InvalidRequest,
            message: match error {
                Some(e) => format!("not a JSON-RPC request, notification or response the server can read: {e}"),
                None => "the message is JSON but no object: a JSON-RPC message is an object".to_owned(),
            },
        },
        Err(e) => Incoming::Invalid {
            id: Value::Null,
            code: ErrorCode::ParseError,
            message: format!("the message is not JSON: {e}"),
        },
    }
}

/// `text` with every `\uXXXX` escape of a lone UTF-16 surrogate replaced by `\ufffd`, or `None`
/// when it has none.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = bytes.get(at..at + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(u) = unit(i) else {
            i += 2; // another escape (`\\`, `\"`, ...): its second byte is never a new escape
            continue;
        };
        let high = (0xD800..0xDC00).contains(&u);
        let low = (0xDC00..0xE000).contains(&u);
        if high && unit(i + 6).is_some_and(|next| (0xDC00..0xE000).contains(&next)) {
            i += 12; // a pair
            continue;
        }
        if high || low {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..i]);
            out.push_str("\\ufffd");
            copied = i + 6;
        }
        i += 6;
    }
    let mut out = out?;
    out.push_str(&text[copied..]);
    Some(out)
}

enum Line {
    Text(String),
    TooLong,
}

/// One line of `input` up to its `\n`, at most [`MAX_HEADER_LINE`] bytes kept; `None` at the end.
fn read_line(input: &mut impl BufRead) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(None);
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let used = chunk.len();
        if line.len() + used > MAX_HEADER_LINE {
            too_long = true;
        } else {
            line.extend_from_slice(chunk);
        }
        input.consume(used);
        if done {
            return Ok(Some(if too_long {
                Line::TooLong
            } else {
                Line::Text(String::from_utf8_lossy(&line).into_owned())
            }));
        }
    }
}

/// The transport's threads.
pub(crate) struct Threads {
    writer: JoinHandle<io::Result<()>>,
}

impl Threads {
    /// Waits until every message the server sent is written (the writer ends when the
    /// connection is dropped). The reader is not waited for: it may be blocked on stdin.
    pub(crate) fn join(self) -> io::Result<()> {
        self.writer.join().unwrap_or_else(|_| Err(io::Error::other("the writer thread panicked")))
    }
}

/// A connection on stdin and stdout.
pub(crate) fn stdio() -> (Connection, Threads) {
    let (to_server, receiver) = crossbeam_channel::bounded::<Message>(16);
    let (sender, from_server) = crossbeam_channel::bounded::<Message>(16);
    let writer = std::thread::Builder::new()
        .name("prompty-lsp-writer".to_owned())
        .spawn(move || {
            for message in from_server {
                // Locked per message: the reader answers frames it cannot read in between.
                message.write(&mut io::stdout().lock())?;
            }
            Ok(())
        })
        .expect("a thread for the writer");
    std::thread::Builder::new()
        .name("prompty-lsp-reader".to_owned())
        .spawn(move || {
            let mut input = io::stdin().lock();
            loop {
                let incoming = match read(&mut input) {
                    Ok(Some(incoming)) => incoming,
                    Ok(None) => return,
                    Err(e) => {
                        eprintln!("prompty lsp: cannot read stdin: {e}");
                        return;
                    }
                };
                match incoming {
                    Incoming::Message(message) => {
                        let exit = matches!(&message, Message::Notification(n) if n.method == "exit");
                        if to_server.send(message).is_err() || exit {
                            return;
                        }
                    }
                    Incoming::Dropped(why) => eprintln!("prompty lsp: ignored {why}"),
                    Incoming::Invalid { id, code, message } => {
                        eprintln!("prompty lsp: {message}");
                        let response = Incoming::error_response(&id, code, &message);
                        let body = response.to_string();
                        let mut out = io::stdout().lock();
                        let written =
                            write!(out, "Content-Length: {}\r\n\r\n{body}", body.len()).and_then(|()| out.flush());
                        if written.is_err() {
                            return;
                        }
                    }
                }
            }
        })
        .expect("a thread for the reader");
    (Connection { sender, receiver }, Threads { writer })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8]) -> Vec<Incoming> {
        let mut input = io::BufReader::new(input);
        std::iter::from_fn(|| read_bounded(&mut input, 1000).unwrap()).collect()
    }

    fn framed(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    #[test]
    fn broken_frames_are_answered_and_the_next_one_is_read() {
        let mut input = Vec::new();
        input.extend(framed(r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#));
        input.extend(framed("{not json"));
        input.extend(framed(r#"{"jsonrpc":"2.0","id":7,"method":5}"#));
        input.extend(b"Content-Length: lots\r\n\r\n");
        input.extend(b"X-Nothing\r\n\r\n");
        input.extend(framed(r#"{"jsonrpc":"2.0","method":"b"}"#));
        input.extend(b"Content-Length: 999\r\n\r\n{");
        let got = frames(&input);
        assert!(matches!(&got[0], Incoming::Message(Message::Request(r)) if r.method == "a"), "{got:?}");
        assert!(matches!(&got[1], Incoming::Invalid { id: Value::Null, code: ErrorCode::ParseError, .. }));
        assert!(matches!(&got[2], Incoming::Invalid { id, code: ErrorCode::InvalidRequest, .. } if id == 7));
        assert!(matches!(&got[3], Incoming::Invalid { message, .. } if message.contains("\"lots\"")));
        assert!(matches!(&got[4], Incoming::Invalid { message, .. } if message.contains("X-Nothing")));
        assert!(matches!(&got[5], Incoming::Message(Message::Notification(n)) if n.method == "b"));
        assert_eq!(got.len(), 6, "a body cut short by the end of the input is the end: {got:?}");
    }

    #[test]
    fn a_message_over_the_bound_is_skipped() {
        let mut input = b"Content-Length: 1001\r\n\r\n".to_vec();
        input.resize(input.len() + 1001, b'x');
        input.extend(framed(r#"{"jsonrpc":"2.0","method":"after"}"#));
        let got = frames(&input);
        assert!(
            matches!(&got[0], Incoming::Invalid { message, .. } if message.contains("1001 bytes") && message.contains("up to 1000 bytes"))
        );
        assert!(matches!(&got[1], Incoming::Message(Message::Notification(n)) if n.method == "after"));
    }

    #[test]
    fn lone_surrogates_and_bad_utf8_become_replacement_characters() {
        let body = r#"{"jsonrpc":"2.0","method":"m","params":"a\ud800b\udc00c\ud83d\ude00d\\ud800"}"#;
        let Incoming::Message(Message::Notification(n)) = decode(body.as_bytes().to_vec()) else { panic!() };
        assert_eq!(n.params, "a\u{fffd}b\u{fffd}c😀d\\ud800");
        let mut bytes = br#"{"jsonrpc":"2.0","method":"m","params":"x"#.to_vec();
        bytes.extend([0xff, 0xfe]);
        bytes.extend(br#"y"}"#);
        let Incoming::Message(Message::Notification(n)) = decode(bytes) else { panic!() };
        assert_eq!(n.params, "x\u{fffd}\u{fffd}y");
        assert_eq!(replace_lone_surrogates(r#""\u0041\\u\"""#), None);
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart_by_their_id() {
        let decoded = |body: &str| decode(body.as_bytes().to_vec());
        let big = decoded(r#"{"jsonrpc":"2.0","id":4294967296,"method":"textDocument/hover"}"#);
        assert!(
            matches!(&big, Incoming::Invalid { id, code: ErrorCode::InvalidRequest, message }
            if *id == 4294967296u64 && message.contains("`textDocument/hover` request")),
            "{big:?}"
        );
        let float = decoded(r#"{"id":1.5,"method":"m"}"#);
        assert!(matches!(&float, Incoming::Invalid { id, .. } if *id == 1.5), "{float:?}");
        let request = decoded(r#"{"id":"a","method":"m","params":[1]}"#);
        assert!(matches!(&request, Incoming::Message(Message::Request(r)) if r.params == serde_json::json!([1])));
        let response = decoded(r#"{"id":3,"error":{"code":-1,"message":"no"}}"#);
        assert!(matches!(&response, Incoming::Message(Message::Response(r)) if r.response_result.is_err()));
        assert!(matches!(decoded(r#"{"id":[],"result":1}"#), Incoming::Dropped(_)));
        assert!(matches!(decoded("{}"), Incoming::Invalid { id: Value::Null, code: ErrorCode::InvalidRequest, .. }));
        let array = decoded(r#"["x", "m"]"#);
        assert!(matches!(&array, Incoming::Invalid { message, .. } if message.contains("no object")), "{array:?}");
    }

    #[test]
    fn header_lines_are_bounded() {
        let mut input = vec![b'a'; MAX_HEADER_LINE * 3];
        input.extend(b"\r\n\r\n");
        input.extend(framed(r#"{"jsonrpc":"2.0","method":"after"}"#));
        let got = frames(&input);
        assert!(matches!(&got[0], Incoming::Invalid { message, .. } if message.contains("longer than 8192")));
        assert!(matches!(&got[1], Incoming::Message(Message::Notification(n)) if n.method == "after"));
    }
}
