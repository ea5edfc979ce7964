//! The JUnit XML report of a run.

use super::{answer_text, status_word};
use crate::eval::{Cell, EvalReport, Status};
use prompty_core::text;
use std::fmt::Write as _;

/// The longest text written into the XML (a message, an answer), in bytes; longer ones are cut
/// on a character boundary and say how much was cut.
const TEXT_BYTES: usize = 16 * 1024;

/// The report as JUnit XML, the format CI systems (GitLab, Jenkins, GitHub test reporters, ...)
/// read: `<testsuites>` for the run, one `<testsuite>` per column (prompt × model), one
/// `<testcase>` per case with its time, its score, threshold, tags and change against the
/// baseline as `<properties>`, a `<failure>` listing the failing assertions' reasons (the first as
/// its `message`) or an `<error>` with why it could not run, and the answer as `<system-out>`.
/// Text is escaped, characters XML 1.0 does not allow (control characters) are removed, and each
/// text is cut at 16 KiB.
///
/// ```
/// use prompty::eval::{render, CaseRow, Cell, Column, EvalReport, Status};
/// let mut report = EvalReport::default();
/// report.columns.push(Column { id: "chat".into(), prompt: "chat".into(), model: None });
/// let mut row = CaseRow::default();
/// row.name = "a <b> & \"c\"".into();
/// let mut cell = Cell::default();
/// cell.column = "chat".into();
/// cell.status = Status::Error;
/// cell.error = Some("HTTP 500".into());
/// row.cells.push(cell);
/// report.cases.push(row);
/// let xml = render::junit(&report);
/// assert!(xml.contains(r#"<testcase name="a &lt;b&gt; &amp; &quot;c&quot;""#));
/// assert!(xml.contains(r#"<error message="HTTP 500" type="error">"#));
/// ```
pub fn junit(report: &EvalReport) -> String {
    let seconds = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
    let count = |status: Status| report.cases.iter().flat_map(|r| &r.cells).filter(|c| c.status == status).count();
    let cells = report.cases.iter().map(|r| r.cells.len()).sum::<usize>();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        r#"<testsuites name="{}" tests="{cells}" failures="{}" errors="{}" time="{}" timestamp="{}">"#,
        attr(&report.file),
        count(Status::Fail),
        count(Status::Error),
        seconds(report.duration_ms),
        attr(&report.started_at),
    );
    for column in &report.columns {
        let mine: Vec<_> = report
            .cases
            .iter()
            .filter_map(|row| row.cells.iter().find(|c| c.column == column.id).map(|cell| (row, cell)))
            .collect();
        let failures = mine.iter().filter(|(_, c)| c.status == Status::Fail).count();
        let errors = mine.iter().filter(|(_, c)| c.status == Status::Error).count();
        let time: u64 = mine.iter().map(|(_, c)| c.latency_ms).sum();
        let _ = writeln!(
            out,
            r#"  <testsuite name="{}" tests="{}" failures="{failures}" errors="{errors}" skipped="0" time="{}" timestamp="{}">"#,
            attr(&column.id),
            mine.len(),
            seconds(time),
            attr(&report.started_at),
        );
        out.push_str("    <properties>\n");
        property(&mut out, 6, "file", &report.file);
        property(&mut out, 6, "prompt", &column.prompt);
        if let Some(model) = &column.model {
            property(&mut out, 6, "model", model);
        }
        if let Some(mean) = report.summary.mean_score.get(&column.id) {
            property(&mut out, 6, "meanScore", &format!("{mean:.4}"));
        }
        if let Some(baseline) = &report.baseline {
            property(&mut out, 6, "baseline", &baseline.file);
        }
        out.push_str("    </properties>\n");
        for (row, cell) in mine {
            let _ = writeln!(
                out,
                r#"    <testcase name="{}" classname="{}" time="{}">"#,
                attr(&row.name),
                attr(&format!("{}.{}", report.file, column.id)),
                seconds(cell.latency_ms),
            );
            out.push_str("      <properties>\n");
            property(&mut out, 8, "status", status_word(cell.status));
            property(&mut out, 8, "score", &format!("{:.4}", cell.score));
            if let Some(t) = cell.threshold {
                property(&mut out, 8, "threshold", &format!("{t:.4}"));
            }
            if !row.at.is_empty() {
                property(&mut out, 8, "at", &row.at);
            }
            if !row.tags.is_empty() {
                property(&mut out, 8, "tags", &row.tags.join(","));
            }
            if let Some(change) = cell.change {
                property(
                    &mut out,
                    8,
                    "change",
                    &serde_json::to_value(change).map(|v| answer_text(&v)).unwrap_or_default(),
                );
            }
            if let Some(base) = cell.baseline_score {
                property(&mut out, 8, "baselineScore", &format!("{base:.4}"));
            }
            property(&mut out, 8, "cached", if cell.cached { "true" } else { "false" });
            out.push_str("      </properties>\n");
            problem(&mut out, cell);
            let answer = answer_text(&cell.output);
            if !answer.is_empty() {
                let _ = writeln!(out, "      <system-out>{}</system-out>", body(&answer));
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// The `<failure>` or `<error>` of a cell that did not pass.
fn problem(out: &mut String, cell: &Cell) {
    match cell.status {
        Status::Pass => {}
        Status::Error => {
            let why = cell.error.as_deref().unwrap_or("the case could not run");
            let _ = writeln!(out, r#"      <error message="{}" type="error">{}</error>"#, attr(why), body(why));
        }
        Status::Fail => {
            let failing: Vec<String> =
                cell.assertions.iter().filter(|a| !a.pass).map(|a| format!("{}: {}", a.label, a.reason)).collect();
            let mut detail = match cell.threshold {
                Some(t) => format!("score {:.2} under the threshold {t:.2}", cell.score),
                None => format!("score {:.2}", cell.score),
            };
            let message = failing.first().cloned().unwrap_or_else(|| detail.clone());
            for line in &failing {
                detail.push('\n');
                detail.push_str(line);
            }
            let _ = writeln!(
                out,
                r#"      <failure message="{}" type="assertion">{}</failure>"#,
                attr(&message),
                body(&detail)
            );
        }
    }
}

fn property(out: &mut String, indent: usize, name: &str, value: &str) {
    let _ = writeln!(out, r#"{:indent$}<property name="{}" value="{}"/>"#, "", attr(name), attr(value));
}

/// `text` for an attribute value: escaped, line breaks and tabs kept as character references.
fn attr(text: &str) -> String {
    escape(text, true)
}

/// `text` for element content.
fn body(text: &str) -> String {
    escape(text, false)
}

fn escape(text: &str, in_attribute: bool) -> String {
    let cut = text::prefix(text, TEXT_BYTES);
    let mut out = String::with_capacity(cut.len() + 16);
    for c in cut.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attribute => out.push_str("&quot;"),
            '\'' if in_attribute => out.push_str("&apos;"),
            '\n' if in_attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if in_attribute => out.push_str("&#9;"),
            '\n' | '\t' => out.push(c),
            // XML 1.0 allows no other control character, and neither U+FFFE nor U+FFFF.
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    if cut.len() < text.len() {
        let _ = write!(out, " … ({} bytes cut)", text.len() - cut.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_what_xml_allows_and_nothing_else() {
        assert_eq!(attr("a<b>&\"'\n\t\r"), "a&lt;b&gt;&amp;&quot;&apos;&#10;&#9;&#13;");
        assert_eq!(body("a<b>\n\t\u{0}\u{1b}[31m\u{7f}\u{FFFF}ok"), "a&lt;b&gt;\n\t[31mok");
        let long = "é".repeat(TEXT_BYTES);
        let cut = body(&long);
        assert!(cut.ends_with(&format!(" … ({} bytes cut)", TEXT_BYTES)), "{}", &cut[cut.len() - 40..]);
    }
}
