//! The one Mustache parser of prompty: the `mustache` renderer of the runtime renders the nodes
//! it returns, and the analysis (`analysis`) reads the names they use, so a template the
//! analysis accepts is one the renderer accepts.
//!
//! [`parse`] turns a template into a flat list of [`Node`]s (a section records where its body
//! ends, so the list encodes the section tree; parsing never recurses). It follows the Mustache
//! specification's tags (interpolation, sections, inverted sections, comments, set-delimiter),
//! removes standalone lines, and rejects partials (templates have no file system access).
//!
//! ```
//! use prompty_core::mustache::{parse, Node};
//! let nodes = parse("Hi {{#user}}{{ name }}{{/user}}!")?;
//! assert_eq!(nodes, [
//!     Node::Text("Hi "),
//!     Node::Section { name: "user", inverted: false, end: 3, at: 3 },
//!     Node::Interpolate { name: "name", at: 12 },
//!     Node::Text("!"),
//! ]);
//! let err = parse("a\n{{#s}}b").unwrap_err();
//! assert_eq!(err.to_string(), "line 2, column 1: unclosed section \"s\": opened here but never closed");
//! # Ok::<(), prompty_core::mustache::MustacheError>(())
//! ```

use std::fmt;

/// How deeply sections may nest (each level adds a context every name is looked up through).
pub const MAX_SECTION_DEPTH: usize = 256;

/// A malformed template: what was wrong and where (1-based line and column in the template).
///
/// ```
/// let err = prompty_core::mustache::parse("{{ x").unwrap_err();
/// assert_eq!((err.line, err.column, err.message.as_str()), (1, 1, "unclosed tag: missing \"}}\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MustacheError {
    /// 1-based line of the offending tag.
    pub line: usize,
    /// 1-based column (in characters) of the offending tag.
    pub column: usize,
    /// Human-readable description of the problem.
    pub message: String,
}

impl MustacheError {
    /// Builds an error located at byte `offset` of `template`.
    fn at(template: &str, offset: usize, message: impl Into<String>) -> Self {
        let (line, column) = line_column(template, offset);
        Self { line, column, message: message.into() }
    }
}

impl fmt::Display for MustacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for MustacheError {}

/// Converts a byte offset into a 1-based (line, column) pair, the column counted in characters.
///
/// ```
/// assert_eq!(prompty_core::mustache::line_column("ab\ncé{{x}}", 6), (2, 3));
/// ```
pub fn line_column(template: &str, offset: usize) -> (usize, usize) {
    let before = template.get(..offset).unwrap_or(template);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// One element of a parsed template.
///
/// The nodes form a flat list; a section's body is the run of nodes that follows it up to
/// (excluding) index `end`, which is where rendering continues once the section is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node<'t> {
    /// Literal text copied to the output as is.
    Text(&'t str),
    /// An interpolation tag.
    Interpolate {
        /// The (trimmed) name to look up.
        name: &'t str,
        /// Byte offset of the tag in the template.
        at: usize,
    },
    /// A normal or inverted section.
    Section {
        /// The (trimmed) name to look up.
        name: &'t str,
        /// Whether this is an inverted (`{{^name}}`) section.
        inverted: bool,
        /// Index of the first node after the section's body.
        end: usize,
        /// Byte offset of the opening tag in the template.
        at: usize,
    },
}

/// The kinds of tag the parser recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TagKind {
    Interpolate,
    Section,
    Inverted,
    Close,
    Comment,
    Partial,
    SetDelimiters,
}

impl TagKind {
    /// Whether a tag of this kind alone on a line removes the line from the output.
    fn can_stand_alone(self) -> bool {
        self != TagKind::Interpolate
    }
}

/// A tag read from the template.
struct Tag<'t> {
    kind: TagKind,
    /// The trimmed name, the raw content of a set-delimiter tag, or empty for a comment.
    content: &'t str,
    /// Byte offset just past the tag's closing delimiter.
    end: usize,
}

/// The delimiters in force, with the closing sequences derived from them.
struct Delimiters<'t> {
    open: &'t str,
    close: &'t str,
    /// `}` followed by the closing delimiter: ends a triple-mustache tag.
    triple_close: String,
    /// `=` followed by the closing delimiter: ends a set-delimiter tag.
    set_close: String,
}

impl<'t> Delimiters<'t> {
    fn new(open: &'t str, close: &'t str) -> Self {
        let mut triple_close = String::with_capacity(close.len() + 1);
        triple_close.push('}');
        triple_close.push_str(close);
        let mut set_close = String::with_capacity(close.len() + 1);
        set_close.push('=');
        set_close.push_str(close);
        Self { open, close, triple_close, set_close }
    }
}

/// A section whose close tag has not been seen yet.
struct OpenSection<'t> {
    /// Index of the section's node.
    node: usize,
    name: &'t str,
    /// Byte offset of the opening tag.
    offset: usize,
}

/// Parses `template` into a flat node list.
///
/// ```
/// use prompty_core::mustache::{parse, Node};
/// assert_eq!(parse("{{! note }}{{x}}")?, [Node::Interpolate { name: "x", at: 11 }]);
/// assert!(parse("{{> partial}}").is_err());
/// # Ok::<(), prompty_core::mustache::MustacheError>(())
/// ```
pub fn parse(template: &str) -> Result<Vec<Node<'_>>, MustacheError> {
    let mut nodes = Vec::new();
    let mut open_sections: Vec<OpenSection<'_>> = Vec::new();
    let mut delimiters = Delimiters::new("{{", "}}");
    // Start of the text not yet turned into nodes.
    let mut cursor = 0;

    while let Some(found) = template[cursor..].find(delimiters.open) {
        let tag_start = cursor + found;
        let tag = read_tag(template, tag_start, &delimiters)?;

        let mut text_end = tag_start;
        let mut next = tag.end;
        if tag.kind.can_stand_alone() {
            if let Some((line_start, line_end)) = standalone_span(template, tag_start, tag.end) {
                text_end = line_start.max(cursor);
                next = line_end;
            }
        }
        if text_end > cursor {
            nodes.push(Node::Text(&template[cursor..text_end]));
        }

        match tag.kind {
            TagKind::Interpolate => nodes.push(Node::Interpolate { name: tag.content, at: tag_start }),
            TagKind::Section | TagKind::Inverted => {
                if open_sections.len() >= MAX_SECTION_DEPTH {
                    return Err(MustacheError::at(
                        template,
                        tag_start,
                        format!("sections nest deeper than {MAX_SECTION_DEPTH} levels"),
                    ));
                }
                open_sections.push(OpenSection { node: nodes.len(), name: tag.content, offset: tag_start });
                nodes.push(Node::Section {
                    name: tag.content,
                    inverted: tag.kind == TagKind::Inverted,
                    end: 0,
                    at: tag_start,
                });
            }
            TagKind::Close => {
                let Some(open) = open_sections.pop() else {
                    return Err(MustacheError::at(
                        template,
                        tag_start,
                        format!("close tag \"{}\" has no matching open section", tag.content),
                    ));
                };
                if open.name != tag.content {
                    let (line, column) = line_column(template, open.offset);
                    return Err(MustacheError::at(
                        template,
                        tag_start,
                        format!(
                            "mismatched close tag \"{}\": the open section is \"{}\" \
                             (opened at line {line}, column {column})",
                            tag.content, open.name
                        ),
                    ));
                }
                let body_end = nodes.len();
                if let Some(Node::Section { end, .. }) = nodes.get_mut(open.node) {
                    *end = body_end;
                }
            }
            TagKind::Comment => {}
            TagKind::Partial => {
                return Err(MustacheError::at(
                    template,
                    tag_start,
                    "partials are not supported: templates have no file system access",
                ));
            }
            TagKind::SetDelimiters => {
                delimiters = parse_delimiters(template, tag_start, tag.content)?;
            }
        }
        cursor = next;
    }

    if cursor < template.len() {
        nodes.push(Node::Text(&template[cursor..]));
    }
    if let Some(open) = open_sections.last() {
        return Err(MustacheError::at(
            template,
            open.offset,
            format!("unclosed section \"{}\": opened here but never closed", open.name),
        ));
    }
    Ok(nodes)
}

/// Reads the tag whose opening delimiter starts at byte `tag_start`.
fn read_tag<'t>(template: &'t str, tag_start: usize, delimiters: &Delimiters<'t>) -> Result<Tag<'t>, MustacheError> {
    let body_start = tag_start + delimiters.open.len();
    let rest = &template[body_start..];

    if let Some(inner) = rest.strip_prefix('{') {
        let Some(len) = inner.find(delimiters.triple_close.as_str()) else {
            return Err(MustacheError::at(
                template,
                tag_start,
                format!("unclosed tag: missing \"{}\"", delimiters.triple_close),
            ));
        };
        let name = inner[..len].trim();
        if name.is_empty() {
            return Err(MustacheError::at(template, tag_start, "empty tag name"));
        }
        return Ok(Tag {
            kind: TagKind::Interpolate,
            content: name,
            end: body_start + 1 + len + delimiters.triple_close.len(),
        });
    }

    if let Some(inner) = rest.strip_prefix('=') {
        let Some(len) = inner.find(delimiters.set_close.as_str()) else {
            return Err(MustacheError::at(
                template,
                tag_start,
                format!("bad set-delimiter tag: missing closing \"{}\"", delimiters.set_close),
            ));
        };
        return Ok(Tag {
            kind: TagKind::SetDelimiters,
            content: &inner[..len],
            end: body_start + 1 + len + delimiters.set_close.len(),
        });
    }

    let Some(len) = rest.find(delimiters.close) else {
        return Err(MustacheError::at(template, tag_start, format!("unclosed tag: missing \"{}\"", delimiters.close)));
    };
    let end = body_start + len + delimiters.close.len();
    let inner = rest[..len].trim_start();
    let (kind, name) = match inner.as_bytes().first() {
        Some(b'!') => return Ok(Tag { kind: TagKind::Comment, content: "", end }),
        Some(b'#') => (TagKind::Section, &inner[1..]),
        Some(b'^') => (TagKind::Inverted, &inner[1..]),
        Some(b'/') => (TagKind::Close, &inner[1..]),
        Some(b'>') => (TagKind::Partial, &inner[1..]),
        Some(b'&') => (TagKind::Interpolate, &inner[1..]),
        _ => (TagKind::Interpolate, inner),
    };
    let name = name.trim();
    if name.is_empty() && kind != TagKind::Partial {
        return Err(MustacheError::at(template, tag_start, "empty tag name"));
    }
    Ok(Tag { kind, content: name, end })
}

/// Parses the content of a set-delimiter tag (`<% %>` in `{{=<% %>=}}`).
fn parse_delimiters<'t>(
    template: &'t str,
    tag_start: usize,
    content: &'t str,
) -> Result<Delimiters<'t>, MustacheError> {
    let mut parts = content.split_whitespace();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(open), Some(close), None) if !open.contains('=') && !close.contains('=') => {
            Ok(Delimiters::new(open, close))
        }
        _ => Err(MustacheError::at(
            template,
            tag_start,
            format!(
                "bad set-delimiter tag \"{}\": expected two delimiters separated by \
                 whitespace, neither containing '='",
                content.trim()
            ),
        )),
    }
}

/// If the tag spanning `tag_start..tag_end` is alone on its line (apart from spaces and
/// tabs), returns the byte range of the whole line including its line ending.
fn standalone_span(template: &str, tag_start: usize, tag_end: usize) -> Option<(usize, usize)> {
    let before = &template[..tag_start];
    let line_start = before.trim_end_matches([' ', '\t']).len();
    if line_start > 0 && !before[..line_start].ends_with('\n') {
        return None;
    }
    let after = &template[tag_end..];
    let rest = after.trim_start_matches([' ', '\t']);
    let newline = if rest.is_empty() {
        0
    } else if rest.starts_with("\r\n") {
        2
    } else if rest.starts_with('\n') {
        1
    } else {
        return None;
    };
    Some((line_start, tag_end + (after.len() - rest.len()) + newline))
}
