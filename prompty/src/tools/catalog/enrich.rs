//! Enrichments: artifacts computed from a catalog's entries (embeddings of descriptions, a search
//! index, ...), run in dependency order after every change of the entries.

use crate::tools::entry::CatalogEntry;
use crate::{Error, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The outputs of a catalog's enrichments, by enrichment name.
///
/// ```
/// let artifacts = prompty::catalog::ToolCatalog::new().artifacts();
/// assert!(artifacts.names().next().is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Artifacts {
    map: BTreeMap<String, Value>,
}

impl Artifacts {
    /// The artifact of the enrichment `name`.
    ///
    /// ```
    /// assert!(prompty::catalog::Artifacts::default().get("x").is_none());
    /// ```
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }

    /// The names of the artifacts there are, sorted.
    ///
    /// ```
    /// assert_eq!(prompty::catalog::Artifacts::default().names().count(), 0);
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}

type Compute = dyn Fn(&[Arc<CatalogEntry>], &Artifacts) -> Result<Value> + Send + Sync;

/// A registered enrichment.
#[derive(Clone)]
pub(super) struct Enrichment {
    name: String,
    depends_on: Vec<String>,
    compute: Arc<Compute>,
}

/// Adds an enrichment (replacing one of the same name) and keeps `list` in dependency order: an
/// unknown dependency or a cycle is an error and leaves `list` as it was.
pub(super) fn add(list: &mut Vec<Enrichment>, name: String, depends_on: &[&str], compute: Arc<Compute>) -> Result<()> {
    let mut next: Vec<Enrichment> = list.iter().filter(|e| e.name != name).cloned().collect();
    next.push(Enrichment { name, depends_on: depends_on.iter().map(|d| (*d).to_owned()).collect(), compute });
    *list = order(next)?;
    Ok(())
}

/// The enrichments sorted so that each comes after what it depends on (stable otherwise).
fn order(mut pending: Vec<Enrichment>) -> Result<Vec<Enrichment>> {
    for e in &pending {
        if let Some(d) = e.depends_on.iter().find(|d| !pending.iter().any(|o| &o.name == *d)) {
            return Err(Error::Catalog {
                message: format!("enrichment '{}' depends on '{d}', which is not registered", e.name),
            });
        }
    }
    let mut done: Vec<Enrichment> = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let ready = pending.iter().position(|e| e.depends_on.iter().all(|d| done.iter().any(|o| &o.name == d)));
        match ready {
            Some(i) => done.push(pending.remove(i)),
            None => {
                let names: Vec<&str> = pending.iter().map(|e| e.name.as_str()).collect();
                return Err(Error::Catalog {
                    message: format!("enrichments depend on each other in a cycle: {}", names.join(", ")),
                });
            }
        }
    }
    Ok(done)
}

/// Runs every enrichment in order; one that fails (or panics) keeps its previous artifact.
pub(super) fn run(list: &[Enrichment], entries: &[Arc<CatalogEntry>], previous: &Artifacts) -> Artifacts {
    let mut out = Artifacts::default();
    for e in list {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (e.compute)(entries, &out)));
        match result {
            Ok(Ok(value)) => {
                out.map.insert(e.name.clone(), value);
            }
            Ok(Err(err)) => {
                tracing::warn!(enrichment = %e.name, error = %err, "a catalog enrichment failed; its previous artifact is kept");
                if let Some(old) = previous.get(&e.name) {
                    out.map.insert(e.name.clone(), old.clone());
                }
            }
            Err(_) => {
                tracing::warn!(enrichment = %e.name, "a catalog enrichment panicked; its previous artifact is kept");
                if let Some(old) = previous.get(&e.name) {
                    out.map.insert(e.name.clone(), old.clone());
                }
            }
        }
    }
    out
}
