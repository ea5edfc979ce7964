//! The analysis of an open document: `prompty_core::analysis` (the one the compiler, the build
//! script, `prompty::check` and `prompty check` run) on the document's text, the outline of its
//! parts, and, for a locale variant, the check against its default file.

use prompty_core::analysis::{self, Diagnostic, Outline, Report};
use prompty_core::{Agent, LoadOptions};
use std::path::{Path, PathBuf};

/// The largest document the server analyzes (4 MiB); a larger one gets one diagnostic saying so.
pub const MAX_DOCUMENT_BYTES: usize = 4 << 20;

/// What the server knows about a document's text.
#[derive(Debug, Default)]
pub struct Analysis {
    /// The analysis' report (none for a document over [`MAX_DOCUMENT_BYTES`]).
    pub report: Option<Report>,
    /// Where the parts of the text are.
    pub outline: Outline,
    /// How the document's file is named in the report's diagnostics.
    pub display: String,
    /// The template format the outline was made for.
    pub format: String,
    /// For a locale variant (`greeting.fr.prompty`): its default file and what differs from it.
    pub variant: Option<Variant>,
    /// The size of a document too large to analyze.
    pub too_large: Option<usize>,
    /// While the text does not load (a key half typed), the agent of the last text that did:
    /// completion, hover, definitions and symbols keep working from it.
    pub previous_agent: Option<Agent>,
}

/// A locale variant's default file and the variant's mismatches with it.
#[derive(Debug)]
pub struct Variant {
    /// The default file (`greeting.prompty`).
    pub default: PathBuf,
    /// Where the variant differs from it (inputs, outputs, tools).
    pub mismatches: Vec<Diagnostic>,
}

impl Analysis {
    /// The agent, when the text loads; else the one of the last text that loaded
    /// ([`Analysis::previous_agent`]).
    pub fn agent(&self) -> Option<&Agent> {
        self.report.as_ref().and_then(|r| r.agent.as_ref()).or(self.previous_agent.as_ref())
    }

    /// The files the analysis read besides the document (its `${file:}` targets, OpenAPI
    /// documents, child prompts, the default file of a variant): a change to one of them changes
    /// the analysis.
    pub fn depends_on(&self, path: &Path) -> bool {
        self.report.as_ref().is_some_and(|r| r.files.iter().any(|f| same_file(f, path)))
            || self.variant.as_ref().is_some_and(|v| same_file(&v.default, path))
    }
}

/// Whether two paths name the same file (compared as written, then canonically).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

/// Analyzes `text`, the document at `path` (none for an unsaved document: relative paths then
/// start at the working folder). `open` are the other documents open in the editor (file and
/// text): the analysis reads them as the editor has them (a child prompt, a `${file:}` target, a
/// locale variant's default), and every other file from disk.
///
/// ```
/// let a = prompty_lsp::analysis::analyze("---\ninputs: [q]\n---\n{{ qq }}", None, &[]);
/// assert_eq!(a.report.unwrap().errors().next().unwrap().code, "undeclared-variable");
/// ```
pub fn analyze(text: &str, path: Option<&Path>, open: &[(&Path, &str)]) -> Analysis {
    let display = path.map_or_else(|| "<untitled>.prompty".to_owned(), |p| p.to_string_lossy().into_owned());
    if text.len() > MAX_DOCUMENT_BYTES {
        return Analysis { display, too_large: Some(text.len()), ..Analysis::default() };
    }
    let dir = path.and_then(Path::parent).map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let options = open
        .iter()
        .filter(|(p, _)| path.is_none_or(|own| !same_file(own, p)))
        .fold(LoadOptions::new().keep_env_references(), |o, (p, t)| o.unsaved_text(p, *t));
    let read = |wanted: &Path| open.iter().find(|(p, _)| same_file(p, wanted)).map(|(_, t)| (*t).to_owned());
    let report = analysis::check_str(text, &dir, &display, &options);
    let format = report.agent.as_ref().map_or_else(|| "jinja2".to_owned(), |a| a.template.format.kind.clone());
    let outline = analysis::outline(text, &format);
    let variant = path.and_then(|p| variant(p, &report, &options, &read));
    Analysis { report: Some(report), outline, display, format, variant, too_large: None, previous_agent: None }
}

/// For a locale variant: its default file, checked, and the variant's mismatches with it.
fn variant(
    path: &Path,
    report: &Report,
    options: &LoadOptions,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Option<Variant> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".prompty")?;
    let (id, locale) = prompty_core::locale::split_file_stem(stem).ok()?;
    locale?;
    let dir = path.parent()?;
    let default = dir.join(format!("{id}.prompty"));
    let display = default.to_string_lossy().into_owned();
    let text = read(&default).or_else(|| std::fs::read_to_string(&default).ok())?;
    if text.len() > MAX_DOCUMENT_BYTES {
        return None;
    }
    let default_report = analysis::check_str(&text, dir, &display, options);
    let mismatches = analysis::check_variant(&default_report, report);
    Some(Variant { default, mismatches })
}
