//! A chat and embedding model that runs inside the process, on the CPU, from a GGUF file: the
//! engine behind prompty's `local` provider (`model: {provider: local, id: smollm2-135m}`).
//!
//! - [`Model::load`] reads a GGUF file of a Llama-architecture model (SmolLM2, Llama 2/3, …):
//!   weights, the tokenizer, and the chat template, all from the file itself.
//! - [`Model::render_chat`] turns messages into the model's own prompt text with its chat template.
//! - [`Model::generate`] decodes tokens: greedy or sampled (temperature, top-p, top-k, seed), stop
//!   sequences, a token limit, streaming and cancellation through a callback, and optionally a
//!   [`Constraint`] (see [`constrain`]) that keeps the output inside a JSON schema.
//! - [`Model::embed`] gives a mean-pooled, L2-normalised embedding of a text.
//!
//! A loaded [`Model`] is immutable and `Send + Sync`: each generation has its own key/value
//! cache, so one model serves many threads at once.
//!
//! ```no_run
//! use prompty_local::{ChatMessage, GenerateOptions, Model};
//! let model = Model::load("SmolLM2-135M-Instruct.Q4_1.gguf".as_ref())?;
//! let prompt = model.render_chat(&[ChatMessage::new("user", "Name a colour.")], true)?;
//! let tokens = model.tokenize(&prompt)?;
//! let options = GenerateOptions { max_tokens: 16, ..GenerateOptions::default() };
//! let out = model.generate(&tokens, &options, None, &mut |_piece| std::ops::ControlFlow::Continue(()))?;
//! println!("{} ({} tokens)", out.text, out.completion_tokens);
//! # Ok::<(), prompty_local::Error>(())
//! ```

mod chat_template;
pub mod constrain;
mod error;
mod gguf;
mod llama;
mod sample;
mod tokenizer;

pub use constrain::Constraint;
pub use error::Error;
mod engine;

pub use chat_template::ChatMessage;
pub use engine::{FinishReason, GenerateOptions, Generation, Model, ModelInfo};
pub use tokenizer::Vocabulary;
