//! `kind: openapi` tools over HTTP (feature `openapi`): an [`OpenApiClient`] calls the operations
//! of an OpenAPI 3.0/3.1 or Swagger 2.0 document read by [`prompty_core::openapi`] (the same reader
//! the compile-time check uses), with the arguments the model gave.
//!
//! ```no_run
//! # async fn demo() -> prompty::Result<()> {
//! use prompty::openapi::OpenApiClient;
//! let agent = prompty::load("prompts/pets.prompty")?;
//! let tool = agent.tools.as_deref().unwrap_or_default().iter().find(|t| t.kind.as_str() == "openapi").unwrap();
//! let client = OpenApiClient::from_tool(tool, &agent).await?;
//! for op in client.operations() {
//!     println!("{}: {}", op.name, op.parameters_schema());
//! }
//! let pet = client.call("getPetById", serde_json::json!({"petId": 7})).await?;
//! assert_eq!(pet["status"], 200);
//! # Ok(()) }
//! ```
//!
//! # The request
//!
//! - **Base URL**: the connection's `endpoint`, else the operation's (or its path's) first server,
//!   else the document's first server (a relative one is resolved against the URL the document
//!   was fetched from), else (2.0) `scheme://host` + `basePath`. The operation's path is appended.
//! - **Path** parameters are percent-encoded (everything but `A-Z a-z 0-9 - . _ ~`), so a `/`, `?`,
//!   `#` or `%` in a value stays inside its segment; a value that would make a whole segment `.`
//!   or `..` (which URL parsers collapse, climbing the path) is refused, as is an empty one.
//! - **Query** parameters are percent-encoded the same way; arrays follow the parameter's style:
//!   exploded `form` (the default) repeats the key (`tag=a&tag=b`), unexploded `form` joins with
//!   `,`, `spaceDelimited`, `pipeDelimited` (and 2.0 `tsv`) with their delimiter; objects are
//!   `deepObject` (`name[key]=value`) or their members as pairs.
//! - **Headers** and **cookies**: scalars as text, arrays joined with `,`; a value that cannot be
//!   sent in a header (a line break) is refused.
//! - **Body**: the flattened arguments assembled into one JSON object (or the `body` argument as
//!   it is); `application/x-www-form-urlencoded` and `multipart/form-data` bodies are encoded as
//!   such (text fields only); a body of another media type is sent when its argument is a string.
//! - Arguments the operation does not declare are ignored; `null` counts as not given. A missing
//!   required argument fails the call before anything is sent, naming every missing one.
//! - `Accept: application/json, */*;q=0.1` (mock servers such as Prism otherwise answer with a
//!   document's first media type, often XML).
//!
//! # Credentials
//!
//! Taken from the tool's connection: `kind: key` (`apiKey`), `kind: reference` (a registered
//! connection), or a connection of another kind with an `apiKey`, `key`, `token`,
//! `accessToken` or `bearerToken` field, or `username` and `password` fields. `kind: anonymous`
//! and `kind: remote` send none. A credential is placed where the operation's security
//! requirement says (the first one whose schemes the credential can fill): an `apiKey` scheme
//! in its header, query parameter or cookie; `http` `bearer`, `oauth2` and `openIdConnect` as
//! `Authorization: Bearer <key>`; `http` `basic` as `Authorization: Basic` from a username and
//! password. An operation that needs no security gets no credential. A credential is never part
//! of an error or of `Debug` output, even when the server echoes it; header credentials are marked
//! sensitive, and the shared client follows redirects only within one origin, so a credential never
//! reaches another host.
//!
//! # The result and its bounds
//!
//! A success (2xx) is `{"status": 200, "body": <JSON, or the text when the body is not JSON, or
//! null when empty>}`. Any other status, after retries, is `Err(Error::Tool)` whose message is
//! `HTTP <status> <reason>: <body>` (the body cut to [`MAX_TEXT_IN_ERROR`] bytes), for the model to
//! read. Bodies are read up to [`OpenApiClient::max_response_bytes`] (default
//! [`DEFAULT_MAX_RESPONSE_BYTES`], 1 MiB: the result goes to a model); a larger success body fails
//! the call. Timeouts and the retry policy are those of the [`HttpClient`] (default: the shared
//! client: 10 s to connect, 600 s per attempt, 3 attempts). 429 is retried for every method; 5xx
//! and timeouts only for idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE, TRACE), so a POST
//! is never sent twice after the server may have acted on it; a connection that could not be
//! opened is retried for every method. A `Retry-After` longer than the policy's `max_delay` ends
//! the retries. A fetched document is at most [`openapi::bounds::MAX_DOCUMENT_BYTES`].

pub(crate) mod kind;

use crate::http::{
    encode_component, error_chain, read_body, retry_after, with_retries, Attempt, HttpClient, ReadBody, Secrets,
    MAX_ERROR_BODY_BYTES, MAX_TEXT_IN_ERROR,
};
use crate::{Agent, Connection, Error, Result, Secret, Tool, ToolKind};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, COOKIE};
use reqwest::{Method, StatusCode, Url};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

use prompty_core::openapi;
pub use prompty_core::openapi::*;

/// The default largest response body an operation call reads: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 20;

/// What goes into `Accept`.
const ACCEPT_VALUE: &str = "application/json, */*;q=0.1";

/// The credential of a connection.
#[derive(Clone)]
enum Credential {
    None,
    Key(Secret),
    Basic { user: String, password: Secret },
}

/// A client of one OpenAPI document: lists its operations and calls them over HTTP. Cheap to
/// clone (the document is shared). See the [module docs](self) for how a request is built.
///
/// ```
/// use prompty::openapi::{parse_spec, OpenApiClient};
/// let spec = parse_spec(r#"{"openapi": "3.0.0", "servers": [{"url": "https://api.example"}],
///     "paths": {"/ping": {"get": {"operationId": "ping"}}}}"#, "api.json")?;
/// let connection: prompty::Connection = serde_json::from_value(serde_json::json!({"kind": "key", "apiKey": "s3cret"}))?;
/// let client = OpenApiClient::new(std::sync::Arc::new(spec), Some(&connection))?;
/// assert_eq!(client.operations()[0].name, "ping");
/// assert!(!format!("{client:?}").contains("s3cret"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OpenApiClient {
    spec: Arc<OpenApiSpec>,
    endpoint: Option<String>,
    spec_url: Option<Url>,
    credential: Credential,
    secrets: Secrets,
    http: HttpClient,
    max_response_bytes: usize,
}

impl fmt::Debug for OpenApiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let credential = match &self.credential {
            Credential::None => "none",
            Credential::Key(_) => "key [REDACTED]",
            Credential::Basic { .. } => "basic [REDACTED]",
        };
        f.debug_struct("OpenApiClient")
            .field("title", &self.spec.title)
            .field("operations", &self.spec.operations.len())
            .field("endpoint", &self.endpoint.as_deref().map(|e| self.secrets.scrub(&shown_url(e)).into_owned()))
            .field("credential", &credential)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

impl OpenApiClient {
    /// A client of `spec`, reached and authenticated as `connection` says (see the
    /// [module docs](self)). Fails on a connection kind that cannot be used (`oauth`, a
    /// `reference` to nothing registered).
    ///
    /// ```
    /// use prompty::openapi::{parse_spec, OpenApiClient};
    /// let spec = std::sync::Arc::new(parse_spec(r#"{"swagger": "2.0", "paths": {}}"#, "a.json")?);
    /// let oauth: prompty::Connection = serde_json::from_value(serde_json::json!({"kind": "oauth", "clientId": "c"}))?;
    /// assert!(OpenApiClient::new(spec, Some(&oauth)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(spec: Arc<OpenApiSpec>, connection: Option<&Connection>) -> Result<Self> {
        let (endpoint, credential) = from_connection(connection, 0)?;
        let mut sensitive = HeaderMap::new();
        // A secret shorter than 4 bytes is not scrubbed from response text: it would blank out
        // every occurrence of a common string (such a key protects nothing anyway).
        let mut add = |text: &str| {
            if text.len() < 4 {
                return;
            }
            if let Ok(mut v) = HeaderValue::from_str(text) {
                v.set_sensitive(true);
                sensitive.append(AUTHORIZATION, v);
            }
        };
        match &credential {
            Credential::None => {}
            Credential::Key(k) => add(k.expose()),
            Credential::Basic { user, password } => {
                add(password.expose());
                add(&format!("Basic {}", base64(&format!("{user}:{}", password.expose()))));
            }
        }
        Ok(OpenApiClient {
            spec,
            endpoint: endpoint.map(|e| e.trim().to_owned()).filter(|e| !e.is_empty()),
            spec_url: None,
            credential,
            secrets: Secrets::from_headers(&sensitive),
            http: HttpClient::shared(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        })
    }

    /// The client of an `openapi` tool of `agent`: its `specification` is read, either from a
    /// local file (relative to the prompt's folder, confined to it and the roots the prompt was
    /// loaded with, exactly as `${file:}` references are) or fetched from an `http(s)` URL with the
    /// shared client (no credential is sent with that request; at most
    /// [`openapi::bounds::MAX_DOCUMENT_BYTES`]; retried as the shared client's policy says).
    ///
    /// Errors: a file that is missing or outside the roots, or a document that does not parse,
    /// are the reader's errors (naming the file or URL and the JSON pointer); a tool of another
    /// kind, no `specification`, or a fetch that failed are [`Error::Tool`] naming the tool.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let dir = std::env::temp_dir().join(format!("prompty-doc-openapi-client-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("api.yaml"), "openapi: 3.0.0\nservers: [{url: 'https://api.example'}]\npaths:\n  /ping:\n    get: {operationId: ping}\n").unwrap();
    /// let agent = prompty::load_str("---\nname: x\n---\nHi", &dir, "x.prompty")?;
    /// let tool: prompty::Tool = serde_json::from_value(serde_json::json!(
    ///     {"name": "api", "kind": "openapi", "specification": "api.yaml"}))?;
    /// let client = prompty::openapi::OpenApiClient::from_tool(&tool, &agent).await?;
    /// assert_eq!(client.base_url(&client.operations()[0])?, "https://api.example");
    /// let outside: prompty::Tool = serde_json::from_value(serde_json::json!(
    ///     {"name": "api", "kind": "openapi", "specification": "../../etc/passwd"}))?;
    /// let err = prompty::openapi::OpenApiClient::from_tool(&outside, &agent).await.unwrap_err();
    /// assert!(matches!(err, prompty::Error::Format(prompty::FormatError::FileOutsideRoots { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    pub async fn from_tool(tool: &Tool, agent: &Agent) -> Result<Self> {
        let tool_error = |message: String| Error::Tool { name: tool.name.clone(), message };
        let ToolKind::OpenApi(openapi_tool) = &tool.kind else {
            return Err(tool_error(format!("it is a `{}` tool, not an `openapi` one", tool.kind.as_str())));
        };
        let reference = openapi_tool.specification.trim();
        // A declaration that cannot be used: a configuration error, found before any request.
        let setting = || format!("tools.{}.specification", tool.name);
        if reference.is_empty() {
            return Err(Error::Config {
                setting: setting(),
                message: "an `openapi` tool needs a `specification` (a file path or an http(s) URL)".to_owned(),
            });
        }
        let is_url = reference.starts_with("http://") || reference.starts_with("https://");
        let (spec, spec_url) = if is_url {
            let url = Url::parse(reference).map_err(|e| Error::Config {
                setting: setting(),
                message: format!("the specification URL '{}' is not valid: {e}", shown_url(reference)),
            })?;
            let text = fetch_text(&HttpClient::shared(), &url).await.map_err(tool_error)?;
            let origin = shown_url(reference);
            (openapi::parse_spec(&text, &origin)?, Some(url))
        } else {
            let file = agent.source.as_ref().map_or_else(|| format!("<agent {}>", agent.name), |s| s.path.clone());
            let (base_dir, options) = crate::tools::prompty::load_context(agent);
            let (_, spec) = openapi::read_spec_file(&base_dir, reference, &options, &file)?;
            (spec, None)
        };
        let mut client = OpenApiClient::new(Arc::new(spec), openapi_tool.connection.as_ref())?;
        client.spec_url = spec_url;
        Ok(client)
    }

    /// Blocking form of [`OpenApiClient::from_tool`].
    ///
    /// ```
    /// let agent = prompty::Agent::default();
    /// let tool: prompty::Tool = serde_json::from_value(serde_json::json!({"name": "api", "kind": "openapi"}))?;
    /// let err = prompty::openapi::OpenApiClient::from_tool_blocking(&tool, &agent).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "configuration error (tools.api.specification): an `openapi` tool needs a `specification` (a file path or an http(s) URL)"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_tool_blocking(tool: &Tool, agent: &Agent) -> Result<Self> {
        crate::blocking::block_on(OpenApiClient::from_tool(tool, agent))?
    }

    /// The same client, sending with `http` (its timeouts, retry policy and connection pool).
    ///
    /// ```
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.0.0"}"#, "a.json")?);
    /// use prompty::http::{HttpClient, RetryPolicy};
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?.with_http(HttpClient::shared().with_retry(RetryPolicy::none()));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn with_http(mut self, http: HttpClient) -> Self {
        self.http = http;
        self
    }

    /// The same client, reading response bodies up to `bytes` (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`]).
    ///
    /// ```
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.0.0"}"#, "a.json")?);
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?.with_max_response_bytes(4096);
    /// assert_eq!(client.max_response_bytes(), 4096);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The largest response body read.
    ///
    /// ```
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.0.0"}"#, "a.json")?);
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?;
    /// assert_eq!(client.max_response_bytes(), prompty::openapi::DEFAULT_MAX_RESPONSE_BYTES);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    /// The document.
    ///
    /// ```
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.1.0", "info": {"title": "T"}}"#, "a.json")?);
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?;
    /// assert_eq!(client.spec().title.as_deref(), Some("T"));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn spec(&self) -> &Arc<OpenApiSpec> {
        &self.spec
    }

    /// The operations, in document order.
    ///
    /// ```
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {}}}}"#, "a.json")?);
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?;
    /// assert_eq!(client.operations()[0].name, "get_a");
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn operations(&self) -> &[Operation] {
        &self.spec.operations
    }

    /// The operation named `name`.
    ///
    /// ```
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {}}}}"#, "a.json")?);
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?;
    /// assert!(client.operation("get_a").is_some());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.spec.operation(name)
    }

    /// The base URL calls of `operation` go to (without a trailing `/`), or why there is none.
    ///
    /// ```
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.0.0", "servers": [{"url": "/v1"}], "paths": {"/a": {"get": {}}}}"#, "a.json")?);
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?;
    /// let err = client.base_url(&client.operations()[0]).unwrap_err();
    /// assert!(err.to_string().contains("relative"));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn base_url(&self, operation: &Operation) -> Result<String> {
        let tool_error = |message: String| Error::Tool { name: operation.name.clone(), message };
        let written = match (&self.endpoint, operation.servers.first(), self.spec.servers.first()) {
            (Some(endpoint), _, _) => endpoint.clone(),
            (None, Some(server), _) | (None, None, Some(server)) => server.clone(),
            (None, None, None) => "/".to_owned(),
        };
        let url = match Url::parse(&written) {
            Ok(url) => url,
            Err(_) => match &self.spec_url {
                Some(base) => base.join(&written).map_err(|e| {
                    tool_error(format!("the server URL '{}' cannot be resolved: {e}", self.secrets.scrub(&written)))
                })?,
                None => {
                    return Err(tool_error(format!(
                        "the server URL '{}' is relative and the document was not fetched from a URL: set the \
                         tool's `connection.endpoint`",
                        self.secrets.scrub(&written)
                    )))
                }
            },
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(tool_error(format!(
                "the server URL '{}' is not http(s)",
                self.secrets.scrub(&shown_url(url.as_str()))
            )));
        }
        let mut text = url.to_string();
        if url.query().is_none() && url.fragment().is_none() {
            while text.ends_with('/') {
                text.pop();
            }
        }
        Ok(text)
    }

    /// Calls the operation `name` with the model's arguments (an object, keyed by the argument
    /// names of [`Operation::parameters_schema`]); returns `{"status": ..., "body": ...}` or the
    /// failure (see the [module docs](self)).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.0.0", "servers": [{"url": "http://127.0.0.1:9"}],
    /// #   "paths": {"/pets/{id}": {"get": {"operationId": "getPet"}}}}"#, "a.json")?);
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?;
    /// let err = client.call("getPet", serde_json::json!({})).await.unwrap_err();
    /// assert_eq!(err.to_string(), "Tool 'getPet' failed: missing required argument: id");
    /// # Ok::<(), prompty::Error>(()) }).unwrap();
    /// ```
    pub async fn call(&self, name: &str, args: Value) -> Result<Value> {
        let Some(operation) = self.spec.operation(name) else {
            let known: Vec<&str> = self.spec.operations.iter().map(|o| o.name.as_str()).take(20).collect();
            return Err(Error::Tool {
                name: name.to_owned(),
                message: format!("the document has no operation named '{name}' (it has: {})", known.join(", ")),
            });
        };
        let tool_error = |message: String| Error::Tool { name: operation.name.clone(), message };
        let args = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => return Err(tool_error(format!("the arguments must be a JSON object, not {}", kind_of(&other)))),
        };
        let request = self.build(operation, &args).map_err(tool_error)?;
        self.send(operation, request).await
    }

    /// Blocking form of [`OpenApiClient::call`].
    ///
    /// ```
    /// # let spec = std::sync::Arc::new(prompty::openapi::parse_spec(r#"{"openapi": "3.0.0", "paths": {}}"#, "a.json")?);
    /// let client = prompty::openapi::OpenApiClient::new(spec, None)?;
    /// assert!(client.call_blocking("nope", serde_json::json!({})).is_err());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn call_blocking(&self, name: &str, args: Value) -> Result<Value> {
        crate::blocking::block_on(self.call(name, args))?
    }

    /// The request of one call, or what is wrong with the arguments.
    fn build(&self, op: &Operation, args: &Map<String, Value>) -> std::result::Result<Built, String> {
        let given = |property: &str| args.get(property).filter(|v| !v.is_null());
        let mut missing: Vec<&str> = Vec::new();
        for p in op.parameters.iter().filter(|p| p.required) {
            if given(&p.property).is_none() {
                missing.push(&p.property);
            }
        }
        if let Some(body) = op.body.as_ref().filter(|b| b.required) {
            match &body.shape {
                BodyShape::Whole { property } if given(property).is_none() => missing.push(property),
                BodyShape::Flattened(fields) => missing.extend(
                    fields.iter().filter(|f| f.required && given(&f.property).is_none()).map(|f| f.property.as_str()),
                ),
                BodyShape::Whole { .. } => {}
            }
        }
        if !missing.is_empty() {
            let s = if missing.len() == 1 { "" } else { "s" };
            return Err(format!("missing required argument{s}: {}", missing.join(", ")));
        }

        let mut path = String::new();
        let mut query: Vec<(String, String)> = Vec::new();
        let mut headers = HeaderMap::new();
        let mut cookies: Vec<String> = Vec::new();
        for segment in op.path.split('/').skip(1) {
            path.push('/');
            path.push_str(&self.segment(op, segment, args)?);
        }
        for p in &op.parameters {
            let Some(value) = given(&p.property) else { continue };
            match p.location {
                ParameterLocation::Path => {}
                ParameterLocation::Query => query.extend(query_pairs(&p.name, value, &p.style, p.explode)),
                ParameterLocation::Header => {
                    let name = HeaderName::from_bytes(p.name.as_bytes())
                        .map_err(|_| format!("the header name '{}' is not valid", p.name))?;
                    let value = HeaderValue::from_str(&simple(value, p.explode, false))
                        .map_err(|_| format!("the value of '{}' cannot be sent in an HTTP header", p.property))?;
                    headers.append(name, value);
                }
                ParameterLocation::Cookie => cookies.push(format!(
                    "{}={}",
                    encode_component(&p.name),
                    encode_component(&simple(value, false, false))
                )),
            }
        }
        let body = match &op.body {
            Some(body) => self.body(body, args)?,
            None => None,
        };
        self.authenticate(op, &mut headers, &mut query, &mut cookies)?;
        if !cookies.is_empty() {
            let value = HeaderValue::from_str(&cookies.join("; ")).map_err(|_| "a cookie cannot be sent".to_owned())?;
            let sensitive = cookies.iter().any(|c| self.secrets.scrub(c) != c.as_str());
            let mut value = value;
            value.set_sensitive(sensitive);
            headers.insert(COOKIE, value);
        }
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_VALUE));
        let mut url = self.base_url(op).map_err(|e| match e {
            Error::Tool { message, .. } => message,
            other => other.to_string(),
        })?;
        url.push_str(&path);
        if !query.is_empty() {
            let pairs: Vec<String> =
                query.iter().map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v))).collect();
            url.push('?');
            url.push_str(&pairs.join("&"));
        }
        let url = Url::parse(&url).map_err(|e| format!("the request URL is not valid: {e}"))?;
        let method = Method::from_bytes(op.method.as_bytes()).map_err(|_| format!("unknown method {}", op.method))?;
        Ok(Built { method, url, headers, body })
    }

    /// One segment of the path with its `{parameters}` replaced by their encoded values.
    fn segment(
        &self,
        op: &Operation,
        template: &str,
        args: &Map<String, Value>,
    ) -> std::result::Result<String, String> {
        let mut out = String::new();
        let mut rest = template;
        let mut substituted = false;
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                rest = "";
                break;
            };
            let name = &after[..end];
            let param = op.parameters.iter().find(|p| p.location == ParameterLocation::Path && p.name == name);
            let value = param.and_then(|p| args.get(&p.property).filter(|v| !v.is_null()));
            let (Some(param), Some(value)) = (param, value) else {
                return Err(format!("missing required argument: {name}"));
            };
            let text = match param.style.as_str() {
                "label" => format!(".{}", simple(value, param.explode, true)),
                "matrix" => format!(";{}={}", encode_component(&param.name), simple(value, param.explode, true)),
                _ => simple(value, param.explode, true),
            };
            if text.is_empty() {
                return Err(format!("the path argument '{}' is empty", param.property));
            }
            out.push_str(&text);
            substituted = true;
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        if substituted {
            let decoded = out.to_ascii_lowercase().replace("%2e", ".");
            if decoded == "." || decoded == ".." {
                return Err(format!("a path argument may not make the segment '{out}' (it would climb the path)"));
            }
        }
        Ok(out)
    }

    fn body(
        &self,
        body: &openapi::Body,
        args: &Map<String, Value>,
    ) -> std::result::Result<Option<(String, Vec<u8>)>, String> {
        let given = |property: &str| args.get(property).filter(|v| !v.is_null());
        let value = match &body.shape {
            BodyShape::Whole { property } => match given(property) {
                Some(v) => v.clone(),
                None => return Ok(None),
            },
            BodyShape::Flattened(fields) => {
                let mut object = Map::new();
                for f in fields {
                    if let Some(v) = given(&f.property) {
                        object.insert(f.name.clone(), v.clone());
                    }
                }
                if object.is_empty() && !body.required {
                    return Ok(None);
                }
                Value::Object(object)
            }
        };
        let media = body.content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let bytes = if media == "application/x-www-form-urlencoded" {
            let pairs = form_pairs(&value);
            pairs
                .iter()
                .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
                .collect::<Vec<_>>()
                .join("&")
                .into_bytes()
        } else if media == "multipart/form-data" {
            let boundary = format!("prompty-{:032x}", rand::random::<u128>());
            let mut out = Vec::new();
            for (k, v) in form_pairs(&value) {
                let name = k.replace('"', "%22").replace(['\r', '\n'], " ");
                out.extend_from_slice(
                    format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{v}\r\n")
                        .as_bytes(),
                );
            }
            out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            return Ok(Some((format!("multipart/form-data; boundary={boundary}"), out)));
        } else if media == "application/json" || media.ends_with("+json") || media.ends_with("/json") {
            serde_json::to_vec(&value).map_err(|e| format!("the body cannot be serialized: {e}"))?
        } else {
            match value {
                Value::String(s) => s.into_bytes(),
                _ => {
                    return Err(format!(
                        "the operation takes a '{}' body: give it as a string argument",
                        body.content_type
                    ))
                }
            }
        };
        Ok(Some((body.content_type.clone(), bytes)))
    }

    /// Places the credential where the operation's security asks for it.
    fn authenticate(
        &self,
        op: &Operation,
        headers: &mut HeaderMap,
        query: &mut Vec<(String, String)>,
        cookies: &mut Vec<String>,
    ) -> std::result::Result<(), String> {
        if matches!(self.credential, Credential::None) || op.security.is_empty() {
            return Ok(());
        }
        let schemes = &self.spec.security_schemes;
        let fillable = |name: &String| match (schemes.get(name), &self.credential) {
            (Some(SecurityScheme::ApiKey { .. }), Credential::Key(_)) => true,
            (Some(SecurityScheme::Http { scheme }), Credential::Key(_)) => scheme != "basic",
            (Some(SecurityScheme::Http { scheme }), Credential::Basic { .. }) => scheme == "basic",
            (Some(SecurityScheme::OAuth2 | SecurityScheme::OpenIdConnect), Credential::Key(_)) => true,
            _ => false,
        };
        // The first requirement the credential fills; an empty one (no credential needed) only
        // when none is fillable.
        let Some(requirement) = op.security.iter().find(|r| !r.schemes.is_empty() && r.schemes.iter().all(fillable))
        else {
            return Ok(());
        };
        let sensitive = |text: String| -> std::result::Result<HeaderValue, String> {
            let mut v = HeaderValue::from_str(&text)
                .map_err(|_| "the credential contains characters that cannot be sent in an HTTP header".to_owned())?;
            v.set_sensitive(true);
            Ok(v)
        };
        for name in &requirement.schemes {
            match (schemes.get(name), &self.credential) {
                (Some(SecurityScheme::ApiKey { name, location }), Credential::Key(key)) => match location {
                    ParameterLocation::Header => {
                        let header = HeaderName::from_bytes(name.as_bytes())
                            .map_err(|_| format!("the apiKey header name '{name}' is not valid"))?;
                        headers.insert(header, sensitive(key.expose().to_owned())?);
                    }
                    ParameterLocation::Query => query.push((name.clone(), key.expose().to_owned())),
                    _ => cookies.push(format!("{}={}", encode_component(name), encode_component(key.expose()))),
                },
                (Some(SecurityScheme::Http { scheme }), Credential::Basic { user, password }) if scheme == "basic" => {
                    let token = base64(&format!("{user}:{}", password.expose()));
                    headers.insert(AUTHORIZATION, sensitive(format!("Basic {token}"))?);
                }
                (Some(_), Credential::Key(key)) => {
                    headers.insert(AUTHORIZATION, sensitive(format!("Bearer {}", key.expose()))?);
                }
                _ => {}
            }
        }
        Ok(())
    }

    async fn send(&self, op: &Operation, request: Built) -> Result<Value> {
        let tool_error =
            |message: String| Error::Tool { name: op.name.clone(), message: self.secrets.scrub(&message).into_owned() };
        let client = self.http.reqwest().ok_or_else(|| tool_error("the HTTP client could not be built".to_owned()))?;
        let policy = self.http.config().retry;
        let timeout = self.http.config().request_timeout;
        let idempotent = matches!(request.method.as_str(), "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE" | "TRACE");
        let outcome = with_retries(&policy, || async {
            let mut builder =
                client.request(request.method.clone(), request.url.clone()).headers(request.headers.clone());
            if let Some((content_type, bytes)) = &request.body {
                builder = builder.header(CONTENT_TYPE, content_type.as_str()).body(bytes.clone());
            }
            let outcome = tokio::time::timeout(timeout, async {
                let mut response = builder.send().await?;
                let status = response.status();
                let retry_after = retry_after(response.headers());
                let media = response
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(|t| t.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
                    .unwrap_or_default();
                let limit = if status.is_success() { self.max_response_bytes } else { MAX_ERROR_BODY_BYTES };
                let too_long =
                    response.content_length().is_some_and(|n| usize::try_from(n).map_or(true, |n| n > limit));
                let body =
                    if too_long && status.is_success() { None } else { Some(read_body(&mut response, limit).await?) };
                Ok::<_, reqwest::Error>((status, retry_after, media, body))
            })
            .await;
            let (retryable, retry_after, error) = match outcome {
                Err(_) => (idempotent, None, format!("no response within {timeout:?} (request timeout)")),
                Ok(Err(e)) => {
                    let retry = e.is_connect() || (idempotent && !e.is_builder() && !e.is_redirect());
                    let message = format!("the request failed: {}", error_chain(&e.without_url()));
                    (retry, None, message)
                }
                Ok(Ok((status, retry_after, media, body))) => {
                    if status.is_success() {
                        let Some(ReadBody::Complete(body)) = body else {
                            return Attempt::Fail(self.too_large());
                        };
                        return Attempt::Done(self.success(status, &media, &body));
                    }
                    let text = match body {
                        Some(ReadBody::Complete(b) | ReadBody::TooLarge(b)) => b,
                        None => Vec::new(),
                    };
                    let text = self.secrets.scrub_bytes(&text);
                    let shown = if text.is_empty() {
                        "(no body)".to_owned()
                    } else {
                        cut(&String::from_utf8_lossy(&text), MAX_TEXT_IN_ERROR)
                    };
                    let reason = status.canonical_reason().map(|r| format!(" {r}")).unwrap_or_default();
                    let code = status.as_u16();
                    let retryable = code == 429 || (idempotent && status.is_server_error());
                    (retryable, retry_after, format!("HTTP {code}{reason}: {shown}"))
                }
            };
            if retryable {
                Attempt::Retry(error, retry_after)
            } else {
                Attempt::Fail(error)
            }
        })
        .await;
        outcome.map_err(|(error, attempts)| {
            let note = if attempts > 1 { format!(" ({attempts} attempts)") } else { String::new() };
            tool_error(format!("{error}{note}"))
        })
    }

    /// The result of a successful response: `{status, body}`, the body as JSON when it is JSON,
    /// as text when it is text, and described when it is binary.
    fn success(&self, status: StatusCode, media: &str, body: &[u8]) -> Value {
        let value = if body.is_empty() {
            Value::Null
        } else if std::str::from_utf8(body).is_err() {
            // Binary data (an image, a file) means nothing to a model as text.
            let media = if media.is_empty() { "unknown type" } else { media };
            Value::String(format!("({} bytes of {}, not text)", body.len(), cut(media, 100)))
        } else {
            let body = self.secrets.scrub_bytes(body);
            let is_json = media == "application/json" || media.ends_with("+json");
            match serde_json::from_slice::<Value>(&body) {
                Ok(v) if is_json || looks_like_json(&body) => v,
                _ => Value::String(String::from_utf8_lossy(&body).into_owned()),
            }
        };
        let mut out = Map::new();
        out.insert("status".to_owned(), Value::from(status.as_u16()));
        out.insert("body".to_owned(), value);
        Value::Object(out)
    }

    fn too_large(&self) -> String {
        format!(
            "the response body is larger than {} bytes (OpenApiClient::with_max_response_bytes)",
            self.max_response_bytes
        )
    }
}

/// A request ready to send.
struct Built {
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Option<(String, Vec<u8>)>,
}

/// The endpoint and credential of a tool's connection.
fn from_connection(connection: Option<&Connection>, depth: usize) -> Result<(Option<String>, Credential)> {
    let text = |fields: &Map<String, Value>, keys: &[&str]| {
        keys.iter().find_map(|k| fields.get(*k).and_then(Value::as_str)).filter(|s| !s.is_empty()).map(str::to_owned)
    };
    Ok(match connection {
        None => (None, Credential::None),
        Some(Connection::Key { endpoint, api_key, .. }) => {
            let credential = match api_key {
                Some(k) if !k.is_empty() => Credential::Key(k.clone()),
                _ => Credential::None,
            };
            (endpoint.clone(), credential)
        }
        Some(Connection::Anonymous { endpoint, .. } | Connection::Remote { endpoint, .. }) => {
            (endpoint.clone(), Credential::None)
        }
        Some(Connection::Reference { name, .. }) => {
            let registered = crate::get_connection_as::<Connection>(name).map_err(|e| Error::ToolBinding {
                message: format!(
                    "the openapi tool's connection refers to '{name}': {e}. Register a `prompty::Connection` with \
                     `prompty::register_connection(\"{name}\", ...)`"
                ),
            })?;
            if depth >= 4 {
                return Err(Error::ToolBinding {
                    message: format!("connection '{name}' refers to further references"),
                });
            }
            from_connection(Some(&registered), depth + 1)?
        }
        Some(Connection::Other { fields, .. }) => {
            let endpoint = text(fields, &["endpoint"]);
            let key = text(fields, &["apiKey", "api_key", "key", "token", "accessToken", "bearerToken"]);
            let user = text(fields, &["username", "user"]);
            let password = text(fields, &["password"]);
            let credential = match (key, user, password) {
                (Some(key), _, _) => Credential::Key(Secret::new(key)),
                (None, Some(user), Some(password)) => Credential::Basic { user, password: Secret::new(password) },
                _ => Credential::None,
            };
            (endpoint, credential)
        }
        Some(other) => {
            return Err(Error::ToolBinding {
                message: format!(
                    "connection kind '{}' is not supported for openapi tools (use key, anonymous, remote, reference, \
                     or a kind with `apiKey`/`token` or `username`/`password` fields)",
                    other.kind()
                ),
            })
        }
    })
}

/// Fetches a document, at most [`openapi::bounds::MAX_DOCUMENT_BYTES`], retrying as `http` says.
async fn fetch_text(http: &HttpClient, url: &Url) -> std::result::Result<String, String> {
    let shown = shown_url(url.as_str());
    let fail = |message: String| format!("cannot fetch the openapi specification {shown}: {message}");
    let client = http.reqwest().ok_or_else(|| fail("the HTTP client could not be built".to_owned()))?;
    let policy = http.config().retry;
    let timeout = http.config().request_timeout;
    let limit = openapi::bounds::MAX_DOCUMENT_BYTES;
    let outcome = with_retries(&policy, || async {
        let request = client.get(url.clone()).header(ACCEPT, "application/json, application/yaml;q=0.9, */*;q=0.5");
        let outcome = tokio::time::timeout(timeout, async {
            let mut response = request.send().await?;
            let status = response.status();
            let retry_after = retry_after(response.headers());
            let body = read_body(&mut response, limit).await?;
            Ok::<_, reqwest::Error>((status, retry_after, body))
        })
        .await;
        match outcome {
            Ok(Ok((status, _, body))) if status.is_success() => match body {
                ReadBody::Complete(body) => match String::from_utf8(body) {
                    Ok(text) => Attempt::Done(text),
                    Err(_) => Attempt::Fail("it is not UTF-8 text".to_owned()),
                },
                ReadBody::TooLarge(_) => {
                    Attempt::Fail(format!("it is larger than {limit} bytes (openapi::bounds::MAX_DOCUMENT_BYTES)"))
                }
            },
            Ok(Ok((status, retry_after, _))) if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS => {
                Attempt::Retry(format!("HTTP {status}"), retry_after)
            }
            Ok(Ok((status, _, _))) => Attempt::Fail(format!("HTTP {status}")),
            Ok(Err(e)) if e.is_builder() || e.is_redirect() => Attempt::Fail(error_chain(&e.without_url())),
            Ok(Err(e)) => Attempt::Retry(error_chain(&e.without_url()), None),
            Err(_) => Attempt::Retry(format!("no response within {timeout:?}"), None),
        }
    })
    .await;
    outcome.map_err(|(error, _)| fail(error))
}

/// A URL as errors show it: without user information and query (either may hold a key).
fn shown_url(text: &str) -> String {
    match Url::parse(text) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.to_string()
        }
        Err(_) => text.split(['?', '#']).next().unwrap_or("").to_owned(),
    }
}

fn looks_like_json(body: &[u8]) -> bool {
    matches!(body.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'['))
}

fn cut(text: &str, max: usize) -> String {
    match prompty_core::text::prefix(text, max) {
        whole if whole.len() == text.len() => text.to_owned(),
        part => format!("{part}... ({} bytes)", text.len()),
    }
}

/// The JSON kind of a value, for messages.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A scalar as text (`null` is empty, nested values are their JSON).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The `simple` style: arrays and objects joined with `,` (`k=v` pairs when exploded); each
/// piece percent-encoded when `encoded` (path values).
fn simple(v: &Value, explode: bool, encoded: bool) -> String {
    let piece = |s: String| if encoded { encode_component(&s) } else { s };
    match v {
        Value::Array(items) => items.iter().map(|i| piece(scalar(i))).collect::<Vec<_>>().join(","),
        Value::Object(map) => {
            let parts: Vec<String> = if explode {
                map.iter().map(|(k, v)| format!("{}={}", piece(k.clone()), piece(scalar(v)))).collect()
            } else {
                map.iter().flat_map(|(k, v)| [piece(k.clone()), piece(scalar(v))]).collect()
            };
            parts.join(",")
        }
        other => piece(scalar(other)),
    }
}

/// The `name=value` pairs of a query parameter (not yet encoded).
fn query_pairs(name: &str, v: &Value, style: &str, explode: bool) -> Vec<(String, String)> {
    match v {
        Value::Array(items) => {
            let texts: Vec<String> = items.iter().map(scalar).collect();
            let delimiter = match style {
                "spaceDelimited" => " ",
                "pipeDelimited" => "|",
                "tabDelimited" => "\t",
                _ if explode => return texts.into_iter().map(|t| (name.to_owned(), t)).collect(),
                _ => ",",
            };
            vec![(name.to_owned(), texts.join(delimiter))]
        }
        Value::Object(map) => match style {
            "deepObject" => map.iter().map(|(k, v)| (format!("{name}[{k}]"), scalar(v))).collect(),
            _ if explode => map.iter().map(|(k, v)| (k.clone(), scalar(v))).collect(),
            _ => vec![(
                name.to_owned(),
                map.iter().flat_map(|(k, v)| [k.clone(), scalar(v)]).collect::<Vec<_>>().join(","),
            )],
        },
        other => vec![(name.to_owned(), scalar(other))],
    }
}

/// The fields of a form body: an object's members (arrays repeat their key), or one `body` field.
fn form_pairs(v: &Value) -> Vec<(String, String)> {
    match v {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| match v {
                Value::Array(items) => items.iter().map(|i| (k.clone(), scalar(i))).collect::<Vec<_>>(),
                other => vec![(k.clone(), scalar(other))],
            })
            .collect(),
        other => vec![("body".to_owned(), scalar(other))],
    }
}

/// Standard base64 with padding (for `Authorization: Basic`).
fn base64(text: &str) -> String {
    prompty_core::text::base64(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn styles() {
        assert_eq!(encode_component("a/b c?#%é"), "a%2Fb%20c%3F%23%25%C3%A9");
        assert_eq!(simple(&json!(["a/b", 1]), false, true), "a%2Fb,1");
        assert_eq!(simple(&json!({"x": 1, "y": "z"}), true, false), "x=1,y=z");
        assert_eq!(simple(&json!({"x": 1}), false, false), "x,1");
        let q = |v: Value, style: &str, explode: bool| query_pairs("t", &v, style, explode);
        assert_eq!(q(json!(["a", "b"]), "form", true), [("t".into(), "a".into()), ("t".into(), "b".into())]);
        assert_eq!(q(json!(["a", "b"]), "form", false), [("t".to_owned(), "a,b".to_owned())]);
        assert_eq!(q(json!(["a", "b"]), "pipeDelimited", false), [("t".to_owned(), "a|b".to_owned())]);
        assert_eq!(q(json!({"k": 1}), "deepObject", true), [("t[k]".to_owned(), "1".to_owned())]);
        assert_eq!(q(json!(true), "form", true), [("t".to_owned(), "true".to_owned())]);
    }

    fn client(doc: &str, connection: Value) -> OpenApiClient {
        let spec = Arc::new(openapi::parse_spec(doc, "t.json").unwrap());
        let connection: Option<Connection> =
            if connection.is_null() { None } else { Some(serde_json::from_value(connection).unwrap()) };
        OpenApiClient::new(spec, connection.as_ref()).unwrap()
    }

    #[test]
    fn paths_cannot_climb() {
        let c = client(
            r#"{"openapi": "3.0.0", "servers": [{"url": "http://h/base/"}], "paths": {"/files/{name}/raw": {"get": {"operationId": "f"}}}}"#,
            Value::Null,
        );
        let op = c.operation("f").unwrap();
        let url = |v: Value| c.build(op, json!({ "name": v }).as_object().unwrap()).map(|b| b.url.to_string());
        assert_eq!(url(json!("a/b c?")).unwrap(), "http://h/base/files/a%2Fb%20c%3F/raw");
        assert_eq!(url(json!("...")).unwrap(), "http://h/base/files/.../raw");
        for bad in [json!(".."), json!("."), json!("")] {
            assert!(url(bad.clone()).is_err(), "{bad}");
        }
        assert_eq!(url(json!(["..", "x"])).unwrap(), "http://h/base/files/..,x/raw");
        assert_eq!(url(json!(42)).unwrap(), "http://h/base/files/42/raw");
    }

    #[test]
    fn credentials_never_show() {
        let c = client(
            r#"{"openapi": "3.0.0", "paths": {}}"#,
            json!({"kind": "basic", "username": "u", "password": "pw-secret-1"}),
        );
        assert!(!format!("{c:?}").contains("pw-secret-1"));
        assert_eq!(c.secrets.scrub("x pw-secret-1 y"), "x [REDACTED] y");
        let token = base64("u:pw-secret-1");
        assert_eq!(c.secrets.scrub(&token), "[REDACTED]");
    }
}
