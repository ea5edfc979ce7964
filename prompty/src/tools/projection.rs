//! Wire projection: the function definitions a model sees. Each tool kind projects its
//! declarations ([`crate::ToolKindPlugin::project`]); [`register_tool_projector`] puts a
//! projector over a kind of the one kind registry. Bound parameters are never shown to the model.

pub use crate::FunctionDefinition;
use crate::{Agent, Result, Tool};
use std::sync::Arc;

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
    super::kind::set_projector(kind.into(), Arc::new(projector));
}

/// Forgets registered projectors; the built-in ones come back.
///
/// ```
/// prompty::clear_tool_projectors();
/// assert!(prompty::get_tool_projector("prompty").is_ok());
/// ```
pub fn clear_tool_projectors() {
    super::kind::clear_projectors();
}
