//! Running a future to completion from sync code, also from inside a tokio runtime.

use std::future::Future;

/// Runs `future` to completion on a current-thread tokio runtime. Inside an async context (where
/// blocking the thread's runtime would panic), it runs on a scoped helper thread instead.
pub(crate) fn block_on<F: Future + Send>(future: F) -> crate::Result<F::Output>
where
    F::Output: Send,
{
    // The current span goes along to the helper thread.
    let future = crate::trace::carry(future);
    let run = move || match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => Ok(rt.block_on(future)),
        Err(e) => Err(e),
    };
    let result = if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| s.spawn(run).join())
    } else {
        Ok(run())
    };
    match result {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(e)) => Err(crate::Error::Task(format!("cannot start a tokio runtime for a blocking call: {e}"))),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}
