//! Renderers: turning an agent's template and inputs into text.

mod jinja;
mod mustache;

use crate::mark::Marks;
use crate::{rich, Agent, Error, Result};
use serde_json::{Map, Value};

/// How interpolated text is written: marked for the parser, or as is.
#[derive(Clone, Copy)]
pub(crate) struct Emit(Option<Marks>);

impl Emit {
    fn write(&self, out: &mut String, text: &str) {
        match &self.0 {
            Some(m) => m.wrap(out, text),
            None => out.push_str(text),
        }
    }
}

/// The renderers this build knows.
pub(crate) const RENDERERS: &[&str] = &["jinja2", "mustache"];

/// The file that holds the agent's template and the line its body starts at, for error messages.
pub(crate) fn body_origin(agent: &Agent) -> (String, usize) {
    match &agent.source {
        Some(s) => (s.path.clone(), s.body_line),
        None => (format!("<agent {}>", agent.name), 1),
    }
}

/// Renders the template with already validated inputs (rich inputs replaced by nonces). With
/// `marks`, every interpolated value is marked so the parser can tell it from template text.
pub(crate) fn render_validated(
    agent: &Agent,
    inputs: &Map<String, Value>,
    marks: Option<Marks>,
) -> Result<String> {
    rich::check_strict(agent, inputs)?;
    let source = agent.instructions.as_deref().unwrap_or("");
    let emit = marks.map(|m| Emit(Some(m)));
    match agent.template.format.kind.as_str() {
        "jinja2" | "jinja" => jinja::render(agent, source, inputs, emit),
        "mustache" => {
            let emit = emit.unwrap_or(Emit(None));
            mustache::render(source, &Value::Object(inputs.clone()), &mut |out, text| {
                emit.write(out, text)
            })
            .map_err(|e| {
                let (file, first_line) = body_origin(agent);
                Error::Template {
                    at: crate::Location::file(file).at(first_line + e.line - 1, e.column),
                    message: e.message,
                }
            })
        }
        other => Err(Error::UnknownComponent {
            component: "renderer",
            key: other.to_owned(),
            known: RENDERERS.join(", "),
        }),
    }
}
