//! Adversarial loads: every probe ends quickly with an error (never a hang, a panic, a stack
//! overflow or an unbounded read). Probes that could overflow the stack run in a child process
//! (this test binary re-executed with a filter), whose exit status is checked.

use prompty_core::{load_str, load_str_with, load_with, LoadOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[path = "support/child.rs"]
mod child;
use child::in_child;
#[path = "support/scaling.rs"]
mod scaling;

/// The only absolute time limit of these probes: a hang guard, generous enough for a debug build
/// on a loaded machine. Cost is checked by ratios (`scaling`) or by the budgets the errors name.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// Runs `f` on a thread and fails if it does not return within `limit` (a blocked read).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).unwrap_or_else(|_| panic!("did not finish within {limit:?} (blocked?)"))
}

/// A fresh, empty folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-adversarial-load-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn load_err(dir: &Path, frontmatter: &str, options: &LoadOptions) -> String {
    let text = format!("---\n{frontmatter}\n---\nHi");
    match load_str_with(&text, dir, "adv.prompty", options) {
        Ok(_) => panic!("loaded: {frontmatter}"),
        Err(e) => e.to_string(),
    }
}

fn mkfifo(path: &Path) -> bool {
    match Command::new("mkfifo").arg(path).status() {
        Ok(s) if s.success() => true,
        other => {
            println!("skipped: mkfifo is unavailable ({other:?})");
            false
        }
    }
}

// ----- class 1: ${file:} references ---------------------------------------------------------

#[test]
fn a_fifo_reference_is_refused_without_blocking() {
    let dir = scratch("fifo");
    if !mkfifo(&dir.join("pipe.txt")) {
        return;
    }
    let d = dir.clone();
    let err =
        within(Duration::from_secs(10), move || load_err(&d, "description: ${file:pipe.txt}", &LoadOptions::new()));
    assert!(err.contains("pipe.txt") && err.contains("FIFO"), "{err}");
    assert!(err.starts_with("adv.prompty:2:"), "{err}");
}

#[test]
fn a_prompt_file_that_is_a_fifo_is_refused_without_blocking() {
    let dir = scratch("fifo-prompt");
    let path = dir.join("p.prompty");
    if !mkfifo(&path) {
        return;
    }
    let err = within(Duration::from_secs(10), move || load_with(&path, &LoadOptions::new()).unwrap_err().to_string());
    assert!(err.contains("FIFO"), "{err}");
}

#[cfg(unix)]
#[test]
fn device_references_are_refused() {
    let dir = scratch("dev");
    for device in ["/dev/zero", "/dev/urandom", "/dev/null"] {
        if !Path::new(device).exists() {
            continue;
        }
        let opts = LoadOptions::new().allow_root("/dev");
        let fm = format!("description: ${{file:{device}}}");
        let d = dir.clone();
        let err = within(Duration::from_secs(10), move || load_err(&d, &fm, &opts));
        assert!(err.contains(device) && err.contains("a device"), "{err}");
    }
}

#[test]
fn a_symlink_to_a_device_inside_the_folder_is_refused() {
    let dir = scratch("dev-link");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.txt")).unwrap();
        // Outside the roots after following the link...
        let err = load_err(&dir, "description: ${file:zero.txt}", &LoadOptions::new());
        assert!(err.contains("outside allowed roots"), "{err}");
        // ...and not a regular file when the host allows /dev.
        let err = load_err(&dir, "description: ${file:zero.txt}", &LoadOptions::new().allow_root("/dev"));
        assert!(err.contains("zero.txt") && err.contains("a device"), "{err}");
    }
}

#[test]
fn a_directory_reference_is_refused() {
    let dir = scratch("dir");
    std::fs::create_dir_all(dir.join("sub.json")).unwrap();
    let err = load_err(&dir, "description: ${file:sub.json}", &LoadOptions::new());
    assert!(err.contains("sub.json") && err.contains("a directory"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_socket_reference_is_refused() {
    let dir = scratch("socket");
    let _listener = std::os::unix::net::UnixListener::bind(dir.join("s.txt")).unwrap();
    let err = load_err(&dir, "description: ${file:s.txt}", &LoadOptions::new());
    assert!(err.contains("s.txt") && err.contains("a socket"), "{err}");
}

#[test]
fn a_file_over_the_size_limit_is_refused_and_the_limit_can_be_raised() {
    let dir = scratch("huge");
    let f = std::fs::File::create(dir.join("big.txt")).unwrap();
    // Sparse: 5 MiB of NUL bytes without writing them.
    f.set_len(LoadOptions::DEFAULT_MAX_FILE_BYTES + (1 << 20)).unwrap();
    let err = load_err(&dir, "description: ${file:big.txt}", &LoadOptions::new());
    assert!(err.contains("big.txt") && err.contains("max_file_bytes"), "{err}");
    // Refused from its size, not read: a file 4 times as large costs no more (within the ratio).
    scaling::assert_linear("refusing a large file", 8 << 20, |len| {
        let path = dir.join(format!("big-{len}.txt"));
        std::fs::File::create(&path).unwrap().set_len(len as u64).unwrap();
        let fm = format!("description: ${{file:big-{len}.txt}}");
        let (err, took) = scaling::timed(|| load_err(&dir, &fm, &LoadOptions::new()));
        assert!(err.contains("max_file_bytes"), "{err}");
        took
    });
    let raised = LoadOptions::new().max_file_bytes(8 << 20).max_total_file_bytes(8 << 20);
    let text = "---\ndescription: ${file:big.txt}\n---\nHi";
    let agent = load_str_with(text, &dir, "adv.prompty", &raised).unwrap();
    assert_eq!(agent.description.unwrap().len() as u64, LoadOptions::DEFAULT_MAX_FILE_BYTES + (1 << 20));
}

#[test]
fn a_prompt_file_over_the_size_limit_is_refused() {
    let dir = scratch("huge-prompt");
    let f = std::fs::File::create(dir.join("p.prompty")).unwrap();
    f.set_len(LoadOptions::DEFAULT_MAX_FILE_BYTES + 1).unwrap();
    let err = load_with(dir.join("p.prompty"), &LoadOptions::new()).unwrap_err().to_string();
    assert!(err.contains("larger than"), "{err}");
}

#[test]
fn fan_out_of_references_stops_at_the_read_budget() {
    let dir = scratch("fanout");
    // Each level references the next ten times, as deep as references may nest: 10^7 reads unbounded.
    write(&dir, "l7.txt", &"x".repeat(1000));
    for level in (0..7).rev() {
        let next = if level == 6 { "l7.txt".to_owned() } else { format!("l{}.yaml", level + 1) };
        let items: Vec<String> = (0..10).map(|_| format!("- ${{file:{next}}}")).collect();
        write(&dir, &format!("l{level}.yaml"), &items.join("\n"));
    }
    // The work is counted, not timed: the load stops at the 64th read.
    let d = dir.clone();
    let err = within(HANG_GUARD, move || load_err(&d, "metadata:\n  tree: ${file:l0.yaml}", &LoadOptions::new()));
    assert!(err.contains("max_file_reads") && err.contains("64"), "{err}");
}

#[test]
fn fan_out_of_references_stops_at_the_byte_budget() {
    let dir = scratch("fanout-bytes");
    write(&dir, "big.txt", &"x".repeat(1 << 20));
    let items: Vec<String> = (0..40).map(|_| "- ${file:big.txt}".to_owned()).collect();
    write(&dir, "many.yaml", &items.join("\n"));
    let err = load_err(&dir, "metadata:\n  many: ${file:many.yaml}", &LoadOptions::new());
    assert!(err.contains("big.txt") && err.contains("max_total_file_bytes"), "{err}");
    // Raised, it loads.
    let raised = LoadOptions::new().max_total_file_bytes(64 << 20);
    let text = "---\nmetadata:\n  many: ${file:many.yaml}\n---\nHi";
    assert!(load_str_with(text, &dir, "adv.prompty", &raised).is_ok());
}

// ----- class 3: YAML nesting ------------------------------------------------------------------

/// Loads `frontmatter` (in a child process: a stack overflow must not take the harness down) and
/// checks the error names the file and a line.
fn deep_yaml(frontmatter: String) {
    let text = format!("---\nname: x\n{frontmatter}\n---\nHi");
    let err = load_str(&text, ".", "deep.prompty").unwrap_err().to_string();
    // File, line and column.
    let at: Vec<&str> = err.splitn(4, ':').collect();
    assert!(at[0] == "deep.prompty" && at[1].parse::<usize>().is_ok() && at[2].parse::<usize>().is_ok(), "{err}");
    assert!(err.contains("deeper than 64"), "{err}");
}

const DEEP: usize = 100_000;

#[test]
fn deep_yaml_brackets() {
    in_child("deep_yaml_brackets", HANG_GUARD, || deep_yaml(format!("d: {}", "[".repeat(DEEP))));
}

#[test]
fn deep_yaml_closed_brackets() {
    in_child("deep_yaml_closed_brackets", HANG_GUARD, || {
        deep_yaml(format!("d: {}1{}", "[".repeat(DEEP), "]".repeat(DEEP)))
    });
}

#[test]
fn deep_yaml_braces() {
    in_child("deep_yaml_braces", HANG_GUARD, || deep_yaml(format!("d: {}", "{a: ".repeat(DEEP))));
}

#[test]
fn deep_yaml_bare_braces() {
    in_child("deep_yaml_bare_braces", HANG_GUARD, || deep_yaml(format!("d: {}", "{".repeat(DEEP))));
}

#[test]
fn deep_yaml_mixed_flow() {
    in_child("deep_yaml_mixed_flow", HANG_GUARD, || deep_yaml(format!("d: {}", "[{a: ".repeat(DEEP))));
}

#[test]
fn deep_yaml_block_lists() {
    in_child("deep_yaml_block_lists", HANG_GUARD, || deep_yaml(format!("d:\n{}x", "- ".repeat(DEEP))));
}

#[test]
fn deep_yaml_complex_keys() {
    in_child("deep_yaml_complex_keys", HANG_GUARD, || deep_yaml(format!("d:\n{}x", "? ".repeat(DEEP))));
}

#[test]
fn deep_yaml_indented_mappings() {
    // Indentation makes the text quadratic in the depth: 2 000 levels is already 4 MB.
    in_child("deep_yaml_indented_mappings", HANG_GUARD, || {
        let mut fm = String::from("d:\n");
        for i in 1..2000 {
            fm.push_str(&" ".repeat(i));
            fm.push_str("k:\n");
        }
        fm.push_str(&" ".repeat(2000));
        fm.push_str("k: 1");
        deep_yaml(fm)
    });
}

#[test]
fn deep_yaml_in_a_referenced_file() {
    in_child("deep_yaml_in_a_referenced_file", HANG_GUARD, || {
        let dir = scratch("deep-ref");
        write(&dir, "deep.yaml", &"[".repeat(DEEP));
        let err = load_err(&dir, "metadata: ${file:deep.yaml}", &LoadOptions::new());
        assert!(err.contains("deep.yaml") && err.contains("deeper than 64"), "{err}");
    });
}

#[test]
fn deep_yaml_is_refused_in_time_linear_in_the_text() {
    in_child("deep_yaml_is_refused_in_time_linear_in_the_text", HANG_GUARD, || {
        scaling::assert_linear("refusing deep YAML", DEEP / 2, |depth| {
            let text = format!("---\nname: x\nd: {}\n---\nHi", "[".repeat(depth));
            let (err, took) = scaling::timed(|| load_str(&text, ".", "deep.prompty").unwrap_err().to_string());
            assert!(err.contains("deeper than 64"), "{err}");
            took
        })
    });
}

#[test]
fn deep_json_in_a_referenced_file() {
    in_child("deep_json_in_a_referenced_file", HANG_GUARD, || {
        let dir = scratch("deep-json");
        write(&dir, "deep.json", &"[".repeat(DEEP));
        let err = load_err(&dir, "metadata: ${file:deep.json}", &LoadOptions::new());
        assert!(err.contains("deep.json"), "{err}");
    });
}

#[test]
fn yaml_alias_bombs_are_refused() {
    let mut fm = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        fm.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let text = format!("---\nmetadata:\n{}---\nHi", fm.lines().map(|l| format!("  {l}\n")).collect::<String>());
    // The expansion is counted, not timed: refused when the aliases expand past the limit.
    let err = within(HANG_GUARD, move || load_str(&text, ".", "bomb.prompty").unwrap_err().to_string());
    assert!(err.starts_with("bomb.prompty:") && err.contains("aliases expand"), "{err}");
}

#[test]
fn ordinary_nesting_still_loads() {
    let fm = "inputs:\n  doc:\n    kind: object\n    default: {a: [1, {b: [2, [3, {c: d}]]}]}\nmetadata:\n  tags: [a, b]\n  x: &x {k: v}\n  y: *x";
    let agent = load_str(&format!("---\n{fm}\n---\nHi"), ".", "ok.prompty").unwrap();
    assert_eq!(agent.metadata.unwrap()["y"]["k"], "v");
}
