//! Constrained decoding: only tokens that keep the output a valid JSON document of a schema.

use crate::{Error, Vocabulary};

/// A rule on what the model may write next. [`crate::Model::generate`] asks it before each token.
pub trait Constraint: Send {
    /// Sets `allowed[id]` to `true` for every token id of `vocab` that may come next, and to
    /// `false` for the others (`allowed.len() == vocab.tokens.len()`). When the document may end
    /// here, `vocab.end_of_turn` is allowed.
    fn mask(&mut self, vocab: &Vocabulary, allowed: &mut [bool]);
    /// Takes the bytes of the token chosen. `false` when they were not allowed (the state is then unchanged).
    fn advance(&mut self, bytes: &[u8]) -> bool;
    /// Whether the document is complete and nothing more may be written.
    fn is_complete(&self) -> bool;
    /// The shortest text that makes the output so far a complete, valid document.
    fn completion(&self) -> String;
}

/// A constraint that keeps the output a JSON value valid against a JSON schema.
#[derive(Debug, Clone)]
pub struct JsonSchema {
    _private: (),
}

impl JsonSchema {
    /// Compiles `schema`.
    pub fn new(schema: &serde_json::Value) -> Result<Self, Error> {
        let _ = schema;
        todo!()
    }
}
