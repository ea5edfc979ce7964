//! `prompty eval`: runs eval files (`prompty::eval::run`), prints the terminal table, writes the
//! JSON, JUnit and HTML reports asked for, compares with a baseline run.

use crate::exit::{classify, CliError, CliResult, Exit};
use crate::{check, ui, CacheArg, EvalArgs};
use prompty::eval::{self, CacheMode, EvalError, EvalOptions, EvalReport, Progress};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The largest baseline report read, in bytes.
const MAX_BASELINE_BYTES: u64 = 256 << 20;

/// Runs `prompty eval`.
pub async fn run(args: &EvalArgs) -> CliResult {
    let several = args.files.len() > 1;
    let stems = stems(&args.files)?;
    let mut exit = Exit::Ok;
    for (file, stem) in args.files.iter().zip(&stems) {
        let display = file.to_string_lossy().replace('\\', "/");
        let loaded = eval::load(file);
        let eval_file = match loaded {
            Ok(e) => e,
            Err(e) => return Err(invalid(&display, e)),
        };
        let mut options = options(args);
        let bar = progress_bar(args);
        options.progress = bar.as_ref().map(|(_, f)| f.clone());
        let outcome = eval::run(&eval_file, &options).await;
        if let Some((bar, _)) = &bar {
            bar.finish_and_clear();
        }
        let mut report = outcome.map_err(|e| invalid(&display, e))?;
        if let Some(base) = &args.baseline {
            let path = if several { base.join(format!("{stem}.json")) } else { base.clone() };
            match read_baseline(&path)? {
                Some(baseline) => eval::compare(&mut report, &baseline, &path.to_string_lossy()),
                None => ui::info(format!("note: no baseline for {display}: {} does not exist", path.display())),
            }
        }
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        if several {
            ui::out(&format!("{display}\n")).map_err(crate::call::write_error)?;
        }
        ui::out(&eval::render::terminal(&report, color)).map_err(crate::call::write_error)?;
        if several {
            ui::out("\n").map_err(crate::call::write_error)?;
        }
        let target =
            |path: &PathBuf, ext: &str| if several { path.join(format!("{stem}.{ext}")) } else { path.clone() };
        if let Some(path) = &args.json {
            let text = serde_json::to_string_pretty(&report).map_err(|e| CliError::new(Exit::Failure, e))?;
            write(&target(path, "json"), &(text + "\n"))?;
        }
        if let Some(path) = &args.junit {
            write(&target(path, "xml"), &eval::render::junit(&report))?;
        }
        if let Some(path) = &args.html {
            write(&target(path, "html"), &eval::render::html(&report))?;
        }
        if !report.passed() || report.summary.regressions > 0 {
            exit = Exit::Failure;
        }
    }
    Ok(exit)
}

/// The runner's options from the command line.
fn options(args: &EvalArgs) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.concurrency = args.concurrency.and_then(|n| usize::try_from(n).ok());
    options.cache = match args.cache {
        CacheArg::Auto => CacheMode::ReadWrite,
        CacheArg::Replay => CacheMode::Replay,
        CacheArg::Record => CacheMode::Record,
        CacheArg::Off => CacheMode::Off,
    };
    options.cache_dir = args.cache_dir.clone();
    options.tags = args.tag.clone();
    options.cases = args.case.clone();
    options
}

type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// A progress bar on stderr, only when it is a terminal (and not `--quiet` or `--no-progress`).
fn progress_bar(args: &EvalArgs) -> Option<(indicatif::ProgressBar, ProgressFn)> {
    if args.no_progress || !ui::shows_info() || !ui::stderr_is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} cells, {elapsed} elapsed, {eta} left {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let shown = bar.clone();
    let update: ProgressFn = Arc::new(move |p: &Progress| {
        shown.set_length(u64::try_from(p.total).unwrap_or(u64::MAX));
        shown.set_position(u64::try_from(p.done).unwrap_or(u64::MAX));
        if p.status != eval::Status::Pass {
            shown.set_message(format!("{} × {}: {:?}", p.case, p.column, p.status).to_lowercase());
        }
    });
    Some((bar, update))
}

/// Each file's report name with several files: its name without `.eval.yaml` (`.yaml`, `.yml`).
/// Two files with the same name would write the same reports: a usage error.
fn stems(files: &[PathBuf]) -> CliResult<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for file in files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let stem = [".eval.yaml", ".eval.yml", ".yaml", ".yml"]
            .iter()
            .find_map(|ext| name.strip_suffix(ext))
            .unwrap_or(&name)
            .to_owned();
        if let Some(i) = out.iter().position(|s| *s == stem) {
            return Err(CliError::usage(format!(
                "{} and {} would write reports of the same name ({stem}.*): run them separately",
                files[i].display(),
                file.display()
            )));
        }
        out.push(stem);
    }
    Ok(out)
}

/// An eval file that cannot run: its mistakes printed as `prompty check` prints them (exit 2), or
/// the failure that stopped the run.
fn invalid(display: &str, e: EvalError) -> CliError {
    match e {
        EvalError::Invalid(diagnostics) => {
            check::print_diagnostics(&diagnostics);
            let n = diagnostics.len();
            CliError::usage(format!(
                "{display}: {n} mistake{} (see above); nothing was run",
                if n == 1 { "" } else { "s" }
            ))
        }
        EvalError::Run(e) => CliError::new(classify(&e), format!("{display}: {e}")),
        other => CliError::new(Exit::Failure, format!("{display}: {other}")),
    }
}

/// The baseline run (`None`: the file does not exist). A file that is not a report is a usage
/// error naming it.
fn read_baseline(path: &Path) -> CliResult<Option<EvalReport>> {
    let size = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CliError::usage(format!("cannot read the baseline {}: {e}", path.display()))),
    };
    if size > MAX_BASELINE_BYTES {
        return Err(CliError::usage(format!(
            "the baseline {} has {size} bytes, more than the {MAX_BASELINE_BYTES} a report may have",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read the baseline {}: {e}", path.display())))?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        CliError::usage(format!(
            "the baseline {} is not a report of `prompty eval --json` (line {}, column {}: {e})",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

/// Writes a report, creating its folder.
fn write(path: &Path, text: &str) -> CliResult<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::new(Exit::Failure, format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::write(path, text)
        .map_err(|e| CliError::new(Exit::Failure, format!("cannot write {}: {e}", path.display())))?;
    ui::note(format!("wrote {}", path.display()));
    Ok(())
}
