//! Measures `JsonSchema::mask` over a real vocabulary: the tokens of a GGUF file (GPT-2
//! byte-level alphabet mapped back to bytes).
//!
//! ```text
//! cargo run --release -p prompty-local --example mask_bench -- path/to/model.gguf
//! ```

use std::time::Instant;

use candle_core::quantized::gguf_file;
use prompty_local::constrain::{Constraint, JsonSchema, TokenTrie};
use prompty_local::Vocabulary;
use serde_json::json;

/// GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for U+0100 on.
fn byte_of_char() -> std::collections::HashMap<char, u8> {
    let mut map = std::collections::HashMap::new();
    let mut extra = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, 33..=126 | 161..=172 | 174..=255);
        let c = if printable {
            char::from(b)
        } else {
            extra += 1;
            char::from_u32(255 + extra).unwrap()
        };
        map.insert(c, b);
    }
    map
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: mask_bench MODEL.gguf")?;
    let mut file = std::fs::File::open(&path)?;
    let content = gguf_file::Content::read(&mut file)?;
    let tokens = content.metadata.get("tokenizer.ggml.tokens").ok_or("no tokenizer.ggml.tokens")?.to_vec()?;
    let types = content.metadata.get("tokenizer.ggml.token_type").and_then(|t| t.to_vec().ok());
    let eos = content.metadata.get("tokenizer.ggml.eos_token_id").and_then(|v| v.to_u32().ok()).unwrap_or(2);
    let map = byte_of_char();
    let mut vocab = Vocabulary { tokens: Vec::new(), end_of_turn: eos };
    for (i, t) in tokens.iter().enumerate() {
        let control = types.and_then(|ty| ty.get(i)).and_then(|v| v.to_i32().ok()).is_some_and(|ty| ty == 3);
        let text = t.to_string()?;
        let bytes: Option<Vec<u8>> = text.chars().map(|c| map.get(&c).copied()).collect();
        vocab.tokens.push(if control { Vec::new() } else { bytes.unwrap_or_default() });
    }
    let lens: Vec<usize> = vocab.tokens.iter().map(Vec::len).collect();
    println!("{} tokens, longest {} bytes", vocab.tokens.len(), lens.iter().max().unwrap_or(&0));

    let started = Instant::now();
    let trie = std::sync::Arc::new(TokenTrie::new(&vocab));
    println!("trie: {} tokens in {:.1} ms", trie.token_count(), started.elapsed().as_secs_f64() * 1e3);

    let schema = json!({"anyOf": [
        {"type": "object", "properties": {"name": {"const": "get_weather"}, "arguments": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}, "required": ["name", "arguments"]},
        {"type": "object", "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}, "tags": {"type": "array", "items": {}}}, "required": ["city", "temperature"]}
    ]});
    let states: [(&str, &[u8]); 6] = [
        ("document start", b""),
        ("first key", b"{\""),
        ("inside a string", b"{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Par"),
        ("inside a number", b"{\"city\":\"Paris\",\"temperature\":12"),
        ("any value", b"{\"city\":\"Paris\",\"temperature\":12,\"tags\":["),
        ("inside an any-string", b"{\"city\":\"Paris\",\"temperature\":12,\"tags\":[\"a b"),
    ];
    let mut allowed = vec![false; vocab.tokens.len()];
    for (label, prefix) in states {
        let mut c = JsonSchema::new(&schema)?.with_trie(trie.clone());
        assert!(c.advance(prefix), "{label}");
        c.mask(&vocab, &mut allowed);
        let n = 50;
        let started = Instant::now();
        for _ in 0..n {
            c.mask(&vocab, &mut allowed);
        }
        let per = started.elapsed().as_secs_f64() * 1e3 / n as f64;
        let count = allowed.iter().filter(|a| **a).count();
        println!("{label:>22}: {per:6.2} ms per mask, {count} tokens allowed");
    }
    // Without a prepared trie: the first mask of a request looks it up by fingerprint.
    for label in ["first request (builds the shared trie)", "next request (finds it by fingerprint)"] {
        let started = Instant::now();
        let mut c = JsonSchema::new(&schema)?;
        c.mask(&vocab, &mut allowed);
        println!("first mask without with_trie, {label}: {:.2} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(())
}
