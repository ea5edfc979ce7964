//! The tokenizer of a GGUF file (byte-level BPE), the bytes of every token, and incremental
//! decoding of generated tokens into whole UTF-8 text.

use crate::gguf::{candle_text, format_error, limits, Gguf};
use crate::Error;
use candle_core::quantized::tokenizer::TokenizerFromGguf;
use std::collections::HashMap;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::Tokenizer;

/// The bytes of every token of a model's vocabulary, for a [`crate::Constraint`].
#[derive(Debug, Clone)]
pub struct Vocabulary {
    /// The bytes each token id decodes to; empty for control tokens (which a constraint never allows).
    pub tokens: Vec<Vec<u8>>,
    /// The token that ends the model's turn.
    pub end_of_turn: u32,
}

/// GGUF token types (`tokenizer.ggml.token_type`).
const TYPE_USER_DEFINED: i64 = 4;
const TYPE_BYTE: i64 = 6;
const TYPE_NORMAL: i64 = 1;

/// The tokenizer of a model and what generation needs to know about its tokens.
pub(crate) struct Tok {
    inner: Tokenizer,
    pub vocab: Vocabulary,
    /// Tokens that end the model's turn (eos, eot, `<|im_end|>`, …).
    pub end_tokens: Vec<u32>,
    pub bos: Option<u32>,
    pub add_bos: bool,
    pub bos_text: String,
    pub eos_text: String,
}

/// The GPT-2 byte-level alphabet: which byte each of the 256 characters stands for.
fn unicode_to_byte() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut extra = 0u32;
    for b in 0u32..256 {
        let printable = (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
        let c = if printable {
            b
        } else {
            extra += 1;
            255 + extra
        };
        if let Some(c) = char::from_u32(c) {
            map.insert(c, b as u8);
        }
    }
    map
}

/// `<0x41>` → `0x41`.
fn byte_token(s: &str) -> Option<u8> {
    let hex = s.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}

impl Tok {
    /// Builds the tokenizer from the metadata of `g` (`vocab_size` is the model's).
    pub fn load(g: &Gguf, vocab_size: usize) -> Result<Tok, Error> {
        let model = g.str("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(format_error(
                &g.path,
                format!(
                    "tokenizer `{model}` is not supported: supported is `gpt2` (byte-level BPE, as in SmolLM2, \
                     Llama 3 and Qwen2 models); use a model whose GGUF has tokenizer.ggml.model = gpt2"
                ),
            ));
        }
        let tokens = g.str_array("tokenizer.ggml.tokens")?;
        if tokens.len() > limits::MAX_VOCAB {
            return Err(format_error(&g.path, format!("{} tokens is more than {}", tokens.len(), limits::MAX_VOCAB)));
        }
        if tokens.len() != vocab_size {
            return Err(format_error(
                &g.path,
                format!("the tokenizer has {} tokens, the embedding matrix {vocab_size} rows", tokens.len()),
            ));
        }
        let types = g.opt_int_array("tokenizer.ggml.token_type")?.unwrap_or_default();
        let token_type = |i: usize| types.get(i).copied().unwrap_or(TYPE_NORMAL);
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Tokenizer::from_gguf(&g.content)));
        let mut inner = match read {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                return Err(format_error(&g.path, format!("the tokenizer cannot be built: {}", candle_text(&e))))
            }
            Err(_) => return Err(format_error(&g.path, "the tokenizer's metadata is malformed")),
        };
        let pre = g.opt_str("tokenizer.ggml.pre")?.unwrap_or("gpt2");
        // candle's pipelines for qwen2 and llama3 match their models; for the others (GPT-2 style)
        // candle adds a prefix space, which these models do not, and SmolLM2's `smollm` splits
        // digits one by one before the byte-level step.
        match pre {
            "qwen2" | "llama3" | "llama-bpe" | "smaug-bpe" | "lfm2" => {}
            "smollm" => {
                let seq = Sequence::new(vec![
                    PreTokenizerWrapper::Digits(Digits::new(true)),
                    PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
                ]);
                inner.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(seq)));
            }
            _ => {
                inner.with_pre_tokenizer(Some(PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true))));
            }
        }

        let alphabet = unicode_to_byte();
        let vocab_bytes: Vec<Vec<u8>> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| match token_type(i) {
                TYPE_NORMAL => {
                    let mut bytes = Vec::with_capacity(t.len());
                    for c in t.chars() {
                        match alphabet.get(&c) {
                            Some(&b) => bytes.push(b),
                            None => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                        }
                    }
                    bytes
                }
                TYPE_USER_DEFINED => t.as_bytes().to_vec(),
                TYPE_BYTE => byte_token(t).map(|b| vec![b]).unwrap_or_default(),
                _ => Vec::new(),
            })
            .collect();

        let id = |key: &str| -> Result<Option<u32>, Error> {
            Ok(g.opt_usize(key)?.filter(|&i| i < tokens.len()).map(|i| i as u32))
        };
        let bos = id("tokenizer.ggml.bos_token_id")?;
        let eos = id("tokenizer.ggml.eos_token_id")?;
        let eot = id("tokenizer.ggml.eot_token_id")?;
        let mut end_tokens: Vec<u32> = [eot, eos].into_iter().flatten().collect();
        for name in ["<|im_end|>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "<|end_of_text|>"] {
            if let Some(i) = tokens.iter().position(|t| *t == name) {
                if vocab_bytes[i].is_empty() && !end_tokens.contains(&(i as u32)) {
                    end_tokens.push(i as u32);
                }
            }
        }
        // The end of the assistant's turn: `<|im_end|>` for ChatML, else eot, else eos.
        let im_end = tokens.iter().position(|t| *t == "<|im_end|>").map(|i| i as u32);
        let Some(end_of_turn) = im_end.or(eot).or(eos) else {
            return Err(format_error(
                &g.path,
                "the tokenizer has no end-of-sequence token (tokenizer.ggml.eos_token_id)",
            ));
        };
        let text_of = |t: Option<u32>| t.map(|i| tokens[i as usize].to_string()).unwrap_or_default();
        Ok(Tok {
            inner,
            vocab: Vocabulary { tokens: vocab_bytes, end_of_turn },
            end_tokens,
            bos,
            add_bos: g.opt_bool("tokenizer.ggml.add_bos_token").unwrap_or(false),
            bos_text: text_of(bos),
            eos_text: text_of(eos),
        })
    }

    /// The tokens of `text`; control tokens written in it are recognised. With the file's
    /// `add_bos_token`, a beginning-of-sequence token is put first (unless the text has one).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, Error> {
        let enc = self.inner.encode_fast(text, false).map_err(|e| Error::Tokenizer(e.to_string()))?;
        let mut ids = enc.get_ids().to_vec();
        if let (true, Some(bos)) = (self.add_bos, self.bos) {
            if ids.first() != Some(&bos) {
                ids.insert(0, bos);
            }
        }
        Ok(ids)
    }

    /// Whether `id` ends the model's turn.
    pub fn is_end(&self, id: u32) -> bool {
        self.end_tokens.contains(&id)
    }

    /// The bytes of token `id` (empty for control tokens and ids outside the vocabulary).
    pub fn bytes(&self, id: u32) -> &[u8] {
        self.vocab.tokens.get(id as usize).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Turns token bytes into text without ever splitting a UTF-8 character: bytes of an
/// unfinished character wait for the next token; invalid bytes become U+FFFD.
#[derive(Default)]
pub(crate) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds `bytes` and returns the text that is now whole.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // An unfinished character at the end: keep it for the next token.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// The text of what is left at the end (an unfinished character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabet_covers_all_bytes() {
        let m = unicode_to_byte();
        assert_eq!(m.len(), 256);
        assert_eq!(m[&'\u{120}'], b' ');
        assert_eq!(m[&'\u{10a}'], b'\n');
        assert_eq!(m[&'a'], b'a');
    }

    #[test]
    fn utf8_stream_holds_partial_characters() {
        let mut s = Utf8Stream::default();
        let e = "é".as_bytes();
        assert_eq!(s.push(&e[..1]), "");
        assert_eq!(s.push(&e[1..]), "é");
        assert_eq!(s.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(s.push(&"€".as_bytes()[..2]), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }

    #[test]
    fn byte_tokens() {
        assert_eq!(byte_token("<0x0A>"), Some(10));
        assert_eq!(byte_token("<0xZZ>"), None);
    }
}
