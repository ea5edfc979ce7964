//! The built-in renderers, and rendering through the renderer registry.

mod jinja;
mod mustache;

use crate::{get_renderer, rich, Agent, Error, Location, RenderContext, Renderer, Result};
use serde_json::{Map, Value};

/// The file that holds the agent's template and the line its body starts at, for error messages.
pub(crate) fn body_origin(agent: &Agent) -> (String, usize) {
    match &agent.source {
        Some(s) => (s.path.clone(), s.body_line),
        None => (format!("<agent {}>", agent.name), 1),
    }
}

/// Renders the template with already validated inputs (rich inputs replaced by nonces), with the
/// renderer registered for `template.format.kind`.
pub(crate) fn render_validated(agent: &Agent, inputs: &Map<String, Value>, ctx: RenderContext) -> Result<String> {
    rich::check_strict(agent, inputs)?;
    get_renderer(&agent.template.format.kind)?.render(agent, inputs, &ctx)
}

/// Async form of [`render_validated`].
pub(crate) async fn render_validated_async(
    agent: &Agent,
    inputs: &Map<String, Value>,
    ctx: RenderContext,
) -> Result<String> {
    rich::check_strict(agent, inputs)?;
    get_renderer(&agent.template.format.kind)?.render_async(agent, inputs, &ctx).await
}

/// The `jinja2` renderer (also registered as `jinja`): minijinja configured for the Prompty Jinja
/// subset.
///
/// ```
/// use prompty::{builtins::Jinja2Renderer, RenderContext, Renderer};
/// let agent = prompty::load_str("Hi {{ who }}", ".", "<string>")?;
/// let inputs = serde_json::json!({"who": "Ann"});
/// let out = Jinja2Renderer.render(&agent, inputs.as_object().unwrap(), &RenderContext::plain())?;
/// assert_eq!(out, "Hi Ann");
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
#[prompty::renderer("jinja2", "jinja")]
pub struct Jinja2Renderer;

impl Renderer for Jinja2Renderer {
    fn render(&self, agent: &Agent, inputs: &Map<String, Value>, ctx: &RenderContext) -> Result<String> {
        jinja::render(agent, agent.instructions.as_deref().unwrap_or(""), inputs, *ctx)
    }
}

/// The `mustache` renderer: logic-less templates, no HTML escaping, no partials.
///
/// ```
/// use prompty::{builtins::MustacheRenderer, RenderContext, Renderer};
/// let agent = prompty::load_str("{{#items}}{{.}} {{/items}}", ".", "<string>")?;
/// let inputs = serde_json::json!({"items": ["a", "b"]});
/// assert_eq!(MustacheRenderer.render(&agent, inputs.as_object().unwrap(), &RenderContext::plain())?, "a b ");
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
#[prompty::renderer("mustache")]
pub struct MustacheRenderer;

impl Renderer for MustacheRenderer {
    fn render(&self, agent: &Agent, inputs: &Map<String, Value>, ctx: &RenderContext) -> Result<String> {
        let source = agent.instructions.as_deref().unwrap_or("");
        let data = Value::Object(inputs.clone());
        mustache::render(source, &data, &mut |out, text| ctx.write_value(out, text)).map_err(|e| {
            let (file, first_line) = body_origin(agent);
            Error::Template { at: Location::file(file).at(first_line + e.line - 1, e.column), message: e.message }
        })
    }
}
