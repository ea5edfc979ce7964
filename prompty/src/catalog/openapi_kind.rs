//! `kind: openapi` in the catalog: every operation of an OpenAPI document as an entry
//! (namespace: the declared tool's name), called over HTTP, and the `openapi` loader.

use super::entry::CatalogEntry;
use super::kinds::RemoteSource;
use super::loaders::ToolLoader;
use crate::openapi::OpenApiClient;
use crate::{Agent, BoxFuture, Error, OpenApiTool, Result, Tool, ToolFunction};
use serde_json::Value;
use std::sync::Arc;

/// The operations of one document, read (and, for a URL, fetched) on every load.
struct DocumentLoader {
    namespace: String,
    /// The declaration (kind `openapi`).
    tool: Tool,
    /// Where `specification` is.
    specification: String,
    agent: Agent,
}

impl DocumentLoader {
    async fn entries(&self) -> Result<Vec<CatalogEntry>> {
        let client = Arc::new(OpenApiClient::from_tool(&self.tool, &self.agent).await?);
        let source = format!("OpenAPI document {} (tool '{}')", self.specification, self.namespace);
        Ok(client
            .operations()
            .iter()
            .map(|op| {
                let mut e = CatalogEntry::new(self.namespace.clone(), op.name.clone(), op.parameters_schema())
                    .with_kind("openapi")
                    .with_source(source.clone())
                    .with_metadata("method", op.method.clone())
                    .with_metadata("path", op.path.clone())
                    .with_function(OperationCall { client: Arc::clone(&client), operation: op.name.clone() });
                e.description = op.doc();
                e
            })
            .collect())
    }
}

impl ToolLoader for DocumentLoader {
    fn load<'a>(&'a self, _config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
        Box::pin(self.entries())
    }
}

/// A call of one operation: the status and the response body as the result; HTTP errors as tool
/// failures with their status.
struct OperationCall {
    client: Arc<OpenApiClient>,
    operation: String,
}

impl ToolFunction for OperationCall {
    fn call<'a>(&'a self, args: Value) -> BoxFuture<'a, Result<Value>> {
        Box::pin(self.client.call(&self.operation, args))
    }
}

/// The catalog source of a declared `kind: openapi` tool: one per namespace, document (a local
/// one by its full path) and connection.
pub(super) fn source(tool: &Tool, openapi: &OpenApiTool, agent: &Agent) -> Result<RemoteSource> {
    let spec = openapi.specification.trim();
    let location = if spec.starts_with("http://") || spec.starts_with("https://") {
        spec.to_owned()
    } else {
        let (dir, _) = crate::tools::prompty_tool::load_context(agent);
        dir.join(spec).display().to_string()
    };
    let identity = serde_json::json!({"spec": location, "connection": openapi.connection});
    let id = super::kinds::source_id("openapi", &tool.name, &identity);
    let loader = DocumentLoader {
        namespace: tool.name.clone(),
        tool: tool.clone(),
        specification: openapi.specification.clone(),
        agent: agent.clone(),
    };
    Ok(RemoteSource { id, loader: Arc::new(loader), config: Value::Null })
}

/// The `openapi` loader: `ToolCatalog::add_source("openapi", config)` with `namespace`,
/// `specification` (a path, relative to the working folder, or a URL) and an optional
/// `connection`: one entry per operation.
#[derive(Default)]
pub(super) struct OpenApiLoader;

impl ToolLoader for OpenApiLoader {
    fn load<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
        Box::pin(async move {
            let bad = |m: String| Error::Catalog { message: format!("the `openapi` loader's configuration: {m}") };
            let namespace = config
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| bad("`namespace` (a non-empty string) is missing".into()))?;
            let decl: OpenApiTool = serde_json::from_value(config.clone()).map_err(|e| bad(e.to_string()))?;
            let loader = DocumentLoader {
                namespace: namespace.to_owned(),
                specification: decl.specification.clone(),
                tool: Tool {
                    name: namespace.to_owned(),
                    description: None,
                    bindings: Vec::new(),
                    kind: crate::ToolKind::OpenApi(decl),
                },
                agent: Agent::default(),
            };
            loader.entries().await
        })
    }
}
