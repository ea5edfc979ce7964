//! What the editor knows of the frontmatter: the keys of the `.prompty` format at each level of
//! the YAML, each with a one-line description, and the values a key takes. The lists themselves
//! (property kinds, providers and their API types and options, tool kinds, template formats,
//! connection keys) are prompty-core's, the ones the loader and the analysis read: this module
//! only names where each applies and says what each key means.

use prompty_core::analysis::Span;
use prompty_core::analysis::{BuiltinProvider, BUILTIN_PROVIDERS, FORMATS, KINDS, PARSERS};
use prompty_core::{Connection, ModelOptions, StructuredOutput, ToolKind};

use crate::document::Document;

/// The kind of mapping a frontmatter path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// The top level.
    Agent,
    /// `model:`.
    Model,
    /// `model.options:`.
    Options,
    /// A `connection:` (the model's or a tool's).
    Connection,
    /// An input, an output, a tool parameter, or a nested property; `item` when it is an item of
    /// a list (whose `name` is a key).
    Property {
        /// Written as an item of a list.
        item: bool,
    },
    /// A tool; `item` when it is an item of the `tools` list.
    Tool {
        /// Written as an item of a list.
        item: bool,
    },
    /// `template:`.
    Template,
    /// `template.format:`.
    Format,
    /// `template.format.options:`.
    FormatOptions,
    /// `template.parser:`.
    Parser,
    /// An MCP tool's `approvalMode:`.
    ApprovalMode,
}

/// The values a key takes, for completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Values {
    /// Anything (a name, a number, a text, a mapping).
    Any,
    /// `true` or `false`.
    Bool,
    /// A property kind ([`KINDS`]).
    PropertyKinds,
    /// A tool kind ([`ToolKind::BUILTIN`]; any other is a custom tool).
    ToolKinds,
    /// A provider key ([`BUILTIN_PROVIDERS`]).
    Providers,
    /// An API type of the chosen provider.
    ApiTypes,
    /// A renderer key ([`FORMATS`]).
    Formats,
    /// A parser key ([`PARSERS`]).
    Parsers,
    /// A connection kind ([`Connection::KINDS`]).
    ConnectionKinds,
    /// A structured-output mode ([`StructuredOutput::ALL`]).
    StructuredOutputs,
    /// `auto`, `none`, `required` or a declared tool's name.
    ToolChoice,
    /// One of these words.
    Words(&'static [&'static str]),
}

/// A key of the format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Key {
    /// As written in a file.
    pub name: &'static str,
    /// What it means, in one line.
    pub doc: &'static str,
    /// What it takes.
    pub values: Values,
}

const fn key(name: &'static str, doc: &'static str, values: Values) -> Key {
    Key { name, doc, values }
}

/// The top-level keys (the loader's fields; `kind` and `instructions` are set by the loader).
const AGENT: &[Key] = &[
    key("name", "The prompt's name (an identifier).", Values::Any),
    key("displayName", "A human-readable name for the prompt.", Values::Any),
    key("description", "What the prompt does.", Values::Any),
    key("metadata", "Free-form information about the prompt (authors, tags, version, ...).", Values::Any),
    key(
        "model",
        "The model that runs the prompt: id, provider, apiType, connection, options (or just an id).",
        Values::Any,
    ),
    key("inputs", "The values the template reads, as a list or a mapping of properties.", Values::Any),
    key("outputs", "The structured output the model is asked for, as properties.", Values::Any),
    key("tools", "The tools the model may call.", Values::Any),
    key("template", "How the body is rendered (format) and split into messages (parser).", Values::Any),
];

const MODEL: &[Key] = &[
    key("id", "The model's id or deployment name (`gpt-4o-mini`).", Values::Any),
    key("provider", "The executor that runs the prompt: a built-in provider or a registered one.", Values::Providers),
    key("apiType", "The provider API to call (default `chat`).", Values::ApiTypes),
    key("connection", "Where the model is served and how to authenticate (discriminated by `kind`).", Values::Any),
    key(
        "options",
        "Generation options (temperature, maxOutputTokens, ...), mapped to each provider's names.",
        Values::Any,
    ),
];

/// The meaning of a key of `model.options` ([`ModelOptions::KNOWN_KEYS`]).
pub(crate) fn option_doc(name: &str) -> Option<&'static str> {
    Some(match name {
        "temperature" => "Sampling temperature: higher is more random.",
        "maxOutputTokens" => "Upper bound on the tokens the model generates.",
        "topP" => "Nucleus sampling: the probability mass of the tokens considered.",
        "topK" => "Top-k sampling: how many of the likeliest tokens are considered.",
        "frequencyPenalty" => "Penalty on tokens by how often they already appear.",
        "presencePenalty" => "Penalty on tokens that already appear at all.",
        "seed" => "Seed for repeatable sampling.",
        "stopSequences" => "Sequences that stop generation.",
        "allowMultipleToolCalls" => "Whether the model may call several tools at once.",
        "toolChoice" => "Whether and which tool the model must call: `auto`, `none`, `required` or a tool's name.",
        "structuredOutput" => {
            "How the prompt's `outputs:` are asked for (`jsonSchema`, `jsonObjectSchema`, `jsonObject`, `none`)."
        }
        "additionalProperties" => "Provider-specific options, added to the request body as written.",
        _ => return None,
    })
}

fn option_values(name: &str) -> Values {
    match name {
        "allowMultipleToolCalls" => Values::Bool,
        "toolChoice" => Values::ToolChoice,
        "structuredOutput" => Values::StructuredOutputs,
        _ => Values::Any,
    }
}

/// The meaning of a key of a connection ([`Connection::COMMON_KEYS`] and
/// [`Connection::keys_of`]).
fn connection_doc(name: &str) -> Option<&'static str> {
    Some(match name {
        "kind" => "How the connection authenticates: `key`, `reference`, `remote`, `anonymous`, `foundry`, `oauth`, or a registered kind.",
        "authenticationMode" => "`user` or `system`.",
        "usageDescription" => "Free text shown to users.",
        "maxTokensField" => "The request field that carries `maxOutputTokens` (`max_tokens` or `max_completion_tokens`).",
        "structuredOutput" => "How `outputs:` are asked for by the prompts on this connection.",
        "endpoint" => "The service's base URL.",
        "apiKey" => "The API key (write it as `${env:NAME}`).",
        "name" => "The connection's name (for `reference`: the name it is registered under in the host).",
        "target" => "A sub-target of the registered connection.",
        "connectionType" => "The Foundry connection's type.",
        "clientId" => "The OAuth client id.",
        "clientSecret" => "The OAuth client secret (write it as `${env:NAME}`).",
        "tokenUrl" => "The OAuth token endpoint.",
        "scopes" => "The OAuth scopes to ask for.",
        _ => return None,
    })
}

fn connection_values(name: &str) -> Values {
    match name {
        "kind" => Values::ConnectionKinds,
        "structuredOutput" => Values::StructuredOutputs,
        "authenticationMode" => Values::Words(&["user", "system"]),
        "maxTokensField" => Values::Words(&["max_tokens", "max_completion_tokens"]),
        _ => Values::Any,
    }
}

/// The keys of a property (the loader's `Property`); `name` only in a list.
const PROPERTY: &[Key] = &[
    key("name", "The property's name.", Values::Any),
    key("kind", "The property's kind (default: inferred from `default`, else `string`).", Values::PropertyKinds),
    key("description", "What the property is (shown to the model for outputs and tool parameters).", Values::Any),
    key("required", "Whether a value must be given (default false).", Values::Bool),
    key("nullable", "Whether the value may be null.", Values::Bool),
    key("default", "The value used when none is given.", Values::Any),
    key("example", "An example value (never used as a value).", Values::Any),
    key("enumValues", "The only values allowed.", Values::Any),
    key("items", "For `kind: array`: the property of every item (or just its kind).", Values::PropertyKinds),
    key("properties", "For `kind: object`: its properties.", Values::Any),
    key("oneOf", "For `kind: union`: the alternatives, exactly one of which matches.", Values::Any),
    key("anyOf", "For `kind: union`: the alternatives, any of which may match.", Values::Any),
];

/// The keys of a tool, with the kinds that read them (empty: every kind; `custom`: a kind that
/// is not built in).
const TOOL: &[(Key, &[&str])] = &[
    (
        key(
            "name",
            "The tool's name, as the model calls it; for `mcp` and `openapi` tools, the namespace of the tools they \
             offer (`name__tool`).",
            Values::Any,
        ),
        &[],
    ),
    (
        key(
            "kind",
            "What runs the tool: `function`, `mcp`, `openapi`, `prompty`, or a registered kind.",
            Values::ToolKinds,
        ),
        &[],
    ),
    (key("description", "What the tool does (shown to the model).", Values::Any), &[]),
    (
        key(
            "bindings",
            "Parameters filled from the prompt's inputs (`param: {input: name}`), hidden from the model.",
            Values::Any,
        ),
        &[],
    ),
    (key("parameters", "The function's parameters, as properties.", Values::Any), &["function"]),
    (
        key("strict", "OpenAI strict mode for the tool's schema (default false).", Values::Bool),
        &["function", "mcp", "openapi"],
    ),
    (key("connection", "How to reach the tool's server.", Values::Any), &["mcp", "openapi", "custom"]),
    (key("serverName", "The MCP server's name.", Values::Any), &["mcp"]),
    (key("serverDescription", "What the MCP server offers.", Values::Any), &["mcp"]),
    (
        key(
            "approvalMode",
            "When calls need approval: `always`, `never`, or `specify` with lists.",
            Values::Words(&["always", "never", "specify"]),
        ),
        &["mcp"],
    ),
    (key("allowedTools", "The server's tools the model may call (default: all).", Values::Any), &["mcp"]),
    (
        key(
            "handshakeTimeout",
            "Seconds (1 to 600) to start or reach the server and finish `initialize` (default 30).",
            Values::Any,
        ),
        &["mcp"],
    ),
    (
        key(
            "callTimeout",
            "Seconds (1 to 3600) for one tool call or one listing of the server's tools (default 60).",
            Values::Any,
        ),
        &["mcp"],
    ),
    (
        key(
            "idleTimeout",
            "Seconds (1 to 86400) the server may go unused before it is stopped; restarted on next use (default 300).",
            Values::Any,
        ),
        &["mcp"],
    ),
    (
        key(
            "required",
            "`true`: the turn fails when the server or document cannot be used; by default its tools are left \
             out with a warning.",
            Values::Bool,
        ),
        &["mcp", "openapi"],
    ),
    (key("specification", "The OpenAPI document: a path relative to the prompt, or a URL.", Values::Any), &["openapi"]),
    (key("path", "The child `.prompty` file, relative to this prompt.", Values::Any), &["prompty"]),
    (
        key(
            "mode",
            "`single` (one model call, the default) or `agentic` (the child runs its own tool loop).",
            Values::Words(&["single", "agentic"]),
        ),
        &["prompty"],
    ),
    (key("options", "Options for the tool's registered kind.", Values::Any), &["custom"]),
];

const TEMPLATE: &[Key] = &[
    key(
        "format",
        "The renderer of the body: `jinja2`, `nunjucks`, `mustache`, ... (or `{kind, strict, options}`).",
        Values::Formats,
    ),
    key("parser", "The parser that splits the rendered text into messages (`prompty`).", Values::Parsers),
];

const FORMAT: &[Key] = &[
    key("kind", "The renderer key (default `jinja2`).", Values::Formats),
    key("strict", "Whether every input is strict: a value holding a role marker is an error.", Values::Bool),
    key("options", "The renderer's options (`strictInputs`).", Values::Any),
];

const FORMAT_OPTIONS: &[Key] =
    &[key("strictInputs", "The inputs whose values may hold no role marker (a list of names).", Values::Any)];

const PARSER: &[Key] = &[
    key("kind", "The parser key (default `prompty`).", Values::Parsers),
    key("options", "The parser's options.", Values::Any),
];

const APPROVAL: &[Key] = &[
    key("kind", "`always`, `never` or `specify`.", Values::Words(&["always", "never", "specify"])),
    key("alwaysRequireApprovalTools", "With `specify`: the tools that always need approval.", Values::Any),
    key("neverRequireApprovalTools", "With `specify`: the tools that never need approval.", Values::Any),
];

/// The section a frontmatter path names (`["tools", "-", "parameters", "city"]`: a property).
pub(crate) fn section(path: &[String]) -> Option<Section> {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    match path.as_slice() {
        [] => Some(Section::Agent),
        ["model"] => Some(Section::Model),
        ["model", "options"] => Some(Section::Options),
        ["model", "connection"] => Some(Section::Connection),
        ["template"] => Some(Section::Template),
        ["template", "format"] => Some(Section::Format),
        ["template", "format", "options"] => Some(Section::FormatOptions),
        ["template", "parser"] => Some(Section::Parser),
        ["inputs" | "outputs", first, rest @ ..] => property(rest, *first == "-"),
        ["tools", first, rest @ ..] => match rest {
            [] => Some(Section::Tool { item: *first == "-" }),
            ["connection"] => Some(Section::Connection),
            ["approvalMode"] => Some(Section::ApprovalMode),
            ["parameters", first, rest @ ..] => property(rest, *first == "-"),
            _ => None,
        },
        _ => None,
    }
}

/// The section of a path below a property.
fn property(rest: &[&str], item: bool) -> Option<Section> {
    match rest {
        [] => Some(Section::Property { item }),
        ["items", rest @ ..] => property(rest, false),
        ["properties", first, rest @ ..] => property(rest, *first == "-"),
        ["oneOf" | "anyOf", "-", rest @ ..] => property(rest, false),
        _ => None,
    }
}

/// The keys of a section. `kind` is the mapping's `kind` as written (for a tool: which keys its
/// kind reads; for a connection: its kind's keys).
pub(crate) fn keys(section: Section, kind: Option<&str>) -> Vec<Key> {
    match section {
        Section::Agent => AGENT.to_vec(),
        Section::Model => MODEL.to_vec(),
        Section::Options => {
            ModelOptions::KNOWN_KEYS.iter().map(|k| key(k, option_doc(k).unwrap_or(""), option_values(k))).collect()
        }
        Section::Connection => {
            let own: Vec<&'static str> = match kind.and_then(Connection::keys_of) {
                Some(own) => own.to_vec(),
                // No kind yet (or one not built in): every key a built-in kind reads.
                None => {
                    let mut all: Vec<&'static str> = Vec::new();
                    for k in Connection::KINDS {
                        for name in Connection::keys_of(k).unwrap_or_default() {
                            if !all.contains(name) {
                                all.push(name);
                            }
                        }
                    }
                    all
                }
            };
            Connection::COMMON_KEYS
                .iter()
                .chain(own.iter())
                .map(|k| key(k, connection_doc(k).unwrap_or(""), connection_values(k)))
                .collect()
        }
        Section::Property { item } => PROPERTY.iter().filter(|k| item || k.name != "name").copied().collect(),
        Section::Tool { item } => {
            let kind = kind.map(|k| if ToolKind::BUILTIN.contains(&k) { k } else { "custom" });
            TOOL.iter()
                .filter(|(k, kinds)| {
                    (item || k.name != "name") && (kinds.is_empty() || kind.is_none_or(|t| kinds.contains(&t)))
                })
                .map(|(k, _)| *k)
                .collect()
        }
        Section::Template => TEMPLATE.to_vec(),
        Section::Format => FORMAT.to_vec(),
        Section::FormatOptions => FORMAT_OPTIONS.to_vec(),
        Section::Parser => PARSER.to_vec(),
        Section::ApprovalMode => APPROVAL.to_vec(),
    }
}

/// The key `name` of a section, if the format has it.
pub(crate) fn find(section: Section, kind: Option<&str>, name: &str) -> Option<Key> {
    keys(section, kind).into_iter().find(|k| k.name == name)
}

/// The built-in provider of that key.
pub(crate) fn provider(name: &str) -> Option<&'static BuiltinProvider> {
    BUILTIN_PROVIDERS.iter().find(|p| p.key == name)
}

/// The words a value takes (with a one-line detail each), for `values`; `provider` is the
/// model's provider as written, `tools` the declared tools' names.
pub(crate) fn words(values: Values, provider: Option<&str>, tools: &[String]) -> Vec<(String, String)> {
    let owned = |list: &[&str], detail: &str| list.iter().map(|w| ((*w).to_owned(), detail.to_owned())).collect();
    match values {
        Values::Any => Vec::new(),
        Values::Bool => owned(&["true", "false"], "boolean"),
        Values::PropertyKinds => owned(&KINDS, "property kind"),
        Values::ToolKinds => owned(&ToolKind::BUILTIN, "tool kind"),
        Values::Providers => BUILTIN_PROVIDERS
            .iter()
            .map(|p| (p.key.to_owned(), format!("provider: {}", p.api_types.join(", "))))
            .collect(),
        Values::ApiTypes => match provider.and_then(self::provider) {
            Some(p) => owned(p.api_types, &format!("API type of {}", p.key)),
            None => {
                let mut all: Vec<&str> = Vec::new();
                for p in &BUILTIN_PROVIDERS {
                    for t in p.api_types {
                        if !all.contains(t) {
                            all.push(t);
                        }
                    }
                }
                owned(&all, "API type")
            }
        },
        Values::Formats => owned(&FORMATS, "template format"),
        Values::Parsers => owned(&PARSERS, "parser"),
        Values::ConnectionKinds => owned(&Connection::KINDS, "connection kind"),
        Values::StructuredOutputs => owned(&StructuredOutput::ALL.map(StructuredOutput::as_str), "structured output"),
        Values::ToolChoice => {
            let mut out: Vec<(String, String)> = owned(&["auto", "none", "required"], "tool choice");
            out.extend(tools.iter().map(|t| (t.clone(), "tool".to_owned())));
            out
        }
        Values::Words(list) => owned(list, "value"),
    }
}

/// The bytes of `doc`'s frontmatter: the outline's, or for a frontmatter still being written (no
/// closing `---` yet), everything after the opening line.
pub(crate) fn frontmatter(doc: &Document) -> Option<Span> {
    if let Some(span) = doc.analysis.outline.frontmatter {
        return Some(span);
    }
    let first = doc.text.lines().next()?;
    if first.trim_end() != "---" || doc.analysis.outline.body.start < doc.text.len() {
        return None;
    }
    let start = doc.text.find('\n').map_or(doc.text.len(), |i| i + 1);
    Some(Span { start, end: doc.text.len() })
}

/// How a line of block YAML starts: its indentation, whether it is a list item (`- `) and the
/// column its content starts at.
fn shape(line: &str) -> (usize, bool, usize) {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    if rest == "-" || rest.starts_with("- ") {
        let after = &rest[1..];
        return (indent, true, indent + 1 + (after.len() - after.trim_start_matches(' ').len()));
    }
    (indent, false, indent)
}

/// The `key: value` an entry's text starts with (the value without a trailing comment).
fn entry(content: &str) -> Option<(String, String)> {
    let content = content.trim();
    let colon = content.find(": ").or_else(|| content.strip_suffix(':').map(str::len))?;
    let key = content[..colon].trim().trim_matches(['"', '\'']);
    if key.is_empty() || key.contains(['{', '[', '#', ',']) {
        return None;
    }
    let value = content[colon + 1..].trim();
    let value = value.split(" #").next().unwrap_or(value).trim().trim_matches(['"', '\'']);
    Some((key.to_owned(), value.to_owned()))
}

/// The other entries (`key`, value as written) of the mapping that holds byte `offset` of `yaml`
/// (the entry being written at `offset` left out): of the flow mapping `{…}` around it, else of
/// the block mapping its line belongs to.
pub(crate) fn entries(yaml: &str, offset: usize) -> Vec<(String, String)> {
    let mut offset = offset.min(yaml.len());
    while !yaml.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = yaml[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = yaml[offset..].find('\n').map_or(yaml.len(), |i| offset + i);
    let line = &yaml[line_start..line_end];
    let at = offset - line_start;
    // A flow mapping: the innermost `{` still open before the place.
    let mut open = Vec::new();
    for (i, c) in line[..at].char_indices() {
        match c {
            '{' => open.push(i),
            '}' => {
                open.pop();
            }
            _ => {}
        }
    }
    if let Some(&brace) = open.last() {
        let mut depth = 0usize;
        let mut found = Vec::new();
        let mut segment = brace + 1;
        for (i, c) in line[brace + 1..].char_indices().map(|(i, c)| (i + brace + 1, c)) {
            match c {
                '{' | '[' => depth += 1,
                '}' | ']' if depth > 0 => depth -= 1,
                ',' | '}' if depth == 0 => {
                    if !(segment..=i).contains(&at) {
                        found.extend(entry(&line[segment..i]));
                    }
                    segment = i + 1;
                    if c == '}' {
                        return found;
                    }
                }
                _ => {}
            }
        }
        if !(segment..=line.len()).contains(&at) {
            found.extend(entry(&line[segment..]));
        }
        return found;
    }
    let before = &line[..at];
    let (_, item, content_at) = shape(before);
    let column = if before.trim().is_empty() { before.len() } else { content_at };
    let mut above = Vec::new();
    // On an item's first line (`- kind: |`) the mapping starts here: its other entries are below.
    if !item {
        for l in yaml[..line_start].lines().rev() {
            let trimmed = l.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let (indent, item, content_at) = shape(l);
            if item && content_at == column {
                above.extend(entry(&l[content_at..]));
                break;
            }
            if indent < column {
                break;
            }
            if !item && indent == column {
                above.extend(entry(&l[indent..]));
            }
        }
    }
    let mut found: Vec<(String, String)> = above.into_iter().rev().collect();
    let below = yaml.get(line_end + 1..).unwrap_or("");
    for l in below.lines() {
        let trimmed = l.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (indent, item, _) = shape(l);
        if indent < column || (item && indent <= column) {
            break;
        }
        if indent == column {
            found.extend(entry(&l[indent..]));
        }
    }
    found
}

/// The frontmatter's YAML as a value, read with the line of byte `offset` left out (the line
/// being written rarely parses).
pub(crate) fn written(yaml: &str, offset: usize) -> Option<serde_json::Value> {
    let offset = offset.min(yaml.len());
    if !yaml.is_char_boundary(offset) {
        return prompty_core::parse_yaml(yaml).ok();
    }
    let line_start = yaml[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = yaml[offset..].find('\n').map_or(yaml.len(), |i| offset + i);
    let text = format!("{}{}", &yaml[..line_start], &yaml[line_end..]);
    prompty_core::parse_yaml(&text).ok().or_else(|| prompty_core::parse_yaml(yaml).ok())
}

/// The model's provider as written (from the YAML around `offset`, else the loaded agent's).
pub(crate) fn written_provider(doc: &Document, yaml: &str, offset: usize) -> Option<String> {
    let value = written(yaml, offset);
    let from_yaml = value.as_ref().and_then(|v| v.get("model")?.get("provider")?.as_str().map(str::to_owned));
    from_yaml.or_else(|| doc.analysis.agent()?.model.as_ref()?.provider.clone())
}

/// The declared tools' names (from the YAML around `offset`, else the loaded agent's).
pub(crate) fn written_tools(doc: &Document, yaml: &str, offset: usize) -> Vec<String> {
    let names: Vec<String> = match written(yaml, offset).as_ref().and_then(|v| v.get("tools")) {
        Some(serde_json::Value::Array(items)) => {
            items.iter().filter_map(|t| t.get("name")?.as_str().map(str::to_owned)).collect()
        }
        Some(serde_json::Value::Object(named)) => named.keys().cloned().collect(),
        _ => Vec::new(),
    };
    if !names.is_empty() {
        return names;
    }
    doc.analysis
        .agent()
        .and_then(|a| a.tools.as_ref())
        .map_or_else(Vec::new, |t| t.iter().map(|t| t.name.clone()).collect())
}

/// One line on a Jinja filter of [`prompty_core::jinja::FILTERS`] (or the nunjucks ones).
pub(crate) fn filter_doc(name: &str) -> &'static str {
    match name {
        "safe" => "Marks the value as safe: not escaped.",
        "escape" | "e" => "Escapes HTML characters (`&`, `<`, `>`, quotes).",
        "lower" => "Converts to lowercase.",
        "upper" => "Converts to uppercase.",
        "title" => "Capitalizes every word.",
        "capitalize" => "Capitalizes the first letter, lowercases the rest.",
        "replace" => "Replaces every occurrence of a text with another: `replace(\"a\", \"b\")`.",
        "length" | "count" => "The number of items (or characters).",
        "dictsort" => "Sorts a mapping by key, as (key, value) pairs.",
        "items" => "The (key, value) pairs of a mapping.",
        "reverse" => "Reverses a list or a text.",
        "trim" => "Strips leading and trailing whitespace.",
        "join" => "Joins the items with a separator: `join(\", \")`.",
        "split" => "Splits a text at a separator (whitespace by default).",
        "lines" => "Splits a text into its lines.",
        "default" | "d" => "The value, or the argument when it is undefined: `default(\"none\")`.",
        "round" => "Rounds a number (`round(2)` keeps two decimals).",
        "abs" => "The absolute value of a number.",
        "int" => "Converts to an integer.",
        "float" => "Converts to a floating-point number.",
        "attr" => "Reads an attribute by name: `attr(\"name\")`.",
        "first" => "The first item.",
        "last" => "The last item.",
        "min" => "The smallest item.",
        "max" => "The largest item.",
        "sort" => "Sorts a list (`sort(attribute=\"name\")`).",
        "list" => "Converts to a list.",
        "string" => "Converts to a text.",
        "bool" => "Converts to a boolean.",
        "batch" => "Splits a list into batches of a size.",
        "slice" => "Splits a list into a number of slices.",
        "sum" => "The sum of the items.",
        "indent" => "Indents every line but the first by a width.",
        "select" => "The items that pass a test: `select(\"odd\")`.",
        "reject" => "The items that fail a test.",
        "selectattr" => "The items whose attribute passes a test.",
        "rejectattr" => "The items whose attribute fails a test.",
        "map" => "Applies a filter to every item, or reads an attribute: `map(attribute=\"name\")`.",
        "groupby" => "Groups the items by an attribute.",
        "unique" => "The items without duplicates.",
        "chain" => "Chains several lists into one.",
        "zip" => "Pairs the items of several lists.",
        "pprint" => "Pretty-prints the value.",
        "format" => "Formats a text with arguments, printf style: `\"%s!\"|format(name)`.",
        "dump" => "The value as JSON (nunjucks).",
        _ => "A Jinja filter.",
    }
}

/// One line on a Jinja test of [`prompty_core::jinja::TESTS`].
pub(crate) fn test_doc(name: &str) -> &'static str {
    match name {
        "undefined" => "Whether the value is undefined.",
        "defined" => "Whether the value is defined.",
        "none" => "Whether the value is none (null).",
        "safe" => "Whether the value is marked safe.",
        "escaped" => "Whether the value is escaped.",
        "boolean" => "Whether the value is a boolean.",
        "odd" => "Whether the number is odd.",
        "even" => "Whether the number is even.",
        "divisibleby" => "Whether the number is divisible by the argument.",
        "number" => "Whether the value is a number.",
        "integer" | "int" => "Whether the value is an integer.",
        "float" => "Whether the value is a floating-point number.",
        "string" => "Whether the value is a text.",
        "sequence" => "Whether the value is a sequence (a list or a text).",
        "iterable" => "Whether the value can be iterated.",
        "mapping" => "Whether the value is a mapping.",
        "startingwith" => "Whether the text starts with the argument.",
        "endingwith" => "Whether the text ends with the argument.",
        "lower" => "Whether the text is all lowercase.",
        "upper" => "Whether the text is all uppercase.",
        "sameas" => "Whether the value is the same object as the argument.",
        "eq" | "equalto" | "==" => "Whether the value equals the argument.",
        "ne" | "!=" => "Whether the value differs from the argument.",
        "lt" | "lessthan" | "<" => "Whether the value is less than the argument.",
        "le" | "<=" => "Whether the value is at most the argument.",
        "gt" | "greaterthan" | ">" => "Whether the value is greater than the argument.",
        "ge" | ">=" => "Whether the value is at least the argument.",
        "in" => "Whether the value is in the argument (a list, a mapping or a text).",
        "true" => "Whether the value is `true`.",
        "false" => "Whether the value is `false`.",
        "filter" => "Whether a filter of that name exists.",
        "test" => "Whether a test of that name exists.",
        _ => "A Jinja test.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn every_model_option_and_connection_key_is_described() {
        for k in ModelOptions::KNOWN_KEYS {
            assert!(option_doc(k).is_some(), "{k}");
        }
        for kind in Connection::KINDS {
            for k in Connection::COMMON_KEYS.iter().chain(Connection::keys_of(kind).unwrap()) {
                assert!(connection_doc(k).is_some(), "{k}");
            }
        }
    }

    #[test]
    fn the_keys_are_the_loaders() {
        // Every key of a section loads into the typed agent: a frontmatter with all of them
        // round-trips through the loader's serialization.
        let yaml = concat!(
            "name: x\ndisplayName: X\ndescription: d\nmetadata: {a: 1}\n",
            "model: {id: m, provider: openai, apiType: chat, connection: {kind: key, endpoint: e}, options: {temperature: 1}}\n",
            "inputs:\n",
            "  - {name: a, kind: array, description: d, required: true, nullable: true, default: [1], example: [2], enumValues: [[1]], items: {kind: integer}}\n",
            "  - {name: b, kind: object, properties: [{name: c}]}\n",
            "  - {name: u, kind: union, oneOf: [{kind: string}], anyOf: [{kind: integer}]}\n",
            "outputs: [{name: o}]\n",
            "tools:\n",
            "  - {name: f, kind: function, description: d, parameters: [{name: p}], strict: true, bindings: {p: {input: a}}}\n",
            "  - {name: m, kind: mcp, serverName: s, serverDescription: d, allowedTools: [x], strict: true, connection: {kind: remote, name: n, endpoint: e},\n",
            "     handshakeTimeout: 5, callTimeout: 9, idleTimeout: 60, required: true,\n",
            "     approvalMode: {kind: specify, alwaysRequireApprovalTools: [x], neverRequireApprovalTools: [y]}}\n",
            "  - {name: o, kind: openapi, specification: s.json, strict: true, required: true, connection: {kind: anonymous, endpoint: e}}\n",
            "  - {name: c, kind: prompty, path: c.prompty, mode: agentic}\n",
            "  - {name: z, kind: zork, connection: {kind: key}, options: {q: 1}}\n",
            "template: {format: {kind: mustache, strict: true, options: {strictInputs: [a]}}, parser: {kind: prompty, options: {}}}\n",
        );
        let text = format!("---\n{yaml}---\n{{{{a}}}}{{{{b}}}}{{{{u}}}}");
        let agent = prompty_core::load_str(&text, ".", "t.prompty").unwrap();
        let value = agent.to_value();
        for k in AGENT {
            assert!(value.get(k.name).is_some(), "{}", k.name);
        }
        for k in MODEL {
            assert!(value["model"].get(k.name).is_some(), "{}", k.name);
        }
        for k in PROPERTY.iter().filter(|k| !["properties", "oneOf", "anyOf"].contains(&k.name)) {
            assert!(value["inputs"][0].get(k.name).is_some(), "{}", k.name);
        }
        assert!(value["inputs"][1].get("properties").is_some());
        assert!(value["inputs"][2].get("oneOf").is_some() && value["inputs"][2].get("anyOf").is_some());
        for (k, kinds) in TOOL {
            for (i, kind) in ["function", "mcp", "openapi", "prompty", "custom"].iter().enumerate() {
                if kinds.contains(kind) {
                    assert!(value["tools"][i].get(k.name).is_some(), "{} of {kind}", k.name);
                }
            }
        }
        for k in APPROVAL {
            assert!(value["tools"][1]["approvalMode"].get(k.name).is_some(), "{}", k.name);
        }
        for k in FORMAT {
            assert!(value["template"]["format"].get(k.name).is_some(), "{}", k.name);
        }
        for k in FORMAT_OPTIONS {
            assert!(value["template"]["format"]["options"].get(k.name).is_some(), "{}", k.name);
        }
        assert_eq!(agent.template.format.strict_inputs(), ["a"]);
    }

    #[test]
    fn paths_name_sections() {
        assert_eq!(section(&path(&[])), Some(Section::Agent));
        assert_eq!(section(&path(&["model", "options"])), Some(Section::Options));
        assert_eq!(section(&path(&["inputs", "-"])), Some(Section::Property { item: true }));
        assert_eq!(section(&path(&["inputs", "city"])), Some(Section::Property { item: false }));
        assert_eq!(
            section(&path(&["outputs", "-", "properties", "-", "items"])),
            Some(Section::Property { item: false })
        );
        assert_eq!(section(&path(&["tools", "-", "parameters", "-"])), Some(Section::Property { item: true }));
        assert_eq!(section(&path(&["tools", "-", "connection"])), Some(Section::Connection));
        assert_eq!(section(&path(&["tools", "-"])), Some(Section::Tool { item: true }));
        assert_eq!(section(&path(&["metadata"])), None);
        assert_eq!(section(&path(&["inputs"])), None);
    }

    #[test]
    fn a_tools_keys_follow_its_kind() {
        let names = |kind| keys(Section::Tool { item: true }, kind).iter().map(|k| k.name).collect::<Vec<_>>();
        assert_eq!(names(Some("prompty")), ["name", "kind", "description", "bindings", "path", "mode"]);
        assert_eq!(names(Some("whatever")), ["name", "kind", "description", "bindings", "connection", "options"]);
        assert_eq!(names(None).len(), TOOL.len());
        let conn = |kind| keys(Section::Connection, kind).iter().map(|k| k.name).collect::<Vec<_>>();
        assert_eq!(conn(Some("key"))[5..], ["endpoint", "apiKey"]);
    }

    fn entries_at(yaml: &str) -> Vec<(String, String)> {
        let offset = yaml.find('|').unwrap();
        entries(&yaml.replacen('|', "", 1), offset)
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn entries_of_the_mapping_around_a_place() {
        assert_eq!(
            entries_at("model:\n  provider: openai\n  op|\n  id: x # the id\nname: n"),
            pairs(&[("provider", "openai"), ("id", "x")])
        );
        assert_eq!(
            entries_at("tools:\n  - name: w\n    parameters:\n      - name: c\n    |\n    kind: mcp\n  - name: v\n    kind: function"),
            pairs(&[("name", "w"), ("parameters", ""), ("kind", "mcp")])
        );
        assert_eq!(entries_at("tools:\n  - kind: |\n    name: w"), pairs(&[("name", "w")]));
        assert_eq!(
            entries_at("inputs:\n  city: {kind: string, desc|, required: true}"),
            pairs(&[("kind", "string"), ("required", "true")])
        );
        assert_eq!(entries_at("|"), pairs(&[]));
        for (i, _) in "a:\n  - {b: [c, {d: e}], f: é|}\n".char_indices() {
            let _ = entries("a:\n  - {b: [c, {d: e}], f: é}\n", i);
        }
    }
}
