//! Loading prompts: from files (traced as `prompty.load`), and the agents of typed prompts compiled
//! into the binary.

use crate::trace::{in_span, Stage};
use crate::{Agent, AgentSource, LoadOptions, Result};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::path::Path;

/// Async form of [`crate::load`]: reads and resolves on tokio's blocking pool, so it must run
/// inside a tokio runtime. Gives the same result as `load` (with the process's default options,
/// [`LoadOptions::process_default`]).
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// let agent = prompty::load_async("prompts/chat.prompty").await?;
/// # Ok(()) }
/// ```
pub async fn load_async(path: impl AsRef<Path>) -> Result<Agent> {
    load_with_async(path, &LoadOptions::process_default()).await
}

/// Async form of [`crate::load_with`].
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// let opts = prompty::LoadOptions::new().allow_root("/srv/shared");
/// let agent = prompty::load_with_async("prompts/chat.prompty", &opts).await?;
/// # Ok(()) }
/// ```
pub async fn load_with_async(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Agent> {
    let path = path.as_ref().to_path_buf();
    let options = options.clone();
    tokio::task::spawn_blocking(crate::trace::carry_fn(move || load_with(&path, &options)))
        .await
        .map_err(|e| crate::Error::Task(format!("the background load task failed: {e}")))?
}

/// Loads a `.prompty` file ([`prompty_core::load`]) with the process's default options
/// ([`LoadOptions::process_default`], set once at start-up with
/// [`LoadOptions::set_process_default`]), traced as `prompty.load`.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-load-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("greet.prompty"), "---\nname: greet\n---\nuser:\nHi").unwrap();
/// let agent = prompty::load(dir.join("greet.prompty"))?;
/// assert_eq!(agent.name, "greet");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<Agent> {
    load_with(path, &LoadOptions::process_default())
}

/// Loads a `.prompty` file with options ([`prompty_core::load_with`]), traced as `prompty.load`.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-load-with-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("prompts")).unwrap();
/// std::fs::write(dir.join("shared.txt"), "Be brief.").unwrap();
/// std::fs::write(dir.join("prompts/a.prompty"), "---\nname: a\ndescription: ${file:../shared.txt}\n---\nHi").unwrap();
/// let opts = prompty::LoadOptions::new().allow_root(&dir);
/// let agent = prompty::load_with(dir.join("prompts/a.prompty"), &opts)?;
/// assert_eq!(agent.description.as_deref(), Some("Be brief."));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn load_with(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Agent> {
    let path = path.as_ref();
    in_span(
        Stage::new("load", "prompty.load"),
        |_| json!({"path": path.display().to_string()}),
        || Ok(prompty_core::load_with(path, options)?),
        |agent, _| json!(agent),
    )
}

/// The agent as the runtime sends it: `agent` itself, or, when it still holds `${env:}`
/// references ([`Agent::has_env_references`]), a copy with them resolved from the environment
/// now ([`Agent::with_env_resolved`], the resolution `load` applies). A variable that is not set
/// and has no default is an error naming the reference and its field. Every path that sends an
/// agent (`run`, `run_stream`, the agent loop, the typed prompts') goes through here.
pub(crate) fn env_resolved(agent: &Agent) -> Result<Cow<'_, Agent>> {
    if agent.has_env_references() {
        Ok(Cow::Owned(agent.with_env_resolved()?))
    } else {
        Ok(Cow::Borrowed(agent))
    }
}

/// Rebuilds an agent compiled into the binary from its canonical JSON, and resolves its `${env:}`
/// references from the environment now, where their variable is set or they have a default
/// ([`Agent::with_env_resolved_where_set`]); a reference to an unset variable without default stays
/// as written, and sending the agent fails naming it ([`env_resolved`]). The typed modules call it
/// on first use of `agent()`, so the references are resolved when the program runs, never when it
/// is built.
///
/// The JSON was written by `prompty-build` from a successful load, so reading it back cannot fail
/// unless the runtime and the build disagree on the format.
#[doc(hidden)]
pub fn compiled_agent(json: &str, path: &str, base_dir: &str, body_line: usize) -> Agent {
    let value: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    let mut agent = Agent::from_value(value).unwrap_or_else(|e| {
        panic!("prompty: the agent compiled from {path} cannot be read back ({e}); rebuild the crate with the same prompty version")
    });
    agent.source = Some(AgentSource {
        path: path.to_owned(),
        base_dir: base_dir.into(),
        body_line,
        // Compiled into the program, read when it runs: its files (OpenAPI documents, child
        // prompts) are confined as a load without options confines them.
        allowed_roots: LoadOptions::process_default().allowed_roots().to_vec(),
        embedded: Vec::new(),
        text: None,
    });
    if agent.has_env_references() {
        // A resolved value that makes the agent invalid keeps the references: sending the agent
        // then reports that error, from the same resolution.
        if let Ok(resolved) = agent.with_env_resolved_where_set() {
            agent = resolved;
        }
    }
    agent
}

/// The child prompt of a `kind: prompty` tool of a typed prompt, compiled into the binary (a
/// `static` of the generated module).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct CompiledChild {
    /// The tool's `path`, as written in the parent.
    pub tool_path: &'static str,
    /// The child file, as named in messages.
    pub path: &'static str,
    /// The line where its body starts.
    pub body_line: usize,
    /// Its canonical JSON.
    pub json: &'static str,
    /// Its own children.
    pub children: &'static [CompiledChild],
}

fn embedded_prompt(child: &CompiledChild) -> std::sync::Arc<crate::EmbeddedPrompt> {
    std::sync::Arc::new(crate::EmbeddedPrompt {
        tool_path: child.tool_path.to_owned(),
        path: child.path.to_owned(),
        body_line: child.body_line,
        json: child.json.to_owned(),
        embedded: child.children.iter().map(embedded_prompt).collect(),
    })
}

/// [`compiled_agent`] of a prompt with `kind: prompty` tools, whose children are compiled in too:
/// at run time they are read from `children`, never from the build machine's files.
#[doc(hidden)]
pub fn compiled_agent_with_children(
    json: &str,
    path: &str,
    base_dir: &str,
    body_line: usize,
    children: &'static [CompiledChild],
) -> Agent {
    let mut agent = compiled_agent(json, path, base_dir, body_line);
    if let Some(source) = &mut agent.source {
        source.embedded = children.iter().map(embedded_prompt).collect();
    }
    agent
}
