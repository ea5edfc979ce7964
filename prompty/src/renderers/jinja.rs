//! The `jinja2` renderer, on minijinja, configured for the Prompty Jinja subset: literal text kept
//! verbatim (trailing newline included, no `trim_blocks`/`lstrip_blocks`), no HTML escaping,
//! undefined values (and attributes of them) print as nothing, `true`/`false` print in lowercase,
//! `none` prints as nothing and `1.0` as `1`. `default` also applies to `none`, `trim` strips
//! `[ \t\r\n]`, `join` prints its items the same way. Templates cannot reach the file system or
//! the network: no loader is configured, so `include`/`import` fail.

use crate::{Agent, Error, Location, RenderContext, Result};
use minijinja::value::{Serde, Value, ValueKind};
use minijinja::Environment;
use serde_json::{Map, Value as Json};
use std::cell::Cell;
use std::sync::Arc;

const NAME: &str = "template";

thread_local! {
    /// How the render running on this thread writes interpolated values.
    static EMIT: Cell<Option<RenderContext>> = const { Cell::new(None) };
}

/// A compiled template, remembering the source it was compiled from.
struct Compiled {
    source: String,
    env: Environment<'static>,
}

fn environment() -> Environment<'static> {
    let mut env = prompty_core::jinja::environment();
    env.set_formatter(|out, _state, value| {
        // Written straight into the output: the value between this render's marks, when it marks.
        let Some(marks) = EMIT.with(Cell::get).and_then(|ctx| ctx.marks) else {
            return format_value(value, out).map_err(|_| write_error());
        };
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

fn write_error() -> minijinja::Error {
    minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "could not write output")
}

/// Prints a value the way the Prompty Jinja subset prints it.
fn format_value(value: &Value, out: &mut impl std::fmt::Write) -> std::fmt::Result {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => Ok(()),
        ValueKind::Bool => out.write_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::String => out.write_str(value.as_str().unwrap_or_default()),
        ValueKind::Number if !value.is_integer() => match f64::try_from(value.clone()) {
            Ok(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 => write!(out, "{}", f as i64),
            Ok(f) => write!(out, "{f}"),
            Err(_) => write!(out, "{value}"),
        },
        _ => write!(out, "{value}"),
    }
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
    let mut out = String::new();
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
    let (file, first_line) = super::body_origin(agent);
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
    let cache = agent.runtime_cache();
    if let Some(c) = cache.get::<Compiled>() {
        // The fuel is part of the environment: a changed render budget recompiles.
        if c.source == source && c.env.fuel() == Some(prompty_core::jinja::render_limits().fuel) {
            return Ok(c);
        }
    }
    prompty_core::jinja::check_source(source).map_err(|(line, message)| {
        let (file, first_line) = super::body_origin(agent);
        Error::Template { at: Location::file(file).at_line(first_line + line - 1), message }
    })?;
    let mut env = environment();
    env.add_template_owned(NAME, source.to_owned()).map_err(|e| template_error(agent, &e))?;
    let c = Arc::new(Compiled { source: source.to_owned(), env });
    cache.set(Arc::clone(&c));
    Ok(c)
}

/// Renders the agent's instructions with `inputs`, writing interpolated values through `ctx`.
pub(super) fn render(agent: &Agent, source: &str, inputs: &Map<String, Json>, ctx: RenderContext) -> Result<String> {
    let c = compiled(agent, source)?;
    let tmpl = c.env.get_template(NAME).map_err(|e| template_error(agent, &e))?;
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            EMIT.with(|m| m.set(None));
        }
    }
    EMIT.with(|m| m.set(Some(ctx)));
    let _reset = Reset;
    super::render_bounded(agent, &tmpl, Value::from(Serde(inputs)), |e| template_error(agent, e))
}
