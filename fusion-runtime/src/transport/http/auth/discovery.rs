//! Finding the issuer's keys: its authorization server metadata (RFC 8414), or its OpenID
//! Connect configuration, at the well-known URLs the MCP authorization specification lists,
//! in its order.

use reqwest::Url;
use serde::Deserialize;

use super::fetch::{FetchError, Fetcher};

/// What the resource server needs from the issuer's metadata.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct IssuerMetadata {
    pub(super) issuer: String,
    #[serde(default)]
    pub(super) jwks_uri: Option<String>,
}

/// Why the issuer's metadata could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum DiscoveryError {
    #[error("no authorization server metadata at {}", .tried.join(", "))]
    NotFound { tried: Vec<String> },
    #[error("cannot fetch the issuer's metadata: {0}")]
    Fetch(FetchError),
    #[error(
        "the metadata at {url} names the issuer {found:?}, not {expected:?} (RFC 8414 §3.3: they must be identical)"
    )]
    WrongIssuer {
        url: String,
        found: String,
        expected: String,
    },
    #[error("the metadata at {url} has no usable jwks_uri")]
    NoJwksUri { url: String },
}

/// The URLs to try, in order (MCP authorization, "Authorization Server Metadata
/// Discovery"): for an issuer without a path, RFC 8414's then OpenID's well-known URL; with
/// a path, the path-insertion forms of both, then OpenID's path-appended form.
pub(super) fn candidate_urls(issuer: &Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// The issuer's metadata and the URL it came from. A candidate that answers 4xx is
/// skipped; any other failure ends the discovery (an unreachable issuer is not retried at
/// each candidate's timeout).
pub(super) async fn discover(
    fetcher: &Fetcher,
    issuer: &Url,
    expected: &str,
) -> Result<(IssuerMetadata, Url), DiscoveryError> {
    let candidates = candidate_urls(issuer);
    for url in &candidates {
        let metadata = match fetcher.get_json::<IssuerMetadata>(url).await {
            Ok(metadata) => metadata,
            Err(error) if error.is_client_error() => continue,
            Err(error) => return Err(DiscoveryError::Fetch(error)),
        };
        if metadata.issuer != expected {
            return Err(DiscoveryError::WrongIssuer {
                url: url.clone(),
                found: metadata.issuer,
                expected: expected.to_owned(),
            });
        }
        let jwks_uri = metadata
            .jwks_uri
            .as_deref()
            .and_then(|text| Url::parse(text).ok())
            .filter(|jwks| matches!(jwks.scheme(), "http" | "https"))
            .ok_or_else(|| DiscoveryError::NoJwksUri { url: url.clone() })?;
        return Ok((metadata, jwks_uri));
    }
    Err(DiscoveryError::NotFound { tried: candidates })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(issuer: &str) -> Vec<String> {
        candidate_urls(&Url::parse(issuer).expect("a URL"))
    }

    #[test]
    fn well_known_urls_insert_the_issuer_path() {
        assert_eq!(
            urls("https://id.example.com"),
            [
                "https://id.example.com/.well-known/oauth-authorization-server",
                "https://id.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("https://id.example.com:8443/realms/acme/"),
            [
                "https://id.example.com:8443/.well-known/oauth-authorization-server/realms/acme",
                "https://id.example.com:8443/.well-known/openid-configuration/realms/acme",
                "https://id.example.com:8443/realms/acme/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("http://127.0.0.1:9000/"),
            [
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9000/.well-known/openid-configuration",
            ]
        );
    }
}
