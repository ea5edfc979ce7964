//! Custom kinds: `*` (every kind without its own, which needs a handler the host registers), the
//! adapter that lets `register_tool_handler` / `register_tool_projector` override one part of a
//! kind, and the `mcp` / `openapi` kinds when their feature is off.

use super::entry::CatalogEntry;
use super::handlers::{ToolContext, ToolHandler};
use super::kind::{no_handler, ResolvedCall, ToolKindPlugin};
use super::projection::{FunctionDefinition, ToolProjector};
use super::source::ToolSource;
use crate::{Agent, BoxFuture, Error, Result, Tool};
use serde_json::Value;
use std::sync::Arc;

/// The built-in `*`: kinds prompty has no client for, until the host registers a handler.
pub(crate) struct NeedsClient;

impl ToolKindPlugin for NeedsClient {
    fn project(&self, tool: &Tool, _agent: &Agent, _listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
        Err(unknown_projector(tool.kind.as_str()))
    }

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        _entry: Option<Arc<CatalogEntry>>,
        _args: Value,
        _ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        let err = match call.tool() {
            Some(tool) => {
                let kind = tool.kind.as_str();
                no_handler(
                    tool,
                    format!(
                        "Tools of kind '{kind}' need a handler for their kind: register a handler with \
                         `prompty::register_tool_handler(\"{kind}\", ...)`, or register the tool by name with \
                         `prompty::register_tool(\"{}\", ...)`.",
                        tool.name
                    ),
                )
            }
            None => super::handlers::undeclared(call.wire_name()),
        };
        Box::pin(async move { Err(err) })
    }
}

/// The error of a kind that has no projector.
pub(crate) fn unknown_projector(kind: &str) -> Error {
    Error::UnknownComponent {
        component: "tool projector",
        key: kind.to_owned(),
        known: super::kind::known_projectors().join(", "),
        register: "prompty::register_tool_projector(kind, ...)",
        hint: String::new(),
    }
}

/// A kind with the parts a host overrode: execution (`register_tool_handler`), projection
/// (`register_tool_projector`); the rest is the kind's own (`base`), when there is one.
pub(crate) struct Adapted {
    pub(crate) base: Option<Arc<dyn ToolKindPlugin>>,
    pub(crate) handler: Option<Arc<dyn ToolHandler>>,
    pub(crate) projector: Option<Arc<ToolProjector>>,
}

impl ToolKindPlugin for Adapted {
    fn project(&self, tool: &Tool, agent: &Agent, listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
        match (&self.projector, &self.base) {
            (Some(projector), _) => projector(tool, agent),
            (None, Some(base)) => base.project(tool, agent, listed),
            (None, None) => Err(unknown_projector(tool.kind.as_str())),
        }
    }

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        entry: Option<Arc<CatalogEntry>>,
        args: Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        match (&self.handler, &self.base, call.tool()) {
            (Some(handler), _, Some(tool)) => handler.execute(tool, args, ctx),
            (None, Some(base), _) => base.execute(call, entry, args, ctx),
            _ => NeedsClient.execute(call, entry, args, ctx),
        }
    }

    fn needs_approval(&self, call: &ResolvedCall<'_>) -> Option<String> {
        self.base.as_ref()?.needs_approval(call)
    }

    fn namespace<'t>(&self, tool: &'t Tool) -> Option<&'t str> {
        self.base.as_ref()?.namespace(tool)
    }

    fn withheld(&self, tool: &Tool, name: &str) -> Option<String> {
        self.base.as_ref()?.withheld(tool, name)
    }

    /// A kind whose calls the host runs lists nothing: prompty's client stays out of the way.
    fn source(&self, tool: &Tool, agent: &Agent) -> Option<Result<ToolSource>> {
        if self.handler.is_some() {
            return None;
        }
        self.base.as_ref()?.source(tool, agent)
    }
}

/// `mcp` or `openapi` without its feature: its declarations offer nothing, its calls fail with
/// the feature to enable.
#[cfg(any(not(feature = "mcp"), not(feature = "openapi")))]
pub(crate) struct Unavailable {
    feature: &'static str,
}

#[cfg(any(not(feature = "mcp"), not(feature = "openapi")))]
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

#[cfg(any(not(feature = "mcp"), not(feature = "openapi")))]
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
        let err = match call.tool() {
            Some(tool) => no_handler(
                tool,
                format!(
                    "Tools of kind '{}' need prompty's `{}` feature (or your own handler and projector: \
                     `prompty::register_tool_handler` and `prompty::register_tool_projector`).",
                    tool.kind.as_str(),
                    self.feature
                ),
            ),
            None => super::handlers::undeclared(call.wire_name()),
        };
        Box::pin(async move { Err(err) })
    }

    fn namespace<'t>(&self, tool: &'t Tool) -> Option<&'t str> {
        super::source::remote_namespace(tool)
    }

    fn withheld(&self, tool: &Tool, name: &str) -> Option<String> {
        super::source::mcp_withheld(tool, name)
    }
}
