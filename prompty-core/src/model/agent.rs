//! The loaded prompt: [`Agent`].

use super::{Model, Property, Template, Tool};
use crate::cache::RuntimeCache;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// A loaded `.prompty` file: its frontmatter as typed fields and its body as `instructions`.
///
/// Build one with [`crate::load`] (from a file), [`crate::load_str`] (from text), or
/// [`Agent::from_value`] (from the canonical JSON). `Agent` serializes to the canonical JSON of the
/// Prompty specification: collections as lists, no shorthands, `kind: "prompt"`.
///
/// ```
/// let agent = prompty_core::Agent::from_value(serde_json::json!({
///     "name": "hello", "model": "gpt-4o", "instructions": "user:\nHi"})).unwrap();
/// let json = serde_json::to_value(&agent).unwrap();
/// assert_eq!(json["kind"], "prompt");
/// assert_eq!(json["model"], serde_json::json!({"id": "gpt-4o"}));
/// ```
///
/// `Debug` shows no credential: connections redact theirs (see [`super::Connection`]), and so does
/// `metadata`, by the rule of [`super::Connection::is_secret_field`]; and a secret value that
/// landed in any other field (`template.format: ${env:MY_API_KEY}`) prints `[REDACTED]` (see
/// [`crate::Secret::scrub`]).
///
/// ```
/// let agent = prompty_core::Agent::from_value(serde_json::json!({"name": "x", "metadata": {"token": "t0k"},
///     "model": {"id": "m", "connection": {"kind": "custom", "apiKey": "sk-hidden"}}})).unwrap();
/// let debug = format!("{agent:?}");
/// assert!(!debug.contains("t0k") && !debug.contains("sk-hidden"), "{debug}");
/// ```
#[derive(Clone, Default)]
pub struct Agent {
    /// The prompt's name.
    pub name: String,
    /// A name for display.
    pub display_name: Option<String>,
    /// What the prompt does.
    pub description: Option<String>,
    /// Free-form metadata (authors, tags, ...).
    pub metadata: Option<Map<String, Value>>,
    /// The model it runs on.
    pub model: Option<Model>,
    /// Its inputs, in declaration order.
    pub inputs: Option<Vec<Property>>,
    /// Its structured outputs, in declaration order.
    pub outputs: Option<Vec<Property>>,
    /// The tools the model may call.
    pub tools: Option<Vec<Tool>>,
    /// The renderer and parser.
    pub template: Template,
    /// The body of the file: the template text.
    pub instructions: Option<String>,
    /// The file the agent was loaded from, for error messages (not part of the JSON form).
    pub source: Option<AgentSource>,
    /// Compiled forms of the template, filled by the runtime on first use.
    pub(crate) cache: RuntimeCache,
    /// Whether some field still holds an `${env:}` reference (see [`Agent::has_env_references`]).
    pub(crate) unresolved_env: bool,
}

/// Where an agent was loaded from: the file as named by the caller, and the 1-based line of that
/// file where the template body starts (so template errors can point into the file).
///
/// ```
/// let a = prompty_core::load_str("---\nname: x\n---\nHi {{ name }}", ".", "x.prompty")?;
/// let src = a.source.unwrap();
/// assert_eq!((src.path.as_str(), src.body_line), ("x.prompty", 4));
/// assert_eq!(src.base_dir, std::path::Path::new("."));
/// # Ok::<(), prompty_core::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct AgentSource {
    /// The file, as the caller named it.
    pub path: String,
    /// The folder the prompt's relative paths start from.
    pub base_dir: std::path::PathBuf,
    /// The extra roots the host allowed when loading it (see [`crate::LoadOptions::allow_root`]);
    /// files the prompt names (such as `kind: prompty` tool children) may lie there too.
    pub allowed_roots: Vec<std::path::PathBuf>,
    /// The 1-based line where the body starts.
    pub body_line: usize,
    /// The child prompts of its `kind: prompty` tools compiled into the program with it (a typed
    /// prompt's): the runtime runs them from this text instead of reading their files. Empty for
    /// a prompt loaded from a file.
    pub embedded: Vec<std::sync::Arc<EmbeddedPrompt>>,
    /// The file's text as loaded, for the locations of [`crate::analysis::check_agent`]'s
    /// diagnostics; `None` for an agent built in code or compiled into the program. Its `Debug`
    /// form shows only its length (a prompt may hold a literal key).
    pub text: Option<std::sync::Arc<str>>,
}

impl std::fmt::Debug for AgentSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSource")
            .field("path", &self.path)
            .field("base_dir", &self.base_dir)
            .field("allowed_roots", &self.allowed_roots)
            .field("body_line", &self.body_line)
            .field("embedded", &self.embedded)
            .field("text", &self.text.as_ref().map(|t| format!("<{} bytes>", t.len())))
            .finish()
    }
}

/// The child prompt of a `kind: prompty` tool, compiled into the program with its parent (see
/// [`AgentSource::embedded`]).
///
/// ```
/// let child = prompty_core::EmbeddedPrompt {
///     tool_path: "child.prompty".into(),
///     path: "prompts/child.prompty".into(),
///     body_line: 4,
///     json: r#"{"name":"child"}"#.into(),
///     embedded: Vec::new(),
/// };
/// assert_eq!(child.tool_path, "child.prompty");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedPrompt {
    /// The tool's `path`, as written in the parent.
    pub tool_path: String,
    /// The child file, as named in messages.
    pub path: String,
    /// The 1-based line where its body starts.
    pub body_line: usize,
    /// Its canonical JSON, `${env:}` references unresolved.
    pub json: String,
    /// Its own compiled children.
    pub embedded: Vec<std::sync::Arc<EmbeddedPrompt>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        super::secret::ScrubbedDebug(AgentFields(self)).fmt(f)
    }
}

/// The fields of an [`Agent`] as `Debug` shows them, before [`crate::Secret::scrub`].
struct AgentFields<'a>(&'a Agent);

impl std::fmt::Debug for AgentFields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let this = self.0;
        f.debug_struct("Agent")
            .field("name", &this.name)
            .field("display_name", &this.display_name)
            .field("description", &this.description)
            .field("metadata", &this.metadata.as_ref().map(super::connection::redact_map))
            .field("model", &this.model)
            .field("inputs", &this.inputs)
            .field("outputs", &this.outputs)
            .field("tools", &this.tools)
            .field("template", &this.template)
            .field("instructions", &this.instructions)
            .field("source", &this.source)
            .field("cache", &this.cache)
            .field("unresolved_env", &this.unresolved_env)
            .finish()
    }
}

impl PartialEq for Agent {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.display_name == other.display_name
            && self.description == other.description
            && self.metadata == other.metadata
            && self.model == other.model
            && self.inputs == other.inputs
            && self.outputs == other.outputs
            && self.tools == other.tools
            && self.template == other.template
            && self.instructions == other.instructions
    }
}

impl Agent {
    /// The canonical JSON of the agent (same as `serde_json::to_value(&agent)`).
    ///
    /// ```
    /// let a = prompty_core::Agent::default();
    /// assert_eq!(a.to_value()["kind"], "prompt");
    /// ```
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The input declaration with this name.
    ///
    /// ```
    /// let a = prompty_core::Agent::from_value(serde_json::json!({"inputs": {"q": "hi"}})).unwrap();
    /// assert!(a.input("q").is_some());
    /// ```
    pub fn input(&self, name: &str) -> Option<&Property> {
        self.inputs.as_deref()?.iter().find(|p| p.name == name)
    }

    /// Whether a field of the agent still holds an `${env:VAR}` reference as written: the agent
    /// was loaded with [`crate::LoadOptions::keep_env_references`], built by
    /// [`Agent::from_value`] from JSON holding one (such as a typed prompt compiled into a
    /// program), or [`Agent::with_env_resolved_where_set`] left one whose variable is not set.
    /// The runtime resolves such an agent's references when it sends it, with
    /// [`Agent::with_env_resolved`]; an agent loaded with `load` never has any.
    ///
    /// ```
    /// let a = prompty_core::Agent::from_value(serde_json::json!({"model": "${env:PROMPTY_DOC_M:gpt-4o}"}))?;
    /// assert!(a.has_env_references());
    /// assert!(!a.with_env_resolved()?.has_env_references());
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn has_env_references(&self) -> bool {
        self.unresolved_env
    }

    /// The runtime's cache of compiled forms of this agent's template.
    #[doc(hidden)]
    pub fn runtime_cache(&self) -> &RuntimeCache {
        &self.cache
    }
}

impl Serialize for Agent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", "prompt")?;
        m.serialize_entry("name", &self.name)?;
        if let Some(v) = &self.display_name {
            m.serialize_entry("displayName", v)?;
        }
        if let Some(v) = &self.description {
            m.serialize_entry("description", v)?;
        }
        if let Some(v) = &self.metadata {
            m.serialize_entry("metadata", v)?;
        }
        if let Some(v) = &self.model {
            m.serialize_entry("model", v)?;
        }
        if let Some(v) = &self.inputs {
            m.serialize_entry("inputs", v)?;
        }
        if let Some(v) = &self.outputs {
            m.serialize_entry("outputs", v)?;
        }
        if let Some(v) = &self.tools {
            m.serialize_entry("tools", v)?;
        }
        m.serialize_entry("template", &self.template)?;
        if let Some(v) = &self.instructions {
            m.serialize_entry("instructions", v)?;
        }
        m.end()
    }
}

impl<'de> serde::Deserialize<'de> for Agent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Agent::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}
