//! [`Store`]: one process-wide, thread-safe registry of named components, filled lazily from the
//! link-time registrations (`inventory`) and by explicit `register_*` calls, which win.

use std::collections::HashMap as StdHashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, RwLock};

/// The maps of a store: keyed by short names the program registers (no one else can insert, so
/// no flooding to defend against), hashed with FNV-1a rather than SipHash.
type HashMap<K, V> = StdHashMap<K, V, BuildHasherDefault<Fnv>>;

/// FNV-1a, 64 bits.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A registry of `T`s by key.
pub(crate) struct Store<T: ?Sized + Send + Sync + 'static> {
    /// Collects the link-time registrations: `(key, instance)` pairs.
    collect: fn() -> Vec<(&'static str, Arc<T>)>,
    state: RwLock<State<T>>,
}

struct State<T: ?Sized> {
    /// Link-time registrations, instantiated on first use (`None` until then, and after a clear).
    linked: Option<HashMap<String, Arc<T>>>,
    /// Explicit registrations; they override link-time ones with the same key.
    explicit: HashMap<String, Arc<T>>,
}

impl<T: ?Sized + Send + Sync + 'static> Store<T> {
    pub(crate) fn new(collect: fn() -> Vec<(&'static str, Arc<T>)>) -> Self {
        Store { collect, state: RwLock::new(State { linked: None, explicit: HashMap::default() }) }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State<T>> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State<T>> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn linked_map(collect: fn() -> Vec<(&'static str, Arc<T>)>) -> HashMap<String, Arc<T>> {
        collect().into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    /// The component registered under `key`.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<T>> {
        {
            let state = self.read();
            if let Some(v) = state.explicit.get(key) {
                return Some(Arc::clone(v));
            }
            if let Some(linked) = &state.linked {
                return linked.get(key).cloned();
            }
        }
        // Build the link-time components without holding the lock (a constructor may look up other
        // components), then publish them and answer under one write lock, so a concurrent `clear`
        // cannot slip in between.
        let linked = Self::linked_map(self.collect);
        let mut state = self.write();
        if let Some(v) = state.explicit.get(key) {
            return Some(Arc::clone(v));
        }
        state.linked.get_or_insert(linked).get(key).cloned()
    }

    /// Registers `value` under `key`, replacing an earlier explicit registration.
    pub(crate) fn register(&self, key: String, value: Arc<T>) {
        self.write().explicit.insert(key, value);
    }

    /// Forgets explicit registrations and instantiated link-time ones (they come back on next use).
    pub(crate) fn clear(&self) {
        let mut state = self.write();
        state.explicit.clear();
        state.linked = None;
    }

    /// Removes only the explicit registrations.
    pub(crate) fn clear_explicit(&self) {
        self.write().explicit.clear();
    }

    /// Every registered key, sorted.
    pub(crate) fn keys(&self) -> Vec<String> {
        let fresh = if self.read().linked.is_none() { Some(Self::linked_map(self.collect)) } else { None };
        let mut state = self.write();
        if let (None, Some(fresh)) = (&state.linked, fresh) {
            state.linked = Some(fresh);
        }
        let mut keys: Vec<String> = state.explicit.keys().cloned().collect();
        keys.extend(state.linked.iter().flat_map(|l| l.keys().cloned()));
        keys.sort();
        keys.dedup();
        keys
    }

    /// `keys()` joined for an error message.
    pub(crate) fn known(&self) -> String {
        let keys = self.keys();
        if keys.is_empty() {
            "none".to_owned()
        } else {
            keys.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linked() -> Vec<(&'static str, Arc<str>)> {
        vec![("a", Arc::from("linked a")), ("b", Arc::from("linked b"))]
    }

    #[test]
    fn explicit_overrides_linked_and_clear_restores() {
        let store: Store<str> = Store::new(linked);
        assert_eq!(store.get("a").as_deref(), Some("linked a"));
        store.register("a".into(), Arc::from("explicit a"));
        assert_eq!(store.get("a").as_deref(), Some("explicit a"));
        assert_eq!(store.keys(), vec!["a", "b"]);
        store.clear();
        assert_eq!(store.get("a").as_deref(), Some("linked a"));
        assert!(store.get("zzz").is_none());
        assert_eq!(store.known(), "a, b");
    }
}
