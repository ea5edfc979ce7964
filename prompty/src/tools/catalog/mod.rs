//! The tool catalog: one place where every tool a model may call has a namespaced name,
//! `namespace::tool` — `#[tool]` fns, MCP servers' tools, OpenAPI operations, tools from files.
//!
//! - **Identity.** An entry is identified by `(namespace, name, fingerprint)`, the fingerprint
//!   being the SHA-256 of its parameter schema as canonical JSON. The same name with another
//!   schema is an *overload*; a second entry with the same identity is an error naming both
//!   sources. The same name in two namespaces is always allowed. A namespace may not contain `:`
//!   (so `namespace::tool` always splits at its first `::`).
//! - **Resolution** of a model's call ([`ToolCatalog::resolve`]): the candidates are the entries
//!   the call's name denotes (a wire name, `ns::name`, or a bare name in any namespace), within the
//!   allowed namespaces. One candidate is the answer; among several, the one whose parameter schema
//!   alone accepts the arguments (the JSON Schema keywords tool schemas use are checked; `pattern`
//!   and `format` are not); otherwise the one whose properties share
//!   the most keys with the arguments, ties going to the first registered.
//! - **Loaders** fill it ([`ToolLoader`], registered by name: `file` built in, `mcp` and `openapi`
//!   with their features, yours with [`register_tool_loader`] or `#[prompty::loader("name")]`).
//!   [`ToolCatalog::refresh`] re-runs every loader, rebuilds the index and rechecks duplicates (a
//!   failed refresh keeps the previous index), then runs the enrichments.
//! - **Enrichments** ([`ToolCatalog::register_enrichment`]) compute artifacts from the entries
//!   (embeddings of descriptions, a search index, ...) in dependency order after every refresh;
//!   [`ToolCatalog::artifacts`] reads them.
//! - **Wire names** ([`wire_name`]): `ns::tool` is encoded reversibly into the provider-safe
//!   `^[a-zA-Z0-9_-]{1,64}$`.
//!
//! - **Lifecycle.** [`ToolCatalog::sources`] lists the sources (id, loader, whether a prompt
//!   declared it, entry count, whether its server runs). A source leaves the catalog when it is
//!   removed ([`ToolCatalog::remove_source_async`], [`ToolCatalog::remove_declared_sources_async`]),
//!   when the catalog is shut down ([`ToolCatalog::shutdown_async`]: every source, and it returns
//!   once their servers have ended), or, for the sources prompts declared, when more than
//!   [`MAX_DECLARED_SOURCES`] (64) are loaded (the oldest goes). Each way releases it through its
//!   loader ([`ToolLoader::release`]): an MCP server's session ends (process exited, HTTP session
//!   deleted). Independently, an MCP server unused for its idle timeout (300 s by default,
//!   `idleTimeout` in the declaration) is stopped while its entries stay, and starts again on its
//!   next use under the same names.
//!
//! [`ToolCatalog::global`] is the process-wide catalog (it starts with every `#[tool]` fn, in its
//! `namespace`); [`ToolCatalog::new`] makes an independent one. Both are `Send + Sync`: reads
//! take a snapshot and never wait for a loader.
//!
//! ```
//! use prompty::catalog::{CatalogEntry, ToolCatalog};
//! use prompty::ToolCall;
//! use serde_json::json;
//!
//! let catalog = ToolCatalog::new();
//! let by_city = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
//! let by_coords = json!({"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
//!                        "required": ["lat", "lon"]});
//! catalog.register(CatalogEntry::new("weather", "forecast", by_city).with_source("by city"))?;
//! catalog.register(CatalogEntry::new("weather", "forecast", by_coords).with_source("by coordinates"))?;
//!
//! let call = ToolCall::new("1", "weather__forecast", r#"{"lat": 48.8, "lon": 2.3}"#);
//! assert_eq!(catalog.resolve(&call, None)?.source, "by coordinates");
//! # Ok::<(), prompty::Error>(())
//! ```

pub(crate) mod dispatch;
mod enrich;
mod lifecycle;
mod loaders;
mod resolve;
mod schema_check;

pub use super::entry::CatalogEntry;
pub use super::wire::{is_wire_safe, parse_wire_name, wire_name, MAX_WIRE_NAME};
pub use dispatch::resolve_call;
pub use enrich::Artifacts;
pub use lifecycle::SourceInfo;
#[doc(hidden)]
pub use loaders::{__make_loader, ToolLoaderRegistration};
pub use loaders::{get_tool_loader, register_tool_loader, FileLoader, ToolLoader, MAX_TOOL_FILE_BYTES};

use crate::{Error, Result, ToolCall};
use enrich::Enrichment;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock};

/// How many sources prompts declared (MCP servers, OpenAPI documents) a catalog keeps; loading one
/// more drops the oldest, and releases it ([`ToolLoader::release`]: its MCP server's session ends).
///
/// ```
/// assert_eq!(prompty::catalog::MAX_DECLARED_SOURCES, 64);
/// ```
pub const MAX_DECLARED_SOURCES: usize = 64;

/// A tool catalog. See the [module documentation](self).
///
/// ```
/// let catalog = prompty::catalog::ToolCatalog::new();
/// assert!(catalog.is_empty());
/// ```
pub struct ToolCatalog {
    index: RwLock<Arc<Index>>,
    state: Mutex<State>,
    /// Serializes loads and refreshes (never held by readers).
    loading: tokio::sync::Mutex<()>,
    enrichments: Mutex<Vec<Enrichment>>,
    artifacts: RwLock<Arc<Artifacts>>,
}

#[derive(Default)]
struct State {
    /// The next registration number (the order ties are broken by).
    next: u64,
    /// Entries registered directly, with their number.
    manual: Vec<(u64, Arc<CatalogEntry>)>,
    sources: Vec<Source>,
}

struct Source {
    id: String,
    /// The registered loader's name, or the kind of the declaration (`mcp`, `openapi`).
    loader_name: Option<String>,
    seq: u64,
    loader: Arc<dyn ToolLoader>,
    config: Value,
    entries: Vec<Arc<CatalogEntry>>,
    /// A source a prompt declared (its MCP server, its OpenAPI document), not the host: its
    /// prompts resolve within it, so an entry that repeats another source's is not an error;
    /// the first one registered keeps the name in the index.
    declared: bool,
}

/// What readers see: the entries in registration order and lookups by name.
#[derive(Default)]
pub(crate) struct Index {
    pub(crate) entries: Vec<Arc<CatalogEntry>>,
    /// `ns::name` → positions in `entries` (overloads, first registered first).
    by_name: HashMap<String, Vec<usize>>,
    /// bare name → positions.
    by_bare: HashMap<String, Vec<usize>>,
    /// wire name → (namespace, name).
    by_wire: HashMap<String, (String, String)>,
}

impl Index {
    /// The index of `entries` (in registration order), or every duplicate found.
    fn build(all: Vec<(Arc<CatalogEntry>, bool)>) -> Result<Index> {
        let mut index = Index::default();
        let mut identities: HashMap<(String, String), usize> = HashMap::new();
        let mut problems = Vec::new();
        let mut entries = Vec::with_capacity(all.len());
        for (e, declared) in all {
            let i = entries.len();
            if e.namespace.is_empty() || e.name.is_empty() {
                problems.push(format!(
                    "an entry from {} has an empty {}: every tool needs a namespace and a name",
                    source_name(&e),
                    if e.namespace.is_empty() { "namespace" } else { "name" }
                ));
                continue;
            }
            if e.namespace.contains(':') {
                problems.push(format!(
                    "the namespace {:?} of an entry from {} contains ':' (the catalog writes `namespace::tool`)",
                    e.namespace,
                    source_name(&e)
                ));
                continue;
            }
            let qualified = e.qualified_name();
            match identities.entry((qualified.clone(), e.fingerprint())) {
                std::collections::hash_map::Entry::Occupied(first) => {
                    let (first, first_declared): &(Arc<CatalogEntry>, bool) = &entries[*first.get()];
                    if declared || *first_declared {
                        continue;
                    }
                    problems.push(format!(
                        "duplicate tool {qualified} (same parameter schema, fingerprint {}): from {} and from {}",
                        &e.fingerprint()[..12],
                        source_name(first),
                        source_name(&e)
                    ));
                    continue;
                }
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(i);
                }
            }
            let wire = e.wire_name();
            if let Some((ns, name)) = index.by_wire.get(&wire) {
                if (ns, name) != (&e.namespace, &e.name) {
                    problems.push(format!("tools {ns}::{name} and {qualified} have the same wire name {wire}"));
                    continue;
                }
            }
            index.by_wire.insert(wire, (e.namespace.clone(), e.name.clone()));
            index.by_name.entry(qualified).or_default().push(i);
            index.by_bare.entry(e.name.clone()).or_default().push(i);
            entries.push((e, declared));
        }
        if !problems.is_empty() {
            return Err(Error::Catalog { message: problems.join("; ") });
        }
        index.entries = entries.into_iter().map(|(e, _)| e).collect();
        Ok(index)
    }
}

fn source_name(e: &CatalogEntry) -> &str {
    if e.source.is_empty() {
        "an unnamed source"
    } else {
        &e.source
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Default for ToolCatalog {
    fn default() -> Self {
        ToolCatalog::new()
    }
}

static GLOBAL: LazyLock<ToolCatalog> = LazyLock::new(|| {
    let catalog = ToolCatalog::new();
    for entry in dispatch::registered_functions() {
        if let Err(e) = catalog.register(entry) {
            tracing::warn!(error = %e, "a #[tool] fn was left out of the global tool catalog");
        }
    }
    catalog
});

impl ToolCatalog {
    /// An empty catalog.
    ///
    /// ```
    /// assert_eq!(prompty::catalog::ToolCatalog::new().len(), 0);
    /// ```
    pub fn new() -> Self {
        ToolCatalog {
            index: RwLock::new(Arc::new(Index::default())),
            state: Mutex::new(State::default()),
            loading: tokio::sync::Mutex::new(()),
            enrichments: Mutex::new(Vec::new()),
            artifacts: RwLock::new(Arc::new(Artifacts::default())),
        }
    }

    /// The process-wide catalog. It starts with every `#[prompty::tool]` fn (namespace: the fn's
    /// `#[tool(namespace = "...")]`, else its crate's name); the agent loop loads the MCP servers
    /// and OpenAPI documents prompts declare into it.
    ///
    /// ```
    /// let catalog = prompty::catalog::ToolCatalog::global();
    /// assert!(catalog.entries().iter().all(|e| !e.namespace.is_empty()));
    /// ```
    pub fn global() -> &'static ToolCatalog {
        &GLOBAL
    }

    pub(crate) fn snapshot(&self) -> Arc<Index> {
        self.index.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Rebuilds the index from `state`; on duplicates the index stays as it was.
    fn reindex(&self, state: &State) -> Result<()> {
        let mut all: Vec<(u64, usize, Arc<CatalogEntry>, bool)> =
            state.manual.iter().map(|(seq, e)| (*seq, 0, e.clone(), false)).collect();
        for s in &state.sources {
            all.extend(s.entries.iter().enumerate().map(|(i, e)| (s.seq, i, e.clone(), s.declared)));
        }
        all.sort_by_key(|(seq, i, _, _)| (*seq, *i));
        let index = Index::build(all.into_iter().map(|(_, _, e, declared)| (e, declared)).collect())?;
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(index);
        Ok(())
    }

    /// Adds one entry. A second entry with the same namespace, name and parameter schema is an
    /// error naming both sources. Each call rebuilds the index (linear in the entries): to add
    /// many entries at once, return them from a [`ToolLoader`] ([`Self::add_source_with_async`]).
    ///
    /// ```
    /// use prompty::catalog::{CatalogEntry, ToolCatalog};
    /// let catalog = ToolCatalog::new();
    /// let schema = serde_json::json!({"type": "object"});
    /// catalog.register(CatalogEntry::new("ns", "t", schema.clone()).with_source("a.yaml"))?;
    /// let err = catalog.register(CatalogEntry::new("ns", "t", schema).with_source("b.yaml")).unwrap_err();
    /// assert!(err.to_string().contains("from a.yaml and from b.yaml"));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn register(&self, entry: CatalogEntry) -> Result<()> {
        let mut state = lock(&self.state);
        let seq = state.next;
        state.next += 1;
        state.manual.push((seq, entry.sealed()));
        if let Err(e) = self.reindex(&state) {
            state.manual.pop();
            return Err(e);
        }
        drop(state);
        self.enrich();
        Ok(())
    }

    /// Runs the loader registered under `loader` with `config` and adds what it loaded (replacing
    /// what the same loader and configuration loaded before). Returns how many entries it added.
    /// Nothing is added when the loader fails or an entry is a duplicate.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("prompty-doc-add-source");
    /// std::fs::create_dir_all(&dir)?;
    /// std::fs::write(dir.join("t.json"), r#"[{"name": "now", "description": "The time"}]"#)?;
    /// let catalog = prompty::catalog::ToolCatalog::new();
    /// let n = catalog.add_source("file", serde_json::json!({"path": dir.join("t.json"), "namespace": "clock"}))?;
    /// assert_eq!((n, catalog.entries()[0].qualified_name()), (1, "clock::now".to_string()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_source(&self, loader: &str, config: Value) -> Result<usize> {
        crate::blocking::block_on(self.add_source_async(loader, config))?
    }

    /// Async form of [`Self::add_source`].
    pub async fn add_source_async(&self, loader: &str, config: Value) -> Result<usize> {
        let id = format!("{loader} {}", crate::tools::entry::canonical_json(&config));
        self.load_source(id, Some(loader.to_owned()), get_tool_loader(loader)?, config, true, false).await
    }

    /// Runs `loader` (an instance rather than a registered name) with `config` and adds what it
    /// loaded under the source id `id` (replacing what that source loaded before).
    ///
    /// ```
    /// use prompty::catalog::{FileLoader, ToolCatalog};
    /// let dir = std::env::temp_dir().join("prompty-doc-add-with");
    /// std::fs::create_dir_all(&dir)?;
    /// std::fs::write(dir.join("t.yaml"), "ops:\n  - name: ping\n")?;
    /// let catalog = ToolCatalog::new();
    /// let rt = tokio::runtime::Runtime::new()?;
    /// rt.block_on(catalog.add_source_with_async("ops", std::sync::Arc::new(FileLoader),
    ///     serde_json::json!({"path": dir.join("t.yaml")})))?;
    /// assert_eq!(catalog.get("ops::ping").len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn add_source_with_async(
        &self,
        id: impl Into<String>,
        loader: Arc<dyn ToolLoader>,
        config: Value,
    ) -> Result<usize> {
        self.load_source(id.into(), None, loader, config, true, false).await
    }

    /// Loads a source a prompt declared unless one of that id is there already (checked under
    /// the load lock, so concurrent first uses load it once).
    pub(crate) async fn ensure_source_async(
        &self,
        kind: &str,
        id: String,
        loader: Arc<dyn ToolLoader>,
        config: Value,
    ) -> Result<()> {
        self.load_source(id, Some(kind.to_owned()), loader, config, false, true).await.map(|_| ())
    }

    async fn load_source(
        &self,
        id: String,
        loader_name: Option<String>,
        loader: Arc<dyn ToolLoader>,
        config: Value,
        replace: bool,
        declared: bool,
    ) -> Result<usize> {
        let _guard = self.loading.lock().await;
        if !replace && self.has_source(&id) {
            return Ok(0);
        }
        let entries: Vec<Arc<CatalogEntry>> =
            loader.load(&config).await?.into_iter().map(CatalogEntry::sealed).collect();
        let count = entries.len();
        let released = {
            let mut state = lock(&self.state);
            let old = state.sources.iter().position(|s| s.id == id).map(|i| state.sources.remove(i));
            let seq = old.as_ref().map(|s| s.seq).unwrap_or_else(|| {
                state.next += 1;
                state.next - 1
            });
            // Prompts' own sources are bounded: the oldest goes (its MCP session ends; a prompt
            // that still uses it loads it again).
            let mut evicted = None;
            if declared && state.sources.iter().filter(|s| s.declared).count() >= MAX_DECLARED_SOURCES {
                let oldest = state.sources.iter().enumerate().filter(|(_, s)| s.declared).min_by_key(|(_, s)| s.seq);
                evicted = oldest.map(|(i, _)| i).map(|i| state.sources.remove(i));
            }
            let replaced_other = old.as_ref().is_some_and(|o| !Arc::ptr_eq(&o.loader, &loader) || o.config != config);
            state.sources.push(Source { id: id.clone(), loader_name, seq, loader, config, entries, declared });
            if let Err(e) = self.reindex(&state) {
                state.sources.pop();
                state.sources.extend(old);
                state.sources.extend(evicted);
                return Err(e);
            }
            // What left the catalog: the evicted source, and a replaced one unless the same loader
            // and configuration loaded again (then its server is the one just listed).
            evicted.into_iter().chain(old.filter(|_| replaced_other)).collect::<Vec<_>>()
        };
        self.enrich();
        // Released in the background: the load does not wait for an evicted server to stop.
        for source in released {
            crate::blocking::spawn(async move { source.release().await });
        }
        Ok(count)
    }

    /// Whether a source of that id has been added.
    pub(crate) fn has_source(&self, id: &str) -> bool {
        lock(&self.state).sources.iter().any(|s| s.id == id)
    }

    /// The entries a source loaded (empty when there is no such source).
    pub(crate) fn source_entries(&self, id: &str) -> Vec<Arc<CatalogEntry>> {
        lock(&self.state).sources.iter().find(|s| s.id == id).map(|s| s.entries.clone()).unwrap_or_default()
    }

    /// Re-runs every loader, rebuilds the index and rechecks duplicates, then runs the
    /// enrichments. When a loader fails or the new entries clash, the catalog keeps what it had
    /// and the error says why.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("prompty-doc-refresh");
    /// std::fs::create_dir_all(&dir)?;
    /// let file = dir.join("t.yaml");
    /// std::fs::write(&file, "- name: a\n")?;
    /// let catalog = prompty::catalog::ToolCatalog::new();
    /// catalog.add_source("file", serde_json::json!({"path": file}))?;
    /// std::fs::write(&file, "- name: a\n- name: b\n")?;
    /// catalog.refresh()?;
    /// assert_eq!(catalog.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refresh(&self) -> Result<()> {
        crate::blocking::block_on(self.refresh_async())?
    }

    /// Async form of [`Self::refresh`].
    pub async fn refresh_async(&self) -> Result<()> {
        self.reload(|_| true).await
    }

    /// Reloads the source `id` if its loader says it is stale (its MCP server's tool list
    /// changed).
    pub(crate) async fn refresh_stale_source_async(&self, id: &str) -> Result<()> {
        self.reload(|s| s.id == id && s.loader.is_stale(&s.config)).await
    }

    /// The entries of the source `id`, when it is loaded and not stale.
    pub(crate) fn fresh_source_entries(&self, id: &str) -> Option<Vec<Arc<CatalogEntry>>> {
        let state = lock(&self.state);
        let source = state.sources.iter().find(|s| s.id == id)?;
        (!source.loader.is_stale(&source.config)).then(|| source.entries.clone())
    }

    async fn reload(&self, which: impl Fn(&Source) -> bool) -> Result<()> {
        let _guard = self.loading.lock().await;
        let todo: Vec<(String, Arc<dyn ToolLoader>, Value)> = lock(&self.state)
            .sources
            .iter()
            .filter(|s| which(s))
            .map(|s| (s.id.clone(), s.loader.clone(), s.config.clone()))
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        let mut fresh = HashMap::new();
        for (id, loader, config) in todo {
            let entries = loader.load(&config).await.map_err(|e| Error::Catalog {
                message: format!("refreshing source {id:?} failed, the catalog is unchanged: {e}"),
            })?;
            fresh.insert(id, entries.into_iter().map(CatalogEntry::sealed).collect::<Vec<_>>());
        }
        {
            let mut state = lock(&self.state);
            let mut previous = Vec::new();
            for s in &mut state.sources {
                if let Some(entries) = fresh.remove(&s.id) {
                    previous.push((s.id.clone(), std::mem::replace(&mut s.entries, entries)));
                }
            }
            if let Err(e) = self.reindex(&state) {
                for (id, entries) in previous {
                    if let Some(s) = state.sources.iter_mut().find(|s| s.id == id) {
                        s.entries = entries;
                    }
                }
                return Err(e);
            }
        }
        self.enrich();
        Ok(())
    }

    /// Every entry, in registration order.
    ///
    /// ```
    /// assert!(prompty::catalog::ToolCatalog::new().entries().is_empty());
    /// ```
    pub fn entries(&self) -> Vec<Arc<CatalogEntry>> {
        self.snapshot().entries.clone()
    }

    /// How many entries there are.
    ///
    /// ```
    /// assert_eq!(prompty::catalog::ToolCatalog::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.snapshot().entries.len()
    }

    /// Whether there are none.
    ///
    /// ```
    /// assert!(prompty::catalog::ToolCatalog::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries (overloads) named `ns::name`, first registered first.
    ///
    /// ```
    /// use prompty::catalog::{CatalogEntry, ToolCatalog};
    /// let catalog = ToolCatalog::new();
    /// catalog.register(CatalogEntry::new("a", "t", serde_json::json!({"type": "object"})))?;
    /// assert_eq!(catalog.get("a::t").len(), 1);
    /// assert!(catalog.get("b::t").is_empty());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn get(&self, qualified: &str) -> Vec<Arc<CatalogEntry>> {
        let index = self.snapshot();
        index
            .by_name
            .get(qualified)
            .map(|is| is.iter().map(|&i| index.entries[i].clone()).collect())
            .unwrap_or_default()
    }

    /// The namespaces, sorted.
    ///
    /// ```
    /// use prompty::catalog::{CatalogEntry, ToolCatalog};
    /// let catalog = ToolCatalog::new();
    /// catalog.register(CatalogEntry::new("b", "t", serde_json::json!({})))?;
    /// catalog.register(CatalogEntry::new("a", "t", serde_json::json!({})))?;
    /// assert_eq!(catalog.namespaces(), ["a", "b"]);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn namespaces(&self) -> Vec<String> {
        let mut out: Vec<String> = self.snapshot().entries.iter().map(|e| e.namespace.clone()).collect();
        out.sort();
        out.dedup();
        out
    }

    /// `(namespace, name)` of a wire name: the catalog's own names (also those shortened with a
    /// hash), else [`parse_wire_name`].
    ///
    /// ```
    /// use prompty::catalog::{CatalogEntry, ToolCatalog};
    /// let catalog = ToolCatalog::new();
    /// let long = "t".repeat(80);
    /// let e = CatalogEntry::new("ns", long.as_str(), serde_json::json!({}));
    /// let wire = e.wire_name();
    /// catalog.register(e)?;
    /// assert_eq!(catalog.decode(&wire), Some(("ns".to_string(), long)));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn decode(&self, wire: &str) -> Option<(String, String)> {
        if let Some(found) = self.snapshot().by_wire.get(wire) {
            return Some(found.clone());
        }
        parse_wire_name(wire)
    }

    /// The entry a model's call runs: see the [module documentation](self). `namespaces`, when
    /// given, limits the candidates to those namespaces.
    ///
    /// ```
    /// use prompty::catalog::{CatalogEntry, ToolCatalog};
    /// use prompty::ToolCall;
    /// let catalog = ToolCatalog::new();
    /// catalog.register(CatalogEntry::new("a", "t", serde_json::json!({"type": "object"})))?;
    /// catalog.register(CatalogEntry::new("b", "t", serde_json::json!({"type": "object"})))?;
    /// let call = ToolCall::new("1", "t", "{}");
    /// assert_eq!(catalog.resolve(&call, Some(&["b"]))?.namespace, "b");
    /// assert!(catalog.resolve(&call, Some(&["c"])).is_err());
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn resolve(&self, call: &ToolCall, namespaces: Option<&[&str]>) -> Result<Arc<CatalogEntry>> {
        resolve::resolve(self, call, namespaces)
    }

    /// Registers an enrichment: `compute` receives the entries and the artifacts computed so
    /// far (those of `depends_on` among them) and returns this enrichment's artifact, stored
    /// under `name`. Enrichments run in dependency order after every change of the entries
    /// (and once now); one that fails leaves its previous artifact and logs why. An unknown
    /// dependency or a cycle is an error.
    ///
    /// ```
    /// use prompty::catalog::{CatalogEntry, ToolCatalog};
    /// use serde_json::json;
    /// let catalog = ToolCatalog::new();
    /// catalog.register_enrichment("names", &[], |entries, _| {
    ///     Ok(json!(entries.iter().map(|e| e.qualified_name()).collect::<Vec<_>>()))
    /// })?;
    /// catalog.register_enrichment("count", &["names"], |_, artifacts| {
    ///     Ok(json!(artifacts.get("names").and_then(|n| n.as_array()).map_or(0, |a| a.len())))
    /// })?;
    /// catalog.register(CatalogEntry::new("a", "t", json!({})))?;
    /// assert_eq!(catalog.artifacts().get("count"), Some(&json!(1)));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn register_enrichment(
        &self,
        name: impl Into<String>,
        depends_on: &[&str],
        compute: impl Fn(&[Arc<CatalogEntry>], &Artifacts) -> Result<Value> + Send + Sync + 'static,
    ) -> Result<()> {
        {
            let mut list = lock(&self.enrichments);
            enrich::add(&mut list, name.into(), depends_on, Arc::new(compute))?;
        }
        self.enrich();
        Ok(())
    }

    /// The artifacts of the enrichments, as of the last change of the entries.
    ///
    /// ```
    /// assert!(prompty::catalog::ToolCatalog::new().artifacts().get("embeddings").is_none());
    /// ```
    pub fn artifacts(&self) -> Arc<Artifacts> {
        self.artifacts.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Runs the enrichments over the current entries.
    fn enrich(&self) {
        let list = lock(&self.enrichments).clone();
        if list.is_empty() {
            return;
        }
        let entries = self.entries();
        let previous = self.artifacts();
        let artifacts = enrich::run(&list, &entries, &previous);
        *self.artifacts.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(artifacts);
    }
}

impl std::fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.entries().iter().map(|e| e.qualified_name()).collect();
        f.debug_struct("ToolCatalog").field("entries", &names).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BoxFuture;
    use serde_json::json;

    struct One(String);

    impl ToolLoader for One {
        fn load<'a>(&'a self, _: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
            Box::pin(async move { Ok(vec![CatalogEntry::new(self.0.clone(), "t", json!({"type": "object"}))]) })
        }
    }

    #[test]
    fn declared_sources_are_bounded_and_the_oldest_goes_first() {
        let c = ToolCatalog::new();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for i in 0..MAX_DECLARED_SOURCES + 3 {
            let id = format!("s{i}");
            rt.block_on(c.ensure_source_async("test", id, Arc::new(One(format!("ns{i}"))), Value::Null)).unwrap();
        }
        assert_eq!(c.len(), MAX_DECLARED_SOURCES);
        assert!(!c.has_source("s0") && !c.has_source("s2") && c.has_source("s3"));
        // A host's own sources are not counted nor evicted.
        rt.block_on(c.add_source_with_async("host", Arc::new(One("host".into())), Value::Null)).unwrap();
        rt.block_on(c.ensure_source_async("test", "again".into(), Arc::new(One("again".into())), Value::Null)).unwrap();
        assert!(c.has_source("host") && c.has_source("again") && !c.has_source("s3"));
    }

    /// A loader that counts its releases.
    struct Counted(String, Arc<std::sync::atomic::AtomicUsize>);

    impl ToolLoader for Counted {
        fn load<'a>(&'a self, _: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
            Box::pin(async move {
                Ok(vec![CatalogEntry::new(self.0.clone(), "t", json!({"type": "object"})).with_source(self.0.clone())])
            })
        }

        fn release<'a>(&'a self, _: &'a Value) -> BoxFuture<'a, ()> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async {})
        }
    }

    #[test]
    fn sources_leave_through_release_whether_evicted_removed_or_shut_down() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let c = ToolCatalog::new();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let released = Arc::new(AtomicUsize::new(0));
        let counted = |ns: &str| Arc::new(Counted(ns.to_owned(), Arc::clone(&released)));
        for i in 0..MAX_DECLARED_SOURCES + 1 {
            rt.block_on(c.ensure_source_async("mcp", format!("s{i}"), counted(&format!("ns{i}")), Value::Null))
                .unwrap();
        }
        // The evicted one is released in the background.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while released.load(Ordering::SeqCst) < 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(released.load(Ordering::SeqCst), 1);
        rt.block_on(c.add_source_with_async("host", counted("host"), Value::Null)).unwrap();

        let listed = c.sources();
        assert_eq!(listed.len(), MAX_DECLARED_SOURCES + 1);
        assert_eq!(listed[0].id, "s1", "oldest first");
        assert_eq!(
            listed[0],
            SourceInfo {
                id: "s1".into(),
                loader: Some("mcp".into()),
                label: Some("ns1".into()),
                declared: true,
                entries: 1,
                running: None,
            }
        );
        let host = listed.last().unwrap();
        assert_eq!((host.id.as_str(), host.loader.as_deref(), host.declared), ("host", None, false));

        assert!(rt.block_on(c.remove_source_async("s5")).unwrap());
        assert!(!rt.block_on(c.remove_source_async("s5")).unwrap());
        assert_eq!(released.load(Ordering::SeqCst), 2);
        assert!(c.get("ns5::t").is_empty() && c.get("ns6::t").len() == 1);

        assert_eq!(rt.block_on(c.remove_declared_sources_async()).unwrap(), MAX_DECLARED_SOURCES - 1);
        assert_eq!(released.load(Ordering::SeqCst), MAX_DECLARED_SOURCES + 1);
        assert_eq!(c.namespaces(), ["host"]);
        c.register(CatalogEntry::new("manual", "t", json!({"type": "object"}))).unwrap();
        assert_eq!(rt.block_on(c.shutdown_async()).unwrap(), 1);
        assert_eq!(released.load(Ordering::SeqCst), MAX_DECLARED_SOURCES + 2);
        assert_eq!(c.namespaces(), ["manual"], "entries registered by hand stay");
    }

    #[test]
    fn a_source_loaded_again_with_the_same_loader_is_not_released() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let c = ToolCatalog::new();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let released = Arc::new(AtomicUsize::new(0));
        let loader: Arc<dyn ToolLoader> = Arc::new(Counted("a".into(), Arc::clone(&released)));
        rt.block_on(c.add_source_with_async("a", Arc::clone(&loader), Value::Null)).unwrap();
        rt.block_on(c.add_source_with_async("a", Arc::clone(&loader), Value::Null)).unwrap();
        assert_eq!(released.load(Ordering::SeqCst), 0);
        // Another loader under the same id: the first one is released.
        rt.block_on(c.add_source_with_async("a", Arc::new(Counted("a".into(), Arc::clone(&released))), Value::Null))
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while released.load(Ordering::SeqCst) < 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(released.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn declared_sources_may_repeat_each_other_but_the_host_may_not() {
        let c = ToolCatalog::new();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(c.ensure_source_async("test", "a".into(), Arc::new(One("same".into())), Value::Null)).unwrap();
        rt.block_on(c.ensure_source_async("test", "b".into(), Arc::new(One("same".into())), Value::Null)).unwrap();
        assert_eq!(c.source_entries("b").len(), 1);
        assert_eq!(c.get("same::t").len(), 1, "the first keeps the name in the index");
        let host = CatalogEntry::new("dup", "t", json!({"type": "object"}));
        c.register(host.clone()).unwrap();
        assert!(c.register(host).is_err());
    }
}
