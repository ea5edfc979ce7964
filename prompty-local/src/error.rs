//! What can go wrong loading a model or generating with it.

use std::path::PathBuf;

/// An error of this crate: each says what was wrong, where, and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model file could not be read.
    #[error("cannot read the model file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a GGUF model this crate can run (not GGUF, another architecture, a tensor
    /// missing or of the wrong shape, a tokenizer it does not know).
    #[error("{}: {message}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The chat template of the model failed to render the messages.
    #[error("the model's chat template failed: {0}")]
    Template(String),
    /// The prompt does not fit the model's context window.
    #[error("the prompt is {tokens} tokens and the model's context window is {limit}: shorten the prompt or lower maxOutputTokens")]
    ContextOverflow {
        /// Tokens of the prompt plus the tokens asked for.
        tokens: usize,
        /// The context length.
        limit: usize,
    },
    /// A JSON schema that the constrained decoder does not support, at a JSON pointer.
    #[error("unsupported JSON schema at `{pointer}`: {message}")]
    Schema {
        /// Where in the schema (JSON pointer, `""` for the root).
        pointer: String,
        /// What is not supported and what to do.
        message: String,
    },
    /// The tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The tensor computation failed.
    #[error("inference failed: {0}")]
    Inference(String),
}
