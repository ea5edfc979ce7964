//! [`Secret`]: a string that never shows itself in `Debug` output.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A secret string, such as an API key. `Debug` prints `Secret("[REDACTED]")`, so a secret never
/// reaches a log through `{:?}`. Serialization writes the real value (the canonical JSON of an agent
/// keeps it); read it with [`Secret::expose`].
///
/// ```
/// use prompty_core::Secret;
/// let key = Secret::new("sk-123");
/// assert_eq!(format!("{key:?}"), "Secret(\"[REDACTED]\")");
/// assert_eq!(key.expose(), "sk-123");
/// ```
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string (a key that has no value is never sent).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(\"[REDACTED]\")")
    }
}
