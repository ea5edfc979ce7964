//! Cutting text to a size in bytes without splitting a character: the one place every crate of
//! prompty does it (error messages, trace attributes, tool results, response bodies).
//!
//! ```
//! use prompty_core::text;
//! assert_eq!(text::prefix("héllo", 2), "h");
//! let mut s = String::from("héllo");
//! assert_eq!(text::truncate(&mut s, 3), Some(3));
//! assert_eq!(s, "hé");
//! ```

/// The largest index `<= max` that is a character boundary of `text` (`text.len()` when `text` is
/// not longer than `max`).
///
/// ```
/// assert_eq!(prompty_core::text::floor_boundary("é", 1), 0);
/// assert_eq!(prompty_core::text::floor_boundary("abc", 10), 3);
/// ```
pub fn floor_boundary(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// The longest prefix of `text` that has at most `max` bytes and ends on a character boundary.
///
/// ```
/// assert_eq!(prompty_core::text::prefix("日本語", 4), "日");
/// ```
pub fn prefix(text: &str, max: usize) -> &str {
    &text[..floor_boundary(text, max)]
}

/// Cuts `text` in place to at most `max` bytes on a character boundary. Returns how many bytes were
/// removed, or `None` when `text` already fit (so the caller adds its own note only when it cut).
///
/// ```
/// let mut s = String::from("abcdef");
/// assert_eq!(prompty_core::text::truncate(&mut s, 4), Some(2));
/// assert_eq!(prompty_core::text::truncate(&mut s, 4), None);
/// ```
pub fn truncate(text: &mut String, max: usize) -> Option<usize> {
    let end = floor_boundary(text, max);
    if end == text.len() {
        return None;
    }
    let removed = text.len() - end;
    text.truncate(end);
    Some(removed)
}

/// At most `max` characters (not bytes) of `text`, and whether it was cut.
///
/// ```
/// assert_eq!(prompty_core::text::chars("naïve", 3), ("naï", true));
/// assert_eq!(prompty_core::text::chars("ok", 3), ("ok", false));
/// ```
pub fn chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((i, _)) => (&text[..i], true),
        None => (text, false),
    }
}

/// Standard base64 with padding (RFC 4648 §4): `Authorization: Basic` credentials, the hashes of
/// a Content-Security-Policy.
///
/// ```
/// assert_eq!(prompty_core::text::base64(b"foobar"), "Zm9vYmFy");
/// assert_eq!(prompty_core::text::base64(b"fo"), "Zm8=");
/// ```
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The text of a file of at most `max` bytes: a larger file is an error saying the limit, and so
/// is one that is not UTF-8. The one bounded read of eval files, datasets, tool files and cached
/// responses.
///
/// ```
/// let path = std::env::temp_dir().join(format!("prompty-text-doc-{}", std::process::id()));
/// std::fs::write(&path, "four").unwrap();
/// assert_eq!(prompty_core::text::read_file(&path, 4).unwrap(), "four");
/// assert_eq!(prompty_core::text::read_file(&path, 3).unwrap_err().to_string(), "larger than the limit of 3 bytes");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn read_file(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.take(max.saturating_add(1)).read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(std::io::Error::other(format!("larger than the limit of {max} bytes")));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
    }

    #[test]
    fn never_splits_a_character() {
        let text = "a€b😀c";
        for max in 0..=text.len() + 2 {
            let p = prefix(text, max);
            assert!(p.len() <= max);
            assert!(text.starts_with(p));
            let mut owned = text.to_owned();
            let removed = truncate(&mut owned, max);
            assert_eq!(owned, p);
            assert_eq!(removed, (p.len() < text.len()).then(|| text.len() - p.len()));
        }
    }
}
