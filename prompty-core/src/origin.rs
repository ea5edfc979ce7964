//! Where the text being loaded came from: the file name, the frontmatter text (to turn a key path
//! into a line and column) and the secrets read while loading (to redact them from errors). Below
//! both the loader and reference resolution, which share it.

use crate::keypath::{self, KeyPath};
use crate::Location;

/// Where the text being loaded came from, for error messages.
pub(crate) struct Origin {
    /// Values read from the environment while loading (to redact them from error messages).
    pub(crate) secrets: std::cell::RefCell<Vec<String>>,
    pub(crate) file: String,
    /// The frontmatter text and the file line it starts at.
    pub(crate) frontmatter: Option<(String, usize)>,
}

impl Origin {
    pub(crate) fn memory() -> Origin {
        Origin { file: "<agent>".to_owned(), frontmatter: None, secrets: Default::default() }
    }

    /// `message` with every value read from the environment replaced by `[REDACTED]`.
    pub(crate) fn redact(&self, message: String) -> String {
        self.secrets.borrow().iter().fold(message, |m, secret| m.replace(secret.as_str(), "[REDACTED]"))
    }

    /// The location of a key path with a column: where `needle` starts on the entry's line (the
    /// key's column when the line does not hold it).
    pub(crate) fn at_text(&self, path: &KeyPath, needle: &str) -> Location {
        let loc = Location::file(self.file.clone());
        let Some((text, first)) = &self.frontmatter else { return loc };
        let Some(line) = keypath::locate(text, path) else { return loc };
        let Some(content) = text.lines().nth(line) else { return loc.at_line(first + line) };
        let column = match content.find(needle) {
            Some(i) => content[..i].chars().count() + 1,
            None => keypath::column(content, path.0.last()),
        };
        loc.at(first + line, column)
    }

    /// The location of a key path: the file, and the line when the frontmatter text shows it.
    pub(crate) fn at(&self, path: &KeyPath) -> Location {
        let loc = Location::file(self.file.clone());
        match &self.frontmatter {
            Some((text, first)) => match keypath::locate(text, path) {
                Some(line) => loc.at_line(first + line),
                None => loc,
            },
            None => loc,
        }
    }
}
