//! Where a place in the frontmatter is in the YAML's structure, read from the text around it (the
//! text being typed is rarely valid YAML): the keys of the mappings that hold it, and whether it
//! is a key or the value of one. Block and flow (`{kind: string}`) mappings, and list items.

/// Where a place in the frontmatter is.
///
/// ```
/// use prompty_lsp::yaml_path::{context, Slot};
/// let yaml = "model:\n  options:\n    temp";
/// let c = context(yaml, yaml.len());
/// assert_eq!((c.path.as_slice(), &c.slot), (&["model".to_owned(), "options".to_owned()][..], &Slot::Key));
/// let yaml = "inputs:\n  city: {kind: str";
/// let c = context(yaml, yaml.len());
/// assert_eq!(c.path, ["inputs", "city"]);
/// assert_eq!(c.slot, Slot::Value("kind".to_owned()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct YamlContext {
    /// The keys of the mappings that hold the place, outermost first; an item of a list is `-`
    /// (`tools`, `-`, `parameters`).
    pub path: Vec<String>,
    /// Whether the place is a key or the value of one.
    pub slot: Slot,
}

/// A key of a mapping, or the value of the key named.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Slot {
    /// The place of a key.
    #[default]
    Key,
    /// The value of this key.
    Value(String),
}

/// How a line of block YAML starts: its indentation, whether it is a list item (`- `) and the
/// column its content starts at.
fn shape(line: &str) -> (usize, bool, usize) {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    if rest == "-" || rest.starts_with("- ") {
        let after = &rest[1..];
        let content = indent + 1 + (after.len() - after.trim_start_matches(' ').len());
        return (indent, true, content);
    }
    (indent, false, indent)
}

/// The key a line's content starts with (`name:` → `name`), if it is a `key:` entry.
fn key_of(content: &str) -> Option<&str> {
    let content = content.trim_start();
    let end = content.find(':')?;
    let after = &content[end + 1..];
    if !(after.is_empty() || after.starts_with([' ', '\t', '\r'])) {
        return None;
    }
    let key = content[..end].trim().trim_matches(['"', '\'']);
    (!key.is_empty() && !key.contains(['{', '[', '#'])).then_some(key)
}

/// Where byte `offset` of `yaml` (the frontmatter's text) is.
pub fn context(yaml: &str, offset: usize) -> YamlContext {
    let mut offset = offset.min(yaml.len());
    while !yaml.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = yaml[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &yaml[line_start..offset];
    let (indent, item, content_at) = shape(before);
    // The block parents, from the lines above.
    let mut parents: Vec<String> = Vec::new();
    let mut threshold = if before.trim().is_empty() { before.len() } else { content_at };
    if item {
        parents.push("-".to_owned());
        threshold = indent;
    }
    for line in yaml[..line_start].lines().rev() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (indent, item, content_at) = shape(line);
        if item && indent < threshold {
            if content_at < threshold {
                if let Some(key) = key_of(&line[content_at..]) {
                    // `- name: x` then a deeper line: inside the value of `name`.
                    parents.push(key.to_owned());
                }
            }
            parents.push("-".to_owned());
            threshold = indent;
        } else if !item && indent < threshold {
            if let Some(key) = key_of(&line[indent..]) {
                parents.push(key.to_owned());
            }
            threshold = indent;
        }
        if threshold == 0 {
            break;
        }
    }
    parents.reverse();
    // The current line: `key: value`, `key: {a: b, c: `, or a key being typed.
    let text = &before[content_at.min(before.len())..];
    let mut path = parents;
    let mut segment_start = 0;
    let mut open_key: Option<String> = None;
    let mut depth_keys: Vec<Option<String>> = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '{' => {
                let key = key_of(&text[segment_start..i]).map(str::to_owned).or(open_key.take());
                depth_keys.push(key);
                segment_start = i + 1;
            }
            '}' => {
                depth_keys.pop();
                segment_start = i + 1;
            }
            ',' if !depth_keys.is_empty() => segment_start = i + 1,
            _ => {}
        }
        if c == ':' && text[i + 1..].starts_with([' ']) && depth_keys.is_empty() {
            open_key = key_of(&text[segment_start..=i]).map(str::to_owned);
        }
    }
    path.extend(depth_keys.into_iter().flatten());
    let segment = &text[segment_start.min(text.len())..];
    let slot = match key_of_partial(segment) {
        Some(key) => Slot::Value(key),
        None => Slot::Key,
    };
    YamlContext { path, slot }
}

/// The key of a segment `key: value-being-typed` (the value part may be empty or partial).
fn key_of_partial(segment: &str) -> Option<String> {
    let segment = segment.trim_start();
    let colon = segment.find(": ").or_else(|| segment.strip_suffix(':').map(str::len))?;
    let key = segment[..colon].trim().trim_matches(['"', '\'']);
    (!key.is_empty() && !key.contains(['{', '['])).then(|| key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(yaml: &str) -> (Vec<String>, Slot) {
        let offset = yaml.find('|').unwrap();
        let text = yaml.replacen('|', "", 1);
        let c = context(&text, offset);
        (c.path, c.slot)
    }

    #[test]
    fn block_mappings_and_lists() {
        assert_eq!(at("na|"), (vec![], Slot::Key));
        assert_eq!(at("model:\n  provider: op|"), (vec!["model".into()], Slot::Value("provider".into())));
        assert_eq!(at("model:\n  id: x\n  |"), (vec!["model".into()], Slot::Key));
        assert_eq!(
            at("tools:\n  - name: w\n    kind: |"),
            (vec!["tools".into(), "-".into()], Slot::Value("kind".into()))
        );
        assert_eq!(at("tools:\n  - na|"), (vec!["tools".into(), "-".into()], Slot::Key));
        assert_eq!(
            at("tools:\n  - name: w\n    parameters:\n      city:\n        kind: |"),
            (vec!["tools".into(), "-".into(), "parameters".into(), "city".into()], Slot::Value("kind".into()))
        );
        assert_eq!(at("model:\n  id: x\n# note\ntem|"), (vec![], Slot::Key));
    }

    #[test]
    fn flow_mappings() {
        assert_eq!(at("inputs:\n  city: {kind: string, desc|}"), (vec!["inputs".into(), "city".into()], Slot::Key));
        assert_eq!(
            at("model: {provider: openai, options: {temperature: 1, top|}}"),
            (vec!["model".into(), "options".into()], Slot::Key)
        );
        assert_eq!(at("model: {apiType: |}"), (vec!["model".into()], Slot::Value("apiType".into())));
    }
}
