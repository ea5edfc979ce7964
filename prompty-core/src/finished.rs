//! A cache of loaded agents: loading the same text again (same frontmatter, folder and options)
//! clones the agent built the first time instead of parsing, resolving and deserializing again.
//!
//! Only frontmatter without `${file:}` references is cached (a file can change between loads).
//! `${env:}` references are resolved again on every load: an entry remembers which variables its
//! references read and a hash of each value (never the value), and is used only while every one is
//! unchanged. The cache holds at most [`MAX_ENTRIES`] texts and is emptied when full.
//!
//! An agent is kept from the second load of its text on: a text loaded only once (a prompt built
//! per request) is never copied into the cache; the first load only notes a keyed hash of it.

use crate::Agent;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

/// How many distinct frontmatter texts are kept.
pub(crate) const MAX_ENTRIES: usize = 256;

/// An agent built from one frontmatter text, without its body (`instructions`) and `source`.
pub(crate) struct Finished {
    dir: PathBuf,
    keep_env: bool,
    /// The variables its `${env:}` references read, with [`env_fingerprint`] of each.
    env: Vec<(String, Option<u64>)>,
    agent: Agent,
}

type Cache = RwLock<HashMap<Box<str>, Vec<Arc<Finished>>>>;

/// Keyed hashes of the (frontmatter, folder, options) loaded once so far; emptied when it holds
/// [`MAX_SEEN`].
fn seen() -> &'static std::sync::Mutex<std::collections::HashSet<u64>> {
    static SEEN: OnceLock<std::sync::Mutex<std::collections::HashSet<u64>>> = OnceLock::new();
    SEEN.get_or_init(Default::default)
}

/// How many texts loaded once are remembered.
const MAX_SEEN: usize = 4096;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn hasher() -> &'static std::collections::hash_map::RandomState {
    static STATE: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    STATE.get_or_init(Default::default)
}

/// A keyed hash of the value of the environment variable `var` (`None` when it is not set or
/// not Unicode): what an entry compares, so the cache never holds a value read from the
/// environment other than inside the agent it built.
pub(crate) fn env_fingerprint(var: &str) -> Option<u64> {
    std::env::var(var).ok().map(|v| hasher().hash_one(v))
}

/// The agent built before from `frontmatter` in `dir`, when every environment variable it read
/// still has the same value.
pub(crate) fn get(frontmatter: &str, dir: &Path, keep_env: bool) -> Option<Agent> {
    let entry = {
        let map = cache().read().unwrap_or_else(|e| e.into_inner());
        let entries = map.get(frontmatter)?;
        Arc::clone(entries.iter().find(|f| f.keep_env == keep_env && f.dir == dir)?)
    };
    if entry.env.iter().all(|(var, fingerprint)| env_fingerprint(var) == *fingerprint) {
        Some(entry.agent.clone())
    } else {
        None
    }
}

/// Keeps `agent` (its `instructions` and `source` left out) for later loads of `frontmatter`, when
/// this is the second load of it (see the module docs).
pub(crate) fn put(frontmatter: &str, dir: &Path, keep_env: bool, env: Vec<(String, Option<u64>)>, agent: &mut Agent) {
    if frontmatter.contains("${file:") {
        return;
    }
    let key = hasher().hash_one((frontmatter, dir, keep_env));
    {
        let mut seen = seen().lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= MAX_SEEN {
            seen.clear();
        }
        if seen.insert(key) {
            return; // the first load of this text
        }
    }
    // Cloned without its body and source, which every load sets anew.
    let instructions = agent.instructions.take();
    let source = agent.source.take();
    let mut kept = agent.clone();
    agent.instructions = instructions;
    agent.source = source;
    kept.cache = Default::default();
    let agent = kept;
    let finished = Arc::new(Finished { dir: dir.to_path_buf(), keep_env, env, agent });
    let mut map = cache().write().unwrap_or_else(|e| e.into_inner());
    if map.len() >= MAX_ENTRIES && !map.contains_key(frontmatter) {
        map.clear();
    }
    let entries = map.entry(frontmatter.into()).or_default();
    entries.retain(|f| !(f.keep_env == keep_env && f.dir == dir));
    entries.push(finished);
}
