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

/// The Jinja dialects the built-in renderer speaks, chosen by `template.format.kind`.
///
/// `jinja2` and `jinja` are the Prompty Jinja subset (and the rest of minijinja). `nunjucks` is the
/// key the Prompty TypeScript runtime renders with (nunjucks, configured with `autoescape: false`
/// and `throwOnUndefined: false`): the same engine, plus the nunjucks spellings that Jinja lacks,
/// and only in templates of that format:
///
/// | nunjucks | here |
/// | --- | --- |
/// | `{% elseif c %}` | `{% elif c %}` (both spellings work) |
/// | `{% verbatim %}…{% endverbatim %}` | `{% raw %}…{% endraw %}` (both work) |
/// | `null` | `none` |
/// | `{{ x \| dump }}`, `{{ x \| dump(2) }}` | JSON of `x`, as `JSON.stringify` writes it (an undefined value prints nothing) |
/// | `{% for k, v in obj %}` over an object | iterates its keys and values, in order (over a list of pairs it unpacks them, as in Jinja) |
///
/// The constructs where nunjucks and Jinja disagree and this renderer keeps Jinja's meaning are
/// listed in the runtime's renderer documentation (`prompty::builtins::Jinja2Renderer`).
///
/// ```
/// use prompty_core::jinja::{translate, Dialect};
/// assert_eq!(Dialect::of("nunjucks"), Some(Dialect::Nunjucks));
/// assert_eq!(Dialect::of("jinja2"), Some(Dialect::Jinja));
/// assert_eq!(Dialect::of("mustache"), None);
/// let t = translate(Dialect::Nunjucks, "{% if a %}x{% elseif b %}y{% endif %}");
/// assert_eq!(t.text, "{% if a %}x{% elif   b %}y{% endif %}");
/// assert_eq!(translate(Dialect::Jinja, "{% elseif b %}").text, "{% elseif b %}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `jinja2` / `jinja`: the Prompty Jinja subset.
    Jinja,
    /// `nunjucks`: the TypeScript runtime's renderer key.
    Nunjucks,
}

impl Dialect {
    /// The dialect of a `template.format.kind`, `None` for a key that is no Jinja format.
    pub fn of(format: &str) -> Option<Dialect> {
        match format {
            "jinja2" | "jinja" => Some(Dialect::Jinja),
            "nunjucks" => Some(Dialect::Nunjucks),
            _ => None,
        }
    }
}

/// The renderer keys of the built-in Jinja renderer.
pub const FORMATS: [&str; 3] = ["jinja2", "jinja", "nunjucks"];

/// The filters the `nunjucks` dialect adds to [`FILTERS`]. `__nunjucks_pairs` is the one
/// [`translate`] inserts into `{% for k, v in obj %}`.
pub const NUNJUCKS_FILTERS: &[&str] = &["dump", PAIRS];

const PAIRS: &str = "__nunjucks_pairs";

/// [`environment`] for a dialect: for `nunjucks`, with the global `null` (none) and the filters of
/// [`NUNJUCKS_FILTERS`].
///
/// ```
/// use prompty_core::jinja::{environment_for, Dialect};
/// let env = environment_for(Dialect::Nunjucks);
/// let out = env.render_str("{{ o | dump }} {{ null is none }}", minijinja::context! { o => vec![1, 2] });
/// assert_eq!(out.unwrap(), "[1,2] True");
/// ```
pub fn environment_for(dialect: Dialect) -> Environment<'static> {
    let mut env = environment();
    if dialect == Dialect::Nunjucks {
        env.add_global("null", minijinja::Value::from(()));
        env.add_filter("dump", dump);
        env.add_filter(PAIRS, pairs);
    }
    env
}

/// nunjucks' `dump`: `JSON.stringify(value, null, indent)`. Integral floats print as integers, as
/// in JavaScript; an undefined value gives an undefined value (which prints nothing).
fn dump(value: minijinja::Value, indent: Option<minijinja::Value>) -> Result<minijinja::Value, minijinja::Error> {
    use serde::Serialize;
    if value.is_undefined() {
        return Ok(value);
    }
    let mut json = serde_json::to_value(&value)
        .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))?;
    js_numbers(&mut json, 0);
    // JSON.stringify: a number indents by that many spaces (at most 10), a string by itself (its
    // first 10 characters); anything else, or nothing, does not indent.
    let pad: String = match &indent {
        Some(i) if i.is_number() => " ".repeat(i64::try_from(i.clone()).unwrap_or(0).clamp(0, 10) as usize),
        Some(i) => i.as_str().map(|s| s.chars().take(10).collect()).unwrap_or_default(),
        None => String::new(),
    };
    let text = if pad.is_empty() {
        serde_json::to_string(&json)
    } else {
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(pad.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        json.serialize(&mut ser).map(|()| String::from_utf8_lossy(&out).into_owned())
    };
    text.map(minijinja::Value::from)
        .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))
}

/// Integral floats as integers (`1.0` is `1` in JavaScript), recursively (inputs are depth-bounded
/// before they reach a template; the depth guard stops a deeper value built by the template).
fn js_numbers(json: &mut serde_json::Value, depth: usize) {
    match json {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                    *json = serde_json::Value::from(f as i64);
                }
            }
        }
        serde_json::Value::Array(items) if depth < 256 => items.iter_mut().for_each(|v| js_numbers(v, depth + 1)),
        serde_json::Value::Object(map) if depth < 256 => map.values_mut().for_each(|v| js_numbers(v, depth + 1)),
        _ => {}
    }
}

/// A map as the list of its `[key, value]` pairs, in order; any other value as it is.
fn pairs(value: minijinja::Value) -> Result<minijinja::Value, minijinja::Error> {
    if value.kind() != minijinja::value::ValueKind::Map {
        return Ok(value);
    }
    let mut out = Vec::new();
    for key in value.try_iter()? {
        let item = value.get_item(&key)?;
        out.push(minijinja::Value::from(vec![key, item]));
    }
    Ok(minijinja::Value::from(out))
}

/// A template source translated to the `jinja2` syntax (see [`translate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translated<'a> {
    /// The source minijinja compiles.
    pub text: std::borrow::Cow<'a, str>,
    /// Text inserted into the source: the byte offset in [`Self::text`] where each insertion
    /// starts and its length, in order. Replacements keep their length, and no insertion holds a
    /// line break, so lines are the source's lines.
    pub inserted: Vec<(usize, usize)>,
}

impl Translated<'_> {
    /// The offset in the original source of an offset in [`Self::text`] (an offset inside an
    /// insertion maps to where it was inserted).
    pub fn original_offset(&self, offset: usize) -> usize {
        let mut shift = 0;
        for &(at, len) in &self.inserted {
            if offset >= at + len {
                shift += len;
            } else if offset >= at {
                return at - shift;
            } else {
                break;
            }
        }
        offset - shift
    }
}

/// Translates a template of `dialect` to the syntax minijinja compiles: for `nunjucks`,
/// `elseif` becomes `elif`, `verbatim`/`endverbatim` become `raw`/`endraw` (padded to the same
/// length), and the iterable of a `{% for k, v in … %}` goes through the dialect's pairs filter;
/// text, comments, expressions and raw blocks are left as they are. For `jinja`, the source itself.
pub fn translate(dialect: Dialect, source: &str) -> Translated<'_> {
    if dialect == Dialect::Jinja || !source.contains("{%") {
        return Translated { text: std::borrow::Cow::Borrowed(source), inserted: Vec::new() };
    }
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len() + 16);
    let mut inserted = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    // Inside `{% raw %}` / `{% verbatim %}`: the closing keyword.
    let mut raw_until: Option<&str> = None;
    while i + 1 < bytes.len() {
        if bytes[i] != b'{' {
            i += 1;
            continue;
        }
        match bytes[i + 1] {
            b'#' if raw_until.is_none() => {
                i = source[i + 2..].find("#}").map_or(bytes.len(), |e| i + 2 + e + 2);
            }
            b'{' if raw_until.is_none() => i = skip_tag(bytes, i + 2, b"}}"),
            b'%' => {
                let end = skip_tag(bytes, i + 2, b"%}");
                let mut k = i + 2;
                if k < bytes.len() && matches!(bytes[k], b'-' | b'+') {
                    k += 1;
                }
                while k < bytes.len() && bytes[k].is_ascii_whitespace() {
                    k += 1;
                }
                let word_end =
                    k + bytes[k..end].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
                let word = &source[k..word_end];
                let replacement = match (raw_until, word) {
                    (Some(close), w) if w == close => {
                        raw_until = None;
                        (w == "endverbatim").then_some("endraw     ")
                    }
                    (Some(_), _) => None,
                    (None, "raw") => {
                        raw_until = Some("endraw");
                        None
                    }
                    (None, "verbatim") => {
                        raw_until = Some("endverbatim");
                        Some("raw     ")
                    }
                    (None, "elseif") => Some("elif  "),
                    (None, "for") => {
                        if let Some((open, close)) = pair_loop(source, word_end, end) {
                            out.push_str(&source[copied..open]);
                            inserted.push((out.len(), 1));
                            out.push('(');
                            out.push_str(&source[open..close]);
                            let filter = format!(")|{PAIRS}");
                            inserted.push((out.len(), filter.len()));
                            out.push_str(&filter);
                            copied = close;
                        }
                        None
                    }
                    _ => None,
                };
                if let Some(replacement) = replacement {
                    out.push_str(&source[copied..k]);
                    out.push_str(replacement);
                    copied = word_end;
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    if copied == 0 {
        return Translated { text: std::borrow::Cow::Borrowed(source), inserted };
    }
    out.push_str(&source[copied..]);
    Translated { text: std::borrow::Cow::Owned(out), inserted }
}

/// From `i` (inside a tag), the index after the tag's closing delimiter `close` (string literals
/// skipped), or the end of the source.
fn skip_tag(bytes: &[u8], mut i: usize, close: &[u8]) -> usize {
    while i < bytes.len() {
        if bytes[i..].starts_with(close) {
            return i + close.len();
        }
        if matches!(bytes[i], b'\'' | b'"') {
            let quote = bytes[i];
            i += 1;
            while i < bytes.len() && bytes[i] != quote {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
        }
        i += 1;
    }
    bytes.len()
}

/// In a `for` tag whose keyword ends at `from` and which ends at `end` (after `%}`): when it binds
/// exactly two names (`for k, v in expr`), the byte range of `expr` (trimmed).
fn pair_loop(source: &str, from: usize, end: usize) -> Option<(usize, usize)> {
    let tag = source.get(from..end)?;
    let close = tag.rfind("%}")?;
    let mut body = &tag[..close];
    body = body.strip_suffix('-').or_else(|| body.strip_suffix('+')).unwrap_or(body);
    let in_at = find_keyword(body, "in")?;
    let names: Vec<&str> = body[..in_at].split(',').map(str::trim).collect();
    let is_name = |n: &str| {
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && !n.as_bytes()[0].is_ascii_digit()
    };
    if names.len() != 2 || !names.iter().all(|n| is_name(n)) {
        return None;
    }
    let expr = &body[in_at + 2..];
    let start = from + in_at + 2 + (expr.len() - expr.trim_start().len());
    let stop = from + in_at + 2 + expr.trim_end().len();
    (stop > start).then_some((start, stop))
}

/// The offset of the first `word` standing alone (between non-identifier characters) in `text`.
fn find_keyword(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(at) = text[from..].find(word).map(|a| a + from) {
        let before = at == 0 || !ident(bytes[at - 1]);
        let after = bytes.get(at + word.len()).is_none_or(|b| !ident(*b));
        if before && after {
            return Some(at);
        }
        from = at + word.len();
    }
    None
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

    /// The `nunjucks` translation: what changes, what does not, and how offsets map back.
    #[test]
    fn nunjucks_sources_translate_to_jinja() {
        let t = |s: &str| translate(Dialect::Nunjucks, s).text.into_owned();
        assert_eq!(t("{%- elseif x -%}"), "{%- elif   x -%}");
        assert_eq!(
            t("{% verbatim %}{% elseif %}{{ x }}{% endverbatim %}"),
            "{% raw      %}{% elseif %}{{ x }}{% endraw      %}"
        );
        assert_eq!(t("{% raw %}{% verbatim %}{% endraw %}"), "{% raw %}{% verbatim %}{% endraw %}");
        assert_eq!(
            t("{{ '{% elseif %}' }}{# {% elseif %} #}text elseif"),
            "{{ '{% elseif %}' }}{# {% elseif %} #}text elseif"
        );
        assert_eq!(t("{% for k, v in a.b | dictsort %}"), "{% for k, v in (a.b | dictsort)|__nunjucks_pairs %}");
        assert_eq!(t("{% for k,v in o -%}"), "{% for k,v in (o)|__nunjucks_pairs -%}");
        for same in [
            "{% for x in o %}",
            "{% for a, b, c in o %}",
            "{% for index in items %}",
            "{% for k, v in %}",
            "{% for",
            "{%",
            "{% elseif",
        ] {
            assert_eq!(t(same), same.replace("elseif", "elif  "));
        }
        assert_eq!(translate(Dialect::Jinja, "{% for k, v in o %}").text, "{% for k, v in o %}");
        // Offsets after an insertion map back to the original.
        let source = "{% for k, v in o %}{{ x }}";
        let tr = translate(Dialect::Nunjucks, source);
        let x = tr.text.find("x }}").unwrap();
        assert_eq!(tr.original_offset(x), source.find("x }}").unwrap());
        assert_eq!(tr.original_offset(tr.text.find("(o").unwrap() + 1), source.find(" o").unwrap() + 1);
        assert_eq!(tr.original_offset(tr.text.find("(o").unwrap()), source.find(" o").unwrap() + 1);
        assert_eq!(tr.original_offset(0), 0);
    }

    #[test]
    fn dump_writes_json_as_javascript_does() {
        let env = environment_for(Dialect::Nunjucks);
        let render = |s: &str| {
            env.render_str(s, minijinja::context! { f => 2.0, g => 0.5, m => minijinja::Value::from(minijinja::value::Serde(serde_json::json!({"z": [1.0, null], "a": "é\""}))) })
        };
        assert_eq!(render("{{ m | dump }}").unwrap(), r#"{"z":[1,null],"a":"é\""}"#);
        assert_eq!(render("{{ f | dump }} {{ g | dump }} {{ missing | dump }}|").unwrap(), "2 0.5 |");
        assert_eq!(render("{{ [1] | dump('--') }}").unwrap(), "[\n--1\n]");
        assert_eq!(render("{{ [1] | dump(99) }}").unwrap(), format!("[\n{}1\n]", " ".repeat(10)));
        // Only in nunjucks templates.
        assert!(environment().render_str("{{ 1 | dump }}", ()).is_err());
    }

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
