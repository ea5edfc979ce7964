//! The built-in renderers, and rendering through the renderer registry.

mod direct;
mod jinja;
mod mustache;
mod sources;
mod values;

use crate::prepare::origin::body_origin;
use crate::prepare::rich;
use crate::{get_renderer, Agent, Error, Location, RenderContext, Renderer, Result};
use serde_json::{Map, Value};
use std::ops::Range;
use std::sync::Arc;

/// An interpolated value of a render: its bytes in the rendered text and its source (see
/// [`crate::RenderSegment::source`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interp {
    /// The bytes of the rendered text.
    pub range: Range<usize>,
    /// The root input the expression reads, when known.
    pub source: Option<Arc<str>>,
}

pub(crate) use jinja::render_prepared;
pub(crate) use values::{context, json_value};

/// Renders the template with already validated inputs (rich inputs replaced by nonces), with the
/// renderer registered for `template.format.kind`.
///
/// Whatever the renderer, a rendered text longer than
/// [`prompty_core::jinja::RenderLimits::max_output_bytes`] is an error (the built-in renderers stop
/// as soon as they pass it).
pub(crate) fn render_validated(agent: &Agent, inputs: &Map<String, Value>, ctx: RenderContext) -> Result<String> {
    rich::check_strict(agent, inputs)?;
    let out = get_renderer(&agent.template.format.kind)?.render(agent, inputs, &ctx)?;
    check_output(agent, out)
}

/// Whether `renderer` is this crate's `jinja2` renderer, which `prepare` calls directly (and feeds
/// typed inputs without JSON).
pub(crate) fn is_builtin_jinja(renderer: &Arc<dyn Renderer>) -> bool {
    let any: &dyn std::any::Any = renderer.as_ref();
    any.is::<Jinja2Renderer>()
}

/// Whether `renderer` is one of this crate's (`jinja2`, `mustache`).
pub(crate) fn is_builtin(renderer: &Arc<dyn Renderer>) -> bool {
    let any: &dyn std::any::Any = renderer.as_ref();
    any.is::<Jinja2Renderer>() || any.is::<MustacheRenderer>()
}

/// What [`crate::prepare`] renders: the text and the byte ranges of it that are values (never
/// message boundaries). The built-in `jinja2` renderer records where values land; any other
/// renderer writes them between marks, which are then split off.
pub(crate) fn render_for_prepare(agent: &Agent, inputs: &Map<String, Value>) -> Result<(String, Vec<Range<usize>>)> {
    rich::check_strict(agent, inputs)?;
    let renderer = get_renderer(&agent.template.format.kind)?;
    if is_builtin_jinja(&renderer) {
        return jinja::render_prepared_json(agent, inputs);
    }
    let marks = crate::prepare::marks::fresh();
    let out = check_output(agent, renderer.render(agent, inputs, &RenderContext { marks: Some(marks) })?)?;
    crate::prepare::split(agent, &marks, &out)
}

/// [`render_for_prepare`] with the source of every value: what [`crate::render_segments`] reads.
/// Inputs are validated, rich ones substituted and every noncharacter neutralised.
///
/// Sources (the rule: [`sources`]) are known for the built-in renderers: `jinja2` templates
/// that print in order (the direct subset and the engine), and `mustache` (the root of the tag's
/// name: `{{user.name}}` is `user`, `{{.}}` none). Values of `jinja2` templates that capture
/// output to print it later (`{% set %}…{% endset %}`, `{% filter %}`, macros, recursive loops)
/// and of renderers registered by others have none.
pub(crate) fn render_sourced(agent: &Agent, inputs: &Map<String, Value>) -> Result<(String, Vec<Interp>)> {
    rich::check_strict(agent, inputs)?;
    let renderer = get_renderer(&agent.template.format.kind)?;
    if is_builtin_jinja(&renderer) {
        return jinja::render_sourced_json(agent, inputs);
    }
    let any: &dyn std::any::Any = renderer.as_ref();
    if any.is::<MustacheRenderer>() {
        return mustache_sourced(agent, inputs);
    }
    let (text, ranges) = render_for_prepare(agent, inputs)?;
    Ok((text, ranges.into_iter().map(|range| Interp { range, source: None }).collect()))
}

/// A `mustache` render recording where each value lands and the root of its tag's name (values
/// are written as they are: the inputs hold no mark character).
fn mustache_sourced(agent: &Agent, inputs: &Map<String, Value>) -> Result<(String, Vec<Interp>)> {
    let source = agent.instructions.as_deref().unwrap_or("");
    let data = Value::Object(inputs.clone());
    let limits = prompty_core::jinja::render_limits();
    let budget = mustache::Budget { steps: limits.fuel, max_output_bytes: limits.max_output_bytes };
    let mut interps = Vec::new();
    let text = mustache::render(source, &data, budget, &mut |out, name, text| {
        let start = out.len();
        out.push_str(text);
        if text.is_empty() {
            return;
        }
        let root = name.split('.').next().unwrap_or_default();
        let source = (name != "." && !root.is_empty()).then(|| root.into());
        interps.push(Interp { range: start..out.len(), source });
    })
    .map_err(|e| mustache_error(agent, e))?;
    Ok((check_output(agent, text)?, interps))
}

/// Async form of [`render_for_prepare`].
pub(crate) async fn render_for_prepare_async(
    agent: &Agent,
    inputs: &Map<String, Value>,
) -> Result<(String, Vec<Range<usize>>)> {
    rich::check_strict(agent, inputs)?;
    let renderer = get_renderer(&agent.template.format.kind)?;
    if is_builtin_jinja(&renderer) {
        return jinja::render_prepared_json(agent, inputs);
    }
    let marks = crate::prepare::marks::fresh();
    let ctx = RenderContext { marks: Some(marks) };
    let out = check_output(agent, renderer.render_async(agent, inputs, &ctx).await?)?;
    crate::prepare::split(agent, &marks, &out)
}

/// `out` if it is within the output bound, else the error naming the prompt file.
fn check_output(agent: &Agent, out: String) -> Result<String> {
    let max = prompty_core::jinja::render_limits().max_output_bytes;
    if out.len() as u64 > max {
        return Err(output_too_large(agent, max));
    }
    Ok(out)
}

pub(super) fn output_too_large(agent: &Agent, max: u64) -> Error {
    Error::Template {
        at: Location::file(body_origin(agent).0),
        message: format!(
            "the rendered prompt exceeds {max} bytes (raise RenderLimits::max_output_bytes with prompty_core::jinja::set_render_limits)"
        ),
    }
}

fn out_of_fuel(fuel: u64) -> String {
    format!(
        "the template exceeded its render budget of {fuel} steps (raise RenderLimits::fuel with prompty_core::jinja::set_render_limits)"
    )
}

/// An `io::Write` into memory that refuses to grow past `max` bytes.
struct Capped {
    buf: Vec<u8>,
    max: u64,
    over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if (self.buf.len() + data.len()) as u64 > self.max {
            self.over = true;
            return Err(std::io::Error::other("output limit"));
        }
        self.buf.extend_from_slice(data);
        jinja::written(self.buf.len());
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Renders a minijinja template within the [`prompty_core::jinja::RenderLimits`]: the output stops
/// at the byte bound; running out of fuel becomes an error that says which bound was hit.
/// `error` turns any other minijinja error into the prompt's error.
pub(crate) fn render_bounded(
    agent: &Agent,
    tmpl: &minijinja::Template<'_, '_>,
    ctx: minijinja::Value,
    error: impl Fn(&minijinja::Error) -> Error,
) -> Result<String> {
    let limits = prompty_core::jinja::render_limits();
    // Room for the template's text and some values, so that most renders never grow the buffer.
    let room = (tmpl.source().len() + tmpl.source().len() / 2 + 256)
        .min(usize::try_from(limits.max_output_bytes).unwrap_or(usize::MAX));
    let mut out = Capped { buf: Vec::with_capacity(room), max: limits.max_output_bytes, over: false };
    match tmpl.render_captured_to(ctx, &mut out) {
        Ok(_) => Ok(String::from_utf8(out.buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())),
        Err(_) if out.over => Err(output_too_large(agent, limits.max_output_bytes)),
        Err(e) if e.kind() == minijinja::ErrorKind::OutOfFuel => match error(&e) {
            Error::Template { at, .. } => Err(Error::Template { at, message: out_of_fuel(limits.fuel) }),
            other => Err(other),
        },
        Err(e) => Err(error(&e)),
    }
}

/// Async form of [`render_validated`].
pub(crate) async fn render_validated_async(
    agent: &Agent,
    inputs: &Map<String, Value>,
    ctx: RenderContext,
) -> Result<String> {
    rich::check_strict(agent, inputs)?;
    let out = get_renderer(&agent.template.format.kind)?.render_async(agent, inputs, &ctx).await?;
    check_output(agent, out)
}

/// The `jinja2` renderer (also registered as `jinja` and `nunjucks`): minijinja configured for the
/// Prompty Jinja subset.
///
/// # `nunjucks`
///
/// `nunjucks` is the renderer key of the Prompty TypeScript runtime, whose prompts then load and
/// prepare unchanged. nunjucks is a port of Jinja 2 to JavaScript: most of the syntax agrees, and a
/// `nunjucks` template renders with the same engine, plus the nunjucks spellings Jinja lacks (in
/// templates of that format only; see [`prompty_core::jinja::Dialect`]). Compared with nunjucks
/// 3.2 configured as the TypeScript runtime configures it (`autoescape: false`,
/// `throwOnUndefined: false`):
///
/// | Construct | nunjucks | here |
/// | --- | --- | --- |
/// | `{{ x }}`, `{{ x \| safe }}`: no HTML escaping; undefined and `null` print nothing; `true`/`false`; `1.0` prints `1` | same | same |
/// | `{% if %}`/`{% elif %}`/`{% else %}`, `and`/`or`/`not`, comparisons, `x if c else y`, `in` | same | same |
/// | `{% for %}`…`{% else %}`, `loop.index`/`index0`/`first`/`last`/`length`/`revindex`/`revindex0` | same | same |
/// | `{% set %}` (also block `set`; a `set` inside a loop does not leak out), whitespace control `{%-`/`-%}`/`{{-`/`-}}`, `{% raw %}`, comments, `~` | same | same |
/// | filters `join`, `length` (also of a map), `upper`, `lower`, `trim`, `title`, `capitalize`, `replace`, `first`, `last`, `dictsort` | same | same |
/// | `{% elseif %}` | `elif` | supported (`nunjucks` only) |
/// | `{% verbatim %}` | `raw` | supported (`nunjucks` only) |
/// | `null` | none | supported (`nunjucks` only) |
/// | `\| dump`, `\| dump(2)` | `JSON.stringify` | supported (`nunjucks` only) |
/// | `{% for k, v in obj %}` over an object | keys and values | supported (`nunjucks` only) |
/// | `{% for x in obj %}` over an object | no iteration | iterates the keys (Jinja) |
/// | `{% if [] %}`, `{% if {} %}` | true (JavaScript truthiness) | false (Jinja): write `{% if items \| length %}` for both |
/// | `{{ [1, 2] }}`, `{{ {"a": 1} }}` | `1,2`, `[object Object]` | `[1, 2]`, `{'a': 1}` (Jinja); write `\| join(",")` or `\| dump` for both |
/// | `\| length` of an undefined value | `0` | an error |
/// | `\| default(d)` of `null` | `null` (prints nothing) | `d` (the Prompty subset, spec §5.5) |
/// | `True`, `False`, `None` | undefined variables | the literals (Jinja) |
/// | `'a' + 1` | `a1` | an error (Jinja): write `'a' ~ 1` |
/// | method calls (`s.upper()`) | refused by the TypeScript runtime | errors (minijinja has no methods on plain values) |
/// | regular expression literals `r/…/`, `{% asyncEach %}`, `{% asyncAll %}`, `{% ifAsync %}`, `cycler`/`joiner` | supported | template errors |
///
/// ```
/// use prompty::{builtins::Jinja2Renderer, RenderContext, Renderer};
/// let agent = prompty::load_str("Hi {{ who }}", ".", "<string>")?;
/// let inputs = serde_json::json!({"who": "Ann"});
/// let out = Jinja2Renderer.render(&agent, inputs.as_object().unwrap(), &RenderContext::plain())?;
/// assert_eq!(out, "Hi Ann");
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
#[prompty_macros::renderer("jinja2", "jinja", "nunjucks")]
pub struct Jinja2Renderer;

impl Renderer for Jinja2Renderer {
    fn render(&self, agent: &Agent, inputs: &Map<String, Value>, ctx: &RenderContext) -> Result<String> {
        jinja::render(agent, agent.instructions.as_deref().unwrap_or(""), inputs, *ctx)
    }
}

/// The `mustache` renderer: logic-less templates, no HTML escaping, no partials.
///
/// ```
/// use prompty::{builtins::MustacheRenderer, RenderContext, Renderer};
/// let agent = prompty::load_str("{{#items}}{{.}} {{/items}}", ".", "<string>")?;
/// let inputs = serde_json::json!({"items": ["a", "b"]});
/// assert_eq!(MustacheRenderer.render(&agent, inputs.as_object().unwrap(), &RenderContext::plain())?, "a b ");
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
#[prompty_macros::renderer("mustache")]
pub struct MustacheRenderer;

impl Renderer for MustacheRenderer {
    fn render(&self, agent: &Agent, inputs: &Map<String, Value>, ctx: &RenderContext) -> Result<String> {
        let source = agent.instructions.as_deref().unwrap_or("");
        let data = Value::Object(inputs.clone());
        let limits = prompty_core::jinja::render_limits();
        let budget = mustache::Budget { steps: limits.fuel, max_output_bytes: limits.max_output_bytes };
        mustache::render(source, &data, budget, &mut |out, _, text| ctx.write_value(out, text))
            .map_err(|e| mustache_error(agent, e))
    }
}

/// The error of a mustache render, located in the prompt file.
fn mustache_error(agent: &Agent, e: mustache::MustacheError) -> Error {
    let (file, first_line) = body_origin(agent);
    match e.line {
        // A budget error: it belongs to no one tag.
        0 => Error::Template { at: Location::file(file), message: e.message },
        line => Error::Template { at: Location::file(file).at(first_line + line - 1, e.column), message: e.message },
    }
}
