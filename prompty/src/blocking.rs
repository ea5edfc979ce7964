//! The runtime's one way to wait for a future from sync code, and to run work that must outlive
//! the caller's runtime.
//!
//! Both use one process-wide tokio runtime (one worker thread, `prompty-runtime`), started on
//! first use:
//! - [`block_on`] waits for a future from sync code (the sync `invoke`, `turn`, tool calls, catalog
//!   loads). Pooled HTTP connections live on this runtime, so they outlive every call; a runtime
//!   made per call would leave them dead.
//! - [`on_runtime`] runs a future on it and awaits the result from any runtime: an MCP server
//!   started for one request keeps running for the next instead of dying with the runtime of the
//!   call that started it.
//! - [`spawn`] starts a task that belongs to no caller (an MCP session's idle timer, the close
//!   of a session whose last handle dropped): it runs on this runtime, which lives as long as the
//!   process, whichever runtime (if any) the caller is on.
//! - [`unblock`] runs blocking work (a SQLite transaction that waits for a file lock and an fsync)
//!   on its blocking pool and awaits it from any runtime, a current-thread one included, without
//!   stalling that runtime's thread.

use crate::{Error, Result};
use std::future::Future;
use std::sync::LazyLock;

static RUNTIME: LazyLock<std::result::Result<tokio::runtime::Runtime, String>> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("prompty-runtime")
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
});

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    RUNTIME.as_ref().map_err(|e| Error::Task(format!("cannot start prompty's tokio runtime: {e}")))
}

/// Runs `future` to completion from sync code on the shared runtime; the current trace span goes
/// along. Inside an async context (where blocking the thread's runtime would panic) it blocks a
/// scoped helper thread, not the runtime. A panic of the future is resumed in the caller.
pub(crate) fn block_on<F: Future + Send>(future: F) -> Result<F::Output>
where
    F::Output: Send,
{
    let rt = runtime()?;
    let future = crate::trace::carry(future);
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| match s.spawn(|| rt.block_on(future)).join() {
            Ok(out) => Ok(out),
            Err(payload) => std::panic::resume_unwind(payload),
        })
    } else {
        Ok(rt.block_on(future))
    }
}

/// Runs `future` as a task of the shared runtime and awaits its output from any runtime (or from
/// [`block_on`]). `what` names the work in the error when the task fails (`an MCP task`).
#[cfg_attr(not(any(feature = "mcp", feature = "postgres")), allow(dead_code))]
pub(crate) async fn on_runtime<T: Send + 'static>(
    what: &str,
    future: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    runtime()?.spawn(future).await.map_err(|e| Error::Task(format!("{what} failed: {e}")))?
}

/// Starts `future` as a task of the shared runtime, from sync or async code; its abort handle, or
/// `None` when the runtime cannot be started (the reason is logged).
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn spawn(future: impl Future<Output = ()> + Send + 'static) -> Option<tokio::task::AbortHandle> {
    match runtime() {
        Ok(rt) => Some(rt.spawn(future).abort_handle()),
        Err(e) => {
            tracing::warn!(error = %e, "a background task could not be started");
            None
        }
    }
}

/// Runs blocking `work` on the shared runtime's blocking pool and awaits its output from any
/// runtime. `what` names the work in the error when it panics (`a SQLite transaction`). The work
/// runs to its end even when the awaiting future is dropped.
#[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
pub(crate) async fn unblock<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    runtime()?.spawn_blocking(work).await.map_err(|e| Error::Task(format!("{what} failed: {e}")))
}
