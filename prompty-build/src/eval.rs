//! `eval_tests!("evals/chat.eval.yaml")`: every case of an eval file as a `#[test]` of `cargo
//! test`, checked at compile time.
//!
//! The path is resolved as `include_prompty!` resolves its own (relative to the folder of the
//! crate's `Cargo.toml`). The eval file and its datasets are read at compile time and checked
//! against the prompts they name ([`prompty_core::eval::check`]): every error (a misspelt var or
//! dataset column with the closest input, a judge declaring an input the runner does not pass, an
//! assertion the prompt cannot meet, ...) is a compile error spanned on the path, naming the file
//! and line; all of them are reported together. Editing the eval file, a dataset or a prompt it
//! names rebuilds the crate.
//!
//! The expansion is a module named after the file (`chat.eval.yaml` → `mod chat_eval`) with one
//! `#[test] fn` per case (its name from the case's name, made an identifier and unique), whose
//! body runs the case against the response cache:
//! `::prompty::eval::__test_case("/abs/path/chat.eval.yaml", "case name")`.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("prompty-doc-evaltests-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("evals")).unwrap();
//! std::fs::write(dir.join("evals/chat.prompty"), "---\ninputs: [question]\n---\nuser:\n{{ question }}").unwrap();
//! std::fs::write(dir.join("evals/chat.eval.yaml"),
//!     "prompt: chat.prompty\ncases:\n  - {name: Capital of France, vars: {question: Paris?}}\n").unwrap();
//! let out = prompty_build::eval::expand(quote::quote!("evals/chat.eval.yaml"), &[dir])?.to_string();
//! assert!(out.contains("mod chat_eval"));
//! assert!(out.contains("fn capital_of_france ()"));
//! assert!(out.contains("__test_case"));
//! # Ok::<(), syn::Error>(())
//! ```

use crate::names;
use proc_macro2::{Span, TokenStream};
use prompty_core::analysis::{Diagnostic, Severity};
use prompty_core::eval::{EvalFile, MAX_EVAL_FILE_BYTES};
use quote::quote_spanned;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use syn::LitStr;

/// The input of `eval_tests!`: the eval file's path.
///
/// ```
/// let input: prompty_build::eval::EvalTestsInput = syn::parse2(quote::quote!("evals/chat.eval.yaml"))?;
/// assert_eq!(input.path.value(), "evals/chat.eval.yaml");
/// # Ok::<(), syn::Error>(())
/// ```
pub struct EvalTestsInput {
    /// The path as written.
    pub path: LitStr,
}

impl syn::parse::Parse for EvalTestsInput {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let path: LitStr = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "expected the path of an eval file: eval_tests!(\"evals/chat.eval.yaml\")")
        })?;
        input.parse::<Option<syn::Token![,]>>()?;
        if !input.is_empty() {
            return Err(input.error("unexpected tokens: eval_tests!(\"path.eval.yaml\")"));
        }
        Ok(EvalTestsInput { path })
    }
}

/// The module's name for an eval file: its stem without `.eval`, in snake_case, then `_eval`.
///
/// ```
/// assert_eq!(prompty_build::eval::module_name("evals/chat.eval.yaml"), "chat_eval");
/// assert_eq!(prompty_build::eval::module_name("Weather-Report.eval.yml"), "weather_report_eval");
/// ```
pub fn module_name(path: &str) -> String {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let lower = file.to_ascii_lowercase();
    let stem = [".eval.yaml", ".eval.yml", ".yaml", ".yml"]
        .iter()
        .find(|s| lower.ends_with(*s))
        .map_or(file, |s| &file[..file.len() - s.len()]);
    format!("{}_eval", names::snake_case(stem).trim_start_matches('_'))
}

/// The test functions' names for case names: snake_case identifiers, unique (a repeat gets `_2`,
/// `_3`, ...), never a keyword's text (`type` → `r#type` is left to the identifier maker).
///
/// ```
/// let names = prompty_build::eval::test_names(&["Capital of France", "capital of france", "1 + 1", "cases.csv:3"]);
/// assert_eq!(names, ["capital_of_france", "capital_of_france_2", "case_1_1", "cases_csv_3"]);
/// ```
pub fn test_names(cases: &[&str]) -> Vec<String> {
    let mut used = HashSet::new();
    cases
        .iter()
        .map(|name| {
            let words: Vec<String> =
                name.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(names::snake_case).collect();
            let ascii: String =
                words.join("_").chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
            let mut base = ascii.split('_').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("_");
            if base.is_empty() {
                base = "case".to_owned();
            } else if base.starts_with(|c: char| c.is_ascii_digit()) {
                base = format!("case_{base}");
            }
            let mut candidate = base.clone();
            let mut n = 2;
            while !used.insert(candidate.clone()) {
                candidate = format!("{base}_{n}");
                n += 1;
            }
            candidate
        })
        .collect()
}

/// Expands `eval_tests!`: `input` is what is inside the parentheses; a relative path is looked up
/// in `crate_dirs` in order (see [`crate::include::crate_dirs`]). Every error of the eval file,
/// its datasets and its prompts is returned together.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-evalexpand-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("chat.prompty"), "---\ninputs: [question]\n---\nuser:\n{{ question }}").unwrap();
/// std::fs::write(dir.join("chat.eval.yaml"), "prompt: chat.prompty\ncases:\n  - vars: {questoin: Hi}\n").unwrap();
/// let err = prompty_build::eval::expand(quote::quote!("chat.eval.yaml"), &[dir]).unwrap_err();
/// assert_eq!(err.to_string(),
///     "chat.eval.yaml:3:12: the var `questoin` is no input of chat.prompty (did you mean `question`?)");
/// ```
pub fn expand(input: TokenStream, crate_dirs: &[PathBuf]) -> syn::Result<TokenStream> {
    let input: EvalTestsInput = syn::parse2(input)?;
    let written = input.path.value();
    let span = input.path.span();
    let path = resolve(&written, crate_dirs);
    let eval = load(&path, &written).map_err(|d| errors(&d, span).unwrap_or_else(|| syn::Error::new(span, "")))?;
    let checked = prompty_core::eval::check_files(&eval);
    if let Some(e) = errors(&checked.diagnostics, span) {
        return Err(e);
    }
    let cases = eval.cases().map_err(|d| errors(&d, span).unwrap_or_else(|| syn::Error::new(span, "")))?;
    let absolute = std::fs::canonicalize(&path).unwrap_or(path.clone());
    let absolute = absolute.display().to_string();
    let module = names::ident(&module_name(&written), span);
    let case_names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let tests = test_names(&case_names).into_iter().zip(&cases).map(|(fn_name, case)| {
        let fn_name = names::ident(&fn_name, span);
        let name = &case.name;
        let doc = format!(" The case `{name}` of `{written}`.");
        quote_spanned! {span=>
            #[doc = #doc]
            #[test]
            fn #fn_name() {
                ::prompty::eval::__test_case(#absolute, #name);
            }
        }
    });
    let mut tracked: Vec<PathBuf> = vec![std::fs::canonicalize(&path).unwrap_or(path)];
    for f in &checked.files {
        let f = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
        if !tracked.contains(&f) {
            tracked.push(f);
        }
    }
    let tracked = tracked.iter().map(|f| {
        let f = f.display().to_string();
        quote_spanned!(span=> const _: &[u8] = ::std::include_bytes!(#f);)
    });
    let doc = format!(" The cases of `{written}`, one test each, run against the response cache.");
    Ok(quote_spanned! {span=>
        #[doc = #doc]
        #[allow(non_snake_case)]
        mod #module {
            #(#tracked)*
            #(#tests)*
        }
    })
}

/// What to emit when the expansion fails: an empty module of the expected name (so that uses of
/// it add no "cannot find" errors to the real ones), when the input parses.
///
/// ```
/// assert_eq!(prompty_build::eval::fallback(quote::quote!("evals/chat.eval.yaml")).to_string(), "mod chat_eval { }");
/// assert!(prompty_build::eval::fallback(quote::quote!(chat)).is_empty());
/// ```
pub fn fallback(input: TokenStream) -> TokenStream {
    let Ok(input) = syn::parse2::<EvalTestsInput>(input) else { return TokenStream::new() };
    let name = names::ident(&module_name(&input.path.value()), input.path.span());
    quote::quote!(mod #name {})
}

fn resolve(written: &str, crate_dirs: &[PathBuf]) -> PathBuf {
    let relative = Path::new(written);
    if relative.is_absolute() {
        return relative.to_path_buf();
    }
    let mut candidates = crate_dirs.iter().map(|d| d.join(relative));
    let first = candidates.next().unwrap_or_else(|| relative.to_path_buf());
    std::iter::once(first.clone()).chain(candidates).find(|p| p.is_file()).unwrap_or(first)
}

/// Reads the eval file, named in messages as written in the macro.
fn load(path: &Path, written: &str) -> Result<EvalFile, Vec<Diagnostic>> {
    let unreadable = |message: String| vec![Diagnostic::error(written, message).with_code("eval-file")];
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(unreadable(
                "file not found (paths are relative to the folder of the crate's Cargo.toml)".into(),
            ))
        }
        Err(e) => return Err(unreadable(format!("cannot read the eval file: {e}"))),
        Ok(m) if m.len() > MAX_EVAL_FILE_BYTES => {
            return Err(unreadable(format!("larger than the limit of {MAX_EVAL_FILE_BYTES} bytes")))
        }
        Ok(_) => {}
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(format!("cannot read the eval file: {e}")))?;
    let mut eval = EvalFile::parse(&text, written)?;
    eval.dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(eval)
}

/// Every error among `diagnostics` as one combined error spanned on the path.
fn errors(diagnostics: &[Diagnostic], span: Span) -> Option<syn::Error> {
    let mut all: Option<syn::Error> = None;
    for d in diagnostics.iter().filter(|d| d.severity == Severity::Error) {
        let e = syn::Error::new(span, d);
        match &mut all {
            Some(all) => all.combine(e),
            None => all = Some(e),
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prompty-build-eval-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("evals")).unwrap();
        std::fs::write(
            dir.join("evals/chat.prompty"),
            "---\ninputs:\n  question: {kind: string}\n---\nuser:\n{{ question }}",
        )
        .unwrap();
        dir
    }

    #[test]
    fn one_test_per_case_with_every_file_tracked() {
        let d = dir("expand");
        std::fs::write(d.join("evals/rows.csv"), "question,name\nHi,greet\nHo,\n").unwrap();
        std::fs::write(
            d.join("evals/chat.eval.yaml"),
            "prompt: chat.prompty\ncases:\n  - {name: greet me, vars: {question: Hi}}\ndatasets: [rows.csv]\n",
        )
        .unwrap();
        let out = expand(quote!("evals/chat.eval.yaml"), std::slice::from_ref(&d)).unwrap().to_string();
        let abs = d.join("evals/chat.eval.yaml").canonicalize().unwrap().display().to_string();
        for test in [
            format!("fn greet_me () {{ :: prompty :: eval :: __test_case ({abs:?} , \"greet me\") ; }}"),
            format!("fn greet () {{ :: prompty :: eval :: __test_case ({abs:?} , \"greet\") ; }}"),
            format!("fn rows_csv_3 () {{ :: prompty :: eval :: __test_case ({abs:?} , \"rows.csv:3\") ; }}"),
        ] {
            assert!(out.contains(&test), "{test}\n{out}");
        }
        assert!(out.contains("mod chat_eval"), "{out}");
        for file in ["chat.eval.yaml", "chat.prompty", "rows.csv"] {
            let path = d.join("evals").join(file).canonicalize().unwrap().display().to_string();
            assert!(out.contains(&format!("include_bytes ! ({path:?})")), "{file}: {out}");
        }
    }

    #[test]
    fn every_error_is_reported_together() {
        let d = dir("errors");
        std::fs::write(d.join("evals/rows.jsonl"), "{\"questoin\": \"x\"}\n").unwrap();
        std::fs::write(
            d.join("evals/chat.eval.yaml"),
            "prompt: chat.prompty\nvars: {qestion: x}\ndatasets: [rows.jsonl]\n",
        )
        .unwrap();
        let e = expand(quote!("evals/chat.eval.yaml"), std::slice::from_ref(&d)).unwrap_err();
        let messages: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(
            messages,
            [
                "evals/chat.eval.yaml:2:8: the var `qestion` is no input of chat.prompty (did you mean `question`?)",
                "evals/rows.jsonl:1:2: the column `questoin` of evals/rows.jsonl is no input of chat.prompty (did you mean `question`?)",
            ]
        );
    }

    #[test]
    fn a_missing_or_malformed_eval_file() {
        let d = dir("missing");
        let e = expand(quote!("evals/nope.eval.yaml"), std::slice::from_ref(&d)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "evals/nope.eval.yaml: file not found (paths are relative to the folder of the crate's Cargo.toml)"
        );
        std::fs::write(d.join("evals/bad.eval.yaml"), "prompt: chat.prompty\ncases: 3\n").unwrap();
        let e = expand(quote!("evals/bad.eval.yaml"), std::slice::from_ref(&d)).unwrap_err();
        assert_eq!(e.to_string(), "evals/bad.eval.yaml:2:1: `cases` must be a list, not a number");
        let e = expand(quote!(chat), &[]).unwrap_err();
        assert_eq!(e.to_string(), "expected the path of an eval file: eval_tests!(\"evals/chat.eval.yaml\")");
    }

    /// The messages pinned in the UI cases of `eval_tests!` are the ones `expand` gives.
    #[test]
    fn errors_match_the_ui_cases() {
        let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
        for case in ["misspelt_var", "misspelt_column", "judge_input"] {
            let stderr = std::fs::read_to_string(tests.join(format!("ui/eval_{case}.stderr"))).unwrap_or_default();
            let pinned: Vec<&str> = stderr.lines().filter_map(|l| l.strip_prefix("error: ")).collect();
            let path = format!("ui/evals/{case}.eval.yaml");
            let e = expand(quote!(#path), std::slice::from_ref(&tests)).unwrap_err();
            let given: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
            assert_eq!(pinned, given, "{case}");
        }
    }

    #[test]
    fn test_names_are_identifiers() {
        assert_eq!(test_names(&["type", "Été ?", "", "?", "a"]), ["type", "t", "case", "case_2", "a"]);
        assert_eq!(names::ident("type", Span::call_site()).to_string(), "r#type");
    }
}
