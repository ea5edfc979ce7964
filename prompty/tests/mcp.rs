//! The MCP client (`prompty::mcp`) against real MCP servers on stdio and on 127.0.0.1:
//! `@modelcontextprotocol/server-everything` (stdio and streamable HTTP),
//! `@modelcontextprotocol/server-filesystem`, servers written with the official Python SDK
//! (`tests/e2e/mcp/paged.py`, `lab.py`) and a hand-written hostile one (`hostile.py`).
//!
//! Every test is bounded in time (`within`, 60 s, unless it says otherwise).

#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/peers.rs"]
mod peers;

use common::{alive, eventually, within};
use prompty::mcp::{McpOutput, McpServer, McpServerConfig, McpTransport};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn everything_stdio() -> McpServer {
    let bin = peers::npm_bin("mcp-server-everything");
    McpServer::new(McpServerConfig::new("everything", McpTransport::stdio(bin.to_string_lossy(), ["stdio"])))
}

/// A config running `tests/e2e/mcp/<script>` with the Python of the test virtualenv.
fn python_config(name: &str, script: &str, extra: &[&str]) -> McpServerConfig {
    let py = peers::python();
    let mut argv = vec![peers::mcp_script(script).to_string_lossy().into_owned()];
    argv.extend(extra.iter().map(|s| s.to_string()));
    McpServerConfig::new(name, McpTransport::stdio(py.to_string_lossy(), argv))
}

fn lab() -> McpServer {
    McpServer::new(python_config("lab", "lab.py", &[]))
}

fn names(tools: &[prompty::mcp::McpToolInfo]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

async fn pid_of(server: &McpServer) -> u32 {
    let out = server.call("pid", Map::new()).await.expect("pid");
    out.text.trim().parse().unwrap_or_else(|_| panic!("not a pid: {}", out.text))
}

/// What server-everything offers, over either transport. `notified`: whether its
/// `tools/list_changed` (sent while it handles `notifications/initialized`) reaches this client.
async fn exercise_everything(server: &McpServer, notified: bool) {
    let tools = server.tools().await.expect("tools/list");
    let listed = names(&tools);
    for expected in ["echo", "get-sum", "get-tiny-image", "get-structured-content"] {
        assert!(listed.contains(&expected), "{expected} missing from {listed:?}");
    }
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.input_schema["type"], "object");
    assert!(echo.input_schema["properties"]["message"].is_object(), "{}", echo.input_schema);
    assert!(echo.description.as_deref().is_some_and(|d| !d.is_empty()));

    let out = server.call("echo", args(json!({"message": "hello mcp"}))).await.unwrap();
    assert_eq!(out, McpOutput { text: "Echo: hello mcp".into(), ..Default::default() });

    let out = server.call("get-sum", args(json!({"a": 2, "b": 40}))).await.unwrap();
    assert!(!out.is_error);
    assert!(out.text.contains("42"), "{}", out.text);

    let out = server.call("get-tiny-image", Map::new()).await.unwrap();
    assert!(!out.is_error);
    assert_eq!(out.images.len(), 1, "{out:?}");
    assert_eq!(out.images[0].mime_type, "image/png");
    assert!(out.images[0].data.starts_with("iVBORw0KGgo"), "a PNG in base64");

    let out = server.call("get-structured-content", args(json!({"location": "New York"}))).await.unwrap();
    assert!(out.structured.as_ref().is_some_and(|s| s.get("temperature").is_some()), "{out:?}");

    // Errors the server reports are results the model sees, not failures of the call.
    let out = server.call("get-sum", args(json!({"a": "two"}))).await.unwrap();
    assert!(out.is_error, "{out:?}");
    assert!(out.text.contains("Invalid arguments"), "{}", out.text);
    let out = server.call("no-such-tool", Map::new()).await.unwrap();
    assert!(out.is_error && out.text.contains("no-such-tool"), "{out:?}");

    // server-everything registers more tools once initialized (`simulate-research-query` for a
    // client without sampling, elicitation or roots) and says so with
    // `notifications/tools/list_changed`. Over stdio the notification arrives: the generation goes
    // up, and the list is fetched again. Over streamable HTTP it is sent before the client's
    // standalone GET stream exists, so it is lost; the tools were registered before the first
    // listing anyway.
    if notified {
        assert!(eventually(Duration::from_secs(10), || server.list_generation() >= 1).await, "no list_changed seen");
    }
    let again = server.tools().await.unwrap();
    assert!(names(&again).contains(&"simulate-research-query"), "{:?}", names(&again));
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_stdio() {
    within(async {
        let server = everything_stdio();
        assert_eq!(server.list_generation(), 0);
        exercise_everything(&server, true).await;
        assert!(server.pid().await.is_some());
        let stderr = server.stderr_tail().await.unwrap_or_default();
        assert!(stderr.contains("Starting default (STDIO) server"), "stderr kept: {stderr}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_streamable_http() {
    let peer = peers::everything_http();
    within(async {
        let server = McpServer::new(McpServerConfig::new("everything-http", McpTransport::http(peer.url() + "/mcp")));
        exercise_everything(&server, false).await;
        assert_eq!(server.list_generation(), 0, "(if this fails, the notification now reaches HTTP clients)");
        assert_eq!(server.pid().await, None);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_server_restarted_means_a_new_session() {
    let peer = peers::everything_http();
    let port = peer.port;
    within(async move {
        let server = McpServer::new(
            McpServerConfig::new("everything-http", McpTransport::http(format!("http://127.0.0.1:{port}/mcp")))
                .with_call_timeout(Duration::from_secs(10)),
        );
        let out = server.call("echo", args(json!({"message": "one"}))).await.unwrap();
        assert_eq!(out.text, "Echo: one");
        let generation = server.list_generation();

        drop(peer);
        let err = server.call("echo", args(json!({"message": "two"}))).await.unwrap_err().to_string();
        assert!(err.contains("everything-http"), "the error names the server: {err}");

        let _peer = tokio::task::spawn_blocking(move || peers::everything_http_on(port)).await.unwrap();
        let out = server.call("echo", args(json!({"message": "three"}))).await.unwrap();
        assert_eq!(out.text, "Echo: three");
        assert!(server.list_generation() > generation, "a new session bumps the generation");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn filesystem_lists_and_reads() {
    let dir = std::env::temp_dir().join(format!("prompty-mcp-fs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let file = dir.join("notes.txt");
    std::fs::write(&file, "first line\nsecond line\n").unwrap();
    within(async {
        let bin = peers::npm_bin("mcp-server-filesystem");
        let server = McpServer::new(McpServerConfig::new(
            "files",
            McpTransport::stdio(bin.to_string_lossy(), [dir.to_string_lossy()]),
        ));
        let tools = server.tools().await.unwrap();
        for expected in ["read_text_file", "list_directory", "write_file"] {
            assert!(names(&tools).contains(&expected), "{expected} missing from {:?}", names(&tools));
        }
        let out = server.call("read_text_file", args(json!({"path": file.to_string_lossy()}))).await.unwrap();
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, "first line\nsecond line\n");

        let out = server.call("list_directory", args(json!({"path": dir.to_string_lossy()}))).await.unwrap();
        assert!(out.text.contains("notes.txt"), "{}", out.text);

        // Outside the allowed folder: the server refuses, and the refusal is a result.
        let out = server.call("read_text_file", args(json!({"path": "/etc/hostname"}))).await.unwrap();
        assert!(out.is_error, "{out:?}");
        assert!(out.text.contains("denied") || out.text.contains("outside"), "{}", out.text);
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The server's stderr tail once it holds `n` `list` lines, or after 5 s: the lines arrive through a
/// pipe on their own schedule, possibly after the answer they were printed before.
async fn stderr_with_lists(server: &McpServer, n: usize) -> String {
    let mut stderr = String::new();
    for _ in 0..50 {
        stderr = server.stderr_tail().await.unwrap();
        if stderr.lines().filter(|l| l.starts_with("list ")).count() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stderr
}

#[tokio::test(flavor = "multi_thread")]
async fn pagination_follows_every_cursor() {
    within(async {
        let server = McpServer::new(python_config("paged", "paged.py", &["25", "7"]));
        let tools = server.tools().await.unwrap();
        let expected: Vec<String> = (0..25).map(|i| format!("tool_{i:02}")).collect();
        assert_eq!(names(&tools), expected.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(tools[24].description.as_deref(), Some("Tool number 24."));
        let stderr = stderr_with_lists(&server, 4).await;
        assert_eq!(stderr.lines().filter(|l| l.starts_with("list ")).count(), 4, "four pages asked: {stderr}");

        // Cached: no new request, the same list.
        let again = server.tools().await.unwrap();
        assert!(Arc::ptr_eq(&tools, &again));
        let refreshed = server.refresh().await.unwrap();
        assert_eq!(*refreshed, *tools);
        let stderr = stderr_with_lists(&server, 8).await;
        assert_eq!(stderr.lines().filter(|l| l.starts_with("list ")).count(), 8, "refresh lists again: {stderr}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn endless_pages_stop_at_the_bound() {
    within(async {
        let server = McpServer::new(python_config("endless", "paged.py", &["endless"]).with_max_pages(5));
        let err = server.tools().await.unwrap_err().to_string();
        assert!(err.contains("endless") && err.contains("5 pages") && err.contains("max_pages"), "{err}");
        let stderr = stderr_with_lists(&server, 5).await;
        assert_eq!(stderr.lines().filter(|l| l.starts_with("list ")).count(), 5, "{stderr}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn list_changed_invalidates_the_cache() {
    within(async {
        let server = lab();
        let before = server.tools().await.unwrap();
        assert!(!names(&before).contains(&"late_tool"));
        let generation = server.list_generation();
        assert!(Arc::ptr_eq(&before, &server.tools().await.unwrap()), "cached while nothing changed");

        let out = server.call("add_tool", args(json!({"name": "late_tool"}))).await.unwrap();
        assert_eq!(out.text, "added late_tool");
        assert!(eventually(Duration::from_secs(5), || server.list_generation() > generation).await);
        let after = server.tools().await.unwrap();
        assert!(names(&after).contains(&"late_tool"), "{:?}", names(&after));
        let out = server.call("late_tool", Map::new()).await.unwrap();
        assert_eq!(out.text, "late_tool ran");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn list_changed_over_streamable_http() {
    let peer = peers::lab_http(None);
    within(async {
        let server = McpServer::new(McpServerConfig::new("lab-http", McpTransport::http(peer.url() + "/mcp")));
        let before = server.tools().await.unwrap();
        assert!(names(&before).contains(&"echo"));
        let generation = server.list_generation();
        // The notification travels on the SSE stream of the `tools/call` request.
        let out = server.call("add_tool", args(json!({"name": "late_http_tool"}))).await.unwrap();
        assert_eq!(out.text, "added late_http_tool");
        assert!(eventually(Duration::from_secs(5), || server.list_generation() > generation).await);
        let after = server.tools().await.unwrap();
        assert!(names(&after).contains(&"late_http_tool"), "{:?}", names(&after));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_is_reported_and_the_next_call_restarts() {
    within(async {
        let server = lab();
        let first = pid_of(&server).await;
        let err = server.call("crash", args(json!({"code": 7}))).await.unwrap_err();
        let message = err.to_string();
        assert!(matches!(&err, prompty::Error::Tool { name, .. } if name == "crash"), "{err:?}");
        assert!(message.contains("MCP server 'lab'"), "names the server: {message}");
        assert!(message.contains("lab: about to crash"), "has the stderr tail: {message}");
        assert!(message.len() < 9 * 1024, "the tail is bounded ({} bytes)", message.len());
        assert!(!message.contains("lab: started"), "only the tail (the start line was pushed out)");

        let generation = server.list_generation();
        let second = pid_of(&server).await;
        assert_ne!(first, second, "a new process");
        assert!(!alive(first));
        assert!(server.list_generation() > generation);
        assert_eq!(server.call("echo", args(json!({"text": "back"}))).await.unwrap().text, "back");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn results_errors_and_content_kinds() {
    within(async {
        let server = McpServer::new(python_config("lab", "lab.py", &[]).with_max_text_bytes(1000));

        let out = server.call("fail", Map::new()).await.unwrap();
        assert_eq!(out, McpOutput::error("the tool failed on purpose"));
        // JSON-RPC errors (a raising handler, an unknown tool) are results flagged as errors.
        let out = server.call("raise", Map::new()).await.unwrap();
        assert!(
            out.is_error && out.text.contains("raised on purpose") && out.text.contains("JSON-RPC error"),
            "{out:?}"
        );
        let out = server.call("nope", Map::new()).await.unwrap();
        assert!(out.is_error && out.text.contains("no tool named nope"), "{out:?}");

        let out = server.call("structured", Map::new()).await.unwrap();
        assert_eq!(out.structured, Some(json!({"temperature": 21.5, "unit": "C"})));
        assert_eq!(out.text, r#"{"temperature":21.5,"unit":"C"}"#);

        let out = server.call("mixed", Map::new()).await.unwrap();
        assert_eq!(
            out.text,
            "first\n[audio: audio/wav, 8 bytes of base64]\nnote body\n[resource: file:///data.bin \
             (application/octet-stream)]\n[resource link: https://example.invalid/doc]"
        );
        assert_eq!(
            out.images,
            vec![prompty::mcp::McpImage { mime_type: "image/png".into(), data: "iVBORw0KGgo=".into() }]
        );

        let out = server.call("big", args(json!({"bytes": 5000}))).await.unwrap();
        assert!(out.text.starts_with(&"x".repeat(1000)));
        assert!(out.text.ends_with("\n[truncated: 4000 more bytes]"), "{}", &out.text[990..]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_call_times_out_and_the_session_survives() {
    within(async {
        let server = McpServer::new(python_config("lab", "lab.py", &[]).with_call_timeout(Duration::from_secs(1)));
        let pid = pid_of(&server).await;
        // The message is the call timeout's (not the 30 s sleep's end, nor `within`'s hang guard).
        let err = server.call("sleep", args(json!({"seconds": 30}))).await.unwrap_err().to_string();
        assert!(err.contains("'lab'") && err.contains("within 1s"), "{err}");
        assert_eq!(pid_of(&server).await, pid, "the same process still serves");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_share_one_session() {
    within(async {
        let server = lab();
        let calls = (0..8).map(|i| {
            let server = server.clone();
            tokio::spawn(async move { server.call("echo", args(json!({"text": format!("n{i}")}))).await })
        });
        for (i, call) in calls.enumerate() {
            assert_eq!(call.await.unwrap().unwrap().text, format!("n{i}"));
        }
        let pid = pid_of(&server).await;
        assert_eq!(server.pid().await, Some(pid));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_last_handle_kills_the_process_group() {
    within(async {
        let server = lab();
        let pid = pid_of(&server).await;
        let child: u32 = server.call("spawn_child", Map::new()).await.unwrap().text.trim().parse().unwrap();
        assert!(alive(pid) && alive(child));
        let clone = server.clone();
        drop(server);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(alive(pid), "a clone still holds the session");
        drop(clone);
        assert!(eventually(Duration::from_secs(10), || !alive(pid)).await, "server {pid} still runs");
        assert!(eventually(Duration::from_secs(10), || !alive(child)).await, "its child {child} still runs");
    })
    .await;
}

#[test]
fn dropped_after_its_runtime_is_gone() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = lab();
    let (pid, child) = runtime.block_on(within(async {
        let child: u32 = server.call("spawn_child", Map::new()).await.unwrap().text.trim().parse().unwrap();
        (pid_of(&server).await, child)
    }));
    drop(runtime);
    // No runtime left to end the session gracefully: the process group is killed at once.
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(10);
    while (alive(pid) || alive(child)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(pid) && !alive(child), "server {pid} or its child {child} still runs");
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_output_never_panics() {
    within(async {
        let server =
            McpServer::new(python_config("hostile", "hostile.py", &[]).with_call_timeout(Duration::from_secs(3)));
        let tools = server.tools().await.unwrap();
        let listed = names(&tools);
        assert_eq!(listed.iter().filter(|n| **n == "ok").count(), 1, "a duplicate name keeps its first entry");
        assert_eq!(tools.iter().find(|t| t.name == "ok").unwrap().description.as_deref(), Some("hostile: ok"));
        assert!(listed.contains(&"long_description") && listed.contains(&"uni\u{2028}code\u{0}name"));

        let out = server.call("garbage_then_ok", Map::new()).await.unwrap();
        assert_eq!(out.text, "survived");
        let out = server.call("plain_error", Map::new()).await.unwrap();
        assert_eq!(out, McpOutput::error("plain failure (JSON-RPC error -32000)"));
        let out = server.call("controls", Map::new()).await.unwrap();
        assert!(out.text.starts_with("bell"));

        // Answers that do not fit the protocol: each call ends with a `Tool` error naming the
        // server and the call, never a panic, and none takes the process down. They run together.
        // An answer the client reads but cannot accept fails at once; one it cannot read at all
        // (nested past serde_json's depth limit, a line past the size limit, an error whose code is
        // not a number) is dropped, so the call ends at its 3 s timeout. (`within` is the hang guard.)
        let rejected =
            |name: &str| format!("MCP server 'hostile': the call of `{name}` failed: Unexpected response type");
        let unanswered = |name: &str| {
            format!("MCP server 'hostile' did not answer the call of `{name}` within 3s (the call was cancelled)")
        };
        let expected = [
            ("wrong_shape", rejected("wrong_shape")),
            ("unknown_block", rejected("unknown_block")),
            ("deep", unanswered("deep")),
            ("huge", unanswered("huge")),
            ("odd_error", unanswered("odd_error")),
            ("null_result", rejected("null_result")),
        ];
        let broken = expected.clone().map(|(name, _)| {
            let server = server.clone();
            tokio::spawn(async move { (name, server.call(name, Map::new()).await) })
        });
        for (call, (_, message)) in broken.into_iter().zip(expected) {
            let (name, result) = call.await.expect("no panic");
            match result {
                Err(prompty::Error::Tool { name: tool, message: got }) => {
                    assert_eq!((tool.as_str(), got), (name, message), "{name}")
                }
                other => panic!("{name}: expected a Tool error, got {other:?}"),
            }
        }
        assert_eq!(server.call("ok", Map::new()).await.unwrap().text, "fine", "the session still works");

        // A server that closes its stdout but keeps running: rmcp sees EOF, waits 3 s for the
        // process to exit, sends SIGTERM; then the call fails, and the next one starts a new
        // process.
        let server =
            McpServer::new(python_config("hostile", "hostile.py", &[]).with_call_timeout(Duration::from_secs(20)));
        let err = server.call("close_stdout", Map::new()).await.unwrap_err().to_string();
        assert!(err.contains("'hostile'") && err.contains("closing stdout"), "{err}");
        let old: u32 = err
            .split("pid ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no pid in {err}"));
        assert_eq!(server.call("ok", Map::new()).await.unwrap().text, "fine");
        assert!(eventually(Duration::from_secs(10), || !alive(old)).await, "the old server {old} was killed");

        let err = server.call("exit_silently", Map::new()).await.unwrap_err().to_string();
        assert!(err.contains("'hostile'"), "{err}");
        assert_eq!(server.call("ok", Map::new()).await.unwrap().text, "fine");

        // A tools/list page that does not fit the schema: an error naming the server.
        let bad = McpServer::new(
            python_config("badlist", "hostile.py", &["badlist"]).with_call_timeout(Duration::from_secs(2)),
        );
        let err = bad.tools().await.unwrap_err().to_string();
        assert!(err.contains("'badlist'"), "{err}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_is_an_error() {
    within(async {
        let server =
            McpServer::new(McpServerConfig::new("ghost", McpTransport::stdio("/nonexistent/mcp-server", [""; 0])));
        let err = server.tools().await.unwrap_err().to_string();
        assert!(err.contains("MCP server 'ghost' could not be started") && err.contains("/nonexistent"), "{err}");
        let err = server.call("x", Map::new()).await.unwrap_err();
        assert!(matches!(err, prompty::Error::Tool { .. }), "{err:?}");

        // A process that is no MCP server: exits at once.
        let server = McpServer::new(
            McpServerConfig::new("false", McpTransport::stdio("sh", ["-c", "echo not an mcp server >&2; exit 3"]))
                .with_connect_timeout(Duration::from_secs(5)),
        );
        let err = server.tools().await.unwrap_err().to_string();
        assert!(err.contains("'false'") && err.contains("not an mcp server"), "{err}");

        // A process that never answers `initialize`: the connect timeout ends it, and it is killed
        // (with what it started).
        let server = McpServer::new(
            McpServerConfig::new(
                "mute",
                McpTransport::stdio("sh", ["-c", "sleep 300 & echo \"pids $$ $!\" >&2; wait"]),
            )
            .with_connect_timeout(Duration::from_secs(1)),
        );
        // The message is the connect timeout's (`within` is the hang guard).
        let err = server.tools().await.unwrap_err().to_string();
        assert!(err.contains("'mute'") && err.contains("within 1s"), "{err}");
        let pids: Vec<u32> = err
            .split("pids ")
            .nth(1)
            .map(|rest| rest.split_whitespace().take(2).filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default();
        assert_eq!(pids.len(), 2, "{err}");
        for pid in pids {
            assert!(eventually(Duration::from_secs(10), || !alive(pid)).await, "{pid} still runs");
        }

        // Nothing listens there.
        let port = common::free_port();
        let server = McpServer::new(
            McpServerConfig::new("nobody", McpTransport::http(format!("http://127.0.0.1:{port}/mcp")))
                .with_connect_timeout(Duration::from_secs(5)),
        );
        let err = server.tools().await.unwrap_err().to_string();
        assert!(err.contains("'nobody'"), "{err}");
    })
    .await;
}

const SECRET: &str = "mcp-very-secret-7f3a9";

#[tokio::test(flavor = "multi_thread")]
async fn secrets_never_show() {
    within(async {
        // The child prints its secret to stderr and fails: the error carries the tail, scrubbed.
        let config = McpServerConfig::new("leaky", McpTransport::stdio("sh", ["-c", "echo token=$TOKEN >&2; exit 1"]))
            .with_env("TOKEN", SECRET)
            .with_connect_timeout(Duration::from_secs(5));
        assert!(!format!("{config:?}").contains(SECRET));
        let server = McpServer::new(config);
        assert!(!format!("{server:?}").contains(SECRET));
        let err = server.tools().await.unwrap_err().to_string();
        assert!(err.contains("token=[REDACTED]"), "{err}");
        assert!(!err.contains(SECRET), "{err}");

        // The child does get the value (scrubbed from the message as it is one), and nothing of this
        // process's environment but the basics.
        let config = McpServerConfig::new(
            "env",
            McpTransport::stdio(
                "sh",
                ["-c", "echo \"token=$TOKEN home=${HOME:+set} cargo=${CARGO:-unset}\" >&2; exit 1"],
            ),
        )
        .with_env("TOKEN", "visible-value");
        let err = McpServer::new(config).tools().await.unwrap_err().to_string();
        assert!(err.contains("token=[REDACTED] home=set cargo=unset"), "{err}");

        // HTTP: header values, bearer tokens and the URL's query never show in errors.
        let port = common::free_port();
        let config =
            McpServerConfig::new("http", McpTransport::http(format!("http://127.0.0.1:{port}/mcp?key={SECRET}")))
                .with_header("x-api-key", SECRET)
                .with_bearer(SECRET)
                .with_connect_timeout(Duration::from_secs(5));
        assert!(!format!("{config:?}").contains(SECRET));
        let err = McpServer::new(config).tools().await.unwrap_err().to_string();
        assert!(!err.contains(SECRET), "{err}");
    })
    .await;
}

/// A `tracing` subscriber that writes every span field and event, at every level, into a string.
#[derive(Clone, Default)]
struct Recorder(Arc<std::sync::Mutex<String>>);

impl tracing::field::Visit for Recorder {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let mut log = self.0.lock().unwrap();
        log.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        span.record(&mut self.clone());
        self.0.lock().unwrap().push('\n');
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut self.clone());
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        self.0.lock().unwrap().push_str(&format!("{} ", event.metadata().target()));
        event.record(&mut self.clone());
        self.0.lock().unwrap().push('\n');
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

// On the test's own thread (current-thread runtime), so that the recorder sees everything the
// client, rmcp, reqwest and hyper log, and nothing of the other tests.
#[tokio::test]
async fn secrets_never_reach_the_logs() {
    const KEY: &str = "log-secret-0b9d2";
    let peer = peers::lab_http(Some(KEY));
    let recorder = Recorder::default();
    let log = Arc::clone(&recorder.0);
    let _guard = tracing::subscriber::set_default(recorder);
    within(async {
        let stdio = McpServer::new(python_config("lab", "lab.py", &[]).with_env("LAB_SECRET", KEY));
        assert_eq!(stdio.call("echo", args(json!({"text": "quiet"}))).await.unwrap().text, "quiet");
        let _ = stdio.call("crash", Map::new()).await.unwrap_err();
        let http =
            McpServer::new(McpServerConfig::new("lab-http", McpTransport::http(peer.url() + "/mcp")).with_bearer(KEY));
        assert_eq!(http.call("echo", args(json!({"text": "quiet"}))).await.unwrap().text, "quiet");
        let wrong = McpServer::new(
            McpServerConfig::new("wrong", McpTransport::http(peer.url() + "/mcp?token=" + KEY))
                .with_header("x-api-key", format!("{KEY}-wrong")),
        );
        let err = wrong.tools().await.unwrap_err().to_string();
        assert!(err.contains("401") && !err.contains(KEY), "{err}");
        stdio.shutdown().await;
        http.shutdown().await;
    })
    .await;
    let log = log.lock().unwrap().clone();
    assert!(log.len() > 1000 && log.contains("rmcp"), "the recorder saw the clients' logs: {log}");
    assert!(!log.contains(KEY), "a secret reached the logs:\n{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_headers_reach_the_server() {
    const KEY: &str = "lab-key-5e1f";
    let peer = peers::lab_http(Some(KEY));
    within(async {
        let url = peer.url() + "/mcp";
        let quick = |c: McpServerConfig| c.with_connect_timeout(Duration::from_secs(10));
        let server = McpServer::new(quick(
            McpServerConfig::new("keyed", McpTransport::http(&url)).with_header("x-api-key", KEY),
        ));
        assert_eq!(server.call("echo", args(json!({"text": "let in"}))).await.unwrap().text, "let in");
        let server = McpServer::new(quick(McpServerConfig::new("bearer", McpTransport::http(&url)).with_bearer(KEY)));
        assert_eq!(server.call("echo", args(json!({"text": "bearer"}))).await.unwrap().text, "bearer");

        let server = McpServer::new(quick(
            McpServerConfig::new("wrong-key", McpTransport::http(&url)).with_header("x-api-key", "wrong-key-value"),
        ));
        let err = server.tools().await.unwrap_err().to_string();
        assert!(err.contains("'wrong-key'") && err.contains("401"), "{err}");
        assert!(!err.contains("wrong-key-value"), "{err}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn configs_from_tool_declarations() {
    let mcp_dir = peers::mcp_script("");
    let py = peers::python();
    let text = format!(
        "---\nname: agent\ntools:\n  - name: lab\n    kind: mcp\n    serverName: lab-server\n    connection:\n      \
         kind: stdio\n      command: {}\n      args: [lab.py]\n      cwd: .\n      env:\n        LAB_TOKEN: \
         abc-secret-9\n  - name: remote\n    kind: mcp\n    serverName: remote-server\n    connection:\n      kind: \
         http\n      endpoint: http://127.0.0.1:9/mcp\n      apiKey: key-secret-9\n      headers:\n        x-team: \
         blue\n  - name: registered\n    kind: mcp\n    serverName: reg\n    connection:\n      kind: reference\n      \
         name: my-mcp\n  - name: legacy\n    kind: mcp\n    serverName: old\n    connection:\n      kind: sse\n      \
         endpoint: http://127.0.0.1:9/sse\n---\nhi",
        py.display()
    );
    let agent = prompty::load_str(&text, &mcp_dir, "agent.prompty").unwrap();
    let tool = |i: usize| match &agent.tools.as_ref().unwrap()[i].kind {
        prompty::ToolKind::Mcp(m) => m.clone(),
        other => panic!("{other:?}"),
    };

    let lab = McpServerConfig::from_tool(&tool(0), &agent).unwrap();
    assert_eq!(lab.name, "lab-server");
    let McpTransport::Stdio { cwd, env, .. } = &lab.transport else { panic!("{lab:?}") };
    assert_eq!(cwd.as_deref(), Some(mcp_dir.join(".").as_path()));
    assert_eq!(env["LAB_TOKEN"].expose(), "abc-secret-9");
    assert!(!format!("{lab:?}").contains("abc-secret-9"));
    within(async {
        let server = McpServer::new(lab);
        assert_eq!(
            server.call("echo", args(json!({"text": "from a declaration"}))).await.unwrap().text,
            "from a declaration"
        );
    })
    .await;

    let remote = McpServerConfig::from_tool(&tool(1), &agent).unwrap();
    let McpTransport::Http { url, headers } = &remote.transport else { panic!("{remote:?}") };
    assert_eq!(url, "http://127.0.0.1:9/mcp");
    assert_eq!(headers["Authorization"].expose(), "Bearer key-secret-9");
    assert_eq!(headers["x-team"].expose(), "blue");
    assert!(!format!("{remote:?}").contains("key-secret-9"));

    let err = McpServerConfig::from_tool(&tool(2), &agent).unwrap_err().to_string();
    assert!(err.contains("my-mcp"), "{err}");
    prompty::register_connection(
        "my-mcp",
        McpServerConfig::new("whatever", McpTransport::http("http://127.0.0.1:9/x")),
    );
    let registered = McpServerConfig::from_tool(&tool(2), &agent).unwrap();
    assert_eq!(registered.name, "reg");
    assert_eq!(registered.transport, McpTransport::http("http://127.0.0.1:9/x"));

    let err = McpServerConfig::from_tool(&tool(3), &agent).unwrap_err().to_string();
    assert!(err.contains("'old'") && err.contains("SSE"), "{err}");
}
