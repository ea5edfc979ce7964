//! `prompty check`: every `.prompty` file below the paths, checked by the analysis the compiler
//! runs for typed prompts (`prompty::analysis`, shared with `include_prompty!`, the build script
//! and `prompty::check`): YAML, kinds, template syntax, undeclared variables, bindings, locale
//! variants, `${file:}` targets, local OpenAPI documents, child prompts, the model's provider,
//! API type and options, and the keys of connections.
//!
//! Eval files (`*.eval.yaml`, `*.eval.yml`), given or found in the folders, are checked against
//! the prompts they name (`prompty::eval::check`): datasets, vars and columns against the
//! prompts' inputs, judges, assertions against the prompts' outputs and tools.
//!
//! `${env:}` references are kept, not resolved: checking needs no secret. With `--online`, each
//! prompt is loaded again with its references resolved and its declared MCP servers and OpenAPI
//! documents are reached (`prompty::check_online`).

use crate::exit::{CliResult, Exit};
use crate::{ui, CheckArgs, Format};
use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};
use prompty::analysis::{self, Diagnostic, Report, Severity};
use prompty::LoadOptions;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A diagnostic with the file it was found in (for its source line).
struct Found {
    diagnostic: Diagnostic,
    /// The files of the analysis, as named in messages → on disk.
    files: HashMap<String, PathBuf>,
}

/// Runs `prompty check`.
pub fn run(args: &CheckArgs) -> CliResult {
    let paths = if args.paths.is_empty() { vec![PathBuf::from(".")] } else { args.paths.clone() };
    // The roots of `--allow-root`, and `${env:}` references kept.
    let options = LoadOptions::process_default().keep_env_references();
    let mut found = Vec::new();
    let mut checked = 0usize;
    for path in &paths {
        let display = path.to_string_lossy().replace('\\', "/");
        if path.is_file() && is_eval_file(path) {
            checked += 1;
            check_eval(path, &mut found);
        } else if path.is_file() {
            let mut report = analysis::check_file(path, &display, &options);
            checked += 1;
            if args.online {
                go_online(&mut report, path);
            }
            collect(&report, path, &mut found);
        } else if path.is_dir() {
            let analyze = |file: &Path, file_display: &str| analysis::check_file(file, file_display, &options);
            match analysis::check_prompts(path, display.trim_end_matches('/'), analyze) {
                Ok((prompts, problems)) => {
                    found.extend(problems.into_iter().map(|d| Found { diagnostic: d, files: HashMap::new() }));
                    for mut prompt in prompts {
                        checked += 1 + prompt.variants.len();
                        if args.online {
                            go_online(&mut prompt.default.analysis, &prompt.default.path);
                        }
                        collect(&prompt.default.analysis, &prompt.default.path, &mut found);
                        for mut variant in prompt.variants {
                            if args.online {
                                go_online(&mut variant.file.analysis, &variant.file.path);
                            }
                            let file = &variant.file;
                            collect(&file.analysis, &file.path, &mut found);
                            let files = files_of(&file.analysis, &file.path);
                            found.extend(
                                variant.mismatches.into_iter().map(|d| Found { diagnostic: d, files: files.clone() }),
                            );
                        }
                    }
                }
                Err(e) => found.push(Found {
                    diagnostic: Diagnostic::error(&display, format!("cannot read the folder: {e}"))
                        .with_code("unreadable-folder"),
                    files: HashMap::new(),
                }),
            }
            let mut evals = Vec::new();
            match eval_files(path, 0, &mut evals) {
                Ok(()) => {
                    evals.sort();
                    for file in evals {
                        checked += 1;
                        check_eval(&file, &mut found);
                    }
                }
                Err(e) => found.push(Found {
                    diagnostic: Diagnostic::error(&display, format!("cannot read the folder: {e}"))
                        .with_code("unreadable-folder"),
                    files: HashMap::new(),
                }),
            }
        } else {
            found.push(Found {
                diagnostic: Diagnostic::error(&display, "no such file or folder").with_code("no-such-path"),
                files: HashMap::new(),
            });
        }
    }
    let errors = found.iter().filter(|f| f.diagnostic.severity == Severity::Error).count();
    let warnings = found.len() - errors;
    match args.format {
        Format::Json => {
            let items: Vec<Value> = found.iter().map(|f| to_json(&f.diagnostic)).collect();
            let text = serde_json::to_string_pretty(&items).unwrap_or_default();
            ui::out(&format!("{text}\n")).map_err(crate::call::write_error)?;
        }
        Format::Human => {
            let renderer = if ui::stderr_is_terminal() && std::env::var_os("NO_COLOR").is_none() {
                Renderer::styled()
            } else {
                Renderer::plain()
            };
            for f in &found {
                if f.diagnostic.severity == Severity::Warning && !ui::shows_info() && !args.denies_warnings() {
                    continue;
                }
                eprintln!("{}\n", render(&renderer, f));
            }
        }
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    ui::info(format!(
        "checked {}: {}, {}",
        plural(checked, "file"),
        plural(errors, "error"),
        plural(warnings, "warning")
    ));
    let failed = errors > 0 || (args.denies_warnings() && warnings > 0);
    Ok(if failed { Exit::Failure } else { Exit::Ok })
}

/// Adds to `report` what the servers and documents the prompt at `path` declares say
/// (`prompty::check_online`): the prompt is loaded again with its `${env:}` references resolved.
/// A prompt with errors already is not taken online.
fn go_online(report: &mut Report, path: &Path) {
    if report.has_errors() {
        return;
    }
    match prompty::load(path) {
        Ok(agent) => prompty::check_online(&agent, report),
        Err(e) => {
            let at = report.display().to_owned();
            report.add(
                Diagnostic::error(
                    at,
                    format!(
                        "cannot check the declared servers: the prompt does not load with its references resolved: {e}"
                    ),
                )
                .with_code("remote-tools-unavailable"),
            );
        }
    }
}

/// Whether a file is an eval file (`*.eval.yaml`, `*.eval.yml`).
fn is_eval_file(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    name.ends_with(".eval.yaml") || name.ends_with(".eval.yml")
}

/// The eval files below a folder, at most [`analysis::MAX_FOLDER_DEPTH`] deep and
/// [`analysis::MAX_PROMPT_FILES`] of them (the bounds of the folder's prompts).
fn eval_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if depth > analysis::MAX_FOLDER_DEPTH {
        return Err(std::io::Error::other(format!(
            "{}: folders nest deeper than {} levels",
            dir.display(),
            analysis::MAX_FOLDER_DEPTH
        )));
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            eval_files(&path, depth + 1, out)?;
        } else if kind.is_file() && is_eval_file(&path) {
            if out.len() >= analysis::MAX_PROMPT_FILES {
                return Err(std::io::Error::other(format!(
                    "more than {} eval files below the folder",
                    analysis::MAX_PROMPT_FILES
                )));
            }
            out.push(path);
        }
    }
    Ok(())
}

/// Checks an eval file against its prompts; its diagnostics name the eval file or a dataset,
/// each readable at the path it names (for its source line).
fn check_eval(path: &Path, found: &mut Vec<Found>) {
    let path = path.strip_prefix("./").unwrap_or(path);
    let diagnostics = match prompty::eval::EvalFile::load(path) {
        Ok(eval) => prompty::eval::check(&eval),
        Err(errors) => errors,
    };
    found.extend(diagnostics.into_iter().map(|d| {
        let files = HashMap::from([(d.file.clone(), PathBuf::from(&d.file))]);
        Found { diagnostic: d, files }
    }));
}

/// Adds the diagnostics of a report (its children's included) to `found`.
fn collect(report: &Report, path: &Path, found: &mut Vec<Found>) {
    let files = files_of(report, path);
    found.extend(report.diagnostics.iter().cloned().map(|d| Found { diagnostic: d, files: files.clone() }));
}

/// The files a report names, as named → on disk: the prompt and its children, at any depth.
fn files_of(report: &Report, path: &Path) -> HashMap<String, PathBuf> {
    let mut files = HashMap::new();
    files.insert(report.display().to_owned(), path.to_path_buf());
    let mut stack: Vec<&analysis::ChildReport> = report.children.iter().collect();
    while let Some(child) = stack.pop() {
        files.insert(child.report.display().to_owned(), child.path.clone());
        stack.extend(child.report.children.iter());
    }
    files
}

/// The JSON form of a diagnostic.
fn to_json(d: &Diagnostic) -> Value {
    json!({
        "file": d.file,
        "line": d.line,
        "column": d.column,
        "severity": match d.severity { Severity::Error => "error", Severity::Warning => "warning" },
        "code": d.code,
        "message": d.message,
        "help": d.help,
    })
}

/// The most bytes of a prompt file read to show a diagnostic's line.
const MAX_SOURCE_BYTES: u64 = 16 * 1024 * 1024;

/// The line `line` (1-based) of the file and the byte offset it starts at, when it can be read.
fn source_line(path: &Path, line: u32) -> Option<(String, usize)> {
    if std::fs::metadata(path).ok()?.len() > MAX_SOURCE_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i == index {
            let l = l.strip_suffix('\n').unwrap_or(l);
            return Some((l.strip_suffix('\r').unwrap_or(l).to_owned(), offset));
        }
        offset += l.len();
    }
    None
}

/// A diagnostic in rustc's style: `error: message`, ` --> file:line:col`, the source line with
/// a caret under the column, and `= help: ...` when the message suggests something.
fn render(renderer: &Renderer, f: &Found) -> String {
    let d = &f.diagnostic;
    let (at, message) = d.location();
    let level = match d.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
    };
    let source = at.line.and_then(|line| Some((line, source_line(f.files.get(&at.file)?, line)?)));
    let mut group = Group::with_title(level.primary_title(message));
    match (source, at.line) {
        (Some((line, (text, offset))), _) => {
            // The caret spans the diagnostic's span (the word at its column) on this line; without
            // a span, the character at the column (columns count characters).
            let in_line = |i: usize| i.saturating_sub(offset).min(text.len());
            let (start, end) = match d.span {
                Some(span) if span.start >= offset && span.start <= offset + text.len() => {
                    (in_line(span.start), in_line(span.end.max(span.start)))
                }
                _ => {
                    let column = at.column.and_then(|c| usize::try_from(c).ok()).unwrap_or(1).max(1);
                    let start = text.char_indices().nth(column - 1).map(|(i, _)| i).unwrap_or(text.len());
                    let end = text[start..].chars().next().map_or(start, |c| start + c.len_utf8());
                    (start, end)
                }
            };
            let line = usize::try_from(line).unwrap_or(1);
            group = group.element(
                Snippet::source(text)
                    .line_start(line)
                    .path(at.file.clone())
                    .annotation(AnnotationKind::Primary.span(start..end)),
            );
        }
        (None, line) if !at.file.is_empty() => {
            let mut origin = Origin::path(at.file.clone());
            if let Some(line) = line.and_then(|l| usize::try_from(l).ok()) {
                origin = origin.line(line);
                if let Some(c) = at.column.and_then(|c| usize::try_from(c).ok()) {
                    origin = origin.char_column(c);
                }
            }
            group = group.element(origin);
        }
        _ => {}
    }
    if let Some(help) = &d.help {
        group = group.element(Level::HELP.message(help.clone()));
    }
    let report: [Group<'_>; 1] = [group];
    renderer.render(&report)
}

/// Prints diagnostics on stderr as `prompty check` does (rustc's style, the source line when the
/// file can be read): for `prompty eval`'s files that cannot run.
pub fn print_diagnostics(diagnostics: &[Diagnostic]) {
    let renderer = if ui::stderr_is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    for d in diagnostics {
        let files = HashMap::from([(d.file.clone(), PathBuf::from(&d.file))]);
        eprintln!("{}\n", render(&renderer, &Found { diagnostic: d.clone(), files }));
    }
}
