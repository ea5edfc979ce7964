//! Go to definition: a template variable to its input's declaration (a property to its nested
//! declaration), a `${file:…}` reference, a `kind: prompty` tool's `path` and a `kind: openapi`
//! tool's `specification` to their file, a `kind: function` tool's name (in `tools:` or in
//! `toolChoice`) to the `#[tool]` handler that serves it in the workspace's Rust sources.
//!
//! The handler search reads the workspace folders (without any, the document's folder upwards to
//! the nearest `Cargo.toml`) on every request, so it is never stale. Its bounds:
//! [`MAX_SCANNED_FILES`] entries (files and folders), [`MAX_SCAN_DEPTH`] folders deep, `.rs` files up to
//! [`MAX_SOURCE_BYTES`]; `target/`, `.git/`, `node_modules/` and hidden folders are skipped.

use crate::document::path_to_uri;
use crate::document::{word_at, Document};
use crate::position::LineIndex;
use crate::yaml_path::{context, Slot};
use lsp_types::{GotoDefinitionResponse, Location as LspLocation, Position, Range};
use prompty_core::analysis::{NameKind, Span};
use prompty_core::{Property, ToolKind};
use std::path::{Path, PathBuf};

/// The most folder entries (files and folders) the `#[tool]` handler search looks at per request.
pub const MAX_SCANNED_FILES: usize = 10_000;
/// How many folders deep the `#[tool]` handler search goes below a workspace folder.
pub const MAX_SCAN_DEPTH: usize = 16;
/// The largest `.rs` file the `#[tool]` handler search reads (1 MiB).
pub const MAX_SOURCE_BYTES: u64 = 1 << 20;
/// Folders the handler search never enters (build outputs, version control, JavaScript packages).
const SKIPPED: [&str; 3] = ["target", ".git", "node_modules"];

/// Where the thing at byte `offset` of `doc` is declared; `roots` are the workspace folders.
pub fn definition(doc: &Document, offset: usize, roots: &[PathBuf]) -> Option<GotoDefinitionResponse> {
    let outline = &doc.analysis.outline;
    if let Some(fm) = outline.frontmatter.filter(|_| outline.in_frontmatter(offset)) {
        return frontmatter(doc, fm, offset, roots);
    }
    let name = outline.name_at(offset)?;
    let inputs = doc.analysis.agent()?.inputs.as_deref().unwrap_or_default();
    let (i, path) = match &name.kind {
        NameKind::Input => (inputs.iter().position(|p| p.name == name.name)?, String::new()),
        NameKind::Property { root } => {
            let i = inputs.iter().position(|p| p.name == *root)?;
            (i, property_path(&inputs[i], &name.name)?)
        }
        NameKind::Filter | NameKind::Test => return None,
    };
    let range = declaration(doc, &format!("inputs[{i}]{path}"), &name.name)?;
    Some(GotoDefinitionResponse::Scalar(LspLocation::new(doc.uri.clone(), range)))
}

/// The key path below a property to the first nested property named `name` (through `properties`
/// and `items`, breadth first): `.properties[1]`, `.items.properties[0]`.
fn property_path(p: &Property, name: &str) -> Option<String> {
    let mut queue: std::collections::VecDeque<(&Property, String, usize)> = [(p, String::new(), 0)].into();
    while let Some((p, path, depth)) = queue.pop_front() {
        if depth > 32 {
            continue;
        }
        for (j, child) in p.properties.iter().flatten().enumerate() {
            if child.name == name {
                return Some(format!("{path}.properties[{j}]"));
            }
        }
        for (j, child) in p.properties.iter().flatten().enumerate() {
            queue.push_back((child, format!("{path}.properties[{j}]"), depth + 1));
        }
        if let Some(items) = &p.items {
            queue.push_back((items, format!("{path}.items"), depth + 1));
        }
    }
    None
}

/// The range of the name of the declaration at key path `field`: `name` on the declaration's line
/// (`- name: city`, `city: {kind: string}`, `[a, city]`), else the word where it starts.
fn declaration(doc: &Document, field: &str, name: &str) -> Option<Range> {
    let at = doc.analysis.report.as_ref()?.locate(field);
    let (line, column) = (at.line?, at.column?);
    let start = doc.offset_of_line_column(line, column);
    let rest = &doc.text[start..];
    let line_text = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let found = whole_words(line_text, name).next().map(|i| Span { start: start + i, end: start + i + name.len() });
    let span = found.or_else(|| word_at(&doc.text, start)).unwrap_or(Span { start, end: start });
    Some(doc.range(span))
}

/// The byte offsets in `text` where `word` stands as a whole word (not inside a longer name).
pub(crate) fn whole_words<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).map(|(i, _)| i).filter(move |&i| {
        !word.is_empty()
            && !text[..i].chars().next_back().is_some_and(is_word)
            && !text[i + word.len()..].chars().next().is_some_and(is_word)
    })
}

/// Definitions in the frontmatter (`fm`, its bytes): `${file:}` references, tool paths and
/// specifications, function tool names.
fn frontmatter(doc: &Document, fm: Span, offset: usize, roots: &[PathBuf]) -> Option<GotoDefinitionResponse> {
    let dir = doc.path.as_deref().and_then(Path::parent).map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let line_start = doc.text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = doc.text[offset..].find('\n').map_or(doc.text.len(), |i| offset + i);
    let line = &doc.text[line_start..line_end];
    // `${file:path}` around the offset.
    let mut from = 0;
    while let Some(i) = line[from..].find("${file:") {
        let start = from + i;
        let Some(close) = line[start..].find('}') else { break };
        let end = start + close + 1;
        if (line_start + start..=line_start + end).contains(&offset) {
            let written = line[start + "${file:".len()..end - 1].trim();
            return file(&dir.join(written));
        }
        from = end;
    }
    let yaml = &doc.text[fm.start..fm.end.max(fm.start)];
    let here = context(yaml, offset.saturating_sub(fm.start).min(yaml.len()));
    let Slot::Value(key) = &here.slot else {
        // The mapping form of `tools:` (`get_weather:\n    kind: function`): the key names the tool.
        return if here.path == ["tools"] { function_tool(doc, offset, roots) } else { None };
    };
    let in_tool = here.path.first().is_some_and(|k| k == "tools") && here.path.len() == 2;
    let value = value_of(line, key)?;
    if in_tool && (key == "path" || key == "specification") {
        let target = dir.join(value.trim());
        return target.is_file().then(|| file(&target)).flatten();
    }
    let choice = here.path.last().is_some_and(|k| k == "toolChoice") && key == "name"
        || here.path.last().is_some_and(|k| k == "options") && key == "toolChoice";
    if (in_tool && key == "name") || choice {
        return function_tool(doc, offset, roots);
    }
    None
}

/// The `#[tool]` handlers of the `kind: function` tool whose name is at `offset`.
fn function_tool(doc: &Document, offset: usize, roots: &[PathBuf]) -> Option<GotoDefinitionResponse> {
    let word = word_at(&doc.text, offset)?;
    let name = &doc.text[word.start..word.end];
    let agent = doc.analysis.agent()?;
    let function = agent.tools.iter().flatten().any(|t| t.name == name && matches!(t.kind, ToolKind::Function(_)));
    if !function {
        return None;
    }
    let found = handlers(name, &search_roots(doc, roots), doc.index.encoding());
    match found.len() {
        0 => None,
        1 => found.into_iter().next().map(GotoDefinitionResponse::Scalar),
        _ => Some(GotoDefinitionResponse::Array(found)),
    }
}

/// The value written after `key:` on `line` (quotes and a trailing comment removed).
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let i = whole_words(line, key).find(|&i| line[i + key.len()..].trim_start_matches(['"', '\'']).starts_with(':'))?;
    let after = line[i + key.len()..].trim_start_matches(['"', '\'']).strip_prefix(':')?;
    let after = after.split(" #").next().unwrap_or(after);
    let after = after.trim().trim_end_matches(['}', ',']).trim();
    Some(after.trim_matches(['"', '\'']))
}

/// The start of `path`, when it is a file.
fn file(path: &Path) -> Option<GotoDefinitionResponse> {
    path.is_file().then(|| {
        let start = Position::new(0, 0);
        GotoDefinitionResponse::Scalar(LspLocation::new(path_to_uri(path), Range::new(start, start)))
    })
}

/// Where to look for `#[tool]` handlers: the workspace folders, else the document's folder
/// upwards to the nearest one with a `Cargo.toml` (the document's folder when there is none).
fn search_roots(doc: &Document, roots: &[PathBuf]) -> Vec<PathBuf> {
    if !roots.is_empty() {
        return roots.to_vec();
    }
    let Some(dir) = doc.path.as_deref().and_then(Path::parent) else {
        return Vec::new();
    };
    let found = dir.ancestors().take(MAX_SCAN_DEPTH).find(|d| d.join("Cargo.toml").is_file());
    vec![found.unwrap_or(dir).to_path_buf()]
}

/// The declarations of the `#[tool]` handlers named `name` in the `.rs` files under `roots` (see
/// the module's bounds), ranges counted in `encoding`.
pub(crate) fn handlers(name: &str, roots: &[PathBuf], encoding: crate::position::Encoding) -> Vec<LspLocation> {
    let mut found = Vec::new();
    let mut budget = MAX_SCANNED_FILES;
    for root in roots {
        walk(root, 0, &mut budget, &mut |path| {
            let Ok(text) = std::fs::read_to_string(path) else { return };
            for span in tool_fns(&text, name) {
                let range = LineIndex::new(&text, encoding).range(&text, span);
                found.push(LspLocation::new(path_to_uri(path), range));
            }
        });
    }
    found
}

/// Calls `visit` on every `.rs` file under `dir` within the bounds.
fn walk(dir: &Path, depth: usize, budget: &mut usize, visit: &mut dyn FnMut(&Path)) {
    if depth > MAX_SCAN_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(kind) = entry.file_type() else { continue };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        if kind.is_dir() {
            if !SKIPPED.contains(&name.as_ref()) && !name.starts_with('.') {
                walk(&path, depth + 1, budget, visit);
            }
        } else if kind.is_file() && name.ends_with(".rs") && entry.metadata().is_ok_and(|m| m.len() <= MAX_SOURCE_BYTES)
        {
            visit(&path);
        }
    }
}

/// The bytes of the names of the fns in `text` that a `#[tool]` or `#[prompty::tool]` attribute
/// makes the tool `name` (its `name = "..."` option, else the fn's name).
pub(crate) fn tool_fns(text: &str, name: &str) -> Vec<Span> {
    let mut found = Vec::new();
    for attr in ["#[tool", "#[prompty::tool"] {
        for (at, _) in text.match_indices(attr) {
            let after = &text[at + attr.len()..];
            if !after.starts_with(['(', ']']) {
                continue;
            }
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            if text[line_start..at].contains("//") {
                continue;
            }
            // The attribute's end: the `]` that closes it (strings skipped).
            let Some(close) = attribute_end(after) else { continue };
            let options = &after[..close];
            let mut rest_at = at + attr.len() + close + 1;
            let named = option_name(options);
            // The fn after it (other attributes, `pub`, `async`, ... in between).
            let Some(fn_at) = next_fn(&text[rest_at..]) else { continue };
            rest_at += fn_at;
            let ident_start = rest_at;
            let ident_len =
                text[ident_start..].find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '#')).unwrap_or(0);
            let ident = &text[ident_start..ident_start + ident_len];
            let bare = ident.strip_prefix("r#").unwrap_or(ident);
            if named.as_deref().unwrap_or(bare) == name {
                found.push(Span { start: ident_start, end: ident_start + ident_len });
            }
        }
    }
    found.sort_by_key(|s| s.start);
    found
}

/// The index of the `]` that ends an attribute whose text after `#[tool` is `after`.
fn attribute_end(after: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in after.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '[' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            ']' if depth == 0 => return Some(i),
            ']' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The `name = "..."` option of an attribute's text.
fn option_name(options: &str) -> Option<String> {
    let i = whole_words(options, "name").find(|&i| options[i + 4..].trim_start().starts_with('='))?;
    let value = options[i + 4..].trim_start().strip_prefix('=')?.trim_start().strip_prefix('"')?;
    Some(value[..value.find('"')?].to_owned())
}

/// The offset of the name of the fn that starts `rest` (after attributes and qualifiers), if the
/// next item is a fn.
fn next_fn(rest: &str) -> Option<usize> {
    let mut at = 0;
    loop {
        let trimmed = rest[at..].trim_start();
        at = rest.len() - trimmed.len();
        if let Some(attribute) = trimmed.strip_prefix("#[") {
            at += 2 + attribute_end(attribute)? + 1;
        } else if trimmed.starts_with("//") {
            at += trimmed.find('\n')?;
        } else {
            let word_len = trimmed.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(trimmed.len());
            let word = &trimmed[..word_len];
            match word {
                "fn" => {
                    return Some(at + word_len + (trimmed[word_len..].len() - trimmed[word_len..].trim_start().len()))
                }
                "pub" | "async" | "const" | "unsafe" | "extern" => {
                    at += word_len;
                    // `pub(crate)`, `extern "C"`.
                    let more = rest[at..].trim_start();
                    if let Some(inner) = more.strip_prefix('(') {
                        at = rest.len() - inner.len() + inner.find(')')? + 1;
                    } else if let Some(inner) = more.strip_prefix('"') {
                        at = rest.len() - inner.len() + inner.find('"')? + 1;
                    }
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Encoding;

    fn doc(path: &Path, text: &str) -> Document {
        let mut d = Document::new(path_to_uri(path), text.to_owned(), 1, Encoding::Utf16);
        d.analysis = crate::analysis::analyze(text, Some(path), &[]);
        d
    }

    fn scalar(r: Option<GotoDefinitionResponse>) -> LspLocation {
        match r {
            Some(GotoDefinitionResponse::Scalar(l)) => l,
            other => panic!("expected one location, got {other:?}"),
        }
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prompty-lsp-def-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn variables_go_to_their_input_in_every_form() {
        let dir = temp("vars");
        let path = dir.join("a.prompty");
        for (text, line, character) in [
            ("---\ninputs:\n  - name: city\n    kind: string\n---\nuser:\n{{ city }}", 2, 10),
            ("---\ninputs:\n  city: {kind: string}\n---\nuser:\n{{ city }}", 2, 2),
            ("---\ninputs: [day, city]\n---\nuser:\n{{ day }}{{ city }}", 1, 14),
        ] {
            let d = doc(&path, text);
            let at = text.rfind("city").unwrap() + 1;
            let l = scalar(definition(&d, at, &[]));
            assert_eq!(l.range.start, Position::new(line, character), "{text}");
            assert_eq!(l.range.end, Position::new(line, character + 4), "{text}");
        }
    }

    #[test]
    fn properties_go_to_their_nested_declaration() {
        let dir = temp("props");
        let path = dir.join("a.prompty");
        let text = "---\ninputs:\n  - name: user\n    kind: object\n    properties:\n      - name: id\n        kind: integer\n      - name: city\n        kind: string\n---\nuser:\n{{ user.id }} {{ user.city | upper }}";
        let d = doc(&path, text);
        let l = scalar(definition(&d, text.rfind("city").unwrap(), &[]));
        assert_eq!((l.range.start, l.range.end), (Position::new(7, 14), Position::new(7, 18)));
        // Through a loop over an array of objects.
        let books = "---\ninputs:\n  - name: books\n    kind: array\n    items:\n      kind: object\n      properties:\n        - name: title\n          kind: string\n---\nuser:\n{% for b in books %}{{ b.title }}{% endfor %}";
        let looped = doc(&path, books);
        let l = scalar(definition(&looped, books.rfind("title").unwrap(), &[]));
        assert_eq!((l.range.start, l.range.end), (Position::new(7, 16), Position::new(7, 21)));
        let l = scalar(definition(&d, text.rfind("user").unwrap(), &[]));
        assert_eq!((l.range.start, l.range.end), (Position::new(2, 10), Position::new(2, 14)));
        // A filter is declared nowhere.
        assert!(definition(&d, text.find("upper").unwrap(), &[]).is_none());
    }

    #[test]
    fn files_children_and_specifications() {
        let dir = temp("files");
        std::fs::write(dir.join("child.prompty"), "---\ninputs: [t]\n---\nuser:\n{{ t }}").unwrap();
        std::fs::write(dir.join("note.txt"), "be brief").unwrap();
        let path = dir.join("a.prompty");
        let text = "---\ndescription: ${file:note.txt}\ntools:\n  - name: research\n    kind: prompty\n    path: child.prompty\n---\nuser:\nHi";
        let d = doc(&path, text);
        let l = scalar(definition(&d, text.find("note.txt").unwrap(), &[]));
        assert_eq!(l.uri, path_to_uri(&dir.join("note.txt")));
        let l = scalar(definition(&d, text.find("child.prompty").unwrap() + 2, &[]));
        assert_eq!(l.uri, path_to_uri(&dir.join("child.prompty")));
        assert!(definition(&d, text.find("research").unwrap(), &[]).is_none());
        std::fs::write(dir.join("api.yaml"), "openapi: 3.0.0").unwrap();
        let text = "---\ntools:\n  - name: api\n    kind: openapi\n    specification: ./api.yaml\n---\nuser:\nHi";
        let d = doc(&path, text);
        let l = scalar(definition(&d, text.find("api.yaml").unwrap(), &[]));
        assert_eq!(l.uri, path_to_uri(&dir.join("./api.yaml")));
        assert_eq!(l.range, Range::default());
    }

    #[test]
    fn function_tools_go_to_their_handler() {
        let dir = temp("crate");
        std::fs::create_dir_all(dir.join("src/tools")).unwrap();
        std::fs::create_dir_all(dir.join("target/debug")).unwrap();
        std::fs::create_dir_all(dir.join("prompts")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"t\"\n").unwrap();
        std::fs::write(
            dir.join("src/tools/weather.rs"),
            "use prompty::tool;\n\n/// Weather.\n#[tool]\npub fn get_weather(city: String) -> String {\n    city\n}\n",
        )
        .unwrap();
        // Build outputs are never read.
        std::fs::write(dir.join("target/debug/copy.rs"), "#[tool]\nfn get_weather() {}\n").unwrap();
        let path = dir.join("prompts/a.prompty");
        let expected = LspLocation::new(
            path_to_uri(&dir.join("src/tools/weather.rs")),
            Range::new(Position::new(4, 7), Position::new(4, 18)),
        );
        for text in [
            "---\ntools:\n  - name: get_weather\n    kind: function\nmodel:\n  options:\n    toolChoice: get_weather\n---\nuser:\nHi",
            "---\ntools:\n  get_weather:\n    kind: function\n---\nuser:\nHi",
            "---\ntools:\n  - {name: get_weather, kind: function}\nmodel:\n  options:\n    toolChoice: {name: get_weather}\n---\nuser:\nHi",
        ] {
            let d = doc(&path, text);
            for at in text.match_indices("get_weather").map(|(i, _)| i + 3) {
                // Without workspace folders: from the document's folder up to the `Cargo.toml`.
                assert_eq!(scalar(definition(&d, at, &[])), expected, "{text} at {at}");
                assert_eq!(scalar(definition(&d, at, &[dir.join("src")])), expected);
            }
            assert!(definition(&d, text.find("get_weather").unwrap(), &[dir.join("prompts")]).is_none());
        }
    }

    /// The search over this repository (its sources, tests and examples): what it finds and how
    /// long it takes.
    #[test]
    fn the_repository_s_handlers_are_found() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        let started = std::time::Instant::now();
        let found = handlers("convert_currency", std::slice::from_ref(&root), Encoding::Utf16);
        let took = started.elapsed();
        eprintln!("the #[tool] search over {} took {took:?}", root.display());
        let files: Vec<String> = found.iter().map(|l| l.uri.as_str().to_owned()).collect();
        assert!(files.iter().any(|f| f.ends_with("/examples/weather-tools/src/lib.rs")), "{files:?}");
        let at = found.iter().find(|l| l.uri.as_str().ends_with("/examples/weather-tools/src/lib.rs")).unwrap();
        assert_eq!(at.range.start.line, 44, "the line of `pub fn convert`");
    }

    #[test]
    fn tool_attributes_are_read() {
        let src = "/// `#[tool(name = \"doc\")]` in a comment\n#[prompty::tool(name = \"weather\", description = \"a ] b\")]\n#[allow(unused)]\npub(crate) async fn get_weather(city: String) {}\n\n#[tool]\nfn r#convert() {}\n";
        let spans: Vec<&str> = tool_fns(src, "weather").iter().map(|s| &src[s.start..s.end]).collect();
        assert_eq!(spans, ["get_weather"]);
        let spans: Vec<&str> = tool_fns(src, "convert").iter().map(|s| &src[s.start..s.end]).collect();
        assert_eq!(spans, ["r#convert"]);
        assert!(tool_fns(src, "get_weather").is_empty());
        assert!(tool_fns(src, "doc").is_empty());
    }
}
