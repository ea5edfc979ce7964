//! Which entry a model's call runs: candidates by name and namespace, then JSON Schema
//! validation of the arguments, then the largest overlap of argument keys, then registration
//! order.

use super::{Index, ToolCatalog};
use crate::tools::args::parse_arguments;
use crate::tools::entry::CatalogEntry;
use crate::{Error, Result, ToolCall};
use serde_json::Value;
use std::sync::Arc;

/// The positions of the entries `name` denotes: a wire name or `ns::name` names one qualified
/// name; a bare name denotes that name in every namespace.
fn candidates(catalog: &ToolCatalog, index: &Index, name: &str) -> Vec<usize> {
    if let Some(found) = index.by_name.get(name) {
        return found.clone();
    }
    if let Some((ns, tool)) = catalog.decode(name) {
        if let Some(found) = index.by_name.get(&format!("{ns}::{tool}")) {
            return found.clone();
        }
    }
    index.by_bare.get(name).cloned().unwrap_or_default()
}

/// How many of the argument keys are properties of the entry's schema.
fn overlap(entry: &CatalogEntry, args: &Value) -> usize {
    let (Some(args), Some(props)) = (args.as_object(), entry.parameters.get("properties").and_then(Value::as_object))
    else {
        return 0;
    };
    args.keys().filter(|k| props.contains_key(*k)).count()
}

pub(super) fn resolve(
    catalog: &ToolCatalog,
    call: &ToolCall,
    namespaces: Option<&[&str]>,
) -> Result<Arc<CatalogEntry>> {
    let index = catalog.snapshot();
    let found: Vec<Arc<CatalogEntry>> = candidates(catalog, &index, &call.name)
        .into_iter()
        .map(|i| Arc::clone(&index.entries[i]))
        .filter(|e| namespaces.is_none_or(|allowed| allowed.contains(&e.namespace.as_str())))
        .collect();
    pick(call, &found).ok_or_else(|| {
        let within = match namespaces {
            Some(ns) => format!(" within the namespaces [{}]", ns.join(", ")),
            None => String::new(),
        };
        Error::Catalog { message: format!("no tool named '{}'{within}", call.name) }
    })
}

/// The candidate (in registration order) a call runs: the only one; else the only one whose
/// schema accepts the arguments; else the largest key overlap, ties to the first. `None` when
/// there is no candidate.
pub(crate) fn pick(call: &ToolCall, found: &[Arc<CatalogEntry>]) -> Option<Arc<CatalogEntry>> {
    match found {
        [] => None,
        [only] => Some(Arc::clone(only)),
        several => {
            let args = parse_arguments(&call.arguments).unwrap_or(Value::Null);
            let valid: Vec<&Arc<CatalogEntry>> =
                several.iter().filter(|e| super::schema_check::is_valid(&e.parameters, &args)).collect();
            if let [one] = valid.as_slice() {
                return Some(Arc::clone(one));
            }
            // None or several valid: the most shared keys; `max_by_key` keeps the last maximum,
            // so walk in reverse to let the first registered win ties.
            let pool: Vec<&Arc<CatalogEntry>> = if valid.is_empty() { several.iter().collect() } else { valid };
            pool.iter().rev().max_by_key(|e| overlap(e, &args)).map(|e| Arc::clone(e))
        }
    }
}
