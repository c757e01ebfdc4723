//! [`TestResult`]: one call's result, split into the layers a test asserts on.

use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::{call::Call, pipeline::CallReport, tool::present::UiBlock};

/// The result of one call, split into the layers a test asserts on.
#[derive(Clone, Debug)]
pub struct TestResult {
    /// `isError` of the result.
    pub is_error: bool,
    /// On success, the handler's value as JSON (a string for text tools, `null` for `()`);
    /// on error, the error message as a JSON string.
    pub data: Value,
    /// Rules for the model from the tool's presenter; empty on error.
    pub system_rules: Vec<String>,
    /// UI blocks from the tool's presenter; empty on error.
    pub ui_blocks: Vec<UiBlock>,
    /// The `CallToolResult` exactly as a transport would send it.
    pub raw: CallToolResult,
    fatal: bool,
    notifications: Vec<Value>,
    attempts: u32,
}

impl TestResult {
    /// The result of the call `call`, as the pipeline reported it.
    pub(super) fn new(report: CallReport, call: &Call) -> Self {
        // The count the call log has: the one count the pipeline keeps.
        let attempts = call
            .watch()
            .and_then(|watch| watch.event())
            .and_then(|event| event["fields"]["attempts"].as_u64())
            .and_then(|attempts| u32::try_from(attempts).ok())
            .unwrap_or(0);
        Self {
            is_error: report.result.is_error == Some(true),
            data: report.data,
            system_rules: report.system_rules,
            ui_blocks: report.ui_blocks,
            raw: report.result,
            fatal: report.fatal,
            notifications: call.recorded(),
            attempts,
        }
    }

    /// All text content blocks, joined with newlines.
    pub fn text(&self) -> String {
        self.raw
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether the handler returned a fatal error: served, the process would now exit
    /// with code 70; in the tester it only says so.
    pub fn is_fatal(&self) -> bool {
        self.fatal
    }

    /// How many times the handler ran (an injected [`Fault`](super::Fault) counting as a
    /// run), as the call log says: 1 for a call that succeeded at once, more after
    /// retries, 0 for a call refused before the handler ran (invalid arguments excepted:
    /// decoding them is the first run's), answered from the idempotency store, or
    /// cancelled.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::{Fault, Tester}};
    ///
    /// /// Fetch a price.
    /// #[mcp_tool(read_only, retry(attempts = 4, backoff = "1ms"))]
    /// async fn price(sku: String) -> String {
    ///     format!("{sku}: 9.99")
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("shop", "1").tool(price).build());
    /// let args = serde_json::json!({"sku": "A1"});
    /// assert_eq!(tester.call("price", args.clone()).await.attempts(), 1);
    /// tester.inject("price", Fault::transient("503").times(2));
    /// assert_eq!(tester.call("price", args).await.attempts(), 3);
    /// # });
    /// ```
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The notifications the tool sent while it ran (`notifications/progress`,
    /// `notifications/message`), as `{"method", "params"}` objects.
    pub fn notifications(&self) -> &[Value] {
        &self.notifications
    }

    /// The result's `_meta["fusion/failure"]`, as a client reads it: present on every
    /// `isError` result and on warnings, `None` on a success.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// Add two integers.
    /// #[mcp_tool]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("calc", "1.0.0").tool(add).build());
    /// let refused = tester.call("ad", serde_json::json!({})).await;
    /// let entry = refused.failure().expect("an isError result has an entry");
    /// assert_eq!(entry.code.as_deref(), Some("unknown_tool"));
    /// assert_eq!(entry.hint.as_deref(), Some("did you mean `add`?"));
    /// assert!(tester.call("add", serde_json::json!({"a": 1, "b": 2})).await.failure().is_none());
    /// # });
    /// ```
    pub fn failure(&self) -> Option<crate::failure::entry::FailureEntry> {
        let entry = self
            .raw
            .meta
            .as_ref()?
            .0
            .get(crate::meta::FAILURE_META_KEY)?;
        serde_json::from_value(entry.clone()).ok()
    }

    /// The result as JSON, as it appears on the wire.
    pub fn wire_json(&self) -> Value {
        serde_json::to_value(&self.raw).unwrap_or(Value::Null)
    }
}
