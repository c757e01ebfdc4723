//! Generated code is lint-clean: every macro form, as public items, in a crate that denies
//! warnings, missing docs and unused qualifications (and that `cargo clippy -D warnings`
//! checks with the rest of the workspace).
#![deny(warnings, missing_docs, unused_qualifications)]

use fusion_runtime::{
    Call, Classify, Server,
    call::LogLevel,
    middleware,
    policy::Reconnect,
    prelude::*,
    tool::{Exposure, Presentation, UiBlock},
};

/// The context.
#[derive(Clone, Default)]
pub struct App {
    /// A resource that reconnects.
    pub db: std::sync::Arc<Db>,
}

/// A database handle.
#[derive(Default)]
pub struct Db;

impl Reconnect for Db {
    type Error = std::io::Error;
    async fn reconnect(&self) -> Result<(), std::io::Error> {
        Ok(())
    }
}

impl middleware::HasRoles for App {
    fn has_role(&self, _role: &str) -> bool {
        true
    }
}

/// Errors of every class.
#[derive(Debug, thiserror::Error, Classify)]
pub enum LintError {
    /// Transient.
    #[error("reset")]
    #[transient(code = rate_limited, retry_after = "1s", hint = "wait")]
    Reset,
    /// Invalid input.
    #[error("missing")]
    #[invalid_input(code = not_found, hint = "list first")]
    Missing,
    /// Internal.
    #[error("bug")]
    #[internal]
    Bug,
    /// Fatal.
    #[error("config")]
    #[fatal]
    Config,
    /// Warning.
    #[error("stale")]
    #[warning]
    Stale,
    /// Wrapped.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A nested argument type.
#[mcp_type]
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Filter {
    /// A bounded number.
    #[arg(min = 1, max = 10, default = 5)]
    pub limit: u32,
    /// A pattern.
    #[arg(pattern = "^[a-z]+$", length(max = 8))]
    pub word: String,
}

fn present(rows: &[Filter], _app: &App) -> Presentation {
    Presentation::new()
        .rule("rule")
        .ui(UiBlock::markdown(format!("{} rows", rows.len())))
        .limit(10)
}

fn check_word(word: &str) -> Result<(), String> {
    if word.is_empty() {
        Err("empty".into())
    } else {
        Ok(())
    }
}

/// Every key at once.
#[mcp_tool(
    name = "everything",
    title = "Everything",
    read_only,
    idempotent,
    open_world = false,
    timeout = "5s",
    retry(attempts = 2, backoff = "1ms", max_backoff = "10ms"),
    circuit(failures = 3, window = "1s", cooldown = "1s"),
    reconnect = db,
    group = "lint",
    action = "everything",
    presenter = present,
    scopes = ["lint:read"],
    max_output = "64KiB",
    crate = "::fusion_runtime"
)]
pub async fn everything(
    #[ctx] app: &App,
    #[call] call: &Call,
    /// A documented argument.
    #[arg(min = 0, exclusive_max = 100, multiple_of = 2)]
    even: i64,
    /// A secret.
    #[arg(secret, non_empty)]
    token: String,
    /// A format.
    #[arg(format = "uuid", deprecated)]
    id: Option<String>,
    /// A list, with constraints on each item.
    #[arg(
        unique,
        length(max = 3),
        items(length(min = 1, max = 8), pattern = "^[a-z]+$")
    )]
    tags: Vec<String>,
    /// A choice.
    #[arg(one_of = ["a", "b"], default = "a".to_owned(), validate = check_word)]
    choice: String,
    /// Nested.
    filters: Vec<Filter>,
) -> Result<Vec<Filter>, LintError> {
    let _ = (&app.db, even, token, id, tags, choice);
    call.log(LogLevel::Debug, "ran").await;
    Ok(filters)
}

/// A destructive tool with an idempotency key, which its body need not read (the runtime
/// does): no unused-variable warning under `deny(warnings)`.
#[mcp_tool(description = "Deletes.", destructive, idempotency_key = "request_id")]
pub async fn delete(request_id: Option<String>) {}

#[test]
fn the_lint_crate_builds_a_server() {
    let server = Server::builder("lint", "0")
        .context(App::default)
        .exposure(Exposure::Grouped)
        .tool(everything)
        .tool(delete)
        .middleware(middleware::require_role("admin"))
        .build();
    assert_eq!(server.tool_names(), ["lint", "delete"]);
}
