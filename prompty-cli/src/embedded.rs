//! The embedded model for `run` and `chat`: `--local [ALIAS_OR_PATH]` asks for it, and a prompt
//! for provider `openai` that nothing configures (no key and no endpoint, in the prompt or the
//! environment) falls back to it, with a note on stderr, instead of failing at
//! `https://api.openai.com` for want of a key. `PROMPTY_OFFLINE=1` turns the fallback off.

use crate::ui;
use prompty::{Agent, Connection};

/// The model the fallback and a bare `--local` choose: SmolLM2-135M-Instruct, downloaded once into
/// the user's cache (see `prompty models pull`).
pub use prompty::providers::local::DEFAULT_MODEL;

/// Set to `1` (or `true`), nothing falls back to the embedded model: the prompt goes to its
/// provider as written (the examples stop before the call).
pub const OFFLINE_ENV: &str = "PROMPTY_OFFLINE";

/// The variables that configure provider `openai`: a key, or an endpoint.
const OPENAI_VARIABLES: [&str; 3] = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ENDPOINT"];

/// Points `agent` at the embedded model when `local` asks for it (`Some(alias or path)`), or when
/// its provider is `openai` and nothing configures it (unless [`OFFLINE_ENV`] is set); says so on
/// stderr. The options, inputs, tools and outputs stay the prompt's.
pub fn choose(agent: &mut Agent, local: Option<&str>) {
    let id = match local {
        Some(id) => id,
        None if !offline() && unconfigured_openai(agent) => {
            ui::info(format!(
                "(no OPENAI_API_KEY or OPENAI_BASE_URL: answering with the embedded model {DEFAULT_MODEL}; \
                 set one to use a server, or {OFFLINE_ENV}=1 to send the prompt as it is)"
            ));
            DEFAULT_MODEL
        }
        None => return,
    };
    ui::note(format!("provider local, model {id}"));
    prompty::providers::local::use_local_model(agent, id);
}

/// Whether [`OFFLINE_ENV`] is set to `1` or `true`.
pub fn offline() -> bool {
    std::env::var(OFFLINE_ENV).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "yes"))
}

/// Whether `agent` is for provider `openai` (or names none, which is `openai`) and neither the
/// prompt nor the environment gives it a key or an endpoint other than OpenAI's own: such a call
/// could only fail (OpenAI refuses a request without a key).
pub fn unconfigured_openai(agent: &Agent) -> bool {
    let model = agent.model.as_ref();
    if model.and_then(|m| m.provider.as_deref()).is_some_and(|p| p != "openai") {
        return false;
    }
    if OPENAI_VARIABLES.iter().any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty())) {
        return false;
    }
    let is_default = |endpoint: &Option<String>| {
        endpoint.as_deref().is_none_or(|e| {
            let e = e.trim().trim_end_matches('/');
            e.is_empty() || e == prompty::providers::openai::OPENAI_DEFAULT_ENDPOINT
        })
    };
    match model.and_then(|m| m.connection.as_ref()) {
        None => true,
        Some(Connection::Key { endpoint, api_key, .. }) => {
            // A key still written as an `${env:...}` reference names a variable that is not set.
            let no_key = api_key.as_ref().is_none_or(|k| k.is_empty() || k.expose().starts_with("${env:"));
            no_key && is_default(endpoint)
        }
        Some(Connection::Anonymous { endpoint, .. }) => is_default(endpoint),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(model: &str) -> Agent {
        let text = format!("---\nname: t\n{model}---\nuser:\nHi\n");
        prompty::load_str(&text, ".", "t.prompty").unwrap()
    }

    #[test]
    fn only_an_openai_prompt_without_key_or_endpoint_falls_back() {
        // The environment of this test process may have the variables: only check the prompts
        // when it has none of them.
        if OPENAI_VARIABLES.iter().any(|v| std::env::var_os(v).is_some()) {
            return;
        }
        let default = "https://api.openai.com/v1/";
        for (model, falls_back) in [
            ("", true),
            ("model:\n  id: gpt-4o-mini\n", true),
            ("model:\n  id: m\n  provider: openai\n  connection:\n    kind: key\n    apiKey: \"\"\n", true),
            (&format!("model:\n  id: m\n  connection:\n    kind: key\n    endpoint: {default}\n"), true),
            ("model:\n  id: m\n  connection:\n    kind: key\n    apiKey: sk-test-0123456789\n", false),
            ("model:\n  id: m\n  connection:\n    kind: anonymous\n    endpoint: http://127.0.0.1:8080/v1\n", false),
            ("model:\n  id: m\n  provider: anthropic\n", false),
            ("model:\n  id: m\n  provider: local\n", false),
            ("model:\n  id: m\n  connection:\n    kind: reference\n    name: mine\n", false),
        ] {
            assert_eq!(unconfigured_openai(&agent(model)), falls_back, "{model}");
        }
    }

    #[test]
    fn the_rewrite_keeps_the_options_and_drops_the_connection() {
        let mut a = agent(
            "model:\n  id: gpt-4o\n  connection:\n    kind: key\n    apiKey: sk-test-0123456789\n  options:\n    \
             temperature: 0.2\n",
        );
        prompty::providers::local::use_local_model(&mut a, DEFAULT_MODEL);
        let model = a.model.as_ref().unwrap();
        assert_eq!((model.provider.as_deref(), model.id.as_str()), (Some("local"), DEFAULT_MODEL));
        assert!(model.connection.is_none());
        assert_eq!(model.options.as_ref().and_then(|o| o.temperature), Some(0.2));
    }
}
