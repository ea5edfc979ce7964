//! `prompty::check`: the shared analysis plus this program's registries.

use prompty::analysis::Severity;
use serde_json::json;

fn messages(report: &prompty::analysis::Report) -> Vec<String> {
    report.diagnostics.iter().map(|d| format!("{:?} {d}", d.severity)).collect()
}

#[test]
fn a_custom_renderer_is_an_error_until_it_is_registered() {
    let text = "---\ntemplate:\n  format: shouty\n---\nuser:\nHi";
    let agent = prompty::load_str(text, ".", "shout.prompty").unwrap();
    let before = messages(&prompty::check(&agent));
    assert_eq!(before.len(), 1, "{before:?}");
    assert!(
        before[0]
            .starts_with("Error shout.prompty:3:3: no renderer is registered under `shouty` (the registered ones are "),
        "{before:?}"
    );
    assert!(before[0].contains("#[prompty::renderer(\"shouty\")]"), "{before:?}");
    prompty::register_renderer("shouty", prompty::builtins::MustacheRenderer);
    // Registered: neither the error nor the analysis's "must be registered" warning remains.
    assert_eq!(messages(&prompty::check(&agent)), Vec::<String>::new());
}

#[test]
fn a_built_in_key_in_the_wrong_case_stays_one_error() {
    let agent = prompty::load_str("---\ntemplate:\n  format: Jinja2\n---\nHi", ".", "c.prompty").unwrap();
    let found = messages(&prompty::check(&agent));
    assert_eq!(
        found,
        ["Error c.prompty:3:3: unknown template format `Jinja2` (did you mean `jinja2`?): renderer keys are case-sensitive"]
    );
}

#[test]
fn function_tools_without_a_registered_function_are_warnings() {
    let text = "---\ntools:\n  - name: lookup_order\n    kind: function\n    parameters:\n      id: {kind: string}\n---\nuser:\nHi";
    let agent = prompty::load_str(text, ".", "orders.prompty").unwrap();
    let report = prompty::check(&agent);
    assert!(!report.has_errors());
    assert_eq!(
        messages(&report),
        ["Warning orders.prompty:3:5: no function is registered under `lookup_order`: annotate a fn with \
          `#[prompty::tool]`, call `prompty::register_tool(\"lookup_order\", ...)`, or hand one to the call in `TurnOptions`"]
    );
    prompty::register_tool("lookup_order", prompty::tool_fn_sync(|_| Ok(json!("shipped"))));
    assert!(prompty::check(&agent).diagnostics.is_empty());
}

#[test]
fn providers_need_an_executor() {
    let agent = prompty::load_str("---\nmodel:\n  id: m\n  provider: nowhere\n---\nHi", ".", "p.prompty").unwrap();
    let found = messages(&prompty::check(&agent));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("Error p.prompty:4:3: no executor is registered for the provider `nowhere`"),
        "{found:?}"
    );
    let openai = prompty::load_str("---\nmodel:\n  id: m\n  provider: openai\n---\nHi", ".", "o.prompty").unwrap();
    let report = prompty::check(&openai);
    assert_eq!(report.has_errors(), !cfg!(feature = "openai"), "{:?}", messages(&report));
}

#[test]
fn remote_tool_kinds_need_their_feature_and_custom_kinds_a_handler() {
    let text = "---\ntools:\n  - name: fs\n    kind: mcp\n    serverName: files\n    command: srv\n  - name: search\n    kind: bing_search\n---\nHi";
    let agent = prompty::load_str(text, ".", "t.prompty").unwrap();
    let found = messages(&prompty::check(&agent));
    let mcp_error =
        "Error t.prompty:3:5: the MCP tool `fs` needs prompty's `mcp` feature (or a handler registered for `mcp`)";
    assert_eq!(found.contains(&mcp_error.to_owned()), !cfg!(feature = "mcp"), "{found:?}");
    assert!(
        found.iter().any(|m| m.starts_with(
            "Warning t.prompty:7:5: no handler is registered for tools of kind `bing_search`: register one with"
        )),
        "{found:?}"
    );
}

#[test]
fn agents_built_in_code_are_checked_from_their_fields() {
    let agent = prompty::Agent::from_value(json!({
        "name": "inline",
        "inputs": [{"name": "q", "kind": "strng"}, {"name": "n", "kind": "integer", "default": "ten"}],
        "instructions": "user:\n{{ q }} {{ n | upcase }}"
    }))
    .unwrap();
    let report = prompty::check(&agent);
    let errors: Vec<String> = report.errors().map(|d| d.to_string()).collect();
    assert_eq!(
        errors,
        [
            "inline: unknown kind `strng` for the input `q` (did you mean `string`?): the kinds are string, integer, \
             float, boolean, array, object, union, thread, image, file, audio",
            "inline: the default of the input `n` does not fit it: expected an integer, found the string `\"ten\"`",
            "inline:2:16: unknown Jinja filter `upcase` (did you mean `upper`?)",
        ]
    );
    assert!(report.diagnostics.iter().all(|d| d.severity == Severity::Error));
}

#[test]
fn children_are_checked_through_the_runtime_too() {
    let dir = std::env::temp_dir().join(format!("prompty-check-children-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("child.prompty"), "---\ninputs: [topic]\n---\nuser:\n{{ topc }}").unwrap();
    let parent = dir.join("parent.prompty");
    std::fs::write(&parent, "---\ntools:\n  - name: research\n    kind: prompty\n    path: child.prompty\n---\nHi")
        .unwrap();
    let agent = prompty::load(&parent).unwrap();
    let errors: Vec<String> = prompty::check(&agent).errors().map(|d| d.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains(
            "child.prompty:5:4: the template uses `topc`, which no input declares (did you mean `topic`?) \
             (in the child prompt `child.prompty` of the prompty tool `research`, declared at "
        ),
        "{errors:?}"
    );
}

/// `(severity, code, line, column)` of every diagnostic but the registry's own (which depend on
/// the features this test is built with).
fn places(report: &prompty::analysis::Report) -> Vec<(Severity, &'static str, Option<u32>, Option<u32>)> {
    report
        .diagnostics
        .iter()
        .filter(|d| !d.code.starts_with("unregistered-"))
        .map(|d| (d.severity, d.code, d.line, d.column))
        .collect()
}

#[test]
fn api_types_the_executor_refuses_and_connection_keys_it_drops() {
    let text =
        "---\nmodel:\n  id: smollm2\n  provider: openai\n  apiType: chta\n  connection:\n    kind: anonymous\n    \
                endpoint: http://127.0.0.1:8080/v1\n    structuredOuput: jsonObjectSchema\n---\nuser:\nHi";
    let agent = prompty::load_str(text, ".", "m.prompty").unwrap();
    let report = prompty::check(&agent);
    assert_eq!(
        places(&report),
        [
            (Severity::Error, "unknown-api-type", Some(5), Some(12)),
            (Severity::Warning, "unknown-connection-key", Some(9), Some(5)),
        ]
    );
    let messages = messages(&report);
    assert!(
        messages.contains(
            &"Error m.prompty:5:12: unknown model.apiType `chta` (did you mean `chat`?): the `openai` provider serves \
              `chat`, `embedding`, `image`, `responses`, `embeddings`, `images`"
                .to_owned()
        ),
        "{messages:#?}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with(
            "Warning m.prompty:9:5: unknown key `structuredOuput` in the model's connection (did you mean \
             `structuredOutput`?): the runtime ignores it"
        )),
        "{messages:#?}"
    );
    // Without a provider, options are checked against those every built-in provider reads.
    let agent = prompty::load_str("---\nmodel:\n  id: m\n  options:\n    topp: 1\n---\nHi", ".", "o.prompty").unwrap();
    assert_eq!(places(&prompty::check(&agent)), [(Severity::Warning, "unknown-model-option", Some(5), Some(5))]);
    // An option the provider does not read: the `local` provider has no frequency penalty.
    let text =
        "---\nmodel:\n  id: smollm2-135m\n  provider: local\n  options:\n    frequencyPenalty: 1\n    seed: 1\n---\nHi";
    let agent = prompty::load_str(text, ".", "l.prompty").unwrap();
    let report = prompty::check(&agent);
    assert_eq!(places(&report), [(Severity::Warning, "unsupported-model-option", Some(6), Some(5))]);
    assert!(report.diagnostics.iter().any(|d| d.message.starts_with(
        "model option `frequencyPenalty` is not supported by the `local` provider: it ignores it; it reads `temperature`"
    )));
}

struct Gateway;

impl prompty::Executor for Gateway {
    fn execute_async<'a>(
        &'a self,
        _: &'a prompty::Agent,
        _: &'a [prompty::Message],
    ) -> prompty::BoxFuture<'a, prompty::Result<serde_json::Value>> {
        Box::pin(async { Ok(json!("from the gateway")) })
    }
}

impl prompty::Processor for Gateway {
    fn process(&self, _: &prompty::Agent, response: serde_json::Value) -> prompty::Result<prompty::Processed> {
        Ok(prompty::Processed::Answer(response))
    }
}

#[test]
fn a_provider_that_is_not_built_in_is_an_error_until_registered() {
    let text = "---\nmodel:\n  id: m\n  provider: opnai\n  apiType: audio\n---\nHi";
    // The analysis alone (what `include_prompty!` and `prompty check` see): a warning naming the
    // closest built-in provider; its API types are its executor's business.
    let options = prompty::LoadOptions::new();
    let shared = prompty::analysis::check_str(text, ".".as_ref(), "g.prompty", &options);
    assert_eq!(places(&shared), [(Severity::Warning, "unknown-provider", Some(4), Some(13))]);
    // The runtime: no executor is registered under it, an error; the closest registered one is named.
    let agent = prompty::load_str(text, ".", "g.prompty").unwrap();
    let found = messages(&prompty::check(&agent));
    assert_eq!(found.len(), 1, "{found:?}");
    let hint = if cfg!(feature = "openai") { " (did you mean `openai`?)" } else { "" };
    assert!(
        found[0].starts_with(&format!(
            "Error g.prompty:4:3: no executor is registered for the provider `opnai`{hint} (register one with"
        )),
        "{found:?}"
    );
    prompty::register_executor("opnai", Gateway);
    prompty::register_processor("opnai", Gateway);
    assert_eq!(messages(&prompty::check(&agent)), Vec::<String>::new());
}
