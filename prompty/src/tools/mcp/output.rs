//! What a server lists ([`McpToolInfo`]) and what a call returns ([`McpOutput`]), converted from
//! `rmcp`'s protocol types with the bounds of [`super::McpServerConfig`].

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;

/// One tool a server offers (an entry of `tools/list`).
///
/// ```
/// let t = prompty::mcp::McpToolInfo {
///     name: "echo".into(),
///     title: None,
///     description: Some("Echoes its input".into()),
///     input_schema: serde_json::json!({"type": "object"}),
///     output_schema: None,
///     annotations: None,
/// };
/// assert_eq!(t.name, "echo");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolInfo {
    /// The tool's name on the server (what [`super::McpServer::call`] takes).
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// What the tool does.
    pub description: Option<String>,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of its structured result, when it declares one.
    pub output_schema: Option<Value>,
    /// The server's hints about the tool's behaviour. They are hints from the server: never base
    /// a security decision (such as skipping an approval) on them for a server you do not trust.
    pub annotations: Option<McpToolAnnotations>,
}

/// Behaviour hints a server gives for a tool (`annotations` of `tools/list`).
///
/// ```
/// let a = prompty::mcp::McpToolAnnotations { read_only_hint: Some(true), ..Default::default() };
/// assert_eq!(a.destructive_hint, None);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpToolAnnotations {
    /// A human-readable title.
    pub title: Option<String>,
    /// The tool does not change its environment.
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (meaningful when not read-only).
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world (the web, ...) rather than a closed domain.
    pub open_world_hint: Option<bool>,
}

impl From<Tool> for McpToolInfo {
    fn from(t: Tool) -> Self {
        let annotations = t.annotations.map(|a| McpToolAnnotations {
            title: a.title,
            read_only_hint: a.read_only_hint,
            destructive_hint: a.destructive_hint,
            idempotent_hint: a.idempotent_hint,
            open_world_hint: a.open_world_hint,
        });
        McpToolInfo {
            name: t.name.into_owned(),
            title: t.title,
            description: t.description.map(|d| d.into_owned()),
            input_schema: Value::Object((*t.input_schema).clone()),
            output_schema: t.output_schema.map(|s| Value::Object((*s).clone())),
            annotations,
        }
    }
}

/// An image a tool returned.
///
/// ```
/// let i = prompty::mcp::McpImage { mime_type: "image/png".into(), data: "iVBORw0KGgo=".into() };
/// assert!(i.mime_type.starts_with("image/"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct McpImage {
    /// Its MIME type as the server gave it (e.g. `image/png`).
    pub mime_type: String,
    /// Its bytes, base64-encoded (as the server sent them; not checked).
    pub data: String,
}

/// The result of one `tools/call`, ready to become a tool result the model sees.
///
/// - `text`: the text blocks, joined by newlines; audio, embedded resources and resource links as
///   short text (`[audio: audio/wav, 8 bytes of base64]`, the text of an embedded text resource,
///   `[resource: <uri> (<mime>)]`, `[resource link: <uri>]`); when there is no text at all,
///   `structuredContent` as compact JSON. Cut at [`super::McpServerConfig::max_text_bytes`].
/// - `structured`: `structuredContent`, as the server sent it.
/// - `images`: the image blocks (up to [`super::McpServerConfig::max_image_bytes`]).
/// - `is_error`: the server flagged the result as an error (`isError: true`), or answered the
///   request with a JSON-RPC error (then `text` is its message and code). Either way the model
///   should see it as the tool's answer.
///
/// ```
/// let out = prompty::mcp::McpOutput::error("Unknown tool: nope");
/// assert!(out.is_error && out.images.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpOutput {
    /// The textual rendering of the content.
    pub text: String,
    /// `structuredContent`, when the server sent it.
    pub structured: Option<Value>,
    /// The images of the result.
    pub images: Vec<McpImage>,
    /// Whether the result is an error the tool reported.
    pub is_error: bool,
}

impl McpOutput {
    /// An error result with `text` (what a JSON-RPC error answer becomes).
    ///
    /// ```
    /// let out = prompty::mcp::McpOutput::error("boom");
    /// assert_eq!(out.text, "boom");
    /// ```
    pub fn error(text: impl Into<String>) -> Self {
        McpOutput { text: text.into(), is_error: true, ..Default::default() }
    }

    /// Converts a `tools/call` result within the bounds.
    pub(crate) fn from_result(result: CallToolResult, max_text: usize, max_images: usize) -> Self {
        let mut parts: Vec<String> = Vec::new();
        let mut images = Vec::new();
        let mut image_bytes = 0usize;
        let mut has_text = false;
        for block in result.content {
            match block {
                ContentBlock::Text(t) => {
                    has_text = true;
                    parts.push(t.text);
                }
                ContentBlock::Image(i) => {
                    let size = i.data.len();
                    if image_bytes.saturating_add(size) > max_images {
                        parts.push(format!("[image omitted: {}, {size} bytes of base64 over the limit]", i.mime_type));
                    } else {
                        image_bytes += size;
                        images.push(McpImage { mime_type: i.mime_type, data: i.data });
                    }
                }
                ContentBlock::Audio(a) => {
                    parts.push(format!("[audio: {}, {} bytes of base64]", a.mime_type, a.data.len()));
                }
                ContentBlock::Resource(r) => match r.resource {
                    ResourceContents::TextResourceContents { text, .. } => {
                        has_text = true;
                        parts.push(text);
                    }
                    ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                        parts.push(describe_resource(&uri, mime_type.as_deref()));
                    }
                    #[allow(unreachable_patterns)]
                    _ => parts.push("[resource]".into()),
                },
                ContentBlock::ResourceLink(l) => parts.push(format!("[resource link: {}]", l.uri)),
                #[allow(unreachable_patterns)]
                _ => parts.push("[unsupported content]".into()),
            }
        }
        let structured = result.structured_content;
        let mut text = parts.join("\n");
        if !has_text {
            if let Some(s) = &structured {
                let json = s.to_string();
                text = if text.is_empty() { json } else { format!("{json}\n{text}") };
            }
        }
        McpOutput { text: truncate(text, max_text), structured, images, is_error: result.is_error == Some(true) }
    }
}

fn describe_resource(uri: &str, mime: Option<&str>) -> String {
    match mime {
        Some(m) => format!("[resource: {uri} ({m})]"),
        None => format!("[resource: {uri}]"),
    }
}

/// `text` cut to at most `max` bytes (at a character boundary), with a line saying how much was
/// cut.
pub(crate) fn truncate(mut text: String, max: usize) -> String {
    if let Some(rest) = prompty_core::text::truncate(&mut text, max) {
        text.push_str(&format!("\n[truncated: {rest} more bytes]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate("héllo".into(), 2), "h\n[truncated: 5 more bytes]");
        assert_eq!(truncate("abc".into(), 3), "abc");
        assert_eq!(truncate("abc".into(), 0), "\n[truncated: 3 more bytes]");
    }

    #[test]
    fn structured_only_becomes_json_text() {
        let r: CallToolResult =
            serde_json::from_value(serde_json::json!({"content": [], "structuredContent": {"a": 1}})).unwrap();
        let out = McpOutput::from_result(r, 100, 100);
        assert_eq!(out.text, r#"{"a":1}"#);
        assert_eq!(out.structured, Some(serde_json::json!({"a": 1})));
    }

    #[test]
    fn images_over_the_limit_are_omitted() {
        let r: CallToolResult = serde_json::from_value(serde_json::json!({"content": [
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "image", "data": "BBBBBBBB", "mimeType": "image/png"}]}))
        .unwrap();
        let out = McpOutput::from_result(r, 100, 6);
        assert_eq!(out.images.len(), 1);
        assert!(out.text.contains("image omitted"));
    }
}
