//! TLS for the HTTP clients fusion makes (the OAuth issuer's fetcher, the OTLP exporter):
//! rustls with the *ring* provider and the platform's root certificates, one setup for both.

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
