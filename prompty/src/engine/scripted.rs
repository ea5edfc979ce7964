//! Ports for tests, examples and replays: a model that answers from a script, and no tools.

use super::ports::{ModelFailure, ModelPort, ToolContext, ToolPort};
use super::types::{ContextSnapshot, ModelResponse, ToolOutput, ToolRequest};
use crate::{BoxFuture, Error, TurnStop};
use std::sync::Mutex;

/// A model that gives its responses in order, one per invocation (retries included), and fails
/// the turn when they run out. It records what it was invoked with.
///
/// ```
/// use prompty::engine::{ModelResponse, ScriptedModel};
/// let model = ScriptedModel::new(vec![ModelResponse::output(serde_json::json!("hi"))]);
/// assert!(model.invocations().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct ScriptedModel {
    steps: Mutex<std::collections::VecDeque<Result<ModelResponse, String>>>,
    seen: Mutex<Vec<(String, u32)>>,
}

impl ScriptedModel {
    /// A model with these responses.
    ///
    /// ```
    /// let model = prompty::engine::ScriptedModel::new(Vec::new());
    /// # let _ = model;
    /// ```
    pub fn new(responses: Vec<ModelResponse>) -> Self {
        ScriptedModel { steps: Mutex::new(responses.into_iter().map(Ok).collect()), seen: Mutex::default() }
    }

    /// Makes the next invocation (after the responses already queued) fail transiently with
    /// `message`.
    ///
    /// ```
    /// let model = prompty::engine::ScriptedModel::new(Vec::new()).then_fail("503 from the provider");
    /// # let _ = model;
    /// ```
    pub fn then_fail(self, message: impl Into<String>) -> Self {
        self.steps.lock().unwrap_or_else(|p| p.into_inner()).push_back(Err(message.into()));
        self
    }

    /// Queues another response.
    ///
    /// ```
    /// let model = prompty::engine::ScriptedModel::new(Vec::new())
    ///     .then(prompty::engine::ModelResponse::output(serde_json::json!("ok")));
    /// # let _ = model;
    /// ```
    pub fn then(self, response: ModelResponse) -> Self {
        self.steps.lock().unwrap_or_else(|p| p.into_inner()).push_back(Ok(response));
        self
    }

    /// The `(snapshot id, attempt)` of every invocation so far.
    ///
    /// ```
    /// assert!(prompty::engine::ScriptedModel::new(Vec::new()).invocations().is_empty());
    /// ```
    pub fn invocations(&self) -> Vec<(String, u32)> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ModelPort for ScriptedModel {
    fn invoke<'a>(
        &'a self,
        snapshot: &'a ContextSnapshot,
        attempt: u32,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelFailure>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).push((snapshot.id.clone(), attempt));
        let step = self.steps.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        Box::pin(async move {
            match step {
                Some(Ok(response)) => Ok(response),
                Some(Err(message)) => Err(ModelFailure::Transient(Error::Execution { message })),
                None => Err(ModelFailure::Fatal(TurnStop::Failed(Box::new(Error::Execution {
                    message: "the scripted model has no more responses".into(),
                })))),
            }
        })
    }
}

/// No tools: any request ends the turn with [`TurnStop::UnknownTool`]. The engine's default.
///
/// ```
/// use prompty::engine::{NoTools, ToolPort, ToolRequest};
/// assert!(NoTools.check(&[ToolRequest::new("c", "rm", serde_json::json!({}))]).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl ToolPort for NoTools {
    fn check(&self, requests: &[ToolRequest]) -> Result<(), TurnStop> {
        match requests.first() {
            Some(r) => Err(TurnStop::UnknownTool { name: r.name.clone() }),
            None => Ok(()),
        }
    }

    fn execute<'a>(
        &'a self,
        request: &'a ToolRequest,
        _: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        let name = request.name.clone();
        Box::pin(async move { Err(TurnStop::UnknownTool { name }) })
    }
}
