//! `${env:VAR}`, `${env:VAR:default}` and `${file:path}` references, resolved in every string of
//! the frontmatter.

use crate::keypath::{KeyPath, Seg};
use crate::origin::Origin;
use crate::{Error, Result};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// How deep `${file:}` targets may reference further files.
const MAX_DEPTH: usize = 8;

/// Folders `${file:}` may read from: the prompt's folder plus the host's extra roots. They are
/// canonicalized on the first `${file:}` reference only, so loading a prompt without one makes no
/// file system calls beyond reading it.
pub(crate) struct Roots<'a> {
    prompt_dir: &'a Path,
    extra: &'a [PathBuf],
    canonical: std::cell::OnceCell<Vec<PathBuf>>,
    /// Leave `${env:}` references as they are (compile time: no secret reaches a binary).
    pub(crate) keep_env: bool,
    /// Whether `keep_env` left at least one reference as written.
    pub(crate) kept_env: std::cell::Cell<bool>,
    /// Every file a `${file:}` reference read, canonical, in order (for rebuild tracking).
    pub(crate) reads: std::cell::RefCell<Vec<PathBuf>>,
    /// Every variable an `${env:}` reference read, with a hash of its value (`None`: not set),
    /// for the cache of loaded agents (`crate::finished`).
    pub(crate) env_reads: std::cell::RefCell<Vec<(String, Option<u64>)>>,
    /// What `${file:}` references of this load may still read.
    pub(crate) budget: Budget,
    /// Files as an editor has them ([`crate::LoadOptions::unsaved_text`]).
    pub(crate) unsaved: std::sync::Arc<std::collections::HashMap<PathBuf, std::sync::Arc<str>>>,
}

/// The bounds of [`crate::LoadOptions`] on `${file:}` reads, and what one load has used.
pub(crate) struct Budget {
    max_file_bytes: u64,
    max_total_bytes: u64,
    max_reads: usize,
    bytes: std::cell::Cell<u64>,
    reads: std::cell::Cell<usize>,
}

impl Budget {
    pub(crate) fn new(options: &crate::LoadOptions) -> Budget {
        Budget {
            max_file_bytes: options.max_file_bytes,
            max_total_bytes: options.max_total_file_bytes,
            max_reads: options.max_file_reads,
            bytes: Default::default(),
            reads: Default::default(),
        }
    }
}

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Not a regular file: what it is instead.
    NotRegular(&'static str),
    /// Larger than the limit, in bytes.
    TooLarge {
        limit: u64,
    },
    Io(std::io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotRegular(what) => write!(f, "it is {what}, not a regular file"),
            ReadError::TooLarge { limit } => write!(f, "it is larger than {limit} bytes"),
            ReadError::Io(e) => e.fmt(f),
        }
    }
}

/// What a file that is not a regular file is, for error messages.
fn file_kind(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Reads the UTF-8 text of the regular file at `path`, at most `limit` bytes.
///
/// The file type is checked before the file is opened, and again on the open handle; on Unix it
/// is opened with `O_NONBLOCK`, so a FIFO swapped in between cannot block the open (reading a
/// regular file ignores the flag). Reading stops past `limit` bytes even if the file grows.
pub(crate) fn read_regular(path: &Path, limit: u64) -> std::result::Result<String, ReadError> {
    use std::io::Read;
    let regular = |meta: &std::fs::Metadata| -> std::result::Result<(), ReadError> {
        if !meta.file_type().is_file() {
            return Err(ReadError::NotRegular(file_kind(meta.file_type())));
        }
        if meta.len() > limit {
            return Err(ReadError::TooLarge { limit });
        }
        Ok(())
    };
    regular(&std::fs::metadata(path).map_err(ReadError::Io)?)?;
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(libc::O_NONBLOCK);
    }
    let file = open.open(path).map_err(ReadError::Io)?;
    regular(&file.metadata().map_err(ReadError::Io)?)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|_| {
        ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
    })
}

impl<'a> Roots<'a> {
    pub(crate) fn new(prompt_dir: &'a Path, extra: &'a [PathBuf]) -> Roots<'a> {
        Roots {
            prompt_dir,
            extra,
            canonical: std::cell::OnceCell::new(),
            keep_env: false,
            kept_env: Default::default(),
            reads: Default::default(),
            env_reads: Default::default(),
            budget: Budget::new(&crate::LoadOptions::default()),
            unsaved: Default::default(),
        }
    }

    fn allows(&self, path: &Path) -> bool {
        let roots = self.canonical.get_or_init(|| {
            std::iter::once(self.prompt_dir).chain(self.extra.iter().map(PathBuf::as_path)).map(canonical).collect()
        });
        roots.iter().any(|r| path.starts_with(r))
    }
}

/// The canonical form of a folder, or its lexical normal form when it does not exist.
fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| lexical_normalize(p))
}

/// Removes `.` and resolves `..` without touching the file system.
fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolves every reference inside `value`, in place. `dir` is the folder relative paths start
/// from; `path` is the key path of `value`, for error messages.
pub(crate) fn resolve(
    value: &mut Value,
    dir: &Path,
    roots: &Roots,
    origin: &Origin,
    path: &mut KeyPath,
    depth: usize,
) -> Result<()> {
    match value {
        Value::String(s) => {
            if let Some(new) = resolve_string(s, dir, roots, origin, path, depth)? {
                *value = new;
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate().filter(|(_, v)| may_refer(v)) {
                path.0.push(Seg::Index(i));
                let r = resolve(item, dir, roots, origin, path, depth);
                path.0.pop();
                r?;
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut().filter(|(_, v)| may_refer(v)) {
                path.0.push(Seg::Key(k.clone()));
                let r = resolve(item, dir, roots, origin, path, depth);
                path.0.pop();
                r?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Whether `value` is a collection, or a string that may be a `${...}` reference: the values the
/// walk visits (the others are skipped without building their key path).
fn may_refer(value: &Value) -> bool {
    match value {
        Value::String(s) => s.trim_start().starts_with("${"),
        Value::Array(_) | Value::Object(_) => true,
        _ => false,
    }
}

/// What is inside `${...}` when `s` (trimmed) is one whole reference, the only form the loader
/// resolves (`http://h:${env:PORT}` is not one: it stays literal, and the analysis says so).
pub(crate) fn whole_reference(s: &str) -> Option<&str> {
    s.trim().strip_prefix("${").and_then(|r| r.strip_suffix('}'))
}

/// A string that is exactly one `${scheme:...}` reference becomes its value; any other string is
/// left alone (returns `None`).
fn resolve_string(
    s: &str,
    dir: &Path,
    roots: &Roots,
    origin: &Origin,
    path: &mut KeyPath,
    depth: usize,
) -> Result<Option<Value>> {
    let Some(inner) = whole_reference(s) else {
        return Ok(None);
    };
    if let Some(spec) = inner.strip_prefix("env:") {
        if roots.keep_env {
            roots.kept_env.set(true);
            return Ok(None);
        }
        let var = spec.split_once(':').map_or(spec, |(var, _)| var);
        roots.env_reads.borrow_mut().push((var.to_owned(), crate::finished::env_fingerprint(var)));
        return env_value(spec, origin, path).map(Some);
    }
    if let Some(reference) = inner.strip_prefix("file:") {
        return read_file(reference, dir, roots, origin, path, depth).map(Some);
    }
    Ok(None)
}

/// Why a path could not be confined.
pub(crate) enum Confine {
    Outside,
    NotFound(PathBuf),
    Io(PathBuf, std::io::Error),
}

/// Resolves `reference` against `dir` and checks it stays inside the roots, lexically and after
/// following symlinks. Returns the canonical path.
pub(crate) fn confine(reference: &str, dir: &Path, roots: &Roots) -> std::result::Result<PathBuf, Confine> {
    let joined = lexical_normalize(&canonical(dir).join(reference));
    if !roots.allows(&joined) {
        return Err(Confine::Outside);
    }
    let path = match std::fs::canonicalize(&joined) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Confine::NotFound(joined)),
        Err(e) => return Err(Confine::Io(joined, e)),
    };
    if !roots.allows(&path) {
        return Err(Confine::Outside);
    }
    Ok(path)
}

/// The value of `${env:VAR}` / `${env:VAR:default}` (`spec` is what follows `env:`).
fn env_value(spec: &str, origin: &Origin, path: &KeyPath) -> Result<Value> {
    let (var, default) = match spec.split_once(':') {
        Some((var, default)) => (var, Some(default)),
        None => (spec, None),
    };
    match (std::env::var(var), default) {
        (Ok(v), _) => {
            // Any value from the environment may be a secret: errors about this prompt must not show it.
            if v.len() >= 4 {
                origin.secrets.borrow_mut().push(v.clone());
            }
            // A variable named as a secret: hidden from everything printed, whatever field it lands in.
            if crate::Secret::is_secret_variable(var) {
                crate::Secret::remember(&v);
            }
            Ok(Value::String(v))
        }
        (Err(_), Some(d)) => Ok(Value::String(d.to_owned())),
        (Err(_), None) => {
            Err(Error::EnvVarNotSet { at: origin.at(path), field: path.to_string(), var: var.to_owned() })
        }
    }
}

/// What follows `env:` in a string that is exactly one `${env:...}` reference.
fn env_spec(s: &str) -> Option<&str> {
    whole_reference(s)?.strip_prefix("env:")
}

/// Whether `value` holds an `${env:}` reference anywhere.
pub(crate) fn has_env_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => env_spec(s).is_some(),
        Value::Array(items) => items.iter().any(has_env_reference),
        Value::Object(map) => map.values().any(has_env_reference),
        _ => false,
    }
}

/// Resolves only the `${env:}` references inside `value`, in place. With `kept`, a reference
/// whose variable is not set and has no default stays as written and sets `kept`; without it,
/// that is an error.
pub(crate) fn resolve_env(
    value: &mut Value,
    origin: &Origin,
    path: &mut KeyPath,
    kept: Option<&std::cell::Cell<bool>>,
) -> Result<()> {
    match value {
        Value::String(s) => {
            if let Some(spec) = env_spec(s) {
                match (env_value(spec, origin, path), kept) {
                    (Ok(v), _) => *value = v,
                    (Err(Error::EnvVarNotSet { .. }), Some(kept)) => kept.set(true),
                    (Err(e), _) => return Err(e),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.0.push(Seg::Index(i));
                let r = resolve_env(item, origin, path, kept);
                path.0.pop();
                r?;
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                path.0.push(Seg::Key(k.clone()));
                let r = resolve_env(item, origin, path, kept);
                path.0.pop();
                r?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The value of a referenced file's `text`, by the extension of its `path`: JSON (`.json`) or YAML
/// (`.yaml`, `.yml`), or the format and problem when it does not parse; `None` for any other
/// file, whose text is the value.
pub(crate) fn structured(path: &Path, text: &str) -> Option<std::result::Result<Value, (&'static str, String)>> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "json" => Some(serde_json::from_str(text).map_err(|e| ("JSON", e.to_string()))),
        "yaml" | "yml" => Some(crate::yaml::parse(text).map_err(|e| ("YAML", e.to_string()))),
        _ => None,
    }
}

fn read_file(
    reference: &str,
    dir: &Path,
    roots: &Roots,
    origin: &Origin,
    path: &mut KeyPath,
    depth: usize,
) -> Result<Value> {
    let canonical = match confine(reference, dir, roots) {
        Ok(p) => p,
        Err(Confine::Outside) => {
            return Err(Error::FileOutsideRoots {
                at: origin.at(path),
                field: path.to_string(),
                reference: reference.to_owned(),
            })
        }
        Err(Confine::NotFound(_)) => {
            return Err(Error::FileReferenceNotFound {
                at: origin.at_text(path, "${file:"),
                field: path.to_string(),
                reference: reference.to_owned(),
            })
        }
        Err(Confine::Io(p, source)) => return Err(Error::Io { path: p, source }),
    };
    if depth >= MAX_DEPTH {
        return Err(Error::InvalidField {
            at: origin.at(path),
            field: path.to_string(),
            message: format!(
                "file reference '{reference}' nests more than {MAX_DEPTH} levels deep (a reference cycle?)"
            ),
        });
    }
    let refused = |message: String| Error::InvalidField {
        at: origin.at(path),
        field: path.to_string(),
        message: format!("file reference '{reference}' {message}"),
    };
    let budget = &roots.budget;
    if budget.reads.get() >= budget.max_reads {
        return Err(refused(format!(
            "exceeds the {} file reads one load may make (LoadOptions::max_file_reads)",
            budget.max_reads
        )));
    }
    budget.reads.set(budget.reads.get() + 1);
    let left = budget.max_total_bytes.saturating_sub(budget.bytes.get());
    let limit = budget.max_file_bytes.min(left);
    roots.reads.borrow_mut().push(canonical.clone());
    let unsaved = roots.unsaved.get(&canonical).map(|t| t.to_string());
    let text = match unsaved.map_or_else(
        || read_regular(&canonical, limit),
        |t| {
            if t.len() as u64 > limit {
                Err(ReadError::TooLarge { limit })
            } else {
                Ok(t)
            }
        },
    ) {
        Ok(text) => text,
        Err(ReadError::Io(source)) => return Err(Error::Io { path: canonical, source }),
        Err(ReadError::TooLarge { .. }) if limit < budget.max_file_bytes => {
            return Err(refused(format!(
                "exceeds the {} bytes all file references of one load may read (LoadOptions::max_total_file_bytes)",
                budget.max_total_bytes
            )))
        }
        Err(ReadError::TooLarge { limit }) => {
            return Err(refused(format!("is larger than {limit} bytes (LoadOptions::max_file_bytes)")))
        }
        Err(e @ ReadError::NotRegular(_)) => return Err(refused(format!("cannot be read: {e}"))),
    };
    budget.bytes.set(budget.bytes.get() + text.len() as u64);
    let mut value = match structured(&canonical, &text) {
        Some(Ok(value)) => value,
        Some(Err((format, message))) => {
            return Err(Error::FileReferenceInvalid {
                at: origin.at(path),
                field: path.to_string(),
                reference: reference.to_owned(),
                message: format!("{format}: {message}"),
            })
        }
        None => return Ok(Value::String(text)),
    };
    let file_dir = canonical.parent().unwrap_or(dir).to_path_buf();
    resolve(&mut value, &file_dir, roots, origin, path, depth + 1)?;
    Ok(value)
}
