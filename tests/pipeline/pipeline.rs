//! The call pipeline through the in-memory tester: decoding errors (every problem at
//! once, with path, expectation and what came), routing errors, panics and handler
//! errors (masked, with a correlation id), the rendering of each return type, the
//! context, and the direct call of an annotated function.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use fusion_runtime::{BuildError, meta::ISSUES_META_KEY, prelude::*};
use serde_json::{Value, json};

/// The shared state of the tests' server.
#[derive(Clone)]
pub struct Ctx {
    pub role: String,
    pub calls: Arc<AtomicUsize>,
}

#[allow(
    dead_code,
    reason = "decoded for its schema; the test reads the schema, not the fields"
)]
/// A nested filter.
#[mcp_type]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// How many.
    pub limit: u8,
    /// Which tags.
    pub tags: Vec<String>,
}

/// A user.
#[mcp_type]
#[derive(Debug, Serialize, JsonSchema)]
pub struct User {
    pub id: u32,
    pub name: String,
}

/// The handler's own error.
#[derive(Debug, thiserror::Error)]
#[error("the database said no")]
pub struct DbError {
    #[source]
    source: std::io::Error,
}

/// Add two integers.
#[mcp_tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Say hello.
#[mcp_tool]
async fn hello(name: String) -> String {
    format!("hello {name}")
}

/// Ping, without parameters.
#[mcp_tool]
async fn ping() -> &'static str {
    "pong"
}

/// Do something and return nothing.
#[mcp_tool]
async fn touch() {}

/// Search with a nested filter.
#[mcp_tool]
async fn search(query: String, filters: Vec<Filter>, page: Option<u32>) -> Vec<User> {
    let _ = (query, filters, page);
    vec![User {
        id: 1,
        name: "Ada".into(),
    }]
}

/// Fetch a user.
#[mcp_tool]
async fn get_user(user_id: u32) -> User {
    User {
        id: user_id,
        name: "Ada".into(),
    }
}

/// Always panics.
#[mcp_tool]
async fn crash() -> String {
    panic!("secret internal detail: index 7 out of range")
}

/// Always fails with an internal error.
#[mcp_tool]
async fn failing() -> Result<String, DbError> {
    Err(DbError {
        source: std::io::Error::other("password=hunter2 rejected"),
    })
}

/// Who am I?
#[mcp_tool]
async fn whoami(#[ctx] ctx: &Ctx) -> String {
    ctx.calls.fetch_add(1, Ordering::SeqCst);
    ctx.role.clone()
}

fn server() -> fusion_runtime::Server<Ctx> {
    let calls = Arc::new(AtomicUsize::new(0));
    Server::builder("pipeline", "1.2.3")
        .context(move || Ctx {
            role: "admin".into(),
            calls: Arc::clone(&calls),
        })
        .tool(add)
        .tool(hello)
        .tool(ping)
        .tool(touch)
        .tool(search)
        .tool(get_user)
        .tool(crash)
        .tool(failing)
        .tool(whoami)
        .build()
}

fn tester() -> Tester<Ctx> {
    Tester::new(server())
}

fn issues(result: &TestResult) -> Vec<(String, String)> {
    let meta = result
        .raw
        .meta
        .as_ref()
        .expect("invalid arguments carry _meta");
    meta.0[ISSUES_META_KEY]
        .as_array()
        .expect("a list of issues")
        .iter()
        .map(|issue| {
            (
                issue["path"].as_str().unwrap_or_default().to_owned(),
                issue["code"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_good_call_returns_structured_data() {
    let result = tester().call("add", json!({"a": 2, "b": 3})).await;
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.data, json!(5));
    assert_eq!(result.text(), "5");
    assert_eq!(result.raw.structured_content, Some(json!({"result": 5})));
    assert!(result.system_rules.is_empty() && result.ui_blocks.is_empty());
}

#[tokio::test]
async fn text_unit_and_struct_results_render_by_type() {
    let t = tester();
    let text = t.call("hello", json!({"name": "Ada"})).await;
    assert_eq!(text.text(), "hello Ada");
    assert_eq!(text.data, json!("hello Ada"));
    assert_eq!(text.raw.structured_content, None);

    let unit = t.call("touch", Value::Null).await;
    assert!(!unit.is_error);
    assert_eq!(unit.text(), "done");

    let user = t.call("get_user", json!({"user_id": 7})).await;
    assert_eq!(
        user.raw.structured_content,
        Some(json!({"id": 7, "name": "Ada"}))
    );
    assert_eq!(user.data, json!({"id": 7, "name": "Ada"}));
    let copy: Value = serde_json::from_str(&user.text()).expect("the text copy is JSON");
    assert_eq!(copy, user.data);

    let list = t.call("search", json!({"query": "a", "filters": []})).await;
    assert_eq!(
        list.raw.structured_content,
        Some(json!({"result": [{"id": 1, "name": "Ada"}]}))
    );
}

#[tokio::test]
async fn wrong_type_names_the_field_expectation_and_value() {
    let result = tester().call("add", json!({"a": 1, "b": "10"})).await;
    assert!(result.is_error);
    let text = result.text();
    assert!(
        text.starts_with("Invalid arguments for tool `add`:"),
        "{text}"
    );
    assert!(
        text.contains("`b` (type): expected an integer; received \"10\" (a string)"),
        "{text}"
    );
    assert!(text.contains("send 10 without quotes"), "{text}");
    assert_eq!(result.data, Value::String(text));
}

#[tokio::test]
async fn every_problem_of_a_call_is_reported_at_once() {
    let result = tester()
        .call("add", json!({"a": "x", "c": 3, "userId": 1}))
        .await;
    assert!(result.is_error);
    let mut found = issues(&result);
    found.sort();
    assert_eq!(
        found,
        vec![
            ("a".into(), "type".into()),
            ("b".into(), "missing".into()),
            ("c".into(), "unknown_field".into()),
            ("userId".into(), "unknown_field".into()),
        ]
    );
    assert!(
        result
            .text()
            .contains("`b` (missing): required, expected an integer; received (missing)")
    );
}

#[tokio::test]
async fn unknown_fields_get_a_did_you_mean() {
    let result = tester().call("get_user", json!({"userId": 3})).await;
    assert!(result.is_error);
    let text = result.text();
    assert!(text.contains("`userId` (unknown_field)"), "{text}");
    assert!(text.contains("did you mean `user_id`?"), "{text}");
    assert!(text.contains("`user_id` (missing)"), "{text}");
}

#[tokio::test]
async fn null_for_a_required_field_is_an_error_but_fine_for_an_option() {
    let t = tester();
    let result = t.call("add", json!({"a": null, "b": 1})).await;
    assert!(result.is_error);
    assert_eq!(issues(&result), vec![("a".to_owned(), "null".to_owned())]);
    assert!(
        result
            .text()
            .contains("`a` (null): expected an integer, not null"),
        "{}",
        result.text()
    );

    let optional = t
        .call("search", json!({"query": "q", "filters": [], "page": null}))
        .await;
    assert!(!optional.is_error, "{}", optional.text());
}

#[tokio::test]
async fn nested_problems_carry_json_paths() {
    let result = tester()
        .call(
            "search",
            json!({"query": "q", "filters": [{"limit": 1, "tags": []}, {"limit": 300, "tags": ["a", 5]}, {"limit": 2}]}),
        )
        .await;
    assert!(result.is_error);
    let found = issues(&result);
    // `limit` is a `u8` with no declared bound: 300 is beyond the type's own range.
    assert!(
        found.contains(&("filters[1].limit".into(), "range".into())),
        "{found:?}"
    );
    assert!(
        result
            .text()
            .contains("`filters[1].limit` (range): expected an integer from 0 to 255 (u8); received 300 (an integer)"),
        "{}",
        result.text()
    );
    assert!(
        found.contains(&("filters[1].tags[1]".into(), "type".into())),
        "{found:?}"
    );
    assert!(
        found.contains(&("filters[2].tags".into(), "missing".into())),
        "{found:?}"
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_say_so() {
    let t = tester();
    for args in [json!(5), json!("a"), json!([1, 2]), json!(true)] {
        let result = t.call("ping", args.clone()).await;
        assert!(result.is_error, "{args}");
        assert!(
            result.text().contains("expected a JSON object"),
            "{}",
            result.text()
        );
        assert_eq!(
            issues(&result),
            vec![(String::new(), "not_an_object".to_owned())]
        );
    }
}

#[tokio::test]
async fn a_tool_without_parameters_accepts_absent_empty_and_null_arguments() {
    let t = tester();
    for args in [Value::Null, json!({})] {
        let result = t.call("ping", args).await;
        assert!(!result.is_error);
        assert_eq!(result.text(), "pong");
    }
    let extra = t.call("ping", json!({"x": 1})).await;
    assert!(extra.is_error);
    assert!(
        extra.text().contains("expected no fields"),
        "{}",
        extra.text()
    );
}

#[tokio::test]
async fn unknown_tool_lists_the_available_ones() {
    let result = tester().call("ad", json!({})).await;
    assert!(result.is_error);
    let text = result.text();
    assert!(text.contains("Unknown tool `ad`"), "{text}");
    assert!(text.contains("Did you mean `add`?"), "{text}");
    for name in ["add", "hello", "ping", "whoami"] {
        assert!(text.contains(&format!("`{name}`")), "{text}");
    }
}

#[tokio::test]
async fn call_action_on_a_tool_without_actions_is_an_error() {
    let result = tester()
        .call_action("add", "sum", json!({"a": 1, "b": 2}))
        .await;
    assert!(result.is_error);
    assert!(
        result.text().contains("has no actions"),
        "{}",
        result.text()
    );
    let unknown = tester()
        .call_action("nonexistent_tool", "list", json!({}))
        .await;
    assert!(unknown.is_error);
}

#[tokio::test]
async fn a_panic_is_masked_and_the_server_goes_on() {
    let t = tester();
    let result = t.call("crash", json!({})).await;
    assert!(result.is_error);
    let text = result.text();
    assert!(text.contains("internal error (reference "), "{text}");
    assert!(
        !text.contains("secret internal detail"),
        "the panic message leaked: {text}"
    );
    let after = t.call("add", json!({"a": 1, "b": 1})).await;
    assert_eq!(after.data, json!(2));
}

#[tokio::test]
async fn a_handler_error_is_masked_with_a_correlation_id() {
    let t = tester();
    let first = t.call("failing", json!({})).await;
    let second = t.call("failing", json!({})).await;
    assert!(first.is_error && second.is_error);
    assert!(
        !first.text().contains("hunter2") && !first.text().contains("database"),
        "{}",
        first.text()
    );
    let reference = |r: &TestResult| {
        let text = r.text();
        let start = text.find("reference ").expect("a reference") + "reference ".len();
        text[start..]
            .split(')')
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    assert_ne!(
        reference(&first),
        reference(&second),
        "each call has its own id"
    );
}

#[tokio::test]
async fn the_context_comes_from_the_factory_or_the_test() {
    let t = tester();
    let result = t.call("whoami", json!({})).await;
    assert_eq!(result.text(), "admin");
    let guest = t
        .call_with("whoami", json!({}), |ctx: &mut Ctx| {
            ctx.role = "guest".into()
        })
        .await;
    assert_eq!(guest.text(), "guest");
}

#[tokio::test]
async fn every_result_has_content() {
    let t = tester();
    let calls = [
        ("add", json!({"a": 1, "b": 2})),
        ("add", json!({})),
        ("touch", json!({})),
        ("crash", json!({})),
        ("failing", json!({})),
        ("nope", json!({})),
        ("ping", json!(3)),
    ];
    for (tool, args) in calls {
        let result = t.call(tool, args).await;
        assert!(!result.raw.content.is_empty(), "{tool}");
        assert!(!result.text().trim().is_empty(), "{tool}");
        assert_eq!(result.raw.is_error, Some(result.is_error));
    }
}

#[tokio::test]
async fn the_function_stays_callable_as_written() {
    assert_eq!(add(2, 3).await, 5);
    assert_eq!(hello("Ada".into()).await, "hello Ada");
    let ctx = Ctx {
        role: "x".into(),
        calls: Arc::default(),
    };
    assert_eq!(whoami(&ctx).await, "x");
    assert!(failing().await.is_err());
}

#[test]
fn duplicate_tool_names_fail_the_build() {
    let errors = Server::builder("dup", "0")
        .tool(add)
        .tool(add)
        .try_build()
        .expect_err("a duplicate is refused");
    assert_eq!(errors, vec![BuildError::DuplicateTool("add".into())]);
}

#[test]
fn context_after_tools_fails_the_build() {
    let errors = Server::builder("late", "0")
        .tool(add)
        .context(|| 5_u8)
        .try_build()
        .expect_err("tools would be lost");
    assert_eq!(errors, vec![BuildError::ContextAfterTools(1)]);
}

#[tokio::test]
async fn a_panicking_context_factory_is_an_internal_error() {
    let server = Server::builder("bad-factory", "0")
        .context(|| -> Ctx { panic!("no database configured") })
        .tool(whoami)
        .build();
    let result = Tester::new(server).call("whoami", json!({})).await;
    assert!(result.is_error);
    assert!(
        result.text().contains("internal error"),
        "{}",
        result.text()
    );
}
