//! The HTTP executor for Anthropic Messages ([`AnthropicExecutor`], provider key `anthropic`) and
//! model discovery ([`list_models`]).
//!
//! Requests go to `POST {endpoint}/v1/messages` with `anthropic-version: 2023-06-01` and, when the
//! key has a value, `x-api-key`. The endpoint is the prompt's `model.connection.endpoint`, else
//! `ANTHROPIC_BASE_URL`, else `https://api.anthropic.com`; the key is the connection's `apiKey`,
//! else `ANTHROPIC_API_KEY`. The Messages API is a chat API: a `model.apiType` other than `chat`
//! is refused before any request.

use crate::http::sse;
use crate::http::{self, ApiRequest, EnvNames, HttpClient, Resolved, RetryPolicy};
use crate::providers::discovery::{self, ModelInfo};
use crate::{Agent, BoxFuture, Connection, Executor, Message, RawStream, Result};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::borrow::Cow;

/// The endpoint used when neither the prompt nor the environment names one.
///
/// ```
/// use prompty::providers::anthropic::ANTHROPIC_DEFAULT_ENDPOINT;
/// // Messages requests go to `{endpoint}/v1/messages`.
/// assert_eq!(format!("{ANTHROPIC_DEFAULT_ENDPOINT}/v1/messages"), "https://api.anthropic.com/v1/messages");
/// ```
pub const ANTHROPIC_DEFAULT_ENDPOINT: &str = "https://api.anthropic.com";
/// The `anthropic-version` header every request carries.
///
/// ```
/// assert_eq!(prompty::providers::anthropic::ANTHROPIC_VERSION, "2023-06-01");
/// ```
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

const ANTHROPIC_ENV: EnvNames = EnvNames { endpoint: &["ANTHROPIC_BASE_URL"], key: "ANTHROPIC_API_KEY" };

/// The events that end a Messages stream.
const ANTHROPIC_END: sse::End = sse::End::Types(&["message_stop", "error"]);

/// Pages of a model listing fetched at most.
const MAX_LISTING_PAGES: usize = 50;

/// The executor of `model.provider: anthropic` (Messages API, plain and streamed).
///
/// The prompt's connection may be `key`, `anonymous`, `remote`/`foundry` or `reference` (a
/// [`Connection`] registered with [`crate::register_connection`]), as for
/// [`crate::providers::openai::OpenAiExecutor`]. Registered at link time with the shared
/// [`HttpClient`]; register another instance to change timeouts or retries:
///
/// ```
/// use prompty::providers::anthropic::AnthropicExecutor;
/// use prompty::http::RetryPolicy;
/// prompty::register_executor("anthropic", AnthropicExecutor::new().with_retry(RetryPolicy::none()));
/// # prompty::clear_cache();
/// ```
///
// Without the `openai` feature its executor is not compiled: the link leads to the features.
#[cfg_attr(not(feature = "openai"), doc = "[`crate::providers::openai::OpenAiExecutor`]: crate#cargo-features")]
#[derive(Debug, Clone, Default)]
#[prompty_macros::executor("anthropic")]
pub struct AnthropicExecutor {
    http: HttpClient,
}

impl AnthropicExecutor {
    /// An executor using the shared [`HttpClient`].
    pub fn new() -> Self {
        AnthropicExecutor::default()
    }

    /// An executor using `client` (its timeouts, retries and connection pool).
    pub fn with_client(client: HttpClient) -> Self {
        AnthropicExecutor { http: client }
    }

    /// The same executor with another retry policy.
    pub fn with_retry(self, retry: RetryPolicy) -> Self {
        AnthropicExecutor { http: self.http.with_retry(retry) }
    }

    /// The HTTP client this executor uses.
    pub fn client(&self) -> &HttpClient {
        &self.http
    }

    /// The models the endpoint lists (`GET {endpoint}/v1/models`, every page), as [`ModelInfo`]s
    /// enriched from the capabilities table. `None`: endpoint and key from the environment.
    pub async fn list_models(&self, connection: Option<&Connection>) -> Result<Vec<ModelInfo>> {
        let resolved = http::resolve(connection, &ANTHROPIC_ENV, "anthropic")?;
        let base = base_url(&resolved);
        let mut models = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_LISTING_PAGES {
            let url = match &after {
                Some(id) => format!("{base}/models?limit=1000&after_id={id}"),
                None => format!("{base}/models?limit=1000"),
            };
            let raw = self.http.json(&ApiRequest::get("anthropic", &url, Cow::Owned(headers(&resolved)?))).await?;
            models.extend(
                discovery::map_listing(&raw, "anthropic").into_iter().map(|m| discovery::enrich(m, "anthropic")),
            );
            let more = raw.get("has_more").and_then(Value::as_bool).unwrap_or(false);
            match raw.get("last_id").and_then(Value::as_str) {
                Some(last) if more && after.as_deref() != Some(last) => after = Some(last.to_owned()),
                _ => break,
            }
        }
        Ok(models)
    }
}

/// The models Anthropic lists, with the shared [`HttpClient`]: see
/// [`AnthropicExecutor::list_models`]. Discovery is never needed to run a prompt.
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// for model in prompty::providers::anthropic::list_models(None).await? {
///     println!("{} ({:?})", model.id, model.display_name);
/// }
/// # Ok(()) }
/// ```
pub async fn list_models(connection: Option<&Connection>) -> Result<Vec<ModelInfo>> {
    AnthropicExecutor::new().list_models(connection).await
}

/// `{endpoint}/v1` (an endpoint that already ends in `/v1` is kept as it is).
fn base_url(resolved: &Resolved) -> String {
    let endpoint = resolved.endpoint.as_deref().unwrap_or(ANTHROPIC_DEFAULT_ENDPOINT);
    if endpoint.ends_with("/v1") {
        endpoint.to_owned()
    } else {
        format!("{endpoint}/v1")
    }
}

fn headers(resolved: &Resolved) -> Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    headers.insert(HeaderName::from_static("anthropic-version"), HeaderValue::from_static(ANTHROPIC_VERSION));
    http::insert_secret(&mut headers, HeaderName::from_static("x-api-key"), "", resolved.key.as_ref(), "anthropic")?;
    Ok(headers)
}

fn target(agent: &Agent) -> Result<(String, HeaderMap)> {
    let api = agent.model.as_ref().map_or("chat", |m| m.api_type());
    if api != "chat" {
        return Err(crate::providers::common::unsupported_api_type("Anthropic", api, "chat: the Messages API"));
    }
    let connection = agent.model.as_ref().and_then(|m| m.connection.as_ref());
    let resolved = http::resolve(connection, &ANTHROPIC_ENV, "anthropic")?;
    Ok((format!("{}/messages", base_url(&resolved)), headers(&resolved)?))
}

impl Executor for AnthropicExecutor {
    fn format_tool_messages(&self, agent: &Agent, round: &crate::ToolRound<'_>) -> Result<Vec<Message>> {
        super::wire::tool_messages(agent, round)
    }

    fn assemble_stream(&self, _agent: &Agent, events: &[Value]) -> Option<Value> {
        Some(super::wire::assemble_message(events))
    }

    fn execute_async<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let (url, headers) = target(agent)?;
            let body = super::messages_request(agent, messages)?;
            let request = ApiRequest::post("anthropic", &url, Cow::Owned(headers), &body)?;
            self.http.json(&request).await
        })
    }

    fn execute(&self, agent: &Agent, messages: &[Message]) -> Result<Value> {
        crate::blocking::block_on(self.execute_async(agent, messages))?
    }

    fn execute_stream<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<RawStream>> {
        Box::pin(async move {
            let (url, headers) = target(agent)?;
            let mut body = super::messages_request(agent, messages)?;
            if let Value::Object(map) = &mut body {
                map.insert("stream".to_owned(), Value::Bool(true));
            }
            let request = ApiRequest::post("anthropic", &url, Cow::Owned(headers), &body)?;
            self.http.events(&request, ANTHROPIC_END).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConnectionCommon, Model, Secret};

    #[test]
    fn url_and_headers() {
        let mut model = Model::new("claude-sonnet-4");
        model.provider = Some("anthropic".into());
        model.connection = Some(Connection::Key {
            endpoint: Some("http://127.0.0.1:9/".into()),
            api_key: Some(Secret::new("sk-ant")),
            common: ConnectionCommon::default(),
        });
        let mut agent = Agent::default();
        agent.model = Some(model);
        let (url, h) = target(&agent).unwrap();
        assert_eq!(url, "http://127.0.0.1:9/v1/messages");
        assert_eq!(h.get("anthropic-version").unwrap(), ANTHROPIC_VERSION);
        assert!(h.get("x-api-key").unwrap().is_sensitive());
        let mut embedding = agent.clone();
        embedding.model.as_mut().unwrap().api_type = Some("embedding".into());
        let refused = target(&embedding).unwrap_err().to_string();
        assert!(
            refused.contains("model.apiType")
                && refused.contains("'embedding' is not supported by the Anthropic provider"),
            "{refused}"
        );
        let r = Resolved { endpoint: Some("http://h/v1".into()), key: None };
        assert_eq!(base_url(&r), "http://h/v1");
        assert!(headers(&r).unwrap().get("x-api-key").is_none());
    }
}
