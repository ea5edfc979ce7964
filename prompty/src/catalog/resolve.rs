//! Which entry a model's call runs: candidates by name and namespace, then JSON Schema
//! validation of the arguments, then the largest overlap of argument keys, then registration
//! order.

use super::entry::CatalogEntry;
use super::{Index, ToolCatalog};
use crate::tools::args::parse_arguments;
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
    let found: Vec<&Arc<CatalogEntry>> = candidates(catalog, &index, &call.name)
        .into_iter()
        .map(|i| &index.entries[i])
        .filter(|e| namespaces.is_none_or(|allowed| allowed.contains(&e.namespace.as_str())))
        .collect();
    match found.as_slice() {
        [] => {
            let within = match namespaces {
                Some(ns) => format!(" within the namespaces [{}]", ns.join(", ")),
                None => String::new(),
            };
            Err(Error::Catalog { message: format!("no tool named '{}'{within}", call.name) })
        }
        [only] => Ok(Arc::clone(only)),
        several => {
            let args = parse_arguments(&call.arguments).unwrap_or(Value::Null);
            let valid: Vec<&&Arc<CatalogEntry>> = several.iter().filter(|e| e.accepts(&args)).collect();
            if let [one] = valid.as_slice() {
                return Ok(Arc::clone(one));
            }
            // None or several valid: the most shared keys; `max_by_key` keeps the last maximum,
            // so walk in reverse to let the first registered win ties.
            let pool: Vec<&Arc<CatalogEntry>> =
                if valid.is_empty() { several.to_vec() } else { valid.into_iter().copied().collect() };
            let best = pool.iter().rev().max_by_key(|e| overlap(e, &args)).copied().unwrap_or(pool[0]);
            Ok(Arc::clone(best))
        }
    }
}
