//! Opaque tokens: asking the issuer's introspection endpoint (RFC 7662) whether a token is
//! active, then checking what it says as a JWT's claims would be checked.

use serde_json::{Map, Value};

use super::{config::Introspection, fetch::Fetcher, verify::TokenError};
use crate::identity::Claims;

/// Asks one endpoint, as one client, about tokens for one resource.
pub(super) struct Introspector {
    pub(super) endpoint: Introspection,
    pub(super) fetcher: Fetcher,
    pub(super) issuer: String,
    pub(super) audience: String,
    pub(super) leeway_secs: u64,
}

impl Introspector {
    /// The claims of an active token for this resource.
    pub(super) async fn introspect(&self, token: &str) -> Result<Claims, TokenError> {
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let answer: Map<String, Value> = self
            .fetcher
            .post_form_json(
                &self.endpoint.endpoint,
                form,
                &self.endpoint.client_id,
                &self.endpoint.client_secret,
            )
            .await
            .map_err(|error| TokenError::Unavailable(error.to_string()))?;
        check(
            answer,
            &self.issuer,
            &self.audience,
            self.leeway_secs,
            now(),
        )
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// RFC 7662 §2.2: only `active: true` (the boolean) means active. The other members are
/// optional; those present must agree with this resource: `iss` exactly, `aud` holding
/// the resource URL, `exp` not past and `nbf` not ahead, with the leeway.
fn check(
    mut answer: Map<String, Value>,
    issuer: &str,
    audience: &str,
    leeway: u64,
    now: u64,
) -> Result<Claims, TokenError> {
    if answer.remove("active") != Some(Value::Bool(true)) {
        return Err(TokenError::Inactive);
    }
    if let Some(iss) = answer.get("iss")
        && iss.as_str() != Some(issuer)
    {
        return Err(TokenError::WrongIssuer);
    }
    match answer.get("aud") {
        None => {}
        Some(Value::String(aud)) if aud == audience => {}
        Some(Value::Array(auds)) if auds.iter().any(|aud| aud.as_str() == Some(audience)) => {}
        Some(_) => return Err(TokenError::WrongAudience),
    }
    let time = |claim: &str| -> Result<Option<u64>, TokenError> {
        match answer.get(claim) {
            None => Ok(None),
            Some(value) => value
                .as_u64()
                .or_else(|| value.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                .map(Some)
                .ok_or_else(|| TokenError::BadClaim(claim.to_owned())),
        }
    };
    if time("exp")?.is_some_and(|exp| exp.saturating_add(leeway) < now) {
        return Err(TokenError::Expired);
    }
    if time("nbf")?.is_some_and(|nbf| nbf > now.saturating_add(leeway)) {
        return Err(TokenError::NotYetValid);
    }
    Ok(Claims::from_json(Value::Object(answer)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ISS: &str = "https://id.example.com";
    const AUD: &str = "https://mcp.example.com/mcp";

    fn checked(answer: Value) -> Result<Claims, TokenError> {
        let Value::Object(answer) = answer else {
            panic!("an object")
        };
        check(answer, ISS, AUD, 60, 1_000_000)
    }

    #[test]
    fn only_an_active_token_for_this_resource_passes() {
        let claims = checked(json!({"active": true, "sub": "ann", "scope": "a b", "aud": [AUD, "x"], "iss": ISS, "exp": 1_000_100}))
            .expect("active");
        assert_eq!(claims.subject(), Some("ann"));
        assert!(claims.has_scope("b"));
        assert!(claims.get("active").is_none());
        assert!(checked(json!({"active": true})).is_ok());
        for (answer, error) in [
            (json!({"active": false, "sub": "ann"}), TokenError::Inactive),
            (json!({"active": "true"}), TokenError::Inactive),
            (json!({"sub": "ann"}), TokenError::Inactive),
            (
                json!({"active": true, "iss": "https://evil.example"}),
                TokenError::WrongIssuer,
            ),
            (
                json!({"active": true, "aud": "https://other.example/mcp"}),
                TokenError::WrongAudience,
            ),
            (
                json!({"active": true, "aud": ["a", "b"]}),
                TokenError::WrongAudience,
            ),
            (json!({"active": true, "exp": 999_900}), TokenError::Expired),
            (
                json!({"active": true, "nbf": 1_000_100}),
                TokenError::NotYetValid,
            ),
            (
                json!({"active": true, "exp": "soon"}),
                TokenError::BadClaim("exp".to_owned()),
            ),
        ] {
            assert_eq!(checked(answer.clone()).err(), Some(error), "{answer}");
        }
        // Within the leeway.
        assert!(checked(json!({"active": true, "exp": 999_950, "nbf": 1_000_050})).is_ok());
    }
}
