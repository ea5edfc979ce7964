//! The assertions that need no model: each gives whether it holds, a score in 0..1 and a reason
//! saying what was expected and what was found. `similar` and `judge` are in `judge.rs`.

use super::{Assertion, AssertionResult, Case, Check, Match, TokenUsage};
use crate::{Agent, Message};
use serde_json::{Map, Value};

/// What a cell produced, as the assertions see it.
pub(crate) struct Answer<'a> {
    pub(crate) output: &'a Value,
    pub(crate) messages: &'a [Message],
    pub(crate) latency_ms: u64,
    pub(crate) usage: TokenUsage,
    pub(crate) agent: &'a Agent,
}

/// A check's own outcome, before `not`.
pub(crate) struct Outcome {
    pub(crate) pass: bool,
    pub(crate) score: f64,
    pub(crate) reason: String,
}

impl Outcome {
    pub(crate) fn yes_no(pass: bool, reason: String) -> Outcome {
        Outcome { pass, score: if pass { 1.0 } else { 0.0 }, reason }
    }
}

/// The answer as text: a string as it is, anything else as compact JSON.
pub(crate) fn text_of(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A value shortened for a reason (at most 200 characters).
pub(crate) fn shown(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{:?}…", &text[..i]),
        None => format!("{text:?}"),
    }
}

/// The result of an assertion from its check's outcome: `not` applied, weight and label copied.
pub(crate) fn result(assertion: &Assertion, outcome: Outcome) -> AssertionResult {
    let (pass, score, reason) = if assertion.negate {
        (!outcome.pass, 1.0 - outcome.score, format!("not: {}", outcome.reason))
    } else {
        (outcome.pass, outcome.score, outcome.reason)
    };
    AssertionResult {
        kind: assertion.kind().to_owned(),
        label: assertion.label.clone(),
        pass,
        score: score.clamp(0.0, 1.0),
        weight: assertion.weight,
        reason,
    }
}

/// Evaluates a check that needs no model; `None` for `similar` and `judge`.
pub(crate) fn evaluate(check: &Check, case: &Case, answer: &Answer<'_>) -> Option<Outcome> {
    let text = text_of(answer.output);
    Some(match check {
        Check::Equals { value, ignore_case } => {
            let Some(expected) = value.as_ref().or(case.expected.as_ref()) else {
                return Some(Outcome::yes_no(false, "nothing to compare with: no `value` and no `expected`".into()));
            };
            equals(expected, answer.output, *ignore_case)
        }
        Check::Contains { values, ignore_case, mode } => {
            let values: Vec<String> = if values.is_empty() {
                match &case.expected {
                    Some(expected) => vec![text_of(expected)],
                    None => {
                        return Some(Outcome::yes_no(false, "nothing to look for: no `value` and no `expected`".into()))
                    }
                }
            } else {
                values.clone()
            };
            contains(&text, &values, *ignore_case, *mode)
        }
        Check::Regex { pattern } => match regex::Regex::new(pattern) {
            Ok(re) => {
                let pass = re.is_match(&text);
                Outcome::yes_no(pass, format!("expected text matching /{pattern}/, found {}", shown(&text)))
            }
            Err(e) => Outcome::yes_no(false, format!("the pattern /{pattern}/ does not compile: {e}")),
        },
        Check::IsJson { schema } => is_json(answer.output, schema.as_ref()),
        Check::OutputType => output_type(answer.agent, answer.output),
        Check::ToolCalled { name, arguments, times } => tool_called(answer.messages, name, arguments.as_ref(), *times),
        Check::Latency { max_ms } => Outcome::yes_no(
            answer.latency_ms <= *max_ms,
            format!("expected at most {max_ms} ms, took {} ms", answer.latency_ms),
        ),
        Check::Tokens { max, max_input, max_output } => tokens(answer.usage, *max, *max_input, *max_output),
        Check::Cost { max_usd, input_per_million, output_per_million } => {
            let cost = answer.usage.input as f64 * input_per_million / 1e6
                + answer.usage.output as f64 * output_per_million / 1e6;
            Outcome::yes_no(
                cost <= *max_usd,
                format!(
                    "expected at most ${max_usd}, cost ${cost:.6} ({} input and {} output tokens)",
                    answer.usage.input, answer.usage.output
                ),
            )
        }
        _ => return None,
    })
}

fn equals(expected: &Value, output: &Value, ignore_case: bool) -> Outcome {
    let pass = match (expected, output) {
        (Value::String(e), Value::String(o)) => {
            if ignore_case {
                e.trim().to_lowercase() == o.trim().to_lowercase()
            } else {
                e.trim() == o.trim()
            }
        }
        // A JSON value against text: the text parsed as JSON.
        (e, Value::String(o)) => serde_json::from_str::<Value>(o.trim()).is_ok_and(|o| &o == e),
        (Value::String(e), o) => serde_json::from_str::<Value>(e.trim()).is_ok_and(|e| &e == o),
        (e, o) => e == o,
    };
    Outcome::yes_no(pass, format!("expected {}, found {}", shown(&text_of(expected)), shown(&text_of(output))))
}

fn contains(text: &str, values: &[String], ignore_case: bool, mode: Match) -> Outcome {
    let haystack = if ignore_case { text.to_lowercase() } else { text.to_owned() };
    let found: Vec<bool> = values
        .iter()
        .map(|v| if ignore_case { haystack.contains(&v.to_lowercase()) } else { haystack.contains(v.as_str()) })
        .collect();
    let pass = match mode {
        Match::All => found.iter().all(|f| *f),
        Match::Any => found.iter().any(|f| *f),
    };
    let missing: Vec<&str> = values.iter().zip(&found).filter(|(_, f)| !**f).map(|(v, _)| v.as_str()).collect();
    let wanted = match mode {
        Match::All => "all of",
        Match::Any => "any of",
    };
    let case_note = if ignore_case { " (ignoring case)" } else { "" };
    Outcome::yes_no(pass, format!("expected {wanted} {values:?}{case_note}; missing {missing:?} in {}", shown(text)))
}

fn parsed(output: &Value) -> Result<Value, String> {
    match output {
        Value::String(s) => {
            let trimmed = s.trim();
            serde_json::from_str::<Value>(trimmed).map_err(|e| format!("expected JSON, found {} ({e})", shown(s)))
        }
        other => Ok(other.clone()),
    }
}

fn is_json(output: &Value, schema: Option<&Value>) -> Outcome {
    let value = match parsed(output) {
        Ok(v) => v,
        Err(reason) => return Outcome::yes_no(false, reason),
    };
    match schema {
        None => Outcome::yes_no(true, "expected JSON, found JSON".into()),
        Some(schema) => match super::json_schema::validate(&value, schema) {
            Ok(()) => Outcome::yes_no(true, "expected JSON fitting the schema, found it".into()),
            Err(why) => Outcome::yes_no(false, format!("expected JSON fitting the schema: {why}")),
        },
    }
}

fn output_type(agent: &Agent, output: &Value) -> Outcome {
    let Some(outputs) = agent.outputs.as_deref().filter(|o| !o.is_empty()) else {
        return Outcome::yes_no(
            false,
            format!("the prompt `{}` declares no `outputs` to parse the answer as", agent.name),
        );
    };
    let schema = match crate::properties_schema(outputs, false) {
        Ok(schema) => schema,
        Err(e) => return Outcome::yes_no(false, format!("the prompt's `outputs` have no schema: {e}")),
    };
    let value = match parsed(output) {
        Ok(v) => v,
        Err(reason) => return Outcome::yes_no(false, format!("{reason}; the prompt declares `outputs`")),
    };
    match super::json_schema::validate(&value, &schema) {
        Ok(()) => Outcome::yes_no(true, "expected the declared outputs, found them".into()),
        Err(why) => Outcome::yes_no(false, format!("expected the declared outputs: {why}")),
    }
}

/// Whether `actual` includes every key of `wanted` with an equal value (objects compared the
/// same way, recursively).
fn includes(actual: &Value, wanted: &Value) -> bool {
    match (actual, wanted) {
        (Value::Object(a), Value::Object(w)) => w.iter().all(|(k, v)| a.get(k).is_some_and(|av| includes(av, v))),
        (a, w) => a == w,
    }
}

fn tool_called(
    messages: &[Message],
    name: &str,
    arguments: Option<&Map<String, Value>>,
    times: Option<u32>,
) -> Outcome {
    let calls: Vec<&crate::ToolCall> = messages.iter().flat_map(|m| m.tool_calls.iter()).collect();
    let named: Vec<&&crate::ToolCall> = calls.iter().filter(|c| c.name == name).collect();
    let matching = named
        .iter()
        .filter(|c| match arguments {
            None => true,
            Some(wanted) => serde_json::from_str::<Value>(&c.arguments)
                .is_ok_and(|args| includes(&args, &Value::Object(wanted.clone()))),
        })
        .count() as u32;
    let pass = match times {
        Some(n) => matching == n,
        None => matching >= 1,
    };
    let wanted = match (arguments, times) {
        (Some(a), Some(n)) => {
            format!("`{name}` called {n} time(s) with arguments including {}", Value::Object(a.clone()))
        }
        (Some(a), None) => format!("`{name}` called with arguments including {}", Value::Object(a.clone())),
        (None, Some(n)) => format!("`{name}` called {n} time(s)"),
        (None, None) => format!("`{name}` called"),
    };
    let seen: Vec<String> = calls.iter().map(|c| format!("{}({})", c.name, c.arguments)).collect();
    let found = if seen.is_empty() { "no tool calls".to_owned() } else { seen.join(", ") };
    Outcome::yes_no(pass, format!("expected {wanted}; {matching} matching, found {found}"))
}

fn tokens(usage: TokenUsage, max: Option<u64>, max_input: Option<u64>, max_output: Option<u64>) -> Outcome {
    let total = usage.input + usage.output;
    let mut over = Vec::new();
    if let Some(m) = max.filter(|m| total > *m) {
        over.push(format!("{total} in all > {m}"));
    }
    if let Some(m) = max_input.filter(|m| usage.input > *m) {
        over.push(format!("{} input > {m}", usage.input));
    }
    if let Some(m) = max_output.filter(|m| usage.output > *m) {
        over.push(format!("{} output > {m}", usage.output));
    }
    let limits: Vec<String> = [("in all", max), ("input", max_input), ("output", max_output)]
        .iter()
        .filter_map(|(what, m)| m.map(|m| format!("{what} ≤ {m}")))
        .collect();
    let reason = if over.is_empty() {
        format!("expected tokens {}, used {} input and {} output", limits.join(", "), usage.input, usage.output)
    } else {
        format!("expected tokens {}, used {}", limits.join(", "), over.join(", "))
    };
    Outcome::yes_no(over.is_empty(), reason)
}
