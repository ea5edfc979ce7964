//! What `tracing` wrote, kept in memory for a test to read: a writer into a shared buffer
//! ([`Captured`], for a subscriber of the test's own) and the process-wide subscriber of a test
//! binary ([`global`]).

#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// A writer into a shared buffer; clones write into the same one.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The buffer of this test binary's global subscriber (no colours), installed by the first call
/// with the `level` of that call.
pub fn global(level: tracing::Level) -> &'static Captured {
    static LOG: OnceLock<Captured> = OnceLock::new();
    LOG.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        captured
    })
}
