//! Parsing frontmatter YAML: the block-style subset most frontmatter is written in is read by a
//! fast reader of our own (`yaml_block`); anything else goes to the full YAML parser, which gives
//! the same values and reports every error. (A text loaded again is served by the cache of
//! finished agents, before any YAML is read.)
//!
//! # Bounds
//!
//! YAML text is untrusted. Before the YAML library builds anything, a linear pass over the parser's
//! events refuses:
//!
//! - nesting deeper than [`MAX_DEPTH`] (64) collections: the scanner under the library spends time
//!   proportional to the depth of open flow collections (`[`, `{`) on every token, so 100 000 open
//!   brackets would take minutes; block nesting (`- - - -`) is refused at the same depth;
//! - aliases (`*name`) that would add more than [`MAX_ALIAS_EXPANSION`] nodes and scalar bytes to
//!   the document ("billion laughs").
//!
//! The pass stops at the first violation, so its cost is linear in the text. It is skipped when a
//! cheap count shows the text can neither nest that deep nor use an alias.

use serde_json::Value;
use std::collections::HashMap;

/// The deepest nesting of collections (sequences and mappings, flow or block) a YAML text may use.
pub(crate) const MAX_DEPTH: usize = 64;
/// How much aliases may add to a YAML document: every node an alias repeats counts 1, plus the
/// bytes of every scalar it repeats.
pub(crate) const MAX_ALIAS_EXPANSION: u64 = 1_000_000;

/// Why YAML text was refused.
#[derive(Debug)]
pub(crate) enum YamlError {
    /// The YAML library's error (syntax, or a value of the wrong shape).
    Syntax(serde_yaml::Error),
    /// A bound of this module was exceeded, at a 1-based line and column of the text.
    Limit { line: usize, column: usize, message: String },
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            YamlError::Syntax(e) => e.fmt(f),
            YamlError::Limit { line, column, message } => write!(f, "{message} at line {line} column {column}"),
        }
    }
}

/// Parses YAML (or JSON) text into a JSON value with the loader's bounds: nesting deeper than 64
/// levels and alias expansion beyond a million nodes are refused.
///
/// ```
/// let v = prompty_core::parse_yaml("a: [1, 2]").unwrap();
/// assert_eq!(v["a"][1], 2);
/// assert!(prompty_core::parse_yaml(&"[".repeat(100)).is_err());
/// ```
pub fn parse_yaml(text: &str) -> Result<Value, String> {
    parse(text).map_err(|e| e.to_string())
}

/// Parses YAML text into JSON values (a mapping, or anything else for the caller to reject),
/// within the bounds of this module.
pub(crate) fn parse(yaml: &str) -> Result<Value, YamlError> {
    if let Some(value) = crate::yaml_block::parse(yaml) {
        return Ok(value);
    }
    if needs_check(yaml) {
        check_bounds(yaml)?;
    }
    serde_yaml::from_str(yaml).map_err(YamlError::Syntax)
}

/// Whether `yaml` might nest deeper than [`MAX_DEPTH`] or use an alias, by counting bytes.
///
/// Every flow collection starts with a `[` or `{`. A block collection that starts on a line either
/// is the first node of the line (its ancestors from earlier lines sit at most at the line's
/// indentation, at most two per column: a mapping and a sequence that is its value) or follows a
/// `- `, `? ` or `: ` indicator on that line.
fn needs_check(yaml: &str) -> bool {
    if yaml.contains('*') {
        return true;
    }
    let openers = yaml.bytes().filter(|b| matches!(b, b'[' | b'{')).count();
    let mut block = 0;
    for line in yaml.lines() {
        let indent = line.bytes().take_while(|&b| b == b' ').count();
        let bytes = line.as_bytes();
        let indicators = bytes
            .iter()
            .enumerate()
            .filter(|&(i, b)| matches!(b, b'-' | b'?' | b':') && matches!(bytes.get(i + 1), None | Some(b' ' | b'\t')))
            .count();
        block = block.max(2 * (indent + 1) + indicators);
    }
    openers + block + 1 > MAX_DEPTH
}

/// Walks the YAML events of `yaml` (without building anything) and refuses nesting deeper than
/// [`MAX_DEPTH`] and alias expansion beyond [`MAX_ALIAS_EXPANSION`]. A syntax error ends the walk
/// without an error: the real parse reports it.
fn check_bounds(yaml: &str) -> Result<(), YamlError> {
    let mut parser = EventParser::new(yaml);
    // One frame per open collection: its anchor and its weight so far.
    let mut frames: Vec<(Option<Vec<u8>>, u64)> = Vec::new();
    let mut anchors: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut added: u64 = 0;
    let limit = |mark: (usize, usize), message: String| YamlError::Limit { line: mark.0, column: mark.1, message };
    while let Some(event) = parser.next() {
        match event.kind {
            EventKind::End => break,
            EventKind::Open { anchor } => {
                if frames.len() >= MAX_DEPTH {
                    return Err(limit(
                        event.mark,
                        format!("the YAML nests deeper than {MAX_DEPTH} levels of lists and mappings"),
                    ));
                }
                frames.push((anchor, 1));
            }
            EventKind::Close => {
                if let Some((anchor, weight)) = frames.pop() {
                    if let Some(name) = anchor {
                        anchors.insert(name, weight);
                    }
                    if let Some(parent) = frames.last_mut() {
                        parent.1 = parent.1.saturating_add(weight);
                    }
                }
            }
            EventKind::Scalar { anchor, len } => {
                let weight = 1 + len as u64;
                if let Some(name) = anchor {
                    anchors.insert(name, weight);
                }
                if let Some(parent) = frames.last_mut() {
                    parent.1 = parent.1.saturating_add(weight);
                }
            }
            EventKind::Alias { anchor } => {
                let weight = anchors.get(&anchor).copied().unwrap_or(1);
                added = added.saturating_add(weight);
                if added > MAX_ALIAS_EXPANSION {
                    return Err(limit(
                        event.mark,
                        format!("the YAML's aliases expand to more than {MAX_ALIAS_EXPANSION} nodes and bytes"),
                    ));
                }
                if let Some(parent) = frames.last_mut() {
                    parent.1 = parent.1.saturating_add(weight);
                }
            }
            EventKind::Other => {}
        }
    }
    Ok(())
}

/// One event of the YAML event stream, reduced to what [`check_bounds`] needs.
struct Event {
    kind: EventKind,
    /// 1-based line and column where the event starts.
    mark: (usize, usize),
}

enum EventKind {
    /// A sequence or mapping starts.
    Open {
        anchor: Option<Vec<u8>>,
    },
    /// A sequence or mapping ends.
    Close,
    Scalar {
        anchor: Option<Vec<u8>>,
        len: usize,
    },
    Alias {
        anchor: Vec<u8>,
    },
    /// Stream or document boundaries.
    Other,
    /// The end of the stream, or a syntax error.
    End,
}

/// The libyaml event parser (the one yaml_serde runs) over a borrowed text.
struct EventParser<'a> {
    /// Boxed: libyaml keeps pointers to the parser's own buffers, so it must not move.
    parser: Box<std::mem::MaybeUninit<libyaml_rs::yaml_parser_t>>,
    _input: std::marker::PhantomData<&'a str>,
    done: bool,
}

impl<'a> EventParser<'a> {
    fn new(input: &'a str) -> EventParser<'a> {
        let mut parser = Box::new(std::mem::MaybeUninit::<libyaml_rs::yaml_parser_t>::uninit());
        // SAFETY: `yaml_parser_initialize` fully initializes the parser it is given (or fails,
        // leaving it zeroed, which `yaml_parser_delete` accepts). The input outlives the parser:
        // `EventParser` borrows it for `'a`.
        let done = unsafe {
            let p = parser.as_mut_ptr();
            let failed = libyaml_rs::yaml_parser_initialize(p).fail;
            if !failed {
                libyaml_rs::yaml_parser_set_encoding(p, libyaml_rs::YAML_UTF8_ENCODING);
                libyaml_rs::yaml_parser_set_input_string(p, input.as_ptr(), input.len() as _);
            }
            failed
        };
        EventParser { parser, _input: std::marker::PhantomData, done }
    }

    fn next(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        let mut raw = std::mem::MaybeUninit::<libyaml_rs::yaml_event_t>::uninit();
        // SAFETY: the parser was initialized in `new` and is only used from here. A successful
        // `yaml_parser_parse` initializes the event; its anchors are NUL-terminated strings owned by
        // the event, copied before `yaml_event_delete` frees them.
        unsafe {
            let p = self.parser.as_mut_ptr();
            if libyaml_rs::yaml_parser_parse(p, raw.as_mut_ptr()).fail {
                self.done = true;
                return Some(Event { kind: EventKind::End, mark: (1, 1) });
            }
            let e = raw.as_mut_ptr();
            let mark = ((*e).start_mark.line as usize + 1, (*e).start_mark.column as usize + 1);
            let kind = match (*e).type_ {
                libyaml_rs::YAML_STREAM_END_EVENT => EventKind::End,
                libyaml_rs::YAML_SEQUENCE_START_EVENT => {
                    EventKind::Open { anchor: c_bytes((*e).data.sequence_start.anchor) }
                }
                libyaml_rs::YAML_MAPPING_START_EVENT => {
                    EventKind::Open { anchor: c_bytes((*e).data.mapping_start.anchor) }
                }
                libyaml_rs::YAML_SEQUENCE_END_EVENT | libyaml_rs::YAML_MAPPING_END_EVENT => EventKind::Close,
                libyaml_rs::YAML_SCALAR_EVENT => EventKind::Scalar {
                    anchor: c_bytes((*e).data.scalar.anchor),
                    len: (*e).data.scalar.length as usize,
                },
                libyaml_rs::YAML_ALIAS_EVENT => {
                    EventKind::Alias { anchor: c_bytes((*e).data.alias.anchor).unwrap_or_default() }
                }
                _ => EventKind::Other,
            };
            libyaml_rs::yaml_event_delete(e);
            if matches!(kind, EventKind::End) {
                self.done = true;
            }
            Some(Event { kind, mark })
        }
    }
}

/// The bytes of a NUL-terminated string owned by libyaml, or `None` for a null pointer.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string.
unsafe fn c_bytes(ptr: *const u8) -> Option<Vec<u8>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    Some(unsafe { std::ffi::CStr::from_ptr(ptr.cast()) }.to_bytes().to_vec())
}

impl Drop for EventParser<'_> {
    fn drop(&mut self) {
        // SAFETY: the parser was initialized (or zeroed by a failed initialization) in `new`.
        unsafe { libyaml_rs::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit_of(yaml: &str) -> (usize, usize, String) {
        match parse(yaml) {
            Err(YamlError::Limit { line, column, message }) => (line, column, message),
            other => panic!("expected a limit error, got {other:?}"),
        }
    }

    #[test]
    fn deep_flow_and_block_nesting_is_refused_quickly() {
        let start = std::time::Instant::now();
        for yaml in [
            format!("a: {}", "[".repeat(100_000)),
            format!("a: {}", "{".repeat(100_000)),
            format!("a:\n{}x", "- ".repeat(100_000)),
            format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000)),
        ] {
            let (line, _, message) = limit_of(&yaml);
            assert!(line <= 2, "{line}");
            assert!(message.contains("deeper than 64"), "{message}");
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "{:?}", start.elapsed());
    }

    #[test]
    fn nesting_at_the_limit_parses() {
        let depth = MAX_DEPTH - 1; // plus the top-level mapping
        let yaml = format!("a: {}1{}", "[".repeat(depth), "]".repeat(depth));
        assert!(parse(&yaml).is_ok());
        let yaml = format!("a: {}1{}", "[".repeat(depth + 1), "]".repeat(depth + 1));
        assert!(matches!(parse(&yaml), Err(YamlError::Limit { .. })));
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut yaml = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = format!("*a{}", i - 1);
            yaml.push_str(&format!("a{i}: &a{i} [{}]\n", [prev.as_str(); 10].join(", ")));
        }
        let (_, _, message) = limit_of(&yaml);
        assert!(message.contains("aliases expand"), "{message}");
        // A few aliases are fine.
        assert!(parse("a: &a [1, 2]\nb: *a\n").is_ok());
    }

    #[test]
    fn syntax_errors_are_left_to_the_parser() {
        assert!(matches!(parse("a: [1, 2\nb: *x"), Err(YamlError::Syntax(_))));
    }
}
