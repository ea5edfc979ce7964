//! The built-in backends: `.tracy` files and the console.

use super::{time, FinishedSpan, TraceBackend};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Writes one `.tracy` file per root span, when it ends, into a folder: the format the Prompty
/// trace viewer (the VS Code extension) opens, the same shape the Python runtime writes.
///
/// The file is `<name>.<YYYYMMDD.HHMMSS>.tracy` (UTC; the name keeps letters, digits, `-` and
/// `_`, other characters become `_`, at most 64 of them; a number is added when the file exists),
/// holding `{runtime: "rust", version, trace: {name, __time{start, end, duration}, signature,
/// inputs, result, __frames, __usage}}`. A file that cannot be written is logged (through
/// `tracing`) and skipped.
///
/// ```
/// use std::sync::Arc;
/// let dir = std::env::temp_dir().join(format!("prompty-doc-tracy-{}", std::process::id()));
/// let tracy = Arc::new(prompty::trace::TracyBackend::new(&dir));
/// prompty::trace::add("doc-tracy", tracy.clone());
/// prompty::trace::traced("my step", &serde_json::json!({"x": 1}), || Ok(2))?;
/// prompty::trace::remove("doc-tracy");
/// let written = tracy.last_written().unwrap();
/// assert!(written.file_name().unwrap().to_str().unwrap().starts_with("my_step."));
/// let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap();
/// assert_eq!(file["runtime"], "rust");
/// assert_eq!(file["trace"]["result"], 2);
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug)]
pub struct TracyBackend {
    dir: PathBuf,
    last: std::sync::Mutex<Option<PathBuf>>,
}

impl TracyBackend {
    /// Writes into `dir` (created when missing).
    pub fn new(dir: impl Into<PathBuf>) -> TracyBackend {
        TracyBackend { dir: dir.into(), last: std::sync::Mutex::new(None) }
    }

    /// The folder it writes into.
    ///
    /// ```
    /// assert_eq!(prompty::trace::TracyBackend::new("runs").dir(), std::path::Path::new("runs"));
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file it wrote last, if any.
    ///
    /// ```
    /// assert!(prompty::trace::TracyBackend::new("runs").last_written().is_none());
    /// ```
    pub fn last_written(&self) -> Option<PathBuf> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The document of a root span.
    ///
    /// ```
    /// let doc = prompty::trace::TracyBackend::document(&Default::default());
    /// assert_eq!(doc["runtime"], "rust");
    /// assert!(doc["trace"]["__time"]["duration"].is_u64());
    /// ```
    pub fn document(root: &FinishedSpan) -> Value {
        json!({"runtime": "rust", "version": env!("CARGO_PKG_VERSION"), "trace": root.frame()})
    }

    fn write(&self, root: &FinishedSpan) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        let stem = format!("{}.{}", sanitize(&root.name), time::stamp(root.end));
        let text = serde_json::to_string_pretty(&TracyBackend::document(root)).map_err(std::io::Error::other)?;
        for n in 0..1000 {
            let name = if n == 0 { format!("{stem}.tracy") } else { format!("{stem}.{n}.tracy") };
            let path = self.dir.join(name);
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    std::io::Write::write_all(&mut file, text.as_bytes())?;
                    return Ok(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("a thousand trace files of the same name and second exist"))
    }
}

/// A span name as a file name: letters, digits, `-`, `_` kept, anything else `_`, at most 64.
fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    if s.is_empty() {
        "trace".to_owned()
    } else {
        s
    }
}

impl TraceBackend for TracyBackend {
    fn span_ended(&self, span: &FinishedSpan) {
        if span.parent_id.is_some() {
            return;
        }
        match self.write(span) {
            Ok(path) => *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(path),
            Err(e) => tracing::warn!("cannot write the trace of `{}` into {}: {e}", span.name, self.dir.display()),
        }
    }
}

/// Prints `[prompty] ◀ name (signature) N ms` to stderr when a span ends (the spec's console
/// tracer).
///
/// ```
/// prompty::trace::add("console", std::sync::Arc::new(prompty::trace::ConsoleBackend));
/// prompty::trace::remove("console");
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct ConsoleBackend;

impl TraceBackend for ConsoleBackend {
    fn span_ended(&self, span: &FinishedSpan) {
        let ms = span.end.duration_since(span.start).map(|d| d.as_millis()).unwrap_or(0);
        let failed = if span.failed { " failed" } else { "" };
        eprintln!("[prompty] ◀ {} ({}) {ms} ms{failed}", span.name, span.signature);
    }
}
