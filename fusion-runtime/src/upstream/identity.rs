//! Who the upstream is told calls: the static credential of its configuration (the
//! default), the caller's own token where the upstream is its audience, or a token the
//! application's exchange hook gives for the caller. A caller's token is never sent to an
//! upstream it was not issued for: without a verified token naming the upstream in `aud`,
//! the call is refused before anything is sent.

use std::sync::Arc;

use crate::{
    failure::{Classification, ErrorClass, ErrorCode, Failure, FailureKind},
    future::BoxFuture,
    identity::RequestInfo,
};

/// The exchange hook: the caller's request in, the token to send for it out.
pub(crate) type Exchange =
    Arc<dyn Fn(RequestInfo) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// How an upstream learns who calls.
#[derive(Clone, Default)]
pub(crate) enum Identity {
    /// Only what the configuration says (`bearer_token`, `header`), or nothing.
    #[default]
    Configured,
    /// The caller's own bearer token, when its verified claims name `audience` in `aud`.
    CallersToken { audience: String },
    /// A token from the application's hook (RFC 8693 token exchange, or anything else).
    Exchanged(Exchange),
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Configured => f.write_str("Configured"),
            Self::CallersToken { audience } => f
                .debug_struct("CallersToken")
                .field("audience", audience)
                .finish(),
            Self::Exchanged(_) => f.write_str("Exchanged"),
        }
    }
}

impl Identity {
    /// Whether the upstream is called with the configured credential alone: only then does
    /// the gateway hold the session's GET stream (`get_stream.rs`), which outlives every
    /// call and so has no caller to name.
    pub(crate) fn is_configured(&self) -> bool {
        matches!(self, Self::Configured)
    }
}

/// The token to send for `request`'s caller: `None` for the configured credential; a
/// failure when the caller may not be named to the upstream.
pub(crate) async fn token_for(
    identity: &Identity,
    prefix: &str,
    request: &RequestInfo,
) -> Result<Option<String>, Failure> {
    match identity {
        Identity::Configured => Ok(None),
        Identity::CallersToken { audience } => callers_token(request, audience)
            .map(Some)
            .ok_or_else(|| {
                refused(format!(
                    "upstream `{prefix}` acts as the caller, and this call carries no verified token issued for it (audience `{audience}`)"
                ))
            }),
        Identity::Exchanged(exchange) => match exchange(request.clone()).await {
            Ok(token) => Ok(Some(token)),
            Err(why) => {
                tracing::warn!(target: "fusion::upstream", prefix, %why, "the token exchange refused a call");
                Err(refused(format!(
                    "upstream `{prefix}` acts as the caller, and no token for it could be had for this caller"
                )))
            }
        },
    }
}

/// The caller's bearer token, if the OAuth guard verified it and its `aud` names
/// `audience` (a string, or an array holding it).
fn callers_token(request: &RequestInfo, audience: &str) -> Option<String> {
    let claims = request.claims()?;
    let named = match claims.get("aud")? {
        serde_json::Value::String(aud) => aud == audience,
        serde_json::Value::Array(auds) => auds.iter().any(|aud| aud.as_str() == Some(audience)),
        _ => false,
    };
    if !named {
        return None;
    }
    let header = request.header("authorization")?;
    let (scheme, token) = header.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
        .filter(|token| !token.is_empty())
}

fn refused(message: String) -> Failure {
    let mut failure = Failure::new(FailureKind::Handler(Classification {
        code: Some(ErrorCode::Unauthorized),
        ..Classification::of(ErrorClass::InvalidInput)
    }));
    failure.chain = vec![message];
    failure.not_sent = true;
    failure
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Claims;

    fn caller(aud: serde_json::Value) -> RequestInfo {
        RequestInfo::in_memory()
            .with_claims(Claims::from_json(
                serde_json::json!({"sub": "ann", "aud": aud}),
            ))
            .with_header("authorization", "Bearer tok-ann")
    }

    #[test]
    fn a_token_goes_only_to_the_audience_it_names() {
        let upstream = "https://billing.example";
        assert_eq!(
            callers_token(&caller(serde_json::json!(upstream)), upstream).as_deref(),
            Some("tok-ann")
        );
        assert_eq!(
            callers_token(&caller(serde_json::json!(["other", upstream])), upstream).as_deref(),
            Some("tok-ann")
        );
        assert_eq!(
            callers_token(
                &caller(serde_json::json!("https://other.example")),
                upstream
            ),
            None
        );
        // A header that no guard verified is never passed on.
        let unverified = RequestInfo::in_memory().with_header("authorization", "Bearer forged");
        assert_eq!(callers_token(&unverified, upstream), None);
    }
}
