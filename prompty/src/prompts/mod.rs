//! Prompts by id and locale: [`PromptRegistry`].

use crate::locale::{self, Locale};
use crate::Result;
use std::sync::{OnceLock, RwLock};

/// A registry of prompts by id, with locale variants, overrides and appenders.
pub struct PromptRegistry {
    fallback: RwLock<Locale>,
}

impl PromptRegistry {
    /// An empty registry whose fallback locale is `en`.
    pub fn new() -> PromptRegistry {
        PromptRegistry { fallback: RwLock::new(Locale::parse("en").expect("`en` is a locale tag")) }
    }

    /// The process-wide registry.
    pub fn global() -> &'static PromptRegistry {
        static GLOBAL: OnceLock<PromptRegistry> = OnceLock::new();
        GLOBAL.get_or_init(PromptRegistry::new)
    }

    /// The locale tried after the requested one and its language (default `en`).
    pub fn fallback_locale(&self) -> Locale {
        self.fallback.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sets the fallback locale.
    pub fn set_fallback_locale(&self, tag: &str) -> Result<()> {
        let locale = Locale::parse(tag)?;
        *self.fallback.write().unwrap_or_else(|e| e.into_inner()) = locale;
        Ok(())
    }
}

impl Default for PromptRegistry {
    fn default() -> Self {
        PromptRegistry::new()
    }
}

/// The variant of a typed prompt for `requested`, by the registry's lookup order with the
/// fallback locale of [`PromptRegistry::global`]: the index in `variants`, or `None` for the
/// default prompt.
#[doc(hidden)]
pub fn pick_locale(variants: &[&str], requested: &str) -> Result<Option<usize>> {
    let fallback = PromptRegistry::global().fallback.read().unwrap_or_else(|e| e.into_inner());
    locale::resolve(requested, variants, &fallback)
}
