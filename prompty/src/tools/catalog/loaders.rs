//! Tool loaders: what fills a catalog. A loader turns a configuration (a JSON value) into
//! entries; loaders are registered by name (`file` is built in; `mcp` and `openapi` come with
//! their features; yours with [`register_tool_loader`] or `#[prompty::loader("name")]`).

use crate::registry::store::Store;
use crate::tools::entry::CatalogEntry;
pub use crate::tools::source::ToolLoader;
use crate::{BoxFuture, Error, Property, Result};
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::{Arc, LazyLock};

/// The most bytes the `file` loader reads from one file.
pub const MAX_TOOL_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A link-time loader registration, submitted by `#[prompty::loader("name")]`.
#[doc(hidden)]
pub struct ToolLoaderRegistration {
    /// The names it is registered under.
    pub keys: &'static [&'static str],
    /// Builds the loader.
    pub make: fn() -> Arc<dyn ToolLoader>,
}

inventory::collect!(ToolLoaderRegistration);

#[doc(hidden)]
pub fn __make_loader<T: ToolLoader + Default>() -> Arc<dyn ToolLoader> {
    Arc::new(T::default())
}

fn builtin_loaders() -> Vec<(&'static str, Arc<dyn ToolLoader>)> {
    let mut out: Vec<(&'static str, Arc<dyn ToolLoader>)> = vec![("file", Arc::new(FileLoader))];
    out.extend(super::dispatch::builtin_loaders());
    for r in inventory::iter::<ToolLoaderRegistration> {
        for key in r.keys {
            out.push((key, (r.make)()));
        }
    }
    out
}

static LOADERS: LazyLock<Store<dyn ToolLoader>> = LazyLock::new(|| Store::new(builtin_loaders));

/// Registers a loader under `name`, overriding a built-in or link-time one.
///
/// ```
/// use prompty::catalog::{CatalogEntry, ToolLoader};
/// use prompty::{BoxFuture, Result};
/// struct Nothing;
/// impl ToolLoader for Nothing {
///     fn load<'a>(&'a self, _: &'a serde_json::Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
///         Box::pin(async { Ok(Vec::new()) })
///     }
/// }
/// prompty::catalog::register_tool_loader("nothing", Nothing);
/// assert!(prompty::catalog::get_tool_loader("nothing").is_ok());
/// ```
pub fn register_tool_loader(name: impl Into<String>, loader: impl ToolLoader) {
    LOADERS.register(name.into(), Arc::new(loader));
}

/// The loader registered under `name`.
///
/// ```
/// assert!(prompty::catalog::get_tool_loader("file").is_ok());
/// assert!(prompty::catalog::get_tool_loader("nope").is_err());
/// ```
pub fn get_tool_loader(name: &str) -> Result<Arc<dyn ToolLoader>> {
    LOADERS.get(name).ok_or_else(|| Error::UnknownComponent {
        component: "tool loader",
        key: crate::Secret::scrub(name).into_owned(),
        known: LOADERS.known(),
        register: "prompty::catalog::register_tool_loader(name, ...)",
        hint: String::new(),
    })
}

/// The built-in `file` loader: tools described in a YAML or JSON file.
///
/// Configuration: `{"path": "tools.yaml", "namespace": "ns"}` (or just the path as a string). The
/// file is one of:
/// - a list of tools (namespace: the configuration's, else `default`);
/// - `{namespace: [tools]}`: every value a list;
/// - `{name: definition}`: every value a mapping (namespace as for a list).
///
/// A tool has `name` (not in the last form), `description`, and `parameters`: a JSON Schema
/// object (with `type` or `properties`), or prompty properties (a list of `{name, kind, ...}` or a
/// mapping of name to property). A function registered under the tool's name
/// ([`crate::register_tool`], `#[prompty::tool]`) runs it; without one the entry is a declaration.
/// Files are read up to [`MAX_TOOL_FILE_BYTES`].
///
/// ```
/// use prompty::catalog::ToolCatalog;
/// let dir = std::env::temp_dir().join("prompty-doc-file-loader");
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("tools.yaml"), "math:\n  - name: add\n    parameters:\n      a: {kind: integer, required: true}\n")?;
/// let catalog = ToolCatalog::new();
/// catalog.add_source("file", serde_json::json!({"path": dir.join("tools.yaml")}))?;
/// let add = &catalog.get("math::add")[0];
/// assert_eq!(add.parameters["required"], serde_json::json!(["a"]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FileLoader;

impl ToolLoader for FileLoader {
    fn load<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
        Box::pin(async move { load_file(config) })
    }
}

fn catalog_error(message: impl Into<String>) -> Error {
    Error::Catalog { message: message.into() }
}

fn load_file(config: &Value) -> Result<Vec<CatalogEntry>> {
    let (path, namespace) = match config {
        Value::String(p) => (p.as_str(), None),
        Value::Object(c) => match c.get("path").and_then(Value::as_str) {
            Some(p) => (p, c.get("namespace").and_then(Value::as_str)),
            None => return Err(catalog_error("the `file` loader needs `path` (a string) in its configuration")),
        },
        _ => return Err(catalog_error("the `file` loader's configuration is a path or `{path, namespace}`")),
    };
    let text = read_bounded(Path::new(path)).map_err(|e| catalog_error(format!("tool file {path}: {e}")))?;
    let doc: Value = prompty_core::parse_yaml(&text).map_err(|e| catalog_error(format!("tool file {path}: {e}")))?;
    let source = format!("file {path}");
    let default_ns = namespace.unwrap_or("default");
    let mut out = Vec::new();
    match doc {
        Value::Array(items) => {
            for (i, item) in items.into_iter().enumerate() {
                out.push(file_tool(default_ns, None, item, &source, &format!("[{i}]"))?);
            }
        }
        Value::Object(map) if !map.is_empty() && map.values().all(Value::is_array) => {
            for (ns, items) in map {
                let Value::Array(items) = items else { continue };
                for (i, item) in items.into_iter().enumerate() {
                    out.push(file_tool(&ns, None, item, &source, &format!("{ns}[{i}]"))?);
                }
            }
        }
        Value::Object(map) if map.values().all(Value::is_object) => {
            for (name, def) in map {
                out.push(file_tool(default_ns, Some(name.clone()), def, &source, &name)?);
            }
        }
        _ => {
            return Err(catalog_error(format!(
                "tool file {path}: expected a list of tools, `{{namespace: [tools]}}` or `{{name: definition}}`"
            )))
        }
    }
    Ok(out)
}

/// A file's text, refused beyond [`MAX_TOOL_FILE_BYTES`].
fn read_bounded(path: &Path) -> std::result::Result<String, String> {
    crate::text::read_file(path, MAX_TOOL_FILE_BYTES).map_err(|e| e.to_string())
}

fn file_tool(ns: &str, name: Option<String>, def: Value, source: &str, at: &str) -> Result<CatalogEntry> {
    let here = |m: &str| catalog_error(format!("{source}: {at}: {m}"));
    let Value::Object(mut def) = def else { return Err(here("a tool is a mapping")) };
    let name = match name {
        Some(n) => n,
        None => match def.remove("name") {
            Some(Value::String(n)) if !n.is_empty() => n,
            _ => return Err(here("`name` (a non-empty string) is missing")),
        },
    };
    let description = match def.remove("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d),
        Some(_) => return Err(here("`description` must be a string")),
    };
    let parameters = parameters_schema(def.remove("parameters")).map_err(|m| here(&format!("parameters: {m}")))?;
    let mut entry = CatalogEntry::new(ns, name.clone(), parameters).with_kind("file").with_source(source);
    entry.description = description;
    if let Some(f) = crate::get_tool(&name) {
        entry = entry.with_shared_function(f);
    }
    Ok(entry)
}

/// A JSON Schema object from a file's `parameters`: a schema as it is, or prompty properties.
fn parameters_schema(value: Option<Value>) -> std::result::Result<Value, String> {
    let props: Vec<Property> = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(m)) if m.contains_key("type") || m.contains_key("properties") => {
            return Ok(Value::Object(m))
        }
        Some(Value::Object(m)) => named_properties(m)?,
        Some(v @ Value::Array(_)) => serde_json::from_value(v).map_err(|e| e.to_string())?,
        Some(_) => return Err("expected a JSON Schema object or a list of properties".into()),
    };
    crate::properties_schema(&props, false).map_err(|e| e.to_string())
}

fn named_properties(map: Map<String, Value>) -> std::result::Result<Vec<Property>, String> {
    map.into_iter()
        .map(|(name, mut v)| {
            if let Value::Object(o) = &mut v {
                o.insert("name".into(), Value::String(name));
            }
            serde_json::from_value(v).map_err(|e| e.to_string())
        })
        .collect()
}
