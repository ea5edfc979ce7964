//! [`bind_tools`]: checking tool functions against an agent's function tool declarations.

use super::function::{get_tool, Tools};
use crate::{Agent, Error, Result, ToolKind};

/// Tool functions checked against an agent: the functions, and a warning for each declared
/// function tool that has none.
///
/// ```
/// let agent = prompty::Agent::from_value(serde_json::json!({"tools": [{"name": "now", "kind": "function"}]}))?;
/// let handler = prompty::tool_fn_sync(|_| Ok(serde_json::json!("noon")));
/// let bound = prompty::bind_tools(&agent, prompty::Tools::new().with("now", handler))?;
/// assert!(bound.warnings.is_empty());
/// assert!(bound.tools.get("now").is_some());
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct BoundTools {
    /// The functions, ready to hand to a call.
    pub tools: Tools,
    /// One line per declared function tool without a function (per-call or registered).
    pub warnings: Vec<String>,
}

/// Checks `handlers` against the agent's `kind: function` tools, without changing the agent: a
/// handler whose name the agent does not declare as a function tool is an error; a declared
/// function tool with no handler here nor in the name registry gets a warning.
///
/// ```
/// let agent = prompty::Agent::from_value(serde_json::json!({"tools": [
///     {"name": "a", "kind": "function"}, {"name": "b", "kind": "function"}]}))?;
/// let bound = prompty::bind_tools(&agent, prompty::Tools::new().with("a", prompty::tool_fn_sync(|_| Ok(serde_json::Value::Null))))?;
/// assert_eq!(bound.warnings.len(), 1);
/// assert!(bound.warnings[0].contains("'b'"));
/// let err = prompty::bind_tools(&agent, prompty::Tools::new().with("zzz", prompty::tool_fn_sync(|_| Ok(serde_json::Value::Null)))).unwrap_err();
/// assert!(err.to_string().contains("zzz"));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn bind_tools(agent: &Agent, handlers: Tools) -> Result<BoundTools> {
    let declared: Vec<&str> = agent
        .tools
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|t| matches!(t.kind, ToolKind::Function(_)))
        .map(|t| t.name.as_str())
        .collect();
    for name in handlers.names() {
        if !declared.contains(&name) {
            return Err(Error::ToolBinding {
                message: format!(
                    "a handler is given for '{name}', but the agent declares no function tool of that name \
                     (declared: {})",
                    if declared.is_empty() { "none".to_owned() } else { declared.join(", ") }
                ),
            });
        }
    }
    let warnings = declared
        .iter()
        .filter(|name| handlers.get(name).is_none() && get_tool(name).is_none())
        .map(|name| format!("function tool '{name}' is declared but has no handler; calls to it will fail"))
        .collect();
    Ok(BoundTools { tools: handlers, warnings })
}
