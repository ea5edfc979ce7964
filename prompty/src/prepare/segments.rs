//! Render segments (the specification's `renderSegments`, Prompty Jinja Subset §7): a render's
//! output as the pieces it is made of, each template text (`literal`) or an interpolated value
//! (`interp`) tagged with the input it came from and whether that input is strict. Concatenating
//! the segments' texts gives exactly what [`crate::render`] gives; they come from the same single
//! render `prepare` makes (the value ranges it keeps so that a value never starts a message).

use super::renderers;
use super::rich;
use crate::{Agent, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::ops::Range;
use std::sync::Arc;

/// Where a [`RenderSegment`] came from.
///
/// ```
/// assert_eq!(serde_json::to_value(prompty::SegmentKind::Interp).unwrap(), "interp");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SegmentKind {
    /// Text of the template (author-trusted).
    Literal,
    /// An interpolated value (`{{ expression }}`): untrusted input.
    Interp,
}

/// One piece of a render's output (the specification's `RenderSegment`).
///
/// ```
/// let agent = prompty::load_str("---\ninputs: [q]\n---\nuser:\n{{ q }}", ".", "<string>")?;
/// let segments = prompty::render_segments(&agent, &serde_json::json!({"q": "Hi"}))?;
/// assert_eq!(serde_json::to_value(&segments)?, serde_json::json!([
///     {"kind": "literal", "text": "user:\n", "source": null, "strict": false},
///     {"kind": "interp", "text": "Hi", "source": "q", "strict": false},
/// ]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderSegment {
    /// Template text or an interpolated value.
    pub kind: SegmentKind,
    /// The rendered text of the piece.
    pub text: String,
    /// For a value: the input it comes from, when the `{{ }}` expression is a variable or a path
    /// from one (attributes `q.x`, subscripts `q[0]`, `q[k]`): the path's root variable (`q` for
    /// `{{ q }}`, `{{ q.x }}`, `{{ q[0].y }}`), as the specification's reference evaluator has it.
    /// Any other expression (a filter `{{ q | upper }}`, an operator, a literal, a test) has
    /// `None`, and so has template text.
    ///
    /// A name the template binds resolves to the input its value comes from: the item of
    /// `{% for item in items %}` to the source of `items` (so `{{ item.name }}` is `items`, and a
    /// strict input stays strict through a loop), `{% set x = path %}` and `{% with x = path %}`
    /// to the source of `path`; `loop` and the names of a tuple target (`{% for k, v in … %}`)
    /// have none, and a name set differently in the branches of an `{% if %}` has none after it.
    ///
    /// Known for the built-in renderers: `jinja2` templates that print in order (everything but
    /// `{% set %}…{% endset %}` blocks, `{% filter %}`, macros, `call` blocks and recursive
    /// loops; in those templates every value has `None`), and `mustache`, where it is the root of
    /// the tag's name (`{{user.name}}` is `user`, also inside a section; `{{.}}` has `None`).
    /// Values written by a renderer registered by another crate have `None`.
    pub source: Option<String>,
    /// Whether `source` is a strict input (`template.format.strict`, or listed in
    /// `options.strictInputs`).
    pub strict: bool,
}

/// An interpolated value of a render: its bytes in the rendered text and its source (see
/// [`RenderSegment::source`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interp {
    /// The bytes of the rendered text.
    pub range: Range<usize>,
    /// The root input the expression reads, when known.
    pub source: Option<Arc<str>>,
}

/// Renders the agent's template with `inputs` (validated as [`crate::render`] validates them) into
/// segments. A strict input whose value holds a role marker is an error, as in `render`.
///
/// ```
/// let agent = prompty::load_str("Hi {{ who }}!", ".", "<string>")?;
/// let segments = prompty::render_segments(&agent, &serde_json::json!({"who": "Ann"}))?;
/// let text: String = segments.iter().map(|s| s.text.as_str()).collect();
/// assert_eq!(text, prompty::render(&agent, &serde_json::json!({"who": "Ann"}))?);
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn render_segments(agent: &Agent, inputs: &Value) -> Result<Vec<RenderSegment>> {
    let owned;
    let inputs = match super::inputs_as_given(agent, inputs) {
        // What validation would leave as it is is rendered where it is, as `prepare` does.
        Some(map) => map,
        None => {
            let mut map = crate::validate_inputs(agent, inputs)?;
            rich::substitute(agent, &mut map)?;
            super::marks::neutralise_inputs(&mut map);
            owned = map;
            &owned
        }
    };
    let (text, interps) = renderers::render_sourced(agent, inputs)?;
    Ok(segments(agent, &text, &interps))
}

/// The segments of a rendered text whose values are `interps` (sorted, not overlapping): adjacent
/// template text is one segment, empty template text none.
pub(crate) fn segments(agent: &Agent, text: &str, interps: &[Interp]) -> Vec<RenderSegment> {
    let format = &agent.template.format;
    let strict_inputs = format.strict_inputs();
    let is_strict = |source: Option<&str>| source.is_some_and(|s| format.strict || strict_inputs.contains(&s));
    let mut out = Vec::with_capacity(interps.len() * 2 + 1);
    let mut at = 0;
    let literal = |out: &mut Vec<RenderSegment>, piece: &str| {
        if piece.is_empty() {
            return;
        }
        match out.last_mut() {
            Some(last) if last.kind == SegmentKind::Literal => last.text.push_str(piece),
            _ => out.push(RenderSegment {
                kind: SegmentKind::Literal,
                text: piece.to_owned(),
                source: None,
                strict: false,
            }),
        }
    };
    for interp in interps {
        literal(&mut out, &text[at..interp.range.start]);
        let source = interp.source.as_deref();
        out.push(RenderSegment {
            kind: SegmentKind::Interp,
            text: text[interp.range.clone()].to_owned(),
            source: source.map(str::to_owned),
            strict: is_strict(source),
        });
        at = interp.range.end;
    }
    literal(&mut out, &text[at..]);
    out
}
