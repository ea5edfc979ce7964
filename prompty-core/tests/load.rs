//! Integration tests of loading `.prompty` files: fixtures, shorthands, error locations,
//! `${env:}`/`${file:}` references, `validate_inputs` and secret redaction.

use prompty_core::{load, load_str, load_with, validate_inputs, Agent, Connection, Error, LoadOptions, ToolKind};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Serializes every test that reads or writes environment variables (tests run in parallel).
static ENV_LOCK: Mutex<()> = Mutex::new(());

fn env_lock() -> MutexGuard<'static, ()> {
    ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// A fresh folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!("prompty-core-load-test-{}-{}", std::process::id(), n));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("create temp dir");
        // Canonical, so paths compared with the loader's canonical roots agree.
        TempDir(fs::canonicalize(&path).expect("canonicalize temp dir"))
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `contents` to `rel` (creating folders) and returns the full path.
    fn write(&self, rel: &str, contents: &str) -> PathBuf {
        let p = self.0.join(rel);
        fs::create_dir_all(p.parent().unwrap()).expect("create parent dir");
        fs::write(&p, contents).expect("write file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Loads prompt text from memory, named `t.prompty`.
fn load_text(text: &str) -> Result<Agent, Error> {
    load_str(text, ".", "t.prompty")
}

/// Loads prompt text that must be valid, returning its canonical JSON.
fn canonical(text: &str) -> Value {
    let agent = load_text(text).unwrap_or_else(|e| panic!("load failed: {e}\n---\n{text}"));
    serde_json::to_value(&agent).expect("serialize agent")
}

/// Loads a prompt with the given frontmatter (and a trivial body) and returns its canonical JSON.
fn canonical_fm(frontmatter: &str) -> Value {
    canonical(&format!("---\n{frontmatter}\n---\nuser:\nHi"))
}

fn load_err(text: &str) -> Error {
    match load_text(text) {
        Ok(agent) => panic!("expected an error, loaded {agent:?}"),
        Err(e) => e,
    }
}

/// An agent declaring `inputs` (canonical or shorthand JSON form), for `validate_inputs`.
fn agent_with_inputs(inputs: Value) -> Agent {
    Agent::from_value(json!({ "inputs": inputs })).expect("agent from value")
}

// ---------------------------------------------------------------------------------------------
// Fixtures and the canonical form
// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_loads_and_canonical_json_round_trips() {
    let _env = env_lock();
    std::env::set_var("OPENAI_API_KEY", "sk-fixture-test");
    let mut count = 0;
    let mut entries: Vec<PathBuf> = fs::read_dir(fixtures_dir())
        .expect("fixtures dir")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "prompty"))
        .collect();
    entries.sort();
    for path in entries {
        let agent = load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let first = serde_json::to_value(&agent).unwrap();
        assert_eq!(first["kind"], "prompt", "{}", path.display());
        let again = Agent::from_value(first.clone()).unwrap_or_else(|e| panic!("{}: from_value: {e}", path.display()));
        let second = serde_json::to_value(&again).unwrap();
        assert_eq!(first, second, "{}: canonical JSON is not stable", path.display());
        assert_eq!(agent, again, "{}", path.display());
        count += 1;
    }
    assert!(count >= 12, "expected the 12 fixtures, found {count}");
}

#[test]
fn basic_fixture_canonical_fields() {
    let _env = env_lock();
    std::env::set_var("OPENAI_API_KEY", "sk-fixture-test");
    std::env::remove_var("OPENAI_ENDPOINT");
    let v = serde_json::to_value(load(fixtures_dir().join("basic.prompty")).unwrap()).unwrap();
    assert_eq!(v["name"], "basic-prompt");
    assert_eq!(v["model"]["connection"]["endpoint"], "https://api.openai.com/v1");
    assert_eq!(v["model"]["connection"]["apiKey"], "sk-fixture-test");
    assert_eq!(v["model"]["options"], json!({"temperature": 0.7, "maxOutputTokens": 1000}));
    assert_eq!(v["inputs"][0], json!({"name": "firstName", "kind": "string", "default": "Jane"}));
    assert!(v["instructions"].as_str().unwrap().starts_with("system:\n"));
}

// ---------------------------------------------------------------------------------------------
// Shorthands
// ---------------------------------------------------------------------------------------------

#[test]
fn model_string_shorthand_becomes_id() {
    let v = canonical_fm("model: gpt-4o");
    assert_eq!(v["model"], json!({"id": "gpt-4o"}));
}

#[test]
fn inputs_map_form_becomes_named_list() {
    let v = canonical_fm("inputs:\n  city:\n    kind: string\n    required: true");
    assert_eq!(v["inputs"], json!([{"name": "city", "kind": "string", "required": true}]));
}

#[test]
fn scalar_input_shorthand_infers_kind_and_sets_default() {
    let v = canonical_fm("inputs:\n  n: 5\n  x: 1.5\n  b: true\n  l: [1]\n  s: Jane");
    assert_eq!(
        v["inputs"],
        json!([
            {"name": "n", "kind": "integer", "default": 5},
            {"name": "x", "kind": "float", "default": 1.5},
            {"name": "b", "kind": "boolean", "default": true},
            {"name": "l", "kind": "array", "default": [1]},
            {"name": "s", "kind": "string", "default": "Jane"},
        ])
    );
    // The shorthand value is a default, never an example.
    assert!(v["inputs"][0].get("example").is_none());
}

#[test]
fn inputs_list_form_is_kept_in_order() {
    let v = canonical_fm("inputs:\n  - name: b\n    kind: string\n  - name: a\n    kind: integer\n    default: 2");
    assert_eq!(
        v["inputs"],
        json!([
            {"name": "b", "kind": "string"},
            {"name": "a", "kind": "integer", "default": 2},
        ])
    );
}

#[test]
fn bare_name_list_item_is_a_string_input() {
    let v = canonical_fm("inputs:\n  - question\n  - name: n\n    kind: integer");
    assert_eq!(
        v["inputs"],
        json!([
            {"name": "question", "kind": "string"},
            {"name": "n", "kind": "integer"},
        ])
    );
}

#[test]
fn tools_map_form_becomes_named_list() {
    let v = canonical_fm(
        "tools:\n  get_weather:\n    kind: function\n    description: Weather\n    parameters:\n      city:\n        kind: string",
    );
    assert_eq!(
        v["tools"],
        json!([{
            "name": "get_weather",
            "kind": "function",
            "description": "Weather",
            "parameters": [{"name": "city", "kind": "string"}],
        }])
    );
}

#[test]
fn bindings_map_list_and_string_forms_are_canonical() {
    let tool = |bindings: &str| {
        canonical_fm(&format!("tools:\n  - name: get_weather\n    kind: function\n    bindings:\n{bindings}"))["tools"]
            [0]["bindings"]
            .clone()
    };
    let expected = json!({"unit": {"input": "preferred_unit"}});
    assert_eq!(tool("      unit:\n        input: preferred_unit"), expected);
    assert_eq!(tool("      - name: unit\n        input: preferred_unit"), expected);
    assert_eq!(tool("      unit: preferred_unit"), expected);
}

#[test]
fn approval_mode_string_shorthand_becomes_kind() {
    let v = canonical_fm("tools:\n  - name: fs\n    kind: mcp\n    serverName: filesystem\n    approvalMode: never");
    assert_eq!(v["tools"][0]["approvalMode"], json!({"kind": "never"}));
    assert_eq!(v["tools"][0]["serverName"], "filesystem");
}

#[test]
fn template_format_string_shorthand_becomes_kind() {
    let v = canonical_fm("template:\n  format: mustache");
    assert_eq!(v["template"], json!({"format": {"kind": "mustache"}, "parser": {"kind": "prompty"}}));
}

#[test]
fn omitted_template_defaults_to_jinja2_and_prompty() {
    let v = canonical_fm("name: x");
    assert_eq!(v["template"], json!({"format": {"kind": "jinja2"}, "parser": {"kind": "prompty"}}));
}

#[test]
fn bare_string_template_is_rejected() {
    let e = load_err("---\ntemplate: jinja2\n---\nHi");
    let msg = e.to_string();
    assert!(msg.contains("Invalid template format"), "{msg}");
}

#[test]
fn unknown_top_level_keys_are_tolerated() {
    let v = canonical_fm("name: x\nflavour: vanilla\nsomethingElse:\n  a: 1");
    assert_eq!(v["name"], "x");
}

#[test]
fn custom_tool_kind_keeps_its_extra_fields() {
    let v = canonical_fm(
        "tools:\n  - name: lookup\n    kind: my_provider\n    region: eu\n    options:\n      depth: 3\n    limits:\n      rpm: 60",
    );
    let tool = &v["tools"][0];
    assert_eq!(tool["kind"], "my_provider");
    assert_eq!(tool["region"], "eu");
    assert_eq!(tool["options"], json!({"depth": 3}));
    assert_eq!(tool["limits"], json!({"rpm": 60}));
}

#[test]
fn unknown_connection_kind_keeps_its_fields() {
    let v = canonical_fm(
        "model:\n  id: m\n  connection:\n    kind: vault\n    endpoint: https://v.test\n    path: secret/x\n    retries: 2",
    );
    assert_eq!(
        v["model"]["connection"],
        json!({"kind": "vault", "endpoint": "https://v.test", "path": "secret/x", "retries": 2})
    );
}

#[test]
fn plus_delimiters_open_and_close_frontmatter() {
    let agent = load_text("+++\nname: plus\nmodel: gpt-4o\n+++\nuser:\nHi").unwrap();
    assert_eq!(agent.name, "plus");
    assert_eq!(agent.model.unwrap().id, "gpt-4o");
    assert_eq!(agent.instructions.as_deref(), Some("user:\nHi"));
}

#[test]
fn no_frontmatter_means_the_whole_text_is_instructions() {
    let text = "system:\nYou are terse.\n\nuser:\n{{q}}";
    let v = canonical(text);
    assert_eq!(v["instructions"], text);
    assert!(v.get("model").is_none());
    assert!(v.get("inputs").is_none());
}

#[test]
fn empty_frontmatter_leaves_optional_members_absent() {
    let v = canonical("---\n---\nbody only");
    assert_eq!(v["instructions"], "body only");
    for key in ["model", "inputs", "outputs", "tools"] {
        assert!(v.get(key).is_none(), "{key} should be absent: {v}");
    }
}

#[test]
fn trailing_newlines_are_stripped_from_instructions() {
    let agent = load_text("---\nname: x\n---\nuser:\n\nHi\n\n\n").unwrap();
    assert_eq!(agent.instructions.as_deref(), Some("user:\n\nHi"));
}

// ---------------------------------------------------------------------------------------------
// Errors say where
// ---------------------------------------------------------------------------------------------

#[test]
fn invalid_yaml_names_file_and_a_frontmatter_line() {
    let e = load_str("---\nname: ok\nmodel: [broken\n---\nHi", ".", "bad.prompty").unwrap_err();
    let msg = e.to_string();
    println!("invalid YAML error: {msg}");
    assert!(msg.starts_with("bad.prompty:"), "{msg}");
    match e {
        Error::Frontmatter { at, .. } => {
            println!("observed location: line {:?}, column {:?}", at.line, at.column);
            assert_eq!(at.file, "bad.prompty");
            let line = at.line.expect("a line number");
            assert!((2..=3).contains(&line), "line {line} is not inside the frontmatter (lines 2..=3): {msg}");
        }
        other => panic!("expected Error::Frontmatter, got {other:?}"),
    }
}

#[test]
fn unclosed_frontmatter_names_the_opening_line() {
    let e = load_str("\n---\nname: x\nuser:\nHi\n", ".", "open.prompty").unwrap_err();
    match &e {
        Error::Frontmatter { at, .. } => {
            assert_eq!(at.file, "open.prompty");
            assert_eq!(at.line, Some(2), "{e}");
        }
        other => panic!("expected Error::Frontmatter, got {other:?}"),
    }
    assert!(e.to_string().starts_with("open.prompty:2"), "{e}");
}

#[test]
fn list_frontmatter_is_rejected_as_not_a_mapping() {
    let e = load_err("---\n- a\n- b\n---\nHi");
    assert!(matches!(e, Error::Frontmatter { .. }), "{e:?}");
    assert!(e.to_string().contains("mapping"), "{e}");
}

#[test]
fn wrong_field_type_names_field_path_and_line() {
    let text = "---\nname: t\ninputs:\n  - name: a\n    required: notabool\n---\nHi";
    let e = load_err(text);
    match &e {
        Error::InvalidField { at, field, .. } => {
            assert_eq!(field, "inputs[0].required");
            assert_eq!(at.file, "t.prompty");
            // Line 1 is `---`; `required:` is on line 5.
            assert_eq!(at.line, Some(5), "{e}");
        }
        other => panic!("expected Error::InvalidField, got {other:?}"),
    }
}

#[test]
fn missing_file_is_file_not_found() {
    let dir = TempDir::new();
    let path = dir.path().join("nonexistent.prompty");
    match load(&path) {
        Err(Error::FileNotFound { path: p }) => assert_eq!(p, path),
        other => panic!("expected FileNotFound, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// References
// ---------------------------------------------------------------------------------------------

/// A prompt whose model connection endpoint is `endpoint` (a reference or a literal).
fn prompt_with_endpoint(endpoint: &str) -> String {
    format!("---\nmodel:\n  id: m\n  connection:\n    kind: key\n    endpoint: {endpoint}\n---\nHi")
}

fn endpoint_of(agent: &Agent) -> Option<String> {
    agent.model.as_ref()?.connection.as_ref()?.endpoint().map(str::to_owned)
}

#[test]
fn env_reference_resolves_to_the_variable() {
    let _env = env_lock();
    std::env::set_var("PROMPTY_TEST_ENDPOINT", "https://env.test/v1");
    let agent = load_text(&prompt_with_endpoint("${env:PROMPTY_TEST_ENDPOINT}")).unwrap();
    assert_eq!(endpoint_of(&agent).as_deref(), Some("https://env.test/v1"));
}

#[test]
fn unset_env_reference_names_variable_and_key_path_and_leaks_nothing() {
    let _env = env_lock();
    let secret = "sk-must-never-appear-0xC0FFEE";
    std::env::set_var("PROMPTY_TEST_SECRET_KEY", secret);
    std::env::remove_var("PROMPTY_TEST_UNSET_ENDPOINT");
    // The key is resolved first (it comes first), then the endpoint fails.
    let text = "---\nmodel:\n  id: m\n  connection:\n    kind: key\n    apiKey: ${env:PROMPTY_TEST_SECRET_KEY}\n    endpoint: ${env:PROMPTY_TEST_UNSET_ENDPOINT}\n---\nHi";
    let e = load_err(text);
    let msg = e.to_string();
    println!("unset env error: {msg}");
    assert!(msg.contains("Environment variable 'PROMPTY_TEST_UNSET_ENDPOINT' not set"), "{msg}");
    // It names the reference, and what to do.
    assert!(msg.contains("${env:PROMPTY_TEST_UNSET_ENDPOINT} cannot be resolved"), "{msg}");
    assert!(msg.contains("set PROMPTY_TEST_UNSET_ENDPOINT, or give the reference a default"), "{msg}");
    assert!(msg.contains("model.connection.endpoint"), "{msg}");
    assert!(!msg.contains(secret), "{msg}");
    assert!(!format!("{e:?}").contains(secret));
    match e {
        Error::EnvVarNotSet { var, field, at } => {
            assert_eq!(var, "PROMPTY_TEST_UNSET_ENDPOINT");
            assert_eq!(field, "model.connection.endpoint");
            assert_eq!(at.line, Some(7));
        }
        other => panic!("expected EnvVarNotSet, got {other:?}"),
    }
}

#[test]
fn env_default_keeps_everything_after_the_second_colon() {
    let _env = env_lock();
    std::env::remove_var("PROMPTY_TEST_UNSET_WITH_DEFAULT");
    let agent = load_text(&prompt_with_endpoint("${env:PROMPTY_TEST_UNSET_WITH_DEFAULT:http://x:8080}")).unwrap();
    assert_eq!(endpoint_of(&agent).as_deref(), Some("http://x:8080"));
}

#[test]
fn file_reference_to_json_is_parsed_and_its_env_references_resolved() {
    let _env = env_lock();
    std::env::set_var("PROMPTY_TEST_FILE_KEY", "sk-from-file-ref");
    let dir = TempDir::new();
    dir.write(
        "conn.json",
        r#"{"kind": "key", "endpoint": "https://json.test", "apiKey": "${env:PROMPTY_TEST_FILE_KEY}"}"#,
    );
    let path = dir.write("p.prompty", "---\nmodel:\n  id: m\n  connection: ${file:conn.json}\n---\nHi");
    let agent = load(&path).unwrap();
    let v = serde_json::to_value(&agent).unwrap();
    assert_eq!(
        v["model"]["connection"],
        json!({"kind": "key", "endpoint": "https://json.test", "apiKey": "sk-from-file-ref"})
    );
}

#[test]
fn file_reference_to_yaml_is_parsed() {
    let dir = TempDir::new();
    dir.write("conn.yaml", "kind: anonymous\nendpoint: https://yaml.test\n");
    let path = dir.write("p.prompty", "---\nmodel:\n  id: m\n  connection: ${file:conn.yaml}\n---\nHi");
    let agent = load(&path).unwrap();
    assert!(matches!(agent.model.as_ref().unwrap().connection, Some(Connection::Anonymous { .. })));
    assert_eq!(endpoint_of(&agent).as_deref(), Some("https://yaml.test"));
}

#[test]
fn file_reference_to_text_is_a_string() {
    let dir = TempDir::new();
    dir.write("desc.txt", "A long description.\nSecond line: {not yaml}\n");
    let path = dir.write("p.prompty", "---\ndescription: ${file:desc.txt}\n---\nHi");
    let agent = load(&path).unwrap();
    assert_eq!(agent.description.as_deref(), Some("A long description.\nSecond line: {not yaml}\n"));
}

/// A layout with the prompt in `root/prompt/` and a JSON file in `root/outside/x.json`.
struct Outside {
    root: TempDir,
}

impl Outside {
    fn new() -> Outside {
        let root = TempDir::new();
        root.write("outside/x.json", r#"{"kind": "anonymous", "endpoint": "https://outside.test"}"#);
        fs::create_dir_all(root.path().join("prompt")).unwrap();
        Outside { root }
    }

    fn outside_dir(&self) -> PathBuf {
        self.root.path().join("outside")
    }

    fn outside_file(&self) -> PathBuf {
        self.outside_dir().join("x.json")
    }

    /// Writes `prompt/p.prompty` whose model connection is `${file:<reference>}`.
    fn prompt(&self, reference: &str) -> PathBuf {
        self.root
            .write("prompt/p.prompty", &format!("---\nmodel:\n  id: m\n  connection: ${{file:{reference}}}\n---\nHi"))
    }
}

fn assert_outside_roots(result: Result<Agent, Error>) {
    match result {
        Err(e @ Error::FileOutsideRoots { .. }) => {
            assert!(e.to_string().contains("outside allowed roots"), "{e}");
        }
        other => panic!("expected FileOutsideRoots, got {other:?}"),
    }
}

#[test]
fn file_reference_with_parent_traversal_is_rejected() {
    let o = Outside::new();
    assert_outside_roots(load(o.prompt("../outside/x.json")));
}

#[test]
fn file_reference_with_absolute_path_outside_is_rejected() {
    let o = Outside::new();
    let abs = o.outside_file();
    assert_outside_roots(load(o.prompt(abs.to_str().unwrap())));
}

#[test]
fn file_reference_through_symlink_escaping_the_folder_is_rejected() {
    let o = Outside::new();
    std::os::unix::fs::symlink(o.outside_file(), o.root.path().join("prompt/link.json")).expect("create symlink");
    assert_outside_roots(load(o.prompt("link.json")));
}

#[test]
fn host_allowed_root_permits_the_outside_file() {
    let o = Outside::new();
    let opts = LoadOptions::new().allow_root(o.outside_dir());
    for reference in ["../outside/x.json".to_owned(), o.outside_file().to_str().unwrap().to_owned()] {
        let agent = load_with(o.prompt(&reference), &opts).unwrap_or_else(|e| panic!("{reference}: {e}"));
        assert_eq!(endpoint_of(&agent).as_deref(), Some("https://outside.test"), "{reference}");
    }
    // Through the symlink too.
    std::os::unix::fs::symlink(o.outside_file(), o.root.path().join("prompt/link.json")).unwrap();
    let agent = load_with(o.prompt("link.json"), &opts).unwrap();
    assert_eq!(endpoint_of(&agent).as_deref(), Some("https://outside.test"));
}

#[test]
fn missing_referenced_file_names_the_reference_as_written() {
    let dir = TempDir::new();
    let path =
        dir.write("p.prompty", "---\nmodel:\n  id: x\n  options:\n    stopSequences: ${file:sub/nope.json}\n---\nHi");
    let err = load(&path).unwrap_err();
    match &err {
        Error::FileReferenceNotFound { at, field, reference } => {
            assert_eq!((at.line, at.column), (Some(5), Some(20)));
            assert_eq!((field.as_str(), reference.as_str()), ("model.options.stopSequences", "sub/nope.json"));
        }
        other => panic!("expected FileReferenceNotFound, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.ends_with(":5:20: model.options.stopSequences: file reference 'sub/nope.json' was not found (the path is relative to the prompt's folder)"), "{message}");
    assert!(!message.contains(&*dir.path().join("sub").to_string_lossy()), "no absolute path: {message}");
}

#[test]
fn reference_inside_a_list_element_is_resolved() {
    let _env = env_lock();
    std::env::set_var("PROMPTY_TEST_STOP", "STOP!");
    let agent = load_text(
        "---\nmodel:\n  id: m\n  options:\n    stopSequences:\n      - END\n      - ${env:PROMPTY_TEST_STOP}\n---\nHi",
    )
    .unwrap();
    let stops = agent.model.unwrap().options.unwrap().stop_sequences.unwrap();
    assert_eq!(stops, vec!["END".to_owned(), "STOP!".to_owned()]);
}

#[test]
fn self_referencing_file_reference_is_an_error_not_a_stack_overflow() {
    let dir = TempDir::new();
    dir.write("a.json", r#""${file:a.json}""#);
    let path = dir.write("p.prompty", "---\ndescription: ${file:a.json}\n---\nHi");
    let e = load(&path).expect_err("a reference cycle must fail");
    println!("cycle error: {e}");
}

#[test]
fn dotenv_file_beside_the_prompt_is_never_loaded() {
    let _env = env_lock();
    std::env::remove_var("PROMPTY_TEST_DOTENV");
    let dir = TempDir::new();
    dir.write(".env", "PROMPTY_TEST_DOTENV=1\n");
    let path = dir.write("p.prompty", "---\ndescription: ${env:PROMPTY_TEST_DOTENV}\n---\nHi");
    match load(&path) {
        Err(Error::EnvVarNotSet { var, .. }) => assert_eq!(var, "PROMPTY_TEST_DOTENV"),
        other => panic!("expected EnvVarNotSet, got {other:?}"),
    }
    assert!(std::env::var("PROMPTY_TEST_DOTENV").is_err());
}

// ---------------------------------------------------------------------------------------------
// validate_inputs
// ---------------------------------------------------------------------------------------------

#[test]
fn validate_inputs_fills_defaults() {
    let agent = agent_with_inputs(json!({"unit": "celsius", "n": 3}));
    let out = validate_inputs(&agent, &json!({"n": 7})).unwrap();
    assert_eq!(Value::Object(out), json!({"n": 7, "unit": "celsius"}));
}

#[test]
fn validate_inputs_never_uses_example() {
    let agent = agent_with_inputs(json!([{"name": "city", "kind": "string", "example": "Paris"}]));
    let out = validate_inputs(&agent, &json!({})).unwrap();
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn validate_inputs_missing_required_names_the_input() {
    let agent = agent_with_inputs(json!([
        {"name": "city", "kind": "string", "required": true, "example": "Paris"}
    ]));
    let e = validate_inputs(&agent, &json!({})).unwrap_err();
    assert!(matches!(&e, Error::MissingInput { name } if name == "city"), "{e:?}");
    assert_eq!(e.to_string(), "Missing required input: city");
}

#[test]
fn validate_inputs_omits_optional_inputs_without_default() {
    let agent = agent_with_inputs(json!([
        {"name": "a", "kind": "string"},
        {"name": "b", "kind": "string", "default": "B"},
    ]));
    let out = validate_inputs(&agent, &json!({})).unwrap();
    assert_eq!(Value::Object(out), json!({"b": "B"}));
}

#[test]
fn validate_inputs_passes_extra_inputs_through_unchecked() {
    let agent = agent_with_inputs(json!([{"name": "n", "kind": "integer"}]));
    let out = validate_inputs(&agent, &json!({"n": "not a number", "extra": [1, 2]})).unwrap();
    assert_eq!(Value::Object(out), json!({"n": "not a number", "extra": [1, 2]}));
}

#[test]
fn validate_inputs_treats_null_as_no_inputs() {
    let agent = agent_with_inputs(json!({"greeting": "hello"}));
    let out = validate_inputs(&agent, &Value::Null).unwrap();
    assert_eq!(Value::Object(out), json!({"greeting": "hello"}));
}

#[test]
fn validate_inputs_rejects_non_object_inputs() {
    let agent = agent_with_inputs(json!({"greeting": "hello"}));
    for bad in [json!([1, 2]), json!("text"), json!(3)] {
        match validate_inputs(&agent, &bad) {
            Err(Error::InvalidInputs { .. }) => {}
            other => panic!("{bad}: expected InvalidInputs, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------------------------

#[test]
fn debug_output_of_an_agent_never_contains_the_api_key() {
    let key = "sk-debug-secret-4242";
    let client_secret = "oauth-client-secret-9999";
    let agent = load_text(&format!(
        "---\nmodel:\n  id: m\n  connection:\n    kind: key\n    endpoint: https://k.test\n    apiKey: {key}\ntools:\n  - name: t\n    kind: openapi\n    specification: ./s.json\n    connection:\n      kind: oauth\n      endpoint: https://o.test\n      clientId: cid\n      clientSecret: {client_secret}\n      tokenUrl: https://o.test/token\n---\nHi"
    ))
    .unwrap();
    // The key did load.
    match &agent.model.as_ref().unwrap().connection {
        Some(Connection::Key { api_key: Some(k), .. }) => assert_eq!(k.expose(), key),
        other => panic!("expected a key connection, got {other:?}"),
    }
    assert!(matches!(agent.tools.as_ref().unwrap()[0].kind, ToolKind::OpenApi(_)));
    let debug = format!("{agent:?}");
    let pretty = format!("{agent:#?}");
    for text in [&debug, &pretty] {
        assert!(!text.contains(key), "API key leaked in Debug output");
        assert!(!text.contains(client_secret), "client secret leaked in Debug output");
        assert!(text.contains("REDACTED"));
    }
}

#[test]
fn a_type_error_on_a_value_from_the_environment_does_not_show_the_value() {
    let _guard = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("PROMPTY_TEST_LEAKY_SECRET", "sk-very-secret-value");
    let text = "---\nmodel:\n  id: gpt\n  options:\n    temperature: ${env:PROMPTY_TEST_LEAKY_SECRET}\n---\nHi";
    let err = prompty_core::load_str(text, ".", "leak.prompty").unwrap_err();
    std::env::remove_var("PROMPTY_TEST_LEAKY_SECRET");
    let msg = err.to_string();
    assert!(msg.contains("model.options.temperature"), "{msg}");
    assert!(!msg.contains("sk-very-secret-value"), "{msg}");
    assert!(msg.contains("[REDACTED]"), "{msg}");
}

#[test]
fn the_kept_source_text_is_not_in_debug_output() {
    let text = "---\nmodel:\n  id: gpt\n  connection:\n    kind: key\n    apiKey: sk-literal-in-the-file\n---\nHi";
    let agent = prompty_core::load_str(text, ".", "literal.prompty").unwrap();
    assert_eq!(agent.source.as_ref().and_then(|s| s.text.as_deref()), Some(text));
    let debug = format!("{agent:?}");
    assert!(!debug.contains("sk-literal-in-the-file"), "{debug}");
    assert!(debug.contains(&format!("<{} bytes>", text.len())), "{debug}");
}

#[test]
fn loading_the_same_text_again_sees_a_changed_environment_and_changed_files() {
    let _guard = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("prompty-finished-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text =
        "---\nname: cached\nmodel:\n  id: ${env:PROMPTY_TEST_CACHED_MODEL:fallback}\ninputs: [q]\n---\nuser:\n{{ q }}";
    let model = |a: &prompty_core::Agent| a.model.as_ref().unwrap().id.clone();
    std::env::set_var("PROMPTY_TEST_CACHED_MODEL", "first");
    let a = prompty_core::load_str(text, &dir, "a.prompty").unwrap();
    let b = prompty_core::load_str(text, &dir, "b.prompty").unwrap();
    assert_eq!((model(&a), model(&b)), ("first".to_owned(), "first".to_owned()));
    // The second load names its own file and keeps its own body.
    assert_eq!(b.source.as_ref().unwrap().path, "b.prompty");
    assert_eq!(b.instructions.as_deref(), Some("user:\n{{ q }}"));
    std::env::set_var("PROMPTY_TEST_CACHED_MODEL", "second");
    assert_eq!(model(&prompty_core::load_str(text, &dir, "a.prompty").unwrap()), "second");
    std::env::remove_var("PROMPTY_TEST_CACHED_MODEL");
    assert_eq!(model(&prompty_core::load_str(text, &dir, "a.prompty").unwrap()), "fallback");
    // Another body under the same frontmatter.
    let other = text.replace("{{ q }}", "Q: {{ q }}");
    assert_eq!(
        prompty_core::load_str(&other, &dir, "a.prompty").unwrap().instructions.as_deref(),
        Some("user:\nQ: {{ q }}")
    );
    // `${env:}` kept (compile time) and resolved are different agents.
    let keep = prompty_core::LoadOptions::new().keep_env_references();
    let kept = prompty_core::load_str_with(text, &dir, "a.prompty", &keep).unwrap();
    assert_eq!(model(&kept), "${env:PROMPTY_TEST_CACHED_MODEL:fallback}");
    // Kept references are known to be there, also when the load comes from the cache, so the
    // runtime resolves them when it sends the agent; a resolved agent has none.
    assert!(kept.has_env_references());
    assert!(prompty_core::load_str_with(text, &dir, "a.prompty", &keep).unwrap().has_env_references());
    assert!(!prompty_core::load_str(text, &dir, "a.prompty").unwrap().has_env_references());
    assert!(!kept.with_env_resolved().unwrap().has_env_references());
    let plain = prompty_core::load_str_with("---\nmodel: {id: m}\n---\nHi", &dir, "p.prompty", &keep).unwrap();
    assert!(!plain.has_env_references(), "nothing was kept");

    // A `${file:}` reference is read on every load.
    std::fs::write(dir.join("about.txt"), "one").unwrap();
    let text = "---\ndescription: ${file:about.txt}\n---\nHi";
    assert_eq!(prompty_core::load_str(text, &dir, "f.prompty").unwrap().description.as_deref(), Some("one"));
    std::fs::write(dir.join("about.txt"), "two").unwrap();
    assert_eq!(prompty_core::load_str(text, &dir, "f.prompty").unwrap().description.as_deref(), Some("two"));
}

/// Spec §2.2: after the frontmatter the body starts at its first non-blank character (the split
/// pattern's `\s*`), and its line is the line of that character, for error locations.
#[test]
fn body_starts_at_its_first_non_blank_character() {
    let agent =
        prompty_core::load_str("---\nname: x\n---\n\n  \n   hello {{ who }}\n  bye\n", ".", "b.prompty").unwrap();
    assert_eq!(agent.instructions.as_deref(), Some("hello {{ who }}\n  bye"));
    assert_eq!(agent.source.as_ref().unwrap().body_line, 6);
    // Without a frontmatter the whole text is the body, as written.
    let agent = prompty_core::load_str("  hi", ".", "b.prompty").unwrap();
    assert_eq!(agent.instructions.as_deref(), Some("  hi"));
    assert_eq!(agent.source.as_ref().unwrap().body_line, 1);
}
