//! `kind: prompty` tools: another `.prompty` file run as a tool. Its path is relative to the parent
//! prompt and confined like `${file:}` references; the model's arguments are the child's inputs.
//! `mode: single` (the default) invokes the child once; `mode: agentic` runs the child's own agent
//! loop ([`crate::turn`]) with its own tools, nested at most [`crate::MAX_AGENT_DEPTH`] deep.
//! A typed prompt (`include_prompty!`, `prompty_build::compile`) carries its children compiled in
//! (`AgentSource::embedded`): they are run from that text, never read from the build machine's
//! folder.

pub(crate) mod kind;

use crate::{Agent, Error, LoadOptions, Result, Tool, ToolKind};
use std::path::PathBuf;

/// The child prompt file of a `kind: prompty` tool declared by `parent`.
pub(crate) fn child_path(parent: &Agent, tool: &Tool) -> Result<PathBuf> {
    let ToolKind::Prompty(p) = &tool.kind else {
        return Err(Error::Execution { message: format!("tool '{}' is not of kind prompty", tool.name) });
    };
    let (base, options) = load_context(parent);
    Ok(crate::confine_path(&base, &p.path, &options)?)
}

/// The child of a `kind: prompty` tool compiled into `parent` (a typed prompt's), `${env:}`
/// references resolved: `None` when it was not compiled in (the child is then read from its file).
pub(crate) fn embedded_child(parent: &Agent, tool: &Tool) -> Option<Result<Agent>> {
    let ToolKind::Prompty(p) = &tool.kind else { return None };
    let source = parent.source.as_ref()?;
    let child = source.embedded.iter().find(|e| e.tool_path == p.path)?;
    let folder = std::path::Path::new(&p.path).parent().unwrap_or_else(|| std::path::Path::new(""));
    let base_dir = source.base_dir.join(folder).display().to_string();
    let mut agent = crate::prepare::load::compiled_agent(&child.json, &child.path, &base_dir, child.body_line);
    if let Some(s) = &mut agent.source {
        s.embedded = child.embedded.clone();
    }
    // What `compiled_agent` could not resolve is an error now, naming the reference.
    if agent.has_env_references() {
        return Some(agent.with_env_resolved().map_err(Error::from));
    }
    Some(Ok(agent))
}

/// The child agent of a `kind: prompty` tool: compiled into `parent`, else loaded from its file.
pub(crate) async fn child_agent(parent: &Agent, tool: &Tool) -> Result<Agent> {
    if let Some(child) = embedded_child(parent, tool) {
        return child;
    }
    let path = child_path(parent, tool)?;
    let (_, options) = load_context(parent);
    crate::load_with_async(&path, &options).await
}

/// The folder and load options a parent's relative files (its child prompts, its OpenAPI
/// documents) are resolved with, at run time: the roots the parent was loaded with
/// ([`crate::AgentSource::allowed_roots`]); for an agent not loaded from a file (built in code),
/// the process's default options ([`LoadOptions::process_default`]) and the working folder.
pub(crate) fn load_context(parent: &Agent) -> (PathBuf, LoadOptions) {
    match &parent.source {
        Some(s) => {
            (s.base_dir.clone(), s.allowed_roots.iter().fold(LoadOptions::new(), |o, r| o.allow_root(r.clone())))
        }
        None => (PathBuf::from("."), LoadOptions::process_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static GRANDCHILD: [crate::prepare::load::CompiledChild; 1] = [crate::prepare::load::CompiledChild {
        tool_path: "leaf.prompty",
        path: "prompts/kids/leaf.prompty",
        body_line: 3,
        json: r#"{"name":"leaf"}"#,
        children: &[],
    }];
    static CHILDREN: [crate::prepare::load::CompiledChild; 1] = [crate::prepare::load::CompiledChild {
        tool_path: "kids/child.prompty",
        path: "prompts/kids/child.prompty",
        body_line: 5,
        json: r#"{"name":"child","description":"A child.","inputs":[{"name":"topic","kind":"string"}],"tools":[{"name":"leaf","kind":"prompty","path":"leaf.prompty"}]}"#,
        children: &GRANDCHILD,
    }];

    #[tokio::test]
    async fn compiled_children_are_not_read_from_files() {
        let parent = crate::prepare::load::compiled_agent_with_children(
            r#"{"name":"parent","tools":[{"name":"research","kind":"prompty","path":"kids/child.prompty"}]}"#,
            "prompts/parent.prompty",
            "/nonexistent/build/machine/prompts",
            4,
            &CHILDREN,
        );
        let tool = &parent.tools.as_ref().unwrap()[0];
        let child = child_agent(&parent, tool).await.unwrap();
        assert_eq!((child.name.as_str(), child.description.as_deref()), ("child", Some("A child.")));
        let source = child.source.as_ref().unwrap();
        assert_eq!((source.path.as_str(), source.body_line), ("prompts/kids/child.prompty", 5));
        // Its own child is compiled in too.
        let leaf = child_agent(&child, &child.tools.as_ref().unwrap()[0]).await.unwrap();
        assert_eq!(leaf.name, "leaf");
        // A prompt loaded from a file has no compiled children: its child is read from disk.
        let mut loaded = parent.clone();
        loaded.source.as_mut().unwrap().embedded.clear();
        assert!(embedded_child(&loaded, tool).is_none());
        assert!(child_agent(&loaded, tool).await.is_err());
    }
}
