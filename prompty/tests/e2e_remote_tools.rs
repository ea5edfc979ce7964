//! The agent loop with tools from elsewhere: a prompt declares an MCP server
//! (`@modelcontextprotocol/server-everything` over stdio, `server-filesystem`) and an OpenAPI
//! document (Petstore 3.0 of `@readme/oas-examples`, mocked by prism); aimock plays the model and
//! calls their tools. Every server is real and runs on 127.0.0.1 (or as a child process); the
//! checks read aimock's request journal to see what came back to the model.

#[path = "support/captured_log.rs"]
mod captured_log;
#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/peers.rs"]
mod peers;

use captured_log::Captured;
use common::{within, workdir, write_and_load, Aimock};
use prompty::{AgentEvent, Guardrails, TurnOptions, Verdict};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn model(server: &Aimock) -> String {
    format!(
        "model:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    endpoint: {}/v1\n    apiKey: sk-e2e\n",
        server.url()
    )
}

/// The `kind: mcp` declaration of server-everything over stdio, namespace `everything` (its
/// `name`).
fn everything_tool(extra: &str) -> String {
    format!(
        "  - name: everything\n    kind: mcp\n    serverName: everything-server\n    connection:\n      kind: stdio\n      \
         command: {}\n      args: [stdio]\n{extra}",
        peers::npm_bin("mcp-server-everything").display()
    )
}

/// The requests the model received, oldest first (chat shape).
fn bodies(server: &Aimock) -> Vec<Value> {
    server.requests_to("/v1/chat/completions").into_iter().map(|e| e["body"].clone()).collect()
}

fn tool_messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").cloned().collect()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// A prompt for the `write a file` conversation with the `tools` (YAML list items).
fn write_prompt(server: &Aimock, tools: &str) -> String {
    format!("---\nname: files\n{}tools:\n{tools}---\nuser:\nwrite a file", model(server))
}

/// Runs a turn recording its events: the answer and the tool results.
async fn turn_with_events<'a>(
    prompt: impl Into<prompty::PromptRef<'a>>,
    options: TurnOptions,
) -> (String, Vec<(String, String, bool)>) {
    let (options, events) = options.record_events();
    let answer = within(prompty::turn_async(prompt, &json!({}), options)).await.unwrap();
    let results = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { name, result, is_error, .. } => Some((name, result, is_error)),
            _ => None,
        })
        .collect();
    (answer, results)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_calls_an_mcp_tool_and_an_openapi_operation_in_one_conversation() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let prism = peers::prism_mock("3.0", "petstore.json");
    let dir = workdir("remote", "both");
    std::fs::copy(peers::oas_example("3.0", "petstore.json"), dir.join("petstore.json")).unwrap();
    // getPetById needs the `api_key` header (its security scheme): the connection's key goes there.
    let text = format!(
        "---\nname: remote\n{}tools:\n{}  - name: petstore\n    kind: openapi\n    specification: ./petstore.json\n    \
         connection:\n      kind: key\n      endpoint: {}\n      apiKey: special-key\n---\nuser:\necho and find pet 7",
        model(&server),
        everything_tool(""),
        prism.url()
    );
    let agent = write_and_load(&dir, "both", &text);
    let (answer, events) = turn_with_events(&agent, TurnOptions::new().parallel_tool_calls(true)).await;
    assert_eq!(answer, "The server echoed your words and pet 7 was found.");
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|(_, _, is_error)| !is_error), "{events:?}");

    let sent = bodies(&server);
    assert_eq!(sent.len(), 2, "one tool round, then the answer");
    // The model saw the server's tools and the document's operations under namespaced wire names.
    let names = tool_names(&sent[0]);
    assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
    assert!(names.contains(&"everything__get-sum".to_owned()), "{names:?}");
    assert!(names.contains(&"petstore__getPetById".to_owned()), "{names:?}");
    assert!(names.contains(&"petstore__addPet".to_owned()), "{names:?}");
    // Both results came back to the model, in call order.
    let results = tool_messages(&sent[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["tool_call_id"], "call_mcp_1");
    assert_eq!(results[0]["content"], "Echo: hello from the model");
    assert_eq!(results[1]["tool_call_id"], "call_api_1");
    let pet = results[1]["content"].as_str().unwrap();
    assert!(pet.contains("\"status\":200") && pet.contains("\"name\""), "{pet}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_an_mcp_tool_returns_reaches_the_model_as_an_image() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("remote", "image");
    let text = format!(
        "---\nname: image\n{}tools:\n{}---\nuser:\nshow me the tiny image",
        model(&server),
        everything_tool("")
    );
    let agent = write_and_load(&dir, "image", &text);
    let answer: String = within(prompty::turn_async(&agent, &json!({}), TurnOptions::new())).await.unwrap();
    assert_eq!(answer, "A tiny image.");
    let sent = bodies(&server);
    let messages = sent[1]["messages"].as_array().unwrap();
    // Chat takes no image in a tool message: it follows the tool message in a user message.
    let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
    let images = &messages[tool + 1];
    assert_eq!(images["role"], "user", "{messages:?}");
    let url = images["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,iVBOR"), "{url}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_namespace_is_the_declarations_name_and_the_server_name_of_earlier_versions_still_runs() {
    use tracing::instrument::WithSubscriber;
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("remote", "namespace");
    // The declaration `everything_server` of the server `everything`: its tools are offered as
    // `everything_server__<tool>`; the model (a conversation recorded by an earlier version)
    // calls `everything__get-tiny-image`, the server's name.
    let tool = format!(
        "  - name: everything_server\n    kind: mcp\n    serverName: everything\n    connection:\n      kind: stdio\n      \
         command: {}\n      args: [stdio]\n",
        peers::npm_bin("mcp-server-everything").display()
    );
    let text = format!("---\nname: image\n{}tools:\n{tool}---\nuser:\nshow me the tiny image", model(&server));
    let agent = write_and_load(&dir, "old-names", &text);
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    let (answer, results) = turn_with_events(&agent, TurnOptions::new()).with_subscriber(subscriber).await;
    assert_eq!(answer, "A tiny image.");
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, "everything__get-tiny-image");
    assert!(!results[0].2, "the call in the old spelling ran: {results:?}");
    let names = tool_names(&bodies(&server)[0]);
    assert!(names.contains(&"everything_server__get-tiny-image".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("everything__")), "{names:?}");
    let logged = captured.text();
    assert!(
        logged.contains(
            "the model called `everything__get-tiny-image`, the name earlier versions gave the tool \
             `get-tiny-image` of the MCP server `everything`: it runs the declaration `everything_server`, whose \
             tools are now offered as `everything_server__get-tiny-image`"
        ),
        "{logged}"
    );
}

#[test]
fn the_mcp_catalog_loader_takes_its_namespace_as_a_declaration_takes_its_name() {
    use prompty::catalog::ToolCatalog;
    let connection = json!({"kind": "stdio", "command": peers::npm_bin("mcp-server-everything"), "args": ["stdio"]});
    let namespaces = |config: Value| {
        let catalog = ToolCatalog::new();
        let n = catalog.add_source("mcp", config).unwrap();
        assert!(n > 3, "server-everything lists its tools: {n}");
        let mut found: Vec<String> = catalog.entries().iter().map(|e| e.namespace.clone()).collect();
        found.dedup();
        found
    };
    let named = json!({"namespace": "ev", "serverName": "everything", "connection": connection});
    assert_eq!(namespaces(named), ["ev"]);
    // The spelling of earlier versions (no `namespace`): the server's name, with a warning.
    let unnamed = json!({"serverName": "everything", "connection": connection});
    assert_eq!(namespaces(unnamed), ["everything"]);
    let bad = json!({"namespace": "", "serverName": "everything", "connection": connection});
    let err = ToolCatalog::new().add_source("mcp", bad).unwrap_err().to_string();
    assert!(err.contains("`namespace` must be a non-empty string"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_openapi_document_outside_the_prompts_folder_is_read_only_from_an_allowed_root() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let prism = peers::prism_mock("3.0", "petstore.json");
    let dir = workdir("remote", "outside-prompt");
    // Two shared folders, one for each way of allowing them (each its own catalog source).
    let shared = [workdir("remote", "outside-shared-a"), workdir("remote", "outside-shared-b")];
    for folder in &shared {
        std::fs::copy(peers::oas_example("3.0", "petstore.json"), folder.join("petstore.json")).unwrap();
    }
    let var = "PROMPTY_TEST_SHARED_PETSTORE";
    let text = format!(
        "---\nname: shared\n{}tools:\n  - name: petstore\n    kind: openapi\n    specification: ${{env:{var}}}\n    \
         connection:\n      kind: key\n      endpoint: {}\n      apiKey: special-key\n---\nuser:\nread the shared pet document",
        model(&server),
        prism.url()
    );
    let path = dir.join("shared.prompty");
    std::fs::write(&path, &text).unwrap();
    let pet_found = |results: &[(String, String, bool)]| {
        results.len() == 1 && !results[0].2 && results[0].1.contains("\"status\":200")
    };

    // By default, the document (named by an absolute path from the environment) is outside the
    // prompt's folder: refused where it is read, with what to do about it.
    std::env::set_var(var, shared[0].join("petstore.json"));
    let agent = prompty::load(&path).unwrap();
    let tool = &agent.tools.as_ref().unwrap()[0];
    let err = prompty::openapi::OpenApiClient::from_tool(tool, &agent).await.unwrap_err().to_string();
    assert!(err.contains("is outside allowed roots"), "{err}");
    assert!(
        err.contains(
            "allow its folder with `LoadOptions::allow_root` (for every load without options: \
                      `LoadOptions::set_process_default`; on the command line: `--allow-root DIR`)"
        ),
        "{err}"
    );

    // With options of its own on the turn: the agent remembers its roots, the document is read.
    let options = prompty::LoadOptions::new().allow_root(&shared[0]);
    let (answer, results) = turn_with_events(prompty::PromptRef::path_with(&path, &options), TurnOptions::new()).await;
    assert_eq!(answer, "Pet 7 is in the shared document.");
    assert!(pet_found(&results), "{results:?}");

    // With the process's default options: `turn(path)` without options reads it too, and an
    // agent loaded then remembers the roots.
    std::env::set_var(var, shared[1].join("petstore.json"));
    prompty::LoadOptions::set_process_default(prompty::LoadOptions::new().allow_root(&shared[1]));
    let (answer, results) = turn_with_events(&path, TurnOptions::new()).await;
    let agent = prompty::load(&path).unwrap();
    prompty::LoadOptions::set_process_default(prompty::LoadOptions::new());
    assert_eq!(answer, "Pet 7 is in the shared document.");
    assert!(pet_found(&results), "{results:?}");
    assert_eq!(agent.source.as_ref().unwrap().allowed_roots, [shared[1].clone()]);
    // The document that other agent read is not handed to an agent without the root: it is
    // read again, refused, and its operations left out of the request, with a warning.
    let before = bodies(&server).len();
    let confined = prompty::load(&path).unwrap();
    let (options, events) = TurnOptions::new().record_events();
    let _: String = within(prompty::turn_async(&confined, &json!({}), options)).await.unwrap();
    assert!(tool_names(&bodies(&server)[before]).is_empty(), "{:?}", bodies(&server)[before]);
    let said = reported(&events.take(), "error");
    assert!(
        said.iter().any(|(tool, message)| tool == "petstore" && message.contains("is outside allowed roots")),
        "{said:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn allowed_tools_and_approval_keep_a_server_tool_from_running() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("remote", "files");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "kept").unwrap();
    let files = |extra: &str| {
        format!(
            "  - name: files\n    kind: mcp\n    serverName: files\n    connection:\n      kind: stdio\n      command: {}\n      \
             args: [\"{}\"]\n{extra}",
            peers::npm_bin("mcp-server-filesystem").display(),
            root.display()
        )
    };
    // Only read tools allowed: write_file is not offered, and a call of it is refused.
    let agent = write_and_load(
        &dir,
        "files",
        &write_prompt(&server, &files("    allowedTools: [read_text_file, list_directory]\n")),
    );
    let (answer, results) = turn_with_events(&agent, TurnOptions::new()).await;
    assert_eq!(answer, "I could not write it.");
    let sent = bodies(&server);
    assert_eq!(tool_names(&sent[0]), ["files__read_text_file", "files__list_directory"]);
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "{results:?}");
    assert!(!root.join("x.txt").exists());

    // Allowed, but approval always needed and no approver: denied, never run.
    let agent = write_and_load(&dir, "files2", &write_prompt(&server, &files("    approvalMode: always\n")));
    let (_, results) = turn_with_events(&agent, TurnOptions::new()).await;
    assert!(results[0].2 && results[0].1.contains("needs approval"), "{results:?}");
    assert!(!root.join("x.txt").exists());

    // With an approver that says yes, it runs (inside the server's root).
    let approver = Guardrails::new().tool(|call: &prompty::ToolCall, _args: &Value| {
        if call.name == "files__write_file" {
            Verdict::Allow
        } else {
            Verdict::Deny("not this one".into())
        }
    });
    let (_, results) = turn_with_events(&agent, TurnOptions::new().guardrails(approver)).await;
    assert!(!results[0].2, "{results:?}");
    // The model asked for a relative path: the server resolves it in its root, or refuses it; either
    // way nothing is written outside the root.
    assert!(!dir.join("x.txt").exists());
}

/// The `kind: mcp` declaration of `mcp/lab.py` (Python SDK) over stdio, namespace `lab` (its
/// `name`). The
/// `tag` (an environment variable of the server) makes it a server of its own: the same
/// declaration in two tests would share one server process.
fn lab_tool(tag: &str) -> String {
    format!(
        "  - name: lab\n    kind: mcp\n    serverName: lab-server\n    connection:\n      kind: stdio\n      command: {}\n      \
         args: [\"{}\"]\n      env: {{LAB_TEST: {tag}}}\n",
        peers::python().display(),
        peers::mcp_script("lab.py").display()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_whose_tool_list_changes_is_listed_again_before_the_next_request() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("remote", "list-changed");
    let agent = write_and_load(
        &dir,
        "lab",
        &format!("---\nname: lab\n{}tools:\n{}---\nuser:\nadd a tool", model(&server), lab_tool("t-listchanged-5e1")),
    );
    let answer: String = within(prompty::turn_async(&agent, &json!({}), TurnOptions::new())).await.unwrap();
    assert_eq!(answer, "Added.");
    let sent = bodies(&server);
    // The first request lists the server's tools; `add_tool` made the server send
    // `notifications/tools/list_changed`, so the second request offers the new tool too.
    assert!(!tool_names(&sent[0]).contains(&"lab__fresh".to_owned()), "{:?}", tool_names(&sent[0]));
    assert!(tool_names(&sent[1]).contains(&"lab__fresh".to_owned()), "{:?}", tool_names(&sent[1]));
    assert!(prompty::catalog::ToolCatalog::global().get("lab::fresh").len() == 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_dies_is_a_result_the_model_reads_and_is_restarted_for_the_next_call() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("remote", "crash");
    let crash = write_and_load(
        &dir,
        "crash",
        &format!(
            "---\nname: crash\n{}tools:\n{}---\nuser:\ncrash the server",
            model(&server),
            lab_tool("t-restart-9c4")
        ),
    );
    let (answer, results) = turn_with_events(&crash, TurnOptions::new()).await;
    assert_eq!(answer, "It crashed.");
    assert_eq!(results.len(), 1);
    let (name, text, is_error) = &results[0];
    assert_eq!(name, "lab__crash");
    assert!(*is_error, "{text}");
    assert!(text.contains("lab: about to crash"), "the result carries the server's stderr tail: {text}");
    // The same declaration again: a new server process answers.
    let add = write_and_load(
        &dir,
        "add",
        &format!("---\nname: add\n{}tools:\n{}---\nuser:\nadd a tool", model(&server), lab_tool("t-restart-9c4")),
    );
    let answer: String = within(prompty::turn_async(&add, &json!({}), TurnOptions::new())).await.unwrap();
    assert_eq!(answer, "Added.");
}

// ------------------------------------------------------- declarations that fail or name too much

/// The events of `kind` (`warning` or `error`) recorded: (the declaration or tool, the text).
fn reported(events: &[AgentEvent], kind: &str) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e.kind() == kind)
        .filter_map(|e| match e {
            AgentEvent::Warning { message, tool } | AgentEvent::Error { message, tool } => {
                Some((tool.clone().unwrap_or_default(), message.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The processes (read from /proc) whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> usize {
    let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted))
        .count()
}

/// A prompt with the good server (server-everything), one whose command does not exist, one that
/// never speaks MCP (`sleep`, given 1 s to finish the handshake) and an OpenAPI document that is
/// not there: the model gets the good server's tools only, calls one, and answers; an `error`
/// event and a `tracing` warning name each declaration left out and why; the failing servers are
/// tried once in the turn (not again before its second request).
#[tokio::test(flavor = "multi_thread")]
async fn servers_that_cannot_start_are_left_out_and_the_turn_goes_on() {
    captured_log::global(tracing::Level::WARN);
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("remote", "left-out");
    // A command line no other process has, to find the `sleep` server in /proc.
    let seconds = format!("59.{}", std::process::id());
    let tools = format!(
        "{}  - name: ghost_server\n    kind: mcp\n    serverName: ghost\n    connection:\n      kind: stdio\n      \
         command: /nonexistent/prompty-ghost-server\n  - name: silent_server\n    kind: mcp\n    serverName: silent\n    \
         handshakeTimeout: 1\n    connection:\n      kind: stdio\n      command: sleep\n      args: [\"{seconds}\"]\n  \
         - name: missing_api\n    kind: openapi\n    specification: ./missing-api.json\n",
        everything_tool("")
    );
    let text = format!("---\nname: leftout\n{}tools:\n{tools}---\nuser:\necho beside a broken server", model(&server));
    let agent = write_and_load(&dir, "leftout", &text);

    let (options, events) = TurnOptions::new().record_events();
    let started = Instant::now();
    let answer: String = within(prompty::turn_async(&agent, &json!({}), options)).await.unwrap();
    let took = started.elapsed();
    assert_eq!(answer, "The good server answered.");

    // Both requests offered the good server's tools, and only those.
    let sent = bodies(&server);
    assert_eq!(sent.len(), 2, "one tool round, then the answer");
    for body in &sent {
        let names = tool_names(body);
        assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
        assert!(names.iter().all(|n| n.starts_with("everything__")), "{names:?}");
    }
    assert_eq!(tool_messages(&sent[1])[0]["content"], "Echo: still here");

    let said = reported(&events.take(), "error");
    let tools_said: Vec<&str> = said.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(tools_said, ["ghost_server", "silent_server", "missing_api"], "one error event each, once: {said:#?}");
    let tail = "; the turn goes on without its tools (declare `required: true` to fail the turn instead)";
    let (ghost, silent, api) = (&said[0].1, &said[1].1, &said[2].1);
    assert!(
        ghost.starts_with(
            "the tool 'ghost_server' (kind: mcp, serverName: ghost) is left out of this request: MCP server 'ghost' \
             could not be started: cannot start `/nonexistent/prompty-ghost-server`"
        ) && ghost.ends_with(tail),
        "{ghost}"
    );
    assert!(
        silent.starts_with(
            "the tool 'silent_server' (kind: mcp, serverName: silent) is left out of this request: MCP server \
             'silent' could not be started: `sleep` did not complete the MCP handshake within 1s"
        ) && silent.ends_with(tail),
        "{silent}"
    );
    assert!(
        api.starts_with("the tool 'missing_api' (kind: openapi) is left out of this request: ")
            && api.contains("missing-api.json")
            && api.ends_with(tail),
        "{api}"
    );
    // The handshake bound of the declaration, not the 30 s default, ended the wait.
    assert!(took < Duration::from_secs(20), "the turn took {took:?}");
    // Each warning went to `tracing` too.
    let log = captured_log::global(tracing::Level::WARN).text();
    for (_, message) in &said {
        assert!(log.contains(message.as_str()), "not logged: {message}\n{log}");
    }
    // The server that never answered was stopped (its process is gone, read from /proc).
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_running(&["sleep", &seconds]) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(processes_running(&["sleep", &seconds]), 0, "`sleep {seconds}` still runs");
}

/// `required: true` keeps the old rule: a required server (or document) that cannot be loaded
/// fails the turn before any model request, with an error naming the declaration.
#[tokio::test(flavor = "multi_thread")]
async fn a_required_server_that_cannot_start_fails_the_turn_before_any_model_request() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("remote", "required");
    let tools = format!(
        "{}  - name: ghost_server\n    kind: mcp\n    serverName: ghost\n    required: true\n    connection:\n      \
         kind: stdio\n      command: /nonexistent/prompty-ghost-server\n",
        everything_tool("")
    );
    let text = format!("---\nname: required\n{}tools:\n{tools}---\nuser:\necho beside a broken server", model(&server));
    let agent = write_and_load(&dir, "required", &text);
    let err = within(prompty::turn_async::<String>(&agent, &json!({}), TurnOptions::new())).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "the tool 'ghost_server' (kind: mcp, serverName: ghost) is required (`required: true`) and its tools could \
             not be loaded: MCP server 'ghost' could not be started: cannot start `/nonexistent/prompty-ghost-server`"
        ),
        "{text}"
    );
    let api = format!(
        "---\nname: required_api\n{}tools:\n  - name: missing_api\n    kind: openapi\n    required: true\n    \
         specification: ./missing-api.json\n---\nuser:\necho beside a broken server",
        model(&server)
    );
    let agent = write_and_load(&dir, "required_api", &api);
    let err = within(prompty::turn_async::<String>(&agent, &json!({}), TurnOptions::new())).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "the tool 'missing_api' (kind: openapi) is required (`required: true`) and its tools could not be loaded"
        ) && text.contains("missing-api.json"),
        "{text}"
    );
    assert!(bodies(&server).is_empty(), "the model was called: {:?}", bodies(&server));
}

/// Names in `allowedTools` and `approvalMode`'s lists that the server does not offer are warned
/// about (event and `tracing`), with the closest name offered, once per tool list: a second turn
/// of the same prompt says nothing again.
#[tokio::test(flavor = "multi_thread")]
async fn names_the_server_does_not_offer_are_a_warning_with_the_closest_name() {
    captured_log::global(tracing::Level::WARN);
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("remote", "typo");
    let tool = everything_tool(
        "    allowedTools: [ech0]\n    approvalMode:\n      kind: specify\n      alwaysRequireApprovalTools: [get-sum]\n      \
         neverRequireApprovalTools: [get_sum]\n",
    );
    let text = format!("---\nname: typo\n{}tools:\n{tool}---\nuser:\necho with a typo", model(&server));
    let agent = write_and_load(&dir, "typo", &text);

    let (options, events) = TurnOptions::new().record_events();
    let answer: String = within(prompty::turn_async(&agent, &json!({}), options.clone())).await.unwrap();
    assert_eq!(answer, "No tool to call.");
    // `allowedTools: [ech0]` lets no tool through.
    assert!(tool_names(&bodies(&server)[0]).is_empty(), "{:?}", bodies(&server)[0]);
    let said = reported(&events.take(), "warning");
    assert_eq!(said.len(), 2, "{said:#?}");
    let prefix = "MCP server 'everything-server' (tool 'everything') does not offer";
    let (ech0, get_sum) = (&said[0].1, &said[1].1);
    assert_eq!(said[0].0, "everything");
    assert!(
        ech0.starts_with(&format!("{prefix} 'ech0' named in allowedTools; it offers: "))
            && ech0.contains("echo, ")
            && ech0.ends_with(" (did you mean `echo`?)"),
        "{ech0}"
    );
    assert!(
        get_sum
            .starts_with(&format!("{prefix} 'get_sum' named in approvalMode.neverRequireApprovalTools; it offers: "))
            && get_sum.ends_with(" (did you mean `get-sum`?)"),
        "{get_sum}"
    );
    let log = captured_log::global(tracing::Level::WARN).text();
    assert!(log.contains(ech0.as_str()) && log.contains(get_sum.as_str()), "{log}");

    // The same tool list again: no new warning.
    let answer: String = within(prompty::turn_async(&agent, &json!({}), options)).await.unwrap();
    assert_eq!(answer, "No tool to call.");
    assert_eq!(reported(&events.take(), "warning"), []);
}

/// Outside the agent loop the same rule holds: `project_tools` leaves out a server that cannot be
/// started (and says so to `tracing`), and fails for a required one, naming it.
#[test]
fn project_tools_leaves_out_a_server_that_cannot_start() {
    captured_log::global(tracing::Level::WARN);
    let dir = workdir("remote", "project");
    let ghost = |extra: &str| {
        format!(
            "{}  - name: lost_server\n    kind: mcp\n    serverName: lost\n{extra}    connection:\n      kind: stdio\n      \
             command: /nonexistent/prompty-lost-server\n",
            everything_tool("")
        )
    };
    let agent = write_and_load(&dir, "project", &format!("---\nname: project\ntools:\n{}---\nHi", ghost("")));
    let names: Vec<String> = prompty::project_tools(&agent).unwrap().into_iter().map(|d| d.name).collect();
    assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("everything__")), "{names:?}");
    let log = captured_log::global(tracing::Level::WARN).text();
    assert!(
        log.contains(
            "the tool 'lost_server' (kind: mcp, serverName: lost) is left out of this request: MCP server 'lost' could \
             not be started"
        ),
        "{log}"
    );
    let agent = write_and_load(
        &dir,
        "project_required",
        &format!("---\nname: project\ntools:\n{}---\nHi", ghost("    required: true\n")),
    );
    let err = prompty::project_tools(&agent).unwrap_err().to_string();
    assert!(
        err.contains("the tool 'lost_server' (kind: mcp, serverName: lost) is required (`required: true`)"),
        "{err}"
    );
}
