//! What an evaluation run found: [`EvalReport`] (serialized, it is the JSON report and the
//! baseline a later run compares against).

use crate::Message;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The version of the JSON report's shape ([`EvalReport::version`]).
pub const REPORT_VERSION: u32 = 1;

/// One run of an eval file: its columns (prompt × model), its cases with one cell per column,
/// and the totals.
///
/// ```
/// let report = prompty::eval::EvalReport::default();
/// let json = serde_json::to_value(&report).unwrap();
/// assert_eq!(json["summary"]["passed"], 0);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EvalReport {
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// The eval file, as named on the command line.
    pub file: String,
    /// What the eval file says it evaluates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// How long the run took, in milliseconds.
    pub duration_ms: u64,
    /// The columns of the grid: each prompt under test with each model.
    pub columns: Vec<Column>,
    /// The cases run (after tag filters), in file order.
    pub cases: Vec<CaseRow>,
    /// Totals over every cell.
    pub summary: Summary,
    /// The baseline run this one was compared against, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineInfo>,
}

/// A column of the grid: a prompt under test, with a model when the eval file lists models.
///
/// ```
/// let c = prompty::eval::Column { id: "chat/mini".into(), prompt: "chat".into(), model: Some("mini".into()) };
/// assert_eq!(c.id, "chat/mini");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Column {
    /// `prompt` or `prompt/model`: unique within the report, stable across runs.
    pub id: String,
    /// The prompt's label.
    pub prompt: String,
    /// The model's label, when the eval file lists models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One case: its inputs and one cell per column.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CaseRow {
    /// The case's name (unique within the file).
    pub name: String,
    /// Where it is written (`file:line`).
    pub at: String,
    /// Its tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The inputs it ran with.
    pub vars: Map<String, Value>,
    /// Its reference answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    /// One cell per column, in column order.
    pub cells: Vec<Cell>,
}

/// Whether a cell passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its score reached the threshold (or every assertion passed).
    #[default]
    Pass,
    /// An assertion failed.
    Fail,
    /// The prompt could not run (the model call failed, an input was refused, ...).
    Error,
}

/// How a cell moved against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Passed in the baseline, not now.
    Regression,
    /// Did not pass in the baseline, passes now.
    Improvement,
    /// Same status.
    Same,
    /// Not in the baseline.
    New,
}

/// One case run with one column's prompt and model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Cell {
    /// The column's id.
    pub column: String,
    /// Pass, fail or error.
    pub status: Status,
    /// Weighted score of the assertions, in 0..1.
    pub score: f64,
    /// The threshold the score was held to (`None`: every assertion had to pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// The answer: text, or the structured output.
    pub output: Value,
    /// The conversation: the prepared messages, tool rounds, the answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
    /// Each assertion's outcome.
    pub assertions: Vec<AssertionResult>,
    /// Wall time of the case, in milliseconds (model calls and tools; a replayed response counts
    /// what it took when recorded).
    pub latency_ms: u64,
    /// Tokens over the case's model calls.
    pub usage: TokenUsage,
    /// Model calls made.
    pub model_calls: u32,
    /// Whether every model response came from the response cache.
    pub cached: bool,
    /// Why the case could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Against the baseline, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    /// The baseline's score of this cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_score: Option<f64>,
}

/// Tokens read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
}

/// One assertion's outcome.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AssertionResult {
    /// The kind (`contains`, `judge`, ...).
    pub kind: String,
    /// Its name in reports.
    pub label: String,
    /// Whether it passed (after `not`).
    pub pass: bool,
    /// Its score in 0..1 (1 or 0 for yes/no checks; a judge's or similarity's own score).
    pub score: f64,
    /// Its weight.
    pub weight: f64,
    /// Why: what was expected and what was found, or the judge's reason.
    pub reason: String,
}

/// Totals of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Cells that passed.
    pub passed: usize,
    /// Cells that failed an assertion.
    pub failed: usize,
    /// Cells that could not run.
    pub errors: usize,
    /// Cells that passed in the baseline and do not now.
    pub regressions: usize,
    /// Cells that pass now and did not in the baseline.
    pub improvements: usize,
    /// Mean score per column id.
    pub mean_score: std::collections::BTreeMap<String, f64>,
    /// Tokens over every cell.
    pub usage: TokenUsage,
    /// Model calls answered from the cache, and made.
    pub cache_hits: u64,
    /// Model calls sent to a model.
    pub cache_misses: u64,
}

/// The baseline a run was compared against.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BaselineInfo {
    /// The baseline's file, as given.
    pub file: String,
    /// When the baseline run started.
    pub started_at: String,
}

impl EvalReport {
    /// The same report with every secret value this process knows ([`crate::Secret::scrub`]:
    /// loaded prompts' credentials, `${env:}` values of secret variables) replaced by
    /// `[REDACTED]` in every text it holds: answers, messages, reasons, errors, inputs. Every
    /// report [`super::run`] returns has been through it, so no rendering or file of it carries a
    /// key a model or an error echoed.
    pub(crate) fn scrubbed(mut self) -> EvalReport {
        if crate::Secret::remembered().is_empty() {
            return self; // nothing to look for: no pass over the report
        }
        for case in &mut self.cases {
            case.vars.values_mut().for_each(scrub_value);
            case.expected.iter_mut().for_each(scrub_value);
            for cell in &mut case.cells {
                scrub_value(&mut cell.output);
                cell.error.iter_mut().for_each(crate::Secret::scrub_in_place);
                for result in &mut cell.assertions {
                    crate::Secret::scrub_in_place(&mut result.reason);
                    crate::Secret::scrub_in_place(&mut result.label);
                }
                cell.messages.iter_mut().for_each(scrub_message);
            }
        }
        self
    }

    /// Whether every cell passed.
    ///
    /// ```
    /// assert!(prompty::eval::EvalReport::default().passed());
    /// ```
    pub fn passed(&self) -> bool {
        self.summary.failed == 0 && self.summary.errors == 0
    }
}

/// [`crate::Secret::scrub`] over every string of `value`.
fn scrub_value(value: &mut Value) {
    match value {
        Value::String(text) => crate::Secret::scrub_in_place(text),
        Value::Array(items) => items.iter_mut().for_each(scrub_value),
        Value::Object(map) => map.values_mut().for_each(scrub_value),
        _ => {}
    }
}

/// [`crate::Secret::scrub`] over a message's texts: its text parts directly; anything else (media,
/// tool calls, metadata) through its JSON form, so that no field is missed.
fn scrub_message(message: &mut Message) {
    let plain = message.tool_calls.is_empty()
        && message.metadata.is_empty()
        && message.content.iter().all(|p| matches!(p, crate::ContentPart::Text { .. }));
    if plain {
        for part in &mut message.content {
            if let crate::ContentPart::Text { value } = part {
                crate::Secret::scrub_in_place(value);
            }
        }
        return;
    }
    let Ok(mut json) = serde_json::to_value(&*message) else { return };
    scrub_value(&mut json);
    match serde_json::from_value(json) {
        Ok(clean) => *message = clean,
        // Our own serialization reads back; were it not to, keep no text rather than leak one.
        Err(_) => *message = Message::new(message.role, crate::Secret::REDACTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_report_holds_no_known_secret() {
        let secret = "sk-eval-report-3b1f9c0e7d";
        crate::Secret::remember(secret);
        let mut cell = Cell { output: Value::from(format!("the key is {secret}")), ..Cell::default() };
        let mut call = Message::new(crate::Role::Assistant, "");
        call.tool_calls = vec![crate::ToolCall::new("c1", "lookup", format!("{{\"key\": \"{secret}\"}}"))];
        cell.messages = vec![Message::new(crate::Role::Assistant, format!("echo {secret}")), call];
        cell.error = Some(format!("401 for key {secret}"));
        cell.assertions =
            vec![AssertionResult { reason: format!("found {secret}"), label: "judge".into(), ..Default::default() }];
        let mut vars = Map::new();
        vars.insert("q".into(), Value::from(secret));
        let report = EvalReport {
            cases: vec![CaseRow { name: "leak".into(), vars, cells: vec![cell], ..Default::default() }],
            ..Default::default()
        };
        let scrubbed = report.scrubbed();
        let text = serde_json::to_string(&scrubbed).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert_eq!(text.matches(crate::Secret::REDACTED).count(), 6, "{text}");
        assert_eq!(scrubbed.cases[0].cells[0].messages[1].tool_calls[0].name, "lookup");
        // A report without any secret value comes back unchanged.
        let clean = EvalReport { file: "a.eval.yaml".into(), ..Default::default() };
        assert_eq!(clean.clone().scrubbed(), clean);
    }
}
