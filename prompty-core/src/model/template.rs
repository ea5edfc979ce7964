//! How the body is rendered and parsed: [`Template`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The template engine and the parser of a prompt. Omitted in a file, it is
/// `{format: {kind: jinja2}, parser: {kind: prompty}}`.
///
/// ```
/// let t = prompty_core::Template::default();
/// assert_eq!(t.format.kind, "jinja2");
/// assert_eq!(t.parser.kind, "prompty");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Template {
    /// The renderer.
    #[serde(default)]
    pub format: FormatConfig,
    /// The parser that turns rendered text into messages.
    #[serde(default)]
    pub parser: ParserConfig,
}

/// The renderer of a template: `format: {kind: jinja2}` or `format: mustache`.
///
/// `strict: true` marks every input strict: a strict input whose value holds a role marker
/// (`system:` at the start of a line) is an error instead of being rendered. `options.strictInputs`
/// (a list of input names) marks only those inputs.
///
/// ```
/// let f = prompty_core::FormatConfig::default();
/// assert!(!f.strict);
/// assert!(f.strict_inputs().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormatConfig {
    /// The renderer key: `jinja2`, `mustache`, or a registered custom renderer.
    #[serde(default = "jinja2")]
    pub kind: String,
    /// Whether every input is strict.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    /// Renderer options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Map<String, Value>>,
}

fn jinja2() -> String {
    "jinja2".to_owned()
}

impl Default for FormatConfig {
    fn default() -> Self {
        FormatConfig { kind: jinja2(), strict: false, options: None }
    }
}

impl FormatConfig {
    /// The inputs that `options.strictInputs` marks strict.
    pub fn strict_inputs(&self) -> Vec<&str> {
        self.options
            .as_ref()
            .and_then(|o| o.get("strictInputs"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

/// The parser of a template: `parser: {kind: prompty}`.
///
/// ```
/// assert_eq!(prompty_core::ParserConfig::default().kind, "prompty");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParserConfig {
    /// The parser key: `prompty` or a registered custom parser.
    #[serde(default = "prompty")]
    pub kind: String,
    /// Parser options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Map<String, Value>>,
}

fn prompty() -> String {
    "prompty".to_owned()
}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig { kind: prompty(), options: None }
    }
}
