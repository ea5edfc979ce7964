//! Where a tool call runs when an agent loop runs it ([`Scope`]), and how a tool runs a child
//! agent loop without naming the loop: the turn layer, above the tools, hands its runner
//! ([`RunChild`]) down in the scope of every call it makes, and registers the same runner at link
//! time ([`ChildRunner`]) for calls made outside a loop ([`crate::execute_tool`]).

use super::function::Tools;
use crate::{Agent, BoxFuture, Error, Result};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// How deep `kind: prompty` tools with `mode: agentic` may nest turns (a child prompt's tool that
/// runs its own child, ...). A call beyond it fails, and the model reads why.
///
/// ```
/// assert_eq!(prompty::MAX_AGENT_DEPTH, 4);
/// ```
pub const MAX_AGENT_DEPTH: usize = 4;

/// What a child agent loop inherits from the call that starts it.
pub(crate) struct ChildTurn {
    /// The tool functions handed to the parent's call (they still apply in the child).
    pub(crate) tools: Tools,
    /// The child loop's nesting depth (the parent's plus one).
    pub(crate) depth: usize,
    /// The parent's cancellation, which the child runs under.
    pub(crate) cancel: Option<CancellationToken>,
}

/// Runs `agent`'s own agent loop on `inputs` and returns its answer.
pub(crate) type RunChild = fn(Agent, Value, ChildTurn) -> BoxFuture<'static, Result<Value>>;

/// Where a tool call runs: inside an agent loop this deep, with its cancellation token and the
/// runner of child loops.
pub(crate) struct Scope {
    /// The loop's nesting depth (0 for a top-level turn).
    pub(crate) depth: usize,
    /// The loop's cancellation.
    pub(crate) cancel: Option<CancellationToken>,
    /// The runner of a child loop (a `kind: prompty` tool in `mode: agentic`).
    pub(crate) run_child: RunChild,
}

/// The runner of child agent loops, registered at link time by the layer that owns the loop.
pub(crate) struct ChildRunner(pub(crate) RunChild);

inventory::collect!(ChildRunner);

/// Runs a child agent loop: with the runner of the scope the call runs in, else with the one
/// registered at link time.
pub(crate) fn run_child(
    scope: Option<&Scope>,
    agent: Agent,
    inputs: Value,
    child: ChildTurn,
) -> BoxFuture<'static, Result<Value>> {
    let run = scope.map(|s| s.run_child).or_else(|| inventory::iter::<ChildRunner>.into_iter().next().map(|r| r.0));
    match run {
        Some(run) => run(agent, inputs, child),
        None => Box::pin(async {
            Err(Error::Execution { message: "no agent loop is linked in to run the child prompt".into() })
        }),
    }
}
