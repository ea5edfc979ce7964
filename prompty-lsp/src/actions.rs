//! Quick fixes: for every diagnostic that suggests a name ("did you mean `x`?", whichever rule
//! found it: undeclared variables, unknown filters and tests, property typos, misspelt role
//! markers, model options, connection keys and kinds, providers, API types, kinds, bindings,
//! `toolChoice`, template keys), an edit that writes the suggestion over the misspelt word; for a
//! variable no input declares, an edit that declares it as an input, in the form the file's
//! `inputs:` is written in.
//!
//! The misspelt word and its replacement are the analysis' own [`prompty_core::analysis::Fix`] of
//! the diagnostic, the one `prompty check` knows.

use crate::document::Document;
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Diagnostic as LspDiagnostic, TextEdit, WorkspaceEdit,
};
use prompty_core::analysis::Span;
use std::collections::HashMap;

/// The quick fixes for the diagnostics that overlap the bytes `span` of `doc`.
pub fn code_actions(doc: &Document, span: Span) -> Vec<CodeActionOrCommand> {
    let analysis = &doc.analysis;
    let own = analysis.report.iter().flat_map(|r| r.diagnostics.iter());
    let mismatches = analysis.variant.iter().flat_map(|v| v.mismatches.iter());
    // The protocol's diagnostics are made from the same list, in the same order.
    let published = crate::diagnostics::diagnostics(doc);
    let mut out = Vec::new();
    for (d, lsp) in own.chain(mismatches).zip(published) {
        if d.file != analysis.display {
            continue;
        }
        let at = d.fix.as_ref().map(|f| f.span).or(d.span);
        let at = at.unwrap_or_else(|| crate::diagnostics::own_span(doc, d.line, d.column));
        if !(at.start <= span.end && span.start <= at.end) {
            continue;
        }
        let mut fixes = Vec::new();
        if let Some(fix) = &d.fix {
            let title = format!("Change to `{}`", fix.replacement);
            fixes.push(action(doc, title, vec![edit(doc, fix.span, &fix.replacement)], &lsp));
        }
        if d.code == "undeclared-variable" {
            if let Some(name) = quoted(&d.message).into_iter().next() {
                if let Some(edit) = declare(doc, name) {
                    fixes.push(action(doc, format!("Declare `{name}` as an input"), vec![edit], &lsp));
                }
            }
        }
        if let Some(CodeActionOrCommand::CodeAction(best)) = fixes.first_mut() {
            best.is_preferred = Some(true);
        }
        out.extend(fixes);
    }
    out
}

fn action(doc: &Document, title: String, edits: Vec<TextEdit>, diagnostic: &LspDiagnostic) -> CodeActionOrCommand {
    // The protocol's own map type (keyed by `Uri`, whose cached parts clippy takes for mutability).
    #[allow(clippy::mutable_key_type)]
    let changes = HashMap::from([(doc.uri.clone(), edits)]);
    CodeActionOrCommand::CodeAction(CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        edit: Some(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }),
        is_preferred: Some(false),
        ..CodeAction::default()
    })
}

fn edit(doc: &Document, span: Span, text: &str) -> TextEdit {
    TextEdit { range: doc.range(span), new_text: text.to_owned() }
}

/// The names quoted in backticks in `text`.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The edit that declares `name` as a string input: in `inputs:` as it is written (a block
/// mapping, a block list, a flow list or mapping), else in a new `inputs:` section (in a new
/// frontmatter when the file has none).
fn declare(doc: &Document, name: &str) -> Option<TextEdit> {
    let (at, text) = insertion(doc, name)?;
    // The file's line breaks.
    let text = if doc.text.contains("\r\n") { text.replace('\n', "\r\n") } else { text };
    Some(edit(doc, Span { start: at, end: at }, &text))
}

/// Where to insert what declares `name` (see [`declare`]); none when `inputs:` is written in a
/// way no edit can extend (a `${file:}` reference).
fn insertion(doc: &Document, name: &str) -> Option<(usize, String)> {
    let text = &doc.text;
    let Some(fm) = doc.analysis.outline.frontmatter else {
        return Some((0, format!("---\ninputs:\n  {name}:\n    kind: string\n---\n")));
    };
    let yaml = &text[fm.start..fm.end];
    let lines = line_spans(yaml, fm.start);
    let unit = lines
        .iter()
        .map(|l| &text[l.start..l.end])
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .find(|&n| n > 0)
        .unwrap_or(2);
    let pad = |n: usize| " ".repeat(n);
    let Some(header) = lines.iter().position(|l| {
        let line = &text[l.start..l.end];
        line.strip_prefix("inputs").is_some_and(|r| r.trim_start().starts_with(':'))
    }) else {
        // No `inputs:`: a new section at the frontmatter's end.
        let newline = if yaml.is_empty() || yaml.ends_with('\n') { "" } else { "\n" };
        let section = format!("{newline}inputs:\n{}{name}:\n{}kind: string\n", pad(unit), pad(2 * unit));
        return Some((fm.end, section));
    };
    let head = lines[header];
    let line = &text[head.start..head.end];
    let after = line[line.find(':').map_or(line.len(), |i| i + 1)..].split(" #").next().unwrap_or("").trim_end();
    let value = after.trim_start();
    if let Some(flow) = value.strip_prefix('[') {
        // `inputs: [a, b]`: the new name before the `]`.
        let close = head.start + line.rfind(']').unwrap_or(line.len());
        let items = flow.trim_end().trim_end_matches(']').trim();
        let insert = if items.is_empty() { name.to_owned() } else { format!(", {name}") };
        let at = if items.is_empty() { close } else { head.start + line[..close - head.start].trim_end().len() };
        return Some((at, insert));
    }
    if value.starts_with('{') {
        let close = head.start + line.rfind('}').unwrap_or(line.len());
        let empty = value.trim_start_matches('{').trim_start().starts_with('}');
        let entry = format!("{name}: {{kind: string}}");
        let insert = if empty { entry } else { format!(", {entry}") };
        let at = if empty { close } else { head.start + line[..close - head.start].trim_end().len() };
        return Some((at, insert));
    }
    if !value.is_empty() {
        return None;
    }
    // Block style: the children are the deeper lines below.
    let mut children: Vec<Span> = Vec::new();
    for l in &lines[header + 1..] {
        let child = &text[l.start..l.end];
        let t = child.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if child.len() - t.len() == 0 {
            break;
        }
        children.push(*l);
    }
    let Some(first) = children.first().map(|l| &text[l.start..l.end]) else {
        // `inputs:` with nothing in it.
        let block = format!("{}{name}:\n{}kind: string\n", pad(unit), pad(2 * unit));
        return Some(match next_line(text, head.end, fm.end) {
            Some(at) => (at, block),
            None => (head.end, format!("\n{block}")),
        });
    };
    let indent = first.len() - first.trim_start_matches(' ').len();
    let last = children.last().map_or(head.end, |l| l.end);
    let (at, newline) = next_line(text, last, fm.end).map_or((last, "\n"), |at| (at, ""));
    let trimmed = first.trim_start();
    let block = if let Some(item) = trimmed.strip_prefix("- ").or(trimmed.strip_prefix('-').filter(|r| r.is_empty())) {
        // A block list: `- name: x` items (or bare names).
        let key_indent = indent + 2;
        if item.contains(':') {
            format!("{}- name: {name}\n{}kind: string\n", pad(indent), pad(key_indent))
        } else {
            format!("{}- {name}\n", pad(indent))
        }
    } else if trimmed.split_once(':').is_some_and(|(_, v)| v.trim_start().starts_with('{')) {
        format!("{}{name}: {{kind: string}}\n", pad(indent))
    } else {
        let deeper = children
            .get(1)
            .map(|l| &text[l.start..l.end])
            .map(|l| l.len() - l.trim_start_matches(' ').len())
            .filter(|&n| n > indent)
            .unwrap_or(indent + unit);
        format!("{}{name}:\n{}kind: string\n", pad(indent), pad(deeper))
    };
    Some((at, format!("{newline}{block}")))
}

/// The start of the line after the one that ends at `end` (before `limit`).
fn next_line(text: &str, end: usize, limit: usize) -> Option<usize> {
    let at = end + text[end..limit].find('\n')? + 1;
    Some(at)
}

/// The spans of the lines of `text` (without their line breaks), offset by `base`.
fn line_spans(text: &str, base: usize) -> Vec<Span> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        out.push(Span { start: base + at, end: base + at + bare.len() });
        at += line.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Encoding;

    fn doc(text: &str) -> Document {
        let path = std::env::temp_dir().join("prompty-lsp-actions").join("a.prompty");
        let mut d = Document::new(crate::document::path_to_uri(&path), text.to_owned(), 1, Encoding::Utf16);
        d.analysis = crate::analysis::analyze(text, Some(&path), &[]);
        d
    }

    /// The actions for the whole document: (title, preferred, edits applied to the text).
    fn fixes(text: &str) -> Vec<(String, bool, String)> {
        let d = doc(text);
        code_actions(&d, Span { start: 0, end: text.len() })
            .into_iter()
            .map(|a| {
                let CodeActionOrCommand::CodeAction(a) = a else { panic!() };
                assert_eq!(a.kind, Some(CodeActionKind::QUICKFIX));
                assert_eq!(a.diagnostics.as_ref().map(Vec::len), Some(1));
                let edits = a.edit.unwrap().changes.unwrap().remove(&d.uri).unwrap();
                (a.title, a.is_preferred == Some(true), apply(&d, edits))
            })
            .collect()
    }

    fn apply(d: &Document, mut edits: Vec<TextEdit>) -> String {
        edits.sort_by_key(|e| std::cmp::Reverse(d.offset(e.range.start)));
        let mut text = d.text.clone();
        for e in edits {
            let span = d.index.span(&d.text, e.range);
            text.replace_range(span.start..span.end, &e.new_text);
        }
        text
    }

    /// The codes of the diagnostics of `text`.
    fn codes(text: &str) -> Vec<&'static str> {
        let d = doc(text);
        d.analysis.report.unwrap().diagnostics.iter().map(|d| d.code).collect()
    }

    /// Every "did you mean" rule: the fix writes the suggestion over the misspelt word, and the
    /// fixed file has no diagnostic of that rule left.
    #[test]
    fn every_suggestion_is_a_fix_over_the_misspelt_word() {
        let q = "inputs:\n  question: {kind: string}\n";
        let cases: Vec<(&str, String, &str, &str)> = vec![
            ("undeclared-variable", format!("---\n{q}---\nuser:\n{{{{ questoin }}}}\n"), "questoin", "question"),
            ("unknown-jinja-function", format!("---\n{q}---\nuser:\n{{{{ question | upcase }}}}\n"), "upcase", "upper"),
            (
                "unknown-jinja-function",
                format!("---\n{q}---\nuser:\n{{% if question is defind %}}x{{% endif %}}\n"),
                "defind",
                "defined",
            ),
            (
                "unknown-property",
                "---\ninputs:\n  user:\n    kind: object\n    properties:\n      - name: email\n        kind: string\n---\nuser:\n{{ user.emial }}\n".to_owned(),
                "emial",
                "email",
            ),
            ("misspelt-role-marker", format!("---\n{q}---\nusr:\n{{{{ question }}}}\n"), "usr", "user"),
            ("unknown-kind", "---\ninputs:\n  question: {kind: strng}\n---\nuser:\n{{ question }}\n".to_owned(), "strng", "string"),
            ("unknown-kind", "---\ninputs:\n  - name: question\n    kind: strng\n---\nuser:\n{{ question }}\n".to_owned(), "strng", "string"),
            (
                "unknown-model-option",
                format!("---\nmodel:\n  provider: openai\n  options:\n    temprature: 1\n{q}---\nuser:\n{{{{ question }}}}\n"),
                "temprature",
                "temperature",
            ),
            (
                "unknown-provider",
                format!("---\nmodel:\n  provider: opnai\n{q}---\nuser:\n{{{{ question }}}}\n"),
                "opnai",
                "openai",
            ),
            (
                "provider-key-case",
                format!("---\nmodel:\n  provider: OpenAI\n{q}---\nuser:\n{{{{ question }}}}\n"),
                "OpenAI",
                "openai",
            ),
            (
                "unknown-api-type",
                format!("---\nmodel:\n  provider: openai\n  apiType: chta\n{q}---\nuser:\n{{{{ question }}}}\n"),
                "chta",
                "chat",
            ),
            (
                "unknown-connection-key",
                format!("---\nmodel:\n  provider: openai\n  connection:\n    kind: key\n    endpoit: https://x\n{q}---\nuser:\n{{{{ question }}}}\n"),
                "endpoit",
                "endpoint",
            ),
            (
                "unknown-connection-kind",
                format!("---\nmodel:\n  connection: {{kind: referenc, name: x}}\n{q}---\nuser:\n{{{{ question }}}}\n"),
                "referenc",
                "reference",
            ),
            (
                "template-key-case",
                format!("---\ntemplate:\n  format: Jinja2\n{q}---\nuser:\n{{{{ question }}}}\n"),
                "Jinja2",
                "jinja2",
            ),
            (
                "unknown-tool-choice",
                format!("---\nmodel:\n  options:\n    toolChoice: get_weathr\ntools:\n  - name: get_weather\n    kind: function\n{q}---\nuser:\n{{{{ question }}}}\n"),
                "get_weathr",
                "get_weather",
            ),
            (
                "binding-undeclared-input",
                format!("---\n{q}tools:\n  - name: search\n    kind: function\n    parameters:\n      - name: query\n        kind: string\n    bindings:\n      query:\n        input: questoin\n---\nuser:\n{{{{ question }}}}\n"),
                "questoin",
                "question",
            ),
            (
                "binding-unknown-parameter",
                format!("---\n{q}tools:\n  - name: search\n    kind: function\n    parameters:\n      - name: query\n        kind: string\n    bindings:\n      qeury:\n        input: question\n---\nuser:\n{{{{ question }}}}\n"),
                "qeury",
                "query",
            ),
        ];
        for (code, text, wrong, right) in cases {
            assert!(codes(&text).contains(&code), "{code}: {:?}\n{text}", codes(&text));
            let d = doc(&text);
            let report = d.analysis.report.as_ref().unwrap();
            let span = report.diagnostics.iter().find(|d| d.code == code).and_then(|d| d.span).unwrap();
            // The diagnostic (so its published range) covers exactly the misspelt word.
            assert_eq!(&text[span.start..span.end], wrong, "{code}");
            let found = fixes(&text);
            let title = format!("Change to `{right}`");
            let (_, preferred, fixed) =
                found.iter().find(|f| f.0 == title).unwrap_or_else(|| panic!("{code}: {found:?}"));
            assert!(preferred, "{code}");
            let at = text.find(wrong).unwrap();
            let expected = format!("{}{right}{}", &text[..at], &text[at + wrong.len()..]);
            assert_eq!(fixed, &expected, "{code}");
            assert!(!codes(fixed).contains(&code), "{code}: {:?}", codes(fixed));
        }
    }

    /// Declaring an undeclared variable, in every form `inputs:` is written in: the fixed file
    /// has no error.
    #[test]
    fn declaring_an_input_in_every_form() {
        let body = "---\nuser:\n{{ question }} {{ city }}\n";
        let cases = [
            (
                "---\ninputs:\n  question: {kind: string}\n",
                "---\ninputs:\n  question: {kind: string}\n  city: {kind: string}\n",
            ),
            (
                "---\ninputs:\n    question:\n        kind: string\n",
                "---\ninputs:\n    question:\n        kind: string\n    city:\n        kind: string\n",
            ),
            ("---\ninputs: [question]\n", "---\ninputs: [question, city]\n"),
            (
                "---\ninputs: {question: {kind: string}}\n",
                "---\ninputs: {question: {kind: string}, city: {kind: string}}\n",
            ),
            (
                "---\ninputs:\n  - name: question\n    kind: string\nname: x\n",
                "---\ninputs:\n  - name: question\n    kind: string\n  - name: city\n    kind: string\nname: x\n",
            ),
            ("---\ninputs:\n  - question\n", "---\ninputs:\n  - question\n  - city\n"),
        ];
        for (head, fixed_head) in cases {
            let text = format!("{head}{body}");
            let found = fixes(&text);
            let declare: Vec<_> = found.iter().filter(|f| f.0 == "Declare `city` as an input").collect();
            assert_eq!(declare.len(), 1, "{text}: {found:?}");
            assert!(declare[0].1, "the only fix is the preferred one");
            assert_eq!(declare[0].2, format!("{fixed_head}{body}"));
            assert_eq!(codes(&declare[0].2), Vec::<&str>::new(), "{}", declare[0].2);
        }
        // The file's line breaks are kept.
        let text = "---\r\ninputs:\r\n  - name: question\r\n---\r\nuser:\r\n{{ question }} {{ city }}\r\n";
        let found = fixes(text);
        assert_eq!(
            found[0].2,
            "---\r\ninputs:\r\n  - name: question\r\n  - name: city\r\n    kind: string\r\n---\r\nuser:\r\n{{ question }} {{ city }}\r\n"
        );
        assert!(codes(&found[0].2).is_empty(), "{:?}", codes(&found[0].2));
        // Inputs read from another file: no edit here can declare one.
        let dir = std::env::temp_dir().join("prompty-lsp-actions");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("inputs.json"), r#"[{"name": "question", "kind": "string"}]"#).unwrap();
        let text = "---\ninputs: ${file:inputs.json}\n---\nuser:\n{{ question }} {{ city }}\n";
        assert_eq!(codes(text), ["undeclared-variable"]);
        assert!(fixes(text).is_empty());
        // No `inputs:`, and no frontmatter at all.
        let text = "---\nname: x\n---\nuser:\n{{ city }}\n";
        let found = fixes(text);
        assert_eq!(found[0].2, "---\nname: x\ninputs:\n  city:\n    kind: string\n---\nuser:\n{{ city }}\n");
        assert!(codes(&found[0].2).is_empty());
        let text = "user:\n{{ city }}\n";
        let found = fixes(text);
        assert_eq!(found[0].2, "---\ninputs:\n  city:\n    kind: string\n---\nuser:\n{{ city }}\n");
        assert!(codes(&found[0].2).is_empty(), "{:?}", codes(&found[0].2));
    }

    #[test]
    fn only_the_diagnostics_in_the_range() {
        let text = "---\ninputs: [question]\n---\nuser:\n{{ questoin }}\n";
        let d = doc(text);
        assert!(code_actions(&d, Span { start: 0, end: 3 }).is_empty());
        let at = text.find("questoin").unwrap() + 2;
        let all = code_actions(&d, Span { start: at, end: at });
        let titles: Vec<String> = all
            .iter()
            .map(|a| match a {
                CodeActionOrCommand::CodeAction(a) => a.title.clone(),
                CodeActionOrCommand::Command(c) => c.title.clone(),
            })
            .collect();
        assert_eq!(titles, ["Change to `question`", "Declare `questoin` as an input"]);
    }
}
