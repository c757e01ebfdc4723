//! Validating a JWT access token: its header (algorithm on the allow-list, no `crit`), the
//! key it names (of the algorithm's type), the signature, and the claims (`iss` exactly,
//! `aud` holding the resource URL, `exp` required, `nbf`, with the leeway). The
//! cryptography and the claim checks are jsonwebtoken's; nothing here computes a signature.

use base64::Engine as _;
use jsonwebtoken::{Validation, errors::ErrorKind};
use serde::Deserialize;

use super::{
    config::JwtAlgorithm,
    jwks::{KeyCache, KeyError},
};
use crate::identity::Claims;

/// The longest token looked at. Real access tokens are a few kilobytes at most.
pub(super) const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a token was refused. `Display` is for the log (it never holds the token); the
/// client reads [`description`](Self::description).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum TokenError {
    #[error("the token is not a JWT (and no introspection endpoint is configured)")]
    Malformed,
    #[error("the token is longer than {MAX_TOKEN_BYTES} bytes")]
    TooLong,
    #[error("the token's algorithm {0} is not accepted")]
    Algorithm(String),
    #[error("the token's header has `crit`, which is not supported")]
    Critical,
    #[error("the token names no key the issuer publishes")]
    UnknownKey,
    #[error("the token's algorithm does not fit the type of its key")]
    KeyMismatch,
    #[error("the signature does not verify")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    #[error("the token was issued by another issuer")]
    WrongIssuer,
    #[error("the token was not issued for this resource (aud)")]
    WrongAudience,
    #[error("the token has no `{0}` claim")]
    MissingClaim(String),
    #[error("the token's `{0}` claim is malformed")]
    BadClaim(String),
    #[error("the issuer says the token is not active")]
    Inactive,
    #[error("the token cannot be checked: {0}")]
    Unavailable(String),
}

impl TokenError {
    /// What the client reads in `error_description`: fixed text, nothing the token or the
    /// issuer wrote (it goes inside a quoted string of a header).
    pub(super) fn description(&self) -> &'static str {
        match self {
            Self::Malformed => "the access token is not a JWT",
            Self::TooLong => "the access token is too long",
            Self::Algorithm(_) => "the access token's signature algorithm is not accepted",
            Self::Critical => "the access token has critical header parameters",
            Self::UnknownKey => "the access token's signing key is unknown",
            Self::KeyMismatch => "the access token's algorithm does not fit its key",
            Self::BadSignature => "the access token's signature is invalid",
            Self::Expired => "the access token expired",
            Self::NotYetValid => "the access token is not valid yet",
            Self::WrongIssuer => "the access token was issued by another issuer",
            Self::WrongAudience => "the access token was not issued for this resource",
            Self::MissingClaim(_) => "the access token lacks a required claim",
            Self::BadClaim(_) => "the access token has a malformed claim",
            Self::Inactive => "the access token is not active",
            Self::Unavailable(_) => "the authorization server cannot be reached",
        }
    }
}

/// The members of a JWS header looked at before any key is chosen.
#[derive(Debug, Deserialize)]
pub(super) struct JwsHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crit: Option<serde::de::IgnoredAny>,
}

impl JwsHeader {
    /// The header of a token that has the shape of a JWS (three base64url parts, the
    /// first a JSON object with `alg`); `None` for anything else (an opaque token).
    pub(super) fn of(token: &str) -> Option<Self> {
        let mut parts = token.split('.');
        let (Some(header), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The key id, for the log.
    pub(super) fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }
}

/// Checks JWTs from one issuer for one resource.
pub(super) struct JwtVerifier {
    pub(super) issuer: String,
    pub(super) audience: String,
    pub(super) algorithms: Vec<JwtAlgorithm>,
    pub(super) leeway_secs: u64,
    pub(super) keys: KeyCache,
}

impl JwtVerifier {
    /// The claims of `token` (whose header is `header`), once every check passed.
    pub(super) async fn verify(
        &self,
        token: &str,
        header: &JwsHeader,
    ) -> Result<Claims, TokenError> {
        if header.crit.is_some() {
            // RFC 7515 §4.1.11: a recipient that does not understand the listed
            // extensions must reject the token; this one understands none.
            return Err(TokenError::Critical);
        }
        let algorithm = JwtAlgorithm::from_name(&header.alg)
            .filter(|algorithm| self.algorithms.contains(algorithm))
            .ok_or_else(|| TokenError::Algorithm(printable(&header.alg)))?;
        let keys = self
            .keys
            .keys_for(header.kid.as_deref(), algorithm)
            .await
            .map_err(|error| match error {
                KeyError::Unknown => TokenError::UnknownKey,
                KeyError::AlgorithmMismatch => TokenError::KeyMismatch,
                KeyError::Unavailable(why) => TokenError::Unavailable(why),
            })?;
        let validation = self.validation(algorithm);
        let mut last = TokenError::UnknownKey;
        for key in keys {
            match jsonwebtoken::decode::<serde_json::Value>(token, &key.decoding, &validation) {
                Ok(data) => return Ok(Claims::from_json(data.claims)),
                // Without a key id, several keys may fit: the next may be the signer.
                Err(error) if *error.kind() == ErrorKind::InvalidSignature => {
                    last = TokenError::BadSignature;
                }
                Err(error) => return Err(token_error(error.kind())),
            }
        }
        Err(last)
    }

    fn validation(&self, algorithm: JwtAlgorithm) -> Validation {
        let mut validation = Validation::new(algorithm.to_jwt());
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        validation.leeway = self.leeway_secs;
        validation
    }
}

fn token_error(kind: &ErrorKind) -> TokenError {
    match kind {
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim.clone()),
        ErrorKind::InvalidClaimFormat(claim) => TokenError::BadClaim(claim.clone()),
        ErrorKind::InvalidAlgorithm
        | ErrorKind::InvalidAlgorithmName
        | ErrorKind::UnsupportedAlgorithm
        | ErrorKind::MissingAlgorithm => TokenError::KeyMismatch,
        _ => TokenError::Malformed,
    }
}

/// A header value from a token, fit for the log: short, printable, else a placeholder.
fn printable(text: &str) -> String {
    if !text.is_empty()
        && text.len() <= 16
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
    {
        text.to_owned()
    } else {
        "(unprintable)".to_owned()
    }
}
