//! The terminal table of a run.

use super::{answer_text, change_mark, delta, status_word};
use crate::eval::{Change, EvalReport, Status};
use prompty_core::text;
use std::fmt::Write as _;

/// The widest case name column, in characters (longer names are cut with `…`).
const CASE_WIDTH: usize = 40;
/// The widest column heading, in characters.
const COLUMN_WIDTH: usize = 28;
/// The longest reason, error or answer shown under the table, in characters.
const REASON_CHARS: usize = 300;
/// The cells whose reasons are listed under the table; the others are counted.
const LISTED_CELLS: usize = 50;

/// The report as a table for the terminal: one row per case, one column per prompt × model, each
/// cell its status, score and move against the baseline (`▼` a regression, `▲` an improvement);
/// then, for each cell that did not pass (at most 50), its failing assertions' reasons or its
/// error; then a summary line. Names are cut at 40 characters, headings at 28, reasons at 300,
/// every cut on a character boundary and marked `…`; control characters from model answers or
/// datasets are shown as spaces, so no text of the report can move the cursor or change colours.
/// With `color`, statuses are coloured with ANSI escapes.
///
/// ```
/// use prompty::eval::{render, CaseRow, Cell, Column, EvalReport, Status};
/// let mut report = EvalReport::default();
/// report.columns.push(Column { id: "chat".into(), prompt: "chat".into(), model: None });
/// let mut row = CaseRow::default();
/// row.name = "greets".into();
/// let mut cell = Cell::default();
/// cell.column = "chat".into();
/// cell.status = Status::Fail;
/// row.cells.push(cell);
/// report.cases.push(row);
/// report.summary.failed = 1;
/// let table = render::terminal(&report, false);
/// assert!(table.contains("greets") && table.contains("FAIL"));
/// assert!(table.contains("1 cells: 0 passed, 1 failed, 0 errors"));
/// ```
pub fn terminal(report: &EvalReport, color: bool) -> String {
    let paint = |status: Status, text: &str| -> String {
        if !color {
            return text.to_owned();
        }
        let code = match status {
            Status::Pass => "32",
            Status::Fail => "31;1",
            Status::Error => "33;1",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    };
    let names: Vec<String> = report.cases.iter().map(|row| cut(&row.name, CASE_WIDTH)).collect();
    let case_width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0).max(4);
    let headings: Vec<String> = report.columns.iter().map(|c| cut(&c.id, COLUMN_WIDTH)).collect();
    // A cell: `FAIL 0.50 -0.25 ▼` at most 17 characters.
    let widths: Vec<usize> = headings.iter().map(|h| h.chars().count().max(17)).collect();

    let mut out = String::new();
    let _ = write!(out, "{:case_width$}", "case");
    for (heading, width) in headings.iter().zip(&widths) {
        let _ = write!(out, "  {heading:width$}");
    }
    let trimmed = out.trim_end_matches(' ').len();
    out.truncate(trimmed);
    out.push('\n');
    let _ = write!(out, "{}", "─".repeat(case_width));
    for width in &widths {
        let _ = write!(out, "  {}", "─".repeat(*width));
    }
    out.push('\n');
    for (row, name) in report.cases.iter().zip(&names) {
        let _ = write!(out, "{name:case_width$}");
        for (column, width) in report.columns.iter().zip(&widths) {
            let shown = match row.cells.iter().find(|c| c.column == column.id) {
                None => format!("{:width$}", "-"),
                Some(cell) => {
                    let word = status_word(cell.status).to_uppercase();
                    let word = if cell.status == Status::Pass { word.to_lowercase() } else { word };
                    let rest = [
                        format!("{:.2}", cell.score),
                        delta(cell).unwrap_or_default(),
                        change_mark(cell.change).to_owned(),
                    ]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                    let plain = format!("{word:5} {rest}");
                    let pad = width.saturating_sub(plain.chars().count());
                    format!("{} {rest}{}", paint(cell.status, &format!("{word:5}")), " ".repeat(pad))
                }
            };
            let _ = write!(out, "  {shown}");
        }
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    }

    let not_passed: Vec<_> = report
        .cases
        .iter()
        .flat_map(|row| row.cells.iter().map(move |cell| (row, cell)))
        .filter(|(_, cell)| cell.status != Status::Pass || cell.change == Some(Change::Regression))
        .collect();
    if !not_passed.is_empty() {
        out.push('\n');
    }
    for (row, cell) in not_passed.iter().take(LISTED_CELLS) {
        let mut head = format!(
            "{} × {}: {}",
            cut(&row.name, CASE_WIDTH),
            cut(&cell.column, COLUMN_WIDTH),
            paint(cell.status, &status_word(cell.status).to_uppercase())
        );
        match cell.threshold {
            Some(t) => {
                let _ = write!(head, " (score {:.2}, threshold {t:.2})", cell.score);
            }
            None => {
                let _ = write!(head, " (score {:.2})", cell.score);
            }
        }
        if let (Some(Change::Regression), Some(base)) = (cell.change, cell.baseline_score) {
            let _ = write!(head, ", a regression: {base:.2} in the baseline");
        }
        if !row.at.is_empty() {
            let _ = write!(head, " at {}", cut(&row.at, 120));
        }
        out.push_str(&head);
        out.push('\n');
        if let Some(error) = &cell.error {
            let _ = writeln!(out, "    error: {}", cut(error, REASON_CHARS));
        }
        for a in cell.assertions.iter().filter(|a| !a.pass) {
            let _ = writeln!(out, "    ✗ {}: {}", cut(&a.label, 60), cut(&a.reason, REASON_CHARS));
        }
        if cell.status != Status::Pass && cell.error.is_none() {
            let _ = writeln!(out, "    answer: {}", cut(&answer_text(&cell.output), REASON_CHARS));
        }
    }
    if not_passed.len() > LISTED_CELLS {
        let _ = writeln!(
            out,
            "… and {} more cells that did not pass (see the JSON or HTML report)",
            not_passed.len() - LISTED_CELLS
        );
    }

    out.push('\n');
    out.push_str(&summary_line(report, &paint));
    out.push('\n');
    out
}

/// `12 cells: 10 passed, 1 failed, 1 errors; 1 regressions, ...; mean score ...; 1.2 s; ...`.
fn summary_line(report: &EvalReport, paint: &dyn Fn(Status, &str) -> String) -> String {
    let s = &report.summary;
    let total = s.passed + s.failed + s.errors;
    let mut line = format!(
        "{total} cells: {}, {}, {}",
        paint(Status::Pass, &format!("{} passed", s.passed)),
        if s.failed > 0 { paint(Status::Fail, &format!("{} failed", s.failed)) } else { "0 failed".into() },
        if s.errors > 0 { paint(Status::Error, &format!("{} errors", s.errors)) } else { "0 errors".into() },
    );
    if let Some(baseline) = &report.baseline {
        let _ = write!(
            line,
            "; against {}: {} regressions, {} improvements",
            cut(&baseline.file, 80),
            s.regressions,
            s.improvements
        );
    }
    if !s.mean_score.is_empty() {
        let means: Vec<String> =
            s.mean_score.iter().map(|(id, m)| format!("{} {m:.2}", cut(id, COLUMN_WIDTH))).collect();
        let _ = write!(line, "; mean score {}", means.join(", "));
    }
    let _ = write!(
        line,
        "; {:.1} s; tokens {} in, {} out; cache {} hits, {} misses",
        report.duration_ms as f64 / 1000.0,
        s.usage.input,
        s.usage.output,
        s.cache_hits,
        s.cache_misses
    );
    line
}

/// `text` on one line, at most `max` characters (cut ones end with `…`), control characters
/// (escapes, newlines) as spaces, no trailing space.
fn cut(text: &str, max: usize) -> String {
    let (mut head, was_cut) = text::chars(text, max);
    if was_cut {
        head = text::chars(text, max.saturating_sub(1)).0;
    }
    let mut out: String = head.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    out.truncate(out.trim_end().len());
    if was_cut {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{AssertionResult, CaseRow, Cell, Column, EvalReport};

    fn report() -> EvalReport {
        let mut report = EvalReport { file: "chat.eval.yaml".into(), duration_ms: 1500, ..Default::default() };
        report.columns = vec![
            Column { id: "chat/mini".into(), prompt: "chat".into(), model: Some("mini".into()) },
            Column { id: "a-very-long-column-identifier-that-goes-on".into(), prompt: "x".into(), model: None },
        ];
        let failing = AssertionResult {
            kind: "contains".into(),
            label: "contains \"Paris\"".into(),
            pass: false,
            reason: "expected \"Paris\" in the answer\x1b[2J, found none".into(),
            weight: 1.0,
            ..Default::default()
        };
        let mut a = Cell { column: "chat/mini".into(), score: 1.0, ..Default::default() };
        a.baseline_score = Some(0.75);
        a.change = Some(Change::Same);
        let mut b =
            Cell { column: report.columns[1].id.clone(), status: Status::Fail, score: 0.5, ..Default::default() };
        b.assertions = vec![failing];
        b.output = "Lyon\x1b]0;pwned\x07".into();
        b.threshold = Some(0.8);
        b.baseline_score = Some(1.0);
        b.change = Some(Change::Regression);
        let name = "é".repeat(60);
        report.cases.push(CaseRow { name, at: "chat.eval.yaml:7".into(), cells: vec![a, b], ..Default::default() });
        report.summary.passed = 1;
        report.summary.failed = 1;
        report.summary.regressions = 1;
        report.baseline = Some(crate::eval::BaselineInfo { file: "base.json".into(), started_at: String::new() });
        report
    }

    #[test]
    fn the_table_is_bounded_and_free_of_control_characters() {
        let table = terminal(&report(), false);
        assert!(!table.chars().any(|c| c.is_control() && c != '\n'), "{table:?}");
        // The name is cut at 40 characters, on a character boundary.
        assert!(table.contains(&format!("{}…", "é".repeat(39))), "{table}");
        assert!(!table.contains(&"é".repeat(41)));
        assert!(table.contains("a-very-long-column-identifi…"), "{table}");
        assert!(table.contains("pass  1.00 +0.25"), "{table}");
        assert!(table.contains("FAIL  0.50 -0.50 ▼"), "{table}");
        assert!(
            table.contains("(score 0.50, threshold 0.80), a regression: 1.00 in the baseline at chat.eval.yaml:7"),
            "{table}"
        );
        assert!(table.contains("✗ contains \"Paris\": expected \"Paris\" in the answer [2J, found none"), "{table}");
        assert!(table.contains("answer: Lyon ]0;pwned\n"), "{table}");
        assert!(
            table.contains("2 cells: 1 passed, 1 failed, 0 errors; against base.json: 1 regressions, 0 improvements")
        );
        assert!(table.contains("; 1.5 s;"));
        // The rule under the headings spans the table; no line ends in spaces.
        let lines: Vec<usize> = table.lines().take(3).map(|l| l.chars().count()).collect();
        assert!(lines[1] >= lines[0] && lines[1] >= lines[2], "{lines:?}\n{table}");
        assert!(table.lines().all(|l| !l.ends_with(' ')), "{table}");
    }

    #[test]
    fn colour_is_only_added_when_asked() {
        let coloured = terminal(&report(), true);
        assert!(coloured.contains("\x1b[31;1mFAIL "));
        assert!(coloured.contains("\x1b[32mpass "));
        // The report's own escape characters are still gone.
        assert!(!coloured.contains("\x1b[2J") && !coloured.contains("\x1b]0"));
    }

    #[test]
    fn more_failing_cells_than_listed_are_counted() {
        let mut r = report();
        let row = r.cases[0].clone();
        r.cases = (0..60).map(|i| CaseRow { name: format!("case {i}"), ..row.clone() }).collect();
        let table = terminal(&r, false);
        assert_eq!(table.matches("✗ contains").count(), 50);
        assert!(table.contains("… and 10 more cells that did not pass"));
    }
}
