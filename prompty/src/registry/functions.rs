//! The functions a model is offered: [`FunctionDefinition`], and how a provider's request builder
//! reaches the tool layer's projection without importing it ([`declared_functions`]).
//!
//! The tool layer sits above the providers (a tool may run a prompt, which calls a provider), so
//! the providers cannot name it. It registers its projection here at link time
//! ([`FunctionProjection`]), the way executors and processors are registered, and a request
//! builder asks for the agent's functions through [`declared_functions`].

use crate::{Agent, Result};
use serde::Serialize;
use serde_json::Value;

/// A function as the model sees it: name, description, JSON Schema of the parameters, strictness.
///
/// ```
/// let f = prompty::FunctionDefinition {
///     name: "get_weather".into(), description: None,
///     parameters: serde_json::json!({"type": "object", "properties": {}}), strict: false };
/// assert_eq!(f.name, "get_weather");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDefinition {
    /// The function's name.
    pub name: String,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the parameters (an object schema).
    pub parameters: Value,
    /// Whether the provider should enforce the schema strictly.
    pub strict: bool,
}

/// The projection of an agent's declared tools into function definitions, registered once by the
/// tool layer: every declared tool (`prompty::project_tools`, an error for a kind nothing
/// projects), and the tools whose kind has a projection (the others left out, spec §7.5).
pub(crate) struct FunctionProjection {
    pub every: fn(&Agent) -> Result<Vec<FunctionDefinition>>,
    pub projectable: fn(&Agent) -> Result<Vec<FunctionDefinition>>,
}

/// What [`declared_functions`] does with a tool whose kind nothing projects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unprojectable {
    /// The request fails, naming the kind.
    Fail,
    /// The tool is left out of the request.
    Skip,
}

inventory::collect!(FunctionProjection);

/// The function definitions of the tools `agent` declares, through the registered projection; none
/// when the agent declares no tools.
pub(crate) fn declared_functions(agent: &Agent, unprojectable: Unprojectable) -> Result<Vec<FunctionDefinition>> {
    if agent.tools.as_deref().is_none_or(<[_]>::is_empty) {
        return Ok(Vec::new());
    }
    match inventory::iter::<FunctionProjection>.into_iter().next() {
        Some(p) if unprojectable == Unprojectable::Fail => (p.every)(agent),
        Some(p) => (p.projectable)(agent),
        None => Err(crate::Error::Execution {
            message: "the tool layer registered no projection of declared tools: this build links no tools module"
                .into(),
        }),
    }
}
