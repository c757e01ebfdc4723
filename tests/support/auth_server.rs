//! A test OAuth authorization server with real keys: axum on a free loopback port, on its
//! own thread and runtime (so that blocking tests can use it), serving RFC 8414 metadata
//! and a JWKS of RSA keys generated when it starts. It mints RS256 access tokens with any
//! claims (jsonwebtoken), publishes a new key on demand (rotation), and forges the tokens
//! an attacker would send: `alg: none`, HS256 keyed with the public key, a bad signature,
//! a signature by a key it never published. Stopped (and its thread joined, within a bound)
//! when dropped.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{SystemTime, UNIX_EPOCH},
};

use super::axum_thread::AxumThread;
use axum::{Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
use rsa::{Generate as _, pkcs1::EncodeRsaPrivateKey as _, pkcs8::EncodePublicKey as _};
use serde_json::{Value, json};

/// An RSA signing key, with its public half as a JWK and as PEM.
pub(crate) struct SigningKey {
    pub(crate) kid: String,
    /// The private key, PKCS#1 DER (what jsonwebtoken signs with).
    der: Vec<u8>,
    /// The public key as a JWK, with its `kid`, `alg` and `use`.
    pub(crate) jwk: Value,
    /// The public key, SPKI PEM: the "secret" of the HS256 confusion attack.
    pub(crate) public_pem: String,
}

impl SigningKey {
    /// A new 2048-bit RSA key (the bignum crates are optimized in debug builds, see the
    /// workspace's Cargo.toml: about a second here instead of tens).
    pub(crate) fn generate(kid: &str) -> Self {
        let private = rsa::PrivateKey::generate();
        let der = private
            .to_pkcs1_der()
            .expect("an RSA key encodes")
            .as_bytes()
            .to_vec();
        let public_pem = private
            .to_public_key()
            .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
            .expect("a public key encodes");
        let mut jwk = Jwk::from_encoding_key(&EncodingKey::from_rsa_der(&der), Algorithm::RS256)
            .expect("a JWK of the key");
        jwk.common.key_id = Some(kid.to_owned());
        let mut jwk = serde_json::to_value(jwk).expect("a JWK is JSON");
        jwk["use"] = json!("sig");
        Self {
            kid: kid.to_owned(),
            der,
            jwk,
            public_pem,
        }
    }

    /// `claims` signed RS256 with this key, the header naming `kid`.
    pub(crate) fn sign(&self, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_rsa_der(&self.der))
            .expect("the token signs")
    }
}

struct Published {
    keys: Vec<Value>,
}

/// The authorization server. See the module documentation.
pub(crate) struct AuthServer {
    issuer: String,
    published: Arc<Mutex<Published>>,
    /// The key new tokens are signed with (the last published).
    current: Mutex<Arc<SigningKey>>,
    jwks_fetches: Arc<AtomicUsize>,
    /// Serves the metadata and the JWKS; stopped when the server is dropped.
    _server: AxumThread,
}

#[derive(Clone)]
struct Shared {
    issuer: String,
    published: Arc<Mutex<Published>>,
    jwks_fetches: Arc<AtomicUsize>,
}

async fn metadata(State(shared): State<Shared>) -> impl IntoResponse {
    let issuer = &shared.issuer;
    (
        [("content-type", "application/json")],
        json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "jwks_uri": format!("{issuer}/jwks"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["admin"],
        })
        .to_string(),
    )
}

async fn jwks(State(shared): State<Shared>) -> impl IntoResponse {
    shared.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys = shared
        .published
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .keys
        .clone();
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        json!({ "keys": keys }).to_string(),
    )
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl AuthServer {
    /// Starts the server with one key, `k1`, published.
    pub(crate) fn start() -> Self {
        let first = Arc::new(SigningKey::generate("k1"));
        let published = Arc::new(Mutex::new(Published {
            keys: vec![first.jwk.clone()],
        }));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let server = AxumThread::start("test-auth-server", |issuer| {
            let shared = Shared {
                issuer: issuer.to_owned(),
                published: Arc::clone(&published),
                jwks_fetches: Arc::clone(&jwks_fetches),
            };
            Router::new()
                .route("/.well-known/oauth-authorization-server", get(metadata))
                .route("/jwks", get(jwks))
                .with_state(shared)
        });
        Self {
            issuer: server.url(),
            published,
            current: Mutex::new(first),
            jwks_fetches,
            _server: server,
        }
    }

    /// The issuer identifier (its URL), as the metadata and the tokens write it.
    pub(crate) fn issuer(&self) -> &str {
        &self.issuer
    }

    /// How many times the JWKS was fetched.
    pub(crate) fn jwks_fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }

    fn current(&self) -> Arc<SigningKey> {
        Arc::clone(&self.current.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Claims of a valid access token for `audience` (a resource URL) granting `scope`
    /// (space-separated), for subject `sub`, valid for ten minutes.
    pub(crate) fn claims(&self, audience: &str, sub: &str, scope: &str) -> Value {
        json!({
            "iss": self.issuer,
            "aud": audience,
            "sub": sub,
            "scope": scope,
            "client_id": "test-client",
            "iat": now(),
            "exp": now() + 600,
        })
    }

    /// `claims` with some members replaced (`null` removes one).
    pub(crate) fn with(mut claims: Value, changes: Value) -> Value {
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

    /// `claims` signed RS256 with the current key.
    pub(crate) fn token(&self, claims: &Value) -> String {
        let key = self.current();
        key.sign(Some(&key.kid), claims)
    }

    /// Generates a key named `kid`, publishes it beside the others, and signs the next
    /// tokens with it (a rotation, as identity providers do it).
    pub(crate) fn rotate(&self, kid: &str) {
        let key = Arc::new(SigningKey::generate(kid));
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys
            .push(key.jwk.clone());
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = key;
    }

    /// `alg: none`, no signature, naming the current key.
    pub(crate) fn forge_alg_none(&self, claims: &Value) -> String {
        let header = json!({"alg": "none", "typ": "JWT", "kid": self.current().kid});
        format!(
            "{}.{}.",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        )
    }

    /// HS256 with the current key's public key (PEM) as the HMAC secret: a verifier that
    /// takes the algorithm from the token and the key from the JWKS would accept it.
    pub(crate) fn forge_hs256_with_public_key(&self, claims: &Value) -> String {
        let key = self.current();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(key.kid.clone());
        let secret = EncodingKey::from_secret(key.public_pem.as_bytes()).expect("an HMAC key");
        jsonwebtoken::encode(&header, claims, &secret).expect("the token signs")
    }

    /// A token signed by the current key, then its signature altered.
    pub(crate) fn forge_bad_signature(&self, claims: &Value) -> String {
        let token = self.token(claims);
        let (signed, signature) = token.rsplit_once('.').expect("a JWS has three parts");
        let mut bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature)
            .expect("base64url");
        bytes[0] ^= 0x01;
        format!("{signed}.{}", b64(&bytes))
    }

    /// A token signed by a key this server never published, under the current key's id.
    pub(crate) fn forge_foreign_key(&self, claims: &Value) -> String {
        let foreign = SigningKey::generate("foreign");
        foreign.sign(Some(&self.current().kid), claims)
    }
}
