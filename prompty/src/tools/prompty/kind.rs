//! `kind: prompty`: a child prompt offered with its inputs (bound ones left out) and run once
//! (`mode: single`) or as its own agent loop (`mode: agentic`).

use super::{child_agent, child_path, embedded_child, load_context};
use crate::tools::entry::CatalogEntry;
use crate::tools::function::ToolContext;
use crate::tools::kind::{ResolvedCall, ToolKindPlugin};
use crate::tools::scope::{run_child, ChildTurn, MAX_AGENT_DEPTH};
use crate::{properties_schema, Agent, BoxFuture, Error, FunctionDefinition, Result, Tool, ToolKind};
use serde_json::Value;
use std::sync::Arc;

/// The `prompty` kind.
pub(crate) struct PromptyKind;

impl ToolKindPlugin for PromptyKind {
    fn project(&self, tool: &Tool, agent: &Agent, _listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
        let child = match embedded_child(agent, tool) {
            Some(child) => child?,
            None => {
                let path = child_path(agent, tool)?;
                let (_, options) = load_context(agent);
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

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        _entry: Option<Arc<CatalogEntry>>,
        args: Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let Some(tool) = call.tool() else { return Err(crate::tools::handlers::undeclared(call.wire_name())) };
            let ToolKind::Prompty(p) = &tool.kind else {
                return Err(Error::Execution { message: format!("tool '{}' is not of kind prompty", tool.name) });
            };
            let child = child_agent(ctx.agent, tool).await?;
            match p.mode() {
                "single" => crate::invoke_async::<Value>(&child, &args).await,
                "agentic" => {
                    let depth = ctx.scope.map_or(0, |s| s.depth) + 1;
                    if depth > MAX_AGENT_DEPTH {
                        return Err(Error::Tool {
                            name: tool.name.clone(),
                            message: format!(
                                "agentic prompts nest at most {} deep; this call would be level {depth}",
                                MAX_AGENT_DEPTH
                            ),
                        });
                    }
                    // The child runs its own loop with its own tools (handlers handed to the parent's
                    // turn still apply), under the parent's cancellation; steering stays with the parent.
                    // The loop is the turn layer's: it hands its runner down in the call's scope.
                    let cancel = ctx.scope.and_then(|s| s.cancel.clone());
                    let turn = ChildTurn { tools: ctx.tools.clone(), depth, cancel };
                    run_child(ctx.scope, child, args, turn).await
                }
                other => Err(Error::Execution {
                    message: format!("tool '{}': unknown mode '{other}' (expected single or agentic)", tool.name),
                }),
            }
        })
    }
}
