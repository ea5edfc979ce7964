//! How a model or tool is reached: [`Connection`].

use super::Secret;
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
#[derive(Debug, Clone, PartialEq)]
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

impl Connection {
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
        let known = matches!(kind.as_str(), "key" | "reference" | "remote" | "anonymous" | "foundry" | "oauth");
        if !known {
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
