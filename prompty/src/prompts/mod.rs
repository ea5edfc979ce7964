//! Prompts by id and locale: [`PromptRegistry`].
//!
//! An application that ships prompts in several languages, or lets a tenant override a prompt,
//! keeps them in a registry by id instead of passing paths around:
//!
//! ```
//! use prompty::PromptRegistry;
//! use serde_json::json;
//!
//! let registry = PromptRegistry::new();
//! let en = prompty::load_str("---\ninputs: [name]\n---\nsystem:\nGreet {{ name }}.", ".", "greeting.prompty")?;
//! let fr = prompty::load_str("---\ninputs: [name]\n---\nsystem:\nSalue {{ name }}.", ".", "greeting.fr.prompty")?;
//! registry.register("greeting", en)?;
//! registry.register_locale("greeting", "fr", fr)?;
//! registry.append("greeting", "Answer in one sentence.")?;
//!
//! let messages = registry.prepare("greeting", &json!({"name": "Ana"}), Some("fr-CA"))?;
//! assert_eq!(messages[0].text(), "Salue Ana.\nAnswer in one sentence.");
//! let messages = registry.prepare("greeting", &json!({"name": "Ana"}), None)?;
//! assert_eq!(messages[0].text(), "Greet Ana.\nAnswer in one sentence.");
//! # Ok::<(), prompty::Error>(())
//! ```
//!
//! ## Lookup order
//! For `(id, locale)` the registry tries, and takes the first that exists:
//!
//! | step | example for `pt-BR` (fallback `en`) |
//! |---|---|
//! | 1. the tag, then each shorter tag (RFC 4647: drop the last subtag) | `pt-BR`, then `pt` |
//! | 2. the fallback locale (default `en`, [`PromptRegistry::set_fallback_locale`]) and its shorter tags | `en` |
//! | 3. the default prompt | the file without a locale |
//!
//! At each step an override ([`PromptRegistry::override_prompt`]) wins over the registered
//! variant of the same tag. Tags are read case-insensitively with `_` for `-`
//! ([`crate::locale`]); an ill-formed tag is an error. `None` for the locale goes straight to
//! step 3. The lookup runs on every call, so a change made at run time applies to the next call.
//!
//! ## Appenders
//! [`PromptRegistry::append`] adds text that is appended, after rendering, to the prompt's last
//! system message (on a new line), or becomes a new system message at the start when there is
//! none. Appenders stack in registration order and apply to every locale. The text never reaches
//! the template engine or the role-marker parser, so it can neither create a message boundary nor
//! read an input.
//!
//! ## Files
//! [`PromptRegistry::load_dir`] loads a folder: `greeting.prompty` is the default of the id
//! `greeting`, `greeting.fr.prompty` and `greeting.pt-BR.prompty` are its variants, and
//! `support/refund.prompty` is the id `support.refund`.

use crate::locale::{self, Locale};
use crate::{Agent, ChunkStream, Error, LoadOptions, Message, Result, Role, TurnOptions};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

/// The longest prompt id accepted, in bytes.
pub const MAX_PROMPT_ID_LEN: usize = 256;

/// The most appenders one id holds.
pub const MAX_APPENDERS: usize = 64;

/// The most bytes of appended text one id holds (all its appenders together).
pub const MAX_APPENDED_BYTES: usize = 64 * 1024;

/// How a prompt is given to a [`PromptRegistry`]: an [`Agent`] already loaded, the path of a
/// `.prompty` file, or a closure that builds an agent. A path is loaded, and a closure called, on
/// the first call that needs the prompt; the agent is then kept (register again to reload). A
/// failure is returned by that call, and the next call tries again.
///
/// ```
/// use prompty::{Agent, PromptSource};
/// let ready: PromptSource = Agent::default().into();
/// let file = PromptSource::path("prompts/greeting.prompty");
/// let built = PromptSource::build(|| prompty::load_str("Hi", ".", "hi.prompty"));
/// assert!(format!("{file:?}").contains("greeting.prompty"));
/// # let _ = (ready, built);
/// ```
#[derive(Clone)]
pub struct PromptSource(SourceInner);

#[derive(Clone)]
enum SourceInner {
    Ready(Arc<Agent>),
    Lazy(Arc<Lazy>),
}

/// A prompt loaded or built on first use, then kept.
struct Lazy {
    how: How,
    agent: OnceLock<Arc<Agent>>,
}

enum How {
    /// A file and its options (`None`: the process's default, read when it is loaded).
    Path(PathBuf, Option<LoadOptions>),
    Build(Box<dyn Fn() -> Result<Agent> + Send + Sync>),
}

impl PromptSource {
    /// A `.prompty` file, loaded with [`crate::load`] on first use (with the process's default
    /// options then, [`LoadOptions::process_default`]).
    pub fn path(path: impl Into<PathBuf>) -> PromptSource {
        PromptSource(SourceInner::Lazy(Arc::new(Lazy { how: How::Path(path.into(), None), agent: OnceLock::new() })))
    }

    /// A `.prompty` file, loaded with [`crate::load_with`] and `options` on first use.
    ///
    /// ```
    /// let source = prompty::PromptSource::path_with("prompts/a.prompty", prompty::LoadOptions::new().allow_root("/srv/shared"));
    /// # let _ = source;
    /// ```
    pub fn path_with(path: impl Into<PathBuf>, options: LoadOptions) -> PromptSource {
        PromptSource(SourceInner::Lazy(Arc::new(Lazy {
            how: How::Path(path.into(), Some(options)),
            agent: OnceLock::new(),
        })))
    }

    /// A closure that builds the agent, called on first use. It may fail with the runtime's
    /// [`Error`] or the format's ([`crate::FormatError`], what [`crate::load_str`] returns).
    ///
    /// ```
    /// let source = prompty::PromptSource::build(|| prompty::load_str("Hi", ".", "hi.prompty"));
    /// assert!(source.agent().is_ok());
    /// ```
    pub fn build<E: Into<Error>>(f: impl Fn() -> Result<Agent, E> + Send + Sync + 'static) -> PromptSource {
        let f = move || f().map_err(Into::into);
        PromptSource(SourceInner::Lazy(Arc::new(Lazy { how: How::Build(Box::new(f)), agent: OnceLock::new() })))
    }

    /// The agent: loaded or built now when it is not yet.
    ///
    /// ```
    /// let source = prompty::PromptSource::build(|| prompty::load_str("Hi", ".", "hi.prompty"));
    /// assert_eq!(source.agent()?.instructions.as_deref(), Some("Hi"));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn agent(&self) -> Result<Arc<Agent>> {
        let lazy = match &self.0 {
            SourceInner::Ready(agent) => return Ok(Arc::clone(agent)),
            SourceInner::Lazy(lazy) => lazy,
        };
        if let Some(agent) = lazy.agent.get() {
            return Ok(Arc::clone(agent));
        }
        let agent = Arc::new(match &lazy.how {
            How::Path(path, Some(options)) => crate::load_with(path, options)?,
            How::Path(path, None) => crate::load(path)?,
            How::Build(f) => f()?,
        });
        Ok(Arc::clone(lazy.agent.get_or_init(|| agent)))
    }
}

impl From<Agent> for PromptSource {
    fn from(agent: Agent) -> PromptSource {
        PromptSource::from(Arc::new(agent))
    }
}

impl From<Arc<Agent>> for PromptSource {
    fn from(agent: Arc<Agent>) -> PromptSource {
        PromptSource(SourceInner::Ready(agent))
    }
}

impl fmt::Debug for PromptSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            SourceInner::Ready(agent) => write!(f, "PromptSource::Agent({:?})", agent.name),
            SourceInner::Lazy(lazy) => match &lazy.how {
                How::Path(p, _) => write!(f, "PromptSource::Path({})", p.display()),
                How::Build(_) => f.write_str("PromptSource::Build(..)"),
            },
        }
    }
}

/// Everything registered under one id.
#[derive(Clone)]
struct Entry {
    default: PromptSource,
    default_override: Option<PromptSource>,
    variants: Vec<(Locale, PromptSource)>,
    overrides: Vec<(Locale, PromptSource)>,
    appenders: Arc<Vec<String>>,
}

impl Entry {
    fn new(default: PromptSource) -> Entry {
        Entry {
            default,
            default_override: None,
            variants: Vec::new(),
            overrides: Vec::new(),
            appenders: Arc::new(Vec::new()),
        }
    }

    /// The source for `locale` by the lookup order.
    fn pick(&self, locale: Option<&str>, fallback: &Locale) -> Result<&PromptSource> {
        if let Some(tag) = locale {
            let at = |list: &'_ [(Locale, PromptSource)], tag: &str| {
                list.iter().position(|(l, _)| locale::same_tag(l.as_str(), tag))
            };
            let found = locale::resolve_by(tag, fallback, |t| {
                if let Some(i) = at(&self.overrides, t) {
                    return Some(&self.overrides[i].1);
                }
                at(&self.variants, t).map(|i| &self.variants[i].1)
            })?;
            if let Some(source) = found {
                return Ok(source);
            }
        }
        Ok(self.default_override.as_ref().unwrap_or(&self.default))
    }
}

/// A prompt picked for a call: its agent and the appenders to apply.
///
/// ```
/// let registry = prompty::PromptRegistry::new();
/// registry.register("hi", prompty::load_str("system:\nHi", ".", "hi.prompty")?)?;
/// registry.append("hi", "Be brief.")?;
/// let picked = registry.get("hi", None)?;
/// assert_eq!(picked.agent.instructions.as_deref(), Some("system:\nHi"));
/// assert_eq!(picked.appenders.as_slice(), ["Be brief."]);
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Picked {
    /// The agent of the picked variant.
    pub agent: Arc<Agent>,
    /// The id's appenders, in registration order.
    pub appenders: Arc<Vec<String>>,
}

impl Picked {
    /// The messages of [`crate::prepare`] with the appenders applied.
    fn prepare(&self, inputs: &Value) -> Result<Vec<Message>> {
        let mut messages = crate::prepare(&self.agent, inputs)?;
        apply_appenders(&mut messages, &self.appenders);
        Ok(messages)
    }

    async fn prepare_async(&self, inputs: &Value) -> Result<Vec<Message>> {
        let mut messages = crate::prepare_async(&self.agent, inputs).await?;
        apply_appenders(&mut messages, &self.appenders);
        Ok(messages)
    }
}

/// Appends each text to the last system message (on a new line), or adds a system message at the
/// start when there is none.
fn apply_appenders(messages: &mut Vec<Message>, appenders: &[String]) {
    if appenders.is_empty() {
        return;
    }
    let joined = appenders.join("\n");
    match messages.iter_mut().rev().find(|m| m.role == Role::System) {
        Some(system) => match system.content.iter_mut().rev().find_map(|p| match p {
            crate::ContentPart::Text { value } => Some(value),
            _ => None,
        }) {
            Some(text) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&joined);
            }
            None => system.content.push(crate::ContentPart::text(joined)),
        },
        None => messages.insert(0, Message::new(Role::System, joined)),
    }
}

struct State {
    entries: HashMap<String, Entry>,
    fallback: Locale,
    /// The options `load_dir` loads with (`None`: the process's default).
    load_options: Option<LoadOptions>,
}

/// Prompts by id, with locale variants, run-time overrides and appenders; see the
/// [module docs](self) for the lookup order.
///
/// Thread-safe: lookups take a read lock for the time of a hash lookup and a few comparisons
/// (tens of nanoseconds); changes take the write lock. [`PromptRegistry::global`] is the
/// process-wide one; [`PromptRegistry::new`] makes an independent one.
///
/// ```
/// use prompty::PromptRegistry;
/// let registry = PromptRegistry::new();
/// registry.register("support.refund", prompty::load_str("system:\nHelp with refunds.", ".", "refund.prompty")?)?;
/// assert!(registry.has("support.refund"));
/// assert_eq!(registry.list(), ["support.refund"]);
/// let err = registry.get("support.refnd", None).unwrap_err();
/// assert_eq!(err.to_string(), "no prompt is registered under the id `support.refnd` (closest: `support.refund`)");
/// # Ok::<(), prompty::Error>(())
/// ```
pub struct PromptRegistry {
    state: RwLock<State>,
}

impl fmt::Debug for PromptRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptRegistry")
            .field("ids", &self.list())
            .field("fallback_locale", &self.fallback_locale().as_str())
            .finish()
    }
}

impl Default for PromptRegistry {
    fn default() -> Self {
        PromptRegistry::new()
    }
}

fn check_id(id: &str) -> Result<()> {
    let problem = if id.is_empty() {
        "a prompt id may not be empty".to_owned()
    } else if id.len() > MAX_PROMPT_ID_LEN {
        format!("a prompt id is at most {MAX_PROMPT_ID_LEN} bytes long (this one has {})", id.len())
    } else if id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        format!("the prompt id `{}` holds whitespace or a control character", id.escape_debug())
    } else {
        return Ok(());
    };
    Err(Error::PromptRegistry { message: problem })
}

impl PromptRegistry {
    /// An empty registry whose fallback locale is `en`.
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// assert!(registry.list().is_empty());
    /// assert_eq!(registry.fallback_locale().as_str(), "en");
    /// ```
    pub fn new() -> PromptRegistry {
        let fallback = Locale::parse("en").expect("`en` is a locale tag");
        PromptRegistry { state: RwLock::new(State { entries: HashMap::new(), fallback, load_options: None }) }
    }

    /// The same registry, loading the folders of [`PromptRegistry::load_dir`] with `options`
    /// (allowed roots, bounds) instead of the process's default ([`LoadOptions::process_default`]).
    /// A file registered as [`PromptSource::path`] is loaded with its own options
    /// ([`PromptSource::path_with`]).
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("prompty-doc-registry-options-{}", std::process::id()));
    /// std::fs::create_dir_all(dir.join("prompts")).unwrap();
    /// std::fs::write(dir.join("shared.txt"), "Be brief.").unwrap();
    /// std::fs::write(dir.join("prompts/a.prompty"), "---\ndescription: ${file:../shared.txt}\n---\nHi").unwrap();
    /// assert!(prompty::PromptRegistry::from_dir(dir.join("prompts")).is_err()); // outside its folder
    /// let registry = prompty::PromptRegistry::new().with_load_options(prompty::LoadOptions::new().allow_root(&dir));
    /// registry.load_dir(dir.join("prompts"))?;
    /// assert_eq!(registry.get("a", None)?.agent.description.as_deref(), Some("Be brief."));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn with_load_options(self, options: LoadOptions) -> PromptRegistry {
        self.write().load_options = Some(options);
        self
    }

    /// The process-wide registry (empty until something registers into it). Typed prompts with
    /// locale variants (`prepare_in`) use its fallback locale.
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::global();
    /// assert!(std::ptr::eq(registry, prompty::PromptRegistry::global()));
    /// ```
    pub fn global() -> &'static PromptRegistry {
        static GLOBAL: OnceLock<PromptRegistry> = OnceLock::new();
        GLOBAL.get_or_init(PromptRegistry::new)
    }

    /// A registry holding every prompt of a folder ([`PromptRegistry::load_dir`]), loaded with the
    /// process's default options ([`LoadOptions::process_default`]; a registry of its own:
    /// [`PromptRegistry::with_load_options`]).
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("prompty-doc-from-dir-{}", std::process::id()));
    /// std::fs::create_dir_all(dir.join("support")).unwrap();
    /// std::fs::write(dir.join("greeting.prompty"), "system:\nHello").unwrap();
    /// std::fs::write(dir.join("greeting.fr.prompty"), "system:\nBonjour").unwrap();
    /// std::fs::write(dir.join("support/refund.prompty"), "system:\nRefunds").unwrap();
    /// let registry = prompty::PromptRegistry::from_dir(&dir)?;
    /// assert_eq!(registry.list(), ["greeting", "support.refund"]);
    /// assert_eq!(registry.locales("greeting")?, ["fr"]);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<PromptRegistry> {
        let registry = PromptRegistry::new();
        registry.load_dir(dir)?;
        Ok(registry)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn unknown(&self, state: &State, id: &str) -> Error {
        let closest = if id.len() > MAX_PROMPT_ID_LEN {
            Vec::new()
        } else {
            crate::analysis::ranked(id, state.entries.keys().map(String::as_str), 3)
                .into_iter()
                .map(str::to_owned)
                .collect()
        };
        let shown: String = id.chars().take(MAX_PROMPT_ID_LEN).collect();
        Error::UnknownPrompt { id: shown, closest }
    }

    /// The locale tried after the requested one and its shorter tags (default `en`).
    ///
    /// ```
    /// assert_eq!(prompty::PromptRegistry::new().fallback_locale().as_str(), "en");
    /// ```
    pub fn fallback_locale(&self) -> Locale {
        self.read().fallback.clone()
    }

    /// Sets the fallback locale; an ill-formed tag is an error and changes nothing.
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// registry.set_fallback_locale("de_ch")?;
    /// assert_eq!(registry.fallback_locale().as_str(), "de-CH");
    /// assert!(registry.set_fallback_locale("not a tag").is_err());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn set_fallback_locale(&self, tag: &str) -> Result<()> {
        let locale = Locale::parse(tag)?;
        self.write().fallback = locale;
        Ok(())
    }

    /// Registers the default prompt of `id` (the one used when no locale variant fits). An id
    /// already registered gets the new default and keeps its variants, overrides and appenders.
    /// Ids are 1 to [`MAX_PROMPT_ID_LEN`] bytes without whitespace; dots group them
    /// (`support.refund`).
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("a", prompty::Agent::default())?;
    /// registry.register("b", prompty::PromptSource::path("prompts/b.prompty"))?; // loaded on first use
    /// registry.register("c", prompty::PromptSource::build(|| prompty::load_str("Hi", ".", "c.prompty")))?;
    /// assert!(registry.register("", prompty::Agent::default()).is_err());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn register(&self, id: &str, prompt: impl Into<PromptSource>) -> Result<()> {
        check_id(id)?;
        let prompt = prompt.into();
        let mut state = self.write();
        match state.entries.get_mut(id) {
            Some(entry) => entry.default = prompt,
            None => {
                state.entries.insert(id.to_owned(), Entry::new(prompt));
            }
        }
        Ok(())
    }

    fn with_entry<T>(&self, id: &str, f: impl FnOnce(&mut Entry) -> Result<T>) -> Result<T> {
        let mut state = self.write();
        match state.entries.get_mut(id) {
            Some(entry) => f(entry),
            None => Err(self.unknown(&state, id)),
        }
    }

    /// Registers the variant of `id` for `locale` (replacing one of the same tag). The id must
    /// have its default already. Variants stay on [`PromptRegistry::reset`].
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("hi", prompty::load_str("system:\nHi", ".", "hi.prompty")?)?;
    /// registry.register_locale("hi", "pt_br", prompty::load_str("system:\nOi", ".", "hi.pt-BR.prompty")?)?;
    /// assert_eq!(registry.locales("hi")?, ["pt-BR"]);
    /// assert!(registry.register_locale("nope", "fr", prompty::Agent::default()).is_err());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn register_locale(&self, id: &str, locale: &str, prompt: impl Into<PromptSource>) -> Result<()> {
        let locale = Locale::parse(locale)?;
        let prompt = prompt.into();
        self.with_entry(id, |entry| {
            put(&mut entry.variants, locale, prompt);
            Ok(())
        })
    }

    /// Overrides `id` for `locale` (or, with `None`, its default prompt) until
    /// [`PromptRegistry::reset`]: a tenant's own version of one prompt. At its step of the lookup
    /// order an override wins over the variant of the same tag.
    ///
    /// ```
    /// use serde_json::json;
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("hi", prompty::load_str("system:\nHi", ".", "hi.prompty")?)?;
    /// registry.override_prompt("hi", Some("fr"), prompty::load_str("system:\nSalut", ".", "tenant.prompty")?)?;
    /// assert_eq!(registry.prepare("hi", &json!({}), Some("fr"))?[0].text(), "Salut");
    /// registry.reset("hi")?;
    /// assert_eq!(registry.prepare("hi", &json!({}), Some("fr"))?[0].text(), "Hi");
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn override_prompt(&self, id: &str, locale: Option<&str>, prompt: impl Into<PromptSource>) -> Result<()> {
        let locale = locale.map(Locale::parse).transpose()?;
        let prompt = prompt.into();
        self.with_entry(id, |entry| {
            match locale {
                Some(locale) => put(&mut entry.overrides, locale, prompt),
                None => entry.default_override = Some(prompt),
            }
            Ok(())
        })
    }

    /// Appends `text` to every rendering of `id`, in every locale: after rendering, to the last
    /// system message (on a new line), or as a new first system message when there is none.
    /// Appenders stack in registration order, at most [`MAX_APPENDERS`] and
    /// [`MAX_APPENDED_BYTES`] per id. The text is never rendered or parsed: a role marker in it is
    /// plain text.
    ///
    /// ```
    /// use serde_json::json;
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("hi", prompty::load_str("user:\nHi", ".", "hi.prompty")?)?;
    /// registry.append("hi", "Be brief.\nsystem:\nnot a new message")?;
    /// let messages = registry.prepare("hi", &json!({}), None)?;
    /// assert_eq!(messages.len(), 2);
    /// assert_eq!(messages[0].text(), "Be brief.\nsystem:\nnot a new message");
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn append(&self, id: &str, text: impl Into<String>) -> Result<()> {
        let text = text.into();
        self.with_entry(id, |entry| {
            let bytes: usize = entry.appenders.iter().map(String::len).sum();
            if entry.appenders.len() >= MAX_APPENDERS || bytes + text.len() > MAX_APPENDED_BYTES {
                return Err(Error::PromptRegistry {
                    message: format!(
                        "the prompt `{id}` would hold more than {MAX_APPENDERS} appenders or {MAX_APPENDED_BYTES} bytes of appended text"
                    ),
                });
            }
            Arc::make_mut(&mut entry.appenders).push(text);
            Ok(())
        })
    }

    /// Drops the overrides and appenders of `id`; its default and locale variants stay.
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("hi", prompty::Agent::default())?;
    /// registry.append("hi", "extra")?;
    /// registry.reset("hi")?;
    /// assert!(registry.get("hi", None)?.appenders.is_empty());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn reset(&self, id: &str) -> Result<()> {
        self.with_entry(id, |entry| {
            entry.overrides.clear();
            entry.default_override = None;
            entry.appenders = Arc::new(Vec::new());
            Ok(())
        })
    }

    /// Removes `id` with everything registered under it; whether it was there.
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("hi", prompty::Agent::default())?;
    /// assert!(registry.remove("hi"));
    /// assert!(!registry.remove("hi"));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn remove(&self, id: &str) -> bool {
        self.write().entries.remove(id).is_some()
    }

    /// Whether `id` is registered.
    ///
    /// ```
    /// assert!(!prompty::PromptRegistry::new().has("hi"));
    /// ```
    pub fn has(&self, id: &str) -> bool {
        self.read().entries.contains_key(id)
    }

    /// The registered ids, sorted.
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// for id in ["b", "a.x", "a"] { registry.register(id, prompty::Agent::default())?; }
    /// assert_eq!(registry.list(), ["a", "a.x", "b"]);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn list(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.read().entries.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// The locales `id` has variants for (overrides not included), sorted.
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("hi", prompty::Agent::default())?;
    /// registry.register_locale("hi", "FR", prompty::Agent::default())?;
    /// assert_eq!(registry.locales("hi")?, ["fr"]);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn locales(&self, id: &str) -> Result<Vec<String>> {
        let state = self.read();
        let entry = state.entries.get(id).ok_or_else(|| self.unknown(&state, id))?;
        let mut tags: Vec<String> = entry.variants.iter().map(|(l, _)| l.as_str().to_owned()).collect();
        tags.sort();
        Ok(tags)
    }

    /// The prompt for `(id, locale)` by the lookup order, with the id's appenders. A path or
    /// closure source is loaded now when it was not yet (outside the registry's lock).
    ///
    /// ```
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("hi", prompty::load_str("Hi", ".", "hi.prompty")?)?;
    /// registry.register_locale("hi", "pt", prompty::load_str("Oi", ".", "hi.pt.prompty")?)?;
    /// assert_eq!(registry.get("hi", Some("pt-BR"))?.agent.instructions.as_deref(), Some("Oi"));
    /// assert_eq!(registry.get("hi", Some("de"))?.agent.instructions.as_deref(), Some("Hi"));
    /// assert!(registry.get("hi", Some("??")).is_err());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn get(&self, id: &str, locale: Option<&str>) -> Result<Picked> {
        let (source, appenders) = {
            let state = self.read();
            let entry = state.entries.get(id).ok_or_else(|| self.unknown(&state, id))?;
            (entry.pick(locale, &state.fallback)?.clone(), Arc::clone(&entry.appenders))
        };
        Ok(Picked { agent: source.agent()?, appenders })
    }

    /// The messages of `(id, locale)` for `inputs`: [`crate::prepare`] of the picked prompt, then
    /// its appenders.
    ///
    /// ```
    /// use serde_json::json;
    /// let registry = prompty::PromptRegistry::new();
    /// registry.register("greet", prompty::load_str("---\ninputs: [who]\n---\nuser:\nHi {{ who }}", ".", "g.prompty")?)?;
    /// assert_eq!(registry.prepare("greet", &json!({"who": "Ann"}), None)?[0].text(), "Hi Ann");
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn prepare(&self, id: &str, inputs: &Value, locale: Option<&str>) -> Result<Vec<Message>> {
        self.get(id, locale)?.prepare(inputs)
    }

    /// Async form of [`PromptRegistry::prepare`].
    ///
    /// ```no_run
    /// # async fn f() -> prompty::Result<()> {
    /// let messages = prompty::PromptRegistry::global().prepare_async("greeting", &serde_json::json!({}), Some("fr")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn prepare_async(&self, id: &str, inputs: &Value, locale: Option<&str>) -> Result<Vec<Message>> {
        self.get(id, locale)?.prepare_async(inputs).await
    }

    /// Runs `(id, locale)` with `inputs` like [`crate::invoke`] (the appenders applied), the result
    /// cast to `T`.
    ///
    /// ```no_run
    /// let answer: String = prompty::PromptRegistry::global().invoke("greeting", &serde_json::json!({"name": "Ana"}), Some("pt-BR"))?;
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn invoke<T: DeserializeOwned>(&self, id: &str, inputs: &Value, locale: Option<&str>) -> Result<T> {
        crate::invoke::cast_answer(crate::blocking::block_on(self.invoke_value(id, inputs, locale))??)
    }

    /// The `invoke` span of a call by id: the picked prompt prepared (appenders applied) and run.
    async fn invoke_value(&self, id: &str, inputs: &Value, locale: Option<&str>) -> Result<crate::Processed> {
        let invoke = async {
            let picked = self.get(id, locale)?;
            let messages = picked.prepare_async(inputs).await?;
            crate::invoke::run_processed_async(&picked.agent, &messages).await
        };
        let stage = crate::trace::Stage::new("invoke", "prompty.invoke");
        let recorded =
            |_: &mut crate::trace::Attributes| serde_json::json!({"id": id, "locale": locale, "inputs": inputs});
        crate::trace::in_span_async(stage, recorded, invoke, |result, _| result.to_value()).await
    }

    /// Async form of [`PromptRegistry::invoke`].
    ///
    /// ```no_run
    /// # async fn f() -> prompty::Result<()> {
    /// let answer: String = prompty::PromptRegistry::global().invoke_async("greeting", &serde_json::json!({}), None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn invoke_async<T: DeserializeOwned>(&self, id: &str, inputs: &Value, locale: Option<&str>) -> Result<T> {
        crate::invoke::cast_answer(self.invoke_value(id, inputs, locale).await?)
    }

    /// Runs `(id, locale)` streamed, like [`crate::invoke_stream`] (the appenders applied).
    ///
    /// ```no_run
    /// # async fn f() -> prompty::Result<()> {
    /// let stream = prompty::PromptRegistry::global().invoke_stream("greeting", &serde_json::json!({}), Some("fr")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn invoke_stream(&self, id: &str, inputs: &Value, locale: Option<&str>) -> Result<ChunkStream> {
        let picked = self.get(id, locale)?;
        let messages = picked.prepare_async(inputs).await?;
        crate::run_stream(&picked.agent, &messages).await
    }

    /// Runs the agent loop on `(id, locale)` like [`crate::turn`] (the appenders applied to the
    /// first request's messages).
    ///
    /// ```no_run
    /// let answer: String = prompty::PromptRegistry::global()
    ///     .turn("support.refund", &serde_json::json!({"order": "A-1"}), Some("fr"), prompty::TurnOptions::new())?;
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn turn<T: DeserializeOwned>(
        &self,
        id: &str,
        inputs: &Value,
        locale: Option<&str>,
        options: TurnOptions,
    ) -> Result<T> {
        crate::invoke::cast_owned(crate::blocking::block_on(self.turn_value(id, inputs, locale, options))??)
    }

    /// The `turn` span of a call by id: the picked prompt prepared (appenders applied) and the
    /// agent loop run on its messages.
    async fn turn_value(&self, id: &str, inputs: &Value, locale: Option<&str>, options: TurnOptions) -> Result<Value> {
        let turn = async {
            let picked = self.get(id, locale)?;
            let inputs = Value::Object(crate::validate_inputs(&picked.agent, inputs)?);
            let messages = picked.prepare_async(&inputs).await?;
            crate::turn::run_loop(&picked.agent, messages, &inputs, options).await
        };
        let stage = crate::trace::Stage::new("turn", "prompty.turn");
        let recorded =
            |_: &mut crate::trace::Attributes| serde_json::json!({"id": id, "locale": locale, "inputs": inputs});
        let out = crate::trace::in_span_async(stage, recorded, turn, crate::turn::turn_result).await?;
        Ok(out.result)
    }

    /// Async form of [`PromptRegistry::turn`].
    ///
    /// ```no_run
    /// # async fn f() -> prompty::Result<()> {
    /// let answer: String = prompty::PromptRegistry::global()
    ///     .turn_async("support.refund", &serde_json::json!({}), None, prompty::TurnOptions::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn turn_async<T: DeserializeOwned>(
        &self,
        id: &str,
        inputs: &Value,
        locale: Option<&str>,
        options: TurnOptions,
    ) -> Result<T> {
        crate::invoke::cast_owned(self.turn_value(id, inputs, locale, options).await?)
    }

    /// Loads every `.prompty` file below `dir` into the registry: `greeting.prompty` is the
    /// default of `greeting`, `greeting.fr.prompty` its `fr` variant, `support/refund.prompty`
    /// the id `support.refund`; the ids registered are returned, sorted. All or nothing: every
    /// problem is reported in one error, one line per problem naming its file, and then nothing
    /// is registered. Problems: a file that does not load, a file name whose part after the first
    /// `.` is not a locale tag, a variant without a default file, two files for the same locale,
    /// and a variant whose inputs, outputs or tools differ from its default's
    /// ([`crate::analysis::check_variant`]). Files already registered under an id are replaced
    /// (the id's overrides and appenders stay). Bounds: [`crate::analysis::MAX_FOLDER_DEPTH`]
    /// folders deep, [`crate::analysis::MAX_PROMPT_FILES`] files.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("prompty-doc-load-dir-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("hi.prompty"), "---\ninputs: [name]\n---\nHi {{ name }}").unwrap();
    /// std::fs::write(dir.join("hi.fr.prompty"), "---\ninputs: [nom]\n---\nSalut {{ nom }}").unwrap();
    /// let err = prompty::PromptRegistry::new().load_dir(&dir).unwrap_err().to_string();
    /// assert!(err.contains("hi.fr.prompty:2:10: the input `nom` is not declared by the default prompt"), "{err}");
    /// ```
    pub fn load_dir(&self, dir: impl AsRef<Path>) -> Result<Vec<String>> {
        let dir = dir.as_ref();
        let display_root = dir.display().to_string();
        let (groups, found) = crate::analysis::find_prompts(dir, &display_root).map_err(|e| Error::PromptRegistry {
            message: format!("{}: cannot read the folder: {e}", dir.display()),
        })?;
        let mut problems: Vec<String> = found.iter().map(ToString::to_string).collect();
        let options = self.read().load_options.clone().unwrap_or_else(LoadOptions::process_default);
        let mut loaded = Vec::new();
        for group in &groups {
            if let Err(e) = check_id(&group.id) {
                problems.push(format!("{}: {e}", group.default_display));
                continue;
            }
            let checked = group.check(|path, _| Loaded::new(crate::load_with(path, &options)));
            let default = match checked.default.analysis.agent {
                Ok(agent) => agent,
                Err(e) => {
                    problems.push(e.to_string());
                    continue;
                }
            };
            let mut variants = Vec::new();
            for variant in checked.variants {
                match variant.file.analysis.agent {
                    Ok(agent) => {
                        problems.extend(variant.mismatches.iter().map(ToString::to_string));
                        variants.push((variant.locale, agent));
                    }
                    Err(e) => problems.push(e.to_string()),
                }
            }
            loaded.push((group.id.clone(), default, variants));
        }
        if !problems.is_empty() {
            return Err(Error::PromptRegistry {
                message: format!("{} cannot be loaded:\n{}", dir.display(), problems.join("\n")),
            });
        }
        let mut state = self.write();
        let mut ids = Vec::new();
        for (id, default, variants) in loaded {
            let entry = state.entries.entry(id.clone()).or_insert_with(|| Entry::new(Agent::default().into()));
            entry.default = default.into();
            for (locale, agent) in variants {
                put(&mut entry.variants, locale, agent.into());
            }
            ids.push(id);
        }
        Ok(ids)
    }
}

/// A prompt file of a folder as the registry loads it: the agent (or why it did not load) and its
/// analysis, on which a locale variant is compared with its default.
struct Loaded {
    agent: Result<Agent>,
    report: Option<crate::analysis::Report>,
}

impl Loaded {
    fn new(agent: Result<Agent>) -> Loaded {
        let report = agent.as_ref().ok().map(crate::analysis::check_agent);
        Loaded { agent, report }
    }
}

impl crate::analysis::Analyzed for Loaded {
    fn report(&self) -> Option<&crate::analysis::Report> {
        self.report.as_ref()
    }
}

/// Sets the source of `locale` in a list, replacing one of the same tag.
fn put(list: &mut Vec<(Locale, PromptSource)>, locale: Locale, source: PromptSource) {
    match list.iter_mut().find(|(l, _)| *l == locale) {
        Some(slot) => slot.1 = source,
        None => list.push((locale, source)),
    }
}

/// The variant of a typed prompt for `requested`, by the registry's lookup order with the
/// fallback locale of [`PromptRegistry::global`]: the index in `variants`, or `None` for the
/// default prompt.
#[doc(hidden)]
pub fn pick_locale(variants: &[&str], requested: &str) -> Result<Option<usize>> {
    Ok(locale::resolve(requested, variants, &PromptRegistry::global().read().fallback)?)
}

#[cfg(test)]
mod tests;
