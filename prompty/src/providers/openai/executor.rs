//! The HTTP executors for OpenAI ([`OpenAiExecutor`], provider key `openai`) and Azure OpenAI /
//! Foundry ([`FoundryExecutor`], provider keys `foundry` and `azure`), and model discovery
//! ([`list_models`]).
//!
//! Where a request goes, from the prompt's `model.connection` (see the executors for the kinds
//! accepted), else from the environment:
//!
//! | provider | endpoint | key | header |
//! |---|---|---|---|
//! | `openai` | `OPENAI_BASE_URL`, `OPENAI_ENDPOINT`, else `https://api.openai.com/v1` | `OPENAI_API_KEY` | `Authorization: Bearer <key>` |
//! | `foundry`, `azure` | `AZURE_OPENAI_ENDPOINT` | `AZURE_OPENAI_API_KEY` | `api-key: <key>` |
//!
//! A key that has no value sends no auth header. `AZURE_OPENAI_API_VERSION` sets the Azure
//! `api-version` (default [`AZURE_API_VERSION`], [`AZURE_RESPONSES_API_VERSION`] for the Responses
//! API).

use super::structured::{self, ModeChoice};
use crate::http::sse;
use crate::http::{self, ApiRequest, EnvNames, HttpClient, Resolved, RetryPolicy};
use crate::providers::discovery::{self, ModelInfo};
use crate::{Agent, BoxFuture, Connection, Error, Executor, MaxTokensField, Message, RawStream, Result, Secret};
use reqwest::header::{HeaderMap, HeaderName, AUTHORIZATION};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;

/// The endpoint used when neither the prompt nor the environment names one.
///
/// ```
/// use prompty::providers::openai::OPENAI_DEFAULT_ENDPOINT;
/// // Chat requests go to `{endpoint}/chat/completions`.
/// assert_eq!(format!("{OPENAI_DEFAULT_ENDPOINT}/chat/completions"), "https://api.openai.com/v1/chat/completions");
/// ```
pub const OPENAI_DEFAULT_ENDPOINT: &str = "https://api.openai.com/v1";
/// The Azure OpenAI `api-version` used when `AZURE_OPENAI_API_VERSION` is not set.
///
/// ```
/// assert_eq!(prompty::providers::openai::AZURE_API_VERSION, "2024-10-21");
/// ```
pub const AZURE_API_VERSION: &str = "2024-10-21";
/// The Azure OpenAI `api-version` of the Responses API when `AZURE_OPENAI_API_VERSION` is not set.
///
/// ```
/// assert_eq!(prompty::providers::openai::AZURE_RESPONSES_API_VERSION, "2025-04-01-preview");
/// ```
pub const AZURE_RESPONSES_API_VERSION: &str = "2025-04-01-preview";

const OPENAI_ENV: EnvNames = EnvNames { endpoint: &["OPENAI_BASE_URL", "OPENAI_ENDPOINT"], key: "OPENAI_API_KEY" };
/// The events that end a Responses API stream.
const RESPONSES_END: sse::End =
    sse::End::Types(&["response.completed", "response.failed", "response.incomplete", "error"]);

const AZURE_ENV: EnvNames = EnvNames { endpoint: &["AZURE_OPENAI_ENDPOINT"], key: "AZURE_OPENAI_API_KEY" };

/// The executor of `model.provider: openai`: OpenAI's Chat Completions, embeddings, image
/// generation and Responses APIs, or any server that speaks them (`connection.endpoint` or
/// `OPENAI_BASE_URL`).
///
/// The prompt's connection may be `key` (endpoint and `apiKey`; what it leaves out comes from the
/// environment), `anonymous` (no key is sent), `foundry`/`remote` (their endpoint, the key from the
/// environment) or `reference` (a [`Connection`] registered with [`crate::register_connection`]).
///
/// Registered at link time with the shared [`HttpClient`]; register another instance to change
/// timeouts or retries:
///
/// ```
/// use prompty::http::RetryPolicy;
/// use prompty::providers::openai::OpenAiExecutor;
/// prompty::register_executor("openai", OpenAiExecutor::new().with_retry(RetryPolicy::none()));
/// # prompty::clear_cache();
/// ```
#[derive(Debug, Clone, Default)]
#[prompty_macros::executor("openai")]
pub struct OpenAiExecutor {
    http: HttpClient,
}

/// The executor of `model.provider: foundry` (alias `azure`): Azure OpenAI and Foundry
/// deployments, at `{endpoint}/openai/deployments/{model.id}/{api path}?api-version=...` with an
/// `api-key` header. An endpoint that already ends in `/openai/v1` (Azure's v1 API) is used like
/// OpenAI's: `{endpoint}/{api path}`. The Responses API goes to `{endpoint}/openai/responses`.
///
/// The connection kinds accepted are those of [`OpenAiExecutor`]; the environment variables are
/// `AZURE_OPENAI_ENDPOINT`, `AZURE_OPENAI_API_KEY` and `AZURE_OPENAI_API_VERSION`.
///
/// ```
/// use prompty::providers::openai::FoundryExecutor;
/// let executor = FoundryExecutor::new().with_api_version("2024-10-21");
/// # let _ = executor;
/// ```
#[derive(Debug, Clone, Default)]
#[prompty_macros::executor("foundry", "azure")]
pub struct FoundryExecutor {
    http: HttpClient,
    api_version: Option<String>,
}

impl OpenAiExecutor {
    /// An executor using the shared [`HttpClient`].
    pub fn new() -> Self {
        OpenAiExecutor::default()
    }

    /// An executor using `client` (its timeouts, retries and connection pool).
    pub fn with_client(client: HttpClient) -> Self {
        OpenAiExecutor { http: client }
    }

    /// The same executor with another retry policy.
    pub fn with_retry(self, retry: RetryPolicy) -> Self {
        OpenAiExecutor { http: self.http.with_retry(retry) }
    }

    /// The HTTP client this executor uses.
    pub fn client(&self) -> &HttpClient {
        &self.http
    }

    /// The models the connection's endpoint lists (`GET {endpoint}/models`), as [`ModelInfo`]s
    /// enriched from the capabilities table. `None`: endpoint and key from the environment.
    pub async fn list_models(&self, connection: Option<&Connection>) -> Result<Vec<ModelInfo>> {
        let resolved = http::resolve(connection, &OPENAI_ENV, "openai")?;
        let base = resolved.endpoint.clone().unwrap_or_else(|| OPENAI_DEFAULT_ENDPOINT.to_owned());
        let url = format!("{base}/models");
        let headers = auth_headers(Flavor::OpenAi, &resolved)?;
        let raw = self.http.json(&ApiRequest::get("openai", &url, Cow::Owned(headers)).on_endpoint(&base)).await?;
        Ok(discovery::map_listing(&raw, "openai").into_iter().map(|m| discovery::enrich(m, "openai")).collect())
    }
}

impl FoundryExecutor {
    /// An executor using the shared [`HttpClient`].
    pub fn new() -> Self {
        FoundryExecutor::default()
    }

    /// An executor using `client` (its timeouts, retries and connection pool).
    pub fn with_client(client: HttpClient) -> Self {
        FoundryExecutor { http: client, api_version: None }
    }

    /// The same executor with another retry policy.
    pub fn with_retry(self, retry: RetryPolicy) -> Self {
        FoundryExecutor { http: self.http.with_retry(retry), ..self }
    }

    /// The same executor sending this `api-version` (instead of `AZURE_OPENAI_API_VERSION` or the
    /// default).
    pub fn with_api_version(self, version: impl Into<String>) -> Self {
        FoundryExecutor { api_version: Some(version.into()), ..self }
    }

    /// The HTTP client this executor uses.
    pub fn client(&self) -> &HttpClient {
        &self.http
    }
}

/// The models an OpenAI-compatible endpoint lists, with the shared [`HttpClient`]: see
/// [`OpenAiExecutor::list_models`]. Discovery is never needed to run a prompt.
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// for model in prompty::providers::openai::list_models(None).await? {
///     println!("{}", model.id);
/// }
/// # Ok(()) }
/// ```
pub async fn list_models(connection: Option<&Connection>) -> Result<Vec<ModelInfo>> {
    OpenAiExecutor::new().list_models(connection).await
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    OpenAi,
    Azure,
}

impl Flavor {
    fn provider(self) -> &'static str {
        match self {
            Flavor::OpenAi => "openai",
            Flavor::Azure => "azure",
        }
    }
}

/// The API path of the agent's `model.apiType`.
fn api_path(agent: &Agent) -> Result<(&'static str, bool)> {
    let api = agent.model.as_ref().map_or("chat", |m| m.api_type());
    Ok(match api {
        "chat" => ("chat/completions", false),
        "embedding" | "embeddings" => ("embeddings", false),
        "image" | "images" => ("images/generations", false),
        "responses" => ("responses", true),
        other => {
            return Err(crate::providers::common::unsupported_api_type(
                "OpenAI",
                other,
                "chat, embedding, image or responses",
            ))
        }
    })
}

fn auth_headers(flavor: Flavor, resolved: &Resolved) -> Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    match flavor {
        Flavor::OpenAi => http::insert_secret(&mut headers, AUTHORIZATION, "Bearer ", resolved.key.as_ref(), "openai")?,
        Flavor::Azure => {
            http::insert_secret(&mut headers, HeaderName::from_static("api-key"), "", resolved.key.as_ref(), "azure")?
        }
    }
    Ok(headers)
}

/// Where one call goes, and what the server there understands.
struct Target {
    place: Place,
    dialect: super::Dialect,
    /// The structured-output mode of [`Target::dialect`], where it came from and what the
    /// fallback may do.
    choice: ModeChoice,
}

/// The URL and headers of a [`Target`].
enum Place {
    /// Built for this call.
    Built { url: String, headers: HeaderMap },
    /// Kept on the agent from an earlier call.
    Kept(Arc<Derived>),
}

impl Target {
    fn url(&self) -> &str {
        match &self.place {
            Place::Built { url, .. } => url,
            Place::Kept(d) => &d.url,
        }
    }

    #[cfg(test)]
    fn headers(&self) -> &HeaderMap {
        match &self.place {
            Place::Built { headers, .. } => headers,
            Place::Kept(d) => &d.headers,
        }
    }

    /// The address and headers of a request to this target, and the endpoint its URL was built
    /// on (named by the hint of a 404; an Azure deployment URL carries its version in the query).
    fn request_parts(&self) -> (http::Address<'_>, Cow<'_, HeaderMap>, Option<&str>) {
        match &self.place {
            Place::Built { url, headers } => (http::Address::Text(url), Cow::Borrowed(headers), None),
            Place::Kept(d) => match &d.parsed {
                Some(parsed) => (http::Address::Parsed(parsed), Cow::Borrowed(&d.headers), Some(&d.base)),
                None => (http::Address::Text(&d.url), Cow::Borrowed(&d.headers), Some(&d.base)),
            },
        }
    }
}

/// What an OpenAI target derives from the endpoint and key a call resolves to, kept on the agent
/// and reused while they stay the same (the environment and the registered connections are read
/// on every call; parsing the URL and building the headers are not repeated).
struct Derived {
    path: &'static str,
    base: String,
    key: Option<Secret>,
    url: String,
    parsed: Option<reqwest::Url>,
    headers: HeaderMap,
    host_rule: MaxTokensField,
    /// Whether `base` is one of OpenAI's or Azure's hosts.
    known_host: bool,
}

/// The dialect of the server a request goes to, with the settings of the prompt's connection (or
/// of the registered one it refers to), the structured-output settings of the process and the
/// mode remembered for the request's `url`: the one resolution behind sending and inspecting
/// ([`super::request_body`]). `host_rule`: the token field the endpoint's host calls for.
fn dialect(
    agent: &Agent,
    host_rule: impl FnOnce() -> MaxTokensField,
    url: Option<&str>,
    known_host: bool,
) -> Result<(super::Dialect, ModeChoice)> {
    let connection = agent.model.as_ref().and_then(|m| m.connection.as_ref());
    let registered = match connection {
        Some(Connection::Reference { name, .. }) => crate::get_connection_as::<Connection>(name).ok(),
        _ => None,
    };
    let connection = registered.as_deref().or(connection);
    let choice = structured::choose(agent, connection, || url.map(|u| structured::endpoint_key(u, agent)), known_host)?;
    let mut dialect = super::Dialect::resolve_with(agent, connection, host_rule);
    dialect.structured_output = choice.mode;
    Ok((dialect, choice))
}

/// The dialect a request of `agent` is sent in, as its executor resolves it (the provider's
/// endpoint from the prompt or the environment, the structured-output settings, the mode
/// remembered for the endpoint): what [`super::request_body`] builds the body for. An
/// Azure/Foundry prompt without an endpoint (which cannot be sent) gets the dialect of its
/// settings alone.
pub(crate) fn sending_dialect(agent: &Agent) -> Result<super::Dialect> {
    let provider = agent.model.as_ref().and_then(|m| m.provider.as_deref());
    if matches!(provider, Some("foundry" | "azure")) {
        return match azure_target(agent, None) {
            Ok(target) => Ok(target.dialect),
            Err(_) => Ok(dialect(agent, || MaxTokensField::for_endpoint(None), None, true)?.0),
        };
    }
    Ok(openai_target(agent)?.dialect)
}

fn openai_target(agent: &Agent) -> Result<Target> {
    let (path, _) = api_path(agent)?;
    let connection = agent.model.as_ref().and_then(|m| m.connection.as_ref());
    let resolved = http::resolve(connection, &OPENAI_ENV, "openai")?;
    let base = resolved.endpoint.as_deref().unwrap_or(OPENAI_DEFAULT_ENDPOINT);
    let cache = agent.runtime_cache();
    let derived = match cache.get::<Derived>() {
        Some(d) if d.path == path && d.base == base && d.key == resolved.key => d,
        _ => {
            let url = format!("{base}/{path}");
            let d = Arc::new(Derived {
                path,
                base: base.to_owned(),
                parsed: reqwest::Url::parse(&url).ok(),
                url,
                headers: auth_headers(Flavor::OpenAi, &resolved)?,
                host_rule: MaxTokensField::for_endpoint(Some(base)),
                known_host: crate::is_openai_host(base),
                key: resolved.key,
            });
            cache.set(Arc::clone(&d));
            d
        }
    };
    let (dialect, choice) = dialect(agent, || derived.host_rule, Some(&derived.url), derived.known_host)?;
    Ok(Target { place: Place::Kept(derived), dialect, choice })
}

fn azure_target(agent: &Agent, api_version: Option<&str>) -> Result<Target> {
    let (path, responses) = api_path(agent)?;
    let connection = agent.model.as_ref().and_then(|m| m.connection.as_ref());
    let resolved = http::resolve(connection, &AZURE_ENV, "azure")?;
    let endpoint = resolved.endpoint.as_deref().ok_or_else(|| Error::Config {
        setting: "model.connection.endpoint".to_owned(),
        message: "azure: no endpoint: set `model.connection.endpoint` in the prompt or the AZURE_OPENAI_ENDPOINT \
                  environment variable"
            .to_owned(),
    })?;
    let headers = auth_headers(Flavor::Azure, &resolved)?;
    let url = azure_url(agent, endpoint, path, responses, api_version)?;
    let (dialect, choice) =
        dialect(agent, || MaxTokensField::for_endpoint(None), Some(&url), crate::is_openai_host(endpoint))?;
    Ok(Target { place: Place::Built { url, headers }, dialect, choice })
}

/// The URL of an Azure OpenAI / Foundry request (see [`FoundryExecutor`]).
fn azure_url(agent: &Agent, endpoint: &str, path: &str, responses: bool, api_version: Option<&str>) -> Result<String> {
    if endpoint.ends_with("/openai/v1") {
        return Ok(format!("{endpoint}/{path}"));
    }
    let env_version = std::env::var("AZURE_OPENAI_API_VERSION").ok().filter(|v| !v.trim().is_empty());
    let default_version = if responses { AZURE_RESPONSES_API_VERSION } else { AZURE_API_VERSION };
    let version = api_version.map(str::to_owned).or(env_version).unwrap_or_else(|| default_version.to_owned());
    let version = http::encode_component(&version);
    if responses {
        return Ok(format!("{endpoint}/openai/responses?api-version={version}"));
    }
    let deployment =
        agent.model.as_ref().map(|m| m.id.as_str()).filter(|id| !id.is_empty()).ok_or_else(|| Error::Config {
            setting: "model.id".to_owned(),
            message: "azure: `model.id` must name the deployment".to_owned(),
        })?;
    let deployment = http::encode_component(deployment);
    Ok(format!("{endpoint}/openai/deployments/{deployment}/{path}?api-version={version}"))
}

/// The body with streaming turned on (and, for chat, usage in the last chunk).
fn streaming_body(agent: &Agent, messages: &[Message], dialect: &super::Dialect) -> Result<(Value, bool)> {
    let (path, responses) = api_path(agent)?;
    if !(path == "chat/completions" || responses) {
        return Err(Error::Config {
            setting: "model.apiType".to_owned(),
            message: format!("streaming is supported for the chat and responses APIs, not '{path}'"),
        });
    }
    let mut body = super::request_body_with(agent, messages, dialect)?;
    if let Value::Object(map) = &mut body {
        map.insert("stream".to_owned(), Value::Bool(true));
        if !responses {
            match map.get_mut("stream_options") {
                Some(Value::Object(opts)) => {
                    opts.entry("include_usage").or_insert(Value::Bool(true));
                }
                _ => {
                    map.insert("stream_options".to_owned(), json!({"include_usage": true}));
                }
            }
        }
    }
    Ok((body, responses))
}

/// What a call asks of the server: a JSON answer, or a stream of events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    Json,
    Stream,
}

/// A call's answer: its JSON, or its stream.
enum Answer {
    Json(Value),
    Stream(RawStream),
}

/// Sends one call of `agent` to `target`, in the target's structured-output mode; when that mode
/// was not chosen and the server rejects it (see [`structured`]), once more in the next mode,
/// which is then remembered for the endpoint.
async fn call(
    http: &HttpClient,
    flavor: Flavor,
    target: &Target,
    agent: &Agent,
    messages: &[Message],
    wanted: Wanted,
) -> Result<Answer> {
    let choice = &target.choice;
    let formatted = agent.outputs.as_deref().is_some_and(|o| !o.is_empty())
        && choice.mode != crate::StructuredOutput::None
        && matches!(api_path(agent)?, ("chat/completions", _) | (_, true));
    if !formatted {
        return send(http, flavor, target, agent, messages, &target.dialect, wanted, None).await;
    }
    let next = choice.mode.fallback().filter(|_| choice.may_fall_back());
    // A rejection is never retried as the same request; an unknown host's failure of a status
    // that can be one is taken for one only when a fallback follows.
    let suspect_any = next.is_some() && !choice.known_host;
    let handled = move |e: &http::HttpError| {
        structured::is_rejection(e.status, &[&e.message, e.body.as_deref().unwrap_or("")], suspect_any)
    };
    let first = send(http, flavor, target, agent, messages, &target.dialect, wanted, Some(&handled)).await;
    let error = match first {
        Err(e) if structured::rejects(&e, suspect_any) => e,
        other => return other,
    };
    let Some(next) = next else { return Err(structured::explain(error, choice, None)) };
    let status = match &error {
        Error::Http(f) => f.status,
        _ => None,
    };
    tracing::info!(
        target: "prompty::structured_output",
        endpoint = %crate::redact_url(target.url().split('?').next().unwrap_or_default()),
        from = %choice.mode,
        to = %next,
        status,
        "the server refused the structured-output mode {}; sending the request once more in mode {next}",
        choice.mode
    );
    let fallback = format!("{} -> {next}", choice.mode);
    crate::trace::annotate("prompty.structured_output.fallback", || Value::String(fallback));
    let dialect = super::Dialect { structured_output: next, ..target.dialect };
    let named =
        |e: &http::HttpError| structured::is_rejection(e.status, &[&e.message, e.body.as_deref().unwrap_or("")], false);
    match send(http, flavor, target, agent, messages, &dialect, wanted, Some(&named)).await {
        Ok(answer) => {
            if let Some(key) = &choice.key {
                structured::remember(key, next);
            }
            Ok(answer)
        }
        Err(second) if structured::rejects(&second, !choice.known_host) => {
            Err(structured::explain(error, choice, Some((next, &second))))
        }
        Err(second) => Err(second),
    }
}

/// One request of a call (retried as the client's policy says, except failures `not_retried`).
#[allow(clippy::too_many_arguments)]
async fn send(
    http: &HttpClient,
    flavor: Flavor,
    target: &Target,
    agent: &Agent,
    messages: &[Message],
    dialect: &super::Dialect,
    wanted: Wanted,
    not_retried: Option<&(dyn Fn(&http::HttpError) -> bool + Sync)>,
) -> Result<Answer> {
    let (address, headers, endpoint) = target.request_parts();
    let (request, end) = match wanted {
        Wanted::Json => {
            let body = super::wire::request_body_bytes(agent, messages, dialect)?;
            (ApiRequest::post_serialized(flavor.provider(), address, headers, body)?, None)
        }
        Wanted::Stream => {
            let (body, responses) = streaming_body(agent, messages, dialect)?;
            let end = if responses { RESPONSES_END } else { sse::End::Done };
            (ApiRequest::post(flavor.provider(), address, headers, &body)?, Some(end))
        }
    };
    let request = ApiRequest { endpoint, not_retried, ..request };
    match end {
        None => http.json(&request).await.map(Answer::Json),
        Some(end) => http.events(&request, end).await.map(Answer::Stream),
    }
}

async fn execute_json(
    http: &HttpClient,
    flavor: Flavor,
    target: Target,
    agent: &Agent,
    messages: &[Message],
) -> Result<Value> {
    match call(http, flavor, &target, agent, messages, Wanted::Json).await? {
        Answer::Json(v) => Ok(v),
        Answer::Stream(_) => {
            Err(Error::Execution { message: format!("{}: internal error: unexpected stream", flavor.provider()) })
        }
    }
}

async fn execute_stream(
    http: &HttpClient,
    flavor: Flavor,
    target: Target,
    agent: &Agent,
    messages: &[Message],
) -> Result<RawStream> {
    match call(http, flavor, &target, agent, messages, Wanted::Stream).await? {
        Answer::Stream(s) => Ok(s),
        Answer::Json(_) => {
            Err(Error::Execution { message: format!("{}: internal error: unexpected JSON", flavor.provider()) })
        }
    }
}

impl Executor for OpenAiExecutor {
    fn format_tool_messages(&self, agent: &Agent, round: &crate::ToolRound<'_>) -> Result<Vec<Message>> {
        super::wire::tool_messages(agent, round)
    }

    fn assemble_stream(&self, agent: &Agent, events: &[Value]) -> Option<Value> {
        super::wire::assemble_stream(agent, events)
    }

    fn execute_async<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let target = openai_target(agent)?;
            execute_json(&self.http, Flavor::OpenAi, target, agent, messages).await
        })
    }

    fn execute(&self, agent: &Agent, messages: &[Message]) -> Result<Value> {
        crate::blocking::block_on(self.execute_async(agent, messages))?
    }

    fn execute_stream<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<RawStream>> {
        Box::pin(async move {
            let target = openai_target(agent)?;
            execute_stream(&self.http, Flavor::OpenAi, target, agent, messages).await
        })
    }
}

impl Executor for FoundryExecutor {
    fn format_tool_messages(&self, agent: &Agent, round: &crate::ToolRound<'_>) -> Result<Vec<Message>> {
        super::wire::tool_messages(agent, round)
    }

    fn assemble_stream(&self, agent: &Agent, events: &[Value]) -> Option<Value> {
        super::wire::assemble_stream(agent, events)
    }

    fn execute_async<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let target = azure_target(agent, self.api_version.as_deref())?;
            execute_json(&self.http, Flavor::Azure, target, agent, messages).await
        })
    }

    fn execute(&self, agent: &Agent, messages: &[Message]) -> Result<Value> {
        crate::blocking::block_on(self.execute_async(agent, messages))?
    }

    fn execute_stream<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<RawStream>> {
        Box::pin(async move {
            let target = azure_target(agent, self.api_version.as_deref())?;
            execute_stream(&self.http, Flavor::Azure, target, agent, messages).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConnectionCommon, Model, Secret};

    fn agent(provider: &str, api: Option<&str>, connection: Option<Connection>) -> Agent {
        let mut model = Model::new("gpt-4o");
        model.provider = Some(provider.to_owned());
        model.api_type = api.map(str::to_owned);
        model.connection = connection;
        let mut agent = Agent::default();
        agent.model = Some(model);
        agent
    }

    fn key(endpoint: &str, key: &str) -> Connection {
        Connection::Key {
            endpoint: Some(endpoint.to_owned()),
            api_key: Some(Secret::new(key)),
            common: ConnectionCommon::default(),
        }
    }

    #[test]
    fn openai_urls_per_api_type() {
        let c = key("http://127.0.0.1:9/v1/", "sk-1");
        for (api, path) in [
            (None, "chat/completions"),
            (Some("embedding"), "embeddings"),
            (Some("image"), "images/generations"),
            (Some("responses"), "responses"),
        ] {
            let t = openai_target(&agent("openai", api, Some(c.clone()))).unwrap();
            assert_eq!(t.url(), format!("http://127.0.0.1:9/v1/{path}"));
            assert_eq!(t.headers().get(AUTHORIZATION).unwrap().to_str().unwrap(), "Bearer sk-1");
            assert!(t.headers().get(AUTHORIZATION).unwrap().is_sensitive());
        }
        assert!(openai_target(&agent("openai", Some("audio"), Some(c))).is_err());
    }

    #[test]
    fn no_key_no_header() {
        let anon = Connection::Anonymous { endpoint: Some("http://h/v1".into()), common: ConnectionCommon::default() };
        let t = openai_target(&agent("openai", None, Some(anon))).unwrap();
        assert!(t.headers().is_empty());
        let t = openai_target(&agent("openai", None, Some(key("http://h/v1", "")))).unwrap();
        assert!(t.headers().is_empty());
    }

    #[test]
    fn azure_urls() {
        let c = key("https://res.openai.azure.com/", "k");
        let t = azure_target(&agent("azure", None, Some(c.clone())), Some("2024-10-21")).unwrap();
        assert_eq!(
            t.url(),
            "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(t.headers().get("api-key").unwrap().to_str().unwrap(), "k");
        assert!(t.headers().get(AUTHORIZATION).is_none());
        let t = azure_target(&agent("azure", Some("embedding"), Some(c.clone())), Some("v")).unwrap();
        assert!(t.url().ends_with("/openai/deployments/gpt-4o/embeddings?api-version=v"));
        let t = azure_target(&agent("azure", Some("responses"), Some(c)), Some("p")).unwrap();
        assert_eq!(t.url(), "https://res.openai.azure.com/openai/responses?api-version=p");
        let v1 = key("https://res.openai.azure.com/openai/v1", "k");
        let t = azure_target(&agent("azure", None, Some(v1)), None).unwrap();
        assert_eq!(t.url(), "https://res.openai.azure.com/openai/v1/chat/completions");
    }

    #[test]
    fn reference_connections_resolve_through_the_registry() {
        crate::register_connection("exec-test-ref", key("http://ref.example/v1", "sk-ref"));
        let r =
            Connection::Reference { name: "exec-test-ref".into(), target: None, common: ConnectionCommon::default() };
        let t = openai_target(&agent("openai", None, Some(r))).unwrap();
        assert_eq!(t.url(), "http://ref.example/v1/chat/completions");
        let missing = Connection::Reference {
            name: "exec-test-missing".into(),
            target: None,
            common: ConnectionCommon::default(),
        };
        let err = openai_target(&agent("openai", None, Some(missing))).err().unwrap().to_string();
        assert!(err.contains("exec-test-missing"), "{err}");
    }

    #[test]
    fn encoding() {
        assert_eq!(http::encode_component("my dep/1"), "my%20dep%2F1");
    }
}
