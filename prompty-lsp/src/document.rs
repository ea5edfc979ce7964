//! An open document: its text as the client has it, its version, its line index and its analysis.

use crate::analysis::Analysis;
use crate::position::{Encoding, LineIndex};
use lsp_types::{Position, Range, TextDocumentContentChangeEvent, Uri};
use prompty_core::analysis::Span;
use std::path::{Path, PathBuf};

/// An open `.prompty` document.
#[derive(Debug)]
pub struct Document {
    /// Its URI, as the client named it.
    pub uri: Uri,
    /// The file it is, for `file:` URIs (relative paths in it start at its folder).
    pub path: Option<PathBuf>,
    /// The text as the client has it.
    pub text: String,
    /// The client's version of it.
    pub version: i32,
    /// The line starts of `text`.
    pub index: LineIndex,
    /// The analysis of `text` (up to date unless `dirty`).
    pub analysis: Analysis,
    /// Whether `text` changed since `analysis` was made.
    pub dirty: bool,
}

impl Document {
    /// A document opened with `text` (analyzed later: `dirty`).
    pub fn new(uri: Uri, text: String, version: i32, encoding: Encoding) -> Document {
        let path = uri_to_path(&uri);
        let index = LineIndex::new(&text, encoding);
        Document { uri, path, text, version, index, analysis: Analysis::default(), dirty: true }
    }

    /// Applies the client's changes in order (a change without a range replaces the text).
    /// Ranges are clamped to the text, so a client that is out of step cannot make it panic.
    pub fn apply(&mut self, version: i32, changes: Vec<TextDocumentContentChangeEvent>) {
        let encoding = self.index.encoding();
        for change in changes {
            match change.range {
                Some(range) => {
                    let span = self.index.span(&self.text, range);
                    self.text.replace_range(span.start..span.end, &change.text);
                }
                None => self.text = change.text,
            }
            self.index = LineIndex::new(&self.text, encoding);
        }
        self.version = version;
        self.dirty = true;
    }

    /// The range of the bytes `span`.
    pub fn range(&self, span: Span) -> Range {
        self.index.range(&self.text, span)
    }

    /// The byte offset of `position`.
    pub fn offset(&self, position: Position) -> usize {
        self.index.offset(&self.text, position)
    }

    /// The byte offset of a 1-based line and column (in characters), as diagnostics and
    /// [`prompty_core::Location`]s count them (clamped to the text).
    pub fn offset_of_line_column(&self, line: u32, column: u32) -> usize {
        let start = self.index.line_start(&self.text, line.saturating_sub(1) as usize);
        let rest = &self.text[start..];
        let line_text = &rest[..rest.find('\n').unwrap_or(rest.len())];
        let skip = column.saturating_sub(1) as usize;
        start + line_text.char_indices().nth(skip).map_or(line_text.len(), |(i, _)| i)
    }

    /// The span of the word (letters, digits, `_`, `-`, `.`) at byte `offset`, if any.
    pub fn word_at(&self, offset: usize) -> Option<Span> {
        word_at(&self.text, offset)
    }
}

/// The span of the word (letters, digits, `_`, `-`) around byte `offset` of `text`.
pub(crate) fn word_at(text: &str, offset: usize) -> Option<Span> {
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return None;
    }
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let start = text[..offset].char_indices().rev().take_while(|(_, c)| word(*c)).last().map_or(offset, |(i, _)| i);
    let end = text[offset..].find(|c: char| !word(c)).map_or(text.len(), |i| offset + i);
    (start < end).then_some(Span { start, end })
}

/// The file of a `file:` URI.
///
/// ```
/// let uri: lsp_types::Uri = "file:///tmp/a%20b/x.prompty".parse().unwrap();
/// assert_eq!(prompty_lsp::uri_to_path(&uri).unwrap(), std::path::Path::new("/tmp/a b/x.prompty"));
/// let other: lsp_types::Uri = "untitled:Untitled-1".parse().unwrap();
/// assert!(prompty_lsp::uri_to_path(&other).is_none());
/// ```
pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    if !uri.scheme().is_some_and(|s| s.as_str().eq_ignore_ascii_case("file")) {
        return None;
    }
    let path = uri.path().as_str();
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8().ok()?;
    // `file:///C:/x` on Windows: the path starts with `/C:`.
    let decoded = match decoded.as_bytes() {
        [b'/', drive, b':', ..] if cfg!(windows) && drive.is_ascii_alphabetic() => &decoded[1..],
        _ => &decoded[..],
    };
    Some(PathBuf::from(decoded))
}

/// The `file:` URI of `path` (made absolute against the working folder).
///
/// ```
/// let uri = prompty_lsp::path_to_uri("/tmp/a b/x.prompty".as_ref());
/// assert_eq!(uri.as_str(), "file:///tmp/a%20b/x.prompty");
/// ```
pub fn path_to_uri(path: &Path) -> Uri {
    use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
    const PATH: &AsciiSet =
        &CONTROLS.add(b' ').add(b'"').add(b'#').add(b'%').add(b'<').add(b'>').add(b'?').add(b'`').add(b'{').add(b'}');
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    let mut text = absolute.to_string_lossy().replace('\\', "/");
    if !text.starts_with('/') {
        text.insert(0, '/');
    }
    let encoded = format!("file://{}", utf8_percent_encode(&text, PATH));
    encoded.parse().unwrap_or_else(|_| "file:///".parse().expect("a valid URI"))
}
