//! `kind: openapi`: every operation of an OpenAPI document as an entry (namespace: the declared
//! tool's name), its projection, its calls over HTTP, and the `openapi` loader.

use super::OpenApiClient;
use crate::tools::entry::CatalogEntry;
use crate::tools::kind::{run_listed, ResolvedCall, ToolKindPlugin};
use crate::tools::source::{project_listed, source_id, ToolLoader, ToolSource};
use crate::{
    Agent, BoxFuture, Error, FunctionDefinition, OpenApiTool, Result, Tool, ToolContext, ToolFunction, ToolKind,
};
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
/// one by its full path, with the roots it may be read from: a document read for an agent
/// allowed to read it is not handed to one that is not) and connection.
fn source(tool: &Tool, openapi: &OpenApiTool, agent: &Agent) -> Result<ToolSource> {
    let spec = openapi.specification.trim();
    let (location, roots) = if spec.starts_with("http://") || spec.starts_with("https://") {
        (spec.to_owned(), Vec::new())
    } else {
        let (dir, options) = crate::tools::prompty::load_context(agent);
        (dir.join(spec).display().to_string(), options.allowed_roots().to_vec())
    };
    let identity = serde_json::json!({"spec": location, "roots": roots, "connection": openapi.connection});
    let id = source_id("openapi", &tool.name, &identity);
    let loader = DocumentLoader {
        namespace: tool.name.clone(),
        tool: tool.clone(),
        specification: openapi.specification.clone(),
        agent: agent.clone(),
    };
    Ok(ToolSource { id, loader: Arc::new(loader), config: Value::Null })
}

/// The `openapi` kind: a declaration offers every operation of its document under the namespace
/// of its name; a call is an HTTP request.
pub(crate) struct OpenApiKind;

impl ToolKindPlugin for OpenApiKind {
    fn project(&self, tool: &Tool, _agent: &Agent, listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
        let strict = matches!(&tool.kind, ToolKind::OpenApi(o) if o.strict.unwrap_or(false));
        Ok(project_listed(tool, listed, strict))
    }

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        entry: Option<Arc<CatalogEntry>>,
        args: Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        run_listed(call, entry, args, ctx)
    }

    fn namespace<'t>(&self, tool: &'t Tool) -> Option<&'t str> {
        tool.namespace()
    }

    fn source(&self, tool: &Tool, agent: &Agent) -> Option<Result<ToolSource>> {
        match &tool.kind {
            ToolKind::OpenApi(o) => Some(source(tool, o, agent)),
            _ => None,
        }
    }
}

/// The `openapi` loader: `ToolCatalog::add_source("openapi", config)` with `namespace`,
/// `specification` (a path, relative to the working folder, or a URL) and an optional
/// `connection`: one entry per operation.
#[derive(Default)]
pub(crate) struct OpenApiLoader;

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
                    kind: ToolKind::OpenApi(decl),
                },
                agent: Agent::default(),
            };
            loader.entries().await
        })
    }
}
