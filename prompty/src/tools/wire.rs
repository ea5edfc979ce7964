//! Wire names: providers accept tool names matching `^[a-zA-Z0-9_-]{1,64}$`, so the catalog's
//! `namespace::tool` is encoded for the wire and decoded when the model calls it.
//!
//! The scheme (reversible, readable for the usual names):
//!
//! - each part keeps `A-Z a-z 0-9 -` as they are;
//! - an underscore stays an underscore when a letter, digit or `-` follows it, unless what follows
//!   is `x` and two uppercase hexadecimal digits; otherwise it is written `_x5F`;
//! - any other byte of the part's UTF-8 is written `_xHH` (two uppercase hexadecimal digits);
//! - the parts are joined by `__`, which no encoded part contains, so the first `__` splits them.
//!
//! So `weather::get_forecast` is `weather__get_forecast`, `tools::list_10_items` is
//! `tools__list_10_items` and `fs::read.file` is `fs__read_x2Efile`. A name longer than 64 characters becomes a prefix of it, `-`, and 16
//! hexadecimal digits of the SHA-256 of `namespace::tool`; such a name contains no `__` and is
//! decoded through the catalog that issued it.

use sha2::{Digest, Sha256};

/// The longest tool name providers accept.
pub const MAX_WIRE_NAME: usize = 64;

fn is_plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn is_upper_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'A'..=b'F').contains(&b)
}

fn escape(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push_str("_x");
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 15)]));
}

/// Encodes one part (a namespace or a tool name).
fn encode_part(part: &str) -> String {
    let bytes = part.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        if is_plain(b) {
            out.push(char::from(b));
        } else if b == b'_' {
            let next_plain = bytes.get(i + 1).is_some_and(|&n| is_plain(n));
            let looks_escaped = escaped_at(bytes, i);
            if next_plain && !looks_escaped {
                out.push('_');
            } else {
                escape(&mut out, b);
            }
        } else {
            escape(&mut out, b);
        }
    }
    out
}

/// Whether `bytes[i..]` reads `_x` and two uppercase hexadecimal digits.
fn escaped_at(bytes: &[u8], i: usize) -> bool {
    bytes.get(i) == Some(&b'_')
        && bytes.get(i + 1) == Some(&b'x')
        && bytes.get(i + 2).is_some_and(|&n| is_upper_hex(n))
        && bytes.get(i + 3).is_some_and(|&n| is_upper_hex(n))
}

fn hex_value(b: u8) -> u8 {
    if b.is_ascii_digit() {
        b - b'0'
    } else {
        b - b'A' + 10
    }
}

/// Decodes one part; `None` when it is not the encoding of any text.
fn decode_part(part: &str) -> Option<String> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if escaped_at(bytes, i) {
            out.push(hex_value(bytes[i + 2]) << 4 | hex_value(bytes[i + 3]));
            i += 4;
        } else if is_plain(b) || b == b'_' {
            out.push(b);
            i += 1;
        } else {
            return None;
        }
    }
    let text = String::from_utf8(out).ok()?;
    // Only the canonical encoding decodes: one wire name, one tool.
    (encode_part(&text) == part).then_some(text)
}

/// The wire name of `namespace::name`: at most 64 characters of `[a-zA-Z0-9_-]`.
///
/// ```
/// use prompty::catalog::wire_name;
/// assert_eq!(wire_name("weather", "get_forecast"), "weather__get_forecast");
/// assert_eq!(wire_name("fs", "read.file"), "fs__read_x2Efile");
/// assert_eq!(wire_name("tools", "list_10_items"), "tools__list_10_items");
/// assert_eq!(wire_name("ns", "x".repeat(100).as_str()).len(), 64);
/// ```
pub fn wire_name(namespace: &str, name: &str) -> String {
    let ns = encode_part(namespace);
    let tool = encode_part(name);
    if ns.len() + 2 + tool.len() <= MAX_WIRE_NAME {
        return format!("{ns}__{tool}");
    }
    // Too long: a prefix (without `__`), `-`, 16 hex digits of the qualified name's SHA-256.
    let digest = Sha256::digest(format!("{namespace}::{name}").as_bytes());
    let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let mut prefix = format!("{ns}_-{tool}");
    prefix.truncate(MAX_WIRE_NAME - 17);
    format!("{prefix}-{hash}")
}

/// Decodes a wire name made by [`wire_name`] into `(namespace, name)`; `None` for a name that is
/// not such an encoding, or that was shortened with a hash (the catalog that issued it resolves
/// those: [`crate::catalog::ToolCatalog::decode`]).
///
/// ```
/// use prompty::catalog::{parse_wire_name, wire_name};
/// assert_eq!(parse_wire_name("fs__read_x2Efile"), Some(("fs".into(), "read.file".into())));
/// assert_eq!(parse_wire_name("get_weather"), None);
/// let w = wire_name("my_ns", "a__b");
/// assert_eq!(parse_wire_name(&w), Some(("my_ns".into(), "a__b".into())));
/// ```
pub fn parse_wire_name(wire: &str) -> Option<(String, String)> {
    let (ns, tool) = wire.split_once("__")?;
    Some((decode_part(ns)?, decode_part(tool)?))
}

/// Whether `name` is acceptable as a tool name on the wire: `^[a-zA-Z0-9_-]{1,64}$`.
///
/// ```
/// assert!(prompty::catalog::is_wire_safe("get_weather"));
/// assert!(!prompty::catalog::is_wire_safe("fs::read"));
/// ```
pub fn is_wire_safe(name: &str) -> bool {
    (1..=MAX_WIRE_NAME).contains(&name.len()) && name.bytes().all(|b| is_plain(b) || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_names_read_naturally() {
        assert_eq!(wire_name("everything", "get-sum"), "everything__get-sum");
        assert_eq!(wire_name("v2_api", "get_2fa_code_AB"), "v2_api__get_2fa_code_AB");
        assert_eq!(wire_name("petstore", "getPetById"), "petstore__getPetById");
        assert_eq!(wire_name("my_tools", "now"), "my_tools__now");
    }

    #[test]
    fn awkward_underscores_are_escaped() {
        for (ns, name) in
            [("a_", "b"), ("a", "_b"), ("a__b", "c"), ("x_xAB", "y"), ("n", "t_"), ("_", "_"), ("a", "_x41")]
        {
            let w = wire_name(ns, name);
            assert!(is_wire_safe(&w), "{w}");
            assert_eq!(w.matches("__").count(), 1, "{w}");
            assert_eq!(parse_wire_name(&w), Some((ns.to_owned(), name.to_owned())), "{w}");
        }
    }

    #[test]
    fn non_canonical_encodings_do_not_decode() {
        assert_eq!(parse_wire_name("a__b_x61"), None); // `a` would be written as itself
        assert_eq!(parse_wire_name("a__b_"), None);
        assert_eq!(parse_wire_name("a__b_xFF"), None); // not UTF-8
    }

    #[test]
    fn long_names_are_hashed_without_a_separator() {
        let w = wire_name("namespace", &"very_long_tool_name_".repeat(5));
        assert_eq!(w.len(), MAX_WIRE_NAME);
        assert!(is_wire_safe(&w));
        assert!(!w.contains("__"));
        assert_eq!(parse_wire_name(&w), None);
        assert_ne!(w, wire_name("namespace", &"very_long_tool_name_".repeat(6)));
    }
}
