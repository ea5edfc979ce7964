//! A run against a baseline run: which cells regressed, which improved ([`compare`]).

use super::{BaselineInfo, Change, EvalReport, Status};
use std::collections::HashMap;

/// Marks each cell of `report` against the cell of the same case name and column id in `baseline`
/// (an earlier run's JSON report, read from `baseline_file`): [`Cell::change`](super::Cell::change)
/// (a regression passed in the baseline and does not now, an improvement the other way, new when
/// the baseline has no such cell) and [`Cell::baseline_score`](super::Cell::baseline_score); counts
/// [`Summary::regressions`](super::Summary::regressions) and
/// [`Summary::improvements`](super::Summary::improvements); records the baseline in
/// [`EvalReport::baseline`]. Comparing again replaces the marks of an earlier comparison.
///
/// ```
/// use prompty::eval::{compare, Change, EvalReport, Status};
/// let run: EvalReport = serde_json::from_value(serde_json::json!({
///     "version": 1, "file": "chat.eval.yaml", "startedAt": "2026-01-02T00:00:00Z", "durationMs": 5,
///     "columns": [{"id": "chat", "prompt": "chat"}],
///     "cases": [{"name": "greets", "at": "chat.eval.yaml:4", "vars": {}, "cells": [{
///         "column": "chat", "status": "pass", "score": 1.0, "output": "Hi", "assertions": [],
///         "latencyMs": 5, "usage": {"input": 1, "output": 1}, "modelCalls": 1, "cached": false}]}],
///     "summary": {"passed": 1, "failed": 0, "errors": 0, "regressions": 0, "improvements": 0,
///         "meanScore": {"chat": 1.0}, "usage": {"input": 1, "output": 1}, "cacheHits": 0, "cacheMisses": 1}
/// })).unwrap();
/// let mut now = run.clone();
/// now.cases[0].cells[0].status = Status::Fail;
/// now.cases[0].cells[0].score = 0.5;
/// compare(&mut now, &run, "base.json");
/// assert_eq!(now.cases[0].cells[0].change, Some(Change::Regression));
/// assert_eq!(now.cases[0].cells[0].baseline_score, Some(1.0));
/// assert_eq!(now.summary.regressions, 1);
/// assert_eq!(now.baseline.unwrap().file, "base.json");
/// ```
pub fn compare(report: &mut EvalReport, baseline: &EvalReport, baseline_file: &str) {
    let before: HashMap<(&str, &str), (Status, f64)> = baseline
        .cases
        .iter()
        .flat_map(|row| {
            row.cells.iter().map(move |cell| ((row.name.as_str(), cell.column.as_str()), (cell.status, cell.score)))
        })
        .collect();
    let (mut regressions, mut improvements) = (0, 0);
    for row in &mut report.cases {
        for cell in &mut row.cells {
            let (change, score) = match before.get(&(row.name.as_str(), cell.column.as_str())) {
                None => (Change::New, None),
                Some(&(status, score)) => {
                    let change = match (status == Status::Pass, cell.status == Status::Pass) {
                        (true, false) => Change::Regression,
                        (false, true) => Change::Improvement,
                        _ => Change::Same,
                    };
                    (change, Some(score))
                }
            };
            regressions += usize::from(change == Change::Regression);
            improvements += usize::from(change == Change::Improvement);
            cell.change = Some(change);
            cell.baseline_score = score;
        }
    }
    report.summary.regressions = regressions;
    report.summary.improvements = improvements;
    report.baseline = Some(BaselineInfo { file: baseline_file.to_owned(), started_at: baseline.started_at.clone() });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{CaseRow, Cell, Column};

    fn cell(column: &str, status: Status, score: f64) -> Cell {
        Cell { column: column.into(), status, score, ..Default::default() }
    }

    fn report(cases: Vec<(&str, Vec<Cell>)>) -> EvalReport {
        EvalReport {
            columns: vec![
                Column { id: "a".into(), prompt: "a".into(), model: None },
                Column { id: "b".into(), prompt: "b".into(), model: None },
            ],
            cases: cases
                .into_iter()
                .map(|(name, cells)| CaseRow { name: name.into(), cells, ..Default::default() })
                .collect(),
            started_at: "2026-01-01T00:00:00Z".into(),
            ..Default::default()
        }
    }

    #[test]
    fn every_kind_of_change_is_found_by_case_and_column() {
        let baseline = report(vec![
            ("x", vec![cell("a", Status::Pass, 1.0), cell("b", Status::Fail, 0.2)]),
            ("y", vec![cell("a", Status::Error, 0.0), cell("b", Status::Pass, 0.9)]),
        ]);
        // The cells come in another order: matched by column id, not position.
        let mut now = report(vec![
            ("y", vec![cell("b", Status::Pass, 0.8), cell("a", Status::Pass, 1.0)]),
            ("x", vec![cell("b", Status::Fail, 0.4), cell("a", Status::Error, 0.0)]),
            ("z", vec![cell("a", Status::Pass, 1.0)]),
        ]);
        compare(&mut now, &baseline, "runs/base.json");
        let changes: Vec<_> = now
            .cases
            .iter()
            .flat_map(|r| {
                r.cells.iter().map(|c| (r.name.as_str(), c.column.as_str(), c.change.unwrap(), c.baseline_score))
            })
            .collect();
        assert_eq!(
            changes,
            [
                ("y", "b", Change::Same, Some(0.9)),
                ("y", "a", Change::Improvement, Some(0.0)),
                ("x", "b", Change::Same, Some(0.2)),
                ("x", "a", Change::Regression, Some(1.0)),
                ("z", "a", Change::New, None),
            ]
        );
        assert_eq!((now.summary.regressions, now.summary.improvements), (1, 1));
        let info = now.baseline.clone().unwrap();
        assert_eq!((info.file.as_str(), info.started_at.as_str()), ("runs/base.json", "2026-01-01T00:00:00Z"));

        // Against itself: nothing moved, and the earlier marks are replaced.
        let same = now.clone();
        compare(&mut now, &same, "again.json");
        assert_eq!((now.summary.regressions, now.summary.improvements), (0, 0));
        assert!(now.cases.iter().flat_map(|r| &r.cells).all(|c| c.change == Some(Change::Same)));
    }
}
