//! Differential test against the Python reference runtime (PyPI `prompty`, pinned in
//! `pyref/requirements.txt`): every `.prompty` file of the repository and a few hundred generated
//! prompts are loaded and prepared by both runtimes with the same inputs (and the same
//! environment variables), and the messages must be equal, except where a deviation listed in
//! [`DEVIATIONS`] explains the difference. A listed deviation that no longer occurs fails the test
//! too, so the list stays true.
//!
//! The reference runs in a virtualenv cached outside the repository, at
//! `${XDG_CACHE_HOME:-$HOME/.cache}/prompty-rs/pyref-<first 12 hex digits of the SHA-256 of
//! pyref/requirements.txt>`, which `.ci/run` builds. When it is missing the test fails under CI
//! (`CI=true`) and is skipped, with a message, elsewhere. One Python process (`pyref/driver.py`)
//! prepares every case.
//!
//! # Normalisation
//!
//! Both sides are compared as a list of `{role, parts, metadata}`: the role in lowercase; the
//! parts in order, a text part as `{kind: "text", value}`, a media part as `{kind, source,
//! mediaType?, detail?}` (absent fields left out on both sides); `metadata` left out when empty
//! (Python's `Message.metadata` is an empty dict by default, ours is skipped when empty). A failure
//! on both sides is equal whatever the messages say (the two runtimes word their errors
//! differently); a failure on one side only is a difference.
//!
//! `nunjucks` prompts (the TypeScript runtime's key, which the Python runtime does not have) are
//! given to the Python side with `jinja2` in its place.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    /// (ours first) so that the difference goes away.
    Normalise(fn(&Case, &mut Vec<Value>, &mut Vec<Value>)),
    /// We give messages; the reference fails with an error holding this text.
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
                 says an empty message is kept with value \"\" and never dropped",
        how: How::Normalise(|_, ours, _| ours.retain(|m| !is_empty_text(m))),
    },
    Deviation {
        rule: "thread-only-where-placed",
        spec: "§5.2, §6.7",
        reason: "When the template never interpolates a thread input, Python appends the thread's messages at the \
                 end; the spec expands a thread where its nonce is, so prompty-rs leaves it out (a template that \
                 wants it writes `{{ history }}`; `prompty check` warns about an input the template never uses)",
        how: How::Normalise(|case, ours, theirs| {
            for thread in case.inputs.as_object().into_iter().flat_map(|o| o.values()) {
                let Some(items) = thread.as_array() else { continue };
                let messages: Vec<Value> = items
                    .iter()
                    .filter_map(|m| {
                        let (role, content) = (m.get("role")?.as_str()?, m.get("content")?.as_str()?);
                        Some(json!({"role": role, "parts": [{"kind": "text", "value": content}]}))
                    })
                    .collect();
                let n = messages.len();
                if n == 0 || n != items.len() || ours.windows(n).any(|w| w == messages.as_slice()) {
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
                 user message), splitting the text around it, and picks which of several media nonces in one \
                 message it expands by set order (different from run to run); prompty-rs puts the media part \
                 where the template interpolates it, in the message the template writes it in",
        how: How::Normalise(|case, ours, theirs| {
            if case.tags.contains(&"media") && ours.iter().any(has_media) {
                *ours = text_only(ours);
                *theirs = text_only(theirs);
            }
        }),
    },
    Deviation {
        rule: "thread-split-trims-newlines",
        spec: "§6.7 with §6.4/§6.6 (digest C4)",
        reason: "Where a thread input splits a message, Python strips all whitespace from the text around it; \
                 prompty-rs trims it as the parser trims any message, newlines only (the `content_trimmed` \
                 vector), so indentation at the start or end of the text stays",
        how: How::Normalise(|case, ours, theirs| {
            if case.tags.contains(&"thread") {
                for side in [ours, theirs] {
                    for m in side.iter_mut() {
                        for p in m["parts"].as_array_mut().into_iter().flatten() {
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
                 nothing and 4",
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
                 its default (`parser: prompty`), as §2.8 does for an omitted template",
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
];

/// The result of one case on one side: messages in the compared shape, or the error.
type Outcome = Result<Vec<Value>, String>;

/// The reference's two results for a case: as loaded, and with strict mode off.
struct Reference {
    default: Outcome,
    loose: Outcome,
}

/// The smallest set of rules that explains the difference between our result and the
/// reference's (empty when they are equal), or `None`.
fn explain(case: &Case, ours: &Outcome, theirs: &Reference) -> Option<Vec<&'static str>> {
    let loose_rule = DEVIATIONS.iter().find(|d| matches!(d.how, How::Loose)).map(|d| d.rule);
    let normalisers: Vec<&Deviation> = DEVIATIONS.iter().filter(|d| matches!(d.how, How::Normalise(_))).collect();
    let mut best: Option<Vec<&'static str>> = None;
    for (base, reference) in [(vec![], &theirs.default), (loose_rule.into_iter().collect(), &theirs.loose)] {
        let found = match (ours, reference) {
            (Err(_), Err(_)) => Some(base.clone()),
            (Ok(_), Err(e)) => DEVIATIONS.iter().find_map(|d| match d.how {
                How::TheirError(text) if e.contains(text) => Some([base.clone(), vec![d.rule]].concat()),
                _ => None,
            }),
            (Err(_), Ok(_)) => None,
            (Ok(a), Ok(b)) => (0u32..1 << normalisers.len())
                .filter_map(|set| {
                    let (mut a, mut b) = (a.clone(), b.clone());
                    let mut rules = base.clone();
                    for (i, d) in normalisers.iter().enumerate() {
                        if set & (1 << i) != 0 {
                            if let How::Normalise(f) = d.how {
                                f(case, &mut a, &mut b);
                            }
                            rules.push(d.rule);
                        }
                    }
                    (a == b).then_some(rules)
                })
                .min_by_key(Vec::len),
        };
        if let Some(rules) = found {
            if best.as_ref().is_none_or(|b| rules.len() < b.len()) {
                best = Some(rules);
            }
        }
    }
    best
}

/// One prompt and its inputs.
struct Case {
    id: String,
    /// The prompt prompty-rs loads.
    path: PathBuf,
    /// The prompt the Python runtime loads (a copy with `jinja2` for `nunjucks` prompts).
    python_path: PathBuf,
    inputs: Value,
    /// What the generator put in it (`b2`, `media`, ...), for the deviation rules.
    tags: Vec<&'static str>,
}

fn is_empty_text(m: &Value) -> bool {
    m["parts"].as_array().is_some_and(|p| p.iter().all(|p| p["kind"] == "text" && p["value"] == ""))
}

fn has_media(m: &Value) -> bool {
    m["parts"].as_array().is_some_and(|p| p.iter().any(|p| p["kind"] != "text"))
}

/// The text of the messages, media parts left out, in one user message with its whitespace
/// collapsed: what is left to compare when the two runtimes place media parts differently.
fn text_only(messages: &[Value]) -> Vec<Value> {
    let text: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["parts"].as_array().into_iter().flatten())
        .filter_map(|p| p["value"].as_str())
        .flat_map(str::split_whitespace)
        // The reference leaves the nonces it does not expand in the text.
        .filter(|w| !w.starts_with("__PROMPTY_THREAD_"))
        .collect();
    vec![json!({"role": "user", "parts": [{"kind": "text", "value": text.join(" ")}]})]
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

/// The cached virtualenv's interpreter, as `.ci/run` names it; `None` when it is not built.
fn python() -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    let req = std::fs::read(pyref_dir().join("requirements.txt")).expect("pyref/requirements.txt");
    let key: String = Sha256::digest(&req).iter().take(6).map(|b| format!("{b:02x}")).collect();
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let venv = base.join("prompty-rs").join(format!("pyref-{key}"));
    venv.join(".installed").exists().then(|| venv.join("bin").join("python"))
}

/// Runs the driver over every case: id → messages, or `Err` with the error.
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
        .expect("cannot run the reference runtime");
    assert!(out.status.success(), "the driver failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the driver's JSON");
    let outcome = |r: &Value| match r.get("messages").and_then(Value::as_array) {
        Some(m) => Ok(m.clone()),
        None => Err(r["error"].as_str().unwrap_or("?").to_owned()),
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

/// Our messages in the compared shape.
fn ours(case: &Case) -> Result<Vec<Value>, String> {
    let agent = prompty::load(&case.path).map_err(|e| e.to_string())?;
    let messages = prompty::prepare(&agent, &case.inputs).map_err(|e| e.to_string())?;
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
        cases.push(Case { id, python_path: path.clone(), path, inputs: json!({}), tags: vec!["file"] });
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
    let mut tags = Vec::new();
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
            Case { id: format!("gen{n:03}"), path, python_path, inputs, tags }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

#[test]
fn messages_equal_the_python_reference_runtime() {
    let Some(python) = python() else {
        let msg = "the Python reference runtime is not installed: run .ci/run (it builds the virtualenv of \
                   prompty/tests/pyref/requirements.txt)";
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{msg}");
        eprintln!("skipped: {msg}");
        return;
    };
    let dir = std::env::temp_dir().join(format!("prompty-pyref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut env = vec!["PYREF_KEY".to_owned()];
    let mut cases = repository_cases(&mut env);
    // The same environment for both sides (the driver inherits ours).
    for name in &env {
        std::env::set_var(name, format!("test-{}", name.to_lowercase()));
    }
    fill_inputs(&mut cases);
    let files = cases.len();
    cases.extend(generated_cases(&dir, 300));
    let theirs = reference(&python, &cases, &dir);

    let mut unexplained = Vec::new();
    let mut hits: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut equal = 0;
    for case in &cases {
        let ours = ours(case);
        let Some(theirs) = theirs.get(&case.id) else {
            unexplained.push(format!("{}: no result from the reference", case.id));
            continue;
        };
        match explain(case, &ours, theirs) {
            Some(rules) if rules.is_empty() => equal += 1,
            Some(rules) => {
                for rule in rules {
                    hits.entry(rule).or_default().push(case.id.clone());
                }
            }
            None => {
                let show = |r: &Outcome| match r {
                    Ok(m) => Value::from(m.clone()).to_string(),
                    Err(e) => format!("error: {e}"),
                };
                unexplained.push(format!(
                    "{}:\n  ours:   {}\n  theirs: {}\n  (loose: {})\n  inputs: {}",
                    case.id,
                    show(&ours),
                    show(&theirs.default),
                    show(&theirs.loose),
                    case.inputs
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{} cases ({files} files of the repository, {} generated): {equal} equal",
        cases.len(),
        cases.len() - files
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
    assert!(unexplained.is_empty(), "{} unexplained differences:\n{}", unexplained.len(), unexplained.join("\n"));
    let stale: Vec<&str> = DEVIATIONS.iter().filter(|d| !hits.contains_key(d.rule)).map(|d| d.rule).collect();
    assert!(stale.is_empty(), "listed deviations that no longer occur (remove them): {stale:?}");
}
