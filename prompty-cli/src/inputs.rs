//! Inputs from the command line: `--input key=value` pairs, a JSON object file (`--inputs
//! FILE.json`) and batch files of JSON lines (`--inputs FILE.jsonl`); the names given checked
//! against those the prompt declares ([`check_declared`]).

use crate::exit::{CliError, CliResult};
use prompty::analysis::closest;
use prompty::{Agent, FormatError, PropertyKind};
use serde_json::{Map, Value};
use std::path::Path;

/// The largest `--inputs` file read, in bytes (a JSON object, or a batch of JSON lines).
pub const MAX_INPUTS_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// The longest line of a batch file, in bytes; a longer line is a failed result of its own.
pub const MAX_BATCH_LINE_BYTES: usize = 1024 * 1024;
/// The most lines of a batch file.
pub const MAX_BATCH_LINES: usize = 100_000;

/// Whether `--inputs` names a batch file (`.jsonl` or `.ndjson`).
pub fn is_batch(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("ndjson"))
}

/// The inputs of one call (`run`, `chat`, `render`, `prepare`): the `--inputs FILE.json` object,
/// then the `--input` pairs over it, their names checked with [`check_declared`] (unless
/// `allow_extra`). A batch file is refused: only `prompty run` takes one, through [`batch_file`].
pub fn one_call(
    file: Option<&Path>,
    given: &[String],
    agent: &Agent,
    allow_extra: bool,
) -> CliResult<Map<String, Value>> {
    let (mut all, from_file) = match file {
        Some(file) if is_batch(file) => {
            return Err(CliError::usage("a batch of inputs (--inputs FILE.jsonl) is only for `prompty run`"))
        }
        Some(file) => (object_file(file)?, file.display().to_string()),
        None => (Map::new(), String::new()),
    };
    let given = pairs(given, agent)?;
    let sources = [Source { origin: &from_file, inputs: &all }, Source { origin: "--input", inputs: &given }];
    check_declared(agent, &sources, allow_extra)?;
    all.extend(given);
    Ok(all)
}

/// Inputs from one place on the command line, for [`check_declared`].
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// Where they come from, as errors name it: `--input`, `in.json`, `lines.jsonl:7`.
    pub origin: &'a str,
    /// The inputs given there.
    pub inputs: &'a Map<String, Value>,
}

/// Refuses input names the prompt does not declare: a misspelt `-i nmae=Bob` would otherwise
/// reach nothing, silently (the library lets undeclared inputs through, as the spec says; the
/// command line is where a person types them). The error (a prompt error, exit 3) names each
/// unknown key, where it was given and the declared input closest to it (saying so when that input
/// is required and was not given: `did you mean `question` for `questoin`?`), and lists the
/// declared inputs. Nothing is refused when `allow_extra` (`--allow-extra-inputs`) or when the
/// prompt declares no inputs at all.
pub fn check_declared(agent: &Agent, sources: &[Source<'_>], allow_extra: bool) -> CliResult<()> {
    let declared = agent.inputs.as_deref().unwrap_or_default();
    if allow_extra || declared.is_empty() {
        return Ok(());
    }
    let names = || declared.iter().map(|p| p.name.as_str());
    let given = |name: &str| sources.iter().any(|s| s.inputs.contains_key(name));
    let mut unknown = Vec::new();
    for source in sources {
        for key in source.inputs.keys().filter(|k| !names().any(|n| n == k.as_str())) {
            let hint = match closest(key, names()) {
                Some(near) if !given(near) && declared.iter().any(|p| p.name == near && is_required(p)) => {
                    format!(", did you mean `{near}` for `{key}`? `{near}` is required and was not given")
                }
                Some(near) => format!(", did you mean `{near}`?"),
                None => String::new(),
            };
            unknown.push(format!("`{key}` ({}{hint})", source.origin));
        }
    }
    if unknown.is_empty() {
        return Ok(());
    }
    let plural = if unknown.len() == 1 { "" } else { "s" };
    Err(CliError::prompt(format!(
        "unknown input{plural} {}: the prompt declares {}. Fix the name{plural}, or pass --allow-extra-inputs to \
         let inputs the prompt does not declare through",
        unknown.join(", "),
        names().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    )))
}

/// Whether the input must be given: required, without a default.
fn is_required(p: &prompty::Property) -> bool {
    p.required && p.default.is_none()
}

/// [`prompty::validate_inputs`] (defaults filled in), and when a required input is missing while
/// a given key is close to its name (let through by `--allow-extra-inputs`), the error says so.
pub fn validate(agent: &Agent, inputs: &Value) -> CliResult<Map<String, Value>> {
    prompty::validate_inputs(agent, inputs).map_err(|e| {
        if let FormatError::MissingInput { name } = &e {
            let keys = inputs.as_object().into_iter().flat_map(Map::keys).map(String::as_str);
            if let Some(near) = closest(name, keys) {
                return CliError::prompt(format!("{e} (did you mean `{name}` for `{near}`?)"));
            }
        }
        e.into()
    })
}

/// The `--input key=value` pairs as inputs. A value is taken as text, except for inputs the
/// prompt declares with a kind that text is not (`integer`, `float`, `boolean`, `array`,
/// `object`, `thread`): their value is read as JSON.
pub fn pairs(pairs: &[String], agent: &Agent) -> CliResult<Map<String, Value>> {
    let mut out = Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(CliError::usage(format!("--input expects KEY=VALUE, got `{pair}`")));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(CliError::usage(format!("--input expects KEY=VALUE, got `{pair}` (no key)")));
        }
        let kind = agent.inputs.iter().flatten().find(|p| p.name == key).map(|p| &p.kind);
        let value = match kind {
            Some(
                PropertyKind::Integer
                | PropertyKind::Float
                | PropertyKind::Boolean
                | PropertyKind::Array
                | PropertyKind::Object
                | PropertyKind::Thread,
            ) => serde_json::from_str(value).map_err(|e| {
                CliError::usage(format!(
                    "--input {key}: the input is declared `{}`, so its value must be JSON: {e}",
                    kind.map(PropertyKind::as_str).unwrap_or_default()
                ))
            })?,
            _ => Value::String(value.to_owned()),
        };
        out.insert(key.to_owned(), value);
    }
    Ok(out)
}

/// Reads a file of at most [`MAX_INPUTS_FILE_BYTES`], naming it in errors.
fn read(path: &Path) -> CliResult<String> {
    let meta = std::fs::metadata(path).map_err(|e| CliError::prompt(format!("{}: {e}", path.display())))?;
    if meta.len() > MAX_INPUTS_FILE_BYTES {
        return Err(CliError::prompt(format!(
            "{}: the file is larger than {MAX_INPUTS_FILE_BYTES} bytes",
            path.display()
        )));
    }
    std::fs::read_to_string(path).map_err(|e| CliError::prompt(format!("{}: {e}", path.display())))
}

/// A `--inputs FILE.json`: one JSON object.
pub fn object_file(path: &Path) -> CliResult<Map<String, Value>> {
    let text = read(path)?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(CliError::prompt(format!("{}: the inputs must be a JSON object", path.display()))),
        Err(e) => Err(CliError::prompt(format!("{}:{}:{}: invalid JSON: {e}", path.display(), e.line(), e.column()))),
    }
}

/// One line of a batch file: its 1-based number and its inputs, or why they cannot be read.
#[derive(Debug)]
pub struct BatchLine {
    /// The line's number in the file (1-based).
    pub line: usize,
    /// The inputs, or a message naming the file and line.
    pub inputs: Result<Map<String, Value>, String>,
}

/// A `--inputs FILE.jsonl`: one JSON object per line (blank lines are skipped); a line that is
/// not a JSON object, or longer than [`MAX_BATCH_LINE_BYTES`], becomes a failed result of its own.
pub fn batch_file(path: &Path) -> CliResult<Vec<BatchLine>> {
    let text = read(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if out.len() == MAX_BATCH_LINES {
            return Err(CliError::prompt(format!("{}: more than {MAX_BATCH_LINES} input lines", path.display())));
        }
        let at = format!("{}:{number}", path.display());
        let inputs = if line.len() > MAX_BATCH_LINE_BYTES {
            Err(format!("{at}: the line is longer than {MAX_BATCH_LINE_BYTES} bytes"))
        } else {
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(map)) => Ok(map),
                Ok(_) => Err(format!("{at}: the line must be a JSON object")),
                Err(e) => Err(format!("{at}:{}: invalid JSON: {e}", e.column())),
            }
        };
        out.push(BatchLine { line: number, inputs });
    }
    Ok(out)
}
