//! What goes to stderr: notes (`-v`), messages (unless `--quiet`), errors (always), and the spans
//! of the pipeline (`-v`: names and times; `-vv`: also their inputs and results, which prompty has
//! redacted before any backend sees them: keys, tokens and every `Secret` are `[REDACTED]`).

use prompty::trace::{FinishedSpan, TraceBackend};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicI8, Ordering};

/// -1 quiet, 0 normal, 1 `-v`, 2 `-vv` and more.
static LEVEL: AtomicI8 = AtomicI8::new(0);

/// Sets the verbosity from the global options.
pub fn set_level(quiet: bool, verbose: u8) {
    let level = if quiet { -1 } else { i8::try_from(verbose.min(2)).unwrap_or(2) };
    LEVEL.store(level, Ordering::Relaxed);
}

/// The verbosity: -1 quiet, 0 normal, 1 and 2 verbose.
pub fn level() -> i8 {
    LEVEL.load(Ordering::Relaxed)
}

/// Whether messages other than errors are shown.
pub fn shows_info() -> bool {
    level() >= 0
}

/// Prints a message on stderr unless `--quiet`.
pub fn info(message: impl std::fmt::Display) {
    if shows_info() {
        eprintln!("{message}");
    }
}

/// Prints a note on stderr with `-v`.
pub fn note(message: impl std::fmt::Display) {
    if level() >= 1 {
        eprintln!("note: {message}");
    }
}

/// Prints an error on stderr (always), scrubbed of every secret value the process knows (see
/// `prompty::Secret::scrub`): a key that landed in a field no error expects stays hidden.
pub fn error(message: impl std::fmt::Display) {
    eprintln!("error: {}", prompty::Secret::scrub(&message.to_string()));
}

/// Whether stderr is a terminal (progress bars, colours).
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Whether stdout takes colours: a terminal (or `CLICOLOR_FORCE` set to anything but `0`), and
/// `NO_COLOR` not set to anything non-empty (<https://no-color.org>), which wins.
pub fn colours_on_stdout() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set("NO_COLOR") {
        return false;
    }
    let forced = std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0");
    forced || std::io::stdout().is_terminal()
}

/// Writes `text` to stdout and flushes it (streamed answers).
pub fn out(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// The span printer of `-v`: one line per finished span (children end before their parent),
/// with its signature, time and usage; `-vv` adds the recorded (redacted) inputs and result.
struct StderrSpans {
    detail: bool,
}

impl TraceBackend for StderrSpans {
    fn span_ended(&self, span: &FinishedSpan) {
        let ms = span.end.duration_since(span.start).map(|d| d.as_millis()).unwrap_or(0);
        let failed = if span.failed { " (failed)" } else { "" };
        let mut line = format!("trace: {} [{}] {ms} ms{failed}", span.name, span.signature);
        if !span.usage.is_empty() {
            line.push_str(&format!(" usage {}", serde_json::Value::Object(span.usage.clone())));
        }
        if self.detail {
            line.push_str(&format!("\n  inputs: {}\n  result: {}", span.inputs, span.result));
        }
        eprintln!("{line}");
    }
}

/// With `-v`, prints every span of the pipeline on stderr.
pub fn trace_to_stderr() {
    if level() >= 1 {
        prompty::trace::add("prompty-cli-stderr", std::sync::Arc::new(StderrSpans { detail: level() >= 2 }));
    }
}
