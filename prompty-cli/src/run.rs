//! `prompty run`: one call, or a batch of JSON lines.

use crate::call::{self, Answer};
use crate::embedded;
use crate::exit::{CliError, CliResult, Exit};
use crate::inputs::{self, BatchLine};
use crate::session;
use crate::ui;
use crate::RunArgs;
use futures_util::StreamExt;
use prompty::Agent;
use serde_json::{json, Map, Value};

/// The most concurrent calls of a batch (`--jobs`).
pub const MAX_JOBS: usize = 64;

/// Runs `prompty run`.
pub async fn run(args: &RunArgs) -> CliResult {
    let mut agent = call::load(&args.prompt.file, args.model.as_deref()).await?;
    if let Some(file) = args.prompt.inputs.as_deref().filter(|f| inputs::is_batch(f)) {
        let given = inputs::pairs(&args.prompt.input, &agent)?;
        if args.session.is_some() {
            return Err(CliError::usage(
                "--session runs one durable turn: it cannot be used with a batch (--inputs FILE.jsonl)",
            ));
        }
        let lines = inputs::batch_file(file)?;
        embedded::choose(&mut agent, args.local.as_deref());
        return batch(&agent, lines, &given, args).await;
    }
    let all = inputs::one_call(
        args.prompt.inputs.as_deref(),
        &args.prompt.input,
        &agent,
        args.prompt.extra.allow_extra_inputs,
    )?;
    // A durable turn runs through the agent loop even without tools (one model call, committed).
    let turn = (call::uses_turn(&agent) || args.session.is_some()).then(call::turn_options);
    let (inputs, messages) = prepare(&agent, &Value::Object(all)).await?;
    // After the inputs are checked: the note about the embedded model only when it is asked.
    embedded::choose(&mut agent, args.local.as_deref());
    let turn = match (turn, &args.session) {
        (Some(options), Some(id)) => {
            let store = session::open(args.store.as_deref()).await?;
            let recorded = session::metadata(&args.prompt.file, &inputs, args.model.as_deref(), args.local.as_deref());
            let options = recorded.into_iter().fold(options.durable(store, id), |o, (k, v)| o.metadata(k, v));
            Some(options)
        }
        (turn, _) => turn,
    };
    match call::call(&agent, messages, &inputs, turn, args.stream, call::ctrl_c()).await? {
        Answer::Cancelled => Err(CliError::cancelled()),
        Answer::Done(result) => {
            if args.stream {
                // The text went out as it came; end the line.
                if result.is_string() {
                    ui::out("\n").map_err(call::write_error)?;
                }
            } else {
                call::print_result(&result, args.json)?;
            }
            Ok(Exit::Ok)
        }
    }
}

/// Validates the inputs (defaults filled in) and prepares the messages.
pub async fn prepare(agent: &Agent, inputs: &Value) -> CliResult<(Map<String, Value>, Vec<prompty::Message>)> {
    let inputs = inputs::validate(agent, inputs)?;
    let messages = prompty::prepare_async(agent, &Value::Object(inputs.clone())).await?;
    Ok((inputs, messages))
}

/// One line of a batch, run: its result line. Its input names are checked as those of one call
/// are ([`inputs::check_declared`]), each line on its own.
async fn one(
    agent: &Agent,
    line: BatchLine,
    given: &Map<String, Value>,
    turn: bool,
    args: &RunArgs,
) -> (Value, Option<Exit>) {
    let outcome = async {
        let mut all = line.inputs.map_err(CliError::prompt)?;
        let file = args.prompt.inputs.as_deref().map(|f| f.display().to_string()).unwrap_or_default();
        let origin = format!("{file}:{}", line.line);
        let sources =
            [inputs::Source { origin: &origin, inputs: &all }, inputs::Source { origin: "--input", inputs: given }];
        inputs::check_declared(agent, &sources, args.prompt.extra.allow_extra_inputs)?;
        all.extend(given.clone());
        let (inputs, messages) = prepare(agent, &Value::Object(all)).await?;
        match call::call(agent, messages, &inputs, turn.then(call::turn_options), false, std::future::pending()).await?
        {
            Answer::Done(result) => Ok(result),
            Answer::Cancelled => Err(CliError::cancelled()),
        }
    }
    .await;
    match outcome {
        Ok(result) => (json!({"line": line.line, "ok": true, "result": result}), None),
        Err(e) => (json!({"line": line.line, "ok": false, "exit": e.exit.code(), "error": e.message}), Some(e.exit)),
    }
}

/// Runs every line with at most `--jobs` calls at a time and writes one JSON line per input line,
/// in input order, failures included. The exit code is that of the first failed line (0 when
/// none failed); Ctrl-C stops the batch (130) after the lines already written.
async fn batch(agent: &Agent, lines: Vec<BatchLine>, given: &Map<String, Value>, args: &RunArgs) -> CliResult {
    if args.stream {
        return Err(CliError::usage("--stream cannot be used with a batch (--inputs FILE.jsonl)"));
    }
    let jobs = usize::from(args.jobs).clamp(1, MAX_JOBS);
    let turn = call::uses_turn(agent);
    let total = lines.len();
    let bar = (ui::shows_info() && ui::stderr_is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(u64::try_from(total).unwrap_or(u64::MAX));
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} lines, {elapsed} elapsed, {eta} left")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut results = futures_util::stream::iter(lines).map(|line| one(agent, line, given, turn, args)).buffered(jobs);
    let mut first_failure = None;
    let (mut ok, mut failed) = (0usize, 0usize);
    let interrupt = call::ctrl_c();
    tokio::pin!(interrupt);
    loop {
        let next = tokio::select! {
            next = results.next() => next,
            () = &mut interrupt => {
                if let Some(bar) = &bar { bar.abandon(); }
                ui::info(format!("cancelled after {} of {total} lines", ok + failed));
                return Err(CliError::cancelled());
            }
        };
        let Some((line, failure)) = next else { break };
        match failure {
            Some(exit) => {
                failed += 1;
                first_failure.get_or_insert(exit);
            }
            None => ok += 1,
        }
        let text = format!("{}\n", serde_json::to_string(&line).unwrap_or_default());
        match &bar {
            Some(bar) => bar.suspend(|| ui::out(&text)),
            None => ui::out(&text),
        }
        .map_err(call::write_error)?;
        if let Some(bar) = &bar {
            bar.inc(1);
        }
    }
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    ui::info(format!("{total} lines: {ok} succeeded, {failed} failed"));
    Ok(first_failure.unwrap_or(Exit::Ok))
}
