//! OpenAPI documents for `kind: openapi` tools: [`parse_spec`] reads an OpenAPI 3.0, 3.1 or
//! Swagger 2.0 document (JSON or YAML) into an [`OpenApiSpec`] whose [`Operation`]s are the
//! functions a model can call, each with one JSON Schema for its arguments
//! ([`Operation::parameters_schema`]).
//!
//! The compile-time check of typed prompts (`prompty-build`) and the runtime client
//! (`prompty::openapi`, feature `openapi`) both use this reader, so they agree on operation names
//! and arguments. It does no I/O beyond [`read_spec_file`] (no HTTP).
//!
//! # Why no OpenAPI crate
//!
//! No maintained crate reads all three versions: `openapiv3` reads 3.0 only, `oas3` 3.1 only, and
//! neither reads Swagger 2.0, which real services still publish (httpbin does). The document is
//! read as a `serde_json::Value` (YAML through the same bounded YAML reader as frontmatter) and
//! only what a tool needs is taken from it: servers, operations, parameters, request bodies and
//! security schemes. Whatever else a document holds is ignored, and unknown shapes are tolerated
//! where a model would not be misled (a parameter `type: int`, seen in httpbin's document, becomes
//! `integer`).
//!
//! # What an operation becomes
//!
//! - Its **name** is its `operationId`, else the method and the path (`get_pet_petId`), with every
//!   character outside `[A-Za-z0-9_-]` replaced by `_`, at most [`bounds::MAX_NAME_LEN`] bytes,
//!   and made unique in document order by a `_2`, `_3`, ... suffix.
//! - Its **arguments** are its path, query, header and cookie parameters (path-level parameters
//!   included, overridden by the operation's own of the same name and location; a `{name}` of the
//!   path that no parameter declares is a required string), then the top-level properties of its
//!   request body when that is an object (its `properties`, and those of its `allOf` members),
//!   else one argument `body` holding the whole body. An argument takes the parameter's (or
//!   property's) name; when that name is already taken (a query parameter and a header both
//!   called `id`), the later one is named `<location>_<name>` (`header_id`, `body_id`), then with
//!   `_2`, `_3`, ... until it is free. Parameters come first in the order path, query, header,
//!   cookie, so their names win over body properties. [`Parameter::property`] and
//!   [`BodyField::property`] say which argument feeds what.
//! - Swagger 2.0 `in: body` is the request body; `in: formData` parameters together are an
//!   `application/x-www-form-urlencoded` (or, with a `file` parameter or `consumes` saying so,
//!   `multipart/form-data`) body. As OpenAPI 3 says, header parameters named `Accept`,
//!   `Content-Type` or `Authorization` of a 3.x document are ignored.
//! - Schemas are made self-contained: every local `$ref` (`#/components/...`, `#/definitions/...`,
//!   `#/parameters/...`) is replaced by its target; a reference to another document is an error.
//!
//! # Bounds (hostile documents)
//!
//! Nothing here panics, recurses without bound or takes quadratic time on any input; see
//! [`bounds`]: the document's size, the number of operations and of arguments per operation, how
//! deep `$ref`s and schemas nest, and how many schema nodes the expansion of references may build
//! (per operation and in all). A circular schema stops at
//! the repeated reference with the open schema `{}`; a schema cut by a bound also ends in `{}`.
//!
//! ```
//! let spec = prompty_core::openapi::parse_spec(r#"
//! openapi: 3.0.3
//! info: {title: Pets, version: "1"}
//! servers: [{url: "https://pets.example/v1"}]
//! paths:
//!   /pets/{id}:
//!     get:
//!       operationId: getPet
//!       parameters:
//!         - {name: id, in: path, required: true, schema: {type: integer}}
//!         - {name: fields, in: query, schema: {type: array, items: {type: string}}}
//! "#, "pets.yaml")?;
//! assert_eq!(spec.servers, ["https://pets.example/v1"]);
//! let op = spec.operation("getPet").unwrap();
//! assert_eq!((op.method.as_str(), op.path.as_str()), ("GET", "/pets/{id}"));
//! assert_eq!(op.parameters_schema()["required"], serde_json::json!(["id"]));
//! # Ok::<(), prompty_core::Error>(())
//! ```

mod schema;

use crate::{Error, LoadOptions, Location, Result};
use schema::{follow, Expander};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The bounds of the reader. A document beyond the first three is refused with an error; the
/// schema bounds cut a schema short with the open schema `{}` instead.
///
/// ```
/// use prompty_core::openapi::bounds;
/// assert_eq!(bounds::MAX_DOCUMENT_BYTES, 16 << 20);
/// assert_eq!(bounds::MAX_OPERATIONS, 4096);
/// ```
pub mod bounds {
    /// The largest document read, in bytes (16 MiB).
    pub const MAX_DOCUMENT_BYTES: usize = 16 << 20;
    /// The most operations a document may have.
    pub const MAX_OPERATIONS: usize = 4096;
    /// The longest chain of `$ref`s followed while one is being expanded (deeper: `{}`; for a
    /// parameter or request body: an error).
    pub const MAX_REF_DEPTH: usize = 32;
    /// The deepest nesting of one expanded schema (deeper: `{}`).
    pub const MAX_SCHEMA_DEPTH: usize = 64;
    /// How many schema nodes (objects and array items) the schemas of one operation may expand
    /// to; the rest becomes `{}`.
    pub const MAX_SCHEMA_NODES: usize = 10_000;
    /// How many schema nodes the whole document may expand to; the rest becomes `{}`.
    pub const MAX_DOCUMENT_SCHEMA_NODES: usize = 1_000_000;
    /// The longest operation name, in bytes.
    pub const MAX_NAME_LEN: usize = 64;
    /// The most arguments (parameters and top-level body properties) one operation may have.
    pub const MAX_ARGUMENTS: usize = 1000;
}

/// The version of a document.
///
/// ```
/// use prompty_core::openapi::SpecVersion;
/// assert_eq!(SpecVersion::Swagger2.as_str(), "2.0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecVersion {
    /// `swagger: "2.0"`.
    Swagger2,
    /// `openapi: 3.0.x`.
    OpenApi30,
    /// `openapi: 3.1.x` (and later 3.x, read the same way).
    OpenApi31,
}

impl SpecVersion {
    /// `2.0`, `3.0` or `3.1`.
    pub fn as_str(self) -> &'static str {
        match self {
            SpecVersion::Swagger2 => "2.0",
            SpecVersion::OpenApi30 => "3.0",
            SpecVersion::OpenApi31 => "3.1",
        }
    }
}

/// An OpenAPI document, reduced to what tools need.
///
/// ```
/// let spec = prompty_core::openapi::parse_spec(
///     r#"{"swagger": "2.0", "info": {"title": "Bin", "version": "1"}, "host": "bin.example", "basePath": "/api",
///         "schemes": ["http"], "paths": {"/get": {"get": {}}}}"#, "bin.json")?;
/// assert_eq!(spec.servers, ["http://bin.example/api"]);
/// assert_eq!(spec.operations[0].name, "get_get");
/// # Ok::<(), prompty_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct OpenApiSpec {
    /// The version family.
    pub version: SpecVersion,
    /// The version as written (`3.0.3`, `2.0`).
    pub version_text: String,
    /// `info.title`.
    pub title: Option<String>,
    /// `info.description`.
    pub description: Option<String>,
    /// Base URLs: 3.x `servers[].url` with each `{variable}` replaced by its default; 2.0
    /// `scheme://host` + `basePath` (the first of `schemes`, else `https`; only `basePath` when
    /// there is no `host`). A URL may be relative (`/v1`): it is relative to the document's URL.
    pub servers: Vec<String>,
    /// Every operation, in document order.
    pub operations: Vec<Operation>,
    /// `components.securitySchemes` (3.x) or `securityDefinitions` (2.0), by name.
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Whether a schema was cut short by a bound of [`bounds`] (the cut parts are `{}`).
    pub truncated: bool,
}

impl OpenApiSpec {
    /// The operation with this name.
    ///
    /// ```
    /// let spec = prompty_core::openapi::parse_spec(r#"{"openapi": "3.1.0", "paths": {"/a": {"post": {"operationId": "make"}}}}"#, "a.json")?;
    /// assert!(spec.operation("make").is_some());
    /// assert!(spec.operation("nope").is_none());
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.operations.iter().find(|o| o.name == name)
    }
}

/// Where a parameter goes.
///
/// ```
/// use prompty_core::openapi::ParameterLocation;
/// assert_eq!(ParameterLocation::Query.as_str(), "query");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ParameterLocation {
    /// A `{name}` of the path.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
    /// The `Cookie` header.
    Cookie,
}

impl ParameterLocation {
    /// `path`, `query`, `header` or `cookie`.
    pub fn as_str(self) -> &'static str {
        match self {
            ParameterLocation::Path => "path",
            ParameterLocation::Query => "query",
            ParameterLocation::Header => "header",
            ParameterLocation::Cookie => "cookie",
        }
    }

    fn parse(text: &str) -> Option<ParameterLocation> {
        Some(match text {
            "path" => ParameterLocation::Path,
            "query" => ParameterLocation::Query,
            "header" => ParameterLocation::Header,
            "cookie" => ParameterLocation::Cookie,
            _ => return None,
        })
    }
}

/// A path, query, header or cookie parameter of an [`Operation`].
///
/// ```
/// use prompty_core::openapi::{Parameter, ParameterLocation};
/// let p = Parameter { name: "id".into(), location: ParameterLocation::Path, required: true, description: None,
///     schema: serde_json::json!({"type": "string"}), style: "simple".into(), explode: false, property: "id".into() };
/// assert_eq!(p.location.as_str(), "path");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// The name on the wire.
    pub name: String,
    /// Where it goes.
    pub location: ParameterLocation,
    /// Whether it must be given (path parameters always must).
    pub required: bool,
    /// What it means, for the model.
    pub description: Option<String>,
    /// Its JSON Schema, expanded.
    pub schema: Value,
    /// How arrays and objects are written: OpenAPI 3 `style` (`form`, `simple`,
    /// `spaceDelimited`, `pipeDelimited`, `deepObject`, `label`, `matrix`); Swagger 2.0's
    /// `collectionFormat` maps to these (`multi` → exploded `form`, `csv` → `form`, `ssv` →
    /// `spaceDelimited`, `pipes` → `pipeDelimited`, `tsv` → `tabDelimited`).
    pub style: String,
    /// Whether each array item (object member) is its own `name=value` pair.
    pub explode: bool,
    /// The argument of [`Operation::parameters_schema`] that holds its value.
    pub property: String,
}

/// One top-level property of an object request body, as an argument.
///
/// ```
/// let f = prompty_core::openapi::BodyField { name: "name".into(), property: "name".into(), required: true,
///     schema: serde_json::json!({"type": "string"}) };
/// assert!(f.required);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BodyField {
    /// The property's name in the body.
    pub name: String,
    /// The argument that holds its value.
    pub property: String,
    /// Whether the body's schema requires it.
    pub required: bool,
    /// Its JSON Schema, expanded.
    pub schema: Value,
}

/// How the model gives a request body.
///
/// ```
/// use prompty_core::openapi::BodyShape;
/// let whole = BodyShape::Whole { property: "body".into() };
/// assert!(matches!(whole, BodyShape::Whole { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum BodyShape {
    /// An object body: each top-level property is an argument.
    Flattened(Vec<BodyField>),
    /// Any other body: one argument holds all of it.
    Whole {
        /// The argument's name (`body`, unless a parameter took that name).
        property: String,
    },
}

/// The request body of an [`Operation`].
///
/// ```
/// use prompty_core::openapi::{Body, BodyShape};
/// let b = Body { required: true, content_type: "application/json".into(), description: None,
///     schema: serde_json::json!({"type": "array"}), shape: BodyShape::Whole { property: "body".into() } };
/// assert_eq!(b.content_type, "application/json");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// Whether a body must be sent.
    pub required: bool,
    /// The media type sent: the document's JSON one when it has one (`application/json`, then any
    /// `+json`), else `application/x-www-form-urlencoded`, `multipart/form-data`, else the first.
    pub content_type: String,
    /// What it means.
    pub description: Option<String>,
    /// Its JSON Schema, expanded.
    pub schema: Value,
    /// How its arguments are laid out.
    pub shape: BodyShape,
}

/// How a security scheme carries a credential.
///
/// ```
/// use prompty_core::openapi::{ParameterLocation, SecurityScheme};
/// let s = SecurityScheme::ApiKey { name: "X-Key".into(), location: ParameterLocation::Header };
/// assert!(matches!(s, SecurityScheme::ApiKey { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityScheme {
    /// `type: apiKey`: a header, query parameter or cookie of this name.
    ApiKey {
        /// The header, parameter or cookie name.
        name: String,
        /// Where it goes (header, query or cookie).
        location: ParameterLocation,
    },
    /// `type: http` (2.0: `type: basic`): `Authorization: <Scheme> ...`.
    Http {
        /// The scheme, lowercase: `bearer`, `basic`, ...
        scheme: String,
    },
    /// `type: oauth2`: a bearer token.
    OAuth2,
    /// `type: openIdConnect`: a bearer token.
    OpenIdConnect,
    /// Any other type (`mutualTLS`, ...), as written.
    Other {
        /// The type as written.
        kind: String,
    },
}

/// One way to satisfy an operation's security: the named schemes, all together. An empty list
/// means no credential is needed.
///
/// ```
/// let r = prompty_core::openapi::SecurityRequirement { schemes: vec!["api_key".into()] };
/// assert_eq!(r.schemes.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecurityRequirement {
    /// Names of [`OpenApiSpec::security_schemes`].
    pub schemes: Vec<String>,
}

/// An operation: a function the model can call.
///
/// ```
/// let spec = prompty_core::openapi::parse_spec(r#"{"openapi": "3.0.0", "paths": {"/pets": {"post": {
///     "operationId": "addPet", "summary": "Add a pet",
///     "requestBody": {"required": true, "content": {"application/json": {"schema": {
///         "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}}}}}}}}}"#,
///     "pets.json")?;
/// let op = &spec.operations[0];
/// assert_eq!(op.summary.as_deref(), Some("Add a pet"));
/// assert_eq!(op.argument_names().collect::<Vec<_>>(), ["name", "tag"]);
/// # Ok::<(), prompty_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// The function name (see the [module docs](self)).
    pub name: String,
    /// `operationId` as written.
    pub operation_id: Option<String>,
    /// The HTTP method, uppercase.
    pub method: String,
    /// The path template as written (`/pets/{id}`).
    pub path: String,
    /// Where it is in the document (`#/paths/~1pets~1{id}/get`), for messages.
    pub pointer: String,
    /// `summary`.
    pub summary: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// Whether it is marked deprecated.
    pub deprecated: bool,
    /// Path, query, header and cookie parameters.
    pub parameters: Vec<Parameter>,
    /// The request body.
    pub body: Option<Body>,
    /// The ways to authenticate, any one of which will do (the operation's `security`, else the
    /// document's). Empty: no credential is needed.
    pub security: Vec<SecurityRequirement>,
    /// Servers of the operation or its path (3.x), which replace the document's.
    pub servers: Vec<String>,
    /// The media types of its success responses (for `Accept`).
    pub produces: Vec<String>,
}

impl Operation {
    /// The JSON Schema of the arguments: an object with one property per argument (see the
    /// [module docs](self)), each with its description, and `required` listing the required ones
    /// (a body property is required only when the body is).
    ///
    /// ```
    /// let spec = prompty_core::openapi::parse_spec(r#"{"swagger": "2.0", "paths": {"/items/{id}": {"get": {
    ///     "parameters": [{"name": "id", "in": "path", "required": true, "type": "string", "description": "Item id"}]}}}}"#,
    ///     "items.json")?;
    /// assert_eq!(spec.operations[0].parameters_schema(), serde_json::json!({
    ///     "type": "object",
    ///     "properties": {"id": {"type": "string", "description": "Item id"}},
    ///     "required": ["id"]}));
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn parameters_schema(&self) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for p in &self.parameters {
            properties.insert(p.property.clone(), with_description(&p.schema, p.description.as_deref()));
            if p.required {
                required.push(Value::String(p.property.clone()));
            }
        }
        if let Some(body) = &self.body {
            match &body.shape {
                BodyShape::Flattened(fields) => {
                    for f in fields {
                        properties.insert(f.property.clone(), f.schema.clone());
                        if f.required && body.required {
                            required.push(Value::String(f.property.clone()));
                        }
                    }
                }
                BodyShape::Whole { property } => {
                    properties.insert(property.clone(), with_description(&body.schema, body.description.as_deref()));
                    if body.required {
                        required.push(Value::String(property.clone()));
                    }
                }
            }
        }
        let mut schema = Map::new();
        schema.insert("type".to_owned(), Value::String("object".to_owned()));
        schema.insert("properties".to_owned(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".to_owned(), Value::Array(required));
        }
        Value::Object(schema)
    }

    /// The names of the arguments, parameters first, in the order of
    /// [`Operation::parameters_schema`].
    ///
    /// ```
    /// let spec = prompty_core::openapi::parse_spec(r#"{"openapi": "3.0.0", "paths": {"/a/{id}": {"get": {}}}}"#, "a.json")?;
    /// assert_eq!(spec.operations[0].argument_names().collect::<Vec<_>>(), ["id"]);
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn argument_names(&self) -> impl Iterator<Item = &str> {
        let body: Vec<&str> = match self.body.as_ref().map(|b| &b.shape) {
            Some(BodyShape::Flattened(fields)) => fields.iter().map(|f| f.property.as_str()).collect(),
            Some(BodyShape::Whole { property }) => vec![property.as_str()],
            None => Vec::new(),
        };
        self.parameters.iter().map(|p| p.property.as_str()).chain(body)
    }

    /// What the operation does, for the model: the summary and the description (either may be
    /// missing), joined by a blank line.
    ///
    /// ```
    /// let spec = prompty_core::openapi::parse_spec(r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"summary": "List"}}}}"#, "a.json")?;
    /// assert_eq!(spec.operations[0].doc().as_deref(), Some("List"));
    /// # Ok::<(), prompty_core::Error>(())
    /// ```
    pub fn doc(&self) -> Option<String> {
        match (self.summary.as_deref(), self.description.as_deref()) {
            (Some(s), Some(d)) if s.trim() != d.trim() => Some(format!("{}\n\n{}", s.trim(), d.trim())),
            (Some(s), _) => Some(s.trim().to_owned()),
            (None, Some(d)) => Some(d.trim().to_owned()),
            (None, None) => None,
        }
    }
}

fn with_description(schema: &Value, description: Option<&str>) -> Value {
    let mut schema = schema.clone();
    if let (Value::Object(map), Some(d)) = (&mut schema, description) {
        map.entry("description").or_insert_with(|| Value::String(d.to_owned()));
    }
    schema
}

/// `text`, at most `max` bytes (cut on a character boundary, with `...`).
pub(crate) fn cut(text: &str, max: usize) -> String {
    match crate::text::prefix(text, max) {
        whole if whole.len() == text.len() => text.to_owned(),
        part => format!("{part}..."),
    }
}

/// Reads an OpenAPI 3.0/3.1 or Swagger 2.0 document (JSON when it starts with `{`, else YAML).
/// `origin` names it in errors (a path or URL). Errors are [`Error::InvalidField`] whose field is
/// the JSON pointer of the problem (`#/paths/~1pets/get/parameters/0`).
///
/// ```
/// use prompty_core::openapi::parse_spec;
/// let err = parse_spec(r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"in": "query"}]}}}}"#, "api.json").unwrap_err();
/// assert_eq!(err.to_string(), "api.json: #/paths/~1a/get/parameters/0: a parameter needs a `name`");
/// let err = parse_spec("openapi: 4.0.0\n", "api.yaml").unwrap_err();
/// assert!(err.to_string().starts_with("api.yaml: #/openapi: unsupported version '4.0.0'"));
/// ```
pub fn parse_spec(text: &str, origin: &str) -> Result<OpenApiSpec> {
    if text.len() > bounds::MAX_DOCUMENT_BYTES {
        return Err(invalid(
            origin,
            "#",
            format!(
                "the document is larger than {} bytes (openapi::bounds::MAX_DOCUMENT_BYTES)",
                bounds::MAX_DOCUMENT_BYTES
            ),
        ));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let root: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| invalid(origin, "#", format!("not valid JSON: {e}")))?
    } else {
        crate::yaml::parse(text).map_err(|e| invalid(origin, "#", format!("not valid JSON or YAML: {e}")))?
    };
    from_value(&root, origin)
}

/// Reads the document already parsed as a JSON value (see [`parse_spec`]).
///
/// ```
/// let spec = prompty_core::openapi::from_value(&serde_json::json!({"openapi": "3.1.0", "paths": {}}), "empty.json")?;
/// assert!(spec.operations.is_empty());
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn from_value(root: &Value, origin: &str) -> Result<OpenApiSpec> {
    let Value::Object(doc) = root else {
        return Err(invalid(origin, "#", "an OpenAPI document is a mapping (with `openapi:` or `swagger:`)"));
    };
    let (version, version_text) = version(doc, origin)?;
    let reader = Reader { root, origin, version };
    let info = doc.get("info");
    let text_of = |v: Option<&Value>, key: &str| v.and_then(|v| v.get(key)).and_then(Value::as_str).map(str::to_owned);
    let servers = match version {
        SpecVersion::Swagger2 => swagger_servers(doc),
        _ => reader.servers(doc.get("servers"), "#/servers")?,
    };
    let security_schemes = reader.security_schemes(doc)?;
    let security = match doc.get("security") {
        Some(s) => reader.security(s, "#/security")?,
        None => Vec::new(),
    };
    let mut expander = Expander::new(root, version);
    let operations = reader.operations(doc, &security, &mut expander)?;
    Ok(OpenApiSpec {
        version,
        version_text,
        title: text_of(info, "title"),
        description: text_of(info, "description"),
        servers,
        operations,
        security_schemes,
        truncated: expander.truncated,
    })
}

/// Where a local specification file is, read and parsed: `reference` resolved against
/// `base_dir` (the prompt's folder) and confined to it and `options`' allowed roots, exactly as
/// `${file:}` references are. The file may be at most [`bounds::MAX_DOCUMENT_BYTES`] (not
/// [`LoadOptions`]' file limit: OpenAPI documents are often larger than prompt files). `origin`
/// (the prompt) names the reference in errors. Returns the canonical path and the document.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-openapi-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("api.yaml"), "openapi: 3.0.0\npaths:\n  /ping:\n    get: {operationId: ping}\n").unwrap();
/// let options = prompty_core::LoadOptions::new();
/// let (path, spec) = prompty_core::openapi::read_spec_file(&dir, "./api.yaml", &options, "chat.prompty")?;
/// assert!(path.ends_with("api.yaml"));
/// assert_eq!(spec.operations[0].name, "ping");
/// let err = prompty_core::openapi::read_spec_file(&dir, "../../etc/passwd", &options, "chat.prompty").unwrap_err();
/// assert!(err.to_string().contains("outside allowed roots"));
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn read_spec_file(
    base_dir: &Path,
    reference: &str,
    options: &LoadOptions,
    origin: &str,
) -> Result<(PathBuf, OpenApiSpec)> {
    use crate::references::{confine, read_regular, Confine, ReadError, Roots};
    let roots = Roots::new(base_dir, options.allowed_roots());
    let path = match confine(reference, base_dir, &roots) {
        Ok(p) => p,
        Err(Confine::Outside) => {
            return Err(Error::FileOutsideRoots {
                at: Location::file(origin),
                field: "specification".to_owned(),
                reference: reference.to_owned(),
            })
        }
        Err(Confine::NotFound(p)) => return Err(Error::FileNotFound { path: p }),
        Err(Confine::Io(p, source)) => return Err(Error::Io { path: p, source }),
    };
    let limit = u64::try_from(bounds::MAX_DOCUMENT_BYTES).unwrap_or(u64::MAX);
    let text = match read_regular(&path, limit) {
        Ok(text) => text,
        Err(ReadError::Io(source)) => return Err(Error::Io { path, source }),
        Err(refused) => {
            return Err(Error::InvalidField {
                at: Location::file(origin),
                field: "specification".to_owned(),
                message: format!("'{reference}' cannot be read: {refused}"),
            })
        }
    };
    let spec = parse_spec(&text, &path.display().to_string())?;
    Ok((path, spec))
}

fn invalid(origin: &str, pointer: &str, message: impl Into<String>) -> Error {
    Error::InvalidField { at: Location::file(origin), field: pointer.to_owned(), message: message.into() }
}

/// A JSON pointer token: `~` → `~0`, `/` → `~1`.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn version(doc: &Map<String, Value>, origin: &str) -> Result<(SpecVersion, String)> {
    if let Some(v) = doc.get("openapi") {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(invalid(origin, "#/openapi", "the version must be a string such as \"3.0.3\"")),
        };
        let version = if text.starts_with("3.0") {
            SpecVersion::OpenApi30
        } else if text.starts_with("3.") {
            SpecVersion::OpenApi31
        } else {
            return Err(invalid(
                origin,
                "#/openapi",
                format!("unsupported version '{}' (OpenAPI 3.0, 3.1 and Swagger 2.0 are read)", cut(&text, 40)),
            ));
        };
        return Ok((version, text));
    }
    if let Some(v) = doc.get("swagger") {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => String::new(),
        };
        if text == "2.0" || text == "2" {
            return Ok((SpecVersion::Swagger2, "2.0".to_owned()));
        }
        return Err(invalid(
            origin,
            "#/swagger",
            format!("unsupported version '{}' (OpenAPI 3.0, 3.1 and Swagger 2.0 are read)", cut(&text, 40)),
        ));
    }
    Err(invalid(origin, "#", "not an OpenAPI document: it has neither `openapi:` (3.x) nor `swagger: \"2.0\"`"))
}

fn swagger_servers(doc: &Map<String, Value>) -> Vec<String> {
    let base_path = doc.get("basePath").and_then(Value::as_str).unwrap_or("");
    let base_path =
        if base_path.is_empty() || base_path.starts_with('/') { base_path.to_owned() } else { format!("/{base_path}") };
    match doc.get("host").and_then(Value::as_str).filter(|h| !h.is_empty()) {
        Some(host) => {
            let scheme = doc
                .get("schemes")
                .and_then(Value::as_array)
                .and_then(|s| {
                    s.iter()
                        .filter_map(Value::as_str)
                        .find(|s| *s == "https")
                        .or_else(|| s.iter().find_map(Value::as_str))
                })
                .unwrap_or("https");
            vec![format!("{scheme}://{host}{base_path}")]
        }
        None if base_path.is_empty() => Vec::new(),
        None => vec![base_path],
    }
}

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

struct Reader<'a> {
    root: &'a Value,
    origin: &'a str,
    version: SpecVersion,
}

/// Operation names and argument names taken so far.
#[derive(Default)]
struct Taken {
    names: HashSet<String>,
    /// The next suffix to try for a base name (so that many equal names stay linear).
    next: HashMap<String, u32>,
}

impl Taken {
    fn has(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// `wanted` when free, else `<prefix>_<wanted>`, else with `_2`, `_3`, ...
    fn claim(&mut self, wanted: &str, prefix: &str) -> String {
        let mut name = wanted.to_owned();
        if self.has(&name) && !prefix.is_empty() {
            name = format!("{prefix}_{wanted}");
        }
        if self.has(&name) {
            return self.suffixed(&name, usize::MAX);
        }
        self.names.insert(name.clone());
        name
    }

    /// `<base>_<n>` for the first free `n` from 2, with `base` cut so that the name is at most
    /// `limit` bytes (`base` is ASCII when a limit applies).
    fn suffixed(&mut self, base: &str, limit: usize) -> String {
        let mut n = self.next.get(base).copied().unwrap_or(2);
        loop {
            let suffix = format!("_{n}");
            let mut name = base.to_owned();
            if name.len() + suffix.len() > limit {
                name.truncate(limit.saturating_sub(suffix.len()));
            }
            name.push_str(&suffix);
            n = n.saturating_add(1);
            if !self.has(&name) {
                self.next.insert(base.to_owned(), n);
                self.names.insert(name.clone());
                return name;
            }
        }
    }
}

impl<'a> Reader<'a> {
    fn err(&self, pointer: &str, message: impl Into<String>) -> Error {
        invalid(self.origin, pointer, message)
    }

    fn servers(&self, servers: Option<&Value>, pointer: &str) -> Result<Vec<String>> {
        let Some(servers) = servers else { return Ok(Vec::new()) };
        let Value::Array(list) = servers else { return Err(self.err(pointer, "`servers` must be a list")) };
        let mut out = Vec::new();
        for (i, server) in list.iter().enumerate() {
            let Some(url) = server.get("url").and_then(Value::as_str) else {
                return Err(self.err(&format!("{pointer}/{i}/url"), "a server needs a `url`"));
            };
            let mut url = url.to_owned();
            if let Some(Value::Object(vars)) = server.get("variables") {
                for (name, var) in vars {
                    let default = match var.get("default") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Number(n)) => n.to_string(),
                        _ => {
                            return Err(self.err(
                                &format!("{pointer}/{i}/variables/{}", escape(name)),
                                "a server variable needs a `default`",
                            ))
                        }
                    };
                    url = url.replace(&format!("{{{name}}}"), &default);
                }
            }
            out.push(url);
        }
        Ok(out)
    }

    fn security_schemes(&self, doc: &Map<String, Value>) -> Result<BTreeMap<String, SecurityScheme>> {
        let (schemes, pointer) = match self.version {
            SpecVersion::Swagger2 => (doc.get("securityDefinitions"), "#/securityDefinitions".to_owned()),
            _ => (
                doc.get("components").and_then(|c| c.get("securitySchemes")),
                "#/components/securitySchemes".to_owned(),
            ),
        };
        let mut out = BTreeMap::new();
        let Some(Value::Object(schemes)) = schemes else { return Ok(out) };
        for (name, scheme) in schemes {
            let here = format!("{pointer}/{}", escape(name));
            let (scheme, here) = follow(self.root, scheme, &here).map_err(|m| self.err(&here, m))?;
            let kind = scheme.get("type").and_then(Value::as_str).unwrap_or("");
            let parsed = match kind {
                "apiKey" => {
                    let Some(key_name) = scheme.get("name").and_then(Value::as_str) else {
                        return Err(self.err(&format!("{here}/name"), "an apiKey security scheme needs a `name`"));
                    };
                    let location = scheme.get("in").and_then(Value::as_str).and_then(ParameterLocation::parse);
                    let location = match location {
                        Some(
                            l @ (ParameterLocation::Header | ParameterLocation::Query | ParameterLocation::Cookie),
                        ) => l,
                        _ => {
                            return Err(
                                self.err(&format!("{here}/in"), "an apiKey goes `in: header`, `query` or `cookie`")
                            )
                        }
                    };
                    SecurityScheme::ApiKey { name: key_name.to_owned(), location }
                }
                "http" => SecurityScheme::Http {
                    scheme: scheme.get("scheme").and_then(Value::as_str).unwrap_or("bearer").to_ascii_lowercase(),
                },
                "basic" => SecurityScheme::Http { scheme: "basic".to_owned() },
                "oauth2" => SecurityScheme::OAuth2,
                "openIdConnect" => SecurityScheme::OpenIdConnect,
                other => SecurityScheme::Other { kind: other.to_owned() },
            };
            out.insert(name.clone(), parsed);
        }
        Ok(out)
    }

    fn security(&self, value: &Value, pointer: &str) -> Result<Vec<SecurityRequirement>> {
        let Value::Array(list) = value else { return Err(self.err(pointer, "`security` must be a list")) };
        let mut out = Vec::new();
        for (i, requirement) in list.iter().enumerate() {
            let Value::Object(map) = requirement else {
                return Err(self.err(&format!("{pointer}/{i}"), "a security requirement is a mapping of scheme names"));
            };
            out.push(SecurityRequirement { schemes: map.keys().cloned().collect() });
        }
        Ok(out)
    }

    fn operations(
        &self,
        doc: &'a Map<String, Value>,
        security: &[SecurityRequirement],
        expander: &mut Expander<'a>,
    ) -> Result<Vec<Operation>> {
        let mut out = Vec::new();
        let Some(paths) = doc.get("paths") else { return Ok(out) };
        let Value::Object(paths) = paths else { return Err(self.err("#/paths", "`paths` must be a mapping")) };
        let mut names = Taken::default();
        let global_consumes = string_list(doc.get("consumes"));
        let global_produces = string_list(doc.get("produces"));
        for (path, item) in paths {
            if path.starts_with("x-") {
                continue;
            }
            let here = format!("#/paths/{}", escape(path));
            let (item, item_at) = follow(self.root, item, &here).map_err(|m| self.err(&here, m))?;
            let Value::Object(item) = item else { return Err(self.err(&item_at, "a path item must be a mapping")) };
            let path_servers = self.servers(item.get("servers"), &format!("{item_at}/servers"))?;
            for (method, op) in item {
                if !METHODS.contains(&method.as_str()) {
                    continue;
                }
                if out.len() >= bounds::MAX_OPERATIONS {
                    return Err(self.err(
                        "#/paths",
                        format!(
                            "the document has more than {} operations (openapi::bounds::MAX_OPERATIONS)",
                            bounds::MAX_OPERATIONS
                        ),
                    ));
                }
                let op_at = format!("{item_at}/{method}");
                let Value::Object(op) = op else { return Err(self.err(&op_at, "an operation must be a mapping")) };
                expander.next_operation();
                let context = OpContext {
                    path,
                    method,
                    pointer: &op_at,
                    item,
                    item_at: &item_at,
                    consumes: string_list(op.get("consumes")).or_else(|| global_consumes.clone()),
                    produces: string_list(op.get("produces")).or_else(|| global_produces.clone()),
                };
                let mut operation = self.operation(op, &context, expander, &mut names)?;
                if operation.servers.is_empty() {
                    operation.servers = path_servers.clone();
                }
                if operation.security.is_empty() && !op.contains_key("security") {
                    operation.security = security.to_vec();
                }
                out.push(operation);
            }
        }
        Ok(out)
    }

    fn operation(
        &self,
        op: &'a Map<String, Value>,
        cx: &OpContext<'a, '_>,
        expander: &mut Expander<'a>,
        names: &mut Taken,
    ) -> Result<Operation> {
        let text = |key: &str| op.get(key).and_then(Value::as_str).map(str::to_owned);
        let operation_id = text("operationId");
        let wanted = operation_id
            .as_deref()
            .map(sanitize)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| fallback_name(cx.method, cx.path));
        let name = unique_name(names, &wanted);

        // Path-level parameters, then the operation's (which override the same name and location).
        let mut raw: Vec<(&'a Value, String)> = Vec::new();
        for (list, at) in [
            (cx.item.get("parameters"), format!("{}/parameters", cx.item_at)),
            (op.get("parameters"), format!("{}/parameters", cx.pointer)),
        ] {
            let Some(list) = list else { continue };
            let Value::Array(list) = list else { return Err(self.err(&at, "`parameters` must be a list")) };
            if list.len() > bounds::MAX_ARGUMENTS {
                return Err(self.err(&at, too_many_arguments()));
            }
            for (i, p) in list.iter().enumerate() {
                let here = format!("{at}/{i}");
                let (p, _) = follow(self.root, p, &here).map_err(|m| self.err(&here, m))?;
                let key = (p.get("name").and_then(Value::as_str), p.get("in").and_then(Value::as_str));
                raw.retain(|(q, _)| {
                    (q.get("name").and_then(Value::as_str), q.get("in").and_then(Value::as_str)) != key
                        || key.0.is_none()
                });
                raw.push((p, here));
            }
        }

        let mut params: Vec<Parameter> = Vec::new();
        let mut body_param: Option<(&'a Value, String)> = None;
        let mut form: Vec<(&'a Value, String)> = Vec::new();
        for (value, here) in raw {
            let Value::Object(p) = value else { return Err(self.err(&here, "a parameter must be a mapping")) };
            let Some(name) = p.get("name").and_then(Value::as_str) else {
                return Err(self.err(&here, "a parameter needs a `name`"));
            };
            let location = p.get("in").and_then(Value::as_str).unwrap_or("");
            if self.version == SpecVersion::Swagger2 {
                match location {
                    "body" => {
                        body_param = Some((value, here));
                        continue;
                    }
                    "formData" => {
                        form.push((value, here));
                        continue;
                    }
                    _ => {}
                }
            }
            let Some(location) = ParameterLocation::parse(location) else {
                return Err(self.err(
                    &format!("{here}/in"),
                    format!("unknown parameter location '{}' (path, query, header or cookie)", cut(location, 40)),
                ));
            };
            if location == ParameterLocation::Header
                && self.version != SpecVersion::Swagger2
                && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str())
            {
                continue;
            }
            let schema = self.parameter_schema(p, expander).map_err(|m| self.err(&here, m))?;
            let (style, explode) = self.style(p, location);
            params.push(Parameter {
                name: name.to_owned(),
                location,
                required: location == ParameterLocation::Path
                    || p.get("required").and_then(Value::as_bool) == Some(true),
                description: p.get("description").and_then(Value::as_str).map(str::to_owned),
                schema,
                style,
                explode,
                property: String::new(),
            });
        }
        // A `{name}` of the path no parameter declares (httpbin's `/anything/{anything}`).
        for var in template_names(cx.path) {
            if !params.iter().any(|p| p.location == ParameterLocation::Path && p.name == var) {
                params.push(Parameter {
                    name: var.to_owned(),
                    location: ParameterLocation::Path,
                    required: true,
                    description: None,
                    schema: serde_json::json!({"type": "string"}),
                    style: "simple".to_owned(),
                    explode: false,
                    property: String::new(),
                });
            }
        }
        if params.len() > bounds::MAX_ARGUMENTS {
            return Err(self.err(cx.pointer, too_many_arguments()));
        }
        params.sort_by_key(|p| p.location);
        let mut taken = Taken::default();
        for p in &mut params {
            p.property = taken.claim(&p.name, p.location.as_str());
        }

        let body = match self.version {
            SpecVersion::Swagger2 => self.swagger_body(body_param, &form, cx, expander)?,
            _ => self.request_body(op, cx, expander)?,
        };
        let body = match body {
            Some(RawBody { required, content_type, description, schema }) => {
                let room = bounds::MAX_ARGUMENTS - params.len();
                let shape = flatten(&schema, &mut taken, room).map_err(|m| self.err(cx.pointer, m))?;
                Some(Body { required, content_type, description, schema, shape })
            }
            None => None,
        };

        let security = match op.get("security") {
            Some(s) => self.security(s, &format!("{}/security", cx.pointer))?,
            None => Vec::new(),
        };
        let servers = match self.version {
            SpecVersion::Swagger2 => Vec::new(),
            _ => self.servers(op.get("servers"), &format!("{}/servers", cx.pointer))?,
        };
        let produces = match self.version {
            SpecVersion::Swagger2 => cx.produces.clone().unwrap_or_default(),
            _ => response_types(self.root, op.get("responses")),
        };
        Ok(Operation {
            name,
            operation_id,
            method: cx.method.to_ascii_uppercase(),
            path: cx.path.to_owned(),
            pointer: cx.pointer.to_owned(),
            summary: text("summary"),
            description: text("description"),
            deprecated: op.get("deprecated").and_then(Value::as_bool) == Some(true),
            parameters: params,
            body,
            security,
            servers,
            produces,
        })
    }

    /// A parameter's schema: 3.x `schema` (or the schema of its `content`), 2.0 its own fields.
    fn parameter_schema(
        &self,
        p: &'a Map<String, Value>,
        expander: &mut Expander<'a>,
    ) -> std::result::Result<Value, String> {
        if let Some(schema) = p.get("schema") {
            return expander.schema(schema);
        }
        if let Some(Value::Object(content)) = p.get("content") {
            if let Some(schema) = content.values().find_map(|m| m.get("schema")) {
                return expander.schema(schema);
            }
        }
        if self.version == SpecVersion::Swagger2 {
            return swagger_schema(p, expander);
        }
        Ok(serde_json::json!({"type": "string"}))
    }

    fn style(&self, p: &Map<String, Value>, location: ParameterLocation) -> (String, bool) {
        if self.version == SpecVersion::Swagger2 {
            let format = p.get("collectionFormat").and_then(Value::as_str).unwrap_or("csv");
            return match (format, location) {
                ("multi", _) => ("form".to_owned(), true),
                ("ssv", _) => ("spaceDelimited".to_owned(), false),
                ("pipes", _) => ("pipeDelimited".to_owned(), false),
                ("tsv", _) => ("tabDelimited".to_owned(), false),
                (_, ParameterLocation::Query | ParameterLocation::Cookie) => ("form".to_owned(), false),
                _ => ("simple".to_owned(), false),
            };
        }
        let default = match location {
            ParameterLocation::Query | ParameterLocation::Cookie => "form",
            _ => "simple",
        };
        let style = p.get("style").and_then(Value::as_str).unwrap_or(default).to_owned();
        let explode = p.get("explode").and_then(Value::as_bool).unwrap_or(style == "form");
        (style, explode)
    }

    /// A 3.x `requestBody`: (required, content type, description, expanded schema).
    fn request_body(
        &self,
        op: &'a Map<String, Value>,
        cx: &OpContext<'a, '_>,
        expander: &mut Expander<'a>,
    ) -> Result<Option<RawBody>> {
        let Some(body) = op.get("requestBody") else { return Ok(None) };
        let here = format!("{}/requestBody", cx.pointer);
        let (body, at) = follow(self.root, body, &here).map_err(|m| self.err(&here, m))?;
        let Value::Object(body) = body else { return Err(self.err(&at, "a request body must be a mapping")) };
        let required = body.get("required").and_then(Value::as_bool) == Some(true);
        let description = body.get("description").and_then(Value::as_str).map(str::to_owned);
        let Some(Value::Object(content)) = body.get("content") else {
            return Err(self.err(&format!("{at}/content"), "a request body needs `content`"));
        };
        let Some(content_type) = pick_media_type(content.keys().map(String::as_str)) else { return Ok(None) };
        let schema = match content.get(content_type).and_then(|m| m.get("schema")) {
            Some(schema) => {
                expander.schema(schema).map_err(|m| self.err(&format!("{at}/content/{}", escape(content_type)), m))?
            }
            None => Value::Object(Map::new()),
        };
        Ok(Some(RawBody { required, content_type: content_type.to_owned(), description, schema }))
    }

    /// A 2.0 body: the `in: body` parameter, or the `formData` parameters as one object.
    fn swagger_body(
        &self,
        body: Option<(&'a Value, String)>,
        form: &[(&'a Value, String)],
        cx: &OpContext<'a, '_>,
        expander: &mut Expander<'a>,
    ) -> Result<Option<RawBody>> {
        let consumes = cx.consumes.clone().unwrap_or_default();
        if let Some((p, here)) = body {
            let schema = match p.get("schema") {
                Some(s) => expander.schema(s).map_err(|m| self.err(&here, m))?,
                None => Value::Object(Map::new()),
            };
            let content_type =
                pick_media_type(consumes.iter().map(String::as_str)).unwrap_or("application/json").to_owned();
            let required = p.get("required").and_then(Value::as_bool) == Some(true);
            let description = p.get("description").and_then(Value::as_str).map(str::to_owned);
            return Ok(Some(RawBody { required, content_type, description, schema }));
        }
        if form.is_empty() {
            return Ok(None);
        }
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut has_file = false;
        for (p, here) in form {
            let Value::Object(p) = p else { continue };
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            has_file |= p.get("type").and_then(Value::as_str) == Some("file");
            let schema = swagger_schema(p, expander).map_err(|m| self.err(here, m))?;
            properties.insert(name.to_owned(), with_description(&schema, p.get("description").and_then(Value::as_str)));
            if p.get("required").and_then(Value::as_bool) == Some(true) {
                required.push(Value::String(name.to_owned()));
            }
        }
        let multipart = has_file || consumes.iter().any(|c| c.starts_with("multipart/form-data"));
        let content_type = if multipart { "multipart/form-data" } else { "application/x-www-form-urlencoded" };
        let any_required = !required.is_empty();
        let schema = serde_json::json!({"type": "object", "properties": properties, "required": required});
        Ok(Some(RawBody { required: any_required, content_type: content_type.to_owned(), description: None, schema }))
    }
}

/// A request body before its arguments are laid out.
struct RawBody {
    required: bool,
    content_type: String,
    description: Option<String>,
    schema: Value,
}

struct OpContext<'a, 'b> {
    path: &'a str,
    method: &'a str,
    pointer: &'b str,
    item: &'a Map<String, Value>,
    item_at: &'b str,
    consumes: Option<Vec<String>>,
    produces: Option<Vec<String>>,
}

fn string_list(v: Option<&Value>) -> Option<Vec<String>> {
    let list = v?.as_array()?;
    Some(list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

/// The media type to send, of those a body offers.
fn pick_media_type<'t>(types: impl Iterator<Item = &'t str> + Clone) -> Option<&'t str> {
    let base = |t: &str| t.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let find = |pred: &dyn Fn(&str) -> bool| types.clone().find(|t| pred(&base(t)));
    find(&|t| t == "application/json")
        .or_else(|| find(&|t| t.ends_with("+json") || t.ends_with("/json")))
        .or_else(|| find(&|t| t == "application/x-www-form-urlencoded"))
        .or_else(|| find(&|t| t == "multipart/form-data"))
        .or_else(|| types.clone().next())
}

/// The media types of the 2xx (and `default`) responses of a 3.x operation.
fn response_types(root: &Value, responses: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some(Value::Object(responses)) = responses else { return out };
    for (status, response) in responses {
        if !(status.starts_with('2') || status == "default") {
            continue;
        }
        let Ok((response, _)) = follow(root, response, "") else { continue };
        if let Some(Value::Object(content)) = response.get("content") {
            for t in content.keys() {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
    }
    out
}

/// The schema of a Swagger 2.0 non-body parameter, from its own fields.
fn swagger_schema(p: &Map<String, Value>, expander: &mut Expander<'_>) -> std::result::Result<Value, String> {
    const KEYS: [&str; 17] = [
        "type",
        "format",
        "items",
        "enum",
        "default",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "multipleOf",
        "example",
    ];
    let mut schema = Map::new();
    for key in KEYS {
        if let Some(v) = p.get(key) {
            schema.insert(key.to_owned(), v.clone());
        }
    }
    if !schema.contains_key("type") {
        schema.insert("type".to_owned(), Value::String("string".to_owned()));
    }
    // Expanded by the same rules as any schema (item `$ref`s, `type: int`, `type: file`).
    expander.schema(&Value::Object(schema))
}

/// The arguments of a request body: the top-level properties of an object schema (with those of
/// its `allOf` members), else one `body` argument.
fn flatten(schema: &Value, taken: &mut Taken, room: usize) -> std::result::Result<BodyShape, String> {
    let mut properties: Vec<(String, Value)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut required: HashSet<String> = HashSet::new();
    let mut collect = |s: &Value| {
        if let Some(Value::Object(props)) = s.get("properties") {
            for (k, v) in props {
                if seen.len() > room {
                    return Err(too_many_arguments());
                }
                if seen.insert(k.clone()) {
                    properties.push((k.clone(), v.clone()));
                }
            }
        }
        if let Some(Value::Array(r)) = s.get("required") {
            required.extend(r.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        Ok(())
    };
    collect(schema)?;
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for member in all {
            collect(member)?;
        }
    }
    if properties.len() > room {
        return Err(too_many_arguments());
    }
    let is_object = schema.get("type").and_then(Value::as_str).is_none_or(|t| t == "object");
    if properties.is_empty() || !is_object {
        return Ok(BodyShape::Whole { property: taken.claim("body", "request") });
    }
    let fields = properties
        .into_iter()
        .map(|(name, schema)| BodyField {
            property: taken.claim(&name, "body"),
            required: required.contains(&name),
            name,
            schema,
        })
        .collect();
    Ok(BodyShape::Flattened(fields))
}

fn too_many_arguments() -> String {
    format!(
        "the operation has more than {} parameters and body properties (openapi::bounds::MAX_ARGUMENTS)",
        bounds::MAX_ARGUMENTS
    )
}

/// The `{names}` of a path template, in order.
fn template_names(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
            if out.len() > bounds::MAX_ARGUMENTS {
                break;
            }
        }
        rest = &after[end + 1..];
    }
    out
}

/// `text` with every character outside `[A-Za-z0-9_-]` replaced by `_` (runs collapsed, none at
/// either end), at most [`bounds::MAX_NAME_LEN`] bytes.
fn sanitize(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let mut out = out.trim_matches('_').to_owned();
    out.truncate(bounds::MAX_NAME_LEN);
    out
}

/// `<method>_<path>` for an operation without an `operationId`.
fn fallback_name(method: &str, path: &str) -> String {
    let slug = sanitize(&path.replace(['{', '}'], ""));
    let name = if slug.is_empty() { method.to_owned() } else { format!("{method}_{slug}") };
    sanitize(&name)
}

fn unique_name(names: &mut Taken, wanted: &str) -> String {
    if names.has(wanted) {
        return names.suffixed(wanted, bounds::MAX_NAME_LEN);
    }
    names.names.insert(wanted.to_owned());
    wanted.to_owned()
}

#[cfg(test)]
mod tests;
