//! [`Fault`]: a failure a test puts in place of a tool's handler, and how one run of the
//! pipeline carries it out.

use std::time::Duration;

/// A failure injected in place of a tool's handler
/// ([`Tester::inject`](crate::testing::Tester::inject)): for its next [`times`](Fault::times) runs
/// (once by default), the pipeline runs the fault instead of the handler, inside the
/// tool's policies. The retries, the timeout, the circuit breaker, the panic boundary,
/// idempotency and the call log see it exactly as they would see the handler fail.
///
/// The arguments are still decoded and validated first, as for a real run: a call with
/// invalid arguments fails as such and leaves the fault armed.
///
/// One example a fault, each a test a user writes:
///
/// **[`Fault::transient`]**: the retry policy survives two upstream failures.
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
///
/// /// Fetch a price.
/// #[mcp_tool(read_only, retry(attempts = 3, backoff = "1s"))]
/// async fn price(sku: String) -> String {
///     format!("{sku}: 9.99")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
/// let tester = Tester::new(Server::builder("shop", "1").tool(price).build());
/// tester.inject("price", Fault::transient("upstream 503").times(2));
/// let result = tester.call("price", serde_json::json!({"sku": "A1"})).await;
/// assert_eq!(result.data, "A1: 9.99");
/// assert_eq!(result.attempts(), 3);
/// # });
/// ```
///
/// **[`Fault::retry_after`]**: the wait an upstream asks for is honoured.
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
///
/// /// Fetch a price.
/// #[mcp_tool(read_only, retry(attempts = 2, backoff = "10ms"))]
/// async fn price(sku: String) -> String {
///     format!("{sku}: 9.99")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
/// let tester = Tester::new(Server::builder("shop", "1").tool(price).build());
/// tester.inject("price", Fault::transient("429").retry_after(Duration::from_secs(20)));
/// let started = tokio::time::Instant::now();
/// assert!(!tester.call("price", serde_json::json!({"sku": "A1"})).await.is_error);
/// // Paused clock: the 20 s wait took no real time.
/// assert!(started.elapsed() >= Duration::from_secs(20));
/// # });
/// ```
///
/// **[`Fault::delay`]**: the timeout fires on a slow upstream.
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
///
/// /// Fetch a price.
/// #[mcp_tool(read_only, timeout = "2s")]
/// async fn price(sku: String) -> String {
///     format!("{sku}: 9.99")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
/// let tester = Tester::new(Server::builder("shop", "1").tool(price).build());
/// tester.inject("price", Fault::delay(Duration::from_secs(5)));
/// let slow = tester.call("price", serde_json::json!({"sku": "A1"})).await;
/// assert_eq!(slow.failure().unwrap().code.as_deref(), Some("timeout"));
/// // Once by default: the next call is fast again.
/// assert_eq!(tester.call("price", serde_json::json!({"sku": "A1"})).await.data, "A1: 9.99");
/// # });
/// ```
///
/// **[`Fault::panic`]**: a panic is contained, masked for the model, and the server goes on.
///
/// ```
/// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
///
/// /// Fetch a price.
/// #[mcp_tool(read_only)]
/// async fn price(sku: String) -> String {
///     format!("{sku}: 9.99")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let tester = Tester::new(Server::builder("shop", "1").tool(price).build());
/// tester.inject("price", Fault::panic("index out of bounds"));
/// let crashed = tester.call("price", serde_json::json!({"sku": "A1"})).await;
/// assert!(crashed.is_error);
/// assert!(!crashed.text().contains("index out of bounds"), "masked: {}", crashed.text());
/// assert_eq!(tester.log_events()[0]["fields"]["outcome"], "panic");
/// assert!(!tester.call("price", serde_json::json!({"sku": "A1"})).await.is_error);
/// # });
/// ```
///
/// **[`Fault::internal`]**: a bug's details reach the log, not the model, which gets a
/// correlation id.
///
/// ```
/// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
///
/// /// Fetch a price.
/// #[mcp_tool(read_only)]
/// async fn price(sku: String) -> String {
///     format!("{sku}: 9.99")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let tester = Tester::new(Server::builder("shop", "1").tool(price).build());
/// tester.inject("price", Fault::internal("column `cost` does not exist"));
/// let failed = tester.call("price", serde_json::json!({"sku": "A1"})).await;
/// let entry = failed.failure().unwrap();
/// assert_eq!(entry.class, "internal");
/// let id = entry.correlation_id.unwrap();
/// assert!(failed.text().contains(&id) && !failed.text().contains("cost"));
/// let event = &tester.log_events()[0]["fields"];
/// assert_eq!(event["correlation_id"], id.as_str());
/// assert!(event["error"].as_str().unwrap().contains("column `cost` does not exist"));
/// # });
/// ```
///
/// **[`Fault::fatal`]**: an unrecoverable error is reported as fatal (served, the process
/// would exit with code 70).
///
/// ```
/// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
///
/// /// Fetch a price.
/// #[mcp_tool(read_only)]
/// async fn price(sku: String) -> String {
///     format!("{sku}: 9.99")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let tester = Tester::new(Server::builder("shop", "1").tool(price).build());
/// tester.inject("price", Fault::fatal("credentials revoked"));
/// let result = tester.call("price", serde_json::json!({"sku": "A1"})).await;
/// assert!(result.is_error && result.is_fatal());
/// # });
/// ```
#[derive(Clone, Debug, PartialEq)]
#[must_use = "a fault does nothing until it is injected with `Tester::inject`"]
pub struct Fault {
    pub(crate) kind: FaultKind,
    pub(crate) times: u32,
}

/// What a fault does in place of the handler.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FaultKind {
    Transient {
        message: String,
        retry_after: Option<Duration>,
    },
    Delay(Duration),
    Panic(String),
    Internal(String),
    Fatal(String),
}

impl Fault {
    fn once(kind: FaultKind) -> Self {
        Self { kind, times: 1 }
    }

    /// A transient failure with this message, classified as a `#[transient]` error of
    /// the handler's would be: retried under the tool's retry policy (never for a
    /// destructive tool that is not idempotent: its outcome is then unknown), counted by
    /// its circuit breaker, `transient_exhausted` when the retries run out.
    pub fn transient(message: impl Into<String>) -> Self {
        Self::once(FaultKind::Transient {
            message: message.into(),
            retry_after: None,
        })
    }

    /// Waits `delay` (on tokio's clock, so a paused clock skips it), then runs the real
    /// handler: inside the tool's timeout, which fires if the delay is longer.
    pub fn delay(delay: Duration) -> Self {
        Self::once(FaultKind::Delay(delay))
    }

    /// Panics with this message where the handler would run: the pipeline's panic
    /// boundary catches it, as it catches a panic of the handler's. The log's
    /// `source_chain` says where it panicked: in fusion's pipeline, not in the tool.
    pub fn panic(message: impl Into<String>) -> Self {
        Self::once(FaultKind::Panic(message.into()))
    }

    /// An internal error (a bug, an unclassified error) with this message: masked for the
    /// model behind a correlation id, its message in the call log.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::once(FaultKind::Internal(message.into()))
    }

    /// A fatal error with this message: the call is answered and reported fatal
    /// ([`TestResult::is_fatal`](crate::testing::TestResult::is_fatal)); a served process would
    /// exit with code 70.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::once(FaultKind::Fatal(message.into()))
    }

    /// The fault takes the place of the next `times` runs of the handler (once by
    /// default); `0` makes a fault that never fires.
    pub fn times(mut self, times: u32) -> Self {
        self.times = times;
        self
    }

    /// For a [`transient`](Fault::transient) fault: the upstream asks to be tried again
    /// after `delay`, as a `#[transient]` error's `retry_after` does. The retry waits at
    /// least that long (up to the policy's longest backoff). Other faults ignore it.
    pub fn retry_after(mut self, delay: Duration) -> Self {
        if let FaultKind::Transient { retry_after, .. } = &mut self.kind {
            *retry_after = Some(delay);
        }
        self
    }
}
