//! Fetching JSON from the issuer, bounded: a timeout on the whole exchange and a cap on the
//! body, so that a slow or hostile issuer can neither hang a request nor fill memory.

use std::time::Duration;

use reqwest::{Client, RequestBuilder, StatusCode, redirect};
use serde::de::DeserializeOwned;

/// The largest document read from the issuer (metadata, JWKS, introspection). The JWKS of
/// large identity providers is a few kilobytes.
pub(super) const MAX_DOCUMENT_BYTES: usize = 512 * 1024;

/// Redirects followed: an identity provider may move its well-known documents, and a loop
/// must end.
const MAX_REDIRECTS: usize = 5;

/// Why a document could not be had. Its text names the URL and the reason; never a token.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum FetchError {
    #[error("{url}: no answer within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    #[error("{url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: the document is larger than {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge { url: String },
    #[error("{url}: the document is not the JSON expected: {reason}")]
    NotJson { url: String, reason: String },
}

impl FetchError {
    /// The issuer answered that the document is not there (4xx): discovery tries its next
    /// candidate URL.
    pub(super) fn is_client_error(&self) -> bool {
        matches!(self, Self::Status { status, .. } if (400..500).contains(status))
    }
}

/// An HTTP client for the issuer, with TLS through rustls (the *ring* provider) and the
/// platform's root certificates.
#[derive(Clone)]
pub(super) struct Fetcher {
    client: Client,
    timeout: Duration,
}

impl Fetcher {
    pub(super) fn new(timeout: Duration) -> Result<Self, String> {
        let tls = crate::tls::client_config()
            .map_err(|error| format!("for the OAuth issuer: {error}"))?;
        let client = Client::builder()
            .tls_backend_preconfigured(tls)
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(redirect::Policy::custom(|attempt| {
                // A redirect from https to plain http would hand the keys to anyone on
                // the path: refused, as is a loop.
                let downgrade = attempt.url().scheme() == "http"
                    && attempt.previous().iter().any(|url| url.scheme() == "https");
                if downgrade || attempt.previous().len() > MAX_REDIRECTS {
                    attempt.stop()
                } else {
                    attempt.follow()
                }
            }))
            .user_agent(concat!("fusion/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| {
                format!("cannot build the HTTP client for the OAuth issuer: {error}")
            })?;
        Ok(Self { client, timeout })
    }

    /// `GET url`, its body as `T`.
    pub(super) async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, FetchError> {
        self.json(url, self.client.get(url)).await
    }

    /// `POST url` with a form body, as `client_id`:`client_secret` (HTTP Basic, each
    /// form-encoded first, RFC 6749 §2.3.1), its body as `T`.
    pub(super) async fn post_form_json<T: DeserializeOwned>(
        &self,
        url: &str,
        form: String,
        client_id: &str,
        client_secret: &str,
    ) -> Result<T, FetchError> {
        let encode =
            |text: &str| form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        let request = self
            .client
            .post(url)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .basic_auth(encode(client_id), Some(encode(client_secret)))
            .body(form);
        self.json(url, request).await
    }

    async fn json<T: DeserializeOwned>(
        &self,
        url: &str,
        request: RequestBuilder,
    ) -> Result<T, FetchError> {
        let request = request.header(reqwest::header::ACCEPT, "application/json");
        // reqwest's own timeout covers the exchange too; this one also bounds the body
        // read below whatever reqwest does, so the bound does not depend on its internals.
        let body = tokio::time::timeout(self.timeout, read_limited(url, request))
            .await
            .map_err(|_| FetchError::Timeout {
                url: url.to_owned(),
                timeout: self.timeout,
            })??;
        serde_json::from_slice(&body).map_err(|error| FetchError::NotJson {
            url: url.to_owned(),
            reason: error.to_string(),
        })
    }
}

/// The body of a successful answer, at most [`MAX_DOCUMENT_BYTES`].
async fn read_limited(url: &str, request: RequestBuilder) -> Result<Vec<u8>, FetchError> {
    let unreachable = |error: reqwest::Error| {
        if error.is_timeout() {
            FetchError::Unreachable {
                url: url.to_owned(),
                reason: "timed out".to_owned(),
            }
        } else {
            FetchError::Unreachable {
                url: url.to_owned(),
                reason: crate::tls::without_url(&error),
            }
        }
    };
    let mut response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    if status != StatusCode::OK {
        return Err(FetchError::Status {
            url: url.to_owned(),
            status: status.as_u16(),
        });
    }
    let too_large = || FetchError::TooLarge {
        url: url.to_owned(),
    };
    if response
        .content_length()
        .is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
