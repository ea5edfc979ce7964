//! Eval files: what `prompty eval`, `prompty::eval` and `eval_tests!` run — the prompts under
//! test, their cases (inline, or rows of JSONL and CSV datasets) and the assertions each answer
//! must pass.
//!
//! An eval file sits beside its prompt (`chat.eval.yaml` next to `chat.prompty`); the `.prompty`
//! file stays exactly as every other Prompty runtime reads it. Paths in an eval file are relative
//! to its folder.
//!
//! ```yaml
//! prompt: chat.prompty            # or `prompts:` [paths, or {path, label}] side by side
//! models:                         # optional: the same prompts against several models
//!   - {label: mini, id: gpt-4o-mini}
//! vars: {name: Ada}               # inputs every case starts from
//! threshold: 1                    # a case passes when its weighted score reaches this
//! assert:                         # assertions of every case
//!   - {type: latency, maxMs: 5000}
//! cases:
//!   - name: capital
//!     vars: {question: What is the capital of France?}
//!     expected: Paris
//!     tags: [geo]
//!     assert:
//!       - {type: contains, value: Paris, ignoreCase: true}
//!       - {type: judge, prompt: judges/helpful.prompty, threshold: 0.7}
//! datasets:
//!   - file: cases.jsonl           # or .csv (a header row); one case per line or row
//!     columns: {q: question}      # column -> input (a column named like an input needs no entry)
//! ```
//!
//! The assertion kinds ([`Check`]): `equals`, `contains`, `regex`, `is-json` (optionally with a
//! JSON `schema`), `output-type` (the answer parses as the prompt's declared `outputs`),
//! `tool-called` (with `arguments` it must include and how many `times`), `latency`, `tokens`,
//! `cost`, `similar` (cosine similarity of embeddings against a reference) and `judge` (a
//! `.prompty` file whose answer gives a `score` in 0..1 and a `reason`). Every assertion takes
//! `weight` (default 1), `not` (pass when the check fails) and `name`. A one-key mapping is the
//! short form: `- contains: Paris` is `- {type: contains, value: Paris}`.
//!
//! ```
//! use prompty_core::eval::{Check, EvalFile};
//! let text = "prompt: chat.prompty\ncases:\n  - name: hi\n    vars: {question: Hi}\n    assert:\n      - contains: Hello\n";
//! let eval = EvalFile::parse(text, "chat.eval.yaml").unwrap();
//! assert_eq!(eval.prompts[0].path, "chat.prompty");
//! assert_eq!(eval.cases[0].name, "hi");
//! assert!(matches!(&eval.cases[0].assert[0].check, Check::Contains { values, .. } if values == &["Hello"]));
//! assert_eq!(eval.cases[0].assert[0].at.line, Some(6));
//! ```

mod check;
mod dataset;
mod parse;

use crate::analysis::Diagnostic;
use crate::Location;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub use check::{check, check_files, Checked};
pub use dataset::coerce_vars;
pub use parse::ASSERTION_KINDS;

/// The largest eval file read, in bytes (16 MiB).
pub const MAX_EVAL_FILE_BYTES: u64 = 16 << 20;
/// The largest dataset file read, in bytes (64 MiB).
pub const MAX_DATASET_BYTES: u64 = 64 << 20;
/// The most cases one eval file may hold, inline and from datasets together.
pub const MAX_CASES: usize = 100_000;

/// A parsed eval file. Build one with [`EvalFile::load`] or [`EvalFile::parse`].
///
/// ```
/// let eval = prompty_core::eval::EvalFile::parse("prompt: a.prompty\nvars: {x: 1}\n", "a.eval.yaml").unwrap();
/// assert_eq!(eval.vars["x"], 1);
/// assert_eq!(eval.threshold, None);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct EvalFile {
    /// The file as named in messages.
    pub name: String,
    /// The folder paths in the file are relative to.
    pub dir: PathBuf,
    /// What the file says it evaluates.
    pub description: Option<String>,
    /// The prompts under test (one column each, times [`EvalFile::models`]).
    pub prompts: Vec<PromptUnderTest>,
    /// Models each prompt runs against; empty: the prompt's own model.
    pub models: Vec<ModelVariant>,
    /// Inputs every case starts from (a case's `vars` win).
    pub vars: Map<String, Value>,
    /// Where each of [`EvalFile::vars`] is written, by var name (for messages about a var).
    pub vars_at: std::collections::BTreeMap<String, Location>,
    /// The default pass threshold of a case (weighted score in 0..1); `None`: every assertion
    /// must pass.
    pub threshold: Option<f64>,
    /// How many cases run at once, when the file says.
    pub concurrency: Option<usize>,
    /// Assertions of every case.
    pub assert: Vec<Assertion>,
    /// The inline cases.
    pub cases: Vec<Case>,
    /// The dataset files whose rows are cases.
    pub datasets: Vec<Dataset>,
}

/// One prompt under test.
///
/// ```
/// let eval = prompty_core::eval::EvalFile::parse("prompts:\n  - a.prompty\n  - {path: b.prompty, label: new}\n", "x.eval.yaml").unwrap();
/// assert_eq!((eval.prompts[0].label.as_str(), eval.prompts[1].label.as_str()), ("a", "new"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptUnderTest {
    /// The `.prompty` file, relative to the eval file's folder.
    pub path: String,
    /// Its name in reports (default: the file stem).
    pub label: String,
    /// Where the file names it.
    pub at: Location,
}

/// A model a prompt runs against instead of its own: the fields given replace the prompt's.
///
/// ```
/// let eval = prompty_core::eval::EvalFile::parse("prompt: a.prompty\nmodels:\n  - {id: gpt-4o, options: {temperature: 0}}\n", "x.eval.yaml").unwrap();
/// assert_eq!(eval.models[0].label, "gpt-4o");
/// assert_eq!(eval.models[0].options["temperature"], 0);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelVariant {
    /// Its name in reports (default: the id, else the provider).
    pub label: String,
    /// `model.id`.
    pub id: Option<String>,
    /// `model.provider`.
    pub provider: Option<String>,
    /// `model.options` entries to set.
    pub options: Map<String, Value>,
    /// Where the file declares it.
    pub at: Location,
}

/// A dataset file: each JSONL line (an object) or CSV row (under a header) is a case.
///
/// ```
/// let eval = prompty_core::eval::EvalFile::parse("prompt: a.prompty\ndatasets:\n  - file: rows.csv\n    columns: {q: question}\n", "x.eval.yaml").unwrap();
/// assert_eq!(eval.datasets[0].columns["q"], "question");
/// assert_eq!(eval.datasets[0].expected, "expected");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Dataset {
    /// The file, relative to the eval file's folder (`.jsonl` or `.csv`).
    pub file: String,
    /// Column → input name, for columns not named like their input.
    pub columns: std::collections::BTreeMap<String, String>,
    /// Where each entry of [`Dataset::columns`] is written, by column.
    pub columns_at: std::collections::BTreeMap<String, Location>,
    /// The column holding the reference answer (default `expected`).
    pub expected: String,
    /// The column naming each case (default `name`; the line number when absent).
    pub name_column: String,
    /// Tags of every case of the file.
    pub tags: Vec<String>,
    /// Assertions of every case of the file.
    pub assert: Vec<Assertion>,
    /// Where the eval file declares it.
    pub at: Location,
}

/// One case: the inputs, an optional reference answer, assertions, tags.
///
/// ```
/// let eval = prompty_core::eval::EvalFile::parse("prompt: a.prompty\ncases:\n  - vars: {q: x}\n    tags: [smoke]\n", "x.eval.yaml").unwrap();
/// assert_eq!(eval.cases[0].name, "case 1");
/// assert_eq!(eval.cases[0].tags, ["smoke"]);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Case {
    /// Its name in reports (unique within the file).
    pub name: String,
    /// Inputs of the prompt (over [`EvalFile::vars`]).
    pub vars: Map<String, Value>,
    /// The reference answer (`equals`, `contains` and `similar` use it when they give no value;
    /// judges receive it as `expected`).
    pub expected: Option<Value>,
    /// Its own assertions (after the file's and its dataset's).
    pub assert: Vec<Assertion>,
    /// Tags to select cases by.
    pub tags: Vec<String>,
    /// Its pass threshold, over the file's.
    pub threshold: Option<f64>,
    /// Where it is written: the eval file's line, or the dataset file's line.
    pub at: Location,
    /// Where each var is written, by var name (for messages about a var).
    pub var_at: std::collections::BTreeMap<String, Location>,
    /// Its vars are the text of a CSV row: [`coerce_vars`] turns them into the prompt's declared
    /// input kinds before they are used (the runner and [`check`] do).
    pub from_csv: bool,
}

/// One assertion: a [`Check`] with its weight.
///
/// ```
/// let eval = prompty_core::eval::EvalFile::parse("prompt: a.prompty\nassert:\n  - {type: regex, value: '^\\d+$', weight: 2, not: true}\n", "x.eval.yaml").unwrap();
/// let a = &eval.assert[0];
/// assert_eq!((a.weight, a.negate, a.kind()), (2.0, true, "regex"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Assertion {
    /// What is checked.
    pub check: Check,
    /// Its weight in the case's score (default 1, at least 0).
    pub weight: f64,
    /// `not: true`: passes when the check fails.
    pub negate: bool,
    /// Its name in reports (default: the kind and its value).
    pub label: String,
    /// Where it is written.
    pub at: Location,
}

impl Assertion {
    /// The kind as written in eval files (`contains`, `tool-called`, ...).
    pub fn kind(&self) -> &'static str {
        self.check.kind()
    }
}

/// How `contains` combines several values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Match {
    /// Every value must occur (the default).
    #[default]
    All,
    /// One value is enough.
    Any,
}

/// What an assertion checks.
///
/// ```
/// use prompty_core::eval::Check;
/// assert_eq!(Check::Latency { max_ms: 10 }.kind(), "latency");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Check {
    /// The answer equals `value` (text compared trimmed; a JSON value compared as JSON); `None`:
    /// the case's `expected`.
    Equals {
        /// The value, or the case's `expected`.
        value: Option<Value>,
        /// Compare text ignoring case.
        ignore_case: bool,
    },
    /// The answer's text contains the values (empty: the case's `expected`).
    Contains {
        /// The texts looked for.
        values: Vec<String>,
        /// Compare ignoring case.
        ignore_case: bool,
        /// All of them or any.
        mode: Match,
    },
    /// The answer's text matches a regular expression (Rust `regex` syntax subset of minijinja's
    /// engine is not used: the pattern is compiled by the runtime).
    Regex {
        /// The pattern.
        pattern: String,
    },
    /// The answer is JSON (text that parses, or structured output), and fits `schema` if given.
    IsJson {
        /// A JSON Schema the value must fit.
        schema: Option<Value>,
    },
    /// The answer parses as the prompt's declared `outputs`.
    OutputType,
    /// The model called a tool.
    ToolCalled {
        /// The tool's name.
        name: String,
        /// Arguments the call must include (a subset match: each given key equal).
        arguments: Option<Map<String, Value>>,
        /// Exactly this many calls (default: at least one).
        times: Option<u32>,
    },
    /// The case took at most this long (all its model calls and tools).
    Latency {
        /// Milliseconds.
        max_ms: u64,
    },
    /// Token budgets over the case's model calls.
    Tokens {
        /// Input plus output tokens.
        max: Option<u64>,
        /// Input tokens.
        max_input: Option<u64>,
        /// Output tokens.
        max_output: Option<u64>,
    },
    /// A cost budget from token counts and prices.
    Cost {
        /// Dollars.
        max_usd: f64,
        /// Price of a million input tokens.
        input_per_million: f64,
        /// Price of a million output tokens.
        output_per_million: f64,
    },
    /// Cosine similarity of the answer's embedding and the reference's.
    Similar {
        /// The reference (`None`: the case's `expected`).
        value: Option<String>,
        /// The least similarity that passes (default 0.8).
        threshold: f64,
        /// The `.prompty` file that embeds (a prompt with `apiType: embedding`), relative to the
        /// eval file.
        embedding: String,
    },
    /// A judge prompt scores the answer.
    Judge {
        /// The judge `.prompty` file, relative to the eval file. It receives the inputs
        /// [`JUDGE_INPUTS`] and answers an object with a `score` (0..1) and a `reason`.
        prompt: String,
        /// The least score that passes (default 0.5).
        threshold: f64,
        /// Text handed to the judge as `criteria`.
        criteria: Option<String>,
    },
}

/// The inputs a judge prompt may declare: the answer under test (`output`, text or JSON text),
/// the case's last user message (`input`), its reference answer (`expected`, empty when none),
/// the assertion's `criteria` (empty when none) and the case's inputs as an object (`vars`).
pub const JUDGE_INPUTS: [&str; 5] = ["output", "input", "expected", "criteria", "vars"];

impl Check {
    /// The kind as written in eval files.
    pub fn kind(&self) -> &'static str {
        match self {
            Check::Equals { .. } => "equals",
            Check::Contains { .. } => "contains",
            Check::Regex { .. } => "regex",
            Check::IsJson { .. } => "is-json",
            Check::OutputType => "output-type",
            Check::ToolCalled { .. } => "tool-called",
            Check::Latency { .. } => "latency",
            Check::Tokens { .. } => "tokens",
            Check::Cost { .. } => "cost",
            Check::Similar { .. } => "similar",
            Check::Judge { .. } => "judge",
        }
    }
}

impl EvalFile {
    /// Reads and parses an eval file (at most [`MAX_EVAL_FILE_BYTES`]); every mistake found is
    /// returned together, each naming the file and line.
    ///
    /// ```
    /// let errors = prompty_core::eval::EvalFile::load("no/such.eval.yaml".as_ref()).unwrap_err();
    /// assert!(errors[0].to_string().starts_with("no/such.eval.yaml: cannot read the eval file"));
    /// ```
    pub fn load(path: &Path) -> Result<EvalFile, Vec<Diagnostic>> {
        let name = path.display().to_string();
        let text = crate::text::read_file(path, MAX_EVAL_FILE_BYTES)
            .map_err(|e| vec![Diagnostic::error(name.as_str(), format!("cannot read the eval file: {e}"))])?;
        let mut eval = EvalFile::parse(&text, &name)?;
        eval.dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(eval)
    }

    /// Parses eval file text; `name` is the file as named in messages (paths in it are relative
    /// to the current folder until [`EvalFile::dir`] is set).
    ///
    /// ```
    /// let text = "prompt: a.prompty\ncases:\n  - vars: {q: 1}\n    assert:\n      - type: contain\n        value: x\n";
    /// let errors = prompty_core::eval::EvalFile::parse(text, "x.eval.yaml").unwrap_err();
    /// assert_eq!(errors[0].to_string(),
    ///     "x.eval.yaml:5:15: unknown assertion type `contain` (did you mean `contains`?)");
    /// ```
    pub fn parse(text: &str, name: &str) -> Result<EvalFile, Vec<Diagnostic>> {
        parse::parse(text, name)
    }

    /// The path of a file named in the eval file (a prompt, a dataset, a judge).
    ///
    /// ```
    /// let mut eval = prompty_core::eval::EvalFile::default();
    /// eval.dir = "evals".into();
    /// assert_eq!(eval.resolve("judge.prompty"), std::path::Path::new("evals/judge.prompty"));
    /// ```
    pub fn resolve(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }
}
