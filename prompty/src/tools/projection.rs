//! Wire projection: the function definitions a model sees. Each tool kind projects its
//! declarations ([`crate::ToolKindPlugin::project`]); [`crate::register_tool_projector`] puts a
//! projector over a kind of the one kind registry. Bound parameters are never shown to the model.

pub use crate::FunctionDefinition;
use crate::{Agent, Result, Tool};

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
