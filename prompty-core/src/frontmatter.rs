//! Splitting a `.prompty` file into YAML frontmatter and the template body.

/// A `.prompty` file cut in two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Split<'a> {
    /// The YAML between the delimiters, and the 1-based line of the file where it starts.
    pub frontmatter: Option<(&'a str, usize)>,
    /// Everything after the closing delimiter line (the whole file when there is no frontmatter).
    pub body: &'a str,
}

/// Why a file could not be split: the opening delimiter's line, unclosed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unclosed {
    pub line: usize,
}

fn is_delimiter(line: &str) -> bool {
    // Most lines are not: their first byte after spaces says so without trimming them.
    let first = line.bytes().find(|b| !matches!(b, b' ' | b'\t'));
    if !matches!(first, Some(b'-' | b'+')) {
        return false;
    }
    let t = line.trim();
    t == "---" || t == "+++"
}

/// The lines of `text` from byte `from`, each with its `\n`, and the offset where each starts.
fn lines_from(text: &str, from: usize) -> impl Iterator<Item = (usize, &str)> {
    let mut pos = from;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let start = pos;
        pos = memchr::memchr(b'\n', &text.as_bytes()[start..]).map_or(text.len(), |i| start + i + 1);
        Some((start, &text[start..pos]))
    })
}

/// Splits `text` line by line: leading blank lines are allowed, then a line that is `---` or `+++`
/// opens the frontmatter and the next such line closes it. A delimiter inside a YAML value does not
/// close it early, because only whole lines count.
pub(crate) fn split(text: &str) -> Result<Split<'_>, Unclosed> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut offset = 0;
    let mut line_no = 0;
    // Find the first non-blank line.
    let mut open = None;
    for line in text.split_inclusive('\n') {
        line_no += 1;
        offset += line.len();
        if line.trim().is_empty() {
            continue;
        }
        if is_delimiter(line) {
            open = Some((offset, line_no));
        }
        break;
    }
    let Some((fm_start, open_line)) = open else {
        return Ok(Split { frontmatter: None, body: text });
    };
    for (line_start, line) in lines_from(text, fm_start) {
        if is_delimiter(line) {
            let body = &text[line_start + line.len()..];
            return Ok(Split { frontmatter: Some((&text[fm_start..line_start], open_line + 1)), body });
        }
    }
    Err(Unclosed { line: open_line })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_dash_and_plus_delimiters() {
        let s = split("---\nname: a\n---\nbody\n").unwrap();
        assert_eq!(s.frontmatter, Some(("name: a\n", 2)));
        assert_eq!(s.body, "body\n");
        let s = split("\n\n+++\nname: a\n+++\nbody").unwrap();
        assert_eq!(s.frontmatter, Some(("name: a\n", 4)));
        assert_eq!(s.body, "body");
    }

    #[test]
    fn no_frontmatter_means_whole_body() {
        let s = split("system:\nHi").unwrap();
        assert_eq!(s.frontmatter, None);
        assert_eq!(s.body, "system:\nHi");
    }

    #[test]
    fn delimiter_inside_value_does_not_close() {
        let s = split("---\nd: a --- b\n---\nx").unwrap();
        assert_eq!(s.frontmatter.unwrap().0, "d: a --- b\n");
        assert_eq!(s.body, "x");
    }

    #[test]
    fn empty_frontmatter_and_crlf() {
        let s = split("---\n---\nbody").unwrap();
        assert_eq!(s.frontmatter, Some(("", 2)));
        let s = split("---\r\nname: a\r\n---\r\nbody").unwrap();
        assert_eq!(s.frontmatter.unwrap().0, "name: a\r\n");
        assert_eq!(s.body, "body");
    }

    #[test]
    fn unclosed_is_an_error() {
        assert_eq!(split("\n---\nname: a\n"), Err(Unclosed { line: 2 }));
    }
}
