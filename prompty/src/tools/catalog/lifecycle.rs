//! The lifecycle of a catalog's sources: which there are ([`ToolCatalog::sources`]), and their
//! removal — one source, the ones prompts declared, or all — which releases what their loaders
//! run ([`ToolLoader::release`](super::ToolLoader::release): an MCP server's session ends) and
//! waits until it has ended. Eviction past [`super::MAX_DECLARED_SOURCES`] releases through the
//! same `Source::release`.

use super::{lock, Source, ToolCatalog};
use crate::Result;

impl Source {
    pub(super) async fn release(&self) {
        self.loader.release(&self.config).await;
    }
}

/// One source of a catalog, as [`ToolCatalog::sources`] lists it.
///
/// ```
/// let catalog = prompty::catalog::ToolCatalog::new();
/// for s in catalog.sources() {
///     println!("{} ({:?}, declared: {}): {} entries, running: {:?}", s.id, s.loader, s.declared, s.entries, s.running);
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceInfo {
    /// Its id, for [`ToolCatalog::remove_source_async`]. A declared source's id is its kind, its
    /// namespace and a hash of what it reaches (no secret shows in it).
    pub id: String,
    /// The loader's registered name (`file`, `mcp`, ...) or the declaration's kind (`mcp`,
    /// `openapi`); `None` for a loader instance given to [`ToolCatalog::add_source_with_async`].
    pub loader: Option<String>,
    /// What its entries name as their source (`MCP server 'fs' (stdio `npx`)`), when it has entries.
    pub label: Option<String>,
    /// Whether a prompt declared it (the agent loop loaded it), rather than the host.
    pub declared: bool,
    /// How many entries it loaded.
    pub entries: usize,
    /// Whether its server runs now (an MCP server's session is open); `None` when its loader runs
    /// nothing ([`ToolLoader::is_running`](super::ToolLoader::is_running)).
    pub running: Option<bool>,
}

impl ToolCatalog {
    /// Every source in the catalog, oldest first: its id (for [`Self::remove_source_async`]),
    /// loader, origin, entry count and whether its server runs.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("prompty-doc-sources");
    /// std::fs::create_dir_all(&dir)?;
    /// std::fs::write(dir.join("t.yaml"), "- name: a\n")?;
    /// let catalog = prompty::catalog::ToolCatalog::new();
    /// catalog.add_source("file", serde_json::json!({"path": dir.join("t.yaml"), "namespace": "ops"}))?;
    /// let sources = catalog.sources();
    /// assert_eq!(sources.len(), 1);
    /// let s = &sources[0];
    /// assert_eq!((s.loader.as_deref(), s.declared, s.entries, s.running), (Some("file"), false, 1, None));
    /// assert!(s.label.as_deref().is_some_and(|l| l.ends_with("t.yaml")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sources(&self) -> Vec<SourceInfo> {
        let state = lock(&self.state);
        let mut sources: Vec<&Source> = state.sources.iter().collect();
        sources.sort_by_key(|s| s.seq);
        sources
            .into_iter()
            .map(|s| SourceInfo {
                id: s.id.clone(),
                loader: s.loader_name.clone(),
                label: s.entries.first().map(|e| e.source.clone()).filter(|l| !l.is_empty()),
                declared: s.declared,
                entries: s.entries.len(),
                running: s.loader.is_running(&s.config),
            })
            .collect()
    }

    /// Removes the source `id` (see [`Self::sources`]) and its entries, then releases it (an MCP
    /// server's session ends: its process exits, its HTTP session is closed) and waits until that
    /// is done. `false` when there is no such source. A prompt that declares it again loads it
    /// again.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("prompty-doc-remove-source");
    /// std::fs::create_dir_all(&dir)?;
    /// std::fs::write(dir.join("t.yaml"), "- name: a\n")?;
    /// let catalog = prompty::catalog::ToolCatalog::new();
    /// catalog.add_source("file", serde_json::json!({"path": dir.join("t.yaml")}))?;
    /// let id = catalog.sources()[0].id.clone();
    /// assert!(catalog.remove_source(&id)?);
    /// assert!(catalog.is_empty() && catalog.sources().is_empty());
    /// assert!(!catalog.remove_source(&id)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_source(&self, id: &str) -> Result<bool> {
        crate::blocking::block_on(self.remove_source_async(id))?
    }

    /// Async form of [`Self::remove_source`].
    pub async fn remove_source_async(&self, id: &str) -> Result<bool> {
        Ok(self.remove_where(|s| s.id == id).await? > 0)
    }

    /// Removes every source prompts declared (their MCP servers, OpenAPI documents), keeping the
    /// host's own sources and entries, and waits until they are released (see
    /// [`Self::remove_source`]). Returns how many were removed.
    ///
    /// ```
    /// let catalog = prompty::catalog::ToolCatalog::new();
    /// assert_eq!(catalog.remove_declared_sources()?, 0);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn remove_declared_sources(&self) -> Result<usize> {
        crate::blocking::block_on(self.remove_declared_sources_async())?
    }

    /// Async form of [`Self::remove_declared_sources`].
    pub async fn remove_declared_sources_async(&self) -> Result<usize> {
        self.remove_where(|s| s.declared).await
    }

    /// Removes every source (declared by prompts or added by the host; entries added with
    /// [`Self::register`] stay) and waits until every server they started has ended: stdio
    /// processes exited (their process groups included), HTTP sessions closed with `DELETE`. For
    /// a host about to exit, or to start afresh. Returns how many sources were removed; a prompt
    /// run afterwards loads its sources again.
    ///
    /// ```
    /// # async fn run() -> prompty::Result<()> {
    /// prompty::catalog::ToolCatalog::global().shutdown_async().await?;
    /// # Ok(()) }
    /// ```
    pub async fn shutdown_async(&self) -> Result<usize> {
        self.remove_where(|_| true).await
    }

    /// Sync form of [`Self::shutdown_async`].
    ///
    /// ```
    /// let catalog = prompty::catalog::ToolCatalog::new();
    /// assert_eq!(catalog.shutdown()?, 0);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn shutdown(&self) -> Result<usize> {
        crate::blocking::block_on(self.shutdown_async())?
    }

    /// Removes the sources `which` selects, then releases them all (concurrently) and waits.
    async fn remove_where(&self, which: impl Fn(&Source) -> bool) -> Result<usize> {
        let removed: Vec<Source> = {
            let _guard = self.loading.lock().await;
            let mut state = lock(&self.state);
            let (gone, kept): (Vec<Source>, Vec<Source>) =
                std::mem::take(&mut state.sources).into_iter().partition(&which);
            state.sources = kept;
            if gone.is_empty() {
                return Ok(0);
            }
            if let Err(e) = self.reindex(&state) {
                // Removing entries cannot make a duplicate; kept for safety all the same.
                state.sources.extend(gone);
                state.sources.sort_by_key(|s| s.seq);
                return Err(e);
            }
            gone
        };
        self.enrich();
        let count = removed.len();
        futures_util::future::join_all(removed.iter().map(Source::release)).await;
        Ok(count)
    }
}
