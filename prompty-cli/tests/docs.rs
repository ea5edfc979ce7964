//! The README (also the crates.io page of `prompty` and `prompty-cli`), CONTRIBUTING.md and the
//! guides in `docs/`: every code block is checked here or compiled as a doctest, and every link
//! resolves.
//!
//! - `rust` blocks are doctests of `prompty-examples` (`examples/src/lib.rs`, module `docs`); this
//!   file checks that every page with one is included there, and that none is `ignore`d.
//! - `prompty` blocks and `yaml` frontmatter are loaded with the prompty loader; the README's
//!   prompt is `examples/prompts/chat.prompty`, the file its typed example compiles against.
//! - `toml` blocks parse, and the install block names the crates' versions and real features.
//! - `json` blocks parse.
//! - `sh` blocks name packages, binaries, test and bench targets, features, scripts, environment
//!   variables and `prompty` subcommands and flags that exist (asked of this package's binary).
//! - The README stays under 200 lines; relative links, GitHub links into this repository and
//!   `#anchors` resolve.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the GitHub links of the README point: the `repository` of the workspace's Cargo.toml.
fn repository() -> String {
    let manifest = toml_file(&root().join("Cargo.toml"));
    manifest["workspace"]["package"]["repository"].as_str().expect("workspace.package.repository").to_owned()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace folder").to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn toml_file(path: &Path) -> toml::Table {
    read(path).parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The pages checked, relative to the workspace folder.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md"), PathBuf::from("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(root()).expect("below the root").to_path_buf())
        .collect();
    docs.sort();
    assert!(docs.len() >= 8, "the guides in docs/ are gone: {docs:?}");
    pages.extend(docs);
    pages
}

/// A fenced code block.
struct Block {
    page: PathBuf,
    /// The line of the opening fence, from 1.
    line: usize,
    lang: String,
    /// What follows the language in the info string (`no_run` in `rust,no_run`).
    attrs: Vec<String>,
    text: String,
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} (```{})", self.page.display(), self.line, self.lang)
    }
}

fn blocks(page: &Path) -> Vec<Block> {
    let text = read(&root().join(page));
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match open.as_mut() {
            None if line.starts_with("```") => {
                let info: Vec<String> = line[3..].trim().split(',').map(|s| s.trim().to_owned()).collect();
                open = Some(Block {
                    page: page.to_path_buf(),
                    line: i + 1,
                    lang: info[0].clone(),
                    attrs: info[1..].to_vec(),
                    text: String::new(),
                });
            }
            None => {}
            Some(_) if line.trim_end() == "```" => out.push(open.take().expect("an open block")),
            Some(block) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
        }
    }
    if let Some(block) = open {
        panic!("{block}: the block is never closed");
    }
    out
}

fn all_blocks() -> Vec<Block> {
    pages().iter().flat_map(|p| blocks(p)).collect()
}

#[test]
fn readme_is_under_200_lines() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(lines < 200, "README.md has {lines} lines: move the details into docs/ (at most 199)");
}

#[test]
fn every_block_names_a_checked_language() {
    let known = ["rust", "prompty", "yaml", "toml", "json", "sh", "text"];
    for block in all_blocks() {
        assert!(
            known.contains(&block.lang.as_str()),
            "{block}: the language must be one of {known:?} (a bare fence is compiled as Rust by rustdoc)"
        );
        if block.lang == "rust" {
            for attr in &block.attrs {
                assert_eq!(attr, "no_run", "{block}: only `no_run` is allowed (compiled, not run); never `{attr}`");
            }
        } else {
            assert!(block.attrs.is_empty(), "{block}: attributes {:?} on a non-Rust block", block.attrs);
        }
    }
}

#[test]
fn pages_with_rust_blocks_are_doctests_of_the_examples() {
    let lib = read(&root().join("examples/src/lib.rs"));
    let mut rust_pages = 0;
    for page in pages() {
        if blocks(&page).iter().any(|b| b.lang == "rust") {
            rust_pages += 1;
            let include = format!("include_str!(\"../../{}\")", page.display());
            assert!(
                lib.contains(&include),
                "{}: has `rust` blocks but examples/src/lib.rs (module `docs`) has no `#[doc = {include}]`",
                page.display()
            );
        }
    }
    assert!(rust_pages >= 5, "only {rust_pages} pages with rust blocks");
}

/// Loads `text` as a `.prompty` file the way `prompty::load` would, relative to `examples/`.
fn load(block: &Block, text: &str) -> prompty::Agent {
    // `${env:}` references stay as written, as `prompty check` reads them: no secret is needed.
    let options = prompty::LoadOptions::new().keep_env_references();
    prompty::load_str_with(text, root().join("examples"), "docs.prompty", &options)
        .unwrap_or_else(|e| panic!("{block}: does not load: {e}\n{text}"))
}

#[test]
fn prompty_and_yaml_blocks_load() {
    let mut loaded = 0;
    for block in all_blocks() {
        match block.lang.as_str() {
            "prompty" => {
                load(&block, &block.text);
            }
            // Frontmatter fragments: wrapped into a file with a body.
            "yaml" => {
                let agent = load(&block, &format!("---\n{}---\nuser:\nHello\n", block.text));
                let value: serde_json::Value = serde_json::to_value(&agent).expect("an agent serializes");
                assert!(value.is_object(), "{block}");
            }
            _ => continue,
        }
        loaded += 1;
    }
    assert!(loaded >= 3, "only {loaded} prompty/yaml blocks");

    let readme = blocks(Path::new("README.md"));
    let shown = readme.iter().find(|b| b.lang == "prompty").expect("the README shows a prompt");
    assert_eq!(
        shown.text,
        read(&root().join("examples/prompts/chat.prompty")),
        "{shown}: the README's prompt must be examples/prompts/chat.prompty as it is (its typed example is compiled against that file)"
    );
}

#[test]
fn json_blocks_parse() {
    let mut n = 0;
    for block in all_blocks().into_iter().filter(|b| b.lang == "json") {
        serde_json::from_str::<serde_json::Value>(&block.text).unwrap_or_else(|e| panic!("{block}: {e}"));
        n += 1;
    }
    assert!(n >= 1);
}

/// The workspace's packages: name → (folder, manifest).
fn packages() -> BTreeMap<String, (PathBuf, toml::Table)> {
    let manifest = toml_file(&root().join("Cargo.toml"));
    let members = manifest["workspace"]["members"].as_array().expect("workspace.members");
    members
        .iter()
        .map(|m| {
            let dir = root().join(m.as_str().expect("a member path"));
            let manifest = toml_file(&dir.join("Cargo.toml"));
            let name = manifest["package"]["name"].as_str().expect("package.name").to_owned();
            (name, (dir, manifest))
        })
        .collect()
}

fn features(manifest: &toml::Table) -> BTreeSet<String> {
    manifest.get("features").and_then(|f| f.as_table()).map(|f| f.keys().cloned().collect()).unwrap_or_default()
}

#[test]
fn toml_blocks_parse_and_the_install_block_names_the_crates() {
    let workspace = toml_file(&root().join("Cargo.toml"));
    let version = workspace["workspace"]["package"]["version"].as_str().expect("workspace version");
    let rust_version = workspace["workspace"]["package"]["rust-version"].as_str().expect("rust-version");
    let packages = packages();
    let prompty_features = features(&packages["prompty"].1);

    let mut install_blocks = 0;
    for block in all_blocks().into_iter().filter(|b| b.lang == "toml") {
        let table: toml::Table = block.text.parse().unwrap_or_else(|e| panic!("{block}: {e}"));
        for (section, krate) in [("dependencies", "prompty"), ("build-dependencies", "prompty-build")] {
            let Some(dep) = table.get(section).and_then(|s| s.get(krate)) else { continue };
            let (dep_version, dep_features) = match dep {
                toml::Value::String(v) => (v.as_str(), Vec::new()),
                toml::Value::Table(t) => (
                    t["version"].as_str().unwrap_or_else(|| panic!("{block}: {krate} without a version")),
                    t.get("features").and_then(|f| f.as_array()).cloned().unwrap_or_default(),
                ),
                other => panic!("{block}: {krate} = {other}"),
            };
            assert_eq!(dep_version, version, "{block}: [{section}] {krate} must be the crates' version");
            for feature in dep_features {
                let feature = feature.as_str().expect("a feature name");
                assert!(prompty_features.contains(feature), "{block}: prompty has no feature `{feature}`");
            }
            install_blocks += 1;
        }
        if block.page == Path::new("README.md") {
            for name in ["prompty", "prompty-build"] {
                let section = if name == "prompty" { "dependencies" } else { "build-dependencies" };
                assert!(table.get(section).and_then(|s| s.get(name)).is_some(), "{block}: no {name} under [{section}]");
            }
        }
    }
    assert!(install_blocks >= 2, "the README's install block names prompty and prompty-build");

    // The prerequisites and the MSRV policy say the workspace's `rust-version`.
    let readme = read(&root().join("README.md"));
    assert!(readme.contains(&format!("Rust {rust_version}")), "README.md must name Rust {rust_version}");
    // Each feature the README's table lists exists, and each of prompty's public features is listed.
    for feature in &prompty_features {
        if feature == "http" || feature == "default" {
            continue;
        }
        assert!(readme.contains(&format!("\n| `{feature}` |")), "README.md's feature table lacks `{feature}`");
    }
    let table = readme.split("## Cargo features").nth(1).expect("README.md has a `## Cargo features` section");
    let table = table.split("\n## ").next().expect("the section");
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let name = line[3..].split('`').next().expect("a cell");
        assert!(prompty_features.contains(name), "README.md lists a feature `{name}` prompty does not have");
    }
}

/// The `prompty` binary's subcommands and, per subcommand, its help text.
struct Cli {
    help: BTreeMap<String, String>,
}

impl Cli {
    fn new() -> Cli {
        let help_of = |args: &[&str]| {
            let out = Command::new(env!("CARGO_BIN_EXE_prompty")).args(args).output().expect("prompty runs");
            assert!(out.status.success(), "prompty {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).expect("UTF-8 help")
        };
        let top = help_of(&["--help"]);
        let commands: Vec<String> = top
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .filter(|c| c != "help")
            .collect();
        assert!(commands.len() >= 8, "prompty --help lists {commands:?}");
        let mut help: BTreeMap<String, String> =
            commands.iter().map(|c| (c.clone(), help_of(&[c.as_str(), "--help"]))).collect();
        help.insert(String::new(), top);
        Cli { help }
    }

    /// Checks `prompty ARGS`: a subcommand that exists and flags its help names.
    fn check(&self, block: &Block, args: &[String]) {
        let global = &self.help[""];
        let mut rest = args.iter().skip_while(|a| a.starts_with('-'));
        for flag in args.iter().take_while(|a| a.starts_with('-')) {
            assert!(global.contains(flag.as_str()), "{block}: `prompty {flag}` is not in prompty --help");
        }
        let command = rest.next().unwrap_or_else(|| panic!("{block}: `prompty` without a subcommand"));
        let help = self
            .help
            .get(command.as_str())
            .filter(|_| !command.is_empty() && command != "help")
            .unwrap_or_else(|| panic!("{block}: `prompty {command}` is not a subcommand of prompty --help"));
        for arg in rest.filter(|a| a.starts_with('-')) {
            let flag = arg.split('=').next().expect("a flag");
            assert!(
                contains_flag(help, flag) || contains_flag(global, flag),
                "{block}: `prompty {command} {flag}`: prompty {command} --help does not name {flag}"
            );
        }
    }
}

fn contains_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let next = help[i + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// Splits a command line into words: quotes kept together, a `#` word starts a comment, and a
/// redirection ends the command.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '#') if !in_word => break,
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if let Some(redirect) = words.iter().position(|w| w.starts_with('>') || w.starts_with('<') || w == "|") {
        words.truncate(redirect);
    }
    words
}

/// Every identifier-like word of the workspace's Rust sources, to tell a real environment
/// variable from a misspelt one.
fn source_text() -> String {
    fn walk(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if !matches!(name.to_str(), Some("target" | "node_modules" | ".git")) {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut out = String::new();
    for dir in ["prompty", "prompty-core", "prompty-cli", "examples", "tests"] {
        walk(&root().join(dir), &mut out);
    }
    out
}

fn target_exists(dir: &Path, manifest: &toml::Table, kind: &str, folder: &str, name: &str) -> bool {
    let declared = manifest
        .get(kind)
        .and_then(|t| t.as_array())
        .is_some_and(|ts| ts.iter().any(|t| t.get("name").and_then(|n| n.as_str()) == Some(name)));
    declared || dir.join(folder).join(format!("{name}.rs")).is_file()
}

#[test]
fn sh_blocks_name_what_exists() {
    let packages = packages();
    let cli = Cli::new();
    let sources = source_text();
    let ci = read(&root().join(".ci/run"));
    let mut commands = 0;
    for block in all_blocks().into_iter().filter(|b| b.lang == "sh") {
        let joined = block.text.replace("\\\n", " ");
        for line in joined.lines().filter(|l| !l.trim().is_empty()) {
            let mut words = words(line);
            // Leading VAR=value assignments: the variable is one the code reads.
            while words.first().is_some_and(|w| {
                w.split_once('=')
                    .is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            }) {
                let var = words.remove(0);
                let var = var.split('=').next().expect("a name");
                assert!(sources.contains(var), "{block}: `{var}` is read nowhere in the workspace's code");
            }
            let Some(program) = words.first().cloned() else { continue };
            commands += 1;
            let args = &words[1..];
            match program.as_str() {
                "cargo" => check_cargo(&block, line, args, &packages, &cli, &ci),
                "prompty" => cli.check(&block, args),
                p if p.starts_with("scripts/") || p == ".ci/run" => {
                    assert!(root().join(p).is_file(), "{block}: `{p}` does not exist");
                }
                "npx" | "npm" | "node" | "python3" => {}
                other => panic!("{block}: unknown command `{other}` (in `{line}`)"),
            }
        }
    }
    assert!(commands >= 15, "only {commands} commands checked");
}

fn check_cargo(
    block: &Block,
    line: &str,
    args: &[String],
    packages: &BTreeMap<String, (PathBuf, toml::Table)>,
    cli: &Cli,
    ci: &str,
) {
    let (ours, theirs) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let sub = ours.first().unwrap_or_else(|| panic!("{block}: `cargo` alone"));
    assert!(["run", "test", "bench", "install", "build"].contains(&sub.as_str()), "{block}: `cargo {sub}`");
    let value = |flag: &str| ours.iter().position(|a| a == flag).map(|i| ours[i + 1].clone());
    if ours.iter().any(|a| a == "--workspace") {
        assert!(
            ci.lines().any(|l| l.trim() == line.split('#').next().expect("a command").trim()),
            "{block}: `{line}` must be exactly what .ci/run runs"
        );
    }
    if let Some(path) = value("--path") {
        assert!(root().join(&path).join("Cargo.toml").is_file(), "{block}: `--path {path}` is no crate");
    }
    let Some(name) = value("-p").or_else(|| value("--package")) else {
        assert!(ours.iter().any(|a| a == "--workspace" || a == "--path"), "{block}: `{line}` names no package");
        return;
    };
    let (dir, manifest) =
        packages.get(&name).unwrap_or_else(|| panic!("{block}: no package `{name}` in the workspace"));
    if let Some(bin) = value("--bin") {
        assert!(target_exists(dir, manifest, "bin", "src/bin", &bin), "{block}: {name} has no binary `{bin}`");
    }
    if let Some(test) = value("--test") {
        assert!(target_exists(dir, manifest, "test", "tests", &test), "{block}: {name} has no test target `{test}`");
    }
    if let Some(bench) = value("--bench") {
        assert!(target_exists(dir, manifest, "bench", "benches", &bench), "{block}: {name} has no bench `{bench}`");
    }
    if let Some(list) = value("--features") {
        let known = features(manifest);
        for feature in list.split(',') {
            assert!(known.contains(feature), "{block}: {name} has no feature `{feature}`");
        }
    }
    if name == "prompty-cli" && sub == "run" {
        cli.check(block, theirs);
    }
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_lowercase().next().unwrap_or(c)),
            _ => None,
        })
        .collect()
}

fn anchors(page: &Path) -> BTreeSet<String> {
    let mut in_block = false;
    read(page)
        .lines()
        .filter(|l| {
            if l.starts_with("```") {
                in_block = !in_block;
            }
            !in_block && l.starts_with('#')
        })
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// The `(target)` of every `[text](target)` outside code blocks and code spans.
fn links(page: &Path) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in read(&root().join(page)).lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        // Drop code spans: `[x](y)` inside backticks is not a link.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(i_link) = rest.find("](") {
            let after = &rest[i_link + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push((i + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn links_resolve() {
    let repo = repository();
    let blob = format!("{repo}/blob/main/");
    let mut checked = 0;
    for page in pages() {
        for (line, target) in links(&page) {
            let at = format!("{}:{line}: `{target}`", page.display());
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p.to_owned(), Some(a.to_owned())),
                None => (target.clone(), None),
            };
            let file = if let Some(in_repo) = path.strip_prefix(&blob) {
                root().join(in_repo)
            } else if path.starts_with("http://") || path.starts_with("https://") {
                assert!(!path.starts_with(&repo), "{at}: a link into the repository goes through {blob}");
                continue; // another site: not fetched
            } else if path.is_empty() {
                root().join(&page)
            } else {
                // The README is the crates.io page: relative links would break there.
                assert_ne!(page, Path::new("README.md"), "{at}: the README's links must be absolute ({blob}...)");
                root().join(page.parent().expect("a folder")).join(&path)
            };
            assert!(file.exists(), "{at}: {} does not exist", file.display());
            if let Some(anchor) = anchor {
                assert!(
                    file.extension().is_some_and(|e| e == "md"),
                    "{at}: an anchor into a file that is not markdown"
                );
                let known = anchors(&file);
                assert!(
                    known.contains(&anchor),
                    "{at}: no heading `#{anchor}` in {} (there are {known:?})",
                    file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} links checked");
}

/// The diagnostics docs/cli.md shows are what `prompty check` prints for the file they name.
#[test]
fn cli_guide_shows_real_diagnostics() {
    let page = Path::new("docs/cli.md");
    let file = "tests/ui/prompts/unknown_filter.prompty";
    let check = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_prompty"))
            .args(["check"])
            .args(args)
            .arg(file)
            .current_dir(root())
            .env("NO_COLOR", "1")
            .output()
            .expect("prompty runs");
        assert_eq!(out.status.code(), Some(1), "prompty check {file} finds an error");
        (String::from_utf8(out.stdout).expect("UTF-8"), String::from_utf8(out.stderr).expect("UTF-8"))
    };
    let blocks = blocks(page);

    let shown = blocks.iter().find(|b| b.lang == "json" && b.text.contains(file)).expect("the JSON diagnostics");
    let shown: serde_json::Value = serde_json::from_str(&shown.text).expect("JSON");
    let (stdout, _) = check(&["--format", "json"]);
    let printed: serde_json::Value = serde_json::from_str(&stdout).expect("prompty check --format json prints JSON");
    assert_eq!(
        shown,
        printed,
        "{}: the JSON block is not what `prompty check --format json {file}` prints",
        page.display()
    );

    let shown = blocks.iter().find(|b| b.lang == "text" && b.text.contains(file)).expect("the rustc-style diagnostic");
    let (_, stderr) = check(&[]);
    let normalize = |s: &str| s.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
    assert!(
        normalize(&stderr).contains(normalize(&shown.text).trim_end()),
        "{}: the text block is not what `prompty check {file}` prints:\n{stderr}",
        page.display()
    );
}
