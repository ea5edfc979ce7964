//! Rust names for `.prompty` names (`firstName` → `first_name`, `profile` → `Profile`).

use proc_macro2::{Ident, Span};

/// Rust keywords a field or module name must not be (2021 edition, strict and reserved).
const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in",
    "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
    "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box",
    "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// Words of a name: split at `_`, `-`, spaces and other non-alphanumerics, and at lower→upper
/// case changes (`firstName` → `first`, `Name`; `HTTPServer` → `HTTP`, `Server`).
fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c.is_uppercase() && !current.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower) {
                words.push(std::mem::take(&mut current));
            }
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// `firstName` → `first_name`; never empty, never starts with a digit (`_` is prepended).
pub(crate) fn snake_case(name: &str) -> String {
    let mut s = words(name).iter().map(|w| w.to_lowercase()).collect::<Vec<_>>().join("_");
    if s.is_empty() {
        s.push('_');
    }
    if s.starts_with(|c: char| c.is_numeric()) {
        s.insert(0, '_');
    }
    s
}

/// `first_name` → `FirstName`; never empty, never starts with a digit.
pub(crate) fn pascal_case(name: &str) -> String {
    let mut s: String = words(name)
        .iter()
        .map(|w| {
            let mut cs = w.chars();
            match cs.next() {
                Some(f) => f.to_uppercase().chain(cs.flat_map(char::to_lowercase)).collect::<String>(),
                None => String::new(),
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_numeric()) {
        s.insert(0, 'T');
    }
    s
}

/// An identifier for `name` (already a valid identifier's text), raw when it is a keyword
/// (`type` → `r#type`; `self`, `super`, `crate`, `Self` cannot be raw and get a `_` suffix).
pub(crate) fn ident(name: &str, span: Span) -> Ident {
    match name {
        "self" | "super" | "crate" | "Self" | "_" => Ident::new(&format!("{name}_"), span),
        _ if KEYWORDS.contains(&name) => Ident::new_raw(name, span),
        _ => Ident::new(name, span),
    }
}

/// The identifier a tool's handler is looked up by: the tool's name with every character that
/// cannot be in an identifier replaced by `_`.
pub(crate) fn handler_name(tool: &str) -> String {
    let mut s: String = tool.chars().map(|c| if c.is_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_numeric()) {
        s.insert(0, '_');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_and_pascal_case() {
        for (name, snake, pascal) in [
            ("firstName", "first_name", "FirstName"),
            ("first_name", "first_name", "FirstName"),
            ("preferred-unit", "preferred_unit", "PreferredUnit"),
            ("HTTPServer", "http_server", "HttpServer"),
            ("field_00", "field_00", "Field00"),
            ("items_0", "items_0", "Items0"),
            ("2fa", "_2fa", "T2fa"),
            ("type", "type", "Type"),
            ("Q", "q", "Q"),
            ("--", "_", "T"),
        ] {
            assert_eq!(snake_case(name), snake, "{name}");
            assert_eq!(pascal_case(name), pascal, "{name}");
        }
    }

    #[test]
    fn keywords_become_raw_identifiers() {
        assert_eq!(ident("type", Span::call_site()).to_string(), "r#type");
        assert_eq!(ident("self", Span::call_site()).to_string(), "self_");
        assert_eq!(ident("city", Span::call_site()).to_string(), "city");
        assert_eq!(handler_name("get-weather"), "get_weather");
    }
}
