//! Document symbols: the outline an editor shows for a `.prompty` file: `model`, `inputs` (each
//! input, with its properties), `outputs`, `tools` (each with its parameters), then one symbol per
//! message of the body (from its role marker to the line before the next one).

use crate::document::Document;
use lsp_types::{DocumentSymbol, DocumentSymbolResponse, Range, SymbolKind};
use prompty_core::analysis::Span;
use prompty_core::{Property, ToolKind};

/// How many words of a message its symbol's detail shows.
const DETAIL_WORDS: usize = 8;

/// The outline of `doc`: inputs, outputs, tools, messages.
pub fn symbols(doc: &Document) -> Option<DocumentSymbolResponse> {
    let mut out = Vec::new();
    if let (Some(agent), Some(fm)) = (doc.analysis.agent(), doc.analysis.outline.frontmatter) {
        if let Some(model) = &agent.model {
            if let Some(range) = section(doc, fm, "model") {
                let detail = [model.provider.as_deref(), Some(model.id.as_str()).filter(|s| !s.is_empty())]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" ");
                out.push(symbol("model", Some(detail), SymbolKind::MODULE, range, range, Vec::new()));
            }
        }
        for (key, props) in [("inputs", agent.inputs.as_deref()), ("outputs", agent.outputs.as_deref())] {
            let (Some(props), Some(range)) = (props, section(doc, fm, key)) else { continue };
            let children = properties(doc, fm, key, props, 0);
            out.push(symbol(key, None, SymbolKind::NAMESPACE, range, range, children));
        }
        if let (Some(tools), Some(range)) = (agent.tools.as_deref(), section(doc, fm, "tools")) {
            let mut children = Vec::new();
            for (i, tool) in tools.iter().enumerate() {
                let here = format!("tools[{i}]");
                let Some((whole, name)) = entry(doc, fm, &here, &tool.name) else { continue };
                let (kind, params) = match &tool.kind {
                    ToolKind::Function(f) => {
                        ("function", properties(doc, fm, &format!("{here}.parameters"), &f.parameters, 0))
                    }
                    ToolKind::Mcp(_) => ("mcp", Vec::new()),
                    ToolKind::OpenApi(_) => ("openapi", Vec::new()),
                    ToolKind::Prompty(_) => ("prompty", Vec::new()),
                    ToolKind::Custom(_) => ("custom", Vec::new()),
                };
                children.push(symbol(&tool.name, Some(kind.to_owned()), SymbolKind::FUNCTION, whole, name, params));
            }
            out.push(symbol("tools", None, SymbolKind::NAMESPACE, range, range, children));
        }
    }
    out.extend(messages(doc));
    Some(DocumentSymbolResponse::Nested(out))
}

/// A symbol.
fn symbol(
    name: &str,
    detail: Option<String>,
    kind: SymbolKind,
    range: Range,
    selection_range: Range,
    children: Vec<DocumentSymbol>,
) -> DocumentSymbol {
    #[allow(deprecated)]
    DocumentSymbol {
        // Clients refuse empty names.
        name: if name.is_empty() { "(unnamed)".to_owned() } else { name.to_owned() },
        detail: detail.filter(|d| !d.is_empty()),
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range,
        children: (!children.is_empty()).then_some(children),
    }
}

/// The properties `props` declared at key path `path`, with their nested properties.
fn properties(doc: &Document, fm: Span, path: &str, props: &[Property], depth: usize) -> Vec<DocumentSymbol> {
    let mut out = Vec::new();
    for (i, p) in props.iter().enumerate() {
        let here = format!("{path}[{i}]");
        let Some((whole, name)) = entry(doc, fm, &here, &p.name) else { continue };
        let nested = match &p.properties {
            Some(nested) if depth < 16 => properties(doc, fm, &format!("{here}.properties"), nested, depth + 1),
            _ => Vec::new(),
        };
        let kind = if nested.is_empty() { SymbolKind::VARIABLE } else { SymbolKind::OBJECT };
        out.push(symbol(&p.name, Some(p.kind.as_str().to_owned()), kind, whole, name, nested));
    }
    out
}

/// The range of the top-level section `key` of the frontmatter: its key's line to its last line.
fn section(doc: &Document, fm: Span, key: &str) -> Option<Range> {
    let at = doc.analysis.report.as_ref()?.locate(key);
    let start = doc.offset_of_line_column(at.line?, 1);
    if !(fm.start..fm.end).contains(&start) {
        return None;
    }
    Some(doc.range(Span { start, end: block_end(doc, fm, start, 0) }))
}

/// The entry at key path `field` (a list item or a mapping entry) and the range of its `name` on
/// its line: the whole entry's lines, and the name's.
fn entry(doc: &Document, fm: Span, field: &str, name: &str) -> Option<(Range, Range)> {
    let at = doc.analysis.report.as_ref()?.locate(field);
    let (line, column) = (at.line?, at.column?);
    let line_start = doc.offset_of_line_column(line, 1);
    let start = doc.offset_of_line_column(line, column);
    if !(fm.start..fm.end).contains(&start) {
        return None;
    }
    let line_end = doc.text[start..].find('\n').map_or(doc.text.len(), |i| start + i);
    let found = crate::definition::whole_words(&doc.text[start..line_end], name).next();
    let name_span = match found {
        Some(i) => Span { start: start + i, end: start + i + name.len() },
        None => crate::document::word_at(&doc.text, start).unwrap_or(Span { start, end: start }),
    };
    // A flow list item (`[a, b]`) is just its name; a block entry runs over its deeper lines.
    let before = &doc.text[line_start..start];
    let indent = before.len() - before.trim_start_matches(' ').len();
    let flow = before.trim_end().ends_with(['[', ',', '{']) || before.contains(": ");
    let end = if flow { name_span.end } else { block_end(doc, fm, line_start, indent) };
    Some((doc.range(Span { start: name_span.start.min(start), end: end.max(name_span.end) }), doc.range(name_span)))
}

/// The end of the block that starts on the line at `line_start`: before the next content line
/// (not blank, not a comment) indented at most `indent` (past a `- ` for list items).
fn block_end(doc: &Document, fm: Span, line_start: usize, indent: usize) -> usize {
    let first_end = doc.text[line_start..fm.end].find('\n').map_or(fm.end, |i| line_start + i);
    let mut end = first_end;
    let mut at = (first_end + 1).min(fm.end);
    while at < fm.end {
        let line_end = doc.text[at..fm.end].find('\n').map_or(fm.end, |i| at + i);
        let line = &doc.text[at..line_end];
        let trimmed = line.trim_start();
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            let own = line.len() - trimmed.len();
            if own <= indent {
                break;
            }
            end = line_end;
        }
        at = line_end + 1;
    }
    end.trim_end_cr(doc)
}

trait TrimCr {
    fn trim_end_cr(self, doc: &Document) -> usize;
}

impl TrimCr for usize {
    /// The offset before a `\r` that ends a line there.
    fn trim_end_cr(self, doc: &Document) -> usize {
        if self > 0 && doc.text.as_bytes().get(self - 1) == Some(&b'\r') {
            self - 1
        } else {
            self
        }
    }
}

/// One symbol per message: from its role marker to the line before the next marker (trailing
/// blank lines excluded), named by its role, its first words as detail.
fn messages(doc: &Document) -> Vec<DocumentSymbol> {
    let outline = &doc.analysis.outline;
    let mut out = Vec::new();
    for (i, marker) in outline.markers.iter().enumerate() {
        let next = outline.markers.get(i + 1).map_or(doc.text.len(), |m| m.line.start);
        let content = &doc.text[marker.line.end.min(next)..next];
        let end = marker.line.end + content.trim_end().len();
        let words: Vec<&str> = content.split_whitespace().take(DETAIL_WORDS + 1).collect();
        let mut detail = words.iter().take(DETAIL_WORDS).copied().collect::<Vec<_>>().join(" ");
        if words.len() > DETAIL_WORDS {
            detail.push('…');
        }
        let range = doc.range(Span { start: marker.line.start, end });
        let role = doc.text[marker.word.start..marker.word.end].to_ascii_lowercase();
        out.push(symbol(&role, Some(detail), SymbolKind::STRING, range, doc.range(marker.word), Vec::new()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Encoding;
    use lsp_types::Position;

    fn doc(text: &str) -> Document {
        let path = std::env::temp_dir().join("prompty-lsp-symbols.prompty");
        let mut d = Document::new(crate::document::path_to_uri(&path), text.to_owned(), 1, Encoding::Utf16);
        d.analysis = crate::analysis::analyze(text, Some(&path), &[]);
        d
    }

    /// (depth, name, detail, start line, end line, selection start (line, character)).
    type Row = (usize, String, String, u32, u32, (u32, u32));

    fn flat(symbols: &[DocumentSymbol], depth: usize, out: &mut Vec<Row>) {
        for s in symbols {
            let sel = s.selection_range.start;
            out.push((
                depth,
                s.name.clone(),
                s.detail.clone().unwrap_or_default(),
                s.range.start.line,
                s.range.end.line,
                (sel.line, sel.character),
            ));
            flat(s.children.as_deref().unwrap_or_default(), depth + 1, out);
        }
    }

    #[test]
    fn sections_inputs_with_properties_tools_with_parameters_and_messages() {
        let text = "---\nmodel:\n  provider: openai\n  id: gpt-4o\ninputs:\n  - name: user\n    kind: object\n    properties:\n      - name: id\n        kind: integer\n  - name: q\n    kind: string\ntools:\n  - name: weather\n    kind: function\n    parameters:\n      city: {kind: string}\n---\nsystem:\nBe brief and kind to everyone who asks you anything at all.\n\nuser:\n{{ user.id }} {{ q }}\n";
        let d = doc(text);
        assert!(d.analysis.report.as_ref().unwrap().errors().next().is_none(), "{:?}", d.analysis.report);
        let Some(DocumentSymbolResponse::Nested(symbols)) = symbols(&d) else { panic!() };
        let mut got = Vec::new();
        flat(&symbols, 0, &mut got);
        let s = |d: usize, n: &str, det: &str, a: u32, b: u32, sel: (u32, u32)| {
            (d, n.to_owned(), det.to_owned(), a, b, sel)
        };
        assert_eq!(
            got,
            [
                s(0, "model", "openai gpt-4o", 1, 3, (1, 0)),
                s(0, "inputs", "", 4, 11, (4, 0)),
                s(1, "user", "object", 5, 9, (5, 10)),
                s(2, "id", "integer", 8, 9, (8, 14)),
                s(1, "q", "string", 10, 11, (10, 10)),
                s(0, "tools", "", 12, 16, (12, 0)),
                s(1, "weather", "function", 13, 16, (13, 10)),
                s(2, "city", "string", 16, 16, (16, 6)),
                s(0, "system", "Be brief and kind to everyone who asks…", 18, 19, (18, 0)),
                s(0, "user", "{{ user.id }} {{ q }}", 21, 22, (21, 0)),
            ]
        );
        let last = symbols.last().unwrap();
        assert_eq!(last.range.end, Position::new(22, 21));
    }
}
