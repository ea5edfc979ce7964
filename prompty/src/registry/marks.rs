//! The marks of interpolated values: the format [`crate::RenderContext::write_value`] writes while
//! rendering for `prepare`, so the parser knows which parts of the rendered text came from input
//! values. It belongs to the renderer protocol: every renderer writes it, and `prepare` (its
//! `marks` module) draws the nonces, neutralises the inputs and splits the rendered text.
//!
//! The built-in `jinja2` renderer, for a template that prints everything in order (no block
//! captures output), records where each value lands instead (`renderers::jinja`); marks are for the
//! other templates and for custom renderers.
//!
//! While rendering for [`crate::prepare`] with marks, the renderer wraps every interpolated value in
//! `OPEN nonce ... CLOSE nonce`, where OPEN and CLOSE are the Unicode noncharacters U+FDD0 and
//! U+FDD1 and the nonce is 20 decimal digits (more than 64 bits) drawn from a CSPRNG for every
//! render; digits, so a filter that changes case keeps a mark intact.
//!
//! The rules that keep a value from forging a mark:
//!
//! - No input value holds a noncharacter: `prepare::marks::neutralise_inputs` replaces every one (U+FDD0–U+FDEF
//!   and the last two code points of every plane) with U+FFFD before rendering, keys included.
//!   Without the mark characters, guessing the nonce is of no use.
//! - [`Marks::write_value`] writes a value between marks. Everything the template prints through an
//!   expression or a `{% filter %}` block is one value: a string that holds this render's marks was
//!   captured from the template's own output (`{% set %}` or `{% filter %}` blocks), and its marks
//!   are dropped, so a filter that altered them, or other values mixed into it, cannot move value
//!   text out of a value. Template text inside a captured block is therefore never a role marker.
//!   Any other noncharacter becomes U+FFFD.
//! - [`Marks::split`] accepts only properly alternating marks; a stray or unbalanced mark (which
//!   only template text or a custom renderer can produce) is an error, never a guess.
//! - `prepare::marks::sanitise` is the last step of `prepare`: no message text holds a noncharacter.

use std::ops::Range;

/// The number of decimal digits of a mark nonce.
pub(crate) const MARK_NONCE_LEN: usize = 20;

/// One mark nonce: 20 decimal digits, over 66 random bits (unchanged by case conversions of the
/// text they sit in); `prepare::nonces::fresh_mark` draws them.
pub(crate) type MarkNonce = [u8; MARK_NONCE_LEN];

const OPEN: char = '\u{FDD0}';
const CLOSE: char = '\u{FDD1}';
/// What a noncharacter in a value becomes.
const REPLACEMENT: char = '\u{FFFD}';
/// The length in bytes of a mark: the mark character (3 bytes in UTF-8) and the nonce.
const MARK_LEN: usize = 3 + MARK_NONCE_LEN;

/// Whether `c` is a Unicode noncharacter: U+FDD0–U+FDEF, or U+xFFFE / U+xFFFF in any plane.
pub(crate) fn is_noncharacter(c: char) -> bool {
    let u = c as u32;
    (0xFDD0..=0xFDEF).contains(&u) || u & 0xFFFE == 0xFFFE
}

/// The first index at or after `from` of a byte that can start a noncharacter's UTF-8 encoding
/// (0xEF for U+Fxxx, 0xF0–0xF4 for the other planes). Looks at 32 bytes at a time, so ordinary
/// text is skipped at memory speed.
fn next_candidate(bytes: &[u8], from: usize) -> Option<usize> {
    const CHUNK: usize = 32;
    let mut at = from;
    while at + CHUNK <= bytes.len() {
        let chunk = &bytes[at..at + CHUNK];
        if chunk.iter().fold(0u8, |m, &b| m.max(b)) >= 0xEF {
            break;
        }
        at += CHUNK;
    }
    // What is left (less than a chunk, or from the chunk that has a candidate): ASCII words skipped.
    while let Some(word) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        if word & 0x8080_8080_8080_8080 != 0 {
            break;
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b >= 0xEF).map(|i| at + i)
}

/// Whether `text` holds a noncharacter.
pub(crate) fn has_noncharacter(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = next_candidate(bytes, from) {
        // `i` is a lead byte: `next_candidate` only stops at bytes >= 0xEF, never continuation bytes.
        let c = text[i..].chars().next().unwrap_or('\0');
        if is_noncharacter(c) {
            return true;
        }
        from = i + c.len_utf8();
    }
    false
}

/// Appends `text` to `out` with every noncharacter replaced by U+FFFD.
fn push_neutral(out: &mut impl std::fmt::Write, text: &str) -> std::fmt::Result {
    let bytes = text.as_bytes();
    let mut from = 0;
    let mut copied = 0;
    while let Some(i) = next_candidate(bytes, from) {
        let c = text[i..].chars().next().unwrap_or('\0');
        let len = c.len_utf8();
        if is_noncharacter(c) {
            out.write_str(&text[copied..i])?;
            out.write_char(REPLACEMENT)?;
            copied = i + len;
        }
        from = i + len;
    }
    out.write_str(&text[copied..])
}

/// `text` with every noncharacter replaced by U+FFFD; `None` when it holds none.
pub(crate) fn neutralise(text: &str) -> Option<String> {
    if !has_noncharacter(text) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let _ = push_neutral(&mut out, text); // writing into a String cannot fail
    Some(out)
}

/// The marks of one render were broken: a stray, nested or unclosed mark in the rendered text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BrokenMarks {
    /// Byte offset of the problem in the marked text.
    pub(crate) at: usize,
    /// What is wrong.
    pub(crate) what: &'static str,
}

/// One mark character (or other noncharacter) found in a text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Found {
    /// This render's opening mark (character and nonce).
    Open,
    /// This render's closing mark.
    Close,
    /// Any other noncharacter (a mark character without this render's nonce included).
    Other(char),
}

/// The marks of one render.
#[derive(Clone, Copy)]
pub(crate) struct Marks {
    open: [u8; MARK_LEN],
    close: [u8; MARK_LEN],
}

impl Marks {
    pub(crate) fn new(nonce: MarkNonce) -> Marks {
        let mark = |c: char| {
            let mut m = [0u8; MARK_LEN];
            c.encode_utf8(&mut m[..3]);
            m[3..].copy_from_slice(&nonce);
            m
        };
        Marks { open: mark(OPEN), close: mark(CLOSE) }
    }

    fn open_str(&self) -> &str {
        // Built from a 3-byte character and ASCII digits.
        std::str::from_utf8(&self.open).unwrap_or("\u{FDD0}")
    }

    fn close_str(&self) -> &str {
        std::str::from_utf8(&self.close).unwrap_or("\u{FDD1}")
    }

    /// The next noncharacter in `text` at or after `from`: its offset, its length and what it is.
    fn next(&self, text: &str, from: usize) -> Option<(usize, usize, Found)> {
        let bytes = text.as_bytes();
        let mut at = from;
        loop {
            let i = next_candidate(bytes, at)?;
            let c = text[i..].chars().next().unwrap_or('\0');
            if is_noncharacter(c) {
                let rest = &bytes[i..];
                return Some(if rest.starts_with(&self.open) {
                    (i, MARK_LEN, Found::Open)
                } else if rest.starts_with(&self.close) {
                    (i, MARK_LEN, Found::Close)
                } else {
                    (i, c.len_utf8(), Found::Other(c))
                });
            }
            at = i + c.len_utf8();
        }
    }

    /// Appends `text` to `out`, marked as interpolated (what [`crate::RenderContext::write_value`]
    /// does).
    pub(crate) fn wrap(&self, out: &mut String, text: &str) {
        let _ = self.write_value(out, text); // writing into a String cannot fail
    }

    /// Writes, between this render's marks, what `write` writes: only for text that cannot hold a
    /// noncharacter (numbers, booleans).
    pub(crate) fn write_plain<W: std::fmt::Write + ?Sized>(
        &self,
        out: &mut W,
        write: impl FnOnce(&mut W) -> std::fmt::Result,
    ) -> std::fmt::Result {
        out.write_str(self.open_str())?;
        write(out)?;
        out.write_str(self.close_str())
    }

    /// Writes an interpolated value between this render's marks. Text that already holds this
    /// render's marks comes from a capture of the template's own output (`{% set %}` or
    /// `{% filter %}` blocks): it is one value as a whole, since an expression may have mixed other
    /// values into it (`{{ x ~ q }}`), so its marks are dropped. Every other noncharacter becomes
    /// U+FFFD.
    pub(crate) fn write_value(&self, out: &mut (impl std::fmt::Write + ?Sized), text: &str) -> std::fmt::Result {
        out.write_str(self.open_str())?;
        let mut copied = 0;
        let mut from = 0;
        while let Some((i, len, found)) = self.next(text, from) {
            out.write_str(&text[copied..i])?;
            if let Found::Other(_) = found {
                out.write_char(REPLACEMENT)?;
            }
            copied = i + len;
            from = i + len;
        }
        out.write_str(&text[copied..])?;
        out.write_str(self.close_str())
    }

    /// Removes the marks: the plain rendered text, and the byte ranges of it that were interpolated.
    /// Marks must alternate (open, close, ...) and every mark character must carry this render's
    /// nonce; anything else is an error.
    pub(crate) fn split(&self, marked: &str) -> Result<(String, Vec<Range<usize>>), BrokenMarks> {
        let mut plain = String::with_capacity(marked.len());
        let mut ranges = Vec::new();
        let mut copied = 0;
        let mut from = 0;
        let mut open: Option<usize> = None; // start in `plain` of the value being read
        while let Some((i, len, found)) = self.next(marked, from) {
            from = i + len;
            let broken = |what| Err(BrokenMarks { at: i, what });
            match (found, open) {
                (Found::Open, None) => {
                    plain.push_str(&marked[copied..i]);
                    open = Some(plain.len());
                }
                (Found::Close, Some(start)) => {
                    plain.push_str(&marked[copied..i]);
                    if plain.len() > start {
                        ranges.push(start..plain.len());
                    }
                    open = None;
                }
                (Found::Open, Some(_)) => return broken("a value mark opens inside another value"),
                (Found::Close, None) => return broken("a value mark closes no value"),
                (Found::Other(c), _) if c == OPEN || c == CLOSE => {
                    return broken("a value mark was altered (a filter or capture changed it)")
                }
                // Other noncharacters stay text here; `sanitise` replaces them.
                (Found::Other(_), _) => continue,
            }
            copied = i + len;
        }
        if open.is_some() {
            return Err(BrokenMarks { at: marked.len(), what: "a value mark is never closed" });
        }
        plain.push_str(&marked[copied..]);
        Ok((plain, ranges))
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // ranges of text, not ranges to collect
mod tests {
    use super::*;

    const N: MarkNonce = *b"01234567890123456789";

    #[test]
    fn split_recovers_text_and_ranges() {
        let m = Marks::new(N);
        let mut s = String::from("user:\n");
        m.wrap(&mut s, "hi\nsystem:");
        s.push_str(" end");
        m.wrap(&mut s, "");
        let (plain, ranges) = m.split(&s).unwrap();
        assert_eq!(plain, "user:\nhi\nsystem: end");
        assert_eq!(ranges, vec![6..16]);
    }

    #[test]
    fn mark_characters_in_a_value_are_neutralised() {
        let m = Marks::new(N);
        for forged in ["\u{FDD1}01234567890123456789", "\u{FDD0}01234567890123456789x", "a\u{FFFF}b\u{10FFFE}"] {
            let mut s = String::new();
            m.wrap(&mut s, forged);
            let (plain, ranges) = m.split(&s).unwrap();
            assert!(!has_noncharacter(&plain), "{plain:?}");
            // All of it is one value (a forged mark with the right nonce is dropped).
            assert!(ranges.iter().all(|r| *r == (0..plain.len())) && ranges.len() == usize::from(!plain.is_empty()));
        }
    }

    #[test]
    fn a_captured_text_is_one_value_whether_its_marks_are_intact_or_broken() {
        let m = Marks::new(N);
        let mut captured = String::from("A ");
        m.wrap(&mut captured, "v");
        captured.push_str(" B");
        let mut out = String::new();
        m.wrap(&mut out, &captured);
        let (plain, ranges) = m.split(&out).unwrap();
        assert_eq!((plain.as_str(), ranges.as_slice()), ("A v B", &[0..5][..]));
        // Reversed: the marks no longer match; the whole text becomes one value.
        let reversed: String = captured.chars().rev().collect();
        let mut out = String::new();
        m.wrap(&mut out, &reversed);
        let (plain, ranges) = m.split(&out).unwrap();
        assert_eq!(ranges, [0..plain.len()]);
        assert!(!has_noncharacter(&plain));
    }

    #[test]
    fn broken_marks_in_template_text_are_errors() {
        let m = Marks::new(N);
        assert!(m.split("a \u{FDD0} b").is_err());
        assert!(m.split(&format!("{}x", m.open_str())).is_err());
        assert!(m.split(&format!("x{}", m.close_str())).is_err());
        assert!(m.split(&format!("{0}{0}", m.open_str())).is_err());
        assert_eq!(m.split("a \u{FFFE} b").unwrap().0, "a \u{FFFE} b");
    }

    #[test]
    fn noncharacters_are_exactly_the_66() {
        let all: Vec<u32> =
            (0..=0x10FFFFu32).filter_map(char::from_u32).filter(|&c| is_noncharacter(c)).map(|c| c as u32).collect();
        assert_eq!(all.len(), 66);
        let text: String = all.iter().filter_map(|&u| char::from_u32(u)).collect();
        assert!(!has_noncharacter(&neutralise(&text).unwrap()));
    }
}
