//! [`Secret`]: a string that never shows itself in `Debug` output, and the process-wide set of
//! secret values that everything prompty prints is scrubbed of ([`Secret::scrub`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

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
///
/// # Secrets that land where no one expects them
///
/// A typed field hides its own value, but a value can land in a field that is not typed as secret:
/// `template.format: ${env:MY_API_KEY}` makes the key the name of a renderer, and an error then
/// names it. So every secret value prompty learns of is also kept in one process-wide set, and
/// what prompty prints is scrubbed of it ([`Secret::scrub`]): the `Debug` form of an
/// [`crate::Agent`], errors that name a field's value (an unknown renderer, parser, executor,
/// connection or tool kind), diagnostics, trace values (the `tracing` span fields, the `.tracy`
/// files, every backend) and the `prompty` command's error output.
///
/// The set holds ([`Secret::remember`]):
/// - every `Secret` read from a prompt (`apiKey`, `clientSecret`, ...: whatever deserializes into
///   a `Secret`), and every secret-looking field of a connection of a kind this runtime does not
///   know: the credentials an agent carries, so the same value in another field is hidden too;
///   and the API key the runtime reads from the environment for a provider (`OPENAI_API_KEY`);
/// - every value a `${env:VAR}` reference resolves to when the name `VAR` marks a secret
///   ([`Secret::is_secret_variable`]: `OPENAI_API_KEY`, `GITHUB_TOKEN`, `DB_PASSWORD`, ...),
///   whatever field it lands in; `${env:PROMPTY_MODEL}` is an ordinary value and stays visible;
/// - any value a program adds with [`Secret::remember`].
///
/// Bounds, documented and deliberate: a value shorter than [`Secret::MIN_REMEMBERED_LEN`] bytes is
/// not kept (`true`, `1024` or `gpt-4o` would be scrubbed out of ordinary text; such a short value
/// is still hidden where its field is typed as secret), nor one longer than
/// [`Secret::MAX_REMEMBERED_LEN`], nor an unresolved reference (`${env:OPENAI_API_KEY}`). The set
/// keeps the last [`Secret::MAX_REMEMBERED`] distinct values: a program that learns more forgets
/// the oldest first. Why one set for the process rather than one per agent: errors are built far
/// from the agent that holds the value (a registry lookup knows only the key it was given), and
/// the environment the values come from is itself process-wide.
///
/// ```
/// use prompty_core::Secret;
/// let _key: Secret = serde_json::from_value(serde_json::json!("sk-doc-0123456789")).unwrap();
/// assert_eq!(Secret::scrub("no renderer registered for 'sk-doc-0123456789'"),
///            "no renderer registered for '[REDACTED]'");
/// assert_eq!(Secret::scrub("gpt-4o"), "gpt-4o");
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = String::deserialize(d)?;
        Secret::remember(&value);
        Ok(Secret(value))
    }
}

/// The secret values [`Secret::scrub`] replaces: in the order they were learnt (the oldest is
/// forgotten first) and every form of them, longest first.
#[derive(Default)]
struct Known {
    values: Vec<Arc<str>>,
    forms: Remembered,
}

/// The remembered secret values at one moment ([`Secret::remembered`]): for scrubbing many
/// strings (every string of a trace value) with one look at the process-wide set. `Debug` shows
/// only how many forms it holds.
///
/// ```
/// use prompty_core::Secret;
/// Secret::remember("sk-snapshot-0123456789");
/// let remembered = Secret::remembered();
/// assert_eq!(remembered.scrub("key sk-snapshot-0123456789"), "key [REDACTED]");
/// assert!(!remembered.is_empty());
/// ```
#[derive(Clone, Default)]
pub struct Remembered(Option<Arc<[Arc<str>]>>);

impl Remembered {
    /// `text` with every value of this snapshot replaced by `[REDACTED]` (borrowed when none is
    /// in it).
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for form in self.0.iter().flat_map(|forms| forms.iter()) {
            if out.contains(&**form) {
                out = Cow::Owned(out.replace(&**form, Secret::REDACTED));
            }
        }
        out
    }

    /// [`Remembered::scrub`] of a string in place.
    pub fn scrub_in_place(&self, text: &mut String) {
        if let Cow::Owned(scrubbed) = self.scrub(text) {
            *text = scrubbed;
        }
    }

    /// Whether no value is remembered (scrubbing changes nothing).
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl fmt::Debug for Remembered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Remembered({})", self.0.as_ref().map_or(0, |forms| forms.len()))
    }
}

/// Whether [`KNOWN`] holds any value: the one atomic load [`Secret::scrub`] costs when none is.
static ANY_KNOWN: AtomicBool = AtomicBool::new(false);

static KNOWN: RwLock<Known> = RwLock::new(Known { values: Vec::new(), forms: Remembered(None) });

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
    /// Wraps a secret value. Unlike a secret read from a prompt, it is not remembered
    /// ([`Secret::remember`] it for that): a program wraps values such as header values that are
    /// not all credentials.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The shortest value [`Secret::remember`] keeps, in bytes: shorter values would be scrubbed
    /// out of ordinary text (`true`, `1024`, `gpt-4o`). Real API keys and tokens are far longer.
    pub const MIN_REMEMBERED_LEN: usize = 8;

    /// The longest value [`Secret::remember`] keeps, in bytes (a PEM key fits).
    pub const MAX_REMEMBERED_LEN: usize = 64 * 1024;

    /// How many distinct values the process-wide set keeps; past it the oldest is forgotten.
    pub const MAX_REMEMBERED: usize = 256;

    /// Adds `value` to the process-wide set of secret values that [`Secret::scrub`] hides (see
    /// the type's documentation for the set and its bounds). A value shorter than
    /// [`Secret::MIN_REMEMBERED_LEN`] or longer than [`Secret::MAX_REMEMBERED_LEN`] bytes, or one
    /// that is an unresolved `${...}` reference, is not kept.
    ///
    /// ```
    /// use prompty_core::Secret;
    /// Secret::remember("hunter2-but-longer");
    /// assert_eq!(Secret::scrub("password: hunter2-but-longer"), "password: [REDACTED]");
    /// Secret::remember("short");
    /// assert_eq!(Secret::scrub("a short word"), "a short word");
    /// ```
    pub fn remember(value: &str) {
        let reference = value.starts_with("${") && value.ends_with('}');
        if value.len() < Secret::MIN_REMEMBERED_LEN || value.len() > Secret::MAX_REMEMBERED_LEN || reference {
            return;
        }
        let known = |k: &Known| k.values.iter().any(|v| &**v == value);
        if ANY_KNOWN.load(Ordering::Acquire) && known(&KNOWN.read().unwrap_or_else(|e| e.into_inner())) {
            return;
        }
        let mut k = KNOWN.write().unwrap_or_else(|e| e.into_inner());
        if known(&k) {
            return;
        }
        if k.values.len() >= Secret::MAX_REMEMBERED {
            k.values.remove(0);
        }
        k.values.push(Arc::from(value));
        let mut forms: Vec<Arc<str>> = Vec::with_capacity(k.values.len() * 2);
        for v in &k.values {
            forms.push(Arc::clone(v));
            // As it appears inside a JSON string or a `Debug` string, when that differs.
            for escaped in [serde_json::to_string(&**v).ok(), Some(format!("{:?}", &**v))].into_iter().flatten() {
                let inner = &escaped[1..escaped.len() - 1];
                if inner != &**v {
                    forms.push(Arc::from(inner));
                }
            }
        }
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        forms.dedup();
        k.forms = Remembered(Some(forms.into()));
        ANY_KNOWN.store(true, Ordering::Release);
    }

    /// `text` with every remembered secret value ([`Secret::remember`]) replaced by
    /// `[REDACTED]`; borrowed, at the cost of one atomic load, while no value is remembered.
    ///
    /// ```
    /// use prompty_core::Secret;
    /// Secret::remember("tok-0123456789abcdef");
    /// assert_eq!(Secret::scrub("Bearer tok-0123456789abcdef"), "Bearer [REDACTED]");
    /// ```
    pub fn scrub(text: &str) -> Cow<'_, str> {
        if !ANY_KNOWN.load(Ordering::Acquire) {
            return Cow::Borrowed(text);
        }
        KNOWN.read().unwrap_or_else(|e| e.into_inner()).forms.scrub(text)
    }

    /// The remembered values as they are now, to scrub many strings with one look at the set (a
    /// value remembered later is not in the snapshot).
    pub fn remembered() -> Remembered {
        if !ANY_KNOWN.load(Ordering::Acquire) {
            return Remembered(None);
        }
        KNOWN.read().unwrap_or_else(|e| e.into_inner()).forms.clone()
    }

    /// [`Secret::scrub`] of a string in place.
    ///
    /// ```
    /// use prompty_core::Secret;
    /// Secret::remember("pw-0123456789abcdef");
    /// let mut text = String::from("login pw-0123456789abcdef");
    /// Secret::scrub_in_place(&mut text);
    /// assert_eq!(text, "login [REDACTED]");
    /// ```
    pub fn scrub_in_place(text: &mut String) {
        if ANY_KNOWN.load(Ordering::Acquire) {
            KNOWN.read().unwrap_or_else(|e| e.into_inner()).forms.scrub_in_place(text);
        }
    }

    /// Whether the environment variable `name` holds a secret by its name, so that the value of a
    /// `${env:name}` reference is remembered ([`Secret::remember`]) wherever it lands. The rule
    /// is the one that hides a connection's fields ([`crate::Connection::is_secret_field`]): the
    /// name, lower-cased without `_`, `-`, `.` and spaces, contains `key`, `token`, `secret`,
    /// `password`, `passwd`, `pwd`, `credential`, `signature`, `cookie` or `auth` (not as part of
    /// `author`), or is `sas`; except the shell's `PWD` and `OLDPWD` (the working folder, a prefix
    /// of every path in a message).
    ///
    /// ```
    /// use prompty_core::Secret;
    /// for name in ["OPENAI_API_KEY", "MY_API_KEY", "GITHUB_TOKEN", "aws_secret_access_key", "DB_PASSWORD",
    ///              "SMTP_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "AUTH_HEADER", "X_Api_Key"] {
    ///     assert!(Secret::is_secret_variable(name), "{name}");
    /// }
    /// for name in ["PROMPTY_MODEL", "OPENAI_BASE_URL", "HOME", "PWD", "OLDPWD", "AUTHOR_NAME"] {
    ///     assert!(!Secret::is_secret_variable(name), "{name}");
    /// }
    /// ```
    pub fn is_secret_variable(name: &str) -> bool {
        !matches!(name, "PWD" | "OLDPWD") && is_secret_name(name)
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

/// The one rule of names that mark a secret: a connection's fields
/// ([`crate::Connection::is_secret_field`]) and environment variables
/// ([`Secret::is_secret_variable`]).
pub(crate) fn is_secret_name(name: &str) -> bool {
    const PARTS: &[&str] =
        &["key", "token", "secret", "password", "passwd", "pwd", "credential", "signature", "cookie"];
    let folded: String =
        name.chars().filter(|c| !matches!(c, '_' | '-' | '.' | ' ')).flat_map(char::to_lowercase).collect();
    PARTS.iter().any(|p| folded.contains(p))
        || folded == "sas"
        || (folded.contains("auth") && !folded.replace("authoriz", "").contains("author"))
}

/// `Debug` of the wrapped value, scrubbed of every remembered secret ([`Secret::scrub`]): for the
/// `Debug` forms that print values from a prompt (an [`crate::Agent`], a [`crate::Connection`]).
pub(crate) struct ScrubbedDebug<T>(pub(crate) T);

impl<T: fmt::Debug> fmt::Debug for ScrubbedDebug<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = if f.alternate() { format!("{:#?}", self.0) } else { format!("{:?}", self.0) };
        f.write_str(&Secret::scrub(&raw))
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    /// One test, since the set is process-wide: the bounds, the forms and the order of forgetting.
    #[test]
    fn the_remembered_set_keeps_its_bounds() {
        // Too short, too long, an unresolved reference: not kept.
        for value in ["1024", "gpt-4o", "${env:OPENAI_API_KEY}"] {
            Secret::remember(value);
            assert_eq!(Secret::scrub(&format!("<{value}>")), format!("<{value}>"));
        }
        let long = "x".repeat(Secret::MAX_REMEMBERED_LEN + 1);
        Secret::remember(&long);
        assert_eq!(Secret::scrub(&long), long);
        // Exactly the minimum length: kept.
        let eight = "k".repeat(Secret::MIN_REMEMBERED_LEN);
        Secret::remember(&eight);
        assert_eq!(Secret::scrub(&format!("a {eight} b")), "a [REDACTED] b");

        // A value with characters JSON and `Debug` escape is found in those forms too.
        let quoted = r#"sk-"quoted"\slash-0123"#;
        Secret::remember(quoted);
        let json = serde_json::to_string(&serde_json::json!({ "format": quoted })).unwrap();
        assert_eq!(Secret::scrub(&json), r#"{"format":"[REDACTED]"}"#);
        assert_eq!(Secret::scrub(&format!("{quoted:?}")), "\"[REDACTED]\"");

        // Deserializing a secret remembers it; `Secret::new` does not (a program wraps header
        // values that are not all credentials).
        let _: Secret = serde_json::from_value(serde_json::json!("sk-deserialized-0123")).unwrap();
        assert_eq!(Secret::scrub("sk-deserialized-0123"), "[REDACTED]");
        let _ = Secret::new("application/json");
        assert_eq!(Secret::scrub("application/json"), "application/json");

        // Past the bound the oldest values are forgotten first.
        let values: Vec<String> = (0..Secret::MAX_REMEMBERED + 1).map(|i| format!("sk-bound-{i:06}")).collect();
        values.iter().for_each(|v| Secret::remember(v));
        assert_eq!(Secret::scrub(&values[0]), values[0], "the oldest is forgotten");
        assert_eq!(Secret::scrub(&values[1]), "[REDACTED]");
        assert_eq!(Secret::scrub(&values[Secret::MAX_REMEMBERED]), "[REDACTED]");
        assert_eq!(Secret::scrub(&eight), eight, "learnt before the bound's worth of values");
        assert_eq!(Secret::remembered().scrub(&values[5]), "[REDACTED]");
    }
}
