//! Wire projection: turning tool declarations into the function definitions a model sees. Each tool
//! kind has a projector; bound parameters are never shown to the model.

use crate::registry::store::Store;
use crate::{properties_schema, Agent, Error, Result, Tool, ToolKind};
use serde::Serialize;
use serde_json::Value;
use std::sync::{Arc, LazyLock};

/// A function as the model sees it: name, description, JSON Schema of the parameters, strictness.
///
/// ```
/// let f = prompty::FunctionDefinition {
///     name: "get_weather".into(), description: None,
///     parameters: serde_json::json!({"type": "object", "properties": {}}), strict: false };
/// assert_eq!(f.name, "get_weather");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDefinition {
    /// The function's name.
    pub name: String,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the parameters (an object schema).
    pub parameters: Value,
    /// Whether the provider should enforce the schema strictly.
    pub strict: bool,
}

/// A projector: the function definitions a tool declaration becomes (an MCP server may become many).
///
/// ```
/// let project: std::sync::Arc<prompty::ToolProjector> = prompty::get_tool_projector("function")?;
/// let agent = prompty::Agent::from_value(serde_json::json!({"tools": [{"name": "now", "kind": "function"}]}))?;
/// let defs = project(&agent.tools.as_ref().unwrap()[0], &agent)?;
/// assert_eq!(defs[0].name, "now");
/// # Ok::<(), prompty::Error>(())
/// ```
pub type ToolProjector = dyn Fn(&Tool, &Agent) -> Result<Vec<FunctionDefinition>> + Send + Sync;

fn project_function(tool: &Tool, _agent: &Agent) -> Result<Vec<FunctionDefinition>> {
    let ToolKind::Function(f) = &tool.kind else { return Ok(Vec::new()) };
    let visible: Vec<_> =
        f.parameters.iter().filter(|p| !tool.bindings.iter().any(|b| b.name == p.name)).cloned().collect();
    Ok(vec![FunctionDefinition {
        name: tool.name.clone(),
        description: tool.description.clone(),
        parameters: properties_schema(&visible, f.is_strict())?,
        strict: f.is_strict(),
    }])
}

fn project_prompty(tool: &Tool, agent: &Agent) -> Result<Vec<FunctionDefinition>> {
    let child = match super::prompty_tool::embedded_child(agent, tool) {
        Some(child) => child?,
        None => {
            let path = super::prompty_tool::child_path(agent, tool)?;
            let (_, options) = super::prompty_tool::load_context(agent);
            crate::load_with(&path, &options)?
        }
    };
    let visible: Vec<_> = child
        .inputs
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|p| !tool.bindings.iter().any(|b| b.name == p.name))
        .cloned()
        .collect();
    Ok(vec![FunctionDefinition {
        name: tool.name.clone(),
        description: tool.description.clone().or(child.description),
        parameters: properties_schema(&visible, false)?,
        strict: false,
    }])
}

fn builtin_projectors() -> Vec<(&'static str, Arc<ToolProjector>)> {
    vec![
        ("function", Arc::new(project_function)),
        ("prompty", Arc::new(project_prompty)),
        ("mcp", Arc::new(crate::catalog::kinds::project_remote)),
        ("openapi", Arc::new(crate::catalog::kinds::project_remote)),
    ]
}

static PROJECTORS: LazyLock<Store<ToolProjector>> = LazyLock::new(|| Store::new(builtin_projectors));

/// Registers the projector of a tool kind, overriding the built-in one.
///
/// ```
/// prompty::register_tool_projector("calendar", |tool: &prompty::Tool, _agent: &prompty::Agent| {
///     Ok(vec![prompty::FunctionDefinition {
///         name: tool.name.clone(), description: tool.description.clone(),
///         parameters: serde_json::json!({"type": "object", "properties": {}}), strict: false }])
/// });
/// assert!(prompty::get_tool_projector("calendar").is_ok());
/// ```
pub fn register_tool_projector(
    kind: impl Into<String>,
    projector: impl Fn(&Tool, &Agent) -> Result<Vec<FunctionDefinition>> + Send + Sync + 'static,
) {
    PROJECTORS.register(kind.into(), Arc::new(projector));
}

/// The projector of a tool kind.
///
/// ```
/// assert!(prompty::get_tool_projector("function").is_ok());
/// assert!(prompty::get_tool_projector("mcp").is_ok());
/// assert!(prompty::get_tool_projector("calendar_service").is_err());
/// ```
pub fn get_tool_projector(kind: &str) -> Result<Arc<ToolProjector>> {
    PROJECTORS.get(kind).ok_or_else(|| Error::UnknownComponent {
        component: "tool projector",
        key: kind.to_owned(),
        known: PROJECTORS.known(),
        register: "prompty::register_tool_projector(kind, ...)",
        hint: String::new(),
    })
}

/// Forgets registered projectors; the built-in ones come back.
///
/// ```
/// prompty::clear_tool_projectors();
/// assert!(prompty::get_tool_projector("prompty").is_ok());
/// ```
pub fn clear_tool_projectors() {
    PROJECTORS.clear();
}

/// The function definitions of every tool the agent declares, in declaration order.
///
/// ```
/// let agent = prompty::load_str("---\ntools:\n  - name: get_weather\n    kind: function\n    parameters:\n      city: {kind: string, required: true}\n      unit: {kind: string}\n    bindings: {unit: preferred_unit}\n---\n", ".", "t.prompty")?;
/// let defs = prompty::project_tools(&agent)?;
/// assert_eq!(defs[0].parameters, serde_json::json!({
///     "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn project_tools(agent: &Agent) -> Result<Vec<FunctionDefinition>> {
    let mut out = Vec::new();
    for tool in agent.tools.as_deref().unwrap_or_default() {
        let projector = get_tool_projector(tool.kind.as_str())?;
        out.extend(projector(tool, agent)?);
    }
    Ok(out)
}
