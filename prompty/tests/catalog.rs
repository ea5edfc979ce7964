//! The tool catalog: overloads, duplicates, loaders, refresh, namespaces, enrichments, wire names
//! and concurrent use.

use prompty::catalog::{is_wire_safe, parse_wire_name, wire_name, CatalogEntry, ToolCatalog, ToolLoader};
use prompty::{BoxFuture, Result, ToolCall};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;

fn schema(props: &[(&str, &str)], required: &[&str]) -> Value {
    let p: serde_json::Map<String, Value> = props.iter().map(|(k, t)| ((*k).to_owned(), json!({"type": t}))).collect();
    json!({"type": "object", "properties": p, "required": required, "additionalProperties": false})
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new("c1", name, args.to_string())
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-catalog-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_one_overload_whose_schema_accepts_the_arguments_wins() {
    let c = ToolCatalog::new();
    c.register(CatalogEntry::new("geo", "find", schema(&[("city", "string")], &["city"])).with_source("by city"))
        .unwrap();
    c.register(
        CatalogEntry::new("geo", "find", schema(&[("lat", "number"), ("lon", "number")], &["lat", "lon"]))
            .with_source("by coords"),
    )
    .unwrap();
    assert_eq!(c.get("geo::find").len(), 2);
    assert_eq!(c.resolve(&call("geo__find", json!({"lat": 1.5, "lon": 2})), None).unwrap().source, "by coords");
    assert_eq!(c.resolve(&call("geo::find", json!({"city": "Paris"})), None).unwrap().source, "by city");
    // A bare name finds the overloads in every namespace.
    assert_eq!(c.resolve(&call("find", json!({"city": "Oslo"})), None).unwrap().source, "by city");
}

#[test]
fn without_a_single_valid_overload_the_largest_key_overlap_wins_and_ties_go_to_the_first() {
    let c = ToolCatalog::new();
    c.register(
        CatalogEntry::new("n", "t", schema(&[("a", "string"), ("b", "string")], &["a", "b"])).with_source("first"),
    )
    .unwrap();
    c.register(
        CatalogEntry::new("n", "t", schema(&[("a", "string"), ("c", "string"), ("d", "string")], &["a", "c", "d"]))
            .with_source("second"),
    )
    .unwrap();
    // Valid for neither (missing required keys): overlap {a, c} = 2 beats {a} = 1.
    assert_eq!(c.resolve(&call("n__t", json!({"a": "x", "c": "y"})), None).unwrap().source, "second");
    // Valid for neither, overlap 1 each: the first registered.
    assert_eq!(c.resolve(&call("n__t", json!({"a": 1})), None).unwrap().source, "first");
    // Arguments that are not JSON at all still resolve (to the first).
    assert_eq!(c.resolve(&ToolCall::new("c", "n__t", "not json"), None).unwrap().source, "first");
}

#[test]
fn several_valid_overloads_are_told_apart_by_key_overlap() {
    let open = |props: &[&str]| {
        let p: serde_json::Map<String, Value> = props.iter().map(|k| ((*k).to_owned(), json!({}))).collect();
        json!({"type": "object", "properties": p})
    };
    let c = ToolCatalog::new();
    c.register(CatalogEntry::new("n", "t", open(&["x"])).with_source("x")).unwrap();
    c.register(CatalogEntry::new("n", "t", open(&["x", "y"])).with_source("xy")).unwrap();
    assert_eq!(c.resolve(&call("n__t", json!({"x": 1, "y": 2})), None).unwrap().source, "xy");
    assert_eq!(c.resolve(&call("n__t", json!({"x": 1})), None).unwrap().source, "x");
}

#[test]
fn duplicates_are_errors_naming_both_sources_but_namespaces_keep_names_apart() {
    let c = ToolCatalog::new();
    let s = schema(&[("q", "string")], &[]);
    c.register(CatalogEntry::new("docs", "search", s.clone()).with_source("server A")).unwrap();
    // Same schema in another key order: the same fingerprint, so a duplicate.
    let reordered = json!({"additionalProperties": false, "required": [], "properties": {"q": {"type": "string"}}, "type": "object"});
    let err = c.register(CatalogEntry::new("docs", "search", reordered).with_source("server B")).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("duplicate tool docs::search"), "{text}");
    assert!(text.contains("from server A and from server B"), "{text}");
    assert_eq!(c.len(), 1, "a refused entry is not kept");
    c.register(CatalogEntry::new("web", "search", s).with_source("server C")).unwrap();
    assert_eq!(c.len(), 2);
    assert_eq!(c.namespaces(), ["docs", "web"]);
}

#[test]
fn namespace_filters_limit_the_candidates() {
    let c = ToolCatalog::new();
    c.register(CatalogEntry::new("docs", "search", json!({"type": "object"}))).unwrap();
    c.register(CatalogEntry::new("web", "search", json!({"type": "object"}))).unwrap();
    assert_eq!(c.resolve(&call("search", json!({})), Some(&["web"])).unwrap().namespace, "web");
    assert_eq!(c.resolve(&call("search", json!({})), Some(&["docs"])).unwrap().namespace, "docs");
    let err = c.register(CatalogEntry::new("a:b", "t", json!({})).with_source("colon")).unwrap_err();
    assert!(err.to_string().contains("contains ':'"), "{err}");
    let err = c.resolve(&call("web__search", json!({})), Some(&["docs"])).unwrap_err();
    assert_eq!(err.to_string(), "tool catalog: no tool named 'web__search' within the namespaces [docs]");
    assert!(c.resolve(&call("nothing", json!({})), None).is_err());
}

#[test]
fn the_file_loader_reads_all_three_shapes_and_refresh_follows_the_file() {
    let dir = temp_dir("file");
    let list = dir.join("list.yaml");
    std::fs::write(&list, "- name: now\n  description: The time\n- name: add\n  parameters:\n    - {name: a, kind: integer, required: true}\n").unwrap();
    let by_ns = dir.join("by_ns.json");
    std::fs::write(&by_ns, r#"{"math": [{"name": "mul", "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}}], "text": [{"name": "upper"}]}"#).unwrap();
    let by_name = dir.join("by_name.yaml");
    std::fs::write(&by_name, "echo:\n  description: Says it back\n  parameters:\n    text: {kind: string}\n").unwrap();

    let c = ToolCatalog::new();
    assert_eq!(c.add_source("file", json!({"path": list, "namespace": "util"})).unwrap(), 2);
    assert_eq!(c.add_source("file", json!(by_ns.to_str().unwrap())).unwrap(), 2);
    assert_eq!(c.add_source("file", json!({"path": by_name})).unwrap(), 1);
    let names: Vec<String> = c.entries().iter().map(|e| e.qualified_name()).collect();
    assert_eq!(names, ["util::now", "util::add", "math::mul", "text::upper", "default::echo"]);
    assert_eq!(c.get("util::add")[0].parameters["required"], json!(["a"]));
    assert_eq!(c.get("default::echo")[0].description.as_deref(), Some("Says it back"));
    assert_eq!(c.get("util::now")[0].kind, "file");

    // The file changes: refresh re-runs the loader; the order of sources is kept.
    std::fs::write(&list, "- name: now\n- name: later\n").unwrap();
    c.refresh().unwrap();
    let names: Vec<String> = c.entries().iter().map(|e| e.qualified_name()).collect();
    assert_eq!(names, ["util::now", "util::later", "math::mul", "text::upper", "default::echo"]);

    // A refresh that would create a duplicate fails and keeps the catalog as it was.
    std::fs::write(&list, "- name: now\n- name: now\n").unwrap();
    let err = c.refresh().unwrap_err();
    assert!(err.to_string().contains("duplicate tool util::now"), "{err}");
    assert_eq!(c.len(), 5);
    // So does a refresh whose loader fails.
    std::fs::write(&list, "{{ not yaml").unwrap();
    let err = c.refresh().unwrap_err().to_string();
    assert!(err.contains("refreshing source") && err.contains("catalog is unchanged"), "{err}");
    assert!(c.get("util::later").len() == 1);
}

#[test]
fn file_loader_errors_say_which_file_and_tool() {
    let dir = temp_dir("file-errors");
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "- description: no name\n").unwrap();
    let err = ToolCatalog::new().add_source("file", json!({"path": bad})).unwrap_err().to_string();
    assert!(err.contains("bad.yaml") && err.contains("[0]") && err.contains("`name`"), "{err}");
    let missing = dir.join("missing.yaml");
    let err = ToolCatalog::new().add_source("file", json!({"path": missing})).unwrap_err().to_string();
    assert!(err.contains("missing.yaml"), "{err}");
    let scalar = dir.join("scalar.yaml");
    std::fs::write(&scalar, "42\n").unwrap();
    let err = ToolCatalog::new().add_source("file", json!({"path": scalar})).unwrap_err().to_string();
    assert!(err.contains("expected a list of tools"), "{err}");
    let err = ToolCatalog::new().add_source("no-such-loader", json!({})).unwrap_err().to_string();
    assert!(err.contains("no tool loader registered for 'no-such-loader'"), "{err}");
}

#[test]
fn enrichments_run_in_dependency_order_after_every_change() {
    let c = ToolCatalog::new();
    // Registered before what it depends on: refused.
    let err = c.register_enrichment("count", &["names"], |_, _| Ok(json!(0))).unwrap_err();
    assert!(err.to_string().contains("depends on 'names'"), "{err}");
    c.register_enrichment("names", &[], |entries, _| {
        Ok(json!(entries.iter().map(|e| e.qualified_name()).collect::<Vec<_>>()))
    })
    .unwrap();
    c.register_enrichment("count", &["names"], |_, a| {
        Ok(json!(a.get("names").and_then(Value::as_array).map_or(0, Vec::len)))
    })
    .unwrap();
    // A cycle is refused and changes nothing.
    let err = c.register_enrichment("names", &["count"], |_, _| Ok(json!(null))).unwrap_err();
    assert!(err.to_string().contains("cycle"), "{err}");
    c.register(CatalogEntry::new("a", "x", json!({}))).unwrap();
    c.register(CatalogEntry::new("a", "y", json!({}))).unwrap();
    assert_eq!(c.artifacts().get("count"), Some(&json!(2)));
    assert_eq!(c.artifacts().get("names"), Some(&json!(["a::x", "a::y"])));
    // A failing enrichment keeps its previous artifact.
    c.register_enrichment("flaky", &[], |entries, _| {
        if entries.len() > 2 {
            Err(prompty::Error::Task("down".into()))
        } else {
            Ok(json!("ok"))
        }
    })
    .unwrap();
    assert_eq!(c.artifacts().get("flaky"), Some(&json!("ok")));
    c.register(CatalogEntry::new("a", "z", json!({}))).unwrap();
    assert_eq!(c.artifacts().get("flaky"), Some(&json!("ok")));
    assert_eq!(c.artifacts().get("count"), Some(&json!(3)));
}

/// A weather tool in its own namespace, and one in the crate's default namespace.
#[prompty::tool(namespace = "weather")]
fn forecast(city: String) -> String {
    format!("sunny in {city}")
}

#[prompty::tool]
fn shout(text: String) -> String {
    text.to_uppercase()
}

#[test]
fn tool_fns_are_in_the_global_catalog_under_their_namespace() {
    let global = ToolCatalog::global();
    let f = &global.get("weather::forecast")[0];
    assert_eq!(f.parameters["required"], json!(["city"]));
    assert!(f.source.contains("#[tool] fn"), "{}", f.source);
    let shout = &global.get("catalog::shout")[0]; // the crate's name (this test crate is `catalog`)
    let rt = tokio::runtime::Runtime::new().unwrap();
    let out = rt.block_on(shout.function.as_ref().unwrap().call(json!({"text": "hi"}))).unwrap();
    assert_eq!(out, json!("HI"));
}

#[prompty::loader("counting")]
#[derive(Default)]
struct Counting;

impl ToolLoader for Counting {
    fn load<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
        let n = config["n"].as_u64().unwrap_or(0);
        Box::pin(async move {
            Ok((0..n)
                .map(|i| CatalogEntry::new("count", format!("t{i}"), json!({"type": "object"})).with_kind("counting"))
                .collect())
        })
    }
}

#[test]
fn link_time_loaders_are_found_by_name() {
    let c = ToolCatalog::new();
    assert_eq!(c.add_source("counting", json!({"n": 3})).unwrap(), 3);
    // The same source again replaces what it loaded.
    assert_eq!(c.add_source("counting", json!({"n": 3})).unwrap(), 3);
    assert_eq!(c.len(), 3);
    let err = c.add_source("counting", json!({"n": 0, "other": true})).map(|_| c.len()).unwrap();
    assert_eq!(err, 3);
}

#[test]
fn a_loader_entry_without_a_namespace_is_refused() {
    struct NoNs;
    impl ToolLoader for NoNs {
        fn load<'a>(&'a self, _: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
            Box::pin(async { Ok(vec![CatalogEntry::new("", "t", json!({})).with_source("no-ns loader")]) })
        }
    }
    let c = ToolCatalog::new();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt.block_on(c.add_source_with_async("x", Arc::new(NoNs), json!({}))).unwrap_err().to_string();
    assert!(err.contains("no-ns loader") && err.contains("empty namespace"), "{err}");
    assert!(c.is_empty());
}

#[test]
fn concurrent_registration_resolution_and_refresh_stay_consistent() {
    let dir = temp_dir("stress");
    let file = dir.join("tools.yaml");
    std::fs::write(&file, "- name: a\n- name: b\n").unwrap();
    let c = Arc::new(ToolCatalog::new());
    c.add_source("file", json!({"path": file, "namespace": "f"})).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || {
                for i in 0..200 {
                    match (t + i) % 4 {
                        0 => c
                            .register(CatalogEntry::new(format!("t{t}"), format!("e{i}"), json!({"type": "object"})))
                            .unwrap(),
                        1 => {
                            let e = c.resolve(&call("f__a", json!({})), Some(&["f"])).unwrap();
                            assert_eq!(e.qualified_name(), "f::a");
                        }
                        2 if i % 20 == 2 => c.refresh().unwrap(),
                        _ => {
                            let all = c.entries();
                            assert!(all.iter().filter(|e| e.namespace == "f").count() == 2);
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // 8 threads × 200 steps, one step in four registers.
    assert_eq!(c.len(), 2 + 8 * 50);
    for t in 0..8 {
        assert_eq!(c.entries().iter().filter(|e| e.namespace == format!("t{t}")).count(), 50);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any namespace and name survive the wire: the encoding is provider-safe, decodes back (by
    /// itself when short, through the catalog when hashed), and distinct names stay distinct.
    #[test]
    fn wire_names_round_trip(ns in "[^:\\p{C}]{1,24}|[a-z_]{1,12}", name in "\\PC{1,80}|[a-zA-Z0-9_.-]{1,30}", other in "[a-z_]{1,8}") {
        let wire = wire_name(&ns, &name);
        prop_assert!(is_wire_safe(&wire), "{} is not wire safe", wire);
        if wire.contains("__") {
            prop_assert_eq!(parse_wire_name(&wire), Some((ns.clone(), name.clone())));
        }
        let c = ToolCatalog::new();
        c.register(CatalogEntry::new(ns.clone(), name.clone(), json!({}))).unwrap();
        prop_assert_eq!(c.decode(&wire), Some((ns.clone(), name.clone())));
        if other != name {
            prop_assert_ne!(wire_name(&ns, &other), wire.clone());
        }
    }
}
