//! The model: loading a GGUF file, the chat template, generation and embeddings.

use crate::{Constraint, Error};
use std::ops::ControlFlow;
use std::path::Path;

/// One chat message as the model's chat template reads it (`role` is `system`, `user`,
/// `assistant` or `tool`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message.
    ///
    /// ```
    /// let m = prompty_local::ChatMessage::new("user", "Hi");
    /// assert_eq!(m.role, "user");
    /// ```
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self { role: role.into(), content: content.into() }
    }
}

/// What a loaded model is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelInfo {
    /// `general.architecture` (`llama`).
    pub architecture: String,
    /// `general.name`, when the file has one.
    pub name: Option<String>,
    /// Context window in tokens.
    pub context_length: usize,
    /// Width of the hidden state (the embedding dimension).
    pub embedding_length: usize,
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// Layers.
    pub layers: usize,
    /// Number of parameters.
    pub parameters: u64,
    /// The quantization of most weights as the file stores them (`Q4_1`, `Q8_0`, `F16`, …).
    pub quantization: String,
}

/// How to generate.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GenerateOptions {
    /// At most this many new tokens.
    pub max_tokens: usize,
    /// `0` is greedy decoding (always the most likely token, no random numbers).
    pub temperature: f32,
    /// Nucleus sampling: the smallest set of tokens whose probabilities add up to this (`1.0`: all).
    pub top_p: f32,
    /// Sample among the `k` most likely tokens only (`None`: all).
    pub top_k: Option<usize>,
    /// The seed of the sampler: the same seed, prompt and options give the same text. `None`: a
    /// random seed.
    pub seed: Option<u64>,
    /// Generation ends before any of these strings (not included in the text).
    pub stop: Vec<String>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self { max_tokens: 512, temperature: 0.7, top_p: 0.95, top_k: None, seed: None, stop: Vec::new() }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model ended its answer (end-of-turn token), a stop sequence was met, or the constraint
    /// was complete.
    Stop,
    /// `max_tokens` was reached.
    Length,
    /// The callback asked to stop.
    Cancelled,
}

/// The result of [`Model::generate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The generated text (without the stop sequence or the end-of-turn token).
    pub text: String,
    /// Tokens of the prompt.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub completion_tokens: usize,
    /// Why it ended.
    pub finish: FinishReason,
}

/// The bytes of every token of a model's vocabulary, for a [`Constraint`].
#[derive(Debug, Clone)]
pub struct Vocabulary {
    /// The bytes each token id decodes to; empty for control tokens (which a constraint never allows).
    pub tokens: Vec<Vec<u8>>,
    /// The token that ends the model's turn.
    pub end_of_turn: u32,
}

/// A GGUF model loaded into memory. See the crate documentation.
pub struct Model {
    _private: (),
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").finish_non_exhaustive()
    }
}

impl Model {
    /// Loads a GGUF file.
    pub fn load(path: &Path) -> Result<Model, Error> {
        let _ = path;
        todo!()
    }

    /// What this model is.
    pub fn info(&self) -> &ModelInfo {
        todo!()
    }

    /// The vocabulary as bytes, for constraints.
    pub fn vocabulary(&self) -> &Vocabulary {
        todo!()
    }

    /// The model's chat template applied to `messages`; with `add_generation_prompt` the text ends
    /// where the assistant's answer begins.
    pub fn render_chat(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String, Error> {
        let _ = (messages, add_generation_prompt);
        todo!()
    }

    /// The tokens of `text` (control tokens such as `<|im_start|>` written in it are recognised).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, Error> {
        let _ = text;
        todo!()
    }

    /// Generates after `prompt`. `on_text` receives each piece of text as soon as it is whole UTF-8
    /// and not possibly the start of a stop sequence; returning `ControlFlow::Break` stops with
    /// [`FinishReason::Cancelled`]. With a `constraint`, only tokens it allows are chosen and the
    /// output is always a complete document of it: when `max_tokens` runs out first, the
    /// constraint's shortest completion is appended (and the reason is [`FinishReason::Length`]).
    pub fn generate(
        &self,
        prompt: &[u32],
        options: &GenerateOptions,
        constraint: Option<&mut dyn Constraint>,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Generation, Error> {
        let _ = (prompt, options, constraint, on_text);
        todo!()
    }

    /// A mean-pooled, L2-normalised embedding of `text` (length [`ModelInfo::embedding_length`]).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, Error> {
        let _ = text;
        todo!()
    }
}
