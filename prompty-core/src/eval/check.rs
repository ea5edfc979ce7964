//! Checking an eval file against its prompts before anything runs.

use super::dataset::{self, TAGS_COLUMN};
use super::{Assertion, Case, Check, EvalFile, JUDGE_INPUTS};
use crate::analysis::{self, closest, Diagnostic};
use crate::{Agent, LoadOptions, Location, Property, ToolKind};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// The result of [`check_files`]: the diagnostics, and every file read (the eval file's
/// datasets, the prompts under test, judges and embedding prompts with the files they read), for
/// a build to rerun when one changes.
///
/// ```
/// let eval = prompty_core::eval::EvalFile::parse("prompt: nowhere.prompty\n", "x.eval.yaml").unwrap();
/// let checked = prompty_core::eval::check_files(&eval);
/// assert_eq!(checked.diagnostics.len(), 1);
/// assert!(checked.files.is_empty());
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Checked {
    /// Errors and warnings, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// The files read.
    pub files: Vec<PathBuf>,
}

/// Checks an eval file against the prompts it names, before anything runs: every mistake that the
/// files alone show, as [`Diagnostic`]s naming file, line and column, each under a stable code.
///
/// | code | rule |
/// |---|---|
/// | `eval-prompt` | a prompt under test is missing, outside the eval file's folder, or does not load |
/// | `eval-dataset` | a dataset is missing, refused, too large, or malformed; a case name is repeated ([`EvalFile::cases`]) |
/// | `eval-unknown-var` | a var (the file's or a case's) is no input of a prompt under test |
/// | `eval-unknown-column` | a dataset column is no input of a prompt under test; `columns:` names a column the dataset does not have |
/// | `eval-unknown-input` | `columns:` maps a column onto a name that is no input |
/// | `eval-missing-input` | a case gives no value for a required input without a default |
/// | `eval-var-kind` | a value does not fit its input's kind (CSV text is first converted by [`super::coerce_vars`]) |
/// | `eval-judge` | a judge prompt is missing or does not load |
/// | `eval-judge-input` | a judge declares an input the runner does not pass ([`JUDGE_INPUTS`]) |
/// | `eval-judge-output` | a judge's `outputs` give no number `score` (an error), or it declares no `outputs` (a warning: its answer must then be JSON with `score` and `reason`) |
/// | `eval-assertion` | `equals`/`contains`/`similar` without a value on a case without `expected`; `similar`'s embedding prompt is missing or not `apiType: embedding`; `is-json` with a schema that is not an object |
/// | `eval-output-type` | `output-type` on a prompt that declares no `outputs` |
/// | `eval-tool` | `tool-called` names a tool the prompt does not declare (checked when all its tools are `function` or `prompty` tools), or `arguments` the tool has no parameter for |
///
/// Prompts are loaded with `${env:}` references kept: checking needs no secret. A bad dataset
/// column is reported once, at its header cell (CSV) or first line (JSONL), not once per row.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-evalcheck-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("chat.prompty"), "---\ninputs:\n  question: {kind: string}\n---\nuser:\n{{ question }}").unwrap();
/// let path = dir.join("chat.eval.yaml");
/// std::fs::write(&path, "prompt: chat.prompty\ncases:\n  - name: one\n    vars:\n      questoin: Hi\n").unwrap();
/// let eval = prompty_core::eval::EvalFile::load(&path).unwrap();
/// let found = prompty_core::eval::check(&eval);
/// assert_eq!(found[0].to_string(), format!(
///     "{}:5:7: the var `questoin` is no input of chat.prompty (did you mean `question`?)", path.display()));
/// assert_eq!(found[0].code, "eval-unknown-var");
/// ```
pub fn check(eval: &EvalFile) -> Vec<Diagnostic> {
    check_files(eval).diagnostics
}

/// [`check`], with the files it read.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("prompty-doc-evalfiles-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("chat.prompty"), "---\ninputs: [q]\n---\nuser:\n{{ q }}").unwrap();
/// std::fs::write(dir.join("rows.jsonl"), "{\"q\": \"Hi\"}\n").unwrap();
/// let path = dir.join("chat.eval.yaml");
/// std::fs::write(&path, "prompt: chat.prompty\ndatasets: [rows.jsonl]\n").unwrap();
/// let checked = prompty_core::eval::check_files(&prompty_core::eval::EvalFile::load(&path).unwrap());
/// assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
/// let names: Vec<_> = checked.files.iter().map(|f| f.file_name().unwrap().to_str().unwrap()).collect();
/// assert_eq!(names, ["chat.prompty", "rows.jsonl"]);
/// ```
pub fn check_files(eval: &EvalFile) -> Checked {
    let mut cx = Cx { eval, out: Checked::default(), loaded: HashMap::new(), seen: BTreeSet::new() };
    let prompts: Vec<(String, Agent)> = eval
        .prompts
        .iter()
        .filter_map(|p| cx.prompt(&p.path, &p.at, "eval-prompt", "the prompt").map(|a| (p.path.clone(), a)))
        .collect();
    let data = dataset::load(eval);
    cx.out.files.extend(data.files.iter().cloned());
    cx.out.diagnostics.extend(data.errors.iter().cloned());
    cx.columns_exist(&data);
    for (name, agent) in &prompts {
        let inputs = agent.inputs.clone().unwrap_or_default();
        let prompt = Prompt { name, inputs: &inputs };
        cx.file_vars(&prompt);
        cx.columns(&prompt, &data);
        for case in &data.cases {
            cx.case(&prompt, case);
        }
    }
    cx.assertions(&prompts, &data.cases);
    cx.out
}

struct Prompt<'a> {
    /// As the eval file names it.
    name: &'a str,
    inputs: &'a [Property],
}

struct Cx<'a> {
    eval: &'a EvalFile,
    out: Checked,
    /// Prompts loaded (judges, embedding prompts), by path as written: `None` when they failed.
    loaded: HashMap<String, Option<Agent>>,
    /// Messages given, so that a rule met by many cases is reported once.
    seen: BTreeSet<String>,
}

fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

fn names(inputs: &[Property]) -> impl Iterator<Item = &str> {
    inputs.iter().map(|p| p.name.as_str())
}

impl Cx<'_> {
    /// Adds a diagnostic unless the same one was given.
    fn push(&mut self, d: Diagnostic) {
        if self.seen.insert(d.to_string()) {
            self.out.diagnostics.push(d);
        }
    }

    fn error(&mut self, code: &'static str, at: &Location, message: String, help: Option<String>) {
        let mut d = Diagnostic::error(at.clone(), message).with_code(code);
        if let Some(h) = help {
            d = d.with_help(h);
        }
        self.push(d);
    }

    /// Loads a prompt the eval file names at `at`: confined to the eval file's folder, `${env:}`
    /// references kept. A failure is an error at `at`.
    fn prompt(&mut self, path: &str, at: &Location, code: &'static str, what: &str) -> Option<Agent> {
        let file = match self.eval.confined(path, what) {
            Ok(f) => f,
            Err(message) => {
                self.error(code, at, message, None);
                return None;
            }
        };
        let display = self.eval.display_of(path);
        let report = analysis::check_file(&file, &display, &LoadOptions::new().keep_env_references());
        for f in std::iter::once(&file).chain(report.files.iter()) {
            if !self.out.files.contains(f) {
                self.out.files.push(f.clone());
            }
        }
        let errors: Vec<&Diagnostic> = report.errors().collect();
        if let Some(first) = errors.first() {
            let more = match errors.len() {
                1 => String::new(),
                n => format!(" (and {} more: run `prompty check {display}`)", n - 1),
            };
            self.error(code, at, format!("{what} `{path}` does not load: {first}{more}"), None);
            return None;
        }
        report.agent
    }

    /// A prompt named by an assertion, loaded once.
    fn cached(&mut self, path: &str, at: &Location, code: &'static str, what: &str) -> Option<Agent> {
        if let Some(found) = self.loaded.get(path) {
            return found.clone();
        }
        let agent = self.prompt(path, at, code, what);
        self.loaded.insert(path.to_owned(), agent.clone());
        agent
    }

    fn file_vars(&mut self, p: &Prompt<'_>) {
        for name in self.eval.vars.keys() {
            if !p.inputs.iter().any(|i| &i.name == name) {
                let at = self.eval.vars_at.get(name).cloned().unwrap_or_else(|| Location::file(&self.eval.name));
                self.unknown_var(p, name, &at);
            }
        }
    }

    fn unknown_var(&mut self, p: &Prompt<'_>, name: &str, at: &Location) {
        self.error(
            "eval-unknown-var",
            at,
            format!("the var `{name}` is no input of {}", p.name),
            suggest(name, names(p.inputs)).or_else(|| declared(p.inputs)),
        );
    }

    /// `columns:` entries naming a column their dataset does not have.
    fn columns_exist(&mut self, data: &dataset::Loaded) {
        for read in &data.datasets {
            let ds = &self.eval.datasets[read.index];
            for (column, at) in &ds.columns_at {
                if !read.columns.iter().any(|c| &c.name == column) {
                    let help = suggest(column, read.columns.iter().map(|c| c.name.as_str()));
                    self.error(
                        "eval-unknown-column",
                        at,
                        format!("`columns` names the column `{column}`, which {} does not have", read.display),
                        help,
                    );
                }
            }
        }
    }

    /// Dataset columns and `columns:` targets against the prompt's inputs.
    fn columns(&mut self, p: &Prompt<'_>, data: &dataset::Loaded) {
        for (index, ds) in self.eval.datasets.iter().enumerate() {
            for (column, input) in &ds.columns {
                if !p.inputs.iter().any(|i| &i.name == input) {
                    let at = ds.columns_at.get(column).cloned().unwrap_or_else(|| ds.at.clone());
                    self.error(
                        "eval-unknown-input",
                        &at,
                        format!("`columns` maps `{column}` onto `{input}`, which is no input of {}", p.name),
                        suggest(input, names(p.inputs)).or_else(|| declared(p.inputs)),
                    );
                }
            }
            let Some(read) = data.datasets.iter().find(|r| r.index == index) else { continue };
            for column in &read.columns {
                let special = [ds.expected.as_str(), ds.name_column.as_str(), TAGS_COLUMN];
                if special.contains(&column.name.as_str()) || ds.columns.contains_key(&column.name) {
                    continue;
                }
                if !p.inputs.iter().any(|i| i.name == column.name) {
                    self.error(
                        "eval-unknown-column",
                        &column.at,
                        format!("the column `{}` of {} is no input of {}", column.name, read.display, p.name),
                        suggest(&column.name, names(p.inputs)).or_else(|| declared(p.inputs)),
                    );
                }
            }
        }
    }

    fn case(&mut self, p: &Prompt<'_>, case: &Case) {
        let from_dataset = case.at.file != self.eval.name;
        if !from_dataset {
            for (name, at) in &case.var_at {
                if !p.inputs.iter().any(|i| &i.name == name) {
                    self.unknown_var(p, name, at);
                }
            }
        }
        let mut vars: Map<String, Value> = self.eval.vars.clone();
        vars.extend(case.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        if case.from_csv {
            super::coerce_vars(&mut vars, p.inputs);
        }
        for input in p.inputs {
            let given = vars.get(&input.name).filter(|v| !v.is_null());
            if input.required && input.default.is_none() && given.is_none() {
                // A dataset missing a column would repeat this on every row: once per dataset.
                let (at, whom) = if from_dataset {
                    (Location::file(&case.at.file).at_line(case.at.line.unwrap_or(1) as usize), "a row of".to_owned())
                } else {
                    (case.at.clone(), format!("the case `{}` of", case.name))
                };
                let key = format!("missing {} {} {}", case.at.file, input.name, p.name);
                if from_dataset && !self.seen.insert(key) {
                    continue;
                }
                let file = if from_dataset { case.at.file.as_str() } else { "the eval file" };
                self.error(
                    "eval-missing-input",
                    &at,
                    format!("{whom} {file} gives no value for `{}`, a required input of {}", input.name, p.name),
                    Some(if from_dataset {
                        format!("add a `{}` column", input.name)
                    } else {
                        format!("add `{}` to its `vars`", input.name)
                    }),
                );
            }
            let Some(value) = vars.get(&input.name) else { continue };
            if let Err(problem) = analysis::values::value_fits(value, input, "") {
                let at = case
                    .var_at
                    .get(&input.name)
                    .or_else(|| self.eval.vars_at.get(&input.name))
                    .cloned()
                    .unwrap_or_else(|| case.at.clone());
                self.error(
                    "eval-var-kind",
                    &at,
                    format!("the value of `{}` does not fit its input in {}: {problem}", input.name, p.name),
                    None,
                );
            }
        }
    }

    /// Every assertion once (the file's, each dataset's, each inline case's), then the rules that
    /// need a case (a value or the case's `expected`).
    fn assertions(&mut self, prompts: &[(String, Agent)], cases: &[Case]) {
        let mut all: Vec<&Assertion> = self.eval.assert.iter().collect();
        for ds in &self.eval.datasets {
            all.extend(ds.assert.iter());
        }
        for case in &self.eval.cases {
            all.extend(case.assert.iter());
        }
        for a in all {
            self.assertion(prompts, a);
        }
        for case in cases {
            if case.expected.is_some() {
                continue;
            }
            for a in self.eval.assert.iter().chain(case.assert.iter()) {
                let missing = match &a.check {
                    Check::Equals { value, .. } => value.is_none(),
                    Check::Contains { values, .. } => values.is_empty(),
                    Check::Similar { value, .. } => value.is_none(),
                    _ => false,
                };
                if missing {
                    let key = format!("expected {}", a.at);
                    if self.seen.insert(key) {
                        self.error(
                            "eval-assertion",
                            &a.at,
                            format!(
                                "this `{}` assertion gives no `value`, and the case `{}` has no `expected` to compare with",
                                a.kind(),
                                case.name
                            ),
                            Some("give the assertion a `value`, or the case an `expected`".into()),
                        );
                    }
                }
            }
        }
    }

    fn assertion(&mut self, prompts: &[(String, Agent)], a: &Assertion) {
        match &a.check {
            Check::Judge { prompt, .. } => self.judge(prompt, &a.at),
            Check::Similar { embedding, .. } => {
                let Some(agent) = self.cached(embedding, &a.at, "eval-assertion", "the embedding prompt") else {
                    return;
                };
                let api = agent.model.as_ref().map_or("chat", |m| m.api_type());
                if api != "embedding" {
                    self.error(
                        "eval-assertion",
                        &a.at,
                        format!("the embedding prompt `{embedding}` has `apiType: {api}`: `similar` needs a prompt with `apiType: embedding`"),
                        None,
                    );
                }
            }
            Check::IsJson { schema: Some(schema) } if !schema.is_object() => {
                self.error(
                    "eval-assertion",
                    &a.at,
                    format!(
                        "the `schema` of `is-json` must be a JSON Schema object, not {}",
                        super::parse::type_name(schema)
                    ),
                    None,
                );
            }
            Check::OutputType => {
                for (name, agent) in prompts {
                    if agent.outputs.as_ref().is_none_or(Vec::is_empty) {
                        self.error(
                            "eval-output-type",
                            &a.at,
                            format!("`output-type` checks the answer against the prompt's `outputs`, and {name} declares none"),
                            None,
                        );
                    }
                }
            }
            Check::ToolCalled { name: tool, arguments, .. } => {
                for (name, agent) in prompts {
                    self.tool_called(name, agent, tool, arguments.as_ref(), &a.at);
                }
            }
            _ => {}
        }
    }

    fn tool_called(
        &mut self,
        prompt: &str,
        agent: &Agent,
        tool: &str,
        arguments: Option<&Map<String, Value>>,
        at: &Location,
    ) {
        let tools = agent.tools.clone().unwrap_or_default();
        // Other kinds (MCP servers, OpenAPI documents) expose tools named elsewhere.
        if !tools.iter().all(|t| matches!(t.kind, ToolKind::Function(_) | ToolKind::Prompty(_))) {
            return;
        }
        let Some(found) = tools.iter().find(|t| t.name == tool) else {
            let help = suggest(tool, tools.iter().map(|t| t.name.as_str())).or_else(|| {
                let all: Vec<String> = tools.iter().map(|t| format!("`{}`", t.name)).collect();
                Some(if all.is_empty() {
                    "it declares no tools".to_owned()
                } else {
                    format!("it declares {}", all.join(", "))
                })
            });
            self.error("eval-tool", at, format!("`tool-called` names `{tool}`, which is no tool of {prompt}"), help);
            return;
        };
        let (Some(arguments), ToolKind::Function(f)) = (arguments, &found.kind) else { return };
        for key in arguments.keys() {
            if !f.parameters.iter().any(|p| &p.name == key) {
                self.error(
                    "eval-tool",
                    at,
                    format!("`arguments` names `{key}`, which is no parameter of the tool `{tool}` of {prompt}"),
                    suggest(key, names(&f.parameters)).or_else(|| declared(&f.parameters)),
                );
            }
        }
    }

    fn judge(&mut self, path: &str, at: &Location) {
        let Some(agent) = self.cached(path, at, "eval-judge", "the judge") else { return };
        for input in agent.inputs.iter().flatten() {
            if !JUDGE_INPUTS.contains(&input.name.as_str()) {
                let help = suggest(&input.name, JUDGE_INPUTS).unwrap_or_else(|| {
                    format!("a judge is given {}", JUDGE_INPUTS.map(|i| format!("`{i}`")).join(", "))
                });
                self.error(
                    "eval-judge-input",
                    at,
                    format!("the judge `{path}` declares the input `{}`, which the runner does not pass", input.name),
                    Some(help),
                );
            }
        }
        match agent.outputs.as_ref().filter(|o| !o.is_empty()) {
            None => self.push(
                Diagnostic::warning(
                    at.clone(),
                    format!(
                        "the judge `{path}` declares no `outputs`: its answer must then be JSON with `score` (0..1) and `reason`"
                    ),
                )
                .with_code("eval-judge-output")
                .with_help("declare `outputs: {score: {kind: float}, reason: {kind: string}}`"),
            ),
            Some(outputs) => match outputs.iter().find(|o| o.name == "score") {
                Some(score) if matches!(score.kind, crate::PropertyKind::Float | crate::PropertyKind::Integer) => {}
                Some(score) => self.error(
                    "eval-judge-output",
                    at,
                    format!("the judge `{path}` declares `score` as {}, not a number", score.kind.as_str()),
                    Some("declare `score: {kind: float}`".into()),
                ),
                None => self.error(
                    "eval-judge-output",
                    at,
                    format!("the judge `{path}` declares `outputs` without a `score`"),
                    suggest("score", names(outputs)).or_else(|| Some("add `score: {kind: float}`".into())),
                ),
            },
        }
    }
}

/// `it declares `a`, `b`` (or that it declares none).
fn declared(inputs: &[Property]) -> Option<String> {
    if inputs.is_empty() {
        return Some("it declares no inputs".into());
    }
    let all: Vec<String> = inputs.iter().map(|i| format!("`{}`", i.name)).collect();
    Some(format!("it declares {}", all.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Severity;
    use std::path::Path;

    const CHAT: &str = "---\ninputs:\n  question: {kind: string, required: true}\n  count: {kind: integer, default: 1}\n  \
        flags: {kind: array}\noutputs:\n  answer: {kind: string}\ntools:\n  - name: get_weather\n    kind: function\n    \
        parameters: [{name: city, kind: string}]\n---\nuser:\n{{ question }} {{ count }} {{ flags }}";

    /// A folder holding `chat.prompty`, judges, an embedding prompt and the given files; the
    /// messages of checking `t.eval.yaml` (written from `eval`), the folder's path removed.
    fn run(name: &str, eval: &str, files: &[(&str, &str)]) -> Vec<String> {
        let dir = std::env::temp_dir().join(format!("prompty-evalcheck-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("judges")).unwrap();
        std::fs::write(dir.join("chat.prompty"), CHAT).unwrap();
        std::fs::write(dir.join("plain.prompty"), "---\ninputs: [question]\n---\nuser:\n{{ question }}").unwrap();
        std::fs::write(
            dir.join("judges/good.prompty"),
            "---\ninputs: [output, expected]\noutputs:\n  score: {kind: float}\n  reason: {kind: string}\n---\nuser:\n{{ output }} {{ expected }}",
        )
        .unwrap();
        std::fs::write(dir.join("embed.prompty"), "---\nmodel: {apiType: embedding}\ninputs: [text]\n---\n{{ text }}")
            .unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        let path = dir.join("t.eval.yaml");
        std::fs::write(&path, eval).unwrap();
        let eval = EvalFile::load(&path).unwrap();
        let prefix = format!("{}/", dir.display());
        check(&eval)
            .iter()
            .map(|d| {
                let tag = if d.severity == Severity::Warning { "warning " } else { "" };
                let text = d.to_string().replace(&prefix, "").replace(&dir.display().to_string(), "DIR");
                format!("{tag}[{}] {text}", d.code)
            })
            .collect()
    }

    #[test]
    fn a_good_file_has_no_diagnostics() {
        let found = run(
            "good",
            "prompt: chat.prompty\nvars: {count: 2}\nassert:\n  - {type: judge, prompt: judges/good.prompty}\n  - output-type\n  \
             - {type: tool-called, value: get_weather, arguments: {city: Paris}}\n  - {type: similar, embedding: embed.prompty, value: Hi}\n\
             cases:\n  - name: one\n    vars: {question: Hi, flags: [a]}\n    expected: Hello\n    assert: [{contains: Hello}]\n\
             datasets:\n  - {file: rows.csv, columns: {q: question}}\n",
            &[("rows.csv", "q,count,flags,expected,name\nHi,3,\"[1]\",Yo,r1\n")],
        );
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_misspelt_var_names_the_closest_input() {
        let found = run("var", "prompt: chat.prompty\nvars: {cuont: 2}\ncases:\n  - name: one\n    vars:\n      question: Hi\n      questoin: Hi\n", &[]);
        assert_eq!(
            found,
            [
                "[eval-unknown-var] t.eval.yaml:2:8: the var `cuont` is no input of chat.prompty (did you mean `count`?)",
                "[eval-unknown-var] t.eval.yaml:7:7: the var `questoin` is no input of chat.prompty (did you mean `question`?)",
            ]
        );
    }

    #[test]
    fn a_misspelt_column_is_reported_once_at_its_header_cell() {
        let found = run(
            "column",
            "prompt: chat.prompty\ndatasets:\n  - rows.csv\n  - rows.jsonl\n",
            &[
                ("rows.csv", "question,cuont\nHi,1\nHo,2\n"),
                ("rows.jsonl", "{\"question\": \"a\"}\n{\"question\": \"b\", \"flgas\": []}\n{\"question\": \"c\", \"flgas\": []}\n"),
            ],
        );
        assert_eq!(
            found,
            [
                "[eval-unknown-column] rows.csv:1:10: the column `cuont` of rows.csv is no input of chat.prompty (did you mean `count`?)",
                "[eval-unknown-column] rows.jsonl:2:19: the column `flgas` of rows.jsonl is no input of chat.prompty (did you mean `flags`?)",
            ]
        );
    }

    #[test]
    fn columns_must_name_a_column_and_an_input() {
        let found = run(
            "mapping",
            "prompt: chat.prompty\ndatasets:\n  - file: rows.csv\n    columns:\n      q: questoin\n      z: count\n",
            &[("rows.csv", "q,question\nHi,Ho\n")],
        );
        assert_eq!(
            found,
            [
                "[eval-unknown-column] t.eval.yaml:6:7: `columns` names the column `z`, which rows.csv does not have (did you mean `q`?)",
                "[eval-unknown-input] t.eval.yaml:5:7: `columns` maps `q` onto `questoin`, which is no input of chat.prompty (did you mean `question`?)",
            ]
        );
    }

    #[test]
    fn a_required_input_must_be_given() {
        let found = run(
            "missing",
            "prompt: chat.prompty\ncases:\n  - name: one\n    vars: {count: 1}\ndatasets: [rows.jsonl]\n",
            &[("rows.jsonl", "{\"count\": 1}\n{\"count\": 2}\n")],
        );
        assert_eq!(
            found,
            [
                "[eval-missing-input] t.eval.yaml:3:5: the case `one` of the eval file gives no value for `question`, a required input of chat.prompty (add `question` to its `vars`)",
                "[eval-missing-input] rows.jsonl:1: a row of rows.jsonl gives no value for `question`, a required input of chat.prompty (add a `question` column)",
            ]
        );
    }

    #[test]
    fn a_value_must_fit_its_input() {
        let found = run(
            "kind",
            "prompt: chat.prompty\ncases:\n  - name: one\n    vars: {question: Hi, count: many}\ndatasets: [rows.csv]\n",
            &[("rows.csv", "question,count\nHi,7\nHo,seven\n")],
        );
        assert_eq!(
            found,
            [
                "[eval-var-kind] t.eval.yaml:4:26: the value of `count` does not fit its input in chat.prompty: expected an integer, found the string `\"many\"`",
                "[eval-var-kind] rows.csv:3:4: the value of `count` does not fit its input in chat.prompty: expected an integer, found the string `\"seven\"`",
            ]
        );
    }

    #[test]
    fn a_missing_or_broken_prompt_is_an_error_where_it_is_named() {
        let found = run(
            "prompt",
            "prompts:\n  - nope.prompty\n  - broken.prompty\n  - ../x.prompty\n",
            &[("broken.prompty", "---\ninputs: [a, a]\n---\nHi")],
        );
        assert_eq!(found.len(), 3, "{found:#?}");
        assert_eq!(found[0], "[eval-prompt] t.eval.yaml:2:5: the prompt `nope.prompty` does not exist (paths are relative to the eval file's folder `DIR`)");
        assert_eq!(found[1], "[eval-prompt] t.eval.yaml:3:5: the prompt `broken.prompty` does not load: broken.prompty:2:13: the input `a` is declared twice (first on line 2)");
        assert_eq!(
            found[2],
            "[eval-prompt] t.eval.yaml:4:5: the prompt `../x.prompty` lies outside the eval file's folder: move it into that folder (or a folder below it) and name it by its relative path"
        );
    }

    #[test]
    fn judges_get_only_what_the_runner_passes_and_give_a_score() {
        let found = run(
            "judge",
            "prompt: plain.prompty\nassert:\n  - {type: judge, prompt: judges/inputs.prompty}\n  - {type: judge, prompt: judges/free.prompty}\n  \
             - {type: judge, prompt: judges/noscore.prompty}\n  - {type: judge, prompt: judges/textscore.prompty}\n  - {type: judge, prompt: judges/none.prompty}\n\
             cases: [{name: one, vars: {question: Hi}}]\n",
            &[
                ("judges/inputs.prompty", "---\ninputs: [outptu, answer]\noutputs: {score: {kind: float}}\n---\n{{ outptu }} {{ answer }}"),
                ("judges/free.prompty", "---\ninputs: [output]\n---\n{{ output }}"),
                ("judges/noscore.prompty", "---\ninputs: [output]\noutputs: {scor: {kind: float}}\n---\n{{ output }}"),
                ("judges/textscore.prompty", "---\ninputs: [output]\noutputs: {score: {kind: string}}\n---\n{{ output }}"),
            ],
        );
        assert_eq!(found.len(), 6, "{found:#?}");
        assert_eq!(found[0], "[eval-judge-input] t.eval.yaml:3:5: the judge `judges/inputs.prompty` declares the input `outptu`, which the runner does not pass (did you mean `output`?)");
        assert_eq!(found[1], "[eval-judge-input] t.eval.yaml:3:5: the judge `judges/inputs.prompty` declares the input `answer`, which the runner does not pass (a judge is given `output`, `input`, `expected`, `criteria`, `vars`)");
        assert_eq!(found[2], "warning [eval-judge-output] t.eval.yaml:4:5: the judge `judges/free.prompty` declares no `outputs`: its answer must then be JSON with `score` (0..1) and `reason` (declare `outputs: {score: {kind: float}, reason: {kind: string}}`)");
        assert_eq!(found[3], "[eval-judge-output] t.eval.yaml:5:5: the judge `judges/noscore.prompty` declares `outputs` without a `score` (did you mean `scor`?)");
        assert_eq!(found[4], "[eval-judge-output] t.eval.yaml:6:5: the judge `judges/textscore.prompty` declares `score` as string, not a number (declare `score: {kind: float}`)");
        assert_eq!(found[5], "[eval-judge] t.eval.yaml:7:5: the judge `judges/none.prompty` does not exist (paths are relative to the eval file's folder `DIR`)");
    }

    #[test]
    fn assertions_are_checked_against_the_prompt() {
        let found = run(
            "assert",
            "prompt: plain.prompty\nassert:\n  - output-type\n  - {type: tool-called, value: get_weather}\n  - {type: is-json, schema: [1]}\n  \
             - {type: similar, embedding: plain.prompty, value: x}\n  - {type: similar, embedding: embed.prompty}\n\
             cases:\n  - {name: one, vars: {question: Hi}}\n  - {name: two, vars: {question: Ho}, expected: Hi, assert: [{equals: Hi}, {type: contains}]}\n",
            &[],
        );
        assert_eq!(
            found,
            [
                "[eval-output-type] t.eval.yaml:3:5: `output-type` checks the answer against the prompt's `outputs`, and plain.prompty declares none",
                "[eval-tool] t.eval.yaml:4:5: `tool-called` names `get_weather`, which is no tool of plain.prompty (it declares no tools)",
                "[eval-assertion] t.eval.yaml:5:5: the `schema` of `is-json` must be a JSON Schema object, not a list",
                "[eval-assertion] t.eval.yaml:6:5: the embedding prompt `plain.prompty` has `apiType: chat`: `similar` needs a prompt with `apiType: embedding`",
                "[eval-assertion] t.eval.yaml:7:5: this `similar` assertion gives no `value`, and the case `one` has no `expected` to compare with (give the assertion a `value`, or the case an `expected`)",
            ]
        );
    }

    #[test]
    fn tool_called_names_a_declared_tool_and_its_parameters() {
        let found = run(
            "tool",
            "prompt: chat.prompty\nassert:\n  - {type: tool-called, value: get_wether}\n  - {type: tool-called, value: get_weather, arguments: {cty: Paris}}\n\
             cases: [{name: one, vars: {question: Hi}, assert: [{type: equals}]}]\n",
            &[],
        );
        assert_eq!(
            found,
            [
                "[eval-tool] t.eval.yaml:3:5: `tool-called` names `get_wether`, which is no tool of chat.prompty (did you mean `get_weather`?)",
                "[eval-tool] t.eval.yaml:4:5: `arguments` names `cty`, which is no parameter of the tool `get_weather` of chat.prompty (did you mean `city`?)",
                "[eval-assertion] t.eval.yaml:5:52: this `equals` assertion gives no `value`, and the case `one` has no `expected` to compare with (give the assertion a `value`, or the case an `expected`)",
            ]
        );
    }

    #[test]
    fn dataset_errors_are_part_of_the_check() {
        let found = run("dataset", "prompt: chat.prompty\ndatasets: [rows.csv]\n", &[("rows.csv", "question\n\"Hi\n")]);
        assert_eq!(found, ["[eval-dataset] rows.csv:2:1: a quoted field is never closed: add the closing `\"`"]);
        let _ = Path::new(".");
    }
}
