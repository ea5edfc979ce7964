//! [`Secret`]: a string that never shows itself in `Debug` output.

use serde::{Deserialize, Serialize, Serializer};
use std::cell::Cell;
use std::fmt;

/// A secret string, such as an API key. `Debug` prints `Secret("[REDACTED]")`, so a secret never
/// reaches a log through `{:?}`. Serialization writes the real value (the canonical JSON of an agent
/// keeps it), except inside [`Secret::redacted`], where it writes `[REDACTED]` (traces); read it with
/// [`Secret::expose`].
///
/// ```
/// use prompty_core::Secret;
/// let key = Secret::new("sk-123");
/// assert_eq!(format!("{key:?}"), "Secret(\"[REDACTED]\")");
/// assert_eq!(key.expose(), "sk-123");
/// ```
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

thread_local! {
    /// Whether secrets serialize as `[REDACTED]` on this thread now ([`Secret::redacted`]).
    static REDACTING: Cell<bool> = const { Cell::new(false) };
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if REDACTING.with(Cell::get) {
            s.serialize_str(Secret::REDACTED)
        } else {
            s.serialize_str(&self.0)
        }
    }
}

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What a secret serializes as inside [`Secret::redacted`].
    pub const REDACTED: &'static str = "[REDACTED]";

    /// Runs `f` with every `Secret` serializing as `[REDACTED]` on this thread: what traces use,
    /// so that a secret never leaves in one, whatever key holds it.
    ///
    /// ```
    /// use prompty_core::Secret;
    /// let key = Secret::new("sk-123");
    /// assert_eq!(serde_json::to_value(&key).unwrap(), "sk-123");
    /// let redacted = Secret::redacted(|| serde_json::to_value(&key).unwrap());
    /// assert_eq!(redacted, "[REDACTED]");
    /// ```
    pub fn redacted<T>(f: impl FnOnce() -> T) -> T {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                REDACTING.with(|r| r.set(self.0));
            }
        }
        let _restore = Restore(REDACTING.with(|r| r.replace(true)));
        f()
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
