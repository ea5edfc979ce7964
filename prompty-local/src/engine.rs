//! The model: loading a GGUF file, the chat template, generation and embeddings.

use crate::chat_template::{ChatMessage, ChatTemplate, CHATML};
use crate::gguf::{format_error, limits, Gguf};
use crate::llama::{Cache, Config, Llama, Want, SUPPORTED_ARCHITECTURES};
use crate::sample::{sample, Rng};
use crate::tokenizer::{Tok, Utf8Stream, Vocabulary};
use crate::{Constraint, Error};
use std::ops::ControlFlow;
use std::path::Path;

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

/// A GGUF model loaded into memory. See the crate documentation.
///
/// Loading reads the whole file into memory. Matrices in a format without a fast CPU kernel in
/// candle (Q4_1, Q5_0, Q5_1, Q8_1) are converted to Q8_0, and on CPUs with AVX-512 VNNI or
/// AVX-VNNI, Q8_0 matrices whose width is not a multiple of 256 are padded with zero columns to
/// use candle's faster kernel (exact; `PROMPTY_LOCAL_NO_PAD=1` turns this off for comparison),
/// which keeps a repacked copy of them: for SmolLM2-135M Q4_1 (94 MiB on disk) the process peaks
/// at about 430 MiB (240 MiB without padding; llama.cpp about 200 MiB), for about 1.5× the
/// generation speed.
///
/// Threads: the matrix products run on candle's pool, sized once, at first use, from
/// `CANDLE_NUM_THREADS`, else `RAYON_NUM_THREADS`, else the number of physical cores; the rest
/// (attention over long prompts, conversions at load) on rayon's global pool
/// (`RAYON_NUM_THREADS`, default all cores).
pub struct Model {
    info: ModelInfo,
    net: Llama,
    tok: Tok,
    template: ChatTemplate,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("info", &self.info).finish_non_exhaustive()
    }
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Model>();
};

/// llama.cpp's name of a tensor format.
fn dtype_name(d: candle_core::quantized::GgmlDType) -> String {
    let s = format!("{d:?}");
    match s.strip_suffix('K') {
        Some(base) => format!("{base}_K"),
        None => s,
    }
}

impl Model {
    /// Loads a GGUF file: a Llama-architecture model (SmolLM2, Llama 3, …) with a byte-level BPE
    /// tokenizer (`tokenizer.ggml.model = gpt2`). Without `tokenizer.chat_template` in the file,
    /// [`Model::render_chat`] uses ChatML (`<|im_start|>role\ncontent<|im_end|>\n`).
    ///
    /// Every problem with the file is an [`Error::Format`] naming it; the file's claims are bounded
    /// (at most 2^20 tokens of vocabulary and of context, 1,024 layers, a hidden state of 65,536,
    /// a feed-forward layer of 262,144, 1,024 heads, a chat template of 1 MiB).
    ///
    /// ```no_run
    /// let model = prompty_local::Model::load("SmolLM2-135M-Instruct.Q4_1.gguf".as_ref())?;
    /// assert_eq!(model.info().architecture, "llama");
    /// # Ok::<(), prompty_local::Error>(())
    /// ```
    pub fn load(path: &Path) -> Result<Model, Error> {
        let mut g = Gguf::open(path)?;
        let arch = g.str("general.architecture")?.to_string();
        if !SUPPORTED_ARCHITECTURES.contains(&arch.as_str()) {
            return Err(format_error(
                path,
                format!(
                    "architecture `{arch}` is not supported: supported are {} (SmolLM2, TinyLlama, Llama 2 and 3 style models)",
                    SUPPORTED_ARCHITECTURES.join(", ")
                ),
            ));
        }
        let cfg = Config::read(&g, &arch)?;
        let tok = Tok::load(&g, cfg.vocab)?;
        let source = match g.opt_str("tokenizer.chat_template")? {
            Some(t) if t.len() > limits::MAX_TEMPLATE => {
                return Err(format_error(
                    path,
                    format!("the chat template is {} bytes, more than {}", t.len(), limits::MAX_TEMPLATE),
                ))
            }
            Some(t) => t.to_string(),
            None => CHATML.to_string(),
        };
        let template = ChatTemplate::new(&source, tok.bos_text.clone(), tok.eos_text.clone())
            .map_err(|e| format_error(path, format!("the chat template does not compile: {e}")))?;
        let mut by_dtype: Vec<(String, u64)> = Vec::new();
        let mut parameters = 0u64;
        for info in g.content.tensor_infos.values() {
            let n = info.shape.dims().iter().fold(1u64, |a, &d| a.saturating_mul(d as u64));
            parameters = parameters.saturating_add(n);
            let name = dtype_name(info.ggml_dtype);
            match by_dtype.iter_mut().find(|(d, _)| *d == name) {
                Some((_, c)) => *c = c.saturating_add(n),
                None => by_dtype.push((name, n)),
            }
        }
        by_dtype.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let quantization = by_dtype.first().map(|(d, _)| d.clone()).unwrap_or_default();
        let name = g.opt_str("general.name")?.map(str::to_string);
        let info = ModelInfo {
            architecture: arch,
            name,
            context_length: cfg.context,
            embedding_length: cfg.dim,
            vocab_size: cfg.vocab,
            layers: cfg.layers,
            parameters,
            quantization,
        };
        let net = Llama::load(&mut g, cfg)?;
        Ok(Model { info, net, tok, template })
    }

    /// What this model is.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The vocabulary as bytes, for constraints.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.tok.vocab
    }

    /// The model's chat template applied to `messages`; with `add_generation_prompt` the text ends
    /// where the assistant's answer begins. The template sees `messages` (each with `role` and
    /// `content`), `add_generation_prompt`, `bos_token`, `eos_token` and `raise_exception`.
    pub fn render_chat(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String, Error> {
        self.template.render(messages, add_generation_prompt)
    }

    /// The tokens of `text` (control tokens such as `<|im_start|>` written in it are recognised).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, Error> {
        self.tok.encode(text)
    }

    /// The text of `tokens` (control tokens give no text).
    pub fn detokenize(&self, tokens: &[u32]) -> String {
        let bytes: Vec<u8> = tokens.iter().flat_map(|&t| self.tok.bytes(t).iter().copied()).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Generates after `prompt`. `on_text` receives each piece of text as soon as it is whole UTF-8
    /// and not possibly the start of a stop sequence; returning `ControlFlow::Break` stops with
    /// [`FinishReason::Cancelled`]. With a `constraint`, only tokens it allows are chosen and the
    /// output is always a complete document of it: when `max_tokens` runs out first, the
    /// constraint's shortest completion is appended (and the reason is [`FinishReason::Length`]).
    /// Stop sequences do not apply under a constraint (it decides where the text ends).
    ///
    /// `prompt.len() + max_tokens` must fit the context window ([`Error::ContextOverflow`]).
    pub fn generate(
        &self,
        prompt: &[u32],
        options: &GenerateOptions,
        mut constraint: Option<&mut dyn Constraint>,
        on_text: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Generation, Error> {
        let limit = self.info.context_length;
        let tokens = prompt.len().saturating_add(options.max_tokens);
        if tokens > limit {
            return Err(Error::ContextOverflow { tokens, limit });
        }
        if prompt.is_empty() {
            return Err(Error::Inference("the prompt has no tokens: give at least one".into()));
        }
        if !options.temperature.is_finite() || options.temperature < 0.0 {
            return Err(Error::Inference(format!("temperature {} is not a number >= 0", options.temperature)));
        }
        if options.top_p.is_nan() || options.top_p <= 0.0 || options.top_p > 1.0 {
            return Err(Error::Inference(format!("top_p {} is not in (0, 1]", options.top_p)));
        }
        let mut out = Emitter {
            stops: if constraint.is_some() { &[] } else { &options.stop },
            held: String::new(),
            text: String::new(),
        };
        let mut utf8 = Utf8Stream::default();
        let mut generation = |out: &mut Emitter| -> Result<(usize, FinishReason), Error> {
            if options.max_tokens == 0 {
                return Ok((0, FinishReason::Length));
            }
            let mut cache = Cache::new(&self.net.cfg);
            let mut logits = self.net.forward(prompt, &mut cache, Want::Logits)?;
            let mut rng = Rng::new(options.seed.unwrap_or_else(Rng::random_seed));
            let vocab = &self.tok.vocab;
            let mut allowed = vec![true; vocab.tokens.len()];
            let mut count = 0;
            loop {
                if let Some(c) = constraint.as_deref_mut() {
                    c.mask(vocab, &mut allowed);
                    for (l, &ok) in logits.iter_mut().zip(&allowed) {
                        if !ok {
                            *l = f32::NEG_INFINITY;
                        }
                    }
                }
                let Some(next) = sample(&logits, options.temperature, options.top_k, options.top_p, &mut rng) else {
                    return Err(Error::Inference("no token may come next (every token is excluded)".into()));
                };
                let next = next as u32;
                count += 1;
                let ends = match constraint.as_deref() {
                    Some(_) => next == vocab.end_of_turn || self.tok.is_end(next),
                    None => self.tok.is_end(next),
                };
                if ends {
                    return Ok((count, FinishReason::Stop));
                }
                let bytes = self.tok.bytes(next);
                if let Some(c) = constraint.as_deref_mut() {
                    if !c.advance(bytes) {
                        return Err(Error::Inference(format!("the constraint refused token {next}, which it allowed")));
                    }
                }
                let piece = utf8.push(bytes);
                match out.push(&piece, on_text) {
                    Flow::Continue => {}
                    Flow::Stop => return Ok((count, FinishReason::Stop)),
                    Flow::Cancel => return Ok((count, FinishReason::Cancelled)),
                }
                if constraint.as_deref().is_some_and(|c| c.is_complete()) {
                    return Ok((count, FinishReason::Stop));
                }
                if count >= options.max_tokens {
                    return Ok((count, FinishReason::Length));
                }
                logits = self.net.forward(&[next], &mut cache, Want::Logits)?;
            }
        };
        let (completion_tokens, finish) = generation(&mut out)?;
        if finish != FinishReason::Cancelled {
            // A cut-off constrained output is closed first: its completion may begin with the
            // continuation bytes of a character the last token left open.
            let closing = match (finish, constraint.as_deref()) {
                (FinishReason::Length, Some(c)) if !c.is_complete() => utf8.push(&c.completion_bytes()),
                _ => String::new(),
            };
            let rest = closing + &utf8.finish();
            if let Flow::Continue = out.push(&rest, on_text) {
                out.flush(on_text);
            }
        }
        Ok(Generation { text: out.text, prompt_tokens: prompt.len(), completion_tokens, finish })
    }

    /// A mean-pooled, L2-normalised embedding of `text` (length [`ModelInfo::embedding_length`]):
    /// the final hidden states (after the final norm) of the text's tokens, averaged.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, Error> {
        let tokens = self.tokenize(text)?;
        if tokens.is_empty() {
            return Err(Error::Tokenizer("the text to embed is empty".into()));
        }
        if tokens.len() > self.info.context_length {
            return Err(Error::ContextOverflow { tokens: tokens.len(), limit: self.info.context_length });
        }
        let mut cache = Cache::new(&self.net.cfg);
        let hidden = self.net.forward(&tokens, &mut cache, Want::Hidden)?;
        let dim = self.info.embedding_length;
        let mut mean = vec![0f32; dim];
        for row in hidden.chunks(dim) {
            for (m, h) in mean.iter_mut().zip(row) {
                *m += h;
            }
        }
        let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 && norm.is_finite() {
            for m in mean.iter_mut() {
                *m /= norm;
            }
        }
        Ok(mean)
    }
}

enum Flow {
    Continue,
    Stop,
    Cancel,
}

/// Text on its way to the caller: held back while it could still be the start of a stop sequence.
struct Emitter<'a> {
    stops: &'a [String],
    held: String,
    text: String,
}

impl Emitter<'_> {
    fn emit(&mut self, s: &str, on_text: &mut dyn FnMut(&str) -> ControlFlow<()>) -> Flow {
        if s.is_empty() {
            return Flow::Continue;
        }
        self.text.push_str(s);
        match on_text(s) {
            ControlFlow::Continue(()) => Flow::Continue,
            ControlFlow::Break(()) => Flow::Cancel,
        }
    }

    fn push(&mut self, piece: &str, on_text: &mut dyn FnMut(&str) -> ControlFlow<()>) -> Flow {
        self.held.push_str(piece);
        let hit = self.stops.iter().filter(|s| !s.is_empty()).filter_map(|s| self.held.find(s.as_str())).min();
        if let Some(at) = hit {
            let before = self.held[..at].to_string();
            self.held.clear();
            return match self.emit(&before, on_text) {
                Flow::Cancel => Flow::Cancel,
                _ => Flow::Stop,
            };
        }
        // The longest end of the held text that a stop sequence starts with stays held.
        let mut keep = 0;
        for stop in self.stops {
            for (i, _) in self.held.char_indices() {
                let tail = &self.held[i..];
                if tail.len() > keep && stop.starts_with(tail) {
                    keep = tail.len();
                    break;
                }
            }
        }
        let cut = self.held.len() - keep;
        let ready = self.held[..cut].to_string();
        self.held.drain(..cut);
        self.emit(&ready, on_text)
    }

    fn flush(&mut self, on_text: &mut dyn FnMut(&str) -> ControlFlow<()>) {
        let rest = std::mem::take(&mut self.held);
        let _ = self.emit(&rest, on_text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (Vec<String>, bool) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut e = Emitter { stops: &stops, held: String::new(), text: String::new() };
        let mut got = Vec::new();
        let mut stopped = false;
        for p in pieces {
            if let Flow::Stop = e.push(p, &mut |s| {
                got.push(s.to_string());
                ControlFlow::Continue(())
            }) {
                stopped = true;
                break;
            }
        }
        if !stopped {
            e.flush(&mut |s| {
                got.push(s.to_string());
                ControlFlow::Continue(())
            });
        }
        assert_eq!(e.text, got.concat());
        (got, stopped)
    }

    #[test]
    fn stop_sequence_across_pieces_is_cut() {
        let (got, stopped) = run(&["END"], &["ab", "cE", "N", "Dx"]);
        assert!(stopped);
        assert_eq!(got.concat(), "abc");
        assert!(!got.iter().any(|p| p.contains('E')));
    }

    #[test]
    fn false_start_is_released() {
        let (got, stopped) = run(&["END"], &["aE", "Nb", "c"]);
        assert!(!stopped);
        assert_eq!(got.concat(), "aENbc");
    }

    #[test]
    fn no_stops_passes_through() {
        let (got, _) = run(&[], &["a", "b"]);
        assert_eq!(got, ["a", "b"]);
    }
}
