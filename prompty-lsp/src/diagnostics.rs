//! The analysis' diagnostics as the protocol's: exact ranges (the token's bytes), the rule's code,
//! severity, and related places in other files. A problem found in another file (a child prompt,
//! a `${file:}` target) is shown at the place of this document that refers to it, with the
//! problem's own place as related information.

use crate::analysis::{Analysis, MAX_DOCUMENT_BYTES};
use crate::document::path_to_uri;
use crate::document::Document;
use lsp_types::{
    Diagnostic as LspDiagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location as LspLocation,
    NumberOrString, Position, Range,
};
use prompty_core::analysis::{Diagnostic, Severity, Span};
use prompty_core::Location;
use std::path::Path;

/// The `source` of every diagnostic the server publishes.
pub const SOURCE: &str = "prompty";

/// The diagnostics of a document, in the protocol's form.
pub fn diagnostics(doc: &Document) -> Vec<LspDiagnostic> {
    let analysis = &doc.analysis;
    if let Some(size) = analysis.too_large {
        return vec![LspDiagnostic {
            range: Range::default(),
            severity: Some(DiagnosticSeverity::WARNING),
            code: Some(NumberOrString::String("too-large".to_owned())),
            source: Some(SOURCE.to_owned()),
            message: format!(
                "the file is {size} bytes: the language server checks files up to {MAX_DOCUMENT_BYTES} bytes (run `prompty check` on it)"
            ),
            ..LspDiagnostic::default()
        }];
    }
    let own = analysis.report.iter().flat_map(|r| r.diagnostics.iter());
    let mismatches = analysis.variant.iter().flat_map(|v| v.mismatches.iter());
    own.chain(mismatches).map(|d| convert(doc, analysis, d)).collect()
}

/// The range in `doc` of a diagnostic of its own file: its span, else the word at its line and
/// column, else the start of its line (the file's start when it has no line).
pub(crate) fn own_range(doc: &Document, d: &Diagnostic) -> Range {
    let span = d.span.unwrap_or_else(|| own_span(doc, d.line, d.column));
    // A template syntax error at a tag's start: the tag (up to its line's end).
    if d.code == "template-syntax" {
        if let Some(tag) = doc.analysis.outline.tags.iter().find(|t| t.start == span.start) {
            let line_end = doc.text[tag.start..].find('\n').map_or(doc.text.len(), |i| tag.start + i);
            return doc.range(Span { start: tag.start, end: tag.end.min(line_end) });
        }
    }
    doc.range(span)
}

/// For a span on a YAML key (`path:` of `path: child.prompty`), the value's span; else `span`.
fn value_span(doc: &Document, span: Span) -> Span {
    let rest = &doc.text[span.end..];
    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let Some(after) = line.strip_prefix(':') else { return span };
    let value = after.trim_start();
    let value = value.split(" #").next().unwrap_or(value).trim_end();
    if value.is_empty() {
        return span;
    }
    let start = span.end + 1 + (after.len() - after.trim_start().len());
    Span { start, end: start + value.len() }
}

/// The bytes of `doc` at a 1-based line and column: the word there, or an empty span.
pub(crate) fn own_span(doc: &Document, line: Option<u32>, column: Option<u32>) -> Span {
    match (line, column) {
        (Some(line), Some(column)) => {
            let offset = doc.offset_of_line_column(line, column);
            let end = doc.word_at(offset).filter(|w| w.start == offset).map_or(offset, |w| w.end);
            Span { start: offset, end }
        }
        (Some(line), None) => {
            let offset = doc.offset_of_line_column(line, 1);
            let rest = &doc.text[offset..];
            Span { start: offset, end: offset + rest.find('\n').unwrap_or(rest.len()) }
        }
        _ => Span::default(),
    }
}

/// A place in another file, as a protocol location (the column counted as characters: the other
/// file's text is not at hand, and columns within ASCII are the same in every encoding).
fn foreign(at: &Location) -> LspLocation {
    let line = at.line.unwrap_or(1).saturating_sub(1);
    let character = at.column.unwrap_or(1).saturating_sub(1);
    let position = Position::new(line, character);
    LspLocation::new(path_to_uri(Path::new(&at.file)), Range::new(position, position))
}

fn convert(doc: &Document, analysis: &Analysis, d: &Diagnostic) -> LspDiagnostic {
    let mut related = Vec::new();
    let range = if d.file == analysis.display {
        own_range(doc, d)
    } else {
        // A problem of another file: shown where this document refers to it (the related place in
        // this file, e.g. the tool that runs a child), else at the file's start.
        related.push(DiagnosticRelatedInformation {
            location: foreign(&Location { file: d.file.clone(), line: d.line, column: d.column }),
            message: "the problem is here".to_owned(),
        });
        match d.related.iter().rev().find(|r| r.at.file == analysis.display) {
            Some(here) => doc.range(value_span(doc, own_span(doc, here.at.line, here.at.column))),
            None => Range::default(),
        }
    };
    for r in &d.related {
        if r.at.file == analysis.display && d.file != analysis.display {
            continue;
        }
        let location = if r.at.file == analysis.display {
            LspLocation::new(doc.uri.clone(), doc.range(own_span(doc, r.at.line, r.at.column)))
        } else {
            foreign(&r.at)
        };
        related.push(DiagnosticRelatedInformation { location, message: r.message.clone() });
    }
    let message = match &d.help {
        Some(help) => format!("{} ({help})", d.message),
        None => d.message.clone(),
    };
    LspDiagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.to_owned())),
        source: Some(SOURCE.to_owned()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..LspDiagnostic::default()
    }
}
