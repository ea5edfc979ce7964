//! `prompty check` on eval files: each class of mistake, with its message and place, as the built
//! binary prints it.

mod common;

use common::{prompty, scratch, texts};
use serde_json::Value;
use std::path::{Path, PathBuf};

const CHAT: &str = "---\ninputs:\n  question: {kind: string, required: true}\n  count: {kind: integer, default: 1}\n\
    outputs:\n  answer: {kind: string}\ntools:\n  - name: get_weather\n    kind: function\n    \
    parameters: [{name: city, kind: string}]\n---\nuser:\n{{ question }} {{ count }}";

/// A scratch folder `evals/` with `chat.prompty`, a judge, and the given files.
fn folder(tag: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = scratch(tag);
    std::fs::create_dir_all(dir.join("evals/judges")).unwrap();
    std::fs::write(dir.join("evals/chat.prompty"), CHAT).unwrap();
    std::fs::write(
        dir.join("evals/judges/helpful.prompty"),
        "---\ninputs: [output]\noutputs: {score: {kind: float}, reason: {kind: string}}\n---\nuser:\n{{ output }}",
    )
    .unwrap();
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir
}

/// `prompty check ARGS` in `dir`: exit code and stderr.
fn check(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = prompty(dir).arg("check").args(args).output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(stdout, "", "diagnostics go to stderr");
    (out.status.code(), stderr)
}

#[test]
fn a_misspelt_var_names_the_closest_input_with_its_line() {
    let dir = folder(
        "eval-var",
        &[(
            "evals/chat.eval.yaml",
            "prompt: chat.prompty\ncases:\n  - name: capital\n    vars:\n      questoin: Paris?\n",
        )],
    );
    let (code, stderr) = check(&dir, &["evals/chat.eval.yaml"]);
    assert_eq!(code, Some(1));
    let expected = "\
error: the var `questoin` is no input of chat.prompty
 --> evals/chat.eval.yaml:5:7
  |
5 |       questoin: Paris?
  |       ^
  |
  = help: did you mean `question`?
";
    assert!(stderr.starts_with(expected), "{stderr}");
    assert!(stderr.contains("error: the case `capital` of the eval file gives no value for `question`"), "{stderr}");
    assert!(stderr.contains("checked 1 file: 2 errors, 0 warnings"), "{stderr}");
}

#[test]
fn a_misspelt_dataset_column_names_the_dataset_line_and_column_once() {
    let dir = folder(
        "eval-column",
        &[
            ("evals/chat.eval.yaml", "prompt: chat.prompty\ndatasets:\n  - rows.csv\n"),
            ("evals/rows.csv", "question,cuont\nHi,1\nHo,2\nHu,3\n"),
        ],
    );
    let (code, stderr) = check(&dir, &["evals/chat.eval.yaml"]);
    assert_eq!(code, Some(1));
    let expected = "\
error: the column `cuont` of evals/rows.csv is no input of chat.prompty
 --> evals/rows.csv:1:10
  |
1 | question,cuont
  |          ^
  |
  = help: did you mean `count`?
";
    assert!(stderr.starts_with(expected), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "once, not per row: {stderr}");
}

#[test]
fn json_output_gives_every_class_with_its_code() {
    let dir = folder(
        "eval-json",
        &[
            (
                "evals/chat.eval.yaml",
                "prompt: chat.prompty\nassert:\n  - {type: judge, prompt: judges/bad.prompty}\n  - {type: tool-called, value: get_wether}\n\
                 cases:\n  - {name: one, vars: {question: Hi, count: many}}\n  - {name: two, vars: {count: 2}, assert: [{type: equals}]}\n\
                 datasets:\n  - {file: rows.jsonl, columns: {q: questoin}}\n",
            ),
            ("evals/rows.jsonl", "{\"q\": \"Hi\"}\n"),
            ("evals/judges/bad.prompty", "---\ninputs: [answer]\n---\nuser:\n{{ answer }}"),
        ],
    );
    let out = prompty(&dir).args(["check", "--format", "json", "evals/chat.eval.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let items: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<String> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{} {} {}:{}:{} {}",
                d["severity"].as_str().unwrap(),
                d["code"].as_str().unwrap(),
                d["file"].as_str().unwrap(),
                d["line"],
                d["column"],
                d["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            "error eval-unknown-input evals/chat.eval.yaml:9:34 `columns` maps `q` onto `questoin`, which is no input of chat.prompty",
            "error eval-var-kind evals/chat.eval.yaml:6:38 the value of `count` does not fit its input in chat.prompty: expected an integer, found the string `\"many\"`",
            "error eval-missing-input evals/chat.eval.yaml:7:5 the case `two` of the eval file gives no value for `question`, a required input of chat.prompty",
            "error eval-missing-input evals/rows.jsonl:1:null a row of evals/rows.jsonl gives no value for `question`, a required input of chat.prompty",
            "error eval-judge-input evals/chat.eval.yaml:3:5 the judge `judges/bad.prompty` declares the input `answer`, which the runner does not pass",
            "warning eval-judge-output evals/chat.eval.yaml:3:5 the judge `judges/bad.prompty` declares no `outputs`: its answer must then be JSON with `score` (0..1) and `reason`",
            "error eval-tool evals/chat.eval.yaml:4:5 `tool-called` names `get_wether`, which is no tool of chat.prompty",
            "error eval-assertion evals/chat.eval.yaml:7:44 this `equals` assertion gives no `value`, and the case `two` has no `expected` to compare with",
        ]
    );
}

#[test]
fn a_missing_prompt_and_a_broken_dataset_are_errors_at_their_place() {
    let dir = folder(
        "eval-files",
        &[
            ("evals/chat.eval.yaml", "prompt: nope.prompty\ndatasets: [rows.csv, ../outside.jsonl]\n"),
            ("evals/rows.csv", "question\n\"Hi\n"),
            ("outside.jsonl", "{}\n"),
        ],
    );
    let (code, stderr) = check(&dir, &["evals/chat.eval.yaml"]);
    assert_eq!(code, Some(1));
    for message in [
        "error: the prompt `nope.prompty` does not exist (paths are relative to the eval file's folder `evals`)\n --> evals/chat.eval.yaml:1:9",
        "error: a quoted field is never closed: add the closing `\"`\n --> evals/rows.csv:2:1",
        "error: the dataset `../outside.jsonl` lies outside the eval file's folder: move it into that folder (or a folder below it) and name it by its relative path\n --> evals/chat.eval.yaml:2:22",
    ] {
        assert!(stderr.contains(message), "{message}\n---\n{stderr}");
    }
}

#[test]
fn the_eval_file_own_mistakes_are_reported() {
    let dir = folder(
        "eval-parse",
        &[(
            "evals/chat.eval.yaml",
            "prompt: chat.prompty\ncases:\n  - vars: {question: x}\n    assert: [{type: contain, value: x}]\n",
        )],
    );
    let (code, stderr) = check(&dir, &["evals/chat.eval.yaml"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("error: unknown assertion type `contain`\n --> evals/chat.eval.yaml:4:21\n"),
        "{stderr}"
    );
}

#[test]
fn folders_are_searched_for_eval_files() {
    let dir = folder(
        "eval-folder",
        &[
            ("evals/good.eval.yaml", "prompt: chat.prompty\ncases: [{name: one, vars: {question: Hi}}]\n"),
            ("evals/bad.eval.yml", "prompt: chat.prompty\nvars: {questoin: Hi}\n"),
        ],
    );
    let (code, stderr) = check(&dir, &["."]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("error: the var `questoin` is no input of chat.prompty\n --> evals/bad.eval.yml:2:8"),
        "{stderr}"
    );
    assert!(stderr.contains("checked 4 files: 1 error, 0 warnings"), "two prompts, two eval files: {stderr}");
    std::fs::remove_file(dir.join("evals/bad.eval.yml")).unwrap();
    let (code, stderr) = check(&dir, &["evals"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("checked 3 files: 0 errors, 0 warnings"), "{stderr}");
}

/// The diagnostics docs/evals.md shows are what `prompty check` prints (and what the compiler
/// prints, pinned by the UI case).
#[test]
fn the_guide_shows_real_diagnostics() {
    let root = common::root();
    let page = std::fs::read_to_string(root.join("docs/evals.md")).unwrap();
    let blocks: Vec<&str> = page.split("```text\n").skip(1).filter_map(|b| b.split("```").next()).collect();
    let mut shown = 0;
    for block in &blocks {
        if let Some(file) = block.lines().find_map(|l| l.strip_prefix(" --> tests/ui/evals/")) {
            let file = file.split(':').next().unwrap();
            let eval = match file.strip_suffix(".csv") {
                Some(stem) => format!("tests/ui/evals/{stem}.eval.yaml"),
                None => format!("tests/ui/evals/{file}"),
            };
            let (code, stderr) = check(&root, &[eval.as_str()]);
            assert_eq!(code, Some(1));
            let normalize = |s: &str| s.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
            assert!(normalize(&stderr).contains(normalize(block).trim_end()), "{block}\n---\n{stderr}");
            shown += 1;
        }
        if block.contains(" --> ui/eval_misspelt_var.rs") {
            let pinned = std::fs::read_to_string(root.join("tests/ui/eval_misspelt_var.stderr")).unwrap();
            assert!(pinned.starts_with(*block), "{block}\n---\n{pinned}");
            shown += 1;
        }
    }
    assert_eq!(shown, 3, "docs/evals.md shows three diagnostics");
}
