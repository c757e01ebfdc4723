//! Who may call: roles from the context, scopes from the verified token.

use super::base::{CallInfo, Middleware, from_fn, refuse};
use crate::{
    failure::Failure,
    failure::classify::{Classification, ErrorClass, ErrorCode},
    identity::TransportKind,
};

/// Refuses callers whose verified token lacks one of `scopes`: "Forbidden: `db_user`
/// action `create` needs the scope `db:write`, which the caller's token does not grant".
/// For a group or the whole server; a single tool writes `#[mcp_tool(scopes = [..])]`.
///
/// A request without claims is refused over HTTP (no token was verified: serve with
/// `HttpOptions::oauth`), and let through over stdio and in memory, where the caller is
/// the process's owner.
///
/// ```
/// use fusion_runtime::{middleware, prelude::*};
///
/// /// Drop a table.
/// #[mcp_tool(destructive, group = "admin")]
/// async fn drop_table(name: String) -> String {
///     format!("dropped {name}")
/// }
///
/// let server = Server::builder("db", "1.0.0")
///     .tool(drop_table)
///     .group_middleware("admin", middleware::require_scopes(&["db:admin"]))
///     .build();
/// # let _ = server;
/// ```
pub fn require_scopes<C: Send + Sync + 'static>(
    scopes: &'static [&'static str],
) -> impl Middleware<C> {
    from_fn(
        move |_: &mut C, call: &CallInfo<'_>| match missing_scopes(scopes, call) {
            None => Ok(()),
            Some(refusal) => Err(refusal),
        },
    )
}

/// The refusal of a call whose caller lacks one of `scopes`, or `None` when it may go on
/// (see [`require_scopes`] for the rule without claims).
pub(crate) fn missing_scopes(scopes: &[&str], call: &CallInfo<'_>) -> Option<Failure> {
    if scopes.is_empty() {
        return None;
    }
    let target = match call.action {
        Some(action) => format!("`{}` action `{action}`", call.tool),
        None => format!("`{}`", call.tool),
    };
    let listed = |scopes: &[&str]| {
        scopes
            .iter()
            .map(|scope| format!("`{scope}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let noun = |count: usize| if count == 1 { "scope" } else { "scopes" };
    let message = match call.request.claims() {
        Some(claims) => {
            let missing = claims.missing_scopes(scopes);
            if missing.is_empty() {
                return None;
            }
            let granted: Vec<&str> = claims.scopes().iter().map(String::as_str).collect();
            let granted = if granted.is_empty() {
                "none".to_owned()
            } else {
                listed(&granted)
            };
            format!(
                "{target} needs the {} {}, which the caller's token does not grant (it grants: {granted})",
                noun(missing.len()),
                listed(&missing),
            )
        }
        None if call.request.transport() == TransportKind::Http => format!(
            "{target} needs the {} {}, and this request carries no verified access token",
            noun(scopes.len()),
            listed(scopes),
        ),
        None => return None,
    };
    Some(refuse(
        Classification {
            class: ErrorClass::InvalidInput,
            code: Some(ErrorCode::Forbidden),
            hint: Some(
                "ask the user to authorize a token with that scope; do not retry with the same token",
            ),
            retry_after: None,
        },
        message,
    ))
}

/// A context that knows the caller's roles, for [`require_role`].
pub trait HasRoles {
    /// Whether the caller has `role`.
    fn has_role(&self, role: &str) -> bool;
}

/// Refuses callers without `role`: "Unauthorized: this tool requires the role `admin`".
pub fn require_role<C: HasRoles + Send + Sync + 'static>(role: &'static str) -> impl Middleware<C> {
    from_fn(move |ctx: &mut C, call: &CallInfo<'_>| {
        if ctx.has_role(role) {
            Ok(())
        } else {
            let target = match call.action {
                Some(action) => format!("`{}` action `{action}`", call.tool),
                None => format!("`{}`", call.tool),
            };
            Err(refuse(
                Classification {
                    class: ErrorClass::InvalidInput,
                    code: Some(ErrorCode::Unauthorized),
                    hint: Some(
                        "ask a user with that role to make this call; do not retry with the same credentials",
                    ),
                    retry_after: None,
                },
                format!("{target} requires the role `{role}`"),
            ))
        }
    })
}
