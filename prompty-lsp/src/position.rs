//! Positions: the protocol counts a line's characters in UTF-16 code units (or UTF-8 bytes, when
//! the client offers it); the analysis counts bytes. A [`LineIndex`] turns one into the other.

use lsp_types::{Position, PositionEncodingKind, Range};
use prompty_core::analysis::Span;

/// How the client counts the characters of a line.
///
/// ```
/// use prompty_lsp::position::Encoding;
/// assert_eq!(Encoding::default(), Encoding::Utf16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// UTF-16 code units: the protocol's default, what every client supports.
    #[default]
    Utf16,
    /// UTF-8 bytes (clients that offer `utf-8` in `general.positionEncodings`).
    Utf8,
}

impl Encoding {
    /// The protocol's name of the encoding.
    ///
    /// ```
    /// use prompty_lsp::position::Encoding;
    /// assert_eq!(Encoding::Utf8.kind().as_str(), "utf-8");
    /// ```
    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf8 => PositionEncodingKind::UTF8,
        }
    }

    fn units(self, c: char) -> u32 {
        match self {
            Encoding::Utf16 => c.len_utf16() as u32,
            Encoding::Utf8 => c.len_utf8() as u32,
        }
    }
}

/// The line starts of a text, to turn byte offsets into positions and back.
///
/// ```
/// use prompty_lsp::position::{Encoding, LineIndex};
/// use lsp_types::Position;
/// let text = "a\n😀b\n";
/// let index = LineIndex::new(text, Encoding::Utf16);
/// assert_eq!(index.position(text, 6), Position::new(1, 2)); // `b`: the emoji is 2 UTF-16 units
/// assert_eq!(index.offset(text, Position::new(1, 2)), 6);
/// assert_eq!(index.offset(text, Position::new(1, 1)), 2); // inside the emoji: its start
/// assert_eq!(index.offset(text, Position::new(9, 9)), text.len()); // past the end: the end
/// ```
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
    encoding: Encoding,
}

impl LineIndex {
    /// The index of `text`.
    pub fn new(text: &str, encoding: Encoding) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        LineIndex { starts, encoding }
    }

    /// The position of byte `offset` (clamped to the text, and back to a character boundary).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|s| *s <= offset) - 1;
        let start = self.starts[line];
        let character = text[start..offset].chars().map(|c| self.encoding.units(c)).sum();
        Position::new(line as u32, character)
    }

    /// The byte offset of `position`: a line past the end is the end of the text, a character
    /// past the end of its line is the line's end, and one inside a character is its start.
    pub fn offset(&self, text: &str, position: Position) -> usize {
        let Some(&start) = self.starts.get(position.line as usize) else { return text.len() };
        let line_end = self.starts.get(position.line as usize + 1).map_or(text.len(), |next| next - 1);
        let line = &text[start..line_end];
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut units = 0u32;
        for (i, c) in line.char_indices() {
            let next = units + self.encoding.units(c);
            if next > position.character {
                return start + i;
            }
            units = next;
        }
        start + line.len()
    }

    /// The range of the bytes `span`.
    pub fn range(&self, text: &str, span: Span) -> Range {
        Range::new(self.position(text, span.start), self.position(text, span.end.max(span.start)))
    }

    /// The bytes of `range` (start and end in order).
    pub fn span(&self, text: &str, range: Range) -> Span {
        let (a, b) = (self.offset(text, range.start), self.offset(text, range.end));
        Span { start: a.min(b), end: a.max(b) }
    }

    /// The byte offset where 0-based `line` starts (the text's end past the last line).
    pub fn line_start(&self, text: &str, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(text.len())
    }

    /// The encoding positions are counted in.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_positions_round_trip_on_every_boundary() {
        let text = "ab\r\nçé😀x\n\nlast";
        for encoding in [Encoding::Utf16, Encoding::Utf8] {
            let index = LineIndex::new(text, encoding);
            for (offset, _) in text.char_indices() {
                let p = index.position(text, offset);
                if text[..offset].ends_with('\r') {
                    continue; // `\r` of `\r\n` is no place a client can name
                }
                assert_eq!(index.offset(text, p), offset, "{encoding:?} {offset}");
            }
        }
    }

    #[test]
    fn utf8_counts_bytes() {
        let text = "é{{x}}";
        let index = LineIndex::new(text, Encoding::Utf8);
        assert_eq!(index.position(text, 4), Position::new(0, 4));
        assert_eq!(LineIndex::new(text, Encoding::Utf16).position(text, 4), Position::new(0, 3));
    }
}
