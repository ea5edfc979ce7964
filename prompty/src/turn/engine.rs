//! The agent loop (spec §9.2, §13.7): model calls, tool rounds, and everything around them.
//!
//! Per iteration, in this order: cancellation check, steering drained (appended as `user`),
//! trimming to the context budget, input guardrail, cancellation check, the iteration limit, the
//! model call (retried with backoff, abandoned at once on cancellation), processing, output
//! guardrail; then either the final answer, or one tool round: every call checked against the
//! declared tools, then per call a cancellation check, argument parsing, bindings, tool
//! guardrail, execution; the provider formats the round's messages. A tool call the prompt
//! forces (`toolChoice: required` or a name) is forced until the first tool round only.

use super::context;
use super::events::{AgentEvent, Emitter};
use super::options::{CancellationToken, TurnOptions, Verdict};
use super::TurnOutput;
use crate::http::RequestBudget;
use crate::support::panic_text;
use crate::tools::args::parse_arguments;
use crate::tools::catalog::dispatch::{load_remote_tools, resolve_call, run_tool};
use crate::tools::handlers::inject_bindings;
use crate::tools::kind::ResolvedCall;
use crate::tools::scope::Scope;
use crate::trace::{genai, in_span_async, Stage};
use crate::{
    Agent, Error, Executor, Message, Processed, Processor, Result, Role, StreamChunk, ToolCall, ToolChoice,
    ToolContext, ToolResult, ToolRound, TurnFailure, TurnStop,
};
use futures_util::future::{select, Either};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// The longest wait before a retry of a model call.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How the model is called.
pub(crate) enum Mode {
    /// Whole responses.
    Call,
    /// Streamed responses; the final answer's chunks go to the sender.
    Stream(UnboundedSender<StreamChunk>),
}

/// A processed model response.
struct Answer {
    /// The raw response (of a whole call, or rebuilt by the executor from a streamed tool round).
    raw: Option<Value>,
    /// What the processor made of it.
    result: Processed,
    /// The text of a streamed response.
    text: Option<String>,
    /// The chunks of a streamed response, held back until it is known to be the final answer.
    chunks: Vec<StreamChunk>,
}

/// Runs `future`, unless the token is cancelled first (`None`).
async fn cancellable<F: Future>(token: Option<&CancellationToken>, future: F) -> Option<F::Output> {
    let Some(token) = token else { return Some(future.await) };
    let future = pin!(future);
    let cancelled = pin!(token.cancelled());
    match select(future, cancelled).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}

/// Waits `duration` without needing a runtime with timers enabled (a helper thread sleeps).
async fn sleep(duration: Duration) {
    let (done, wait) = tokio::sync::oneshot::channel::<()>();
    let spawned = std::thread::Builder::new().name("prompty-retry-wait".into()).spawn(move || {
        std::thread::sleep(duration);
        let _ = done.send(());
    });
    if spawned.is_ok() {
        let _ = wait.await;
    }
}

/// The wait before retry `n` (1-based): `min(base · 2ⁿ⁻¹ + jitter, 60 s)`, jitter up to one base
/// (the HTTP layer's one jittered backoff).
fn backoff(base: Duration, n: u32) -> Duration {
    crate::http::jittered(crate::http::exponential(base, n), base, MAX_BACKOFF)
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

/// A guardrail's verdict; a guardrail that panics denies.
fn verdict(check: impl FnOnce() -> Verdict) -> Verdict {
    catch_unwind(AssertUnwindSafe(check))
        .unwrap_or_else(|payload| Verdict::Deny(format!("the guardrail panicked: {}", panic_text(payload.as_ref()))))
}

/// A tool's result as the text the model reads: a string as it is, other JSON compactly.
fn result_text(value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => other.to_string(),
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

/// One turn's state.
pub(crate) struct Loop<'a> {
    agent: &'a Agent,
    inputs: &'a Map<String, Value>,
    options: &'a TurnOptions,
    executor: Arc<dyn Executor>,
    processor: Arc<dyn Processor>,
    emitter: Emitter,
    scope: Scope,
    messages: Vec<Message>,
    iterations: usize,
    rounds: usize,
    /// The agent with the tool choice of [`TurnOptions::after_forced_tool`], used for the model
    /// calls after the first tool round when the prompt forces a tool call (`required` or a name),
    /// so the model can then answer.
    relaxed: Option<Agent>,
}

impl<'a> Loop<'a> {
    pub(crate) fn new(
        agent: &'a Agent,
        messages: Vec<Message>,
        inputs: &'a Map<String, Value>,
        options: &'a TurnOptions,
    ) -> Result<Self> {
        let provider = crate::invoke::provider(agent)?;
        Ok(Loop {
            agent,
            inputs,
            options,
            executor: crate::get_executor(provider)?,
            processor: crate::get_processor(provider)?,
            emitter: Emitter::new(options.on_event.clone(), options.events.clone()),
            scope: Scope { depth: options.depth, cancel: options.cancel.clone(), run_child: super::run_child_turn },
            messages,
            iterations: 0,
            rounds: 0,
            relaxed: None,
        })
    }

    /// The agent the next model call is made with: the prompt's, or after a tool round its
    /// relaxed copy ([`Loop::relaxed`]).
    fn model_agent(&self) -> &Agent {
        self.relaxed.as_ref().unwrap_or(self.agent)
    }

    /// After a tool round: a forced tool choice has been honoured; later calls use
    /// [`TurnOptions::after_forced_tool`] (`auto` unless set).
    fn relax_tool_choice(&mut self) {
        let options = self.agent.model.as_ref().and_then(|m| m.options.as_ref());
        if self.relaxed.is_none()
            && matches!(options.and_then(|o| o.tool_choice.as_ref()), Some(ToolChoice::Required | ToolChoice::Tool(_)))
        {
            let mut agent = self.agent.clone();
            if let Some(o) = agent.model.as_mut().and_then(|m| m.options.as_mut()) {
                o.tool_choice = Some(self.options.after_forced_tool.clone());
            }
            self.relaxed = Some(agent);
        }
    }

    fn token(&self) -> Option<&CancellationToken> {
        self.options.cancel.as_ref()
    }

    fn is_cancelled(&self) -> bool {
        self.options.cancel.as_ref().is_some_and(CancellationToken::is_cancelled)
    }

    /// The error that ends the turn, carrying the conversation; a `cancelled` event first when
    /// the turn was cancelled.
    fn fail(&mut self, stop: TurnStop) -> Error {
        if let TurnStop::Cancelled { reason } = &stop {
            self.emitter.emit(|| AgentEvent::Cancelled { reason: reason.clone() });
        }
        Error::Turn(Box::new(TurnFailure {
            stop,
            iterations: self.iterations,
            messages: std::mem::take(&mut self.messages),
        }))
    }

    fn cancelled(&mut self, reason: impl Into<String>) -> Error {
        self.fail(TurnStop::Cancelled { reason: reason.into() })
    }

    fn status(&self, message: impl FnOnce() -> String) {
        self.emitter.emit(|| AgentEvent::Status { message: message() });
    }

    fn updated(&self) {
        self.emitter.emit(|| AgentEvent::MessagesUpdated { messages: self.messages.clone() });
    }

    /// Runs the loop to its final answer.
    pub(crate) async fn run(mut self, mode: Mode) -> Result<TurnOutput> {
        loop {
            if self.is_cancelled() {
                let reason = match self.iterations {
                    0 => "Cancellation requested before first iteration".to_owned(),
                    n => format!("Cancellation requested before iteration {}", n + 1),
                };
                return Err(self.cancelled(reason));
            }
            self.steer();
            if let Some(budget) = &self.options.context_budget {
                let dropped = context::trim(&mut self.messages, budget);
                if dropped > 0 {
                    self.emitter.emit(|| AgentEvent::ContextTrimmed { dropped });
                    self.updated();
                }
            }
            if let Some(guard) = &self.options.guardrails.input {
                if let Verdict::Deny(reason) = verdict(|| guard(&self.messages)) {
                    return Err(self.fail(TurnStop::Guardrail { stage: "input", reason }));
                }
            }
            if self.is_cancelled() {
                return Err(self.cancelled("Cancellation requested before the model call"));
            }
            // The tool lists of MCP servers and OpenAPI documents, before the request is built.
            if let Err(e) = load_remote_tools(self.agent).await {
                return Err(self.fail(TurnStop::Failed(Box::new(e))));
            }
            self.iterations += 1;
            if self.iterations > self.options.max_iterations {
                return Err(self.fail(TurnStop::MaxIterations { max: self.options.max_iterations }));
            }
            let n = self.iterations;
            let stage = crate::trace::Stage::new(format!("turn {n}"), "prompty.turn");
            let iteration = crate::trace::in_span_async(
                stage,
                |_| json!({"iteration": n}),
                self.iterate(&mode),
                |a, _| match a {
                    Some(answer) => answer.result.to_value(),
                    None => json!("tool calls"),
                },
            );
            if let Some(answer) = iteration.await? {
                return Ok(self.finish(answer, &mode));
            }
        }
    }

    /// One iteration: the model call, the output guardrail, and the tool round the answer asks
    /// for (`None`), or the final answer. The output guardrail reads the result's JSON form (spec
    /// §8.1: tool calls as a list of `{id, name, arguments}`).
    async fn iterate(&mut self, mode: &Mode) -> Result<Option<Answer>> {
        let mut answer = match mode {
            Mode::Call => self.call().await?,
            Mode::Stream(_) => self.call_streamed().await?,
        };
        if let Some(guard) = &self.options.guardrails.output {
            if let Verdict::Deny(reason) = verdict(|| guard(&answer.result.to_value())) {
                return Err(self.fail(TurnStop::Guardrail { stage: "output", reason }));
            }
        }
        match &mut answer.result {
            // An empty list of calls is no request for tools: a final answer (`[]`).
            Processed::ToolCalls(calls) if !calls.is_empty() => {
                let calls = std::mem::take(calls);
                self.round(calls, &answer).await?;
                Ok(None)
            }
            _ => Ok(Some(answer)),
        }
    }

    /// Appends the steering messages waiting, if any.
    fn steer(&mut self) {
        let Some(steering) = &self.options.steering else { return };
        let pending = steering.drain();
        if pending.is_empty() {
            return;
        }
        self.status(|| "Injecting steering message".to_owned());
        self.messages.extend(pending.into_iter().map(|text| Message::new(Role::User, text)));
        self.updated();
    }

    /// The final answer: appended to the conversation, its held-back chunks released.
    fn finish(mut self, answer: Answer, mode: &Mode) -> TurnOutput {
        if let Mode::Stream(tx) = mode {
            for chunk in answer.chunks {
                match &chunk {
                    StreamChunk::Text(t) => self.emitter.emit(|| AgentEvent::Token { text: t.clone() }),
                    StreamChunk::Thinking(t) => self.emitter.emit(|| AgentEvent::Thinking { text: t.clone() }),
                    _ => {}
                }
                let _ = tx.send(chunk);
            }
        }
        let result = answer.result.into_value();
        let text = match &result {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.messages.push(Message::new(Role::Assistant, text));
        self.emitter.emit(|| AgentEvent::Done { response: result.clone(), messages: self.messages.clone() });
        TurnOutput { result, messages: self.messages, iterations: self.iterations }
    }

    /// Decides what a failed model call attempt leads to: a wait and another attempt, or the end.
    /// `budget`: the requests the model call may still send (shared with the HTTP layer's retries).
    async fn retry_or_fail(&mut self, e: Error, attempt: u32, budget: &RequestBudget) -> Result<()> {
        if attempt > self.options.llm_retries || !retryable(&e) || budget.remaining() == 0 {
            return Err(self.fail(TurnStop::Model { source: Box::new(e), attempts: attempt }));
        }
        let wait = backoff(self.options.retry_backoff, attempt);
        self.status(|| {
            format!(
                "The model call failed ({e}); retry {attempt} of {} in {:.1} s",
                self.options.llm_retries,
                wait.as_secs_f64()
            )
        });
        if cancellable(self.token(), sleep(wait)).await.is_none() {
            return Err(self.cancelled("Cancellation requested while waiting to retry the model call"));
        }
        Ok(())
    }

    /// The requests one model call may send in all, the HTTP layer's retries included:
    /// `1 + llm_retries`.
    fn request_budget(&self) -> RequestBudget {
        RequestBudget::new(self.options.llm_retries.saturating_add(1))
    }

    /// One model call, whole.
    async fn call(&mut self) -> Result<Answer> {
        let mut attempt = 0;
        let budget = self.request_budget();
        loop {
            attempt += 1;
            let stage = Stage::client("execute", "prompty.execute");
            let (agent, messages) = (self.model_agent(), &self.messages);
            let recorded = genai::execute_inputs(agent, messages);
            let execute =
                in_span_async(stage, recorded, self.executor.execute_async(agent, messages), genai::execute_result);
            let outcome = cancellable(self.token(), budget.scope(execute)).await;
            match outcome {
                None => return Err(self.cancelled("Cancellation requested during the model call")),
                Some(Err(e)) => self.retry_or_fail(e, attempt, &budget).await?,
                Some(Ok(raw)) => {
                    let process = self.processor.process_async(self.model_agent(), raw.clone());
                    let stage = Stage::new("process", "prompty.process");
                    let provider = self.model_agent().model.as_ref().and_then(|m| m.provider.clone());
                    let process = in_span_async(stage, |_| json!({"provider": provider}), process, |r, _| r.to_value());
                    return match process.await {
                        Ok(result) => Ok(Answer { raw: Some(raw), result, text: None, chunks: Vec::new() }),
                        Err(e) => Err(self.fail(TurnStop::Model { source: Box::new(e), attempts: attempt })),
                    };
                }
            }
        }
    }

    /// One model call, streamed: every chunk held back until the response is known to be the
    /// final answer; tool calls arrive whole.
    async fn call_streamed(&mut self) -> Result<Answer> {
        let stage = Stage::client("stream", "prompty.stream");
        let count = self.messages.len();
        let model = self.model_agent().model.clone();
        in_span_async(
            stage,
            |attributes: &mut crate::trace::Attributes| {
                genai::request_of(model.as_ref(), attributes);
                json!({"messages": count})
            },
            self.call_streamed_untraced(),
            |answer, _| json!({"result": answer.result.to_value(), "text": answer.text}),
        )
        .await
    }

    async fn call_streamed_untraced(&mut self) -> Result<Answer> {
        let mut attempt = 0;
        let budget = self.request_budget();
        let events = loop {
            attempt += 1;
            let start = self.executor.execute_stream(self.model_agent(), &self.messages);
            let outcome = cancellable(self.token(), budget.scope(start)).await;
            match outcome {
                None => return Err(self.cancelled("Cancellation requested during the model call")),
                Some(Err(e)) => self.retry_or_fail(e, attempt, &budget).await?,
                Some(Ok(events)) => break events,
            }
        };
        // The raw events, kept so that the executor can rebuild the whole response of a tool round.
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let events: crate::RawStream = Box::pin(events.inspect(move |e| {
            if let crate::RawEvent::Data(v) = e {
                log.lock().unwrap_or_else(|p| p.into_inner()).push(v.clone());
            }
        }));
        let mut stream = self.processor.process_stream(self.model_agent(), events);
        let (mut text, mut calls, mut chunks) = (String::new(), Vec::new(), Vec::new());
        loop {
            match cancellable(self.token(), stream.next()).await {
                None => return Err(self.cancelled("Cancellation requested during the model call")),
                Some(None) => break,
                Some(Some(StreamChunk::ToolCall(call))) => calls.push(call),
                Some(Some(StreamChunk::Failure(f))) => {
                    let e = Error::Execution { message: f.message };
                    return Err(self.fail(TurnStop::Model { source: Box::new(e), attempts: attempt }));
                }
                Some(Some(chunk)) => {
                    if let StreamChunk::Text(t) = &chunk {
                        text.push_str(t);
                    }
                    chunks.push(chunk);
                }
            }
        }
        drop(stream);
        let (result, raw) = if calls.is_empty() {
            (Processed::Answer(crate::providers::common::structured(self.agent, text.clone())), None)
        } else {
            let events = std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()));
            (Processed::ToolCalls(calls), self.executor.assemble_stream(self.agent, &events))
        };
        Ok(Answer { raw, result, text: Some(text), chunks })
    }

    /// One round of tool calls: run them, let the provider format the messages, append them.
    async fn round(&mut self, mut calls: Vec<ToolCall>, answer: &Answer) -> Result<()> {
        if self.rounds == 0 {
            self.status(|| "Starting agent loop".to_owned());
        }
        if calls.len() > self.options.max_tool_calls {
            let message = format!(
                "the model asked for {} tool calls in one response; the turn allows {} (TurnOptions::max_tool_calls)",
                calls.len(),
                self.options.max_tool_calls
            );
            return Err(self.fail(TurnStop::Failed(Box::new(Error::Execution { message }))));
        }
        for (i, call) in calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_{}_{i}", self.iterations);
            }
        }
        // Each call is resolved once (its wire name decoded once) and carried to approval and
        // execution. A name nobody declared, handed or registered ends the turn; a registered
        // function the prompt does not declare is refused call by call (`run_call`).
        let resolved: Vec<ResolvedCall<'_>> = calls.iter().map(|c| resolve_call(self.agent, c)).collect();
        if let Some(unknown) = resolved.iter().find(|r| {
            r.tool().is_none()
                && self.options.tools.get(r.wire_name()).is_none()
                && crate::get_tool(r.wire_name()).is_none()
                && r.withheld().is_none()
        }) {
            let name = unknown.wire_name().to_owned();
            return Err(self.fail(TurnStop::UnknownTool { name }));
        }
        let results = if self.options.parallel_tool_calls {
            if self.is_cancelled() {
                return Err(self.cancelled("Cancellation requested before tool execution"));
            }
            let runs = resolved.iter().map(|c| self.run_call(c, true));
            let outcomes = futures_util::future::join_all(runs).await;
            let mut results = Vec::with_capacity(outcomes.len());
            for outcome in outcomes {
                match outcome {
                    Ok(r) => results.push(r),
                    Err(stop) => return Err(self.fail(stop)),
                }
            }
            results
        } else {
            let mut results = Vec::with_capacity(resolved.len());
            for (i, call) in resolved.iter().enumerate() {
                if self.is_cancelled() {
                    let reason = if i == 0 { "before" } else { "after" };
                    return Err(self.cancelled(format!("Cancellation requested {reason} tool execution")));
                }
                match self.run_call(call, false).await {
                    Ok(r) => results.push(r),
                    Err(stop) => return Err(self.fail(stop)),
                }
            }
            results
        };
        let round =
            ToolRound { response: answer.raw.as_ref(), text: answer.text.as_deref(), calls: &calls, results: &results };
        match self.executor.format_tool_messages(self.agent, &round) {
            Ok(messages) => self.messages.extend(messages),
            Err(e) => return Err(self.fail(TurnStop::Failed(Box::new(e)))),
        }
        self.rounds += 1;
        self.relax_tool_choice();
        self.updated();
        Ok(())
    }

    /// Runs one call: events, argument parsing, bindings, tool guardrail, execution. A failure the
    /// model can react to is a result; a cancellation (`check_cancel`: checked here, for parallel
    /// calls) or a missing handler ends the turn.
    async fn run_call(
        &self,
        resolved: &ResolvedCall<'_>,
        check_cancel: bool,
    ) -> std::result::Result<ToolResult, TurnStop> {
        let call = resolved.call();
        if check_cancel && self.is_cancelled() {
            return Err(TurnStop::Cancelled { reason: "Cancellation requested before tool execution".into() });
        }
        self.emitter.emit(|| AgentEvent::ToolCallStart {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let decl = resolved.tool();
        if decl.is_none() && self.options.tools.get(&call.name).is_none() {
            // A registered function the prompt does not declare, or a server tool `allowedTools`
            // leaves out: refused, never run.
            let text = match resolved.withheld() {
                Some(reason) => format!("Error: {reason}"),
                None => format!("Error: {}", Error::ToolNotDeclared { name: call.name.clone() }),
            };
            self.emitter.emit(|| AgentEvent::Error { message: text.clone(), tool: Some(call.name.clone()) });
            let r = ToolResult::error(&call.id, &call.name, text);
            self.result_event(&r);
            return Ok(r);
        }
        let mut args = match parse_arguments(&call.arguments) {
            Ok(args) => args,
            Err(message) => return Ok(self.failed(call, &message)),
        };
        if let Some(tool) = decl {
            inject_bindings(tool, &mut args, self.inputs);
            let approval = resolved.needs_approval();
            if let (Some(reason), None) = (approval, &self.options.guardrails.tool) {
                let text = format!(
                    "Tool denied: {reason}, and no approver is registered (a tool guardrail in TurnOptions::guardrails)"
                );
                self.emitter.emit(|| AgentEvent::Error { message: text.clone(), tool: Some(call.name.clone()) });
                let r = ToolResult::error(&call.id, &call.name, text);
                self.result_event(&r);
                return Ok(r);
            }
        }
        if let Some(guard) = &self.options.guardrails.tool {
            if let Verdict::Deny(reason) = verdict(|| guard(call, &args)) {
                let r = ToolResult::error(&call.id, &call.name, format!("Tool denied by guardrail: {reason}"));
                self.result_event(&r);
                return Ok(r);
            }
        }
        let attachments = std::sync::Mutex::new(Vec::new());
        let ctx = ToolContext {
            agent: self.agent,
            inputs: self.inputs,
            tools: &self.options.tools,
            function: &call.name,
            scope: Some(&self.scope),
            attachments: Some(&attachments),
        };
        let stage = Stage::new(call.name.clone(), "prompty.tool");
        let recorded = |a: &mut crate::trace::Attributes| {
            crate::trace::genai::tool(&call.name, &call.id, a);
            json!({"id": call.id, "name": call.name, "arguments": call.arguments})
        };
        let r = match in_span_async(stage, recorded, run_tool(resolved, args, ctx), |v, _| v.clone()).await {
            Ok(value) => {
                let mut r = ToolResult::ok(
                    &call.id,
                    &call.name,
                    bounded(result_text(value), self.options.max_tool_result_bytes),
                );
                r.parts = attachments.into_inner().unwrap_or_else(|e| e.into_inner());
                r
            }
            Err(e @ Error::NoToolHandler { .. }) => return Err(TurnStop::NoHandler(Box::new(e))),
            Err(e) => return Ok(self.failed(call, &error_text(e))),
        };
        self.result_event(&r);
        Ok(r)
    }

    /// The result of a call that failed: `Error: Tool '<name>' failed: <message>`, with an `error`
    /// event.
    fn failed(&self, call: &ToolCall, message: &str) -> ToolResult {
        let text = format!("Error: Tool '{}' failed: {message}", call.name);
        self.emitter.emit(|| AgentEvent::Error { message: text.clone(), tool: Some(call.name.clone()) });
        let r = ToolResult::error(&call.id, &call.name, text);
        self.result_event(&r);
        r
    }

    fn result_event(&self, r: &ToolResult) {
        self.emitter.emit(|| AgentEvent::ToolResult {
            id: r.id.clone(),
            name: r.name.clone(),
            result: r.output.clone(),
            is_error: r.is_error,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        assert!(backoff(base, 1) >= base && backoff(base, 1) < base * 2);
        assert!(backoff(base, 3) >= base * 4);
        assert_eq!(backoff(Duration::from_secs(10), 30), MAX_BACKOFF);
        assert_eq!(backoff(Duration::MAX, u32::MAX), MAX_BACKOFF);
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
}
