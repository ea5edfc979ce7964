//! The ports of a prompt's turn: what [`crate::engine::TurnEngine`] is given to run the agent loop
//! of a `.prompty` file.
//!
//! - [`PromptModel`] (the model): the prompt's executor and processor, whole or streamed; the
//!   remote tool lists loaded before each invocation (a source that fails left out of the turn,
//!   with an `error` event, unless it is `required`; unoffered names with a `warning` event); a forced tool choice relaxed after the first
//!   tool round; the output guardrail; retryable failures told from the others, with the HTTP
//!   layer's request budget shared by the attempts of one invocation; the raw response kept in the
//!   response's metadata, from which the executor formats the tool round (also after a resume in
//!   another process).
//! - [`PromptTools`] (the tools): the unknown-tool and tool-count checks, argument parsing,
//!   bindings, execution through the tool kinds, result bounding, attachments.
//! - [`PromptPermissions`] (permissions): refusals of undeclared and withheld tools, approval
//!   without an approver, the tool guardrail.
//! - [`PromptContext`] (a context transform): steering, the context budget, the input guardrail.
//!
//! They share one [`Shared`]: the prompt, the inputs, the options, the event emitter, and what one
//! run of the engine learns as it goes (the iteration's trace span, the request budget, the held
//! back chunks of a streamed answer, the conversation the `messages_updated` events carry).

use super::context;
use super::events::{AgentEvent, Emitter};
use super::options::{TurnOptions, Verdict};
use super::TurnOutput;
use crate::engine::{
    ContextDecision, ContextDraft, ContextSnapshot, ContextTransform, Disposition, EngineEvent, EventKind,
    ModelFailure, ModelPort, ModelResponse, PermissionDecision, PermissionPort, ToolOutcome, ToolOutput, ToolPort,
    ToolRequest,
};
use crate::http::RequestBudget;
use crate::support::panic_text;
use crate::tools::args::parse_arguments;
use crate::tools::catalog::dispatch::{load_remote_tools, resolve_call, run_tool};
use crate::tools::handlers::inject_bindings;
use crate::tools::kind::ResolvedCall;
use crate::tools::scope::Scope;
use crate::trace::{genai, in_span_async, within, OpenSpan, SpanPlace, Stage};
use crate::{
    Agent, BoxFuture, ContentPart, Error, Executor, Message, Processed, Processor, Result, Role, StreamChunk, ToolCall,
    ToolChoice, ToolResult, ToolRound, TurnStop,
};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Where a tool-calling response keeps its raw provider response ([`ModelResponse::metadata`]).
const RAW: &str = "raw";
/// Where a streamed tool-calling response keeps the text the model wrote beside its calls.
const TEXT: &str = "text";
/// Where a tool result keeps the content parts its tool attached ([`ToolOutput::metadata`]).
const PARTS: &str = "parts";

/// What the ports of one prompt's turn share.
pub(super) struct Shared {
    /// The prompt (its `${env:}` references resolved, the handed functions it does not declare
    /// added to its tools).
    pub(super) agent: Agent,
    /// The agent with [`TurnOptions::after_forced_tool`] as its tool choice, used after the first
    /// tool round when the prompt forces a tool call; made when first needed.
    relaxed: OnceLock<Agent>,
    /// The inputs tool parameters are bound from.
    inputs: Map<String, Value>,
    pub(super) options: TurnOptions,
    executor: Arc<dyn Executor>,
    processor: Arc<dyn Processor>,
    pub(super) emitter: Emitter,
    scope: Scope,
    /// Whether the model is called streamed.
    streamed: bool,
    state: Mutex<State>,
}

/// What one run of the engine learns as it goes.
#[derive(Default)]
struct State {
    /// The request budget of the invocation in progress, and its snapshot's id: its attempts and
    /// the HTTP layer's retries share it.
    budget: Option<(String, RequestBudget)>,
    /// The trace span of the iteration in progress (`turn N`): its model call and its tools.
    iteration: Option<OpenSpan>,
    /// A model invocation got past its remote tool lists and has not answered: the iterations a
    /// failure reports count it.
    in_flight: bool,
    /// The final answer's chunks, held back until the turn commits.
    held: Vec<StreamChunk>,
    /// The conversation the engine holds, for `messages_updated` (kept only when events go
    /// somewhere).
    conversation: Vec<Message>,
    /// Whether a response of this run has asked for tools (`Starting agent loop` said).
    looping: bool,
    /// The declarations whose source (MCP server, OpenAPI document) failed in this run: left out
    /// of its requests, not tried again before the next turn.
    left_out: Vec<String>,
}

impl Shared {
    pub(super) fn new(agent: Agent, inputs: Map<String, Value>, options: TurnOptions, streamed: bool) -> Result<Self> {
        let provider = crate::invoke::provider(&agent)?;
        let (executor, processor) = (crate::get_executor(provider)?, crate::get_processor(provider)?);
        let emitter = Emitter::new(options.on_event.clone(), options.events.clone());
        let scope = Scope { depth: options.depth, cancel: options.cancel.clone(), run_child: super::run_child_turn };
        Ok(Shared {
            agent,
            relaxed: OnceLock::new(),
            inputs,
            options,
            executor,
            processor,
            emitter,
            scope,
            streamed,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned one still holds whole values.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The agent invocation `iteration` (from 0) is made with: the prompt's, or once a tool round
    /// has happened (every iteration before this one was one) and the prompt forces a tool call,
    /// its copy with [`TurnOptions::after_forced_tool`], so the model can then answer.
    fn model_agent(&self, iteration: u32) -> &Agent {
        let forced = self.agent.model.as_ref().and_then(|m| m.options.as_ref()).and_then(|o| o.tool_choice.as_ref());
        if iteration == 0 || !matches!(forced, Some(ToolChoice::Required | ToolChoice::Tool(_))) {
            return &self.agent;
        }
        self.relaxed.get_or_init(|| {
            let mut agent = self.agent.clone();
            if let Some(o) = agent.model.as_mut().and_then(|m| m.options.as_mut()) {
                o.tool_choice = Some(self.options.after_forced_tool.clone());
            }
            agent
        })
    }

    /// The agent request `iteration` is built with: [`Shared::model_agent`], without the
    /// declarations whose source failed in this run (a copy only when some did).
    fn request_agent(&self, iteration: u32) -> Cow<'_, Agent> {
        let agent = self.model_agent(iteration);
        let left_out = self.lock().left_out.clone();
        if left_out.is_empty() {
            return Cow::Borrowed(agent);
        }
        let mut agent = agent.clone();
        if let Some(tools) = agent.tools.as_mut() {
            tools.retain(|t| !left_out.contains(&t.name));
        }
        Cow::Owned(agent)
    }

    fn status(&self, message: impl FnOnce() -> String) {
        self.emitter.emit(|| AgentEvent::Status { message: message() });
    }

    /// Where the work of the iteration in progress runs (its trace span), if it has one.
    fn iteration_place(&self) -> Option<SpanPlace> {
        self.lock().iteration.as_ref().map(OpenSpan::place)
    }

    /// Ends the iteration's span with `out`, if one is open.
    pub(super) fn end_iteration<T>(&self, out: &Result<T>, result: impl FnOnce(&T, &mut Map<String, Value>) -> Value) {
        let span = self.lock().iteration.take();
        if let Some(span) = span {
            span.finish(out, result);
        }
    }

    /// Whether a model invocation was under way when the turn stopped.
    pub(super) fn in_flight(&self) -> bool {
        self.lock().in_flight
    }

    /// The held-back chunks of the final answer.
    pub(super) fn take_held(&self) -> Vec<StreamChunk> {
        std::mem::take(&mut self.lock().held)
    }

    /// The conversation a resumed turn starts from (for its `messages_updated` events).
    pub(super) fn seed_conversation(&self, messages: Vec<Message>) {
        self.lock().conversation = messages;
    }

    /// The `AgentEvent`s the engine's events make: `Starting agent loop` when a response first asks
    /// for tools, a `status` before each retry of a model call, `messages_updated` once a tool
    /// round is part of the conversation. (The ports emit the rest as they act.)
    pub(super) fn observe(&self, event: &EngineEvent) {
        match event.kind {
            EventKind::ModelInvocationCompleted => {
                let asks = event.payload["toolRequests"].as_array().is_some_and(|r| !r.is_empty());
                if asks && !std::mem::replace(&mut self.lock().looping, true) {
                    self.status(|| "Starting agent loop".to_owned());
                }
            }
            EventKind::ModelInvocationFailed if event.payload["retry"] == true => self.status(|| {
                let p = &event.payload;
                let retry = p["attempt"].as_u64().unwrap_or(0) + 1;
                let wait = p["retryInMs"].as_u64().unwrap_or(0) as f64 / 1000.0;
                let error = p["error"].as_str().unwrap_or_default();
                format!("The model call failed ({error}); retry {retry} of {} in {wait:.1} s", self.options.llm_retries)
            }),
            EventKind::ConversationUpdated if event.payload["reason"] == "tool_results" => {
                self.emitter.emit(|| AgentEvent::MessagesUpdated { messages: self.lock().conversation.clone() });
            }
            _ => {}
        }
    }

    /// Ends a failed turn's open iteration span with its error, and gives the error.
    pub(super) fn failed(&self, e: Error) -> Result<TurnOutput> {
        let out = Err(e);
        self.end_iteration(&out, |_, _| Value::Null);
        out
    }
}

/// A guardrail's verdict; a guardrail that panics denies.
fn verdict(check: impl FnOnce() -> Verdict) -> Verdict {
    catch_unwind(AssertUnwindSafe(check))
        .unwrap_or_else(|payload| Verdict::Deny(format!("the guardrail panicked: {}", panic_text(payload.as_ref()))))
}

/// Whether a failed model call may succeed when tried again: no response, 429, 5xx, or an
/// executor's own error; never another 4xx.
fn retryable(e: &Error) -> bool {
    match e {
        Error::Http(f) => match f.status {
            None => true,
            Some(s) => s == 429 || s >= 500,
        },
        Error::Execution { .. } | Error::Task(_) => true,
        _ => false,
    }
}

/// A tool result of at most `limit` bytes: a longer one is cut at a character boundary and says so.
fn bounded(mut text: String, limit: usize) -> String {
    let total = text.len();
    if prompty_core::text::truncate(&mut text, limit).is_some() {
        text.push_str(&format!("… [cut: {total} bytes, limit {limit}]"));
    }
    text
}

/// What a tool's error says, without repeating `Tool 'x' failed`.
fn error_text(e: Error) -> String {
    match e {
        Error::Tool { message, .. } => message,
        other => other.to_string(),
    }
}

/// The call a tool request stands for (its arguments as the model wrote them).
fn call_of(request: &ToolRequest) -> ToolCall {
    let arguments = match &request.arguments {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    ToolCall::new(&request.id, &request.name, arguments)
}

/// The result the provider formats, from the one the engine committed (its attachments included).
fn result_of(output: &ToolOutput) -> ToolResult {
    let mut result = if output.outcome == ToolOutcome::Success {
        ToolResult::ok(&output.request_id, &output.name, output.text())
    } else {
        ToolResult::error(&output.request_id, &output.name, output.text())
    };
    if let Some(parts) = output.metadata.get(PARTS) {
        result.parts = serde_json::from_value(parts.clone()).unwrap_or_default();
    }
    result
}

/// The model: the prompt's executor and processor.
pub(super) struct PromptModel(pub(super) Arc<Shared>);

impl PromptModel {
    /// One attempt: the call, processed; or why it failed.
    async fn attempt(
        &self,
        snapshot: &ContextSnapshot,
        attempt: u32,
    ) -> std::result::Result<ModelResponse, ModelFailure> {
        let s = &self.0;
        let budget = {
            let mut state = s.lock();
            match &state.budget {
                Some((id, budget)) if *id == snapshot.id && attempt > 0 => budget.clone(),
                _ => {
                    // The requests one invocation may send in all, the HTTP layer's retries
                    // included: `1 + llm_retries`.
                    let budget = RequestBudget::new(s.options.llm_retries.saturating_add(1));
                    state.budget = Some((snapshot.id.clone(), budget.clone()));
                    budget
                }
            }
        };
        let agent = s.request_agent(snapshot.iteration);
        let agent = agent.as_ref();
        let (processed, raw, text, chunks) = if s.streamed {
            let stage = Stage::client("stream", "prompty.stream");
            let model = agent.model.clone();
            let count = snapshot.messages.len();
            let mut began = false;
            let streamed = in_span_async(
                stage,
                |attributes: &mut crate::trace::Attributes| {
                    genai::request_of(model.as_ref(), attributes);
                    json!({"messages": count})
                },
                self.streamed(agent, &snapshot.messages, &budget, &mut began),
                |(processed, _, text, _), _| json!({"result": processed.to_value(), "text": text}),
            );
            match streamed.await {
                Ok((processed, raw, text, chunks)) => (processed, raw, Some(text), chunks),
                // A stream that failed after it began is never retried.
                Err(e) if began => return Err(fatal(e, attempt)),
                Err(e) => return Err(self.failure(e, attempt, &budget)),
            }
        } else {
            let stage = Stage::client("execute", "prompty.execute");
            let recorded = genai::execute_inputs(agent, &snapshot.messages);
            let execute = s.executor.execute_async(agent, &snapshot.messages);
            let execute = in_span_async(stage, recorded, execute, genai::execute_result);
            let raw = match budget.scope(execute).await {
                Ok(raw) => raw,
                Err(e) => return Err(self.failure(e, attempt, &budget)),
            };
            let process = s.processor.process_async(agent, raw.clone());
            let stage = Stage::new("process", "prompty.process");
            let provider = agent.model.as_ref().and_then(|m| m.provider.clone());
            let process = in_span_async(stage, |_| json!({"provider": provider}), process, |r, _| r.to_value());
            match process.await {
                Ok(processed) => (processed, Some(raw), None, Vec::new()),
                Err(e) => return Err(fatal(e, attempt)),
            }
        };
        self.response(snapshot, processed, raw, text, chunks)
    }

    /// A failed attempt: retried (the engine waits and tries again) when the error is transient
    /// and the request budget has some left; otherwise the end of the turn.
    fn failure(&self, e: Error, attempt: u32, budget: &RequestBudget) -> ModelFailure {
        if retryable(&e) && budget.remaining() > 0 {
            ModelFailure::Transient(e)
        } else {
            fatal(e, attempt)
        }
    }

    /// One streamed call: every chunk held back until the response is known to be the final
    /// answer; tool calls arrive whole. Gives what the processor made of it, the raw response the
    /// executor rebuilds for a tool round, the text, and the chunks. `began` says whether the
    /// stream had started when it failed.
    async fn streamed(
        &self,
        agent: &Agent,
        messages: &[Message],
        budget: &RequestBudget,
        began: &mut bool,
    ) -> Result<(Processed, Option<Value>, String, Vec<StreamChunk>)> {
        let s = &self.0;
        let events = budget.scope(s.executor.execute_stream(agent, messages)).await?;
        *began = true;
        // The raw events, kept so that the executor can rebuild the whole response of a tool round.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let events: crate::RawStream = Box::pin(events.inspect(move |e| {
            if let crate::RawEvent::Data(v) = e {
                log.lock().unwrap_or_else(|p| p.into_inner()).push(v.clone());
            }
        }));
        let mut stream = s.processor.process_stream(agent, events);
        let (mut text, mut calls, mut chunks) = (String::new(), Vec::new(), Vec::new());
        while let Some(chunk) = stream.next().await {
            match chunk {
                StreamChunk::ToolCall(call) => calls.push(call),
                StreamChunk::Failure(f) => return Err(Error::Execution { message: f.message }),
                chunk => {
                    if let StreamChunk::Text(t) = &chunk {
                        text.push_str(t);
                    }
                    chunks.push(chunk);
                }
            }
        }
        drop(stream);
        if calls.is_empty() {
            let answer = crate::providers::common::structured(&s.agent, text.clone());
            return Ok((Processed::Answer(answer), None, text, chunks));
        }
        let events = std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()));
        let raw = s.executor.assemble_stream(&s.agent, &events);
        Ok((Processed::ToolCalls(calls), raw, text, chunks))
    }

    /// A processed response: checked by the output guardrail (which reads its JSON form, spec §8.1:
    /// tool calls as a list of `{id, name, arguments}`), then tool requests (ids filled in where
    /// the provider gave none) or the final answer.
    fn response(
        &self,
        snapshot: &ContextSnapshot,
        processed: Processed,
        raw: Option<Value>,
        text: Option<String>,
        chunks: Vec<StreamChunk>,
    ) -> std::result::Result<ModelResponse, ModelFailure> {
        let s = &self.0;
        if let Some(guard) = &s.options.guardrails.output {
            if let Verdict::Deny(reason) = verdict(|| guard(&processed.to_value())) {
                return Err(ModelFailure::Fatal(TurnStop::Guardrail { stage: "output", reason }));
            }
        }
        let mut state = s.lock();
        state.in_flight = false;
        match processed {
            // An empty list of calls is no request for tools: a final answer (`[]`).
            Processed::ToolCalls(calls) if !calls.is_empty() => {
                let n = snapshot.iteration + 1;
                let requests = calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, call)| {
                        let id = if call.id.is_empty() { format!("call_{n}_{i}") } else { call.id };
                        ToolRequest::new(id, call.name, Value::String(call.arguments))
                    })
                    .collect();
                let mut response = ModelResponse::tools(requests);
                if let Some(raw) = raw {
                    response.metadata.insert(RAW.into(), raw);
                }
                if let Some(text) = text {
                    response.metadata.insert(TEXT.into(), Value::String(text));
                }
                Ok(response)
            }
            answer => {
                let output = answer.into_value();
                state.held = chunks;
                let span = state.iteration.take();
                drop(state);
                if let Some(span) = span {
                    span.finish(&Ok(&output), |v, _| (*v).clone());
                }
                let text = match &output {
                    Value::String(t) => t.clone(),
                    other => other.to_string(),
                };
                let mut response = ModelResponse::output(output);
                response.assistant_messages = vec![Message::new(Role::Assistant, text)];
                Ok(response)
            }
        }
    }
}

/// The end of the turn for a failed model call.
fn fatal(e: Error, attempt: u32) -> ModelFailure {
    ModelFailure::Fatal(TurnStop::Model { source: Box::new(e), attempts: attempt + 1 })
}

impl ModelPort for PromptModel {
    fn invoke<'a>(
        &'a self,
        snapshot: &'a ContextSnapshot,
        attempt: u32,
    ) -> BoxFuture<'a, std::result::Result<ModelResponse, ModelFailure>> {
        Box::pin(async move {
            let s = &self.0;
            if attempt == 0 {
                // The tool lists of MCP servers and OpenAPI documents, before the request is built:
                // a source that fails is left out of this turn (unless `required`), and said.
                let skip = s.lock().left_out.clone();
                match load_remote_tools(&s.agent, &skip).await {
                    Ok((left_out, warnings)) => {
                        s.lock().left_out.extend(left_out);
                        for w in warnings {
                            let (message, tool) = (w.message, Some(w.tool));
                            if w.failed {
                                s.emitter.emit(|| AgentEvent::Error { message, tool });
                            } else {
                                s.emitter.emit(|| AgentEvent::Warning { message, tool });
                            }
                        }
                    }
                    Err(e) => return Err(ModelFailure::Fatal(TurnStop::Failed(Box::new(e)))),
                }
                let n = snapshot.iteration + 1;
                let span =
                    OpenSpan::start(Stage::new(format!("turn {n}"), "prompty.turn"), |_| json!({"iteration": n}));
                let mut state = s.lock();
                state.in_flight = true;
                if let Some(previous) = std::mem::replace(&mut state.iteration, span) {
                    drop(state);
                    previous.finish(&Ok(()), |_, _| Value::Null);
                    state = s.lock();
                }
                if s.emitter.is_active() {
                    state.conversation.clone_from(&snapshot.messages);
                }
            }
            let place = s.iteration_place();
            within(place, self.attempt(snapshot, attempt)).await
        })
    }

    /// The round's messages as the prompt's executor writes them (from the raw response kept in
    /// the checkpoint); the iteration ends with them.
    fn tool_messages(&self, response: &ModelResponse, results: &[ToolOutput]) -> Result<Vec<Message>> {
        let s = &self.0;
        let calls: Vec<ToolCall> = response.tool_requests.iter().map(call_of).collect();
        let results: Vec<ToolResult> = results.iter().map(result_of).collect();
        let round = ToolRound {
            response: response.metadata.get(RAW),
            text: response.metadata.get(TEXT).and_then(Value::as_str),
            calls: &calls,
            results: &results,
        };
        let messages = s.executor.format_tool_messages(&s.agent, &round)?;
        if s.emitter.is_active() {
            s.lock().conversation.extend(messages.iter().cloned());
        }
        s.end_iteration(&Ok(()), |_, _| json!("tool calls"));
        Ok(messages)
    }
}

/// The tools: the prompt's declared tools, the functions handed to the turn, the registered ones.
pub(super) struct PromptTools(pub(super) Arc<Shared>);

impl PromptTools {
    /// The result of a call that failed: `Error: Tool '<name>' failed: <message>`, with an `error`
    /// event and a `tool_result` event.
    fn failed(&self, call: &ToolCall, kind: &str, message: &str) -> ToolOutput {
        let text = format!("Error: Tool '{}' failed: {message}", call.name);
        let emitter = &self.0.emitter;
        emitter.emit(|| AgentEvent::Error { message: text.clone(), tool: Some(call.name.clone()) });
        let output = ToolOutput::failed(&call.id, &call.name, kind, text);
        result_event(emitter, &output);
        output
    }
}

fn result_event(emitter: &Emitter, output: &ToolOutput) {
    emitter.emit(|| AgentEvent::ToolResult {
        id: output.request_id.clone(),
        name: output.name.clone(),
        result: output.text(),
        is_error: output.outcome != ToolOutcome::Success,
    });
}

impl ToolPort for PromptTools {
    /// More calls than [`TurnOptions::max_tool_calls`], or a name nobody declared, handed or
    /// registered, end the turn before any call runs. (A registered function the prompt does not
    /// declare is refused call by call: [`PromptPermissions`].)
    fn check(&self, requests: &[ToolRequest]) -> std::result::Result<(), TurnStop> {
        let s = &self.0;
        if requests.len() > s.options.max_tool_calls {
            let message = format!(
                "the model asked for {} tool calls in one response; the turn allows {} (TurnOptions::max_tool_calls)",
                requests.len(),
                s.options.max_tool_calls
            );
            return Err(TurnStop::Failed(Box::new(Error::Execution { message })));
        }
        for request in requests {
            let call = call_of(request);
            let r = resolve_call(&s.agent, &call);
            if r.tool().is_none()
                && s.options.tools.get(r.wire_name()).is_none()
                && crate::get_tool(r.wire_name()).is_none()
                && r.withheld().is_none()
            {
                return Err(TurnStop::UnknownTool { name: r.wire_name().to_owned() });
            }
        }
        Ok(())
    }

    /// Argument parsing, bindings, execution through the tool's kind (in a `prompty.tool` span of
    /// the iteration), the result bounded; a failure the model can react to is a result, a missing
    /// handler ends the turn.
    fn execute<'a>(
        &'a self,
        request: &'a ToolRequest,
        _: crate::engine::ToolContext<'a>,
    ) -> BoxFuture<'a, std::result::Result<ToolOutput, TurnStop>> {
        let place = self.0.iteration_place();
        Box::pin(within(place, async move {
            let s = &self.0;
            let call = call_of(request);
            let resolved = resolve_call(&s.agent, &call);
            let mut args = match parse_arguments(&call.arguments) {
                Ok(args) => args,
                Err(message) => return Ok(self.failed(&call, "invalid_arguments", &message)),
            };
            if let Some(tool) = resolved.tool() {
                inject_bindings(tool, &mut args, &s.inputs);
            }
            let attachments = Mutex::new(Vec::new());
            let ctx = crate::ToolContext {
                agent: &s.agent,
                inputs: &s.inputs,
                tools: &s.options.tools,
                function: &call.name,
                scope: Some(&s.scope),
                attachments: Some(&attachments),
            };
            let stage = Stage::new(call.name.clone(), "prompty.tool");
            let recorded = |a: &mut crate::trace::Attributes| {
                genai::tool(&call.name, &call.id, a);
                json!({"id": call.id, "name": call.name, "arguments": call.arguments})
            };
            let output = match in_span_async(stage, recorded, run_tool(&resolved, args, ctx), |v, _| v.clone()).await {
                Ok(value) => {
                    let text = bounded(crate::engine::model_text(&value), s.options.max_tool_result_bytes);
                    let mut output = ToolOutput::success(&call.id, &call.name, Value::String(text));
                    let parts: Vec<ContentPart> = attachments.into_inner().unwrap_or_else(|e| e.into_inner());
                    if !parts.is_empty() {
                        output.metadata.insert(PARTS.into(), json!(parts));
                    }
                    output
                }
                Err(e @ Error::NoToolHandler { .. }) => return Err(TurnStop::NoHandler(Box::new(e))),
                Err(e) => return Ok(self.failed(&call, "exception", &error_text(e))),
            };
            result_event(&s.emitter, &output);
            Ok(output)
        }))
    }

    /// Handed with [`TurnOptions::idempotent`], or a tool function that says so
    /// (`#[prompty::tool(idempotent)]`): the handed function of that name, else the registered one.
    fn idempotent(&self, name: &str) -> bool {
        let s = &self.0;
        s.options.idempotent.contains(name)
            || match s.options.tools.get(name) {
                Some(f) => f.idempotent(),
                None => crate::get_tool(name).is_some_and(|f| f.idempotent()),
            }
    }
}

/// Permissions: whether a call may run, decided before it runs. A refusal is the call's result,
/// which the model reads.
pub(super) struct PromptPermissions(pub(super) Arc<Shared>);

impl PromptPermissions {
    /// A `tool_call_start` event, then the decision: a registered function the prompt does not
    /// declare, or a server tool `allowedTools` leaves out, is refused; a tool that needs
    /// approval is refused without a tool guardrail to approve it; then the tool guardrail reads
    /// the arguments (bindings injected). Arguments that are not JSON are left to the tool port,
    /// which makes them the call's failure.
    fn decide(&self, request: &ToolRequest) -> PermissionDecision {
        let s = &self.0;
        let call = call_of(request);
        s.emitter.emit(|| AgentEvent::ToolCallStart {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let resolved: ResolvedCall<'_> = resolve_call(&s.agent, &call);
        let decl = resolved.tool();
        if decl.is_none() && s.options.tools.get(&call.name).is_none() {
            let text = match resolved.withheld() {
                Some(reason) => format!("Error: {reason}"),
                None => format!("Error: {}", Error::ToolNotDeclared { name: call.name.clone() }),
            };
            return self.refused(&call, text, true);
        }
        let Ok(mut args) = parse_arguments(&call.arguments) else { return PermissionDecision::allow() };
        if let Some(tool) = decl {
            inject_bindings(tool, &mut args, &s.inputs);
            if let (Some(reason), None) = (resolved.needs_approval(), &s.options.guardrails.tool) {
                let text = format!(
                    "Tool denied: {reason}, and no approver is registered (a tool guardrail in TurnOptions::guardrails)"
                );
                return self.refused(&call, text, true);
            }
        }
        if let Some(guard) = &s.options.guardrails.tool {
            if let Verdict::Deny(reason) = verdict(|| guard(&call, &args)) {
                return self.refused(&call, format!("Tool denied by guardrail: {reason}"), false);
            }
        }
        PermissionDecision::allow()
    }

    /// A refusal: its `error` event (`error`: for a refusal that is the prompt's or the host's
    /// configuration, not the guardrail's decision) and `tool_result` event.
    fn refused(&self, call: &ToolCall, text: String, error: bool) -> PermissionDecision {
        let emitter = &self.0.emitter;
        if error {
            emitter.emit(|| AgentEvent::Error { message: text.clone(), tool: Some(call.name.clone()) });
        }
        emitter.emit(|| AgentEvent::ToolResult {
            id: call.id.clone(),
            name: call.name.clone(),
            result: text.clone(),
            is_error: true,
        });
        PermissionDecision::deny(text)
    }
}

impl PermissionPort for PromptPermissions {
    fn resolve<'a>(&'a self, request: &'a ToolRequest) -> BoxFuture<'a, PermissionDecision> {
        let decision = self.decide(request);
        Box::pin(std::future::ready(decision))
    }
}

/// Before every model call: steering messages appended, the conversation trimmed to the context
/// budget, the input guardrail.
pub(super) struct PromptContext(pub(super) Arc<Shared>);

impl ContextTransform for PromptContext {
    fn transform(&self, draft: &mut ContextDraft<'_>) -> std::result::Result<(), TurnStop> {
        let s = &self.0;
        if let Some(steering) = &s.options.steering {
            let pending = steering.drain();
            if !pending.is_empty() {
                s.status(|| "Injecting steering message".to_owned());
                for (k, text) in pending.into_iter().enumerate() {
                    let id = format!("steering-{}-{k}", draft.iteration);
                    draft.decisions.push(ContextDecision::new(id, Disposition::Included, "steering message"));
                    draft.messages.push(Message::new(Role::User, text));
                }
                s.emitter.emit(|| AgentEvent::MessagesUpdated { messages: draft.messages.clone() });
            }
        }
        if let Some(budget) = &s.options.context_budget {
            let dropped = context::trim(draft.messages, budget);
            if dropped > 0 {
                let reason = format!(
                    "{dropped} earlier messages over the context budget of {} characters, replaced by a summary",
                    budget.chars
                );
                let id = format!("trimmed-{}", draft.iteration);
                draft.decisions.push(ContextDecision::new(id, Disposition::Excluded, reason));
                s.emitter.emit(|| AgentEvent::ContextTrimmed { dropped });
                s.emitter.emit(|| AgentEvent::MessagesUpdated { messages: draft.messages.clone() });
            }
        }
        if let Some(guard) = &s.options.guardrails.input {
            let messages: &[Message] = draft.messages;
            if let Verdict::Deny(reason) = verdict(|| guard(messages)) {
                return Err(TurnStop::Guardrail { stage: "input", reason });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the loop hands its output guardrail and its trace: the JSON form of spec §8.1.
    #[test]
    fn processed_results_have_the_json_form_of_the_spec() {
        let calls = Processed::ToolCalls(vec![ToolCall::new("1", "f", "{}")]);
        assert_eq!(calls.to_value(), json!([{"id": "1", "name": "f", "arguments": "{}"}]));
        assert_eq!(Processed::Answer(json!("text")).to_value(), json!("text"));
        assert_eq!(Processed::ToolCalls(Vec::new()).into_value(), json!([]));
        // An answer that looks like a list of calls stays an answer: nothing is parsed back.
        let lookalike = Processed::Answer(json!([{"id": "1", "name": "f", "arguments": "{}"}]));
        assert!(lookalike.tool_calls().is_empty());
    }

    #[test]
    fn long_tool_results_are_cut_at_a_character_boundary() {
        assert_eq!(bounded("short".into(), 10), "short");
        assert_eq!(bounded("ééé".into(), 3), "é… [cut: 6 bytes, limit 3]");
        assert_eq!(bounded("abc".into(), 0), "… [cut: 3 bytes, limit 0]");
    }

    #[test]
    fn only_transient_failures_are_retried() {
        let http = |status| {
            Error::Http(Box::new(crate::HttpFailure {
                provider: "openai".into(),
                status,
                reason: None,
                message: String::new(),
                request_id: None,
                body: None,
                attempts: 1,
            }))
        };
        assert!(retryable(&http(None)) && retryable(&http(Some(429))) && retryable(&http(Some(503))));
        assert!(!retryable(&http(Some(400))) && !retryable(&http(Some(401))) && !retryable(&http(Some(408))));
        // A success status whose body then failed (cut short, too large): the provider may have
        // generated already, so a retry could duplicate it.
        assert!(!retryable(&http(Some(200))) && !retryable(&http(Some(201))));
        assert!(!retryable(&crate::FormatError::MissingInput { name: "x".into() }.into()));
        // A setting found unusable before the request (a toolChoice naming no declared tool):
        // trying again sends nothing new.
        assert!(!retryable(&Error::Config { setting: "model.options.toolChoice".into(), message: String::new() }));
    }

    /// A tool round's results reach the provider as they were committed: outcome, text, and the
    /// content parts the tool attached, also when read back from a checkpoint.
    #[test]
    fn committed_results_become_the_results_a_provider_formats() {
        let mut ok = ToolOutput::success("c1", "chart", json!("a chart"));
        ok.metadata.insert(PARTS.into(), json!([ContentPart::image("https://x/c.png")]));
        let ok: ToolOutput = serde_json::from_value(serde_json::to_value(&ok).unwrap()).unwrap();
        let r = result_of(&ok);
        assert_eq!((r.id.as_str(), r.output.as_str(), r.is_error), ("c1", "a chart", false));
        assert_eq!(r.parts, [ContentPart::image("https://x/c.png")]);
        let denied = result_of(&ToolOutput::failed("c2", "rm", "permission_denied", "Tool denied by guardrail: no"));
        assert!(denied.is_error && denied.output == "Tool denied by guardrail: no" && denied.parts.is_empty());
        let request = ToolRequest::new("c3", "add", json!("{\"a\": 1}"));
        assert_eq!(call_of(&request), ToolCall::new("c3", "add", "{\"a\": 1}"));
    }
}
