//! Server-sent events: a streamed response body parsed into [`RawEvent`]s, one per event: its
//! `data` parsed as JSON ([`RawEvent::Data`]), or [`RawEvent::TransportError`] when the connection
//! breaks, stays silent too long, outlives its total deadline, sends an event larger than the
//! limit or one that is not JSON, or ends before the provider's final event. Nothing follows a
//! transport error.
//!
//! The parser ([`Parser`]) is linear: every byte received is scanned once for a line end, and a
//! line or event longer than [`Limits::max_event_bytes`] fails the stream as soon as it is seen,
//! so its memory is bounded too. Every event is scrubbed of the request's secrets before it is
//! parsed.

use super::error::error_chain;
use super::secrets::Secrets;
use crate::{RawEvent, RawStream};
use serde_json::Value;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// How a provider marks the normal end of a stream.
#[derive(Debug, Clone, Copy)]
pub(crate) enum End {
    /// A `data: [DONE]` line (OpenAI chat completions).
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    Done,
    /// An event whose JSON `type` is one of these (OpenAI Responses, Anthropic Messages).
    Types(&'static [&'static str]),
}

/// The bounds of one stream (see [`super::HttpConfig`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The longest silence between two pieces of data.
    pub idle: Duration,
    /// The longest the whole stream may last.
    pub total: Duration,
    /// The largest event (its data lines together) or line.
    pub max_event_bytes: usize,
}

const MAX_DATA_IN_ERROR: usize = 200;

/// A bounded, linear parser of the `text/event-stream` format: it keeps only the line being
/// received and the data of the event being built, and scans each byte once. Only `data` fields
/// matter here: `event`, `id`, `retry` and comments are skipped.
pub(crate) struct Parser {
    /// Bytes not yet consumed: the start of a line whose end has not arrived.
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no line end.
    scanned: usize,
    /// The data of the event being built (its `data` lines joined with `\n`).
    data: Vec<u8>,
    has_data: bool,
    /// The last line ended with `\r`: a `\n` right after it belongs to the same line end.
    after_cr: bool,
    /// Whether the start of the stream was checked for a byte-order mark.
    started: bool,
    max: usize,
}

impl Parser {
    pub(crate) fn new(max: usize) -> Self {
        Parser { buf: Vec::new(), scanned: 0, data: Vec::new(), has_data: false, after_cr: false, started: false, max }
    }

    /// Feeds `chunk`, appending each complete event's data to `out`. An error says which limit a
    /// line or an event exceeded; the parser is not usable after it.
    pub(crate) fn push(&mut self, chunk: &[u8], out: &mut VecDeque<Vec<u8>>) -> Result<(), String> {
        self.buf.extend_from_slice(chunk);
        if !self.started {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if self.buf.len() < BOM.len() && BOM.starts_with(&self.buf) {
                return Ok(());
            }
            self.started = true;
            if self.buf.starts_with(BOM) {
                self.buf.drain(..BOM.len());
            }
        }
        let mut start = 0;
        let mut at = self.scanned;
        while let Some(found) = memchr::memchr2(b'\n', b'\r', &self.buf[at..]) {
            let end = at + found;
            let byte = self.buf[end];
            if self.after_cr && byte == b'\n' && end == start {
                self.after_cr = false;
                start = end + 1;
                at = start;
                continue;
            }
            self.after_cr = byte == b'\r';
            let line = std::mem::take(&mut self.buf);
            let result = self.line(&line[start..end], out);
            self.buf = line;
            result?;
            start = end + 1;
            at = start;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() > self.max {
            return Err(format!(
                "a line of the stream is longer than {} bytes (HttpConfig::max_event_bytes)",
                self.max
            ));
        }
        Ok(())
    }

    /// The stream ended: an unfinished last line and event are taken as they are.
    pub(crate) fn finish(&mut self, out: &mut VecDeque<Vec<u8>>) -> Result<(), String> {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out)?;
        }
        self.line(b"", out)
    }

    fn line(&mut self, line: &[u8], out: &mut VecDeque<Vec<u8>>) -> Result<(), String> {
        if line.is_empty() {
            if self.has_data {
                out.push_back(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(0) => return Ok(()),
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if field != b"data" {
            return Ok(());
        }
        let extra = value.len().saturating_add(usize::from(self.has_data));
        if extra > self.max.saturating_sub(self.data.len()) {
            return Err(format!(
                "an event of the stream is larger than {} bytes (HttpConfig::max_event_bytes)",
                self.max
            ));
        }
        if self.has_data {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(value);
        self.has_data = true;
        Ok(())
    }
}

struct State {
    response: reqwest::Response,
    parser: Parser,
    queue: VecDeque<Vec<u8>>,
    end: End,
    limits: Limits,
    deadline: Instant,
    provider: String,
    secrets: Secrets,
    /// The provider's final event was seen.
    ended: bool,
    /// The body has been read to its end.
    eof: bool,
    finished: bool,
}

impl State {
    fn fail(&mut self, message: String) -> RawEvent {
        self.finished = true;
        let message = self.secrets.scrub(&format!("{}: {message}", self.provider)).into_owned();
        RawEvent::TransportError(message)
    }

    /// What one event's data gives: `None` to skip it, `Some(None)` for the end of the stream.
    fn event(&mut self, data: &[u8]) -> Option<Option<RawEvent>> {
        let data = data.trim_ascii();
        if data.is_empty() {
            return None;
        }
        if data == b"[DONE]" {
            return Some(None);
        }
        let data = self.secrets.scrub_bytes(data);
        Some(Some(match serde_json::from_slice::<Value>(&data) {
            Ok(value) => {
                if let End::Types(types) = self.end {
                    if value.get("type").and_then(Value::as_str).is_some_and(|t| types.contains(&t)) {
                        self.ended = true;
                    }
                }
                RawEvent::Data(value)
            }
            Err(e) => {
                let text = cut(&String::from_utf8_lossy(&data));
                self.fail(format!("the stream sent an event that is not JSON ({e}): {text}"))
            }
        }))
    }
}

/// The events of a successful streamed `response`, within `limits`, with `secrets` scrubbed.
pub(crate) fn events(
    response: reqwest::Response,
    end: End,
    limits: Limits,
    provider: &str,
    secrets: Secrets,
) -> RawStream {
    let now = Instant::now();
    let deadline = now.checked_add(limits.total).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
    let state = State {
        response,
        parser: Parser::new(limits.max_event_bytes),
        queue: VecDeque::new(),
        end,
        limits,
        deadline,
        provider: provider.to_owned(),
        secrets,
        ended: false,
        eof: false,
        finished: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if st.finished {
                return None;
            }
            if let Some(data) = st.queue.pop_front() {
                match st.event(&data) {
                    None => continue,
                    Some(None) => return None,
                    Some(Some(event)) => return Some((event, st)),
                }
            }
            if st.eof {
                st.finished = true;
                if st.ended {
                    return None;
                }
                let last = match st.end {
                    End::Done => "[DONE]".to_owned(),
                    End::Types(t) => t.first().copied().unwrap_or("final").to_owned(),
                };
                let event = st.fail(format!("the stream ended before its final event ({last})"));
                return Some((event, st));
            }
            let idle_until = Instant::now().checked_add(st.limits.idle).unwrap_or(st.deadline);
            let wait_until = idle_until.min(st.deadline);
            let next = match tokio::time::timeout_at(wait_until, st.response.chunk()).await {
                Ok(next) => next,
                Err(_) => {
                    let message = if Instant::now() >= st.deadline {
                        format!(
                            "the stream went on for longer than {:?} (HttpConfig::stream_timeout) and was abandoned",
                            st.limits.total
                        )
                    } else {
                        format!("the stream sent nothing for {:?} and was abandoned", st.limits.idle)
                    };
                    let event = st.fail(message);
                    return Some((event, st));
                }
            };
            let pushed = match next {
                Ok(Some(bytes)) => {
                    let (parser, queue) = (&mut st.parser, &mut st.queue);
                    parser.push(&bytes, queue)
                }
                Ok(None) => {
                    st.eof = true;
                    let (parser, queue) = (&mut st.parser, &mut st.queue);
                    parser.finish(queue)
                }
                Err(e) => {
                    let event = st.fail(format!("the stream broke: {}", error_chain(&e)));
                    return Some((event, st));
                }
            };
            if let Err(message) = pushed {
                let event = st.fail(message);
                return Some((event, st));
            }
        }
    }))
}

fn cut(data: &str) -> String {
    match prompty_core::text::prefix(data, MAX_DATA_IN_ERROR) {
        whole if whole.len() == data.len() => data.to_owned(),
        part => format!("{part}..."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]], max: usize) -> Result<Vec<String>, String> {
        let mut p = Parser::new(max);
        let mut out = VecDeque::new();
        for c in chunks {
            p.push(c, &mut out)?;
        }
        p.finish(&mut out)?;
        Ok(out.into_iter().map(|d| String::from_utf8(d).unwrap()).collect())
    }

    #[test]
    fn fields_line_ends_and_split_chunks() {
        let got = parse(&[b"\xEF\xBB", b"\xBFdata: a\r", b"\ndata:b\n\n: ping\n\nevent: x\rdata: c\r\r", b"data"], 100);
        assert_eq!(got.unwrap(), ["a\nb", "c", ""]);
        let got = parse(&[b"data: 1\n", b"\n", b"data: 2\r\n\r\n", b"id: 3\n\ndata: {\"a\"", b":1}"], 100);
        assert_eq!(got.unwrap(), ["1", "2", "{\"a\":1}"]);
    }

    #[test]
    fn limits() {
        let long = vec![b'x'; 101];
        let err = parse(&[b"data: ", &long], 100).unwrap_err();
        assert!(err.contains("line"), "{err}");
        let err = parse(&[b"data: 12345\ndata: 12345\n"], 10).unwrap_err();
        assert!(err.contains("event"), "{err}");
        assert_eq!(parse(&[b"data: 12345\n\ndata: 12345\n\n"], 10).unwrap(), ["12345", "12345"]);
    }

    #[test]
    fn a_long_line_in_small_chunks_is_linear() {
        let mut p = Parser::new(64 << 20);
        let mut out = VecDeque::new();
        p.push(b"data: \"", &mut out).unwrap();
        let chunk = vec![b'a'; 4096];
        let started = std::time::Instant::now();
        for _ in 0..(16 << 20) / 4096 {
            p.push(&chunk, &mut out).unwrap();
        }
        p.push(b"\"\n\n", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), (16 << 20) + 2);
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    }
}
