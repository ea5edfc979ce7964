//! Loading `.prompty` files: [`load`], [`load_str`], [`LoadOptions`].

use crate::frontmatter;
use crate::keypath::{self, KeyPath, Seg};
use crate::model::{Agent, Model, Property, Template, Tool};
use crate::options::LoadOptions;
use crate::origin::Origin;
use crate::references::{self, Roots};
use crate::{Error, Location, Result};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Resolves `relative` against `base_dir` with the confinement rules of `${file:}` references:
/// the result must lie inside `base_dir` or a root `options` allows, also after following symlinks.
/// Used for files a prompt names, such as the child of a `kind: prompty` tool.
///
/// ```
/// let dir = std::env::temp_dir();
/// let err = prompty_core::confine_path(&dir, "../../etc/passwd", &prompty_core::LoadOptions::new()).unwrap_err();
/// assert!(err.to_string().contains("outside allowed roots"));
/// ```
pub fn confine_path(base_dir: &Path, relative: &str, options: &LoadOptions) -> Result<PathBuf> {
    use crate::references::Confine;
    let roots = Roots::new(base_dir, &options.allowed_roots);
    match crate::references::confine(relative, base_dir, &roots) {
        Ok(p) => Ok(p),
        Err(Confine::Outside) => Err(Error::FileOutsideRoots {
            at: Location::file(base_dir.display().to_string()),
            field: "path".to_owned(),
            reference: relative.to_owned(),
        }),
        Err(Confine::NotFound(p)) => Err(Error::FileNotFound { path: p }),
        Err(Confine::Io(p, source)) => Err(Error::Io { path: p, source }),
    }
}

impl Agent {
    /// Builds an agent from its JSON form (canonical or with the file format's shorthands), without
    /// reading any file and without resolving `${env:}`/`${file:}` references. An agent that
    /// holds `${env:}` references ([`Agent::has_env_references`]) has them resolved when the
    /// runtime sends it.
    ///
    /// ```
    /// let a = prompty_core::Agent::from_value(serde_json::json!({
    ///     "inputs": {"city": "Paris"}})).unwrap();
    /// assert_eq!(a.inputs.unwrap()[0].default, Some(serde_json::json!("Paris")));
    /// ```
    pub fn from_value(value: Value) -> crate::Result<Agent> {
        // The template body is not frontmatter: it is never resolved.
        let unresolved_env = match &value {
            Value::Object(map) => map.iter().any(|(k, v)| k != "instructions" && references::has_env_reference(v)),
            other => references::has_env_reference(other),
        };
        let mut agent = agent_from_value(value, &Origin::memory())?;
        agent.unresolved_env = unresolved_env;
        Ok(agent)
    }

    /// A copy of the agent with every `${env:VAR}` / `${env:VAR:default}` reference resolved from
    /// the environment now, as `load` resolves them (for agents that still hold references,
    /// [`Agent::has_env_references`]: loaded with [`crate::LoadOptions::keep_env_references`] or
    /// compiled into a program). A variable that is not set and has no default is an error naming
    /// the reference, its field and the file; the runtime calls this when it sends such an agent.
    ///
    /// ```
    /// let opts = prompty_core::LoadOptions::new().keep_env_references();
    /// let a = prompty_core::load_str_with("---\nmodel:\n  id: ${env:PROMPTY_DOC_MODEL:gpt-4o}\n---\n", ".", "x", &opts)?;
    /// assert_eq!(a.with_env_resolved()?.model.unwrap().id, "gpt-4o");
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn with_env_resolved(&self) -> crate::Result<Agent> {
        resolve_agent_env(self, false)
    }

    /// A copy of the agent with the `${env:}` references whose variable is set, or that have a
    /// default, resolved from the environment now; a reference whose variable is not set and has
    /// no default stays as written ([`Agent::has_env_references`] then stays `true`, and
    /// [`Agent::with_env_resolved`], which the runtime calls when it sends the agent, fails naming
    /// it). What a typed prompt's `agent()` shows.
    ///
    /// ```
    /// let opts = prompty_core::LoadOptions::new().keep_env_references();
    /// let text = "---\nmodel:\n  id: ${env:PROMPTY_DOC_MODEL2:gpt-4o}\n  connection:\n    kind: key\n    apiKey: ${env:PROMPTY_DOC_UNSET_KEY}\n---\n";
    /// let a = prompty_core::load_str_with(text, ".", "x.prompty", &opts)?.with_env_resolved_where_set()?;
    /// assert_eq!(a.model.as_ref().unwrap().id, "gpt-4o");
    /// assert!(a.has_env_references());
    /// let err = a.with_env_resolved().unwrap_err().to_string();
    /// assert!(err.contains("${env:PROMPTY_DOC_UNSET_KEY}"), "{err}");
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn with_env_resolved_where_set(&self) -> crate::Result<Agent> {
        resolve_agent_env(self, true)
    }
}

/// Resolves the `${env:}` references left in an agent loaded with
/// [`LoadOptions::keep_env_references`]; errors name the agent's file and the key path. With
/// `keep_unset`, a reference whose variable is not set and has no default stays as written.
pub(crate) fn resolve_agent_env(agent: &Agent, keep_unset: bool) -> Result<Agent> {
    let file = agent.source.as_ref().map_or_else(|| format!("<agent {}>", agent.name), |s| s.path.clone());
    let origin = Origin { file, frontmatter: None, secrets: Default::default() };
    let mut value = serde_json::to_value(agent).map_err(|e| Error::InvalidField {
        at: origin.at(&KeyPath::default()),
        field: String::new(),
        message: e.to_string(),
    })?;
    if let Value::Object(map) = &mut value {
        // The template body is not frontmatter: it is never resolved.
        map.remove("instructions");
    }
    let kept = std::cell::Cell::new(false);
    references::resolve_env(&mut value, &origin, &mut KeyPath::default(), keep_unset.then_some(&kept))?;
    let mut resolved = agent_from_value(value, &origin)?;
    resolved.instructions = agent.instructions.clone();
    resolved.source = agent.source.clone();
    resolved.cache = agent.cache.clone();
    resolved.unresolved_env = kept.get();
    Ok(resolved)
}

/// Loads a `.prompty` file, with the process's default options
/// ([`LoadOptions::process_default`]).
///
/// The frontmatter's `${env:}` and `${file:}` references are resolved; `.env` files are never read.
///
/// ```no_run
/// let agent = prompty_core::load("prompts/chat.prompty")?;
/// println!("{}", agent.name);
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<Agent> {
    load_with(path, &LoadOptions::process_default())
}

/// Loads a `.prompty` file with options.
///
/// ```no_run
/// use prompty_core::{load_with, LoadOptions};
/// let agent = load_with("prompts/chat.prompty", &LoadOptions::new().allow_root("/srv/shared"))?;
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn load_with(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Agent> {
    let path = path.as_ref();
    let text = match references::read_regular(path, options.max_file_bytes) {
        Ok(t) => t,
        Err(references::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::FileNotFound { path: path.to_path_buf() })
        }
        Err(references::ReadError::Io(source)) => return Err(Error::Io { path: path.to_path_buf(), source }),
        Err(refused) => {
            let source = std::io::Error::new(std::io::ErrorKind::InvalidInput, refused.to_string());
            return Err(Error::Io { path: path.to_path_buf(), source });
        }
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    load_str_with(&text, dir, &path.display().to_string(), options)
}

/// Loads a prompt from text, with the process's default options ([`LoadOptions::process_default`]).
/// `base_dir` is the folder `${file:}` references are relative to (and confined to, with the
/// allowed roots); `name` is how errors name the text (a file name, or something like `<string>`).
///
/// ```
/// let agent = prompty_core::load_str("---\nname: hi\nmodel: gpt-4o\n---\nuser:\nHello", ".", "<string>")?;
/// assert_eq!(agent.model.unwrap().id, "gpt-4o");
/// assert_eq!(agent.instructions.as_deref(), Some("user:\nHello"));
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn load_str(text: &str, base_dir: impl AsRef<Path>, name: &str) -> Result<Agent> {
    load_str_with(text, base_dir, name, &LoadOptions::process_default())
}

/// Loads a prompt from text, with options. See [`load_str`].
///
/// ```
/// use prompty_core::{load_str_with, LoadOptions};
/// let agent = load_str_with("Hello", ".", "<string>", &LoadOptions::new())?;
/// assert_eq!(agent.instructions.as_deref(), Some("Hello"));
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn load_str_with(text: &str, base_dir: impl AsRef<Path>, name: &str, options: &LoadOptions) -> Result<Agent> {
    load_str_inner(text, base_dir.as_ref(), name, options, None)
}

/// Loads a prompt from text like [`load_str_with`], and also returns every file its `${file:}`
/// references read (canonical paths, in the order they were read), whether loading succeeded or
/// not. Compile-time loaders use it to rebuild when one of those files changes.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-tracked-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("about.txt"), "A helpful bot.").unwrap();
/// let text = "---\ndescription: ${file:about.txt}\n---\nHi";
/// let (agent, files) = prompty_core::load_str_tracked(text, &dir, "x.prompty", &Default::default());
/// assert_eq!(agent?.description.as_deref(), Some("A helpful bot."));
/// assert_eq!(files, vec![dir.join("about.txt").canonicalize().unwrap()]);
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn load_str_tracked(
    text: &str,
    base_dir: impl AsRef<Path>,
    name: &str,
    options: &LoadOptions,
) -> (Result<Agent>, Vec<PathBuf>) {
    let reads = std::cell::RefCell::new(Vec::new());
    let agent = load_str_inner(text, base_dir.as_ref(), name, options, Some(&reads));
    (agent, reads.into_inner())
}

fn load_str_inner(
    text: &str,
    dir: &Path,
    name: &str,
    options: &LoadOptions,
    reads: Option<&std::cell::RefCell<Vec<PathBuf>>>,
) -> Result<Agent> {
    let split = frontmatter::split(text).map_err(|u| Error::Frontmatter {
        at: Location::file(name).at(u.line, 1),
        message: "the frontmatter opened here is never closed (add a line `---` after it)".to_owned(),
    })?;
    // After a frontmatter the body starts at its first non-blank character (spec §2.2: the split
    // pattern's `\s*` before the body), on the line that character is on.
    let (body, body_line) = match split.frontmatter {
        Some((yaml, first)) => {
            let body = split.body.trim_start();
            let skipped = memchr::memchr_iter(b'\n', &split.body.as_bytes()[..split.body.len() - body.len()]).count();
            (body, first + memchr::memchr_iter(b'\n', yaml.as_bytes()).count() + 1 + skipped)
        }
        None => (split.body, 1),
    };
    let source = || crate::AgentSource {
        path: name.to_owned(),
        base_dir: dir.to_path_buf(),
        body_line,
        allowed_roots: options.allowed_roots.clone(),
        embedded: Vec::new(),
        text: Some(std::sync::Arc::from(text)),
    };
    let body = body.trim_end_matches(['\n', '\r']);
    if let Some((yaml, _)) = split.frontmatter {
        if let Some(mut agent) = crate::finished::get(yaml, dir, options.keep_env) {
            agent.instructions = Some(body.to_owned());
            agent.source = Some(source());
            // Its own slot for the compiled template, as a fresh load has.
            agent.cache = Default::default();
            return Ok(agent);
        }
    }
    let origin = Origin {
        file: name.to_owned(),
        frontmatter: split.frontmatter.map(|(t, l)| (t.to_owned(), l)),
        secrets: Default::default(),
    };
    let mut value = match split.frontmatter {
        None => Value::Object(Map::new()),
        Some((yaml, first_line)) => parse_yaml(yaml, first_line, name)?,
    };
    let mut roots = Roots::new(dir, &options.allowed_roots);
    roots.keep_env = options.keep_env;
    roots.budget = references::Budget::new(options);
    roots.unsaved = std::sync::Arc::clone(&options.unsaved);
    let resolved = references::resolve(&mut value, dir, &roots, &origin, &mut KeyPath::default(), 0);
    if let Some(reads) = reads {
        reads.borrow_mut().append(&mut roots.reads.borrow_mut());
    }
    resolved?;
    if let Value::Object(map) = &mut value {
        map.remove("kind");
        map.remove("instructions");
        map.insert("instructions".to_owned(), Value::String(body.to_owned()));
    }
    let mut agent = agent_from_value(value, &origin)?;
    agent.unresolved_env = roots.kept_env.get();
    if let Some((yaml, _)) = split.frontmatter {
        crate::finished::put(yaml, dir, options.keep_env, roots.env_reads.take(), &mut agent);
    }
    agent.source = Some(source());
    Ok(agent)
}

/// Where a field of a `.prompty` file's frontmatter is: the file `name`, and the 1-based line and
/// column of the entry the key path `field` names (`inputs[1].kind`, `tools[0].bindings.unit`;
/// mappings written as `name: {...}` count as lists in declaration order, as they load). Falls
/// back to the deepest entry found, or to the file alone. `text` is the whole file.
///
/// ```
/// let text = "---\nname: x\ninputs:\n  - name: a\n    kind: strng\n---\n{{ a }}";
/// let at = prompty_core::locate_field(text, "x.prompty", "inputs[0].kind");
/// assert_eq!(at.to_string(), "x.prompty:5:5");
/// ```
pub fn locate_field(text: &str, name: &str, field: &str) -> Location {
    let at = Location::file(name);
    let Ok(split) = frontmatter::split(text) else { return at };
    let Some((yaml, first)) = split.frontmatter else { return at };
    let path = KeyPath::parse(field);
    // The longest prefix of the path found in block style; a flow-style list (`inputs: [a, b]`)
    // is searched on its line.
    for n in (1..=path.0.len()).rev() {
        let prefix = KeyPath(path.0[..n].to_vec());
        let Some(line) = keypath::locate(yaml, &prefix) else { continue };
        let Some(text) = yaml.lines().nth(line) else { break };
        let column = match path.0.get(n) {
            Some(keypath::Seg::Index(i)) if n < path.0.len() => {
                keypath::flow_item_column(text, *i).unwrap_or_else(|| keypath::column(text, prefix.0.last()))
            }
            _ => keypath::column(text, prefix.0.last()),
        };
        return at.at(first + line, column);
    }
    at
}

fn parse_yaml(yaml: &str, first_line: usize, name: &str) -> Result<Value> {
    if yaml.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let value: Value = crate::yaml::parse(yaml).map_err(|e| match e {
        crate::yaml::YamlError::Syntax(e) => yaml_error(&e, yaml, first_line, name),
        crate::yaml::YamlError::Limit { line, column, message } => {
            Error::Frontmatter { at: Location::file(name).at(first_line + line - 1, column), message }
        }
    })?;
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(Map::new())),
        other => Err(Error::Frontmatter {
            at: Location::file(name).at(first_line, 1),
            message: format!("the frontmatter must be a mapping of keys to values, found {}", kind_name(&other)),
        }),
    }
}

/// A YAML error placed in the `.prompty` file: the library counts lines from the start of the
/// frontmatter, the file from its first line. When the library only notices a problem after the
/// last frontmatter line (an unclosed `[`, say), the place where the broken construct began is used.
fn yaml_error(e: &serde_yaml::Error, yaml: &str, first_line: usize, name: &str) -> Error {
    let yaml_lines = yaml.lines().count().max(1);
    let message = e.to_string();
    // Every "at line L column C" in the message, in order, as (line, column, byte range).
    let mut marks = Vec::new();
    let mut from = 0;
    while let Some(i) = message[from..].find(" at line ") {
        let at = from + i;
        let rest = &message[at + " at line ".len()..];
        let line_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let after_line = &rest[line_len..];
        let col_rest = after_line.strip_prefix(" column ").unwrap_or("");
        let col_len = col_rest.bytes().take_while(u8::is_ascii_digit).count();
        let end = at + " at line ".len() + line_len + if col_len > 0 { " column ".len() + col_len } else { 0 };
        if let Ok(line) = rest[..line_len].parse::<usize>() {
            marks.push((line, col_rest[..col_len].parse::<usize>().unwrap_or(1), at..end));
        }
        from = end.max(at + 1);
    }
    let primary = e.location().map(|l| (l.line(), l.column())).or_else(|| marks.first().map(|m| (m.0, m.1)));
    let (line, column) = match primary {
        Some((l, c)) if l <= yaml_lines => (l, c),
        _ => marks.iter().rev().map(|m| (m.0, m.1)).find(|(l, _)| *l <= yaml_lines).unwrap_or((yaml_lines, 1)),
    };
    // Rewrite the library's positions into file positions; drop the first one (it is the prefix).
    let mut text = String::with_capacity(message.len());
    let mut last = 0;
    for (i, (l, c, range)) in marks.iter().enumerate() {
        text.push_str(&message[last..range.start]);
        if i > 0 {
            text.push_str(&format!(" at line {} column {c}", first_line + l - 1));
        }
        last = range.end;
    }
    text.push_str(&message[last..]);
    Error::Frontmatter { at: Location::file(name).at(first_line + line - 1, column), message: text }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The typed fields of the frontmatter after shorthands are expanded.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fields {
    #[serde(default)]
    name: String,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    model: Option<Model>,
    #[serde(default)]
    inputs: Option<Vec<Property>>,
    #[serde(default)]
    outputs: Option<Vec<Property>>,
    #[serde(default)]
    tools: Option<Vec<Tool>>,
    #[serde(default)]
    template: Option<Template>,
    #[serde(default)]
    instructions: Option<String>,
}

/// Expands shorthands in a frontmatter value and builds the typed agent.
pub(crate) fn agent_from_value(value: Value, origin: &Origin) -> Result<Agent> {
    let Value::Object(mut map) = value else {
        return Err(Error::Frontmatter {
            at: origin.at(&KeyPath::default()),
            message: format!("an agent must be a mapping, found {}", kind_name(&value)),
        });
    };
    normalize(&mut map, origin)?;
    // Read without tracking the path first (most frontmatter is valid); on an error, read again
    // with the path tracked, for the error's location.
    let value = Value::Object(map);
    let fields = match Fields::deserialize(&value) {
        Ok(fields) => fields,
        Err(_) => serde_path_to_error::deserialize::<_, Fields>(value).map_err(|e| {
            let path = KeyPath::from(e.path());
            let message = origin.redact(e.into_inner().to_string());
            Error::InvalidField { at: origin.at(&path), field: path.to_string(), message }
        })?,
    };
    // The credentials the agent carries are hidden wherever else their values land: typed ones
    // (`apiKey`, ...) were remembered as they were read; those of an unknown kind are here.
    if let Some(crate::Connection::Other { fields, .. }) = fields.model.as_ref().and_then(|m| m.connection.as_ref()) {
        crate::model::remember_secret_fields(fields);
    }
    Ok(Agent {
        name: fields.name,
        display_name: fields.display_name,
        description: fields.description,
        metadata: fields.metadata,
        model: fields.model,
        inputs: fields.inputs,
        outputs: fields.outputs,
        tools: fields.tools,
        template: fields.template.unwrap_or_default(),
        instructions: fields.instructions,
        source: None,
        cache: Default::default(),
        unresolved_env: false,
    })
}

fn field_error(origin: &Origin, path: &KeyPath, message: impl Into<String>) -> Error {
    Error::InvalidField { at: origin.at(path), field: path.to_string(), message: origin.redact(message.into()) }
}

/// Rewrites the shorthands of the format into the canonical shape, in place.
fn normalize(map: &mut Map<String, Value>, origin: &Origin) -> Result<()> {
    map.remove("kind");
    if let Some(model) = map.get_mut("model") {
        if let Value::String(id) = model {
            *model = serde_json::json!({ "id": std::mem::take(id) });
        }
    }
    match map.get_mut("template") {
        None | Some(Value::Null) => {}
        Some(Value::Object(t)) => {
            for key in ["format", "parser"] {
                if let Some(v) = t.get_mut(key) {
                    if let Value::String(kind) = v {
                        *v = serde_json::json!({ "kind": std::mem::take(kind) });
                    }
                }
            }
        }
        Some(other) => {
            let path = KeyPath(vec![Seg::Key("template".into())]);
            return Err(field_error(
                origin,
                &path,
                format!(
                    "Invalid template format: expected a mapping such as `template: {{format: jinja2, parser: prompty}}`, found {}",
                    kind_name(other)
                ),
            ));
        }
    }
    for key in ["inputs", "outputs"] {
        if let Some(v) = map.get_mut(key) {
            let mut path = KeyPath(vec![Seg::Key(key.into())]);
            normalize_properties(v, origin, &mut path)?;
        }
    }
    if let Some(tools) = map.get_mut("tools") {
        let mut path = KeyPath(vec![Seg::Key("tools".into())]);
        named_list(tools, origin, &mut path, |item, origin, path| {
            if let Value::Object(tool) = item {
                if let Some(params) = tool.get_mut("parameters") {
                    path.0.push(Seg::Key("parameters".into()));
                    let r = normalize_properties(params, origin, path);
                    path.0.pop();
                    r?;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Turns a collection written as a map `{name: item}` into the list `[{name, ...item}]`, and runs
/// `each` on every item.
fn named_list(
    value: &mut Value,
    origin: &Origin,
    path: &mut KeyPath,
    each: impl Fn(&mut Value, &Origin, &mut KeyPath) -> Result<()>,
) -> Result<()> {
    match value {
        Value::Null => return Ok(()),
        Value::Object(map) => {
            let items = std::mem::take(map)
                .into_iter()
                .map(|(name, item)| match item {
                    Value::Object(mut fields) => {
                        fields.entry("name").or_insert(Value::String(name));
                        Value::Object(fields)
                    }
                    // The scalar shorthand `name: value` (a default), resolved by `each`.
                    other => serde_json::json!({ "name": name, "__shorthand": other }),
                })
                .collect();
            *value = Value::Array(items);
        }
        Value::Array(_) => {}
        other => {
            return Err(field_error(
                origin,
                path,
                format!("expected a list of named items or a mapping of name to item, found {}", kind_name(other)),
            ))
        }
    }
    if let Value::Array(items) = value {
        for (i, item) in items.iter_mut().enumerate() {
            path.0.push(Seg::Index(i));
            let r = each(item, origin, path);
            path.0.pop();
            r?;
        }
    }
    Ok(())
}

fn normalize_properties(value: &mut Value, origin: &Origin, path: &mut KeyPath) -> Result<()> {
    named_list(value, origin, path, |item, origin, path| {
        if let Value::String(name) = item {
            // `inputs: [question]`: a bare name is a string input.
            *item = serde_json::json!({ "name": std::mem::take(name), "kind": "string" });
        }
        normalize_property(item, origin, path)
    })
}

fn normalize_property(item: &mut Value, origin: &Origin, path: &mut KeyPath) -> Result<()> {
    let Value::Object(p) = item else {
        return Err(field_error(origin, path, format!("expected a property mapping, found {}", kind_name(item))));
    };
    if let Some(default) = p.remove("__shorthand") {
        p.insert("kind".into(), Value::String(crate::PropertyKind::infer(&default).as_str().to_owned()));
        p.insert("default".into(), default);
        return Ok(());
    }
    if !p.contains_key("kind") {
        let inferred = p.get("default").map(crate::PropertyKind::infer).unwrap_or_default();
        p.insert("kind".into(), Value::String(inferred.as_str().to_owned()));
    }
    if let Some(props) = p.get_mut("properties") {
        path.0.push(Seg::Key("properties".into()));
        let r = normalize_properties(props, origin, path);
        path.0.pop();
        r?;
    }
    if let Some(items) = p.get_mut("items") {
        if let Value::String(kind) = items {
            *items = serde_json::json!({ "kind": std::mem::take(kind) });
        }
        path.0.push(Seg::Key("items".into()));
        let r = normalize_property(items, origin, path);
        path.0.pop();
        r?;
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(alts)) = p.get_mut(key) {
            for (i, alt) in alts.iter_mut().enumerate() {
                if let Value::String(kind) = alt {
                    *alt = serde_json::json!({ "kind": std::mem::take(kind) });
                }
                path.0.push(Seg::Key(key.into()));
                path.0.push(Seg::Index(i));
                let r = normalize_property(alt, origin, path);
                path.0.truncate(path.0.len() - 2);
                r?;
            }
        }
    }
    Ok(())
}
