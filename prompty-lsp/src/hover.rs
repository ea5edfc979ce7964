//! Hover (to be written).

use crate::document::Document;
use lsp_types::Hover;

/// What to show for the thing at byte `offset` of `doc`.
pub fn hover(doc: &Document, offset: usize) -> Option<Hover> {
    let _ = (doc, offset);
    None
}
