//! `prompty lsp` over stdio: completion and hover, on the repository's prompts and on broken ones.

mod common;

use common::lsp::{uri, Client};
use serde_json::{json, Value};

fn labels(response: &Value) -> Vec<String> {
    let items = response["result"].as_array().unwrap_or_else(|| panic!("no items: {response}"));
    items.iter().map(|i| i["label"].as_str().unwrap().to_owned()).collect()
}

fn item<'a>(response: &'a Value, label: &str) -> &'a Value {
    let items = response["result"].as_array().unwrap();
    items.iter().find(|i| i["label"] == label).unwrap_or_else(|| panic!("no {label} in {response}"))
}

fn range(line: u32, start: u32, end: u32) -> Value {
    json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": end}})
}

fn hover_text(response: &Value) -> String {
    assert_eq!(response["result"]["contents"]["kind"], "markdown", "{response}");
    response["result"]["contents"]["value"].as_str().unwrap().to_owned()
}

/// Inserts `text` at `line`:`character` (an incremental change) as `version`.
fn insert(client: &mut Client, uri: &str, version: i64, line: u32, character: u32, text: &str) {
    let at = json!({"line": line, "character": character});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": version},
               "contentChanges": [{"range": {"start": at, "end": at}, "text": text}]}),
    );
}

#[test]
fn completion_and_hover_on_a_prompt_of_the_repository() {
    let path = common::root().join("examples/prompts/weather_assistant.prompty");
    let text = std::fs::read_to_string(&path).unwrap();
    let (mut client, init) = Client::start(json!({}));
    assert_eq!(init["capabilities"]["hoverProvider"], true);
    assert_eq!(init["capabilities"]["completionProvider"]["triggerCharacters"], json!(["{", " ", ".", "|", ":"]));
    let uri = uri(&path);
    client.open(&uri, &text);

    // Hover: the input in the template, its declaration, a tool, a frontmatter key.
    let h = client.at("textDocument/hover", &uri, 52, 5);
    assert_eq!(hover_text(&h), "**question** · input · `string` · required\n\nUsed on line 53.");
    assert_eq!(h["result"]["range"], range(52, 3, 11));
    let h = client.at("textDocument/hover", &uri, 15, 12);
    assert_eq!(
        hover_text(&h),
        "**preferredUnit** · input · `string`\n\nThe temperature unit the traveller prefers\n\nDefault: `\"celsius\"`\n\nThe template does not use it."
    );
    assert_eq!(h["result"]["range"], range(15, 10, 23));
    let h = client.at("textDocument/hover", &uri, 20, 12);
    assert_eq!(
        hover_text(&h),
        "**get_weather** · `function` tool\n\nGet the current weather for a city\n\nParameters:\n\
         - `city` · `string` · required — The city, e.g. \"Paris\"\n\
         - `unit` · `string` (bound to the input `preferredUnit`)"
    );
    assert_eq!(h["result"]["range"], range(20, 10, 21));
    let h = client.at("textDocument/hover", &uri, 6, 3);
    assert_eq!(hover_text(&h), "**apiType**\n\nThe provider API to call (default `chat`).");
    assert_eq!(h["result"]["range"], range(6, 2, 9));
    // Nothing to say on plain text.
    assert_eq!(client.at("textDocument/hover", &uri, 49, 3)["result"], Value::Null);

    // Completion: a key of `model:` not yet written, typed in a new line.
    insert(&mut client, &uri, 2, 7, 0, "  op\n");
    let c = client.at("textDocument/completion", &uri, 7, 4);
    assert_eq!(labels(&c), ["options"]);
    let options = item(&c, "options");
    assert_eq!(options["kind"], 10); // Property
    assert_eq!(options["textEdit"], json!({"range": range(7, 2, 4), "newText": "options: "}));
    assert_eq!(
        options["documentation"]["value"],
        "Generation options (temperature, maxOutputTokens, ...), mapped to each provider's names."
    );

    // The client applies the edit (the frontmatter loads again: `options:` is empty).
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3},
               "contentChanges": [{"range": range(7, 2, 4), "text": "options: "}]}),
    );
    assert_eq!(client.diagnostics(&uri, 3), Vec::<Value>::new());

    // Completion: inputs in a tag being typed (the template does not parse), filters after `|`.
    insert(&mut client, &uri, 4, 54, 0, "{{ pre");
    let c = client.at("textDocument/completion", &uri, 54, 6);
    assert_eq!(labels(&c), ["question", "preferredUnit"]);
    let preferred = item(&c, "preferredUnit");
    assert_eq!(preferred["kind"], 6); // Variable
    assert_eq!(preferred["detail"], "string");
    assert_eq!(preferred["documentation"]["value"], "The temperature unit the traveller prefers");
    assert_eq!(preferred["textEdit"], json!({"range": range(54, 3, 6), "newText": "preferredUnit"}));
    insert(&mut client, &uri, 5, 54, 6, "ferredUnit | up");
    let c = client.at("textDocument/completion", &uri, 54, 21);
    assert_eq!(labels(&c).len(), 47); // every Jinja filter
    assert_eq!(item(&c, "upper")["textEdit"], json!({"range": range(54, 19, 21), "newText": "upper"}));
    assert_eq!(item(&c, "upper")["kind"], 3); // Function

    // A role marker at a line's start.
    insert(&mut client, &uri, 6, 54, 21, " }}\nass");
    let c = client.at("textDocument/completion", &uri, 55, 3);
    assert_eq!(labels(&c), ["system:", "user:", "assistant:", "developer:"]);
    assert_eq!(item(&c, "assistant:")["textEdit"], json!({"range": range(55, 0, 3), "newText": "assistant:"}));
    assert_eq!(item(&c, "assistant:")["kind"], 14); // Keyword
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn model_options_and_values_follow_the_provider() {
    let path = common::root().join("examples/prompts/chat.prompty");
    let text = std::fs::read_to_string(&path).unwrap();
    let (mut client, _) = Client::start(json!({}));
    let uri = uri(&path);
    client.open(&uri, &text);
    let h = client.at("textDocument/hover", &uri, 12, 6);
    assert_eq!(
        hover_text(&h),
        "**temperature**\n\nSampling temperature: higher is more random.\n\nThe provider `openai` reads it."
    );
    assert_eq!(h["result"]["range"], range(12, 4, 15));
    // The options not yet written, each saying whether `openai` reads it.
    insert(&mut client, &uri, 2, 14, 0, "    \n");
    let c = client.at("textDocument/completion", &uri, 14, 4);
    assert_eq!(
        labels(&c),
        [
            "topP",
            "topK",
            "frequencyPenalty",
            "presencePenalty",
            "seed",
            "stopSequences",
            "allowMultipleToolCalls",
            "toolChoice",
            "structuredOutput",
            "additionalProperties"
        ]
    );
    assert_eq!(item(&c, "seed")["detail"], "read by openai");
    assert_eq!(item(&c, "seed")["textEdit"], json!({"range": range(14, 4, 4), "newText": "seed: "}));
    // The values of `structuredOutput`.
    insert(&mut client, &uri, 3, 14, 4, "structuredOutput: ");
    let c = client.at("textDocument/completion", &uri, 14, 22);
    assert_eq!(labels(&c), ["jsonSchema", "jsonObjectSchema", "jsonObject", "none"]);
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn completion_on_broken_and_partial_prompts() {
    let dir = tempdir("complete");
    let path = dir.join("draft.prompty");
    std::fs::write(&path, "").unwrap();
    let (mut client, _) = Client::start(json!({}));
    let uri = uri(&path);
    // A frontmatter still being written: no closing `---`.
    let text = "---\nmodel:\n  provider: anthropic\n  apiType: ";
    client.open(&uri, text);
    let c = client.at("textDocument/completion", &uri, 3, 11);
    assert_eq!(labels(&c), ["chat"]);
    assert_eq!(item(&c, "chat")["textEdit"], json!({"range": range(3, 11, 11), "newText": "chat"}));
    assert_eq!(item(&c, "chat")["kind"], 20); // EnumMember

    // Tool kinds, property kinds in a flow mapping, tool names for `toolChoice`, top-level keys.
    let text = "---\nmodel:\n  options:\n    toolChoice: \ninputs:\n  user: {kind: obj}\ntools:\n  - name: lookup\n    kind: \n  - name: save\n    kind: function\n\n---\nuser:\n{{ user }}\n";
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text}]}),
    );
    let c = client.at("textDocument/completion", &uri, 3, 16);
    assert_eq!(labels(&c), ["auto", "none", "required", "lookup", "save"]);
    assert_eq!(item(&c, "lookup")["kind"], 3);
    let c = client.at("textDocument/completion", &uri, 5, 18);
    assert_eq!(
        labels(&c),
        ["string", "integer", "float", "boolean", "array", "object", "union", "thread", "image", "file", "audio"]
    );
    assert_eq!(item(&c, "object")["textEdit"], json!({"range": range(5, 15, 18), "newText": "object"}));
    let c = client.at("textDocument/completion", &uri, 8, 10);
    assert_eq!(labels(&c), ["function", "mcp", "openapi", "prompty"]);
    let c = client.at("textDocument/completion", &uri, 11, 0);
    assert_eq!(labels(&c), ["name", "displayName", "description", "metadata", "outputs", "template"]);

    // Properties of an object input in a template that does not parse yet.
    let text = "---\ninputs:\n  - name: user\n    kind: object\n    properties:\n      - name: email\n        description: Where to write\n      - name: age\n        kind: integer\n---\nuser:\n{% if user.";
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": text}]}),
    );
    let c = client.at("textDocument/completion", &uri, 11, 11);
    assert_eq!(labels(&c), ["email", "age"]);
    assert_eq!(item(&c, "age")["detail"], "integer");
    assert_eq!(item(&c, "email")["documentation"]["value"], "Where to write");
    assert_eq!(item(&c, "email")["kind"], 5); // Field
                                              // Positions past the end (clamped to it) and closed documents are answered, not crashed on.
    assert_eq!(labels(&client.at("textDocument/completion", &uri, 99, 99)), ["email", "age"]);
    assert_eq!(client.at("textDocument/hover", &uri, 99, 99)["result"], Value::Null);
    let closed = client.at("textDocument/completion", "file:///nowhere/closed.prompty", 0, 0);
    assert!(closed["error"]["message"].as_str().unwrap().contains("is not open"), "{closed}");
    assert!(client.alive());
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn nunjucks_adds_its_filters() {
    let dir = tempdir("nunjucks");
    let path = dir.join("n.prompty");
    let text = "---\ntemplate:\n  format: nunjucks\ninputs: [items]\n---\n{{ items | ";
    std::fs::write(&path, text).unwrap();
    let (mut client, _) = Client::start(json!({}));
    let uri = uri(&path);
    client.open(&uri, text);
    let c = client.at("textDocument/completion", &uri, 5, 11);
    let got = labels(&c);
    assert_eq!(got.len(), 48); // every Jinja filter and `dump`
    assert_eq!(got.last().map(String::as_str), Some("dump"));
    assert_eq!(client.shutdown(), Some(0));
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-lsp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
