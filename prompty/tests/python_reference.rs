//! Differential test against the Python reference runtime (PyPI `prompty`, pinned in
//! `pyref/requirements.txt`): every `.prompty` file of the repository, 300 generated prompts and a
//! few prompts that are wrong on purpose are loaded and prepared by both runtimes with the same
//! inputs (and the same environment variables). The messages must be equal, or both runtimes must
//! fail with the same class of error, except where a deviation listed in [`DEVIATIONS`] explains
//! the difference. A listed deviation that no longer occurs fails the test too, so the list stays
//! true; so do fewer than [`MIN_EQUAL`] cases equal without any deviation, a generated prompt that
//! either runtime refuses (other than for a listed deviation), and a wrong prompt that does not fail
//! with its expected class on both sides.
//!
//! # The reference runtime
//!
//! It runs in a virtualenv cached outside the repository, at
//! `${XDG_CACHE_HOME:-$HOME/.cache}/prompty-rs/pyref-<first 12 hex digits of the SHA-256 of
//! pyref/requirements.txt>`, the folder `.ci/run` builds. When it is missing the test builds it
//! (`python3 -m venv`, then `pip install -r pyref/requirements.txt`: Python 3 with its `venv`
//! module and access to PyPI, once per machine), as the end-to-end tests build theirs
//! (`e2e/peers.rs`), and fails, saying what to install, when it cannot. Set
//! `PROMPTY_SKIP_PYTHON_REFERENCE=1` to skip the comparison (refused when `CI=true`). One Python
//! process (`pyref/driver.py`) prepares every case.
//!
//! # Comparison
//!
//! Both sides are compared as a list of `{role, parts, metadata}`, one per message: the role in
//! lowercase; the parts in order, a text part as `{kind: "text", value}`, a media part as
//! `{kind, source, mediaType?, detail?}` (absent fields left out on both sides); `metadata` left out
//! when empty (Python's `Message.metadata` is an empty dict by default, ours is skipped when
//! empty).
//!
//! A failure is compared by its [`ErrorClass`]: our [`prompty::Error`] variant on one side, the
//! Python exception's type on the other (see [`our_class`] and [`their_class`]). A failure on one
//! side only is a difference.
//!
//! When the messages differ, every deviation's normalisation is applied once, in the order of
//! [`DEVIATIONS`] (each only to the cases its trigger names: a tag of the generator, an input of
//! some kind); the result must then be equal. A deviation is counted for a case when leaving out
//! its normalisation alone would make the two sides differ again (when no single one is needed,
//! every normalisation that changed something is counted). Strict mode is the one exception: the
//! reference's result with strict mode off is compared only when the result as loaded is not equal.
//!
//! `nunjucks` prompts (the TypeScript runtime's key, which the Python runtime does not have) are
//! given to the Python side with `jinja2` in its place.

// The virtualenv builder shared with the end-to-end tests (`peers::venv`) and what it needs.
#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/peers.rs"]
mod peers;

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The fewest cases whose messages must be equal with no deviation at all (121 of 372 when this
/// was written; the generator is deterministic, so the count moves only when a runtime, a
/// normalisation or the generator changes): a change that turns equal cases into "explained" ones
/// fails here.
const MIN_EQUAL: usize = 115;

/// The environment variable that skips the comparison when set to `1` (refused under `CI=true`).
const SKIP_VAR: &str = "PROMPTY_SKIP_PYTHON_REFERENCE";

/// A known difference between the two runtimes, decided by the spec.
struct Deviation {
    /// The rule's name, reported with each case it explains.
    rule: &'static str,
    /// The spec section that decides it.
    spec: &'static str,
    /// Why the two runtimes differ and which one the spec backs.
    reason: &'static str,
    how: How,
}

/// How a rule explains a difference.
enum How {
    /// Python's strict mode: the reference's result with `template.format.strict = false` (the
    /// driver's `loose` run) is what is compared.
    Loose,
    /// Both sides give messages that differ in this respect only: the function normalises both
    /// (ours first), changing nothing in a case its trigger does not name.
    Normalise(fn(&Case, &mut Vec<Value>, &mut Vec<Value>)),
    /// The reference fails with an error holding this text where the spec says the prompt loads
    /// and renders: our result (messages, or a failure of our own further on) is not compared.
    TheirError(&'static str),
}

/// Every known deviation from the Python reference runtime, once each.
const DEVIATIONS: &[Deviation] = &[
    Deviation {
        rule: "strict-mode-opt-in",
        spec: "§6.3, §6.2, §6.4",
        reason: "Python's strict mode is on unless a prompt sets `format.strict: false`: before rendering it rewrites \
                 every role-marker line of the template to `role[nonce=…]:` (dropping the author's attributes, \
                 leading `#` and whitespace) and refuses a marker without the nonce (one a `{% set %}` block or a \
                 `{%-` trim produces). The spec makes strict mode opt-in (§6.3) and turns marker attributes into \
                 metadata (§6.2, §6.4); prompty-rs keeps injection out by marking values instead",
        how: How::Loose,
    },
    Deviation {
        rule: "empty-message-kept",
        spec: "§6.6",
        reason: "Python drops a message whose content is empty (a role marker with nothing after it); the spec \
                 says an empty message is kept with value \"\" and never dropped. Normalised: messages whose \
                 text is empty are left out on both sides",
        how: How::Normalise(|_, ours, theirs| {
            ours.retain(|m| !is_empty_text(m));
            theirs.retain(|m| !is_empty_text(m));
        }),
    },
    Deviation {
        rule: "thread-only-where-placed",
        spec: "§5.2, §6.7",
        reason: "When the template never interpolates a thread input, Python appends the thread's messages at the \
                 end; the spec expands a thread where its nonce is, so prompty-rs leaves it out (a template that \
                 wants it writes `{{ history }}`; `prompty check` warns about an input the template never uses). \
                 Normalised: a thread input's messages at the end of Python's list, absent from ours, are removed",
        how: How::Normalise(|case, ours, theirs| {
            for messages in thread_inputs(case) {
                let n = messages.len();
                if ours.windows(n).any(|w| w == messages.as_slice()) {
                    continue;
                }
                if theirs.len() >= n && theirs[theirs.len() - n..] == messages[..] {
                    theirs.truncate(theirs.len() - n);
                }
            }
        }),
    },
    Deviation {
        rule: "media-inputs-in-place",
        spec: "§5.2, §6.7, §12.6",
        reason: "Python turns an image/file/audio input's nonce into a part appended to a user message (or a new \
                 user message), splitting the text around it and stripping its whitespace, and expands one media \
                 nonce per message, chosen by set order (the others stay in the text); prompty-rs puts the media \
                 part where the template interpolates it, in the message the template writes it in. Normalised, \
                 in cases with a media input: media parts and media nonces leave the messages (a message of \
                 media parts only is left out), the text of a message that held one (or is followed by a message \
                 of media parts only) is trimmed, and the media parts are compared as a set after the messages; \
                 roles, message boundaries and text are still compared",
        how: How::Normalise(|case, ours, theirs| {
            if case.tags.contains(&"media") {
                let mut unexpanded = Vec::new();
                let mut theirs_media = lift_media(case, theirs, &mut unexpanded);
                let mut ours_media = lift_media(case, ours, &mut Vec::new());
                // A part Python left as a nonce in the text counts as that nonce on both sides.
                for p in &mut ours_media {
                    if unexpanded.iter().any(|u| *u == p["source"]) {
                        *p = json!({"kind": "unexpanded", "source": p["source"]});
                    }
                }
                theirs_media.extend(unexpanded.into_iter().map(|s| json!({"kind": "unexpanded", "source": s})));
                for (side, media) in [(ours, ours_media), (theirs, theirs_media)] {
                    let mut media: Vec<Value> = media;
                    media.sort_by_key(Value::to_string);
                    side.push(json!({"role": "(media parts)", "parts": media}));
                }
            }
        }),
    },
    Deviation {
        rule: "thread-split-trims-newlines",
        spec: "§6.7 with §6.4/§6.6 (digest C4)",
        reason: "Where a thread input splits a message, Python strips all whitespace from the text around it; \
                 prompty-rs trims it as the parser trims any message, newlines only (the `content_trimmed` \
                 vector), so indentation at the start or end of the text stays. Normalised: the text of the \
                 messages just before and just after a thread's messages is trimmed on both sides",
        how: How::Normalise(|case, ours, theirs| {
            for messages in thread_inputs(case) {
                for side in [&mut *ours, &mut *theirs] {
                    let n = messages.len();
                    let Some(at) = side.windows(n).position(|w| w == messages.as_slice()) else { continue };
                    let mut around = vec![at + n];
                    around.extend(at.checked_sub(1));
                    let len = side.len();
                    for i in around.into_iter().filter(|&i| i < len) {
                        for p in side[i]["parts"].as_array_mut().into_iter().flatten() {
                            if let Some(v) = p["value"].as_str().map(|v| v.trim().to_owned()) {
                                p["value"] = Value::from(v);
                            }
                        }
                    }
                }
            }
        }),
    },
    Deviation {
        rule: "b2-stringification",
        spec: "§5.5 (jinja-subset B2)",
        reason: "Python's Jinja2 prints True, False, None and 4.0; the Prompty Jinja subset prints true, false, \
                 nothing and 4. Normalised, in generated cases that print a boolean, none or a float: those words \
                 in Python's text are replaced by the subset's",
        how: How::Normalise(|case, _, theirs| {
            if case.tags.contains(&"b2") {
                *theirs = b2(theirs);
            }
        }),
    },
    Deviation {
        rule: "undefined-is-empty",
        spec: "§5.5 (jinja-subset §5.3)",
        reason: "Python's Jinja2 raises UndefinedError on an attribute of an undefined value or a comparison with \
                 one; in the subset an undefined value (and any attribute of it) is empty",
        how: How::TheirError("UndefinedError"),
    },
    Deviation {
        rule: "scalar-input-shorthand",
        spec: "§2.7, §4.4 (digest C5)",
        reason: "Python fails to load `inputs: {name: value}` (\"Invalid Property discriminator field 'kind'\"); the \
                 spec says a scalar is shorthand for an input of the inferred kind with that default",
        how: How::TheirError("discriminator field 'kind'"),
    },
    Deviation {
        rule: "array-items-optional",
        spec: "§2.7",
        reason: "Python refuses an `array` input without `items`; §2.7 makes no field but `kind` required, and an \
                 array of anything renders",
        how: How::TheirError("items: missing required field"),
    },
    Deviation {
        rule: "template-parser-default",
        spec: "§2.8",
        reason: "Python refuses a `template` with a `format` and no `parser`; prompty-rs fills the omitted part with \
                 its default (`parser: prompty`), as §2.8 does for an omitted template (and then goes on: to the \
                 messages, or to its own error, such as an unknown renderer)",
        how: How::TheirError("template.parser: missing required field"),
    },
    Deviation {
        rule: "prompty-tool-connection-optional",
        spec: "§2.9",
        reason: "Python refuses a `kind: prompty` tool without a `connection`; §2.9 asks none of it (the child \
                 prompt has its own model)",
        how: How::TheirError("connection: missing required field"),
    },
    Deviation {
        rule: "endpoint-trust",
        spec: "§2.5 (no such rule)",
        reason: "Python 2.1.0 refuses to load a key connection whose endpoint is a literal it does not trust; the \
                 spec has no such rule, and prompty-rs keeps credentials to their host when sending instead",
        how: How::TheirError("is not trusted to receive ambient credentials"),
    },
    Deviation {
        rule: "input-named-self",
        spec: "§12.2",
        reason: "Python's renderer passes inputs as keyword arguments of `Template.render(self, ...)`, so an input \
                 named `self` is a TypeError; any name is an input name",
        how: How::TheirError("multiple values for argument 'self'"),
    },
    Deviation {
        rule: "frontmatter-not-a-mapping",
        spec: "§2.2",
        reason: "Python indexes a frontmatter that is a YAML list as if it were a mapping and fails with an internal \
                 TypeError (\"list indices must be integers\"); prompty-rs reports invalid frontmatter (\"must be a \
                 mapping of keys to values\") at its line, the class a bad frontmatter has elsewhere",
        how: How::TheirError("list indices must be integers"),
    },
];

/// What kind of failure a result is, the same on both sides: the unit failures are compared in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ErrorClass {
    /// The frontmatter is not YAML, or not a mapping.
    InvalidFrontmatter,
    /// The prompt, or a file it references, is not there.
    FileNotFound,
    /// A `${env:NAME}` reference names an unset variable.
    EnvVarNotSet,
    /// No renderer for `template.format`.
    UnknownRenderer,
    /// The template does not compile: a block never closed, a tag out of place.
    TemplateSyntax,
    /// The template names a filter or test that does not exist.
    TemplateUnknownName,
    /// Anything else, by our variant or Python's exception type: never equal across the runtimes.
    Other(String),
}

/// Our error's class, by variant (and, for a template error, by the template engine's kind).
fn our_class(e: &prompty::Error) -> ErrorClass {
    use prompty::{Error, FormatError};
    match e {
        Error::Format(FormatError::FileNotFound { .. } | FormatError::FileReferenceNotFound { .. }) => {
            ErrorClass::FileNotFound
        }
        Error::Format(FormatError::Frontmatter { .. }) => ErrorClass::InvalidFrontmatter,
        Error::Format(FormatError::EnvVarNotSet { .. }) => ErrorClass::EnvVarNotSet,
        Error::UnknownComponent { component: "renderer", .. } => ErrorClass::UnknownRenderer,
        // minijinja's messages start with the kind of error (a mustache syntax error: see `ours`).
        Error::Template { message, .. } if message.starts_with("syntax error") => ErrorClass::TemplateSyntax,
        Error::Template { message, .. }
            if message.starts_with("unknown filter") || message.starts_with("unknown test") =>
        {
            ErrorClass::TemplateUnknownName
        }
        other => {
            ErrorClass::Other(format!("ours: {}", format!("{other:?}").split(['(', ' ', '{']).next().unwrap_or("")))
        }
    }
}

/// The Python error's class, by exception type (`Type: message`, as the driver writes it).
fn their_class(error: &str) -> ErrorClass {
    let (kind, message) = error.split_once(": ").unwrap_or((error, ""));
    match kind {
        // PyYAML's errors.
        "ParserError" | "ScannerError" | "ComposerError" | "ConstructorError" => ErrorClass::InvalidFrontmatter,
        "FileNotFoundError" => ErrorClass::FileNotFound,
        "PromptyLoadError" if message.starts_with("Environment variable") => ErrorClass::EnvVarNotSet,
        "InvokerError" if message.starts_with("No renderer found") => ErrorClass::UnknownRenderer,
        // Jinja2's and chevron's (mustache).
        "TemplateSyntaxError" | "ChevronError" => ErrorClass::TemplateSyntax,
        "TemplateAssertionError" if message.starts_with("No filter named") || message.starts_with("No test named") => {
            ErrorClass::TemplateUnknownName
        }
        _ => ErrorClass::Other(format!("theirs: {kind}")),
    }
}

/// A failure on one side: its class and what it said.
#[derive(Debug)]
struct Failure {
    class: ErrorClass,
    message: String,
}

/// The result of one case on one side: messages in the compared shape, or the failure.
type Outcome = Result<Vec<Value>, Failure>;

/// The reference's two results for a case: as loaded, and with strict mode off.
struct Reference {
    default: Outcome,
    loose: Outcome,
}

/// How a case compared.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Both sides gave the same messages, with no deviation.
    Equal,
    /// Both sides failed with the same class of error.
    BothFail(ErrorClass),
    /// The difference is explained by these deviations.
    Explained(Vec<&'static str>),
    /// Nothing explains it.
    Unexplained,
}

/// Our messages and the reference's after every normalisation except `skip`, and the rules whose
/// normalisation changed something.
fn normalised(case: &Case, ours: &[Value], theirs: &[Value], skip: Option<&str>) -> (bool, Vec<&'static str>) {
    let (mut a, mut b) = (ours.to_vec(), theirs.to_vec());
    let mut changed = Vec::new();
    for d in DEVIATIONS.iter().filter(|d| Some(d.rule) != skip) {
        if let How::Normalise(f) = d.how {
            let before = (a.clone(), b.clone());
            f(case, &mut a, &mut b);
            if before != (a.clone(), b.clone()) {
                changed.push(d.rule);
            }
        }
    }
    (a == b, changed)
}

/// How our result compares with the reference's.
fn explain(case: &Case, ours: &Outcome, theirs: &Reference) -> Verdict {
    let loose_rule = DEVIATIONS.iter().find(|d| matches!(d.how, How::Loose)).map(|d| d.rule);
    for (base, reference) in [(None, &theirs.default), (loose_rule, &theirs.loose)] {
        let with_base = |rules: Vec<&'static str>| base.into_iter().chain(rules).collect::<Vec<_>>();
        match (ours, reference) {
            (Ok(a), Ok(b)) if a == b => {
                return if base.is_none() { Verdict::Equal } else { Verdict::Explained(with_base(vec![])) };
            }
            (Ok(a), Ok(b)) => {
                let (equal, changed) = normalised(case, a, b, None);
                if equal {
                    let needed: Vec<&'static str> =
                        changed.iter().copied().filter(|rule| !normalised(case, a, b, Some(rule)).0).collect();
                    return Verdict::Explained(with_base(if needed.is_empty() { changed } else { needed }));
                }
            }
            (Err(a), Err(b)) if a.class == b.class => {
                return if base.is_none() {
                    Verdict::BothFail(a.class.clone())
                } else {
                    Verdict::Explained(with_base(vec![]))
                };
            }
            (_, Err(b)) => {
                let rule = DEVIATIONS.iter().find_map(|d| match d.how {
                    How::TheirError(text) if b.message.contains(text) => Some(d.rule),
                    _ => None,
                });
                if let Some(rule) = rule {
                    return Verdict::Explained(with_base(vec![rule]));
                }
            }
            (Err(_), Ok(_)) => {}
        }
    }
    Verdict::Unexplained
}

/// A case's inputs that are threads of plain text messages, as messages in the compared shape.
fn thread_inputs(case: &Case) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for thread in case.inputs.as_object().into_iter().flat_map(|o| o.values()) {
        let Some(items) = thread.as_array() else { continue };
        let messages: Vec<Value> = items
            .iter()
            .filter_map(|m| {
                let (role, content) = (m.get("role")?.as_str()?, m.get("content")?.as_str()?);
                Some(json!({"role": role, "parts": [{"kind": "text", "value": content}]}))
            })
            .collect();
        if !messages.is_empty() && messages.len() == items.len() {
            out.push(messages);
        }
    }
    out
}

/// Takes the media parts (and the nonces of media inputs left in the text, whose input values go to
/// `unexpanded`) out of `messages` as the `media-inputs-in-place` rule says, and returns the parts.
fn lift_media(case: &Case, messages: &mut Vec<Value>, unexpanded: &mut Vec<Value>) -> Vec<Value> {
    const NONCE: &str = "__PROMPTY_THREAD_";
    let only_media =
        |m: &Value| m["parts"].as_array().is_some_and(|p| !p.is_empty() && p.iter().all(|p| p["kind"] != "text"));
    let mut media = Vec::new();
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if only_media(m) {
            media.extend(m["parts"].as_array().into_iter().flatten().cloned());
            continue;
        }
        let mut held = messages.get(i + 1).is_some_and(only_media);
        let mut text = String::new();
        for p in m["parts"].as_array().into_iter().flatten() {
            let Some(value) = p["value"].as_str().filter(|_| p["kind"] == "text") else {
                media.push(p.clone());
                held = true;
                continue;
            };
            let mut rest = value;
            while let Some(at) = rest.find(NONCE) {
                let token = &rest[at + NONCE.len()..];
                let Some(end) = token.find("__") else { break };
                let input = token[..end].split_once('_').and_then(|(_, name)| case.inputs.get(name));
                let Some(input) = input.filter(|v| v.is_string()) else { break };
                unexpanded.push(input.clone());
                held = true;
                text.push_str(&rest[..at]);
                rest = &token[end + 2..];
            }
            text.push_str(rest);
        }
        let text = if held { text.trim().to_owned() } else { text };
        let mut m = m.clone();
        m["parts"] = json!([{"kind": "text", "value": text}]);
        out.push(m);
    }
    *messages = out;
    media
}

fn is_empty_text(m: &Value) -> bool {
    m["parts"].as_array().is_some_and(|p| p.iter().all(|p| p["kind"] == "text" && p["value"] == ""))
}

/// The reference's messages with Python's printing of booleans, none and integral floats
/// replaced by the subset's (the generator writes these words nowhere else).
fn b2(messages: &[Value]) -> Vec<Value> {
    let fix = |text: &str| {
        let mut out = String::with_capacity(text.len());
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            let w = match word.as_str() {
                "True" => "true",
                "False" => "false",
                "None" => "",
                w if w.ends_with(".0") && w[..w.len() - 2].bytes().all(|b| b.is_ascii_digit()) && w.len() > 2 => {
                    &w[..w.len() - 2]
                }
                w => w,
            };
            out.push_str(w);
            word.clear();
        };
        for c in text.chars() {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    };
    messages
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Some(parts) = m["parts"].as_array_mut() {
                for p in parts {
                    if let Some(v) = p["value"].as_str().map(fix) {
                        p["value"] = Value::from(v);
                    }
                }
            }
            m
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The reference runtime
// ---------------------------------------------------------------------------------------------

fn pyref_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pyref")
}

/// The cached virtualenv's interpreter (the folder `.ci/run` builds), built here when missing;
/// `None` when the comparison is skipped on purpose (`PROMPTY_SKIP_PYTHON_REFERENCE=1`).
fn python() -> Option<PathBuf> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if std::env::var(SKIP_VAR).is_ok_and(|v| v == "1") {
        assert!(!ci, "{SKIP_VAR}=1 is refused under CI=true: CI compares with the Python reference runtime");
        eprintln!("skipped on request ({SKIP_VAR}=1): the messages are not compared with the Python reference runtime");
        return None;
    }
    let req = pyref_dir().join("requirements.txt");
    match std::panic::catch_unwind(|| peers::venv("pyref", &req, &[])) {
        Ok(venv) => Some(venv.join("bin").join("python")),
        Err(cause) => {
            let cause = cause
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| cause.downcast_ref::<&str>().copied())
                .unwrap_or("unknown");
            panic!(
                "cannot build the Python reference runtime (the virtualenv of {}): {cause}. It needs Python 3 with \
                 its venv module (Debian/Ubuntu: `apt-get install python3-venv`) and access to PyPI once; `.ci/run` \
                 builds the same virtualenv. To skip this comparison on purpose, set {SKIP_VAR}=1 (not under CI)",
                req.display()
            )
        }
    }
}

/// Runs the driver over every case: id → messages, or the failure.
fn reference(python: &Path, cases: &[Case], dir: &Path) -> BTreeMap<String, Reference> {
    let manifest: Vec<Value> = cases
        .iter()
        .map(|c| json!({"id": c.id, "path": c.python_path.to_string_lossy(), "inputs": c.inputs}))
        .collect();
    let manifest_path = dir.join("manifest.json");
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let out = Command::new(python)
        .arg(pyref_dir().join("driver.py"))
        .arg(&manifest_path)
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run the reference runtime {}: {e}", python.display()));
    assert!(out.status.success(), "the driver failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the driver's JSON");
    let outcome = |r: &Value| match r.get("messages").and_then(Value::as_array) {
        Some(m) => Ok(m.clone()),
        None => {
            let message = r["error"].as_str().unwrap_or("?").to_owned();
            Err(Failure { class: their_class(&message), message })
        }
    };
    results
        .iter()
        .map(|r| {
            let id = r["id"].as_str().unwrap_or_default().to_owned();
            (id, Reference { default: outcome(&r["default"]), loose: outcome(&r["loose"]) })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Our side
// ---------------------------------------------------------------------------------------------

/// Our messages in the compared shape, or our failure.
fn ours(case: &Case) -> Outcome {
    let failure = |e: prompty::Error| Failure { class: our_class(&e), message: e.to_string() };
    let agent = prompty::load(&case.path).map_err(failure)?;
    let messages = prompty::prepare(&agent, &case.inputs).map_err(|e| {
        // A mustache template our mustache parser refuses is a syntax error.
        let template = agent.instructions.as_deref().unwrap_or_default();
        if matches!(e, prompty::Error::Template { .. })
            && agent.template.format.kind == "mustache"
            && prompty_core::mustache::parse(template).is_err()
        {
            Failure { class: ErrorClass::TemplateSyntax, message: e.to_string() }
        } else {
            failure(e)
        }
    })?;
    Ok(messages
        .iter()
        .map(|m| {
            let parts: Vec<Value> = m
                .content
                .iter()
                .map(|p| {
                    let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
                    // Only the compared fields: kind, value/source, mediaType, detail.
                    if let Some(o) = v.as_object_mut() {
                        o.retain(|k, _| matches!(k.as_str(), "kind" | "value" | "source" | "mediaType" | "detail"));
                    }
                    v
                })
                .collect();
            let mut out = json!({"role": m.role.as_str(), "parts": parts});
            if m.has_metadata() {
                out["metadata"] = json!(m.metadata_json());
            }
            out
        })
        .collect())
}

/// One prompt and its inputs.
struct Case {
    id: String,
    /// The prompt prompty-rs loads.
    path: PathBuf,
    /// The prompt the Python runtime loads (a copy with `jinja2` for `nunjucks` prompts).
    python_path: PathBuf,
    inputs: Value,
    /// Where it comes from (`file`, `generated`, `wrong`) and what the generator put in it (`b2`,
    /// `media`, `thread`, ...), for the deviation rules.
    tags: Vec<&'static str>,
    /// For a prompt wrong on purpose: the class both runtimes must fail with.
    expect: Option<ErrorClass>,
}

// ---------------------------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------------------------

/// The `.prompty` files of the repository that a prompt author would run: the spec's fixtures,
/// the examples, the end-to-end and benchmark prompts and the UI tests' prompts (most of those are
/// wrong on purpose: both runtimes must then fail).
fn repository_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "tests/fixtures",
        "examples/prompts",
        "examples/tests/prompts",
        "prompty/tests/e2e/prompts",
        "tests/bench",
        "tests/ui/prompts",
        "tests/ui/prompts/children",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "prompty") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    files
}

/// A value for a declared input without a default, by kind.
fn sample(kind: &str, name: &str) -> Value {
    match kind {
        "integer" => json!(3),
        "float" => json!(2.5),
        "boolean" => json!(true),
        "array" => json!(["one", "two"]),
        "object" => json!({"name": "Ada", "city": "Paris"}),
        "thread" => {
            json!([{"role": "user", "content": "earlier question"}, {"role": "assistant", "content": "earlier answer"}])
        }
        "image" => json!("https://example.com/cat.png"),
        "file" => json!("https://example.com/doc.pdf"),
        "audio" => json!("https://example.com/clip.wav"),
        _ => json!(format!("a {name}")),
    }
}

/// The `${env:NAME}` names a text references.
fn env_names(text: &str, out: &mut Vec<String>) {
    let mut rest = text;
    while let Some(at) = rest.find("${env:") {
        rest = &rest[at + 6..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
}

fn repository_cases(env: &mut Vec<String>) -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
    let mut cases = Vec::new();
    for path in repository_files() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        env_names(&text, env);
        for json in std::fs::read_dir(path.parent().unwrap()).into_iter().flatten().flatten() {
            if json.path().extension().is_some_and(|x| x == "json") {
                env_names(&std::fs::read_to_string(json.path()).unwrap_or_default(), env);
            }
        }
        let id = path.canonicalize().unwrap().strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        cases.push(Case { id, python_path: path.clone(), path, inputs: json!({}), tags: vec!["file"], expect: None });
    }
    cases
}

/// Inputs for the repository's files: the declared inputs without a default get a sample value
/// (read with our loader; a file it cannot load gets none). Run after the environment is set.
fn fill_inputs(cases: &mut [Case]) {
    for case in cases.iter_mut().filter(|c| c.tags.contains(&"file")) {
        let Ok(agent) = prompty::load(&case.path) else { continue };
        let mut inputs = Map::new();
        for p in agent.inputs.iter().flatten() {
            let kind =
                serde_json::to_value(&p.kind).ok().and_then(|k| k.as_str().map(str::to_owned)).unwrap_or_default();
            if ["image", "file", "audio"].contains(&kind.as_str()) {
                case.tags.push("media");
            }
            if kind == "thread" {
                case.tags.push("thread");
            }
            if p.default.is_none() {
                inputs.insert(p.name.clone(), sample(&kind, &p.name));
            }
        }
        case.inputs = Value::Object(inputs);
    }
}

/// xorshift64: the generator's own deterministic random numbers.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// One generated prompt: its text, inputs and tags.
fn generate(rng: &mut Rng, n: usize) -> (String, Value, Vec<&'static str>) {
    let mustache = n % 10 == 9;
    let nunjucks = !mustache && n % 10 == 8;
    let mut tags = vec!["generated"];
    let mut fm = String::from("---\n");
    let _ = writeln!(fm, "name: gen{n}");
    if rng.chance(50) {
        fm.push_str("model: gpt-4o\n");
    } else {
        fm.push_str(
            "model:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    apiKey: ${env:PYREF_KEY}\n",
        );
    }
    // Inputs: a string, a number, a flag, a list of records, a record, sometimes a thread or media.
    let mut inputs = Map::new();
    let name_value = rng.pick(&["Ada", "Grace Hopper", "Élodie", "O'Brien", "line one\nline two", "  padded  ", ""]);
    let count = rng.below(4);
    let flag = rng.chance(50);
    let items: Vec<Value> = (0..rng.below(4))
        .map(|i| {
            let (title, score) = [("alpha", 7), ("beta", 12), ("gamma", 0), ("δέλτα", 3)][i];
            let tags = [json!(["x", "y"]), json!([]), json!(["z"]), json!(["w"])][i].clone();
            json!({"title": title, "score": score, "tags": tags})
        })
        .collect();
    let thread = rng.chance(20);
    if thread {
        tags.push("thread");
    }
    let media = !mustache && rng.chance(10);
    let shorthand = rng.chance(5);
    if shorthand {
        tags.push("shorthand");
        // The scalar shorthand `name: value` (a string input with a default).
        fm.push_str("inputs:\n  who: Ada\n  count: 2\n");
    } else {
        fm.push_str("inputs:\n  - name: who\n    kind: string\n");
        if rng.chance(50) {
            fm.push_str("    default: Ada\n");
        } else {
            inputs.insert("who".into(), json!(name_value));
        }
        fm.push_str("  - name: count\n    kind: integer\n    default: 2\n");
    }
    if rng.chance(50) {
        inputs.insert("count".into(), json!(count));
    }
    fm.push_str("  - name: flag\n    kind: boolean\n    default: false\n");
    if shorthand {
        // A shorthand map cannot be mixed with a list: the rest is declared as a map too.
        fm = fm.replace("  - name: flag\n    kind: boolean\n    default: false\n", "  flag: false\n");
    }
    inputs.insert("flag".into(), json!(flag));
    let decl = |fm: &mut String, name: &str, kind: &str| {
        if shorthand {
            let _ = writeln!(fm, "  {name}:\n    kind: {kind}");
        } else {
            let _ = writeln!(fm, "  - name: {name}\n    kind: {kind}");
        }
    };
    decl(&mut fm, "items", "array");
    fm.push_str("    items:\n      kind: object\n");
    inputs.insert("items".into(), Value::Array(items));
    decl(&mut fm, "profile", "object");
    inputs.insert("profile".into(), json!({"city": rng.pick(&["Paris", "Lagos", "Kyoto"]), "age": 36}));
    if thread {
        decl(&mut fm, "history", "thread");
        inputs.insert(
            "history".into(),
            json!([{"role": "user", "content": "earlier question"}, {"role": "assistant", "content": "earlier answer"}]),
        );
    }
    if media {
        decl(&mut fm, "photo", "image");
        inputs.insert("photo".into(), json!("https://example.com/p.png"));
        tags.push("media");
    }
    if mustache {
        fm.push_str("template:\n  format: mustache\n  parser: prompty\n");
    } else if nunjucks {
        fm.push_str("template:\n  format:\n    kind: nunjucks\n  parser:\n    kind: prompty\n");
    } else if rng.chance(20) {
        fm.push_str("template:\n  format: jinja2\n  parser: prompty\n");
    }
    fm.push_str("---\n");

    // The body: role sections with interpolations, loops and conditionals.
    let mut body = String::new();
    if rng.chance(30) {
        body.push_str("Text before any marker.\n");
    }
    let sections = 1 + rng.below(4);
    for s in 0..sections {
        let role = rng.pick(&["system", "user", "assistant", "developer", "user", "system"]);
        let marker = match rng.below(8) {
            0 => format!("{}:", role.to_uppercase()),
            1 => format!("# {role}:"),
            2 => format!("  {role}:  "),
            3 => {
                tags.push("attrs");
                format!("{role}[name=\"Alice\", id=7, flag=true]:")
            }
            _ => format!("{role}:"),
        };
        body.push_str(&marker);
        body.push('\n');
        if s == sections - 1 && rng.chance(15) {
            // A marker with nothing after it.
            break;
        }
        for _ in 0..1 + rng.below(3) {
            body.push_str(&line(rng, mustache, &mut tags));
            body.push('\n');
            if rng.chance(20) {
                body.push('\n');
            }
        }
        if thread && s == 0 {
            body.push_str(if mustache { "{{history}}\n" } else { "{{ history }}\n" });
        }
        if media && s == sections - 1 {
            body.push_str("Look at this: {{ photo }}\n");
        }
    }
    if nunjucks {
        tags.push("nunjucks");
    }
    (format!("{fm}{body}"), Value::Object(inputs), tags)
}

/// One line of a generated body.
fn line(rng: &mut Rng, mustache: bool, tags: &mut Vec<&'static str>) -> String {
    if mustache {
        return rng
            .pick(&[
                "Hello {{who}}!",
                "{{#items}}- {{title}} ({{score}})\n{{/items}}",
                "{{^items}}No items.{{/items}}",
                "{{#flag}}Flag set.{{/flag}}{{^flag}}Flag unset.{{/flag}}",
                "City: {{profile.city}}, count {{count}}",
                "Raw {{{who}}} and {{! a comment }}done",
                "{{#profile}}{{city}} at {{age}}{{/profile}}",
            ])
            .to_owned();
    }
    let pick = rng.below(14);
    if matches!(pick, 9 | 10) {
        tags.push("b2");
    }
    match pick {
        0 => "Hello {{ who }}!".into(),
        1 => "{% for it in items %}{{ loop.index }}. {{ it.title | upper }} ({{ it.score }}){% if it.tags %}: {{ it.tags | join(', ') }}{% endif %}\n{% endfor %}".into(),
        2 => "{% if items %}{{ items | length }} items{% else %}No items.{% endif %}".into(),
        3 => "{% if count > 2 %}many{% elif count > 0 %}some{% else %}none{% endif %} for {{ who | default('nobody') }}".into(),
        4 => "City: {{ profile.city }} ({{ profile.age }}), missing: [{{ nothing }}]".into(),
        5 => "{%- for it in items -%}\n  [{{ it.title }}]\n{%- endfor %}".into(),
        6 => "{{ who | trim | lower }} / {{ who | length }}".into(),
        7 => "{# a comment #}Plain text with a markdown image ![alt](https://example.com/a.png).".into(),
        8 => "{% set greeting = 'Hi ' ~ who %}{{ greeting }}.".into(),
        9 => "Flag: {{ flag }}; none: {{ profile.none_here is none }}".into(),
        10 => "Score: {{ 2.0 * count }}".into(),
        11 => "{% for it in items %}{% if loop.first %}first {% endif %}{{ it.title }}{% if not loop.last %}, {% endif %}{% endfor %}".into(),
        12 => "Quote: \"{{ who }}\" & <tag>".into(),
        _ => "   indented line with trailing spaces   ".into(),
    }
}

fn generated_cases(dir: &Path, count: usize) -> Vec<Case> {
    let mut rng = Rng(0x005E_ED0F_D1FF_2026);
    (0..count)
        .map(|n| {
            let (text, inputs, tags) = generate(&mut rng, n);
            let path = dir.join(format!("gen{n:03}.prompty"));
            std::fs::write(&path, &text).unwrap();
            let python_path = if tags.contains(&"nunjucks") {
                let p = dir.join(format!("gen{n:03}.jinja2.prompty"));
                std::fs::write(&p, text.replace("kind: nunjucks", "kind: jinja2")).unwrap();
                p
            } else {
                path.clone()
            };
            Case { id: format!("gen{n:03}"), path, python_path, inputs, tags, expect: None }
        })
        .collect()
}

/// Prompts wrong on purpose, one per error class both runtimes share, each with the class both
/// must fail with (the variable the first one reads is never set).
fn wrong_cases(dir: &Path) -> Vec<Case> {
    let cases: [(&str, &str, ErrorClass); 8] = [
        ("wrong-yaml", "---\nname: [broken\n---\nuser:\nHi\n", ErrorClass::InvalidFrontmatter),
        (
            "wrong-env",
            "---\nname: env\nmodel:\n  id: gpt-4o\n  connection:\n    kind: key\n    apiKey: ${env:PYREF_NEVER_SET}\n---\nuser:\nHi\n",
            ErrorClass::EnvVarNotSet,
        ),
        ("wrong-reference", "---\nname: ref\ndescription: ${file:not-there.md}\n---\nuser:\nHi\n", ErrorClass::FileNotFound),
        (
            "wrong-renderer",
            "---\nname: fmt\ntemplate:\n  format: handlebars\n  parser: prompty\n---\nuser:\nHi\n",
            ErrorClass::UnknownRenderer,
        ),
        ("wrong-jinja-block", "---\nname: j\n---\nuser:\n{% for x in [1] %}{{ x }}\n", ErrorClass::TemplateSyntax),
        ("wrong-jinja-tag", "---\nname: j\n---\nuser:\n{% endif %}\n", ErrorClass::TemplateSyntax),
        (
            "wrong-mustache",
            "---\nname: m\ntemplate:\n  format: mustache\n  parser: prompty\n---\nuser:\n{{#open}}never closed\n",
            ErrorClass::TemplateSyntax,
        ),
        ("wrong-filter", "---\nname: f\n---\nuser:\n{{ 'a' | upcase }}\n", ErrorClass::TemplateUnknownName),
    ];
    cases
        .into_iter()
        .map(|(id, text, class)| {
            let path = dir.join(format!("{id}.prompty"));
            std::fs::write(&path, text).unwrap();
            Case {
                id: id.to_owned(),
                python_path: path.clone(),
                path,
                inputs: json!({}),
                tags: vec!["wrong"],
                expect: Some(class),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

#[test]
fn messages_equal_the_python_reference_runtime() {
    let Some(python) = python() else { return };
    let dir = std::env::temp_dir().join(format!("prompty-pyref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut env = vec!["PYREF_KEY".to_owned()];
    let mut cases = repository_cases(&mut env);
    // The same environment for both sides (the driver inherits ours).
    for name in &env {
        std::env::set_var(name, format!("test-{}", name.to_lowercase()));
    }
    std::env::remove_var("PYREF_NEVER_SET");
    fill_inputs(&mut cases);
    let files = cases.len();
    cases.extend(generated_cases(&dir, 300));
    cases.extend(wrong_cases(&dir));
    let theirs = reference(&python, &cases, &dir);

    let mut problems = Vec::new();
    let mut hits: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let (mut equal, mut explained) = (0, 0);
    let mut both_fail: BTreeMap<ErrorClass, usize> = BTreeMap::new();
    let show = |r: &Outcome| match r {
        Ok(m) => Value::from(m.clone()).to_string(),
        Err(e) => format!("{:?} error: {}", e.class, e.message),
    };
    for case in &cases {
        let ours = ours(case);
        let Some(theirs) = theirs.get(&case.id) else {
            problems.push(format!("{}: no result from the reference", case.id));
            continue;
        };
        let verdict = explain(case, &ours, theirs);
        let describe = |what: &str| {
            format!(
                "{}: {what}\n  ours:   {}\n  theirs: {}\n  (loose: {})\n  inputs: {}",
                case.id,
                show(&ours),
                show(&theirs.default),
                show(&theirs.loose),
                case.inputs
            )
        };
        // A generated prompt is valid: it must give messages here, and there unless a deviation
        // says why not. A wrong one must fail with its class on both sides.
        if case.tags.contains(&"generated") && (ours.is_err() || matches!(verdict, Verdict::BothFail(_))) {
            problems.push(describe("a generated prompt failed"));
        }
        if let Some(class) = &case.expect {
            if verdict != Verdict::BothFail(class.clone()) {
                problems.push(describe(&format!("expected both runtimes to fail with {class:?}")));
            }
        }
        match verdict {
            Verdict::Equal => equal += 1,
            Verdict::BothFail(class) => *both_fail.entry(class).or_default() += 1,
            Verdict::Explained(rules) => {
                explained += 1;
                for rule in rules {
                    hits.entry(rule).or_default().push(case.id.clone());
                }
            }
            Verdict::Unexplained => problems.push(describe("unexplained difference")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{} cases ({files} files of the repository, 300 generated, {} wrong on purpose): {equal} give equal \
         messages, {explained} differ as listed deviations say, {} fail on both sides with the same class \
         {both_fail:?}, {} problems",
        cases.len(),
        cases.len() - files - 300,
        both_fail.values().sum::<usize>(),
        problems.len()
    );
    for d in DEVIATIONS {
        let ids = hits.get(d.rule).map(Vec::as_slice).unwrap_or_default();
        eprintln!(
            "  {} ({}): {} cases {:?}\n    {}",
            d.rule,
            d.spec,
            ids.len(),
            ids.iter().take(4).collect::<Vec<_>>(),
            d.reason
        );
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    let stale: Vec<&str> = DEVIATIONS.iter().filter(|d| !hits.contains_key(d.rule)).map(|d| d.rule).collect();
    assert!(stale.is_empty(), "listed deviations that no longer occur (remove them): {stale:?}");
    assert!(
        equal >= MIN_EQUAL,
        "only {equal} cases give equal messages with no deviation, fewer than {MIN_EQUAL}: a deviation's \
         normalisation, or a change of the generator, hides what should compare equal"
    );
}
