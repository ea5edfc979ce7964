//! How a model or tool is reached: [`Connection`].

use super::{Secret, StructuredOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Fields every connection kind may carry.
///
/// ```
/// let c = prompty_core::ConnectionCommon::default();
/// assert!(c.authentication_mode.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCommon {
    /// `user` or `system`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication_mode: Option<String>,
    /// Free text shown to users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_description: Option<String>,
    /// For OpenAI-compatible model servers: the request field that carries
    /// `model.options.maxOutputTokens`. Unset: [`MaxTokensField::for_endpoint`] decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<MaxTokensField>,
    /// For model servers: how `outputs:` are asked for by the prompts on this connection, unless
    /// a prompt's `model.options.structuredOutput`, `--structured-output` or
    /// `PROMPTY_STRUCTURED_OUTPUT` says otherwise (see [`StructuredOutput`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutput>,
}

/// The Chat Completions field that carries the output token limit (`model.options.maxOutputTokens`).
///
/// OpenAI's own API wants `max_completion_tokens` (its reasoning models reject `max_tokens`);
/// most other OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio, many proxies) read
/// only `max_tokens` and would silently generate to the context limit. Set it on the connection
/// (`maxTokensField: max_tokens`) or let [`MaxTokensField::for_endpoint`] decide.
///
/// ```
/// use prompty_core::MaxTokensField;
/// let f: MaxTokensField = serde_json::from_value(serde_json::json!("max_tokens")).unwrap();
/// assert_eq!(f.as_str(), "max_tokens");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_tokens`: the original field, read by nearly every compatible server.
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's current field.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The field's name on the wire.
    ///
    /// ```
    /// assert_eq!(prompty_core::MaxTokensField::MaxCompletionTokens.as_str(), "max_completion_tokens");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    /// The default rule for an endpoint (the base URL requests go to): `max_completion_tokens`
    /// for OpenAI's and Azure's hosts (`api.openai.com`, `*.openai.com`, `*.openai.azure.com`,
    /// `*.services.ai.azure.com`, `*.cognitiveservices.azure.com`) and when the endpoint is not
    /// known (OpenAI's default endpoint is used then); `max_tokens` for any other host.
    ///
    /// ```
    /// use prompty_core::MaxTokensField;
    /// assert_eq!(MaxTokensField::for_endpoint(Some("https://api.openai.com/v1")), MaxTokensField::MaxCompletionTokens);
    /// assert_eq!(MaxTokensField::for_endpoint(None), MaxTokensField::MaxCompletionTokens);
    /// assert_eq!(MaxTokensField::for_endpoint(Some("http://127.0.0.1:8080/v1")), MaxTokensField::MaxTokens);
    /// ```
    pub fn for_endpoint(endpoint: Option<&str>) -> MaxTokensField {
        let Some(endpoint) = endpoint.map(str::trim).filter(|e| !e.is_empty()) else {
            return MaxTokensField::MaxCompletionTokens;
        };
        if is_openai_host(endpoint) {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        }
    }
}

/// Whether the URL's host is one of OpenAI's or Azure's: `openai.com`, `*.openai.com`,
/// `*.openai.azure.com`, `*.services.ai.azure.com`, `*.cognitiveservices.azure.com` (the rule of
/// [`MaxTokensField::for_endpoint`], and of the structured-output fallback of the OpenAI
/// provider, which treats any other host as a compatible server).
///
/// ```
/// assert!(prompty_core::is_openai_host("https://api.openai.com/v1"));
/// assert!(prompty_core::is_openai_host("https://res.openai.azure.com"));
/// assert!(!prompty_core::is_openai_host("http://127.0.0.1:8080/v1"));
/// ```
pub fn is_openai_host(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.rsplit_once(':') {
        Some((h, port)) if !h.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host_port,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "openai.com"
        || [".openai.com", ".openai.azure.com", ".services.ai.azure.com", ".cognitiveservices.azure.com"]
            .iter()
            .any(|suffix| host.ends_with(suffix))
}

/// Where a model is served and how to authenticate, discriminated by `kind`.
///
/// Any kind this runtime does not know is kept as [`Connection::Other`] with all its fields.
///
/// ```
/// use prompty_core::Connection;
/// let c: Connection = serde_json::from_value(serde_json::json!(
///     {"kind": "key", "endpoint": "https://x", "apiKey": "sk"})).unwrap();
/// assert_eq!(c.kind(), "key");
/// assert_eq!(c.endpoint(), Some("https://x"));
/// assert!(!format!("{c:?}").contains("sk\""));
/// ```
///
/// `Debug` never shows a credential: the typed secrets ([`Secret`]) print `[REDACTED]`, a secret
/// value that landed in another field (`kind: ${env:MY_API_KEY}`) prints `[REDACTED]` (see
/// [`Secret::scrub`]), and in a kind this runtime does not know, every field whose name looks
/// secret (see [`Connection::is_secret_field`]) prints `"[REDACTED]"` whatever its value, in
/// nested objects too:
///
/// ```
/// use prompty_core::Connection;
/// let c: Connection = serde_json::from_value(serde_json::json!({"kind": "vault",
///     "endpoint": "https://v", "clientSecret": "s3", "auth": {"bearerToken": "t0k"}, "nested": [{"pass_word": "pw"}]}))
///     .unwrap();
/// let debug = format!("{c:?}");
/// assert!(debug.contains("https://v") && debug.contains("[REDACTED]"));
/// assert!(!debug.contains("s3") && !debug.contains("t0k"));
/// ```
#[derive(Clone, PartialEq)]
pub enum Connection {
    /// `kind: key`: an endpoint and an API key.
    Key {
        /// The service's base URL.
        endpoint: Option<String>,
        /// The API key.
        api_key: Option<Secret>,
        /// Common fields.
        common: ConnectionCommon,
    },
    /// `kind: reference`: a connection registered by name in the host.
    Reference {
        /// The registered name.
        name: String,
        /// An optional sub-target of the registered connection.
        target: Option<String>,
        /// Common fields.
        common: ConnectionCommon,
    },
    /// `kind: remote`: a named remote connection.
    Remote {
        /// The connection's name.
        name: Option<String>,
        /// The endpoint.
        endpoint: Option<String>,
        /// Common fields.
        common: ConnectionCommon,
    },
    /// `kind: anonymous`: an endpoint that needs no credential.
    Anonymous {
        /// The endpoint.
        endpoint: Option<String>,
        /// Common fields.
        common: ConnectionCommon,
    },
    /// `kind: foundry`: an Azure AI Foundry (or Azure OpenAI) project.
    Foundry {
        /// The endpoint.
        endpoint: Option<String>,
        /// The connection's name in the project.
        name: Option<String>,
        /// The connection type.
        connection_type: Option<String>,
        /// Common fields.
        common: ConnectionCommon,
    },
    /// `kind: oauth`: client-credentials OAuth.
    OAuth {
        /// The endpoint.
        endpoint: Option<String>,
        /// The client id.
        client_id: Option<String>,
        /// The client secret.
        client_secret: Option<Secret>,
        /// The token URL.
        token_url: Option<String>,
        /// The scopes to request.
        scopes: Option<Vec<String>>,
        /// Common fields.
        common: ConnectionCommon,
    },
    /// Any other kind, with every field as written.
    Other {
        /// The kind as written.
        kind: String,
        /// All other fields.
        fields: Map<String, Value>,
    },
}

/// `value` with the value of every secret-looking field ([`Connection::is_secret_field`]), at any depth,
/// replaced by `"[REDACTED]"`.
pub(crate) fn redact_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(redact_map(map)),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        other => other.clone(),
    }
}

/// An endpoint as `Debug` shows it: without the user information of its URL
/// (`https://user:pass@host` → `https://[REDACTED]@host`) and with the values of secret-looking
/// query parameters (`?api-key=…`, `?sig=…`) redacted.
///
/// ```
/// assert_eq!(prompty_core::redact_url("https://u:p@h.example/x?api-key=k&v=1"), "https://[REDACTED]@h.example/x?api-key=[REDACTED]&v=1");
/// ```
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("[REDACTED]@{}", &authority[at + 1..]),
        None => authority.to_owned(),
    };
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((t, frag)) => (t, format!("#{frag}")),
        None => (tail, String::new()),
    };
    let tail = match before_fragment.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if Connection::is_secret_field(k) || k.eq_ignore_ascii_case("sig") => {
                        format!("{k}=[REDACTED]")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => before_fragment.to_owned(),
    };
    format!("{scheme}{authority}{tail}{fragment}")
}

fn redact_endpoint(endpoint: &Option<String>) -> Option<String> {
    endpoint.as_deref().map(redact_url)
}

/// Remembers ([`Secret::remember`]) the string value of every secret-looking field of `map`, at
/// any depth: the credentials of a connection of a kind this runtime does not know.
pub(crate) fn remember_secret_fields(map: &Map<String, Value>) {
    for (k, v) in map {
        match v {
            Value::String(s) if Connection::is_secret_field(k) => Secret::remember(s),
            Value::Object(inner) => remember_secret_fields(inner),
            Value::Array(items) => items.iter().for_each(|item| {
                if let Value::Object(inner) = item {
                    remember_secret_fields(inner);
                }
            }),
            _ => {}
        }
    }
}

/// [`redact_value`] of every field of `map`.
pub(crate) fn redact_map(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| {
            let v =
                if Connection::is_secret_field(k) { Value::String("[REDACTED]".to_owned()) } else { redact_value(v) };
            (k.clone(), v)
        })
        .collect()
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        super::secret::ScrubbedDebug(ConnectionFields(self)).fmt(f)
    }
}

/// The fields of a [`Connection`] as `Debug` shows them, before [`crate::Secret::scrub`].
struct ConnectionFields<'a>(&'a Connection);

impl std::fmt::Debug for ConnectionFields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Connection::Key { endpoint, api_key, common } => f
                .debug_struct("Key")
                .field("endpoint", &redact_endpoint(endpoint))
                .field("api_key", api_key)
                .field("common", common)
                .finish(),
            Connection::Reference { name, target, common } => {
                f.debug_struct("Reference").field("name", name).field("target", target).field("common", common).finish()
            }
            Connection::Remote { name, endpoint, common } => f
                .debug_struct("Remote")
                .field("name", name)
                .field("endpoint", &redact_endpoint(endpoint))
                .field("common", common)
                .finish(),
            Connection::Anonymous { endpoint, common } => f
                .debug_struct("Anonymous")
                .field("endpoint", &redact_endpoint(endpoint))
                .field("common", common)
                .finish(),
            Connection::Foundry { endpoint, name, connection_type, common } => f
                .debug_struct("Foundry")
                .field("endpoint", &redact_endpoint(endpoint))
                .field("name", name)
                .field("connection_type", connection_type)
                .field("common", common)
                .finish(),
            Connection::OAuth { endpoint, client_id, client_secret, token_url, scopes, common } => f
                .debug_struct("OAuth")
                .field("endpoint", &redact_endpoint(endpoint))
                .field("client_id", client_id)
                .field("client_secret", client_secret)
                .field("token_url", token_url)
                .field("scopes", scopes)
                .field("common", common)
                .finish(),
            Connection::Other { kind, fields } => {
                f.debug_struct("Other").field("kind", kind).field("fields", &redact_map(fields)).finish()
            }
        }
    }
}

impl Connection {
    /// The built-in kinds (the values of `kind` this runtime reads into typed fields); any other
    /// kind is kept as [`Connection::Other`].
    ///
    /// ```
    /// assert!(prompty_core::Connection::KINDS.contains(&"anonymous"));
    /// ```
    pub const KINDS: [&'static str; 6] = ["key", "reference", "remote", "anonymous", "foundry", "oauth"];

    /// The keys every built-in kind reads besides its own ([`Connection::keys_of`]): `kind` and
    /// the fields of [`ConnectionCommon`], as written in a file.
    ///
    /// ```
    /// assert!(prompty_core::Connection::COMMON_KEYS.contains(&"structuredOutput"));
    /// ```
    pub const COMMON_KEYS: [&'static str; 5] =
        ["kind", "authenticationMode", "usageDescription", "maxTokensField", "structuredOutput"];

    /// The keys of its own that a connection of the built-in `kind` reads, as written in a file
    /// (besides [`Connection::COMMON_KEYS`]); `None` for a kind that is not built in, whose
    /// fields are all kept. Any other key of a built-in kind is dropped when the prompt loads:
    /// compile-time checks warn about it.
    ///
    /// ```
    /// use prompty_core::Connection;
    /// assert_eq!(Connection::keys_of("key"), Some(&["endpoint", "apiKey"][..]));
    /// assert_eq!(Connection::keys_of("stdio"), None);
    /// ```
    pub fn keys_of(kind: &str) -> Option<&'static [&'static str]> {
        Some(match kind {
            "key" => &["endpoint", "apiKey"],
            "reference" => &["name", "target"],
            "remote" => &["name", "endpoint"],
            "anonymous" => &["endpoint"],
            "foundry" => &["endpoint", "name", "connectionType"],
            "oauth" => &["endpoint", "clientId", "clientSecret", "tokenUrl", "scopes"],
            _ => return None,
        })
    }

    /// Whether a field of that name holds a credential, the rule of `Debug` redaction: its name,
    /// lower-cased with `_`, `-`, `.` and spaces removed, contains `key`, `token`, `secret`,
    /// `password`, `passwd`, `pwd`, `credential`, `signature`, `cookie` or `auth` (but not as part
    /// of `author`), or is `sas`: `apiKey`, `api_key`, `x-api-key`, `clientSecret`,
    /// `Authorization`, `accessToken`, ... The rule errs on the side of hiding (`keyVaultName` is
    /// hidden too).
    ///
    /// ```
    /// use prompty_core::Connection;
    /// for name in ["apiKey", "api_key", "API-KEY", "key", "accessToken", "client_secret", "Password",
    ///              "credentials", "Authorization", "authMode", "sas"] {
    ///     assert!(Connection::is_secret_field(name), "{name}");
    /// }
    /// for name in ["endpoint", "name", "kind", "deployment", "scopes", "authors"] {
    ///     assert!(!Connection::is_secret_field(name), "{name}");
    /// }
    /// ```
    pub fn is_secret_field(name: &str) -> bool {
        super::secret::is_secret_name(name)
    }

    /// The `kind` discriminator as written in the file.
    pub fn kind(&self) -> &str {
        match self {
            Connection::Key { .. } => "key",
            Connection::Reference { .. } => "reference",
            Connection::Remote { .. } => "remote",
            Connection::Anonymous { .. } => "anonymous",
            Connection::Foundry { .. } => "foundry",
            Connection::OAuth { .. } => "oauth",
            Connection::Other { kind, .. } => kind,
        }
    }

    /// The endpoint, for the kinds that have one.
    pub fn endpoint(&self) -> Option<&str> {
        match self {
            Connection::Key { endpoint, .. }
            | Connection::Remote { endpoint, .. }
            | Connection::Anonymous { endpoint, .. }
            | Connection::Foundry { endpoint, .. }
            | Connection::OAuth { endpoint, .. } => endpoint.as_deref(),
            Connection::Reference { .. } => None,
            Connection::Other { fields, .. } => fields.get("endpoint").and_then(Value::as_str),
        }
    }
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_key: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    connection_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scopes: Option<Vec<String>>,
    #[serde(flatten)]
    common: ConnectionCommon,
}

impl Serialize for Connection {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (kind, wire) = match self.clone() {
            Connection::Other { kind, fields } => {
                let mut m = s.serialize_map(Some(fields.len() + 1))?;
                m.serialize_entry("kind", &kind)?;
                for (k, v) in &fields {
                    m.serialize_entry(k, v)?;
                }
                return m.end();
            }
            Connection::Key { endpoint, api_key, common } => {
                ("key", Wire { endpoint, api_key, common, ..Wire::default() })
            }
            Connection::Reference { name, target, common } => {
                ("reference", Wire { name: Some(name), target, common, ..Wire::default() })
            }
            Connection::Remote { name, endpoint, common } => {
                ("remote", Wire { name, endpoint, common, ..Wire::default() })
            }
            Connection::Anonymous { endpoint, common } => ("anonymous", Wire { endpoint, common, ..Wire::default() }),
            Connection::Foundry { endpoint, name, connection_type, common } => {
                ("foundry", Wire { endpoint, name, connection_type, common, ..Wire::default() })
            }
            Connection::OAuth { endpoint, client_id, client_secret, token_url, scopes, common } => {
                ("oauth", Wire { endpoint, client_id, client_secret, token_url, scopes, common, ..Wire::default() })
            }
        };
        #[derive(Serialize)]
        struct Tagged<'a> {
            kind: &'a str,
            #[serde(flatten)]
            wire: Wire,
        }
        Tagged { kind, wire }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Connection {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut map = Map::<String, Value>::deserialize(d)?;
        let kind = match map.remove("kind") {
            Some(Value::String(k)) => k,
            Some(other) => return Err(D::Error::custom(format!("`kind` must be a string, found {other}"))),
            None => return Err(D::Error::missing_field("kind")),
        };
        if !Connection::KINDS.contains(&kind.as_str()) {
            return Ok(Connection::Other { kind, fields: map });
        }
        let w = Wire::deserialize(Value::Object(map)).map_err(D::Error::custom)?;
        Ok(match kind.as_str() {
            "key" => Connection::Key { endpoint: w.endpoint, api_key: w.api_key, common: w.common },
            "reference" => Connection::Reference {
                name: w.name.ok_or_else(|| D::Error::missing_field("name"))?,
                target: w.target,
                common: w.common,
            },
            "remote" => Connection::Remote { name: w.name, endpoint: w.endpoint, common: w.common },
            "anonymous" => Connection::Anonymous { endpoint: w.endpoint, common: w.common },
            "foundry" => Connection::Foundry {
                endpoint: w.endpoint,
                name: w.name,
                connection_type: w.connection_type,
                common: w.common,
            },
            _ => Connection::OAuth {
                endpoint: w.endpoint,
                client_id: w.client_id,
                client_secret: w.client_secret,
                token_url: w.token_url,
                scopes: w.scopes,
                common: w.common,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_field_rule_by_host() {
        use MaxTokensField::*;
        for (url, want) in [
            ("https://api.openai.com/v1", MaxCompletionTokens),
            ("https://API.OpenAI.com./v1", MaxCompletionTokens),
            ("https://res.openai.azure.com/", MaxCompletionTokens),
            ("https://p.services.ai.azure.com/models", MaxCompletionTokens),
            ("https://u:p@api.openai.com:443/v1", MaxCompletionTokens),
            ("http://127.0.0.1:8080/v1", MaxTokens),
            ("http://localhost:11434/v1", MaxTokens),
            ("https://openai.com.evil.example/v1", MaxTokens),
            ("https://notopenai.com/v1", MaxTokens),
            ("https://api.openai.com@evil.example/v1", MaxTokens),
            ("not a url", MaxTokens),
            ("", MaxCompletionTokens),
        ] {
            assert_eq!(MaxTokensField::for_endpoint(Some(url)), want, "{url}");
        }
        let c: Connection = serde_json::from_value(serde_json::json!({"kind": "anonymous",
            "endpoint": "http://h/v1", "maxTokensField": "max_tokens", "structuredOutput": "jsonObjectSchema"}))
        .unwrap();
        let Connection::Anonymous { common, .. } = &c else { panic!() };
        assert_eq!(common.max_tokens_field, Some(MaxTokensField::MaxTokens));
        assert_eq!(common.structured_output, Some(StructuredOutput::JsonObjectSchema));
        assert_eq!(serde_json::to_value(&c).unwrap()["maxTokensField"], "max_tokens");
    }

    #[test]
    fn the_keys_of_each_kind_are_the_fields_it_reads() {
        use serde_json::json;
        let common = ConnectionCommon {
            authentication_mode: Some("user".into()),
            usage_description: Some("d".into()),
            max_tokens_field: Some(MaxTokensField::MaxTokens),
            structured_output: Some(StructuredOutput::JsonObjectSchema),
        };
        let all = [
            Connection::Key { endpoint: Some("e".into()), api_key: Some(Secret::new("k")), common: common.clone() },
            Connection::Reference { name: "n".into(), target: Some("t".into()), common: common.clone() },
            Connection::Remote { name: Some("n".into()), endpoint: Some("e".into()), common: common.clone() },
            Connection::Anonymous { endpoint: Some("e".into()), common: common.clone() },
            Connection::Foundry {
                endpoint: Some("e".into()),
                name: Some("n".into()),
                connection_type: Some("c".into()),
                common: common.clone(),
            },
            Connection::OAuth {
                endpoint: Some("e".into()),
                client_id: Some("i".into()),
                client_secret: Some(Secret::new("s")),
                token_url: Some("u".into()),
                scopes: Some(vec!["s".into()]),
                common,
            },
        ];
        let kinds: Vec<&str> = all.iter().map(Connection::kind).collect();
        assert_eq!(kinds, Connection::KINDS);
        for c in &all {
            let value = serde_json::to_value(c).unwrap();
            let mut written: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
            let mut known: Vec<&str> = Connection::COMMON_KEYS.to_vec();
            known.extend(Connection::keys_of(c.kind()).unwrap());
            written.sort_unstable();
            known.sort_unstable();
            assert_eq!(written, known, "{}", c.kind());
            // Every key it declares survives a round trip: the loader reads it.
            assert_eq!(&serde_json::from_value::<Connection>(value).unwrap(), c);
        }
        let other: Connection = serde_json::from_value(json!({"kind": "stdio", "command": "x"})).unwrap();
        assert_eq!(Connection::keys_of(other.kind()), None);
    }

    #[test]
    fn debug_hides_url_user_information_and_secret_query_parameters() {
        assert_eq!(
            redact_url("https://bob:hunter2@api.example.com/v1?api-version=1&api-key=abc&sig=x#top"),
            "https://[REDACTED]@api.example.com/v1?api-version=1&api-key=[REDACTED]&sig=[REDACTED]#top"
        );
        assert_eq!(redact_url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
        let c: Connection = serde_json::from_value(serde_json::json!(
            {"kind": "key", "endpoint": "https://u:p4ss@h/v1", "apiKey": "k"}))
        .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("p4ss") && shown.contains("[REDACTED]@h/v1"), "{shown}");
    }
}
