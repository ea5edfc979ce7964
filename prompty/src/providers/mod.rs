//! Model providers: request building ("wire") and response processing for OpenAI (chat, embeddings,
//! images, Responses; also Azure OpenAI / Foundry) and Anthropic Messages, plus model discovery.
//!
//! Wire building and processing are plain functions, always compiled; the processors are registered
//! for `openai`, `foundry` (alias `azure`) and `anthropic`. The HTTP executors that send requests
//! are behind the cargo features `openai` and `anthropic`. The `local` provider (a GGUF model run
//! inside the process) is behind the feature `local`, executor and processor both.
//!
//! ```
//! for provider in ["openai", "foundry", "azure", "anthropic"] {
//!     assert!(prompty::get_processor(provider).is_ok());
//! }
//! ```

pub mod anthropic;
pub(crate) mod common;
pub mod discovery;
#[cfg(feature = "local")]
pub mod local;
pub mod openai;

/// The HTTP layer under its former path: the same module as [`crate::http`].
pub use crate::http;

/// The models a provider's endpoint lists (spec §15), dispatched on the provider key as
/// `model.provider` names it: `openai` (any OpenAI-compatible server: `GET {endpoint}/models`),
/// `anthropic`, and `local` (the model aliases and the GGUF files in the cache folder, see
/// `providers::local::list_models`; no request, the connection is not read). The connection is resolved as the provider's executor resolves it (`None`: endpoint
/// and key from the environment, see [`openai::OpenAiExecutor`] and
/// [`anthropic::AnthropicExecutor`]). Discovery is never needed to run a prompt.
///
/// A provider without discovery (`foundry`/`azure` among them), or whose cargo feature is off, is
/// an error naming it.
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// // OPENAI_BASE_URL=http://127.0.0.1:8080/v1 lists what a local server serves.
/// for model in prompty::list_models("openai", None).await? {
///     println!("{}", model.id);
/// }
/// # Ok(()) }
/// ```
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let err = prompty::list_models("azure", None).await.unwrap_err();
/// assert!(err.to_string().contains("'azure'"));
/// # });
/// ```
///
// Without their features the executors are not compiled: their links lead to the features.
#[cfg_attr(not(feature = "openai"), doc = "[`openai::OpenAiExecutor`]: crate#cargo-features")]
#[cfg_attr(not(feature = "anthropic"), doc = "[`anthropic::AnthropicExecutor`]: crate#cargo-features")]
pub async fn list_models(
    provider: &str,
    connection: Option<&crate::Connection>,
) -> crate::Result<Vec<discovery::ModelInfo>> {
    let _ = connection;
    let missing = || crate::Error::Execution {
        message: format!("model discovery for '{provider}' needs prompty's cargo feature `{provider}`"),
    };
    match provider {
        "openai" => {
            #[cfg(feature = "openai")]
            return openai::list_models(connection).await;
            #[cfg(not(feature = "openai"))]
            Err(missing())
        }
        "anthropic" => {
            #[cfg(feature = "anthropic")]
            return anthropic::list_models(connection).await;
            #[cfg(not(feature = "anthropic"))]
            Err(missing())
        }
        "local" => {
            #[cfg(feature = "local")]
            return local::list_models();
            #[cfg(not(feature = "local"))]
            Err(missing())
        }
        other => {
            let _ = missing;
            Err(crate::Error::Execution {
                message: format!(
                    "model discovery is not available for provider '{other}' (it is for openai, anthropic and local)"
                ),
            })
        }
    }
}
