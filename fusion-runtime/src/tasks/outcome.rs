//! How a task's work ends: the tool's report, or, when the replica running it stopped and
//! the tool is not safe to run again, an unknown outcome.

use rmcp::model::{ErrorCode, ErrorData, TaskStatus};
use serde_json::Value;

use super::store::TaskRecord;
use crate::{
    failure::{Failure, FailureKind, Target, model::REPLICA_STOPPED},
    meta::FAILURE_META_KEY,
};

/// How a task's work ended: the tool's result, or a failure of the server's own.
pub(crate) struct TaskOutcome {
    /// The tool's result.
    pub(crate) result: rmcp::model::CallToolResult,
    /// The failure was the server's (its details masked): the task failed.
    pub(crate) internal: bool,
    /// The (masked) message of such a failure.
    pub(crate) message: String,
}

/// Ends `record` `failed` with an unknown outcome: its replica stopped while it ran, and
/// the tool is not safe to run again.
pub(super) fn end_unknown(record: &mut TaskRecord) {
    let failure = Failure::new(FailureKind::UnknownOutcome {
        cause: REPLICA_STOPPED,
        check_with: None,
    });
    let target = Target {
        tool: &record.tool,
        action: None,
    };
    let message = failure.message(&target, "");
    let entry = serde_json::to_value(failure.entry("", None)).unwrap_or(Value::Null);
    let mut meta = serde_json::Map::new();
    meta.insert(FAILURE_META_KEY.to_owned(), entry);
    let error = ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        message,
        Some(serde_json::json!({ "_meta": meta })),
    );
    record.finish(TaskStatus::Failed, None, serde_json::to_value(error).ok());
}
