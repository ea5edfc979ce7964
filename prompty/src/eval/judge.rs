//! The assertions that ask a model: `judge` (a `.prompty` file scores the answer) and `similar`
//! (cosine similarity of embeddings). Their model calls go through the response cache like the
//! prompt's own, so a replayed run sends no request for them either.

use super::assertions::{shown, text_of, Outcome};
use super::{Case, JUDGE_INPUTS};
use crate::{Agent, Message, Role};
use serde_json::{Map, Value};

/// What a judge receives, before it is cut down to the inputs the judge declares.
pub(crate) struct JudgeInputs<'a> {
    pub(crate) output: &'a Value,
    pub(crate) messages: &'a [Message],
    pub(crate) case: &'a Case,
    pub(crate) vars: &'a Map<String, Value>,
    pub(crate) criteria: Option<&'a str>,
}

/// The inputs given to a judge: of [`JUDGE_INPUTS`], the ones it declares.
pub(crate) fn judge_inputs(judge: &Agent, given: &JudgeInputs<'_>) -> Map<String, Value> {
    let declared: Vec<&str> = judge.inputs.iter().flatten().map(|p| p.name.as_str()).collect();
    let input = given.messages.iter().rev().find(|m| m.role == Role::User).map(Message::text).unwrap_or_default();
    let mut inputs = Map::new();
    for name in JUDGE_INPUTS {
        if !declared.contains(&name) {
            continue;
        }
        let value = match name {
            "output" => Value::String(text_of(given.output)),
            "input" => Value::String(input.clone()),
            "expected" => Value::String(given.case.expected.as_ref().map(text_of).unwrap_or_default()),
            "criteria" => Value::String(given.criteria.unwrap_or_default().to_owned()),
            _ => Value::Object(given.vars.clone()),
        };
        inputs.insert(name.to_owned(), value);
    }
    inputs
}

/// Runs a judge and reads its verdict; a judge that fails or cannot be read fails the assertion,
/// saying why.
pub(crate) async fn judge(judge: &Agent, given: &JudgeInputs<'_>, threshold: f64) -> Outcome {
    let inputs = Value::Object(judge_inputs(judge, given));
    let answer = async {
        let messages = crate::prepare_async(judge, &inputs).await?;
        crate::run_async(judge, &messages).await
    }
    .await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => return Outcome::yes_no(false, format!("the judge `{}` failed: {e}", judge.name)),
    };
    match verdict(&answer) {
        Ok((score, reason)) => Outcome {
            pass: score >= threshold,
            score,
            reason: format!("judge score {score:.2} (threshold {threshold}): {reason}"),
        },
        Err(why) => {
            Outcome::yes_no(false, format!("the judge `{}` answered {}: {why}", judge.name, shown(&text_of(&answer))))
        }
    }
}

/// `score` (a number in 0..1, or text that parses as one) and `reason` of a judge's answer: its
/// structured output, or a JSON object in its text (the first `{` to the last `}`).
pub(crate) fn verdict(answer: &Value) -> Result<(f64, String), String> {
    let object = match answer {
        Value::Object(o) => o.clone(),
        Value::String(text) => {
            let from = text.find('{');
            let to = text.rfind('}');
            let json = match (from, to) {
                (Some(a), Some(b)) if a < b => &text[a..=b],
                _ => return Err("expected a JSON object with `score` and `reason`, found no object".into()),
            };
            match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(o)) => o,
                _ => {
                    return Err(
                        "expected a JSON object with `score` and `reason`, found text that does not parse".into()
                    )
                }
            }
        }
        _ => return Err("expected an object with `score` and `reason`".into()),
    };
    let score = match object.get("score") {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    let Some(score) = score else { return Err("expected a numeric `score`, found none".into()) };
    if !(0.0..=1.0).contains(&score) {
        return Err(format!("expected a `score` in 0..1, found {score}"));
    }
    let reason = match object.get("reason") {
        Some(Value::String(r)) => r.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    Ok((score, reason))
}

/// The embedding of a text by an `apiType: embedding` prompt.
async fn embed(embedder: &Agent, text: &str) -> Result<Vec<f64>, String> {
    let answer = crate::run_async(embedder, &[Message::new(Role::User, text)])
        .await
        .map_err(|e| format!("the embedding prompt `{}` failed: {e}", embedder.name))?;
    let list = match &answer {
        Value::Array(list) if list.first().is_some_and(Value::is_array) => {
            list[0].as_array().cloned().unwrap_or_default()
        }
        Value::Array(list) => list.clone(),
        _ => {
            return Err(format!(
                "the embedding prompt `{}` gave no vector: {}",
                embedder.name,
                shown(&answer.to_string())
            ))
        }
    };
    list.iter()
        .map(|v| v.as_f64().ok_or_else(|| format!("the embedding prompt `{}` gave a vector with {v}", embedder.name)))
        .collect()
}

/// Cosine similarity of two vectors of the same length.
pub(crate) fn cosine(a: &[f64], b: &[f64]) -> Result<f64, String> {
    if a.len() != b.len() || a.is_empty() {
        return Err(format!("the embeddings have {} and {} dimensions", a.len(), b.len()));
    }
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        return Err("an embedding is all zeros".into());
    }
    Ok(dot / (na * nb))
}

/// `similar`: the cosine similarity of the answer's and the reference's embeddings, as the score.
pub(crate) async fn similar(embedder: &Agent, output: &Value, reference: Option<&str>, threshold: f64) -> Outcome {
    let Some(reference) = reference else {
        return Outcome::yes_no(false, "nothing to compare with: no `value` and no `expected`".into());
    };
    let text = text_of(output);
    let similarity = async { cosine(&embed(embedder, &text).await?, &embed(embedder, reference).await?) }.await;
    match similarity {
        Ok(s) => Outcome {
            pass: s >= threshold,
            score: s.clamp(0.0, 1.0),
            reason: format!("expected similarity ≥ {threshold} to {}, found {s:.3}", shown(reference)),
        },
        Err(why) => Outcome::yes_no(false, why),
    }
}
