//! TLS: the rustls crypto provider every HTTP client of prompty (providers, OpenAPI and MCP
//! tools, the OTLP exporter) is built with.

/// Installs the crypto provider of prompty's TLS feature (`tls-aws-lc` when on, else `tls-ring`)
/// as rustls's process-wide default, unless the program installed one already; returns whether a
/// default provider is in place.
///
/// prompty builds reqwest without a provider of its own and calls this before it builds an HTTP
/// client. A program that builds its own `reqwest::Client` before prompty has built one calls it
/// first (or installs a provider with rustls itself).
///
/// ```
/// assert!(prompty::providers::http::ensure_tls_provider());
/// assert!(prompty::providers::http::HttpClient::shared().reqwest().is_some());
/// ```
pub fn ensure_tls_provider() -> bool {
    use rustls::crypto::CryptoProvider;
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        #[cfg(feature = "tls-aws-lc")]
        let provider = Some(rustls::crypto::aws_lc_rs::default_provider());
        #[cfg(all(feature = "tls-ring", not(feature = "tls-aws-lc")))]
        let provider = Some(rustls::crypto::ring::default_provider());
        #[cfg(not(any(feature = "tls-ring", feature = "tls-aws-lc")))]
        let provider: Option<CryptoProvider> = None;
        if let Some(provider) = provider.filter(|_| CryptoProvider::get_default().is_none()) {
            // Another thread may have installed one meanwhile: theirs stays.
            let _ = provider.install_default();
        }
    });
    CryptoProvider::get_default().is_some()
}
