//! `include_prompty!("prompts/chat.prompty")` (and `... as name`): the macro door of the code
//! generator. The path is relative to the folder of the crate's `Cargo.toml`; every problem of the
//! file is a compile error spanned on the path literal, whose message names the file, line and
//! column.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("prompty-doc-include-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("prompts")).unwrap();
//! std::fs::write(dir.join("prompts/chat.prompty"), "---\ninputs: [q]\n---\nuser:\n{{ q }}").unwrap();
//! let out = prompty_build::include::expand(quote::quote!("prompts/chat.prompty" as support), &[dir])?;
//! assert!(out.to_string().contains("pub mod support"));
//! # Ok::<(), syn::Error>(())
//! ```

use crate::codegen::{self, Options};
use crate::names;
use crate::typed::{self, Severity};
use proc_macro2::TokenStream;
use std::path::{Path, PathBuf};
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

/// The input of `include_prompty!`: a path literal, optionally `as name`.
///
/// ```
/// use prompty_build::include::IncludeInput;
/// let input: IncludeInput = syn::parse2(quote::quote!("prompts/chat.prompty" as support))?;
/// assert_eq!(input.path.value(), "prompts/chat.prompty");
/// assert_eq!(input.name.unwrap().to_string(), "support");
/// # Ok::<(), syn::Error>(())
/// ```
pub struct IncludeInput {
    /// The path as written.
    pub path: LitStr,
    /// The module name given with `as`.
    pub name: Option<Ident>,
}

impl Parse for IncludeInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let path: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the path of a .prompty file: include_prompty!(\"prompts/chat.prompty\")",
            )
        })?;
        let name = if input.peek(Token![as]) {
            input.parse::<Token![as]>()?;
            Some(input.parse::<Ident>()?)
        } else {
            None
        };
        input.parse::<Option<Token![,]>>()?;
        if !input.is_empty() {
            return Err(input.error(
                "unexpected tokens: include_prompty!(\"path.prompty\") or include_prompty!(\"path.prompty\" as name)",
            ));
        }
        Ok(IncludeInput { path, name })
    }
}

/// Where the crate's files are: `CARGO_MANIFEST_DIR`, and a second guess for builds that run
/// with another manifest folder than the crate the source belongs to (trybuild compiles a test
/// file as a `[[bin]]` of a scratch project whose `Cargo.toml` names the file's real path): the
/// folder of the nearest `Cargo.toml` above that file.
///
/// ```
/// // As cargo sets it for the crate being compiled.
/// std::env::set_var("CARGO_MANIFEST_DIR", "/work/my-crate");
/// assert_eq!(prompty_build::include::crate_dirs(), [std::path::PathBuf::from("/work/my-crate")]);
/// ```
pub fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return dirs;
    };
    dirs.push(manifest_dir.clone());
    if let Some(source) = bin_source(&manifest_dir) {
        let mut dir = source.parent();
        while let Some(d) = dir {
            if d.join("Cargo.toml").is_file() {
                if d != manifest_dir {
                    dirs.push(d.to_path_buf());
                }
                break;
            }
            dir = d.parent();
        }
    }
    dirs
}

/// The source file of the binary being compiled (`CARGO_BIN_NAME`), from the `[[bin]]` entries of
/// the manifest, when it lies outside the manifest's folder.
fn bin_source(manifest_dir: &Path) -> Option<PathBuf> {
    let bin = std::env::var("CARGO_BIN_NAME").ok()?;
    let manifest = std::fs::read_to_string(manifest_dir.join("Cargo.toml")).ok()?;
    let mut in_bin = false;
    let mut name = None;
    let mut path = None;
    for line in manifest.lines().map(str::trim).chain(std::iter::once("[end]")) {
        if line.starts_with('[') {
            if in_bin && name.as_deref() == Some(bin.as_str()) {
                return path.map(|p: String| manifest_dir.join(p)).filter(|p| p.is_absolute());
            }
            in_bin = line == "[[bin]]";
            name = None;
            path = None;
            continue;
        }
        if !in_bin {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            let value = value.trim().trim_matches('"').to_owned();
            match key.trim() {
                "name" => name = Some(value),
                "path" => path = Some(value),
                _ => {}
            }
        }
    }
    None
}

/// Expands `include_prompty!`: `input` is what is inside the parentheses; relative paths are
/// looked up in `crate_dirs` in order (see [`crate_dirs`]).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-include-doc-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("prompts")).unwrap();
/// std::fs::write(dir.join("prompts/greet.prompty"), "---\ninputs: [who]\n---\nuser:\nHi {{ who }}").unwrap();
/// let out = prompty_build::include::expand(quote::quote!("prompts/greet.prompty"), &[dir.clone()])?;
/// assert!(out.to_string().contains("pub mod greet"));
/// let err = prompty_build::include::expand(quote::quote!("prompts/nope.prompty"), &[dir]).unwrap_err();
/// assert!(err.to_string().starts_with("prompts/nope.prompty: file not found"));
/// # Ok::<(), syn::Error>(())
/// ```
pub fn expand(input: TokenStream, crate_dirs: &[PathBuf]) -> syn::Result<TokenStream> {
    let input: IncludeInput = syn::parse2(input)?;
    let written = input.path.value();
    let span = input.path.span();
    let relative = Path::new(&written);
    let path = if relative.is_absolute() {
        relative.to_path_buf()
    } else {
        let mut candidates = crate_dirs.iter().map(|d| d.join(relative));
        let first = candidates.next().unwrap_or_else(|| relative.to_path_buf());
        std::iter::once(first.clone()).chain(candidates).find(|p| p.is_file()).unwrap_or(first)
    };
    let module = match &input.name {
        Some(name) => name.clone(),
        None => {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("prompt");
            let stem = stem.strip_suffix(".prompty").unwrap_or(stem);
            names::ident(&names::snake_case(stem), span)
        }
    };
    let analysis = typed::analyze(&path, &written);
    let mut errors: Option<syn::Error> = None;
    for d in analysis.diagnostics.iter().filter(|d| d.severity == Severity::Error) {
        let e = syn::Error::new(span, d);
        match &mut errors {
            Some(all) => all.combine(e),
            None => errors = Some(e),
        }
    }
    if let Some(errors) = errors {
        return Err(errors);
    }
    let Some(prompt) = analysis.prompt else {
        return Err(syn::Error::new(span, format!("{written}: cannot be compiled")));
    };
    let options = Options {
        span,
        depth: 0,
        tools_scope: None,
        track_files: analysis.files.iter().map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())).collect(),
        warnings_as_deprecations: true,
    };
    Ok(codegen::module(&module, &prompt, &options))
}

/// What to emit when the expansion fails: an empty module of the expected name (so that uses of
/// it do not add "cannot find" errors to the real one), when the input parses.
///
/// ```
/// use prompty_build::include::fallback;
/// use quote::quote;
/// assert_eq!(fallback(quote!("prompts/my-chat.prompty")).to_string(), "pub mod my_chat { }");
/// assert_eq!(fallback(quote!("prompts/chat.prompty" as support)).to_string(), "pub mod support { }");
/// assert!(fallback(quote!(not_a_path)).is_empty());
/// ```
pub fn fallback(input: TokenStream) -> TokenStream {
    let Ok(input) = syn::parse2::<IncludeInput>(input) else { return TokenStream::new() };
    let name = match input.name {
        Some(n) => n,
        None => {
            let written = input.path.value();
            let stem = Path::new(&written).file_stem().and_then(|s| s.to_str()).unwrap_or("prompt").to_owned();
            names::ident(&names::snake_case(&stem), input.path.span())
        }
    };
    quote::quote!(pub mod #name {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prompty-include-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("prompts")).unwrap();
        dir
    }

    #[test]
    fn every_file_read_is_tracked() {
        let dir = dir("tracked");
        std::fs::write(dir.join("prompts/about.txt"), "A helpful bot.").unwrap();
        std::fs::write(
            dir.join("prompts/bot.prompty"),
            "---\ndescription: ${file:about.txt}\ninputs: [q]\n---\nuser:\n{{ q }}",
        )
        .unwrap();
        let out = expand(quote!("prompts/bot.prompty" as renamed), std::slice::from_ref(&dir)).unwrap().to_string();
        assert!(out.contains("pub mod renamed"), "{out}");
        for file in ["bot.prompty", "about.txt"] {
            let path = dir.join("prompts").join(file).canonicalize().unwrap();
            assert!(out.contains(&format!("include_bytes ! ({:?})", path.display().to_string())), "{file}: {out}");
        }
        assert!(out.contains("A helpful bot."), "{out}");
    }

    #[test]
    fn openapi_specifications_are_tracked() {
        let dir = dir("openapi");
        std::fs::write(
            dir.join("prompts/api.yaml"),
            "openapi: 3.1.0\npaths:\n  /ping:\n    get: {operationId: ping}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("prompts/api.prompty"),
            "---\ntools:\n  - name: api\n    kind: openapi\n    specification: api.yaml\n---\nuser:\nHi",
        )
        .unwrap();
        let out = expand(quote!("prompts/api.prompty"), std::slice::from_ref(&dir)).unwrap().to_string();
        let spec = dir.join("prompts/api.yaml").canonicalize().unwrap();
        assert!(out.contains(&format!("include_bytes ! ({:?})", spec.display().to_string())), "{out}");
    }

    #[test]
    fn later_folders_are_a_fallback() {
        let (first, second) = (dir("first"), dir("second"));
        std::fs::write(second.join("prompts/x.prompty"), "Hi").unwrap();
        let out = expand(quote!("prompts/x.prompty"), &[first, second]).unwrap().to_string();
        assert!(out.contains("pub mod x"), "{out}");
    }

    /// The messages pinned in the UI cases of `kind: prompty` children are the ones `expand` gives.
    #[test]
    fn child_prompt_errors_match_the_ui_cases() {
        let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
        for (case, prompt) in [
            ("typed_child_missing", "child_missing"),
            ("typed_child_template_error", "child_template_error"),
            ("typed_child_bad_binding", "child_bad_binding"),
        ] {
            let stderr = std::fs::read_to_string(tests.join(format!("ui/{case}.stderr"))).unwrap();
            let expected = stderr.lines().next().unwrap().strip_prefix("error: ").unwrap();
            let path = format!("ui/prompts/{prompt}.prompty");
            let e = expand(quote!(#path), std::slice::from_ref(&tests)).unwrap_err();
            assert_eq!(e.to_string(), expected, "{case}");
        }
        let out = expand(quote!("ui/prompts/child_tool.prompty"), std::slice::from_ref(&tests)).unwrap().to_string();
        assert!(out.contains("compiled_agent_with_children"), "{out}");
        assert!(out.contains("tool_path : \"children/research.prompty\""), "{out}");
        let child = tests.join("ui/prompts/children/research.prompty").canonicalize().unwrap();
        assert!(
            out.contains(&format!("include_bytes ! ({:?})", child.display().to_string())),
            "the child is tracked: {out}"
        );
    }

    #[test]
    fn input_errors() {
        let e = expand(quote!(chat), &[]).unwrap_err();
        assert_eq!(e.to_string(), "expected the path of a .prompty file: include_prompty!(\"prompts/chat.prompty\")");
        let e = expand(quote!("x.prompty" as), &[]).unwrap_err();
        assert!(e.to_string().contains("expected identifier"), "{e}");
        assert_eq!(fallback(quote!("a/my-chat.prompty")).to_string(), "pub mod my_chat { }");
    }
}
