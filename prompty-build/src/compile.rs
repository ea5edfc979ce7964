//! `prompty_build::compile("prompts")` in a `build.rs`: the build-script door of the code
//! generator. Every prompt below the folder becomes a module (sub-folders become nested modules,
//! locale variants such as `greeting.fr.prompty` join their default's module) declared in
//! `OUT_DIR/prompty.rs`, which the crate includes with one line:
//!
//! ```ignore
//! include!(concat!(env!("OUT_DIR"), "/prompty.rs"));
//! ```
//!
//! Each module is a file of its own, `OUT_DIR/prompty-build/prompty.rs/<folders>/<name>.rs`, which
//! `prompty.rs` names with `#[path]`; a file is written only when its text changes, and a prompt
//! whose files are unchanged is taken from the cache beside them (`cache.json`) instead of being
//! analyzed, generated and formatted again. [`Config::generate`] gives the same modules in one
//! text.

use crate::cache;
use crate::codegen::{self, Options};
use crate::names;
use crate::typed::{self, Diagnostic, Severity};
use proc_macro2::{Span, TokenStream};
use prompty_core::analysis;
use quote::quote;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// Compiles every `.prompty` file below `dir` (relative to the crate's `Cargo.toml` folder) into
/// `OUT_DIR/prompty.rs` (the module tree) and one file per prompt below
/// `OUT_DIR/prompty-build/prompty.rs/` (see [`Config::compile`]), for a `build.rs`:
///
/// ```no_run
/// // build.rs
/// fn main() -> Result<(), prompty_build::CompileError> {
///     prompty_build::compile("prompts")
/// }
/// ```
///
/// and, in the crate (at the place whose `#[prompty::tool]` handlers the prompts' function tools
/// use):
///
/// ```ignore
/// include!(concat!(env!("OUT_DIR"), "/prompty.rs"));
/// ```
///
/// `prompts/chat.prompty` becomes `mod chat`, `prompts/support/triage.prompty` becomes
/// `mod support { mod triage }` (module names are the snake_case of the folder and file names).
/// Each module holds `Inputs`, `Output` (when the prompt declares `outputs:`), `agent()`,
/// `prepare`, `invoke`, `invoke_stream`, `tools()`, and `turn` when the prompt declares tools.
///
/// # Locale variants
///
/// A file named `<name>.<locale>.prompty` next to `<name>.prompty` is a locale variant of it
/// (the locale a BCP 47 tag: `greeting.fr.prompty`, `greeting.pt-BR.prompty`): it joins the
/// module of its default instead of getting its own, and that module gets
///
/// - `LOCALES`: the variants' tags in conventional case, sorted (`["fr", "pt-BR"]`), and
///   `LOCALE_PATHS`, their files;
/// - `agent_in(locale)`, `prepare_in(&inputs, locale)`, `invoke_in`, `invoke_stream_in`, and
///   `turn_in` when the prompt declares tools: the plain functions on the variant a locale picks.
///   The lookup is the exact tag (case-insensitive, `_` for `-`), then its truncations (`pt-BR` →
///   `pt`), then the fallback locale of `prompty::PromptRegistry::global()` (default `en`), then
///   the default prompt; a tag that is not BCP 47 is an error.
///
/// Every module has `LOCALES` (empty without variants) and the `_in` functions, so code can ask
/// any prompt for a locale. The variants share the default's `Inputs`, `Output` and `tools()`, so
/// each variant is checked like its default and then against it: it must declare the same inputs
/// (names, kinds, `required`, whether a default is given, nested properties), outputs and tools
/// (names, kinds, bindings, function parameters); every difference is an error at the variant's
/// line and column that names the default's. Templates, descriptions, default values and the
/// model may differ. A file name whose locale part is not a tag, a variant without a default file
/// and two files of the same locale are errors too.
///
/// ```
/// let root = std::env::temp_dir().join(format!("prompty-doc-compile-locales-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("prompts")).unwrap();
/// let greeting = |hello: &str| format!("---\ninputs:\n  name: {{kind: string, required: true}}\n---\nuser:\n{hello} {{{{ name }}}}");
/// std::fs::write(root.join("prompts/greeting.prompty"), greeting("Hello")).unwrap();
/// std::fs::write(root.join("prompts/greeting.fr.prompty"), greeting("Bonjour")).unwrap();
/// std::fs::write(root.join("prompts/greeting.pt-BR.prompty"), greeting("Olá")).unwrap();
/// let generated = prompty_build::Config::new("prompts").manifest_dir(&root).generate()?;
/// assert!(generated.code.contains("pub mod greeting {"));
/// assert!(!generated.code.contains("pub mod greeting_fr"));
/// assert!(generated.code.contains(r#"pub const LOCALES: &[&str] = &["fr", "pt-BR"];"#));
/// assert!(generated.code.contains("pub fn prepare_in("));
///
/// // A variant must declare its default's inputs.
/// std::fs::write(root.join("prompts/greeting.fr.prompty"), "---\ninputs: [nom]\n---\nuser:\nBonjour {{ nom }}").unwrap();
/// let err = prompty_build::Config::new("prompts").manifest_dir(&root).generate().unwrap_err();
/// assert_eq!(err.to_string(), "\
/// prompts/greeting.fr.prompty:2:1: the input `name` of the default prompt (prompts/greeting.prompty:3:3) is missing here: \
/// a locale variant declares the inputs of its default
/// prompts/greeting.fr.prompty:2:10: the input `nom` is not declared by the default prompt (prompts/greeting.prompty:2:1): \
/// a locale variant declares the inputs of its default");
/// # Ok::<(), prompty_build::CompileError>(())
/// ```
///
/// and, in the crate:
///
/// ```ignore
/// use prompts::greeting;
/// let messages = greeting::prepare_in(&greeting::Inputs { name: "Ada".into() }, "pt_br")?; // greeting.pt-BR.prompty
/// let messages = greeting::prepare_in(&greeting::Inputs { name: "Ada".into() }, "de")?; // greeting.prompty
/// ```
///
/// Cargo reruns the build script when a file below `dir` is added, removed or changed, and when a
/// file a prompt references with `${file:}` changes; the script then regenerates only the modules
/// of the prompts whose files changed. Problems are printed as
/// `cargo::error=file:line:column: ...` lines (and returned); inputs a template never uses as
/// `cargo::warning=` lines. See [`Config`] for the options.
pub fn compile(dir: impl AsRef<Path>) -> Result<(), CompileError> {
    Config::new(dir).compile()
}

/// The options of [`compile`]: which folder, which file in `OUT_DIR`, where the tools'
/// handlers are. [`Config::generate`] runs the whole generation (prompts grouped with their locale
/// variants, every check) without writing anything, for tests and tools.
///
/// ```no_run
/// // build.rs
/// fn main() -> Result<(), prompty_build::CompileError> {
///     prompty_build::Config::new("prompts").output("prompts.rs").tools_scope("crate::tools").compile()
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    dir: PathBuf,
    output: String,
    tools_scope: Option<String>,
    manifest_dir: Option<PathBuf>,
}

/// The code generated by [`Config::generate`].
///
/// ```
/// let root = std::env::temp_dir().join(format!("prompty-doc-generated-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("prompts")).unwrap();
/// std::fs::write(root.join("prompts/greet.prompty"), "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
/// let generated = prompty_build::Config::new("prompts").manifest_dir(&root).generate()?;
/// assert!(generated.code.contains("pub mod greet"));
/// assert_eq!(generated.files.len(), 1);
/// assert!(generated.warnings.is_empty());
/// # Ok::<(), prompty_build::CompileError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Generated {
    /// The Rust source (formatted).
    pub code: String,
    /// Every file read: the prompts and the files their `${file:}` references read.
    pub files: Vec<PathBuf>,
    /// Warnings.
    pub warnings: Vec<Diagnostic>,
}

/// The problems that stopped [`compile`]; `Display` lists them, one per line.
///
/// ```
/// let root = std::env::temp_dir().join(format!("prompty-doc-compile-error-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("prompts")).unwrap();
/// std::fs::write(root.join("prompts/greet.prompty"), "---\ninputs: [who]\n---\nuser:\nHi {{ whom }}").unwrap();
/// let err = prompty_build::Config::new("prompts").manifest_dir(&root).generate().unwrap_err();
/// assert_eq!(err.to_string(),
///     "prompts/greet.prompty:5:7: the template uses `whom`, which no input declares (did you mean `who`?)");
/// ```
#[derive(Clone)]
pub struct CompileError {
    /// The errors (and warnings) found.
    pub diagnostics: Vec<Diagnostic>,
    /// The files read before the errors were found (to rerun the build script when they change).
    files: Vec<PathBuf>,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors: Vec<String> =
            self.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(ToString::to_string).collect();
        f.write_str(&errors.join("\n"))
    }
}

impl fmt::Debug for CompileError {
    /// Short: `main` returning this error prints it after the `cargo::error` lines that already
    /// said everything.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
        write!(f, "{n} error(s) in .prompty files:\n{self}")
    }
}

impl std::error::Error for CompileError {}

impl Config {
    /// Compile the `.prompty` files below `dir` (relative to the crate's `Cargo.toml` folder).
    pub fn new(dir: impl AsRef<Path>) -> Config {
        Config {
            dir: dir.as_ref().to_path_buf(),
            output: "prompty.rs".to_owned(),
            tools_scope: None,
            manifest_dir: None,
        }
    }

    /// The file written in `OUT_DIR` (default `prompty.rs`): a file name, without folders. The
    /// prompts' modules go below `OUT_DIR/prompty-build/<file_name>/`, so two configurations of
    /// one build script with two names do not meet.
    pub fn output(mut self, file_name: impl Into<String>) -> Config {
        self.output = file_name.into();
        self
    }

    /// Where the `#[prompty::tool]` handlers of the prompts' function tools are looked up: a path
    /// such as `crate::tools` (default: the module that includes the generated file).
    pub fn tools_scope(mut self, path: impl Into<String>) -> Config {
        self.tools_scope = Some(path.into());
        self
    }

    /// The folder relative paths start from (default: `CARGO_MANIFEST_DIR`, else the current
    /// folder).
    pub fn manifest_dir(mut self, dir: impl Into<PathBuf>) -> Config {
        self.manifest_dir = Some(dir.into());
        self
    }

    fn root(&self) -> PathBuf {
        let base = self
            .manifest_dir
            .clone()
            .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("."));
        base.join(&self.dir)
    }

    /// Generates the code without writing anything or printing `cargo::` lines: finds the
    /// prompts below the folder with their locale variants
    /// ([`prompty_core::analysis::find_prompts`]), analyzes each file ([`typed::analyze`]),
    /// checks each variant against its default ([`prompty_core::analysis::check_variant`]) and
    /// generates one module per prompt, all in one text. Every problem found is in the error.
    pub fn generate(&self) -> Result<Generated, CompileError> {
        let collected = self.collect(None)?;
        let tokens = collected.tree.inline(0, collected.tools_scope.as_ref());
        let code = self.header() + &format(tokens);
        Ok(Generated { code, files: collected.files, warnings: collected.diagnostics })
    }

    /// Generates `OUT_DIR/<output>` and prints the `cargo::` lines of a build script: what to
    /// rerun on, the warnings, and the errors (then returns them).
    ///
    /// `OUT_DIR/<output>` declares the module tree; each prompt's module is a file of its own,
    /// `OUT_DIR/prompty-build/<output>/<folders>/<name>.rs` (`prompty-build/prompty.rs/support/triage.rs`),
    /// which `OUT_DIR/<output>` names with `#[path]`. A file is written only when its text
    /// changes, and a prompt whose files did not change since the last run is not analyzed again
    /// (a cache in the same folder, `cache.json`, keyed by the bytes of every file the prompt's
    /// generation read, its locale variants, `${file:}` references and child prompts included, by
    /// the options of this `Config` and by the build of prompty-build): after an edit of one
    /// prompt, only its module is regenerated and its file rewritten, with every check (a variant
    /// against its default, a child with its parent). Warnings and errors are the same as without
    /// the cache. A file changed less than a second before the script read it is read again next
    /// time. The files of removed prompts are deleted. The cache file is read up to 64 MiB
    /// (larger, or not readable: every prompt is analyzed).
    pub fn compile(&self) -> Result<(), CompileError> {
        let out_dir = std::env::var_os("OUT_DIR").map(PathBuf::from);
        let mut lines = Vec::new();
        let result = self.compile_into(out_dir.as_deref(), &mut lines);
        for line in lines {
            println!("{line}");
        }
        result
    }

    /// What [`Config::compile`] does, with the `cargo::` lines it prints pushed onto `lines`.
    fn compile_into(&self, out_dir: Option<&Path>, lines: &mut Vec<String>) -> Result<(), CompileError> {
        let root = self.root();
        lines.push(format!("cargo::rerun-if-changed={}", root.display()));
        let result = self.build(out_dir);
        let (diagnostics, files) = match &result {
            Ok(w) => (&w.warnings, &w.files),
            Err(e) => (&e.diagnostics, &e.files),
        };
        for f in files {
            lines.push(format!("cargo::rerun-if-changed={}", f.display()));
        }
        for d in diagnostics {
            let kind = if d.severity == Severity::Error { "error" } else { "warning" };
            for line in d.to_string().lines() {
                lines.push(format!("cargo::{kind}={line}"));
            }
        }
        result.map(|_| ())
    }

    /// What [`Config::compile`] does without printing: generates into `out_dir` (`None`: `OUT_DIR`
    /// is not set, an error after the analysis).
    fn build(&self, out_dir: Option<&Path>) -> Result<Written, CompileError> {
        let Some(out_dir) = out_dir else {
            let Collected { mut diagnostics, files, .. } = self.collect(None)?;
            diagnostics.push(
                Diagnostic::error("", "OUT_DIR is not set: prompty_build::compile runs in a build script")
                    .with_code("no-out-dir"),
            );
            return Err(CompileError { diagnostics, files });
        };
        let mut components = Path::new(&self.output).components();
        if !matches!((components.next(), components.next()), (Some(std::path::Component::Normal(_)), None)) {
            let Collected { mut diagnostics, files, .. } = self.collect(None)?;
            diagnostics.push(
                Diagnostic::error(
                    "",
                    format!("the output `{}` is not a file name: name a file in OUT_DIR", self.output),
                )
                .with_code("invalid-output"),
            );
            return Err(CompileError { diagnostics, files });
        }
        let folder = out_dir.join("prompty-build").join(&self.output);
        let cache = cache::Cache::load(&folder, &self.cache_options());
        let collected = self.collect(Some((&cache, &folder)))?;
        let mut entries = BTreeMap::new();
        let mut modules = BTreeSet::new();
        let mut written = Vec::new();
        let mut analyzed = Vec::new();
        for (segments, prompt) in collected.tree.prompts() {
            let relative = module_file(&segments);
            let path = folder.join(&relative);
            modules.insert(path.clone());
            let entry = match &prompt.module {
                Module::Cached(entry) => Some(entry.clone()),
                Module::Analyzed { prompt: p, variants, entry } => {
                    analyzed.push(segments.join("."));
                    let options = Options {
                        depth: segments.len() - 1,
                        tools_scope: collected.tools_scope.clone(),
                        ..Options::default()
                    };
                    let code = format!(
                        "// @generated by prompty-build from {}: do not edit.\n\n{}",
                        prompt.display,
                        format(codegen::module_contents(p, variants, &options))
                    );
                    if write_if_changed(&path, &code)? {
                        written.push(path);
                    }
                    entry.clone().map(|e| cache::Entry { content: cache::digest(&code), ..e })
                }
            };
            if let Some(entry) = entry {
                entries.insert(relative, entry);
            }
        }
        let declarations = collected.tree.declarations(&folder)?;
        let target = out_dir.join(&self.output);
        if write_if_changed(&target, &(self.header() + &format(declarations)))? {
            written.push(target);
        }
        remove_stale(&folder, &modules);
        // A cache that cannot be written only costs the next run its analysis.
        let _ = cache::Cache::save(&folder, &entries);
        Ok(Written { files: collected.files, warnings: collected.diagnostics, written, analyzed })
    }

    /// What the keys of the cache cover of the configuration.
    fn cache_options(&self) -> [String; 4] {
        [
            self.root().to_string_lossy().into_owned(),
            display_path(&self.dir),
            self.output.clone(),
            self.tools_scope.clone().unwrap_or_default(),
        ]
    }

    fn header(&self) -> String {
        format!(
            "// @generated by prompty-build from the .prompty files below `{}`: do not edit.\n\n",
            display_path(&self.dir)
        )
    }

    /// Finds and analyzes the prompts, checks the variants against their defaults and builds the
    /// module tree; with a cache (and the folder of the modules' files), a prompt whose entry is
    /// valid is taken from it instead of analyzed.
    fn collect(&self, cache: Option<(&cache::Cache, &Path)>) -> Result<Collected, CompileError> {
        let root = self.root();
        let mut diagnostics = Vec::new();
        let tools_scope = match &self.tools_scope {
            None => None,
            Some(p) => match syn::parse_str::<syn::Path>(p) {
                Ok(path) => Some(path),
                Err(e) => {
                    diagnostics.push(
                        Diagnostic::error("", format!("tools_scope `{p}` is not a Rust path: {e}"))
                            .with_code("invalid-tools-scope"),
                    );
                    None
                }
            },
        };
        let (groups, problems) = match analysis::find_prompts(&root, &display_path(&self.dir)) {
            Ok(found) => found,
            Err(e) => {
                return Err(CompileError {
                    diagnostics: vec![Diagnostic::error(
                        self.dir.display().to_string(),
                        format!("cannot read the folder: {e}"),
                    )
                    .with_code("unreadable-folder")],
                    files: Vec::new(),
                })
            }
        };
        diagnostics.extend(problems);
        let mut tree = Tree::default();
        let mut files = Vec::new();
        for group in groups {
            let segments: Vec<String> = group.segments.iter().map(|s| names::snake_case(s)).collect();
            let display = group.default_display.clone();
            let module_path = module_file(&segments);
            let cached = cache.and_then(|(c, folder)| c.hit(&group, &module_path, &folder.join(&module_path)));
            let module = if let Some(entry) = cached {
                files.extend(entry.files.iter().cloned());
                diagnostics.extend(entry.warnings.iter().cloned());
                Module::Cached(entry.clone())
            } else {
                let started = std::time::SystemTime::now();
                // Variants are compared with their default only when both analyses are free of
                // errors (`typed::Analysis`'s `Analyzed`).
                let checked = group.check(typed::analyze);
                let (first_file, first_diagnostic) = (files.len(), diagnostics.len());
                let analysis = checked.default.analysis;
                files.extend(analysis.files.iter().cloned());
                diagnostics.extend(analysis.diagnostics.iter().cloned());
                let mut variants = Vec::new();
                let mut variants_ok = true;
                for variant in checked.variants {
                    let v = variant.file.analysis;
                    files.extend(v.files.iter().cloned());
                    diagnostics.extend(v.diagnostics.iter().cloned());
                    variants_ok &= variant.mismatches.is_empty();
                    diagnostics.extend(variant.mismatches);
                    match v.prompt {
                        Some(prompt) => variants.push((variant.locale.as_str().to_owned(), prompt)),
                        None => variants_ok = false,
                    }
                }
                let Some(prompt) = analysis.prompt else { continue };
                if !variants_ok {
                    continue;
                }
                let entry = cache.map(|(c, _)| {
                    let mut read: Vec<PathBuf> = Vec::new();
                    for f in &files[first_file..] {
                        if !read.contains(f) {
                            read.push(f.clone());
                        }
                    }
                    c.entry(&group, &module_path, read, diagnostics[first_diagnostic..].to_vec(), started)
                });
                Module::Analyzed { prompt: Box::new(prompt), variants, entry }
            };
            if let Err(other) = tree.insert(&segments, display.clone(), module) {
                diagnostics.push(
                    Diagnostic::error(
                        &display,
                        format!(
                            "its module `{}` is already generated from {other}: rename one of them",
                            segments.join("::")
                        ),
                    )
                    .with_code("module-collision"),
                );
            }
        }
        if diagnostics.iter().any(|d| d.severity == Severity::Error) {
            return Err(CompileError { diagnostics, files });
        }
        Ok(Collected { tree, files, diagnostics, tools_scope })
    }
}

/// The prompts found, analyzed or taken from the cache.
struct Collected {
    tree: Tree,
    /// Every file read (by the analyses now or by those the cache remembers).
    files: Vec<PathBuf>,
    /// The warnings, in the order of the prompts.
    diagnostics: Vec<Diagnostic>,
    tools_scope: Option<syn::Path>,
}

/// What [`Config::build`] did.
#[derive(Debug)]
struct Written {
    files: Vec<PathBuf>,
    warnings: Vec<Diagnostic>,
    /// The files written (those whose text changed), in order.
    #[cfg_attr(not(test), allow(dead_code))]
    written: Vec<PathBuf>,
    /// The module paths of the prompts analyzed (not taken from the cache), in order.
    #[cfg_attr(not(test), allow(dead_code))]
    analyzed: Vec<String>,
}

/// The file of a module below the modules' folder: `support/triage.rs`.
fn module_file(segments: &[String]) -> String {
    segments.join("/") + ".rs"
}

/// The Rust text of `tokens`, formatted.
fn format(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => tokens.to_string(),
    }
}

/// Writes `text` into `path` (and its folders) unless it holds it already: an unchanged file keeps
/// its modification time. Whether it wrote.
fn write_if_changed(path: &Path, text: &str) -> Result<bool, CompileError> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(false);
    }
    let unwritable = |e: std::io::Error| CompileError {
        diagnostics: vec![
            Diagnostic::error("", format!("cannot write {}: {e}", path.display())).with_code("unwritable-output")
        ],
        files: Vec::new(),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(unwritable)?;
    }
    std::fs::write(path, text).map_err(unwritable)?;
    Ok(true)
}

/// Deletes the `.rs` files below `folder` that are not `keep` (the modules of prompts removed
/// since), and the folders that leaves empty.
fn remove_stale(folder: &Path, keep: &BTreeSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => {
                remove_stale(&path, keep);
                let _ = std::fs::remove_dir(&path); // only when empty
            }
            Ok(t) if t.is_file() && path.extension().is_some_and(|e| e == "rs") && !keep.contains(&path) => {
                let _ = std::fs::remove_file(&path);
            }
            _ => {}
        }
    }
}

fn display_path(p: &Path) -> String {
    p.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The module tree: folders and prompts by module name.
#[derive(Default)]
struct Tree {
    folders: BTreeMap<String, Tree>,
    prompts: BTreeMap<String, Prompt>,
}

/// A prompt of the tree: its default file as named in messages and its module.
struct Prompt {
    display: String,
    module: Module,
}

/// A prompt's module: analyzed now, or unchanged since the run that wrote its file.
enum Module {
    /// The default analyzed, its locale variants, and the cache entry to record (with a cache).
    Analyzed { prompt: Box<typed::TypedPrompt>, variants: Vec<codegen::Variant>, entry: Option<cache::Entry> },
    /// Its file is up to date: the cache's entry.
    Cached(cache::Entry),
}

impl Tree {
    /// Adds a prompt; on a name clash, returns the file that already has the name.
    fn insert(&mut self, segments: &[String], display: String, module: Module) -> Result<(), String> {
        match segments {
            [name] => {
                if self.folders.contains_key(name) {
                    return Err(format!("the folder `{name}`"));
                }
                if let Some(other) = self.prompts.get(name) {
                    return Err(other.display.clone());
                }
                self.prompts.insert(name.clone(), Prompt { display, module });
                Ok(())
            }
            [folder, rest @ ..] => {
                if let Some(other) = self.prompts.get(folder) {
                    return Err(other.display.clone());
                }
                self.folders.entry(folder.clone()).or_default().insert(rest, display, module)
            }
            [] => Ok(()),
        }
    }

    /// Every prompt with its module path, folders first.
    fn prompts(&self) -> Vec<(Vec<String>, &Prompt)> {
        let mut all = Vec::new();
        for (name, tree) in &self.folders {
            for (mut segments, p) in tree.prompts() {
                segments.insert(0, name.clone());
                all.push((segments, p));
            }
        }
        all.extend(self.prompts.iter().map(|(name, p)| (vec![name.clone()], p)));
        all
    }

    /// Each folder's module around its modules, for `folders`.
    fn folders(
        &self,
        mut inside: impl FnMut(&str, &Tree) -> Result<TokenStream, CompileError>,
    ) -> Result<TokenStream, CompileError> {
        let mut folders = Vec::new();
        for (name, tree) in &self.folders {
            let ident = names::ident(name, Span::call_site());
            let body = inside(name, tree)?;
            let doc = format!(" The prompts of the folder `{name}`.");
            folders.push(quote! {
                #[doc = #doc]
                pub mod #ident {
                    #body
                }
            });
        }
        Ok(quote!(#(#folders)*))
    }

    /// Every module with its items, in one text ([`Config::generate`]); only analyzed prompts.
    fn inline(&self, depth: usize, tools_scope: Option<&syn::Path>) -> TokenStream {
        let folders = self.folders(|_, tree| Ok(tree.inline(depth + 1, tools_scope))).unwrap_or_default();
        let prompts = self.prompts.iter().filter_map(|(name, p)| {
            let Module::Analyzed { prompt, variants, .. } = &p.module else { return None };
            let ident = names::ident(name, Span::call_site());
            let options = Options { depth, tools_scope: tools_scope.cloned(), ..Options::default() };
            Some(codegen::module_with_variants(&ident, prompt, variants, &options))
        });
        quote!(#folders #(#prompts)*)
    }

    /// The module tree, each prompt's module in its file below `folder` ([`Config::compile`]).
    fn declarations(&self, folder: &Path) -> Result<TokenStream, CompileError> {
        let folders = self.folders(|name, tree| tree.declarations(&folder.join(name)))?;
        let mut prompts = Vec::new();
        for name in self.prompts.keys() {
            let ident = names::ident(name, Span::call_site());
            let path = folder.join(format!("{name}.rs"));
            let Some(path) = path.to_str() else {
                return Err(CompileError {
                    diagnostics: vec![Diagnostic::error(
                        "",
                        format!("cannot name {} in Rust code: OUT_DIR must be valid UTF-8", path.display()),
                    )
                    .with_code("unwritable-output")],
                    files: Vec::new(),
                });
            };
            prompts.push(quote! {
                // A program may use only part of a prompt's API.
                #[allow(dead_code)]
                #[path = #path]
                pub mod #ident;
            });
        }
        Ok(quote!(#folders #(#prompts)*))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prompty-compile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    /// Sets the modification time of every file below `dir` a minute back, as files saved
    /// before a build are (the cache leaves out files changed within a second of the analysis).
    fn settle(dir: &Path) {
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                settle(&path);
            } else {
                std::fs::File::options().write(true).open(&path).unwrap().set_modified(past).unwrap();
            }
        }
    }

    /// Writes `text` into `dir/path` and settles it.
    fn edit(dir: &Path, path: &str, text: &str) {
        std::fs::write(dir.join(path), text).unwrap();
        settle(dir);
    }

    /// The files of `written`, relative to `out`, with `/`.
    fn names(out: &Path, written: &Written) -> Vec<String> {
        written.written.iter().map(|p| display_path(p.strip_prefix(out).unwrap())).collect()
    }

    fn modified(path: &Path) -> std::time::SystemTime {
        std::fs::metadata(path).unwrap().modified().unwrap()
    }

    const HELLO: &str = "---\ninputs: [who]\n---\nuser:\nHello {{ who }}";

    #[test]
    fn one_file_per_prompt_rewritten_only_when_its_prompt_changes() {
        let dir = folder(
            "per-prompt",
            &[
                ("prompts/chat.prompty", "---\ninputs: [question]\n---\nuser:\n{{ question }}"),
                ("prompts/support/triage.prompty", "---\ninputs: [ticket, extra]\n---\nuser:\n{{ ticket }}"),
                ("prompts/hello.prompty", HELLO),
            ],
        );
        settle(&dir);
        let out = dir.join("out");
        let config = Config::new("prompts").manifest_dir(&dir);
        let first = config.build(Some(&out)).unwrap();
        assert_eq!(
            names(&out, &first),
            [
                "prompty-build/prompty.rs/support/triage.rs",
                "prompty-build/prompty.rs/chat.rs",
                "prompty-build/prompty.rs/hello.rs",
                "prompty.rs",
            ]
        );
        assert_eq!(first.analyzed, ["support.triage", "chat", "hello"]);
        let top = std::fs::read_to_string(out.join("prompty.rs")).unwrap();
        assert!(top.starts_with("// @generated by prompty-build from the .prompty files below `prompts`"), "{top}");
        let module = out.join("prompty-build/prompty.rs/support/triage.rs");
        assert!(top.contains(&format!("#[path = {:?}]\n    pub mod triage;", module.to_str().unwrap())), "{top}");
        assert!(top.contains("pub mod support {"), "{top}");
        assert!(!top.contains("pub struct Inputs"), "{top}");
        let triage = std::fs::read_to_string(&module).unwrap();
        assert!(triage
            .starts_with("// @generated by prompty-build from prompts/support/triage.prompty: do not edit.\n\n//! "));
        assert!(triage.contains("pub const PATH: &str = \"prompts/support/triage.prompty\";"), "{triage}");
        // The items are those `generate` puts in the module, `super::` paths and all.
        let whole = config.generate().unwrap().code;
        assert!(whole.contains("pub const PATH: &str = \"prompts/support/triage.prompty\";"));

        // Nothing changed: nothing written, nothing analyzed, the same warning.
        let times: Vec<_> = ["prompty.rs", "prompty-build/prompty.rs/chat.rs"].map(|f| modified(&out.join(f))).to_vec();
        let second = config.build(Some(&out)).unwrap();
        assert!(second.written.is_empty(), "{:?}", second.written);
        assert!(second.analyzed.is_empty(), "{:?}", second.analyzed);
        assert_eq!(times, ["prompty.rs", "prompty-build/prompty.rs/chat.rs"].map(|f| modified(&out.join(f))));
        let text = |w: &Written| w.warnings.iter().map(|d| (d.code, d.to_string())).collect::<Vec<_>>();
        assert_eq!(text(&second), text(&first));
        assert_eq!(
            text(&first),
            [(
                "unused-input",
                "prompts/support/triage.prompty:2:18: the input `extra` is declared, but the template never uses it"
                    .to_owned()
            )]
        );
        assert_eq!(second.files, first.files);

        // One prompt's template changes: only its file.
        edit(&dir, "prompts/hello.prompty", &HELLO.replace("Hello", "Hi"));
        let third = config.build(Some(&out)).unwrap();
        assert_eq!(third.analyzed, ["hello"]);
        assert_eq!(names(&out, &third), ["prompty-build/prompty.rs/hello.rs"]);
        assert!(std::fs::read_to_string(out.join("prompty-build/prompty.rs/hello.rs"))
            .unwrap()
            .contains("Hi {{ who }}"));
        assert_eq!(text(&third), text(&first));

        // A module's file changed by someone else is written again.
        std::fs::write(out.join("prompty-build/prompty.rs/chat.rs"), "// edited").unwrap();
        let fourth = config.build(Some(&out)).unwrap();
        assert_eq!(fourth.analyzed, ["chat"]);
        assert_eq!(names(&out, &fourth), ["prompty-build/prompty.rs/chat.rs"]);

        // A cache that is not one: every prompt analyzed, nothing rewritten.
        std::fs::write(out.join("prompty-build/prompty.rs/cache.json"), "{not json").unwrap();
        let fifth = config.build(Some(&out)).unwrap();
        assert_eq!(fifth.analyzed, ["support.triage", "chat", "hello"]);
        assert!(fifth.written.is_empty(), "{:?}", fifth.written);
        assert_eq!(config.build(Some(&out)).unwrap().analyzed, Vec::<String>::new());
    }

    #[test]
    fn a_file_changed_just_before_its_analysis_is_not_cached() {
        let dir = folder("fresh", &[("prompts/hello.prompty", HELLO)]);
        let out = dir.join("out");
        let config = Config::new("prompts").manifest_dir(&dir);
        // Written a moment ago: it may still be changing.
        assert_eq!(config.build(Some(&out)).unwrap().analyzed, ["hello"]);
        assert_eq!(config.build(Some(&out)).unwrap().analyzed, ["hello"]);
        settle(&dir);
        assert_eq!(config.build(Some(&out)).unwrap().analyzed, ["hello"]);
        assert!(config.build(Some(&out)).unwrap().analyzed.is_empty());
    }

    #[test]
    fn a_changed_variant_or_referenced_file_or_child_regenerates_the_module() {
        let greeting = |hello: &str| format!("---\ninputs: [name]\n---\nuser:\n{hello} {{{{ name }}}}");
        let parent = "---\ndescription: ${file:about.txt}\ninputs: [q]\ntools:\n  - name: research\n    kind: prompty\n    path: helpers/research.prompty\n---\nuser:\n{{ q }}";
        let dir = folder(
            "dependencies",
            &[
                ("prompts/greeting.prompty", greeting("Hello").as_str()),
                ("prompts/greeting.fr.prompty", greeting("Bonjour").as_str()),
                ("prompts/ask.prompty", parent),
                ("prompts/about.txt", "Asks."),
                ("prompts/helpers/research.prompty", "---\ninputs: [topic]\n---\nuser:\n{{ topic }}"),
                ("prompts/other.prompty", "---\ninputs: [who, unused]\n---\nuser:\nHello {{ who }}"),
            ],
        );
        settle(&dir);
        let out = dir.join("out");
        let config = Config::new("prompts").manifest_dir(&dir);
        let first = config.build(Some(&out)).unwrap();
        assert_eq!(first.analyzed, ["helpers.research", "ask", "greeting", "other"]);
        let module =
            |name: &str| std::fs::read_to_string(out.join(format!("prompty-build/prompty.rs/{name}.rs"))).unwrap();

        // The variant: its default's module.
        edit(&dir, "prompts/greeting.fr.prompty", &greeting("Salut"));
        let w = config.build(Some(&out)).unwrap();
        assert_eq!(w.analyzed, ["greeting"]);
        assert_eq!(names(&out, &w), ["prompty-build/prompty.rs/greeting.rs"]);
        assert!(module("greeting").contains("Salut"));

        // The file of a `${file:}` reference.
        edit(&dir, "prompts/about.txt", "Asks a question.");
        let w = config.build(Some(&out)).unwrap();
        assert_eq!(w.analyzed, ["ask"]);
        assert_eq!(names(&out, &w), ["prompty-build/prompty.rs/ask.rs"]);
        assert!(module("ask").contains("Asks a question."));

        // A child prompt: its own module and its parent's, which compiles it in.
        edit(&dir, "prompts/helpers/research.prompty", "---\ninputs: [topic]\n---\nuser:\nResearch {{ topic }}");
        let w = config.build(Some(&out)).unwrap();
        assert_eq!(w.analyzed, ["helpers.research", "ask"]);
        assert_eq!(
            names(&out, &w),
            ["prompty-build/prompty.rs/helpers/research.rs", "prompty-build/prompty.rs/ask.rs"]
        );
        assert!(module("ask").contains("Research {{ topic }}"));

        // A variant that no longer matches its default: the same errors as without a cache.
        edit(&dir, "prompts/greeting.fr.prompty", "---\ninputs: [nom]\n---\nuser:\nSalut {{ nom }}");
        let e = config.build(Some(&out)).unwrap_err();
        assert_eq!(e.to_string(), config.generate().unwrap_err().to_string());
        assert!(
            e.to_string().starts_with("prompts/greeting.fr.prompty:2:1: the input `name` of the default prompt"),
            "{e}"
        );
        assert_eq!(e.files, config.generate().unwrap_err().files);
        // Warnings of prompts taken from the cache too, in the same order and words.
        let all =
            |e: &CompileError| e.diagnostics.iter().map(|d| (d.severity, d.code, d.to_string())).collect::<Vec<_>>();
        assert_eq!(all(&e), all(&config.generate().unwrap_err()));
        assert!(all(&e)
            .iter()
            .any(|(_, code, text)| *code == "unused-input" && text.starts_with("prompts/other.prompty")));
        // Nothing was written: the last good files stay.
        assert!(module("greeting").contains("Salut"));
    }

    #[test]
    fn a_removed_prompt_is_no_longer_included() {
        let dir = folder(
            "removed",
            &[
                ("prompts/hello.prompty", HELLO),
                ("prompts/old/bye.prompty", "---\ninputs: [who]\n---\nuser:\nBye {{ who }}"),
            ],
        );
        settle(&dir);
        let out = dir.join("out");
        let config = Config::new("prompts").manifest_dir(&dir);
        config.build(Some(&out)).unwrap();
        let bye = out.join("prompty-build/prompty.rs/old/bye.rs");
        assert!(bye.is_file());
        assert!(std::fs::read_to_string(out.join("prompty.rs")).unwrap().contains("pub mod bye;"));
        std::fs::remove_dir_all(dir.join("prompts/old")).unwrap();
        let w = config.build(Some(&out)).unwrap();
        assert!(w.analyzed.is_empty(), "{:?}", w.analyzed);
        assert_eq!(names(&out, &w), ["prompty.rs"]);
        let top = std::fs::read_to_string(out.join("prompty.rs")).unwrap();
        assert!(!top.contains("bye") && !top.contains("pub mod old"), "{top}");
        assert!(!bye.exists() && !out.join("prompty-build/prompty.rs/old").exists());
        assert!(out.join("prompty-build/prompty.rs/hello.rs").is_file());
    }

    #[test]
    fn two_outputs_in_one_out_dir_and_their_options() {
        let tool = "---\ninputs: [q]\ntools:\n  - name: get_weather\n    kind: function\n---\nuser:\n{{ q }}";
        let dir = folder("two-outputs", &[("prompts/t.prompty", tool), ("tests/prompts/t.prompty", HELLO)]);
        settle(&dir);
        let out = dir.join("out");
        let main = Config::new("prompts").manifest_dir(&dir);
        let tests = Config::new("tests/prompts").manifest_dir(&dir).output("test_prompts.rs");
        main.build(Some(&out)).unwrap();
        tests.build(Some(&out)).unwrap();
        for (top, module, text) in [
            ("prompty.rs", "prompty-build/prompty.rs/t.rs", "get_weather"),
            ("test_prompts.rs", "prompty-build/test_prompts.rs/t.rs", "Hello"),
        ] {
            let top = std::fs::read_to_string(out.join(top)).unwrap();
            assert!(top.contains(&format!("{:?}", out.join(module).to_str().unwrap())), "{top}");
            assert!(std::fs::read_to_string(out.join(module)).unwrap().contains(text));
        }
        // Each keeps its files; another tools scope is another key.
        assert!(main.build(Some(&out)).unwrap().analyzed.is_empty());
        assert!(tests.build(Some(&out)).unwrap().analyzed.is_empty());
        let scoped = main.clone().tools_scope("crate::tools").build(Some(&out)).unwrap();
        assert_eq!(scoped.analyzed, ["t"]);
        assert!(std::fs::read_to_string(out.join("prompty-build/prompty.rs/t.rs"))
            .unwrap()
            .contains("use crate::tools::*;"));
        // No OUT_DIR: the analysis's problems, then that one.
        let e = main.build(None).unwrap_err();
        assert_eq!(e.to_string(), "OUT_DIR is not set: prompty_build::compile runs in a build script");
        // An output that is not a file name in OUT_DIR: nothing written outside it.
        for output in ["../prompty.rs", "gen/prompty.rs", "", ".."] {
            let e = main.clone().output(output).build(Some(&out)).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("the output `{output}` is not a file name: name a file in OUT_DIR"),
                "{output}"
            );
        }
        assert!(!dir.join("prompty.rs").exists() && !out.join("prompty-build/gen").exists());
    }

    #[test]
    fn folders_become_modules() {
        let dir = folder(
            "tree",
            &[
                ("prompts/chat.prompty", "---\ninputs: [question]\n---\nuser:\n{{ question }}"),
                ("prompts/support/triage.prompty", "---\ninputs: [ticket, extra]\n---\nuser:\n{{ ticket }}"),
                ("prompts/notes.txt", "not a prompt"),
            ],
        );
        let g = Config::new("prompts").manifest_dir(&dir).generate().unwrap();
        assert!(g.code.starts_with("// @generated by prompty-build"), "{}", g.code);
        assert!(g.code.contains("pub mod chat {"), "{}", g.code);
        assert!(g.code.contains("pub mod support {"), "{}", g.code);
        assert!(g.code.contains("pub mod triage {"), "{}", g.code);
        assert!(g.code.contains("pub const PATH: &str = \"prompts/support/triage.prompty\";"), "{}", g.code);
        assert_eq!(g.files.len(), 2);
        assert_eq!(g.warnings.len(), 1);
        assert_eq!(
            g.warnings[0].to_string(),
            "prompts/support/triage.prompty:2:18: the input `extra` is declared, but the template never uses it"
        );
    }

    #[test]
    fn tool_handlers_are_looked_up_where_the_file_is_included() {
        let tool = "---\ninputs: [q]\ntools:\n  - name: get-weather\n    kind: function\n    parameters:\n      - name: city\n        kind: string\n---\n{{ q }}";
        let dir = folder("tools", &[("prompts/deep/er/t.prompty", tool)]);
        let g = Config::new("prompts").manifest_dir(&dir).generate().unwrap();
        // Three folders down: the checks' const block is two modules further.
        assert!(g.code.contains("use super::super::super::super::*;"), "{}", g.code);
        assert!(g.code.contains("&get_weather::__PROMPTY_TOOL"), "{}", g.code);
        assert!(g.code.contains(r#".with("get-weather", get_weather {})"#), "{}", g.code);
        let g = Config::new("prompts").manifest_dir(&dir).tools_scope("crate::tools").generate().unwrap();
        assert!(g.code.contains("use crate::tools::*;"), "{}", g.code);
        assert!(!g.code.contains("use super::super"), "{}", g.code);
        let e = Config::new("prompts").manifest_dir(&dir).tools_scope("not a path").generate().unwrap_err();
        assert!(e.to_string().starts_with("tools_scope `not a path` is not a Rust path"), "{e}");
    }

    #[test]
    fn every_error_is_reported() {
        let dir = folder(
            "errors",
            &[
                ("prompts/a.prompty", "---\nname: [broken\n---\nHi"),
                ("prompts/b.prompty", "---\ninputs: [q]\n---\n{{ qq }}"),
                ("prompts/c-d.prompty", "Hi"),
                ("prompts/c_d.prompty", "Hi"),
            ],
        );
        let e = Config::new("prompts").manifest_dir(&dir).generate().unwrap_err();
        let messages: Vec<String> =
            e.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| d.to_string()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].starts_with("prompts/a.prompty:2:"), "{messages:?}");
        assert_eq!(
            messages[1],
            "prompts/b.prompty:4:4: the template uses `qq`, which no input declares (did you mean `q`?)"
        );
        assert_eq!(
            messages[2],
            "prompts/c_d.prompty: its module `c_d` is already generated from prompts/c-d.prompty: rename one of them"
        );
    }
    #[test]
    fn the_build_script_warns_of_a_reference_inside_other_text() {
        let prompt = "---\nmodel:\n  id: m\n  connection:\n    kind: key\n    endpoint: http://127.0.0.1:${env:PORT}/v1\n---\nuser:\nHi";
        let dir = folder("reference-inside-text", &[("prompts/remote.prompty", prompt)]);
        let out = dir.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let mut lines = Vec::new();
        Config::new("prompts").manifest_dir(&dir).compile_into(Some(&out), &mut lines).unwrap();
        let warnings: Vec<&String> = lines.iter().filter(|l| l.starts_with("cargo::warning=")).collect();
        assert_eq!(
            warnings,
            ["cargo::warning=prompts/remote.prompty:6:32: `${env:PORT}` inside other text stays literal: only a value \
              that is a whole `${env:NAME}` reference is resolved (write the whole value in the environment \
              variable, e.g. `endpoint: ${env:ENDPOINT}`)"],
            "{lines:#?}"
        );
    }

    #[test]
    fn model_values_and_connection_keys_the_runtime_would_refuse_or_drop() {
        let model = |lines: &str| format!("---\nmodel:\n  id: m\n{lines}---\nuser:\nHi");
        let dir = folder(
            "model-values",
            &[
                (
                    "prompts/conn.prompty",
                    &model("  provider: openai\n  connection:\n    kind: key\n    endpoint: http://h/v1\n    structuredOuput: jsonObjectSchema\n"),
                ),
                ("prompts/gateway.prompty", &model("  provider: opnai\n")),
                ("prompts/unnamed.prompty", &model("  options:\n    temprature: 0.2\n")),
                ("prompts/referenced.prompty", &model("  provider: ${env:PROVIDER:openai}\n  apiType: ${env:API_TYPE:chat}\n")),
            ],
        );
        let g = Config::new("prompts").manifest_dir(&dir).generate().unwrap();
        let warnings: Vec<(&str, String)> = g.warnings.iter().map(|d| (d.code, d.to_string())).collect();
        assert_eq!(warnings.len(), 3, "{warnings:#?}");
        assert_eq!(warnings[0].0, "unknown-connection-key");
        assert!(
            warnings[0].1.starts_with(
                "prompts/conn.prompty:8:5: unknown key `structuredOuput` in the model's connection (did you mean \
                 `structuredOutput`?)"
            ),
            "{warnings:#?}"
        );
        assert_eq!(warnings[1].0, "unknown-provider");
        assert!(
            warnings[1]
                .1
                .starts_with("prompts/gateway.prompty:4:13: unknown model provider `opnai` (did you mean `openai`?)"),
            "{warnings:#?}"
        );
        assert_eq!(warnings[2].0, "unknown-model-option");
        assert!(
            warnings[2].1.starts_with(
                "prompts/unnamed.prompty:5:5: unknown model option `temprature` (did you mean `temperature`?): no \
                 built-in provider reads it"
            ),
            "{warnings:#?}"
        );

        let dir = folder(
            "model-api-type",
            &[("prompts/embed.prompty", &model("  provider: anthropic\n  apiType: embedding\n"))],
        );
        let e = Config::new("prompts").manifest_dir(&dir).generate().unwrap_err();
        let errors: Vec<(&str, String)> = e.diagnostics.iter().map(|d| (d.code, d.to_string())).collect();
        assert_eq!(
            errors,
            [(
                "unsupported-api-type",
                "prompts/embed.prompty:5:12: the `anthropic` provider does not serve `apiType: embedding`: it serves `chat`"
                    .to_owned()
            )]
        );
    }

    /// The default prompt of the locale tests: `name` (required) and `question`.
    const GREETING: &str =
        "---\ninputs:\n  name: {kind: string, required: true}\n  question: {kind: string}\n---\nuser:\nHi {{ name }}: {{ question }}";

    /// The error messages of generating `prompts/` with `greeting.prompty` and `files`.
    fn locale_errors(name: &str, files: &[(&str, &str)]) -> Vec<String> {
        let mut all = vec![("prompts/greeting.prompty", GREETING)];
        all.extend_from_slice(files);
        let dir = folder(name, &all);
        let e = Config::new("prompts").manifest_dir(&dir).generate().unwrap_err();
        e.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| d.to_string()).collect()
    }

    #[test]
    fn locale_variants_are_one_module() {
        let dir = folder(
            "locales",
            &[
                ("prompts/greeting.prompty", GREETING),
                (
                    "prompts/greeting.fr.prompty",
                    "---\ninputs:\n  name: {kind: string, required: true}\n  question: {kind: string}\n---\nuser:\nSalut {{ name }} : {{ question }}",
                ),
                (
                    "prompts/greeting.pt-BR.prompty",
                    "---\ninputs:\n  name: {kind: string, required: true}\n  question: {kind: string}\n---\nuser:\nOlá {{ name }}: {{ question }}",
                ),
                ("prompts/other.prompty", "---\ninputs: [q]\n---\nuser:\n{{ q }}"),
            ],
        );
        let g = Config::new("prompts").manifest_dir(&dir).generate().unwrap();
        assert_eq!(g.code.matches("pub mod greeting {").count(), 1, "{}", g.code);
        assert!(!g.code.contains("greeting_fr"), "{}", g.code);
        assert!(!g.code.contains("greeting_pt"), "{}", g.code);
        assert!(g.code.contains("pub const LOCALES: &[&str] = &[\"fr\", \"pt-BR\"];"), "{}", g.code);
        assert!(
            g.code.contains(
                "pub const LOCALE_PATHS: &[&str] = &[\n        \"prompts/greeting.fr.prompty\",\n        \"prompts/greeting.pt-BR.prompty\",\n    ];"
            ),
            "{}",
            g.code
        );
        for f in ["pub fn agent_in(", "pub fn prepare_in(", "pub async fn invoke_in(", "pub async fn invoke_stream_in("]
        {
            assert_eq!(g.code.matches(f).count(), 2, "{f}\n{}", g.code);
        }
        // A prompt without variants has them too, with no locales.
        assert!(g.code.contains("pub const LOCALES: &[&str] = &[];"), "{}", g.code);
        assert!(g.code.contains("`fr` (`prompts/greeting.fr.prompty`), `pt-BR` (`prompts/greeting.pt-BR.prompty`)"));
        assert_eq!(g.files.len(), 4);
        assert!(g.warnings.is_empty(), "{:?}", g.warnings);
    }

    #[test]
    fn a_variant_missing_an_input() {
        let fr = "---\ninputs:\n  name: {kind: string, required: true}\n---\nuser:\nSalut {{ name }}";
        assert_eq!(locale_errors("missing-input", &[("prompts/greeting.fr.prompty", fr)]), [
            "prompts/greeting.fr.prompty:2:1: the input `question` of the default prompt (prompts/greeting.prompty:4:3) is \
             missing here: a locale variant declares the inputs of its default"
        ]);
    }

    #[test]
    fn a_variant_with_an_extra_input() {
        let fr = "---\ninputs:\n  name: {kind: string, required: true}\n  question: {kind: string}\n  mood: {kind: string}\n---\nuser:\nSalut {{ name }} {{ mood }} : {{ question }}";
        assert_eq!(
            locale_errors("extra-input", &[("prompts/greeting.fr.prompty", fr)]),
            ["prompts/greeting.fr.prompty:5:3: the input `mood` is not declared by the default prompt \
             (prompts/greeting.prompty:2:1): a locale variant declares the inputs of its default"]
        );
    }

    #[test]
    fn a_variant_with_an_input_of_another_kind() {
        let fr = "---\ninputs:\n  name: {kind: string, required: true}\n  question: {kind: integer}\n---\nuser:\nSalut {{ name }} : {{ question }}";
        assert_eq!(locale_errors("kind-input", &[("prompts/greeting.fr.prompty", fr)]), [
            "prompts/greeting.fr.prompty:4:3: the input `question` is an integer here, but a string in the default prompt \
             (prompts/greeting.prompty:4:3): a locale variant declares the inputs of its default"
        ]);
    }

    #[test]
    fn a_variant_with_another_required() {
        let fr = "---\ninputs:\n  name: {kind: string}\n  question: {kind: string}\n---\nuser:\nSalut {{ name }} : {{ question }}";
        assert_eq!(locale_errors("required-input", &[("prompts/greeting.fr.prompty", fr)]), [
            "prompts/greeting.fr.prompty:3:3: the input `name` is optional here, but required without a default in the \
             default prompt (prompts/greeting.prompty:3:3): a locale variant declares the inputs of its default"
        ]);
    }

    #[test]
    fn a_variant_with_other_outputs() {
        let default =
            "---\ninputs: [q]\noutputs:\n  answer: {kind: string}\n  score: {kind: float}\n---\nuser:\n{{ q }}";
        let fr =
            "---\ninputs: [q]\noutputs:\n  answer: {kind: string}\n  score: {kind: integer}\n---\nuser:\n{{ q }} ?";
        let dir = folder("outputs", &[("prompts/rate.prompty", default), ("prompts/rate.fr.prompty", fr)]);
        let e = Config::new("prompts").manifest_dir(&dir).generate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "prompts/rate.fr.prompty:5:3: the output `score` is an integer here, but a float in the default prompt \
             (prompts/rate.prompty:5:3): a locale variant declares the outputs of its default"
        );
    }

    #[test]
    fn a_variant_with_other_tools() {
        let default = "---\ninputs: [q]\ntools:\n  - name: get_weather\n    kind: function\n    parameters:\n      - name: city\n        kind: string\n---\nuser:\n{{ q }}";
        let fr = "---\ninputs: [q]\ntools:\n  - name: get_weather\n    kind: function\n    parameters:\n      - name: town\n        kind: string\n---\nuser:\n{{ q }} ?";
        let dir = folder("tools-variant", &[("prompts/ask.prompty", default), ("prompts/ask.fr.prompty", fr)]);
        let e = Config::new("prompts").manifest_dir(&dir).generate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "prompts/ask.fr.prompty:6:5: the parameter `city` of the tool `get_weather` of the default prompt \
             (prompts/ask.prompty:7:9) is missing here: a locale variant declares the tools of its default\n\
             prompts/ask.fr.prompty:7:9: the parameter `town` of the tool `get_weather` is not declared by the default \
             prompt (prompts/ask.prompty:6:5): a locale variant declares the tools of its default"
        );
    }

    #[test]
    fn a_variant_missing_a_tool() {
        let default = "---\ninputs: [q]\ntools:\n  - name: search\n    kind: function\n  - name: get_weather\n    kind: function\n---\nuser:\n{{ q }}";
        let fr = "---\ninputs: [q]\ntools:\n  - name: get_weather\n    kind: function\n---\nuser:\n{{ q }} ?";
        let dir = folder("missing-tool", &[("prompts/ask.prompty", default), ("prompts/ask.fr.prompty", fr)]);
        let e = Config::new("prompts").manifest_dir(&dir).generate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "prompts/ask.fr.prompty:3:1: the tool `search` of the default prompt (prompts/ask.prompty:4:5) is missing \
             here: a locale variant declares the tools of its default"
        );
    }

    #[test]
    fn a_variant_has_its_own_child_prompts() {
        let tool = |path: &str| {
            format!("---\ninputs: [q]\ntools:\n  - name: research\n    kind: prompty\n    path: {path}\n---\nuser:\n{{{{ q }}}}")
        };
        let (default, fr) = (tool("helpers/research.prompty"), tool("helpers/research.fr.prompty"));
        let dir = folder(
            "variant-children",
            &[
                ("prompts/ask.prompty", default.as_str()),
                ("prompts/ask.fr.prompty", fr.as_str()),
                ("prompts/helpers/research.prompty", "---\ninputs: [topic]\n---\nuser:\n{{ topic }}"),
                ("prompts/helpers/research.fr.prompty", "---\ninputs: [topic]\n---\nuser:\nSujet : {{ topic }}"),
            ],
        );
        let g = Config::new("prompts").manifest_dir(&dir).generate().unwrap();
        // Folders come first: the module `ask` is the last one.
        let ask = &g.code[g.code.find("pub mod ask {").unwrap()..];
        assert!(ask.contains("path: \"prompts/helpers/research.prompty\""), "{ask}");
        assert!(ask.contains("path: \"prompts/helpers/research.fr.prompty\""), "{ask}");
        assert_eq!(ask.matches("compiled_agent_with_children(").count(), 2, "{ask}");
        assert!(ask.contains("pub async fn turn_in("), "{ask}");
        assert!(g.code.contains("pub mod research {"), "{}", g.code);
    }

    #[test]
    fn an_invalid_locale_in_a_file_name() {
        assert_eq!(locale_errors("bad-tag", &[("prompts/greeting.french.prompty", GREETING)]), [
            "prompts/greeting.french.prompty: the file name's part after the first `.` must be a locale tag: `french` is \
             not a locale tag (BCP 47, e.g. `fr` or `pt-BR`): `french` is not a language subtag: a language subtag has \
             2 or 3 letters (ISO 639, e.g. `en`)"]);
    }

    #[test]
    fn a_variant_without_a_default() {
        let dir = folder("orphan", &[("prompts/farewell.fr.prompty", "Au revoir")]);
        let e = Config::new("prompts").manifest_dir(&dir).generate().unwrap_err();
        assert_eq!(e.to_string(),
            "prompts/farewell.fr.prompty: a locale variant (`fr`) of the prompt `farewell`, which has no default file: \
             add prompts/farewell.prompty");
    }

    #[test]
    fn a_variant_with_its_own_errors() {
        let fr = "---\ninputs:\n  name: {kind: string, required: true}\n  question: {kind: string}\n---\nuser:\nSalut {{ nom }} : {{ question }}";
        assert_eq!(locale_errors("variant-error", &[("prompts/greeting.fr.prompty", fr)]), [
            "prompts/greeting.fr.prompty:7:10: the template uses `nom`, which no input declares (did you mean `name`?)"]);
    }
}
