//! `kind: openapi` tools against real servers on 127.0.0.1, started by `e2e/peers.rs`:
//!
//! - Prism 5.14.2 mocking the `@readme/oas-examples` Petstore documents (2.0, 3.0, 3.1): names,
//!   schemas, mocked answers, and the requests Prism rejects;
//! - httpbin 0.10.4 under gunicorn: its own Swagger 2.0 document fetched from `/spec.json`, and
//!   `e2e/openapi/httpbin.yaml`, a small 3.0 document over httpbin's echo endpoints that shows where
//!   credentials go, how values are encoded, how bodies are assembled, and what errors look like.
//!
//! Run: `cargo test -p prompty --features openapi --test openapi`.

#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/peers.rs"]
mod peers;

use prompty::openapi::{parse_spec, OpenApiClient, OpenApiSpec};
use prompty::providers::http::{HttpClient, RetryPolicy};
use prompty::{Connection, Error, OpenApiTool, Tool, ToolKind};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn openapi_dir() -> PathBuf {
    common::e2e_dir().join("openapi")
}

fn read_example(version: &str, file: &str) -> Arc<OpenApiSpec> {
    let path = peers::oas_example(version, file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Arc::new(parse_spec(&text, &path.display().to_string()).unwrap())
}

fn connection(value: Value) -> Connection {
    serde_json::from_value(value).unwrap()
}

/// A client whose retries are quick, so the retry tests take little time.
fn quick(client: OpenApiClient) -> OpenApiClient {
    let retry =
        RetryPolicy { max_attempts: 3, base_delay: Duration::from_millis(50), max_delay: Duration::from_secs(1) };
    client.with_http(HttpClient::shared().with_retry(retry))
}

/// A `kind: openapi` tool named `api`.
fn openapi_tool(connection: Option<Connection>, specification: &str) -> Tool {
    Tool {
        name: "api".into(),
        description: None,
        bindings: Vec::new(),
        kind: ToolKind::OpenApi(OpenApiTool { connection, specification: specification.into(), ..Default::default() }),
    }
}

fn tool_message(e: Error) -> String {
    match e {
        Error::Tool { message, .. } => message,
        other => panic!("expected a tool error, got {other}"),
    }
}

const PETSTORE_NAMES: [&str; 20] = [
    "addPet",
    "updatePet",
    "findPetsByStatus",
    "findPetsByTags",
    "getPetById",
    "updatePetWithForm",
    "deletePet",
    "uploadFile",
    "getInventory",
    "placeOrder",
    "getOrderById",
    "deleteOrder",
    "createUser",
    "createUsersWithArrayInput",
    "createUsersWithListInput",
    "loginUser",
    "logoutUser",
    "getUserByName",
    "updateUser",
    "deleteUser",
];

/// The same checks against Prism mocking the Petstore of each version.
async fn petstore(version: &str) {
    let spec = read_example(version, "petstore.json");
    let names: Vec<&str> = spec.operations.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, PETSTORE_NAMES, "{version}");
    let get = spec.operation("getPetById").unwrap();
    assert_eq!(
        get.parameters_schema(),
        json!({"type": "object", "properties": {"petId": {"type": "integer", "format": "int64", "description": "ID of pet to return"}}, "required": ["petId"]}),
        "{version}"
    );
    let find = spec.operation("findPetsByStatus").unwrap();
    let status = &find.parameters_schema()["properties"]["status"];
    assert_eq!(status["type"], "array", "{version}: {status}");
    assert!(find.parameters[0].explode, "{version}: arrays repeat their key");
    let order = spec.operation("placeOrder").unwrap().parameters_schema();
    let args: Vec<&String> = order["properties"].as_object().unwrap().keys().collect();
    assert_eq!(args, ["id", "petId", "quantity", "shipDate", "status", "complete"], "{version}");

    let prism = peers::prism_mock(version, "petstore.json");
    let endpoint = prism.url();
    let client = OpenApiClient::new(
        spec.clone(),
        Some(&connection(json!({"kind": "key", "endpoint": endpoint, "apiKey": "petstore-key-1"}))),
    )
    .unwrap();

    // The api_key header makes Prism accept the call; the answer is the mocked JSON.
    let pet = client.call("getPetById", json!({"petId": 7})).await.unwrap();
    assert_eq!(pet["status"], 200, "{version}: {pet}");
    assert_eq!(pet["body"]["name"], "doggie", "{version}: {pet}");

    // A JSON body from flattened arguments.
    let placed = client
        .call("placeOrder", json!({"id": 1, "petId": 7, "quantity": 2, "status": "placed", "complete": false}))
        .await;
    if version == "2.0" {
        // The 2.0 document gives placeOrder no `consumes`; Prism then refuses any body ("No supported
        // content types, but request included a non-empty body", sent as a 400).
        let e = tool_message(placed.unwrap_err());
        assert_eq!(e, "HTTP 400 Bad Request: (no body)");
    } else {
        let placed = placed.unwrap();
        assert_eq!(
            (placed["status"].as_u64(), placed["body"]["status"].as_str()),
            (Some(200), Some("placed")),
            "{version}"
        );
    }

    // A path value with `/`, ` ` and `?` stays one segment: Prism routes it to /user/{username}.
    let user = client.call("getUserByName", json!({"username": "a/b c?"})).await.unwrap();
    assert_eq!(user["status"], 200, "{version}: {user}");

    // Prism rejects a petId that is not an integer: the status comes back.
    let e = tool_message(client.call("getPetById", json!({"petId": "abc"})).await.unwrap_err());
    assert!(e.starts_with("HTTP 400 Bad Request"), "{version}: {e}");
    // Without the key, Prism answers 401 (the security scheme is checked).
    let anonymous =
        OpenApiClient::new(spec.clone(), Some(&connection(json!({"kind": "anonymous", "endpoint": endpoint}))))
            .unwrap();
    let e = tool_message(anonymous.call("getPetById", json!({"petId": 7})).await.unwrap_err());
    assert!(e.starts_with("HTTP 401 Unauthorized"), "{version}: {e}");
    // addPet answers only 405 in the document: Prism mocks that.
    let e = tool_message(client.call("addPet", json!({"name": "rex", "photoUrls": ["u"]})).await.unwrap_err());
    assert!(e.starts_with("HTTP 405 Method Not Allowed"), "{version}: {e}");
    // A required argument left out never reaches the server.
    let e = tool_message(client.call("loginUser", json!({"username": "u"})).await.unwrap_err());
    assert_eq!(e, "missing required argument: password", "{version}");
    assert!(!format!("{client:?}").contains("petstore-key-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prism_petstore_3_0() {
    petstore("3.0").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prism_petstore_3_1() {
    petstore("3.1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prism_petstore_2_0() {
    petstore("2.0").await;
}

/// A client of `e2e/openapi/httpbin.yaml`, loaded as a prompt's tool would be (the path is
/// relative to the prompt's folder), pointed at httpbin.
async fn httpbin_client(endpoint: &str, credential: Value) -> OpenApiClient {
    let agent = prompty::load_str("---\nname: echo\n---\nHi", openapi_dir(), "echo.prompty").unwrap();
    let mut connection = json!({"endpoint": endpoint});
    connection.as_object_mut().unwrap().extend(credential.as_object().unwrap().clone());
    let tool = openapi_tool(Some(serde_json::from_value(connection).unwrap()), "./httpbin.yaml");
    OpenApiClient::from_tool(&tool, &agent).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpbin_credentials_go_where_the_scheme_says() {
    let bin = peers::httpbin();
    let key = "hb-key-0123456789";
    let client = httpbin_client(&bin.url(), json!({"kind": "key", "apiKey": key})).await;

    // apiKey in a header: httpbin echoes it, and the echo is scrubbed before the model sees it.
    let out = client.call("headersWithKey", json!({})).await.unwrap();
    assert_eq!(out["body"]["headers"]["X-Api-Key"], "[REDACTED]", "{out}");
    assert_eq!(out["body"]["headers"]["Accept"], "application/json, */*;q=0.1");
    assert!(!out.to_string().contains(key));

    // apiKey in the query.
    let out = client.call("queryEcho", json!({"q": "x"})).await.unwrap();
    assert_eq!(out["body"]["args"], json!({"api_key": "[REDACTED]", "q": "x"}), "{out}");
    assert!(out["body"]["headers"].get("X-Api-Key").is_none());

    // apiKey in a cookie, next to a cookie parameter.
    let out = client.call("cookieEcho", json!({"theme": "dark mode"})).await.unwrap();
    assert_eq!(out["body"]["cookies"], json!({"session": "[REDACTED]", "theme": "dark%20mode"}), "{out}");

    // Bearer: the basic alternative needs a username, so the bearer one is used.
    let out = client.call("bearer", json!({})).await.unwrap();
    assert_eq!(out, json!({"status": 200, "body": {"authenticated": true, "token": "[REDACTED]"}}));

    // An operation without security gets no credential.
    let out = client.call("anonymousEcho", json!({})).await.unwrap();
    let headers = out["body"]["headers"].as_object().unwrap();
    assert!(!headers.contains_key("Authorization") && !headers.contains_key("X-Api-Key"), "{out}");
    assert!(out["body"]["args"].as_object().unwrap().is_empty());

    // Basic from a username and password (a connection kind with those fields).
    let basic =
        httpbin_client(&bin.url(), json!({"kind": "basic", "username": "ada", "password": "pw-s3cret-77"})).await;
    let out = basic.call("basicAuth", json!({"user": "ada", "passwd": "pw-s3cret-77"})).await.unwrap();
    assert_eq!(out["body"], json!({"authenticated": true, "user": "ada"}));
    let e = tool_message(basic.call("basicAuth", json!({"user": "ada", "passwd": "other"})).await.unwrap_err());
    assert!(e.starts_with("HTTP 401 UNAUTHORIZED") || e.starts_with("HTTP 401 Unauthorized"), "{e}");
    // Without a credential the bearer endpoint refuses.
    let none = httpbin_client(&bin.url(), json!({"kind": "anonymous"})).await;
    let e = tool_message(none.call("bearer", json!({})).await.unwrap_err());
    assert!(e.starts_with("HTTP 401 Unauthorized"), "{e}");

    // A redirect to another origin (localhost is not 127.0.0.1) is refused: the key never leaves.
    let port = bin.port;
    let e = tool_message(
        client.call("redirectTo", json!({"url": format!("http://localhost:{port}/headers")})).await.unwrap_err(),
    );
    assert!(e.contains("refused a redirect"), "{e}");
    assert!(!e.contains(key), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpbin_values_are_encoded_and_bodies_assembled() {
    let bin = peers::httpbin();
    let client = httpbin_client(&bin.url(), json!({"kind": "anonymous"})).await;

    // Query arrays: exploded form repeats the key; unexploded joins with `,`; pipeDelimited `|`;
    // deepObject `name[key]`; reserved characters are encoded and come back as written.
    let out = client
        .call(
            "queryEcho",
            json!({"q": "a&b=c d/é", "tags": ["x", "y z"], "ids": [1, 2], "pipes": ["p", "q"], "filter": {"kind": "cat"}, "unknown": 1}),
        )
        .await
        .unwrap();
    assert_eq!(
        out["body"]["args"],
        json!({"q": "a&b=c d/é", "tags": ["x", "y z"], "ids": "1,2", "pipes": "p|q", "filter[kind]": "cat"}),
        "{out}"
    );

    // Path values are one segment (`?` does not start a query), a header parameter is sent, and the
    // flattened arguments are one JSON body; a body property whose name a parameter has is `body_id`.
    let out = client
        .call(
            "createThing",
            json!({"id": "a/b c?", "X-Trace": "t-1", "verbose": true, "body_id": 5, "name": "lamp", "tags": ["new"]}),
        )
        .await
        .unwrap();
    let echo = &out["body"];
    assert_eq!(echo["method"], "POST");
    assert!(echo["url"].as_str().unwrap().ends_with("/anything/a/b%20c%3F?verbose=true"), "{echo}");
    assert_eq!(echo["args"], json!({"verbose": "true"}));
    assert_eq!(echo["headers"]["X-Trace"], "t-1");
    assert_eq!(echo["headers"]["Content-Type"], "application/json");
    assert_eq!(echo["json"], json!({"id": 5, "name": "lamp", "tags": ["new"]}));
    // A required body property left out.
    let e = tool_message(client.call("createThing", json!({"id": "x"})).await.unwrap_err());
    assert_eq!(e, "missing required argument: name");
    // `..` as a whole segment would climb the path: refused before sending.
    let e = tool_message(client.call("createThing", json!({"id": "..", "name": "n"})).await.unwrap_err());
    assert!(e.contains("climb"), "{e}");

    // A non-object body is the `body` argument.
    let out = client.call("replaceWithList", json!({"id": "1", "body": [3, 4]})).await.unwrap();
    assert_eq!(out["body"]["json"], json!([3, 4]));
    // A form body.
    let out = client
        .call("submitForm", json!({"id": "1", "title": "a&b", "count": 2, "colors": ["red", "blue"]}))
        .await
        .unwrap();
    assert_eq!(out["body"]["form"], json!({"title": "a&b", "count": "2", "colors": ["red", "blue"]}), "{out}");
    // A multipart body.
    let out = client.call("uploadMultipart", json!({"id": "1", "note": "hello \"you\""})).await.unwrap();
    assert_eq!(out["body"]["form"], json!({"note": "hello \"you\""}), "{out}");
    assert!(out["body"]["headers"]["Content-Type"].as_str().unwrap().starts_with("multipart/form-data; boundary="));

    // A text answer comes back as text.
    let out = client.call("html", json!({})).await.unwrap();
    assert!(out["body"].as_str().unwrap().contains("Herman Melville"), "{out}");
    // Binary data is described, not passed on.
    let out = client.call("randomBytes", json!({"n": 64})).await.unwrap();
    assert_eq!(out["body"], "(64 bytes of application/octet-stream, not text)");
    // A body larger than the client's bound fails the call.
    let small = client.clone().with_max_response_bytes(1000);
    let e = tool_message(small.call("randomBytes", json!({"n": 5000})).await.unwrap_err());
    assert!(e.contains("larger than 1000 bytes"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpbin_errors_come_back_with_their_status_and_retries_are_bounded() {
    let bin = peers::httpbin();
    let client = quick(httpbin_client(&bin.url(), json!({"kind": "anonymous"})).await);

    let e = tool_message(client.call("statusGet", json!({"code": 404})).await.unwrap_err());
    assert_eq!(e, "HTTP 404 Not Found: (no body)");

    // 503 on a GET: retried, three attempts in all, quickly.
    let started = Instant::now();
    let e = tool_message(client.call("statusGet", json!({"code": 503})).await.unwrap_err());
    assert_eq!(e, "HTTP 503 Service Unavailable: (no body) (3 attempts)");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // 503 on a POST: not retried (the server may have acted).
    let e = tool_message(client.call("statusPost", json!({"code": 503})).await.unwrap_err());
    assert_eq!(e, "HTTP 503 Service Unavailable: (no body)");
    // 429 is retried for every method.
    let e = tool_message(client.call("statusPost", json!({"code": 429})).await.unwrap_err());
    assert_eq!(e, "HTTP 429 Too Many Requests: (no body) (3 attempts)");
    // No retries at all with the `none` policy.
    let once = client.clone().with_http(HttpClient::shared().with_retry(RetryPolicy::none()));
    let e = tool_message(once.call("statusGet", json!({"code": 500})).await.unwrap_err());
    assert_eq!(e, "HTTP 500 Internal Server Error: (no body)");
    // A 2xx other than 200, and an unknown operation.
    let out = client.call("statusGet", json!({"code": 204})).await.unwrap();
    assert_eq!(out, json!({"status": 204, "body": null}));
    let e = tool_message(client.call("nope", json!({})).await.unwrap_err());
    assert!(e.starts_with("the document has no operation named 'nope' (it has: headersWithKey, anonymousEcho"), "{e}");
    let e = tool_message(client.call("statusGet", json!([1])).await.unwrap_err());
    assert_eq!(e, "the arguments must be a JSON object, not an array");

    // Nothing listens: the connection error, retried, then reported.
    drop(bin);
    let e = tool_message(client.call("statusGet", json!({"code": 200})).await.unwrap_err());
    assert!(e.starts_with("the request failed: ") && e.ends_with("(3 attempts)"), "{e}");
}

/// httpbin's own Swagger 2.0 document, fetched from `/spec.json` (its `host` is httpbin.org: the
/// connection's endpoint points the calls at the local server instead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpbin_swagger_document_by_url() {
    let bin = peers::httpbin();
    let agent = prompty::Agent::default();
    let tool = openapi_tool(
        Some(connection(json!({"kind": "anonymous", "endpoint": bin.url()}))),
        &format!("{}/spec.json", bin.url()),
    );
    let client = OpenApiClient::from_tool(&tool, &agent).await.unwrap();
    let spec = client.spec();
    assert_eq!(spec.version, prompty::openapi::SpecVersion::Swagger2);
    assert_eq!(spec.servers, ["https://httpbin.org/"]);
    assert!(spec.operations.len() > 70, "{}", spec.operations.len());
    let names: Vec<&str> = spec.operations.iter().map(|o| o.name.as_str()).collect();
    for name in
        ["get_get", "post_anything", "get_anything_anything", "get_status_codes", "get_bytes_n", "trace_anything"]
    {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    // `/anything/{anything}` declares no parameter: the path's name is a required string.
    let any = client.operation("get_anything_anything").unwrap();
    assert_eq!(
        any.parameters_schema(),
        json!({"type": "object", "properties": {"anything": {"type": "string"}}, "required": ["anything"]})
    );
    // `type: int` (sic) in the document is read as an integer.
    assert_eq!(client.operation("get_bytes_n").unwrap().parameters[0].schema, json!({"type": "integer"}));

    let out = client.call("get_anything_anything", json!({"anything": "x y"})).await.unwrap();
    assert!(out["body"]["url"].as_str().unwrap().ends_with("/anything/x%20y"), "{out}");
    let out = client.call("get_cache_value", json!({"value": 60})).await.unwrap();
    assert_eq!(out["status"], 200);
    let e = tool_message(client.call("get_status_codes", json!({"codes": 418})).await.unwrap_err());
    assert!(e.starts_with("HTTP 418 I'm a teapot"), "{e}");

    // Without an endpoint the calls would go to httpbin.org: the base URL says so.
    let tool = openapi_tool(None, &format!("{}/spec.json", bin.url()));
    let remote = OpenApiClient::from_tool(&tool, &agent).await.unwrap();
    assert_eq!(remote.base_url(&remote.operations()[0]).unwrap(), "https://httpbin.org");
    // A document URL that answers 404.
    let tool = openapi_tool(None, &format!("{}/status/404", bin.url()));
    let e = OpenApiClient::from_tool(&tool, &agent).await.unwrap_err().to_string();
    assert!(e.starts_with("Tool 'api' failed: cannot fetch the openapi specification") && e.contains("404"), "{e}");
    // A document URL that answers something else than OpenAPI.
    let tool = openapi_tool(None, &format!("{}/get", bin.url()));
    let e = OpenApiClient::from_tool(&tool, &agent).await.unwrap_err().to_string();
    assert!(e.contains("not an OpenAPI document"), "{e}");
}

/// Every document of `@readme/oas-examples` is read (none fails or hangs), including the
/// circular ones.
#[test]
fn every_oas_example_is_read() {
    let started = Instant::now();
    let mut count = 0;
    for version in ["2.0", "3.0", "3.1"] {
        let dir = peers::oas_example(version, "");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let spec = parse_spec(&text, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
            for op in &spec.operations {
                let schema = op.parameters_schema();
                assert_eq!(schema["type"], "object", "{}", path.display());
            }
            count += 1;
        }
    }
    assert!(count >= 55, "{count}");
    let circular = read_example("3.0", "schema-circular.json");
    assert!(!circular.operations.is_empty());
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
}
