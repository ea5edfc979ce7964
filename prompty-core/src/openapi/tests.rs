use super::*;
use serde_json::json;

fn spec(text: &str) -> OpenApiSpec {
    parse_spec(text, "t.json").unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    parse_spec(text, "t.json").unwrap_err().to_string()
}

const PETS_30: &str = r##"{
  "openapi": "3.0.3",
  "info": {"title": "Pets", "version": "1"},
  "servers": [{"url": "https://{region}.pets.example/{base}", "variables": {"region": {"default": "eu"}, "base": {"default": "v1"}}}],
  "components": {
    "securitySchemes": {
      "key": {"type": "apiKey", "name": "X-Key", "in": "header"},
      "token": {"type": "http", "scheme": "Bearer"},
      "oauth": {"type": "oauth2", "flows": {}}
    },
    "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "nullable": true}}},
    "schemas": {
      "Pet": {"type": "object", "required": ["name"], "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}, "owner": {"$ref": "#/components/schemas/Person"}}},
      "Person": {"type": "object", "properties": {"name": {"type": "string"}, "pets": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}
    },
    "requestBodies": {"PetBody": {"required": true, "content": {"application/xml": {}, "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}
  },
  "security": [{"key": []}],
  "paths": {
    "/pets": {
      "parameters": [{"$ref": "#/components/parameters/Limit"}],
      "get": {"operationId": "listPets", "summary": "List pets", "responses": {"200": {"description": "ok", "content": {"application/json": {}}}}},
      "post": {"operationId": "addPet", "requestBody": {"$ref": "#/components/requestBodies/PetBody"}, "security": [{"token": []}, {}]}
    },
    "/pets/{id}": {
      "get": {"operationId": "get pet!", "security": [],
        "parameters": [
          {"name": "id", "in": "path", "schema": {"type": "string"}, "description": "The id"},
          {"name": "id", "in": "query", "schema": {"type": "string"}},
          {"name": "id", "in": "header", "schema": {"type": "string"}},
          {"name": "Accept", "in": "header", "schema": {"type": "string"}},
          {"name": "session", "in": "cookie", "schema": {"type": "string"}}
        ]},
      "put": {"requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}}}}}}},
      "delete": {"operationId": "listPets"}
    }
  }
}"##;

#[test]
fn reads_openapi_30() {
    let s = spec(PETS_30);
    assert_eq!(s.version, SpecVersion::OpenApi30);
    assert_eq!(s.version_text, "3.0.3");
    assert_eq!(s.title.as_deref(), Some("Pets"));
    assert_eq!(s.servers, ["https://eu.pets.example/v1"]);
    let names: Vec<&str> = s.operations.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["listPets", "addPet", "get_pet", "put_pets_id", "listPets_2"]);
    assert_eq!(
        s.security_schemes["key"],
        SecurityScheme::ApiKey { name: "X-Key".into(), location: ParameterLocation::Header }
    );
    assert_eq!(s.security_schemes["token"], SecurityScheme::Http { scheme: "bearer".into() });
    assert_eq!(s.security_schemes["oauth"], SecurityScheme::OAuth2);

    let list = &s.operations[0];
    assert_eq!(list.doc().as_deref(), Some("List pets"));
    assert_eq!(list.produces, ["application/json"]);
    assert_eq!(list.security, [SecurityRequirement { schemes: vec!["key".into()] }]);
    assert_eq!(
        list.parameters_schema(),
        json!({"type": "object", "properties": {"limit": {"type": ["integer", "null"]}}})
    );

    let add = &s.operations[1];
    assert_eq!(add.security, [SecurityRequirement { schemes: vec!["token".into()] }, SecurityRequirement::default()]);
    let body = add.body.as_ref().unwrap();
    assert_eq!(body.content_type, "application/json");
    assert!(body.required);
    let schema = add.parameters_schema();
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(add.argument_names().collect::<Vec<_>>(), ["limit", "id", "name", "owner"]);
    // The cycle Pet → Person → Pet stops with an open schema.
    assert_eq!(schema["properties"]["owner"]["properties"]["pets"]["items"], json!({}));
    assert!(!s.truncated);

    let get = &s.operations[2];
    assert_eq!(get.operation_id.as_deref(), Some("get pet!"));
    assert!(get.security.is_empty(), "`security: []` turns the document's off");
    let props: Vec<(&str, &str, &str)> =
        get.parameters.iter().map(|p| (p.name.as_str(), p.location.as_str(), p.property.as_str())).collect();
    assert_eq!(
        props,
        [
            ("id", "path", "id"),
            ("id", "query", "query_id"),
            ("id", "header", "header_id"),
            ("session", "cookie", "session")
        ]
    );
    assert_eq!(get.parameters[0].schema, json!({"type": "string"}));
    assert_eq!(get.parameters_schema()["properties"]["id"]["description"], "The id");
    assert_eq!(get.parameters_schema()["required"], json!(["id"]));
    assert_eq!((get.parameters[1].style.as_str(), get.parameters[1].explode), ("form", true));
    assert_eq!(list.parameters[0].property, "limit", "path-level parameters apply to the operations of their path");
    assert_eq!((get.parameters[0].style.as_str(), get.parameters[0].explode), ("simple", false));

    // A body property whose name a parameter holds is `body_<name>`.
    let put = &s.operations[3];
    assert_eq!(put.argument_names().collect::<Vec<_>>(), ["id", "body_id", "tag"]);
    let BodyShape::Flattened(fields) = &put.body.as_ref().unwrap().shape else { panic!() };
    assert_eq!((fields[0].name.as_str(), fields[0].property.as_str()), ("id", "body_id"));
}

#[test]
fn reads_openapi_31_yaml() {
    let s = spec(
        "openapi: 3.1.0
info: {title: Things, version: '1'}
servers:
  - url: /api
paths:
  /things/{thingId}:
    parameters:
      - {name: thingId, in: path, required: true, schema: {type: string}}
    patch:
      operationId: patchThing
      servers: [{url: 'https://other.example'}]
      requestBody:
        content:
          application/merge-patch+json:
            schema: {type: array, items: {type: [string, 'null']}}
      responses:
        default: {description: x, content: {text/plain: {}}}
webhooks: {}
",
    );
    assert_eq!(s.version, SpecVersion::OpenApi31);
    assert_eq!(s.servers, ["/api"]);
    let op = &s.operations[0];
    assert_eq!(op.servers, ["https://other.example"]);
    assert_eq!(op.method, "PATCH");
    assert_eq!(op.produces, ["text/plain"]);
    let body = op.body.as_ref().unwrap();
    assert_eq!(body.content_type, "application/merge-patch+json");
    assert_eq!(body.shape, BodyShape::Whole { property: "body".into() });
    assert_eq!(
        op.parameters_schema(),
        json!({"type": "object", "properties": {
            "thingId": {"type": "string"},
            "body": {"type": "array", "items": {"type": ["string", "null"]}}}, "required": ["thingId"]})
    );
}

#[test]
fn reads_swagger_20() {
    let s = spec(
        r##"{"swagger": "2.0", "info": {"title": "Bin", "version": "1"}, "host": "bin.example", "basePath": "v2",
        "schemes": ["http", "https"], "consumes": ["application/json"],
        "securityDefinitions": {"basic": {"type": "basic"}, "key": {"type": "apiKey", "name": "key", "in": "query"}},
        "parameters": {"Page": {"name": "page", "in": "query", "type": "int"}},
        "definitions": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}}},
        "paths": {
          "/anything/{anything}": {"get": {"parameters": [{"$ref": "#/parameters/Page"},
              {"name": "tags", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "multi"},
              {"name": "ids", "in": "query", "type": "array", "items": {"type": "integer"}, "collectionFormat": "pipes"},
              {"name": "Authorization", "in": "header"}]}},
          "/nodes": {"post": {"operationId": "addNode", "parameters": [{"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Node"}}],
              "security": [{"basic": []}]}},
          "/form": {"post": {"parameters": [{"name": "name", "in": "formData", "type": "string", "required": true},
              {"name": "photo", "in": "formData", "type": "file"}]},
                    "put": {"consumes": ["application/x-www-form-urlencoded"], "parameters": [{"name": "n", "in": "formData", "type": "integer"}]}}
        }}"##,
    );
    assert_eq!(s.version, SpecVersion::Swagger2);
    assert_eq!(s.servers, ["https://bin.example/v2"]);
    assert_eq!(s.security_schemes["basic"], SecurityScheme::Http { scheme: "basic".into() });
    let any = &s.operations[0];
    assert_eq!(any.name, "get_anything_anything");
    let p: Vec<(&str, &str, bool, &str, bool)> = any
        .parameters
        .iter()
        .map(|p| (p.name.as_str(), p.location.as_str(), p.required, p.style.as_str(), p.explode))
        .collect();
    assert_eq!(
        p,
        [
            ("anything", "path", true, "simple", false),
            ("page", "query", false, "form", false),
            ("tags", "query", false, "form", true),
            ("ids", "query", false, "pipeDelimited", false),
            ("Authorization", "header", false, "simple", false),
        ]
    );
    assert_eq!(any.parameters[1].schema, json!({"type": "integer"}));
    assert_eq!(any.parameters[2].schema, json!({"type": "array", "items": {"type": "string"}}));
    assert_eq!(any.parameters[4].schema, json!({"type": "string"}), "a parameter without a type is a string");

    let add = &s.operations[1];
    let body = add.body.as_ref().unwrap();
    assert_eq!((body.content_type.as_str(), body.required), ("application/json", true));
    assert_eq!(add.argument_names().collect::<Vec<_>>(), ["children"]);
    assert_eq!(
        add.parameters_schema()["properties"]["children"],
        json!({"type": "array", "items": {}}),
        "the body is a Node: its children's items repeat the reference being expanded"
    );

    let form = &s.operations[2];
    let body = form.body.as_ref().unwrap();
    assert_eq!(body.content_type, "multipart/form-data");
    assert_eq!(form.parameters_schema()["properties"]["photo"], json!({"type": "string", "format": "binary"}));
    assert_eq!(form.parameters_schema()["required"], json!(["name"]));
    assert_eq!(s.operations[3].body.as_ref().unwrap().content_type, "application/x-www-form-urlencoded");
}

#[test]
fn swagger_servers_without_host() {
    assert_eq!(spec(r#"{"swagger": "2.0", "basePath": "/api", "paths": {}}"#).servers, ["/api"]);
    assert!(spec(r#"{"swagger": 2.0, "paths": {}}"#).servers.is_empty());
    assert_eq!(spec(r#"{"swagger": "2.0", "host": "h:8080", "paths": {}}"#).servers, ["https://h:8080"]);
}

#[test]
fn names_are_slugs_and_unique() {
    assert_eq!(sanitize("get pet/by id"), "get_pet_by_id");
    assert_eq!(sanitize("__a..b__"), "a_b");
    assert_eq!(sanitize("ünï"), "n");
    assert_eq!(fallback_name("get", "/"), "get");
    assert_eq!(fallback_name("delete", "/users/{user-id}/posts.json"), "delete_users_user-id_posts_json");
    let long = "x".repeat(100);
    assert_eq!(sanitize(&long).len(), bounds::MAX_NAME_LEN);
    let mut names = Taken::default();
    assert_eq!(unique_name(&mut names, &sanitize(&long)), "x".repeat(64));
    let second = unique_name(&mut names, &sanitize(&long));
    assert_eq!(second.len(), 64);
    assert!(second.ends_with("_2"));
    let s = spec(
        r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"operationId": "a"}, "post": {"operationId": "a"}},
        "/b": {"get": {"operationId": "a_2"}, "put": {"operationId": "%%%"}}}}"#,
    );
    let names: Vec<&str> = s.operations.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["a", "a_2", "a_2_2", "put_b"]);
}

#[test]
fn errors_name_the_origin_and_pointer() {
    assert_eq!(err("[1]"), "t.json: #: an OpenAPI document is a mapping (with `openapi:` or `swagger:`)");
    assert!(err("{\"openapi\": ").starts_with("t.json: #: not valid JSON"), "{}", err("{\"openapi\": "));
    assert!(err("a: [b").starts_with("t.json: #: not valid JSON or YAML"));
    assert_eq!(err("{}"), "t.json: #: not an OpenAPI document: it has neither `openapi:` (3.x) nor `swagger: \"2.0\"`");
    assert!(err(r#"{"swagger": "1.2"}"#).starts_with("t.json: #/swagger: unsupported version '1.2'"));
    assert_eq!(err(r#"{"openapi": "3.0.0", "paths": []}"#), "t.json: #/paths: `paths` must be a mapping");
    assert_eq!(
        err(r#"{"openapi": "3.0.0", "paths": {"/a/{b}": {"get": {"parameters": [{"name": "x", "in": "body"}]}}}}"#),
        "t.json: #/paths/~1a~1{b}/get/parameters/0/in: unknown parameter location 'body' (path, query, header or cookie)"
    );
    assert_eq!(
        err(
            r##"{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"$ref": "#/components/parameters/Nope"}]}}}}"##
        ),
        "t.json: #/paths/~1a/get/parameters/0: the $ref '#/components/parameters/Nope' does not resolve"
    );
    assert_eq!(
        err(
            r##"{"openapi": "3.0.0", "components": {"parameters": {"A": {"$ref": "#/components/parameters/B"}, "B": {"$ref": "#/components/parameters/A"}}},
            "paths": {"/a": {"get": {"parameters": [{"$ref": "#/components/parameters/A"}]}}}}"##
        ),
        "t.json: #/paths/~1a/get/parameters/0: the $ref '#/components/parameters/A' is circular"
    );
    assert_eq!(
        err(r##"{"openapi": "3.0.0", "paths": {"/a": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "other.yaml#/Pet"}}}}}}}}"##),
        "t.json: #/paths/~1a/post/requestBody/content/application~1json: the $ref 'other.yaml#/Pet' points into another document: only local references (`#/...`) are supported"
    );
    assert_eq!(
        err(
            r#"{"openapi": "3.0.0", "servers": [{"url": "https://{x}"}], "paths": {}, "x": 1, "components": {}, "security": {}}"#
        ),
        "t.json: #/security: `security` must be a list"
    );
    assert_eq!(
        err(
            r#"{"openapi": "3.0.0", "components": {"securitySchemes": {"k": {"type": "apiKey", "name": "k", "in": "body"}}}}"#
        ),
        "t.json: #/components/securitySchemes/k/in: an apiKey goes `in: header`, `query` or `cookie`"
    );
}

#[test]
fn bounds_are_enforced() {
    let huge = format!("{{\"openapi\": \"3.0.0\", \"x\": \"{}\"}}", "a".repeat(bounds::MAX_DOCUMENT_BYTES));
    assert!(err(&huge).contains("larger than"));
    let mut paths = Map::new();
    for i in 0..=bounds::MAX_OPERATIONS {
        paths.insert(format!("/p{i}"), json!({"get": {}}));
    }
    let doc = json!({"openapi": "3.0.0", "paths": paths});
    let e = from_value(&doc, "many.json").unwrap_err().to_string();
    assert!(e.contains("more than 4096 operations"), "{e}");
    // Too many arguments, as parameters, path names or body properties; many equal names stay fast.
    let params: Vec<Value> = (0..1001).map(|i| json!({"name": format!("p{i}"), "in": "query"})).collect();
    let doc = json!({"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": params}}}});
    assert!(from_value(&doc, "p.json").unwrap_err().to_string().contains("more than 1000 parameters"));
    let path: String = (0..5000).map(|i| format!("/{{v{i}}}")).collect();
    let doc = json!({"openapi": "3.0.0", "paths": {path: {"get": {}}}});
    assert!(from_value(&doc, "p.json").unwrap_err().to_string().contains("more than 1000 parameters"));
    let props: Map<String, Value> = (0..100_000).map(|i| (format!("f{i}"), json!({"type": "string"}))).collect();
    let doc = json!({"openapi": "3.0.0", "paths": {"/a": {"post": {"requestBody": {"content": {"application/json": {"schema": {"properties": props}}}}}}}});
    assert!(from_value(&doc, "p.json").unwrap_err().to_string().contains("more than 1000 parameters"));
    let same: Vec<Value> = (0..1000).map(|_| json!({"name": "x", "in": "query"})).collect();
    let mut paths = Map::new();
    for i in 0..4000 {
        paths.insert(format!("/p{i}"), json!({"get": {"operationId": "same"}}));
    }
    paths.insert("/q".into(), json!({"get": {"parameters": same}}));
    let started = std::time::Instant::now();
    let s = from_value(&json!({"openapi": "3.0.0", "paths": paths}), "same.json").unwrap();
    assert_eq!(s.operations[3999].name, "same_4000");
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    // Deep JSON nesting is refused by the JSON parser; deep YAML by the YAML reader.
    let deep = format!("{{\"openapi\": \"3.0.0\", \"x\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(err(&deep).contains("not valid JSON"));
    let deep = format!("openapi: 3.0.0\nx: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    assert!(err(&deep).contains("not valid JSON or YAML"));
}

#[test]
fn exponential_references_are_cut_not_expanded() {
    let mut schemas = Map::new();
    for i in 0..60 {
        let next = json!({"$ref": format!("#/components/schemas/S{}", i + 1)});
        schemas.insert(format!("S{i}"), json!({"type": "object", "properties": {"a": next, "b": next, "c": next}}));
    }
    schemas.insert("S60".into(), json!({"type": "string"}));
    let mut paths = Map::new();
    for i in 0..110 {
        paths.insert(
            format!("/p{i}"),
            json!({"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}}}),
        );
    }
    let doc = json!({"openapi": "3.0.0", "components": {"schemas": schemas}, "paths": paths});
    let started = std::time::Instant::now();
    let s = from_value(&doc, "bomb.json").unwrap();
    assert!(s.truncated);
    assert_eq!(s.operations.len(), 110);
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}

#[test]
fn a_bom_and_yaml_json_both_work() {
    let s = spec("\u{feff}{\"openapi\": \"3.1.0\", \"paths\": {\"/x\": {\"get\": {\"operationId\": \"x\"}}}}");
    assert_eq!(s.operations[0].name, "x");
    let s = spec("swagger: '2.0'\npaths:\n  /x:\n    get:\n      operationId: x\n      parameters: [{name: q, in: query, type: string, required: true}]\n");
    assert_eq!(s.operations[0].parameters_schema()["required"], json!(["q"]));
}

#[test]
fn hostile_shapes_never_panic() {
    for doc in [
        r#"{"openapi": "3.0.0", "paths": {"/a": 1}}"#,
        r#"{"openapi": "3.0.0", "paths": {"/a": {"get": 1}}}"#,
        r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": 1}}}}"#,
        r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [1]}}}}"#,
        r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"requestBody": 1}}}}"#,
        r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"requestBody": {"content": 1}}}}}"#,
        r##"{"openapi": "3.0.0", "paths": {"/a": {"$ref": "#/paths/~1a"}}}"##,
        r#"{"openapi": "3.0.0", "servers": [1], "paths": {}}"#,
        r#"{"openapi": "3.0.0", "servers": [{"url": "x", "variables": {"v": {}}}], "paths": {}}"#,
        r#"{"openapi": "3.0.0", "paths": {"/{a}{": {"get": {"security": [1]}}}}"#,
        r##"{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"name": "q", "in": "query", "schema": {"$ref": "#/%ZZ"}}]}}}}"##,
        r#"{"openapi": 3.0, "paths": {"/a": {"get": {"parameters": [{"name": "q", "in": "query", "schema": {"type": 7, "properties": [1]}}]}}}}"#,
        r#"{"swagger": "2.0", "paths": {"/a": {"post": {"parameters": [{"name": "b", "in": "body", "schema": 5}, {"name": 1}]}}}}"#,
    ] {
        let _ = parse_spec(doc, "h.json");
    }
}
