//! Key paths (`inputs[1].kind`) and finding the line of a key path in YAML text.

use std::fmt;

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A key path into the frontmatter, such as `model.connection.endpoint` or `inputs[1].kind`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct KeyPath(pub Vec<Seg>);

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(frontmatter)");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

impl From<&serde_path_to_error::Path> for KeyPath {
    fn from(p: &serde_path_to_error::Path) -> Self {
        use serde_path_to_error::Segment;
        KeyPath(
            p.iter()
                .filter_map(|s| match s {
                    Segment::Seq { index } => Some(Seg::Index(*index)),
                    Segment::Map { key } => Some(Seg::Key(key.clone())),
                    Segment::Enum { .. } | Segment::Unknown => None,
                })
                .collect(),
        )
    }
}

impl KeyPath {
    /// Reads the display form back: `inputs[1].kind`, `tools[0].bindings.unit`.
    pub(crate) fn parse(text: &str) -> KeyPath {
        let mut segs = Vec::new();
        for part in text.split('.').filter(|p| !p.is_empty()) {
            let (key, mut rest) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if !key.is_empty() {
                segs.push(Seg::Key(key.to_owned()));
            }
            while let Some(inner) = rest.strip_prefix('[') {
                let Some(end) = inner.find(']') else { break };
                match inner[..end].parse() {
                    Ok(n) => segs.push(Seg::Index(n)),
                    Err(_) => segs.push(Seg::Key(inner[..end].to_owned())),
                }
                rest = &inner[end + 1..];
            }
        }
        KeyPath(segs)
    }
}

/// The 1-based column of the entry a key path names on its line: where its key starts (for a
/// key), or where the item starts after the `- ` marker (for a list index).
pub(crate) fn column(line: &str, last: Option<&Seg>) -> usize {
    let indent = indent_of(line);
    let mut start = indent;
    if line[start..].starts_with("- ") {
        start += 2;
        start += indent_of(&line[start..]);
    }
    if let Some(Seg::Key(k)) = last {
        if let Some(i) = line[start..].find(k.as_str()) {
            start += i;
        }
    }
    line[..start].chars().count() + 1
}

/// The 1-based column of item `index` of a flow-style list on `line` (`inputs: [a, b]`).
pub(crate) fn flow_item_column(line: &str, index: usize) -> Option<usize> {
    let open = line.find('[')?;
    let mut depth = 0usize;
    let mut item = 0usize;
    let mut start = Some(open + 1);
    for (i, c) in line.char_indices().skip_while(|(i, _)| *i <= open) {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' if depth > 0 => depth -= 1,
            ']' => break,
            ',' if depth == 0 => {
                item += 1;
                start = Some(i + 1);
                continue;
            }
            _ => {}
        }
        if item == index && !c.is_whitespace() {
            if let Some(s) = start.take() {
                let s = s + line[s..].len() - line[s..].trim_start().len();
                return Some(line[..s].chars().count() + 1);
            }
        }
    }
    None
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The text of a child entry with any `- ` list marker removed, and its column.
fn entry_key(line: &str, col: usize) -> Option<&str> {
    let rest = &line[col..];
    let key = rest.split(':').next()?.trim();
    Some(key.trim_matches(|c| c == '"' || c == '\''))
}

/// Finds the 0-based line (within `yaml`) of the entry a key path names, following block-style
/// mappings and lists by indentation. Falls back to the deepest entry it could find; `None` when
/// not even the first key is found. Used only to point error messages at a line.
pub(crate) fn locate(yaml: &str, path: &KeyPath) -> Option<usize> {
    let walk = walk(yaml, path);
    if walk.empty_region {
        None
    } else {
        walk.found
    }
}

/// The line of the deepest entry of a key path found in block style, and how many of its
/// segments lead there (the rest may lie inside a flow collection on that line: `vars: {a: 1}`).
pub(crate) fn locate_prefix(yaml: &str, path: &KeyPath) -> Option<(usize, usize)> {
    let walk = walk(yaml, path);
    walk.found.map(|line| (line, walk.depth))
}

struct Walk {
    found: Option<usize>,
    depth: usize,
    /// The walk stopped at an entry with no block-style children.
    empty_region: bool,
}

fn walk(yaml: &str, path: &KeyPath) -> Walk {
    let lines: Vec<&str> = yaml.lines().collect();
    // Region: [start, end) lines, children at the first content line's indentation (after `- `).
    let (mut start, mut end) = (0usize, lines.len());
    // Column where the children of the current region begin (`None` = first content line decides).
    let mut child_col: Option<usize> = None;
    let mut found = None;
    let mut depth = 0;
    for seg in &path.0 {
        let Some(first) = (start..end).find(|&i| is_content(lines[i])) else {
            return Walk { found, depth, empty_region: true };
        };
        let col = child_col.unwrap_or_else(|| indent_of(lines[first]));
        // Children: content lines whose entry begins exactly at `col`.
        let children: Vec<usize> = (start..end)
            .filter(|&i| {
                let l = lines[i];
                is_content(l) && (indent_of(l) == col || (i == start && child_col.is_some()))
            })
            .collect();
        let list_items = children.iter().any(|&i| lines[i][col.min(lines[i].len())..].starts_with("- "));
        let pick = match seg {
            Seg::Key(k) => children.iter().copied().find(|&i| {
                let l = lines[i];
                let c = if l[col.min(l.len())..].starts_with("- ") { col + 2 } else { col };
                c <= l.len() && entry_key(l, c) == Some(k.as_str())
            }),
            Seg::Index(n) if list_items => {
                children.iter().copied().filter(|&i| lines[i][col.min(lines[i].len())..].starts_with("- ")).nth(*n)
            }
            Seg::Index(n) => children.get(*n).copied(),
        };
        let Some(line) = pick else { return Walk { found, depth, empty_region: false } };
        found = Some(line);
        depth += 1;
        let next = children.iter().copied().find(|&i| i > line).unwrap_or(end);
        let l = lines[line];
        if list_items && l[col.min(l.len())..].starts_with("- ") {
            // The item's own fields start on its line, after `- `.
            start = line;
            child_col = Some(col + 2);
        } else {
            start = line + 1;
            child_col = None;
        }
        end = next;
    }
    Walk { found, depth, empty_region: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(segs: &[Seg]) -> KeyPath {
        KeyPath(segs.to_vec())
    }

    const YAML: &str = "name: x\nmodel:\n  id: gpt\n  connection:\n    kind: key\n    endpoint: e\ninputs:\n  - name: a\n    kind: string\n  - name: b\n    kind: bad\noutputs:\n  city:\n    kind: string\n";

    #[test]
    fn finds_nested_keys_and_list_items() {
        assert_eq!(locate(YAML, &p(&[Seg::Key("name".into())])), Some(0));
        let ep = p(&[Seg::Key("model".into()), Seg::Key("connection".into()), Seg::Key("endpoint".into())]);
        assert_eq!(locate(YAML, &ep), Some(5));
        let kind = p(&[Seg::Key("inputs".into()), Seg::Index(1), Seg::Key("kind".into())]);
        assert_eq!(locate(YAML, &kind), Some(10));
        let first = p(&[Seg::Key("inputs".into()), Seg::Index(0), Seg::Key("name".into())]);
        assert_eq!(locate(YAML, &first), Some(7));
        let map_form = p(&[Seg::Key("outputs".into()), Seg::Index(0), Seg::Key("kind".into())]);
        assert_eq!(locate(YAML, &map_form), Some(13));
    }

    #[test]
    fn displays_paths() {
        assert_eq!(
            p(&[Seg::Key("inputs".into()), Seg::Index(1), Seg::Key("kind".into())]).to_string(),
            "inputs[1].kind"
        );
    }
}
