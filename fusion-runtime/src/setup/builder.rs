//! The builder: tools, context, middleware, policies and limits, then `try_build` and
//! `build` (the start-up checks, `start` and `serve_stdio` are in `startup.rs`).

use std::{collections::HashMap, sync::Arc, time::Duration};

use crate::{
    failure::panic as recover,
    idempotency::{IdempotencyStore, MemoryStore},
    identity::RequestInfo,
    middleware::Middleware,
    policy::{CircuitPolicy, Policy, RetryPolicy},
    setup::catalog::Catalog,
    setup::error::{BuildError, BuildWarning, describe_build_errors},
    setup::registry::Registry,
    tool::Exposure,
    tool::{Tool, ToolDefinition},
    validate::Limits,
};

use crate::setup::server::{ContextFactory, Inner, Server};

/// Builds a [`Server`]: `Server::builder(name, version).context(..).tool(..).build()`.
#[must_use = "a builder does nothing until it is built or served"]
pub struct ServerBuilder<C = ()> {
    pub(crate) name: String,
    version: String,
    instructions: Option<String>,
    context: ContextFactory<C>,
    tools: Vec<ToolDefinition<C>>,
    limits: Limits,
    pub(crate) policy: Policy,
    /// The output limit of tools that set none ([`Self::max_output`]).
    pub(crate) max_output: usize,
    /// The start-up checks (`startup.rs`).
    pub(crate) startup: Startup,
    exposure: Exposure,
    group_descriptions: HashMap<String, String>,
    /// Groups whose reads may be listed destructive ([`Self::allow_mixed_hints`]).
    mixed_hints_allowed: Vec<String>,
    pub(crate) middleware: Vec<(MiddlewareScope, Arc<dyn Middleware<C>>)>,
    ok_level: tracing::Level,
    /// Whether error results carry the draft standard failure key too.
    pub(crate) draft_tool_failure: bool,
    /// The tools linked to an MCP Apps view, and the view's URI (`apps/`).
    pub(crate) app_links: Vec<(String, String)>,
    /// The views registered so far, by URI.
    pub(crate) app_views: Vec<crate::apps::AppView>,
    idempotency: Arc<dyn IdempotencyStore>,
    idempotency_window: Duration,
    /// The locks of `#[mcp_tool(serialize = "..")]` (`lock/builder.rs`).
    pub(crate) locks: Arc<dyn crate::lock::LockStore>,
    /// The entries of `#[mcp_tool(cache = "..")]` (`cache/builder.rs`).
    pub(crate) cache: Arc<dyn crate::cache::CacheStore>,
    /// How long clients may treat a list result as fresh (`cache/builder.rs`).
    pub(crate) list_ttl: Duration,
    /// How schemas are listed (`listed_schema.rs`).
    pub(crate) schema_listing: crate::tool::listing::SchemaListing,
    /// Whether a caller is shown only the tools whose scopes it holds
    /// ([`Self::hide_unauthorized`]).
    pub(crate) hide_unauthorized: bool,
    /// The user's own visibility rules ([`Self::visibility`]).
    pub(crate) visibility_rules: Vec<crate::setup::visibility::VisibilityRule>,
    pub(crate) errors: Vec<BuildError>,
    /// Resources, prompts and completions, registered by `resource/builder.rs` and `prompt/builder.rs`.
    pub(crate) catalog: Catalog,
    /// The request-state key and the tasks (protocol/builder.rs).
    pub(crate) revision: crate::tasks::RevisionSettings,
    /// When `search_tools` and `call_tool` are listed in place of the tools
    /// (`search/builder.rs`).
    pub(crate) tool_search: Option<crate::search::ToolSearch>,
    /// The upstreams mounted at start (`upstream/builder.rs`), for `tools/list`.
    pub(crate) mounts: crate::setup::mounts::Mounts,
}

/// Where a middleware applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MiddlewareScope {
    All,
    Group(String),
    Tool(String),
}

type SetupStep = Box<dyn FnOnce() -> crate::future::BoxFuture<'static, Result<(), String>> + Send>;

/// What must hold before a server starts serving.
#[derive(Default)]
pub(crate) struct Startup {
    pub(crate) required_env: Vec<String>,
    pub(crate) steps: Vec<SetupStep>,
    /// The per-call context is made from what a setup step opens
    /// ([`ServerBuilder::context_from_setup`]): only [`ServerBuilder::start`] (and the
    /// `serve_*` methods) can build the server.
    pub(crate) context_in_setup: bool,
    /// The surface the server must have to start ([`ServerBuilder::require_surface`]).
    pub(crate) surface_pin: Option<String>,
    /// The most tokens the surface may cost ([`ServerBuilder::token_budget`]).
    pub(crate) token_budget: Option<crate::contract::TokenBudget>,
    /// The upstreams to mount, by prefix ([`ServerBuilder::upstream`]).
    #[cfg(feature = "upstream")]
    pub(crate) upstreams: Vec<(String, crate::upstream::Upstream)>,
}

impl Server<()> {
    /// Starts a server named `name` (reported as `serverInfo` to clients) at `version`.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// /// Echo the text back.
    /// #[mcp_tool]
    /// async fn echo(text: String) -> String {
    ///     text
    /// }
    ///
    /// let server = Server::builder("demo", "1.0.0").tool(echo).build();
    /// assert_eq!(server.tool_names(), ["echo"]);
    /// ```
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder<()> {
        ServerBuilder {
            name: name.into(),
            version: version.into(),
            instructions: None,
            context: Arc::new(|_: &RequestInfo| ()),
            tools: Vec::new(),
            limits: Limits::default(),
            policy: Policy::default(),
            max_output: crate::limits::DEFAULT_MAX_OUTPUT,
            startup: Startup::default(),
            exposure: Exposure::default(),
            group_descriptions: HashMap::new(),
            mixed_hints_allowed: Vec::new(),
            middleware: Vec::new(),
            ok_level: tracing::Level::INFO,
            draft_tool_failure: false,
            app_links: Vec::new(),
            app_views: Vec::new(),
            idempotency: Arc::new(MemoryStore::new()),
            idempotency_window: Duration::from_secs(600),
            locks: Arc::new(crate::lock::MemoryLockStore::new()),
            cache: Arc::new(crate::cache::MemoryCacheStore::default()),
            list_ttl: crate::cache::DEFAULT_LIST_TTL,
            schema_listing: Default::default(),
            hide_unauthorized: false,
            visibility_rules: Vec::new(),
            errors: Vec::new(),
            catalog: Catalog::default(),
            revision: crate::tasks::RevisionSettings::default(),
            tool_search: None,
            mounts: crate::setup::mounts::Mounts::default(),
        }
    }
}

impl ServerBuilder<()> {
    /// Sets the factory that builds the context of each call; tools receive it through a
    /// `#[ctx]` parameter (`#[ctx] app: &App`). Call it before registering tools.
    ///
    /// The factory runs once per call, so a context usually holds `Arc`s to shared
    /// resources (a pool, an HTTP client) and per-call data (the caller's role).
    pub fn context<C, F>(self, factory: F) -> ServerBuilder<C>
    where
        C: Send + Sync + 'static,
        F: Fn() -> C + Send + Sync + 'static,
    {
        self.context_from_request(move |_: &RequestInfo| factory())
    }

    /// Sets the factory that builds the context of each call from what the transport
    /// knows about its caller ([`RequestInfo`]): over Streamable HTTP, the request's
    /// headers and extensions, the session, and the verified token's claims (with
    /// [`HttpOptions::oauth`](crate::HttpOptions)); over stdio, the process's owner. Call
    /// it before registering tools.
    ///
    /// ```
    /// use fusion_runtime::{identity::{Claims, RequestInfo}, prelude::*, testing::Tester};
    ///
    /// struct Ctx {
    ///     user: String,
    /// }
    ///
    /// /// Who am I?
    /// #[mcp_tool]
    /// async fn whoami(#[ctx] ctx: &Ctx) -> String {
    ///     ctx.user.clone()
    /// }
    ///
    /// let server = Server::builder("who", "1.0.0")
    ///     .context_from_request(|request: &RequestInfo| Ctx {
    ///         user: request.subject().unwrap_or("anonymous").to_owned(),
    ///     })
    ///     .tool(whoami)
    ///     .build();
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let tester = Tester::new(server);
    /// assert_eq!(tester.call("whoami", serde_json::json!({})).await.data, "anonymous");
    /// let alice = tester.as_caller(RequestInfo::in_memory().with_claims(Claims::for_subject("alice", ["read"])));
    /// assert_eq!(alice.call("whoami", serde_json::json!({})).await.data, "alice");
    /// # });
    /// ```
    pub fn context_from_request<C, F>(self, factory: F) -> ServerBuilder<C>
    where
        C: Send + Sync + 'static,
        F: Fn(&RequestInfo) -> C + Send + Sync + 'static,
    {
        let mut errors = self.errors;
        if !self.tools.is_empty() || !self.middleware.is_empty() {
            errors.push(BuildError::ContextAfterTools(
                self.tools.len() + self.middleware.len(),
            ));
        }
        ServerBuilder {
            name: self.name,
            version: self.version,
            instructions: self.instructions,
            context: Arc::new(factory),
            tools: Vec::new(),
            limits: self.limits,
            policy: self.policy,
            max_output: self.max_output,
            startup: self.startup,
            exposure: self.exposure,
            group_descriptions: self.group_descriptions,
            mixed_hints_allowed: self.mixed_hints_allowed,
            middleware: Vec::new(),
            ok_level: self.ok_level,
            draft_tool_failure: self.draft_tool_failure,
            app_links: self.app_links,
            app_views: self.app_views,
            idempotency: self.idempotency,
            idempotency_window: self.idempotency_window,
            locks: self.locks,
            cache: self.cache,
            list_ttl: self.list_ttl,
            schema_listing: self.schema_listing,
            hide_unauthorized: self.hide_unauthorized,
            visibility_rules: self.visibility_rules,
            errors,
            catalog: self.catalog,
            revision: self.revision,
            tool_search: self.tool_search,
            mounts: self.mounts,
        }
    }
}

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Registers a tool: the name of an `#[mcp_tool]` function.
    pub fn tool<T: Tool<C>>(self, tool: T) -> Self {
        // The rest does not depend on `T`: one copy for every tool of a crate, not one
        // each (issue 32, item 6: compile time).
        self.add_definition(tool.definition())
    }

    /// Registers a definition, or records why its defaults make it unusable.
    pub(crate) fn add_definition(mut self, definition: ToolDefinition<C>) -> Self {
        if !definition.default_issues.is_empty() {
            let details: Vec<String> = definition
                .default_issues
                .iter()
                .map(|issue| format!("`{}` must be {}", issue.path, issue.expected))
                .collect();
            self.errors.push(BuildError::InvalidDefault {
                tool: definition.spec.name.to_owned(),
                details: details.join("; "),
            });
        } else {
            // Duplicate names are found when the server is built, once groups are known.
            self.tools.push(definition);
        }
        self
    }

    /// The level of the log event of a successful call: info by default; debug keeps busy
    /// servers' logs to failures. Failures log at warn (the client's mistakes) or error.
    pub fn log_successes_at(mut self, level: tracing::Level) -> Self {
        self.ok_level = level;
        self
    }

    /// Where results of calls with an idempotency key are kept (in memory by default);
    /// replicas behind a load balancer share one store.
    pub fn idempotency_store(mut self, store: impl IdempotencyStore) -> Self {
        self.idempotency = Arc::new(store);
        self
    }

    /// How long a result is returned again for a repeated idempotency key (10 minutes by
    /// default).
    pub fn idempotency_window(mut self, window: Duration) -> Self {
        self.idempotency_window = window;
        self
    }

    /// How grouped tools are listed: one tool per group (the default) or one per action.
    pub fn exposure(mut self, exposure: Exposure) -> Self {
        self.exposure = exposure;
        self
    }

    /// The description of a group's tool (otherwise one is composed from its actions').
    pub fn group(mut self, group: impl Into<String>, description: impl Into<String>) -> Self {
        self.group_descriptions
            .insert(group.into(), description.into());
        self
    }

    /// Accepts that `group`, listed as one tool, mixes read-only actions with actions that
    /// may destroy, so that clients see every action as destructive: the server then
    /// raises no [`BuildWarning::MixedGroupHints`](crate::BuildWarning::MixedGroupHints)
    /// for it. For a group kept whole on purpose, as a model's CRUD (`db_user`). Only the
    /// hints clients read are affected: each action keeps its own retry rules.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// /// Find users.
    /// #[mcp_tool(group = "db_user", action = "find_many", read_only)]
    /// async fn find_users(name: String) -> String {
    ///     name
    /// }
    ///
    /// /// Delete a user.
    /// #[mcp_tool(group = "db_user", action = "delete", destructive)]
    /// async fn delete_user(id: i64) -> String {
    ///     format!("deleted {id}")
    /// }
    ///
    /// let server = Server::builder("users", "1")
    ///     .tool(find_users)
    ///     .tool(delete_user)
    ///     .allow_mixed_hints("db_user")
    ///     .build();
    /// assert!(server.warnings().is_empty());
    /// ```
    pub fn allow_mixed_hints(mut self, group: impl Into<String>) -> Self {
        self.mixed_hints_allowed.push(group.into());
        self
    }

    /// Middleware for every call, run first.
    pub fn middleware(mut self, middleware: impl Middleware<C>) -> Self {
        self.middleware
            .push((MiddlewareScope::All, Arc::new(middleware)));
        self
    }

    /// Middleware for every action of `group`, run after the server-wide ones.
    pub fn group_middleware(
        mut self,
        group: impl Into<String>,
        middleware: impl Middleware<C>,
    ) -> Self {
        self.middleware
            .push((MiddlewareScope::Group(group.into()), Arc::new(middleware)));
        self
    }

    /// Middleware for one tool (its name in `#[mcp_tool]`, or its listed name), run last.
    pub fn tool_middleware(
        mut self,
        tool: impl Into<String>,
        middleware: impl Middleware<C>,
    ) -> Self {
        self.middleware
            .push((MiddlewareScope::Tool(tool.into()), Arc::new(middleware)));
        self
    }

    /// The default deadline of one run of a handler (a tool's `timeout = ".."` wins).
    /// Without it, a run served over a transport stops after
    /// [`DEFAULT_TIMEOUT`](crate::policy::DEFAULT_TIMEOUT) (5 minutes), so that no call stays in
    /// flight for good; `Duration::MAX` lifts the bound. (In the [`Tester`](crate::testing::Tester)
    /// only a timeout that is set applies.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::Server;
    ///
    /// let server = Server::builder("calc", "1.0.0").timeout(Duration::from_secs(30)).build();
    /// # drop(server);
    /// ```
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.policy.timeout = Some(limit);
        self
    }

    /// The default retry policy for transient failures (a tool's `retry(..)` wins).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.policy.retry = Some(retry);
        self
    }

    /// The default circuit breaker (a tool's `circuit(..)` wins).
    pub fn circuit(mut self, circuit: CircuitPolicy) -> Self {
        self.policy.circuit = Some(circuit);
        self
    }

    /// The most bytes a tool's result may carry, for every tool that does not set its own
    /// (`#[mcp_tool(max_output = "..")]`); by default
    /// [`DEFAULT_MAX_OUTPUT`](crate::limits::DEFAULT_MAX_OUTPUT) (1 MiB). A text result over
    /// it is cut at a character boundary, with a note giving its full size; a structured
    /// result over it is refused with `isError` and `_meta["fusion/failure"]` code
    /// `output_too_large`.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// A long text.
    /// #[mcp_tool]
    /// async fn long() -> String {
    ///     "é".repeat(200)
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("t", "1").max_output(300).tool(long).build());
    /// let cut = tester.call("long", serde_json::json!({})).await;
    /// assert!(!cut.is_error);
    /// assert!(cut.text().starts_with("éé"));
    /// assert!(cut.text().len() <= 300);
    /// assert!(cut.text().contains("cut: the full result is 400 bytes"));
    /// # });
    /// ```
    pub fn max_output(mut self, bytes: usize) -> Self {
        self.max_output = bytes;
        self
    }

    /// Makes errors of type `E` recognisable inside `Box<dyn Error>` and `anyhow::Error`
    /// returned by handlers (errors returned as themselves need nothing).
    pub fn classify<E: crate::failure::classify::Classify + std::error::Error + 'static>(
        self,
    ) -> Self {
        crate::failure::classify::register::<E>();
        self
    }

    /// Size limits on arguments (depth, string bytes, items), checked before decoding.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Instructions for the model about the server as a whole (`initialize` result).
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Builds the server, or says every mistake in how it was put together.
    ///
    /// # Errors
    /// Every mistake at once, one [`BuildError`] each: two tools, two actions of a group,
    /// two resources or two prompts with one name; a default that breaks its own
    /// constraints; middleware, a group description or a completion naming nothing that
    /// exists; `.context(..)` after tools; a resource template that is not a URI template.
    pub fn try_build(mut self) -> Result<Server<C>, Vec<BuildError>> {
        recover::install_panic_hook();
        let mut errors = self.errors;
        if self.startup.context_in_setup {
            errors.push(BuildError::ContextNeedsStart);
        }
        #[cfg(feature = "upstream")]
        errors.extend(self.startup.unstarted_upstreams());
        errors.extend(self.catalog.take_errors());
        let mut registry = match Registry::build(
            self.tools,
            self.exposure,
            &self.group_descriptions,
            self.schema_listing,
        ) {
            Ok(registry) => Some(registry),
            Err(found) => {
                errors.extend(found);
                None
            }
        };
        if let Some(registry) = &mut registry {
            for group in &self.mixed_hints_allowed {
                if !registry.has_group(group) {
                    errors.push(BuildError::UnknownTarget(group.clone()));
                }
            }
            registry.warnings.retain(|warning| match warning {
                BuildWarning::MixedGroupHints { group, .. } => {
                    !self.mixed_hints_allowed.contains(group)
                }
            });
            for (scope, _) in &self.middleware {
                if let MiddlewareScope::Group(name) | MiddlewareScope::Tool(name) = scope
                    && !registry.knows(name)
                {
                    errors.push(BuildError::UnknownTarget(name.clone()));
                }
            }
            errors.extend(crate::apps::unknown_tools(&self.app_links, registry));
        }
        let tool_search = crate::search::applied(self.tool_search, registry.as_ref(), &mut errors);
        let Some(registry) = registry.filter(|_| errors.is_empty()) else {
            return Err(errors);
        };
        let mut registry = registry;
        let chains: Vec<_> = registry
            .tools
            .iter()
            .enumerate()
            .map(|(index, tool)| {
                let handler = &tool.definition;
                let listed = registry.listed_name(index);
                let applies = |scope: &MiddlewareScope| match scope {
                    MiddlewareScope::All => true,
                    MiddlewareScope::Group(group) => handler.spec.group == Some(group.as_str()),
                    MiddlewareScope::Tool(tool) => {
                        handler.spec.name == tool || listed.as_deref() == Some(tool.as_str())
                    }
                };
                // Global, then group, then tool: the order the scopes were declared in
                // within each level.
                let mut chain = Vec::new();
                for level in 0..3 {
                    for (scope, middleware) in &self.middleware {
                        let scope_level = match scope {
                            MiddlewareScope::All => 0,
                            MiddlewareScope::Group(_) => 1,
                            MiddlewareScope::Tool(_) => 2,
                        };
                        if scope_level == level && applies(scope) {
                            chain.push(Arc::clone(middleware));
                        }
                    }
                }
                chain
            })
            .collect();
        let siblings: Vec<_> = (0..registry.tools.len())
            .map(|index| registry.read_only_sibling(index))
            .collect();
        for ((tool, chain), check_with) in registry.tools.iter_mut().zip(chains).zip(siblings) {
            tool.complete(self.policy, self.max_output, chain, check_with);
        }
        crate::setup::invalidation::resolve(&mut registry)?;
        let sealer = match &self.revision.state_key {
            Some(crate::tasks::StateKeys::One(key)) => crate::rounds::state::Sealer::with_key(*key),
            Some(crate::tasks::StateKeys::Ring { current, previous }) => {
                crate::rounds::state::Sealer::with_keys(*current, previous)
            }
            None => crate::rounds::state::Sealer::random(),
        };
        for warning in &registry.warnings {
            tracing::warn!(target: "fusion::server", server = %self.name, "{warning}");
        }
        let app_links = crate::apps::listed_links(&self.app_links, &registry);
        Ok(Server {
            inner: Arc::new(Inner {
                name: self.name,
                version: self.version,
                instructions: self.instructions,
                tasks: crate::tasks::Tasks::new(self.revision.tasks, registry.task_deadlines()),
                registry,
                limits: self.limits,
                context: self.context,
                fatal: tokio::sync::watch::channel(false).0,
                idempotency: self.idempotency,
                idempotency_window: self.idempotency_window,
                locks: self.locks,
                cache: crate::cache::Caching::new(self.cache),
                list_ttl: self.list_ttl,
                ok_level: self.ok_level,
                draft_tool_failure: self.draft_tool_failure,
                app_links,
                log_level: std::sync::Mutex::new(None),
                catalog: self.catalog,
                sealer,
                required_env: self.startup.required_env,
                token_budget: self.startup.token_budget,
                surface_digest: std::sync::OnceLock::new(),
                visibility: crate::setup::visibility::Visibility::new(
                    self.hide_unauthorized,
                    self.visibility_rules,
                ),
                tool_search: tool_search.map(crate::search::index::Searching::new),
                mounts: self.mounts,
            }),
            session_peers: None,
        })
    }

    /// Builds the server.
    ///
    /// # Panics
    /// On the mistakes [`try_build`](Self::try_build) reports, with their messages: they are
    /// programming errors, found on the first start (as a router rejects overlapping routes).
    /// [`serve_stdio`](Self::serve_stdio) reports them and exits with code 78 instead.
    pub fn build(self) -> Server<C> {
        match self.try_build() {
            Ok(server) => server,
            Err(errors) => panic!("{}", describe_build_errors(&errors)),
        }
    }
}
