//! Benchmark of the tool catalog: what resolving a model's call costs, with and without
//! overloads, and what it costs to encode and decode wire names, fingerprint a schema and rebuild
//! the index.
//!
//! Run with `cargo bench -p prompty --bench catalog` (`--quick` for short rounds). Figures are the
//! median µs per operation of seven batches.

#[path = "support/measure.rs"]
#[allow(dead_code)]
mod support;

use prompty::catalog::{parse_wire_name, wire_name, CatalogEntry, ToolCatalog};
use prompty::ToolCall;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Duration;
use support::measure;

fn schema(props: &[&str]) -> Value {
    let p: serde_json::Map<String, Value> =
        props.iter().map(|k| ((*k).to_owned(), json!({"type": "string"}))).collect();
    json!({"type": "object", "properties": p, "required": props, "additionalProperties": false})
}

/// `namespaces` × `per_namespace` distinct tools, plus a tool with `overloads` overloads.
fn catalog(namespaces: usize, per_namespace: usize, overloads: usize) -> ToolCatalog {
    let c = ToolCatalog::new();
    for n in 0..namespaces {
        for t in 0..per_namespace {
            c.register(CatalogEntry::new(format!("ns{n}"), format!("tool_{t}"), schema(&["q"]))).unwrap();
        }
    }
    for o in 0..overloads {
        let keys: Vec<String> = (0..=o).map(|k| format!("k{k}")).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        c.register(CatalogEntry::new("over", "find", schema(&keys))).unwrap();
    }
    c
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let batch = Duration::from_millis(if quick { 50 } else { 400 });

    let c = catalog(10, 100, 8);
    println!("catalog of {} entries", c.len());

    let single = ToolCall::new("c", "ns7__tool_42", r#"{"q": "x"}"#);
    let us = measure(batch, || drop(black_box(c.resolve(&single, None).unwrap())));
    println!("resolve, one candidate (wire name):           {us:8.2} µs");

    let filtered = ToolCall::new("c", "tool_42", r#"{"q": "x"}"#);
    let us = measure(batch, || drop(black_box(c.resolve(&filtered, Some(&["ns3"])).unwrap())));
    println!("resolve, bare name over 10 namespaces, filter: {us:8.2} µs");

    // Eight overloads; the arguments fit the fourth only (validators compiled once, then kept).
    let overloaded = ToolCall::new("c", "over__find", r#"{"k0": "a", "k1": "b", "k2": "c", "k3": "d"}"#);
    assert_eq!(c.resolve(&overloaded, None).unwrap().parameters["required"].as_array().unwrap().len(), 4);
    let us = measure(batch, || drop(black_box(c.resolve(&overloaded, None).unwrap())));
    println!("resolve, 8 overloads, JSON Schema validation:  {us:8.2} µs");

    let us = measure(batch, || drop(black_box(wire_name("filesystem", "read_text_file"))));
    println!("wire_name:                                    {us:8.2} µs");
    let us = measure(batch, || drop(black_box(parse_wire_name("filesystem__read_text_file"))));
    println!("parse_wire_name:                              {us:8.2} µs");

    let big = schema(&["a", "b", "c", "d", "e", "f", "g", "h"]);
    let e = CatalogEntry::new("n", "t", big);
    // A clone computes its fingerprint afresh; the clone alone is measured beside it.
    let clone = measure(batch, || drop(black_box(e.clone())));
    let us = measure(batch, || drop(black_box(e.clone().fingerprint())));
    println!("fingerprint of an 8-property schema:          {:8.2} µs", us - clone);

    // Building a catalog of 1,000 entries: one `register` each (every one rebuilds the index and
    // rechecks duplicates), or one loader that returns them all (one rebuild).
    let entries: Vec<CatalogEntry> =
        (0..1000).map(|t| CatalogEntry::new("bulk", format!("t{t}"), schema(&["q"]))).collect();
    let us = measure(Duration::from_millis(if quick { 200 } else { 2000 }), || {
        let c = ToolCatalog::new();
        for e in &entries {
            c.register(e.clone()).unwrap();
        }
        black_box(&c);
    });
    println!("1,000 entries, one register each:             {:8.2} ms", us / 1000.0);
    let loader = std::sync::Arc::new(Bulk(entries));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let us = measure(batch, || {
        let c = ToolCatalog::new();
        rt.block_on(c.add_source_with_async("bulk", loader.clone(), Value::Null)).unwrap();
        black_box(&c);
    });
    println!("1,000 entries, one loader:                    {:8.2} ms", us / 1000.0);

    #[cfg(feature = "mcp")]
    mcp_round_trip(batch);
}

/// With the `mcp` feature and the npm peers installed (`npm ci --prefix prompty/tests/e2e`): a call
/// of server-everything's `echo` over stdio, wall time per call (client, pipe and a Node server).
#[cfg(feature = "mcp")]
fn mcp_round_trip(batch: Duration) {
    use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
    let bin =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/node_modules/.bin/mcp-server-everything");
    if !bin.exists() {
        println!("(MCP round trip skipped: {} is not installed)", bin.display());
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server =
        McpServer::new(McpServerConfig::new("everything", McpTransport::stdio(bin.display().to_string(), ["stdio"])));
    let listed = rt.block_on(server.tools()).unwrap().len();
    let args = json!({"message": "hi"}).as_object().cloned().unwrap();
    let us = measure(batch, || {
        black_box(rt.block_on(server.call("echo", args.clone())).unwrap());
    });
    println!("MCP call over stdio (server-everything echo): {us:8.2} µs  ({listed} tools listed)");
}

struct Bulk(Vec<CatalogEntry>);

impl prompty::catalog::ToolLoader for Bulk {
    fn load<'a>(&'a self, _: &'a Value) -> prompty::BoxFuture<'a, prompty::Result<Vec<CatalogEntry>>> {
        Box::pin(async move { Ok(self.0.clone()) })
    }
}
