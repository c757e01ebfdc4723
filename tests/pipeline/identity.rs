//! Who is calling, in memory: the context built from the request
//! (`context_from_request`), per-tool scopes (`#[mcp_tool(scopes = [..])]`) and
//! `require_scopes`, middleware that sees the caller, per-caller limits, and the demo's
//! roles from the token, all through `Tester::as_caller` and the real pipeline.

use fusion_runtime::{
    axum::http,
    identity::{Claims, RequestInfo, TransportKind},
    middleware::{self, CallInfo},
    prelude::*,
    testing::Tester,
};
use serde_json::json;

fn token(subject: &str, scopes: &[&str]) -> RequestInfo {
    RequestInfo::in_memory().with_claims(Claims::for_subject(subject, scopes.iter().copied()))
}

/// A request as the HTTP transport reports it, without a verified token.
fn http_request(headers: &[(&str, &str)]) -> RequestInfo {
    let mut request = http::Request::builder().uri("/mcp");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let (parts, ()) = request.body(()).expect("a valid request").into_parts();
    RequestInfo::from_http(&parts)
}

struct Ctx {
    user: String,
    tenant: Option<String>,
    transport: TransportKind,
}

/// Who is calling, as the context says.
#[mcp_tool(read_only)]
async fn whoami(#[ctx] ctx: &Ctx) -> String {
    format!(
        "{} of {} over {:?}",
        ctx.user,
        ctx.tenant.as_deref().unwrap_or("no tenant"),
        ctx.transport
    )
}

/// Write a row.
#[mcp_tool(scopes = ["db:write"])]
async fn write_row(#[ctx] _ctx: &Ctx, id: u32) -> String {
    format!("wrote {id}")
}

/// Drop a table.
#[mcp_tool(destructive, scopes = ["db:write", "db:admin"])]
async fn drop_table(#[ctx] _ctx: &Ctx, name: String) -> String {
    format!("dropped {name}")
}

fn server() -> Tester<Ctx> {
    Tester::new(
        Server::builder("identity", "1.0.0")
            .context_from_request(|request: &RequestInfo| Ctx {
                user: request.subject().unwrap_or("anonymous").to_owned(),
                tenant: request.header("x-tenant").map(str::to_owned),
                transport: request.transport(),
            })
            .tool(whoami)
            .tool(write_row)
            .tool(drop_table)
            .build(),
    )
}

#[tokio::test]
async fn the_context_is_built_from_each_request() {
    let tester = server();
    assert_eq!(
        tester.call("whoami", json!({})).await.data,
        "anonymous of no tenant over InMemory"
    );
    let alice = tester.as_caller(token("alice", &["read"]).with_header("x-tenant", "acme"));
    assert_eq!(
        alice.call("whoami", json!({})).await.data,
        "alice of acme over InMemory"
    );
    let over_http = tester.as_caller(http_request(&[("x-tenant", "globex")]));
    assert_eq!(
        over_http.call("whoami", json!({})).await.data,
        "anonymous of globex over Http"
    );
}

#[tokio::test]
async fn two_callers_at_once_get_their_own_contexts() {
    let tester = server();
    let (ann, bob) = (
        tester.as_caller(token("ann", &[])),
        tester.as_caller(token("bob", &[])),
    );
    let mut calls = Vec::new();
    for round in 0..50 {
        let (caller, name) = if round % 2 == 0 {
            (&ann, "ann")
        } else {
            (&bob, "bob")
        };
        calls.push(async move { (name, caller.call("whoami", json!({})).await.data) });
    }
    for (name, data) in futures_util::future::join_all(calls).await {
        assert_eq!(data, format!("{name} of no tenant over InMemory"));
    }
}

#[tokio::test]
async fn a_tools_scopes_are_required_of_a_token() {
    let tester = server();
    let reader = tester.as_caller(token("bob", &["db:read"]));
    let refused = reader.call("write_row", json!({"id": 7})).await;
    assert!(refused.is_error);
    assert!(
        refused.text().starts_with(
            "Forbidden: `write_row` needs the scope `db:write`, which the caller's token does not grant (it grants: `db:read`)"
        ),
        "{}",
        refused.text()
    );
    assert!(
        refused.text().contains("do not retry with the same token"),
        "{}",
        refused.text()
    );
    let writer = tester.as_caller(token("ann", &["db:write"]));
    assert_eq!(
        writer.call("write_row", json!({"id": 7})).await.data,
        "wrote 7"
    );
    // Two scopes: the message names only the missing one.
    let half = writer.call("drop_table", json!({"name": "users"})).await;
    assert!(half.is_error);
    assert!(
        half.text().contains("needs the scope `db:admin`") && !half.text().contains("`db:write`,"),
        "{}",
        half.text()
    );
    let none = tester
        .as_caller(token("eve", &[]))
        .call("write_row", json!({"id": 1}))
        .await;
    assert!(none.text().contains("(it grants: none)"), "{}", none.text());
    let admin = tester.as_caller(token("root", &["db:admin", "db:write"]));
    assert_eq!(
        admin
            .call("drop_table", json!({"name": "users"}))
            .await
            .data,
        "dropped users"
    );
}

#[tokio::test]
async fn without_a_token_scopes_hold_over_http_only() {
    let tester = server();
    // In memory (and over stdio) the caller is the process's owner.
    assert_eq!(
        tester.call("write_row", json!({"id": 3})).await.data,
        "wrote 3"
    );
    let over_http = tester.as_caller(http_request(&[]));
    let refused = over_http.call("write_row", json!({"id": 3})).await;
    assert!(refused.is_error);
    assert!(
        refused.text().contains(
            "needs the scope `db:write`, and this request carries no verified access token"
        ),
        "{}",
        refused.text()
    );
}

#[tokio::test]
async fn a_refused_scope_runs_no_middleware_and_no_handler() {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let tester = Tester::new(
        Server::builder("identity", "1.0.0")
            .context_from_request(|_: &RequestInfo| Ctx {
                user: String::new(),
                tenant: None,
                transport: TransportKind::InMemory,
            })
            .tool(write_row)
            .middleware(middleware::from_fn(move |_: &mut Ctx, _: &CallInfo<'_>| {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }))
            .build(),
    );
    let refused = tester
        .as_caller(token("bob", &["db:read"]))
        .call("write_row", json!({"id": 1}))
        .await;
    assert!(refused.is_error);
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    let allowed = tester
        .as_caller(token("ann", &["db:write"]))
        .call("write_row", json!({"id": 1}))
        .await;
    assert!(!allowed.is_error);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

/// Read a report.
#[mcp_tool(read_only, group = "reports", action = "read")]
async fn read_report(id: u32) -> String {
    format!("report {id}")
}

#[tokio::test]
async fn middleware_sees_the_caller_and_limits_each_one() {
    let tester = Tester::new(
        Server::builder("reports", "1.0.0")
            .tool(read_report)
            .group_middleware("reports", middleware::require_scopes(&["reports:read"]))
            .middleware(middleware::rate_limit_per_caller(0.001, 2))
            .build(),
    );
    let ann = tester.as_caller(token("ann", &["reports:read"]));
    let bob = tester.as_caller(token("bob", &["reports:read"]));
    for _ in 0..2 {
        let read = ann.call_action("reports", "read", json!({"id": 1})).await;
        assert_eq!(read.data, "report 1", "{}", read.text());
    }
    let limited = ann.call_action("reports", "read", json!({"id": 1})).await;
    assert!(limited.is_error);
    assert!(
        limited.text().contains("for each caller"),
        "{}",
        limited.text()
    );
    let other = bob.call_action("reports", "read", json!({"id": 1})).await;
    assert_eq!(
        other.data,
        "report 1",
        "bob's bucket is his own: {}",
        other.text()
    );
    let no_scope = tester
        .as_caller(token("eve", &["other"]))
        .call_action("reports", "read", json!({"id": 1}))
        .await;
    assert!(
        no_scope
            .text()
            .contains("`reports` action `read` needs the scope `reports:read`"),
        "{}",
        no_scope.text()
    );
}

#[tokio::test]
async fn the_demo_takes_each_callers_role_from_their_token() {
    let tester = Tester::new(
        fusion_demo::builder_from_token(fusion_runtime::tool::Exposure::Grouped).build(),
    );
    let admin = tester.as_caller(token("ann", &["admin", "openid"]));
    let guest = tester.as_caller(token("bob", &["openid"]));
    let list = json!({"take": 2});
    let (as_admin, as_guest) = tokio::join!(
        admin.call_action("db_user", "find_many", list.clone()),
        guest.call_action("db_user", "find_many", list.clone()),
    );
    assert!(!as_admin.is_error, "{}", as_admin.text());
    assert_eq!(as_admin.data.as_array().map(Vec::len), Some(2));
    assert!(as_guest.is_error);
    assert!(
        as_guest.text().contains("requires the role `admin`"),
        "{}",
        as_guest.text()
    );
    // Both may use `system`.
    let health = guest.call_action("system", "health", json!({})).await;
    assert!(!health.is_error, "{}", health.text());
    // No token at all is a guest.
    let anonymous = tester.call_action("db_user", "find_many", list).await;
    assert!(anonymous.is_error);
}
