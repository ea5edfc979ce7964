//! `kind: prompty` tools: another `.prompty` file run as a tool. Its path is relative to the parent
//! prompt and confined like `${file:}` references; the model's arguments are the child's inputs.

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
                "agentic" => Err(Error::Execution {
                    message: format!(
                        "tool '{}': mode 'agentic' runs the child prompt's own tool loop, which this version of \
                         prompty does not have yet; use `mode: single`",
                        tool.name
                    ),
                }),
                other => Err(Error::Execution {
                    message: format!("tool '{}': unknown mode '{other}' (expected single or agentic)", tool.name),
                }),
            }
        })
    }
}
