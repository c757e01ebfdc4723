//! The answers to a request that may not pass: `401` and `403` with their
//! `WWW-Authenticate: Bearer` challenge (RFC 6750 §3, RFC 9728 §5.1, MCP authorization),
//! and `503` when the token cannot be checked now. Every word a client reads about a
//! refused token is written here.

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};

use super::verify::TokenError;

/// Why a request does not reach the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rejection {
    /// No bearer token: no `Authorization`, another scheme (`Basic`), or a token
    /// elsewhere than the header (the query string is never read, OAuth 2.1 §5.2).
    Missing,
    /// A bearer token that fails a check.
    Invalid(TokenError),
    /// A valid token without these required scopes.
    InsufficientScope(Vec<String>),
    /// The token cannot be checked now (the issuer's keys or introspection endpoint
    /// cannot be reached): the client should retry, not sign in again.
    Unavailable(String),
}

/// How long a client should wait before retrying after a `503`.
const RETRY_AFTER_SECS: &str = "5";

impl Rejection {
    /// The answer, pointing at the metadata document at `metadata_url`, naming the
    /// `required` scopes where they help the client ask for the right token.
    pub(super) fn response(&self, metadata_url: &str, required: &[String]) -> Response {
        let scope = required.join(" ");
        let (status, challenge, body) = match self {
            Self::Missing => {
                let mut challenge = format!("Bearer resource_metadata=\"{metadata_url}\"");
                if !scope.is_empty() {
                    challenge.push_str(&format!(", scope=\"{scope}\""));
                }
                (
                    StatusCode::UNAUTHORIZED,
                    Some(challenge),
                    format!(
                        "Unauthorized: send an OAuth access token (`Authorization: Bearer <token>`); how to get one: {metadata_url}\n"
                    ),
                )
            }
            Self::Invalid(error) => {
                let description = error.description();
                (
                    StatusCode::UNAUTHORIZED,
                    Some(format!(
                        "Bearer error=\"invalid_token\", error_description=\"{description}\", resource_metadata=\"{metadata_url}\""
                    )),
                    format!("Unauthorized: {description}\n"),
                )
            }
            Self::InsufficientScope(missing) => (
                StatusCode::FORBIDDEN,
                Some(format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\", error_description=\"the access token lacks a required scope\", resource_metadata=\"{metadata_url}\""
                )),
                format!(
                    "Forbidden: the access token lacks the scope{} {}; this endpoint needs: {scope}\n",
                    if missing.len() == 1 { "" } else { "s" },
                    missing.join(", ")
                ),
            ),
            Self::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "Service Unavailable: the access token cannot be checked now (the authorization server cannot be reached); retry later\n".to_owned(),
            ),
        };
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        // The challenge is built from the configuration (URLs and scope tokens checked at
        // start-up) and fixed text, so it is a valid header value; were it not, the
        // status alone still refuses the request.
        if let Some(value) = challenge.and_then(|text| HeaderValue::from_str(&text).ok()) {
            headers.insert(header::WWW_AUTHENTICATE, value);
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        // A browser client reads the challenge only if it is exposed (MCP clients in a
        // browser tab find the metadata document through it).
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("WWW-Authenticate"),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

    fn challenge(rejection: Rejection, required: &[&str]) -> (StatusCode, String) {
        let required: Vec<String> = required.iter().map(|s| (*s).to_owned()).collect();
        let response = rejection.response(URL, &required);
        let header = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        (response.status(), header)
    }

    #[test]
    fn each_rejection_has_its_status_and_challenge() {
        assert_eq!(
            challenge(Rejection::Missing, &[]),
            (
                StatusCode::UNAUTHORIZED,
                format!("Bearer resource_metadata=\"{URL}\"")
            )
        );
        assert_eq!(
            challenge(Rejection::Missing, &["a", "b"]),
            (
                StatusCode::UNAUTHORIZED,
                format!("Bearer resource_metadata=\"{URL}\", scope=\"a b\"")
            )
        );
        let (status, header) = challenge(Rejection::Invalid(TokenError::Expired), &[]);
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(
            header.starts_with("Bearer error=\"invalid_token\""),
            "{header}"
        );
        assert!(
            header.contains(&format!("resource_metadata=\"{URL}\"")),
            "{header}"
        );
        let (status, header) = challenge(
            Rejection::InsufficientScope(vec!["b".to_owned()]),
            &["a", "b"],
        );
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(
            header.contains("error=\"insufficient_scope\", scope=\"a b\""),
            "{header}"
        );
        let (status, header) = challenge(Rejection::Unavailable("down".to_owned()), &[]);
        assert_eq!(
            (status, header.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, "")
        );
    }
}
