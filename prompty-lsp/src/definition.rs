//! Go to definition (to be written).

use crate::document::Document;
use lsp_types::GotoDefinitionResponse;
use std::path::PathBuf;

/// Where the thing at byte `offset` of `doc` is declared; `roots` are the workspace folders.
pub fn definition(doc: &Document, offset: usize, roots: &[PathBuf]) -> Option<GotoDefinitionResponse> {
    let _ = (doc, offset, roots);
    None
}
