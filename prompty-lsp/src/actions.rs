//! Quick fixes (to be written).

use crate::document::Document;
use lsp_types::CodeActionOrCommand;
use prompty_core::analysis::Span;

/// The quick fixes for the diagnostics that overlap the bytes `span` of `doc`.
pub fn code_actions(doc: &Document, span: Span) -> Vec<CodeActionOrCommand> {
    let _ = (doc, span);
    Vec::new()
}
