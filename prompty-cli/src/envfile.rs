//! `.env` files: read by the command line only (the library never reads them, spec §4.3 and
//! §12.3), from the prompt's folder, then from the working directory. A variable already set
//! (in the real environment, or by a `.env` read before) is never overridden, so the real
//! environment wins, then the prompt's folder, then the working directory.
//!
//! Values are never printed: a line that cannot be parsed is named by its number only.

use crate::exit::{CliError, CliResult};
use crate::ui;
use std::path::{Path, PathBuf};

/// The largest `.env` file read, in bytes.
pub const MAX_ENV_FILE_BYTES: u64 = 1024 * 1024;

/// Reads `.env` from `prompt_dir` (when given), then from the working directory (once when they
/// are the same folder). Must run before any thread is started (it sets variables of the
/// process).
pub fn load(prompt_dir: Option<&Path>) -> CliResult<()> {
    let cwd = std::env::current_dir().ok();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in prompt_dir.map(Path::to_path_buf).into_iter().chain(cwd) {
        let canonical = dir.canonicalize().unwrap_or(dir);
        if !dirs.contains(&canonical) {
            dirs.push(canonical);
        }
    }
    for dir in dirs {
        let path = dir.join(".env");
        if path.is_file() {
            load_file(&path)?;
        }
    }
    Ok(())
}

fn load_file(path: &Path) -> CliResult<()> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_ENV_FILE_BYTES {
        return Err(CliError::prompt(format!(
            "{}: the file is larger than {MAX_ENV_FILE_BYTES} bytes",
            path.display()
        )));
    }
    let iter = dotenvy::from_path_iter(path).map_err(|e| describe(path, &e))?;
    let mut set = Vec::new();
    let mut kept = Vec::new();
    for item in iter {
        let (key, value) = item.map_err(|e| describe(path, &e))?;
        if std::env::var_os(&key).is_some() {
            kept.push(key);
        } else {
            // Single-threaded here: `main` reads `.env` before the runtime starts any thread.
            std::env::set_var(&key, value);
            set.push(key);
        }
    }
    ui::note(format!(
        "{}: set {} (already set, kept: {})",
        path.display(),
        if set.is_empty() { "nothing".to_owned() } else { set.join(", ") },
        if kept.is_empty() { "none".to_owned() } else { kept.join(", ") }
    ));
    Ok(())
}

/// An error about a `.env` file that never quotes its text (a line may hold a key).
fn describe(path: &Path, e: &dotenvy::Error) -> CliError {
    let detail = match e {
        dotenvy::Error::LineParse(line, index) => {
            let number = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| text.lines().position(|l| l == line || l.starts_with(line.as_str())))
                .map(|i| format!("line {}", i + 1))
                .unwrap_or_else(|| "a line".to_owned());
            format!("{number} cannot be parsed (at character {index}); its text is not shown")
        }
        dotenvy::Error::Io(io) => format!("cannot read the file: {io}"),
        dotenvy::Error::EnvVar(_) => "a variable it references is not valid unicode".to_owned(),
        _ => "the file cannot be read".to_owned(),
    };
    CliError::prompt(format!("{}: {detail}", path.display()))
}
