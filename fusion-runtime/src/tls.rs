//! The HTTP clients fusion makes (the OAuth issuer's fetcher, the OTLP exporter, a mounted
//! upstream): their TLS, rustls with the *ring* provider and the platform's root
//! certificates, one setup for all; and the words of their errors.

use std::sync::Arc;

/// A client configuration: TLS 1.2 and 1.3, certificates checked by the platform's verifier.
pub(crate) fn client_config() -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| {
            rustls_platform_verifier::BuilderVerifierExt::with_platform_verifier(builder)
        })
        .map_err(|error| format!("cannot set up TLS: {error}"))?
        .with_no_client_auth())
}

/// reqwest's error text without the URL it repeats (which may carry credentials in its
/// query; the caller names the URL once, or not at all), with its causes.
#[cfg(any(feature = "oauth", feature = "upstream"))]
pub(crate) fn without_url(error: &reqwest::Error) -> String {
    let mut reason = error.to_string();
    if let Some(url) = error.url() {
        reason = reason.replace(&format!(" ({url})"), "");
    }
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        reason.push_str(": ");
        reason.push_str(&cause.to_string());
        source = cause.source();
    }
    reason
}
