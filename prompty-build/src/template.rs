//! Compile-time analysis of a prompt's template: syntax errors, and the top-level variables it
//! reads, with the place of the first use of each, for the `jinja2` renderer (minijinja, with the
//! runtime's syntax configuration) and the `mustache` renderer (a scan of its tags).

use std::collections::BTreeMap;

/// A problem found in a template, placed in the template text (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TemplateError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What a template reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Variables {
    /// Names read at the top level (outside any mustache section), each with the 1-based line and
    /// column of its first use: they must be declared inputs.
    pub required: BTreeMap<String, (usize, usize)>,
    /// Every root name the template mentions anywhere (section names and names inside sections
    /// included): a declared input outside this set is never used.
    pub mentioned: std::collections::BTreeSet<String>,
}

/// Analyzes a template written for `format` (`jinja2`, `jinja` or `mustache`). `None` for other
/// renderers: a custom renderer's syntax is unknown.
pub(crate) fn analyze(format: &str, source: &str) -> Option<Result<Variables, TemplateError>> {
    match format {
        "jinja2" | "jinja" => Some(jinja(source)),
        "mustache" => Some(mustache(source)),
        _ => None,
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

fn jinja(source: &str) -> Result<Variables, TemplateError> {
    // The same bound the runtime applies: minijinja's parser recurses once per nested operator.
    if let Err((line, message)) = prompty_core::jinja::check_source(source) {
        return Err(TemplateError { line, column: 1, message });
    }
    let env = prompty_core::jinja::environment();
    let template = env.template_from_str(source).map_err(|e| {
        // minijinja reports the line (the byte range needs its `debug` feature): point at the
        // line's first tag, else its first character.
        let line = e.line().unwrap_or(1);
        let text = source.lines().nth(line - 1).unwrap_or("");
        let offset = find_open(text, 0).unwrap_or_else(|| text.len() - text.trim_start().len());
        let column = text[..offset].chars().count() + 1;
        let mut message = e.kind().to_string();
        if let Some(detail) = e.detail() {
            message.push_str(": ");
            message.push_str(detail);
        }
        TemplateError { line, column, message }
    })?;
    let globals: Vec<&str> = env.globals().map(|(name, _)| name).collect();
    let mut vars = Variables::default();
    let mut names: Vec<String> = template.undeclared_variables(false).into_iter().collect();
    names.sort();
    for name in names {
        if globals.contains(&name.as_str()) {
            continue;
        }
        let at = first_use_jinja(source, &name).map_or((1, 1), |offset| line_column(source, offset));
        vars.mentioned.insert(name.clone());
        vars.required.insert(name, at);
    }
    Ok(vars)
}

/// The byte offset of the first use of `name` as a root variable inside a `{{ }}` or `{% %}` tag.
fn first_use_jinja(source: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(open) = find_open(source, from) {
        let close_marker = if source[open..].starts_with("{{") { "}}" } else { "%}" };
        let body_start = open + 2;
        let end = source[body_start..].find(close_marker).map_or(source.len(), |i| body_start + i);
        if let Some(i) = find_word(&source[body_start..end], name) {
            return Some(body_start + i);
        }
        from = end;
    }
    None
}

fn find_open(source: &str, from: usize) -> Option<usize> {
    let a = source[from..].find("{{").map(|i| from + i);
    let b = source[from..].find("{%").map(|i| from + i);
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The first occurrence of `word` in `text` as a whole identifier that is not an attribute
/// (`x.word`) and not inside a string literal.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None => {
                if text[i..].starts_with(word)
                    && (i == 0 || (!is_ident(bytes[i - 1]) && bytes[i - 1] != b'.'))
                    && bytes.get(i + word.len()).is_none_or(|&n| !is_ident(n))
                {
                    return Some(i);
                }
            }
        }
        i += 1;
    }
    None
}

/// Scans a mustache template's tags the way the runtime's mustache renderer parses them
/// (delimiter changes, comments, sections), reporting the same malformations it rejects.
fn mustache(source: &str) -> Result<Variables, TemplateError> {
    let err = |offset: usize, message: String| {
        let (line, column) = line_column(source, offset);
        TemplateError { line, column, message }
    };
    let (mut open, mut close) = ("{{".to_owned(), "}}".to_owned());
    let mut sections: Vec<(String, usize)> = Vec::new();
    let mut vars = Variables::default();
    let mut pos = 0;
    while let Some(i) = source[pos..].find(open.as_str()) {
        let start = pos + i;
        let after_open = start + open.len();
        let rest = &source[after_open..];
        // The sigils `{` and `=` change how the tag is closed.
        let (inner, end) = if rest.starts_with('{') {
            let closing = format!("}}{close}");
            let Some(j) = rest.find(closing.as_str()) else {
                return Err(err(start, format!("unclosed tag: missing \"{closing}\"")));
            };
            (&rest[..j + 1], after_open + j + closing.len())
        } else if let Some(after) = rest.strip_prefix('=') {
            let closing = format!("={close}");
            let Some(j) = after.find(closing.as_str()) else {
                return Err(err(start, format!("unclosed tag: missing \"{closing}\"")));
            };
            (&rest[..j + 2], after_open + 1 + j + closing.len())
        } else {
            let Some(j) = rest.find(close.as_str()) else {
                return Err(err(start, format!("unclosed tag: missing \"{close}\"")));
            };
            (&rest[..j], after_open + j + close.len())
        };
        pos = end;
        let trimmed = inner.trim();
        if let Some(spec) = inner.strip_prefix('=').and_then(|s| s.strip_suffix('=')) {
            let parts: Vec<&str> = spec.split_whitespace().collect();
            match parts.as_slice() {
                [o, c] if !o.contains('=') && !c.contains('=') => {
                    open = (*o).to_owned();
                    close = (*c).to_owned();
                }
                _ => return Err(err(start, "malformed set-delimiter tag: expected two delimiters".to_owned())),
            }
            continue;
        }
        let (sigil, name) = match trimmed.chars().next() {
            Some(c @ ('#' | '^' | '/' | '!' | '>' | '&' | '{')) => {
                let name = trimmed[1..].trim();
                let name = if c == '{' { name.strip_suffix('}').unwrap_or(name).trim() } else { name };
                (Some(c), name)
            }
            _ => (None, trimmed),
        };
        match sigil {
            Some('!') => continue,
            Some('>') => {
                return Err(err(start, format!("partials are not supported (templates have no file access): {name}")))
            }
            _ => {}
        }
        if name.is_empty() {
            return Err(err(start, "empty tag name".to_owned()));
        }
        match sigil {
            Some('/') => match sections.pop() {
                Some((open_name, _)) if open_name == name => {}
                Some((open_name, _)) => {
                    return Err(err(
                        start,
                        format!("mismatched close tag: expected {{{{/{open_name}}}}}, found {name}"),
                    ))
                }
                None => return Err(err(start, format!("unexpected close tag {name}: no section is open"))),
            },
            _ => {
                if name != "." {
                    let root = name.split('.').next().unwrap_or(name).to_owned();
                    vars.mentioned.insert(root.clone());
                    if sections.is_empty() {
                        vars.required.entry(root).or_insert_with(|| line_column(source, start));
                    }
                }
                if matches!(sigil, Some('#' | '^')) {
                    sections.push((name.to_owned(), start));
                }
            }
        }
    }
    if let Some((name, start)) = sections.pop() {
        return Err(err(start, format!("unclosed section {name}: missing {{{{/{name}}}}}")));
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &Variables) -> Vec<(&str, (usize, usize))> {
        v.required.iter().map(|(k, v)| (k.as_str(), *v)).collect()
    }

    #[test]
    fn jinja_variables_and_their_first_use() {
        let src =
            "system:\nHi {{ name }}.\n{% for item in items %}{{ item.title | upper }} {{ loop.index }}{% endfor %}\n\
                   {{ range(3) | join(',') }} {{ 'name' }} {{ user.name }}";
        let v = analyze("jinja2", src).unwrap().unwrap();
        assert_eq!(names(&v), [("items", (3, 16)), ("name", (2, 7)), ("user", (4, 44))]);
    }

    #[test]
    fn jinja_syntax_errors_are_placed() {
        let e = analyze("jinja2", "line one\n{% if x %}\nno end").unwrap().unwrap_err();
        assert!(e.message.starts_with("syntax error"), "{e:?}");
        assert_eq!(e.line, 2, "{e:?}");
        let e = analyze("jinja2", "ok\n  {{ a + }}").unwrap().unwrap_err();
        assert_eq!((e.line, e.column), (2, 3), "{e:?}");
    }

    #[test]
    fn jinja_expressions_nested_past_the_runtime_bound_are_errors_not_stack_overflows() {
        let deep = format!("user:\n{{{{ q{} }}}}", "|trim".repeat(100_000));
        let err = analyze("jinja2", &deep).expect("a known format").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("200"), "{}", err.message);
    }

    #[test]
    fn mustache_top_level_names_only_are_required() {
        let src = "{{! a comment }}\nHi {{ name }}!\n{{#items}}{{title}} {{.}}{{/items}}\n{{^empty}}none{{/empty}}\n{{{raw}}} {{&amp}} {{a.b}}";
        let v = analyze("mustache", src).unwrap().unwrap();
        assert_eq!(
            names(&v),
            [("a", (5, 20)), ("amp", (5, 11)), ("empty", (4, 1)), ("items", (3, 1)), ("name", (2, 4)), ("raw", (5, 1))]
        );
        assert!(v.mentioned.contains("title"));
    }

    #[test]
    fn mustache_delimiters_and_errors() {
        let v = analyze("mustache", "{{=<% %>=}}<% x %> {{ y }}").unwrap().unwrap();
        assert_eq!(names(&v), [("x", (1, 12))]);
        let e = analyze("mustache", "a\n{{#s}}b").unwrap().unwrap_err();
        assert_eq!((e.line, e.column, e.message.as_str()), (2, 1, "unclosed section s: missing {{/s}}"));
        let e = analyze("mustache", "{{#a}}{{/b}}").unwrap().unwrap_err();
        assert_eq!(e.column, 7);
        assert!(analyze("mustache", "{{ x").unwrap().is_err());
        assert!(analyze("mustache", "{{> p}}").unwrap().is_err());
        assert!(analyze("custom", "{{ x").is_none());
    }
}
