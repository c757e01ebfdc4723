//! [`CallHandle`]: a call started in the background, watched and cancelled from the test.

use serde_json::Value;

use super::TestResult;
use crate::call::Call;

/// A call in progress, started with [`Tester::start`](super::Tester::start): its progress
/// so far, its cancellation, and its result.
///
/// Dropping the handle before the call ends drops the call, as a client that went away
/// does (the call log records it as cancelled).
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::{Call, prelude::*, testing::Tester};
///
/// /// Import rows, one a second, reporting progress.
/// #[mcp_tool]
/// async fn import(#[call] call: &Call, rows: u32) -> String {
///     for done in 0..rows {
///         call.progress(f64::from(done), Some(f64::from(rows)), None).await;
///         tokio::time::sleep(Duration::from_secs(1)).await;
///     }
///     format!("imported {rows} rows")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let tester = Tester::new(Server::builder("rows", "1").tool(import).build());
/// let handle = tester.start("import", serde_json::json!({"rows": 1000}));
/// tokio::time::timeout(Duration::from_secs(5), async {
///     while handle.progress().is_empty() {
///         tokio::task::yield_now().await;
///     }
/// })
/// .await
/// .expect("the import reports progress");
/// assert_eq!(handle.progress()[0].total, Some(1000.0));
/// handle.cancel();
/// let result = tokio::time::timeout(Duration::from_secs(5), handle.result()).await.unwrap();
/// assert_eq!(result.failure().unwrap().class, "cancelled");
/// # });
/// ```
#[derive(Debug)]
pub struct CallHandle {
    pub(super) call: Call,
    pub(super) task: tokio::task::JoinHandle<TestResult>,
}

/// One `notifications/progress` a tool sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// How much is done.
    pub progress: f64,
    /// How much there is in all, when the tool knows.
    pub total: Option<f64>,
    /// What the tool is doing.
    pub message: Option<String>,
}

impl CallHandle {
    /// The progress notifications the call sent so far, in order.
    pub fn progress(&self) -> Vec<Progress> {
        self.call
            .recorded()
            .iter()
            .filter(|sent| sent["method"] == "notifications/progress")
            .map(|sent| {
                let params = &sent["params"];
                Progress {
                    progress: params["progress"].as_f64().unwrap_or_default(),
                    total: params["total"].as_f64(),
                    message: params["message"].as_str().map(str::to_owned),
                }
            })
            .collect()
    }

    /// The notifications the call sent so far (`notifications/progress`,
    /// `notifications/message`), as `{"method", "params"}` objects.
    pub fn notifications(&self) -> Vec<Value> {
        self.call.recorded()
    }

    /// Cancels the call, as a client's `notifications/cancelled` does: the handler's
    /// future is dropped (its destructors run, the locks and permits it holds are given
    /// back) and the call ends with the failure class `cancelled`. A call that ended
    /// already keeps its result.
    pub fn cancel(&self) {
        self.call.cancel();
    }

    /// Waits for the call to end, and its result.
    ///
    /// # Panics
    /// When the pipeline itself panicked (its panic is passed on), or the runtime stopped
    /// the call's task.
    pub async fn result(mut self) -> TestResult {
        match (&mut self.task).await {
            Ok(result) => result,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => panic!("the call's task did not finish: {error}"),
        }
    }
}

impl Drop for CallHandle {
    fn drop(&mut self) {
        // A finished task ignores it.
        self.task.abort();
    }
}
