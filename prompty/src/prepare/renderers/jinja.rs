//! The `jinja2` renderer, on minijinja, configured for the Prompty Jinja subset: literal text kept
//! verbatim (trailing newline included, no `trim_blocks`/`lstrip_blocks`), no HTML escaping,
//! undefined values (and attributes of them) print as nothing, `true`/`false` print in lowercase,
//! `none` prints as nothing and `1.0` as `1`. `default` also applies to `none`, `trim` strips
//! `[ \t\r\n]`, `join` prints its items the same way. Templates cannot reach the file system or
//! the network: no loader is configured, so `include`/`import` fail.

use super::direct;
use super::sources;
use super::values::{format_value, json_context, Inputs};
use super::Interp;
use crate::{Agent, Error, Location, RenderContext, Result};
use minijinja::value::{Serde, Value, ValueKind};
use minijinja::Environment;
use prompty_core::jinja::Dialect;
use serde_json::{Map, Value as Json};
use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

const NAME: &str = "template";

/// How the render running on this thread writes interpolated values.
#[derive(Clone, Copy)]
enum Emit {
    /// As `ctx` says: as they are, or between marks.
    Context(RenderContext),
    /// As they are (noncharacters replaced), recording where each one lands in the output.
    Ranges,
    /// As [`Emit::Ranges`], also recording the source of each (the template being the sourced
    /// variant of [`Sourced`]).
    Sourced,
}

thread_local! {
    static EMIT: Cell<Option<Emit>> = const { Cell::new(None) };
    /// In [`Emit::Ranges`] renders: the bytes written to the output so far, kept by the writer.
    static WRITTEN: Cell<usize> = const { Cell::new(0) };
    /// In [`Emit::Ranges`] renders: the byte ranges of the output that are values.
    static RANGES: RefCell<Vec<Range<usize>>> = const { RefCell::new(Vec::new()) };
    /// In [`Emit::Sourced`] renders: the source (an index in [`Sourced::sources`]) of the value
    /// about to be printed, set by the source filter and taken by the formatter.
    static PENDING: Cell<Option<u32>> = const { Cell::new(None) };
    /// In [`Emit::Sourced`] renders: the values printed, with the index of their source.
    static SOURCED: RefCell<Vec<(Range<usize>, Option<u32>)>> = const { RefCell::new(Vec::new()) };
}

/// A compiled template, remembering the source and dialect it was compiled from.
struct Compiled {
    source: String,
    dialect: Dialect,
    env: Environment<'static>,
    /// Whether everything the template prints goes straight to the output, in order (no
    /// `{% set %}` or `{% filter %}` block and no recursive loop captures output to print it
    /// later), and its text holds no mark character.
    in_order: bool,
    /// The template as a program of the subset [`direct`] renders, when it prints in order and
    /// is made of nothing else: `prepare` then renders it without the template engine.
    program: Option<direct::Program>,
    /// The variant of the template that also tells where each value comes from, built the first
    /// time segments are asked for (only for templates that print in order).
    sourced: OnceLock<Option<Sourced>>,
}

/// A template printing in order, rewritten so that each `{{ path }}` tells its source (see
/// [`sources::sourced_text`]). It prints exactly what the template prints (tests compare them);
/// its filter calls take a little of the render's fuel, so a render within a few steps per value
/// of [`prompty_core::jinja::RenderLimits::fuel`] can run out here and not in `prepare`.
struct Sourced {
    env: Environment<'static>,
    /// The sources the rewritten template names, by index.
    sources: Vec<Arc<str>>,
}

/// The filter of [`Sourced`] templates: notes the source of the value the formatter prints next.
fn source_filter(value: Value, index: u32) -> Value {
    PENDING.with(|p| p.set(Some(index)));
    value
}

fn environment(dialect: Dialect) -> Environment<'static> {
    let mut env = prompty_core::jinja::environment_for(dialect);
    env.set_formatter(|out, _state, value| {
        let marks = match EMIT.with(Cell::get) {
            Some(Emit::Context(RenderContext { marks: Some(marks) })) => marks,
            Some(Emit::Ranges) => return write_recorded(out, value).map_err(|_| write_error()),
            Some(Emit::Sourced) => return write_sourced(out, value).map_err(|_| write_error()),
            _ => return format_value(value, out).map_err(|_| write_error()),
        };
        // Written straight into the output: the value between this render's marks.
        let written = match value.kind() {
            // Strings may hold marks (a captured block) or noncharacters: `write_value` sorts them out.
            ValueKind::String => marks.write_value(out, value.as_str().unwrap_or_default()),
            // These print as ASCII: nothing to neutralise.
            ValueKind::Undefined | ValueKind::None | ValueKind::Bool | ValueKind::Number => {
                marks.write_plain(out, |out| format_value(value, out))
            }
            _ => {
                let mut text = String::new();
                format_value(value, &mut text).and_then(|()| marks.write_value(out, &text))
            }
        };
        written.map_err(|_| write_error())
    });
    env.add_filter("default", default);
    env.add_filter("d", default);
    env.add_filter("trim", trim);
    env.add_filter("join", join);
    env
}

/// Writes a value as it prints and records the range of the output it took (the output is the
/// render's own writer: [`Emit::Ranges`] is only used when nothing is captured). No mark is
/// written, so a noncharacter in it can forge nothing; the last step of `prepare` replaces them all.
fn write_recorded(out: &mut minijinja::Output<'_>, value: &Value) -> std::fmt::Result {
    let start = WRITTEN.with(Cell::get);
    format_value(value, out)?;
    let end = WRITTEN.with(Cell::get);
    if end > start {
        RANGES.with(|r| r.borrow_mut().push(start..end));
    }
    Ok(())
}

/// [`write_recorded`] for [`Emit::Sourced`] renders: with the source the filter noted, if any.
fn write_sourced(out: &mut minijinja::Output<'_>, value: &Value) -> std::fmt::Result {
    let source = PENDING.with(Cell::take);
    let start = WRITTEN.with(Cell::get);
    format_value(value, out)?;
    let end = WRITTEN.with(Cell::get);
    if end > start {
        SOURCED.with(|r| r.borrow_mut().push((start..end, source)));
    }
    Ok(())
}

fn write_error() -> minijinja::Error {
    minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "could not write output")
}

fn default(value: Value, fallback: Option<Value>, boolean: Option<bool>) -> Value {
    let empty = value.is_undefined() || value.is_none() || (boolean == Some(true) && !value.is_true());
    if empty {
        fallback.unwrap_or_else(|| Value::from(""))
    } else {
        value
    }
}

fn trim(value: &str, chars: Option<&str>) -> String {
    match chars {
        Some(c) => value.trim_matches(|ch| c.contains(ch)).to_owned(),
        None => value.trim_matches([' ', '\t', '\r', '\n']).to_owned(),
    }
}

fn join(value: &Value, joiner: Option<&str>) -> std::result::Result<String, minijinja::Error> {
    let mut out = String::with_capacity(64);
    if value.is_undefined() || value.is_none() {
        return Ok(out);
    }
    for (i, item) in value.try_iter()?.enumerate() {
        if i > 0 {
            out.push_str(joiner.unwrap_or(""));
        }
        // Writing into a String cannot fail.
        let _ = format_value(&item, &mut out);
    }
    Ok(out)
}

fn template_error(agent: &Agent, e: &minijinja::Error) -> Error {
    let (file, first_line) = crate::prepare::origin::body_origin(agent);
    let mut at = Location::file(file);
    if let Some(line) = e.line() {
        at = at.at_line(first_line + line - 1);
    }
    let mut message = e.kind().to_string();
    if let Some(detail) = e.detail() {
        message.push_str(": ");
        message.push_str(detail);
    }
    Error::Template { at, message }
}

/// The compiled template of `agent`, compiled and cached on first use.
fn compiled(agent: &Agent, source: &str) -> Result<Arc<Compiled>> {
    // `nunjucks` templates are translated to the Jinja syntax (same lines); any other key is
    // this renderer's Jinja (`jinja2`, `jinja`, or a key a crate registered it under).
    let dialect = Dialect::of(&agent.template.format.kind).unwrap_or(Dialect::Jinja);
    let cache = agent.runtime_cache();
    if let Some(c) = cache.get::<Compiled>() {
        // The fuel is part of the environment: a changed render budget recompiles.
        if c.source == source && c.dialect == dialect && c.env.fuel() == Some(prompty_core::jinja::render_limits().fuel)
        {
            return Ok(c);
        }
    }
    prompty_core::jinja::check_source(source).map_err(|(line, message)| {
        let (file, first_line) = crate::prepare::origin::body_origin(agent);
        Error::Template { at: Location::file(file).at_line(first_line + line - 1), message }
    })?;
    let text = prompty_core::jinja::translate(dialect, source).text.into_owned();
    let mut env = environment(dialect);
    // A mark character in the template's own text is refused the same way whichever way values
    // are tracked: the marks find it.
    let in_order = prints_in_order(&text, &env) && !text.contains(['\u{FDD0}', '\u{FDD1}']);
    let program = if in_order { program(&text, &env) } else { None };
    env.add_template_owned(NAME, text).map_err(|e| template_error(agent, &e))?;
    let c = Arc::new(Compiled { source: source.to_owned(), dialect, env, in_order, program, sourced: OnceLock::new() });
    cache.set(Arc::clone(&c));
    Ok(c)
}

/// Whether every value the template prints goes straight to the output, in order (no block
/// captures output to print it later): then a render can record where values land instead of
/// marking them. Unknown syntax counts as capturing.
fn prints_in_order(source: &str, env: &Environment<'static>) -> bool {
    use minijinja::machinery::ast::Stmt;
    fn body(stmts: &[Stmt<'_>]) -> bool {
        stmts.iter().all(stmt)
    }
    #[allow(unreachable_patterns)]
    fn stmt(s: &Stmt<'_>) -> bool {
        match s {
            Stmt::Template(t) => body(&t.children),
            Stmt::EmitExpr(_) | Stmt::EmitRaw(_) | Stmt::Set(_) | Stmt::Do(_) => true,
            Stmt::ForLoop(f) => !f.recursive && body(&f.body) && body(&f.else_body),
            Stmt::IfCond(i) => body(&i.true_body) && body(&i.false_body),
            Stmt::WithBlock(w) => body(&w.body),
            Stmt::AutoEscape(a) => body(&a.body),
            // `{% set x %}...{% endset %}`, `{% filter %}`, and anything else.
            _ => false,
        }
    }
    minijinja::machinery::parse(source, NAME, env.syntax().clone()).is_ok_and(|ast| stmt(&ast))
}

/// The template as a [`direct::Program`], when it is made of the subset that module renders.
fn program(source: &str, env: &Environment<'static>) -> Option<direct::Program> {
    let ast = minijinja::machinery::parse(source, NAME, env.syntax().clone()).ok()?;
    direct::Program::compile(&ast, env.globals().map(|(name, _)| name.into()).collect())
}

/// The sourced variant of `c`, built on first use; `None` when the template does not print in
/// order or its rewrite does not compile.
fn sourced(c: &Compiled) -> Option<&Sourced> {
    c.sourced
        .get_or_init(|| {
            if !c.in_order {
                return None;
            }
            let text = c.env.get_template(NAME).ok()?.source().to_owned();
            let ast = minijinja::machinery::parse(&text, NAME, c.env.syntax().clone()).ok()?;
            let (rewritten, sources) = sources::sourced_text(&text, &ast)?;
            let mut env = environment(c.dialect);
            env.add_filter(sources::FILTER, source_filter);
            env.add_template_owned(NAME, rewritten).ok()?;
            Some(Sourced { env, sources })
        })
        .as_ref()
}

/// Renders `c`'s program, if it has one and it can render these inputs exactly as the engine
/// would; `None` when the engine must.
fn render_direct(
    agent: &Agent,
    c: &Compiled,
    inputs: direct::Inputs<'_>,
) -> Option<Result<(String, Vec<Range<usize>>)>> {
    let program = c.program.as_ref()?;
    let limits = prompty_core::jinja::render_limits();
    let max = usize::try_from(limits.max_output_bytes).unwrap_or(usize::MAX);
    match program.render(inputs, limits.fuel, max) {
        Ok(done) => Some(Ok(done)),
        Err(direct::Outcome::TooLarge) => Some(Err(super::output_too_large(agent, limits.max_output_bytes))),
        Err(direct::Outcome::Unsupported) => None,
    }
}

/// [`render_direct`] keeping the source of every value.
fn render_direct_sourced(
    agent: &Agent,
    c: &Compiled,
    inputs: direct::Inputs<'_>,
) -> Option<Result<(String, Vec<Interp>)>> {
    let program = c.program.as_ref()?;
    let limits = prompty_core::jinja::render_limits();
    let max = usize::try_from(limits.max_output_bytes).unwrap_or(usize::MAX);
    match program.render_sourced(inputs, limits.fuel, max) {
        Ok(done) => Some(Ok(done)),
        Err(direct::Outcome::TooLarge) => Some(Err(super::output_too_large(agent, limits.max_output_bytes))),
        Err(direct::Outcome::Unsupported) => None,
    }
}

/// Sets how this thread's render writes values, until dropped.
struct EmitGuard;

impl EmitGuard {
    fn set(emit: Emit) -> EmitGuard {
        EMIT.with(|m| m.set(Some(emit)));
        EmitGuard
    }
}

impl Drop for EmitGuard {
    fn drop(&mut self) {
        EMIT.with(|m| m.set(None));
    }
}

/// Renders the agent's instructions with `inputs`, writing interpolated values through `ctx`.
pub(super) fn render(agent: &Agent, source: &str, inputs: &Map<String, Json>, ctx: RenderContext) -> Result<String> {
    let c = compiled(agent, source)?;
    let tmpl = c.env.get_template(NAME).map_err(|e| template_error(agent, &e))?;
    let _emit = EmitGuard::set(Emit::Context(ctx));
    super::render_bounded(agent, &tmpl, Value::from(Serde(inputs)), |e| template_error(agent, e))
}

/// Renders the agent's instructions for `prepare` with the context `context` builds: the text and
/// the byte ranges of it that are values. Values are recorded where they land when the template
/// prints in order, else marked and split; `context` is told which (`true`: values are marked, so
/// they must hold no mark character).
pub(crate) fn render_prepared(
    agent: &Agent,
    context: impl FnOnce(bool) -> Result<Value>,
) -> Result<(String, Vec<Range<usize>>)> {
    let source = agent.instructions.as_deref().unwrap_or("");
    let c = compiled(agent, source)?;
    let context = context(!c.in_order)?;
    if let Some(inputs) = context.downcast_object_ref::<Inputs>() {
        if let Some(done) = render_direct(agent, &c, direct::Inputs::Values(inputs)) {
            return done;
        }
    }
    render_engine(agent, &c, context)
}

/// [`render_prepared`] of JSON inputs (already validated, with no mark character): read where
/// they are when the template is of the subset [`direct`] renders, else turned into template values.
pub(crate) fn render_prepared_json(agent: &Agent, inputs: &Map<String, Json>) -> Result<(String, Vec<Range<usize>>)> {
    let source = agent.instructions.as_deref().unwrap_or("");
    let c = compiled(agent, source)?;
    if let Some(done) = render_direct(agent, &c, direct::Inputs::Json(inputs)) {
        return done;
    }
    render_engine(agent, &c, json_context(inputs))
}

/// [`render_prepared_json`] with the source of every value (see [`sources`]): values recorded
/// where they land keep their source; values of templates that capture output (rendered between
/// marks) have none.
pub(crate) fn render_sourced_json(agent: &Agent, inputs: &Map<String, Json>) -> Result<(String, Vec<Interp>)> {
    let source = agent.instructions.as_deref().unwrap_or("");
    let c = compiled(agent, source)?;
    if let Some(done) = render_direct_sourced(agent, &c, direct::Inputs::Json(inputs)) {
        return done;
    }
    let Some(s) = sourced(&c) else {
        let (text, ranges) = render_engine(agent, &c, json_context(inputs))?;
        return Ok((text, ranges.into_iter().map(|range| Interp { range, source: None }).collect()));
    };
    render_engine_sourced(agent, s, json_context(inputs))
}

/// Renders the sourced variant of a template that prints in order.
fn render_engine_sourced(agent: &Agent, s: &Sourced, context: Value) -> Result<(String, Vec<Interp>)> {
    let tmpl = s.env.get_template(NAME).map_err(|e| template_error(agent, &e))?;
    let _emit = EmitGuard::set(Emit::Sourced);
    WRITTEN.with(|w| w.set(0));
    PENDING.with(|p| p.set(None));
    SOURCED.with(|r| r.borrow_mut().clear());
    let text = super::render_bounded(agent, &tmpl, context, |e| template_error(agent, e));
    let values = SOURCED.with(|r| std::mem::take(&mut *r.borrow_mut()));
    let interps = values
        .into_iter()
        .map(|(range, source)| Interp { range, source: source.and_then(|i| s.sources.get(i as usize)).map(Arc::clone) })
        .collect();
    Ok((text?, interps))
}

/// [`render_prepared`] by the template engine.
fn render_engine(agent: &Agent, c: &Compiled, context: Value) -> Result<(String, Vec<Range<usize>>)> {
    let tmpl = c.env.get_template(NAME).map_err(|e| template_error(agent, &e))?;
    if !c.in_order {
        let marks = crate::prepare::marks::fresh();
        let marked = {
            let _emit = EmitGuard::set(Emit::Context(RenderContext { marks: Some(marks) }));
            super::render_bounded(agent, &tmpl, context, |e| template_error(agent, e))?
        };
        return crate::prepare::split(agent, &marks, &marked);
    }
    let _emit = EmitGuard::set(Emit::Ranges);
    WRITTEN.with(|w| w.set(0));
    RANGES.with(|r| r.borrow_mut().clear());
    let text = super::render_bounded(agent, &tmpl, context, |e| template_error(agent, e));
    let ranges = RANGES.with(|r| std::mem::take(&mut *r.borrow_mut()));
    Ok((text?, ranges))
}

/// Notes how many bytes the render's writer holds (for [`Emit::Ranges`]).
pub(super) fn written(len: usize) {
    WRITTEN.with(|w| w.set(len));
}

#[cfg(test)]
mod tests {
    use super::super::values::{context, json_value};
    use super::*;
    use serde_json::json;
    use std::borrow::Cow;

    /// JSON inputs become the values serde would make of them, of the same kinds and reprs.
    #[test]
    fn json_values_are_the_serde_values() {
        let json = json!({
            "s": "text", "long": "a string longer than the twenty-two bytes of a small one", "e": "", "i": 42,
            "n": -7, "big": u64::MAX, "min": i64::MIN, "f": 1.0, "g": -0.5, "t": true, "z": null,
            "l": [1, "a", null, [2.5], {"k": "v"}], "o": {"b": 1, "a": {"n": [1, {"x": null}]}, "": "empty key"}
        });
        let direct = json_value(&json);
        let serde = Value::from(Serde(&json));
        assert_eq!(direct, serde);
        assert_eq!(format!("{direct:?}"), format!("{serde:?}"));
        for (k, v) in json.as_object().unwrap() {
            let (a, b) = (json_value(v), Value::from(Serde(v)));
            assert_eq!(a.kind(), b.kind(), "{k}");
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{k}");
            assert_eq!(a.to_string(), b.to_string(), "{k}");
            assert_eq!(a.is_integer(), b.is_integer(), "{k}");
            assert_eq!(a.as_object().map(|o| o.repr()), b.as_object().map(|o| o.repr()), "{k}");
        }
        let env = environment(Dialect::Jinja);
        let source = "{{ o }} {{ l }} {{ o | dictsort }} {{ o.a.n[1] }} {{ big + 1 }} {{ min - 1 }} {{ f }} \
                      {{ l | length }} {{ o | items | list }} {{ 'b' in o }} {{ o == o }} {{ l | reverse | list }}";
        let tmpl = env.template_from_str(source).unwrap();
        assert_eq!(tmpl.render(json_value(&json)).ok(), tmpl.render(Value::from(Serde(&json))).ok());
    }

    /// Integers print as `Display` prints them.
    #[test]
    fn integers_print_as_display_does() {
        for i in [0, 7, -7, 10, -10, 99, 1000, i64::MAX, i64::MIN, i64::MIN + 1] {
            let mut out = String::new();
            format_value(&Value::from(i), &mut out).unwrap();
            assert_eq!(out, i.to_string());
            assert_eq!(out, Value::from(i).to_string());
        }
        for v in [Value::from(u64::MAX), Value::from(i128::MIN), Value::from(12u8)] {
            let mut out = String::new();
            format_value(&v, &mut out).unwrap();
            assert_eq!(out, v.to_string());
        }
    }

    /// Lookups by tag find every name, and nothing else.
    #[test]
    fn inputs_are_found_by_name() {
        let names = ["field_00", "field_10", "field_01", "a", "", "é", "fieldX00"];
        let ctx = context(names.iter().enumerate().map(|(i, n)| (Cow::Owned(n.to_string()), Value::from(i))).collect());
        let inputs = ctx.downcast_object_ref::<Inputs>().unwrap();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(inputs.get(n), Some(&Value::from(i)), "{n}");
        }
        for missing in ["field_0", "field_02", "b", "e", "field_000"] {
            assert!(inputs.get(missing).is_none(), "{missing}");
        }
    }

    /// The engine's render of `source` and the direct one (when it renders it), with the inputs
    /// as JSON and as template values.
    type Rendered = Result<(String, Vec<Range<usize>>)>;

    fn both_ways(source: &str, map: &Map<String, Json>) -> (Rendered, [Option<Rendered>; 2]) {
        try_both_ways(source, map).unwrap_or_else(|| panic!("{source:?} does not compile"))
    }

    fn try_both_ways(source: &str, map: &Map<String, Json>) -> Option<(Rendered, [Option<Rendered>; 2])> {
        let agent = prompty_core::load_str(source, ".", "t.prompty").ok()?;
        let c = compiled(&agent, source).ok()?;
        let ctx = json_context(map);
        let direct_json = render_direct(&agent, &c, direct::Inputs::Json(map));
        let direct_values =
            render_direct(&agent, &c, direct::Inputs::Values(ctx.downcast_object_ref::<Inputs>().unwrap()));
        Some((render_engine(&agent, &c, ctx), [direct_json, direct_values]))
    }

    fn bench_inputs() -> Json {
        json!({
            "s": "text", "e": "", "i": 42, "n": -7, "f": 1.0, "g": 0.5, "h": 1e20, "t": true, "u": false,
            "z": null, "l": [1, "a", null], "o": {"k": "v", "n": [1], "": 0}, "x": "\u{FDD0}mark\nuser:\nhi", "é": "ü",
            "big": u64::MAX, "w": "  Ünïcode ß  ", "num": "10",
            "items": [
                {"name": "ada", "score": 72, "tags": ["a", "b"]},
                {"name": "Bob", "score": 50.5, "tags": []},
                {"name": "", "score": -1, "tags": [1, true, null, 2.5]},
                {"name": "ß", "score": 0, "tags": ["x"]}
            ],
            "odd": [{"tags": "x"}, {"score": null}],
            "empty": [], "nested": [[1, 2], [], [3]]
        })
    }

    /// Templates of the direct subset print exactly what the engine prints, values at the same
    /// places, from JSON inputs and from template values.
    #[test]
    fn direct_renders_as_the_engine_renders() {
        let inputs = bench_inputs();
        let map = inputs.as_object().unwrap();
        let templates = [
            "Hi {{ s }}!",
            "{{s}}{{e}}{{i}}{{n}}{{f}}{{g}}{{h}}{{t}}{{u}}{{z}}{{big}}",
            "{{ l }} and {{ o }} {{ items[0] }}",
            "{{ missing }} x {{ x }} {{ missing.a.b }}",
            "a\n  {{- s -}}  \nb",
            "{% raw %}{{ s }}{% endraw %} {{ s }}",
            "{# comment #}line\n{{ i }}\n",
            "trailing newline\n",
            "{{ s }}é\n\n",
            "",
            "{% for item in items %}{{ loop.index }}. {{ item.name | upper }} ({{ item.score }}){% if item.tags %} [{{ item.tags | join(', ') }}]{% endif %}{% if item.score > 50 %} high{% else %} low{% endif %}\n{% endfor %}",
            "{% for a in nested %}{% for b in a %}{{ loop.index0 }}/{{ loop.length }}{{ b }}{% if loop.last %};{% endif %}{% else %}none{% endfor %}|{% endfor %}",
            "{% for x in empty %}{{ x }}{% else %}nothing{% endfor %} {{ empty | length }} {{ s | length }} {{ o | count }}",
            "{{ w | trim }}|{{ w | trim(' ß') }}|{{ w | lower }}|{{ z | default('dflt') }}|{{ missing | d(1) }}|{{ e | default('x', true) }}|{{ e | default('x') }}",
            "{% if not t %}a{% elif u or i %}b{{ u or i }}{{ t and s }}{% else %}c{% endif %}",
            "{{ 'y' if t else 'n' }}{{ 'y' if u }}{{ s if missing is defined else 'undef' }}{{ z is none }}{{ missing is undefined }}",
            "{{ 1 < i < 50 }}{{ i == 42 }}{{ s != 'text' }}{{ s < 'u' }}{{ f == 1 }}{{ g >= 0.5 }}{{ n <= -8 }}",
            "{{ o['k'] }}{{ o.n[0] }}{{ l[1] }}{{ l[5] }}{{ o['missing'] }}",
            "{% for item in items %}{{ item.name }}{{ item.name == 'ada' }}{{ item.score is defined }}{% endfor %}",
            "{{ items | length }} {{ (items[0]).tags | join }} {{ l | join('-') }} {{ z | join }}",
        ];
        let mut failed = Vec::new();
        for source in templates {
            let (engine, direct) = both_ways(source, map);
            for (way, d) in ["json", "values"].iter().zip(direct) {
                match d {
                    Some(d) => assert_eq!(d.unwrap(), *engine.as_ref().unwrap(), "{source:?} ({way})"),
                    None => failed.push(format!("{source:?} ({way})")),
                }
            }
        }
        assert!(failed.is_empty(), "should render directly: {failed:#?}");
        // Outside the subset: the engine.
        for source in [
            "{{ range }}",
            "{% set a = 1 %}{{ a }}",
            "{{ s | title }}",
            "{{ i + 1 }}",
            "{% for k in o %}{{ k }}{% endfor %}",
            "{{ loop.cycle }}{% for x in l %}{{ loop.cycle('a') }}{% endfor %}",
            "{{ missing > 1 }}",
            "{{ s | upper(1) }}",
            "{{ i | upper }}",
            "{% for x in odd %}{{ x.tags | join }}{% endfor %}",
            "{% for x in odd %}{{ x.score > 1 }}{% endfor %}",
        ] {
            let (_, direct) = both_ways(source, map);
            assert!(direct.iter().all(Option::is_none), "{source:?} should be left to the engine");
        }
    }

    /// A small generator of templates of the subset (and a little beyond).
    struct Gen(u64);
    impl Gen {
        fn next(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[self.next(from.len())]
        }
        fn value(&mut self, depth: usize, in_loop: bool) -> String {
            let vars: &[&str] = if in_loop {
                &[
                    "s",
                    "i",
                    "t",
                    "u",
                    "z",
                    "l",
                    "o",
                    "items",
                    "it",
                    "it.name",
                    "it.score",
                    "it.tags",
                    "loop.index",
                    "loop.first",
                    "loop.revindex",
                    "missing",
                    "w",
                    "num",
                ]
            } else {
                &[
                    "s", "e", "i", "n", "f", "g", "t", "u", "z", "l", "o", "o.k", "o.n", "items", "missing", "w",
                    "big", "num", "nested",
                ]
            };
            let atom = match self.next(4) {
                0 => self.pick(&["1", "0", "'text'", "''", "true", "none", "2.5", "-3"]).to_owned(),
                _ => self.pick(vars).to_owned(),
            };
            if depth == 0 {
                return atom;
            }
            match self.next(9) {
                0 => format!("not {}", self.value(depth - 1, in_loop)),
                1 => format!(
                    "({} {} {})",
                    self.value(depth - 1, in_loop),
                    self.pick(&["and", "or"]),
                    self.value(depth - 1, in_loop)
                ),
                2 => format!(
                    "({} {} {})",
                    self.value(depth - 1, in_loop),
                    self.pick(&["==", "!=", "<", ">", "<=", ">="]),
                    self.value(depth - 1, in_loop)
                ),
                3 => format!(
                    "({} | {})",
                    self.value(depth - 1, in_loop),
                    self.pick(&[
                        "upper",
                        "lower",
                        "length",
                        "join(', ')",
                        "join",
                        "default('d')",
                        "d(0, true)",
                        "trim",
                        "count",
                        "title"
                    ])
                ),
                4 => format!(
                    "({} is {})",
                    self.value(depth - 1, in_loop),
                    self.pick(&["defined", "undefined", "none", "not none"])
                ),
                5 => format!(
                    "({} if {} else {})",
                    self.value(depth - 1, in_loop),
                    self.value(depth - 1, in_loop),
                    self.value(depth - 1, in_loop)
                ),
                6 => format!(
                    "{}[{}]",
                    self.pick(&["l", "o", "items", "nested"]),
                    self.pick(&["0", "1", "'k'", "-1", "9"])
                ),
                _ => atom,
            }
        }
        fn body(&mut self, depth: usize, in_loop: bool, out: &mut String) {
            for _ in 0..1 + self.next(4) {
                match self.next(if depth == 0 { 2 } else { 5 }) {
                    0 => out.push_str(self.pick(&["a", " ", "\n", "user:\n", "é-", "{{ '{' }}"])),
                    1 => out.push_str(&format!("{{{{ {} }}}}", self.value(2, in_loop))),
                    2 => {
                        out.push_str(&format!("{{% if {} %}}", self.value(2, in_loop)));
                        self.body(depth - 1, in_loop, out);
                        if self.next(2) == 0 {
                            out.push_str(&format!("{{% elif {} %}}", self.value(1, in_loop)));
                            self.body(depth - 1, in_loop, out);
                        }
                        if self.next(2) == 0 {
                            out.push_str("{% else %}");
                            self.body(depth - 1, in_loop, out);
                        }
                        out.push_str("{% endif %}");
                    }
                    3 => {
                        out.push_str(&format!(
                            "{{% for it in {} %}}",
                            self.pick(&["items", "l", "empty", "nested", "o.n", "s", "z", "missing", "it.tags", "o"])
                        ));
                        self.body(depth - 1, true, out);
                        if self.next(3) == 0 {
                            out.push_str("{% else %}");
                            self.body(depth - 1, in_loop, out);
                        }
                        out.push_str("{% endfor %}");
                    }
                    _ => out.push_str(&format!("{{{{ {} }}}}", self.value(1, in_loop))),
                }
            }
        }
    }

    /// A small generator of templates of the subset (and a little beyond), rendered both ways: every
    /// template the direct renderer takes prints what the engine prints.
    #[test]
    fn generated_templates_render_as_the_engine_renders() {
        let inputs = bench_inputs();
        let map = inputs.as_object().unwrap();
        let mut gen = Gen(0x9E37_79B9_7F4A_7C15);
        let (mut direct_count, mut total) = (0, 0);
        for _ in 0..3000 {
            let mut source = String::new();
            gen.body(3, false, &mut source);
            let Some((engine, direct)) = try_both_ways(&source, map) else { continue };
            total += 1;
            for (way, d) in ["json", "values"].iter().zip(direct) {
                if let Some(d) = d {
                    direct_count += 1;
                    match (&d, &engine) {
                        (Ok(a), Ok(b)) => assert_eq!(a, b, "{source:?} ({way})"),
                        (a, b) => assert_eq!(a.is_ok(), b.is_ok(), "{source:?} ({way}): {a:?} / {b:?}"),
                    }
                }
            }
        }
        eprintln!("{direct_count} direct renders of {total} templates");
        // The test must exercise the direct renderer: most generated templates are of its subset.
        assert!(total > 2500 && direct_count > total / 2, "{direct_count} direct renders of {total} templates");
    }

    type SourcedRender = Result<(String, Vec<Interp>)>;

    /// The sourced render of `source` by the engine (its variant that records sources), and the
    /// direct one (when it renders it).
    fn sourced_both_ways(
        source: &str,
        map: &Map<String, Json>,
    ) -> Option<(SourcedRender, Option<SourcedRender>, Rendered)> {
        let agent = prompty_core::load_str(source, ".", "t.prompty").ok()?;
        let c = compiled(&agent, source).ok()?;
        let direct = render_direct_sourced(&agent, &c, direct::Inputs::Json(map));
        let plain = render_engine(&agent, &c, json_context(map));
        let engine = match sourced(&c) {
            Some(s) => render_engine_sourced(&agent, s, json_context(map)),
            None => panic!("{source:?} prints in order but has no sourced variant"),
        };
        Some((engine, direct, plain))
    }

    fn sources_of(interps: &[Interp]) -> Vec<Option<&str>> {
        interps.iter().map(|i| i.source.as_deref()).collect()
    }

    /// The engine and the direct renderer find the same sources; the sourced variant prints what
    /// the template prints, values at the same places.
    #[test]
    fn sources_are_the_same_both_ways() {
        let inputs = bench_inputs();
        let map = inputs.as_object().unwrap();
        let cases: &[(&str, &[Option<&str>])] = &[
            ("Hi {{ s }}!", &[Some("s")]),
            ("{{ o.k }} {{ o['k'] }} {{ l[1] }} {{ (o).k }}", &[Some("o"), Some("o"), Some("l"), Some("o")]),
            ("{{ s | upper }}{{ 'x' }}{{ i == 42 }}{{ t and s }}{{ s if t }}", &[None, None, None, None, None]),
            (
                // The third item's name is empty: no value.
                "{% for item in items %}{{ item.name }}{{ loop.index }}{% endfor %}",
                &[Some("items"), None, Some("items"), None, None, Some("items"), None],
            ),
            (
                "{% for a in nested %}{% for b in a %}{{ b }}{% endfor %}{% endfor %}",
                &[Some("nested"), Some("nested"), Some("nested")],
            ),
            ("{% for x in l | reverse %}{{ x }}{% endfor %}", &[None, None]),
            ("{% for s in l %}{% endfor %}{{ s }}", &[Some("s")]),
            ("{{- s -}} {{ missing }}{{ x }}", &[Some("s"), Some("x")]),
        ];
        for (source, expected) in cases {
            let (engine, direct, plain) = sourced_both_ways(source, map).unwrap();
            let (text, interps) = engine.unwrap();
            let (plain_text, ranges) = plain.unwrap();
            assert_eq!(text, plain_text, "{source:?}");
            assert_eq!(interps.iter().map(|i| i.range.clone()).collect::<Vec<_>>(), ranges, "{source:?}");
            assert_eq!(sources_of(&interps), *expected, "{source:?}");
            if let Some(direct) = direct {
                assert_eq!(direct.unwrap(), (text, interps), "{source:?} (direct)");
            }
        }
        // Aliases the direct renderer does not take.
        let engine_only: &[(&str, &[Option<&str>])] = &[
            (
                "{% set a = o.n %}{{ a[0] }}{% set b = 'lit' %}{{ b }}{% set s = 'shadow' %}{{ s }}",
                &[Some("o"), None, None],
            ),
            ("{% if t %}{% set a = s %}{% endif %}{{ a }}", &[None]),
            ("{% if t %}{% set a = s %}{% else %}{% set a = s.x %}{% endif %}{{ a }}", &[Some("s")]),
            ("{% with a = o %}{{ a.k }}{% endwith %}{{ a }}", &[Some("o")]),
            ("{% for k, v in o | items %}{{ k }}{{ v }}{% endfor %}", &[None, None, None, None, None]),
            ("{% for x in items if x.score > 0 %}{{ x.name }}{% endfor %}", &[Some("items"), Some("items")]),
            ("{{ s ~ i }} {{ range }}", &[None, Some("range")]),
        ];
        for (source, expected) in engine_only {
            let (engine, _, plain) = sourced_both_ways(source, map).unwrap();
            let (text, interps) = engine.unwrap();
            let (plain_text, ranges) = plain.unwrap();
            assert_eq!(text, plain_text, "{source:?}");
            assert_eq!(interps.iter().map(|i| i.range.clone()).collect::<Vec<_>>(), ranges, "{source:?}");
            assert_eq!(sources_of(&interps), *expected, "{source:?}");
        }
    }

    /// Generated templates: the sourced variant prints exactly what the template prints, and the
    /// direct renderer finds the sources the engine finds.
    #[test]
    fn generated_templates_have_the_same_sources_both_ways() {
        let inputs = bench_inputs();
        let map = inputs.as_object().unwrap();
        let mut gen = Gen(0x2545_F491_4F6C_DD1D);
        let (mut direct_count, mut total) = (0, 0);
        for _ in 0..1500 {
            let mut source = String::new();
            gen.body(3, false, &mut source);
            let Some((engine, direct, plain)) = sourced_both_ways(&source, map) else { continue };
            total += 1;
            match (&engine, &plain) {
                (Ok((text, interps)), Ok((plain_text, ranges))) => {
                    assert_eq!(text, plain_text, "{source:?}");
                    assert_eq!(&interps.iter().map(|i| i.range.clone()).collect::<Vec<_>>(), ranges, "{source:?}");
                }
                (a, b) => assert_eq!(a.is_ok(), b.is_ok(), "{source:?}: {a:?} / {b:?}"),
            }
            if let (Some(Ok(d)), Ok(e)) = (direct, &engine) {
                direct_count += 1;
                assert_eq!(&d, e, "{source:?}");
            }
        }
        assert!(total > 1200 && direct_count > total / 3, "{direct_count} direct renders of {total} templates");
    }
}
