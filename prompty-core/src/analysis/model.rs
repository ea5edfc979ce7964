//! The `model:` section and the connections: values the runtime would refuse or ignore.
//!
//! - `model.provider`: a key no built-in provider has is a warning naming the closest built-in
//!   one (a crate may register an executor under it); a built-in key in the wrong case is an
//!   error (keys are case-sensitive);
//! - `model.apiType`: a value the provider's executor refuses is an error naming the ones it
//!   serves (with no provider: the ones any built-in provider serves);
//! - `model.options`: keys no built-in provider reads (for a built-in provider, or none);
//! - the `connection` of the model and of every tool: keys its (built-in) kind does not read,
//!   which the loader drops, and a kind one typo away from a built-in one.
//!
//! A value written as an `${env:}` reference is not checked: it is known only when the prompt
//! runs. A connection written as a `${file:}` reference to a JSON or YAML file is checked in that
//! file, its warnings at the reference.

use super::{closest, did_you_mean, Checker, Location, Severity};
use crate::{Agent, Connection};
use serde_json::{Map, Value};

/// A provider built into the runtime (the `openai`, `anthropic` and `local` features of
/// `prompty`): the `model.provider` key its executor is registered under, the `model.apiType`s it
/// serves and the `model.options` it reads.
///
/// ```
/// use prompty_core::analysis::BUILTIN_PROVIDERS;
/// let anthropic = BUILTIN_PROVIDERS.iter().find(|p| p.key == "anthropic").unwrap();
/// assert_eq!(anthropic.api_types, ["chat"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinProvider {
    /// The `model.provider` key.
    pub key: &'static str,
    /// Every `model.apiType` its executor accepts (the file's default is `chat`).
    pub api_types: &'static [&'static str],
    /// The keys of `model.options` it reads (of [`crate::ModelOptions::KNOWN_KEYS`]); a check
    /// warns about another one set for it.
    pub options: &'static [&'static str],
}

/// Every option of [`crate::ModelOptions::KNOWN_KEYS`]: what the HTTP providers read.
const ALL_OPTIONS: &[&str] = &crate::ModelOptions::KNOWN_KEYS;

/// The `model.options` the `local` provider (a model run inside the process) reads; it has no
/// frequency or presence penalty, makes one tool call at a time and sends no request body.
///
/// ```
/// use prompty_core::analysis::LOCAL_OPTIONS;
/// assert!(LOCAL_OPTIONS.contains(&"seed") && !LOCAL_OPTIONS.contains(&"frequencyPenalty"));
/// ```
pub const LOCAL_OPTIONS: &[&str] =
    &["temperature", "maxOutputTokens", "topP", "topK", "seed", "stopSequences", "toolChoice", "structuredOutput"];

/// The API types of the OpenAI-compatible executor (`openai`, `azure`, `foundry`), with the
/// plural spellings it also accepts.
const OPENAI_API_TYPES: &[&str] = &["chat", "embedding", "image", "responses", "embeddings", "images"];

/// The providers built into the runtime, with the API types each serves. `prompty check`, the
/// build script, `include_prompty!` and `prompty::check` read the keys and API types from here;
/// the runtime's tests hold its executors to it.
///
/// ```
/// use prompty_core::analysis::BUILTIN_PROVIDERS;
/// let keys: Vec<&str> = BUILTIN_PROVIDERS.iter().map(|p| p.key).collect();
/// assert_eq!(keys, ["openai", "azure", "foundry", "anthropic", "local"]);
/// assert!(BUILTIN_PROVIDERS[0].api_types.contains(&"responses"));
/// ```
pub const BUILTIN_PROVIDERS: [BuiltinProvider; 5] = [
    BuiltinProvider { key: "openai", api_types: OPENAI_API_TYPES, options: ALL_OPTIONS },
    BuiltinProvider { key: "azure", api_types: OPENAI_API_TYPES, options: ALL_OPTIONS },
    BuiltinProvider { key: "foundry", api_types: OPENAI_API_TYPES, options: ALL_OPTIONS },
    BuiltinProvider { key: "anthropic", api_types: &["chat"], options: ALL_OPTIONS },
    BuiltinProvider { key: "local", api_types: &["chat", "embedding", "embeddings"], options: LOCAL_OPTIONS },
];

/// Whether a value as written is an `${env:}`/`${file:}` reference (or contains one).
fn is_reference(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.contains("${"))
}

/// `` `a`, `b`, `c` ``.
fn quoted<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names.into_iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// What `model.provider` says, for the checks that depend on it.
enum Provider {
    /// None written: the runtime needs one before it can run the prompt.
    Unnamed,
    /// An `${env:}` reference: known only at run time.
    Reference,
    /// A built-in provider.
    Builtin(&'static BuiltinProvider),
    /// Another key (a registered executor, or a mistake already reported).
    Other,
}

impl Checker<'_> {
    /// The checks of `model:` and of every `connection:` (see the module's documentation).
    pub(super) fn model(&mut self, agent: &Agent) {
        let written = super::frontmatter_text(self.text).and_then(|f| crate::parse_yaml(f).ok());
        let model = written.as_ref().and_then(|v| v.get("model")).and_then(Value::as_object);
        let provider = self.provider(agent, model);
        self.api_type(agent, model, &provider);
        self.model_options(model, &provider);
        if let Some(connection) = model.and_then(|m| m.get("connection")) {
            self.connection(connection, "model.connection", "the model's connection");
        }
        let tools: Vec<&Value> = match written.as_ref().and_then(|v| v.get("tools")) {
            Some(Value::Array(items)) => items.iter().collect(),
            Some(Value::Object(named)) => named.values().collect(),
            _ => Vec::new(),
        };
        for (i, tool) in tools.into_iter().enumerate() {
            if let Some(connection) = tool.get("connection") {
                let name = tool.get("name").and_then(Value::as_str).map(str::to_owned);
                let name = name.or_else(|| agent.tools.as_ref()?.get(i).map(|t| t.name.clone())).unwrap_or_default();
                self.connection(
                    connection,
                    &format!("tools[{i}].connection"),
                    &format!("the tool `{name}`'s connection"),
                );
            }
        }
    }

    /// `model.provider`: a built-in key in the wrong case is an error; any other unknown key a
    /// warning (an executor may be registered under it at run time).
    fn provider(&mut self, agent: &Agent, model: Option<&Map<String, Value>>) -> Provider {
        let Some(key) = agent.model.as_ref().and_then(|m| m.provider.as_deref()) else { return Provider::Unnamed };
        if key.contains("${") || model.and_then(|m| m.get("provider")).is_some_and(is_reference) {
            return Provider::Reference;
        }
        if let Some(builtin) = BUILTIN_PROVIDERS.iter().find(|p| p.key == key) {
            return Provider::Builtin(builtin);
        }
        let keys = BUILTIN_PROVIDERS.iter().map(|p| p.key);
        let at = self.at_value("model", "provider");
        if let Some(right) = keys.clone().find(|k| k.eq_ignore_ascii_case(key)) {
            self.flag(
                Severity::Error,
                "provider-key-case",
                at,
                key,
                format!("unknown model provider `{key}` (did you mean `{right}`?): provider keys are case-sensitive"),
            );
        } else {
            let hint = did_you_mean(key, keys.clone());
            self.flag(
                Severity::Warning,
                "unknown-provider",
                at,
                key,
                format!(
                    "unknown model provider `{key}`{hint}: the built-in ones are {}; an executor must be registered \
                     under `{key}` at run time (`#[prompty::executor(\"{key}\")]` or `prompty::register_executor`)",
                    quoted(keys)
                ),
            );
        }
        Provider::Other
    }

    /// `model.apiType`: one the provider's executor refuses is an error.
    fn api_type(&mut self, agent: &Agent, model: Option<&Map<String, Value>>, provider: &Provider) {
        let Some(api) = agent.model.as_ref().and_then(|m| m.api_type.as_deref()) else { return };
        if api.contains("${") || model.and_then(|m| m.get("apiType")).is_some_and(is_reference) {
            return;
        }
        let all = || {
            let mut all: Vec<&'static str> = Vec::new();
            for t in BUILTIN_PROVIDERS.iter().flat_map(|p| p.api_types) {
                if !all.contains(t) {
                    all.push(t);
                }
            }
            all
        };
        let at = self.at_value("model", "apiType");
        match provider {
            Provider::Builtin(p) if p.api_types.contains(&api) => {}
            Provider::Builtin(p) if all().contains(&api) => {
                self.flag(
                    Severity::Error,
                    "unsupported-api-type",
                    at,
                    api,
                    format!(
                        "the `{}` provider does not serve `apiType: {api}`: it serves {}",
                        p.key,
                        quoted(p.api_types.iter().copied())
                    ),
                );
            }
            Provider::Builtin(p) => {
                let hint = did_you_mean(api, p.api_types.iter().copied());
                self.flag(
                    Severity::Error,
                    "unknown-api-type",
                    at,
                    api,
                    format!(
                        "unknown model.apiType `{api}`{hint}: the `{}` provider serves {}",
                        p.key,
                        quoted(p.api_types.iter().copied())
                    ),
                );
            }
            Provider::Unnamed | Provider::Reference if !all().contains(&api) => {
                let all = all();
                let hint = did_you_mean(api, all.iter().copied());
                self.flag(
                    Severity::Error,
                    "unknown-api-type",
                    at,
                    api,
                    format!("unknown model.apiType `{api}`{hint}: the built-in providers serve {}", quoted(all)),
                );
            }
            // Another provider's executor decides.
            _ => {}
        }
    }

    /// Keys of `model.options` that no built-in provider reads (the options of the built-in
    /// providers are [`crate::ModelOptions::KNOWN_KEYS`], dropped otherwise when the prompt
    /// loads): a warning with the closest known key, for a built-in provider or none.
    fn model_options(&mut self, model: Option<&Map<String, Value>>, provider: &Provider) {
        let reader = match provider {
            Provider::Builtin(p) => format!("the `{}` provider ignores it", p.key),
            Provider::Unnamed | Provider::Reference => "no built-in provider reads it".to_owned(),
            Provider::Other => return,
        };
        let Some(options) = model.and_then(|m| m.get("options")).and_then(Value::as_object) else { return };
        let known = crate::ModelOptions::KNOWN_KEYS;
        for key in options.keys() {
            if let (Provider::Builtin(p), true) = (provider, known.contains(&key.as_str())) {
                if !p.options.contains(&key.as_str()) {
                    let at = self.at_key("model.options", key);
                    self.flag(
                        Severity::Warning,
                        "unsupported-model-option",
                        at,
                        key,
                        format!(
                            "model option `{key}` is not supported by the `{}` provider: it ignores it; it reads {}",
                            p.key,
                            quoted(p.options.iter().copied())
                        ),
                    );
                }
                continue;
            }
            if known.contains(&key.as_str()) {
                continue;
            }
            let at = self.at_key("model.options", key);
            let hint = did_you_mean(key, known.iter().copied());
            self.flag(
                Severity::Warning,
                "unknown-model-option",
                at,
                key,
                format!(
                    "unknown model option `{key}`{hint}: {reader}; the options are {}, and options sent to the API \
                     as written go under `additionalProperties`",
                    known.join(", ")
                ),
            );
        }
    }

    /// The keys of a connection of a built-in kind ([`Connection::keys_of`]); a kind one typo away
    /// from a built-in one. `here` is its key path, `what` names it in messages.
    fn connection(&mut self, connection: &Value, here: &str, what: &str) {
        let Some((parent, field)) = here.rsplit_once('.') else { return };
        // A `${file:}` reference: its keys are in another file; the warnings name it, at the reference.
        let (fields, what, reference) = match (connection, self.referenced(connection)) {
            (Value::Object(fields), _) => (fields.clone(), what.to_owned(), None),
            (Value::String(written), Some((file, Value::Object(fields)))) => {
                (fields, format!("{what} (read from `{file}`)"), Some((self.at_value(parent, field), written.trim())))
            }
            _ => return,
        };
        let what = what.as_str();
        // Where a key or value of the connection is: in the prompt, or at the reference.
        let place = |this: &Self, key: &str, value: bool| match &reference {
            Some((at, written)) => (at.clone(), (*written).to_owned()),
            None if value => (this.at_value(here, key), String::new()),
            None => (this.at_key(here, key), key.to_owned()),
        };
        let Some(kind) = fields.get("kind").filter(|k| !is_reference(k)).and_then(Value::as_str) else { return };
        let Some(own) = Connection::keys_of(kind) else {
            if let Some(builtin) = closest(kind, Connection::KINDS) {
                let (at, token) = place(self, "kind", true);
                self.flag(
                    Severity::Warning,
                    "unknown-connection-kind",
                    at,
                    if reference.is_some() { &token } else { kind },
                    format!(
                        "unknown connection kind `{kind}` (did you mean `{builtin}`?): the built-in kinds are {}; \
                         another kind is handed as written to what reads it, and its keys are not checked",
                        quoted(Connection::KINDS)
                    ),
                );
            }
            return;
        };
        let known: Vec<&str> = Connection::COMMON_KEYS.iter().chain(own).copied().collect();
        for key in fields.keys() {
            if known.contains(&key.as_str()) {
                continue;
            }
            let (at, token) = place(self, key, false);
            let elsewhere: Vec<&str> = Connection::KINDS
                .iter()
                .copied()
                .filter(|k| Connection::keys_of(k).is_some_and(|o| o.contains(&key.as_str())))
                .collect();
            let message = if elsewhere.is_empty() {
                let hint = did_you_mean(key, known.iter().copied());
                format!(
                    "unknown key `{key}` in {what}{hint}: the runtime ignores it; connections of kind `{kind}` read {}",
                    quoted(known.iter().copied())
                )
            } else {
                format!(
                    "{what} is of kind `{kind}`, which does not read `{key}` (connections of kind {} do): the \
                     runtime ignores it; connections of kind `{kind}` read {}",
                    quoted(elsewhere),
                    quoted(known.iter().copied())
                )
            };
            self.flag(Severity::Warning, "unknown-connection-key", at, &token, message);
        }
    }

    /// The file and its value when `value` is a whole `${file:}` reference to a JSON or YAML file
    /// inside the prompt's folder (the loader has read it already: a problem with it is its error).
    fn referenced(&self, value: &Value) -> Option<(String, Value)> {
        let reference = value.as_str()?.trim().strip_prefix("${file:")?.strip_suffix('}')?;
        let path = crate::confine_path(self.base_dir, reference, self.options).ok()?;
        let text = std::fs::read_to_string(&path).ok()?;
        let value = crate::references::structured(&path, &text)?.ok()?;
        Some((reference.to_owned(), value))
    }

    /// Records a diagnostic whose span is the whole `token` written at `at` (a key or value with
    /// `-` or `.` in it, which the word at its column would cut).
    fn flag(&mut self, severity: Severity, code: &'static str, at: Location, token: &str, message: String) {
        let text = self.text;
        let d = self.push(severity, code, at, message);
        if let Some(span) = d.span.as_mut() {
            if text.get(span.start..).is_some_and(|rest| rest.starts_with(token)) {
                span.end = span.start + token.len();
            }
        }
    }

    /// Where the value of the key `key` of the mapping at key path `parent` is, when it is written
    /// on the key's line (`provider: opnai`); else where the key is ([`Self::at_key`]).
    fn at_value(&self, parent: &str, key: &str) -> Location {
        let at = self.at_key(parent, key);
        let (Some(line), Some(column)) = (at.line, at.column) else { return at };
        let Some(text) = self.text.lines().nth(usize::try_from(line).unwrap_or(0).wrapping_sub(1)) else { return at };
        let start = text.char_indices().nth(usize::try_from(column).unwrap_or(1).saturating_sub(1)).map(|(i, _)| i);
        let Some(rest) = start.and_then(|i| text.get(i..)) else { return at };
        let rest = rest.strip_prefix(key).map(|r| r.trim_start_matches(['"', '\''])).unwrap_or("");
        let Some(after) = rest.trim_start().strip_prefix(':') else { return at };
        let value = after.trim_start();
        if value.is_empty() || value.starts_with('#') {
            return at;
        }
        let skipped = text.len() - value.len();
        let column = text[..skipped].chars().count() + 1;
        Location { column: Some(u32::try_from(column).unwrap_or(u32::MAX)), ..at }
    }

    /// Where the key `key` of the mapping at key path `parent` is: its own line when written in
    /// block style, else the key on the line of the mapping (`{kind: key, endpoit: ...}`).
    fn at_key(&self, parent: &str, key: &str) -> Location {
        let at = self.at(&format!("{parent}.{key}"));
        let Some(line) = at.line.and_then(|l| self.text.lines().nth(usize::try_from(l).ok()?.checked_sub(1)?)) else {
            return at;
        };
        let column = at.column.and_then(|c| usize::try_from(c).ok()).unwrap_or(1);
        let rest: String = line.chars().skip(column.saturating_sub(1)).collect();
        if rest.starts_with(key) {
            return at;
        }
        // Flow style: the key followed by `:` after the column found.
        let Some(found) = rest.match_indices(key).map(|(i, _)| i).find(|&i| {
            let after = rest[i + key.len()..].trim_start();
            let before = rest[..i].trim_end();
            after.starts_with(':') && (before.ends_with('{') || before.ends_with(',') || before.ends_with(['"', '\'']))
        }) else {
            return at;
        };
        let in_chars = rest[..found].chars().count();
        Location { column: Some(at.column.unwrap_or(1) + u32::try_from(in_chars).unwrap_or(0)), ..at }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{check_str, Diagnostic, Severity};
    use super::*;
    use crate::LoadOptions;
    use std::path::Path;

    /// `(severity, code, line:column, the spanned text, message)` of every diagnostic.
    fn found(text: &str) -> Vec<(Severity, &'static str, String, String, String)> {
        let options = LoadOptions::new().keep_env_references();
        let report = check_str(text, Path::new("."), "m.prompty", &options);
        report
            .diagnostics
            .iter()
            .map(|d: &Diagnostic| {
                let spanned = d.span.map(|s| text[s.start..s.end].to_owned()).unwrap_or_default();
                let at = format!("{}:{}", d.line.unwrap_or(0), d.column.unwrap_or(0));
                (d.severity, d.code, at, spanned, d.to_string())
            })
            .collect()
    }

    fn codes(text: &str) -> Vec<&'static str> {
        found(text).into_iter().map(|f| f.1).collect()
    }

    #[test]
    fn connection_keys_a_kind_does_not_read_are_warnings_at_the_key() {
        let text = "---\nmodel:\n  id: m\n  provider: openai\n  connection:\n    kind: anonymous\n    endpoint: http://h/v1\n    structuredOuput: jsonObjectSchema\n---\nHi";
        let f = found(text);
        assert_eq!(f.len(), 1, "{f:#?}");
        let (severity, code, at, spanned, message) = &f[0];
        assert_eq!(
            (*severity, *code, at.as_str(), spanned.as_str()),
            (Severity::Warning, "unknown-connection-key", "8:5", "structuredOuput")
        );
        assert_eq!(
            message,
            "m.prompty:8:5: unknown key `structuredOuput` in the model's connection (did you mean `structuredOutput`?): \
             the runtime ignores it; connections of kind `anonymous` read `kind`, `authenticationMode`, \
             `usageDescription`, `maxTokensField`, `structuredOutput`, `endpoint`"
        );
        // A key another built-in kind reads names that kind.
        let f = found("---\nmodel:\n  id: m\n  connection:\n    kind: anonymous\n    apiKey: k\n---\nHi");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].4.starts_with("m.prompty:6:5: the model's connection is of kind `anonymous`, which does not read `apiKey` (connections of kind `key` do)"),
            "{f:#?}"
        );
    }

    #[test]
    fn every_built_in_kind_reads_its_own_keys() {
        for kind in Connection::KINDS {
            let mut keys: Vec<&str> = Connection::COMMON_KEYS[1..].to_vec();
            keys.extend(Connection::keys_of(kind).unwrap());
            let fields: String = keys
                .iter()
                .map(|k| match *k {
                    "scopes" => "    scopes: [a]\n".to_owned(),
                    "maxTokensField" => "    maxTokensField: max_tokens\n".to_owned(),
                    "structuredOutput" => "    structuredOutput: jsonObjectSchema\n".to_owned(),
                    "authenticationMode" => "    authenticationMode: user\n".to_owned(),
                    k => format!("    {k}: x\n"),
                })
                .collect();
            let text = format!("---\nmodel:\n  id: m\n  connection:\n    kind: {kind}\n{fields}---\nHi");
            assert_eq!(codes(&text), Vec::<&str>::new(), "{kind}:\n{text}");
            // ... and warns about a misspelt one.
            let text =
                format!("---\nmodel:\n  id: m\n  connection:\n    kind: {kind}\n{fields}    endpiont: x\n---\nHi");
            assert_eq!(codes(&text), ["unknown-connection-key"], "{kind}");
        }
    }

    #[test]
    fn tool_connections_in_flow_style_and_the_mapping_form_are_checked() {
        let text = "---\ntools:\n  search:\n    kind: openapi\n    specification: https://x/spec.json\n    connection: {kind: key, endpoit: \"https://x\", apiKey: k}\n---\nHi";
        let f = found(text);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!((f[0].1, f[0].2.as_str(), f[0].3.as_str()), ("unknown-connection-key", "6:29", "endpoit"));
        assert!(f[0].4.contains("in the tool `search`'s connection (did you mean `endpoint`?)"), "{f:#?}");
    }

    #[test]
    fn a_connection_read_from_a_file_is_checked_there_and_reported_at_the_reference() {
        let dir = std::env::temp_dir().join(format!("prompty-analysis-connection-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("shared.json"), r#"{"kind": "key", "endpiont": "https://x", "apiKey": "${env:K}"}"#)
            .unwrap();
        std::fs::write(dir.join("ok.yaml"), "kind: key\nendpoint: https://x\n").unwrap();
        let text = "---\nmodel:\n  id: m\n  connection: ${file:shared.json}\n---\nHi";
        let path = dir.join("p.prompty");
        std::fs::write(&path, text).unwrap();
        let options = LoadOptions::new().keep_env_references();
        let report = super::super::check_file(&path, "p.prompty", &options);
        let found: Vec<(&str, String, String)> = report
            .diagnostics
            .iter()
            .map(|d| {
                let spanned = d.span.map(|s| text[s.start..s.end].to_owned()).unwrap_or_default();
                (d.code, d.to_string(), spanned)
            })
            .collect();
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].0, "unknown-connection-key");
        assert!(
            found[0].1.starts_with(
                "p.prompty:4:15: unknown key `endpiont` in the model's connection (read from `shared.json`) (did you \
                 mean `endpoint`?)"
            ),
            "{found:#?}"
        );
        assert_eq!(found[0].2, "${file:shared.json}");
        std::fs::write(&path, "---\nmodel:\n  id: m\n  connection: ${file:ok.yaml}\n---\nHi").unwrap();
        assert!(super::super::check_file(&path, "p.prompty", &options).diagnostics.is_empty());
    }

    #[test]
    fn custom_kinds_and_references_are_not_checked() {
        // An MCP stdio connection: a kind of its own, with its own keys.
        let stdio = "---\ntools:\n  - name: fs\n    kind: mcp\n    serverName: fs\n    connection:\n      kind: stdio\n      command: srv\n      args: [a]\n---\nHi";
        assert_eq!(codes(stdio), Vec::<&str>::new());
        let env_kind =
            "---\nmodel:\n  id: m\n  connection:\n    kind: ${env:CONNECTION_KIND:key}\n    whatever: 1\n---\nHi";
        assert_eq!(codes(env_kind), Vec::<&str>::new());
        // A kind one typo away from a built-in one.
        let f = found("---\nmodel:\n  id: m\n  connection:\n    kind: referenc\n    name: x\n---\nHi");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!((f[0].1, f[0].2.as_str(), f[0].3.as_str()), ("unknown-connection-kind", "5:11", "referenc"));
        assert!(f[0].4.contains("unknown connection kind `referenc` (did you mean `reference`?)"), "{f:#?}");
    }

    #[test]
    fn unknown_providers_are_warnings_naming_the_closest_built_in_one() {
        let f = found("---\nmodel:\n  id: m\n  provider: opnai\n---\nHi");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(
            (f[0].0, f[0].1, f[0].2.as_str(), f[0].3.as_str()),
            (Severity::Warning, "unknown-provider", "4:13", "opnai")
        );
        assert_eq!(
            f[0].4,
            "m.prompty:4:13: unknown model provider `opnai` (did you mean `openai`?): the built-in ones are `openai`, \
             `azure`, `foundry`, `anthropic`, `local`; an executor must be registered under `opnai` at run time \
             (`#[prompty::executor(\"opnai\")]` or `prompty::register_executor`)"
        );
        let f = found("---\nmodel: {id: m, provider: my-gateway}\n---\nHi");
        assert_eq!((f[0].1, f[0].2.as_str(), f[0].3.as_str()), ("unknown-provider", "2:26", "my-gateway"));
        let f = found("---\nmodel:\n  id: m\n  provider: OpenAI\n---\nHi");
        assert_eq!((f[0].0, f[0].1), (Severity::Error, "provider-key-case"), "{f:#?}");
        for ok in ["openai", "azure", "foundry", "anthropic", "${env:PROVIDER:openai}"] {
            assert_eq!(codes(&format!("---\nmodel:\n  id: m\n  provider: {ok}\n---\nHi")), Vec::<&str>::new(), "{ok}");
        }
    }

    #[test]
    fn api_types_the_provider_refuses_are_errors_naming_the_ones_it_serves() {
        let prompt = |provider: &str, api: &str| format!("---\nmodel:\n  id: m\n{provider}  apiType: {api}\n---\nHi");
        let f = found(&prompt("  provider: openai\n", "chta"));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(
            (f[0].0, f[0].1, f[0].2.as_str(), f[0].3.as_str()),
            (Severity::Error, "unknown-api-type", "5:12", "chta")
        );
        assert_eq!(
            f[0].4,
            "m.prompty:5:12: unknown model.apiType `chta` (did you mean `chat`?): the `openai` provider serves `chat`, \
             `embedding`, `image`, `responses`, `embeddings`, `images`"
        );
        let f = found(&prompt("  provider: anthropic\n", "embedding"));
        assert_eq!((f[0].0, f[0].1), (Severity::Error, "unsupported-api-type"), "{f:#?}");
        assert!(
            f[0].4.ends_with("the `anthropic` provider does not serve `apiType: embedding`: it serves `chat`"),
            "{f:#?}"
        );
        // No provider: the API types of every built-in provider.
        let f = found(&prompt("", "embeddnig"));
        assert_eq!((f[0].1, f[0].2.as_str()), ("unknown-api-type", "4:12"), "{f:#?}");
        assert!(f[0].4.contains("(did you mean `embedding`?): the built-in providers serve `chat`"), "{f:#?}");
        for p in &BUILTIN_PROVIDERS {
            for api in p.api_types {
                let text = prompt(&format!("  provider: {}\n", p.key), api);
                assert_eq!(codes(&text), Vec::<&str>::new(), "{}: {api}", p.key);
            }
        }
        // A provider of the program's own, or a reference: its executor decides.
        assert_eq!(codes(&prompt("  provider: my-gateway\n", "audio")), ["unknown-provider"]);
        assert_eq!(codes(&prompt("  provider: openai\n", "${env:API_TYPE:chat}")), Vec::<&str>::new());
        assert_eq!(codes(&prompt("  provider: ${env:PROVIDER:openai}\n", "audio")), ["unknown-api-type"]);
    }

    #[test]
    fn an_agent_without_its_text_is_checked_from_its_fields() {
        let agent = crate::Agent::from_value(serde_json::json!(
            {"name": "coded", "model": {"id": "m", "provider": "openai", "apiType": "chta"}}))
        .unwrap();
        let report = super::super::check_agent(&agent);
        let errors: Vec<String> = report.errors().map(|d| d.to_string()).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("coded: unknown model.apiType `chta`"), "{errors:?}");
    }
}
