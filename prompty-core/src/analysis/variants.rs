//! Locale variants: a folder of prompt files grouped by prompt id ([`find_prompts`]), and the
//! check that a locale variant declares what its default prompt declares ([`check_variant`]), so
//! that one typed `Inputs` serves every locale and no locale breaks at run time.

use super::{Diagnostic, Report};
use crate::locale::{split_file_stem, Locale};
use crate::{Property, Tool, ToolKind};
use std::path::{Path, PathBuf};

/// The files of one prompt in a folder: its default file and its locale variants.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-prompt-files-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("support")).unwrap();
/// for f in ["greeting.prompty", "greeting.fr.prompty", "support/refund.prompty"] {
///     std::fs::write(dir.join(f), "Hi").unwrap();
/// }
/// let (prompts, problems) = prompty_core::analysis::find_prompts(&dir, "prompts")?;
/// assert!(problems.is_empty());
/// assert_eq!(prompts[0].id, "greeting");
/// assert_eq!(prompts[0].variants[0].0.as_str(), "fr");
/// assert_eq!(prompts[0].variants[0].2, "prompts/greeting.fr.prompty");
/// assert_eq!((prompts[1].id.as_str(), prompts[1].segments.as_slice()), ("support.refund", &["support".to_owned(), "refund".to_owned()][..]));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptFiles {
    /// The prompt's id: its folders and file name (without locale and extension), joined with
    /// `.` (`support/refund.prompty` → `support.refund`).
    pub id: String,
    /// The same, one segment per folder and the file name last.
    pub segments: Vec<String>,
    /// The default file (no locale in its name), absolute.
    pub default: PathBuf,
    /// The default file as named in messages.
    pub default_display: String,
    /// The locale variants, sorted by tag: the tag, the file, and the file as named in messages.
    pub variants: Vec<(Locale, PathBuf, String)>,
}

/// How deep [`find_prompts`] descends into sub-folders.
pub const MAX_FOLDER_DEPTH: usize = 16;

/// The most `.prompty` files [`find_prompts`] reads from one folder tree.
pub const MAX_PROMPT_FILES: usize = 10_000;

/// Every `.prompty` file below `root`, grouped by prompt id (sorted by id), and the problems
/// that keep files out of the groups, each an error naming its file: a file name whose part after
/// the first `.` is not a locale tag, a locale variant without a default file, two files of the
/// same id and locale (`a.fr.prompty` and `a.FR.prompty`). `display_root` is how `root` is named
/// in messages. Sub-folders are followed up to [`MAX_FOLDER_DEPTH`] deep, symbolic links are not
/// followed, and at most [`MAX_PROMPT_FILES`] files are taken.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-find-prompts-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("hello.de.prompty"), "Hallo").unwrap();
/// std::fs::write(dir.join("hello.english.prompty"), "Hi").unwrap();
/// let (prompts, problems) = prompty_core::analysis::find_prompts(&dir, "p")?;
/// assert!(prompts.is_empty());
/// let problems: Vec<String> = problems.iter().map(|d| d.to_string()).collect();
/// assert_eq!(problems, [
///     "p/hello.de.prompty: a locale variant (`de`) of the prompt `hello`, which has no default file: add p/hello.prompty",
///     "p/hello.english.prompty: the file name's part after the first `.` must be a locale tag: `english` is not a locale tag (BCP 47, e.g. `fr` or `pt-BR`): `english` is not a language subtag: a language subtag has 2 or 3 letters (ISO 639, e.g. `en`)",
/// ]);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn find_prompts(root: &Path, display_root: &str) -> std::io::Result<(Vec<PromptFiles>, Vec<Diagnostic>)> {
    let mut files = Vec::new();
    collect(root, 0, &mut files)?;
    files.sort();
    let mut problems = Vec::new();
    let display_of = |relative: &Path| {
        let mut parts: Vec<String> = Vec::new();
        if !display_root.is_empty() && display_root != "." {
            parts.push(display_root.trim_end_matches('/').to_owned());
        }
        parts.extend(relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()));
        parts.join("/")
    };
    let mut groups: std::collections::BTreeMap<String, PromptFiles> = Default::default();
    let mut orphans: Vec<(String, Locale, String, String)> = Vec::new();
    for path in files {
        let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let display = display_of(&relative);
        let stem = relative.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let (name, locale) = match split_file_stem(&stem) {
            Ok(split) => split,
            Err(e) => {
                problems.push(
                    Diagnostic::error(
                        &display,
                        format!("the file name's part after the first `.` must be a locale tag: {e}"),
                    )
                    .with_code("invalid-file-locale"),
                );
                continue;
            }
        };
        if name.is_empty() {
            problems.push(
                Diagnostic::error(&display, "the file name has no prompt id before its first `.`")
                    .with_code("no-prompt-id"),
            );
            continue;
        }
        let mut segments: Vec<String> = relative
            .parent()
            .into_iter()
            .flat_map(Path::components)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        segments.push(name.to_owned());
        let id = segments.join(".");
        match locale {
            None => {
                groups.insert(
                    id.clone(),
                    PromptFiles { id, segments, default: path, default_display: display, variants: Vec::new() },
                );
            }
            Some(locale) => orphans.push((id, locale, display, path.to_string_lossy().into_owned())),
        }
    }
    for (id, locale, display, path) in orphans {
        let Some(group) = groups.get_mut(&id) else {
            let default = display_of(Path::new(&format!("{}.prompty", id.replace('.', "/"))));
            problems.push(
                Diagnostic::error(
                    &display,
                    format!(
                        "a locale variant (`{locale}`) of the prompt `{id}`, which has no default file: add {default}"
                    ),
                )
                .with_code("variant-without-default"),
            );
            continue;
        };
        if let Some((_, _, other)) = group.variants.iter().find(|(l, _, _)| *l == locale) {
            problems.push(
                Diagnostic::error(
                    &display,
                    format!("the locale `{locale}` of the prompt `{id}` is already given by {other}: keep one of them"),
                )
                .with_code("duplicate-locale"),
            );
            continue;
        }
        group.variants.push((locale, PathBuf::from(path), display));
    }
    let mut prompts: Vec<PromptFiles> = groups.into_values().collect();
    for p in &mut prompts {
        p.variants.sort_by(|a, b| a.0.cmp(&b.0));
    }
    problems.sort_by(|a, b| (&a.file, &a.message).cmp(&(&b.file, &b.message)));
    Ok((prompts, problems))
}

/// What an analysis of a prompt file offers to the check of locale variants: the [`Report`] a
/// variant is compared with its default on ([`check_variant`]), or `None` to skip the comparison
/// (a file that did not load, or whose analysis the caller does not trust).
///
/// ```
/// use prompty_core::analysis::{check_str, Analyzed};
/// let report = check_str("Hi", ".".as_ref(), "a.prompty", &Default::default());
/// assert!(report.report().is_some());
/// ```
pub trait Analyzed {
    /// The report to compare, if any.
    fn report(&self) -> Option<&Report>;
}

impl Analyzed for Report {
    fn report(&self) -> Option<&Report> {
        Some(self)
    }
}

/// One file of a prompt after its analysis: where it is, how it is named in messages, and what
/// the caller's analysis made of it.
#[derive(Debug, Clone)]
pub struct CheckedFile<T> {
    /// The file, absolute.
    pub path: PathBuf,
    /// The file as named in messages.
    pub display: String,
    /// What the caller's analysis returned for it.
    pub analysis: T,
}

/// A locale variant after its analysis, with what [`check_variant`] found against its default.
#[derive(Debug, Clone)]
pub struct CheckedVariant<T> {
    /// The variant's locale.
    pub locale: Locale,
    /// The variant's file and analysis.
    pub file: CheckedFile<T>,
    /// Where the variant declares something other than its default (empty when either file did
    /// not load).
    pub mismatches: Vec<Diagnostic>,
}

/// A prompt of a folder after the analysis of its default file and its locale variants
/// ([`PromptFiles::check`], [`check_prompts`]).
#[derive(Debug, Clone)]
pub struct CheckedPrompt<T> {
    /// The prompt's id (`support.refund`).
    pub id: String,
    /// The id's segments (`["support", "refund"]`).
    pub segments: Vec<String>,
    /// The default file.
    pub default: CheckedFile<T>,
    /// The locale variants, sorted by tag.
    pub variants: Vec<CheckedVariant<T>>,
}

impl<T> CheckedPrompt<T> {
    /// Whether no variant differs from the default.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("prompty-doc-consistent-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// # std::fs::write(dir.join("hi.prompty"), "Hi").unwrap();
    /// let (prompts, _) = prompty_core::analysis::check_prompts(&dir, "p", |p, d| prompty_core::analysis::check_file(p, d, &Default::default()))?;
    /// assert!(prompts[0].consistent());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn consistent(&self) -> bool {
        self.variants.iter().all(|v| v.mismatches.is_empty())
    }
}

impl PromptFiles {
    /// Analyzes the default file and every variant with `analyze` (given the file and its name
    /// in messages), and checks each variant against the default with [`check_variant`], on the
    /// [`Report`]s of the analyses ([`Analyzed::report`]; a file without one is not compared). This is
    /// the one loop behind `prompty-build`, the prompt registry's `load_dir` and `prompty check`.
    ///
    /// ```
    /// use prompty_core::analysis::{check_file, find_prompts};
    /// let dir = std::env::temp_dir().join(format!("prompty-doc-prompt-check-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("hi.prompty"), "---\ninputs: [name]\n---\nHi {{ name }}").unwrap();
    /// std::fs::write(dir.join("hi.fr.prompty"), "---\ninputs: [nom]\n---\nSalut {{ nom }}").unwrap();
    /// let (groups, _) = find_prompts(&dir, "p")?;
    /// let checked = groups[0].check(|path, display| check_file(path, display, &Default::default()));
    /// assert_eq!(checked.variants[0].locale.as_str(), "fr");
    /// let mismatches: Vec<String> = checked.variants[0].mismatches.iter().map(|d| d.to_string()).collect();
    /// assert!(mismatches.iter().any(|m| m.starts_with("p/hi.fr.prompty:2:10: the input `nom` is not declared by the default prompt")));
    /// assert!(mismatches.iter().any(|m| m.starts_with("p/hi.fr.prompty:2:1: the input `name` of the default prompt")));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn check<T: Analyzed>(&self, mut analyze: impl FnMut(&Path, &str) -> T) -> CheckedPrompt<T> {
        let default = CheckedFile {
            path: self.default.clone(),
            display: self.default_display.clone(),
            analysis: analyze(&self.default, &self.default_display),
        };
        let variants = self
            .variants
            .iter()
            .map(|(locale, path, display)| {
                let analysis = analyze(path, display);
                let mismatches = match (default.analysis.report(), analysis.report()) {
                    (Some(d), Some(v)) => check_variant(d, v),
                    _ => Vec::new(),
                };
                CheckedVariant {
                    locale: locale.clone(),
                    file: CheckedFile { path: path.clone(), display: display.clone(), analysis },
                    mismatches,
                }
            })
            .collect();
        CheckedPrompt { id: self.id.clone(), segments: self.segments.clone(), default, variants }
    }
}

/// Finds the prompts below `root` ([`find_prompts`]) and checks each ([`PromptFiles::check`]):
/// the prompts, and the problems of the file names.
///
/// ```
/// use prompty_core::analysis::{check_file, check_prompts};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-check-prompts-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("hi.prompty"), "---\ninputs: [name]\n---\nHi {{ name }}").unwrap();
/// std::fs::write(dir.join("hi.de.prompty"), "---\ninputs: [name]\n---\nHallo {{ name }}").unwrap();
/// let (prompts, problems) = check_prompts(&dir, "p", |path, display| check_file(path, display, &Default::default()))?;
/// assert!(problems.is_empty());
/// assert_eq!((prompts[0].id.as_str(), prompts[0].variants.len()), ("hi", 1));
/// assert!(prompts[0].consistent());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn check_prompts<T: Analyzed>(
    root: &Path,
    display_root: &str,
    mut analyze: impl FnMut(&Path, &str) -> T,
) -> std::io::Result<(Vec<CheckedPrompt<T>>, Vec<Diagnostic>)> {
    let (groups, problems) = find_prompts(root, display_root)?;
    let checked = groups.iter().map(|g| g.check(&mut analyze)).collect();
    Ok((checked, problems))
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if depth > MAX_FOLDER_DEPTH {
        return Err(std::io::Error::other(format!(
            "{}: folders nest deeper than {MAX_FOLDER_DEPTH} levels",
            dir.display()
        )));
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            collect(&path, depth + 1, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "prompty") {
            if out.len() >= MAX_PROMPT_FILES {
                return Err(std::io::Error::other(format!(
                    "{}: more than {MAX_PROMPT_FILES} .prompty files",
                    dir.display()
                )));
            }
            out.push(path);
        }
    }
    Ok(())
}

/// Checks that a locale variant declares what its default prompt declares: the same inputs and
/// outputs (names, kinds, `required`, whether a default is given, nested `properties` and
/// `items`) and the same tools (names, kinds, bindings, and the parameters of function tools).
/// Descriptions, defaults' values, the template and the model may differ. Every difference is an
/// error at the variant's line and column that names the default's file, line and column too.
/// Both reports must hold their agent (an analysis without errors); otherwise nothing is said.
///
/// ```
/// use prompty_core::analysis::{check_str, check_variant};
/// let o = Default::default();
/// let default = check_str("---\ninputs:\n  name: {kind: string}\n---\nHi {{ name }}", ".".as_ref(), "p/greet.prompty", &o);
/// let fr = check_str("---\ninputs:\n  name: {kind: integer}\n---\nSalut {{ name }}", ".".as_ref(), "p/greet.fr.prompty", &o);
/// let problems: Vec<String> = check_variant(&default, &fr).iter().map(|d| d.to_string()).collect();
/// assert_eq!(problems, ["p/greet.fr.prompty:3:3: the input `name` is an integer here, but a string in the default prompt (p/greet.prompty:3:3): a locale variant declares the inputs of its default"]);
/// ```
pub fn check_variant(default: &Report, variant: &Report) -> Vec<Diagnostic> {
    let (Some(d), Some(v)) = (&default.agent, &variant.agent) else { return Vec::new() };
    let mut c = Compare { default, variant, out: Vec::new() };
    let empty = Vec::new();
    for (field, what) in [("inputs", "input"), ("outputs", "output")] {
        let (dl, vl) = match field {
            "inputs" => (d.inputs.as_ref().unwrap_or(&empty), v.inputs.as_ref().unwrap_or(&empty)),
            _ => (d.outputs.as_ref().unwrap_or(&empty), v.outputs.as_ref().unwrap_or(&empty)),
        };
        c.properties(dl, vl, field, field, &format!("{what} `{{name}}`"), "", &format!("the {field} of its default"));
    }
    let no_tools = Vec::new();
    c.tools(d.tools.as_ref().unwrap_or(&no_tools), v.tools.as_ref().unwrap_or(&no_tools));
    c.out
}

struct Compare<'a> {
    default: &'a Report,
    variant: &'a Report,
    out: Vec<Diagnostic>,
}

fn kind_phrase(p: &Property) -> String {
    let kind = p.kind.as_str();
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {kind}")
}

/// `what` with its `{name}` filled in.
fn label(what: &str, name: &str) -> String {
    what.replace("{name}", name)
}

fn shape(p: &Property) -> &'static str {
    match (p.required, p.default.is_some()) {
        (true, false) => "required without a default",
        (true, true) => "required with a default",
        (false, _) => "optional",
    }
}

impl Compare<'_> {
    fn error(&mut self, variant_field: &str, default_field: &str, message: String, rule: &str) {
        let at = self.variant.locate(variant_field);
        let there = self.default.locate(default_field);
        let there_text = there.to_string();
        let span = at.line.zip(at.column).and_then(|(l, c)| self.variant.span_at(l, c));
        let mut d =
            Diagnostic::error(at, message.replace("{there}", &there_text) + ": a locale variant declares " + rule)
                .with_code("variant-mismatch")
                .with_related(there, "declared here in the default prompt");
        d.span = span;
        self.out.push(d);
    }

    /// Compares two lists of properties by name. `dpath`/`vpath` are their key paths in each file,
    /// `what` names one (`input`, `parameter`), `prefix` is prepended to names (`profile.`).
    #[allow(clippy::too_many_arguments)]
    fn properties(
        &mut self,
        dl: &[Property],
        vl: &[Property],
        dpath: &str,
        vpath: &str,
        what: &str,
        prefix: &str,
        rule: &str,
    ) {
        for (i, dp) in dl.iter().enumerate() {
            let dfield = format!("{dpath}[{i}]");
            match vl.iter().position(|vp| vp.name == dp.name) {
                None => self.error(
                    vpath,
                    &dfield,
                    format!(
                        "the {} of the default prompt ({{there}}) is missing here",
                        label(what, &format!("{prefix}{}", dp.name))
                    ),
                    rule,
                ),
                Some(j) => {
                    let vfield = format!("{vpath}[{j}]");
                    self.property(dp, &vl[j], &dfield, &vfield, what, prefix, rule);
                }
            }
        }
        for (j, vp) in vl.iter().enumerate() {
            if !dl.iter().any(|dp| dp.name == vp.name) {
                let vfield = format!("{vpath}[{j}]");
                self.error(
                    &vfield,
                    dpath,
                    format!(
                        "the {} is not declared by the default prompt ({{there}})",
                        label(what, &format!("{prefix}{}", vp.name))
                    ),
                    rule,
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn property(
        &mut self,
        dp: &Property,
        vp: &Property,
        dfield: &str,
        vfield: &str,
        what: &str,
        prefix: &str,
        rule: &str,
    ) {
        let name = format!("{prefix}{}", dp.name);
        if dp.kind != vp.kind {
            self.error(
                vfield,
                dfield,
                format!(
                    "the {} is {} here, but {} in the default prompt ({{there}})",
                    label(what, &name),
                    kind_phrase(vp),
                    kind_phrase(dp)
                ),
                rule,
            );
            return;
        }
        if shape(dp) != shape(vp) {
            self.error(
                vfield,
                dfield,
                format!(
                    "the {} is {} here, but {} in the default prompt ({{there}})",
                    label(what, &name),
                    shape(vp),
                    shape(dp)
                ),
                rule,
            );
        }
        let no_props = Vec::new();
        let (dprops, vprops) =
            (dp.properties.as_ref().unwrap_or(&no_props), vp.properties.as_ref().unwrap_or(&no_props));
        if !dprops.is_empty() || !vprops.is_empty() {
            self.properties(
                dprops,
                vprops,
                &format!("{dfield}.properties"),
                &format!("{vfield}.properties"),
                what,
                &format!("{name}."),
                rule,
            );
        }
        match (&dp.items, &vp.items) {
            (Some(di), Some(vi)) => {
                let (mut di, mut vi) = ((**di).clone(), (**vi).clone());
                di.name.clear();
                vi.name.clear();
                self.property(
                    &di,
                    &vi,
                    &format!("{dfield}.items"),
                    &format!("{vfield}.items"),
                    what,
                    &format!("{name}[]"),
                    rule,
                );
            }
            (None, None) => {}
            (d, _) => self.error(
                vfield,
                dfield,
                format!(
                    "the {} {} `items` here, but {} in the default prompt ({{there}})",
                    label(what, &name),
                    if d.is_some() { "has no" } else { "declares its" },
                    if d.is_some() { "declares them" } else { "not" }
                ),
                rule,
            ),
        }
    }

    fn tools(&mut self, dl: &[Tool], vl: &[Tool]) {
        let rule = "the tools of its default";
        for (i, dt) in dl.iter().enumerate() {
            let dfield = format!("tools[{i}]");
            let Some(j) = vl.iter().position(|vt| vt.name == dt.name) else {
                self.error(
                    "tools",
                    &dfield,
                    format!("the tool `{}` of the default prompt ({{there}}) is missing here", dt.name),
                    rule,
                );
                continue;
            };
            let (vt, vfield) = (&vl[j], format!("tools[{j}]"));
            if dt.kind.as_str() != vt.kind.as_str() {
                self.error(
                    &vfield,
                    &dfield,
                    format!(
                        "the tool `{}` is of kind `{}` here, but `{}` in the default prompt ({{there}})",
                        dt.name,
                        vt.kind.as_str(),
                        dt.kind.as_str()
                    ),
                    rule,
                );
                continue;
            }
            let mut db: Vec<_> = dt.bindings.iter().map(|b| (&b.name, &b.input)).collect();
            let mut vb: Vec<_> = vt.bindings.iter().map(|b| (&b.name, &b.input)).collect();
            db.sort();
            vb.sort();
            if db != vb {
                let show = |b: &[(&String, &String)]| {
                    let s: Vec<String> = b.iter().map(|(p, i)| format!("{p} ← {i}")).collect();
                    if s.is_empty() {
                        "none".to_owned()
                    } else {
                        s.join(", ")
                    }
                };
                self.error(
                    &format!("{vfield}.bindings"),
                    &dfield,
                    format!(
                        "the tool `{}` binds {} here, but {} in the default prompt ({{there}})",
                        dt.name,
                        show(&vb),
                        show(&db)
                    ),
                    rule,
                );
            }
            if let (ToolKind::Function(df), ToolKind::Function(vf)) = (&dt.kind, &vt.kind) {
                let what = format!("parameter `{{name}}` of the tool `{}`", dt.name);
                let (dpath, vpath) = (format!("{dfield}.parameters"), format!("{vfield}.parameters"));
                self.properties(&df.parameters, &vf.parameters, &dpath, &vpath, &what, "", rule);
            }
        }
        for (j, vt) in vl.iter().enumerate() {
            if !dl.iter().any(|dt| dt.name == vt.name) {
                self.error(
                    &format!("tools[{j}]"),
                    "tools",
                    format!("the tool `{}` is not declared by the default prompt ({{there}})", vt.name),
                    rule,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::check_str;
    use super::*;

    fn report(text: &str, name: &str) -> Report {
        let r = check_str(text, ".".as_ref(), name, &Default::default());
        assert!(!r.has_errors(), "{:?}", r.diagnostics);
        r
    }

    fn problems(default: &str, variant: &str) -> Vec<String> {
        let d = report(default, "p/a.prompty");
        let v = report(variant, "p/a.fr.prompty");
        check_variant(&d, &v).iter().map(|d| d.to_string()).collect()
    }

    const BASE: &str =
        "---\ninputs:\n  name: {kind: string}\n  age: {kind: integer, required: true}\n---\n{{ name }} {{ age }}";

    #[test]
    fn same_declarations_other_texts_pass() {
        let variant = "---\ndescription: en français\ninputs:\n  age: {kind: integer, required: true, description: âge}\n  name: {kind: string, default: Toi}\n---\nsystem:\nSalut {{ name }} {{ age }}";
        assert_eq!(problems(BASE, variant), Vec::<String>::new());
    }

    #[test]
    fn inputs_missing_extra_kind_required() {
        let variant = "---\ninputs:\n  name: {kind: integer}\n  town: {kind: string}\n---\n{{ name }} {{ town }}";
        let p = problems(BASE, variant);
        assert_eq!(p, [
            "p/a.fr.prompty:3:3: the input `name` is an integer here, but a string in the default prompt (p/a.prompty:3:3): a locale variant declares the inputs of its default",
            "p/a.fr.prompty:2:1: the input `age` of the default prompt (p/a.prompty:4:3) is missing here: a locale variant declares the inputs of its default",
            "p/a.fr.prompty:4:3: the input `town` is not declared by the default prompt (p/a.prompty:2:1): a locale variant declares the inputs of its default",
        ]);
        let variant = "---\ninputs:\n  name: {kind: string}\n  age: {kind: integer}\n---\n{{ name }} {{ age }}";
        assert_eq!(problems(BASE, variant), [
            "p/a.fr.prompty:4:3: the input `age` is optional here, but required without a default in the default prompt (p/a.prompty:4:3): a locale variant declares the inputs of its default",
        ]);
    }

    #[test]
    fn nested_properties_and_items() {
        let d = "---\ninputs:\n  - name: who\n    kind: object\n    properties:\n      - name: city\n        kind: string\n  - name: tags\n    kind: array\n    items: {kind: string}\n---\n{{ who.city }} {{ tags }}";
        let v = "---\ninputs:\n  - name: who\n    kind: object\n    properties:\n      - name: town\n        kind: string\n  - name: tags\n    kind: array\n    items: {kind: integer}\n---\n{{ who.town }} {{ tags }}";
        let p = problems(d, v);
        assert_eq!(p.len(), 3, "{p:#?}");
        assert!(
            p[0].contains("the input `who.city` of the default prompt (p/a.prompty:6:9) is missing here"),
            "{}",
            p[0]
        );
        assert!(p[1].starts_with("p/a.fr.prompty:6:9: the input `who.town` is not declared"), "{}", p[1]);
        assert!(p[2].contains("the input `tags[]` is an integer here, but a string"), "{}", p[2]);
    }

    #[test]
    fn outputs_and_tools() {
        let d = "---\noutputs:\n  answer: {kind: string}\ntools:\n  - name: weather\n    kind: function\n    parameters:\n      - name: city\n        kind: string\n        required: true\n  - name: search\n    kind: function\n---\nHi";
        let v = "---\noutputs:\n  answer: {kind: boolean}\ntools:\n  - name: weather\n    kind: function\n    description: la météo\n    parameters:\n      - name: city\n        kind: string\n  - name: lookup\n    kind: function\n---\nSalut";
        let p = problems(d, v);
        assert_eq!(p.len(), 4, "{p:#?}");
        assert!(p[0].contains("the output `answer` is a boolean here, but a string"), "{}", p[0]);
        assert!(p[0].ends_with("a locale variant declares the outputs of its default"), "{}", p[0]);
        assert!(p[1].contains("the parameter `city` of the tool `weather` is optional here"), "{}", p[1]);
        assert!(
            p[2].contains("the tool `search` of the default prompt (p/a.prompty:11:5) is missing here"),
            "{}",
            p[2]
        );
        assert!(p[3].starts_with("p/a.fr.prompty:11:5: the tool `lookup` is not declared"), "{}", p[3]);
    }

    #[test]
    fn tool_kinds_and_bindings() {
        let d = "---\ninputs: [unit]\ntools:\n  - name: w\n    kind: function\n    bindings:\n      u: unit\n    parameters:\n      - name: u\n        kind: string\n---\n{{ unit }}";
        let v = "---\ninputs: [unit]\ntools:\n  - name: w\n    kind: function\n    parameters:\n      - name: u\n        kind: string\n---\n{{ unit }}";
        let p = problems(d, v);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(p[0].contains("the tool `w` binds none here, but u ← unit in the default prompt"), "{}", p[0]);
    }
}
