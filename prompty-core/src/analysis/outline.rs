//! Where things are in a `.prompty` file, for editors: the frontmatter and the body, the template's
//! tags, every name the template reads (from the same template analysis that checks it) and the
//! role markers (read by [`crate::marker::head`], the parser's definition).

use super::template::{self, NameKind};
use super::Span;
use crate::Role;

/// A name in the template and its bytes in the file.
///
/// ```
/// let text = "---\ninputs: [q]\n---\nuser:\n{{ q }}";
/// let o = prompty_core::analysis::outline(text, "jinja2");
/// assert_eq!(&text[o.names[0].span.start..o.names[0].span.end], "q");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    /// What it stands for.
    pub kind: NameKind,
    /// The name as written (for a property, the property's own name).
    pub name: String,
    /// Its bytes in the file.
    pub span: Span,
}

/// A role marker line of the body (`user:`), which starts a message.
///
/// ```
/// let text = "---\nname: x\n---\nsystem:\nBe brief.\nuser:\nHi";
/// let o = prompty_core::analysis::outline(text, "jinja2");
/// let roles: Vec<&str> = o.markers.iter().map(|m| m.role.as_str()).collect();
/// assert_eq!(roles, ["system", "user"]);
/// assert_eq!(&text[o.markers[1].word.start..o.markers[1].word.end], "user");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The role it switches to.
    pub role: Role,
    /// The bytes of the role's word.
    pub word: Span,
    /// The bytes of the whole line (without its line break).
    pub line: Span,
}

/// The places of a `.prompty` file's parts (see [`outline`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outline {
    /// The YAML between the `---` lines (none when the file has no frontmatter or it is unclosed).
    pub frontmatter: Option<Span>,
    /// The template: everything after the closing `---` line (the whole file without frontmatter).
    pub body: Span,
    /// Every template tag (`{{ … }}`, `{% … %}`, `{# … #}`; for mustache `{{ … }}`), delimiters
    /// included; an unclosed tag runs to the end of the file.
    pub tags: Vec<Span>,
    /// Every name the template reads or calls, in template order (empty when the template does
    /// not parse, or its renderer's syntax is unknown).
    pub names: Vec<Name>,
    /// The role marker lines of the body.
    pub markers: Vec<Marker>,
}

impl Outline {
    /// Whether byte `offset` of the file is in the frontmatter (its `---` lines excluded).
    ///
    /// ```
    /// let o = prompty_core::analysis::outline("---\nname: x\n---\nHi", "jinja2");
    /// assert!(o.in_frontmatter(5) && !o.in_frontmatter(16));
    /// ```
    pub fn in_frontmatter(&self, offset: usize) -> bool {
        self.frontmatter.is_some_and(|f| f.start <= offset && offset <= f.end)
    }

    /// The tag that holds byte `offset` (between its delimiters, or at its end), if any.
    ///
    /// ```
    /// let o = prompty_core::analysis::outline("Hi {{ na", "jinja2");
    /// assert_eq!(o.tag_at(8).map(|t| (t.start, t.end)), Some((3, 8)));
    /// assert!(o.tag_at(1).is_none());
    /// ```
    pub fn tag_at(&self, offset: usize) -> Option<Span> {
        self.tags.iter().copied().find(|t| t.start + 2 <= offset && offset <= t.end)
    }

    /// The name whose bytes hold `offset` (its end included), if any.
    ///
    /// ```
    /// let o = prompty_core::analysis::outline("{{ city }}", "jinja2");
    /// assert_eq!(o.name_at(5).unwrap().name, "city");
    /// assert!(o.name_at(0).is_none());
    /// ```
    pub fn name_at(&self, offset: usize) -> Option<&Name> {
        self.names.iter().find(|n| n.span.start <= offset && offset <= n.span.end)
    }
}

/// Where the parts of `text` (a `.prompty` file whose template is written for `format`) are.
///
/// ```
/// let text = "---\ninputs: [name]\n---\nuser:\nHi {{ name }}{# note #}";
/// let o = prompty_core::analysis::outline(text, "jinja2");
/// assert_eq!(&text[o.frontmatter.unwrap().start..o.frontmatter.unwrap().end], "inputs: [name]\n");
/// let tags: Vec<&str> = o.tags.iter().map(|t| &text[t.start..t.end]).collect();
/// assert_eq!(tags, ["{{ name }}", "{# note #}"]);
/// ```
pub fn outline(text: &str, format: &str) -> Outline {
    let base = text.as_ptr() as usize;
    let offset_of = |part: &str| part.as_ptr() as usize - base;
    let (frontmatter, body_start) = match crate::frontmatter::split(text) {
        Ok(split) => {
            let fm = split.frontmatter.map(|(yaml, _)| {
                let start = offset_of(yaml);
                Span { start, end: start + yaml.len() }
            });
            (fm, offset_of(split.body))
        }
        // An unclosed frontmatter: the loader refuses the file; nothing is a body.
        Err(_) => (None, text.len()),
    };
    let body = &text[body_start..];
    let mustache = format == "mustache";
    let tags =
        tags(body, mustache).into_iter().map(|(s, e)| Span { start: body_start + s, end: body_start + e }).collect();
    let names = match template::analyze(format, body) {
        Some(Ok(vars)) => vars
            .uses
            .into_iter()
            .map(|u| Name {
                span: Span { start: body_start + u.offset, end: body_start + u.offset + u.name.len() },
                kind: u.kind,
                name: u.name,
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut markers = Vec::new();
    let mut at = body_start;
    for line in body.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if let Some(head) = crate::marker::head(bare).filter(|h| h.rest.trim().is_empty()) {
            markers.push(Marker {
                role: head.role,
                word: Span { start: at + head.word.start, end: at + head.word.end },
                line: Span { start: at, end: at + bare.len() },
            });
        }
        at += line.len();
    }
    Outline { frontmatter, body: Span { start: body_start, end: text.len() }, tags, names, markers }
}

/// The byte ranges of the tags of a template body.
fn tags(body: &str, mustache: bool) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = body[from..].find('{') {
        let start = from + i;
        let rest = &body[start..];
        let close = match rest.as_bytes().get(1) {
            Some(b'{') if mustache && rest.starts_with("{{{") => "}}}",
            Some(b'{') => "}}",
            Some(b'%') if !mustache => "%}",
            Some(b'#') if !mustache => "#}",
            _ => {
                from = start + 1;
                continue;
            }
        };
        let end = rest[2..].find(close).map_or(body.len(), |j| start + 2 + j + close.len());
        found.push((start, end));
        from = end;
    }
    found
}
