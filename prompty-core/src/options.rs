//! How a prompt is loaded: [`LoadOptions`] (allowed roots, `${env:}` handling, read bounds).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options for loading a prompt.
///
/// `${file:...}` references may only read inside the prompt's own folder. A host (never the
/// frontmatter) can allow more folders with [`LoadOptions::allow_root`].
///
/// ```
/// let opts = prompty_core::LoadOptions::new().allow_root("/srv/shared-prompts");
/// assert_eq!(opts.allowed_roots().len(), 1);
/// ```
///
/// # Bounds
///
/// A prompt is untrusted input, so one load reads a bounded amount (each bound can be raised):
///
/// | Bound | Default | Raise with |
/// | --- | --- | --- |
/// | size of one file (the prompt file itself or a `${file:}` target) | [`LoadOptions::DEFAULT_MAX_FILE_BYTES`] (4 MiB) | [`LoadOptions::max_file_bytes`] |
/// | bytes all `${file:}` references of one load read together | [`LoadOptions::DEFAULT_MAX_TOTAL_FILE_BYTES`] (16 MiB) | [`LoadOptions::max_total_file_bytes`] |
/// | `${file:}` reads of one load (a file referenced twice counts twice) | [`LoadOptions::DEFAULT_MAX_FILE_READS`] (64) | [`LoadOptions::max_file_reads`] |
///
/// `${file:}` reads only regular files: a directory, FIFO, socket or device is refused without
/// being opened for reading. References nest at most 8 files deep, and frontmatter (and `.yaml`
/// targets) may nest at most 64 levels of lists and mappings. Exceeding a bound is an error that
/// names the reference; nothing is read past it.
///
/// ```
/// let opts = prompty_core::LoadOptions::new().max_file_bytes(64 << 20).max_total_file_bytes(256 << 20).max_file_reads(1000);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub(crate) allowed_roots: Vec<PathBuf>,
    pub(crate) keep_env: bool,
    pub(crate) max_file_bytes: u64,
    pub(crate) max_total_file_bytes: u64,
    pub(crate) max_file_reads: usize,
    /// Files as an editor has them (canonical path → text), read instead of the disk.
    pub(crate) unsaved: Arc<HashMap<PathBuf, Arc<str>>>,
}

/// What [`LoadOptions::process_default`] returns (`None`: [`LoadOptions::new`]).
static PROCESS_DEFAULT: std::sync::RwLock<Option<LoadOptions>> = std::sync::RwLock::new(None);

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            allowed_roots: Vec::new(),
            keep_env: false,
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
            max_total_file_bytes: Self::DEFAULT_MAX_TOTAL_FILE_BYTES,
            max_file_reads: Self::DEFAULT_MAX_FILE_READS,
            unsaved: Arc::default(),
        }
    }
}

impl LoadOptions {
    /// The default largest file a load reads: 4 MiB.
    pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 << 20;
    /// The default total of bytes the `${file:}` references of one load read: 16 MiB.
    pub const DEFAULT_MAX_TOTAL_FILE_BYTES: u64 = 16 << 20;
    /// The default number of `${file:}` reads of one load: 64.
    pub const DEFAULT_MAX_FILE_READS: usize = 64;

    /// Default options: references confined to the prompt's folder, the default bounds.
    pub fn new() -> Self {
        LoadOptions::default()
    }

    /// The options of every load that is given none: [`crate::load`], [`crate::load_str`],
    /// prompty's `load`/`load_async`, `turn(path)`, `PromptSource::path`, a `PromptRegistry`'s
    /// folders, evaluations, the child prompts and OpenAPI documents of agents that were not
    /// loaded from a file. [`LoadOptions::new`] until [`LoadOptions::set_process_default`]
    /// changes it. Explicit options (the `_with` forms) are never merged with it.
    ///
    /// ```
    /// assert!(prompty_core::LoadOptions::process_default().allowed_roots().is_empty());
    /// ```
    pub fn process_default() -> LoadOptions {
        let current = PROCESS_DEFAULT.read().unwrap_or_else(|e| e.into_inner());
        current.clone().unwrap_or_default()
    }

    /// Sets the options of every load that is given none ([`LoadOptions::process_default`]),
    /// for the whole process: set it once at start-up, before the first load (a load already
    /// under way keeps the options it started with; agents already loaded keep the roots they
    /// were loaded with). Thread-safe; the last call wins. The `prompty` command sets it from
    /// its `--allow-root` flags.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("prompty-doc-process-default-{}", std::process::id()));
    /// std::fs::create_dir_all(dir.join("prompts")).unwrap();
    /// std::fs::write(dir.join("shared.txt"), "Be brief.").unwrap();
    /// std::fs::write(dir.join("prompts/a.prompty"), "---\ndescription: ${file:../shared.txt}\n---\nHi").unwrap();
    /// assert!(prompty_core::load(dir.join("prompts/a.prompty")).is_err()); // outside the prompt's folder
    /// prompty_core::LoadOptions::set_process_default(prompty_core::LoadOptions::new().allow_root(&dir));
    /// let agent = prompty_core::load(dir.join("prompts/a.prompty"))?;
    /// assert_eq!(agent.description.as_deref(), Some("Be brief."));
    /// assert_eq!(agent.source.unwrap().allowed_roots, [dir]); // the agent remembers its roots
    /// # prompty_core::LoadOptions::set_process_default(prompty_core::LoadOptions::new());
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn set_process_default(options: LoadOptions) {
        *PROCESS_DEFAULT.write().unwrap_or_else(|e| e.into_inner()) = Some(options);
    }

    /// Also allow `${file:}` references inside `root`.
    pub fn allow_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.allowed_roots.push(root.into());
        self
    }

    /// The extra folders `${file:}` references may read.
    pub fn allowed_roots(&self) -> &[PathBuf] {
        &self.allowed_roots
    }

    /// The largest file (the prompt file or a `${file:}` target) a load reads, in bytes
    /// (default [`Self::DEFAULT_MAX_FILE_BYTES`]).
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// How many bytes all `${file:}` references of one load may read together
    /// (default [`Self::DEFAULT_MAX_TOTAL_FILE_BYTES`]).
    pub fn max_total_file_bytes(mut self, bytes: u64) -> Self {
        self.max_total_file_bytes = bytes;
        self
    }

    /// How many `${file:}` reads one load may make, counting a file each time it is referenced
    /// (default [`Self::DEFAULT_MAX_FILE_READS`]).
    pub fn max_file_reads(mut self, reads: usize) -> Self {
        self.max_file_reads = reads;
        self
    }

    /// The text of `path` as an editor has it (unsaved): `${file:}` references and `kind: prompty`
    /// children that name the file read this text instead of the disk (what a language server
    /// checks). The bounds apply to it as to a file; the file must still exist (it is confined to
    /// the allowed folders like any other).
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("prompty-doc-unsaved-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("about.txt"), "on disk").unwrap();
    /// let opts = prompty_core::LoadOptions::new().unsaved_text(dir.join("about.txt"), "in the editor");
    /// let a = prompty_core::load_str_with("---\ndescription: ${file:about.txt}\n---\n", &dir, "x", &opts)?;
    /// assert_eq!(a.description.as_deref(), Some("in the editor"));
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn unsaved_text(mut self, path: impl AsRef<Path>, text: impl Into<Arc<str>>) -> Self {
        let path = path.as_ref();
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Arc::make_mut(&mut self.unsaved).insert(key, text.into());
        self
    }

    /// The unsaved text of the file at canonical path `path`, if an editor has one.
    pub(crate) fn unsaved(&self, path: &Path) -> Option<&Arc<str>> {
        if self.unsaved.is_empty() {
            return None;
        }
        self.unsaved.get(path)
    }

    /// Leave `${env:...}` references unresolved (as the literal strings). Compile-time loading uses
    /// this so that no secret from the build machine's environment reaches a binary. The agent
    /// remembers it holds references ([`crate::Agent::has_env_references`]): the runtime resolves
    /// them when it sends it, and [`crate::Agent::with_env_resolved`] resolves them at once.
    ///
    /// ```
    /// let opts = prompty_core::LoadOptions::new().keep_env_references();
    /// let a = prompty_core::load_str_with("---\nmodel:\n  id: ${env:MODEL_ID_UNSET}\n---\n", ".", "x", &opts)?;
    /// assert_eq!(a.model.unwrap().id, "${env:MODEL_ID_UNSET}");
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn keep_env_references(mut self) -> Self {
        self.keep_env = true;
        self
    }
}
