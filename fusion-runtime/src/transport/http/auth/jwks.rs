//! The issuer's signing keys: discovered, fetched, cached, and fetched again when a token
//! names a key the cache does not hold (rotation) or the cache is old. Fetches are single
//! flight (callers that miss together share one) and rate-limited (an attacker naming
//! random key ids costs the issuer at most one fetch per interval).

use std::{
    sync::{Arc, RwLock},
    time::Duration,
};

use jsonwebtoken::{
    DecodingKey,
    jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse},
};
use reqwest::Url;
use serde::Deserialize;
use tokio::time::Instant;

use super::{config::JwtAlgorithm, discovery, fetch::Fetcher};

/// How long fetched keys are used before they are fetched again, so that a key the issuer
/// withdrew (compromised, retired) stops being accepted within this time.
pub(super) const JWKS_MAX_AGE: Duration = Duration::from_secs(600);

/// The most keys kept from one JWKS: bounds the keys a token without a key id is tried
/// against, whatever the issuer publishes.
const MAX_KEYS: usize = 32;

/// One verification key of the issuer.
pub(super) struct Key {
    pub(super) kid: Option<String>,
    kind: KeyKind,
    /// The algorithm the JWK is restricted to (`alg`), when it says.
    declared: Option<JwtAlgorithm>,
    pub(super) decoding: DecodingKey,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl Key {
    /// A verification key from a JWK; `None` for what cannot verify a signature here:
    /// symmetric (`oct`) keys above all (a secret in a public document verifies nothing),
    /// keys meant for encryption, curves and algorithms not supported.
    fn from_jwk(jwk: &Jwk) -> Option<Self> {
        if jwk
            .common
            .public_key_use
            .as_ref()
            .is_some_and(|usage| *usage != PublicKeyUse::Signature)
        {
            return None;
        }
        if let Some(operations) = &jwk.common.key_operations
            && !operations
                .iter()
                .any(|operation| matches!(operation, KeyOperations::Verify))
        {
            return None;
        }
        let kind = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => KeyKind::Rsa,
            AlgorithmParameters::EllipticCurve(params) => match params.curve {
                EllipticCurve::P256 => KeyKind::P256,
                EllipticCurve::P384 => KeyKind::P384,
                _ => return None,
            },
            AlgorithmParameters::OctetKeyPair(params) => match params.curve {
                EllipticCurve::Ed25519 => KeyKind::Ed25519,
                _ => return None,
            },
            _ => return None,
        };
        let declared = match jwk.common.key_algorithm {
            None => None,
            Some(algorithm) => Some(declared_algorithm(algorithm)?),
        };
        let decoding = DecodingKey::from_jwk(jwk).ok()?;
        Some(Self {
            kid: jwk.common.key_id.clone(),
            kind,
            declared,
            decoding,
        })
    }

    /// Whether a signature made with `algorithm` can come from this key: the key's type
    /// (and curve) must be the algorithm's, and the JWK's own `alg`, when present, must be
    /// it. This is what keeps an RSA key from being used for anything but RSA.
    pub(super) fn fits(&self, algorithm: JwtAlgorithm) -> bool {
        let kind_fits = match algorithm {
            JwtAlgorithm::RS256
            | JwtAlgorithm::RS384
            | JwtAlgorithm::RS512
            | JwtAlgorithm::PS256
            | JwtAlgorithm::PS384
            | JwtAlgorithm::PS512 => self.kind == KeyKind::Rsa,
            JwtAlgorithm::ES256 => self.kind == KeyKind::P256,
            JwtAlgorithm::ES384 => self.kind == KeyKind::P384,
            JwtAlgorithm::EdDSA => self.kind == KeyKind::Ed25519,
        };
        kind_fits && self.declared.is_none_or(|declared| declared == algorithm)
    }
}

/// The JWK's `alg` as one of ours; `None` (the key is dropped) for any other: an `HS256`
/// or encryption algorithm on a published key is a misconfiguration not to guess around.
fn declared_algorithm(algorithm: KeyAlgorithm) -> Option<JwtAlgorithm> {
    Some(match algorithm {
        KeyAlgorithm::RS256 => JwtAlgorithm::RS256,
        KeyAlgorithm::RS384 => JwtAlgorithm::RS384,
        KeyAlgorithm::RS512 => JwtAlgorithm::RS512,
        KeyAlgorithm::PS256 => JwtAlgorithm::PS256,
        KeyAlgorithm::PS384 => JwtAlgorithm::PS384,
        KeyAlgorithm::PS512 => JwtAlgorithm::PS512,
        KeyAlgorithm::ES256 => JwtAlgorithm::ES256,
        KeyAlgorithm::ES384 => JwtAlgorithm::ES384,
        KeyAlgorithm::EdDSA => JwtAlgorithm::EdDSA,
        _ => return None,
    })
}

/// A JWKS as published: each key parsed on its own, so that one key of a type this crate
/// does not know does not hide the others.
#[derive(Deserialize)]
struct JwksDocument {
    keys: Vec<serde_json::Value>,
}

/// The verification keys of a JWKS document.
fn keys_of(document: JwksDocument) -> Vec<Arc<Key>> {
    document
        .keys
        .into_iter()
        .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
        .filter_map(|jwk| Key::from_jwk(&jwk))
        .take(MAX_KEYS)
        .map(Arc::new)
        .collect()
}

/// The keys held now.
struct KeySet {
    keys: Vec<Arc<Key>>,
    /// When they were fetched; `None` before the first successful fetch.
    fetched_at: Option<Instant>,
    /// Bumped at each successful fetch: a caller that waited for another's fetch sees
    /// that it happened.
    generation: u64,
}

/// Why no key could verify a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum KeyError {
    /// The issuer's keys hold no key with the token's key id (after a refetch, or while
    /// one is not allowed yet).
    Unknown,
    /// The key the token names is of another type than its algorithm (RSA key, ECDSA
    /// algorithm, and so on).
    AlgorithmMismatch,
    /// The issuer's keys cannot be had: why.
    Unavailable(String),
}

/// What caused a fetch; each is limited differently.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reason {
    /// No key was ever fetched.
    Missing,
    /// The keys are older than [`JWKS_MAX_AGE`].
    Stale,
    /// A token named a key id that is not there.
    UnknownKey,
}

/// The state only the fetching caller touches.
struct Refresh {
    jwks_uri: Option<Url>,
    last_unknown_key_fetch: Option<Instant>,
    last_failure: Option<(Instant, String)>,
}

/// The issuer's keys, cached.
pub(super) struct KeyCache {
    fetcher: Fetcher,
    issuer: Url,
    issuer_text: String,
    min_interval: Duration,
    current: RwLock<Arc<KeySet>>,
    /// Held by the one caller that fetches; the others wait here, then use its result.
    refresh: tokio::sync::Mutex<Refresh>,
}

impl KeyCache {
    pub(super) fn new(
        fetcher: Fetcher,
        issuer: Url,
        issuer_text: String,
        min_interval: Duration,
    ) -> Self {
        Self {
            fetcher,
            issuer,
            issuer_text,
            min_interval,
            current: RwLock::new(Arc::new(KeySet {
                keys: Vec::new(),
                fetched_at: None,
                generation: 0,
            })),
            refresh: tokio::sync::Mutex::new(Refresh {
                jwks_uri: None,
                last_unknown_key_fetch: None,
                last_failure: None,
            }),
        }
    }

    fn snapshot(&self) -> Arc<KeySet> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Discovers the issuer and fetches its keys (at start-up); a failure is logged, and
    /// tried again when a token needs the keys.
    pub(super) async fn warm_up(&self) {
        let seen = self.snapshot().generation;
        if let Err(error) = self.refresh(Reason::Missing, seen).await {
            tracing::warn!(
                target: "fusion::auth",
                issuer = %self.issuer_text,
                %error,
                "cannot load the OAuth issuer's keys; the server starts anyway and tries again when a token comes (until then, requests with a token get 503)"
            );
        }
    }

    /// The keys that may have signed a token with `kid` and `algorithm`: the key with
    /// that id, or every fitting key when the token names none.
    pub(super) async fn keys_for(
        &self,
        kid: Option<&str>,
        algorithm: JwtAlgorithm,
    ) -> Result<Vec<Arc<Key>>, KeyError> {
        let mut set = self.snapshot();
        match set.fetched_at {
            None => {
                set = self
                    .refresh(Reason::Missing, set.generation)
                    .await
                    .map_err(KeyError::Unavailable)?;
            }
            Some(at) if at.elapsed() >= JWKS_MAX_AGE => {
                // Old keys stay in use when the issuer cannot be reached: refusing every
                // token during an outage of the issuer would be worse.
                if let Ok(fresh) = self.refresh(Reason::Stale, set.generation).await {
                    set = fresh;
                }
            }
            Some(_) => {}
        }
        match select(&set, kid, algorithm) {
            Ok(keys) => return Ok(keys),
            Err(KeyError::Unknown) => {}
            Err(other) => return Err(other),
        }
        let set = self
            .refresh(Reason::UnknownKey, set.generation)
            .await
            .map_err(KeyError::Unavailable)?;
        select(&set, kid, algorithm)
    }

    /// Fetches the keys unless another caller did meanwhile, or the limits say not yet;
    /// the keys held afterwards, or why none can be had.
    async fn refresh(&self, reason: Reason, seen: u64) -> Result<Arc<KeySet>, String> {
        // Dropped while waiting or fetching: the lock is released and nothing is half
        // done (the new set is installed in one store, after the fetch).
        let mut state = self.refresh.lock().await;
        let current = self.snapshot();
        if current.generation != seen {
            return Ok(current);
        }
        let now = Instant::now();
        if let Some((at, error)) = &state.last_failure
            && now.duration_since(*at) < self.min_interval
        {
            return Err(error.clone());
        }
        if reason == Reason::UnknownKey {
            if state
                .last_unknown_key_fetch
                .is_some_and(|at| now.duration_since(at) < self.min_interval)
            {
                return Ok(current);
            }
            state.last_unknown_key_fetch = Some(now);
        }
        match self.fetch(&mut state).await {
            Ok(keys) => {
                state.last_failure = None;
                tracing::info!(
                    target: "fusion::auth",
                    issuer = %self.issuer_text,
                    keys = keys.len(),
                    kids = ?keys.iter().filter_map(|key| key.kid.as_deref()).collect::<Vec<_>>(),
                    "fetched the OAuth issuer's keys"
                );
                let fresh = Arc::new(KeySet {
                    keys,
                    fetched_at: Some(Instant::now()),
                    generation: current.generation + 1,
                });
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&fresh);
                Ok(fresh)
            }
            Err(error) => {
                tracing::warn!(target: "fusion::auth", issuer = %self.issuer_text, %error, "cannot fetch the OAuth issuer's keys");
                state.last_failure = Some((now, error.clone()));
                Err(error)
            }
        }
    }

    async fn fetch(&self, state: &mut Refresh) -> Result<Vec<Arc<Key>>, String> {
        let jwks_uri = match &state.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let (_, uri) = discovery::discover(&self.fetcher, &self.issuer, &self.issuer_text)
                    .await
                    .map_err(|error| error.to_string())?;
                state.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let document = match self
            .fetcher
            .get_json::<JwksDocument>(jwks_uri.as_str())
            .await
        {
            Ok(document) => document,
            Err(error) => {
                // The issuer may have moved its keys: discover again next time.
                state.jwks_uri = None;
                return Err(format!("cannot fetch the JWKS: {error}"));
            }
        };
        let keys = keys_of(document);
        if keys.is_empty() {
            return Err(format!(
                "the JWKS at {jwks_uri} holds no key that can verify a signature"
            ));
        }
        Ok(keys)
    }
}

fn select(
    set: &KeySet,
    kid: Option<&str>,
    algorithm: JwtAlgorithm,
) -> Result<Vec<Arc<Key>>, KeyError> {
    let named: Vec<&Arc<Key>> = set
        .keys
        .iter()
        .filter(|key| kid.is_none() || key.kid.as_deref() == kid)
        .collect();
    let fitting: Vec<Arc<Key>> = named
        .iter()
        .filter(|key| key.fits(algorithm))
        .map(|key| Arc::clone(key))
        .collect();
    if !fitting.is_empty() {
        Ok(fitting)
    } else if kid.is_some() && !named.is_empty() {
        Err(KeyError::AlgorithmMismatch)
    } else {
        Err(KeyError::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(value: serde_json::Value) -> Option<Key> {
        Key::from_jwk(&serde_json::from_value(value).expect("a JWK"))
    }

    const N: &str = "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw";

    #[test]
    fn keys_fit_only_their_own_algorithms() {
        let rsa = key(serde_json::json!({"kty": "RSA", "kid": "r", "n": N, "e": "AQAB"}))
            .expect("an RSA key");
        assert!(rsa.fits(JwtAlgorithm::RS256) && rsa.fits(JwtAlgorithm::PS512));
        assert!(!rsa.fits(JwtAlgorithm::ES256) && !rsa.fits(JwtAlgorithm::EdDSA));
        let pinned = key(serde_json::json!({"kty": "RSA", "alg": "RS384", "n": N, "e": "AQAB"}))
            .expect("an RSA key");
        assert!(pinned.fits(JwtAlgorithm::RS384) && !pinned.fits(JwtAlgorithm::RS256));
        // Symmetric keys, encryption keys and HS-pinned keys verify nothing here.
        assert!(key(serde_json::json!({"kty": "oct", "k": "c2VjcmV0"})).is_none());
        assert!(
            key(serde_json::json!({"kty": "RSA", "use": "enc", "n": N, "e": "AQAB"})).is_none()
        );
        assert!(
            key(serde_json::json!({"kty": "RSA", "alg": "HS256", "n": N, "e": "AQAB"})).is_none()
        );
        assert!(
            key(serde_json::json!({"kty": "RSA", "key_ops": ["encrypt"], "n": N, "e": "AQAB"}))
                .is_none()
        );
    }

    #[test]
    fn one_unknown_key_does_not_hide_the_others() {
        let document: JwksDocument = serde_json::from_value(serde_json::json!({"keys": [
            {"kty": "weird"},
            {"kty": "oct", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "r", "n": N, "e": "AQAB"},
        ]}))
        .expect("a JWKS");
        let keys = keys_of(document);
        assert_eq!(keys.len(), 1);
        let set = KeySet {
            keys,
            fetched_at: None,
            generation: 0,
        };
        assert!(select(&set, Some("r"), JwtAlgorithm::RS256).is_ok());
        assert!(select(&set, None, JwtAlgorithm::RS256).is_ok());
        assert_eq!(
            select(&set, Some("r"), JwtAlgorithm::ES256).err(),
            Some(KeyError::AlgorithmMismatch)
        );
        assert_eq!(
            select(&set, Some("other"), JwtAlgorithm::RS256).err(),
            Some(KeyError::Unknown)
        );
        assert_eq!(
            select(&set, None, JwtAlgorithm::ES256).err(),
            Some(KeyError::Unknown)
        );
    }
}
