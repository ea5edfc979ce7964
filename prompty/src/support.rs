//! Small helpers every layer of the runtime may use; this module imports nothing of prompty.

/// The text of a panic's payload (`&str` or `String`), for the error or event that reports it.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
