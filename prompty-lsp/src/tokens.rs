//! Semantic tokens: role markers, template tag delimiters and comments, the template's names
//! (declared inputs, other variables, properties, filters and tests) and the frontmatter's
//! `${env:…}` / `${file:…}` references, encoded as the protocol says (relative lines and starts,
//! in the document's position encoding, one line per token).

use crate::document::Document;
use lsp_types::{SemanticToken, SemanticTokenType, SemanticTokens, SemanticTokensLegend};
use prompty_core::analysis::{NameKind, Span};

/// The token types, in the legend's order (a token's type is its index here).
const TYPES: [SemanticTokenType; 8] = [
    SemanticTokenType::KEYWORD,   // a role marker's word
    SemanticTokenType::OPERATOR,  // `{{`, `}}`, `{%`, `%}`
    SemanticTokenType::COMMENT,   // `{# … #}`
    SemanticTokenType::PARAMETER, // a declared input
    SemanticTokenType::VARIABLE,  // another name (a loop variable, an undeclared one)
    SemanticTokenType::PROPERTY,  // `user.name`
    SemanticTokenType::FUNCTION,  // a filter or a test
    SemanticTokenType::MACRO,     // `${env:…}`, `${file:…}`
];

/// The index in [`TYPES`] of each kind of token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Kind {
    Marker = 0,
    Delimiter = 1,
    Comment = 2,
    Input = 3,
    Variable = 4,
    Property = 5,
    Function = 6,
    Reference = 7,
}

/// The token types and modifiers the server uses.
pub fn legend() -> SemanticTokensLegend {
    SemanticTokensLegend { token_types: TYPES.to_vec(), token_modifiers: Vec::new() }
}

/// The semantic tokens of `doc`.
pub fn semantic_tokens(doc: &Document) -> SemanticTokens {
    let text = &doc.text;
    let outline = &doc.analysis.outline;
    let mut found: Vec<(Span, Kind)> = Vec::new();
    for m in &outline.markers {
        found.push((m.word, Kind::Marker));
    }
    let mustache = doc.analysis.format == "mustache";
    for &tag in &outline.tags {
        let t = &text[tag.start..tag.end];
        if t.starts_with("{#") || (mustache && t.starts_with("{{!")) {
            found.push((tag, Kind::Comment));
            continue;
        }
        let (open, close) = if mustache && t.starts_with("{{{") {
            ("{{{", "}}}")
        } else if t.starts_with("{%") {
            ("{%", "%}")
        } else {
            ("{{", "}}")
        };
        // Whitespace control (`{%-`, `-}}`) belongs to the delimiter.
        let open_len = open.len() + usize::from(!mustache && t[open.len()..].starts_with(['-', '+', '~']));
        found.push((Span { start: tag.start, end: tag.start + open_len }, Kind::Delimiter));
        if t.len() >= open_len + close.len() && t.ends_with(close) {
            let body = &t[..t.len() - close.len()];
            let close_len =
                close.len() + usize::from(!mustache && body.ends_with(['-', '+', '~']) && body.len() > open_len);
            found.push((Span { start: tag.end - close_len, end: tag.end }, Kind::Delimiter));
        }
    }
    let declared: Vec<&str> = doc
        .analysis
        .agent()
        .and_then(|a| a.inputs.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    for name in &outline.names {
        let kind = match &name.kind {
            NameKind::Input if declared.contains(&name.name.as_str()) => Kind::Input,
            NameKind::Input => Kind::Variable,
            NameKind::Property { .. } => Kind::Property,
            NameKind::Filter | NameKind::Test => Kind::Function,
        };
        found.push((name.span, kind));
    }
    if let Some(fm) = outline.frontmatter {
        let yaml = &text[fm.start..fm.end];
        for prefix in ["${env:", "${file:"] {
            for (i, _) in yaml.match_indices(prefix) {
                let rest = &yaml[i..];
                let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
                if let Some(close) = line.find('}') {
                    found.push((Span { start: fm.start + i, end: fm.start + i + close + 1 }, Kind::Reference));
                }
            }
        }
    }
    // Sorted, without overlaps (the first of overlapping tokens wins: a name inside a tag
    // starts after its delimiter), each on one line.
    found.sort_by_key(|(s, _)| (s.start, s.end));
    let mut data = Vec::with_capacity(found.len());
    let (mut last_line, mut last_start, mut covered) = (0u32, 0u32, 0usize);
    for (span, kind) in found {
        if span.start < covered || span.start >= span.end {
            continue;
        }
        covered = span.end;
        for part in lines(text, span) {
            let start = doc.index.position(text, part.start);
            let end = doc.index.position(text, part.end);
            if end.character <= start.character {
                continue;
            }
            let delta_line = start.line - last_line;
            let delta_start = if delta_line == 0 { start.character - last_start } else { start.character };
            data.push(SemanticToken {
                delta_line,
                delta_start,
                length: end.character - start.character,
                token_type: kind as u32,
                token_modifiers_bitset: 0,
            });
            (last_line, last_start) = (start.line, start.character);
        }
    }
    SemanticTokens { result_id: None, data }
}

/// The parts of `span` on each line of `text` (line breaks excluded).
fn lines(text: &str, span: Span) -> Vec<Span> {
    let mut out = Vec::new();
    let mut at = span.start;
    for piece in text[span.start..span.end].split_inclusive('\n') {
        let bare = piece.trim_end_matches(['\n', '\r']);
        out.push(Span { start: at, end: at + bare.len() });
        at += piece.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Encoding;

    /// The tokens of `text` decoded back to (line, start, length, type name).
    fn decoded(text: &str, encoding: Encoding) -> Vec<(u32, u32, u32, &'static str)> {
        let path = std::env::temp_dir().join("prompty-lsp-tokens.prompty");
        let mut d = Document::new(crate::document::path_to_uri(&path), text.to_owned(), 1, encoding);
        d.analysis = crate::analysis::analyze(text, Some(&path), &[]);
        let names = ["keyword", "operator", "comment", "parameter", "variable", "property", "function", "macro"];
        let (mut line, mut start) = (0, 0);
        semantic_tokens(&d)
            .data
            .iter()
            .map(|t| {
                line += t.delta_line;
                start = if t.delta_line == 0 { start + t.delta_start } else { t.delta_start };
                (line, start, t.length, names[t.token_type as usize])
            })
            .collect()
    }

    #[test]
    fn mustache_comments_and_triple_braces() {
        let text = "---\ninputs: [a]\ntemplate: {format: mustache}\n---\n{{! note }}{{{ a }}}";
        assert_eq!(
            decoded(text, Encoding::Utf16),
            [(4, 0, 11, "comment"), (4, 11, 3, "operator"), (4, 15, 1, "parameter"), (4, 17, 3, "operator")]
        );
    }

    #[test]
    fn legend_names_every_type_in_order() {
        let names: Vec<String> = legend().token_types.iter().map(|t| t.as_str().to_owned()).collect();
        assert_eq!(names, ["keyword", "operator", "comment", "parameter", "variable", "property", "function", "macro"]);
    }

    #[test]
    fn markers_tags_names_comments_and_references() {
        let text = "---\nmodel:\n  id: ${env:MODEL:gpt}\ninputs: [user]\n---\nsystem:\n{# a\nnote #}\nuser:\nHé {{- user.name | upper -}}{% for x in user.tags %}{{ x }}{% endfor %}\n";
        assert_eq!(
            decoded(text, Encoding::Utf16),
            [
                (2, 6, 16, "macro"),
                (5, 0, 6, "keyword"),
                (6, 0, 4, "comment"),
                (7, 0, 7, "comment"),
                (8, 0, 4, "keyword"),
                (9, 3, 3, "operator"),
                (9, 7, 4, "parameter"),
                (9, 12, 4, "property"),
                (9, 19, 5, "function"),
                (9, 25, 3, "operator"),
                (9, 28, 2, "operator"),
                (9, 40, 4, "parameter"),
                (9, 45, 4, "property"),
                (9, 50, 2, "operator"),
                (9, 52, 2, "operator"),
                (9, 57, 2, "operator"),
                (9, 59, 2, "operator"),
                (9, 69, 2, "operator"),
            ]
        );
        // UTF-8 positions count `é` as two bytes.
        let utf8 = decoded(text, Encoding::Utf8);
        assert_eq!(utf8[5], (9, 4, 3, "operator"));
        // A name bound in the template (a loop variable) is no input; an undeclared one is a variable.
        let text = "---\ninputs: [a]\n---\n{{ a }}{{ b }}";
        assert_eq!(
            &decoded(text, Encoding::Utf16)[..],
            [
                (3, 0, 2, "operator"),
                (3, 3, 1, "parameter"),
                (3, 5, 2, "operator"),
                (3, 7, 2, "operator"),
                (3, 10, 1, "variable"),
                (3, 12, 2, "operator"),
            ]
        );
    }
}
