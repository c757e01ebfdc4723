//! The draft standard failure key (SEP-3313, PR #3313, a draft): the same failure as
//! `_meta["fusion/failure"]`, mapped field by field onto
//! `_meta["io.modelcontextprotocol/toolFailure"]`, for clients that read the standard
//! shape. Sent only when the server turns it on
//! ([`ServerBuilder::draft_tool_failure`](crate::ServerBuilder::draft_tool_failure)), while
//! the SEP is a draft. The whole mapping is in this file, so that it follows the SEP as it
//! changes.
//!
//! | SEP field | from `fusion/failure` |
//! |---|---|
//! | `class` | `transient`, `fatal`, `cancelled`: `reliability`; code `unauthorized` or `forbidden`: `governance`; anything else (`invalid_input`, `internal`, `unknown_outcome`): `capability` |
//! | `code` | the baseline vocabulary where one fits (`invalid_input`, `capability_unsupported`, `resource_not_found`, `retryable_transient_error`, `auth_required`, `permission_denied`), else fusion's own code |
//! | `retryable` | `retryable`, for `reliability` only (the SEP: absent otherwise) |
//! | `retryNotBefore` | now plus `retry_after_ms`, in Unix epoch milliseconds, when retryable |
//! | `correlationId` | the call's correlation id, the one its log event carries (required) |
//! | `agentGuidance` | `hint` |

use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use super::entry::FailureEntry;
use crate::meta::{FAILURE_META_KEY, TOOL_FAILURE_META_KEY};

/// Adds the draft key to `result` when it is an error carrying `fusion/failure`.
pub(crate) fn add_draft_key(result: &mut CallToolResult, correlation_id: &str) {
    if result.is_error != Some(true) {
        return;
    }
    let Some(meta) = result.meta.as_mut() else {
        return;
    };
    let Some(entry) = meta
        .0
        .get(FAILURE_META_KEY)
        .and_then(|entry| serde_json::from_value::<FailureEntry>(entry.clone()).ok())
    else {
        return;
    };
    let failure = tool_failure(&entry, correlation_id, SystemTime::now());
    meta.0.insert(TOOL_FAILURE_META_KEY.to_owned(), failure);
}

/// The SEP's `ToolFailure` for `entry`, at `now`.
fn tool_failure(entry: &FailureEntry, correlation_id: &str, now: SystemTime) -> Value {
    let code = entry.code.as_deref();
    let class = match (entry.class.as_str(), code) {
        (_, Some("unauthorized" | "forbidden")) => "governance",
        ("transient" | "fatal" | "cancelled", _) => "reliability",
        _ => "capability",
    };
    let code = match (class, code) {
        ("governance", Some("unauthorized")) => "auth_required",
        ("governance", _) => "permission_denied",
        ("reliability", _) if entry.retryable => "retryable_transient_error",
        (_, Some("not_found")) => "resource_not_found",
        (_, Some("unknown_tool" | "unknown_action")) => "capability_unsupported",
        (_, Some("invalid_arguments" | "missing_action" | "conflict")) => "invalid_input",
        (_, Some(own)) => own,
        (_, None) => entry.class.as_str(),
    };
    let mut failure = Map::new();
    failure.insert("class".to_owned(), json!(class));
    failure.insert("code".to_owned(), json!(code));
    if class == "reliability" {
        failure.insert("retryable".to_owned(), json!(entry.retryable));
        if entry.retryable
            && let Some(delay) = entry.retry_after_ms
        {
            let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
            let now_ms = u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX);
            failure.insert(
                "retryNotBefore".to_owned(),
                json!(now_ms.saturating_add(delay)),
            );
        }
    }
    failure.insert("correlationId".to_owned(), json!(correlation_id));
    if let Some(hint) = &entry.hint {
        failure.insert("agentGuidance".to_owned(), json!(hint));
    }
    Value::Object(failure)
}

impl<C: Send + Sync + 'static> crate::ServerBuilder<C> {
    /// Error results also carry the draft standard failure key (SEP-3313, a draft):
    /// `_meta["io.modelcontextprotocol/toolFailure"]`, the same failure as
    /// `_meta["fusion/failure"]` in the SEP's shape (`class` `capability`, `reliability` or
    /// `governance`, `code`, `retryable`, `retryNotBefore`, `correlationId`,
    /// `agentGuidance`). Off by default while the SEP is a draft: its shape may still
    /// change, and fusion follows it.
    ///
    /// ```
    /// use fusion_runtime::{meta::TOOL_FAILURE_META_KEY, prelude::*, testing::Tester};
    ///
    /// /// Divide.
    /// #[mcp_tool]
    /// async fn divide(a: i64, b: i64) -> i64 {
    ///     a / b.max(1)
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("calc", "1.0.0").tool(divide).draft_tool_failure(true).build();
    /// let result = Tester::new(server).call("divide", serde_json::json!({"a": "x", "b": 2})).await;
    /// let failure = &result.wire_json()["_meta"][TOOL_FAILURE_META_KEY];
    /// assert_eq!(failure["class"], "capability");
    /// assert_eq!(failure["code"], "invalid_input");
    /// assert!(failure["correlationId"].is_string());
    /// # });
    /// ```
    pub fn draft_tool_failure(mut self, on: bool) -> Self {
        self.draft_tool_failure = on;
        self
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn entry(value: Value) -> FailureEntry {
        serde_json::from_value(value).expect("an entry")
    }

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn a_transient_failure_is_reliability_retryable_not_before_its_delay() {
        let failure = tool_failure(
            &entry(
                json!({"class": "transient", "code": "rate_limited", "retryable": true, "retry_after_ms": 1500, "hint": "wait"}),
            ),
            "c-1",
            at(1_000),
        );
        assert_eq!(
            failure,
            json!({"class": "reliability", "code": "retryable_transient_error", "retryable": true,
                "retryNotBefore": 2_500, "correlationId": "c-1", "agentGuidance": "wait"})
        );
    }

    #[test]
    fn refusals_by_policy_are_governance_and_never_retryable() {
        for (code, standard) in [
            ("unauthorized", "auth_required"),
            ("forbidden", "permission_denied"),
        ] {
            let failure = tool_failure(
                &entry(json!({"class": "invalid_input", "code": code, "retryable": false})),
                "c",
                at(0),
            );
            assert_eq!(failure["class"], "governance");
            assert_eq!(failure["code"], standard);
            assert!(failure.get("retryable").is_none(), "{failure}");
        }
    }

    #[test]
    fn what_the_caller_must_change_is_capability_in_the_baseline_words() {
        for (code, standard) in [
            ("invalid_arguments", "invalid_input"),
            ("unknown_tool", "capability_unsupported"),
            ("not_found", "resource_not_found"),
            ("conflict", "invalid_input"),
            ("output_too_large", "output_too_large"),
        ] {
            let failure = tool_failure(
                &entry(json!({"class": "invalid_input", "code": code, "retryable": false})),
                "c",
                at(0),
            );
            assert_eq!(failure["class"], "capability", "{code}");
            assert_eq!(failure["code"], standard, "{code}");
        }
        let unknown = tool_failure(
            &entry(
                json!({"class": "unknown_outcome", "code": "timeout", "retryable": false, "hint": "check first"}),
            ),
            "c",
            at(0),
        );
        assert_eq!(unknown["class"], "capability");
        assert_eq!(unknown["agentGuidance"], "check first");
        let internal = tool_failure(
            &entry(json!({"class": "internal", "retryable": false, "correlation_id": "c"})),
            "c",
            at(0),
        );
        assert_eq!(internal["code"], "internal");
    }

    #[test]
    fn only_errors_with_fusions_entry_get_the_key() {
        let mut ok = CallToolResult::success(Vec::new());
        add_draft_key(&mut ok, "c");
        assert!(ok.meta.is_none());
        let mut failed = CallToolResult::error(Vec::new()).with_meta(Some(
            rmcp::model::MetaObject(serde_json::Map::from_iter([(
                FAILURE_META_KEY.to_owned(),
                json!({"class": "transient", "code": "timeout", "retryable": true}),
            )])),
        ));
        add_draft_key(&mut failed, "corr-7");
        let meta = failed.meta.expect("meta");
        assert_eq!(meta.0[TOOL_FAILURE_META_KEY]["correlationId"], "corr-7");
        assert_eq!(meta.0[TOOL_FAILURE_META_KEY]["class"], "reliability");
        assert!(meta.0.contains_key(FAILURE_META_KEY), "fusion's own stays");
    }
}
