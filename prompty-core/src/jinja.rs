//! The Jinja environment of the Prompty template subset, shared by the runtime renderer and the
//! compile-time template checks so they parse every template the same way: literal text verbatim
//! (trailing newline kept, no `trim_blocks`/`lstrip_blocks`), no HTML escaping, undefined values
//! and their attributes print as nothing, and no loader (so `include`/`import` cannot reach the file
//! system). The runtime adds its output formatter and filters on top.
//!
//! # Render budget
//!
//! A template and its inputs are untrusted, so every render is bounded by the process-wide
//! [`RenderLimits`] (read with [`render_limits`], changed with [`set_render_limits`]):
//!
//! | Bound | Default |
//! | --- | --- |
//! | [`RenderLimits::fuel`]: template instructions one render may run (minijinja's fuel; for mustache, tags and sections visited) | [`RenderLimits::DEFAULT_FUEL`] (10 000 000) |
//! | [`RenderLimits::max_output_bytes`]: bytes of rendered text | [`RenderLimits::DEFAULT_MAX_OUTPUT_BYTES`] (16 MiB) |
//!
//! A render past either bound ends with a template error naming the prompt file.
//!
//! ```
//! let before = prompty_core::jinja::render_limits();
//! prompty_core::jinja::set_render_limits(prompty_core::jinja::RenderLimits { fuel: 50_000_000, ..before });
//! assert_eq!(prompty_core::jinja::environment().fuel(), Some(50_000_000));
//! prompty_core::jinja::set_render_limits(before);
//! ```

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use std::sync::atomic::{AtomicU64, Ordering};

/// The bounds of one template render. See the [module documentation](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// How many template instructions one render may run (default [`Self::DEFAULT_FUEL`]).
    pub fuel: u64,
    /// How many bytes one render may produce (default [`Self::DEFAULT_MAX_OUTPUT_BYTES`]).
    pub max_output_bytes: u64,
}

impl RenderLimits {
    /// The default render budget: 10 000 000 instructions (well under a second of rendering in a
    /// release build; a template looping over 10 000 items runs a few hundred thousand).
    pub const DEFAULT_FUEL: u64 = 10_000_000;
    /// The default largest rendered prompt: 16 MiB.
    pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 16 << 20;
}

impl Default for RenderLimits {
    fn default() -> Self {
        RenderLimits { fuel: Self::DEFAULT_FUEL, max_output_bytes: Self::DEFAULT_MAX_OUTPUT_BYTES }
    }
}

static FUEL: AtomicU64 = AtomicU64::new(RenderLimits::DEFAULT_FUEL);
static MAX_OUTPUT: AtomicU64 = AtomicU64::new(RenderLimits::DEFAULT_MAX_OUTPUT_BYTES);

/// The render bounds in force for this process.
pub fn render_limits() -> RenderLimits {
    RenderLimits { fuel: FUEL.load(Ordering::Relaxed), max_output_bytes: MAX_OUTPUT.load(Ordering::Relaxed) }
}

/// Changes the render bounds of this process (for every render that starts afterwards).
pub fn set_render_limits(limits: RenderLimits) {
    FUEL.store(limits.fuel, Ordering::Relaxed);
    MAX_OUTPUT.store(limits.max_output_bytes, Ordering::Relaxed);
}

/// A fresh environment configured for the Prompty Jinja subset, with the fuel of [`render_limits`].
///
/// ```
/// let env = prompty_core::jinja::environment();
/// let t = env.template_from_str("Hello {{ name }}!\n").unwrap();
/// assert_eq!(t.render(minijinja::context! { name => "<b>World</b>" }).unwrap(), "Hello <b>World</b>!\n");
/// assert_eq!(env.template_from_str("{{ missing.attr }}").unwrap().render(()).unwrap(), "");
/// ```
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .trim_blocks(false)
        .lstrip_blocks(false)
        .build();
    if let Ok(syntax) = syntax {
        env.set_syntax(syntax);
    }
    env.set_undefined_behavior(UndefinedBehavior::Chainable);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(render_limits().fuel));
    env
}
