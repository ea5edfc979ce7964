//! Server-sent events: a streamed response body parsed with `eventsource-stream` into
//! [`RawEvent`]s, one per event: its `data` parsed as JSON ([`RawEvent::Data`]), or
//! [`RawEvent::TransportError`] when the connection breaks, stays silent too long, sends an event
//! that is not JSON, or ends before the provider's final event. Nothing follows a transport error.

use crate::{RawEvent, RawStream};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;
use std::time::Duration;

/// How a provider marks the normal end of a stream.
#[derive(Debug, Clone, Copy)]
pub(crate) enum End {
    /// A `data: [DONE]` line (OpenAI chat completions).
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    Done,
    /// An event whose JSON `type` is one of these (OpenAI Responses, Anthropic Messages).
    Types(&'static [&'static str]),
}

const MAX_DATA_IN_ERROR: usize = 200;

struct State<S> {
    events: S,
    end: End,
    idle: Duration,
    provider: String,
    ended: bool,
    finished: bool,
}

/// The events of a successful streamed `response`.
pub(crate) fn events(response: reqwest::Response, end: End, idle: Duration, provider: &str) -> RawStream {
    let events = Box::pin(response.bytes_stream().eventsource());
    let state = State { events, end, idle, provider: provider.to_owned(), ended: false, finished: false };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if st.finished {
                return None;
            }
            let next = match tokio::time::timeout(st.idle, st.events.next()).await {
                Ok(next) => next,
                Err(_) => {
                    st.finished = true;
                    let msg = format!("{}: the stream sent nothing for {:?} and was abandoned", st.provider, st.idle);
                    return Some((RawEvent::TransportError(msg), st));
                }
            };
            match next {
                Some(Ok(event)) => {
                    let data = event.data.trim();
                    if data.is_empty() {
                        continue;
                    }
                    if data == "[DONE]" {
                        return None;
                    }
                    match serde_json::from_str::<Value>(data) {
                        Ok(value) => {
                            if let End::Types(types) = st.end {
                                if value.get("type").and_then(Value::as_str).is_some_and(|t| types.contains(&t)) {
                                    st.ended = true;
                                }
                            }
                            return Some((RawEvent::Data(value), st));
                        }
                        Err(e) => {
                            st.finished = true;
                            let msg = format!(
                                "{}: the stream sent an event that is not JSON ({e}): {}",
                                st.provider,
                                cut(data)
                            );
                            return Some((RawEvent::TransportError(msg), st));
                        }
                    }
                }
                Some(Err(e)) => {
                    st.finished = true;
                    let msg = format!("{}: the stream broke: {}", st.provider, describe(&e));
                    return Some((RawEvent::TransportError(msg), st));
                }
                None => {
                    st.finished = true;
                    if st.ended {
                        return None;
                    }
                    let last = match st.end {
                        End::Done => "[DONE]".to_owned(),
                        End::Types(t) => t.first().copied().unwrap_or("final").to_owned(),
                    };
                    let msg = format!("{}: the stream ended before its final event ({last})", st.provider);
                    return Some((RawEvent::TransportError(msg), st));
                }
            }
        }
    }))
}

fn describe(e: &eventsource_stream::EventStreamError<reqwest::Error>) -> String {
    match e {
        eventsource_stream::EventStreamError::Transport(t) => super::http::error_chain(t),
        other => other.to_string(),
    }
}

fn cut(data: &str) -> String {
    if data.len() <= MAX_DATA_IN_ERROR {
        return data.to_owned();
    }
    let mut end = MAX_DATA_IN_ERROR;
    while !data.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &data[..end])
}
