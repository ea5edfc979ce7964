//! The runner: columns (prompt × model), cells under bounded, rate-limit-aware concurrency, the
//! assertions of each cell, the report.

use super::assertions::{self, Answer, Outcome};
use super::cache::{self, Cache, CallContext, Calls};
use super::judge::{self, JudgeInputs};
use super::{
    check, Assertion, AssertionResult, Case, CaseRow, Cell, Check, Column, EvalError, EvalFile, EvalOptions,
    EvalReport, Progress, Status, Summary, TokenUsage, REPORT_VERSION,
};
use crate::analysis::{Diagnostic, Severity};
use crate::{Agent, Error, Message, Role, TurnOptions};
use futures_util::StreamExt;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Cells run at once when neither the options nor the eval file say.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// The most cells run at once, whatever is asked.
pub const MAX_CONCURRENCY: usize = 1024;
/// How many times a rate-limited cell is run again (after the HTTP layer's own retries) before it
/// is reported as an error.
pub const RATE_LIMIT_RETRIES: u32 = 3;
/// The first wait before a rate-limited cell runs again; it doubles with each retry, up to
/// [`MAX_RATE_LIMIT_WAIT`].
pub const RATE_LIMIT_WAIT: Duration = Duration::from_secs(1);
/// The longest wait before a rate-limited cell runs again.
pub const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(30);

/// The cases of an eval file: inline cases and every dataset's rows.
fn cases_of(eval: &EvalFile) -> Result<Vec<Case>, Vec<Diagnostic>> {
    eval.cases()
}

/// A column, ready to run: its prompt with the model variant applied, pointed at the cache.
struct ColumnRun {
    column: Column,
    agent: Agent,
}

/// What a run shares between its cells.
struct Shared<'a> {
    eval: &'a EvalFile,
    cache: Arc<Cache>,
    /// Judge and embedding prompts by their path as written.
    helpers: BTreeMap<String, Agent>,
    limiter: Limiter,
    totals: Mutex<(u64, u64)>,
}

/// Bounds the cells in flight; the bound halves when the provider rate-limits and grows back by
/// one with each cell that was not.
struct Limiter {
    max: usize,
    state: Mutex<(usize, usize)>,
    notify: tokio::sync::Notify,
}

struct Permit<'a>(&'a Limiter);

impl Limiter {
    fn new(max: usize) -> Limiter {
        Limiter { max, state: Mutex::new((0, max)), notify: tokio::sync::Notify::new() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, (usize, usize)> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn acquire(&self) -> Permit<'_> {
        loop {
            let notified = self.notify.notified();
            {
                let mut state = self.state();
                if state.0 < state.1 {
                    state.0 += 1;
                    return Permit(self);
                }
            }
            notified.await;
        }
    }

    fn pushed_back(&self) {
        let mut state = self.state();
        state.1 = (state.1 / 2).max(1);
    }

    fn went_through(&self) {
        let mut state = self.state();
        if state.1 < self.max {
            state.1 += 1;
            self.notify.notify_waiters();
        }
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.state().0 -= 1;
        self.0.notify.notify_waiters();
    }
}

/// Runs every selected case of every column and returns the report; see the [module](super)
/// documentation. The file is checked first ([`check`]): any error is [`EvalError::Invalid`]
/// before a request is sent. A case whose prompt fails is a cell with [`Status::Error`]; the run
/// goes on. A run stops with [`EvalError::Run`] only when the response cache cannot be read or
/// written, or in [`CacheMode::Replay`](super::CacheMode::Replay) a request has no recorded response.
///
/// Rate limits: when a cell's model call still answers HTTP 429 after the HTTP layer's own retries
/// (which honour `Retry-After`), the runner halves the cells in flight and runs the cell again
/// after 1 s, 2 s, 4 s, ... (at most [`MAX_RATE_LIMIT_WAIT`]), at most [`RATE_LIMIT_RETRIES`]
/// times; each cell that goes through lets one more run at once, up to the concurrency.
///
/// ```no_run
/// # async fn f() -> Result<(), prompty::eval::EvalError> {
/// let eval = prompty::eval::load("prompts/chat.eval.yaml".as_ref())?;
/// let mut options = prompty::eval::EvalOptions::default();
/// options.concurrency = Some(16);
/// let report = prompty::eval::run(&eval, &options).await?;
/// println!("{} passed, {} failed", report.summary.passed, report.summary.failed);
/// # Ok(()) }
/// ```
pub async fn run(eval: &EvalFile, options: &EvalOptions) -> Result<EvalReport, EvalError> {
    let started_at = SystemTime::now();
    let clock = Instant::now();
    let errors: Vec<Diagnostic> = check(eval).into_iter().filter(|d| d.severity == Severity::Error).collect();
    if !errors.is_empty() {
        return Err(EvalError::Invalid(errors));
    }
    let cases: Vec<Case> = cases_of(eval)
        .map_err(EvalError::Invalid)?
        .into_iter()
        .filter(|c| options.tags.is_empty() || c.tags.iter().any(|t| options.tags.contains(t)))
        .filter(|c| options.cases.is_empty() || options.cases.contains(&c.name))
        .collect();
    let columns = columns(eval).await?;
    let helpers = helpers(eval, &cases).await?;
    let dir = options.cache_dir.clone().unwrap_or_else(|| eval.dir.join(".prompty-cache"));
    let concurrency = options.concurrency.or(eval.concurrency).unwrap_or(DEFAULT_CONCURRENCY).clamp(1, MAX_CONCURRENCY);
    let shared = Shared {
        eval,
        cache: Arc::new(Cache { mode: options.cache, dir }),
        helpers,
        limiter: Limiter::new(concurrency),
        totals: Mutex::new((0, 0)),
    };
    let total = cases.len() * columns.len();
    let mut jobs = Vec::with_capacity(total);
    for (i, case) in cases.iter().enumerate() {
        for (j, column) in columns.iter().enumerate() {
            let shared = &shared;
            jobs.push(async move { (i, j, run_cell(shared, case, column).await) });
        }
    }
    let mut cells = futures_util::stream::iter(jobs).buffer_unordered(concurrency);
    let mut grid: Vec<Vec<Option<Cell>>> = vec![vec![None; columns.len()]; cases.len()];
    let mut done = 0;
    while let Some((i, j, cell)) = cells.next().await {
        let cell = cell?;
        done += 1;
        if let Some(progress) = &options.progress {
            progress(&Progress {
                done,
                total,
                case: cases[i].name.clone(),
                column: columns[j].column.id.clone(),
                status: cell.status,
            });
        }
        grid[i][j] = Some(cell);
    }
    drop(cells);
    let rows: Vec<CaseRow> = cases
        .iter()
        .zip(grid)
        .map(|(case, cells)| CaseRow {
            name: case.name.clone(),
            at: location_text(&case.at),
            tags: case.tags.clone(),
            vars: vars_of(eval, case, None),
            expected: case.expected.clone(),
            cells: cells.into_iter().flatten().collect(),
        })
        .collect();
    let (hits, misses) = *shared.totals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let columns: Vec<Column> = columns.into_iter().map(|c| c.column).collect();
    let summary = summary(&columns, &rows, hits, misses);
    Ok(EvalReport {
        version: REPORT_VERSION,
        file: eval.name.clone(),
        description: eval.description.clone(),
        started_at: crate::trace::time::rfc3339(started_at),
        duration_ms: clock.elapsed().as_millis() as u64,
        columns,
        cases: rows,
        summary,
        baseline: None,
    }
    .scrubbed())
}

/// [`run`] from sync code (on prompty's shared runtime).
///
/// ```no_run
/// let eval = prompty::eval::load("prompts/chat.eval.yaml".as_ref())?;
/// let report = prompty::eval::run_blocking(&eval, &Default::default())?;
/// assert!(report.passed());
/// # Ok::<(), prompty::eval::EvalError>(())
/// ```
pub fn run_blocking(eval: &EvalFile, options: &EvalOptions) -> Result<EvalReport, EvalError> {
    crate::blocking::block_on(run(eval, options))?
}

fn location_text(at: &crate::Location) -> String {
    match at.line {
        Some(line) => format!("{}:{line}", at.file),
        None => at.file.clone(),
    }
}

/// A case's inputs: the file's `vars`, then the case's; a CSV row's text turned into the kinds
/// `inputs` declare (as the check reads them).
fn vars_of(eval: &EvalFile, case: &Case, inputs: Option<&[crate::Property]>) -> Map<String, Value> {
    let mut vars = eval.vars.clone();
    vars.extend(case.vars.clone());
    if let (true, Some(inputs)) = (case.from_csv, inputs) {
        prompty_core::eval::coerce_vars(&mut vars, inputs);
    }
    vars
}

/// Every prompt under test with every model variant, loaded and pointed at the cache.
async fn columns(eval: &EvalFile) -> Result<Vec<ColumnRun>, EvalError> {
    let mut columns = Vec::new();
    let mut errors = Vec::new();
    for prompt in &eval.prompts {
        let path = eval.resolve(&prompt.path);
        let agent = match crate::load_async(&path).await {
            Ok(agent) => agent,
            Err(e) => {
                errors.push(
                    Diagnostic::error(prompt.at.clone(), format!("cannot load `{}`: {e}", prompt.path))
                        .with_code("eval-run"),
                );
                continue;
            }
        };
        let variants: Vec<Option<&super::ModelVariant>> =
            if eval.models.is_empty() { vec![None] } else { eval.models.iter().map(Some).collect() };
        for variant in variants {
            let mut agent = agent.clone();
            let id = match variant {
                Some(v) => {
                    if let Err(e) = apply_variant(&mut agent, v) {
                        errors.push(Diagnostic::error(v.at.clone(), e).with_code("eval-run"));
                        continue;
                    }
                    format!("{}/{}", prompt.label, v.label)
                }
                None => prompt.label.clone(),
            };
            // A provider that is not registered is each cell's error, not the run's.
            let _ = cache::wrap(&mut agent);
            columns.push(ColumnRun {
                column: Column { id, prompt: prompt.label.clone(), model: variant.map(|v| v.label.clone()) },
                agent,
            });
        }
    }
    if errors.is_empty() {
        Ok(columns)
    } else {
        Err(EvalError::Invalid(errors))
    }
}

/// A model variant on a clone of the prompt: `model.id`, `model.provider`, `model.options` entries.
fn apply_variant(agent: &mut Agent, variant: &super::ModelVariant) -> Result<(), String> {
    let model = agent.model.get_or_insert_with(Default::default);
    if let Some(id) = &variant.id {
        model.id = id.clone();
    }
    if let Some(provider) = &variant.provider {
        model.provider = Some(provider.clone());
    }
    if !variant.options.is_empty() {
        let mut options = match &model.options {
            Some(o) => serde_json::to_value(o).map_err(|e| e.to_string())?,
            None => Value::Object(Map::new()),
        };
        if let Value::Object(map) = &mut options {
            map.extend(variant.options.clone());
        }
        model.options = Some(
            serde_json::from_value(options)
                .map_err(|e| format!("the options of model `{}` do not fit `model.options`: {e}", variant.label))?,
        );
    }
    Ok(())
}

/// Every assertion of a case: the file's, then the case's own.
fn assertions_of<'a>(eval: &'a EvalFile, case: &'a Case) -> impl Iterator<Item = &'a Assertion> {
    eval.assert.iter().chain(case.assert.iter())
}

/// The judge and embedding prompts the selected cases use, loaded and pointed at the cache.
async fn helpers(eval: &EvalFile, cases: &[Case]) -> Result<BTreeMap<String, Agent>, EvalError> {
    let mut helpers = BTreeMap::new();
    let mut errors = Vec::new();
    for case in cases {
        for assertion in assertions_of(eval, case) {
            let path = match &assertion.check {
                Check::Judge { prompt, .. } => prompt,
                Check::Similar { embedding, .. } => embedding,
                _ => continue,
            };
            if helpers.contains_key(path) {
                continue;
            }
            match crate::load_async(eval.resolve(path)).await {
                Ok(mut agent) => {
                    let _ = cache::wrap(&mut agent);
                    helpers.insert(path.clone(), agent);
                }
                Err(e) => {
                    errors.push(
                        Diagnostic::error(assertion.at.clone(), format!("cannot load `{path}`: {e}"))
                            .with_code("eval-run"),
                    );
                    helpers.insert(path.clone(), Agent::default());
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(helpers)
    } else {
        Err(EvalError::Invalid(errors))
    }
}

/// The answer and conversation of one run of a prompt.
struct Ran {
    output: Value,
    messages: Vec<Message>,
}

/// Prepares and runs the prompt: through `turn` when it declares tools.
async fn run_prompt(agent: &Agent, inputs: &Value) -> Result<Ran, Error> {
    let messages = crate::prepare_async(agent, inputs).await?;
    if agent.tools.as_deref().is_some_and(|t| !t.is_empty()) {
        let out = crate::run_turn_async(agent, messages, inputs, TurnOptions::new()).await?;
        return Ok(Ran { output: out.result, messages: out.messages });
    }
    let output = crate::run_async(agent, &messages).await?;
    let mut messages = messages;
    messages.push(Message::new(Role::Assistant, assertions::text_of(&output)));
    Ok(Ran { output, messages })
}

/// One case with one column: the prompt (again after a rate limit), then its assertions.
async fn run_cell(shared: &Shared<'_>, case: &Case, column: &ColumnRun) -> Result<Cell, EvalError> {
    let vars = vars_of(shared.eval, case, column.agent.inputs.as_deref());
    let inputs = Value::Object(vars.clone());
    let mut attempt = 0;
    let (ran, calls, wall) = loop {
        let permit = shared.limiter.acquire().await;
        let context = CallContext::new(shared.cache.clone());
        let started = Instant::now();
        let ran = cache::with_context(context.clone(), run_prompt(&column.agent, &inputs)).await;
        let wall = started.elapsed();
        drop(permit);
        let calls = std::mem::take(&mut *context.calls());
        stop_if_fatal(shared, case, column, &calls)?;
        if ran.is_err() && calls.rate_limited && attempt < RATE_LIMIT_RETRIES {
            shared.limiter.pushed_back();
            let wait = RATE_LIMIT_WAIT.saturating_mul(1 << attempt).min(MAX_RATE_LIMIT_WAIT);
            tracing::warn!(case = %case.name, column = %column.column.id, wait_ms = wait.as_millis() as u64,
                "rate-limited (HTTP 429): running the case again after a wait");
            tokio::time::sleep(wait).await;
            attempt += 1;
            continue;
        }
        if !calls.rate_limited {
            shared.limiter.went_through();
        }
        break (ran, calls, wall);
    };
    add_totals(shared, &calls);
    let threshold = case.threshold.or(shared.eval.threshold);
    let latency_ms = wall.as_millis() as u64 + calls.replayed_ms;
    let mut cell = Cell {
        column: column.column.id.clone(),
        threshold,
        latency_ms,
        usage: cache::usage_of(&calls.responses),
        model_calls: (calls.hits + calls.misses) as u32,
        cached: calls.misses == 0 && calls.hits > 0,
        ..Default::default()
    };
    let ran = match ran {
        Ok(ran) => ran,
        Err(e) => {
            cell.status = Status::Error;
            cell.score = 0.0;
            cell.output = Value::Null;
            cell.error = Some(e.to_string());
            return Ok(cell);
        }
    };
    let answer =
        Answer { output: &ran.output, messages: &ran.messages, latency_ms, usage: cell.usage, agent: &column.agent };
    let mut results = Vec::new();
    for assertion in assertions_of(shared.eval, case) {
        let outcome = match assertions::evaluate(&assertion.check, case, &answer) {
            Some(outcome) => outcome,
            None => model_assertion(shared, case, column, assertion, &ran, &vars).await?,
        };
        results.push(assertions::result(assertion, outcome));
    }
    cell.score = score(&results);
    cell.status = if passes(&results, cell.score, threshold) { Status::Pass } else { Status::Fail };
    cell.assertions = results;
    cell.output = ran.output;
    cell.messages = ran.messages;
    Ok(cell)
}

/// `judge` and `similar`, their model calls under a context of their own (cached, counted in the
/// run's totals, not in the cell's usage).
async fn model_assertion(
    shared: &Shared<'_>,
    case: &Case,
    column: &ColumnRun,
    assertion: &Assertion,
    ran: &Ran,
    vars: &Map<String, Value>,
) -> Result<Outcome, EvalError> {
    let context = CallContext::new(shared.cache.clone());
    let outcome = match &assertion.check {
        Check::Judge { prompt, threshold, criteria } => {
            let Some(judge) = shared.helpers.get(prompt) else {
                return Ok(Outcome::yes_no(false, format!("the judge `{prompt}` is not loaded")));
            };
            let given =
                JudgeInputs { output: &ran.output, messages: &ran.messages, case, vars, criteria: criteria.as_deref() };
            cache::with_context(context.clone(), judge::judge(judge, &given, *threshold)).await
        }
        Check::Similar { value, threshold, embedding } => {
            let Some(embedder) = shared.helpers.get(embedding) else {
                return Ok(Outcome::yes_no(false, format!("the embedding prompt `{embedding}` is not loaded")));
            };
            let reference = value.clone().or_else(|| case.expected.as_ref().map(assertions::text_of));
            cache::with_context(
                context.clone(),
                judge::similar(embedder, &ran.output, reference.as_deref(), *threshold),
            )
            .await
        }
        other => Outcome::yes_no(false, format!("`{}` is not a model assertion", other.kind())),
    };
    let calls = std::mem::take(&mut *context.calls());
    stop_if_fatal(shared, case, column, &calls)?;
    add_totals(shared, &calls);
    Ok(outcome)
}

fn add_totals(shared: &Shared<'_>, calls: &Calls) {
    let mut totals = shared.totals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    totals.0 += calls.hits;
    totals.1 += calls.misses;
}

/// A replay miss or a cache that cannot be read or written stops the run.
fn stop_if_fatal(shared: &Shared<'_>, case: &Case, column: &ColumnRun, calls: &Calls) -> Result<(), EvalError> {
    let at = location_text(&case.at);
    if let Some(key) = &calls.replay_miss {
        return Err(EvalError::Run(Error::Config {
            setting: "cache".into(),
            message: format!(
                "{at}: case `{}` ({}): no recorded response in {} (key {key}) and the cache mode is replay: record \
                 the responses once with a key (`--cache record` or `readwrite`, `PROMPTY_EVAL_CACHE=record`) and \
                 commit the folder",
                case.name,
                column.column.id,
                shared.cache.dir.display()
            ),
        }));
    }
    if let Some(why) = &calls.cache_failure {
        return Err(EvalError::Run(Error::Execution {
            message: format!("{at}: case `{}` ({}): {why}", case.name, column.column.id),
        }));
    }
    Ok(())
}

/// The weighted mean of the assertions' scores (1 without assertions or weights).
fn score(results: &[AssertionResult]) -> f64 {
    let weights: f64 = results.iter().map(|r| r.weight).sum();
    if weights <= 0.0 {
        return if results.iter().all(|r| r.pass) { 1.0 } else { 0.0 };
    }
    results.iter().map(|r| r.weight * r.score).sum::<f64>() / weights
}

/// Without a threshold every assertion must pass; with one, the score must reach it.
fn passes(results: &[AssertionResult], score: f64, threshold: Option<f64>) -> bool {
    match threshold {
        None => results.iter().all(|r| r.pass),
        Some(t) => score >= t,
    }
}

fn summary(columns: &[Column], rows: &[CaseRow], hits: u64, misses: u64) -> Summary {
    let mut summary = Summary { cache_hits: hits, cache_misses: misses, ..Default::default() };
    let mut usage = TokenUsage::default();
    for column in columns {
        let scores: Vec<f64> =
            rows.iter().flat_map(|r| r.cells.iter()).filter(|c| c.column == column.id).map(|c| c.score).collect();
        if !scores.is_empty() {
            summary.mean_score.insert(column.id.clone(), scores.iter().sum::<f64>() / scores.len() as f64);
        }
    }
    for cell in rows.iter().flat_map(|r| r.cells.iter()) {
        match cell.status {
            Status::Pass => summary.passed += 1,
            Status::Fail => summary.failed += 1,
            Status::Error => summary.errors += 1,
        }
        usage.input += cell.usage.input;
        usage.output += cell.usage.output;
    }
    summary.usage = usage;
    summary
}
