//! `${env:…}` and `${file:…}` written inside other text (`endpoint: http://h:${env:PORT}/v1`):
//! the loader resolves only a value that is one whole reference (spec §2.11), so such a value
//! stays literal. A warning at the reference, wherever it is in the frontmatter.

use super::Checker;
use crate::keypath::{KeyPath, Seg};
use serde_json::Value;

/// The schemes the loader resolves, as they start a reference.
const SCHEMES: [&str; 2] = ["${env:", "${file:"];

impl Checker<'_> {
    /// Warns on every `${env:…}` / `${file:…}` reference inside a frontmatter string that is not
    /// that one reference (code `reference-inside-text`).
    pub(super) fn references_inside_text(&mut self) {
        let Some(yaml) = super::frontmatter_text(self.text) else { return };
        let Ok(value) = crate::parse_yaml(yaml) else { return };
        let mut found = Vec::new();
        collect(&value, &mut KeyPath::default(), &mut found);
        // The search for a reference's place starts at its key's line and moves forward, so the
        // same reference written twice is placed at each of its occurrences.
        let mut searched_from = 0usize;
        for (path, reference) in found {
            let key_at = self.at(&path.to_string());
            let line_start = key_at.line.and_then(|l| super::offset_of(self.text, l, 1));
            let from = line_start.map_or(searched_from, |s| if s < searched_from { searched_from } else { s });
            let at = match self.text.get(from..).and_then(|rest| rest.find(reference.as_str())) {
                Some(i) => {
                    let offset = from + i;
                    searched_from = offset + reference.len();
                    let before = &self.text[..offset];
                    let line = before.matches('\n').count() + 1;
                    let column = before[before.rfind('\n').map_or(0, |n| n + 1)..].chars().count() + 1;
                    crate::Location::file(self.display).at(line, column)
                }
                None => key_at,
            };
            let key = path.0.iter().rev().find_map(|s| match s {
                Seg::Key(k) => Some(k.as_str()),
                Seg::Index(_) => None,
            });
            let key = key.unwrap_or("value");
            let (whole, help) = if reference.starts_with("${env:") {
                (
                    "`${env:NAME}`",
                    format!(
                        "write the whole value in the environment variable, e.g. `{key}: ${{env:{}}}`",
                        screaming_snake(key)
                    ),
                )
            } else {
                ("`${file:PATH}`", format!("write the whole value in the file, e.g. `{key}: ${{file:{key}.txt}}`"))
            };
            let d = self.warning(
                "reference-inside-text",
                at,
                format!(
                    "`{reference}` inside other text stays literal: only a value that is a whole {whole} reference \
                     is resolved"
                ),
            );
            let mut help = help;
            crate::Secret::scrub_in_place(&mut help);
            d.help = Some(help);
        }
    }
}

/// Every reference inside a string of `value` that is not one whole reference, with the key path
/// of its string, in document order.
fn collect(value: &Value, path: &mut KeyPath, out: &mut Vec<(KeyPath, String)>) {
    match value {
        Value::String(s) => {
            // What the loader resolves is not literal (one rule: the loader's).
            if crate::references::whole_reference(s).is_some() {
                return;
            }
            let mut rest = s.as_str();
            while let Some(i) = SCHEMES.iter().filter_map(|scheme| rest.find(scheme)).min() {
                let Some(len) = rest[i..].find('}') else { break };
                out.push((path.clone(), rest[i..i + len + 1].to_owned()));
                rest = &rest[i + len + 1..];
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.0.push(Seg::Index(i));
                collect(item, path, out);
                path.0.pop();
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                // The template body is not frontmatter: it is never resolved.
                if path.0.is_empty() && k == "instructions" {
                    continue;
                }
                path.0.push(Seg::Key(k.clone()));
                collect(item, path, out);
                path.0.pop();
            }
        }
        _ => {}
    }
}

/// `endpoint` → `ENDPOINT`, `apiKey` → `API_KEY`, `base-url` → `BASE_URL`.
fn screaming_snake(key: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if c.is_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        out.push(if c.is_alphanumeric() { c.to_ascii_uppercase() } else { '_' });
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::analysis::check_str;
    use crate::LoadOptions;
    use std::path::Path;

    fn warnings(text: &str) -> Vec<(&'static str, Option<u32>, Option<u32>, String)> {
        let report = check_str(text, Path::new("."), "r.prompty", &LoadOptions::new());
        report
            .warnings()
            .filter(|d| d.code == "reference-inside-text")
            .map(|d| (d.code, d.line, d.column, d.to_string()))
            .collect()
    }

    #[test]
    fn a_reference_inside_a_connection_value_is_a_warning_at_the_reference() {
        let text = "---\nmodel:\n  id: m\n  connection:\n    kind: key\n    endpoint: http://127.0.0.1:${env:PORT}/v1\n---\nuser:\nHi";
        let found = warnings(text);
        assert_eq!(
            found,
            [(
                "reference-inside-text",
                Some(6),
                Some(32),
                "r.prompty:6:32: `${env:PORT}` inside other text stays literal: only a value that is a whole \
                 `${env:NAME}` reference is resolved (write the whole value in the environment variable, e.g. \
                 `endpoint: ${env:ENDPOINT}`)"
                    .to_owned()
            )]
        );
        let report = check_str(text, Path::new("."), "r.prompty", &LoadOptions::new());
        let span = report.warnings().next().unwrap().span.unwrap();
        assert_eq!(&text[span.start..span.end], "${env:PORT}");
        // A whole reference is resolved, never warned about.
        let whole =
            "---\nmodel:\n  id: m\n  connection:\n    kind: key\n    endpoint: ${env:ENDPOINT:http://h/v1}\n---\nHi";
        assert!(warnings(whole).is_empty());
    }

    #[test]
    fn everywhere_in_the_frontmatter_and_for_files_too() {
        let text = "---\nmodel:\n  id: gpt-${env:MODEL_SIZE}\ninputs:\n  city:\n    kind: string\n    default: \"in ${file:city.txt}\"\ntools:\n  - name: docs\n    kind: mcp\n    serverName: docs\n    connection:\n      kind: stdio\n      command: srv\n      args: [--port, \"p${env:PORT}\"]\n---\nuser:\n{{ city }} ${env:NOT_FRONTMATTER}";
        let found: Vec<(Option<u32>, Option<u32>, String)> =
            warnings(text).into_iter().map(|(_, l, c, m)| (l, c, m)).collect();
        assert_eq!(found.len(), 3, "{found:#?}");
        assert_eq!((found[0].0, found[0].1), (Some(3), Some(11)));
        assert!(found[0].2.contains("`${env:MODEL_SIZE}` inside other text"), "{found:#?}");
        assert!(found[0].2.ends_with("e.g. `id: ${env:ID}`)"), "{found:#?}");
        assert_eq!((found[1].0, found[1].1), (Some(7), Some(18)));
        assert!(
            found[1].2.contains(
                "`${file:city.txt}` inside other text stays literal: only a value that is a whole `${file:PATH}` \
                 reference is resolved (write the whole value in the file, e.g. `default: ${file:default.txt}`)"
            ),
            "{found:#?}"
        );
        assert_eq!((found[2].0, found[2].1), (Some(15), Some(24)));
        assert!(found[2].2.contains("`${env:PORT}`"), "{found:#?}");
    }

    #[test]
    fn key_names_become_variable_names() {
        assert_eq!(super::screaming_snake("apiKey"), "API_KEY");
        assert_eq!(super::screaming_snake("base-url"), "BASE_URL");
        assert_eq!(super::screaming_snake("endpoint"), "ENDPOINT");
    }
}
