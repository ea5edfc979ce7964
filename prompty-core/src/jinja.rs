//! The Jinja environment of the Prompty template subset, shared by the runtime renderer and the
//! compile-time template checks so they parse every template the same way: literal text verbatim
//! (trailing newline kept, no `trim_blocks`/`lstrip_blocks`), no HTML escaping, undefined values
//! and their attributes print as nothing, and no loader (so `include`/`import` cannot reach the file
//! system). The runtime adds its output formatter and filters on top.

use minijinja::{AutoEscape, Environment, UndefinedBehavior};

/// A fresh environment configured for the Prompty Jinja subset.
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
    env
}
