//! What `eval_tests!` expands to: one case of an eval file run as a `#[test]`.

use super::{run_blocking, CacheMode, EvalOptions, Status};

/// The cache mode of `eval_tests!` runs: `PROMPTY_EVAL_CACHE` (`replay`, `readwrite`, `record`,
/// `off`), default `replay` (no key needed).
fn cache_mode() -> Result<CacheMode, String> {
    match std::env::var("PROMPTY_EVAL_CACHE").ok().as_deref().map(str::trim) {
        None | Some("") | Some("replay") => Ok(CacheMode::Replay),
        Some("readwrite") => Ok(CacheMode::ReadWrite),
        Some("record") => Ok(CacheMode::Record),
        Some("off") => Ok(CacheMode::Off),
        Some(other) => Err(format!("PROMPTY_EVAL_CACHE={other:?} is not one of replay, readwrite, record, off")),
    }
}

/// Runs the case `case` of the eval file `eval_file` with every column, replaying recorded
/// responses (unless `PROMPTY_EVAL_CACHE` says `readwrite`, `record` or `off`), and panics with a
/// report of each failing assertion when a cell does not pass. For `eval_tests!`.
#[doc(hidden)]
pub fn __test_case(eval_file: &str, case: &str) {
    if let Err(message) = test_case(eval_file, case) {
        panic!("{message}");
    }
}

fn test_case(eval_file: &str, case: &str) -> Result<(), String> {
    let eval = super::load(eval_file.as_ref()).map_err(|e| e.to_string())?;
    let options = EvalOptions { cache: cache_mode()?, cases: vec![case.to_owned()], ..Default::default() };
    let report = run_blocking(&eval, &options).map_err(|e| e.to_string())?;
    let Some(row) = report.cases.first() else {
        return Err(format!("{eval_file}: no case named `{case}`"));
    };
    let mut failures = Vec::new();
    for cell in &row.cells {
        match cell.status {
            Status::Pass => {}
            Status::Error => failures.push(format!(
                "  [{}] error: {}",
                cell.column,
                cell.error.as_deref().unwrap_or("the prompt failed")
            )),
            Status::Fail => {
                let threshold = cell.threshold.map(|t| format!(" (threshold {t})")).unwrap_or_default();
                failures.push(format!("  [{}] failed, score {:.2}{threshold}:", cell.column, cell.score));
                for a in &cell.assertions {
                    let mark = if a.pass { "ok  " } else { "FAIL" };
                    failures.push(format!("    {mark} {} — {}", a.label, a.reason));
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("eval case `{case}` ({}) of {eval_file} did not pass:\n{}", row.at, failures.join("\n")))
    }
}
