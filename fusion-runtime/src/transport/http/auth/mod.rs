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

use std::sync::Arc;

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
    issuer: String,
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
            issuer: config.issuer.clone(),
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

    /// The issuer whose tokens are accepted.
    pub(crate) fn issuer(&self) -> &str {
        &self.issuer
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

    /// Starts [`warm_up`](Self::warm_up) on the current Tokio runtime, if one runs (a
    /// router built outside one loads the keys with the first token instead).
    pub(crate) fn spawn_warm_up(self: &Arc<Self>) -> Option<tokio::task::JoinHandle<()>> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let this = Arc::clone(self);
        Some(runtime.spawn(async move { this.warm_up().await }))
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

#[cfg(test)]
mod tests {
    //! The validation matrix against an issuer served in the test (axum on a free loopback
    //! port) with RSA keys made here: every way a token can be wrong, the key cache's
    //! refetch, rate limit and single flight, discovery, the fetch limits, introspection.

    use std::{
        sync::{
            Arc, Mutex, OnceLock,
            atomic::{AtomicUsize, Ordering},
        },
        time::Duration,
    };

    use axum::{
        body::Bytes,
        extract::State,
        http::{HeaderValue, StatusCode, Uri},
        response::IntoResponse,
    };
    use base64::Engine as _;
    use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
    use rsa::{Generate as _, pkcs1::EncodeRsaPrivateKey as _, pkcs8::EncodePublicKey as _};
    use serde_json::{Value, json};

    use super::*;

    const RESOURCE: &str = "http://127.0.0.1:8931/mcp";

    struct TestKey {
        der: Vec<u8>,
        jwk: Value,
        public_pem: String,
    }

    fn test_key(kid: &str) -> TestKey {
        let private = rsa::PrivateKey::generate();
        let der = private.to_pkcs1_der().expect("DER").as_bytes().to_vec();
        let public_pem = private
            .to_public_key()
            .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
            .expect("PEM");
        let mut jwk = Jwk::from_encoding_key(&EncodingKey::from_rsa_der(&der), Algorithm::RS256)
            .expect("a JWK");
        jwk.common.key_id = Some(kid.to_owned());
        TestKey {
            der,
            jwk: serde_json::to_value(jwk).expect("JSON"),
            public_pem,
        }
    }

    /// Two keys for the whole test binary: RSA generation is the slow part.
    fn keys() -> &'static [TestKey; 2] {
        static KEYS: OnceLock<[TestKey; 2]> = OnceLock::new();
        KEYS.get_or_init(|| [test_key("k1"), test_key("k2")])
    }

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    fn sign(key: &TestKey, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_rsa_der(&key.der)).expect("signed")
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A token with any header, payload and signature text.
    fn forge(header: &Value, payload: &Value, signature: &str) -> String {
        format!(
            "{}.{}.{signature}",
            b64(header.to_string().as_bytes()),
            b64(payload.to_string().as_bytes())
        )
    }

    /// What the test issuer does; changed while it runs.
    #[derive(Default)]
    struct Behaviour {
        keys: Vec<Value>,
        /// The `issuer` its metadata claims, when not its own.
        metadata_issuer: Option<String>,
        /// Only OpenID discovery, no RFC 8414 document.
        oidc_only: bool,
        jwks_status: Option<u16>,
        /// Bytes of padding added to the JWKS.
        jwks_padding: usize,
        delay: Duration,
        introspection: Option<Value>,
    }

    struct TestIssuer {
        url: String,
        behaviour: Arc<Mutex<Behaviour>>,
        jwks_fetches: Arc<AtomicUsize>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for TestIssuer {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl TestIssuer {
        fn set(&self, change: impl FnOnce(&mut Behaviour)) {
            change(&mut self.behaviour.lock().expect("unpoisoned"));
        }

        fn fetches(&self) -> usize {
            self.jwks_fetches.load(Ordering::SeqCst)
        }
    }

    #[derive(Clone)]
    struct Shared {
        issuer: String,
        behaviour: Arc<Mutex<Behaviour>>,
        jwks_fetches: Arc<AtomicUsize>,
    }

    async fn serve_issuer(
        State(shared): State<Shared>,
        uri: Uri,
        body: Bytes,
    ) -> impl IntoResponse {
        let (delay, metadata_issuer, oidc_only, keys, jwks_status, padding, introspection) = {
            let b = shared.behaviour.lock().expect("unpoisoned");
            (
                b.delay,
                b.metadata_issuer.clone(),
                b.oidc_only,
                b.keys.clone(),
                b.jwks_status,
                b.jwks_padding,
                b.introspection.clone(),
            )
        };
        tokio::time::sleep(delay).await;
        let origin = shared
            .issuer
            .split('/')
            .take(3)
            .collect::<Vec<_>>()
            .join("/");
        let issuer_path = shared.issuer.strip_prefix(&origin).unwrap_or_default();
        let path = uri.path();
        let metadata = || {
            json!({
                "issuer": metadata_issuer.clone().unwrap_or_else(|| shared.issuer.clone()),
                "jwks_uri": format!("{origin}/jwks"),
                "introspection_endpoint": format!("{origin}/introspect"),
            })
            .to_string()
        };
        if path == format!("/.well-known/oauth-authorization-server{issuer_path}") && !oidc_only
            || path == format!("/.well-known/openid-configuration{issuer_path}") && oidc_only
        {
            return (StatusCode::OK, metadata());
        }
        if path == "/jwks" {
            shared.jwks_fetches.fetch_add(1, Ordering::SeqCst);
            if let Some(status) = jwks_status {
                return (
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    String::new(),
                );
            }
            let document = json!({"keys": keys, "padding": "x".repeat(padding)});
            return (StatusCode::OK, document.to_string());
        }
        if path == "/introspect" {
            let form = String::from_utf8_lossy(&body).into_owned();
            let answer = if form.contains("token=opaque-good") {
                introspection.unwrap_or_else(|| json!({"active": true, "sub": "olga"}))
            } else {
                json!({"active": false})
            };
            return (StatusCode::OK, answer.to_string());
        }
        (StatusCode::NOT_FOUND, String::new())
    }

    /// An issuer at `http://127.0.0.1:PORT{path}` publishing `keys`.
    async fn issuer(path: &str, keys: &[&TestKey]) -> TestIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let port = listener.local_addr().expect("bound").port();
        let behaviour = Arc::new(Mutex::new(Behaviour {
            keys: keys.iter().map(|key| key.jwk.clone()).collect(),
            ..Behaviour::default()
        }));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let shared = Shared {
            issuer: format!("http://127.0.0.1:{port}{path}"),
            behaviour: Arc::clone(&behaviour),
            jwks_fetches: Arc::clone(&jwks_fetches),
        };
        let url = shared.issuer.clone();
        let app = Router::new().fallback(serve_issuer).with_state(shared);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TestIssuer {
            url,
            behaviour,
            jwks_fetches,
            task,
        }
    }

    fn authenticator(issuer: &TestIssuer, tweak: impl FnOnce(OAuth) -> OAuth) -> Authenticator {
        Authenticator::new(&tweak(OAuth::new(&issuer.url)), RESOURCE, "/mcp", "test")
            .expect("a valid configuration")
    }

    fn claims(issuer: &TestIssuer) -> Value {
        json!({
            "iss": issuer.url,
            "aud": RESOURCE,
            "sub": "ann",
            "scope": "mcp admin",
            "iat": now(),
            "exp": now() + 600,
        })
    }

    fn with(mut claims: Value, changes: Value) -> Value {
        if let (Value::Object(claims), Value::Object(changes)) = (&mut claims, changes) {
            for (name, value) in changes {
                if value.is_null() {
                    claims.remove(&name);
                } else {
                    claims.insert(name, value);
                }
            }
        }
        claims
    }

    fn bearer_headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(authorization).expect("a header value"),
        );
        headers
    }

    async fn check(auth: &Authenticator, token: &str) -> Result<Claims, Rejection> {
        auth.authenticate(&bearer_headers(&format!("Bearer {token}")))
            .await
    }

    fn invalid(error: TokenError) -> Result<Claims, Rejection> {
        Err(Rejection::Invalid(error))
    }

    #[tokio::test]
    async fn the_validation_matrix() {
        let [k1, _] = keys();
        let issuer = issuer("", &[k1]).await;
        let auth = authenticator(&issuer, |oauth| oauth);
        let good = claims(&issuer);
        let claims = check(&auth, &sign(k1, Some("k1"), &good))
            .await
            .expect("a valid token");
        assert_eq!(claims.subject(), Some("ann"));
        assert!(claims.has_scope("admin"));
        let sign1 = |claims: &Value| sign(k1, Some("k1"), claims);
        let cases: Vec<(&str, String, Result<Claims, Rejection>)> = vec![
            (
                "expired",
                sign1(&with(good.clone(), json!({"exp": now() - 3600}))),
                invalid(TokenError::Expired),
            ),
            (
                "not yet valid",
                sign1(&with(good.clone(), json!({"nbf": now() + 3600}))),
                invalid(TokenError::NotYetValid),
            ),
            (
                "no exp",
                sign1(&with(good.clone(), json!({"exp": null}))),
                invalid(TokenError::MissingClaim("exp".to_owned())),
            ),
            (
                // jsonwebtoken counts an `exp` it cannot read as a missing one.
                "exp not a number",
                sign1(&with(good.clone(), json!({"exp": "tomorrow"}))),
                invalid(TokenError::MissingClaim("exp".to_owned())),
            ),
            (
                "wrong issuer",
                sign1(&with(good.clone(), json!({"iss": "http://127.0.0.1:1"}))),
                invalid(TokenError::WrongIssuer),
            ),
            (
                "issuer with a trailing slash",
                sign1(&with(
                    good.clone(),
                    json!({"iss": format!("{}/", issuer.url)}),
                )),
                invalid(TokenError::WrongIssuer),
            ),
            (
                "no issuer",
                sign1(&with(good.clone(), json!({"iss": null}))),
                invalid(TokenError::MissingClaim("iss".to_owned())),
            ),
            (
                "wrong audience",
                sign1(&with(
                    good.clone(),
                    json!({"aud": "http://127.0.0.1:9999/mcp"}),
                )),
                invalid(TokenError::WrongAudience),
            ),
            (
                "audience list without this resource",
                sign1(&with(good.clone(), json!({"aud": ["a", "b"]}))),
                invalid(TokenError::WrongAudience),
            ),
            (
                "no audience",
                sign1(&with(good.clone(), json!({"aud": null}))),
                invalid(TokenError::MissingClaim("aud".to_owned())),
            ),
            (
                "unknown key id",
                sign(k1, Some("k9"), &good),
                invalid(TokenError::UnknownKey),
            ),
            (
                "alg none",
                forge(&json!({"alg": "none", "kid": "k1"}), &good, ""),
                invalid(TokenError::Algorithm("none".to_owned())),
            ),
            (
                "alg None",
                forge(&json!({"alg": "None", "typ": "JWT"}), &good, ""),
                invalid(TokenError::Algorithm("None".to_owned())),
            ),
            (
                "crit header",
                forge(
                    &json!({"alg": "RS256", "kid": "k1", "crit": ["exp"]}),
                    &good,
                    "c2ln",
                ),
                invalid(TokenError::Critical),
            ),
            (
                "ES256 header on an RSA key",
                {
                    let token = sign1(&good);
                    let rest = token.split_once('.').map_or("", |(_, rest)| rest);
                    format!(
                        "{}.{rest}",
                        b64(json!({"alg": "ES256", "kid": "k1"}).to_string().as_bytes())
                    )
                },
                invalid(TokenError::KeyMismatch),
            ),
            (
                "garbage",
                "garbage".to_owned(),
                invalid(TokenError::Malformed),
            ),
            (
                "too long",
                format!("{}.{}.{}", "a".repeat(9000), "b".repeat(9000), "c"),
                invalid(TokenError::TooLong),
            ),
        ];
        for (name, token, expected) in cases {
            assert_eq!(check(&auth, &token).await, expected, "{name}");
        }
        // Within the leeway, and an audience list holding the resource.
        for (name, claims) in [
            (
                "expired 30 s ago",
                with(good.clone(), json!({"exp": now() - 30})),
            ),
            (
                "valid in 30 s",
                with(good.clone(), json!({"nbf": now() + 30})),
            ),
            (
                "audience list",
                with(good.clone(), json!({"aud": ["x", RESOURCE]})),
            ),
            ("no key id", good.clone()),
        ] {
            let token = if name == "no key id" {
                sign(k1, None, &claims)
            } else {
                sign1(&claims)
            };
            assert!(check(&auth, &token).await.is_ok(), "{name}");
        }
        let strict = authenticator(&issuer, |oauth| oauth.leeway(Duration::ZERO));
        let expired = sign1(&with(good.clone(), json!({"exp": now() - 30})));
        assert_eq!(check(&strict, &expired).await, invalid(TokenError::Expired));
    }

    #[tokio::test]
    async fn forged_signatures_and_algorithms_are_refused() {
        let [k1, k2] = keys();
        let issuer = issuer("", &[k1]).await;
        let auth = authenticator(&issuer, |oauth| oauth);
        let good = claims(&issuer);
        let token = sign(k1, Some("k1"), &good);
        let (signed, signature) = token.rsplit_once('.').expect("three parts");
        let mut flipped = signature.as_bytes().to_vec();
        flipped[10] = if flipped[10] == b'A' { b'B' } else { b'A' };
        let flipped = format!("{signed}.{}", String::from_utf8_lossy(&flipped));
        assert_eq!(
            check(&auth, &flipped).await,
            invalid(TokenError::BadSignature)
        );
        // Signed by a key the issuer does not publish, under the published key's id.
        let other = sign(k2, Some("k1"), &good);
        assert_eq!(
            check(&auth, &other).await,
            invalid(TokenError::BadSignature)
        );
        // The payload changed after signing.
        let tampered = with(good.clone(), json!({"scope": "admin root"}));
        let (header, _) = token.split_once('.').expect("three parts");
        let tampered = format!(
            "{header}.{}.{signature}",
            b64(tampered.to_string().as_bytes())
        );
        assert_eq!(
            check(&auth, &tampered).await,
            invalid(TokenError::BadSignature)
        );
        // HS256 keyed with the RSA public key (PEM and DER), the classic confusion.
        for secret in [k1.public_pem.as_bytes().to_vec(), k1.der.clone()] {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some("k1".to_owned());
            let key = EncodingKey::from_secret(&secret).expect("an HMAC key");
            let hs = jsonwebtoken::encode(&header, &good, &key).expect("signed");
            assert_eq!(
                check(&auth, &hs).await,
                invalid(TokenError::Algorithm("HS256".to_owned()))
            );
        }
        // An algorithm left off the allow-list.
        let es_only = authenticator(&issuer, |oauth| oauth.algorithms([JwtAlgorithm::ES256]));
        assert_eq!(
            check(&es_only, &token).await,
            invalid(TokenError::Algorithm("RS256".to_owned()))
        );
    }

    #[tokio::test]
    async fn the_authorization_header_is_read_strictly() {
        let [k1, _] = keys();
        let issuer = issuer("", &[k1]).await;
        let auth = authenticator(&issuer, |oauth| oauth);
        let token = sign(k1, Some("k1"), &claims(&issuer));
        assert_eq!(
            auth.authenticate(&HeaderMap::new()).await,
            Err(Rejection::Missing)
        );
        for (value, expected) in [
            ("Basic dXNlcjpwYXNz", Err(Rejection::Missing)),
            ("Bearer", invalid(TokenError::Malformed)),
            ("Bearer    ", invalid(TokenError::Malformed)),
            ("Bearer a b", invalid(TokenError::Malformed)),
            ("Bearer \"quoted\"", invalid(TokenError::Malformed)),
        ] {
            assert_eq!(
                auth.authenticate(&bearer_headers(value)).await,
                expected,
                "{value}"
            );
        }
        assert!(
            auth.authenticate(&bearer_headers(&format!("bearer {token}")))
                .await
                .is_ok()
        );
        let mut twice = bearer_headers(&format!("Bearer {token}"));
        twice.append(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {token}")).expect("a header value"),
        );
        assert_eq!(
            auth.authenticate(&twice).await,
            invalid(TokenError::Malformed)
        );
        // A valid token reaches the handler as claims, without its header.
        let request = Request::builder()
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(axum::body::Body::empty())
            .expect("a request");
        let request = auth.authorize(request).await.expect("authorized");
        assert!(request.headers().get(header::AUTHORIZATION).is_none());
        let verified = request
            .extensions()
            .get::<VerifiedClaims>()
            .expect("claims");
        assert_eq!(verified.0.subject(), Some("ann"));
        let refused = auth
            .authorize(
                Request::builder()
                    .body(axum::body::Body::empty())
                    .expect("a request"),
            )
            .await
            .expect_err("refused");
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        let challenge = refused
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        assert_eq!(
            challenge,
            "Bearer resource_metadata=\"http://127.0.0.1:8931/.well-known/oauth-protected-resource/mcp\""
        );
    }

    #[tokio::test]
    async fn required_scopes_are_enforced() {
        let [k1, _] = keys();
        let issuer = issuer("", &[k1]).await;
        let auth = authenticator(&issuer, |oauth| oauth.required_scopes(["mcp", "db:read"]));
        let token = sign(k1, Some("k1"), &claims(&issuer));
        assert_eq!(
            check(&auth, &token).await,
            Err(Rejection::InsufficientScope(vec!["db:read".to_owned()]))
        );
        let scp = with(
            claims(&issuer),
            json!({"scope": null, "scp": ["db:read", "mcp"]}),
        );
        assert!(check(&auth, &sign(k1, Some("k1"), &scp)).await.is_ok());
        // The scopes are checked after the token: a bad token is a 401, not a 403.
        let expired = with(claims(&issuer), json!({"exp": now() - 3600}));
        assert_eq!(
            check(&auth, &sign(k1, Some("k1"), &expired)).await,
            invalid(TokenError::Expired)
        );
    }

    #[tokio::test]
    async fn a_rotated_key_is_fetched_once_per_interval() {
        let [k1, k2] = keys();
        let issuer = issuer("", &[k1]).await;
        let auth = authenticator(&issuer, |oauth| oauth);
        auth.warm_up().await;
        assert_eq!(issuer.fetches(), 1);
        let good = claims(&issuer);
        assert!(check(&auth, &sign(k1, Some("k1"), &good)).await.is_ok());
        assert_eq!(issuer.fetches(), 1, "the cached keys serve");
        // The issuer publishes a second key: the first token naming it fetches the keys
        // again, once, however many come at the same time.
        issuer.set(|b| b.keys = vec![k1.jwk.clone(), k2.jwk.clone()]);
        let token = sign(k2, Some("k2"), &good);
        let checks: Vec<_> = (0..8).map(|_| check(&auth, &token)).collect();
        for result in futures_util::future::join_all(checks).await {
            assert!(result.is_ok(), "{result:?}");
        }
        assert_eq!(issuer.fetches(), 2);
        // Unknown key ids within the interval fetch nothing more.
        for kid in ["k3", "k4", "k5"] {
            assert_eq!(
                check(&auth, &sign(k2, Some(kid), &good)).await,
                invalid(TokenError::UnknownKey)
            );
        }
        assert_eq!(issuer.fetches(), 2);
    }

    #[tokio::test]
    async fn unknown_keys_fetch_again_after_the_interval() {
        let [k1, k2] = keys();
        let issuer = issuer("", &[k1]).await;
        let auth = authenticator(&issuer, |oauth| {
            oauth.jwks_refresh_min_interval(Duration::from_millis(200))
        });
        let good = claims(&issuer);
        let unknown = sign(k2, Some("k2"), &good);
        assert_eq!(
            check(&auth, &unknown).await,
            invalid(TokenError::UnknownKey)
        );
        assert_eq!(issuer.fetches(), 2, "the first load, then one refetch");
        assert_eq!(
            check(&auth, &unknown).await,
            invalid(TokenError::UnknownKey)
        );
        assert_eq!(issuer.fetches(), 2);
        tokio::time::sleep(Duration::from_millis(250)).await;
        issuer.set(|b| b.keys.push(k2.jwk.clone()));
        assert!(check(&auth, &unknown).await.is_ok());
        assert_eq!(issuer.fetches(), 3);
    }

    #[tokio::test]
    async fn an_unreachable_issuer_is_a_503_and_is_not_hammered() {
        let [k1, _] = keys();
        let issuer = issuer("", &[k1]).await;
        issuer.set(|b| b.jwks_status = Some(500));
        let auth = authenticator(&issuer, |oauth| oauth);
        auth.warm_up().await;
        let token = sign(k1, Some("k1"), &claims(&issuer));
        for _ in 0..3 {
            assert!(matches!(
                check(&auth, &token).await,
                Err(Rejection::Unavailable(_))
            ));
        }
        assert_eq!(
            issuer.fetches(),
            1,
            "failures are retried once per interval"
        );
        // Nothing listens on port 1.
        let down = Authenticator::new(&OAuth::new("http://127.0.0.1:1"), RESOURCE, "/mcp", "t")
            .expect("valid");
        assert!(matches!(
            check(&down, &token).await,
            Err(Rejection::Unavailable(_))
        ));
    }

    #[tokio::test]
    async fn discovery_follows_the_spec_and_checks_the_issuer() {
        let [k1, _] = keys();
        // An issuer with a path, found through RFC 8414's path-insertion form.
        let tenant = issuer("/realms/acme", &[k1]).await;
        let auth = authenticator(&tenant, |oauth| oauth);
        assert!(
            check(&auth, &sign(k1, Some("k1"), &claims(&tenant)))
                .await
                .is_ok()
        );
        // Only OpenID discovery.
        let oidc = issuer("", &[k1]).await;
        oidc.set(|b| b.oidc_only = true);
        let auth = authenticator(&oidc, |oauth| oauth);
        assert!(
            check(&auth, &sign(k1, Some("k1"), &claims(&oidc)))
                .await
                .is_ok()
        );
        // Metadata naming another issuer is not used.
        let liar = issuer("", &[k1]).await;
        liar.set(|b| b.metadata_issuer = Some("https://evil.example".to_owned()));
        let auth = authenticator(&liar, |oauth| oauth);
        match check(&auth, &sign(k1, Some("k1"), &claims(&liar))).await {
            Err(Rejection::Unavailable(why)) => assert!(why.contains("evil.example"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(liar.fetches(), 0);
    }

    #[tokio::test]
    async fn slow_and_huge_answers_are_cut() {
        let [k1, _] = keys();
        let huge = issuer("", &[k1]).await;
        huge.set(|b| b.jwks_padding = fetch::MAX_DOCUMENT_BYTES);
        let auth = authenticator(&huge, |oauth| oauth);
        match check(&auth, &sign(k1, Some("k1"), &claims(&huge))).await {
            Err(Rejection::Unavailable(why)) => assert!(why.contains("larger than"), "{why}"),
            other => panic!("{other:?}"),
        }
        let slow = issuer("", &[k1]).await;
        slow.set(|b| b.delay = Duration::from_secs(30));
        let auth = authenticator(&slow, |oauth| {
            oauth.fetch_timeout(Duration::from_millis(300))
        });
        let started = std::time::Instant::now();
        let result = tokio::time::timeout(
            Duration::from_secs(10),
            check(&auth, &sign(k1, Some("k1"), &claims(&slow))),
        )
        .await
        .expect("the fetch timeout ends the wait");
        assert!(
            matches!(result, Err(Rejection::Unavailable(_))),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn opaque_tokens_are_introspected_when_configured() {
        let [k1, _] = keys();
        let issuer = issuer("", &[k1]).await;
        let endpoint = format!("{}/introspect", issuer.url);
        let auth = authenticator(&issuer, |oauth| {
            oauth.introspection(endpoint, "rs", "s3cret")
        });
        let claims = check(&auth, "opaque-good").await.expect("active");
        assert_eq!(claims.subject(), Some("olga"));
        assert_eq!(
            check(&auth, "opaque-bad").await,
            invalid(TokenError::Inactive)
        );
        issuer.set(|b| {
            b.introspection = Some(json!({"active": true, "aud": "http://other.example/mcp"}))
        });
        assert_eq!(
            check(&auth, "opaque-good").await,
            invalid(TokenError::WrongAudience)
        );
        // Without introspection, an opaque token is not accepted.
        let plain = authenticator(&issuer, |oauth| oauth);
        assert_eq!(
            check(&plain, "opaque-good").await,
            invalid(TokenError::Malformed)
        );
    }

    #[tokio::test]
    async fn the_metadata_document_is_served_open() {
        let [k1, _] = keys();
        let issuer = issuer("", &[k1]).await;
        let auth = authenticator(&issuer, |oauth| {
            oauth
                .scopes_supported(["mcp", "admin"])
                .required_scopes(["mcp"])
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let port = listener.local_addr().expect("bound").port();
        let routes = auth.well_known_routes();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, routes).await;
        });
        let fetcher = Fetcher::new(Duration::from_secs(5)).expect("a client");
        for path in [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ] {
            let document: Value = fetcher
                .get_json(&format!("http://127.0.0.1:{port}{path}"))
                .await
                .expect("the document");
            assert_eq!(
                document,
                json!({
                    "resource": RESOURCE,
                    "authorization_servers": [issuer.url],
                    "scopes_supported": ["mcp", "admin"],
                    "bearer_methods_supported": ["header"],
                    "resource_name": "test",
                }),
                "{path}"
            );
        }
        server.abort();
    }
}
