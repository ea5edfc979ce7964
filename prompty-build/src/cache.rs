//! The cache of [`crate::compile()`] in `OUT_DIR`: for each prompt, what its last generation read
//! and said, so that a prompt whose files did not change keeps its module's file without being
//! analyzed, generated or formatted again.
//!
//! An entry is taken only when its key is the key of the prompt now: a digest of the cache's
//! format, prompty-build's version, the build script's executable (its path, size and
//! modification time: a rebuilt build script or prompty-build gives another), the options of the
//! [`crate::Config`], the prompt's module path and files (the default and its locale variants, as
//! found and as named in messages), and the bytes of every file the last analysis read (the
//! prompt, its variants, the files of its `${file:}` references, local OpenAPI specifications and
//! the child prompts of its `kind: prompty` tools, with theirs). Any change to one of them
//! analyzes the prompt again, with every check: a locale variant against its default, a child
//! prompt with its parent. The module's file must also still hold what was written. A file
//! modified less than a second before its analysis started, or during it, leaves its prompt out
//! of the cache (the analysis may have read it before the change).
//!
//! Only prompts without errors are cached; their warnings are kept as their text, place and code
//! (not their related places and fixes, which only editors show). The cache file holds paths,
//! digests and those warnings: nothing a prompt's `${env:}` references name is ever resolved. It
//! is read only up to [`MAX_CACHE_BYTES`]; a larger, unreadable or unparsable file counts as
//! empty.

use crate::typed::Diagnostic;
use prompty_core::analysis::{PromptFiles, Severity};
use prompty_core::Location;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The cache's file name, in the folder of the generated modules.
pub(crate) const FILE_NAME: &str = "cache.json";

/// The largest cache file read.
pub(crate) const MAX_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// The format of the cache file: a change of what a key covers or of the file's shape changes it.
const FORMAT: &str = "prompty-build cache 1";

/// What a prompt's last generation read and said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The prompt's key then, or `None` when it must not be taken (a file changed around its
    /// analysis).
    pub key: Option<String>,
    /// The files read, in order.
    pub files: Vec<PathBuf>,
    /// Its warnings, in order.
    pub warnings: Vec<Diagnostic>,
    /// The digest of its module's file.
    pub content: String,
}

/// The entries of a folder, by module file (`support/triage.rs`), and what every key starts with.
pub(crate) struct Cache {
    salt: Digest,
    entries: BTreeMap<String, Entry>,
}

/// A 128-bit digest from two SipHash states keyed apart (std's `DefaultHasher`: stable for one
/// build of prompty-build, which the key covers).
#[derive(Clone)]
pub(crate) struct Digest(std::collections::hash_map::DefaultHasher, std::collections::hash_map::DefaultHasher);

impl Digest {
    pub(crate) fn new() -> Digest {
        let mut second = std::collections::hash_map::DefaultHasher::new();
        second.write_u64(0x7072_6f6d_7074_7921);
        Digest(std::collections::hash_map::DefaultHasher::new(), second)
    }

    /// Adds `data`, length first (so that two fields cannot run into each other).
    pub(crate) fn add(&mut self, data: &[u8]) {
        for h in [&mut self.0, &mut self.1] {
            h.write_u64(data.len() as u64);
            h.write(data);
        }
    }

    /// Adds the bytes of the file `path`, read in pieces (a file of any size takes 64 KiB of
    /// memory), then their count.
    pub(crate) fn add_file(&mut self, path: &Path) -> std::io::Result<()> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let mut buffer = vec![0; 64 * 1024];
        let mut total: u64 = 0;
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            self.0.write(&buffer[..n]);
            self.1.write(&buffer[..n]);
            total += n as u64;
        }
        self.0.write_u64(total);
        self.1.write_u64(total);
        Ok(())
    }

    pub(crate) fn hex(&self) -> String {
        format!("{:016x}{:016x}", self.0.finish(), self.1.finish())
    }
}

/// The digest of one text.
pub(crate) fn digest(text: &str) -> String {
    let mut d = Digest::new();
    d.add(text.as_bytes());
    d.hex()
}

fn path_bytes(p: &Path) -> Vec<u8> {
    p.to_string_lossy().into_owned().into_bytes()
}

impl Cache {
    /// The cache of `folder` (empty when it has none), for keys that start with `options` (the
    /// configuration, as text).
    pub(crate) fn load(folder: &Path, options: &[String]) -> Cache {
        let mut salt = Digest::new();
        salt.add(FORMAT.as_bytes());
        salt.add(env!("CARGO_PKG_VERSION").as_bytes());
        // The build script: relinked whenever prompty-build (or the script) changes.
        match std::env::current_exe().and_then(|exe| Ok((std::fs::metadata(&exe)?, exe))) {
            Ok((meta, exe)) => {
                salt.add(&path_bytes(&exe));
                salt.add(&meta.len().to_le_bytes());
                let modified = meta.modified().ok().and_then(|m| m.duration_since(SystemTime::UNIX_EPOCH).ok());
                salt.add(&modified.unwrap_or_default().as_nanos().to_le_bytes());
            }
            // Nothing to tell one build script from the next: no key can match.
            Err(_) => salt.add(format!("{:?}", SystemTime::now()).as_bytes()),
        }
        for o in options {
            salt.add(o.as_bytes());
        }
        let entries = read(&folder.join(FILE_NAME)).unwrap_or_default();
        Cache { salt, entries }
    }

    /// The key of the prompt `group` (its module file `module`) when it reads `files`: `None`
    /// when one of them cannot be read.
    pub(crate) fn key(&self, group: &PromptFiles, module: &str, files: &[PathBuf]) -> Option<String> {
        let mut d = self.salt.clone();
        d.add(module.as_bytes());
        d.add(group.id.as_bytes());
        d.add(&path_bytes(&group.default));
        d.add(group.default_display.as_bytes());
        for (locale, path, display) in &group.variants {
            d.add(locale.as_str().as_bytes());
            d.add(&path_bytes(path));
            d.add(display.as_bytes());
        }
        for f in files {
            d.add(&path_bytes(f));
            d.add_file(f).ok()?;
        }
        Some(d.hex())
    }

    /// The entry of `group` when it is valid now: its key matches and the module's file `path`
    /// (named `module` in the key) holds what was written.
    pub(crate) fn hit(&self, group: &PromptFiles, module: &str, path: &Path) -> Option<&Entry> {
        let entry = self.entries.get(module)?;
        let key = entry.key.as_deref()?;
        if self.key(group, module, &entry.files).as_deref() != Some(key) {
            return None;
        }
        let written = std::fs::read_to_string(path).ok()?;
        (digest(&written) == entry.content).then_some(entry)
    }

    /// A new entry for `group`, analyzed from `started` on and having read `files`: without a key
    /// when a file changed less than a second before `started`, or since.
    pub(crate) fn entry(
        &self,
        group: &PromptFiles,
        module: &str,
        files: Vec<PathBuf>,
        warnings: Vec<Diagnostic>,
        started: SystemTime,
    ) -> Entry {
        let key = self.key(group, module, &files);
        let settled = files.iter().all(|f| {
            std::fs::metadata(f).and_then(|m| m.modified()).is_ok_and(|m| m + Duration::from_secs(1) <= started)
        });
        Entry { key: key.filter(|_| settled), files, warnings, content: String::new() }
    }

    /// Writes `entries` (by module file) into `folder`'s cache file.
    pub(crate) fn save(folder: &Path, entries: &BTreeMap<String, Entry>) -> std::io::Result<()> {
        let prompts: serde_json::Map<String, Value> =
            entries.iter().map(|(id, e)| (id.clone(), entry_json(e))).collect();
        let text = json!({ "format": FORMAT, "prompts": prompts }).to_string();
        let path = folder.join(FILE_NAME);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(path, text)?;
        }
        Ok(())
    }
}

fn entry_json(e: &Entry) -> Value {
    let warnings: Vec<Value> = e
        .warnings
        .iter()
        .map(|d| {
            json!({
                "code": d.code, "file": d.file, "line": d.line, "column": d.column,
                "message": d.message, "help": d.help,
            })
        })
        .collect();
    let files: Vec<String> = e.files.iter().map(|f| f.to_string_lossy().into_owned()).collect();
    json!({ "key": e.key, "files": files, "warnings": warnings, "content": e.content })
}

fn read(path: &Path) -> Option<BTreeMap<String, Entry>> {
    if std::fs::metadata(path).ok()?.len() > MAX_CACHE_BYTES {
        return None;
    }
    let value: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    if value.get("format")?.as_str()? != FORMAT {
        return None;
    }
    let mut entries = BTreeMap::new();
    for (id, e) in value.get("prompts")?.as_object()? {
        let files = e.get("files")?.as_array()?.iter().map(|f| f.as_str().map(PathBuf::from)).collect::<Option<_>>()?;
        let warnings = e.get("warnings")?.as_array()?.iter().map(warning).collect::<Option<_>>()?;
        let entry = Entry {
            key: e.get("key")?.as_str().map(str::to_owned),
            files,
            warnings,
            content: e.get("content")?.as_str()?.to_owned(),
        };
        entries.insert(id.clone(), entry);
    }
    Some(entries)
}

fn warning(v: &Value) -> Option<Diagnostic> {
    let number = |field: &str| v.get(field).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    let at = Location { file: v.get("file")?.as_str()?.to_owned(), line: number("line"), column: number("column") };
    let mut d = Diagnostic::new(Severity::Warning, intern(v.get("code")?.as_str()?), at, v.get("message")?.as_str()?);
    d.help = v.get("help").and_then(Value::as_str).map(str::to_owned);
    Some(d)
}

/// The `&'static str` of a diagnostic's code read back from the cache: each distinct code is
/// allocated once for the life of the build script (there are a few dozen rules); what is not a
/// rule's name (lowercase words joined by `-`, at most 64 bytes) is [`Diagnostic::CUSTOM`].
fn intern(code: &str) -> &'static str {
    static CODES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    if code.is_empty() || code.len() > 64 || !code.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') {
        return Diagnostic::CUSTOM;
    }
    let mut codes = CODES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = codes.get(code) {
        return known;
    }
    let code: &'static str = Box::leak(code.to_owned().into_boxed_str());
    codes.insert(code);
    code
}
