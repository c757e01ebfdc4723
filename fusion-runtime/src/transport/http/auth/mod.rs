//! The OAuth 2.1 resource server in front of the Streamable HTTP endpoint (feature
//! `oauth`; MCP authorization 2025-06-18 and 2025-11-25, RFC 9728, RFC 6750, RFC 8707):
//!
//! - [`config`]: [`OAuth`], what the server trusts and checks, and its start-up checks;
//! - [`metadata`]: this server's RFC 9728 document and the well-known routes serving it;
//! - [`discovery`]: the issuer's RFC 8414 / OpenID metadata, for its `jwks_uri`;
//! - [`fetch`]: bounded fetches from the issuer (timeout, size cap);
//! - [`jwks`]: the issuer's keys, cached, refetched on an unknown key id (rate-limited,
//!   single flight);
//! - [`verify`]: a JWT's header, key, signature and claims;
//! - [`introspect`]: opaque tokens through RFC 7662;
//! - [`challenge`]: the `401`/`403`/`503` answers and their `WWW-Authenticate`.
//!
//! This file is the step the HTTP guard runs: [`Authenticator::authorize`] takes a request
//! and gives it back with the token's claims in its extensions
//! ([`VerifiedClaims`](crate::identity::VerifiedClaims)), or the answer that refuses it.

mod challenge;
mod config;
mod discovery;
mod fetch;
mod introspect;
mod jwks;
mod metadata;
mod verify;

use axum::{
    Router,
    extract::Request,
    http::{HeaderMap, header},
    response::Response,
};

pub use self::config::{JwtAlgorithm, OAuth};
use self::{
    challenge::Rejection,
    fetch::Fetcher,
    introspect::Introspector,
    jwks::KeyCache,
    metadata::ResourceMetadata,
    verify::{JwsHeader, JwtVerifier, MAX_TOKEN_BYTES, TokenError},
};
use crate::identity::{Claims, VerifiedClaims};

/// A running resource server: the checked configuration, the key cache, the document.
pub(crate) struct Authenticator {
    metadata_url: String,
    document: String,
    paths: Vec<String>,
    required_scopes: Vec<String>,
    verifier: JwtVerifier,
    introspector: Option<Introspector>,
}

impl Authenticator {
    /// The resource server for `config`, serving the MCP endpoint at `mcp_path`, whose
    /// URL at the bound address is `local_url` (the resource URL unless the configuration
    /// sets one); `server_name` names the resource in the metadata. A configuration
    /// mistake is an `Err` to report before serving (exit 78).
    pub(crate) fn new(
        config: &OAuth,
        local_url: &str,
        mcp_path: &str,
        server_name: &str,
    ) -> Result<Self, String> {
        let checked = config.checked(local_url)?;
        let resource = config
            .resource
            .clone()
            .unwrap_or_else(|| local_url.to_owned());
        let document = serde_json::to_string(&ResourceMetadata {
            resource: resource.clone(),
            authorization_servers: checked.authorization_servers,
            scopes_supported: checked.scopes_supported,
            bearer_methods_supported: ["header"],
            resource_name: Some(server_name.to_owned()).filter(|name| !name.is_empty()),
        })
        .map_err(|error| format!("cannot write the OAuth metadata document: {error}"))?;
        let fetcher = Fetcher::new(config.fetch_timeout)?;
        let leeway_secs = config.leeway.as_secs();
        let introspector = config.introspection.clone().map(|endpoint| Introspector {
            endpoint,
            fetcher: fetcher.clone(),
            issuer: config.issuer.clone(),
            audience: resource.clone(),
            leeway_secs,
        });
        Ok(Self {
            metadata_url: metadata::metadata_url(&checked.resource),
            document,
            paths: metadata::paths(&checked.resource, mcp_path),
            required_scopes: config.required_scopes.clone(),
            verifier: JwtVerifier {
                issuer: config.issuer.clone(),
                audience: resource,
                algorithms: config.algorithms.clone(),
                leeway_secs,
                keys: KeyCache::new(
                    fetcher,
                    checked.issuer,
                    config.issuer.clone(),
                    config.jwks_refresh_min_interval,
                ),
            },
            introspector,
        })
    }

    /// The URL of the metadata document, as `401` answers point at it.
    pub(crate) fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// Discovers the issuer and loads its keys; a failure is logged, not fatal (the next
    /// token tries again). Run it beside the server at start-up.
    pub(crate) async fn warm_up(&self) {
        self.verifier.keys.warm_up().await;
    }

    /// The unauthenticated routes of the RFC 9728 metadata document, to merge beside the
    /// protected ones.
    pub(crate) fn well_known_routes(&self) -> Router {
        metadata::routes(self.document.clone(), &self.paths)
    }

    /// The guard's step: `request` with its token's claims in its extensions and its
    /// `Authorization` header removed, or the answer refusing it. The token is never
    /// logged; a refusal is, with its reason and the token's key id.
    ///
    /// The header goes because the MCP authorization specification forbids passing a
    /// client's token on to other services: tools read the verified claims instead
    /// ([`RequestInfo::claims`](crate::identity::RequestInfo::claims)).
    pub(crate) async fn authorize(&self, mut request: Request) -> Result<Request, Response> {
        match self.authenticate(request.headers()).await {
            Ok(claims) => {
                request.headers_mut().remove(header::AUTHORIZATION);
                request.extensions_mut().insert(VerifiedClaims(claims));
                Ok(request)
            }
            Err(rejection) => Err(rejection.response(&self.metadata_url, &self.required_scopes)),
        }
    }

    /// The claims of the request's valid token with the required scopes, or why not.
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Claims, Rejection> {
        let token = match bearer(headers) {
            Ok(token) => token,
            Err(rejection) => {
                tracing::debug!(target: "fusion::auth", "refused a request without a bearer token");
                return Err(rejection);
            }
        };
        let header = JwsHeader::of(token);
        let kid = header.as_ref().and_then(JwsHeader::kid).map(printable_kid);
        let verified = if token.len() > MAX_TOKEN_BYTES {
            Err(TokenError::TooLong)
        } else {
            match (&header, &self.introspector) {
                (Some(header), _) => self.verifier.verify(token, header).await,
                (None, Some(introspector)) => introspector.introspect(token).await,
                (None, None) => Err(TokenError::Malformed),
            }
        };
        let claims = match verified {
            Ok(claims) => claims,
            Err(TokenError::Unavailable(why)) => {
                tracing::warn!(target: "fusion::auth", kid, reason = %why, "cannot check an access token: the issuer cannot be reached; answering 503");
                return Err(Rejection::Unavailable(why));
            }
            Err(error) => {
                tracing::info!(target: "fusion::auth", kid, reason = %error, "refused an access token");
                return Err(Rejection::Invalid(error));
            }
        };
        let required: Vec<&str> = self.required_scopes.iter().map(String::as_str).collect();
        let missing = claims.missing_scopes(&required);
        if !missing.is_empty() {
            tracing::info!(
                target: "fusion::auth",
                subject = claims.subject(),
                missing = ?missing,
                "refused a valid access token without a required scope"
            );
            return Err(Rejection::InsufficientScope(
                missing.into_iter().map(str::to_owned).collect(),
            ));
        }
        Ok(claims)
    }
}

/// The token of `Authorization: Bearer <token>` (RFC 6750 §2.1; the scheme in any case).
/// No header, or another scheme, is a missing token; two headers, or a value that is not
/// a `token68`, an invalid one.
fn bearer(headers: &HeaderMap) -> Result<&str, Rejection> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(Rejection::Missing);
    };
    let malformed = || Rejection::Invalid(TokenError::Malformed);
    if values.next().is_some() {
        return Err(malformed());
    }
    let text = value.to_str().map_err(|_| malformed())?.trim();
    let (scheme, token) = match text.split_once(' ') {
        Some((scheme, token)) => (scheme, token.trim()),
        None => (text, ""),
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Rejection::Missing);
    }
    if !is_token68(token) {
        return Err(malformed());
    }
    Ok(token)
}

/// RFC 7235 §2.1: `token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_token68(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body.bytes().all(|byte| {
            byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        })
}

/// A key id from a token, fit for the log: at most 64 printable characters.
fn printable_kid(kid: &str) -> String {
    kid.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(64)
        .collect()
}
