//! The Jinja environment of the Prompty template subset, shared by the runtime renderer and the
//! compile-time template checks so they parse every template the same way: literal text verbatim
//! (trailing newline kept, no `trim_blocks`/`lstrip_blocks`), no HTML escaping, undefined values
//! and their attributes print as nothing, and no loader (so `include`/`import` cannot reach the file
//! system). The runtime adds its output formatter and filters on top.
//!
//! # Render budget
//!
//! A template and its inputs are untrusted, so every render is bounded by the process-wide
//! [`RenderLimits`] (read with [`render_limits`], changed with [`set_render_limits`]):
//!
//! | Bound | Default |
//! | --- | --- |
//! | [`RenderLimits::fuel`]: template instructions one render may run (minijinja's fuel; for the runtime's direct renderer of the common subset, nodes, expressions and loop iterations, a render past it being handed to minijinja; for mustache, tags and sections visited) | [`RenderLimits::DEFAULT_FUEL`] (10 000 000) |
//! | [`RenderLimits::max_output_bytes`]: bytes of rendered text | [`RenderLimits::DEFAULT_MAX_OUTPUT_BYTES`] (16 MiB) |
//!
//! A render past either bound ends with a template error naming the prompt file.
//!
//! ```
//! let before = prompty_core::jinja::render_limits();
//! prompty_core::jinja::set_render_limits(prompty_core::jinja::RenderLimits { fuel: 50_000_000, ..before });
//! assert_eq!(prompty_core::jinja::environment().fuel(), Some(50_000_000));
//! prompty_core::jinja::set_render_limits(before);
//! ```

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use std::sync::atomic::{AtomicU64, Ordering};

/// The bounds of one template render. See the [module documentation](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// How many template instructions one render may run (default [`Self::DEFAULT_FUEL`]).
    pub fuel: u64,
    /// How many bytes one render may produce (default [`Self::DEFAULT_MAX_OUTPUT_BYTES`]).
    pub max_output_bytes: u64,
}

impl RenderLimits {
    /// The default render budget: 10 000 000 instructions (well under a second of rendering in a
    /// release build; a template looping over 10 000 items runs a few hundred thousand).
    pub const DEFAULT_FUEL: u64 = 10_000_000;
    /// The default largest rendered prompt: 16 MiB.
    pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 16 << 20;
}

impl Default for RenderLimits {
    fn default() -> Self {
        RenderLimits { fuel: Self::DEFAULT_FUEL, max_output_bytes: Self::DEFAULT_MAX_OUTPUT_BYTES }
    }
}

static FUEL: AtomicU64 = AtomicU64::new(RenderLimits::DEFAULT_FUEL);
static MAX_OUTPUT: AtomicU64 = AtomicU64::new(RenderLimits::DEFAULT_MAX_OUTPUT_BYTES);

/// The render bounds in force for this process.
pub fn render_limits() -> RenderLimits {
    RenderLimits { fuel: FUEL.load(Ordering::Relaxed), max_output_bytes: MAX_OUTPUT.load(Ordering::Relaxed) }
}

/// Changes the render bounds of this process (for every render that starts afterwards).
pub fn set_render_limits(limits: RenderLimits) {
    FUEL.store(limits.fuel, Ordering::Relaxed);
    MAX_OUTPUT.store(limits.max_output_bytes, Ordering::Relaxed);
}

/// A fresh environment configured for the Prompty Jinja subset, with the fuel of [`render_limits`].
///
/// ```
/// let env = prompty_core::jinja::environment();
/// let t = env.template_from_str("Hello {{ name }}!\n").unwrap();
/// assert_eq!(t.render(minijinja::context! { name => "<b>World</b>" }).unwrap(), "Hello <b>World</b>!\n");
/// assert_eq!(env.template_from_str("{{ missing.attr }}").unwrap().render(()).unwrap(), "");
/// ```
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .trim_blocks(false)
        .lstrip_blocks(false)
        .build();
    if let Ok(syntax) = syntax {
        env.set_syntax(syntax);
    }
    env.set_undefined_behavior(UndefinedBehavior::Chainable);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(render_limits().fuel));
    env
}

/// The filters of [`environment`] (minijinja's built-ins with the features Prompty enables; the
/// runtime renderer replaces `default`, `d`, `trim` and `join` with its own versions of the same
/// names). minijinja cannot list an environment's filters, so this list is kept next to the
/// environment; a test checks that every name is a filter of [`environment`].
pub const FILTERS: &[&str] = &[
    "safe",
    "escape",
    "e",
    "lower",
    "upper",
    "title",
    "capitalize",
    "replace",
    "length",
    "count",
    "dictsort",
    "items",
    "reverse",
    "trim",
    "join",
    "split",
    "lines",
    "default",
    "d",
    "round",
    "abs",
    "int",
    "float",
    "attr",
    "first",
    "last",
    "min",
    "max",
    "sort",
    "list",
    "string",
    "bool",
    "batch",
    "slice",
    "sum",
    "indent",
    "select",
    "reject",
    "selectattr",
    "rejectattr",
    "map",
    "groupby",
    "unique",
    "chain",
    "zip",
    "pprint",
    "format",
];

/// The tests of [`environment`] (`{% if x is defined %}`), kept like [`FILTERS`]; a test checks
/// that every name is a test of [`environment`].
pub const TESTS: &[&str] = &[
    "undefined",
    "defined",
    "none",
    "safe",
    "escaped",
    "boolean",
    "odd",
    "even",
    "divisibleby",
    "number",
    "integer",
    "int",
    "float",
    "string",
    "sequence",
    "iterable",
    "mapping",
    "startingwith",
    "endingwith",
    "lower",
    "upper",
    "sameas",
    "eq",
    "equalto",
    "==",
    "ne",
    "!=",
    "lt",
    "lessthan",
    "<",
    "le",
    "<=",
    "gt",
    "greaterthan",
    ">",
    "ge",
    ">=",
    "in",
    "true",
    "false",
    "filter",
    "test",
];

/// How deeply one template expression may nest: operators, filters, tests, attribute lookups,
/// subscripts, calls, conditional expressions and brackets, counted along the deepest path.
///
/// minijinja guards its parser's recursion through brackets, but builds chains such as
/// `not not …`, `- - …`, `a ~ a ~ …`, `x|f|f…` or `x.a.a…` as trees one level deeper per
/// operator, and parses, compiles and drops them by recursing once per level without a limit, so
/// a long chain overflows the stack. [`check_source`] refuses deeper expressions before the
/// template is compiled.
pub const MAX_EXPRESSION_DEPTH: usize = 200;

/// Checks the template source for what minijinja would handle without a bound: returns the
/// 1-based line and a message when an expression nests deeper than [`MAX_EXPRESSION_DEPTH`].
/// Linear in the source; call it before compiling an untrusted template.
///
/// The count over-approximates: within one list item, argument or bracket every operator counts,
/// as if each nested inside the one before.
///
/// ```
/// assert!(prompty_core::jinja::check_source("{{ not a and b|trim ~ c.d[0](1) }} {{ -1 }}").is_ok());
/// let deep = format!("Hi\n{{{{ x{} }}}}", "|trim".repeat(1000));
/// let (line, message) = prompty_core::jinja::check_source(&deep).unwrap_err();
/// assert_eq!(line, 2);
/// assert!(message.contains("200"));
/// ```
pub fn check_source(source: &str) -> Result<(), (usize, String)> {
    let bytes = source.as_bytes();
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'\n', _) => line += 1,
            (b'{', Some(b'#')) => {
                // A comment: skip to its end.
                let end = source[i + 2..].find("#}").map_or(bytes.len(), |e| i + 2 + e + 2);
                line += bytes[i..end].iter().filter(|&&b| b == b'\n').count();
                i = end;
                continue;
            }
            (b'{', Some(b'{' | b'%')) => {
                let close: &[u8] = if bytes[i + 1] == b'{' { b"}}" } else { b"%}" };
                i = check_tag(bytes, i + 2, close, &mut line)?;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Scans one tag from `i` to its closing delimiter; returns the index after it.
fn check_tag(bytes: &[u8], mut i: usize, close: &[u8], line: &mut usize) -> Result<usize, (usize, String)> {
    // `depth`: how deep the current item may be; `saved`: the depth at each open bracket, where a
    // `,` or `:` (the next item) starts again.
    let mut depth = 0usize;
    let mut saved: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    while i < bytes.len() {
        if braces == 0 && bytes[i..].starts_with(close) {
            return Ok(i + close.len());
        }
        let b = bytes[i];
        match b {
            b'\n' => *line += 1,
            b'\'' | b'"' => {
                // A string literal, with backslash escapes.
                i += 1;
                while i < bytes.len() && bytes[i] != b {
                    if bytes[i] == b'\n' {
                        *line += 1;
                    }
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => {
                braces += usize::from(b == b'{');
                saved.push(depth);
                depth += 1;
            }
            b')' | b']' | b'}' => {
                braces = braces.saturating_sub(usize::from(b == b'}'));
                depth = saved.pop().map_or(depth, |d| d + 1);
            }
            b',' | b':' => depth = saved.last().map_or(0, |d| d + 1),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'~' | b'|' | b'.' | b'<' | b'>' | b'=' | b'!' => depth += 1,
            b if b.is_ascii_alphanumeric() || b == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.') {
                    // A `.` inside a number (`1.5`) is no lookup; after a name it is counted below.
                    if bytes[i] == b'.' && !bytes[start].is_ascii_digit() {
                        break;
                    }
                    i += 1;
                }
                if matches!(&bytes[start..i], b"not" | b"and" | b"or" | b"in" | b"is" | b"if" | b"else") {
                    depth += 1;
                }
                if depth > MAX_EXPRESSION_DEPTH {
                    return Err((*line, depth_message()));
                }
                continue;
            }
            _ => {}
        }
        if depth > MAX_EXPRESSION_DEPTH {
            return Err((*line, depth_message()));
        }
        i += 1;
    }
    Ok(i)
}

fn depth_message() -> String {
    format!("an expression nests deeper than {MAX_EXPRESSION_DEPTH} operators, filters, lookups and brackets")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_filter_and_test_is_one_of_the_environment() {
        let env = environment();
        for (list, kind) in [(FILTERS, "filter"), (TESTS, "test")] {
            for &name in list {
                let out = env.render_str(&format!("{{{{ name is {kind} }}}}"), minijinja::context! { name }).unwrap();
                assert_eq!(out, "True", "{kind} {name}");
            }
        }
        let out = env.render_str("{{ 'upcase' is filter }} {{ 'frobbed' is test }}", ()).unwrap();
        assert_eq!(out, "False False");
        // Every filter renders when applied (with arguments where it needs them).
        for &name in FILTERS {
            let args = match name {
                "replace" => "('a', 'b')",
                "attr" => "('x')",
                "batch" | "slice" => "(2)",
                "format" => "",
                "selectattr" | "rejectattr" | "groupby" => "('x')",
                "map" => "(attribute='x')",
                _ => "",
            };
            let input = match name {
                "dictsort" | "items" => "{'x': 1}",
                "sum" | "min" | "max" | "unique" | "sort" | "reverse" => "[1, 2]",
                "abs" | "round" | "int" | "float" => "-1.5",
                "format" | "capitalize" | "title" | "lower" | "upper" | "lines" | "split" | "indent" | "escape"
                | "e" | "safe" | "trim" | "replace" | "string" | "bool" | "length" | "count" | "pprint" | "default"
                | "d" => "'a'",
                "attr" => "{'x': 1}",
                _ => "[{'x': 1}, {'x': 2}]",
            };
            let source = format!("{{{{ {input} | {name}{args} }}}}");
            env.render_str(&source, ()).unwrap_or_else(|e| panic!("{source}: {e}"));
        }
    }
}
