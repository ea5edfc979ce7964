//! Parsing frontmatter YAML, with a small cache of parsed frontmatter.
//!
//! Services often load the same prompt text many times; YAML parsing is most of the cost of a load.
//! The parse (before `${env:}`/`${file:}` resolution, which runs on every load) is kept for up to
//! [`CAPACITY`] distinct frontmatter texts of at most [`MAX_CACHED_LEN`] bytes.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// How many distinct frontmatter texts are kept; the cache is emptied when it is full.
const CAPACITY: usize = 256;
/// Longer frontmatter is parsed every time.
const MAX_CACHED_LEN: usize = 64 * 1024;

type Cache = RwLock<HashMap<Box<str>, Arc<Value>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Parses YAML text into JSON values (a mapping, or anything else for the caller to reject).
pub(crate) fn parse(yaml: &str) -> Result<Value, serde_yaml::Error> {
    if yaml.len() > MAX_CACHED_LEN {
        return serde_yaml::from_str(yaml);
    }
    if let Some(v) = cache().read().unwrap_or_else(|e| e.into_inner()).get(yaml) {
        return Ok(Value::clone(v));
    }
    let value: Value = serde_yaml::from_str(yaml)?;
    let mut map = cache().write().unwrap_or_else(|e| e.into_inner());
    if map.len() >= CAPACITY {
        map.clear();
    }
    map.insert(yaml.into(), Arc::new(value.clone()));
    Ok(value)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cached_and_fresh_parses_agree() {
        let yaml = "name: cache-test\nlist: [1, 2]\n";
        let first = super::parse(yaml).unwrap();
        let second = super::parse(yaml).unwrap();
        assert_eq!(first, second);
        assert_eq!(first, serde_json::json!({"name": "cache-test", "list": [1, 2]}));
    }
}
