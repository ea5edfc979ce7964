//! Tools the model may call: [`Tool`] and its [`ToolKind`].

use super::{Connection, Property};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::ops::RangeInclusive;
use std::time::Duration;

/// A tool declared in the frontmatter.
///
/// ```
/// use prompty_core::{Tool, ToolKind};
/// let t: Tool = serde_json::from_value(serde_json::json!({
///     "name": "get_weather", "kind": "function",
///     "parameters": [{"name": "city", "kind": "string", "required": true}],
///     "bindings": {"unit": {"input": "preferred_unit"}}})).unwrap();
/// assert_eq!(t.kind.as_str(), "function");
/// assert_eq!(t.bindings[0].input, "preferred_unit");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: Option<String>,
    /// Parameters filled from the prompt's inputs instead of by the model.
    pub bindings: Vec<Binding>,
    /// The kind of tool, with its kind-specific fields.
    pub kind: ToolKind,
}

/// A bound parameter: `parameter: {input: input_name}` (or `parameter: input_name`).
///
/// ```
/// let b = prompty_core::Binding { name: "unit".into(), input: "preferred_unit".into() };
/// assert_eq!(b.name, "unit");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The tool parameter.
    pub name: String,
    /// The prompt input whose value the parameter takes.
    pub input: String,
}

/// The kind of a [`Tool`].
///
/// ```
/// use prompty_core::ToolKind;
/// let k = ToolKind::Function(Default::default());
/// assert_eq!(k.as_str(), "function");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ToolKind {
    /// `kind: function`: a function of the host.
    Function(FunctionTool),
    /// `kind: mcp`: the tools of an MCP server.
    Mcp(McpTool),
    /// `kind: openapi`: the operations of an OpenAPI document.
    OpenApi(OpenApiTool),
    /// `kind: prompty`: another `.prompty` file run as a tool.
    Prompty(PromptyTool),
    /// Any other kind, with its fields kept.
    Custom(CustomTool),
}

impl ToolKind {
    /// The kinds read into typed fields (`function`, `mcp`, `openapi`, `prompty`); any other
    /// `kind` is a [`ToolKind::Custom`] tool.
    ///
    /// ```
    /// use prompty_core::{Tool, ToolKind};
    /// for kind in ToolKind::BUILTIN {
    ///     let written = serde_json::json!({"name": "t", "kind": kind, "path": "c.prompty", "serverName": "s"});
    ///     let tool: Tool = serde_json::from_value(written).unwrap();
    ///     assert!(!matches!(tool.kind, ToolKind::Custom(_)) && tool.kind.as_str() == kind);
    /// }
    /// ```
    pub const BUILTIN: [&'static str; 4] = ["function", "mcp", "openapi", "prompty"];

    /// The kind as written in the file.
    pub fn as_str(&self) -> &str {
        match self {
            ToolKind::Function(_) => "function",
            ToolKind::Mcp(_) => "mcp",
            ToolKind::OpenApi(_) => "openapi",
            ToolKind::Prompty(_) => "prompty",
            ToolKind::Custom(c) => &c.kind,
        }
    }
}

/// The fields of a `function` tool.
///
/// ```
/// let f = prompty_core::FunctionTool::default();
/// assert!(!f.is_strict());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionTool {
    /// The parameters the model fills.
    #[serde(default)]
    pub parameters: Vec<Property>,
    /// OpenAI strict mode. Absent means not strict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

impl FunctionTool {
    /// Whether strict mode is on (absent means off).
    pub fn is_strict(&self) -> bool {
        self.strict.unwrap_or(false)
    }
}

/// The fields of an `mcp` tool.
///
/// ```
/// let m: prompty_core::McpTool = serde_json::from_value(serde_json::json!(
///     {"serverName": "fs", "approvalMode": "never"})).unwrap();
/// assert_eq!(m.approval_mode.unwrap().kind, "never");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    /// How to reach the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connection>,
    /// The server's name.
    pub server_name: String,
    /// The server's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_description: Option<String>,
    /// When calls need approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
    /// The server tools the model may use (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// OpenAI strict mode for the server's tools, as for function tools. Absent means not strict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// `handshakeTimeout`: seconds to start or reach the server and finish `initialize`, a number
    /// in [`McpTool::HANDSHAKE_TIMEOUT_SECS`] (1 to 600; absent: 30). Kept as written; read
    /// (and checked) by [`McpTool::handshake_duration`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake_timeout: Option<Value>,
    /// `callTimeout`: seconds for one tool call, and for one whole listing of the server's tools,
    /// a number in [`McpTool::CALL_TIMEOUT_SECS`] (1 to 3600; absent: 60). Kept as written; read
    /// (and checked) by [`McpTool::call_duration`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout: Option<Value>,
    /// `idleTimeout`: seconds the server may go unused (no listing, no call) before it is stopped
    /// (its process ended, its HTTP session closed; the next use starts it again), a number in
    /// [`McpTool::IDLE_TIMEOUT_SECS`] (1 to 86 400; absent: 300). Kept as written; read (and
    /// checked) by [`McpTool::idle_duration`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<Value>,
    /// `required: true`: a server that cannot be started, reached or listed fails the turn. By
    /// default (`false`) its tools are left out of the request, an error event and a `tracing`
    /// warning say why, and the turn goes on with the other tools.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

impl McpTool {
    /// The seconds `handshakeTimeout` may be.
    ///
    /// ```
    /// assert_eq!(prompty_core::McpTool::HANDSHAKE_TIMEOUT_SECS, 1..=600);
    /// ```
    pub const HANDSHAKE_TIMEOUT_SECS: RangeInclusive<u64> = 1..=600;
    /// The seconds `callTimeout` may be.
    ///
    /// ```
    /// assert_eq!(prompty_core::McpTool::CALL_TIMEOUT_SECS, 1..=3600);
    /// ```
    pub const CALL_TIMEOUT_SECS: RangeInclusive<u64> = 1..=3600;
    /// The seconds `idleTimeout` may be.
    ///
    /// ```
    /// assert_eq!(prompty_core::McpTool::IDLE_TIMEOUT_SECS, 1..=86_400);
    /// ```
    pub const IDLE_TIMEOUT_SECS: RangeInclusive<u64> = 1..=86_400;

    /// `handshakeTimeout` as a duration: `Ok(None)` when absent; an error message naming the
    /// field, the value and the accepted range when it is not a number of seconds in
    /// [`McpTool::HANDSHAKE_TIMEOUT_SECS`].
    ///
    /// ```
    /// let m: prompty_core::McpTool = serde_json::from_value(serde_json::json!(
    ///     {"serverName": "fs", "handshakeTimeout": 2.5})).unwrap();
    /// assert_eq!(m.handshake_duration(), Ok(Some(std::time::Duration::from_millis(2500))));
    /// let m: prompty_core::McpTool = serde_json::from_value(serde_json::json!(
    ///     {"serverName": "fs", "handshakeTimeout": 0})).unwrap();
    /// assert_eq!(m.handshake_duration().unwrap_err(),
    ///     "`handshakeTimeout` is 0; it must be a number of seconds from 1 to 600");
    /// ```
    pub fn handshake_duration(&self) -> Result<Option<Duration>, String> {
        seconds("handshakeTimeout", self.handshake_timeout.as_ref(), Self::HANDSHAKE_TIMEOUT_SECS)
    }

    /// `callTimeout` as a duration: `Ok(None)` when absent; an error message naming the field,
    /// the value and the accepted range when it is not a number of seconds in
    /// [`McpTool::CALL_TIMEOUT_SECS`].
    ///
    /// ```
    /// let m: prompty_core::McpTool = serde_json::from_value(serde_json::json!(
    ///     {"serverName": "fs", "callTimeout": "10"})).unwrap();
    /// assert_eq!(m.call_duration().unwrap_err(),
    ///     "`callTimeout` is \"10\" (a string); it must be a number of seconds from 1 to 3600");
    /// ```
    pub fn call_duration(&self) -> Result<Option<Duration>, String> {
        seconds("callTimeout", self.call_timeout.as_ref(), Self::CALL_TIMEOUT_SECS)
    }

    /// `idleTimeout` as a duration: `Ok(None)` when absent; an error message naming the field,
    /// the value and the accepted range when it is not a number of seconds in
    /// [`McpTool::IDLE_TIMEOUT_SECS`].
    ///
    /// ```
    /// let m: prompty_core::McpTool = serde_json::from_value(serde_json::json!(
    ///     {"serverName": "fs", "idleTimeout": 60})).unwrap();
    /// assert_eq!(m.idle_duration(), Ok(Some(std::time::Duration::from_secs(60))));
    /// let m: prompty_core::McpTool = serde_json::from_value(serde_json::json!(
    ///     {"serverName": "fs", "idleTimeout": 86401})).unwrap();
    /// assert_eq!(m.idle_duration().unwrap_err(),
    ///     "`idleTimeout` is 86401; it must be a number of seconds from 1 to 86400");
    /// ```
    pub fn idle_duration(&self) -> Result<Option<Duration>, String> {
        seconds("idleTimeout", self.idle_timeout.as_ref(), Self::IDLE_TIMEOUT_SECS)
    }
}

/// A declared number of seconds within `range`.
fn seconds(field: &str, value: Option<&Value>, range: RangeInclusive<u64>) -> Result<Option<Duration>, String> {
    let (low, high) = (*range.start(), *range.end());
    let out_of_range =
        |shown: String| format!("`{field}` is {shown}; it must be a number of seconds from {low} to {high}");
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s >= low as f64 && s <= high as f64 => Ok(Some(Duration::from_secs_f64(s))),
            _ => Err(out_of_range(n.to_string())),
        },
        Some(other) => {
            let what = match other {
                Value::String(_) => "a string",
                Value::Bool(_) => "a boolean",
                Value::Array(_) => "a list",
                _ => "a mapping",
            };
            let mut shown = other.to_string();
            if shown.len() > 40 {
                shown = format!("{}...", crate::text::prefix(&shown, 40));
            }
            Err(out_of_range(format!("{shown} ({what})")))
        }
    }
}

/// When MCP tool calls need approval: `always`, `never`, or `specify` with lists.
/// A bare string `never` means `{kind: never}`.
///
/// ```
/// let a: prompty_core::ApprovalMode = serde_json::from_value(serde_json::json!("always")).unwrap();
/// assert_eq!(a.kind, "always");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalMode {
    /// `always`, `never` or `specify`.
    pub kind: String,
    /// With `specify`: tools that always need approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always_require_approval_tools: Option<Vec<String>>,
    /// With `specify`: tools that never need approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub never_require_approval_tools: Option<Vec<String>>,
}

impl<'de> Deserialize<'de> for ApprovalMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Full {
            kind: String,
            #[serde(default)]
            always_require_approval_tools: Option<Vec<String>>,
            #[serde(default)]
            never_require_approval_tools: Option<Vec<String>>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Short(String),
            Full(Full),
        }
        Ok(match Either::deserialize(d)? {
            Either::Short(kind) => ApprovalMode { kind, ..ApprovalMode::default() },
            Either::Full(f) => ApprovalMode {
                kind: f.kind,
                always_require_approval_tools: f.always_require_approval_tools,
                never_require_approval_tools: f.never_require_approval_tools,
            },
        })
    }
}

/// The fields of an `openapi` tool.
///
/// ```
/// let o = prompty_core::OpenApiTool { specification: "./weather.json".into(), ..Default::default() };
/// assert!(o.specification.ends_with(".json"));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenApiTool {
    /// How to reach the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connection>,
    /// The OpenAPI document: a path (relative to the prompt) or a URL, kept as written.
    #[serde(default)]
    pub specification: String,
    /// OpenAI strict mode for the document's operations, as for function tools. Absent means not
    /// strict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// `required: true`: a document that cannot be read (or fetched) fails the turn. By default
    /// (`false`) its operations are left out of the request, an error event and a `tracing`
    /// warning say why, and the turn goes on with the other tools.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// The fields of a `prompty` tool: a child prompt run as a tool.
///
/// ```
/// let p = prompty_core::PromptyTool { path: "child.prompty".into(), mode: None };
/// assert_eq!(p.mode(), "single");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptyTool {
    /// The child `.prompty` file, relative to the parent prompt.
    pub path: String,
    /// `single` (one model call, the default) or `agentic` (the child runs its own tool loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

impl PromptyTool {
    /// The mode, `single` when absent.
    pub fn mode(&self) -> &str {
        self.mode.as_deref().unwrap_or("single")
    }
}

/// A tool of a kind this runtime does not know: every field is kept. `Debug` redacts the
/// secret-looking ones.
///
/// ```
/// let c = prompty_core::CustomTool { kind: "my_provider".into(), ..Default::default() };
/// assert!(c.extra.is_empty());
/// let mut options = serde_json::Map::new();
/// options.insert("accessToken".into(), "t0k3n".into());
/// let c = prompty_core::CustomTool { options: Some(options), ..c };
/// assert!(!format!("{c:?}").contains("t0k3n"));
/// ```
#[derive(Clone, PartialEq, Default)]
pub struct CustomTool {
    /// The kind as written.
    pub kind: String,
    /// How to reach the tool.
    pub connection: Option<Connection>,
    /// Tool options.
    pub options: Option<Map<String, Value>>,
    /// Every other field, as written.
    pub extra: Map<String, Value>,
}

/// Secret-looking fields of `options` and of the other fields are redacted, as in a
/// [`Connection`]'s `Debug` ([`Connection::is_secret_field`]).
impl std::fmt::Debug for CustomTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use super::connection::redact_map;
        f.debug_struct("CustomTool")
            .field("kind", &self.kind)
            .field("connection", &self.connection)
            .field("options", &self.options.as_ref().map(redact_map))
            .field("extra", &redact_map(&self.extra))
            .finish()
    }
}

impl Tool {
    /// The namespace under which the tools of a remote declaration (`kind: mcp` or
    /// `kind: openapi`) are offered to the model, as `<namespace>__<tool>`: the declaration's
    /// `name`, for both kinds (a prompt's tool names are unique, so its namespaces are too).
    /// `None` for the other kinds. An MCP declaration's `serverName` names the server (in
    /// messages, and what tells servers apart), not the namespace; earlier versions of this runtime offered
    /// MCP tools under it, and a call in that spelling is still accepted, with a warning.
    ///
    /// ```
    /// let tool: prompty_core::Tool = serde_json::from_value(serde_json::json!(
    ///     {"name": "files", "kind": "mcp", "serverName": "filesystem"})).unwrap();
    /// assert_eq!(tool.namespace(), Some("files"));
    /// let f: prompty_core::Tool = serde_json::from_value(serde_json::json!({"name": "now", "kind": "function"})).unwrap();
    /// assert_eq!(f.namespace(), None);
    /// ```
    pub fn namespace(&self) -> Option<&str> {
        matches!(self.kind, ToolKind::Mcp(_) | ToolKind::OpenApi(_)).then_some(self.name.as_str())
    }

    fn to_map(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("kind".into(), Value::String(self.kind.as_str().to_owned()));
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::String(d.clone()));
        }
        let fields = match &self.kind {
            ToolKind::Function(f) => serde_json::to_value(f)?,
            ToolKind::Mcp(t) => serde_json::to_value(t)?,
            ToolKind::OpenApi(t) => serde_json::to_value(t)?,
            ToolKind::Prompty(t) => serde_json::to_value(t)?,
            ToolKind::Custom(c) => {
                let mut f = Map::new();
                if let Some(conn) = &c.connection {
                    f.insert("connection".into(), serde_json::to_value(conn)?);
                }
                if let Some(o) = &c.options {
                    f.insert("options".into(), Value::Object(o.clone()));
                }
                f.extend(c.extra.clone());
                Value::Object(f)
            }
        };
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        if !self.bindings.is_empty() {
            let b = self.bindings.iter().map(|b| (b.name.clone(), serde_json::json!({ "input": b.input }))).collect();
            m.insert("bindings".into(), Value::Object(b));
        }
        Ok(m)
    }
}

impl Serialize for Tool {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().map_err(serde::ser::Error::custom)?.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut map = Map::<String, Value>::deserialize(d)?;
        let name = match map.remove("name") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(D::Error::custom("`name` must be a string")),
            None => return Err(D::Error::missing_field("name")),
        };
        let kind = match map.remove("kind") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(D::Error::custom("`kind` must be a string")),
            None => return Err(D::Error::missing_field("kind")),
        };
        let description = match map.remove("description") {
            Some(Value::String(s)) => Some(s),
            None | Some(Value::Null) => None,
            Some(_) => return Err(D::Error::custom("`description` must be a string")),
        };
        let bindings = match map.remove("bindings") {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => bindings_from_value(v).map_err(D::Error::custom)?,
        };
        let typed = |map: Map<String, Value>| Value::Object(map);
        let kind = match kind.as_str() {
            "function" => ToolKind::Function(FunctionTool::deserialize(typed(map)).map_err(D::Error::custom)?),
            "mcp" => ToolKind::Mcp(McpTool::deserialize(typed(map)).map_err(D::Error::custom)?),
            "openapi" => ToolKind::OpenApi(OpenApiTool::deserialize(typed(map)).map_err(D::Error::custom)?),
            "prompty" => ToolKind::Prompty(PromptyTool::deserialize(typed(map)).map_err(D::Error::custom)?),
            _ => {
                let mut extra = map;
                let connection = match extra.remove("connection") {
                    None | Some(Value::Null) => None,
                    Some(c) => Some(Connection::deserialize(c).map_err(D::Error::custom)?),
                };
                let options = match extra.remove("options") {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(o)) => Some(o),
                    Some(_) => return Err(D::Error::custom("`options` must be a mapping")),
                };
                ToolKind::Custom(CustomTool { kind, connection, options, extra })
            }
        };
        Ok(Tool { name, description, bindings, kind })
    }
}

/// Reads bindings written as a map (`param: {input: x}` or `param: x`) or as a list
/// (`[{name: param, input: x}]`).
pub(crate) fn bindings_from_value(v: Value) -> Result<Vec<Binding>, String> {
    let entry = |name: String, v: Value| -> Result<Binding, String> {
        match v {
            Value::String(input) => Ok(Binding { name, input }),
            Value::Object(mut o) => match o.remove("input") {
                Some(Value::String(input)) => Ok(Binding { name, input }),
                _ => Err(format!("binding `{name}` needs `input: <input name>`")),
            },
            _ => Err(format!("binding `{name}` must be `{{input: <input name>}}` or an input name")),
        }
    };
    match v {
        Value::Object(m) => m.into_iter().map(|(k, v)| entry(k, v)).collect(),
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Object(mut o) => match o.remove("name") {
                    Some(Value::String(name)) => entry(name, Value::Object(o)),
                    _ => Err("a binding in list form needs `name`".to_owned()),
                },
                _ => Err("a binding in list form must be a mapping".to_owned()),
            })
            .collect(),
        _ => Err("`bindings` must be a mapping or a list".to_owned()),
    }
}
