//! Evaluations: run prompts over cases and hold each answer to assertions — `prompty eval` and
//! `eval_tests!` are built on this module.
//!
//! An eval file ([`EvalFile`], `chat.eval.yaml` beside `chat.prompty`) names the prompts under
//! test, the models to run them against, the cases (inline, or rows of JSONL and CSV datasets) and
//! the assertions ([`Check`]). [`run`] checks the file against the prompts first ([`check`]: a
//! misspelt column or var, a judge that wants an input the runner does not give, an assertion the
//! prompt's output cannot meet are errors before any request), then runs every case of every
//! column (prompt × model) with bounded concurrency, `turn` for prompts with tools, a response
//! cache keyed by the request ([`CacheMode`]), and backoff when the provider rate-limits. The
//! [`EvalReport`] it returns is the JSON report; [`render`] turns it into a terminal table, JUnit
//! XML or one self-contained HTML page, and [`compare`] marks regressions against a baseline run.
//!
//! ```no_run
//! # async fn f() -> Result<(), prompty::eval::EvalError> {
//! let eval = prompty::eval::load("prompts/chat.eval.yaml".as_ref())?;
//! let report = prompty::eval::run(&eval, &prompty::eval::EvalOptions::default()).await?;
//! println!("{}", prompty::eval::render::terminal(&report, false));
//! assert!(report.passed());
//! # Ok(()) }
//! ```

mod assertions;
mod cache;
mod compare;
mod json_schema;
mod judge;
pub mod render;
mod report;
mod run;
mod testing;

pub use cache::MAX_CACHE_FILE_BYTES;
pub use run::{
    run, run_blocking, DEFAULT_CONCURRENCY, MAX_CONCURRENCY, MAX_RATE_LIMIT_WAIT, RATE_LIMIT_RETRIES, RATE_LIMIT_WAIT,
};
#[doc(hidden)]
pub use testing::__test_case;

pub use compare::compare;
pub use prompty_core::eval::{
    Assertion, Case, Check, Dataset, EvalFile, Match, ModelVariant, PromptUnderTest, ASSERTION_KINDS, JUDGE_INPUTS,
    MAX_CASES, MAX_DATASET_BYTES, MAX_EVAL_FILE_BYTES,
};
pub use report::{
    AssertionResult, BaselineInfo, CaseRow, Cell, Change, Column, EvalReport, Status, Summary, TokenUsage,
    REPORT_VERSION,
};

use crate::analysis::Diagnostic;
use std::path::PathBuf;
use std::sync::Arc;

/// Why an evaluation could not run at all (a case that fails or errors is in the report instead).
///
/// ```
/// let err = prompty::eval::load("no/such.eval.yaml".as_ref()).unwrap_err();
/// assert!(matches!(err, prompty::eval::EvalError::Invalid(_)));
/// assert!(err.to_string().contains("no/such.eval.yaml"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The eval file, a dataset or a prompt it names has mistakes: every one, with its place.
    #[error("{}", join(.0))]
    Invalid(Vec<Diagnostic>),
    /// Something the run needs failed (the response cache could not be written, a cached response
    /// is missing in [`CacheMode::Replay`], ...).
    #[error("{0}")]
    Run(#[from] crate::Error),
}

fn join(diagnostics: &[Diagnostic]) -> String {
    diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// Where model responses come from.
///
/// ```
/// assert_eq!(prompty::eval::CacheMode::default(), prompty::eval::CacheMode::ReadWrite);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CacheMode {
    /// Every request goes to the model; nothing is stored.
    Off,
    /// A recorded response answers its request; others go to the model and are recorded.
    #[default]
    ReadWrite,
    /// Only recorded responses: a request without one is an error naming the case (CI with no
    /// key).
    Replay,
    /// Every request goes to the model and its response replaces the recorded one.
    Record,
}

/// One finished cell, for progress displays.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Progress {
    /// Cells finished, this one included.
    pub done: usize,
    /// Cells in the run.
    pub total: usize,
    /// The case's name.
    pub case: String,
    /// The column's id.
    pub column: String,
    /// How it went.
    pub status: Status,
}

/// The progress callback of [`EvalOptions::progress`].
pub type ProgressFn = dyn Fn(&Progress) + Send + Sync;

/// How [`run`] runs.
///
/// ```
/// // `#[non_exhaustive]`: start from the default and set fields.
/// let mut options = prompty::eval::EvalOptions::default();
/// options.concurrency = Some(16);
/// options.tags = vec!["smoke".into()];
/// assert_eq!(options.cache, prompty::eval::CacheMode::ReadWrite);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct EvalOptions {
    /// Cells run at once (over the eval file's `concurrency`; default 4, at most 1024).
    pub concurrency: Option<usize>,
    /// Where model responses come from.
    pub cache: CacheMode,
    /// The response cache's folder (default: `.prompty-cache` beside the eval file).
    pub cache_dir: Option<PathBuf>,
    /// Only cases with one of these tags (empty: every case).
    pub tags: Vec<String>,
    /// Only the cases with these names (empty: every case).
    pub cases: Vec<String>,
    /// Called after each cell.
    pub progress: Option<Arc<ProgressFn>>,
}

impl std::fmt::Debug for EvalOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvalOptions")
            .field("concurrency", &self.concurrency)
            .field("cache", &self.cache)
            .field("cache_dir", &self.cache_dir)
            .field("tags", &self.tags)
            .field("cases", &self.cases)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Reads an eval file and its datasets ([`EvalFile::load`]).
pub fn load(path: &std::path::Path) -> Result<EvalFile, EvalError> {
    EvalFile::load(path).map_err(EvalError::Invalid)
}

/// Every check of an eval file before any request: the checks against its prompts that
/// `prompty check` and `eval_tests!` make ([`prompty_core::eval::check`]: vars and dataset
/// columns against the inputs, judges' inputs and outputs, assertions against the output type
/// and tools), then what only the runtime compiles: every `regex` assertion's pattern (and every
/// `pattern` in an `is-json` schema, code `eval-run`). Each mistake is a [`Diagnostic`] naming the
/// file and line; [`run`] refuses a file with errors (warnings are reported, not refused).
///
/// ```
/// let eval = prompty::eval::EvalFile::parse(
///     "prompt: missing.prompty\nassert:\n  - {type: regex, value: 'a('}\n", "x.eval.yaml").unwrap();
/// let errors = prompty::eval::check(&eval);
/// assert!(errors.iter().any(|d| d.message.contains("missing.prompty")));
/// assert!(errors.iter().any(|d| d.message.contains("does not compile") && d.line == Some(3)));
/// ```
pub fn check(eval: &EvalFile) -> Vec<Diagnostic> {
    let mut out = prompty_core::eval::check(eval);
    let assertions = eval
        .assert
        .iter()
        .chain(eval.datasets.iter().flat_map(|d| d.assert.iter()))
        .chain(eval.cases.iter().flat_map(|c| c.assert.iter()));
    for assertion in assertions {
        match &assertion.check {
            Check::Regex { pattern } => {
                if let Err(e) = regex::Regex::new(pattern) {
                    out.push(
                        Diagnostic::error(
                            assertion.at.clone(),
                            format!("the pattern /{pattern}/ does not compile: {e}"),
                        )
                        .with_code("eval-run"),
                    );
                }
            }
            Check::IsJson { schema: Some(schema) } => {
                let mut patterns = Vec::new();
                schema_patterns(schema, &mut patterns, 0);
                for pattern in patterns {
                    if let Err(e) = regex::Regex::new(&pattern) {
                        out.push(
                            Diagnostic::error(
                                assertion.at.clone(),
                                format!("the schema's pattern /{pattern}/ does not compile: {e}"),
                            )
                            .with_code("eval-run"),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Every `pattern` of a JSON schema (to a depth of 64).
fn schema_patterns(schema: &serde_json::Value, out: &mut Vec<String>, depth: usize) {
    if depth > 64 {
        return;
    }
    match schema {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("pattern", serde_json::Value::String(p)) => out.push(p.clone()),
                    _ => schema_patterns(value, out, depth + 1),
                }
            }
        }
        serde_json::Value::Array(list) => list.iter().for_each(|v| schema_patterns(v, out, depth + 1)),
        _ => {}
    }
}
