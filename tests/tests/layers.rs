//! The module graph of every crate of the workspace has no circle, and the runtime's top-level
//! modules import only downward, in the order ARCHITECTURE.md gives.
//!
//! Run it alone with `cargo test -p prompty-tests --test layers`. It reads the sources as text: a
//! module's imports are the `crate::`, `super::` and `self::` paths it names (in `use` trees and
//! inline). A path through a re-export (`crate::prepare`, which lib.rs re-exports from its module)
//! counts as an import of the module that defines the item, so a circle cannot hide behind the
//! crate root. A reference from a module to one of its ancestors or descendants is containment,
//! not an import. Test modules (`#[cfg(test)]`) are left out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// The runtime's top-level modules from the bottom up. A module may import modules of its own
/// rank or below; an import of a higher rank fails the test.
const RUNTIME_LAYERS: &[(&str, u32)] = &[
    ("support", 0),
    ("lookup", 0),
    ("schema", 0),
    ("error", 0),
    ("trace", 1),
    ("blocking", 2),
    ("registry", 3),
    ("http", 4),
    ("otel", 5),
    ("prepare", 5),
    ("providers", 6),
    ("invoke", 7),
    ("tools", 8),
    ("engine", 8),
    ("turn", 9),
    ("typed", 10),
    ("check", 11),
    ("prompts", 12),
    ("eval", 13),
];

const CRATES: &[&str] =
    &["prompty-core", "prompty-local", "prompty", "prompty-build", "prompty-macros", "prompty-cli", "prompty-lsp"];

#[test]
fn no_module_imports_in_a_circle() {
    let root = workspace_root();
    let mut report = String::new();
    let mut files = 0;
    for name in CRATES {
        let krate = Crate::read(&root.join(name));
        files += krate.modules.len();
        let graph = krate.graph();
        for circle in circles(&graph) {
            report.push_str(&format!("\n{name}: circle of {} modules:", circle.len()));
            for m in &circle {
                let into: Vec<String> =
                    graph[m].iter().filter(|t| circle.contains(t)).map(|t| krate.file_of(t)).collect();
                report.push_str(&format!("\n  {} -> {}", krate.file_of(m), into.join(", ")));
            }
        }
    }
    assert!(files > 100, "the test read only {files} module files: is the workspace layout still the same?");
    assert!(
        report.is_empty(),
        "import circles between modules (each file -> the files of its circle it imports):{report}"
    );
}

#[test]
fn runtime_layers_import_only_downward() {
    let root = workspace_root();
    let krate = Crate::read(&root.join("prompty"));
    let rank: HashMap<&str, u32> = RUNTIME_LAYERS.iter().copied().collect();
    let mut unknown = BTreeSet::new();
    let mut upward = Vec::new();
    for (from, targets) in krate.graph() {
        let Some(top) = from.first() else { continue };
        let Some(&from_rank) = rank.get(top.as_str()) else {
            unknown.insert(top.clone());
            continue;
        };
        for to in targets {
            let Some(to_top) = to.first() else { continue };
            match rank.get(to_top.as_str()) {
                Some(&to_rank) if to_top != top && to_rank > from_rank => upward.push(format!(
                    "{} (`{top}`, layer {from_rank}) imports {} (`{to_top}`, layer {to_rank})",
                    krate.file_of(&from),
                    krate.file_of(&to)
                )),
                Some(_) => {}
                None => {
                    unknown.insert(to_top.clone());
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "top-level modules of prompty/src that have no layer in RUNTIME_LAYERS (add them, and to ARCHITECTURE.md): {unknown:?}"
    );
    assert!(upward.is_empty(), "imports that run up the layers:\n{}", upward.join("\n"));
}

#[test]
fn the_reader_sees_imports_through_reexports_and_use_trees() {
    let dir = std::env::temp_dir().join(format!("prompty-layers-{}", std::process::id()));
    let src = dir.join("src");
    fs::create_dir_all(src.join("b")).unwrap();
    fs::write(
        src.join("lib.rs"),
        "mod a;\nmod b;\n#[cfg(test)]\nmod t;\npub use a::run;\npub use b::*;\n// crate::c::gone\n",
    )
    .unwrap();
    fs::write(
        src.join("a.rs"),
        "use crate::{b::{inner::Thing, other}, Deep};\npub fn run() {}\nfn s() { let _ = \"crate::b\"; }\n",
    )
    .unwrap();
    fs::write(src.join("b/mod.rs"), "pub mod inner;\npub mod other;\npub use inner::Deep;\n").unwrap();
    fs::write(src.join("b/inner.rs"), "pub struct Thing;\npub struct Deep;\nfn f() { crate::run() }\n").unwrap();
    fs::write(src.join("b/other.rs"), "#[cfg(test)]\nmod tests {\n    use crate::a::run;\n}\n").unwrap();
    let krate = Crate::read(&dir);
    let graph = krate.graph();
    let m = |p: &str| p.split('/').filter(|s| !s.is_empty()).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(graph[&m("a")], BTreeSet::from([m("b/inner"), m("b/other")]));
    assert_eq!(graph[&m("b/inner")], BTreeSet::from([m("a")]), "crate::run is a's, through lib.rs");
    assert!(graph[&m("b/other")].is_empty(), "a #[cfg(test)] module is left out");
    assert_eq!(circles(&graph), vec![vec![m("a"), m("b/inner")]]);
    fs::remove_dir_all(&dir).ok();
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate sits in the workspace").to_path_buf()
}

type ModPath = Vec<String>;

struct Module {
    file: PathBuf,
    /// Names this module binds with `use` (any visibility): name -> (absolute path or glob target).
    uses: Vec<UseBinding>,
    /// Names of items defined in this module.
    defines: BTreeSet<String>,
    /// Every path the module names, as written, with the module it is written in.
    paths: Vec<Vec<String>>,
}

struct UseBinding {
    /// The bound name, or `*` for a glob.
    name: String,
    path: Vec<String>,
}

struct Crate {
    src: PathBuf,
    modules: BTreeMap<ModPath, Module>,
}

impl Crate {
    fn read(dir: &Path) -> Crate {
        let src = dir.join("src");
        let root = if src.join("lib.rs").exists() { src.join("lib.rs") } else { src.join("main.rs") };
        let mut krate = Crate { src: src.clone(), modules: BTreeMap::new() };
        let mut todo = vec![(Vec::new(), root)];
        while let Some((path, file)) = todo.pop() {
            let raw = fs::read_to_string(&file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            let code = drop_test_items(&blank_comments_and_strings(&raw));
            let tokens = tokenize(&code);
            let base = match file.file_name().and_then(|n| n.to_str()) {
                Some("lib.rs" | "main.rs" | "mod.rs") => file.parent().unwrap().to_path_buf(),
                _ => file.with_extension(""),
            };
            for (name, explicit) in module_declarations(&tokens, &raw) {
                let candidates = match explicit {
                    Some(p) => vec![file.parent().unwrap().join(p)],
                    None => vec![base.join(format!("{name}.rs")), base.join(&name).join("mod.rs")],
                };
                if let Some(found) = candidates.into_iter().find(|c| c.exists()) {
                    let mut child = path.clone();
                    child.push(name);
                    todo.push((child, found));
                }
            }
            let (uses, paths) = paths_and_uses(&tokens);
            let defines = definitions(&tokens);
            krate.modules.insert(path, Module { file, uses, defines, paths });
        }
        krate
    }

    fn file_of(&self, m: &ModPath) -> String {
        let file = &self.modules[m].file;
        let top = self.src.parent().unwrap().parent().unwrap_or(Path::new(""));
        file.strip_prefix(top).unwrap_or(file).display().to_string()
    }

    /// module -> the modules it imports (containment left out).
    fn graph(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut graph = BTreeMap::new();
        for (here, module) in &self.modules {
            let mut targets = BTreeSet::new();
            for path in module.paths.iter().chain(module.uses.iter().map(|u| &u.path)) {
                if let Some(target) = self.resolve(here, path, 0) {
                    let contained = target.starts_with(here) || here.starts_with(&target);
                    if !contained {
                        targets.insert(target);
                    }
                }
            }
            graph.insert(here.clone(), targets);
        }
        graph
    }

    /// The module that defines what `path` (written in module `here`) names, as deep as it can be
    /// followed; `None` for a path outside this crate.
    fn resolve(&self, here: &ModPath, path: &[String], depth: u32) -> Option<ModPath> {
        if depth > 16 {
            return None;
        }
        let head = path.first()?;
        let (mut cur, mut rest): (ModPath, &[String]) = match head.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (here.clone(), &path[1..]),
            "super" => (here[..here.len().saturating_sub(1)].to_vec(), &path[1..]),
            // A path relative to this module (`use inner::Thing;` beside `mod inner;`).
            _ if self.modules.contains_key(&[here.as_slice(), std::slice::from_ref(head)].concat()) => {
                (here.clone(), path)
            }
            _ => return None,
        };
        while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
            cur.pop();
            rest = tail;
        }
        for (i, seg) in rest.iter().enumerate() {
            let mut child = cur.clone();
            child.push(seg.clone());
            if self.modules.contains_key(&child) {
                cur = child;
                continue;
            }
            // `seg` is an item of `cur`: defined there, or bound there by a `use`.
            return Some(self.item(&cur, seg, &rest[i + 1..], depth).unwrap_or(cur));
        }
        Some(cur)
    }

    /// The module that defines item `name` seen from module `m` (following its `use` bindings).
    fn item(&self, m: &ModPath, name: &str, tail: &[String], depth: u32) -> Option<ModPath> {
        let module = self.modules.get(m)?;
        if module.defines.contains(name) {
            return Some(m.clone());
        }
        if let Some(bound) = module.uses.iter().find(|u| u.name == name) {
            let mut path = bound.path.clone();
            path.extend(tail.iter().cloned());
            return self.resolve(m, &path, depth + 1);
        }
        for glob in module.uses.iter().filter(|u| u.name == "*") {
            let Some(target) = self.resolve(m, &glob.path, depth + 1) else { continue };
            if target != *m && self.item(&target, name, tail, depth + 1).is_some() {
                return self.item(&target, name, tail, depth + 1);
            }
        }
        None
    }
}

/// The code with comments removed and the insides of string and char literals blanked (so a
/// `"crate::x"` in a message is not an import). Line structure is kept.
fn blank_comments_and_strings(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (!prev_is_ident(&chars, i) || (chars[i - 1] == 'b' && !prev_is_ident(&chars, i - 1)))
        {
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            out.push_str("\"\"");
            while j < chars.len() {
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                if chars[j] == '\n' {
                    out.push('\n');
                }
                j += 1;
            }
            i = j;
        } else if c == '"' {
            out.push_str("\"\"");
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            if next == Some('\\') {
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// Removes `#[cfg(test)]` items: `mod x { ... }`, `mod x;`, `use ...;`, `fn ...`.
fn drop_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        // The item ends at the first `;` before any `{`, or at the `}` closing its first `{`.
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, ch) in after.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        out.extend(after[..end].chars().filter(|&c| c == '\n'));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn tokenize(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_owned());
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            tokens.push(c.to_string());
            i += 1;
        }
    }
    tokens
}

/// `mod name;` declarations (not inline modules), with their `#[path]` when they have one.
fn module_declarations(tokens: &[String], raw: &str) -> Vec<(String, Option<String>)> {
    let explicit: HashMap<String, String> = raw
        .lines()
        .collect::<Vec<_>>()
        .windows(2)
        .filter_map(|w| {
            let attr = w[0].trim().strip_prefix("#[path = \"")?.strip_suffix("\"]")?;
            let name = w[1].split_whitespace().skip_while(|t| *t != "mod").nth(1)?.trim_end_matches(';');
            Some((name.to_owned(), attr.to_owned()))
        })
        .collect();
    let mut out = Vec::new();
    for i in 0..tokens.len().saturating_sub(2) {
        if tokens[i] == "mod" && tokens[i + 2] == ";" && (i == 0 || tokens[i - 1] != "::") {
            let name = tokens[i + 1].clone();
            let path = explicit.get(&name).cloned();
            out.push((name, path));
        }
    }
    out
}

const ITEM_KEYWORDS: &[&str] = &["fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod"];

fn definitions(tokens: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for w in tokens.windows(2) {
        if ITEM_KEYWORDS.contains(&w[0].as_str()) && is_ident(&w[1]) {
            out.insert(w[1].clone());
        }
    }
    for w in tokens.windows(3) {
        if w[0] == "macro_rules" && w[1] == "!" {
            out.insert(w[2].clone());
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The `use` bindings of a module and every other `crate::`/`super::`/`self::` path it names.
fn paths_and_uses(tokens: &[String]) -> (Vec<UseBinding>, Vec<Vec<String>>) {
    let mut uses = Vec::new();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "use" && (i == 0 || tokens[i - 1] != "::") {
            let end = tokens[i..].iter().position(|t| t == ";").map_or(tokens.len(), |p| i + p);
            let mut j = i + 1;
            if tokens.get(j).map(String::as_str) == Some("::") {
                j += 1;
            }
            use_tree(&tokens[j..end], &[], &mut uses);
            i = end + 1;
            continue;
        }
        let head = tokens[i].as_str();
        let after_dollar = i > 0 && tokens[i - 1] == "$";
        let continues = i > 0 && tokens[i - 1] == "::";
        if matches!(head, "crate" | "super" | "self") && !after_dollar && !continues {
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while tokens.get(j).map(String::as_str) == Some("::") && tokens.get(j + 1).is_some_and(|t| is_ident(t)) {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            if path.len() > 1 {
                paths.push(path);
            }
            i = j;
            continue;
        }
        i += 1;
    }
    (uses, paths)
}

/// Expands one use tree (`a::{b, c::d as e, f::*}`) into bindings.
fn use_tree(tokens: &[String], prefix: &[String], out: &mut Vec<UseBinding>) {
    let mut i = 0;
    let mut path = prefix.to_vec();
    while i < tokens.len() {
        let t = tokens[i].as_str();
        match t {
            "::" => i += 1,
            "{" => {
                let close = matching_brace(tokens, i);
                for part in split_top_level(&tokens[i + 1..close]) {
                    use_tree(part, &path, out);
                }
                return;
            }
            "*" => {
                out.push(UseBinding { name: "*".to_owned(), path: path.clone() });
                return;
            }
            "as" => {
                if let Some(alias) = tokens.get(i + 1) {
                    if alias != "_" {
                        out.push(UseBinding { name: alias.clone(), path: path.clone() });
                    } else {
                        out.push(UseBinding { name: String::new(), path: path.clone() });
                    }
                }
                return;
            }
            _ if is_ident(t) => {
                path.push(t.to_owned());
                i += 1;
            }
            _ => i += 1,
        }
    }
    if path.len() > 1 && path.last().is_some_and(|l| l == "self") {
        path.pop();
    }
    if let Some(name) = path.last().cloned() {
        out.push(UseBinding { name, path });
    }
}

fn matching_brace(tokens: &[String], open: usize) -> usize {
    let mut depth = 0;
    for (k, t) in tokens.iter().enumerate().skip(open) {
        match t.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

fn split_top_level(tokens: &[String]) -> Vec<&[String]> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (k, t) in tokens.iter().enumerate() {
        match t.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "," if depth == 0 => {
                parts.push(&tokens[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&tokens[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Strongly connected components of more than one module, each sorted, largest first.
fn circles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        graph: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: HashMap<&'a ModPath, usize>,
        low: HashMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on: BTreeSet<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a ModPath) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let Some((w, _)) = graph.get_key_value(w) else { continue };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    s.out
}
