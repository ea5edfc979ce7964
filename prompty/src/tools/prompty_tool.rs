//! `kind: prompty` tools: another `.prompty` file run as a tool. Its path is relative to the parent
//! prompt and confined like `${file:}` references; the model's arguments are the child's inputs.
//! `mode: single` (the default) invokes the child once; `mode: agentic` runs the child's own agent
//! loop ([`crate::turn`]) with its own tools, nested at most [`crate::MAX_AGENT_DEPTH`] deep.

use super::handlers::{ToolContext, ToolHandler};
use crate::{Agent, BoxFuture, Error, LoadOptions, Result, Tool, ToolKind};
use serde_json::Value;
use std::path::PathBuf;

/// The child prompt file of a `kind: prompty` tool declared by `parent`.
pub(crate) fn child_path(parent: &Agent, tool: &Tool) -> Result<PathBuf> {
    let ToolKind::Prompty(p) = &tool.kind else {
        return Err(Error::Execution { message: format!("tool '{}' is not of kind prompty", tool.name) });
    };
    let (base, options) = load_context(parent);
    crate::confine_path(&base, &p.path, &options)
}

/// The folder and load options a parent's relative files are resolved with.
pub(crate) fn load_context(parent: &Agent) -> (PathBuf, LoadOptions) {
    match &parent.source {
        Some(s) => {
            (s.base_dir.clone(), s.allowed_roots.iter().fold(LoadOptions::new(), |o, r| o.allow_root(r.clone())))
        }
        None => (PathBuf::from("."), LoadOptions::new()),
    }
}

/// The built-in handler of `kind: prompty`.
pub(crate) struct PromptyToolHandler;

impl ToolHandler for PromptyToolHandler {
    fn execute<'a>(&'a self, tool: &'a Tool, args: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let ToolKind::Prompty(p) = &tool.kind else {
                return Err(Error::Execution { message: format!("tool '{}' is not of kind prompty", tool.name) });
            };
            let path = child_path(ctx.agent, tool)?;
            let (_, options) = load_context(ctx.agent);
            let child = crate::load_with_async(&path, &options).await?;
            match p.mode() {
                "single" => crate::invoke_async::<Value>(&child, &args).await,
                "agentic" => {
                    let depth = ctx.scope.map_or(0, |s| s.depth) + 1;
                    if depth > crate::MAX_AGENT_DEPTH {
                        return Err(Error::Tool {
                            name: tool.name.clone(),
                            message: format!(
                                "agentic prompts nest at most {} deep; this call would be level {depth}",
                                crate::MAX_AGENT_DEPTH
                            ),
                        });
                    }
                    // The child runs its own loop with its own tools (handlers handed to the parent's
                    // turn still apply), under the parent's cancellation; steering stays with the parent.
                    let mut options = crate::TurnOptions::new().tools(ctx.tools.clone());
                    options.depth = depth;
                    if let Some(cancel) = ctx.scope.and_then(|s| s.cancel.clone()) {
                        options = options.cancel(cancel);
                    }
                    crate::turn_async::<Value>(&child, &args, options).await
                }
                other => Err(Error::Execution {
                    message: format!("tool '{}': unknown mode '{other}' (expected single or agentic)", tool.name),
                }),
            }
        })
    }
}
