//! `OAuth`: what the resource server trusts (the issuer), what it is (the resource URL, the
//! audience tokens must name), and how strictly it checks, with the defaults; and the checks
//! of that configuration at start-up.

use std::{fmt, time::Duration};

use reqwest::Url;

/// Makes the Streamable HTTP endpoint an OAuth 2.1 resource server, as the MCP
/// authorization specification (2025-06-18, 2025-11-25) describes. Plug it in with
/// [`HttpOptions::oauth`](crate::HttpOptions::oauth); feature `oauth`.
///
/// Every request to the MCP endpoint (and `/metrics`) must then carry
/// `Authorization: Bearer <access token>`, a JWT that:
/// - is signed with a key of the issuer's JWKS (found through the issuer's RFC 8414
///   metadata, or OpenID Connect discovery), with an algorithm of the allow-list
///   ([`algorithms`](Self::algorithms)) that fits the key's type: never `none`, never an
///   HMAC algorithm (a public key is no secret);
/// - names the issuer (`iss`, exactly) and this server's resource URL in its audience
///   (`aud`, RFC 8707; a string or an array);
/// - has not expired (`exp`, required) and is already valid (`nbf`), give or take the
///   [`leeway`](Self::leeway);
/// - grants the [`required_scopes`](Self::required_scopes), if any.
///
/// Tokens that are not JWTs (opaque tokens) are accepted only with
/// [`introspection`](Self::introspection) (RFC 7662).
///
/// | the request | the answer |
/// |---|---|
/// | no bearer token (none, `Basic`, a token in the query string) | `401`, `WWW-Authenticate: Bearer resource_metadata="…"` (and `scope="…"` with required scopes) |
/// | a token that fails any check | `401`, `WWW-Authenticate: Bearer error="invalid_token", error_description="…", resource_metadata="…"` |
/// | a valid token without a required scope | `403`, `WWW-Authenticate: Bearer error="insufficient_scope", scope="…", resource_metadata="…"` |
/// | a JWT whose keys cannot be had (the issuer is unreachable, its metadata or JWKS unusable) | `503` with `Retry-After`: the token may be good, the client should retry rather than sign in again |
/// | a valid token | the request goes on; tools see the token's claims ([`identity::RequestInfo::claims`](crate::identity::RequestInfo::claims)) |
///
/// `GET /.well-known/oauth-protected-resource` and its path-suffixed form (for the default
/// path, `/.well-known/oauth-protected-resource/mcp`) serve the RFC 9728 metadata document
/// without authentication: the resource, its authorization servers, the scopes, and the
/// bearer method (`header`). MCP clients read it to find where to get a token.
///
/// The issuer's metadata and keys are fetched at start-up; when that fails the server still
/// starts, logs a warning, and tries again when a token comes (at most once per
/// [`jwks_refresh_min_interval`](Self::jwks_refresh_min_interval)). Keys are cached, fetched
/// again when a token names a key id the cache does not hold (rotation; at most once per
/// interval, concurrent misses sharing one fetch) and when they are older than 10 minutes
/// (so that a key the issuer withdrew stops being accepted). Every fetch has a timeout
/// ([`fetch_timeout`](Self::fetch_timeout)) and a size limit (512 KiB).
///
/// A token is never logged; a rejection is logged (target `fusion::auth`) with its reason,
/// and the key id when the token named one.
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::{HttpOptions, OAuth};
///
/// // Behind an identity provider: tokens for `https://mcp.example.com/mcp`, with `mcp:tools`.
/// let oauth = OAuth::new("https://id.example.com/realms/acme")
///     .resource("https://mcp.example.com/mcp")
///     .scopes_supported(["mcp:tools", "admin"])
///     .required_scopes(["mcp:tools"])
///     .leeway(Duration::from_secs(30));
/// let options = HttpOptions::default()
///     .addr(([0, 0, 0, 0], 8080))
///     .allow_hosts(["mcp.example.com"])
///     .oauth(oauth);
/// # drop(options);
/// ```
///
/// Serving it:
///
/// ```no_run
/// use fusion_runtime::{HttpOptions, OAuth, prelude::*};
///
/// # async fn serve(server: Server) -> std::process::ExitCode {
/// let oauth = OAuth::new("https://id.example.com").resource("https://mcp.example.com/mcp");
/// server
///     .serve_http_with(HttpOptions::default().port(8931).oauth(oauth))
///     .await
/// # }
/// ```
#[derive(Clone)]
pub struct OAuth {
    pub(super) issuer: String,
    pub(super) resource: Option<String>,
    pub(super) authorization_servers: Option<Vec<String>>,
    pub(super) scopes_supported: Vec<String>,
    pub(super) required_scopes: Vec<String>,
    pub(super) algorithms: Vec<JwtAlgorithm>,
    pub(super) leeway: Duration,
    pub(super) jwks_refresh_min_interval: Duration,
    pub(super) fetch_timeout: Duration,
    pub(super) introspection: Option<Introspection>,
}

/// Where and as whom to introspect opaque tokens (RFC 7662).
#[derive(Clone)]
pub(super) struct Introspection {
    pub(super) endpoint: String,
    pub(super) client_id: String,
    pub(super) client_secret: String,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .field("algorithms", &self.algorithms)
            .field("leeway", &self.leeway)
            .field("jwks_refresh_min_interval", &self.jwks_refresh_min_interval)
            .field("fetch_timeout", &self.fetch_timeout)
            .field(
                "introspection",
                &self.introspection.as_ref().map(|introspection| {
                    (
                        introspection.endpoint.as_str(),
                        introspection.client_id.as_str(),
                        "<redacted>",
                    )
                }),
            )
            .finish()
    }
}

/// A JWS signature algorithm the resource server may accept ([`OAuth::algorithms`]).
///
/// Only asymmetric algorithms exist here: a key published in a JWKS is public, so an HMAC
/// (`HS256`, …) "signature" keyed with it proves nothing, and `none` proves nothing at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// EdDSA (Ed25519).
    EdDSA,
}

impl JwtAlgorithm {
    /// Every algorithm, the default allow-list.
    pub const ALL: [JwtAlgorithm; 9] = [
        Self::RS256,
        Self::RS384,
        Self::RS512,
        Self::PS256,
        Self::PS384,
        Self::PS512,
        Self::ES256,
        Self::ES384,
        Self::EdDSA,
    ];

    /// The name in a JWS header (`"RS256"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::RS256 => "RS256",
            Self::RS384 => "RS384",
            Self::RS512 => "RS512",
            Self::PS256 => "PS256",
            Self::PS384 => "PS384",
            Self::PS512 => "PS512",
            Self::ES256 => "ES256",
            Self::ES384 => "ES384",
            Self::EdDSA => "EdDSA",
        }
    }

    /// The algorithm a JWS header names, if it is one of these.
    pub(super) fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|algorithm| algorithm.name() == name)
    }

    pub(super) fn to_jwt(self) -> jsonwebtoken::Algorithm {
        use jsonwebtoken::Algorithm;
        match self {
            Self::RS256 => Algorithm::RS256,
            Self::RS384 => Algorithm::RS384,
            Self::RS512 => Algorithm::RS512,
            Self::PS256 => Algorithm::PS256,
            Self::PS384 => Algorithm::PS384,
            Self::PS512 => Algorithm::PS512,
            Self::ES256 => Algorithm::ES256,
            Self::ES384 => Algorithm::ES384,
            Self::EdDSA => Algorithm::EdDSA,
        }
    }
}

impl fmt::Display for JwtAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How far clocks may disagree, by default: a minute, as most identity providers assume.
pub(super) const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// At most one JWKS fetch for an unknown key id (or after a failed fetch) this often, by
/// default. A token naming a random key id must not make the server hammer its issuer,
/// and a real rotation still shows within seconds.
pub(super) const DEFAULT_JWKS_REFRESH_MIN_INTERVAL: Duration = Duration::from_secs(10);

/// How long a fetch from the issuer may take, by default (connect, headers and body).
pub(super) const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);

impl OAuth {
    /// Trusts tokens from `issuer` (its URL, exactly as the tokens' `iss` and the issuer's
    /// own metadata write it, e.g. `https://id.example.com/realms/acme`).
    ///
    /// The defaults: the resource URL is the server's own MCP URL
    /// ([`HttpOptions::local_url`](crate::HttpOptions::local_url), with the bound port);
    /// every algorithm of [`JwtAlgorithm`]; no required scope; a leeway of 60 s; a key
    /// fetch for an unknown key id at most every 10 s; fetches time out after 10 s.
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            resource: None,
            authorization_servers: None,
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            algorithms: JwtAlgorithm::ALL.to_vec(),
            leeway: DEFAULT_LEEWAY,
            jwks_refresh_min_interval: DEFAULT_JWKS_REFRESH_MIN_INTERVAL,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            introspection: None,
        }
    }

    /// This server's resource URL (RFC 8707), the audience every token must name, e.g.
    /// `https://mcp.example.com/mcp`. Without it, the URL of the bound address
    /// (`http://127.0.0.1:8931/mcp`; with [`Server::router`](crate::Server::router), which
    /// binds nothing, [`HttpOptions::local_url`](crate::HttpOptions::local_url)). That only
    /// fits a server reached at that address: behind a proxy, under a public name, or
    /// mounted in an app of your own, set the URL clients use.
    pub fn resource(mut self, url: impl Into<String>) -> Self {
        self.resource = Some(url.into());
        self
    }

    /// The authorization servers named in the metadata document, when clients should get
    /// tokens elsewhere than from the issuer itself (by default, the issuer).
    pub fn authorization_servers<I, S>(mut self, servers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.authorization_servers = Some(servers.into_iter().map(Into::into).collect());
        self
    }

    /// The scopes listed in the metadata document (`scopes_supported`), which clients may
    /// ask for. By default, the required scopes.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes every token must grant, on every request (`403 insufficient_scope` without
    /// them). Scopes needed by some tools only belong on those tools.
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The signature algorithms accepted (by default, all of [`JwtAlgorithm`]). A token
    /// whose algorithm is not listed, or does not fit the type of the key it names, is
    /// refused.
    pub fn algorithms<I>(mut self, algorithms: I) -> Self
    where
        I: IntoIterator<Item = JwtAlgorithm>,
    {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// How far this server's clock may disagree with the issuer's when `exp` and `nbf`
    /// are checked (60 s by default; whole seconds).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two fetches of the JWKS caused by a token naming an unknown
    /// key id, or after a failed fetch (10 s by default).
    pub fn jwks_refresh_min_interval(mut self, interval: Duration) -> Self {
        self.jwks_refresh_min_interval = interval;
        self
    }

    /// How long one fetch from the issuer (metadata, keys, introspection) may take (10 s
    /// by default).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Accepts opaque tokens (those that are not JWTs) by asking the issuer's
    /// introspection endpoint (RFC 7662), as the client `client_id` with `client_secret`
    /// (HTTP Basic). One request to the endpoint for each HTTP request with such a token;
    /// the answer must say `active: true`, and its `iss`, `aud`, `exp` and `nbf`, where
    /// present, must pass the same checks as a JWT's.
    pub fn introspection(
        mut self,
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        self.introspection = Some(Introspection {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        });
        self
    }

    /// The issuer, as configured.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// What the configuration means once checked, with `local_url` (the server's own MCP
    /// URL at its bound address) as the resource when none was set; a configuration
    /// mistake, said for a person, otherwise.
    pub(super) fn checked(&self, local_url: &str) -> Result<Checked, String> {
        let issuer = web_url("the OAuth issuer", &self.issuer)?;
        if issuer.query().is_some() {
            return Err(format!(
                "the OAuth issuer {:?} must not have a query (RFC 8414)",
                self.issuer
            ));
        }
        let resource_text = self.resource.as_deref().unwrap_or(local_url);
        let resource = web_url("the OAuth resource URL", resource_text)?;
        if resource
            .host_str()
            .is_some_and(|host| host == "0.0.0.0" || host == "[::]")
        {
            return Err(format!(
                "the OAuth resource URL {resource_text:?} names no reachable host; set `OAuth::resource` to the URL clients use"
            ));
        }
        for server in self.authorization_servers.iter().flatten() {
            web_url("an OAuth authorization server", server)?;
        }
        if self.algorithms.is_empty() {
            return Err("the OAuth algorithm allow-list is empty".to_owned());
        }
        for scope in self.required_scopes.iter().chain(&self.scopes_supported) {
            if !is_scope_token(scope) {
                return Err(format!(
                    "the OAuth scope {scope:?} is not a scope token (RFC 6749 §3.3: printable ASCII without spaces, quotes or backslashes)"
                ));
            }
        }
        if let Some(introspection) = &self.introspection {
            web_url("the OAuth introspection endpoint", &introspection.endpoint)?;
        }
        if issuer.scheme() == "http" && !is_loopback(&issuer) {
            tracing::warn!(
                target: "fusion::auth",
                issuer = %self.issuer,
                "the OAuth issuer is plain http on a non-loopback host: its keys can be forged in transit; use https"
            );
        }
        let scopes_supported = if self.scopes_supported.is_empty() {
            self.required_scopes.clone()
        } else {
            self.scopes_supported.clone()
        };
        Ok(Checked {
            issuer,
            resource,
            authorization_servers: self
                .authorization_servers
                .clone()
                .unwrap_or_else(|| vec![self.issuer.clone()]),
            scopes_supported,
        })
    }
}

/// The parts of the configuration that [`OAuth::checked`] parsed.
pub(super) struct Checked {
    pub(super) issuer: Url,
    pub(super) resource: Url,
    pub(super) authorization_servers: Vec<String>,
    pub(super) scopes_supported: Vec<String>,
}

/// `text` as an absolute `http` or `https` URL without a fragment.
fn web_url(what: &str, text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|error| format!("{what} {text:?} is not a URL: {error}"))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(format!("{what} {text:?} must be an http or https URL"));
    }
    if url.fragment().is_some() {
        return Err(format!("{what} {text:?} must not have a fragment"));
    }
    Ok(url)
}

pub(super) fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// RFC 6749 §3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`. Scopes go into
/// `WWW-Authenticate` as quoted strings; this keeps them from breaking out of the quotes.
pub(super) fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope.bytes().all(|byte| {
            byte == 0x21 || (0x23..=0x5b).contains(&byte) || (0x5d..=0x7e).contains(&byte)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_is_checked() {
        let local = "http://127.0.0.1:8931/mcp";
        let checked = OAuth::new("https://id.example.com")
            .checked(local)
            .expect("valid");
        assert_eq!(checked.resource.as_str(), local);
        assert_eq!(checked.authorization_servers, ["https://id.example.com"]);
        for (oauth, problem) in [
            (OAuth::new("id.example.com"), "not a URL"),
            (OAuth::new("ftp://id.example.com"), "http or https"),
            (OAuth::new("https://id.example.com?x=1"), "query"),
            (OAuth::new("https://id.example.com#f"), "fragment"),
            (OAuth::new("https://id.example.com").algorithms([]), "empty"),
            (
                OAuth::new("https://id.example.com").required_scopes(["a b"]),
                "scope token",
            ),
            (
                OAuth::new("https://id.example.com").required_scopes(["say\"hi"]),
                "scope token",
            ),
        ] {
            let error = oauth.checked(local).err().unwrap_or_default();
            assert!(error.contains(problem), "{oauth:?}: {error}");
        }
        let unspecified = OAuth::new("https://id.example.com").checked("http://0.0.0.0:80/mcp");
        assert!(unspecified.is_err());
    }

    #[test]
    fn scopes_supported_default_to_the_required_ones_and_secrets_stay_out_of_debug() {
        let oauth = OAuth::new("https://id.example.com")
            .required_scopes(["mcp"])
            .introspection("https://id.example.com/introspect", "rs", "hunter2");
        let checked = oauth.checked("http://127.0.0.1:1/mcp").expect("valid");
        assert_eq!(checked.scopes_supported, ["mcp"]);
        assert!(!format!("{oauth:?}").contains("hunter2"));
        assert_eq!(JwtAlgorithm::from_name("ES256"), Some(JwtAlgorithm::ES256));
        assert_eq!(JwtAlgorithm::from_name("HS256"), None);
        assert_eq!(JwtAlgorithm::from_name("none"), None);
    }
}
