//! Where a prompt's template comes from, for the locations of template errors.

use crate::Agent;

/// The file that holds the agent's template and the line its body starts at, for error messages.
pub(crate) fn body_origin(agent: &Agent) -> (String, usize) {
    match &agent.source {
        Some(s) => (s.path.clone(), s.body_line),
        None => (format!("<agent {}>", agent.name), 1),
    }
}
