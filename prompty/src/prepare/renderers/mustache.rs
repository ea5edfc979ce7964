//! A small, logic-less [Mustache](https://mustache.github.io/mustache.5.html) template engine,
//! used as the `mustache` renderer.
//!
//! The template is parsed once per call into a flat node list (sections record where their
//! body ends, so the list encodes the section tree) and then rendered against a JSON context
//! stack. Neither parsing nor rendering recurses, so deeply nested templates cannot exhaust
//! the call stack.
//!
//! # Supported tags
//!
//! | Tag | Meaning |
//! | --- | --- |
//! | `{{name}}`, `{{{name}}}`, `{{&name}}` | interpolation (all three behave the same, see below) |
//! | `{{a.b.c}}` | dotted name: `a` is looked up through the context stack, then `b` and `c` inside it |
//! | `{{.}}` | the current context (implicit iterator) |
//! | `{{#name}}…{{/name}}` | section |
//! | `{{^name}}…{{/name}}` | inverted section |
//! | `{{! comment }}` | comment, may span several lines |
//! | `{{=<% %>=}}` | change the delimiters for the rest of the template |
//! | `{{> name}}` | partial: always an error, templates have no file system access |
//!
//! Whitespace is allowed around a tag's name (`{{ name }}`, `{{# name }}`), and also between
//! the opening delimiter and the sigils `#`, `^`, `/`, `!`, `>` and `&` (`{{ #name}}`). The
//! sigils `{` and `=` must follow the opening delimiter directly because they change how the
//! tag is closed (`}}}` and `=}}`). With custom delimiters the triple form is closed by `}`
//! followed by the closing delimiter (`<%{name}%>`).
//!
//! # No HTML escaping
//!
//! Prompts are not HTML, so **no value is ever HTML-escaped**: `{{x}}`, `{{{x}}}` and `{{&x}}`
//! all output exactly the same text. Every interpolated value is first turned into text with
//! [`format_value`] and then handed to the caller's `emit` callback, which appends it to the
//! output; literal template text is appended directly. `emit` is called once for every
//! interpolation tag that is rendered, even when the value is missing and the text is empty.
//!
//! # Name resolution and truthiness
//!
//! The first part of a name is looked up in the context stack from the innermost context
//! outwards; only objects holding that key match. The remaining parts are looked up inside
//! the value found, and a missing part makes the whole name missing (it is *not* looked up
//! again further out). As an extension, a part made of digits indexes into an array
//! (`{{items.0}}`). A missing value interpolates as the empty string.
//!
//! A section is skipped when its value is missing, `null`, `false`, `""` or an empty array.
//! A non-empty array renders the section once per element with the element pushed on the
//! context stack; any other value (an object, `true`, a number including `0`, a non-empty
//! string) renders it once with the value pushed. An inverted section renders exactly when
//! the matching section would be skipped.
//!
//! # Standalone lines
//!
//! As in the Mustache specification, a line holding nothing but whitespace and a single
//! section, inverted section, close, comment, set-delimiter or partial tag is removed from
//! the output entirely, including its line ending (`\n` or `\r\n`). Interpolation tags are
//! never standalone.
//!
//! # Errors
//!
//! A malformed template yields a [`MustacheError`] with the 1-based line and column (counted
//! in characters) of the offending tag: an unclosed tag, an unclosed section (reported at
//! the tag that opened it), a mismatched or unexpected close tag, an empty tag name, a
//! malformed set-delimiter tag, a partial, or sections nested deeper than
//! [`MAX_SECTION_DEPTH`] (256).
//!
//! # Bounds
//!
//! A render takes at most [`Budget::steps`] steps (one per tag, text run or section pass, plus
//! one per context a name may be looked up through) and produces at most
//! [`Budget::max_output_bytes`] bytes; past either it stops with an error.

use std::fmt::Write as _;

use serde_json::Value;

pub(crate) use prompty_core::mustache::MustacheError;
use prompty_core::mustache::{parse, Node};

/// Render `template` with `data` as the root context.
///
/// Every interpolated value (`{{x}}`, `{{{x}}}`, `{{&x}}`) is first turned into text with
/// [`format_value`] and then handed to `emit(out, name, text)` (`name` is the tag's name, as
/// `user.name` or `.`), which must append `text` to `out` (the
/// caller uses this to mark where interpolated text sits in the output). Literal template
/// text is appended directly. No HTML escaping is ever applied.
///
/// The render stops with an error (at line 0: no tag is to blame) once it has taken
/// `budget.steps` steps (one per tag, text run or section pass visited) or produced more than
/// `budget.max_output_bytes` bytes, so sections nested over large lists end quickly.
pub(crate) fn render(
    template: &str,
    data: &Value,
    budget: Budget,
    emit: &mut dyn FnMut(&mut String, &str, &str),
) -> Result<String, MustacheError> {
    let nodes = parse(template)?;
    let mut out = String::with_capacity(template.len());
    execute(&nodes, data, emit, &mut out, budget)?;
    Ok(out)
}

/// The bounds of one render.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Steps one render may take.
    pub steps: u64,
    /// Bytes one render may produce.
    pub max_output_bytes: u64,
}

impl Budget {
    /// No bound at all (tests of the engine itself).
    #[cfg(test)]
    const UNLIMITED: Budget = Budget { steps: u64::MAX, max_output_bytes: u64::MAX };
}

fn budget_error(message: String) -> MustacheError {
    MustacheError { line: 0, column: 0, message }
}

/// How a JSON value prints: string as is; `true`/`false`; null -> ""; integers as integers; a
/// float with no fractional part prints without ".0" (1.0 -> "1"), other floats with Rust's
/// shortest repr; arrays and objects as compact JSON.
pub(crate) fn format_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => {}
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::String(s) => out.push_str(s),
        Value::Number(n) => {
            // Writing into a `String` cannot fail.
            let _ = if let Some(i) = n.as_i64() {
                write!(out, "{i}")
            } else if let Some(u) = n.as_u64() {
                write!(out, "{u}")
            } else if let Some(f) = n.as_f64() {
                // `Display` for `f64` prints the shortest representation that round-trips
                // and drops a zero fractional part (`1.0` prints as `1`).
                write!(out, "{f}")
            } else {
                write!(out, "{n}")
            };
        }
        // `Display` for a JSON value writes compact JSON.
        Value::Array(_) | Value::Object(_) => {
            let _ = write!(out, "{value}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// A section being rendered.
struct Frame<'d> {
    /// Index of the first node of the body.
    body_start: usize,
    /// Index of the first node after the body.
    body_end: usize,
    /// Whether the section pushed a context that must be popped when the body ends.
    pushed: bool,
    /// Array elements still to render the body for.
    remaining: &'d [Value],
}

/// Renders parsed `nodes` with `data` as the root context, appending to `out`.
fn execute<'d>(
    nodes: &[Node<'_>],
    data: &'d Value,
    emit: &mut dyn FnMut(&mut String, &str, &str),
    out: &mut String,
    budget: Budget,
) -> Result<(), MustacheError> {
    let mut stack: Vec<&'d Value> = vec![data];
    let mut frames: Vec<Frame<'d>> = Vec::new();
    let mut scratch = String::new();
    let mut index = 0;
    let mut steps: u64 = 0;

    loop {
        steps += 1;
        if steps > budget.steps {
            return Err(budget_error(format!(
                "the template exceeded its render budget of {} steps (raise RenderLimits::fuel with prompty_core::jinja::set_render_limits)",
                budget.steps
            )));
        }
        if out.len() as u64 > budget.max_output_bytes {
            return Err(budget_error(format!(
                "the rendered prompt exceeds {} bytes (raise RenderLimits::max_output_bytes with prompty_core::jinja::set_render_limits)",
                budget.max_output_bytes
            )));
        }
        let limit = frames.last().map_or(nodes.len(), |frame| frame.body_end);
        let node = match nodes.get(index) {
            Some(node) if index < limit => node,
            _ => {
                // End of the current section body (or of the template).
                let Some(frame) = frames.last_mut() else {
                    break;
                };
                if frame.pushed {
                    stack.pop();
                }
                if let Some((item, rest)) = frame.remaining.split_first() {
                    stack.push(item);
                    frame.remaining = rest;
                    index = frame.body_start;
                } else {
                    index = frame.body_end;
                    frames.pop();
                }
                continue;
            }
        };

        if matches!(node, Node::Interpolate { .. } | Node::Section { .. }) {
            // A lookup may scan every context on the stack.
            steps = steps.saturating_add(stack.len() as u64);
        }
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Interpolate { name, .. } => match lookup(name, &stack) {
                Some(Value::String(text)) => emit(out, name, text),
                Some(value) => {
                    scratch.clear();
                    format_value(value, &mut scratch);
                    emit(out, name, &scratch);
                }
                None => emit(out, name, ""),
            },
            Node::Section { name, inverted, end, .. } => {
                // The parser guarantees `index < end <= nodes.len()`; clamping keeps the loop
                // making progress even if that were ever violated.
                let body_end = (*end).clamp(index + 1, nodes.len().max(index + 1));
                let items = section_items(lookup(name, &stack));
                match (items, *inverted) {
                    (None, true) => {
                        frames.push(Frame { body_start: index + 1, body_end, pushed: false, remaining: &[] })
                    }
                    (Some((first, remaining)), false) => {
                        stack.push(first);
                        frames.push(Frame { body_start: index + 1, body_end, pushed: true, remaining });
                    }
                    _ => {
                        index = body_end;
                        continue;
                    }
                }
            }
        }
        index += 1;
    }
    Ok(())
}

/// Decides how a section renders for `value`: `None` when it is skipped, otherwise the
/// first context to push and the array elements that follow it.
fn section_items(value: Option<&Value>) -> Option<(&Value, &[Value])> {
    match value? {
        Value::Null | Value::Bool(false) => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => items.split_first(),
        other => Some((other, &[])),
    }
}

/// Resolves `name` against the context stack (innermost context last).
fn lookup<'d>(name: &str, stack: &[&'d Value]) -> Option<&'d Value> {
    if name == "." {
        return stack.last().copied();
    }
    let mut parts = name.split('.');
    let first = parts.next()?;
    let mut value = stack.iter().rev().find_map(|&context| context.as_object()?.get(first))?;
    for part in parts {
        value = match value {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prompty_core::mustache::MAX_SECTION_DEPTH;
    use serde_json::json;

    fn plain(out: &mut String, _name: &str, text: &str) {
        out.push_str(text);
    }

    fn ok(template: &str, data: Value) -> String {
        match render(template, &data, Budget::UNLIMITED, &mut plain) {
            Ok(out) => out,
            Err(err) => panic!("unexpected error for {template:?}: {err}"),
        }
    }

    fn err(template: &str) -> MustacheError {
        match render(template, &json!({ "a": true, "name": "x" }), Budget::UNLIMITED, &mut plain) {
            Ok(out) => panic!("expected an error for {template:?}, got {out:?}"),
            Err(err) => err,
        }
    }

    fn fmt(value: Value) -> String {
        let mut out = String::new();
        format_value(&value, &mut out);
        out
    }

    // --- interpolation ---------------------------------------------------------------------

    #[test]
    fn basic_substitution() {
        assert_eq!(ok("Hello, {{name}}!", json!({ "name": "World" })), "Hello, World!");
        assert_eq!(ok("no tags at all", json!({})), "no tags at all");
        assert_eq!(ok("", json!({})), "");
        assert_eq!(ok("{{a}}{{b}}", json!({ "a": 1, "b": 2 })), "12");
    }

    #[test]
    fn whitespace_inside_tags() {
        let data = json!({ "name": "Ann" });
        assert_eq!(ok("{{ name }}", data.clone()), "Ann");
        assert_eq!(ok("{{{ name }}}", data.clone()), "Ann");
        assert_eq!(ok("{{& name }}", data.clone()), "Ann");
        assert_eq!(ok("{{&name}}", data.clone()), "Ann");
        assert_eq!(ok("{{\tname\n}}", data.clone()), "Ann");
        assert_eq!(ok("{{# name }}yes{{/ name }}", data.clone()), "yes");
        assert_eq!(ok("{{ #name}}yes{{ /name}}", data), "yes");
    }

    #[test]
    fn missing_values_are_empty() {
        assert_eq!(ok("[{{missing}}]", json!({})), "[]");
        assert_eq!(ok("[{{{missing}}}]", json!({})), "[]");
        assert_eq!(ok("[{{nothing}}]", json!({ "nothing": null })), "[]");
    }

    #[test]
    fn non_string_values_interpolate() {
        let data = json!({ "t": true, "f": false, "i": 7, "x": 2.5, "one": 1.0,
                           "list": [1, "a"], "obj": { "k": "v" } });
        assert_eq!(
            ok("{{t}} {{f}} {{i}} {{x}} {{one}} {{list}} {{obj}}", data),
            r#"true false 7 2.5 1 [1,"a"] {"k":"v"}"#
        );
    }

    #[test]
    fn no_html_escaping() {
        let data = json!({ "html": "<b>\"Tom\" & 'Jerry'</b>" });
        let expected = "<b>\"Tom\" & 'Jerry'</b>";
        assert_eq!(ok("{{html}}", data.clone()), expected);
        assert_eq!(ok("{{{html}}}", data.clone()), expected);
        assert_eq!(ok("{{&html}}", data), expected);
    }

    #[test]
    fn interpolated_text_is_not_reparsed() {
        let data = json!({ "x": "{{y}}", "y": "nope" });
        assert_eq!(ok("{{x}}", data), "{{y}}");
    }

    #[test]
    fn unicode_text_and_values() {
        let data = json!({ "name": "Zoë 🎉" });
        assert_eq!(ok("héllo {{name}} ✓", data), "héllo Zoë 🎉 ✓");
    }

    // --- names -----------------------------------------------------------------------------

    #[test]
    fn dotted_names() {
        let data = json!({ "person": { "name": "Joe", "address": { "city": "Oslo" } } });
        assert_eq!(ok("{{person.name}}", data.clone()), "Joe");
        assert_eq!(ok("{{person.address.city}}", data.clone()), "Oslo");
        assert_eq!(ok("{{{person.name}}} {{&person.name}}", data.clone()), "Joe Joe");
        assert_eq!(ok("[{{person.missing.city}}]", data.clone()), "[]");
        assert_eq!(ok("[{{person.name.first}}]", data.clone()), "[]");
        assert_eq!(ok("[{{nobody.name}}]", data.clone()), "[]");
        assert_eq!(ok("{{#person.address}}{{city}}{{/person.address}}", data), "Oslo");
    }

    #[test]
    fn dotted_names_broken_chain_is_not_resolved_further_out() {
        let data = json!({ "a": { "b": {} }, "c": { "name": "Jim" } });
        assert_eq!(ok("[{{a.b.c.name}}]", data), "[]");
    }

    #[test]
    fn dotted_names_first_part_uses_innermost_context() {
        let data = json!({ "a": { "b": {} }, "b": { "c": "ERROR" } });
        assert_eq!(ok("[{{#a}}{{b.c}}{{/a}}]", data), "[]");
    }

    #[test]
    fn dotted_names_first_part_falls_back_to_outer_contexts() {
        let data = json!({ "a": { "x": 1 }, "b": { "c": "found" } });
        assert_eq!(ok("{{#a}}{{b.c}}{{/a}}", data), "found");
    }

    #[test]
    fn numeric_parts_index_arrays() {
        let data = json!({ "items": ["zero", { "name": "one" }] });
        assert_eq!(ok("{{items.0}} {{items.1.name}}", data.clone()), "zero one");
        assert_eq!(ok("[{{items.9}}] [{{items.x}}]", data), "[] []");
    }

    #[test]
    fn implicit_iterator() {
        let data = json!({ "items": ["a", "b", "c"] });
        assert_eq!(ok("{{#items}}{{.}} {{/items}}", data), "a b c ");
        assert_eq!(ok("{{.}}", json!("root")), "root");
        assert_eq!(ok("{{.}}", json!(85)), "85");
        assert_eq!(
            ok("{{#list}}({{#.}}{{.}}{{/.}}){{/list}}", json!({ "list": [[1, 2, 3], ["a", "b", "c"]] })),
            "(123)(abc)"
        );
    }

    // --- sections --------------------------------------------------------------------------

    #[test]
    fn section_on_true_and_inverted_on_false() {
        assert_eq!(ok("{{#show}}Visible{{/show}}", json!({ "show": true })), "Visible");
        assert_eq!(ok("{{^show}}Hidden{{/show}}", json!({ "show": false })), "Hidden");
        assert_eq!(ok("{{#show}}Visible{{/show}}", json!({ "show": false })), "");
        assert_eq!(ok("{{^show}}Hidden{{/show}}", json!({ "show": true })), "");
    }

    #[test]
    fn falsy_values_skip_sections() {
        for value in [json!(null), json!(false), json!(""), json!([])] {
            let data = json!({ "v": value });
            assert_eq!(ok("[{{#v}}yes{{/v}}]", data.clone()), "[]", "{data}");
            assert_eq!(ok("[{{^v}}no{{/v}}]", data.clone()), "[no]", "{data}");
        }
        assert_eq!(ok("[{{#v}}yes{{/v}}]", json!({})), "[]");
        assert_eq!(ok("[{{^v}}no{{/v}}]", json!({})), "[no]");
    }

    #[test]
    fn other_values_render_once_with_value_pushed() {
        assert_eq!(ok("{{#v}}<{{.}}>{{/v}}", json!({ "v": 0 })), "<0>");
        assert_eq!(ok("{{#v}}<{{.}}>{{/v}}", json!({ "v": "s" })), "<s>");
        assert_eq!(ok("{{#v}}<{{.}}>{{/v}}", json!({ "v": true })), "<true>");
        assert_eq!(ok("{{#v}}yes{{/v}}", json!({ "v": {} })), "yes");
        assert_eq!(ok("{{^v}}no{{/v}}", json!({ "v": 0 })), "");
        assert_eq!(ok("{{#foo}}{{.}} is {{foo}}{{/foo}}", json!({ "foo": "bar" })), "bar is bar");
    }

    #[test]
    fn object_section() {
        let data = json!({ "user": { "name": "Ann", "age": 30 } });
        assert_eq!(ok("{{#user}}{{name}} ({{age}}){{/user}}", data), "Ann (30)");
    }

    #[test]
    fn list_of_objects() {
        let data = json!({ "people": [{ "name": "A" }, { "name": "B" }, { "name": "C" }] });
        assert_eq!(ok("{{#people}}{{name}},{{/people}}", data), "A,B,C,");
    }

    #[test]
    fn nested_contexts_fall_back_to_parents() {
        let data = json!({
            "greeting": "Hi",
            "outer": { "x": "ox", "inner": { "y": "iy" } },
            "people": [{ "name": "A" }, { "name": "B", "greeting": "Yo" }]
        });
        assert_eq!(ok("{{#outer}}{{#inner}}{{greeting}} {{x}} {{y}}{{/inner}}{{/outer}}", data.clone()), "Hi ox iy");
        assert_eq!(ok("{{#people}}{{greeting}} {{name}}; {{/people}}", data), "Hi A; Yo B; ");
    }

    #[test]
    fn nested_sections_and_repeated_names() {
        let data = json!({ "bool": true });
        assert_eq!(ok("| A {{#bool}}B {{#bool}}C{{/bool}} D{{/bool}} E |", data), "| A B C D E |");
        let data = json!({ "a": [1, 2], "b": ["x", "y"] });
        assert_eq!(ok("{{#a}}{{#b}}{{.}}{{/b}}{{.}} {{/a}}", data), "xy1 xy2 ");
    }

    #[test]
    fn empty_section_bodies() {
        let data = json!({ "a": [1, 2, 3], "t": true });
        assert_eq!(ok("[{{#a}}{{/a}}][{{^t}}{{/t}}]", data), "[][]");
    }

    #[test]
    fn dotted_section_names() {
        let data = json!({ "a": { "list": [1, 2] } });
        assert_eq!(ok("{{#a.list}}{{.}}{{/a.list}}", data), "12");
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let depth = MAX_SECTION_DEPTH;
        let template = format!("{}x{}", "{{#a}}".repeat(depth), "{{/a}}".repeat(depth));
        assert_eq!(ok(&template, json!({ "a": true })), "x");
        // Deeper is an error at the first tag past the limit, found without recursion.
        let depth = 100_000;
        let template = format!("{}x{}", "{{#a}}".repeat(depth), "{{/a}}".repeat(depth));
        let err = render(&template, &json!({ "a": true }), Budget::UNLIMITED, &mut plain).unwrap_err();
        assert_eq!((err.line, err.column), (1, 6 * MAX_SECTION_DEPTH + 1));
        assert!(err.message.contains("deeper than 256"), "{}", err.message);
    }

    // --- standalone lines ------------------------------------------------------------------

    #[test]
    fn standalone_section_lines_are_removed() {
        let template = "Items:\n{{#items}}\n- {{.}}\n{{/items}}\nEnd\n";
        assert_eq!(ok(template, json!({ "items": ["a", "b"] })), "Items:\n- a\n- b\nEnd\n");
        let template = "Start\n  {{^none}}  \n  none\n\t{{/none}}\nEnd";
        assert_eq!(ok(template, json!({})), "Start\n  none\nEnd");
    }

    #[test]
    fn standalone_crlf_and_file_edges() {
        assert_eq!(ok("|\r\n{{#b}}\r\n{{/b}}\r\n|", json!({ "b": true })), "|\r\n|");
        assert_eq!(ok("  {{#b}}\n#{{/b}}\n/", json!({ "b": true })), "#\n/");
        assert_eq!(ok("#{{#b}}\n/\n  {{/b}}", json!({ "b": true })), "#\n/\n");
    }

    #[test]
    fn non_standalone_tags_keep_their_lines() {
        let data = json!({ "b": true, "s": "---" });
        assert_eq!(ok(" {{#b}}YES{{/b}}\n", data.clone()), " YES\n");
        assert_eq!(ok("a {{#b}}\nx\n{{/b}} z", data.clone()), "a \nx\n z");
        // Two tags on one line: neither is standalone.
        assert_eq!(ok("{{#b}}{{/b}}\nx", data.clone()), "\nx");
        // Interpolation tags are never standalone.
        assert_eq!(ok("  {{s}}\n", data.clone()), "  ---\n");
        assert_eq!(ok("  {{missing}}\nx", data), "  \nx");
    }

    #[test]
    fn standalone_comment_and_set_delimiter_lines_are_removed() {
        assert_eq!(ok("Begin.\n  {{! comment }}\nEnd.\n", json!({})), "Begin.\nEnd.\n");
        assert_eq!(ok("Begin.\n{{!\nSomething's going on here...\n}}\nEnd.\n", json!({})), "Begin.\nEnd.\n");
        assert_eq!(ok("Begin.\n{{=@ @=}}\nEnd.\n", json!({})), "Begin.\nEnd.\n");
        assert_eq!(ok("!\n  {{! still standalone }}", json!({})), "!\n");
    }

    // --- comments --------------------------------------------------------------------------

    #[test]
    fn comments() {
        assert_eq!(ok("12345{{! Comment Block! }}67890", json!({})), "1234567890");
        assert_eq!(ok("12345{{!\n  This is a\n  multi-line comment...\n}}67890", json!({})), "1234567890");
        assert_eq!(ok("  12 {{! 34 }}\n", json!({})), "  12 \n");
        assert_eq!(ok("a{{! {{not a tag }}b", json!({ "not": 1 })), "ab");
        assert_eq!(ok("{{ ! spaced comment }}x", json!({})), "x");
    }

    // --- set delimiters --------------------------------------------------------------------

    #[test]
    fn set_delimiters() {
        let data = json!({ "text": "Hey!", "name": "Bob" });
        assert_eq!(ok("{{=<% %>=}}(<%text%>)", data.clone()), "(Hey!)");
        assert_eq!(ok("({{=[ ]=}}[text])", data.clone()), "(Hey!)");
        assert_eq!(ok("{{=<% %>=}}<% name %> {{name}} <%={{ }}=%>{{name}}", data.clone()), "Bob {{name}} Bob");
        assert_eq!(ok("{{= | | =}}|name|", data.clone()), "Bob");
        assert_eq!(ok("{{=<% %>=}}<%{name}%> <%&name%>", data.clone()), "Bob Bob");
        assert_eq!(ok("{{=<< >>=}}<<! comment >>x", data), "x");
    }

    #[test]
    fn set_delimiters_with_sections() {
        let template = "[\n{{#section}}\n  {{data}}\n  |data|\n{{/section}}\n\n{{= | | =}}\n|#section|\n  {{data}}\n  |data|\n|/section|\n]\n";
        let data = json!({ "section": true, "data": "I got interpolated." });
        assert_eq!(ok(template, data), "[\n  I got interpolated.\n  |data|\n\n  {{data}}\n  I got interpolated.\n]\n");
    }

    // --- format_value ----------------------------------------------------------------------

    #[test]
    fn format_value_cases() {
        assert_eq!(fmt(json!(true)), "true");
        assert_eq!(fmt(json!(false)), "false");
        assert_eq!(fmt(json!(null)), "");
        assert_eq!(fmt(json!("plain <text>")), "plain <text>");
        assert_eq!(fmt(json!(1.0)), "1");
        assert_eq!(fmt(json!(-4.0)), "-4");
        assert_eq!(fmt(json!(2.5)), "2.5");
        assert_eq!(fmt(json!(0.1)), "0.1");
        assert_eq!(fmt(json!(7)), "7");
        assert_eq!(fmt(json!(-3)), "-3");
        assert_eq!(fmt(json!(u64::MAX)), "18446744073709551615");
        assert_eq!(fmt(json!([1, "a", null, true])), r#"[1,"a",null,true]"#);
        assert_eq!(fmt(json!([])), "[]");
        assert_eq!(fmt(json!({ "k": [1, 2] })), r#"{"k":[1,2]}"#);
        let parsed: Value = serde_json::from_str("1.0").unwrap_or(Value::Null);
        assert_eq!(fmt(parsed), "1");
    }

    #[test]
    fn format_value_appends() {
        let mut out = String::from("x=");
        format_value(&json!(3), &mut out);
        assert_eq!(out, "x=3");
    }

    // --- emit ------------------------------------------------------------------------------

    #[test]
    fn emit_is_called_exactly_for_interpolations() {
        let data = json!({ "name": "Ann", "n": 3, "items": ["a", "b"], "html": "<i>" });
        let template = "Hi {{name}}! {{! comment }}{{#items}}{{.}};{{/items}} \
                        {{{html}}}{{&n}} [{{missing}}]{{^items}}never{{/items}}";
        let mut calls = Vec::new();
        let mut bracket = |out: &mut String, name: &str, text: &str| {
            calls.push(format!("{name}={text}"));
            out.push('[');
            out.push_str(text);
            out.push(']');
        };
        let out = render(template, &data, Budget::UNLIMITED, &mut bracket).map_err(|e| e.to_string());
        assert_eq!(out.as_deref(), Ok("Hi [Ann]! [a];[b]; [<i>][3] [[]]"));
        assert_eq!(calls, ["name=Ann", ".=a", ".=b", "html=<i>", "n=3", "missing="]);
    }

    #[test]
    fn emit_not_called_without_interpolations() {
        let mut count = 0;
        let mut counter = |out: &mut String, _: &str, text: &str| {
            count += 1;
            out.push_str(text);
        };
        let out = render(
            "{{#a}}x{{/a}}{{^b}}y{{/b}}{{! c }}{{=<% %>=}}z",
            &json!({ "a": true }),
            Budget::UNLIMITED,
            &mut counter,
        );
        assert_eq!(out, Ok("xyz".to_string()));
        assert_eq!(count, 0);
    }

    // --- errors ----------------------------------------------------------------------------

    #[test]
    fn error_unclosed_tag() {
        let e = err("Hello {{name");
        assert_eq!((e.line, e.column), (1, 7));
        assert!(e.message.contains("unclosed tag"), "{e}");
        let e = err("line one\n  {{{name}}");
        assert_eq!((e.line, e.column), (2, 3));
        assert!(e.message.contains("unclosed tag"), "{e}");
        assert!(e.message.contains("}}}"), "{e}");
        let e = err("{{=<% %>=}}\n<%name");
        assert_eq!((e.line, e.column), (2, 1));
        assert!(e.message.contains("%>"), "{e}");
        let e = err("{{! never closed");
        assert_eq!((e.line, e.column), (1, 1));
    }

    #[test]
    fn error_unclosed_section() {
        let e = err("a\nb {{#items}}\n{{.}}\n");
        assert_eq!((e.line, e.column), (2, 3));
        assert!(e.message.contains("unclosed section"), "{e}");
        assert!(e.message.contains("\"items\""), "{e}");
        // The innermost unclosed section is reported.
        let e = err("{{#outer}}\n  {{^inner}}\n");
        assert_eq!((e.line, e.column), (2, 3));
        assert!(e.message.contains("\"inner\""), "{e}");
    }

    #[test]
    fn error_mismatched_close_tag() {
        let e = err("{{#a}}\n{{#b}}\nx {{/a}}\n{{/b}}");
        assert_eq!((e.line, e.column), (3, 3));
        assert!(e.message.contains("mismatched close tag"), "{e}");
        assert!(e.message.contains("\"a\""), "{e}");
        assert!(e.message.contains("\"b\""), "{e}");
        assert!(e.message.contains("line 2, column 1"), "{e}");
    }

    #[test]
    fn error_close_without_open() {
        let e = err("x\n  {{/a}}");
        assert_eq!((e.line, e.column), (2, 3));
        assert!(e.message.contains("no matching open section"), "{e}");
        assert!(e.message.contains("\"a\""), "{e}");
    }

    #[test]
    fn error_empty_tag_name() {
        for (template, column) in
            [("ab{{}}", 3), ("{{ }}", 1), ("x {{{ }}}", 3), ("{{&}}", 1), ("{{#}}{{/}}", 1), ("{{^ }}", 1)]
        {
            let e = err(template);
            assert_eq!((e.line, e.column), (1, column), "{template}");
            assert_eq!(e.message, "empty tag name", "{template}");
        }
        let e = err("{{#a}}{{/}}");
        assert_eq!((e.line, e.column), (1, 7));
        assert_eq!(e.message, "empty tag name");
    }

    #[test]
    fn error_bad_set_delimiter() {
        for template in ["{{=<%=}}", "{{= =}}", "{{=a b c=}}", "{{=<= =>=}}", "{{=<% %>}}"] {
            let e = err(template);
            assert_eq!((e.line, e.column), (1, 1), "{template}");
            assert!(e.message.contains("bad set-delimiter tag"), "{template}: {e}");
        }
        let e = err("ok\n\t{{=<%=}}");
        assert_eq!((e.line, e.column), (2, 2));
    }

    #[test]
    fn error_partials_are_not_supported() {
        let e = err("Hi\n{{> header}}\n");
        assert_eq!((e.line, e.column), (2, 1));
        assert_eq!(e.message, "partials are not supported: templates have no file system access");
        assert_eq!(err("{{>}}").message, e.message);
    }

    #[test]
    fn error_column_counts_characters() {
        let e = err("héllo wörld {{#x}}");
        assert_eq!((e.line, e.column), (1, 13));
    }

    #[test]
    fn error_display() {
        let e = err("Hello {{name");
        assert_eq!(e.to_string(), format!("line 1, column 7: {}", e.message));
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert!(boxed.to_string().starts_with("line 1, column 7: "));
    }

    // --- robustness and performance --------------------------------------------------------

    #[test]
    fn never_panics_on_tag_soup() {
        let pieces = ["{{", "}}", "{", "}", "#a", "/a", "^", "=", "!", "&", ">", " ", "\n", "é", "<%", "."];
        let data = json!({ "a": [1, { "a": false }], "é": "x" });
        let mut template = String::new();
        let n = pieces.len();
        for i in 0..n * n * n * n {
            template.clear();
            let mut k = i;
            for _ in 0..4 {
                template.push_str(pieces[k % n]);
                k /= n;
            }
            // Either outcome is fine; it must simply not panic.
            let _ = render(&template, &data, Budget::UNLIMITED, &mut plain);
        }
    }

    #[test]
    fn large_template() {
        let line = "Name: {{name}} {{#items}}[{{.}}]{{/items}} {{^none}}-{{/none}} {{! c }}\n";
        let template = line.repeat(20_000 / line.len() + 1);
        assert!(template.len() >= 20_000);
        let data = json!({ "name": "N", "items": [1, 2] });
        let out = ok(&template, data);
        let expected_line = "Name: N [1][2] - \n";
        assert_eq!(out, expected_line.repeat(20_000 / line.len() + 1));
    }

    #[test]
    fn parse_builds_flat_tree() {
        let nodes = parse("a{{#s}}b{{x}}{{/s}}c").unwrap_or_default();
        assert_eq!(
            nodes,
            vec![
                Node::Text("a"),
                Node::Section { name: "s", inverted: false, end: 4, at: 1 },
                Node::Text("b"),
                Node::Interpolate { name: "x", at: 8 },
                Node::Text("c"),
            ]
        );
    }
}
