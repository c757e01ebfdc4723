//! The builder's settings for the 2026-07-28 revision: tools that run as tasks, the task
//! store, the key of multi-round request states, and how long list results are fresh
//! (their `ttlMs`).

use std::{sync::Arc, time::Duration};

use crate::{
    setup::builder::ServerBuilder,
    tasks::{TaskStore, Tasking},
    tool::Tool,
};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Registers a tool that runs as a task ([`crate::tasks`]): a client that declared the
    /// tasks extension gets a task id at once and polls for the result while the work
    /// goes on under the tool's policies (timeout, retries, circuit breaker).
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, tasks::Tasking};
    ///
    /// /// Renders a long report.
    /// #[mcp_tool(read_only)]
    /// async fn render_report(pages: u32) -> String {
    ///     format!("{pages} pages")
    /// }
    ///
    /// let server = Server::builder("reports", "1.0.0")
    ///     .task_tool(render_report, Tasking::required())
    ///     .build();
    /// assert_eq!(server.tool_names(), ["render_report"]);
    /// ```
    pub fn task_tool<T: Tool<C>>(mut self, tool: T, tasking: Tasking) -> Self {
        let name = tool.definition().spec.name;
        self.revision.tasks.tools.insert(name.to_owned(), tasking);
        self.tool(tool)
    }

    /// Where tasks are kept: in memory by default ([`MemoryTaskStore`](crate::tasks::MemoryTaskStore),
    /// at most 1,000); replicas share one store so that any of them answers `tasks/get`.
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.revision.tasks.store = Some(Arc::new(store));
        self
    }

    /// How long a finished task is kept after its last activity (10 minutes by default):
    /// its end, or the last time its client read it, at most
    /// [`MAX_KEPT_TTLS`](crate::tasks::MAX_KEPT_TTLS) of it after its end. A running task
    /// is never expired. Clients read it as the task's `ttlMs`.
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.revision.tasks.ttl = ttl;
        self
    }

    /// Makes a slow call a task: a call still running `after` it started is answered with
    /// a task (`resultType: task`) when its client declared the tasks extension, and its
    /// work goes on under the task machinery (the task store, its lease, a take-over by
    /// another replica when this one dies). A call that ends sooner is answered directly,
    /// and a client without the extension waits for the answer as always. The default of
    /// every tool (none by default); a tool sets its own with
    /// `#[mcp_tool(task_after = "20s")]`, and `"0s"` opts it out. Grouped tools are not
    /// made tasks this way.
    ///
    /// Hosts give up on a call after about 60 s; a task is polled instead, for as long as
    /// it takes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::prelude::*;
    ///
    /// /// Builds the quarterly report.
    /// #[mcp_tool(read_only)]
    /// async fn quarterly_report(quarter: u8) -> String {
    ///     format!("Q{quarter}: all good")
    /// }
    ///
    /// let server = Server::builder("reports", "1.0.0")
    ///     .task_after(Duration::from_secs(20))
    ///     .tool(quarterly_report)
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn task_after(mut self, after: Duration) -> Self {
        self.policy.task_after = Some(after);
        self
    }

    /// The interval clients are asked to poll a task at (half a second by default).
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.revision.tasks.poll_interval = interval;
        self
    }

    /// The key that signs the request state of multi-round calls (2026-07-28): random per
    /// process by default; replicas behind a load balancer must share one, or a round
    /// that lands on another replica is refused. Keep it secret (an environment
    /// variable, a secret store).
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// let key = [42_u8; 32]; // in production: 32 random bytes from a secret store
    /// let server = Server::builder("replica", "1.0.0").request_state_key(key).build();
    /// # let _ = server;
    /// ```
    pub fn request_state_key(mut self, key: [u8; 32]) -> Self {
        self.revision.state_key = Some(crate::tasks::StateKeys::One(key));
        self
    }

    /// Rolls the request-state key without failing the rounds in progress: states are
    /// sealed with `current`, tagged with its id, and opened with `current` or any of
    /// `previous` (tagged, or sealed by a server with one key). The one-key
    /// [`request_state_key`](Self::request_state_key) is where a fleet starts.
    ///
    /// To roll a key: deploy every replica with `request_state_keys(new, [old])` (a round
    /// sealed by any replica then opens on every other); once the last replica runs it
    /// and a state's lifetime has passed (10 minutes), drop `old`.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// // In production: 32 random bytes each, from a secret store.
    /// let (new, old) = ([2_u8; 32], [1_u8; 32]);
    /// let server = Server::builder("replica", "1.0.0")
    ///     .request_state_keys(new, [old])
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn request_state_keys(
        mut self,
        current: [u8; 32],
        previous: impl IntoIterator<Item = [u8; 32]>,
    ) -> Self {
        self.revision.state_key = Some(crate::tasks::StateKeys::Ring {
            current,
            previous: previous.into_iter().collect(),
        });
        self
    }

    /// How long a client may treat a list result (`tools/list`, `prompts/list`,
    /// `resources/list`, `resources/templates/list`) as fresh: the `ttlMs` those results
    /// carry under the 2026-07-28 revision, next to their `cacheScope` (`private` when the
    /// tools a caller is shown depend on who asks: [`hide_unauthorized`](Self::hide_unauthorized),
    /// [`visibility`](Self::visibility)). [`DEFAULT_LIST_TTL`](crate::cache::DEFAULT_LIST_TTL)
    /// (a minute) by default: a fleet's lists change with a deploy, and a session hears of
    /// a change sooner through `notifications/tools/list_changed`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::prelude::*;
    ///
    /// let server = Server::builder("market", "1.0.0")
    ///     .list_ttl(Duration::from_secs(300))
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn list_ttl(mut self, ttl: Duration) -> Self {
        self.list_ttl = ttl;
        self
    }
}
