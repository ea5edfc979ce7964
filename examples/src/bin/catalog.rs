//! The tool catalog: tools from a file, the operations of an OpenAPI document, the `#[tool]` fns
//! of a crate and, when you give a command, the tools of an MCP server, all under namespaced
//! names; then how a model's call of an overloaded tool is resolved.
//!
//! ```text
//! cargo run -p prompty-examples --bin catalog
//! cargo run -p prompty-examples --bin catalog -- npx -y @modelcontextprotocol/server-everything
//! ```

prompty::link!(weather_tools);

use prompty::catalog::ToolCatalog;
use prompty::ToolCall;
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools");
    let catalog = ToolCatalog::new();
    catalog.add_source("file", json!({"path": here.join("tools.yaml")}))?;
    catalog
        .add_source("openapi", json!({"namespace": "weather_api", "specification": here.join("weather-api.yaml")}))?;
    // The #[tool] fns linked into this binary are in the global catalog, in their crate's namespace.
    for entry in ToolCatalog::global().entries() {
        catalog.register((*entry).clone())?;
    }
    let mut args = std::env::args().skip(1);
    if let Some(command) = args.next() {
        let declaration = json!({"namespace": "server", "serverName": "server",
                                 "connection": {"kind": "stdio", "command": command, "args": args.collect::<Vec<_>>()}});
        let n = catalog.add_source("mcp", declaration)?;
        println!("the MCP server listed {n} tools");
    }

    for e in catalog.entries() {
        let runs = if e.function.is_some() { "runs" } else { "declared" };
        println!("{:<40} {:<40} {:<8} {}", e.qualified_name(), e.wire_name(), runs, e.source);
    }

    // `forecast::get_weather` has two overloads: the arguments pick one.
    for args in [json!({"city": "Oslo"}), json!({"lat": 59.9, "lon": 10.7})] {
        let call = ToolCall::new("call_1", "forecast__get_weather", args.to_string());
        let entry = catalog.resolve(&call, Some(&["forecast"]))?;
        println!("{args} resolves to: {}", entry.description.as_deref().unwrap_or(""));
    }
    Ok(())
}
