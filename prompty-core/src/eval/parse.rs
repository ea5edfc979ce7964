//! Reading an eval file's YAML into an [`EvalFile`], collecting every mistake with its line.

use super::{Assertion, Case, Check, Dataset, EvalFile, Match, ModelVariant, PromptUnderTest, MAX_CASES};
use crate::analysis::{closest, Diagnostic};
use crate::keypath::{self, KeyPath, Seg};
use crate::Location;
use serde_json::{Map, Value};

/// Every assertion kind an eval file may name.
pub const ASSERTION_KINDS: [&str; 11] = [
    "equals",
    "contains",
    "regex",
    "is-json",
    "output-type",
    "tool-called",
    "latency",
    "tokens",
    "cost",
    "similar",
    "judge",
];

const TOP_KEYS: [&str; 11] = [
    "description",
    "prompt",
    "prompts",
    "models",
    "vars",
    "threshold",
    "concurrency",
    "assert",
    "cases",
    "datasets",
    "$schema",
];
const CASE_KEYS: [&str; 7] = ["name", "vars", "expected", "assert", "tags", "threshold", "description"];
const DATASET_KEYS: [&str; 6] = ["file", "columns", "expected", "nameColumn", "tags", "assert"];
const MODEL_KEYS: [&str; 4] = ["label", "id", "provider", "options"];
const COMMON_KEYS: [&str; 4] = ["type", "weight", "not", "name"];

struct Ctx<'a> {
    text: &'a str,
    name: &'a str,
    errors: Vec<Diagnostic>,
}

impl Ctx<'_> {
    /// The location of a key path: its line, and the key's column (also inside flow-style
    /// collections: `vars: {a: 1}`, `assert: [{type: x}]`).
    fn at(&self, path: &[Seg]) -> Location {
        let loc = Location::file(self.name);
        let Some((line, depth)) = keypath::locate_prefix(self.text, &KeyPath(path.to_vec())) else { return loc };
        let Some(content) = self.text.lines().nth(line) else { return loc.at_line(line + 1) };
        let block = loc.clone().at(line + 1, keypath::column(content, path[..depth].last()));
        if depth == path.len() {
            return block;
        }
        let line_start: usize = self.text.split_inclusive('\n').take(line).map(str::len).sum();
        let start = line_start + value_start(content, path[..depth].last());
        match flow_find(self.text, start, &path[depth..]) {
            Some(offset) => {
                let before = &self.text[..offset];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().unwrap_or(before).chars().count() + 1;
                loc.at(line, column)
            }
            None => block,
        }
    }

    /// The location of a value under a key path: where `needle` starts on that line, else the key.
    fn at_text(&self, path: &[Seg], needle: &str) -> Location {
        let at = self.at(path);
        if let (Some(line), false) = (at.line, needle.is_empty()) {
            if let Some(content) = self.text.lines().nth(line as usize - 1) {
                if let Some(i) = content.find(needle) {
                    return at.clone().at(line as usize, content[..i].chars().count() + 1);
                }
            }
        }
        at
    }

    fn error(&mut self, at: Location, message: impl std::fmt::Display) {
        self.errors.push(Diagnostic::error(at, message).with_code("eval-file"));
    }

    fn error_help(&mut self, at: Location, message: impl std::fmt::Display, help: Option<String>) {
        let mut d = Diagnostic::error(at, message).with_code("eval-file");
        d.help = help;
        self.errors.push(d);
    }

    /// Unknown keys of a mapping, each an error with the closest known key.
    fn known_keys(&mut self, map: &Map<String, Value>, path: &[Seg], known: &[&str], what: &str) {
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                let at = self.at(&push(path, Seg::Key(key.clone())));
                self.error_help(at, format!("unknown key `{key}` in {what}"), suggest(key, known.iter().copied()));
            }
        }
    }

    fn string(&mut self, v: &Value, path: &[Seg], what: &str) -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => {
                let at = self.at(path);
                self.error(at, format!("{what} must be text, not {}", type_name(v)));
                None
            }
        }
    }

    fn number(&mut self, v: &Value, path: &[Seg], what: &str, min: f64, max: f64) -> Option<f64> {
        match v.as_f64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            Some(n) => {
                let at = self.at(path);
                self.error(at, format!("{what} must be between {min} and {max}, not {n}"));
                None
            }
            None => {
                let at = self.at(path);
                self.error(at, format!("{what} must be a number, not {}", type_name(v)));
                None
            }
        }
    }

    fn count(&mut self, v: &Value, path: &[Seg], what: &str) -> Option<u64> {
        match v.as_u64() {
            Some(n) => Some(n),
            None => {
                let at = self.at(path);
                self.error(at, format!("{what} must be a whole number of at least 0, not {v}"));
                None
            }
        }
    }

    fn map<'v>(&mut self, v: &'v Value, path: &[Seg], what: &str) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            _ => {
                let at = self.at(path);
                self.error(at, format!("{what} must be a mapping, not {}", type_name(v)));
                None
            }
        }
    }

    fn list<'v>(&mut self, v: &'v Value, path: &[Seg], what: &str) -> Option<&'v [Value]> {
        match v {
            Value::Array(items) => Some(items),
            _ => {
                let at = self.at(path);
                self.error(at, format!("{what} must be a list, not {}", type_name(v)));
                None
            }
        }
    }

    fn strings(&mut self, v: &Value, path: &[Seg], what: &str) -> Vec<String> {
        match v {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| self.string(item, &push(path, Seg::Index(i)), what))
                .collect(),
            other => self.string(other, path, what).into_iter().collect(),
        }
    }
}

/// The byte offset on `line` where the value of its entry starts: after `key:` for a key, after
/// the `- ` marker for a list item.
fn value_start(line: &str, last: Option<&Seg>) -> usize {
    let mut start = line.len() - line.trim_start_matches(' ').len();
    if line[start..].starts_with("- ") {
        start += 2;
    }
    if let Some(Seg::Key(k)) = last {
        if let Some(i) = line[start..].find(k.as_str()) {
            start += i + k.len();
            if let Some(colon) = line[start..].find(':') {
                start += colon + 1;
            }
        }
    }
    start
}

fn skip_space(text: &str, mut pos: usize) -> usize {
    let b = text.as_bytes();
    while pos < b.len() && matches!(b[pos], b' ' | b'\t' | b'\n' | b'\r') {
        pos += 1;
    }
    pos
}

/// The end of a quoted scalar starting at `pos` (its opening quote), after the closing quote.
fn skip_quoted(text: &str, pos: usize) -> usize {
    let b = text.as_bytes();
    let quote = b[pos];
    let mut i = pos + 1;
    while i < b.len() {
        match b[i] {
            b'\\' if quote == b'"' => i += 2,
            c if c == quote && quote == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of the flow value starting at `pos`: the `,` or closing bracket after it.
fn skip_value(text: &str, mut pos: usize) -> usize {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut token_start = true;
    while pos < b.len() {
        match b[pos] {
            b'"' | b'\'' if token_start => {
                pos = skip_quoted(text, pos);
                token_start = false;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return pos,
            b']' | b'}' => depth -= 1,
            b',' if depth == 0 => return pos,
            _ => {}
        }
        token_start = matches!(b[pos], b' ' | b'\t' | b'\n' | b'[' | b'{' | b',' | b':');
        pos += 1;
    }
    pos
}

/// The byte offset of the entry `segs` names inside the flow collection starting at `pos` (a
/// key's start, an item's start); the deepest one found when the rest is not there.
fn flow_find(text: &str, mut pos: usize, segs: &[Seg]) -> Option<usize> {
    let b = text.as_bytes();
    let mut found = None;
    for seg in segs {
        pos = skip_space(text, pos);
        match (seg, b.get(pos)) {
            (Seg::Key(k), Some(b'{')) => {
                pos += 1;
                loop {
                    pos = skip_space(text, pos);
                    if matches!(b.get(pos), None | Some(b'}')) {
                        return found;
                    }
                    let key_start = pos;
                    let key = if matches!(b[pos], b'"' | b'\'') {
                        pos = skip_quoted(text, pos);
                        text.get(key_start + 1..pos.saturating_sub(1).max(key_start + 1)).unwrap_or_default().to_owned()
                    } else {
                        while pos < b.len() && !matches!(b[pos], b':' | b',' | b'}') {
                            pos += 1;
                        }
                        text[key_start..pos].trim().to_owned()
                    };
                    pos = skip_space(text, pos);
                    if b.get(pos) == Some(&b':') {
                        pos += 1;
                    }
                    if &key == k {
                        found = Some(key_start);
                        break;
                    }
                    pos = skip_value(text, pos);
                    if b.get(pos) == Some(&b',') {
                        pos += 1;
                    }
                }
            }
            (Seg::Index(n), Some(b'[')) => {
                pos += 1;
                let mut i = 0;
                loop {
                    pos = skip_space(text, pos);
                    if matches!(b.get(pos), None | Some(b']')) {
                        return found;
                    }
                    if i == *n {
                        found = Some(pos);
                        break;
                    }
                    pos = skip_value(text, pos);
                    if b.get(pos) == Some(&b',') {
                        pos += 1;
                    }
                    i += 1;
                }
            }
            _ => return found,
        }
    }
    found
}

/// `did you mean `x`?` for the closest of `candidates`.
fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

fn push(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

fn key(k: &str) -> Seg {
    Seg::Key(k.to_owned())
}

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

pub(super) fn parse(text: &str, name: &str) -> Result<EvalFile, Vec<Diagnostic>> {
    let value = match crate::yaml::parse(text) {
        Ok(v) => v,
        Err(crate::yaml::YamlError::Limit { line, column, message }) => {
            return Err(vec![Diagnostic::error(Location::file(name).at(line, column), message).with_code("eval-file")])
        }
        Err(crate::yaml::YamlError::Syntax(e)) => {
            let at = match e.location() {
                Some(l) => Location::file(name).at(l.line(), l.column()),
                None => Location::file(name),
            };
            return Err(vec![Diagnostic::error(at, format!("invalid YAML: {e}")).with_code("eval-file")]);
        }
    };
    let mut cx = Ctx { text, name, errors: Vec::new() };
    let Some(top) = cx.map(&value, &[], "an eval file").cloned() else { return Err(cx.errors) };
    cx.known_keys(&top, &[], &TOP_KEYS, "the eval file");
    let mut eval = EvalFile { name: name.to_owned(), ..EvalFile::default() };
    if let Some(d) = top.get("description") {
        eval.description = cx.string(d, &[key("description")], "`description`");
    }
    if let Some(p) = top.get("prompt") {
        if let Some(path) = cx.string(p, &[key("prompt")], "`prompt`") {
            let at = cx.at_text(&[key("prompt")], &path);
            eval.prompts.push(PromptUnderTest { label: stem(&path), path, at });
        }
    }
    if let Some(list) = top.get("prompts") {
        if top.contains_key("prompt") {
            let at = cx.at(&[key("prompts")]);
            cx.error(at, "give either `prompt` or `prompts`, not both");
        }
        for (i, item) in cx.list(list, &[key("prompts")], "`prompts`").unwrap_or(&[]).iter().enumerate() {
            let path = [key("prompts"), Seg::Index(i)];
            eval.prompts.extend(prompt_entry(&mut cx, item, &path));
        }
    }
    if eval.prompts.is_empty() && !top.contains_key("prompt") && !top.contains_key("prompts") {
        cx.error(Location::file(name).at(1, 1), "the eval file names no prompt: add `prompt: FILE.prompty`");
    }
    unique(&mut cx, eval.prompts.iter().map(|p| (p.label.as_str(), &p.at)), "prompt label");
    if let Some(list) = top.get("models") {
        for (i, item) in cx.list(list, &[key("models")], "`models`").unwrap_or(&[]).iter().enumerate() {
            eval.models.extend(model_entry(&mut cx, item, &[key("models"), Seg::Index(i)]));
        }
        unique(&mut cx, eval.models.iter().map(|m| (m.label.as_str(), &m.at)), "model label");
    }
    if let Some(v) = top.get("vars") {
        eval.vars = cx.map(v, &[key("vars")], "`vars`").cloned().unwrap_or_default();
        eval.vars_at = eval.vars.keys().map(|k| (k.clone(), cx.at(&[key("vars"), key(k)]))).collect();
    }
    if let Some(t) = top.get("threshold") {
        eval.threshold = cx.number(t, &[key("threshold")], "`threshold`", 0.0, 1.0);
    }
    if let Some(c) = top.get("concurrency") {
        eval.concurrency = cx.count(c, &[key("concurrency")], "`concurrency`").map(|n| n.clamp(1, 1024) as usize);
    }
    if let Some(a) = top.get("assert") {
        eval.assert = assertions(&mut cx, a, &[key("assert")]);
    }
    if let Some(list) = top.get("cases") {
        for (i, item) in cx.list(list, &[key("cases")], "`cases`").unwrap_or(&[]).iter().enumerate() {
            if i >= MAX_CASES {
                let at = cx.at(&[key("cases")]);
                cx.error(at, format!("more than {MAX_CASES} cases"));
                break;
            }
            eval.cases.extend(case_entry(&mut cx, item, &[key("cases"), Seg::Index(i)], i));
        }
        unique(&mut cx, eval.cases.iter().map(|c| (c.name.as_str(), &c.at)), "case name");
    }
    if let Some(list) = top.get("datasets") {
        for (i, item) in cx.list(list, &[key("datasets")], "`datasets`").unwrap_or(&[]).iter().enumerate() {
            eval.datasets.extend(dataset_entry(&mut cx, item, &[key("datasets"), Seg::Index(i)]));
        }
    }
    if cx.errors.is_empty() {
        Ok(eval)
    } else {
        Err(cx.errors)
    }
}

/// Names that must be unique: each repeat is an error at its place.
fn unique<'a>(cx: &mut Ctx<'_>, names: impl Iterator<Item = (&'a str, &'a Location)>, what: &str) {
    let mut seen = std::collections::HashSet::new();
    let mut repeats = Vec::new();
    for (name, at) in names {
        if !seen.insert(name) {
            repeats.push((name.to_owned(), at.clone()));
        }
    }
    for (name, at) in repeats {
        cx.error(at, format!("the {what} `{name}` is used twice: give each a `name` of its own"));
    }
}

fn stem(path: &str) -> String {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    file.strip_suffix(".prompty").unwrap_or(file).to_owned()
}

fn prompt_entry(cx: &mut Ctx<'_>, item: &Value, path: &[Seg]) -> Option<PromptUnderTest> {
    match item {
        Value::Object(m) => {
            cx.known_keys(m, path, &["path", "label"], "a prompt entry");
            let Some(p) = m.get("path") else {
                let at = cx.at(path);
                cx.error(at, "a prompt entry needs a `path`");
                return None;
            };
            let file = cx.string(p, &push(path, key("path")), "`path`")?;
            let label = match m.get("label") {
                Some(l) => cx.string(l, &push(path, key("label")), "`label`")?,
                None => stem(&file),
            };
            let at = cx.at_text(&push(path, key("path")), &file);
            Some(PromptUnderTest { path: file, label, at })
        }
        other => {
            let file = cx.string(other, path, "a prompt")?;
            let at = cx.at_text(path, &file);
            Some(PromptUnderTest { label: stem(&file), path: file, at })
        }
    }
}

fn model_entry(cx: &mut Ctx<'_>, item: &Value, path: &[Seg]) -> Option<ModelVariant> {
    let at = cx.at(path);
    let m = match item {
        Value::String(id) => {
            return Some(ModelVariant {
                label: id.clone(),
                id: Some(id.clone()),
                provider: None,
                options: Map::new(),
                at,
            })
        }
        other => cx.map(other, path, "a model entry")?,
    };
    cx.known_keys(m, path, &MODEL_KEYS, "a model entry");
    let field = |cx: &mut Ctx<'_>, k: &str| m.get(k).and_then(|v| cx.string(v, &push(path, key(k)), &format!("`{k}`")));
    let id = field(cx, "id");
    let provider = field(cx, "provider");
    let options = match m.get("options") {
        Some(o) => cx.map(o, &push(path, key("options")), "`options`").cloned().unwrap_or_default(),
        None => Map::new(),
    };
    let label = match field(cx, "label").or_else(|| id.clone()).or_else(|| provider.clone()) {
        Some(l) => l,
        None => {
            cx.error(at, "a model entry needs an `id`, a `provider` or a `label`");
            return None;
        }
    };
    Some(ModelVariant { label, id, provider, options, at })
}

fn case_entry(cx: &mut Ctx<'_>, item: &Value, path: &[Seg], index: usize) -> Option<Case> {
    let m = cx.map(item, path, "a case")?;
    cx.known_keys(m, path, &CASE_KEYS, "a case");
    let at = cx.at(path);
    let name = match m.get("name") {
        Some(n) => cx.string(n, &push(path, key("name")), "`name`")?,
        None => format!("case {}", index + 1),
    };
    let vars = match m.get("vars") {
        Some(v) => cx.map(v, &push(path, key("vars")), "`vars`").cloned().unwrap_or_default(),
        None => Map::new(),
    };
    let var_at = vars.keys().map(|k| (k.clone(), cx.at(&[path, &[key("vars"), key(k)]].concat()))).collect();
    let tags = m.get("tags").map(|t| cx.strings(t, &push(path, key("tags")), "a tag")).unwrap_or_default();
    let threshold =
        m.get("threshold").and_then(|t| cx.number(t, &push(path, key("threshold")), "`threshold`", 0.0, 1.0));
    let assert = m.get("assert").map(|a| assertions(cx, a, &push(path, key("assert")))).unwrap_or_default();
    Some(Case {
        name,
        vars,
        expected: m.get("expected").cloned(),
        assert,
        tags,
        threshold,
        at,
        var_at,
        from_csv: false,
    })
}

fn dataset_entry(cx: &mut Ctx<'_>, item: &Value, path: &[Seg]) -> Option<Dataset> {
    let at = cx.at(path);
    let m = match item {
        Value::String(file) => {
            return Some(Dataset {
                file: file.clone(),
                columns: Default::default(),
                columns_at: Default::default(),
                expected: "expected".into(),
                name_column: "name".into(),
                tags: Vec::new(),
                assert: Vec::new(),
                at,
            })
        }
        other => cx.map(other, path, "a dataset")?,
    };
    cx.known_keys(m, path, &DATASET_KEYS, "a dataset");
    let Some(file) = m.get("file") else {
        cx.error(at, "a dataset needs a `file` (a .jsonl or .csv file)");
        return None;
    };
    let file = cx.string(file, &push(path, key("file")), "`file`")?;
    let lower = file.to_ascii_lowercase();
    if !(lower.ends_with(".jsonl") || lower.ends_with(".csv")) {
        let at = cx.at_text(&push(path, key("file")), &file);
        cx.error(at, format!("the dataset `{file}` is neither .jsonl nor .csv"));
    }
    let mut columns = std::collections::BTreeMap::new();
    let mut columns_at = std::collections::BTreeMap::new();
    if let Some(c) = m.get("columns") {
        for (column, input) in cx.map(c, &push(path, key("columns")), "`columns`").cloned().unwrap_or_default() {
            let entry = [path, &[key("columns"), key(&column)]].concat();
            if let Some(input) = cx.string(&input, &entry, "an input name") {
                columns_at.insert(column.clone(), cx.at(&entry));
                columns.insert(column, input);
            }
        }
    }
    let text = |cx: &mut Ctx<'_>, k: &str, default: &str| match m.get(k) {
        Some(v) => cx.string(v, &push(path, key(k)), &format!("`{k}`")).unwrap_or_else(|| default.to_owned()),
        None => default.to_owned(),
    };
    let expected = text(cx, "expected", "expected");
    let name_column = text(cx, "nameColumn", "name");
    let tags = m.get("tags").map(|t| cx.strings(t, &push(path, key("tags")), "a tag")).unwrap_or_default();
    let assert = m.get("assert").map(|a| assertions(cx, a, &push(path, key("assert")))).unwrap_or_default();
    Some(Dataset { file, columns, columns_at, expected, name_column, tags, assert, at })
}

fn assertions(cx: &mut Ctx<'_>, v: &Value, path: &[Seg]) -> Vec<Assertion> {
    let Some(items) = cx.list(v, path, "`assert`") else { return Vec::new() };
    items.iter().enumerate().filter_map(|(i, item)| assertion(cx, item, &push(path, Seg::Index(i)))).collect()
}

fn assertion(cx: &mut Ctx<'_>, item: &Value, path: &[Seg]) -> Option<Assertion> {
    let at = cx.at(path);
    // A kind alone (`- output-type`, `- is-json`) is an assertion of that kind without fields.
    let bare;
    let item = match item {
        Value::String(kind) if ASSERTION_KINDS.contains(&kind.as_str()) => {
            bare = Value::Object(Map::from_iter([("type".to_owned(), Value::String(kind.clone()))]));
            &bare
        }
        other => other,
    };
    let m = cx.map(item, path, "an assertion")?;
    // The short form: one key that is a kind, its value the assertion's value.
    let (kind, fields): (String, Map<String, Value>) = match m.get("type") {
        Some(t) => (cx.string(t, &push(path, key("type")), "`type`")?, m.clone()),
        None => {
            let kinds: Vec<&String> = m.keys().filter(|k| ASSERTION_KINDS.contains(&k.as_str())).collect();
            match kinds.as_slice() {
                [k] => {
                    let mut fields = m.clone();
                    let value = fields.remove(k.as_str()).unwrap_or(Value::Null);
                    let slot = if k.as_str() == "judge" { "prompt" } else { "value" };
                    if !value.is_null() && !value.is_object() {
                        fields.insert(slot.into(), value);
                    } else if let Value::Object(inner) = value {
                        fields.extend(inner);
                    }
                    ((*k).clone(), fields)
                }
                _ => {
                    let guess = m.keys().next().and_then(|k| suggest(k, ASSERTION_KINDS.iter().copied()));
                    cx.error_help(
                        at,
                        "an assertion needs a `type` (or one key naming its kind: `- contains: text`)",
                        guess,
                    );
                    return None;
                }
            }
        }
    };
    let kind_at = cx.at_text(&push(path, key("type")), &kind);
    let Some(&kind) = ASSERTION_KINDS.iter().find(|k| **k == kind) else {
        let at = if m.contains_key("type") { kind_at } else { at };
        cx.error_help(at, format!("unknown assertion type `{kind}`"), suggest(&kind, ASSERTION_KINDS.iter().copied()));
        return None;
    };
    let own: &[&str] = match kind {
        "equals" => &["value", "ignoreCase"],
        "contains" => &["value", "ignoreCase", "mode"],
        "regex" => &["value"],
        "is-json" => &["schema"],
        "output-type" => &[],
        "tool-called" => &["value", "arguments", "times"],
        "latency" => &["value", "maxMs"],
        "tokens" => &["value", "max", "maxInput", "maxOutput"],
        "cost" => &["value", "maxUsd", "inputPerMillion", "outputPerMillion"],
        "similar" => &["value", "threshold", "embedding"],
        _ => &["prompt", "threshold", "criteria"],
    };
    let known: Vec<&str> = COMMON_KEYS.iter().chain(own).copied().collect();
    // Keys of the short form sit on the kind's key; report them at the assertion.
    for k in fields.keys().filter(|k| !known.contains(&k.as_str()) && k.as_str() != kind) {
        let at = cx.at(&push(path, key(k)));
        cx.error_help(at, format!("`{kind}` assertions take no `{k}`"), suggest(k, known.iter().copied()));
    }
    let f = |k: &str| fields.get(k);
    let p = |k: &str| push(path, key(k));
    let flag = |cx: &mut Ctx<'_>, k: &str| match f(k) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            let at = cx.at(&p(k));
            cx.error(at, format!("`{k}` must be true or false, not {other}"));
            false
        }
    };
    let negate = flag(cx, "not");
    let weight = f("weight").and_then(|w| cx.number(w, &p("weight"), "`weight`", 0.0, 1e6)).unwrap_or(1.0);
    let required = |cx: &mut Ctx<'_>, k: &str, what: &str| -> Option<Value> {
        match f(k) {
            Some(v) => Some(v.clone()),
            None => {
                cx.error(at.clone(), format!("a `{kind}` assertion needs `{k}` ({what})"));
                None
            }
        }
    };
    let check = match kind {
        "equals" => Check::Equals { value: f("value").cloned(), ignore_case: flag(cx, "ignoreCase") },
        "contains" => {
            let values = f("value").map(|v| cx.strings(v, &p("value"), "a `contains` value")).unwrap_or_default();
            let mode = match f("mode").and_then(Value::as_str) {
                None => Match::All,
                Some("all") => Match::All,
                Some("any") => Match::Any,
                Some(other) => {
                    let at = cx.at(&p("mode"));
                    cx.error(at, format!("`mode` is `all` or `any`, not `{other}`"));
                    Match::All
                }
            };
            Check::Contains { values, ignore_case: flag(cx, "ignoreCase"), mode }
        }
        "regex" => {
            let v = required(cx, "value", "the pattern")?;
            Check::Regex { pattern: cx.string(&v, &p("value"), "the pattern")? }
        }
        "is-json" => Check::IsJson { schema: f("schema").cloned() },
        "output-type" => Check::OutputType,
        "tool-called" => {
            let v = required(cx, "value", "the tool's name")?;
            let name = cx.string(&v, &p("value"), "the tool's name")?;
            let arguments = f("arguments").and_then(|a| cx.map(a, &p("arguments"), "`arguments`").cloned());
            let times =
                f("times").and_then(|t| cx.count(t, &p("times"), "`times`")).map(|t| t.min(u32::MAX as u64) as u32);
            Check::ToolCalled { name, arguments, times }
        }
        "latency" => {
            let slot = if f("maxMs").is_some() { "maxMs" } else { "value" };
            let v = required(cx, slot, "the most milliseconds, as `maxMs`")?;
            Check::Latency { max_ms: cx.count(&v, &p(slot), "`maxMs`")? }
        }
        "tokens" => {
            let mut get = |k: &str| f(k).and_then(|v| cx.count(v, &p(k), &format!("`{k}`")));
            let max = get("max").or_else(|| get("value"));
            let (max_input, max_output) = (get("maxInput"), get("maxOutput"));
            if max.is_none() && max_input.is_none() && max_output.is_none() {
                cx.error(at, "a `tokens` assertion needs `max`, `maxInput` or `maxOutput`");
                return None;
            }
            Check::Tokens { max, max_input, max_output }
        }
        "cost" => {
            let slot = if f("maxUsd").is_some() { "maxUsd" } else { "value" };
            let v = required(cx, slot, "the most dollars, as `maxUsd`")?;
            let max_usd = cx.number(&v, &p(slot), "`maxUsd`", 0.0, 1e9)?;
            let mut price = |k: &str| {
                let v = required(cx, k, "a price per million tokens")?;
                cx.number(&v, &p(k), &format!("`{k}`"), 0.0, 1e9)
            };
            let (input_per_million, output_per_million) = (price("inputPerMillion")?, price("outputPerMillion")?);
            Check::Cost { max_usd, input_per_million, output_per_million }
        }
        "similar" => {
            let value = f("value").and_then(|v| cx.string(v, &p("value"), "the reference"));
            let threshold =
                f("threshold").and_then(|t| cx.number(t, &p("threshold"), "`threshold`", -1.0, 1.0)).unwrap_or(0.8);
            let e = required(cx, "embedding", "the .prompty file that embeds")?;
            Check::Similar { value, threshold, embedding: cx.string(&e, &p("embedding"), "`embedding`")? }
        }
        _ => {
            let v = required(cx, "prompt", "the judge's .prompty file")?;
            let prompt = cx.string(&v, &p("prompt"), "the judge's prompt")?;
            let threshold =
                f("threshold").and_then(|t| cx.number(t, &p("threshold"), "`threshold`", 0.0, 1.0)).unwrap_or(0.5);
            let criteria = f("criteria").and_then(|c| cx.string(c, &p("criteria"), "`criteria`"));
            Check::Judge { prompt, threshold, criteria }
        }
    };
    let label = match f("name") {
        Some(n) => cx.string(n, &p("name"), "`name`")?,
        None => default_label(&check),
    };
    Some(Assertion { check, weight, negate, label, at })
}

/// `contains Paris`, `judge helpful.prompty`, `latency ≤ 2000 ms`.
fn default_label(check: &Check) -> String {
    let short = |v: &Value| {
        let s = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let (head, cut) = crate::text::chars(&s, 40);
        if cut {
            format!("{head}…")
        } else {
            head.to_owned()
        }
    };
    match check {
        Check::Equals { value: Some(v), .. } => format!("equals {}", short(v)),
        Check::Contains { values, .. } if !values.is_empty() => {
            format!("contains {}", short(&Value::from(values.join(", "))))
        }
        Check::Regex { pattern } => format!("regex {}", short(&Value::from(pattern.as_str()))),
        Check::ToolCalled { name, .. } => format!("tool-called {name}"),
        Check::Latency { max_ms } => format!("latency ≤ {max_ms} ms"),
        Check::Cost { max_usd, .. } => format!("cost ≤ ${max_usd}"),
        Check::Similar { threshold, .. } => format!("similar ≥ {threshold}"),
        Check::Judge { prompt, .. } => format!("judge {}", stem(prompt)),
        other => other.kind().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        parse(text, "x.eval.yaml").unwrap_err().iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn places_inside_flow_collections() {
        let text = "prompt: a.prompty\nvars: {name: Ada, \"q\": 'it''s, fine', n: [1, {a: 2}], question: x}\n\
                    assert: [{type: contains, value: x}, {type: regex}]\ncases:\n  - {name: one, vars: {k: 1}}\n";
        assert_eq!(errors(text), ["x.eval.yaml:3:38: a `regex` assertion needs `value` (the pattern)"]);
        let eval = parse(&text.replace("{type: regex}", "{type: regex, value: x}"), "x.eval.yaml").unwrap();
        let at = |l: &Location| (l.line, l.column);
        assert_eq!(at(&eval.vars_at["question"]), (Some(2), Some(55)));
        assert_eq!(at(&eval.vars_at["q"]), (Some(2), Some(19)));
        assert_eq!(at(&eval.assert[0].at), (Some(3), Some(10)));
        assert_eq!(at(&eval.cases[0].at), (Some(5), Some(5)));
        assert_eq!(at(&eval.cases[0].var_at["k"]), (Some(5), Some(24)));
    }

    #[test]
    fn flow_collections_over_several_lines() {
        let text = "prompt: a.prompty\nassert: [\n  {type: contains, value: a},\n  {type: tokens}\n]\n";
        assert_eq!(errors(text), ["x.eval.yaml:4:3: a `tokens` assertion needs `max`, `maxInput` or `maxOutput`"]);
        let text = "prompt: a.prompty\nassert:\n  - {type: judge, prompt: j.prompty, threshold: 2}\n";
        assert_eq!(errors(text), ["x.eval.yaml:3:38: `threshold` must be between 0 and 1, not 2"]);
    }

    #[test]
    fn odd_flow_text_never_panics() {
        for text in [
            "prompt: a.prompty\nvars: {\"é\\\"x\": 1, 'ü''x': [ {a: \"}]\"} ], ö: {}}\nassert: [{type: regex, value: 1, zz: ö}]\n",
            "prompt: a.prompty\nassert: [ [1], {type: latency, maxMs: x} ]\n",
            "prompt: a.prompty\ncases: [{name: é, vars: {ü: [1, 2}, {k: v}]}]\n",
            "prompt: a.prompty\ncases: [{name: é, vars: [1]}]\n",
        ] {
            let _ = parse(text, "x.eval.yaml");
        }
        assert_eq!(
            errors("prompt: a.prompty\nvars: {é: 'a, b', x: 1}\nassert: [{type: regex, value: 1, zz: ö}]\n"),
            ["x.eval.yaml:3:34: `regex` assertions take no `zz`"]
        );
    }

    #[test]
    fn a_kind_alone_is_an_assertion() {
        let eval = parse("prompt: a.prompty\nassert: [output-type, is-json]\n", "x.eval.yaml").unwrap();
        assert_eq!(eval.assert.iter().map(Assertion::kind).collect::<Vec<_>>(), ["output-type", "is-json"]);
        assert_eq!(
            errors("prompt: a.prompty\nassert: [regex]\n"),
            ["x.eval.yaml:2:10: a `regex` assertion needs `value` (the pattern)"]
        );
    }
}
