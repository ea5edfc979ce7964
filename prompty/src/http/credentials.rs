//! Credentials: the endpoint and key a provider request goes to, resolved from a prompt's
//! connection (registered connections included) and the environment.

use crate::{Connection, Error, Result, Secret};
use std::fmt;

/// The endpoint and key a request goes to, resolved from a prompt's connection and the
/// environment.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The endpoint, without a trailing `/`.
    pub endpoint: Option<String>,
    /// The key; `None` or empty: no auth header.
    pub key: Option<Secret>,
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolved").field("endpoint", &self.endpoint).field("key", &self.key).finish()
    }
}

/// Where a provider looks in the environment.
pub(crate) struct EnvNames {
    /// Endpoint variables, first set wins.
    pub endpoint: &'static [&'static str],
    /// The key variable.
    pub key: &'static str,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn trim_endpoint(e: &str) -> String {
    e.trim().trim_end_matches('/').to_owned()
}

/// Resolves a prompt's `model.connection`:
/// - none: endpoint and key from the environment;
/// - `key`: its endpoint and `apiKey` (the environment fills what it leaves out; an empty `apiKey`
///   sends no key);
/// - `anonymous`: its endpoint (or the environment's), never a key;
/// - `foundry`, `remote`: their endpoint (or the environment's), the key from the environment;
/// - `reference`: the [`Connection`] registered under its name with
///   [`crate::register_connection`], resolved by these same rules.
pub(crate) fn resolve(connection: Option<&Connection>, names: &EnvNames, provider: &str) -> Result<Resolved> {
    let env_endpoint = || names.endpoint.iter().find_map(|n| env(n)).map(|e| trim_endpoint(&e));
    // The key read from the environment is remembered: hidden wherever else its value lands.
    let env_key = || {
        env(names.key).map(|key| {
            Secret::remember(&key);
            Secret::new(key)
        })
    };
    let endpoint_or_env = |e: &Option<String>| match e.as_deref().filter(|e| !e.trim().is_empty()) {
        Some(e) => Some(trim_endpoint(e)),
        None => env_endpoint(),
    };
    Ok(match connection {
        None => Resolved { endpoint: env_endpoint(), key: env_key() },
        Some(Connection::Key { endpoint, api_key, .. }) => Resolved {
            endpoint: endpoint_or_env(endpoint),
            key: match api_key {
                Some(k) => Some(k.clone()),
                None => env_key(),
            },
        },
        Some(Connection::Anonymous { endpoint, .. }) => Resolved { endpoint: endpoint_or_env(endpoint), key: None },
        Some(Connection::Foundry { endpoint, .. }) | Some(Connection::Remote { endpoint, .. }) => {
            Resolved { endpoint: endpoint_or_env(endpoint), key: env_key() }
        }
        Some(Connection::Reference { name: reference, .. }) => {
            // The name comes from the prompt: a secret that landed there is not shown.
            let name = Secret::scrub(reference);
            let registered = crate::get_connection_as::<Connection>(reference).map_err(|e| Error::Config {
                setting: "model.connection".to_owned(),
                message: format!(
                    "{provider}: the prompt's connection refers to '{name}': {e}. Register a `prompty::Connection` \
                     (kind key, anonymous or foundry) with `prompty::register_connection(\"{name}\", ...)`"
                ),
            })?;
            if let Connection::Reference { name: inner, .. } = &*registered {
                let inner = Secret::scrub(inner);
                return Err(Error::Config {
                    setting: "model.connection".to_owned(),
                    message: format!(
                        "{provider}: connection '{name}' is registered as another reference ('{inner}'); register \
                         a connection of kind key, anonymous or foundry"
                    ),
                });
            }
            resolve(Some(&registered), names, provider)?
        }
        Some(other) => {
            return Err(Error::Config {
                setting: "model.connection.kind".to_owned(),
                message: format!(
                    "{provider}: connection kind '{}' is not supported (use key, anonymous, foundry or reference)",
                    // The kind comes from the prompt: a secret that landed there is not shown.
                    Secret::scrub(other.kind())
                ),
            });
        }
    })
}
