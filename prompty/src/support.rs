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

/// Reads a file of at most `max` bytes as UTF-8; a larger file is an error saying the limit.
pub(crate) fn read_to_string_bounded(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.take(max + 1).read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(std::io::Error::other(format!("larger than the limit of {max} bytes")));
    }
    Ok(text)
}
