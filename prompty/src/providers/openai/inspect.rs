//! What the provider's executors send, built for inspection: [`request_body`], [`chat_request`]
//! and [`responses_request`] build the body for the dialect the executor resolves (the endpoint
//! from the prompt or the environment, the structured-output settings, the mode remembered for the
//! endpoint), through the same resolution, so what is inspected is what is sent.

use super::wire::{chat_request_with, request_body_with, responses_request_with, Dialect};
use crate::{Agent, Message, Result};
use serde_json::Value;

/// The request body for the agent's `model.apiType`: `chat` (the default), `embedding`, `image` or
/// `responses`. Any other API type is an error.
///
/// What is inspected is what is sent: the body is built for the dialect the provider's executor
/// resolves (with the `openai` feature): the endpoint from the prompt's connection or the
/// environment (`OPENAI_BASE_URL`, ...) and its token field, the structured-output mode from
/// `--structured-output`, `PROMPTY_STRUCTURED_OUTPUT`, the prompt, or the mode remembered for
/// the endpoint after a fallback (see [`Dialect`] and `set_structured_output`). Without the
/// feature, the dialect of the prompt alone ([`Dialect::of`]).
///
/// ```
/// use prompty::{Agent, Message, Role};
/// let agent = Agent::from_value(serde_json::json!({"model": {"id": "gpt-4o", "apiType": "embedding"}}))?;
/// let body = prompty::providers::openai::request_body(&agent, &[Message::new(Role::User, "Hello")])?;
/// assert_eq!(body, serde_json::json!({"model": "gpt-4o", "input": "Hello"}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn request_body(agent: &Agent, messages: &[Message]) -> Result<Value> {
    request_body_with(agent, messages, &sending_dialect(agent)?)
}

/// The dialect a request of the agent is sent in (see [`request_body`]).
fn sending_dialect(agent: &Agent) -> Result<Dialect> {
    #[cfg(feature = "openai")]
    return super::executor::sending_dialect(agent);
    #[cfg(not(feature = "openai"))]
    Ok(Dialect::of(agent))
}

/// The Chat Completions body (spec §7.1): `model`, `messages`, the mapped options, `tools` (only
/// when the agent has some) and `response_format` (only when it declares outputs; strict JSON
/// Schema unless [`Dialect`] says otherwise), for the dialect it is sent in (as
/// [`request_body`]).
/// `maxOutputTokens` goes in the dialect's token field. `options.toolChoice` becomes
/// `tool_choice` when there are tools. `options.additionalProperties` are added at the top level
/// last and replace what was generated under the same key (except `messages`).
///
/// ```
/// use prompty::{Agent, Message, Role};
/// let agent = Agent::from_value(serde_json::json!({
///     "model": {"id": "gpt-4o", "options": {"maxOutputTokens": 100, "stopSequences": ["END"]}}}))?;
/// let body = prompty::providers::openai::chat_request(&agent, &[
///     Message::new(Role::System, "Be brief."), Message::new(Role::User, "Hi")])?;
/// assert_eq!(body, serde_json::json!({
///     "model": "gpt-4o",
///     "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
///     "max_completion_tokens": 100, "stop": ["END"]}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn chat_request(agent: &Agent, messages: &[Message]) -> Result<Value> {
    chat_request_with(agent, messages, &sending_dialect(agent)?)
}

/// The Responses API body (spec §7.4): system and developer messages become the top-level
/// `instructions` (joined by a blank line), the others `input` items; tools are flat
/// `{type: "function", name, description, parameters}`; outputs become `text.format` (OpenAI strict
/// JSON Schema). Tool-call replays become `function_call` / `function_call_output` items.
///
/// ```
/// use prompty::{Agent, Message, Role};
/// let agent = Agent::from_value(serde_json::json!({"model": {"id": "gpt-4o", "apiType": "responses"}}))?;
/// let body = prompty::providers::openai::responses_request(&agent, &[
///     Message::new(Role::System, "Be helpful"), Message::new(Role::User, "Hello")])?;
/// assert_eq!(body, serde_json::json!({
///     "model": "gpt-4o", "instructions": "Be helpful", "input": [{"role": "user", "content": "Hello"}]}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn responses_request(agent: &Agent, messages: &[Message]) -> Result<Value> {
    responses_request_with(agent, messages, &sending_dialect(agent)?)
}
