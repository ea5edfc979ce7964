//! The agent loop with tools from elsewhere: a prompt declares an MCP server
//! (`@modelcontextprotocol/server-everything` over stdio, `server-filesystem`) and an OpenAPI
//! document (Petstore 3.0 of `@readme/oas-examples`, mocked by prism); aimock plays the model and
//! calls their tools. Every server is real and runs on 127.0.0.1 (or as a child process); the
//! checks read aimock's request journal to see what came back to the model.

#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/peers.rs"]
mod peers;

use common::{within, Aimock};
use prompty::{AgentEvent, Guardrails, TurnOptions, Verdict};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A folder for one test's prompt (and the OpenAPI document it names).
fn workdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-remote-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` as `dir/<name>.prompty` and loads it.
fn load(dir: &Path, name: &str, text: &str) -> prompty::Agent {
    let path = dir.join(format!("{name}.prompty"));
    std::fs::write(&path, text).unwrap();
    prompty::load(&path).unwrap_or_else(|e| panic!("bad test prompt: {e}\n{text}"))
}

fn model(server: &Aimock) -> String {
    format!(
        "model:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    endpoint: {}/v1\n    apiKey: sk-e2e\n",
        server.url()
    )
}

/// The `kind: mcp` declaration of server-everything over stdio, namespace `everything`.
fn everything_tool(extra: &str) -> String {
    format!(
        "  - name: everything_server\n    kind: mcp\n    serverName: everything\n    connection:\n      kind: stdio\n      \
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
async fn turn_with_events(agent: &prompty::Agent, options: TurnOptions) -> (String, Vec<(String, String, bool)>) {
    let (options, events) = options.record_events();
    let answer = within(prompty::turn_async(agent, &json!({}), options)).await.unwrap();
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
    let dir = workdir("both");
    std::fs::copy(peers::oas_example("3.0", "petstore.json"), dir.join("petstore.json")).unwrap();
    // getPetById needs the `api_key` header (its security scheme): the connection's key goes there.
    let text = format!(
        "---\nname: remote\n{}tools:\n{}  - name: petstore\n    kind: openapi\n    specification: ./petstore.json\n    \
         connection:\n      kind: key\n      endpoint: {}\n      apiKey: special-key\n---\nuser:\necho and find pet 7",
        model(&server),
        everything_tool(""),
        prism.url()
    );
    let agent = load(&dir, "both", &text);
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
    let dir = workdir("image");
    let text = format!(
        "---\nname: image\n{}tools:\n{}---\nuser:\nshow me the tiny image",
        model(&server),
        everything_tool("")
    );
    let agent = load(&dir, "image", &text);
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
async fn allowed_tools_and_approval_keep_a_server_tool_from_running() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("files");
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
    let agent =
        load(&dir, "files", &write_prompt(&server, &files("    allowedTools: [read_text_file, list_directory]\n")));
    let (answer, results) = turn_with_events(&agent, TurnOptions::new()).await;
    assert_eq!(answer, "I could not write it.");
    let sent = bodies(&server);
    assert_eq!(tool_names(&sent[0]), ["files__read_text_file", "files__list_directory"]);
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "{results:?}");
    assert!(!root.join("x.txt").exists());

    // Allowed, but approval always needed and no approver: denied, never run.
    let agent = load(&dir, "files2", &write_prompt(&server, &files("    approvalMode: always\n")));
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

/// The `kind: mcp` declaration of `mcp/lab.py` (Python SDK) over stdio, namespace `lab`. The
/// `tag` (an environment variable of the server) makes it a server of its own: the same
/// declaration in two tests would share one server process.
fn lab_tool(tag: &str) -> String {
    format!(
        "  - name: lab_server\n    kind: mcp\n    serverName: lab\n    connection:\n      kind: stdio\n      command: {}\n      \
         args: [\"{}\"]\n      env: {{LAB_TEST: {tag}}}\n",
        peers::python().display(),
        peers::mcp_script("lab.py").display()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_whose_tool_list_changes_is_listed_again_before_the_next_request() {
    let server = Aimock::start_with("remote_tools.json", &[]);
    let dir = workdir("list-changed");
    let agent = load(
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
    let dir = workdir("crash");
    let crash = load(
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
    let add = load(
        &dir,
        "add",
        &format!("---\nname: add\n{}tools:\n{}---\nuser:\nadd a tool", model(&server), lab_tool("t-restart-9c4")),
    );
    let answer: String = within(prompty::turn_async(&add, &json!({}), TurnOptions::new())).await.unwrap();
    assert_eq!(answer, "Added.");
}
