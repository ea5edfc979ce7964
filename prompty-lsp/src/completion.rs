//! Completion: what may be written at the cursor.
//!
//! - In a template tag (`{{ }}`, `{% %}`; mustache `{{ }}`): the declared inputs; after `name.`
//!   the declared `properties` of an object input (through `for` loop variables over an array
//!   input's `items` too); after `|` the Jinja filters; after `is` the tests. Read from the text
//!   before the cursor inside the tag, so it works while the template does not parse.
//! - In the frontmatter: the keys of the mapping at the cursor ([`crate::schema`]) not yet
//!   written there; the values of `kind`, `provider`, `apiType` (the chosen provider's),
//!   `format`, booleans, the tools' names for `toolChoice`.
//! - In the body, at a line's start: the role markers.
//!
//! Every item replaces the word being typed (a `textEdit` over its range).

use crate::document::Document;
use crate::schema::{self, Section, Values};
use crate::yaml_path::{self, Slot};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionResponse, CompletionTextEdit, Documentation, MarkupContent,
    MarkupKind, TextEdit,
};
use prompty_core::analysis::Span;
use prompty_core::{Agent, Property, PropertyKind, Role};

/// The characters after which a client asks for completion.
pub const TRIGGERS: &[&str] = &["{", " ", ".", "|", ":"];

/// The role markers offered at a line's start (the roles [`prompty_core::marker::head`] reads).
const ROLES: [Role; 4] = [Role::System, Role::User, Role::Assistant, Role::Developer];

/// The completion items at byte `offset` of `doc`.
pub fn completion(doc: &Document, offset: usize) -> Option<CompletionResponse> {
    let offset = offset.min(doc.text.len());
    if !doc.text.is_char_boundary(offset) {
        return None;
    }
    let items = match schema::frontmatter(doc) {
        Some(fm) if fm.start <= offset && offset <= fm.end => frontmatter(doc, fm, offset),
        _ => match doc.analysis.outline.tag_at(offset) {
            Some(tag) => template(doc, tag, offset),
            None => markers(doc, offset),
        },
    };
    (!items.is_empty()).then_some(CompletionResponse::Array(items))
}

/// The span of the word that ends at `offset` (of the characters `word`), up to the end of the
/// word it is in.
pub(crate) fn typed(text: &str, offset: usize, word: impl Fn(char) -> bool) -> Span {
    let start = text[..offset].char_indices().rev().take_while(|(_, c)| word(*c)).last().map_or(offset, |(i, _)| i);
    let end = text[offset..].find(|c: char| !word(c)).map_or(text.len(), |i| offset + i);
    Span { start, end }
}

/// A letter, digit or `_`: a template name.
pub(crate) fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A character of a YAML word (a key, a kind, a model id).
fn yaml_word(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '$')
}

fn item(
    doc: &Document,
    span: Span,
    label: &str,
    insert: String,
    kind: CompletionItemKind,
    detail: Option<String>,
    documentation: Option<String>,
) -> CompletionItem {
    CompletionItem {
        label: label.to_owned(),
        kind: Some(kind),
        detail,
        documentation: documentation
            .filter(|d| !d.is_empty())
            .map(|d| Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value: d })),
        text_edit: Some(CompletionTextEdit::Edit(TextEdit { range: doc.range(span), new_text: insert })),
        ..CompletionItem::default()
    }
}

// ---- the frontmatter ----

fn frontmatter(doc: &Document, fm: Span, offset: usize) -> Vec<CompletionItem> {
    let yaml = &doc.text[fm.start..fm.end];
    let at = offset - fm.start;
    let context = yaml_path::context(yaml, at);
    let Some(section) = schema::section(&context.path) else { return Vec::new() };
    let present = schema::entries(yaml, at);
    let kind = present.iter().find(|(k, _)| k == "kind").map(|(_, v)| v.as_str());
    let word = typed(yaml, at, yaml_word);
    let span = Span { start: fm.start + word.start, end: fm.start + word.end };
    match context.slot {
        Slot::Key => {
            let line_rest = &yaml[word.end..];
            let has_colon = line_rest.starts_with(':');
            let provider = match section {
                Section::Options => schema::written_provider(doc, yaml, at),
                _ => None,
            };
            schema::keys(section, kind)
                .into_iter()
                .filter(|k| !present.iter().any(|(p, _)| p == k.name))
                .map(|k| {
                    let insert = if has_colon { k.name.to_owned() } else { format!("{}: ", k.name) };
                    let detail = match section {
                        Section::Options => Some(options_detail(provider.as_deref(), k.name)),
                        _ => None,
                    };
                    item(doc, span, k.name, insert, CompletionItemKind::PROPERTY, detail, Some(k.doc.to_owned()))
                })
                .collect()
        }
        Slot::Value(key) => {
            // Also the shorthands `format: mustache`, `items: string`.
            let values = schema::find(section, kind, &key).map_or(Values::Any, |k| k.values);
            let provider = match values {
                Values::ApiTypes => schema::written_provider(doc, yaml, at),
                _ => None,
            };
            let tools = match values {
                Values::ToolChoice => schema::written_tools(doc, yaml, at),
                _ => Vec::new(),
            };
            schema::words(values, provider.as_deref(), &tools)
                .into_iter()
                .map(|(word, detail)| {
                    let kind = match values {
                        Values::Bool => CompletionItemKind::VALUE,
                        Values::ToolChoice if detail == "tool" => CompletionItemKind::FUNCTION,
                        _ => CompletionItemKind::ENUM_MEMBER,
                    };
                    let doc_text = match values {
                        Values::Providers => schema::provider(&word).map(provider_doc),
                        _ => None,
                    };
                    item(doc, span, &word, word.clone(), kind, Some(detail), doc_text)
                })
                .collect()
        }
    }
}

/// For a model option: whether the chosen provider reads it.
fn options_detail(provider: Option<&str>, key: &str) -> String {
    match provider.map(|p| (p, schema::provider(p))) {
        Some((p, Some(builtin))) if builtin.options.contains(&key) => format!("read by {p}"),
        Some((p, Some(_))) => format!("not read by {p}"),
        _ => "model option".to_owned(),
    }
}

/// What a built-in provider serves and reads, in markdown.
pub(crate) fn provider_doc(p: &prompty_core::analysis::BuiltinProvider) -> String {
    let quoted = |l: &[&str]| l.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ");
    format!("API types: {}\n\nOptions: {}", quoted(p.api_types), quoted(p.options))
}

// ---- the template ----

/// What the text before the cursor in a tag asks for.
#[derive(Debug, PartialEq)]
enum Want<'a> {
    /// An input (or a property after the dotted names).
    Name(Vec<&'a str>),
    /// A filter.
    Filter,
    /// A test.
    Test,
    /// Nothing (a comment, a string).
    Nothing,
}

/// The dotted names that end at byte `end` of `text` (`user.address.` before `city`): `end` is
/// just after a `.`; `user`, `address`.
pub(crate) fn chain_before(text: &str, end: usize) -> Vec<&str> {
    let mut chain = Vec::new();
    let mut at = end;
    while text[..at].ends_with('.') {
        let dot = at - 1;
        let start = text[..dot].char_indices().rev().take_while(|(_, c)| ident(*c)).last().map_or(dot, |(i, _)| i);
        if start == dot {
            break;
        }
        chain.push(&text[start..dot]);
        at = start;
    }
    chain.reverse();
    chain
}

/// What is asked for by `before`, the text of a tag from its delimiter to the start of the word
/// being typed.
fn want<'a>(before: &'a str, mustache: bool) -> Want<'a> {
    if before.starts_with("{#") || before.starts_with("{{!") {
        return Want::Nothing;
    }
    // In a string: an odd number of quotes before.
    if before.matches('"').count() % 2 == 1 || (!mustache && before.matches('\'').count() % 2 == 1) {
        return Want::Nothing;
    }
    if before.ends_with('.') {
        let chain = chain_before(before, before.len());
        return if chain.is_empty() { Want::Nothing } else { Want::Name(chain) };
    }
    if mustache {
        return Want::Name(Vec::new());
    }
    let trimmed = before.trim_end();
    if trimmed.ends_with('|') && !trimmed.ends_with("||") {
        return Want::Filter;
    }
    let mut words = trimmed.rsplit(|c: char| !ident(c));
    match (words.next(), words.next()) {
        (Some("is"), _) | (Some("not"), Some("is")) if trimmed.len() < before.len() => Want::Test,
        _ => Want::Name(Vec::new()),
    }
}

fn template(doc: &Document, tag: Span, offset: usize) -> Vec<CompletionItem> {
    let text = &doc.text;
    let word = typed(text, offset, ident);
    let span = Span { start: word.start, end: word.end };
    let mustache = doc.analysis.format == "mustache";
    let before = &text[tag.start..word.start];
    let agent = doc.analysis.agent();
    match want(before, mustache) {
        Want::Nothing => Vec::new(),
        Want::Filter => {
            let nunjucks = doc.analysis.format == "nunjucks";
            let extra = if nunjucks { prompty_core::jinja::NUNJUCKS_FILTERS } else { &[] };
            prompty_core::jinja::FILTERS
                .iter()
                .chain(extra)
                .filter(|f| !f.starts_with("__"))
                .map(|f| {
                    let doc_text = Some(schema::filter_doc(f).to_owned());
                    item(doc, span, f, (*f).to_owned(), CompletionItemKind::FUNCTION, Some("filter".into()), doc_text)
                })
                .collect()
        }
        Want::Test => prompty_core::jinja::TESTS
            .iter()
            .filter(|t| t.chars().all(ident))
            .map(|t| {
                let doc_text = Some(schema::test_doc(t).to_owned());
                item(doc, span, t, (*t).to_owned(), CompletionItemKind::FUNCTION, Some("test".into()), doc_text)
            })
            .collect(),
        Want::Name(chain) if chain.is_empty() => {
            let inputs = agent.and_then(|a| a.inputs.as_deref()).unwrap_or_default();
            property_items(doc, span, inputs, CompletionItemKind::VARIABLE)
        }
        Want::Name(chain) => {
            let Some(agent) = agent else { return Vec::new() };
            let Some(property) = resolve(doc, agent, &chain, tag.start) else { return Vec::new() };
            property_items(doc, span, property.properties.as_deref().unwrap_or_default(), CompletionItemKind::FIELD)
        }
    }
}

/// One item per property (an input, or a property of one), its kind as the detail.
fn property_items(
    doc: &Document,
    span: Span,
    properties: &[Property],
    kind: CompletionItemKind,
) -> Vec<CompletionItem> {
    properties
        .iter()
        .map(|p| {
            item(doc, span, &p.name, p.name.clone(), kind, Some(p.kind.as_str().to_owned()), p.description.clone())
        })
        .collect()
}

/// The declared property the dotted names `chain` read (`user.address`: the property `address`
/// of the input `user`), in the template before byte `before` of `doc`: the first name is an
/// input, or a `for` loop variable over an array (whose `items` it is).
pub(crate) fn resolve<'a>(doc: &Document, agent: &'a Agent, chain: &[&str], before: usize) -> Option<&'a Property> {
    resolve_at(doc, agent, chain, before, 0)
}

fn resolve_at<'a>(
    doc: &Document,
    agent: &'a Agent,
    chain: &[&str],
    before: usize,
    depth: usize,
) -> Option<&'a Property> {
    let (head, rest) = chain.split_first()?;
    let mut property = match agent.input(head) {
        Some(p) => p,
        None if depth < 8 => {
            let (source, at) = loop_source(doc, head, before)?;
            let over = resolve_at(doc, agent, &source, at, depth + 1)?;
            match over.kind {
                PropertyKind::Array => over.items.as_deref()?,
                _ => return None,
            }
        }
        None => return None,
    };
    for name in rest {
        property = property.properties.as_ref()?.iter().find(|p| p.name == *name)?;
    }
    Some(property)
}

/// The dotted names a `{% for name in a.b %}` before byte `before` iterates over, and where the
/// tag is (the last such loop).
fn loop_source<'d>(doc: &'d Document, name: &str, before: usize) -> Option<(Vec<&'d str>, usize)> {
    let text = &doc.text;
    doc.analysis.outline.tags.iter().rev().filter(|t| t.end <= before || t.start < before).find_map(|t| {
        let inner = text[t.start..t.end].strip_prefix("{%")?;
        let inner = inner.trim_start_matches(['-', '+']).trim_start();
        let rest = inner.strip_prefix("for")?;
        let rest = rest.trim_start();
        let (target, rest) = rest.split_once(|c: char| !ident(c))?;
        if target != name {
            return None;
        }
        let source = rest.trim_start().strip_prefix("in")?.trim_start();
        let len = source.find(|c: char| !(ident(c) || c == '.')).unwrap_or(source.len());
        let chain: Vec<&str> = source[..len].split('.').collect();
        (!chain.iter().any(|s| s.is_empty())).then_some((chain, t.start))
    })
}

// ---- the body ----

fn markers(doc: &Document, offset: usize) -> Vec<CompletionItem> {
    let body = doc.analysis.outline.body;
    if offset < body.start {
        return Vec::new();
    }
    let text = &doc.text;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1).max(body.start);
    let before = &text[line_start..offset];
    let head = before.trim_start();
    let head = head.strip_prefix('#').map_or(head, str::trim_start);
    if !head.chars().all(|c| c.is_ascii_alphabetic()) {
        return Vec::new();
    }
    let word = typed(text, offset, |c| c.is_ascii_alphabetic());
    let line_end = text[word.end..].find('\n').map_or(text.len(), |i| word.end + i);
    let has_colon = text[word.end..line_end].trim_start().starts_with(':');
    ROLES
        .iter()
        .map(|role| {
            let name = role.as_str();
            let insert = if has_colon { name.to_owned() } else { format!("{name}:") };
            let what = match role {
                Role::System => "Starts a system message: the author's instructions.",
                Role::User => "Starts a user message.",
                Role::Assistant => "Starts an assistant message: what the model said.",
                _ => "Starts a developer message: the author's instructions (newer OpenAI models).",
            };
            item(
                doc,
                word,
                &format!("{name}:"),
                insert,
                CompletionItemKind::KEYWORD,
                Some("role marker".into()),
                Some(what.into()),
            )
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::position::Encoding;

    /// A document of `text` (a `‸` marks the cursor, removed), analyzed, and the cursor's offset.
    pub(crate) fn doc_at(text: &str) -> (Document, usize) {
        let offset = text.find('‸').expect("a cursor");
        let text = text.replacen('‸', "", 1);
        let uri: lsp_types::Uri = "untitled:Untitled-1".parse().unwrap();
        let mut doc = Document::new(uri, text, 1, Encoding::Utf16);
        doc.analysis = crate::analysis::analyze(&doc.text, None, &[]);
        (doc, offset)
    }

    fn labels(text: &str) -> Vec<String> {
        let (doc, offset) = doc_at(text);
        match completion(&doc, offset) {
            Some(CompletionResponse::Array(items)) => items.into_iter().map(|i| i.label).collect(),
            Some(CompletionResponse::List(l)) => l.items.into_iter().map(|i| i.label).collect(),
            None => Vec::new(),
        }
    }

    fn edit(text: &str, label: &str) -> (String, lsp_types::Range) {
        let (doc, offset) = doc_at(text);
        let Some(CompletionResponse::Array(items)) = completion(&doc, offset) else { panic!("no items") };
        let item = items.into_iter().find(|i| i.label == label).expect(label);
        let Some(CompletionTextEdit::Edit(e)) = item.text_edit else { panic!() };
        (e.new_text, e.range)
    }

    const PROMPT: &str = "---\ninputs:\n  - name: user\n    kind: object\n    description: Who asks\n    properties:\n      - name: name\n        kind: string\n      - name: address\n        kind: object\n        properties:\n          - name: city\n  - name: orders\n    kind: array\n    items:\n      kind: object\n      properties:\n        - name: id\n          kind: integer\n  - name: q\n---\nuser:\n";

    #[test]
    fn inputs_in_tags_even_when_the_template_does_not_parse() {
        assert_eq!(labels(&format!("{PROMPT}{{{{ ‸")), ["user", "orders", "q"]);
        assert_eq!(labels(&format!("{PROMPT}{{{{ us‸ }}}}")), ["user", "orders", "q"]);
        assert_eq!(labels(&format!("{PROMPT}{{% if ‸")), ["user", "orders", "q"]);
        assert!(labels(&format!("{PROMPT}{{# ‸")).is_empty());
        assert!(labels(&format!("{PROMPT}{{{{ \"a ‸")).is_empty());
        let (new_text, range) = edit(&format!("{PROMPT}{{{{ us‸ }}}}"), "user");
        assert_eq!(new_text, "user");
        assert_eq!((range.start.line, range.start.character, range.end.character), (22, 3, 5));
        let (doc, offset) = doc_at(&format!("{PROMPT}{{{{ ‸ }}}}"));
        let Some(CompletionResponse::Array(items)) = completion(&doc, offset) else { panic!() };
        assert_eq!(items[0].detail.as_deref(), Some("object"));
        assert_eq!(items[0].kind, Some(CompletionItemKind::VARIABLE));
    }

    #[test]
    fn properties_after_a_dot() {
        assert_eq!(labels(&format!("{PROMPT}{{{{ user.‸")), ["name", "address"]);
        assert_eq!(labels(&format!("{PROMPT}{{{{ user.address.ci‸")), ["city"]);
        assert_eq!(labels(&format!("{PROMPT}{{% for o in orders %}}{{{{ o.‸ }}}}{{% endfor %}}")), ["id"]);
        assert!(labels(&format!("{PROMPT}{{{{ q.‸")).is_empty());
        assert!(labels(&format!("{PROMPT}{{{{ nobody.‸")).is_empty());
    }

    #[test]
    fn filters_and_tests() {
        let filters = labels(&format!("{PROMPT}{{{{ q | up‸"));
        assert_eq!(filters.len(), prompty_core::jinja::FILTERS.len());
        assert!(filters.contains(&"upper".to_owned()) && !filters.contains(&"dump".to_owned()));
        let tests = labels(&format!("{PROMPT}{{% if q is ‸"));
        assert!(tests.contains(&"defined".to_owned()) && !tests.contains(&"==".to_owned()));
        assert_eq!(labels(&format!("{PROMPT}{{% if q is not de‸")), tests);
        assert_eq!(labels(&format!("{PROMPT}{{% if q or ‸")), ["user", "orders", "q"]);
    }

    #[test]
    fn role_markers_at_a_lines_start() {
        let text = "---\nname: x\n---\nsystem:\nHi\nus‸";
        assert_eq!(labels(text), ["system:", "user:", "assistant:", "developer:"]);
        let (new_text, range) = edit(text, "user:");
        assert_eq!((new_text.as_str(), range.start.character, range.end.character), ("user:", 0, 2));
        assert!(labels("---\nname: x\n---\nHello wo‸").is_empty());
    }

    #[test]
    fn frontmatter_keys_and_values() {
        assert_eq!(labels("---\nmodel:\n  id: x\n  ‸\n---\n"), ["provider", "apiType", "connection", "options"]);
        assert_eq!(labels("---\nmodel:\n  provider: ‸\n---\n"), ["openai", "azure", "foundry", "anthropic", "local"]);
        assert_eq!(labels("---\nmodel:\n  provider: anthropic\n  apiType: ‸\n---\n"), ["chat"]);
        assert_eq!(labels("---\nmodel:\n  provider: local\n  options:\n    top‸\n---\n").len(), 12);
        assert_eq!(labels("---\ninputs:\n  city: {kind: str‸}\n---\n")[0], "string");
        assert_eq!(labels("---\ntools:\n  - name: a\n    kind: ‸\n---\n"), ["function", "mcp", "openapi", "prompty"]);
        assert_eq!(labels("---\ntemplate:\n  format: ‸\n---\n"), ["jinja2", "jinja", "nunjucks", "mustache"]);
        assert_eq!(labels("---\ninputs:\n  - name: a\n    required: ‸\n---\n"), ["true", "false"]);
        assert_eq!(
            labels(
                "---\nmodel:\n  options:\n    toolChoice: ‸\ntools:\n  - name: get_weather\n    kind: function\n---\n"
            ),
            ["auto", "none", "required", "get_weather"]
        );
        // A frontmatter being written (no closing line yet).
        assert_eq!(labels("---\nmodel:\n  provider: openai\n  ap‸"), ["id", "apiType", "connection", "options"]);
        let (new_text, _) = edit("---\nna‸\n---\n", "name");
        assert_eq!(new_text, "name: ");
        assert!(labels("---\nmetadata:\n  ‸\n---\n").is_empty());
    }

    #[test]
    fn mustache_names_and_properties() {
        let text = "---\ntemplate: {format: mustache}\ninputs:\n  - name: user\n    kind: object\n    properties: [{name: email}]\n---\n{{#user}}{{‸";
        assert_eq!(labels(text), ["user"]);
        let text = "---\ntemplate: {format: mustache}\ninputs:\n  - name: user\n    kind: object\n    properties: [{name: email}]\n---\n{{ user.‸";
        assert_eq!(labels(text), ["email"]);
    }

    #[test]
    fn connection_keys_follow_the_kind() {
        assert_eq!(
            labels("---\nmodel:\n  connection:\n    kind: key\n    ‸\n---\n"),
            ["authenticationMode", "usageDescription", "maxTokensField", "structuredOutput", "endpoint", "apiKey"]
        );
        assert_eq!(
            labels("---\ntools:\n  - name: t\n    kind: mcp\n    connection: {kind: ‸}\n---\n"),
            prompty_core::Connection::KINDS
        );
        assert_eq!(
            labels("---\ntools:\n  - name: t\n    kind: prompty\n    ‸\n---\n"),
            ["description", "bindings", "path", "mode"]
        );
        assert_eq!(labels("---\ntools:\n  - name: t\n    kind: prompty\n    mode: ‸\n---\n"), ["single", "agentic"]);
    }
}
