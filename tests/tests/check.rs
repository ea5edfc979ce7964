//! The build script and the runtime cannot disagree: for every prompt of the UI cases (mistakes
//! and valid prompts alike), `include_prompty!`'s analysis (`prompty_build::typed::analyze`), the
//! shared analysis (`prompty::analysis::check_file`) and the runtime's `prompty::check` on the
//! loaded agent give the same diagnostics; the runtime adds only what its registries lack.

use prompty::analysis::{check_file, Diagnostic};
use prompty::LoadOptions;
use std::path::{Path, PathBuf};

fn prompts() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/prompts");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "prompty") {
                let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
                out.push((path, format!("ui/prompts/{rel}")));
            }
        }
    }
    out.sort();
    out
}

fn messages(diagnostics: &[Diagnostic]) -> Vec<String> {
    diagnostics.iter().map(|d| format!("{:?} {d}", d.severity)).collect()
}

/// Diagnostics only the Rust form of a prompt can have (two names that become one field).
fn rust_only(message: &str) -> bool {
    message.contains("would both be the field")
}

#[test]
fn build_script_analysis_and_runtime_check_agree() {
    let prompts = prompts();
    assert!(prompts.len() >= 30, "expected the UI prompts, found {}", prompts.len());
    let options = LoadOptions::new().keep_env_references();
    let (mut with_errors, mut loaded) = (0, 0);
    for (path, display) in &prompts {
        let build = prompty_build::typed::analyze(path, display);
        let shared = check_file(path, display, &options);
        let build_messages: Vec<String> = messages(&build.diagnostics).into_iter().filter(|m| !rust_only(m)).collect();
        assert_eq!(build_messages, messages(&shared.diagnostics), "{display}: build script vs analysis");
        with_errors += usize::from(shared.has_errors());

        let text = std::fs::read_to_string(path).unwrap();
        let dir = path.parent().unwrap().canonicalize().unwrap();
        let Ok(agent) = prompty::load_str_with(&text, &dir, display, &options) else {
            // A prompt the loader refuses: the analysis reports exactly the loader's error.
            let err = prompty::load_str_with(&text, &dir, display, &options).unwrap_err();
            assert_eq!(messages(&shared.diagnostics), [format!("Error {err}")], "{display}");
            continue;
        };
        loaded += 1;
        let runtime = prompty::check(&agent);
        let runtime_messages = messages(&runtime.diagnostics);
        for m in messages(&shared.diagnostics) {
            // A custom renderer or provider key is a warning at build time; at run time the registry
            // decides.
            if m.contains("unknown template format") || m.contains("unknown model provider") {
                continue;
            }
            assert!(runtime_messages.contains(&m), "{display}: `prompty::check` lacks {m}\n{runtime_messages:#?}");
        }
        for m in &runtime_messages {
            assert!(
                messages(&shared.diagnostics).contains(m) || m.contains("registered") || m.contains("feature"),
                "{display}: `prompty::check` adds {m}, which is no registry check"
            );
        }
    }
    assert!(with_errors >= 18 && loaded >= 25, "{with_errors} prompts with errors, {loaded} loaded");
}
