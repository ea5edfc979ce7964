//! Hover: what the thing under the cursor is, in markdown.
//!
//! - An input (its name in the template, or its declaration in the frontmatter): its kind,
//!   description, default, whether it is required, and the lines that use it.
//! - A property read (`user.name`): the declared property's kind and description.
//! - A tool (its declaration, or its name in `toolChoice`): its kind, description and parameters.
//! - A model option: its meaning and whether the chosen provider reads it; a provider: its API
//!   types and options; any other frontmatter key: its meaning ([`crate::schema`]).
//! - A Jinja filter or test: one line.
//!
//! The hover's range is the word's.

use crate::completion::{chain_before, ident, provider_doc, resolve, typed};
use crate::document::Document;
use crate::schema::{self, Section};
use crate::yaml_path::{self, Slot};
use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind};
use prompty_core::analysis::{NameKind, Span};
use prompty_core::{Agent, Property, Tool, ToolKind};

/// What to show for the thing at byte `offset` of `doc`.
pub fn hover(doc: &Document, offset: usize) -> Option<Hover> {
    let offset = offset.min(doc.text.len());
    if !doc.text.is_char_boundary(offset) {
        return None;
    }
    let (span, markdown) = match schema::frontmatter(doc) {
        Some(fm) if fm.start <= offset && offset <= fm.end => frontmatter(doc, fm, offset)?,
        _ => template(doc, offset)?,
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: markdown }),
        range: Some(doc.range(span)),
    })
}

// ---- the template ----

fn template(doc: &Document, offset: usize) -> Option<(Span, String)> {
    let outline = &doc.analysis.outline;
    let agent = doc.analysis.agent();
    if let Some(name) = outline.name_at(offset) {
        let text = match &name.kind {
            NameKind::Input => match agent.and_then(|a| a.input(&name.name)) {
                Some(input) => input_markdown(doc, input),
                None => format!("**{}**\n\nNo input declares it.", name.name),
            },
            NameKind::Property { root } => {
                let agent = agent?;
                let chain = chain_before(&doc.text, name.span.start);
                let mut path: Vec<&str> = chain.clone();
                path.push(&name.name);
                let property = resolve(doc, agent, &path, name.span.start)
                    .or_else(|| through_alias(agent.input(root)?, path.get(1..)?))?;
                let shown = if chain.is_empty() { name.name.clone() } else { path.join(".") };
                property_markdown(&shown, "property", property)
            }
            NameKind::Filter => format!("**{}** · Jinja filter\n\n{}", name.name, schema::filter_doc(&name.name)),
            NameKind::Test => format!("**{}** · Jinja test\n\n{}", name.name, schema::test_doc(&name.name)),
        };
        return Some((name.span, text));
    }
    // A template that does not parse: the word, read from the text.
    outline.tag_at(offset)?;
    let word = typed(&doc.text, offset, ident);
    if word.start == word.end {
        return None;
    }
    let name = &doc.text[word.start..word.end];
    let agent = agent?;
    let chain = chain_before(&doc.text, word.start);
    if chain.is_empty() {
        return Some((word, input_markdown(doc, agent.input(name)?)));
    }
    let mut path = chain;
    path.push(name);
    let property = resolve(doc, agent, &path, word.start)?;
    Some((word, property_markdown(&path.join("."), "property", property)))
}

/// The property that `rest` reads below a local name bound to the input `root` or to one of its
/// items (`{% set u = user %}{{ u.name }}`, `{% with %}`), when the text does not say how.
fn through_alias<'a>(root: &'a Property, rest: &[&str]) -> Option<&'a Property> {
    let mut property = match (&root.kind, &root.items) {
        (prompty_core::PropertyKind::Array, Some(items)) => items.as_ref(),
        _ => root,
    };
    for name in rest {
        property = property.properties.as_ref()?.iter().find(|p| p.name == *name)?;
    }
    Some(property)
}

fn property_markdown(shown: &str, what: &str, p: &Property) -> String {
    let mut out = format!("**{shown}** · {what} · `{}`", p.kind.as_str());
    if p.required {
        out.push_str(" · required");
    }
    if let Some(d) = &p.description {
        out.push_str(&format!("\n\n{d}"));
    }
    if let Some(default) = &p.default {
        out.push_str(&format!("\n\nDefault: `{default}`"));
    }
    if let Some(values) = &p.enum_values {
        let values: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        out.push_str(&format!("\n\nOne of: {}", values.join(", ")));
    }
    if let Some(props) = p.properties.as_ref().filter(|p| !p.is_empty()) {
        let names: Vec<String> = props.iter().map(|p| format!("`{}`", p.name)).collect();
        out.push_str(&format!("\n\nProperties: {}", names.join(", ")));
    }
    if let Some(items) = &p.items {
        out.push_str(&format!("\n\nItems: `{}`", items.kind.as_str()));
    }
    out
}

fn input_markdown(doc: &Document, input: &Property) -> String {
    let mut out = property_markdown(&input.name, "input", input);
    let mut lines: Vec<u32> = doc
        .analysis
        .outline
        .names
        .iter()
        .filter(|n| match &n.kind {
            NameKind::Input => n.name == input.name,
            NameKind::Property { root } => *root == input.name,
            _ => false,
        })
        .map(|n| doc.range(n.span).start.line + 1)
        .collect();
    lines.dedup();
    if lines.is_empty() {
        out.push_str("\n\nThe template does not use it.");
    } else {
        let lines: Vec<String> = lines.iter().map(u32::to_string).collect();
        let word = if lines.len() == 1 { "line" } else { "lines" };
        out.push_str(&format!("\n\nUsed on {word} {}.", lines.join(", ")));
    }
    out
}

// ---- the frontmatter ----

fn frontmatter(doc: &Document, fm: Span, offset: usize) -> Option<(Span, String)> {
    let word = doc.word_at(offset)?;
    let yaml = &doc.text[fm.start..fm.end];
    let context = yaml_path::context(yaml, word.start - fm.start);
    let text = &doc.text[word.start..word.end];
    let is_key = doc.text[word.end..].starts_with(':');
    let path: Vec<&str> = context.path.iter().map(String::as_str).collect();
    let agent = doc.analysis.agent();
    let markdown = match (&context.slot, path.as_slice()) {
        (Slot::Key, ["inputs"]) | (Slot::Value(_), ["inputs", "-"]) if is_key || is_name(&context.slot) => {
            input_markdown(doc, agent?.input(text)?)
        }
        (Slot::Key, ["outputs"]) | (Slot::Value(_), ["outputs", "-"]) if is_key || is_name(&context.slot) => {
            let output = agent?.outputs.as_ref()?.iter().find(|p| p.name == text)?;
            property_markdown(text, "output", output)
        }
        (Slot::Key, ["tools"]) | (Slot::Value(_), ["tools", "-"]) if is_key || is_name(&context.slot) => {
            tool_markdown(tool(agent?, text)?)
        }
        (Slot::Value(key), ["model", "options"]) if key == "toolChoice" => tool_markdown(tool(agent?, text)?),
        (Slot::Value(key), ["model"]) if key == "provider" => {
            let p = schema::provider(text)?;
            format!("**{}** · provider\n\n{}", p.key, provider_doc(p))
        }
        (Slot::Key, _) if is_key => {
            let section = schema::section(&context.path)?;
            let entries = schema::entries(yaml, word.start - fm.start);
            let kind = entries.iter().find(|(k, _)| k == "kind").map(|(_, v)| v.as_str());
            let key = schema::find(section, kind, text)?;
            let mut out = format!("**{}**\n\n{}", key.name, key.doc);
            if section == Section::Options {
                match schema::written_provider(doc, yaml, word.start - fm.start) {
                    Some(p) => match schema::provider(&p) {
                        Some(b) if b.options.contains(&key.name) => {
                            out.push_str(&format!("\n\nThe provider `{p}` reads it."))
                        }
                        Some(_) => out.push_str(&format!("\n\nThe provider `{p}` does not read it: it is ignored.")),
                        None => out.push_str(&format!("\n\n`{p}` is not a built-in provider: its executor decides.")),
                    },
                    None => out.push_str("\n\nNo provider is chosen."),
                }
            }
            out
        }
        _ => return None,
    };
    Some((word, markdown))
}

fn is_name(slot: &Slot) -> bool {
    matches!(slot, Slot::Value(k) if k == "name")
}

fn tool<'a>(agent: &'a Agent, name: &str) -> Option<&'a Tool> {
    agent.tools.as_ref()?.iter().find(|t| t.name == name)
}

fn tool_markdown(tool: &Tool) -> String {
    let mut out = format!("**{}** · `{}` tool", tool.name, tool.kind.as_str());
    if let Some(d) = &tool.description {
        out.push_str(&format!("\n\n{d}"));
    }
    match &tool.kind {
        ToolKind::Function(f) if !f.parameters.is_empty() => {
            out.push_str("\n\nParameters:");
            for p in &f.parameters {
                out.push_str(&format!("\n- `{}` · `{}`", p.name, p.kind.as_str()));
                if p.required {
                    out.push_str(" · required");
                }
                if let Some(d) = &p.description {
                    out.push_str(&format!(" — {d}"));
                }
                if let Some(b) = tool.bindings.iter().find(|b| b.name == p.name) {
                    out.push_str(&format!(" (bound to the input `{}`)", b.input));
                }
            }
        }
        ToolKind::Mcp(m) => out
            .push_str(&format!("\n\nMCP server `{}`; its tools are offered as `{}__<tool>`", m.server_name, tool.name)),
        ToolKind::OpenApi(o) => out.push_str(&format!(
            "\n\nOpenAPI document `{}`; its operations are offered as `{}__<operation>`",
            o.specification, tool.name
        )),
        ToolKind::Prompty(p) => out.push_str(&format!("\n\nRuns `{}` ({})", p.path, p.mode())),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::tests::doc_at;

    fn shown(text: &str) -> Option<(String, (u32, u32, u32))> {
        let (doc, offset) = doc_at(text);
        let h = hover(&doc, offset)?;
        let HoverContents::Markup(m) = h.contents else { panic!() };
        let r = h.range.unwrap();
        Some((m.value, (r.start.line, r.start.character, r.end.character)))
    }

    const PROMPT: &str = "---\nmodel:\n  provider: local\n  options:\n    temperature: 1\n    frequencyPenalty: 0\n    toolChoice: get_weather\ninputs:\n  - name: user\n    kind: object\n    description: Who asks\n    properties:\n      - name: name\n        kind: string\n        description: Their name\n  - name: q\n    default: hi\ntools:\n  - name: get_weather\n    kind: function\n    description: The weather\n    parameters:\n      - name: city\n        required: true\n---\nuser:\n{{ user.name | upper }} {{ q }}\n{% if q is defined %}{{ q }}{% endif %}";

    fn at(marker: &str) -> String {
        let plain = marker.replace('^', "");
        assert!(PROMPT.contains(&plain), "{plain}");
        PROMPT.replacen(&plain, &marker.replace('^', "‸"), 1)
    }

    #[test]
    fn inputs_properties_filters_tests_in_the_template() {
        let (text, range) = shown(&at("{{ ^q }}")).unwrap();
        assert_eq!(text, "**q** · input · `string`\n\nDefault: `\"hi\"`\n\nUsed on lines 27, 28.");
        assert_eq!(range, (26, 27, 28));
        let (text, _) = shown(&at("user.na^me")).unwrap();
        assert_eq!(text, "**user.name** · property · `string`\n\nTheir name");
        assert_eq!(shown(&at("up^per")).unwrap().0, "**upper** · Jinja filter\n\nConverts to uppercase.");
        assert_eq!(shown(&at("de^fined")).unwrap().0, "**defined** · Jinja test\n\nWhether the value is defined.");
    }

    #[test]
    fn frontmatter_names_keys_and_options() {
        let (text, range) = shown(&at("name: ^user")).unwrap();
        assert!(
            text.starts_with("**user** · input · `object`\n\nWho asks\n\nProperties: `name`\n\nUsed on line 27."),
            "{text}"
        );
        assert_eq!(range, (8, 10, 14));
        let (text, _) = shown(&at("name: get_^weather")).unwrap();
        assert_eq!(
            text,
            "**get_weather** · `function` tool\n\nThe weather\n\nParameters:\n- `city` · `string` · required"
        );
        assert_eq!(shown(&at("toolChoice: ^get")).unwrap().0, text);
        let (text, _) = shown(&at("^temperature")).unwrap();
        assert_eq!(
            text,
            "**temperature**\n\nSampling temperature: higher is more random.\n\nThe provider `local` reads it."
        );
        let (text, _) = shown(&at("^frequencyPenalty")).unwrap();
        assert!(text.ends_with("The provider `local` does not read it: it is ignored."), "{text}");
        assert!(shown(&at("^model")).unwrap().0.starts_with("**model**\n\nThe model that runs the prompt"));
        assert!(shown(&at("provider: lo^cal")).unwrap().0.starts_with("**local** · provider\n\nAPI types: `chat`"));
        assert!(shown(&at("desc^ription: Who")).unwrap().0.starts_with("**description**"));
    }

    #[test]
    fn a_template_that_does_not_parse() {
        let text = "---\ninputs:\n  - name: q\n    kind: integer\n---\n{{ q‸ }} {% if %}";
        let (shown, range) = shown(text).unwrap();
        assert!(shown.starts_with("**q** · input · `integer`"), "{shown}");
        assert_eq!(range, (5, 3, 4));
    }

    #[test]
    fn a_property_read_through_a_loop_variable() {
        let text = "---\ninputs:\n  - name: orders\n    kind: array\n    items:\n      kind: object\n      properties:\n        - name: id\n          kind: integer\n          description: The order's number\n---\n{% for o in orders %}{{ o.i‸d }}{% endfor %}";
        let (shown, range) = shown(text).unwrap();
        assert_eq!(shown, "**o.id** · property · `integer`\n\nThe order's number");
        assert_eq!(range, (11, 26, 28));
    }

    #[test]
    fn declarations_in_the_mapping_form() {
        let text = "---\ninputs:\n  ci‸ty: {kind: string, description: Where}\noutputs:\n  temp: {kind: float}\n---\n{{ city }}";
        assert_eq!(
            shown(text).unwrap(),
            ("**city** · input · `string`\n\nWhere\n\nUsed on line 7.".to_owned(), (2, 2, 6))
        );
        let text = "---\ninputs:\n  city: {kind: string, description: Where}\noutputs:\n  te‸mp: {kind: float}\n---\n{{ city }}";
        assert_eq!(shown(text).unwrap().0, "**temp** · output · `float`");
        // A name no input declares.
        let text = "---\ninputs: [a]\n---\n{{ a }}{{ b‸ }}";
        assert_eq!(shown(text).unwrap().0, "**b**\n\nNo input declares it.");
    }

    #[test]
    fn a_remote_tool_says_its_namespace() {
        let text = "---\ntools:\n  - name: fi‸les\n    kind: mcp\n    serverName: fs\n---\nHi";
        assert_eq!(
            shown(text).unwrap().0,
            "**files** · `mcp` tool\n\nMCP server `fs`; its tools are offered as `files__<tool>`"
        );
    }

    #[test]
    fn a_property_read_through_an_alias() {
        let text = "---\ninputs:\n  - name: user\n    kind: object\n    properties: [{name: email, kind: string}]\n---\n{% set u = user %}{{ u.em‸ail }}";
        assert_eq!(shown(text).unwrap().0, "**u.email** · property · `string`");
    }
}
