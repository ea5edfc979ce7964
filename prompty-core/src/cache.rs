//! [`RuntimeCache`]: a slot where the runtime keeps the compiled template of an [`crate::Agent`].

use std::any::Any;
use std::sync::{Arc, RwLock};

type Entry = Arc<dyn Any + Send + Sync>;

/// A type-erased, shareable slot for the runtime's compiled form of an agent's template.
///
/// The runtime stores a value that remembers which template text it was compiled from and checks
/// that on every use, so editing an agent's `instructions` after a render is always safe. Clones of
/// an agent share the slot.
///
/// ```
/// let cache = prompty_core::RuntimeCache::default();
/// assert!(cache.get::<String>().is_none());
/// cache.set(std::sync::Arc::new("compiled".to_string()));
/// assert_eq!(cache.get::<String>().unwrap().as_str(), "compiled");
/// ```
#[derive(Clone, Default)]
pub struct RuntimeCache(Arc<RwLock<Option<Entry>>>);

impl RuntimeCache {
    /// The cached value, if one of type `T` is stored.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let guard = self.0.read().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().and_then(|e| Arc::clone(e).downcast::<T>().ok())
    }

    /// Stores a value, replacing what was there.
    pub fn set<T: Any + Send + Sync>(&self, value: Arc<T>) {
        let mut guard = self.0.write().unwrap_or_else(|e| e.into_inner());
        *guard = Some(value);
    }
}

impl std::fmt::Debug for RuntimeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeCache")
    }
}
