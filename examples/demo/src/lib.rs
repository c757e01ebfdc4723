//! The demo server of MCP Fusion's testing guide, in Rust: a tool `db_user` over an
//! in-memory store (actions `find_many`, `find_by_id`, `create`) that only admins may use,
//! and a tool `system` (actions `disabled_action`, `health`).
//!
//! ```
//! use fusion_runtime::testing::Tester;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let tester = Tester::new(fusion_demo::server());
//! let users = tester.call_action("db_user", "find_many", json!({"take": 2})).await;
//! assert!(!users.is_error);
//! assert_eq!(users.data.as_array().map(Vec::len), Some(2));
//! assert!(!users.system_rules.is_empty());
//! # });
//! ```

use std::sync::{Arc, RwLock};

use fusion_runtime::{
    Classify, Server,
    identity::RequestInfo,
    middleware::{self, HasRoles},
    prelude::*,
    tool::{Presentation, UiBlock},
};

/// Who is calling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// May do everything.
    #[default]
    Admin,
    /// May use `system` only.
    Guest,
}

impl Role {
    /// Reads `ADMIN` or `GUEST` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_uppercase().as_str() {
            "ADMIN" => Some(Self::Admin),
            "GUEST" => Some(Self::Guest),
            _ => None,
        }
    }
}

impl Role {
    /// The role of a caller with a verified access token: an admin when its `scope` grants
    /// `admin`, a guest otherwise. A caller without a token (stdio, the tester) is a guest.
    pub fn of(request: &RequestInfo) -> Self {
        match request.claims() {
            Some(claims) if claims.has_scope("admin") => Self::Admin,
            _ => Self::Guest,
        }
    }
}

/// A user in the store.
#[mcp_type]
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct User {
    /// The id.
    pub id: u32,
    /// The display name.
    pub name: String,
    /// The email address (private: the presenter tells the model not to repeat it).
    pub email: String,
    /// Whether the account is active.
    pub active: bool,
}

/// The in-memory user store, seeded with 60 users.
#[derive(Debug)]
pub struct Store {
    users: RwLock<Vec<User>>,
}

impl Store {
    /// A store with the seed data.
    pub fn seeded() -> Self {
        let names = [
            "Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances", "Alan",
            "Edsger",
        ];
        let users = (1..=60)
            .map(|id: u32| {
                let name = format!("{} {}", names[(id as usize - 1) % names.len()], id);
                User {
                    id,
                    email: format!("user{id}@example.com"),
                    name,
                    active: !id.is_multiple_of(7),
                }
            })
            .collect();
        Self {
            users: RwLock::new(users),
        }
    }
}

/// The per-call context: the caller's role and the store.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// The caller's role.
    pub role: Role,
    /// The store (shared by every call).
    pub store: Arc<Store>,
}

impl Default for Ctx {
    /// An admin over a freshly seeded store.
    fn default() -> Self {
        Self {
            role: Role::Admin,
            store: Arc::new(Store::seeded()),
        }
    }
}

impl HasRoles for Ctx {
    fn has_role(&self, role: &str) -> bool {
        matches!((self.role, role), (Role::Admin, "admin") | (_, "guest"))
    }
}

/// Failures of the store.
#[derive(Debug, thiserror::Error, Classify)]
pub enum DbError {
    /// No user has that id.
    #[error("no user has id {0}")]
    #[invalid_input(code = not_found, hint = "call `db_user` action `find_many` to see the ids that exist")]
    NotFound(u32),
    /// The email is taken.
    #[error("a user with email {0} exists already")]
    #[invalid_input(code = conflict)]
    EmailTaken(String),
    /// The store's lock was poisoned by a crash.
    #[error("the user store is unavailable")]
    #[internal]
    Poisoned,
}

/// Failures of `system`.
#[derive(Debug, thiserror::Error, Classify)]
pub enum SystemError {
    /// The action is switched off.
    #[error("This operation is temporarily disabled.")]
    #[invalid_input(hint = "call `system` action `health` to see what is available")]
    Disabled,
}

/// Tells the model how to treat user data, and shows it as a table.
fn users_presenter(users: &[User]) -> Presentation {
    Presentation::new()
        .rule("Refer to users by name. Emails are private: never repeat them to the user.")
        .rule("Inactive users cannot log in; say so when you mention one.")
        .ui(UiBlock::table(
            ["id", "name", "active"],
            users.iter().map(|user| {
                vec![
                    user.id.to_string(),
                    user.name.clone(),
                    user.active.to_string(),
                ]
            }),
        ))
        .limit(20)
}

fn user_presenter(user: &User) -> Presentation {
    Presentation::new()
        .rule("Emails are private: never repeat them to the user.")
        .ui(UiBlock::markdown(format!(
            "**{}** (id {}){}",
            user.name,
            user.id,
            if user.active { "" } else { ", inactive" }
        )))
}

/// List users, optionally filtered.
#[mcp_tool(group = "db_user", action = "find_many", read_only, presenter = users_presenter)]
pub async fn find_many(
    #[ctx] ctx: &Ctx,
    /// How many users to return, 1 to 50.
    #[arg(min = 1, max = 50, default = 10)]
    take: u32,
    /// Only users whose name contains this text (case-insensitive).
    #[arg(length(min = 1, max = 40))]
    name_contains: Option<String>,
    /// Only active (or only inactive) users.
    active: Option<bool>,
) -> Result<Vec<User>, DbError> {
    let users = ctx.store.users.read().map_err(|_| DbError::Poisoned)?;
    let needle = name_contains.map(|text| text.to_lowercase());
    Ok(users
        .iter()
        .filter(|user| {
            needle
                .as_ref()
                .is_none_or(|needle| user.name.to_lowercase().contains(needle))
        })
        .filter(|user| active.is_none_or(|active| user.active == active))
        .take(take as usize)
        .cloned()
        .collect())
}

/// One user by id.
#[mcp_tool(group = "db_user", action = "find_by_id", read_only, presenter = user_presenter)]
pub async fn find_by_id(
    #[ctx] ctx: &Ctx,
    /// The user's id.
    #[arg(min = 1)]
    id: u32,
) -> Result<User, DbError> {
    let users = ctx.store.users.read().map_err(|_| DbError::Poisoned)?;
    users
        .iter()
        .find(|user| user.id == id)
        .cloned()
        .ok_or(DbError::NotFound(id))
}

/// Create a user.
#[mcp_tool(group = "db_user", action = "create", destructive)]
pub async fn create(
    #[ctx] ctx: &Ctx,
    /// The display name.
    #[arg(length(min = 1, max = 80))]
    name: String,
    /// The email address.
    #[arg(format = "email")]
    email: String,
) -> Result<User, DbError> {
    let mut users = ctx.store.users.write().map_err(|_| DbError::Poisoned)?;
    if users.iter().any(|user| user.email == email) {
        return Err(DbError::EmailTaken(email));
    }
    let id = users.iter().map(|user| user.id).max().unwrap_or(0) + 1;
    let user = User {
        id,
        name,
        email,
        active: true,
    };
    users.push(user.clone());
    Ok(user)
}

/// An operation that is switched off for maintenance.
#[mcp_tool(group = "system", action = "disabled_action", destructive = false)]
pub async fn disabled_action() -> Result<String, SystemError> {
    Err(SystemError::Disabled)
}

/// The service's health.
#[mcp_type]
#[derive(Debug, Serialize, JsonSchema)]
pub struct Health {
    /// "ok" when the store answers.
    pub status: String,
    /// How many users the store holds.
    pub users: usize,
}

/// Whether the service is up, and how many users it holds.
#[mcp_tool(group = "system", action = "health", read_only, idempotent)]
pub async fn health(#[ctx] ctx: &Ctx) -> Result<Health, DbError> {
    let users = ctx.store.users.read().map_err(|_| DbError::Poisoned)?;
    Ok(Health {
        status: "ok".into(),
        users: users.len(),
    })
}

/// The demo server for callers of one `role` (the process's, over stdio).
pub fn builder(
    role: Role,
    exposure: fusion_runtime::tool::Exposure,
) -> fusion_runtime::ServerBuilder<Ctx> {
    builder_with_roles(move |_| role, exposure)
}

/// The demo server for many users at once: each call's role comes from its caller's
/// verified token ([`Role::of`]), so two users get different answers. What
/// `fusion-demo --http PORT --oauth-issuer URL` serves.
///
/// ```
/// use fusion_runtime::{identity::{Claims, RequestInfo}, testing::Tester, tool::Exposure};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let tester = Tester::new(fusion_demo::builder_from_token(Exposure::Grouped).build());
/// let token = |scopes: &[&str]| {
///     RequestInfo::in_memory().with_claims(Claims::for_subject("someone", scopes.iter().copied()))
/// };
/// let admin = tester.as_caller(token(&["admin"]));
/// let guest = tester.as_caller(token(&["read"]));
/// let list = json!({"take": 1});
/// assert!(!admin.call_action("db_user", "find_many", list.clone()).await.is_error);
/// assert!(guest.call_action("db_user", "find_many", list).await.is_error);
/// # });
/// ```
pub fn builder_from_token(
    exposure: fusion_runtime::tool::Exposure,
) -> fusion_runtime::ServerBuilder<Ctx> {
    builder_with_roles(Role::of, exposure)
}

fn builder_with_roles(
    role_of: impl Fn(&RequestInfo) -> Role + Send + Sync + 'static,
    exposure: fusion_runtime::tool::Exposure,
) -> fusion_runtime::ServerBuilder<Ctx> {
    let store = Arc::new(Store::seeded());
    let role_of = Arc::new(role_of);
    let role_of_caller = Arc::clone(&role_of);
    Server::builder("fusion-demo", env!("CARGO_PKG_VERSION"))
        .instructions("A user directory. `db_user` reads and creates users (admins only); `system` reports health.")
        .context_from_request(move |request: &RequestInfo| Ctx {
            role: role_of(request),
            store: Arc::clone(&store),
        })
        // A caller is not shown what it may never call: a tool whose scopes its token
        // lacks, and `db_user`'s writes for a guest (`create` is not listed to it under
        // `--flat`, nor among `db_user`'s actions when grouped, and a call to it is answered
        // as one to an action that does not exist). The reads stay listed, as MCP Fusion's
        // demo lists them: a guest calling one reads that it needs the admin role.
        .hide_unauthorized(true)
        .visibility(move |tool, request| {
            let writes_users =
                tool.group == Some("db_user") && tool.annotations.read_only != Some(true);
            !writes_users || role_of_caller(request) == Role::Admin
        })
        .exposure(exposure)
        .group("db_user", "Users of the directory: list them, fetch one by id, or create one. Admins only.")
        .group("system", "The service itself: health, and maintenance operations.")
        .tool(find_many)
        .tool(find_by_id)
        .tool(create)
        .tool(disabled_action)
        .tool(health)
        // Hosts that render MCP Apps show `db_user`'s users as a table beside the answer.
        .app_view("db_user", users_view())
        .group_middleware("db_user", middleware::require_role("admin"))
        // `db_user` is a model's CRUD kept as one tool, the MCP Fusion way: clients see its
        // reads as destructive too, because `create` writes. Said here, so it is a choice.
        .allow_mixed_hints("db_user")
        // What the model reads of this surface before its first call, in o200k tokens:
        // a description or schema that grows past it fails `tests/contract.rs`. Measured
        // at 661 in all, 478 for `db_user` (grouped), 797 in all listed flat.
        .token_budget(TOKEN_BUDGET)
}

/// The demo's token budget: 600 a listed tool, 1,000 in all.
pub const TOKEN_BUDGET: fusion_runtime::contract::TokenBudget =
    fusion_runtime::contract::TokenBudget::new()
        .per_tool(600)
        .total(1_000);

/// The MCP Apps view of `db_user`'s results: the users as a table (`users_view.html`,
/// embedded at compile time).
pub fn users_view() -> fusion_runtime::apps::AppView {
    fusion_runtime::apps::AppView::new("ui://fusion-demo/users", "users")
        .description("The users a db_user call returned, as a table")
        .html(include_str!("users_view.html"))
        .prefers_border(true)
}

/// The demo server, grouped, for an admin (what the tests and `serve_stdio` use).
pub fn server() -> Server<Ctx> {
    builder(Role::Admin, fusion_runtime::tool::Exposure::Grouped).build()
}
