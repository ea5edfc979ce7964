//! Completion (to be written).

use crate::document::Document;
use lsp_types::CompletionResponse;

/// The characters after which a client asks for completion.
pub const TRIGGERS: &[&str] = &["{", " ", ".", "|", ":"];

/// The completion items at byte `offset` of `doc`.
pub fn completion(doc: &Document, offset: usize) -> Option<CompletionResponse> {
    let _ = (doc, offset);
    None
}
