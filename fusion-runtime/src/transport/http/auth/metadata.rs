//! This server's OAuth protected resource metadata (RFC 9728): the document, the URL the
//! `401` challenge points at, and the well-known routes that serve it without
//! authentication, to browsers too.

use axum::{
    Router,
    http::{HeaderValue, StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use reqwest::Url;
use serde::Serialize;

/// RFC 9728 §3: the well-known URI suffix.
pub(super) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata document (RFC 9728 §2). Only members with something to say are written.
#[derive(Debug, Serialize)]
pub(super) struct ResourceMetadata {
    /// The resource identifier: the URL tokens must name in their audience.
    pub(super) resource: String,
    /// Where clients get tokens (issuer identifiers, RFC 8414).
    pub(super) authorization_servers: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) scopes_supported: Vec<String>,
    /// Only the `Authorization` header: OAuth 2.1 forbids tokens in the query string, and
    /// a body is JSON-RPC here, not a form.
    pub(super) bearer_methods_supported: [&'static str; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) resource_name: Option<String>,
}

/// The URL of the metadata for `resource` (RFC 9728 §3.1): the well-known suffix inserted
/// between the host and the path, a path of just `/` dropped.
pub(super) fn metadata_url(resource: &Url) -> String {
    let origin = resource.origin().ascii_serialization();
    match resource.path() {
        "" | "/" => format!("{origin}{WELL_KNOWN}"),
        path => format!("{origin}{WELL_KNOWN}{path}"),
    }
}

/// The paths that serve the document: the bare well-known path (clients that do not
/// insert the path, MCP's fallback), the path-suffixed form for the MCP endpoint, and the
/// one for the resource URL's own path when a proxy serves the endpoint under another.
pub(super) fn paths(resource: &Url, mcp_path: &str) -> Vec<String> {
    let mut paths = vec![WELL_KNOWN.to_owned()];
    for path in [mcp_path, resource.path()] {
        if path != "/" && !path.is_empty() {
            let suffixed = format!("{WELL_KNOWN}{path}");
            if !paths.contains(&suffixed) {
                paths.push(suffixed);
            }
        }
    }
    paths
}

/// `GET` (and the CORS preflight) of `document` at each of `paths`.
pub(super) fn routes(document: String, paths: &[String]) -> Router {
    let mut router = Router::new();
    for path in paths {
        let body = document.clone();
        router = router.route(
            path,
            get(move || {
                let body = body.clone();
                async move {
                    (
                        [
                            (
                                header::CONTENT_TYPE,
                                HeaderValue::from_static("application/json"),
                            ),
                            // Browser-based MCP clients fetch it from another origin.
                            (
                                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                                HeaderValue::from_static("*"),
                            ),
                        ],
                        body,
                    )
                }
            })
            .options(|| async {
                (
                    StatusCode::NO_CONTENT,
                    [
                        (
                            header::ACCESS_CONTROL_ALLOW_ORIGIN,
                            HeaderValue::from_static("*"),
                        ),
                        (
                            header::ACCESS_CONTROL_ALLOW_METHODS,
                            HeaderValue::from_static("GET, OPTIONS"),
                        ),
                        (
                            header::ACCESS_CONTROL_ALLOW_HEADERS,
                            HeaderValue::from_static("*"),
                        ),
                        (
                            header::ACCESS_CONTROL_MAX_AGE,
                            HeaderValue::from_static("86400"),
                        ),
                    ],
                )
                    .into_response()
            }),
        );
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a URL")
    }

    #[test]
    fn the_metadata_url_inserts_the_well_known_suffix() {
        assert_eq!(
            metadata_url(&url("http://127.0.0.1:8931/mcp")),
            "http://127.0.0.1:8931/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url(&url("https://mcp.example.com/")),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            metadata_url(&url("https://mcp.example.com:443/tenant/mcp")),
            "https://mcp.example.com/.well-known/oauth-protected-resource/tenant/mcp"
        );
        assert_eq!(
            paths(&url("https://mcp.example.com/api/mcp"), "/mcp"),
            [
                WELL_KNOWN.to_owned(),
                format!("{WELL_KNOWN}/mcp"),
                format!("{WELL_KNOWN}/api/mcp")
            ]
        );
        assert_eq!(
            paths(&url("http://127.0.0.1:1/mcp"), "/mcp"),
            [WELL_KNOWN.to_owned(), format!("{WELL_KNOWN}/mcp")]
        );
    }

    #[test]
    fn the_document_has_the_rfc_9728_members() {
        let document = ResourceMetadata {
            resource: "https://mcp.example.com/mcp".to_owned(),
            authorization_servers: vec!["https://id.example.com".to_owned()],
            scopes_supported: Vec::new(),
            bearer_methods_supported: ["header"],
            resource_name: None,
        };
        assert_eq!(
            serde_json::to_value(&document).expect("JSON"),
            serde_json::json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://id.example.com"],
                "bearer_methods_supported": ["header"],
            })
        );
    }
}
