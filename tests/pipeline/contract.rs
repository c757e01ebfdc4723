//! The tool surface as a contract (issue 39): `Server::contract()` holds every part a
//! caller relies on, in a form that registration order, map order and whitespace do not
//! change; `Tester::assert_contract` holds a server to its lockfile (and rewrites it with
//! `FUSION_LOCK=update`); `require_surface` refuses a server whose surface is not pinned.

use std::collections::HashMap;

use fusion_runtime::{
    ServerBuilder, StartupError,
    contract::{Contract, Severity, TaskSupport, diff},
    prelude::*,
    prompt::{PromptArg, PromptInfo},
    tasks::Tasking,
    testing::Tester,
    tool::Exposure,
};
use serde_json::{Value, json};

/// Find users.
#[mcp_tool(group = "users", action = "find", read_only, scopes = ["users:read"])]
async fn find_users(
    /// Text in the name.
    #[arg(length(min = 1, max = 40))]
    text: String,
) -> Vec<String> {
    vec![text]
}

/// Create a user.
#[mcp_tool(
    group = "users",
    action = "create",
    destructive,
    idempotency_key = "request_id",
    scopes = ["users:write", "users:read"]
)]
async fn create_user(name: String, request_id: String) -> String {
    format!("{name} {request_id}")
}

/// Fetch a page.
#[mcp_tool(
    timeout = "5s",
    retry(attempts = 3, backoff = "10ms", max_backoff = "1s"),
    circuit(failures = 5, window = "30s", cooldown = "10s"),
    title = "Fetch"
)]
async fn fetch(url: String) -> String {
    url
}

/// A long report.
#[mcp_tool(read_only)]
async fn report(days: u32) -> u32 {
    days
}

fn server(reversed: bool) -> ServerBuilder<()> {
    let builder = Server::builder("contracts", "1.0.0");
    let builder = if reversed {
        builder
            .task_tool(report, Tasking::required())
            .tool(fetch)
            .tool(create_user)
            .tool(find_users)
    } else {
        builder
            .tool(find_users)
            .tool(create_user)
            .tool(fetch)
            .task_tool(report, Tasking::required())
    };
    let builder = builder.group("users", "The directory's users.");
    if reversed {
        builder
            .prompt(
                PromptInfo::new("greet", "Greet someone")
                    .arg(PromptArg::optional("tone", "How"))
                    .arg(PromptArg::required("name", "Whom")),
                |_: HashMap<String, String>| async { "hi" },
            )
            .resource_template(
                "db://{table}/{id}",
                "row",
                "application/json",
                |_: HashMap<String, String>| async { "{}" },
            )
            .resource("x://b", "b", "text/plain", || async { "b" })
            .resource("x://a", "a", "text/plain", || async { "a" })
    } else {
        builder
            .resource("x://a", "a", "text/plain", || async { "a" })
            .resource("x://b", "b", "text/plain", || async { "b" })
            .resource_template(
                "db://{table}/{id}",
                "row",
                "application/json",
                |_: HashMap<String, String>| async { "{}" },
            )
            .prompt(
                PromptInfo::new("greet", "Greet someone")
                    .arg(PromptArg::required("name", "Whom"))
                    .arg(PromptArg::optional("tone", "How")),
                |_: HashMap<String, String>| async { "hi" },
            )
    }
}

#[test]
fn the_contract_holds_every_part_a_caller_relies_on() {
    let contract = server(false).build().contract();
    let users = &contract.tools["users"];
    assert_eq!(users.description, "The directory's users.");
    assert!(
        users.input_schema.is_none(),
        "a group's schema is its actions'"
    );
    let create = &users.actions["create"];
    assert_eq!(create.annotations.destructive, Some(true));
    assert_eq!(create.scopes, ["users:read", "users:write"], "sorted");
    let policy = create.policy.as_ref().expect("an action's policy");
    assert_eq!(policy.idempotency_key.as_deref(), Some("request_id"));
    assert_eq!(
        policy.timeout_ms, 300_000,
        "the default deadline, made explicit"
    );
    let find = &users.actions["find"];
    let text = &find.input_schema.as_ref().expect("a schema")["properties"]["text"];
    assert_eq!(
        (text["minLength"].clone(), text["maxLength"].clone()),
        (json!(1), json!(40))
    );

    let fetched = &contract.tools["fetch"];
    assert_eq!(fetched.title.as_deref(), Some("Fetch"));
    let policy = fetched.policy.as_ref().expect("a policy");
    assert_eq!(policy.timeout_ms, 5_000);
    let retry = policy.retry.expect("a retry");
    assert_eq!(
        (retry.attempts, retry.backoff_ms, retry.max_backoff_ms),
        (3, 10, 1_000)
    );
    let circuit = policy.circuit.expect("a breaker");
    assert_eq!(
        (circuit.failures, circuit.window_ms, circuit.cooldown_ms),
        (5, 30_000, 10_000)
    );
    assert_eq!(contract.tools["report"].task, Some(TaskSupport::Required));
    assert!(contract.tools["report"].output_schema.is_some());

    assert_eq!(
        contract.resources["x://a"].mime_type.as_deref(),
        Some("text/plain")
    );
    assert_eq!(contract.resource_templates["db://{table}/{id}"].name, "row");
    let greet = &contract.prompts["greet"];
    assert!(greet.arguments["name"].required && !greet.arguments["tone"].required);
}

#[test]
fn registration_order_map_order_and_whitespace_do_not_change_the_contract() {
    let one = server(false).build();
    let other = server(true).build();
    assert_ne!(
        one.tool_names(),
        other.tool_names(),
        "the two servers list their tools in different orders"
    );
    assert_eq!(one.contract(), other.contract());
    assert_eq!(one.surface_digest(), other.surface_digest());
    assert_eq!(one.contract().to_lockfile(), other.contract().to_lockfile());

    // The lockfile read back, and the same JSON with its keys reversed and no whitespace,
    // are the same contract with the same digest.
    let contract = one.contract();
    let text = contract.to_lockfile();
    assert_eq!(Contract::from_lockfile(&text).ok(), Some(contract.clone()));
    fn reversed(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .rev()
                    .map(|(key, value)| (key.clone(), reversed(value)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }
    let value: Value = serde_json::from_str(&text).expect("JSON");
    let compact = reversed(&value).to_string();
    assert_ne!(compact, text.trim_end());
    let read = Contract::from_lockfile(&compact).expect("a lockfile in any key order");
    assert_eq!(read.digest(), contract.digest());
    assert_eq!(contract.digest().len(), 64);
    assert!(
        contract
            .digest()
            .bytes()
            .all(|byte| byte.is_ascii_hexdigit())
    );

    // The listing's exposure is part of the surface: flat names are other tools.
    let flat = server(false).exposure(Exposure::Flat).build().contract();
    assert!(flat.tools.contains_key("users_find"));
    let changes = diff(&contract, &flat);
    assert_eq!(changes[0].severity, Severity::Breaking, "{changes:?}");
}

#[test]
fn a_lockfile_from_another_format_or_with_unknown_keys_is_refused_with_a_reason() {
    let text = server(false).build().contract().to_lockfile();
    let mut value: Value = serde_json::from_str(&text).expect("JSON");
    value["format"] = json!(2);
    let error = Contract::from_lockfile(&value.to_string()).expect_err("format 2");
    assert!(error.contains("format 2"), "{error}");
    value["format"] = json!(1);
    value["tools"]["fetch"]["colour"] = json!("red");
    let error = Contract::from_lockfile(&value.to_string()).expect_err("unknown key");
    assert!(error.contains("colour"), "{error}");
}

/// A lockfile path of this test's own.
fn lock_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "fusion-contract-{name}-{}.lock",
        std::process::id()
    ))
}

#[test]
fn assert_contract_passes_on_its_lockfile_and_fails_with_the_rated_changes() {
    let lock = lock_path("assert");
    std::fs::write(&lock, server(false).build().contract().to_lockfile()).expect("written");
    Tester::new(server(true).build()).assert_contract(&lock);

    // `report` no longer exists, and `fetch` retries less.
    /// Fetch a page.
    #[mcp_tool(
        name = "fetch",
        timeout = "5s",
        retry(attempts = 2, backoff = "10ms", max_backoff = "1s"),
        circuit(failures = 5, window = "30s", cooldown = "10s"),
        title = "Fetch"
    )]
    async fn fetch_less(url: String) -> String {
        url
    }
    let changed = Server::builder("contracts", "1.0.1")
        .tool(find_users)
        .tool(create_user)
        .tool(fetch_less)
        .group("users", "The directory's users.")
        .build();
    let tester = Tester::new(changed);
    let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tester.assert_contract(&lock)
    }))
    .expect_err("a changed surface fails");
    let message = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    let lines: Vec<&str> = message.lines().collect();
    assert!(
        lines[0].contains("the tool surface differs from"),
        "{message}"
    );
    // Worst first: the removals (the tool, and the resources and prompt the new server
    // left out) before the retry's change.
    let first_risky = lines.iter().position(|line| line.starts_with("  - RISKY"));
    let last_breaking = lines
        .iter()
        .rposition(|line| line.starts_with("  - BREAKING"));
    assert!(
        lines.contains(&"  - BREAKING report: the tool was removed") && last_breaking < first_risky,
        "worst first: {message}"
    );
    assert!(
        lines.iter().any(|line| line.starts_with("  - RISKY fetch")),
        "{message}"
    );
    assert!(
        message.contains("FUSION_LOCK=update cargo test"),
        "{message}"
    );
    let _ = std::fs::remove_file(&lock);

    let missing = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tester.assert_contract(lock_path("missing"))
    }))
    .expect_err("a missing lockfile fails");
    let message = missing
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("FUSION_LOCK=update"), "{message}");
}

/// Run by the test below in a child process with `FUSION_LOCK=update` (a test cannot set
/// an environment variable for itself without racing the others).
#[test]
#[ignore = "run by fusion_lock_update_writes_the_lockfile, in a process of its own"]
fn write_the_lockfile_named_by_the_environment() {
    let path = std::env::var("FUSION_CONTRACT_TEST_LOCK").expect("the path");
    Tester::new(server(false).build()).assert_contract(path);
}

#[test]
fn fusion_lock_update_writes_the_lockfile() {
    let lock = lock_path("update");
    std::fs::write(&lock, "stale").expect("written");
    let mut command = std::process::Command::new(std::env::current_exe().expect("this test"));
    command
        .args([
            "--exact",
            "contract::write_the_lockfile_named_by_the_environment",
            "--include-ignored",
        ])
        .env("FUSION_LOCK", "update")
        .env("FUSION_CONTRACT_TEST_LOCK", &lock);
    let run = crate::support::run_with_timeout(command, std::time::Duration::from_secs(60));
    assert!(run.success(), "{}", run.report());
    assert!(run.stdout.contains("1 passed"), "{}", run.report());
    let written = std::fs::read_to_string(&lock).expect("the lockfile");
    let _ = std::fs::remove_file(&lock);
    assert_eq!(written, server(true).build().contract().to_lockfile());
}

#[tokio::test]
async fn a_server_pinned_to_another_surface_does_not_start_and_names_what_differs() {
    let pinned = server(false).build().contract().to_lockfile();
    let started = server(true).require_surface(&pinned).start().await;
    assert!(started.is_ok(), "the same surface in another order starts");

    let digest = server(false).build().surface_digest().to_owned();
    let skewed = Server::builder("contracts", "1.0.0")
        .tool(fetch)
        .require_surface(&pinned)
        .start()
        .await;
    let Err(error) = skewed else {
        panic!("a skewed surface started")
    };
    let StartupError::SurfaceMismatch {
        built,
        pinned: pin,
        message,
    } = &error
    else {
        panic!("{error}")
    };
    assert_eq!(pin, &digest);
    assert_ne!(built, &digest);
    for part in [
        built.as_str(),
        digest.as_str(),
        "BREAKING users: the tool was removed",
    ] {
        assert!(message.contains(part), "`{part}` in {message}");
    }

    let by_digest = Server::builder("contracts", "1.0.0")
        .tool(fetch)
        .require_surface(&digest)
        .start()
        .await;
    let message = by_digest
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(message.contains("pin the lockfile itself"), "{message}");

    let unreadable = server(false).require_surface("v1.2").start().await;
    assert!(
        matches!(unreadable, Err(StartupError::InvalidSurfacePin(_))),
        "{unreadable:?}"
    );
}

#[tokio::test]
async fn a_pinned_server_over_its_token_budget_does_not_start_and_an_unpinned_one_does() {
    use fusion_runtime::{StartupError, contract::TokenBudget};
    let tight = TokenBudget::new().per_tool(30);
    let pinned = server(false).build().contract().to_lockfile();
    let refused = server(false)
        .require_surface(&pinned)
        .token_budget(tight)
        .start()
        .await;
    let Err(StartupError::OverTokenBudget(over)) = refused else {
        panic!("a pinned server over its budget started");
    };
    // Each tool over it is named, with its count.
    assert!(over.excesses.len() >= 2, "{over}");
    assert!(over.to_string().contains("`users` costs"), "{over}");
    // Unpinned, the server starts: its tests hold it to the budget.
    assert!(server(false).token_budget(tight).start().await.is_ok());
}
