//! Structured output on any OpenAI-compatible server: where a request's [`StructuredOutput`]
//! mode comes from, the automatic fallback when a server rejects it, and the modes remembered
//! per endpoint.
//!
//! **Where the mode comes from**, first found wins: [`set_structured_output`] (what the command
//! line's `--structured-output MODE` sets), the [`STRUCTURED_OUTPUT_ENV`] environment variable
//! (`PROMPTY_STRUCTURED_OUTPUT=jsonObjectSchema`), the prompt's `model.options.structuredOutput`,
//! its connection's `structuredOutput`, the mode remembered for the endpoint, `jsonSchema`. A
//! per-run choice beats the file: one prompt can be pointed at another server without editing it.
//!
//! **The automatic fallback.** When none of the first four chose the mode (the prompt relies on
//! the default), a request that carries a `response_format` (the prompt declares `outputs:`, mode
//! not `none`) and is refused as a *format rejection* is sent once more, in the next mode of
//! [`StructuredOutput::fallback`] (`jsonSchema` → `jsonObjectSchema` → `jsonObject`; `none` is
//! never chosen for you). A format rejection is an answer with status 400, 422, 500 or 501 (how
//! servers report a request body they do not accept: llama-cpp-python answers 500 to
//! `json_schema`) that either
//! - names the format (`response_format`, `json_schema`, `json_object`, `text.format`), from any
//!   host; or
//! - comes from a host that is not OpenAI's or Azure's ([`crate::is_openai_host`]): a compatible
//!   server may word its refusal in any way.
//!
//! Other statuses never are: 401/403 (the key), 404 (the URL), 408/429 (time, rate), 502/503/504
//! (a gateway or an overloaded server, retried as usual). A format rejection is never retried as
//! the same request (it would be refused again): the fallback takes the place of the retries.
//! The fallback happens at most once per call; the mode that then works is remembered for the
//! endpoint (the request URL without its query, and the model id) for the rest of the process,
//! so later calls send it first. At most [`MAX_REMEMBERED_ENDPOINTS`] endpoints are remembered;
//! beyond, the one remembered first is forgotten. Each fallback emits a `tracing` event (target
//! `prompty::structured_output`) and sets the attribute `prompty.structured_output.fallback`
//! (`"jsonSchema -> jsonObjectSchema"`) on the `prompty.execute` (or `prompty.stream`) span.
//!
//! Switch it off with `PROMPTY_STRUCTURED_OUTPUT_FALLBACK=off` ([`STRUCTURED_OUTPUT_FALLBACK_ENV`])
//! or [`set_structured_output_fallback`]`(Some(false))`: then the mode is sent as chosen, nothing
//! is remembered, and nothing remembered is used. A mode chosen explicitly (any of the first four
//! sources) is never changed. When a server still refuses the format, the call fails with a
//! configuration error ([`Error::Config`], never retried, not even by the agent loop) whose
//! `setting` is the one that chose the mode (`model.options.structuredOutput` when nothing did)
//! and whose message holds the server's answer, the mode(s) tried, where the mode came from and
//! every setting that chooses it.
//!
//! ```no_run
//! use prompty::providers::openai::{set_structured_output, set_structured_output_fallback};
//! use prompty::StructuredOutput;
//! // Every request of this process asks for JSON with the schema beside it (llama.cpp's servers),
//! // whatever the prompts say; and no automatic fallback.
//! set_structured_output(Some(StructuredOutput::JsonObjectSchema));
//! set_structured_output_fallback(Some(false));
//! ```

use crate::{Agent, Connection, Error, HttpFailure, Result, StructuredOutput};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// The environment variable that chooses the structured-output mode of every request (above the
/// prompt's settings, below [`set_structured_output`]): `jsonSchema`, `jsonObjectSchema`,
/// `jsonObject` or `none` (case is ignored). Any other value fails the call that would use it
/// (a prompt with `outputs:`), with an error naming the variable.
///
/// ```
/// assert_eq!(prompty::providers::openai::STRUCTURED_OUTPUT_ENV, "PROMPTY_STRUCTURED_OUTPUT");
/// ```
pub const STRUCTURED_OUTPUT_ENV: &str = "PROMPTY_STRUCTURED_OUTPUT";

/// The environment variable that switches the automatic structured-output fallback: `off` (or
/// `false`, `0`, `no`) switches it off, `on` (`true`, `1`, `yes`) or unset leaves it on. Any other
/// value fails the call that would use it, with an error naming the variable.
/// [`set_structured_output_fallback`] wins over it.
///
/// ```
/// assert_eq!(prompty::providers::openai::STRUCTURED_OUTPUT_FALLBACK_ENV, "PROMPTY_STRUCTURED_OUTPUT_FALLBACK");
/// ```
pub const STRUCTURED_OUTPUT_FALLBACK_ENV: &str = "PROMPTY_STRUCTURED_OUTPUT_FALLBACK";

/// How many endpoints (request URL and model) the process remembers a fallback mode for; when
/// one more is remembered, the one remembered first is forgotten.
///
/// ```
/// assert_eq!(prompty::providers::openai::MAX_REMEMBERED_ENDPOINTS, 64);
/// ```
pub const MAX_REMEMBERED_ENDPOINTS: usize = 64;

/// [`set_structured_output`]: 0 none, else 1 + the index in [`StructuredOutput::ALL`].
static OVERRIDE: AtomicU8 = AtomicU8::new(0);
/// [`set_structured_output_fallback`]: 0 unset (the environment decides), 1 on, 2 off.
static FALLBACK: AtomicU8 = AtomicU8::new(0);
/// The remembered modes, oldest first.
static REMEMBERED: Mutex<VecDeque<(String, StructuredOutput)>> = Mutex::new(VecDeque::new());

/// Sets the structured-output mode of every OpenAI-compatible request this process sends, above
/// [`STRUCTURED_OUTPUT_ENV`] and the prompts' settings (`None`: back to them). What
/// `prompty run --structured-output MODE` does.
///
/// ```
/// use prompty::providers::openai::{request_body, set_structured_output};
/// use prompty::{Agent, Message, Role, StructuredOutput};
/// let agent = Agent::from_value(serde_json::json!({"model": "m", "outputs": [{"name": "city", "kind": "string"}]}))?;
/// set_structured_output(Some(StructuredOutput::JsonObject));
/// let body = request_body(&agent, &[Message::new(Role::User, "Paris")])?;
/// set_structured_output(None);
/// assert_eq!(body["response_format"], serde_json::json!({"type": "json_object"}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn set_structured_output(mode: Option<StructuredOutput>) {
    let code = mode.and_then(|m| StructuredOutput::ALL.iter().position(|x| *x == m)).map_or(0, |i| i + 1);
    OVERRIDE.store(u8::try_from(code).unwrap_or(0), Ordering::SeqCst);
}

/// Switches the automatic structured-output fallback on (`Some(true)`) or off (`Some(false)`)
/// for this process, above [`STRUCTURED_OUTPUT_FALLBACK_ENV`]; `None`: the environment decides
/// again (on by default). See [the module](self) for what the fallback does.
///
/// ```
/// prompty::providers::openai::set_structured_output_fallback(Some(false));
/// prompty::providers::openai::set_structured_output_fallback(None);
/// ```
pub fn set_structured_output_fallback(on: Option<bool>) {
    FALLBACK.store(
        match on {
            None => 0,
            Some(true) => 1,
            Some(false) => 2,
        },
        Ordering::SeqCst,
    );
}

/// Forgets every mode remembered after a fallback (the next call to each endpoint starts again
/// from the prompt's mode).
///
/// ```
/// prompty::providers::openai::forget_structured_output_fallbacks();
/// ```
pub fn forget_structured_output_fallbacks() {
    REMEMBERED.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Where the structured-output mode of a request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModeSource {
    /// [`set_structured_output`] (`--structured-output`).
    Override,
    /// [`STRUCTURED_OUTPUT_ENV`].
    Environment,
    /// `model.options.structuredOutput`.
    Option,
    /// The connection's `structuredOutput`.
    Connection,
    /// Remembered for the endpoint after a fallback.
    Remembered,
    /// Nothing chose it: `jsonSchema`.
    Default,
}

impl ModeSource {
    /// The setting that chooses the mode, as an error names it.
    fn setting(self) -> &'static str {
        match self {
            ModeSource::Override => "--structured-output",
            ModeSource::Environment => STRUCTURED_OUTPUT_ENV,
            ModeSource::Connection => "model.connection.structuredOutput",
            ModeSource::Option | ModeSource::Remembered | ModeSource::Default => "model.options.structuredOutput",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            ModeSource::Override => "chosen with --structured-output (set_structured_output)",
            ModeSource::Environment => "chosen with PROMPTY_STRUCTURED_OUTPUT",
            ModeSource::Option => "chosen with the prompt's model.options.structuredOutput",
            ModeSource::Connection => "chosen with the connection's structuredOutput",
            ModeSource::Remembered => "remembered for this endpoint after an earlier fallback",
            ModeSource::Default => "the default",
        }
    }
}

/// The structured-output mode of a request and what the fallback may do with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModeChoice {
    /// The mode sent first.
    pub mode: StructuredOutput,
    /// Where it came from.
    pub source: ModeSource,
    /// Whether the fallback is on (only known, and only read, when the mode was not chosen).
    pub fallback: bool,
    /// The endpoint and model the mode is remembered under, when known.
    pub key: Option<String>,
    /// Whether the endpoint is one of OpenAI's or Azure's hosts.
    pub known_host: bool,
}

impl ModeChoice {
    /// Whether a rejected mode may be replaced by the next one.
    pub(crate) fn may_fall_back(&self) -> bool {
        self.fallback && matches!(self.source, ModeSource::Remembered | ModeSource::Default)
    }
}

/// The key a mode is remembered under: the request URL without its query, and the model.
pub(crate) fn endpoint_key(url: &str, agent: &Agent) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let model = agent.model.as_ref().map_or("", |m| m.id.as_str());
    format!("{url} {model}")
}

/// The mode for a request of `agent` through `connection` (the one actually used) to the
/// endpoint `key` (see [`endpoint_key`]). Reads the environment only when the agent declares
/// outputs (the mode matters only then).
pub(crate) fn choose(
    agent: &Agent,
    connection: Option<&Connection>,
    key: impl FnOnce() -> Option<String>,
    known_host: bool,
) -> Result<ModeChoice> {
    let option = agent.model.as_ref().and_then(|m| m.options.as_ref()).and_then(|o| o.structured_output);
    let from_connection = connection.and_then(super::wire::connection_common).and_then(|c| c.structured_output);
    let choice = |mode, source| ModeChoice { mode, source, fallback: false, key: None, known_host };
    if agent.outputs.as_deref().is_none_or(<[_]>::is_empty) {
        let (mode, source) = match (option, from_connection) {
            (Some(m), _) => (m, ModeSource::Option),
            (None, Some(m)) => (m, ModeSource::Connection),
            (None, None) => (StructuredOutput::default(), ModeSource::Default),
        };
        return Ok(choice(mode, source));
    }
    if let Some(mode) = overridden() {
        return Ok(choice(mode, ModeSource::Override));
    }
    if let Some(text) = env(STRUCTURED_OUTPUT_ENV) {
        let mode = text.parse::<StructuredOutput>().map_err(|e| Error::Config {
            setting: STRUCTURED_OUTPUT_ENV.to_owned(),
            message: format!("{STRUCTURED_OUTPUT_ENV}: {e}"),
        })?;
        return Ok(choice(mode, ModeSource::Environment));
    }
    if let Some(mode) = option {
        return Ok(choice(mode, ModeSource::Option));
    }
    if let Some(mode) = from_connection {
        return Ok(choice(mode, ModeSource::Connection));
    }
    let fallback = fallback_enabled()?;
    let key = key();
    let remembered = key.as_deref().filter(|_| fallback).and_then(remembered);
    let (mode, source) = match remembered {
        Some(m) => (m, ModeSource::Remembered),
        None => (StructuredOutput::default(), ModeSource::Default),
    };
    Ok(ModeChoice { mode, source, fallback, key, known_host })
}

fn overridden() -> Option<StructuredOutput> {
    let code = usize::from(OVERRIDE.load(Ordering::SeqCst));
    code.checked_sub(1).and_then(|i| StructuredOutput::ALL.get(i).copied())
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the fallback is on: [`set_structured_output_fallback`], else the environment.
fn fallback_enabled() -> Result<bool> {
    match FALLBACK.load(Ordering::SeqCst) {
        1 => return Ok(true),
        2 => return Ok(false),
        _ => {}
    }
    let Some(text) = env(STRUCTURED_OUTPUT_FALLBACK_ENV) else { return Ok(true) };
    match text.trim().to_ascii_lowercase().as_str() {
        "off" | "false" | "0" | "no" => Ok(false),
        "on" | "true" | "1" | "yes" => Ok(true),
        _ => Err(Error::Config {
            setting: STRUCTURED_OUTPUT_FALLBACK_ENV.to_owned(),
            message: format!(
                "{STRUCTURED_OUTPUT_FALLBACK_ENV}: '{}' is neither on nor off (use `off` to switch the automatic \
                 structured-output fallback off, `on` or nothing to leave it on)",
                prompty_core::text::prefix(text.trim(), 40)
            ),
        }),
    }
}

fn remembered(key: &str) -> Option<StructuredOutput> {
    let map = REMEMBERED.lock().unwrap_or_else(|e| e.into_inner());
    map.iter().find(|(k, _)| k == key).map(|(_, m)| *m)
}

/// Remembers `mode` for `key` (replacing what was remembered for it), forgetting the oldest
/// entry beyond [`MAX_REMEMBERED_ENDPOINTS`].
pub(crate) fn remember(key: &str, mode: StructuredOutput) {
    let mut map = REMEMBERED.lock().unwrap_or_else(|e| e.into_inner());
    map.retain(|(k, _)| k != key);
    map.push_back((key.to_owned(), mode));
    while map.len() > MAX_REMEMBERED_ENDPOINTS {
        map.pop_front();
    }
}

#[cfg(test)]
pub(crate) fn remembered_count() -> usize {
    REMEMBERED.lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// Whether an error answer may be a format rejection at all: see [the module](self).
fn may_reject_format(status: u16) -> bool {
    matches!(status, 400 | 422 | 500 | 501)
}

/// Whether the text of an error answer names the structured-output format.
fn names_format(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    ["response_format", "json_schema", "json_object", "text.format"].iter().any(|w| text.contains(w))
}

/// Whether a failure (`status`, and the server's `texts`) is a format rejection: with
/// `suspect_any` (a host that is not OpenAI's or Azure's, while a fallback may follow), any
/// failure of a status that can be one; otherwise one whose text names the format.
pub(crate) fn is_rejection(status: Option<u16>, texts: &[&str], suspect_any: bool) -> bool {
    status.is_some_and(may_reject_format) && (suspect_any || texts.iter().any(|t| names_format(t)))
}

/// [`is_rejection`] of a failed call.
pub(crate) fn rejects(error: &Error, suspect_any: bool) -> bool {
    match error {
        Error::Http(f) => is_rejection(f.status, &[&f.message, f.body.as_deref().unwrap_or("")], suspect_any),
        _ => false,
    }
}

/// The error of a call whose structured-output format was refused: a configuration error
/// ([`Error::Config`], never retried, not even by the agent loop: the same request would be
/// refused again) naming the setting that chose the mode (`model.options.structuredOutput` when
/// nothing did), with the server's answer, the modes tried (`fell_back`: the second one after an
/// automatic fallback, and how that request failed), and every setting that chooses the mode.
pub(crate) fn explain(error: Error, choice: &ModeChoice, fell_back: Option<(StructuredOutput, &Error)>) -> Error {
    let Error::Http(failure) = &error else { return error };
    let mut message = format!(
        "{failure}; structured output: the server refused the request with `response_format` in mode {} ({})",
        choice.mode,
        choice.source.describe()
    );
    if let Some((next, second)) = fell_back {
        message.push_str(&format!(", and again in mode {next} (the automatic fallback): {}", short(second)));
    } else if matches!(choice.source, ModeSource::Remembered | ModeSource::Default) && !choice.fallback {
        message.push_str(
            " and the automatic fallback is off (PROMPTY_STRUCTURED_OUTPUT_FALLBACK, set_structured_output_fallback)",
        );
    }
    message.push_str(&format!(
        ". Choose a mode this server accepts with `--structured-output MODE` (prompty run, prompty chat), the \
         PROMPTY_STRUCTURED_OUTPUT environment variable, the prompt's `model.options.structuredOutput` or its \
         connection's `structuredOutput`; the modes are {} (`none` sends no response_format)",
        StructuredOutput::names()
    ));
    Error::Config { setting: choice.source.setting().to_owned(), message }
}

/// A failure in a few words: its status and the server's message.
fn short(error: &Error) -> String {
    match error {
        Error::Http(f) => {
            let HttpFailure { status, reason, message, .. } = &**f;
            let message = prompty_core::text::prefix(message, 300);
            match (status, reason) {
                (Some(s), Some(r)) => format!("HTTP {s} {r}: {message}"),
                (Some(s), None) => format!("HTTP {s}: {message}"),
                (None, _) => message.to_owned(),
            }
        }
        other => prompty_core::text::prefix(&other.to_string(), 300).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_rejections_by_status_text_and_host() {
        let said = "Input should be 'text' or 'json_object'";
        for status in [400, 422, 500, 501] {
            assert!(is_rejection(Some(status), &[said], false), "{status}");
            assert!(is_rejection(Some(status), &["boom"], true), "{status}: any text from an unknown host");
            assert!(!is_rejection(Some(status), &["boom"], false), "{status}");
        }
        for status in [401, 403, 404, 408, 429, 502, 503, 504] {
            assert!(!is_rejection(Some(status), &[said], true), "{status} is never a format rejection");
        }
        assert!(!is_rejection(None, &[said], true));
        assert!(is_rejection(Some(400), &["Invalid parameter: 'response_format' of type 'json_schema'"], false));
        assert!(is_rejection(Some(400), &["", "{\"detail\": \"bad text.format\"}"], false));
    }

    #[test]
    fn remembered_modes_are_bounded_and_replaced() {
        for i in 0..MAX_REMEMBERED_ENDPOINTS + 5 {
            remember(&format!("http://bound.test/{i} m"), StructuredOutput::JsonObject);
        }
        assert!(remembered_count() <= MAX_REMEMBERED_ENDPOINTS);
        assert_eq!(remembered("http://bound.test/0 m"), None, "the oldest is forgotten");
        let last = format!("http://bound.test/{} m", MAX_REMEMBERED_ENDPOINTS + 4);
        assert_eq!(remembered(&last), Some(StructuredOutput::JsonObject));
        remember(&last, StructuredOutput::JsonObjectSchema);
        assert_eq!(remembered(&last), Some(StructuredOutput::JsonObjectSchema));
    }
}
