//! A real editor as the client of `prompty lsp`: Neovim (Debian's `neovim`, 0.7 or later), headless
//! and isolated (`--clean`, no shada, no swap file, its XDG folders and HOME in a scratch folder),
//! opens a broken `.prompty` file with the server configured exactly as docs/editors.md shows for
//! Neovim 0.7 (the block is read from the page; `prompty` on the PATH is this test's binary). The
//! test's Lua records every `textDocument/publishDiagnostics` Neovim receives and what
//! `vim.diagnostic.get` then holds, edits the buffer twice (a whole line with
//! `nvim_buf_set_lines`, then a word after non-ASCII letters with `nvim_buf_set_text`, which Neovim
//! sends as incremental changes counted in UTF-16), stops the server and writes it all as JSON; the
//! test compares it with what `prompty check` reports for the same file.

// Debian's Neovim, and `prompty` put on the PATH as a symbolic link.
#![cfg(unix)]

mod common;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long Neovim may take for the whole scenario.
const DEADLINE: Duration = Duration::from_secs(90);

/// The broken prompt: an unknown model option (line 7), an unused input (9), a misspelt property
/// after non-ASCII letters (17) and a misspelt variable (20).
const BROKEN: &str = "---
name: support
model:
  id: gpt-4o
  provider: openai
  options:
    temprature: 0.2
inputs:
  question:
    kind: string
  customer:
    kind: object
    properties:
      name: {kind: string}
---
system:
Réponds à {{ customer.nmae }} poliment.

user:
{{ questoin | upper }}
";

/// What the test adds before the configuration of docs/editors.md: Neovim kept apart from the
/// machine's, every publishDiagnostics Neovim receives recorded (then handled as Neovim does),
/// and the server's exit code.
const PRELUDE: &str = r#"
local out = assert(os.getenv('PROMPTY_NVIM_OUT'))
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'

local function finish(result)
  local f = assert(io.open(out, 'w'))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd('qall!')
end

local published = {}
local on_publish = vim.lsp.handlers['textDocument/publishDiagnostics']
vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
  table.insert(published, result)
  return on_publish(err, result, ctx, config)
end

local exited = nil
local start_client = vim.lsp.start_client
vim.lsp.start_client = function(config)
  config.on_exit = function(code, signal) exited = { code = code, signal = signal } end
  return start_client(config)
end
"#;

/// The scenario, run once Neovim has opened the file.
const SCENARIO: &str = r#"
local function wait_for_more(n, what)
  assert(vim.wait(20000, function() return #published > n end, 10), 'no diagnostics within 20 s ' .. what)
end

local function step(buf)
  local s = { published = published[#published], held = vim.diagnostic.get(buf) }
  s.version = vim.lsp.util.buf_versions[buf]
  return s
end

vim.api.nvim_create_autocmd('VimEnter', {
  callback = function()
    local ok, err = pcall(function()
      local buf = vim.api.nvim_get_current_buf()
      local result = { filetype = vim.bo[buf].filetype }
      wait_for_more(0, 'after opening the file')
      result.clients = #vim.lsp.buf_get_clients(buf)
      result.opened = step(buf)
      -- Line 20 (0-based 19) rewritten: `questoin` becomes `question`.
      local n = #published
      vim.api.nvim_buf_set_lines(buf, 19, 20, true, { '{{ question | upper }}' })
      wait_for_more(n, 'after nvim_buf_set_lines')
      result.line_set = step(buf)
      -- `nmae` on line 17 (0-based 16) becomes `name`: bytes 24..28, after `é` and `à`.
      n = #published
      vim.api.nvim_buf_set_text(buf, 16, 24, 16, 28, { 'name' })
      wait_for_more(n, 'after nvim_buf_set_text')
      result.text_set = step(buf)
      result.lines = vim.api.nvim_buf_get_lines(buf, 0, -1, true)
      vim.lsp.stop_client(vim.lsp.get_active_clients())
      assert(vim.wait(20000, function() return exited ~= nil end, 10), 'the server did not exit within 20 s')
      result.exited = exited
      finish(result)
    end)
    if not ok then finish({ error = tostring(err) }) end
  end,
})
"#;

/// The Neovim 0.7 configuration of docs/editors.md, as written there.
fn documented_configuration() -> String {
    let page = std::fs::read_to_string(common::root().join("docs").join("editors.md")).unwrap();
    let section = page.split("### Neovim 0.7\n").nth(1).expect("docs/editors.md has a `### Neovim 0.7` section");
    let block = section.split("```text\n").nth(1).and_then(|b| b.split("\n```").next()).expect("a text block");
    assert!(
        block.contains("vim.lsp.start_client(") && block.contains("cmd = { 'prompty', 'lsp' }"),
        "the Neovim 0.7 block of docs/editors.md starts `prompty lsp`:\n{block}"
    );
    block.to_owned()
}

/// What Neovim reported: the scenario's JSON.
fn run_neovim(dir: &Path) -> Value {
    let nvim = Command::new("nvim").arg("--version").output();
    let version = match nvim {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_owned(),
        _ => panic!(
            "`nvim` is not installed: this test drives Neovim as a real client of `prompty lsp`; \
             install Debian's neovim (`apt-get install neovim`, 0.7 or later)"
        ),
    };
    assert!(version.starts_with("NVIM v"), "`nvim --version` says {version:?}: not Neovim");
    let xdg = dir.join("xdg");
    let (init, out) = (dir.join("init.lua"), dir.join("neovim.json"));
    std::fs::write(&init, format!("{PRELUDE}\n{}\n{SCENARIO}", documented_configuration())).unwrap();
    // `prompty` on the PATH, as the documentation assumes: this test's binary.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(common::bin(), bin.join("prompty")).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let mut nvim = Command::new("nvim");
    nvim.args(["--headless", "--clean", "-n", "-i", "NONE", "-u"])
        .arg(&init)
        .arg("broken.prompty")
        .current_dir(dir)
        .env("PROMPTY_NVIM_OUT", &out)
        .env("PATH", path)
        .env("HOME", dir)
        .env("NVIM_LOG_FILE", dir.join("nvim.log"))
        .env_remove("NVIM")
        .env_remove("NVIM_LISTEN_ADDRESS")
        .env_remove("VIMINIT")
        .env_remove("MYVIMRC")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"] {
        let sub = xdg.join(var.to_lowercase());
        std::fs::create_dir_all(&sub).unwrap();
        nvim.env(var, sub);
    }
    for var in common::CLEARED {
        nvim.env_remove(var);
    }
    let mut child = nvim.spawn().expect("start nvim");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!("Neovim did not finish within {DEADLINE:?}; stderr: {}", String::from_utf8_lossy(&output.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "nvim exited with {status}; stderr: {stderr}");
    let text =
        std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("Neovim wrote no result ({e}); stderr: {stderr}"));
    let result: Value = serde_json::from_str(&text).unwrap();
    assert!(result.get("error").is_none(), "the scenario failed in Neovim: {}; stderr: {stderr}", result["error"]);
    result
}

/// `(code, start line, start character, end line, end character)` of published diagnostics.
fn published(step: &Value) -> Vec<(String, u64, u64, u64, u64)> {
    let at = |d: &Value, end: &str, key: &str| d["range"][end][key].as_u64().unwrap();
    step["published"]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let code = d["code"].as_str().unwrap().to_owned();
            (code, at(d, "start", "line"), at(d, "start", "character"), at(d, "end", "line"), at(d, "end", "character"))
        })
        .collect()
}

/// `(code, line, byte column, end byte column, severity)` of what `vim.diagnostic.get` holds,
/// sorted by place.
fn held(step: &Value) -> Vec<(String, u64, u64, u64, u64)> {
    let mut out: Vec<_> = step["held"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let n = |k: &str| d[k].as_u64().unwrap();
            (d["code"].as_str().unwrap().to_owned(), n("lnum"), n("col"), n("end_col"), n("severity"))
        })
        .collect();
    out.sort_by_key(|d| (d.1, d.2));
    out
}

#[test]
fn neovim_receives_the_diagnostics_of_a_broken_prompt_and_their_updates() {
    let dir = common::scratch("lsp-neovim");
    std::fs::write(dir.join("broken.prompty"), BROKEN).unwrap();

    // What the analysis reports for the file, as `prompty check` prints it (1-based, characters).
    let check = common::prompty(&dir).args(["check", "broken.prompty", "--format", "json"]).output().unwrap();
    let check: Value = serde_json::from_slice(&check.stdout).unwrap();
    let expected: Vec<(String, u64, u64)> = check
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap().to_owned(), d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        expected,
        [
            ("unknown-model-option".to_owned(), 7, 5),
            ("unused-input".to_owned(), 9, 3),
            ("unknown-property".to_owned(), 17, 23),
            ("undeclared-variable".to_owned(), 20, 4),
        ]
    );

    let result = run_neovim(&dir);
    assert_eq!(result["filetype"], "prompty");
    assert_eq!(result["clients"], 1);

    // On open: every diagnostic of the analysis, at the token (0-based lines, UTF-16 characters:
    // `é` and `à` are one unit each, so the characters are the check's columns less one).
    let opened = published(&result["opened"]);
    let starts: Vec<(String, u64, u64)> = opened.iter().map(|d| (d.0.clone(), d.1 + 1, d.2 + 1)).collect();
    assert_eq!(starts, expected, "{:#}", result["opened"]);
    assert_eq!(
        opened,
        [
            ("unknown-model-option".to_owned(), 6, 4, 6, 14),
            ("unused-input".to_owned(), 8, 2, 8, 10),
            ("unknown-property".to_owned(), 16, 22, 16, 26),
            ("undeclared-variable".to_owned(), 19, 3, 19, 11),
        ]
    );
    let first = &result["opened"]["published"];
    assert!(first["uri"].as_str().unwrap().ends_with("/broken.prompty"), "{first}");
    assert_eq!(first["version"], result["opened"]["version"], "diagnostics for the version Neovim has");
    let message = |i: usize| first["diagnostics"][i]["message"].as_str().unwrap().to_owned();
    assert!(message(3).contains("did you mean `question`?"), "{}", message(3));
    assert_eq!(first["diagnostics"][3]["severity"], 1);
    assert_eq!(first["diagnostics"][0]["severity"], 2);
    assert_eq!(first["diagnostics"][0]["source"], "prompty");
    // What Neovim holds after its own handling: byte columns (`é` and `à` are two bytes each).
    assert_eq!(
        held(&result["opened"]),
        [
            ("unknown-model-option".to_owned(), 6, 4, 14, 2),
            ("unused-input".to_owned(), 8, 2, 10, 2),
            ("unknown-property".to_owned(), 16, 24, 28, 1),
            ("undeclared-variable".to_owned(), 19, 3, 11, 1),
        ]
    );

    // After `nvim_buf_set_lines` fixed `questoin`: the variable is used, nothing else moved.
    let line_set = &result["line_set"];
    assert!(line_set["version"].as_u64() > result["opened"]["version"].as_u64(), "{line_set:#}");
    assert_eq!(line_set["published"]["version"], line_set["version"]);
    assert_eq!(
        published(line_set),
        [("unknown-model-option".to_owned(), 6, 4, 6, 14), ("unknown-property".to_owned(), 16, 22, 16, 26)]
    );
    assert_eq!(
        held(line_set),
        [("unknown-model-option".to_owned(), 6, 4, 14, 2), ("unknown-property".to_owned(), 16, 24, 28, 1)]
    );

    // After `nvim_buf_set_text` fixed `nmae` (an incremental change after two non-ASCII letters):
    // the server applied it where Neovim did, so only the model option is left.
    let text_set = &result["text_set"];
    assert_eq!(text_set["published"]["version"], text_set["version"]);
    assert_eq!(published(text_set), [("unknown-model-option".to_owned(), 6, 4, 6, 14)]);
    assert_eq!(held(text_set), [("unknown-model-option".to_owned(), 6, 4, 14, 2)]);
    assert_eq!(result["lines"][16], "Réponds à {{ customer.name }} poliment.");

    // Neovim stopped the server (shutdown, exit): it exited cleanly.
    assert_eq!(result["exited"]["code"], 0, "{:#}", result["exited"]);
    assert_eq!(result["exited"]["signal"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}
