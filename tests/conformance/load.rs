//! The `load` stage (digest §2.1): load a fixture or a generated `.prompty` file and compare the
//! canonical agent JSON; or, in the validation sub-mode, check `validate_inputs`.

use crate::compare::{check, Adjustment, Check, Rule};
use crate::Ctx;
use serde_json::{Map, Value};
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs one load vector.
pub fn run(ctx: &Ctx, vector: &Value) -> Check {
    let input = &vector["input"];
    let expected = &vector["expected"];
    let observed = if is_validation(input, expected) { validate(input) } else { load(ctx, input) };
    match observed {
        Ok(value) => check(expected, &value),
        Err(message) => {
            let mut outcome = check(expected, &error_value(&message, expected));
            if let Some(want) = expected.get("error").and_then(Value::as_str) {
                if message != want && !message.contains(want) && outcome.passed() {
                    outcome
                        .adjustments
                        .push(Adjustment { rule: &ERROR_CLASS, what: format!("error {message:?} read as {want:?}") });
                }
            }
            outcome
        }
    }
}

/// The validation sub-mode: `input` has `frontmatter` and `inputs`, and the vector expects
/// `validated_inputs` or an error.
fn is_validation(input: &Value, expected: &Value) -> bool {
    input.get("frontmatter").is_some()
        && input.get("inputs").is_some()
        && (expected.get("validated_inputs").is_some() || expected.get("error").is_some())
}

/// Builds the agent straight from the frontmatter (no file, no references) and validates
/// `input.inputs` against it: `{"validated_inputs": {...}}`.
fn validate(input: &Value) -> Result<Value, String> {
    let mut frontmatter = input["frontmatter"].clone();
    for key in ["inputs", "outputs"] {
        unwrap_properties(&mut frontmatter, key);
    }
    let agent = prompty::Agent::from_value(frontmatter).map_err(|e| e.to_string())?;
    let validated = prompty::validate_inputs(&agent, &input["inputs"]).map_err(|e| e.to_string())?;
    Ok(serde_json::json!({ "validated_inputs": validated }))
}

/// `{key: {properties: X}}` becomes `{key: X}`.
fn unwrap_properties(frontmatter: &mut Value, key: &str) {
    if let Some(section) = frontmatter.get_mut(key) {
        if let Some(properties) = section.get_mut("properties").map(Value::take) {
            *section = properties;
        }
    }
}

/// Lays out the files the vector describes, sets its environment, and loads the agent:
/// its canonical JSON, or the error message (with temporary paths replaced by placeholders).
fn load(ctx: &Ctx, input: &Value) -> Result<Value, String> {
    let case = CaseDir::new();
    let path = place_agent(ctx, &case, input);
    let _env = EnvGuard::set(input.get("env"));
    match prompty::load(&path) {
        Ok(agent) => Ok(serde_json::to_value(&agent).expect("an agent serializes to JSON")),
        Err(e) => Err(scrub(&e.to_string(), &[(&case.root, "<case>"), (&ctx.fixtures, "<fixtures>")])),
    }
}

/// Writes the agent file (and `input.files`) for the vector and returns the path to load.
fn place_agent(ctx: &Ctx, case: &CaseDir, input: &Value) -> PathBuf {
    let subdir = input.get("agent_subdir").and_then(Value::as_str);
    let files = input.get("files").and_then(Value::as_object);
    let agent_dir = match subdir {
        Some(sub) => case.root.join(sub),
        None => case.root.clone(),
    };
    let target = if let Some(fixture) = input.get("fixture").and_then(Value::as_str) {
        let source = ctx.fixtures.join(fixture);
        if subdir.is_none() && files.is_none() {
            return source;
        }
        // The fixture needs companions: load a copy placed beside them.
        let copy = agent_dir.join(Path::new(fixture).file_name().unwrap_or(OsStr::new(fixture)));
        if let Ok(text) = std::fs::read_to_string(&source) {
            write_file(case, &copy, &text);
        }
        copy
    } else {
        let text = match (input.get("frontmatter_raw"), input.get("frontmatter")) {
            (Some(Value::String(raw)), _) => raw.clone(),
            (_, Some(frontmatter)) => prompty_text(frontmatter),
            _ => panic!("a load vector needs `fixture`, `frontmatter` or `frontmatter_raw`"),
        };
        let path = agent_dir.join("vector.prompty");
        write_file(case, &path, &text);
        path
    };
    for (relative, value) in files.into_iter().flatten() {
        let text = match value {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).expect("JSON serializes"),
        };
        write_file(case, &agent_dir.join(relative), &text);
    }
    target
}

/// `"---\n" + yaml(frontmatter minus instructions) + "---\n" + instructions`.
///
/// Each top-level key is written as `key: <value>` with the value in YAML flow syntax (JSON with
/// spaces after `:` and `,`), which any YAML parser reads back as the same value.
fn prompty_text(frontmatter: &Value) -> String {
    let empty = Map::new();
    let fields = frontmatter.as_object().unwrap_or(&empty);
    let mut text = String::from("---\n");
    for (key, value) in fields.iter().filter(|(k, _)| k.as_str() != "instructions") {
        text.push_str(&format!("{}: {}\n", flow(&Value::String(key.clone())), flow(value)));
    }
    text.push_str("---\n");
    text.push_str(fields.get("instructions").and_then(Value::as_str).unwrap_or(""));
    text
}

/// A JSON value in YAML flow syntax.
fn flow(value: &Value) -> String {
    match value {
        Value::Array(items) => format!("[{}]", items.iter().map(flow).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let entries: Vec<String> =
                map.iter().map(|(k, v)| format!("{}: {}", flow(&Value::String(k.clone())), flow(v))).collect();
            format!("{{{}}}", entries.join(", "))
        }
        // JSON scalars, strings included (their escapes are valid in YAML double quotes).
        scalar => scalar.to_string(),
    }
}

/// Writes `text` at `path`, creating parent folders. `path` may contain `..` but must stay inside
/// the case folder.
fn write_file(case: &CaseDir, path: &Path, text: &str) {
    let path = normalize(path);
    assert!(
        path.starts_with(&case.root),
        "vector file {} escapes the case folder {}",
        path.display(),
        case.root.display()
    );
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    }
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// Resolves `.` and `..` lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Replaces the given folders in an error message by placeholders, so that the names of temporary
/// folders cannot satisfy (or spoil) an expected error.
fn scrub(message: &str, folders: &[(&Path, &str)]) -> String {
    let mut message = message.to_owned();
    for (folder, placeholder) in folders {
        let mut forms = vec![folder.display().to_string()];
        if let Ok(canonical) = std::fs::canonicalize(folder) {
            forms.push(canonical.display().to_string());
        }
        for form in forms.into_iter().filter(|f| !f.is_empty()) {
            message = message.replace(&form, placeholder);
        }
    }
    message
}

/// An error matched by its class's words rather than by its text.
const ERROR_CLASS: Rule = Rule {
    name: "error-class",
    why: "digest §2.1: an error named by a class or a phrase matches a message with one of the class's words",
};

/// Expected errors that are named by a class or a phrase, and words of our messages that stand
/// for them (digest §2.1).
const FUZZY_ERRORS: &[(&str, &[&str])] = &[
    ("invalid frontmatter", &["yaml", "mapping", "frontmatter", "flow"]),
    ("FileNotFoundError", &["not found", "no such file", "os error 2"]),
    ("Invalid template format", &["template"]),
    ("Missing required input", &["required"]),
];

/// Maps an error message to the vectors' error shape: `{"error": <expected>, "error_field"?}` when
/// it matches `expected.error`, else `{"error": <message>}`.
fn error_value(message: &str, expected: &Value) -> Value {
    let mut out = Map::new();
    let matched = expected.get("error").and_then(Value::as_str).filter(|want| error_matches(message, want));
    let Some(want) = matched else {
        out.insert("error".into(), Value::String(message.to_owned()));
        return Value::Object(out);
    };
    out.insert("error".into(), Value::String(want.to_owned()));
    if let Some(field) = expected.get("error_field").and_then(Value::as_str) {
        if message.contains(field) {
            out.insert("error_field".into(), Value::String(field.to_owned()));
        }
    }
    Value::Object(out)
}

fn error_matches(message: &str, want: &str) -> bool {
    if message == want || message.contains(want) {
        return true;
    }
    let lower = message.to_lowercase();
    FUZZY_ERRORS.iter().any(|(name, words)| *name == want && words.iter().any(|w| lower.contains(w)))
}

/// A fresh temporary folder for one case, removed when dropped (also on panic).
struct CaseDir {
    root: PathBuf,
}

impl CaseDir {
    fn new() -> CaseDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("prompty-conformance-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("cannot create {}: {e}", root.display()));
        CaseDir { root }
    }
}

impl Drop for CaseDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Environment variables set for one case and restored when dropped (also on panic). A `null`
/// value unsets the variable; other non-strings are set to their JSON text.
struct EnvGuard {
    saved: Vec<(String, Option<OsString>)>,
}

impl EnvGuard {
    fn set(env: Option<&Value>) -> EnvGuard {
        let mut saved = Vec::new();
        for (name, value) in env.and_then(Value::as_object).into_iter().flatten() {
            saved.push((name.clone(), std::env::var_os(name)));
            match value {
                Value::Null => std::env::remove_var(name),
                Value::String(s) => std::env::set_var(name, s),
                other => std::env::set_var(name, other.to_string()),
            }
        }
        EnvGuard { saved }
    }
}

impl Drop for EnvGuard {
    fn drop(&mut self) {
        for (name, old) in self.saved.drain(..).rev() {
            match old {
                Some(value) => std::env::set_var(&name, value),
                None => std::env::remove_var(&name),
            }
        }
    }
}
