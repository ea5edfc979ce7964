//! What a tool call knows ([`ToolContext`]): the agent, its inputs, the per-call tool functions,
//! and, inside an agent loop, the loop's [`Scope`] (nesting depth, cancellation, the runner of a
//! child loop). It lives with the tool functions because [`super::ToolFunction::call_in`] takes it
//! and it carries a [`super::Tools`].

use super::Tools;
use crate::tools::scope::Scope;
use crate::{Agent, ContentPart};
use serde_json::{Map, Value};

/// The most content parts one tool call may attach to its result ([`ToolContext::attach`]).
pub const MAX_ATTACHMENTS: usize = 32;

/// What a tool handler knows about the call: the agent that declared the tool, the inputs it was
/// prepared with (binding sources), and the per-call tool functions.
///
/// ```
/// let agent = prompty::Agent::default();
/// let inputs = serde_json::Map::new();
/// let tools = prompty::Tools::new();
/// let ctx = prompty::ToolContext::new(&agent, &inputs, &tools);
/// assert!(ctx.tools.is_empty());
/// ```
#[derive(Clone, Copy)]
pub struct ToolContext<'a> {
    /// The agent whose model called the tool.
    pub agent: &'a Agent,
    /// The agent's (validated) inputs.
    pub inputs: &'a Map<String, Value>,
    /// Tool functions handed to this call.
    pub tools: &'a Tools,
    /// The name the model called: the tool's name, or for the tools of an MCP server or an
    /// OpenAPI document, the wire name of one of them (`fs__read_file`). Empty when unknown.
    pub function: &'a str,
    /// The agent loop the call runs in, when it runs in one (nesting depth, cancellation).
    pub(crate) scope: Option<&'a Scope>,
    /// Where content parts a tool attaches to its result go.
    pub(crate) attachments: Option<&'a std::sync::Mutex<Vec<ContentPart>>>,
}

impl<'a> ToolContext<'a> {
    /// A context.
    pub fn new(agent: &'a Agent, inputs: &'a Map<String, Value>, tools: &'a Tools) -> Self {
        ToolContext { agent, inputs, tools, function: "", scope: None, attachments: None }
    }

    /// The same context for a call of `function` (see [`ToolContext::function`]).
    ///
    /// ```
    /// let (agent, inputs, tools) = (prompty::Agent::default(), serde_json::Map::new(), prompty::Tools::new());
    /// let ctx = prompty::ToolContext::new(&agent, &inputs, &tools).with_function("fs__read_file");
    /// assert_eq!(ctx.function, "fs__read_file");
    /// ```
    pub fn with_function(mut self, function: &'a str) -> Self {
        self.function = function;
        self
    }

    /// Attaches a content part (an image a tool produced) to the call's result: the agent loop
    /// sends it to the model with the result's text. Outside the loop it is dropped, and so is
    /// every part beyond [`MAX_ATTACHMENTS`] of one call.
    ///
    /// ```
    /// let (agent, inputs, tools) = (prompty::Agent::default(), serde_json::Map::new(), prompty::Tools::new());
    /// let ctx = prompty::ToolContext::new(&agent, &inputs, &tools);
    /// ctx.attach(prompty::ContentPart::Text { value: "dropped".into() });
    /// ```
    pub fn attach(&self, part: ContentPart) {
        if let Some(sink) = self.attachments {
            let mut parts = sink.lock().unwrap_or_else(|e| e.into_inner());
            if parts.len() < MAX_ATTACHMENTS {
                parts.push(part);
            }
        }
    }
}
