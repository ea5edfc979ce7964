//! The lifecycle of MCP servers, against real servers: the Python SDK's `tests/e2e/mcp/lab.py` over
//! stdio (as declared by prompts run through `prompty::turn_async`, aimock playing the model) and
//! over streamable HTTP on 127.0.0.1. Live server processes are counted from `/proc`; the HTTP
//! server logs every request it gets (method, path, `mcp-session-id`), which shows the `DELETE`
//! that closes a session.
//!
//! - Turns whose declarations differ by one argument keep one server per declaration, no more;
//!   the idle timeout stops them (their entries stay), the next use starts them again under the
//!   same wire names; `ToolCatalog::shutdown_async` leaves none running.
//! - An HTTP session gets its `DELETE` on shutdown, on the idle timeout, on removal of its source
//!   and on the drop of the last handle.
//! - The drop of the last handle outside a runtime ends a stdio server.
//!
//! The tests that use the process-wide catalog run one at a time (`GLOBAL`).

#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/peers.rs"]
mod peers;

use common::{alive, eventually, within, workdir, write_and_load, Aimock};
use prompty::catalog::ToolCatalog;
use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
use prompty::{AgentEvent, TurnOptions};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Held by the tests that use `ToolCatalog::global()`.
static GLOBAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The live children of this process whose command line contains `marker` (read from `/proc`).
fn servers_with(marker: &str) -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc is readable").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // state, then the parent's id.
        if fields.first() == Some(&"Z") || fields.get(1) != Some(&me.as_str()) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            out.push(pid);
        }
    }
    out
}

/// A prompt whose model is aimock, declaring the lab server over stdio with the extra argument
/// `variant` (which tells the declarations apart) and `idleTimeout: idle` seconds.
fn lab_prompt(dir: &Path, aimock: &Aimock, variant: &str, idle: u32, user: &str) -> prompty::Agent {
    let text = format!(
        "---\nname: lifecycle\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    \
         endpoint: {}/v1\n    apiKey: sk-e2e\ntools:\n  - name: lab\n    kind: mcp\n    serverName: lab\n    \
         idleTimeout: {idle}\n    connection:\n      kind: stdio\n      command: {}\n      args: [\"{}\", \"{variant}\"]\n\
         ---\nuser:\n{user}",
        aimock.url(),
        peers::python().display(),
        peers::mcp_script("lab.py").display()
    );
    write_and_load(dir, variant, &text)
}

/// Runs one turn: its answer and the results of its tool calls.
async fn turn(agent: &prompty::Agent) -> (String, Vec<String>) {
    let (options, events) = TurnOptions::new().record_events();
    let answer = within(prompty::turn_async(agent, &json!({}), options)).await.expect("the turn");
    let results = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { result, is_error, .. } => {
                assert!(!is_error, "{result}");
                Some(result)
            }
            _ => None,
        })
        .collect();
    (answer, results)
}

/// The wire names of the tools the model was offered in each request, oldest first.
fn offered(aimock: &Aimock) -> Vec<Vec<String>> {
    aimock
        .requests_to("/v1/chat/completions")
        .into_iter()
        .map(|e| {
            let tools = e["body"]["tools"].as_array().cloned().unwrap_or_default();
            tools.iter().map(|t| t["function"]["name"].as_str().unwrap_or("").to_owned()).collect()
        })
        .collect()
}

/// The declared sources of the global catalog whose server is the lab over stdio.
fn lab_sources() -> Vec<prompty::catalog::SourceInfo> {
    ToolCatalog::global()
        .sources()
        .into_iter()
        .filter(|s| s.declared && s.loader.as_deref() == Some("mcp") && s.id.starts_with("mcp lab "))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn turns_keep_one_server_per_declaration_and_shutdown_ends_them_all() {
    let _one = GLOBAL.lock().await;
    let aimock = Aimock::start_with("lifecycle.json", &[]);
    let dir = workdir("lifecycle", "bounded");
    let marker = format!("bounded-{}-", std::process::id());
    let variants: Vec<String> = (0..3).map(|i| format!("{marker}{i}")).collect();
    let agents: Vec<prompty::Agent> =
        variants.iter().map(|v| lab_prompt(&dir, &aimock, v, 600, "just answer")).collect();

    // Two rounds of three turns whose declarations differ by one argument: three servers.
    for round in 0..2 {
        for agent in &agents {
            assert_eq!(turn(agent).await.0, "Answered.");
        }
        let live = servers_with(&marker);
        assert_eq!(live.len(), 3, "round {round}: one server per declaration, found {live:?}");
    }
    let sources = lab_sources();
    assert_eq!(sources.len(), 3, "{sources:?}");
    assert!(sources.iter().all(|s| s.running == Some(true) && s.entries > 5), "{sources:?}");
    assert!(sources.iter().all(|s| s.label.as_deref().is_some_and(|l| l.starts_with("MCP server 'lab' (stdio"))));
    // Every request offered the lab's tools.
    assert!(offered(&aimock).iter().all(|names| names.contains(&"lab__pid".to_owned())));

    // Removing one source by its id ends its server, and only that one.
    let first = sources[0].id.clone();
    assert!(ToolCatalog::global().remove_source_async(&first).await.unwrap());
    assert_eq!(servers_with(&marker).len(), 2, "removal waits until the process is gone");
    assert_eq!(lab_sources().len(), 2);

    let started = Instant::now();
    let removed = ToolCatalog::global().shutdown_async().await.expect("shutdown");
    eprintln!("shutdown of {removed} sources (2 stdio lab servers) took {:?}", started.elapsed());
    assert!(removed >= 2, "{removed}");
    let live = servers_with(&marker);
    assert!(live.is_empty(), "shutdown returned with servers still running: {live:?}");
    assert!(lab_sources().is_empty());

    // A prompt used again after the shutdown loads its server again.
    assert_eq!(turn(&agents[1]).await.0, "Answered.");
    assert_eq!(servers_with(&marker).len(), 1);
    ToolCatalog::global().shutdown_async().await.unwrap();
    assert!(servers_with(&marker).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_servers_stop_and_start_again_on_next_use() {
    let _one = GLOBAL.lock().await;
    let aimock = Aimock::start_with("lifecycle.json", &[]);
    let dir = workdir("lifecycle", "idle");
    let marker = format!("idle-{}-", std::process::id());
    let answer = lab_prompt(&dir, &aimock, &format!("{marker}a"), 1, "just answer");
    let pid_prompt = lab_prompt(&dir, &aimock, &format!("{marker}b"), 1, "which pid");

    assert_eq!(turn(&answer).await.0, "Answered.");
    let (said, results) = turn(&pid_prompt).await;
    assert_eq!(said, "Noted.");
    let first: u32 = results[0].trim().parse().unwrap_or_else(|_| panic!("not a pid: {results:?}"));
    assert!(servers_with(&marker).len() <= 2, "bounded by the two declarations");

    // Unused for a second: both stop, their sources (and entries) stay.
    assert!(
        eventually(Duration::from_secs(10), || servers_with(&marker).is_empty()).await,
        "idle servers still run: {:?}",
        servers_with(&marker)
    );
    assert!(!alive(first), "the first lab process {first} still runs");
    let sources = lab_sources();
    assert_eq!(sources.len(), 2, "{sources:?}");
    assert!(sources.iter().all(|s| s.running == Some(false) && s.entries > 5), "{sources:?}");

    // The next use starts it again; it answers, from a new process, under the same names.
    let before = offered(&aimock).len();
    let (said, results) = turn(&pid_prompt).await;
    assert_eq!(said, "Noted.");
    let second: u32 = results[0].trim().parse().unwrap_or_else(|_| panic!("not a pid: {results:?}"));
    assert_ne!(first, second, "a new process answered");
    let names = offered(&aimock);
    assert_eq!(names[before], names[before - 1], "a restart offers the same wire names");
    assert_eq!(names[before + 1], names[before - 1]);

    ToolCatalog::global().shutdown_async().await.unwrap();
    assert!(servers_with(&marker).is_empty());
    assert!(!alive(second));
}

/// The lab over streamable HTTP, as the client `McpServer` of `url`.
fn http_lab(url: &str, idle: Option<Duration>) -> McpServer {
    McpServer::new(McpServerConfig::new("lab", McpTransport::http(url)).with_idle_timeout(idle))
}

/// The session ids of the requests after `skip` (those that carry one), in order, deduplicated.
fn sessions(peer: &peers::Peer, skip: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in peers::lab_requests(peer).into_iter().skip(skip) {
        if r.session != "-" && !out.contains(&r.session) {
            out.push(r.session);
        }
    }
    out
}

/// Whether the server answered a `DELETE` of `session` with 200.
fn deleted(peer: &peers::Peer, session: &str) -> bool {
    peers::lab_requests(peer)
        .iter()
        .any(|r| r.method == "DELETE" && r.path == "/mcp" && r.session == session && r.status == Some(200))
}

#[tokio::test(flavor = "multi_thread")]
async fn http_sessions_are_closed_with_delete() {
    within(async {
        let peer = peers::lab_http(None);
        let url = format!("{}/mcp", peer.url());

        // Shutdown.
        let server = http_lab(&url, None);
        assert_eq!(server.call("echo", Map::from_iter([("text".into(), json!("one"))])).await.unwrap().text, "one");
        let ids = sessions(&peer, 0);
        assert_eq!(ids.len(), 1, "one session: {:?}", peers::lab_requests(&peer));
        assert!(!deleted(&peer, &ids[0]));
        let started = Instant::now();
        server.shutdown().await;
        eprintln!("closing a streamable HTTP session (DELETE included) took {:?}", started.elapsed());
        assert!(deleted(&peer, &ids[0]), "no DELETE of {}: {:?}", ids[0], peers::lab_requests(&peer));
        assert!(!server.is_running());

        // The idle timeout; the next call opens a new session.
        let seen = peers::lab_requests(&peer).len();
        let server = http_lab(&url, Some(Duration::from_secs(1)));
        server.tools().await.unwrap();
        let idle_session = sessions(&peer, seen).pop().expect("a session");
        assert!(
            eventually(Duration::from_secs(10), || deleted(&peer, &idle_session)).await,
            "no DELETE after the idle timeout: {:?}",
            peers::lab_requests(&peer)
        );
        assert!(!server.is_running());
        let seen = peers::lab_requests(&peer).len();
        assert_eq!(server.call("echo", Map::from_iter([("text".into(), json!("two"))])).await.unwrap().text, "two");
        let next = sessions(&peer, seen);
        assert!(next.len() == 1 && next[0] != idle_session, "{next:?}");
        server.shutdown().await;
        assert!(deleted(&peer, &next[0]));

        // Removal of a catalog source (the `mcp` loader's server).
        let catalog = ToolCatalog::new();
        let seen = peers::lab_requests(&peer).len();
        let config = json!({"namespace": "lab", "serverName": "lab", "connection": {"kind": "http", "endpoint": url}});
        assert!(catalog.add_source_async("mcp", config).await.unwrap() > 5);
        let sources = catalog.sources();
        assert_eq!((sources.len(), sources[0].running, sources[0].declared), (1, Some(true), false), "{sources:?}");
        let removed_session = sessions(&peer, seen).pop().expect("a session");
        assert!(catalog.remove_source_async(&sources[0].id).await.unwrap());
        assert!(deleted(&peer, &removed_session), "no DELETE on removal: {:?}", peers::lab_requests(&peer));
        assert!(catalog.is_empty());

        // The drop of the last handle.
        let seen = peers::lab_requests(&peer).len();
        let server = http_lab(&url, None);
        server.tools().await.unwrap();
        let dropped_session = sessions(&peer, seen).pop().expect("a session");
        let clone = server.clone();
        drop(server);
        drop(clone);
        assert!(
            eventually(Duration::from_secs(10), || deleted(&peer, &dropped_session)).await,
            "no DELETE after the last handle dropped: {:?}",
            peers::lab_requests(&peer)
        );
    })
    .await;
}

/// A stdio lab server with `idle`.
fn stdio_lab(idle: Option<Duration>) -> McpServer {
    let py = peers::python();
    let script = peers::mcp_script("lab.py").to_string_lossy().into_owned();
    McpServer::new(
        McpServerConfig::new("lab", McpTransport::stdio(py.to_string_lossy(), [script])).with_idle_timeout(idle),
    )
}

async fn pid_of(server: &McpServer) -> u32 {
    let out = server.call("pid", Map::new()).await.expect("pid");
    out.text.trim().parse().unwrap_or_else(|_| panic!("not a pid: {}", out.text))
}

#[test]
fn the_last_handle_dropped_outside_a_runtime_ends_the_server() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = stdio_lab(None);
    let (pid, child) = runtime.block_on(within(async {
        let child: u32 = server.call("spawn_child", Map::new()).await.unwrap().text.trim().parse().unwrap();
        (pid_of(&server).await, child)
    }));
    assert!(alive(pid) && alive(child));
    // Not inside the runtime (which still runs): the session is closed on prompty's own runtime.
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(10);
    while (alive(pid) || alive(child)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid) && !alive(child), "server {pid} or its child {child} still runs");
    drop(runtime);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_graceful_stdio_close_and_a_call_longer_than_the_idle_timeout() {
    within(async {
        // A call that lasts longer than the idle timeout is not cut by it.
        let server = stdio_lab(Some(Duration::from_secs(1)));
        let pid = pid_of(&server).await;
        let args = Map::from_iter([("seconds".into(), Value::from(2.5))]);
        assert_eq!(server.call("sleep", args).await.unwrap().text, "awake");
        assert_eq!(pid_of(&server).await, pid, "the same process answered after the long call");
        // Then, unused, it stops.
        assert!(eventually(Duration::from_secs(10), || !alive(pid)).await, "idle server {pid} still runs");
        assert!(!server.is_running());

        // How long a graceful close takes (stdin closed, the server exits by itself).
        let server = stdio_lab(None);
        let pid = pid_of(&server).await;
        let started = Instant::now();
        server.shutdown().await;
        eprintln!("a graceful close of the stdio lab server took {:?}", started.elapsed());
        assert!(!alive(pid));
    })
    .await;
}
