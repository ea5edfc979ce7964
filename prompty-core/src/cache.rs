//! [`RuntimeCache`]: where the runtime keeps what it derives from an [`crate::Agent`] (its compiled
//! template, the resolved address of its model), one value per type.

use std::any::Any;
use std::sync::{Arc, RwLock};

type Entry = Arc<dyn Any + Send + Sync>;

/// Type-erased, shareable slots for what the runtime derives from an agent: one value per type.
///
/// The runtime stores values that remember what they were derived from (the template text, the
/// endpoint and key) and checks that on every use, so editing an agent after a call is always
/// safe. Clones of an agent share the slots.
///
/// ```
/// let cache = prompty_core::RuntimeCache::default();
/// assert!(cache.get::<String>().is_none());
/// cache.set(std::sync::Arc::new("compiled".to_string()));
/// cache.set(std::sync::Arc::new(42u32));
/// assert_eq!(cache.get::<String>().unwrap().as_str(), "compiled");
/// assert_eq!(*cache.get::<u32>().unwrap(), 42);
/// ```
#[derive(Clone, Default)]
pub struct RuntimeCache(Arc<RwLock<Vec<Entry>>>);

impl RuntimeCache {
    /// The cached value of type `T`, if one is stored.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let guard = self.0.read().unwrap_or_else(|e| e.into_inner());
        guard.iter().find_map(|e| Arc::clone(e).downcast::<T>().ok())
    }

    /// Stores a value, replacing the one of the same type.
    pub fn set<T: Any + Send + Sync>(&self, value: Arc<T>) {
        let mut guard = self.0.write().unwrap_or_else(|e| e.into_inner());
        match guard.iter_mut().find(|e| (**e).type_id() == std::any::TypeId::of::<T>()) {
            Some(slot) => *slot = value,
            None => guard.push(value),
        }
    }
}

impl std::fmt::Debug for RuntimeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeCache")
    }
}
