//! The reports of a run: a table for the terminal ([`terminal`]), JUnit XML for CI systems
//! ([`junit`]) and one self-contained HTML page ([`html`]). The JSON report is the
//! [`EvalReport`](super::EvalReport) itself, serialized.
//!
//! Every text of a report that comes from a model or a dataset (answers, reasons, case names,
//! inputs) is treated as hostile: control characters never reach the terminal, the XML is escaped
//! and holds only the characters XML 1.0 allows, and the HTML page shows such text only as text
//! (never as markup) and cannot reach the network.
//!
//! ```
//! let report = prompty::eval::EvalReport::default();
//! assert!(prompty::eval::render::terminal(&report, false).contains("0 cells"));
//! assert!(prompty::eval::render::junit(&report).starts_with("<?xml"));
//! assert!(prompty::eval::render::html(&report).starts_with("<!DOCTYPE html>"));
//! ```

mod html;
mod junit;
mod terminal;

pub use html::html;
pub use junit::junit;
pub use terminal::terminal;

use super::{Cell, Change, Status};
use serde_json::Value;

/// The word a status is shown as.
fn status_word(status: Status) -> &'static str {
    match status {
        Status::Pass => "pass",
        Status::Fail => "fail",
        Status::Error => "error",
    }
}

/// A cell's answer as text: a string as it is, structured output as pretty JSON.
fn answer_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// The score's move against the baseline, `+0.25` / `-0.10` (`None`: no baseline score).
fn delta(cell: &Cell) -> Option<String> {
    cell.baseline_score.map(|base| format!("{:+.2}", cell.score - base))
}

/// The mark of a change: regressions and improvements stand out, the rest is quiet.
fn change_mark(change: Option<Change>) -> &'static str {
    match change {
        Some(Change::Regression) => "▼",
        Some(Change::Improvement) => "▲",
        Some(Change::New) => "new",
        Some(Change::Same) | None => "",
    }
}
