//! The typed prompts of the examples: every `.prompty` file of `prompts/`, compiled by
//! `prompty-build` from `build.rs` into Rust types and functions the compiler checks.
//!
//! ```
//! use prompty_examples::prompts::chat;
//!
//! let messages = chat::prepare(&chat::Inputs { question: "What is Prompty?".into(), name: None, history: None })?;
//! assert_eq!(messages.last().unwrap().text(), "What is Prompty?");
//! # Ok::<(), prompty::Error>(())
//! ```

/// Whether the examples ask a real model: when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set
/// (and not empty). A local server needs no key: `OPENAI_BASE_URL=http://127.0.0.1:8080/v1`
/// alone is enough (no `Authorization` header is sent without a key). `PROMPTY_MODEL` names the
/// model (default `gpt-4o-mini`): the prompts say `id: ${env:PROMPTY_MODEL:gpt-4o-mini}`.
///
/// ```
/// // Offline unless one of the two is set.
/// let live = ["OPENAI_API_KEY", "OPENAI_BASE_URL"].iter().any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
/// assert_eq!(prompty_examples::model_configured(), live);
/// ```
pub fn model_configured() -> bool {
    ["OPENAI_API_KEY", "OPENAI_BASE_URL"].iter().any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()))
}

/// What the examples print when they run offline ([`Answerer::Offline`]).
///
/// ```
/// assert!(prompty_examples::OFFLINE_HINT.contains("OPENAI_BASE_URL"));
/// ```
pub const OFFLINE_HINT: &str = "set OPENAI_API_KEY, or OPENAI_BASE_URL alone for a local OpenAI-compatible server \
                                (llama.cpp, vLLM, Ollama, LM Studio), to ask a model; PROMPTY_MODEL names it; \
                                unset PROMPTY_OFFLINE for the embedded model";

/// The embedded model the examples answer with when no server is configured: SmolLM2-135M-Instruct
/// (provider `local`), downloaded once (93 MB) into the user's cache.
pub const EMBEDDED_MODEL: &str = prompty::providers::local::DEFAULT_MODEL;

/// Set to `1` (or `true`), the examples do not run the embedded model when no server is
/// configured: they print what they would send and stop (or use their scripted stand-in), as
/// before the embedded model existed. The tests that do not test the model set it.
pub const OFFLINE_ENV: &str = "PROMPTY_OFFLINE";

/// The line an example prints when it answers with the embedded model ([`Answerer::Embedded`]).
///
/// ```
/// assert!(prompty_examples::EMBEDDED_NOTICE.starts_with("(no OPENAI_API_KEY or OPENAI_BASE_URL: answering with the embedded model smollm2-135m"));
/// ```
pub const EMBEDDED_NOTICE: &str = "(no OPENAI_API_KEY or OPENAI_BASE_URL: answering with the embedded model \
                                   smollm2-135m, in this process; set one to use a server, or PROMPTY_OFFLINE=1 \
                                   to stop before the call)";

/// Who answers an example's prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answerer {
    /// The server the environment configures (`OPENAI_API_KEY` or `OPENAI_BASE_URL`): the prompt
    /// as written.
    Server,
    /// Nothing configured: the embedded model [`EMBEDDED_MODEL`] ([`embedded`] rewrites the
    /// prompt's model section for it).
    Embedded,
    /// Nothing configured and [`OFFLINE_ENV`] set: no model.
    Offline,
}

impl Answerer {
    /// From the environment: a server when [`model_configured`], else the embedded model unless
    /// [`OFFLINE_ENV`] is set.
    ///
    /// ```
    /// use prompty_examples::Answerer;
    /// let answerer = Answerer::from_env();
    /// assert_eq!(answerer == Answerer::Server, prompty_examples::model_configured());
    /// ```
    pub fn from_env() -> Self {
        if model_configured() {
            Answerer::Server
        } else if std::env::var(OFFLINE_ENV).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "yes")) {
            Answerer::Offline
        } else {
            Answerer::Embedded
        }
    }
}

/// `agent` answered by the embedded model: its model section becomes provider `local`, model
/// [`EMBEDDED_MODEL`], no connection; the options (temperature, token limit, tool choice),
/// inputs, tools, outputs and template stay the prompt's. The `.prompty` file is not touched: the
/// same file still runs against a server in every Prompty runtime. For a typed prompt, hand the
/// rewritten `agent()` and the messages of its `prepare` to the untyped API (`prompty::run_async`,
/// `prompty::run_turn_async`).
///
/// ```
/// let agent = prompty_examples::embedded(prompty_examples::prompts::chat::agent());
/// let model = agent.model.as_ref().unwrap();
/// assert_eq!((model.provider.as_deref(), model.id.as_str()), (Some("local"), "smollm2-135m"));
/// assert!(model.connection.is_none());
/// assert_eq!(model.options.as_ref().and_then(|o| o.max_output_tokens), Some(400));
/// ```
pub fn embedded(agent: &prompty::Agent) -> prompty::Agent {
    let mut agent = agent.clone();
    prompty::providers::local::use_local_model(&mut agent, EMBEDDED_MODEL);
    agent
}

/// Writes a `.tracy` file of every run into the folder `PROMPTY_TRACE_DIR` names, when it is
/// set and not empty (the Prompty trace viewer opens them; see `prompty::trace`): every example
/// calls this first. Returns the folder.
///
/// ```
/// // Without the variable, nothing is traced.
/// if std::env::var_os("PROMPTY_TRACE_DIR").is_none() {
///     assert!(prompty_examples::trace_from_env().is_none());
/// }
/// ```
pub fn trace_from_env() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("PROMPTY_TRACE_DIR").filter(|d| !d.is_empty())?;
    let dir = std::path::PathBuf::from(dir);
    prompty::trace::add("tracy", std::sync::Arc::new(prompty::trace::TracyBackend::new(&dir)));
    Some(dir)
}

/// One module per prompt (`prompts/chat.prompty` → [`prompts::chat`]), generated by
/// `prompty_build::compile("prompts")`.
///
/// The prompts' `kind: function` tools are checked against the `#[prompty::tool]` handlers in
/// scope here, at compile time: the two handlers of the `weather-tools` crate. The tool
/// `convert_currency` is the fn `weather_tools::convert`, imported under the tool's name.
pub mod prompts {
    pub use weather_tools::{convert as convert_currency, get_weather};

    include!(concat!(env!("OUT_DIR"), "/prompty.rs"));
}

/// A local stand-in for a model, so the agent examples run offline: it answers in OpenAI's
/// format, asks for the prompt's tools when the question calls for them, and answers from their
/// results. It reads words, it does not understand them.
///
/// ```
/// use prompty_examples::offline::LocalModel;
/// LocalModel::install("openai"); // now `model.provider: openai` prompts are answered locally
/// let out = prompty::run_turn(
///     prompty_examples::prompts::weather_assistant::agent(),
///     vec![prompty::Message::new(prompty::Role::User, "Weather in Oslo?")],
///     &serde_json::json!({}),
///     prompty::TurnOptions::new().tools(prompty_examples::prompts::weather_assistant::tools()),
/// )?;
/// assert!(out.result.as_str().unwrap().contains("sunny in Oslo"));
/// # Ok::<(), prompty::Error>(())
/// ```
pub mod offline {
    use prompty::{Agent, BoxFuture, Executor, Message, Role};
    use serde_json::{json, Value};

    /// The local model.
    #[derive(Debug, Default, Clone, Copy)]
    pub struct LocalModel;

    impl LocalModel {
        /// Registers it as the executor of `provider` (the processor stays the provider's own).
        pub fn install(provider: &str) {
            prompty::register_executor(provider, LocalModel);
        }
    }

    impl Executor for LocalModel {
        fn execute_async<'a>(
            &'a self,
            agent: &'a Agent,
            messages: &'a [Message],
        ) -> BoxFuture<'a, prompty::Result<Value>> {
            let reply = reply(agent, messages);
            Box::pin(async move { Ok(reply) })
        }
    }

    /// Tool calls for the question, or an answer from the tool results after it.
    fn reply(agent: &Agent, messages: &[Message]) -> Value {
        let results: Vec<String> =
            messages.iter().rev().take_while(|m| m.role == Role::Tool).map(Message::text).collect();
        if !results.is_empty() {
            let mut results = results;
            results.reverse();
            return json!({"choices": [{"message": {"role": "assistant",
                "content": format!("Here is what I found: {}.", results.join("; "))}}]});
        }
        let question = messages.iter().rev().find(|m| m.role == Role::User).map(Message::text).unwrap_or_default();
        let offered: Vec<&str> = agent.tools.iter().flatten().map(|t| t.name.as_str()).collect();
        let words: Vec<&str> =
            question.split(|c: char| !c.is_alphanumeric() && c != '.').filter(|w| !w.is_empty()).collect();
        let mut calls = Vec::new();
        if offered.contains(&"get_weather") && question.to_lowercase().contains("weather") {
            let city = words
                .iter()
                .skip(1)
                .find(|w| w.chars().next().is_some_and(char::is_uppercase) && w.chars().any(char::is_lowercase))
                .unwrap_or(&"Paris");
            calls.push(("get_weather", json!({ "city": city })));
        }
        let codes: Vec<&&str> =
            words.iter().filter(|w| w.len() == 3 && w.chars().all(|c| c.is_ascii_uppercase())).collect();
        let amount = words.iter().find_map(|w| w.parse::<f64>().ok());
        if let (true, [from, to, ..], Some(amount)) = (offered.contains(&"convert_currency"), codes.as_slice(), amount)
        {
            calls.push(("convert_currency", json!({ "amount": amount, "from": from, "to": to })));
        }
        if calls.is_empty() {
            return json!({"choices": [{"message": {"role": "assistant",
                "content": format!("(local model) You asked: {question}")}}]});
        }
        let calls: Vec<Value> = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": format!("call_local_{i}"), "type": "function",
                       "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect();
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls}}]})
    }
}

/// [`embedded`] for the agent loop. A 135M model seldom chooses a tool by itself, so its first
/// answer is made a tool call (`toolChoice: required`, unless the prompt chooses), decoded under
/// the tools' parameter schemas; run the loop with
/// `TurnOptions::after_forced_tool(ToolChoice::None)` so that it answers from the result next,
/// instead of calling tools until the iteration limit.
///
/// ```
/// let agent = prompty_examples::embedded_for_tools(prompty_examples::prompts::weather_assistant::agent());
/// let options = agent.model.as_ref().and_then(|m| m.options.as_ref());
/// assert_eq!(options.and_then(|o| o.tool_choice.clone()), Some(prompty::ToolChoice::Required));
/// ```
pub fn embedded_for_tools(agent: &prompty::Agent) -> prompty::Agent {
    let mut agent = embedded(agent);
    let model = agent.model.get_or_insert_with(Default::default);
    let options = model.options.get_or_insert_with(Default::default);
    options.tool_choice.get_or_insert(prompty::ToolChoice::Required);
    agent
}

/// The code blocks of the README and of the guides in `docs/`, compiled (and run, unless marked
/// `no_run` because they call a model) as doctests of this crate, which has the typed prompts they
/// use. `prompty-cli/tests/docs.rs` checks the blocks in other languages and the links.
#[cfg(doctest)]
pub mod docs {
    #[doc = include_str!("../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../docs/typed-prompts.md")]
    pub struct TypedPrompts;
    #[doc = include_str!("../../docs/checks.md")]
    pub struct Checks;
    #[doc = include_str!("../../docs/agent-loop.md")]
    pub struct AgentLoop;
    #[doc = include_str!("../../docs/registry.md")]
    pub struct Registry;
    #[doc = include_str!("../../docs/tracing.md")]
    pub struct Tracing;
    #[doc = include_str!("../../docs/local-model.md")]
    pub struct LocalModel;
    #[doc = include_str!("../../docs/durable-turns.md")]
    pub struct DurableTurns;
    #[doc = include_str!("../../docs/evals.md")]
    pub struct Evals;
}
