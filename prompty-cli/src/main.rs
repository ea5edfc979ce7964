//! `prompty`: the command line of prompty-rs. Run a `.prompty` file, chat with it, render or
//! prepare it offline, lint a folder of prompts with the analysis the compiler runs for typed
//! prompts, show the tools a model would see, read a `.tracy` trace, list a provider's models.
//!
//! stdout carries results only; progress, notes, tool calls and diagnostics go to stderr. See
//! `prompty --help` for the exit codes.

mod call;
mod chat;
mod check;
mod envfile;
mod exit;
mod inputs;
mod run;
mod show;
mod ui;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use exit::{CliError, Exit};
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Exit codes:
  0    success
  1    `check` found an error (or a warning, with --deny warnings); results could not be written
  2    usage error: bad arguments, a bad --input
  3    prompt error: the prompt, its inputs, an --inputs file or a .env file cannot be loaded,
       validated or rendered; an input name the prompt does not declare (see
       --allow-extra-inputs); anything found wrong before a request is sent (an unknown
       apiType, a toolChoice naming an undeclared tool, a connection that cannot be resolved)
  4    provider error: the model call, a tool server or the network failed
  130  cancelled with Ctrl-C

.env files are read from the prompt's folder, then from the working directory; a variable already
set is never overridden (the real environment wins, then the prompt's folder). Secrets are never
printed, not even with -vv: neither a credential of the prompt nor the value of a ${env:VAR}
reference whose name marks a secret (a name with KEY, TOKEN, SECRET, PASSWORD, PASSWD, PWD,
CREDENTIAL, SIGNATURE, COOKIE or AUTH in it), whatever field it lands in; values shorter than
8 characters are hidden only in the fields that hold credentials.";

/// Run, chat with, render, prepare and lint `.prompty` prompts.
#[derive(Debug, Parser)]
#[command(name = "prompty", version, about, after_help = AFTER_HELP, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Only results and errors: no notes, progress, tool calls or warnings on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// More on stderr: -v notes and every span of the pipeline with its time, -vv also the spans'
    /// inputs and results (secrets redacted).
    #[arg(short, long, global = true, action = ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Prepare the prompt and call the model; print the answer.
    #[command(after_help = AFTER_HELP)]
    Run(RunArgs),
    /// An interactive session: each line a user message, answers streamed.
    #[command(after_help = CHAT_HELP)]
    Chat(ChatArgs),
    /// Render the template with the inputs and print the text (offline).
    Render(PromptArgs),
    /// Prepare the messages the model would receive and print them as JSON (offline).
    Prepare(PromptArgs),
    /// Check every .prompty file below the paths with the compiler's analysis.
    #[command(after_help = CHECK_HELP)]
    Check(CheckArgs),
    /// Print the tool definitions the model would see, as JSON (MCP and OpenAPI tools resolved).
    Tools(ToolsArgs),
    /// Print the span tree of a .tracy file with times and token usage.
    Trace(TraceArgs),
    /// List the models a provider serves.
    Models(ModelsArgs),
}

const CHAT_HELP: &str = "\
Each line is a user message. It goes into the prompt's first required string input without a
default (e.g. `question`), and the conversation so far into its first `thread` input (e.g.
`history`). Without a message input the line is added as a user message after the prepared
ones; without a thread input the earlier turns are appended after the first turn's messages.

Ctrl-C while an answer streams cancels that answer; Ctrl-C at the prompt leaves (exit 130);
Ctrl-D leaves (exit 0, or the exit code of the last turn if it failed).";

const CHECK_HELP: &str = "\
Folders are searched for .prompty files (locale variants such as greeting.fr.prompty are
checked against their default). ${env:} references are not resolved: no secret is needed, and a
value written as a reference is not checked.

Besides the template, inputs, outputs and tools: a model.apiType the provider does not serve is
an error; an unknown model.provider, model.options key, or connection key (of the model or of a
tool) is a warning naming the closest known one.

--format json prints one JSON array on stdout, one object per diagnostic:
  {\"file\", \"line\", \"column\", \"severity\": \"error\"|\"warning\", \"code\", \"message\", \"help\"}
(line, column and help are null when unknown; code names the rule, e.g. unknown-api-type,
unknown-connection-key). The summary goes to stderr.

Exit code 1 when an error was found (or a warning, with --deny warnings), 0 otherwise.";

/// The prompt file and its inputs.
#[derive(Debug, Args)]
struct PromptArgs {
    /// The .prompty file.
    file: PathBuf,
    /// An input, KEY=VALUE (repeatable). The value is text, or JSON for inputs declared integer,
    /// float, boolean, array, object or thread. KEY must be an input the prompt declares (see
    /// --allow-extra-inputs).
    #[arg(short, long = "input", value_name = "KEY=VALUE")]
    input: Vec<String>,
    /// Inputs from a file: a JSON object (FILE.json). For `run`, FILE.jsonl (or .ndjson) is a
    /// batch: one JSON object per line. --input values are added to (and win over) them.
    #[arg(long, value_name = "FILE")]
    inputs: Option<PathBuf>,
    #[command(flatten)]
    extra: ExtraInputs,
}

/// Whether input names the prompt does not declare are let through.
#[derive(Debug, Args)]
struct ExtraInputs {
    /// Let --input and --inputs keys that the prompt does not declare through to the template.
    /// Without it such a key is a prompt error (exit 3) naming the declared input closest to it
    /// and listing the declared ones; a prompt that declares no inputs takes any key.
    #[arg(long)]
    allow_extra_inputs: bool,
}

/// `prompty run`.
#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    prompt: PromptArgs,
    /// Print the answer as it streams.
    #[arg(long, conflicts_with = "json")]
    stream: bool,
    /// Print the result as one line of JSON (structured output as an object, text as a string).
    #[arg(long)]
    json: bool,
    /// Use this model id instead of the prompt's `model.id`.
    #[arg(long, value_name = "ID")]
    model: Option<String>,
    /// How the prompt's `outputs:` are asked of an OpenAI-compatible model, for this run: over
    /// PROMPTY_STRUCTURED_OUTPUT and the prompt's `structuredOutput`. jsonSchema: OpenAI's strict
    /// JSON Schema; jsonObjectSchema: JSON mode with the schema (llama.cpp servers); jsonObject:
    /// JSON mode, the schema in the prompt; none: nothing (the prompt asks for JSON). Without it
    /// and any setting, jsonSchema, and a server that refuses it gets the request once more in
    /// the next mode (PROMPTY_STRUCTURED_OUTPUT_FALLBACK=off to stop that).
    #[arg(long, value_name = "MODE", value_parser = structured_output_mode())]
    structured_output: Option<prompty::StructuredOutput>,
    /// How many lines of a batch run at once (1 to 64).
    #[arg(short, long, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// Write a .tracy file of the run into this folder.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
}

/// `prompty chat`.
#[derive(Debug, Args)]
struct ChatArgs {
    /// The .prompty file.
    file: PathBuf,
    /// A fixed input, KEY=VALUE (repeatable), as for `run`.
    #[arg(short, long = "input", value_name = "KEY=VALUE")]
    input: Vec<String>,
    /// Fixed inputs from a JSON object file.
    #[arg(long, value_name = "FILE")]
    inputs: Option<PathBuf>,
    #[command(flatten)]
    extra: ExtraInputs,
    /// Use this model id instead of the prompt's `model.id`.
    #[arg(long, value_name = "ID")]
    model: Option<String>,
    /// How the prompt's `outputs:` are asked of an OpenAI-compatible model, for this run: over
    /// PROMPTY_STRUCTURED_OUTPUT and the prompt's `structuredOutput`. jsonSchema: OpenAI's strict
    /// JSON Schema; jsonObjectSchema: JSON mode with the schema (llama.cpp servers); jsonObject:
    /// JSON mode, the schema in the prompt; none: nothing (the prompt asks for JSON). Without it
    /// and any setting, jsonSchema, and a server that refuses it gets the request once more in
    /// the next mode (PROMPTY_STRUCTURED_OUTPUT_FALLBACK=off to stop that).
    #[arg(long, value_name = "MODE", value_parser = structured_output_mode())]
    structured_output: Option<prompty::StructuredOutput>,
    /// Write a .tracy file of every turn into this folder.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
}

/// The parser of `--structured-output`: the modes' names, as in a prompt file.
fn structured_output_mode() -> impl clap::builder::TypedValueParser<Value = prompty::StructuredOutput> {
    use clap::builder::TypedValueParser;
    let names = prompty::StructuredOutput::ALL.map(prompty::StructuredOutput::as_str);
    clap::builder::PossibleValuesParser::new(names).map(|name| name.parse().unwrap_or_default())
}

/// The output format of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// rustc-style diagnostics on stderr.
    Human,
    /// A JSON array of diagnostics on stdout.
    Json,
}

/// What `--deny` can turn into errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Deny {
    /// Warnings fail the check too.
    Warnings,
}

/// `prompty check`.
#[derive(Debug, Args)]
struct CheckArgs {
    /// Files and folders to check (default: the working directory).
    paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Fail on warnings too (`--deny warnings`).
    #[arg(long, value_enum, value_name = "WHAT")]
    deny: Option<Deny>,
}

impl CheckArgs {
    fn denies_warnings(&self) -> bool {
        self.deny == Some(Deny::Warnings)
    }
}

/// `prompty tools`.
#[derive(Debug, Args)]
struct ToolsArgs {
    /// The .prompty file.
    file: PathBuf,
}

/// `prompty trace`.
#[derive(Debug, Args)]
struct TraceArgs {
    /// The .tracy file.
    file: PathBuf,
}

/// `prompty models`.
#[derive(Debug, Args)]
struct ModelsArgs {
    /// The provider (default: the prompt's, else openai). Endpoint and key come from the
    /// environment (OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY), or
    /// from the prompt's connection with --prompt.
    #[arg(long, value_parser = ["openai", "anthropic"])]
    provider: Option<String>,
    /// Use the model connection of this prompt (and the .env of its folder).
    #[arg(long, value_name = "FILE")]
    prompt: Option<PathBuf>,
    /// Print the models as a JSON array (id, owner, context window, modalities, raw fields).
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    ui::set_level(cli.quiet, cli.verbose);
    let exit = match execute(cli) {
        Ok(exit) => exit,
        Err(e) => {
            if e.exit == Exit::Cancelled {
                ui::info("cancelled");
            } else {
                ui::error(&e);
            }
            e.exit
        }
    };
    ExitCode::from(exit.code())
}

/// The folder whose `.env` a command reads (besides the working directory's), if any.
fn env_folder(command: &Command) -> Option<Option<&std::path::Path>> {
    match command {
        Command::Run(a) => Some(call::folder_of(&a.prompt.file)),
        Command::Render(a) | Command::Prepare(a) => Some(call::folder_of(&a.file)),
        Command::Chat(a) => Some(call::folder_of(&a.file)),
        Command::Tools(a) => Some(call::folder_of(&a.file)),
        Command::Models(a) => Some(a.prompt.as_deref().and_then(call::folder_of)),
        Command::Check(_) | Command::Trace(_) => None,
    }
}

fn execute(cli: Cli) -> Result<Exit, CliError> {
    // `.env` first, while the process has one thread (it sets variables).
    if let Some(folder) = env_folder(&cli.command) {
        envfile::load(folder)?;
    }
    let structured_output = match &cli.command {
        Command::Run(a) => a.structured_output,
        Command::Chat(a) => a.structured_output,
        _ => None,
    };
    if structured_output.is_some() {
        prompty::providers::openai::set_structured_output(structured_output);
    }
    match &cli.command {
        Command::Check(args) => return check::run(args),
        Command::Trace(args) => return show::trace(args),
        _ => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::new(Exit::Failure, format!("cannot start the async runtime: {e}")))?;
    ui::trace_to_stderr();
    let trace_dir = match &cli.command {
        Command::Run(a) => a.trace.as_ref(),
        Command::Chat(a) => a.trace.as_ref(),
        _ => None,
    };
    let tracy = trace_dir.map(|dir| {
        let backend = std::sync::Arc::new(prompty::trace::TracyBackend::new(dir));
        prompty::trace::add("prompty-cli-tracy", backend.clone());
        backend
    });
    let result = runtime.block_on(async {
        match &cli.command {
            Command::Run(args) => {
                let inputs = serde_json::json!({"file": args.prompt.file, "inputs": args.prompt.inputs});
                call::traced("cli-run", &inputs, run::run(args)).await
            }
            Command::Chat(args) => chat::run(args).await,
            Command::Render(args) => show::render(args).await,
            Command::Prepare(args) => show::prepare(args).await,
            Command::Tools(args) => show::tools(args).await,
            Command::Models(args) => show::models(args).await,
            Command::Check(_) | Command::Trace(_) => unreachable!("handled above"),
        }
    });
    if let Some(written) = tracy.and_then(|t| t.last_written()) {
        ui::info(format!("trace written to {}", written.display()));
    }
    // Leave without waiting for tasks still holding a connection (a cancelled answer).
    runtime.shutdown_background();
    result
}
