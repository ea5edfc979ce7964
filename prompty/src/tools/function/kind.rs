//! `kind: function`: a declared function is offered with its parameters (bound ones left out);
//! a call runs the function handed to the call or registered under the tool's name (the
//! dispatcher looks those up first), so reaching the kind itself means there is none.

use crate::tools::entry::CatalogEntry;
use crate::tools::function::ToolContext;
use crate::tools::kind::{refuse, ResolvedCall, ToolKindPlugin};
use crate::{properties_schema, Agent, BoxFuture, FunctionDefinition, Result, Tool, ToolKind};
use serde_json::Value;
use std::sync::Arc;

/// The `function` kind.
pub(crate) struct FunctionKind;

impl ToolKindPlugin for FunctionKind {
    fn project(&self, tool: &Tool, _agent: &Agent, _listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
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

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        _entry: Option<Arc<CatalogEntry>>,
        _args: Value,
        _ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        refuse(call, |tool| {
            format!(
                "Annotate a fn with `#[prompty::tool]` (named `{}`), pass it in the per-call tools, or call \
                 `prompty::register_tool(\"{}\", ...)`.",
                tool.name, tool.name
            )
        })
    }
}
