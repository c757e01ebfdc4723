//! Start-up: the checks a server runs before it serves (`require_env`, `setup` steps, a
//! context opened by a step), `start`, which runs them, and the `serve_stdio` that does.

use std::sync::Arc;

use crate::{
    identity::RequestInfo,
    setup::server::Server,
    setup::{builder::ServerBuilder, error::StartupError},
};

impl ServerBuilder<()> {
    /// Sets the per-call context from what a start-up step opens: `open` runs once, as a
    /// [`setup`](ServerBuilder::setup) step (after the [`require_env`](ServerBuilder::require_env)
    /// checks and the steps declared before it), and its error stops the start with exit
    /// code 78; `make` then builds each call's context from the opened value and what the
    /// transport knows about the caller. So a pool opened at start reaches every call
    /// without a global.
    ///
    /// Such a server is built by [`start`](ServerBuilder::start) or a `serve_*` method,
    /// which run the steps; [`build`](ServerBuilder::build) and
    /// [`try_build`](ServerBuilder::try_build) refuse it
    /// ([`BuildError::ContextNeedsStart`](crate::BuildError::ContextNeedsStart)).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// What the server opens once (a connection pool, a client).
    /// struct Notes {
    ///     path: String,
    /// }
    ///
    /// /// What each call gets.
    /// struct App {
    ///     notes: Arc<Notes>,
    /// }
    ///
    /// /// Where the notes live.
    /// #[mcp_tool(read_only)]
    /// async fn where_notes(#[ctx] app: &App) -> String {
    ///     app.notes.path.clone()
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("notes", "1")
    ///     .context_from_setup(
    ///         || async {
    ///             // Read the configuration, open the database: an error here is exit 78.
    ///             let path = std::env::var("NOTES_DB").unwrap_or_else(|_| "notes.db".into());
    ///             Ok::<_, std::io::Error>(Arc::new(Notes { path }))
    ///         },
    ///         |notes, _request| App { notes: Arc::clone(notes) },
    ///     )
    ///     .tool(where_notes)
    ///     .start()
    ///     .await
    ///     .expect("the notes open");
    /// let result = Tester::new(server).call("where_notes", serde_json::json!({})).await;
    /// assert!(!result.is_error);
    /// # });
    /// ```
    pub fn context_from_setup<S, C, Open, Opening, E, Make>(
        self,
        open: Open,
        make: Make,
    ) -> ServerBuilder<C>
    where
        S: Send + Sync + 'static,
        C: Send + Sync + 'static,
        Open: FnOnce() -> Opening + Send + 'static,
        Opening: Future<Output = Result<S, E>> + Send + 'static,
        E: std::fmt::Display,
        Make: Fn(&S, &RequestInfo) -> C + Send + Sync + 'static,
    {
        let opened: Arc<std::sync::OnceLock<S>> = Arc::new(std::sync::OnceLock::new());
        let reader = Arc::clone(&opened);
        let mut builder = self.context_from_request(move |request: &RequestInfo| {
            match reader.get() {
                Some(state) => make(state, request),
                // `start` runs the step before it returns the server, and `try_build`
                // refuses a server whose context comes from setup.
                None => unreachable!("the context's setup step runs before any call"),
            }
        });
        builder.startup.context_in_setup = true;
        builder.setup(move || async move {
            let state = open().await?;
            // The step runs once a start; a second start would build a second server.
            let _ = opened.set(state);
            Ok::<(), E>(())
        })
    }
}

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Refuses to start unless the environment variable `name` is set and not empty: a
    /// missing credential is a fatal start-up error (exit code 78), not a failure on the
    /// first call.
    pub fn require_env(mut self, name: impl Into<String>) -> Self {
        self.startup.required_env.push(name.into());
        self
    }

    /// Refuses to start (exit code 78) unless the built tool surface is `pin`: the SHA-256
    /// digest of a [`Contract`](crate::contract::Contract) in hex, or a lockfile's whole
    /// text (`include_str!("../fusion.lock")`), whose difference from the built surface is
    /// then named tool by tool. A replica built from other code than the one attested
    /// stops at start instead of serving a skewed surface next to its peers.
    ///
    /// ```
    /// use fusion_runtime::{StartupError, prelude::*};
    ///
    /// /// Echo the text back.
    /// #[mcp_tool]
    /// async fn echo(text: String) -> String {
    ///     text
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let pinned = Server::builder("demo", "1").tool(echo).build().contract().to_lockfile();
    /// assert!(Server::builder("demo", "1").tool(echo).require_surface(&pinned).start().await.is_ok());
    ///
    /// let skewed = Server::builder("demo", "1").require_surface(&pinned).start().await;
    /// let Err(error) = skewed else { panic!("a skewed surface starts") };
    /// assert!(matches!(error, StartupError::SurfaceMismatch { .. }));
    /// assert!(error.to_string().contains("BREAKING echo: the tool was removed"));
    /// # });
    /// ```
    pub fn require_surface(mut self, pin: impl AsRef<str>) -> Self {
        self.startup.surface_pin = Some(pin.as_ref().to_owned());
        self
    }

    /// Caps what the tool surface costs the model, in tokens (see
    /// [`TokenBudget`](crate::contract::TokenBudget)):
    /// [`Tester::assert_contract`](crate::testing::Tester::assert_contract) fails the test
    /// that checks the lockfile, so a description that grows past the budget fails CI, not
    /// the model's context. A server pinned with
    /// [`require_surface`](Self::require_surface) also checks it at start and refuses to
    /// serve over it ([`StartupError::OverTokenBudget`], exit code 78); measuring loads the
    /// tokenizer once (about 0.15 s), which an unpinned server does not pay on every start.
    ///
    /// ```
    /// use fusion_runtime::{StartupError, contract::TokenBudget, prelude::*};
    ///
    /// /// Echo the text back.
    /// #[mcp_tool]
    /// async fn echo(text: String) -> String {
    ///     text
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let pinned = Server::builder("demo", "1").tool(echo).build().contract().to_lockfile();
    /// let pin = |budget| Server::builder("demo", "1").tool(echo).require_surface(&pinned).token_budget(budget);
    /// assert!(pin(TokenBudget::new().per_tool(300)).start().await.is_ok());
    ///
    /// let Err(error) = pin(TokenBudget::new().total(20)).start().await else { panic!("started over budget") };
    /// assert!(matches!(error, StartupError::OverTokenBudget(_)));
    /// assert!(error.to_string().contains("over the budget of 20"), "{error}");
    /// # });
    /// ```
    pub fn token_budget(mut self, budget: crate::contract::TokenBudget) -> Self {
        self.startup.token_budget = Some(budget);
        self
    }

    /// A fallible step run once before serving (check a database, load configuration).
    /// An error stops the start with exit code 78 and the error on stderr.
    pub fn setup<F, Fut, E>(mut self, step: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Display,
    {
        self.startup.steps.push(Box::new(move || {
            Box::pin(async move { step().await.map_err(|error| error.to_string()) })
        }));
        self
    }

    /// Builds the server and runs the start-up checks (`require_env`, `setup`): what the
    /// `serve_*` methods do before serving.
    ///
    /// # Errors
    /// In this order, the first that happens: [`StartupError::Build`] with every
    /// [`BuildError`](crate::BuildError) of [`try_build`](Self::try_build); [`StartupError::MissingEnv`] for the
    /// first `require_env` variable that is missing or empty; [`StartupError::Setup`] for the
    /// first `setup` step that fails (the steps run in order; a failure stops them).
    /// Before the environment and the steps: [`StartupError::SurfaceMismatch`] when the
    /// built surface is not the one [`require_surface`](Self::require_surface) pinned.
    pub async fn start(mut self) -> Result<Server<C>, StartupError> {
        // Taken out first: with it gone, `try_build` does not refuse a context made in
        // setup, whose step runs below, before the server is returned.
        let startup = std::mem::take(&mut self.startup);
        // Kept on the server too, for the banner's client configuration.
        self.startup.required_env = startup.required_env.clone();
        self.startup.token_budget = startup.token_budget;
        // Each upstream's tools join the server's before it is built.
        #[cfg(feature = "upstream")]
        let refreshers = {
            let (builder, refreshers) =
                crate::upstream::builder::mount_all(self, startup.upstreams).await?;
            self = builder;
            refreshers
        };
        let server = self.try_build().map_err(StartupError::Build)?;
        if let Some(pin) = &startup.surface_pin {
            let pin = crate::contract::Pin::parse(pin).map_err(StartupError::InvalidSurfacePin)?;
            pin.check(&server.surface_contract()).map_err(|mismatch| {
                StartupError::SurfaceMismatch {
                    built: mismatch.built.clone(),
                    pinned: mismatch.pinned.clone(),
                    message: mismatch.to_string(),
                }
            })?;
        }
        // A pinned server is one whose surface is attested at start; the budget is part of
        // that attestation. Others are held to it by their tests (`assert_contract`).
        if let (Some(budget), Some(_)) = (startup.token_budget, &startup.surface_pin) {
            budget.check(&server.contract())?;
        }
        for name in startup.required_env {
            if std::env::var_os(&name).is_none_or(|value| value.is_empty()) {
                return Err(StartupError::MissingEnv(name));
            }
        }
        for step in startup.steps {
            step().await.map_err(StartupError::Setup)?;
        }
        // Once the server is what is returned: each refresh ends when it is dropped.
        #[cfg(feature = "upstream")]
        crate::upstream::builder::start_refreshes(&server, refreshers);
        Ok(server)
    }

    /// What `FUSION_CONTRACT=requirements` makes a server binary do instead of serving:
    /// write what its start needs from the environment to stdout, as JSON, and exit 0.
    fn print_requirements(self) -> std::process::ExitCode {
        use std::io::Write;
        let requirements = serde_json::json!({ "required_env": self.startup.required_env });
        let mut out = std::io::stdout().lock();
        match writeln!(out, "{requirements}").and_then(|()| out.flush()) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("{}: cannot write the requirements: {error}", self.name);
                std::process::ExitCode::FAILURE
            }
        }
    }

    /// What `FUSION_CONTRACT=print` makes a server binary do instead of serving: build the
    /// server, write its contract (the lockfile's text, token counts included) to stdout
    /// and exit 0, so that a tool reads the surface of the binary itself, not its source.
    async fn print_contract(self) -> std::process::ExitCode {
        let name = self.name.clone();
        match self.contract_text().await {
            Ok(text) => {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                    Ok(()) => std::process::ExitCode::SUCCESS,
                    Err(error) => {
                        eprintln!("{name}: cannot write the contract: {error}");
                        std::process::ExitCode::FAILURE
                    }
                }
            }
            Err(error) => {
                eprintln!("{name}: cannot build: {error}");
                std::process::ExitCode::from(crate::exit::EXIT_CONFIG)
            }
        }
    }

    /// The lockfile's text of the server this builder builds. The `require_env` checks and
    /// `setup` steps do not run: nothing is served, so a context made by a step (a pool
    /// opened from a variable set only where the server runs) is never asked for. Only
    /// mounted upstreams are started, since their tools are had only by connecting to them.
    async fn contract_text(mut self) -> Result<String, String> {
        #[cfg(feature = "upstream")]
        let needs_start = !self.startup.upstreams.is_empty();
        #[cfg(not(feature = "upstream"))]
        let needs_start = false;
        let server = if needs_start {
            self.start().await.map_err(|error| error.to_string())?
        } else {
            // The context's factory is never called: no call is served.
            self.startup.context_in_setup = false;
            self.try_build()
                .map_err(|errors| StartupError::Build(errors).to_string())?
        };
        Ok(server.contract().to_lockfile())
    }

    /// Starts the server and serves it with `serve` (a transport), flushing the log at the
    /// end; a server that cannot start is logged and exits with
    /// [`EXIT_CONFIG`](crate::exit::EXIT_CONFIG).
    pub(crate) async fn start_and_serve<F, Fut>(self, serve: F) -> std::process::ExitCode
    where
        F: FnOnce(Server<C>) -> Fut,
        Fut: Future<Output = std::process::ExitCode>,
    {
        // Start-up errors name the server, as its user knows it, not the framework.
        let name = self.name.clone();
        match std::env::var(crate::contract::CONTRACT_ENV).as_deref() {
            Ok("print") => return self.print_contract().await,
            Ok(crate::contract::REQUIREMENTS) => return self.print_requirements(),
            _ => {}
        }
        match self.start().await {
            Ok(server) => {
                for warning in server.warnings() {
                    eprintln!("{name}: warning: {warning}");
                }
                let code = serve(server).await;
                crate::log::flush();
                code
            }
            Err(error) => {
                crate::log::startup_failed(&error);
                crate::log::flush();
                eprintln!("{name}: cannot start: {error}");
                std::process::ExitCode::from(crate::exit::EXIT_CONFIG)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::setup::server::Server;

    /// A server whose context is opened by a step from a variable set only where it runs
    /// still prints its contract where that variable is not set (`cargo fusion tools`):
    /// before, the check and the failing step stopped it with exit code 78.
    #[tokio::test]
    async fn the_contract_is_printed_without_the_start_up_checks() {
        let builder = Server::builder("notes", "1")
            .require_env("FUSION_TEST_NEVER_SET")
            .context_from_setup(
                || async { Err::<(), _>("the database is not where the contract is printed") },
                |_: &(), _request| (),
            );
        let text = builder.contract_text().await.expect("the contract");
        let contract = crate::contract::Contract::from_lockfile(&text).expect("a lockfile");
        assert!(contract.tools.is_empty(), "{text}");
    }
}
