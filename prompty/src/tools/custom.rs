//! The `mcp` / `openapi` kinds when their feature is off (the `*` kind and the adapter of a host's
//! overrides are in [`super::kinds`], with the registry).

use super::entry::CatalogEntry;
use super::function::ToolContext;
use super::kind::{refuse, ResolvedCall, ToolKindPlugin};
use crate::{Agent, BoxFuture, FunctionDefinition, Result, Tool};
use serde_json::Value;
use std::sync::Arc;

/// `mcp` or `openapi` without its feature: its declarations offer nothing, its calls fail with
/// the feature to enable.
pub(crate) struct Unavailable {
    feature: &'static str,
}

impl Unavailable {
    #[cfg(not(feature = "mcp"))]
    pub(crate) fn mcp() -> Self {
        Unavailable { feature: "mcp" }
    }

    #[cfg(not(feature = "openapi"))]
    pub(crate) fn openapi() -> Self {
        Unavailable { feature: "openapi" }
    }
}

impl ToolKindPlugin for Unavailable {
    fn project(&self, tool: &Tool, _agent: &Agent, _listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
        tracing::warn!(tool = %tool.name, kind = tool.kind.as_str(), "tool left out of the request: its kind needs a prompty feature that is not enabled");
        Ok(Vec::new())
    }

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        _entry: Option<Arc<CatalogEntry>>,
        _args: Value,
        _ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        refuse(call, |tool| {
            format!(
                "Tools of kind '{}' need prompty's `{}` feature (or your own handler and projector: \
                 `prompty::register_tool_handler` and `prompty::register_tool_projector`).",
                tool.kind.as_str(),
                self.feature
            )
        })
    }

    fn namespace<'t>(&self, tool: &'t Tool) -> Option<&'t str> {
        tool.namespace()
    }

    fn withheld(&self, tool: &Tool, name: &str) -> Option<String> {
        super::source::mcp_withheld(tool, name)
    }
}
