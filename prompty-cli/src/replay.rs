//! `prompty replay`: a turn's journal (JSON lines of engine events) as the specification's replay
//! records, or verified against an expected run.

use crate::call::write_error;
use crate::exit::{CliError, CliResult, Exit};
use crate::ReplayArgs;
use prompty::engine::replay::{load_expected, project, read_journal, verify};
use std::path::Path;

/// A journal or expected file that cannot be read: a usage error naming the file.
fn unreadable(path: &Path, e: prompty::Error) -> CliError {
    match e {
        prompty::Error::Durability { message, .. } => CliError::usage(format!("{}: {message}", path.display())),
        other => CliError::usage(format!("{}: {other}", path.display())),
    }
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

/// Prints the journal's records (one normalized record per line, or `--json` the records), or
/// with `--verify` the verification: exit 1 when the runs differ.
pub fn run(args: &ReplayArgs) -> CliResult {
    let events = read_journal(&args.journal).map_err(|e| unreadable(&args.journal, e))?;
    let actual = project(&events);
    let Some(expected_path) = &args.verify else {
        let text = match args.json {
            true => json(&actual),
            false => actual.iter().map(|r| format!("{r}\n")).collect(),
        };
        crate::ui::out(&text).map_err(write_error)?;
        return Ok(Exit::Ok);
    };
    let expected = load_expected(expected_path).map_err(|e| unreadable(expected_path, e))?;
    let verification = verify(&expected, &actual);
    let text = match args.json {
        true => json(&verification),
        false => format!("{verification}\n"),
    };
    crate::ui::out(&text).map_err(write_error)?;
    Ok(if verification.passed() { Exit::Ok } else { Exit::Failure })
}
