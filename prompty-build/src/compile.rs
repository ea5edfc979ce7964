//! `prompty_build::compile("prompts")` in a `build.rs`: the build-script door of the code
//! generator. Every prompt below the folder becomes a module (sub-folders become nested modules,
//! locale variants such as `greeting.fr.prompty` join their default's module) in
//! `OUT_DIR/prompty.rs`, which the crate includes with one line:
//!
//! ```ignore
//! include!(concat!(env!("OUT_DIR"), "/prompty.rs"));
//! ```

use crate::codegen::{self, Options};
use crate::names;
use crate::typed::{self, Diagnostic, Severity};
use proc_macro2::{Span, TokenStream};
use prompty_core::analysis;
use quote::quote;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Compiles every `.prompty` file below `dir` (relative to the crate's `Cargo.toml` folder) into
/// `OUT_DIR/prompty.rs`, for a `build.rs`:
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
/// file a prompt references with `${file:}` changes. Problems are printed as
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

    /// The file written in `OUT_DIR` (default `prompty.rs`).
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
    /// generates one module per prompt. Every problem found is in the error.
    pub fn generate(&self) -> Result<Generated, CompileError> {
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
        // Variants are compared with their default only when both analyses are free of errors.
        // Variants are compared with their default only when both analyses are free of errors
        // (`typed::Analysis`'s `Analyzed`).
        let checked = analysis::check_prompts(&root, &display_path(&self.dir), typed::analyze);
        let (found, problems) = match checked {
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
        for group in found {
            let display = group.default.display.clone();
            let analysis = group.default.analysis;
            files.extend(analysis.files.iter().cloned());
            diagnostics.extend(analysis.diagnostics.iter().cloned());
            let mut variants = Vec::new();
            let mut variants_ok = true;
            for variant in group.variants {
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
            let segments: Vec<String> = group.segments.iter().map(|s| names::snake_case(s)).collect();
            if let Err(other) = tree.insert(&segments, display.clone(), prompt, variants) {
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
        let errors = diagnostics.iter().any(|d| d.severity == Severity::Error);
        if errors {
            return Err(CompileError { diagnostics, files });
        }
        let tokens = tree.tokens(0, tools_scope.as_ref());
        let code = match syn::parse2::<syn::File>(tokens.clone()) {
            Ok(file) => prettyplease::unparse(&file),
            Err(_) => tokens.to_string(),
        };
        let header = format!(
            "// @generated by prompty-build from the .prompty files below `{}`: do not edit.\n\n",
            display_path(&self.dir)
        );
        Ok(Generated { code: header + &code, files, warnings: diagnostics })
    }

    /// Generates `OUT_DIR/<output>` and prints the `cargo::` lines of a build script: what to
    /// rerun on, the warnings, and the errors (then returns them).
    pub fn compile(&self) -> Result<(), CompileError> {
        let root = self.root();
        println!("cargo::rerun-if-changed={}", root.display());
        let result = self.generate();
        let (diagnostics, files) = match &result {
            Ok(g) => (g.warnings.clone(), g.files.clone()),
            Err(e) => (e.diagnostics.clone(), e.files.clone()),
        };
        for f in &files {
            println!("cargo::rerun-if-changed={}", f.display());
        }
        for d in &diagnostics {
            let kind = if d.severity == Severity::Error { "error" } else { "warning" };
            for line in d.to_string().lines() {
                println!("cargo::{kind}={line}");
            }
        }
        let generated = result?;
        let out_dir = std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or_else(|| CompileError {
            diagnostics: vec![Diagnostic::error(
                "",
                "OUT_DIR is not set: prompty_build::compile runs in a build script",
            )
            .with_code("no-out-dir")],
            files: Vec::new(),
        })?;
        let target = out_dir.join(&self.output);
        // Leave the file (and its modification time) alone when nothing changed.
        if std::fs::read_to_string(&target).ok().as_deref() != Some(generated.code.as_str()) {
            std::fs::write(&target, &generated.code).map_err(|e| CompileError {
                diagnostics: vec![Diagnostic::error("", format!("cannot write {}: {e}", target.display()))
                    .with_code("unwritable-output")],
                files: Vec::new(),
            })?;
        }
        Ok(())
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

/// A prompt of the tree: its default file as named in messages, the default analyzed, and its
/// locale variants.
struct Prompt {
    display: String,
    prompt: typed::TypedPrompt,
    variants: Vec<codegen::Variant>,
}

impl Tree {
    /// Adds a prompt; on a name clash, returns the file that already has the name.
    fn insert(
        &mut self,
        segments: &[String],
        display: String,
        prompt: typed::TypedPrompt,
        variants: Vec<codegen::Variant>,
    ) -> Result<(), String> {
        match segments {
            [name] => {
                if self.folders.contains_key(name) {
                    return Err(format!("the folder `{name}`"));
                }
                if let Some(other) = self.prompts.get(name) {
                    return Err(other.display.clone());
                }
                self.prompts.insert(name.clone(), Prompt { display, prompt, variants });
                Ok(())
            }
            [folder, rest @ ..] => {
                if let Some(other) = self.prompts.get(folder) {
                    return Err(other.display.clone());
                }
                self.folders.entry(folder.clone()).or_default().insert(rest, display, prompt, variants)
            }
            [] => Ok(()),
        }
    }

    fn tokens(&self, depth: usize, tools_scope: Option<&syn::Path>) -> TokenStream {
        let span = Span::call_site();
        let folders = self.folders.iter().map(|(name, tree)| {
            let ident = names::ident(name, span);
            let body = tree.tokens(depth + 1, tools_scope);
            let doc = format!(" The prompts of the folder `{name}`.");
            quote! {
                #[doc = #doc]
                pub mod #ident {
                    #body
                }
            }
        });
        let prompts = self.prompts.iter().map(|(name, p)| {
            let ident = names::ident(name, span);
            let options = Options {
                span,
                depth,
                tools_scope: tools_scope.cloned(),
                track_files: Vec::new(),
                warnings_as_deprecations: false,
            };
            codegen::module_with_variants(&ident, &p.prompt, &p.variants, &options)
        });
        quote!(#(#folders)* #(#prompts)*)
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
