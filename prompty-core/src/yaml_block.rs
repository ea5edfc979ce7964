//! A fast reader for the subset of YAML that frontmatter is usually written in: nested mappings and
//! sequences by indentation, single-line plain, `'single'` and `"double"` quoted scalars, one-line
//! flow collections (`[a, b]`, `{kind: string}`), comments and blank lines. It gives exactly the
//! value the full YAML parser gives, or `None` when the text uses anything else (multi-line flows,
//! block scalars, anchors, aliases, tags, multi-line scalars, escapes, duplicate keys, unusual
//! numbers, tabs, directives...), and
//! the caller then parses it with the full parser, which also reports every error. It never fails
//! and never reports an error itself.
//!
//! Plain scalars resolve as the full parser resolves them (YAML 1.2 core schema): `null`, `~` and
//! nothing are null; `true`/`false` (three spellings each) are booleans; decimal integers without
//! leading zeros are integers and `1.5`-style decimals are floats. Any other scalar that could be a
//! number (a sign, a leading digit or `.`) is left to the full parser.
//!
//! Bounds: nesting deeper than [`MAX_DEPTH`] is left to the full parser (which refuses it); the
//! work is linear in the text.

use serde_json::{Map, Number, Value};

/// How deep the fast reader nests before it leaves the text to the full parser.
const MAX_DEPTH: usize = 32;

/// The value of `yaml`, or `None` when it uses more than the block subset.
pub(crate) fn parse(yaml: &str) -> Option<Value> {
    if yaml.starts_with('\u{feff}') {
        return None;
    }
    let mut lines = Vec::new();
    for line in yaml.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let indent = line.bytes().take_while(|&b| b == b' ').count();
        let content = &line[indent..];
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        // Tabs, directives and document markers are the full parser's business.
        if content.starts_with(['\t', '%'])
            || (indent == 0 && (content.starts_with("---") || content.starts_with("...")))
        {
            return None;
        }
        lines.push(Line { indent, content: content.trim_end_matches([' ', '\t']) });
    }
    if lines.is_empty() {
        return None; // an empty document: the full parser says what it is
    }
    let mut reader = Reader { lines, at: 0 };
    let first = reader.lines[0].indent;
    let value = reader.block(first, 0)?;
    (reader.at == reader.lines.len()).then_some(value)
}

#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    content: &'a str,
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.at).copied()
    }

    /// The collection whose lines start at column `indent`.
    fn block(&mut self, indent: usize, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let line = self.peek()?;
        if is_item(line.content) {
            self.sequence(indent, depth)
        } else {
            self.mapping(indent, depth)
        }
    }

    fn sequence(&mut self, indent: usize, depth: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(line) = self.peek().filter(|l| l.indent == indent && is_item(l.content)) {
            self.at += 1;
            let rest = line.content[1..].trim_start_matches(' ');
            if rest.is_empty() {
                items.push(self.nested(indent, depth, false)?);
                continue;
            }
            // `- key: value`: a mapping whose keys sit where `key` starts.
            let column = indent + (line.content.len() - rest.len());
            if is_item(rest) {
                return None; // `- - x`
            }
            if split_key(rest).is_some() {
                self.at -= 1;
                self.lines[self.at] = Line { indent: column, content: rest };
                items.push(self.mapping(column, depth + 1)?);
                continue;
            }
            items.push(scalar(rest)?);
            self.no_continuation(indent)?;
        }
        self.end_of_block(indent)?;
        Some(Value::Array(items))
    }

    fn mapping(&mut self, indent: usize, depth: usize) -> Option<Value> {
        let mut map = Map::new();
        while let Some(line) = self.peek().filter(|l| l.indent == indent) {
            if is_item(line.content) {
                return None; // a sequence among mapping keys
            }
            self.at += 1;
            let (key, rest) = split_key(line.content)?;
            if key == "<<" {
                return None; // merge keys: the full parser decides
            }
            let value = if rest.is_empty() { self.nested(indent, depth, true)? } else { scalar(rest)? };
            if !rest.is_empty() {
                self.no_continuation(indent)?;
            }
            match map.entry(key) {
                serde_json::map::Entry::Vacant(slot) => slot.insert(value),
                serde_json::map::Entry::Occupied(_) => return None, // a duplicate key: the full parser's error
            };
        }
        self.end_of_block(indent)?;
        Some(Value::Object(map))
    }

    /// The value of a key (or item) with nothing after its indicator: the block on the following
    /// lines, or null. A mapping's value may be a sequence at the key's own column.
    fn nested(&mut self, indent: usize, depth: usize, in_mapping: bool) -> Option<Value> {
        match self.peek() {
            Some(next) if next.indent > indent => self.block(next.indent, depth + 1),
            Some(next) if in_mapping && next.indent == indent && is_item(next.content) => {
                self.sequence(indent, depth + 1)
            }
            _ => Some(Value::Null),
        }
    }

    /// After a scalar on a line: the next line may not be more indented (a multi-line scalar or a
    /// misplaced block is the full parser's business).
    fn no_continuation(&self, indent: usize) -> Option<()> {
        match self.peek() {
            Some(next) if next.indent > indent => None,
            _ => Some(()),
        }
    }

    /// A block ends at a line less indented than it; one more indented is not the subset.
    fn end_of_block(&self, indent: usize) -> Option<()> {
        match self.peek() {
            Some(next) if next.indent > indent => None,
            _ => Some(()),
        }
    }
}

/// Whether `content` starts a sequence item (`-` alone or followed by a space).
fn is_item(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

/// `key: rest` (the rest without its leading spaces), with a plain or quoted key.
fn split_key(content: &str) -> Option<(String, &str)> {
    let (key, after) = if content.starts_with(['"', '\'']) {
        let (key, len) = quoted(content)?;
        (key, &content[len..])
    } else {
        // The first `: ` (or a `:` ending the line) ends a plain key; a tab or a comment before it,
        // or a key that would resolve to a number, boolean or null, is the full parser's business.
        let bytes = content.as_bytes();
        let end = (0..bytes.len()).find(|&i| bytes[i] == b':' && matches!(bytes.get(i + 1), None | Some(b' ')))?;
        let key = &content[..end];
        if plain_text(key) != Some(key) || !plain_ok(key) || key.ends_with(' ') || !resolves_to_string(key) {
            return None;
        }
        (key.to_owned(), &content[end..])
    };
    let rest = after.strip_prefix(':')?;
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((key, rest.trim_start_matches(' ')))
}

/// A scalar (or one-line flow collection) written after `key: ` or `- `, with an optional comment
/// after it.
fn scalar(text: &str) -> Option<Value> {
    if text.starts_with(['[', '{']) {
        let mut flow = Flow { text, at: 0 };
        let value = flow.value(0)?;
        let after = &text[flow.at..];
        let rest = after.trim_start_matches(' ');
        return (rest.is_empty() || (rest.starts_with('#') && after.starts_with(' '))).then_some(value);
    }
    if text.starts_with(['"', '\'']) {
        let (value, len) = quoted(text)?;
        let after = text[len..].trim_start_matches(' ');
        return (after.is_empty() || (after.starts_with('#') && len < text.len() && text[len..].starts_with(' ')))
            .then_some(Value::String(value));
    }
    let text = plain_text(text)?;
    if !plain_ok(text) {
        return None;
    }
    resolve(text)
}

/// A plain scalar without the comment after it (from ` #`); `None` when it holds a tab or a `: `
/// or ends with `:` (the full parser's business). One pass over the text.
fn plain_text(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\t' => return None,
            b':' if matches!(bytes.get(i + 1), None | Some(b' ')) => return None,
            b'#' if i > 0 && bytes[i - 1] == b' ' => return Some(text[..i].trim_end_matches(' ')),
            _ => {}
        }
    }
    Some(text)
}

/// A flow collection on one line: `[a, 'b', {k: v}]`. Plain scalars in it may not hold `,[]{}#:`;
/// trailing commas, multi-line flows and anything unusual are the full parser's business.
struct Flow<'a> {
    text: &'a str,
    at: usize,
}

impl Flow<'_> {
    fn skip_spaces(&mut self) {
        while self.text.as_bytes().get(self.at) == Some(&b' ') {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_spaces();
        match self.peek()? {
            b'[' => self.sequence(depth),
            b'{' => self.mapping(depth),
            b'"' | b'\'' => {
                let (value, len) = quoted(&self.text[self.at..])?;
                self.at += len;
                Some(Value::String(value))
            }
            _ => resolve(self.plain()?),
        }
    }

    /// A plain scalar up to the next `,` `]` `}`; `None` on characters the subset leaves alone.
    fn plain(&mut self) -> Option<&str> {
        let start = self.at;
        while let Some(b) = self.peek() {
            match b {
                b',' | b']' | b'}' => break,
                b'[' | b'{' | b'#' | b':' | b'\t' => return None,
                _ => self.at += 1,
            }
        }
        let text = self.text[start..self.at].trim_end_matches(' ');
        plain_ok(text).then_some(text)
    }

    /// After an item: `,` and more, or the closing `close`. A trailing comma is left alone.
    fn next_item(&mut self, close: u8) -> Option<bool> {
        self.skip_spaces();
        match self.peek()? {
            b',' => {
                self.at += 1;
                self.skip_spaces();
                (self.peek()? != close).then_some(true)
            }
            b if b == close => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    fn sequence(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        self.skip_spaces();
        let mut items = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            if !self.next_item(b']')? {
                return Some(Value::Array(items));
            }
        }
    }

    fn mapping(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        self.skip_spaces();
        let mut map = Map::new();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(Value::Object(map));
        }
        loop {
            let key = match self.peek()? {
                b'"' | b'\'' => {
                    let (key, len) = quoted(&self.text[self.at..])?;
                    self.at += len;
                    key
                }
                _ => {
                    let start = self.at;
                    while self.peek().is_some_and(|b| !matches!(b, b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#')) {
                        self.at += 1;
                    }
                    let key = self.text[start..self.at].trim_end_matches(' ');
                    if !plain_ok(key) || !resolves_to_string(key) || key.contains('\t') {
                        return None;
                    }
                    key.to_owned()
                }
            };
            // `key: value`, the colon followed by a space.
            if !self.text[self.at..].starts_with(": ") {
                return None;
            }
            self.at += 2;
            let value = self.value(depth + 1)?;
            match map.entry(key) {
                serde_json::map::Entry::Vacant(slot) => slot.insert(value),
                serde_json::map::Entry::Occupied(_) => return None,
            };
            if !self.next_item(b'}')? {
                return Some(Value::Object(map));
            }
        }
    }
}

/// Whether `text` (without its comment) may be read as a plain scalar of the subset: no indicator
/// at its start.
fn plain_ok(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some(&first) = bytes.first() else { return false };
    // `-`, `?` and `:` start a plain scalar only when a non-space follows.
    let indicator = match first {
        b'-' | b'?' | b':' => bytes.get(1).is_none_or(|&b| b == b' '),
        b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\'' | b'"' | b'%' | b'@'
        | b'`' | b' ' => true,
        _ => false,
    };
    !indicator
}

/// A quoted scalar at the start of `text`: its value and the length of its source. Escapes
/// (`\` in double quotes) are left to the full parser; `''` in single quotes is a quote.
fn quoted(text: &str) -> Option<(String, usize)> {
    let quote = text.as_bytes()[0];
    let body = &text[1..];
    if quote == b'"' {
        let end = body.find(['"', '\\'])?;
        if body.as_bytes()[end] == b'\\' {
            return None;
        }
        return Some((body[..end].to_owned(), end + 2));
    }
    let mut value = String::new();
    let mut rest = body;
    let mut used = 1;
    loop {
        let end = rest.find('\'')?;
        value.push_str(&rest[..end]);
        used += end + 1;
        if rest[end + 1..].starts_with('\'') {
            value.push('\'');
            used += 1;
            rest = &rest[end + 2..];
        } else {
            return Some((value, used));
        }
    }
}

/// Whether plain scalar `text` resolves to a string (what [`resolve`] gives, without building it).
fn resolves_to_string(text: &str) -> bool {
    !matches!(text, "null" | "Null" | "NULL" | "~" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE")
        && !text.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
}

/// The value of a plain scalar, as the full parser resolves it; `None` for number-like text
/// outside the forms handled here.
fn resolve(text: &str) -> Option<Value> {
    match text {
        "null" | "Null" | "NULL" | "~" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        _ => {}
    }
    let first = text.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return Some(Value::String(text.to_owned()));
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let no_leading_zero = |s: &str| s == "0" || !s.starts_with('0');
    if all_digits(digits) && no_leading_zero(digits) && digits.len() <= 18 {
        let n: i64 = text.parse().ok()?;
        // Non-negative integers are unsigned in the full parser.
        return Some(Value::Number(if n >= 0 { Number::from(n as u64) } else { Number::from(n) }));
    }
    if let Some((whole, fraction)) = digits.split_once('.') {
        if all_digits(whole) && no_leading_zero(whole) && all_digits(fraction) && whole.len() + fraction.len() <= 15 {
            let f: f64 = text.parse().ok()?;
            return Number::from_f64(f).map(Value::Number);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::parse;

    /// Every document: the fast reader gives the full parser's value, or leaves it to it.
    fn agrees(doc: &str) -> bool {
        let full: Option<serde_json::Value> = serde_yaml::from_str(doc).ok();
        match parse(doc) {
            Some(fast) => {
                assert_eq!(Some(&fast), full.as_ref(), "fast reader differs on {doc:?}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn the_block_subset_is_read_as_the_full_parser_reads_it() {
        let read = [
            "name: basic\nmodel:\n  id: gpt-4\n  options:\n    temperature: 0.7\n    maxOutputTokens: 1000\n",
            "inputs:\n  - name: a\n    kind: string\n    default: Jane\n  - name: b\n    required: true\n",
            "inputs:\n- name: a\n  kind: string\n- plain\n-\n  nested: 1\n",
            "a: ${env:OPENAI_ENDPOINT:https://api.openai.com/v1}\nb: 'it''s'\nc: \"double: quoted\"\n",
            "a: 0\nb: -12\nc: 1.5\nd: -0.25\ne: 123456789012345678\nf: ~\ng:\nh: True\ni: FALSE\nj: Null\n",
            "a: x # comment\nb: 'y' # comment\n# full line\n\nc: z#not-a-comment\n",
            "metadata:\n  authors:\n    - one\n    - two\n  tags:\n  - x\n",
            "'quoted key': 1\n\"other\": two\nkey with spaces: v\n",
            "a:\n  b:\n    c:\n      d: deep\n",
            "inputs: [question, other]\nempty: []\nnone: {}\nmixed: [1, -2, 'three', \"four\", true, ~, 1.5]\n",
            "props: {kind: string, default: 'x y', nested: {a: [1, 2]}} # comment\n",
            "- [a, b]\n- {k: v}\n",
            "description: A prompt: with a colon\n",
        ];
        // All but the last document are inside the subset.
        for doc in &read[..read.len() - 1] {
            assert!(agrees(doc), "left to the full parser: {doc:?}");
        }
        assert!(!agrees(read[read.len() - 1]));
    }

    #[test]
    fn anything_else_is_left_to_the_full_parser() {
        for doc in [
            "a: [1, 2,]\n",
            "a: [1, 2\n  , 3]\n",
            "a: {b: 1, b: 2}\n",
            "a: {b:1}\n",
            "a: [x:y]\n",
            "a: [http://x]\n",
            "a: [1] x\n",
            "a: [#]\n",
            "a: [[1], {b: [}]\n",
            "a: |\n  text\n",
            "a: >\n  text\n",
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: \"esc\\n\"\n",
            "a: multi\n  line\n",
            "a: 1\na: 2\n",
            "<<: {a: 1}\n",
            "a: 0x1F\n",
            "a: 1e3\n",
            "a: .inf\n",
            "a: 012\n",
            "a: +1\n",
            "a: 1_000\n",
            "a:\n\t- x\n",
            "- a\nb: 1\n",
            "a: 1\n  b: 2\n",
            "? complex\n: key\n",
            "a: 'unclosed\n",
            "a: - x\n",
            "--- \na: 1\n",
            "a: b: c\n",
            "a: x\n b: y\n",
            "",
            "# only a comment\n",
            "1: a\n",
            "true: a\n",
            "\u{feff}a: 1\n",
        ] {
            assert!(!agrees(doc), "the fast reader took {doc:?}");
        }
    }

    #[test]
    fn plain_scalars_resolve_as_the_full_parser_resolves_them() {
        for scalar in [
            "0", "7", "-7", "10", "3.0", "0.5", "-0.5", "12.50", "true", "True", "TRUE", "false", "null", "~", "yes",
            "no", "on", "off", "NaN", "abc", "a-b", "x.y", "é", "1.2.3", "-", "v1", "1a", "-a",
        ] {
            let doc = format!("k: {scalar}\n");
            agrees(&doc);
        }
    }

    /// Every frontmatter of the repository's prompts and conformance vectors: the fast reader and
    /// the full parser agree wherever the fast reader takes the text.
    #[test]
    fn the_repository_frontmatters_agree() {
        fn texts(value: &serde_json::Value, out: &mut Vec<String>) {
            match value {
                serde_json::Value::String(s) if s.starts_with("---") => out.push(s.clone()),
                serde_json::Value::Array(items) => items.iter().for_each(|v| texts(v, out)),
                serde_json::Value::Object(map) => map.values().for_each(|v| texts(v, out)),
                _ => {}
            }
        }
        fn files(dir: &std::path::Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if path.is_dir() && !matches!(name, "target" | "node_modules" | ".git") {
                    files(&path, out);
                } else if name.ends_with(".prompty") {
                    out.extend(std::fs::read_to_string(&path).ok());
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut all = Vec::new();
        files(&root, &mut all);
        let vectors = std::fs::read_to_string(root.join("tests/vectors/vectors.json")).unwrap();
        texts(&serde_json::from_str(&vectors).unwrap(), &mut all);
        let (mut fast, mut total) = (0, 0);
        for text in &all {
            if let Ok(split) = crate::frontmatter::split(text) {
                if let Some((yaml, _)) = split.frontmatter {
                    total += 1;
                    fast += usize::from(agrees(yaml));
                }
            }
        }
        // Most frontmatter is written in the subset (47 of 57 when this was written).
        assert!(total > 40 && fast * 4 > total * 3, "{fast} of {total} read by the fast reader");
    }

    /// Generated documents mixing every construct, valid or not, tricky scalars included: wherever
    /// the fast reader takes one, it agrees with the full parser.
    #[test]
    fn generated_documents_agree() {
        const TOKENS: &[&str] = &[
            "a",
            "b c",
            "0",
            "-1",
            "1.5",
            "01",
            "0x1F",
            "1e3",
            "+1",
            ".5",
            "true",
            "False",
            "yes",
            "null",
            "~",
            "",
            "'q'",
            "'it''s'",
            "\"d\"",
            "\"e\\n\"",
            "x # c",
            "x#y",
            "a: b",
            "a:b",
            "http://h/p",
            "-",
            "- x",
            "[1, 2]",
            "[]",
            "{}",
            "{k: v}",
            "{k: [1, {j: 2}]}",
            "[a, [b]]",
            "[a,]",
            "{a: 1, a: 2}",
            "&x 1",
            "*x",
            "!!str 3",
            "|",
            ">",
            "?",
            ":x",
            "@",
            "`",
            "%",
            "é",
            "${env:A:b}",
            "[x:y]",
            "{a:1}",
            "[ a , b ]",
            "{ }",
            "[1] # c",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut taken = 0;
        for _ in 0..20_000 {
            let mut doc = String::new();
            let mut indent = 0usize;
            for _ in 0..1 + next(8) {
                let pad = " ".repeat(indent);
                match next(10) {
                    0 => doc.push_str(&format!("{pad}- {}\n", TOKENS[next(TOKENS.len())])),
                    1 => {
                        doc.push_str(&format!("{pad}k{}:\n", next(4)));
                        indent += 2 * next(2);
                    }
                    2 => doc.push_str(&format!("{pad}- k{}: {}\n", next(4), TOKENS[next(TOKENS.len())])),
                    3 => doc.push_str("# comment\n\n"),
                    4 => indent = indent.saturating_sub(2 * next(3)),
                    5 => {
                        doc.push_str(&format!("{pad}{}: {}\n", TOKENS[next(TOKENS.len())], TOKENS[next(TOKENS.len())]))
                    }
                    _ => doc.push_str(&format!("{pad}k{}: {}\n", next(6), TOKENS[next(TOKENS.len())])),
                }
            }
            taken += usize::from(agrees(&doc));
        }
        // The generator reaches the subset often enough for the agreement to mean something.
        assert!(taken > 2000, "only {taken} generated documents were read by the fast reader");
    }

    #[test]
    fn deep_nesting_is_left_to_the_full_parser() {
        let mut doc = String::new();
        for depth in 0..40 {
            doc.push_str(&" ".repeat(depth * 2));
            doc.push_str("k:\n");
        }
        assert!(super::parse(&doc).is_none());
    }
}
