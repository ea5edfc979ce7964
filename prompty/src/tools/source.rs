//! Where the tools of a declaration come from, for kinds whose tools a server or document lists
//! (`mcp`, `openapi`): the [`ToolLoader`] trait, a declaration's [`ToolSource`], and the
//! namespace and `allowedTools` rules of those declarations (data of the model, read here once).

use super::entry::CatalogEntry;
use crate::{BoxFuture, Result, Tool, ToolKind};
use serde_json::Value;
use std::sync::Arc;

/// Loads tools into a catalog from a configuration.
///
/// ```
/// use prompty::catalog::{CatalogEntry, ToolCatalog, ToolLoader};
/// use prompty::{BoxFuture, Result};
/// use serde_json::{json, Value};
///
/// struct Clock;
/// impl ToolLoader for Clock {
///     fn load<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
///         let ns = config["namespace"].as_str().unwrap_or("clock").to_owned();
///         Box::pin(async move {
///             Ok(vec![CatalogEntry::new(ns, "now", json!({"type": "object", "properties": {}}))
///                 .with_function(prompty::tool_fn_sync(|_| Ok(json!("12:00"))))])
///         })
///     }
/// }
/// prompty::catalog::register_tool_loader("clock", Clock);
/// let catalog = ToolCatalog::new();
/// catalog.add_source("clock", json!({"namespace": "time"}))?;
/// assert_eq!(catalog.get("time::now").len(), 1);
/// # Ok::<(), prompty::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is used as a tool loader but does not implement `prompty::catalog::ToolLoader`",
    label = "this type needs `impl prompty::catalog::ToolLoader for {Self}`",
    note = "implement `fn load<'a>(&'a self, config: &'a serde_json::Value) -> prompty::BoxFuture<'a, prompty::Result<Vec<prompty::catalog::CatalogEntry>>>`"
)]
pub trait ToolLoader: Send + Sync + 'static {
    /// The entries `config` describes. Every entry needs a namespace.
    fn load<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>>;

    /// Whether what this loader loaded for `config` is out of date (an MCP server said its tool
    /// list changed): the catalog loads it again before its next use. Never, by default.
    fn is_stale(&self, config: &Value) -> bool {
        let _ = config;
        false
    }

    /// Releases what this loader keeps running for `config` (an MCP server's session: its process
    /// ended, its HTTP session closed), resolving once it has really ended. The catalog calls it
    /// when the source loaded with `config` leaves it: removed
    /// ([`ToolCatalog::remove_source_async`](crate::catalog::ToolCatalog::remove_source_async)),
    /// evicted (the oldest of more than
    /// [`MAX_DECLARED_SOURCES`](crate::catalog::MAX_DECLARED_SOURCES) declared sources), or shut
    /// down ([`ToolCatalog::shutdown_async`](crate::catalog::ToolCatalog::shutdown_async)).
    /// Nothing to release, by default.
    ///
    /// ```
    /// use prompty::catalog::{CatalogEntry, ToolLoader};
    /// use prompty::{BoxFuture, Result};
    /// struct Pool;
    /// impl ToolLoader for Pool {
    ///     fn load<'a>(&'a self, _: &'a serde_json::Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
    ///         Box::pin(async { Ok(Vec::new()) })
    ///     }
    ///     fn release<'a>(&'a self, _: &'a serde_json::Value) -> BoxFuture<'a, ()> {
    ///         Box::pin(async { /* close connections */ })
    ///     }
    /// }
    /// ```
    fn release<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, ()> {
        let _ = config;
        Box::pin(std::future::ready(()))
    }

    /// Whether something this loader started for `config` runs now (an MCP server's session is
    /// open); `None` when the loader runs nothing (the default).
    ///
    /// ```
    /// use prompty::catalog::{FileLoader, ToolLoader};
    /// assert_eq!(FileLoader.is_running(&serde_json::json!("tools.yaml")), None);
    /// ```
    fn is_running(&self, config: &Value) -> Option<bool> {
        let _ = config;
        None
    }
}

/// A declaration's source of tools: its id (a hash of the declaration and the prompt's folder, so
/// no secret shows in it), its loader and the loader's configuration. The catalog loads it once
/// and keeps its entries.
///
/// ```
/// use prompty::catalog::{CatalogEntry, ToolLoader};
/// use prompty::{BoxFuture, Result, ToolSource};
/// struct Nothing;
/// impl ToolLoader for Nothing {
///     fn load<'a>(&'a self, _: &'a serde_json::Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
///         Box::pin(async { Ok(Vec::new()) })
///     }
/// }
/// let source = ToolSource::new("nothing 1", Nothing, serde_json::Value::Null);
/// assert_eq!(source.id, "nothing 1");
/// ```
pub struct ToolSource {
    /// The source's id: the same id is loaded once.
    pub id: String,
    /// What lists its tools.
    pub loader: Arc<dyn ToolLoader>,
    /// The loader's configuration.
    pub config: Value,
}

impl ToolSource {
    /// A source.
    pub fn new(id: impl Into<String>, loader: impl ToolLoader, config: Value) -> Self {
        ToolSource { id: id.into(), loader: Arc::new(loader), config }
    }
}

/// The id of the source of a remote declaration: its kind, namespace, and a hash of what it
/// reaches (as resolved: the same server declared by two prompts is one source; two servers
/// under one name are two). The hash covers credentials, so declarations with other keys never
/// share a session, and shows none of them.
#[cfg(any(feature = "mcp", feature = "openapi"))]
pub(crate) fn source_id(kind: &str, namespace: &str, identity: &Value) -> String {
    format!("{kind} {namespace} {}", &super::entry::fingerprint(identity)[..16])
}

/// Why the MCP declaration keeps its server's tool `name` from the model (`allowedTools` leaves
/// it out), or `None`.
pub(crate) fn mcp_withheld(tool: &Tool, name: &str) -> Option<String> {
    let ToolKind::Mcp(m) = &tool.kind else { return None };
    let list = m.allowed_tools.as_ref()?;
    if list.iter().any(|t| t == name) {
        return None;
    }
    Some(format!(
        "Tool '{}' is not available to this prompt: MCP server '{}' offers it only the tools [{}] (allowedTools)",
        super::wire::wire_name(&tool.name, name),
        m.server_name,
        list.join(", ")
    ))
}

/// The most offered names an [`Unoffered`] message lists (then `... and N more`).
const OFFERED_SHOWN: usize = 20;

/// A name a declaration lists (in `allowedTools` or `approvalMode`'s lists) that its source does
/// not offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unoffered {
    /// Where the name is: `allowedTools`, `approvalMode.alwaysRequireApprovalTools` or
    /// `approvalMode.neverRequireApprovalTools`.
    pub field: &'static str,
    /// The name as written.
    pub name: String,
    /// What is wrong, the names offered (at most 20) and the closest one.
    pub message: String,
}

/// The names the declaration `tool` lists in `allowedTools` and in `approvalMode`'s
/// `alwaysRequireApprovalTools` / `neverRequireApprovalTools` that are not among the tools its
/// source lists (`offered`), in the order written. Empty for a declaration without such lists
/// (every kind but `mcp`).
pub(crate) fn unoffered_names(tool: &Tool, offered: &[Arc<CatalogEntry>]) -> Vec<Unoffered> {
    let ToolKind::Mcp(m) = &tool.kind else { return Vec::new() };
    let approval = m.approval_mode.as_ref();
    let lists: [(&'static str, Option<&Vec<String>>); 3] = [
        ("allowedTools", m.allowed_tools.as_ref()),
        ("approvalMode.alwaysRequireApprovalTools", approval.and_then(|a| a.always_require_approval_tools.as_ref())),
        ("approvalMode.neverRequireApprovalTools", approval.and_then(|a| a.never_require_approval_tools.as_ref())),
    ];
    let names = || offered.iter().map(|e| e.name.as_str());
    let mut out = Vec::new();
    for (field, list) in lists {
        for name in list.into_iter().flatten() {
            if names().any(|n| n == name) || out.iter().any(|u: &Unoffered| u.field == field && &u.name == name) {
                continue;
            }
            let offers = match offered.len() {
                0 => "it offers no tools".to_owned(),
                n if n <= OFFERED_SHOWN => format!("it offers: {}", names().collect::<Vec<_>>().join(", ")),
                n => format!(
                    "it offers: {}, ... and {} more",
                    names().take(OFFERED_SHOWN).collect::<Vec<_>>().join(", "),
                    n - OFFERED_SHOWN
                ),
            };
            let hint = prompty_core::analysis::did_you_mean(name, names());
            let message = format!(
                "MCP server '{}' (tool '{}') does not offer '{name}' named in {field}; {offers}{hint}",
                m.server_name, tool.name
            );
            out.push(Unoffered { field, name: name.clone(), message });
        }
    }
    out
}

#[cfg(any(feature = "mcp", feature = "openapi"))]
/// Removes bound parameters from a schema's `properties` and `required`.
pub(crate) fn strip_bindings(schema: &mut Value, tool: &Tool) {
    for b in &tool.bindings {
        if let Some(props) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
            props.remove(&b.name);
        }
        if let Some(req) = schema.get_mut("required").and_then(|r| r.as_array_mut()) {
            req.retain(|r| r.as_str() != Some(b.name.as_str()));
        }
    }
    if schema.get("required").and_then(|r| r.as_array()).is_some_and(|r| r.is_empty()) {
        if let Some(o) = schema.as_object_mut() {
            o.remove("required");
        }
    }
}

#[cfg(any(feature = "mcp", feature = "openapi"))]
/// The function definitions of the entries a remote declaration lists: those it allows, named by
/// their wire names, bound parameters removed, strict when the declaration asks for it.
pub(crate) fn project_listed(
    tool: &Tool,
    listed: &[Arc<CatalogEntry>],
    strict: bool,
) -> Vec<crate::FunctionDefinition> {
    listed
        .iter()
        .filter(|e| mcp_withheld(tool, &e.name).is_none())
        .map(|e| {
            let mut d = e.definition();
            strip_bindings(&mut d.parameters, tool);
            if strict {
                crate::strict_schema(&mut d.parameters);
                d.strict = true;
            }
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[cfg(any(feature = "mcp", feature = "openapi"))]
    #[test]
    fn bound_parameters_leave_the_schema() {
        let tool: Tool = serde_json::from_value(
            json!({"name": "files", "kind": "mcp", "serverName": "fs", "bindings": {"root": "home"}}),
        )
        .unwrap();
        let mut schema = json!({"type": "object", "properties": {"root": {"type": "string"}, "path": {"type": "string"}}, "required": ["root"]});
        strip_bindings(&mut schema, &tool);
        assert_eq!(schema, json!({"type": "object", "properties": {"path": {"type": "string"}}}));
    }

    fn offered(names: &[&str]) -> Vec<Arc<CatalogEntry>> {
        names.iter().map(|n| Arc::new(CatalogEntry::new("fs", *n, json!({"type": "object"})))).collect()
    }

    #[test]
    fn names_a_declaration_lists_that_its_server_does_not_offer() {
        let tool: Tool = serde_json::from_value(json!({"name": "files", "kind": "mcp", "serverName": "fs",
            "allowedTools": ["echo", "ech0", "zzz", "ech0"],
            "approvalMode": {"kind": "specify", "alwaysRequireApprovalTools": ["add", "ad"],
                             "neverRequireApprovalTools": ["Echo"]}}))
        .unwrap();
        let found = unoffered_names(&tool, &offered(&["echo", "add", "long-running"]));
        let summary: Vec<(&str, &str)> = found.iter().map(|u| (u.field, u.name.as_str())).collect();
        assert_eq!(
            summary,
            [
                ("allowedTools", "ech0"),
                ("allowedTools", "zzz"),
                ("approvalMode.alwaysRequireApprovalTools", "ad"),
                ("approvalMode.neverRequireApprovalTools", "Echo"),
            ]
        );
        assert_eq!(
            found[0].message,
            "MCP server 'fs' (tool 'files') does not offer 'ech0' named in allowedTools; it offers: echo, add, \
             long-running (did you mean `echo`?)"
        );
        assert_eq!(
            found[1].message,
            "MCP server 'fs' (tool 'files') does not offer 'zzz' named in allowedTools; it offers: echo, add, long-running"
        );
        assert!(found[2].message.ends_with("(did you mean `add`?)"), "{}", found[2].message);
        assert!(found[3].message.ends_with("(did you mean `echo`?)"), "{}", found[3].message);
        // Every name offered: nothing to say; no lists, or another kind: nothing either.
        assert!(unoffered_names(&tool, &offered(&["echo", "ech0", "zzz", "add", "ad", "Echo"])).is_empty());
        let plain: Tool = serde_json::from_value(json!({"name": "files", "kind": "mcp", "serverName": "fs"})).unwrap();
        assert!(unoffered_names(&plain, &offered(&[])).is_empty());
        let api: Tool =
            serde_json::from_value(json!({"name": "api", "kind": "openapi", "specification": "a.json"})).unwrap();
        assert!(unoffered_names(&api, &offered(&["x"])).is_empty());
    }

    #[test]
    fn the_offered_names_a_warning_lists_are_capped() {
        let tool: Tool = serde_json::from_value(json!({"name": "files", "kind": "mcp", "serverName": "fs",
            "allowedTools": ["nope"]}))
        .unwrap();
        let names: Vec<String> = (0..25).map(|i| format!("tool{i:02}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let found = unoffered_names(&tool, &offered(&refs));
        let shown = (0..20).map(|i| format!("tool{i:02}")).collect::<Vec<_>>().join(", ");
        assert_eq!(
            found[0].message,
            format!("MCP server 'fs' (tool 'files') does not offer 'nope' named in allowedTools; it offers: {shown}, ... and 5 more")
        );
        let none = unoffered_names(&tool, &offered(&[]));
        assert_eq!(
            none[0].message,
            "MCP server 'fs' (tool 'files') does not offer 'nope' named in allowedTools; it offers no tools"
        );
    }

    #[test]
    fn allowed_tools_withhold_the_others() {
        let tool: Tool = serde_json::from_value(
            json!({"name": "files", "kind": "mcp", "serverName": "fs", "allowedTools": ["read"]}),
        )
        .unwrap();
        assert_eq!(mcp_withheld(&tool, "read"), None);
        assert_eq!(
            mcp_withheld(&tool, "write").unwrap(),
            "Tool 'files__write' is not available to this prompt: MCP server 'fs' offers it only the tools [read] (allowedTools)"
        );
    }
}
