//! Replay: a call with an idempotency key seen before gets the first call's result; the
//! result is stored in a JSON form any build can read back.

use serde_json::Value;

use crate::failure::{Failure, Target};

use super::CallReport;
use crate::setup::server::Server;

impl CallReport {
    /// The report as stored for an idempotency key, with the fingerprint of the arguments
    /// that produced it (`canonical_json::fingerprint`): a later call under the same key
    /// with other arguments is a conflict, not a replay.
    pub(super) fn to_json(&self, arguments: &str) -> Value {
        serde_json::json!({
            "arguments_sha256": arguments,
            "result": serde_json::to_value(&self.result).unwrap_or(Value::Null),
            "data": self.data,
            "system_rules": self.system_rules,
            "ui_blocks": serde_json::to_value(&self.ui_blocks).unwrap_or(Value::Null),
        })
    }

    /// A stored report, and the fingerprint of its arguments when it was stored with one
    /// (a result stored by an older build has none); `None` if the store returned something
    /// else.
    pub(super) fn from_json(stored: Value) -> Option<(Self, Option<String>)> {
        let Value::Object(mut stored) = stored else {
            return None;
        };
        let arguments = match stored.remove("arguments_sha256") {
            Some(Value::String(fingerprint)) => Some(fingerprint),
            _ => None,
        };
        let report = Self {
            result: serde_json::from_value(stored.remove("result")?).ok()?,
            data: stored.remove("data").unwrap_or(Value::Null),
            system_rules: serde_json::from_value(stored.remove("system_rules")?).ok()?,
            ui_blocks: serde_json::from_value(stored.remove("ui_blocks")?).ok()?,
            fatal: false,
            internal: false,
        };
        Some((report, arguments))
    }
}

/// The refusal of a call under an idempotency key that an earlier call used with other
/// arguments: replaying that call's result would tell the caller its own call succeeded
/// when it never ran (issue 36: `delete_note {id: 2}` answered "deleted note 1").
pub(super) fn idempotency_conflict(target: &Target<'_>, key_argument: &str) -> Failure {
    crate::middleware::refuse(
        crate::failure::classify::Classification {
            class: crate::failure::classify::ErrorClass::InvalidInput,
            code: Some(crate::failure::classify::ErrorCode::Conflict),
            hint: Some(
                "send a new idempotency key for a call with other arguments, or the same arguments to get the earlier call's result",
            ),
            retry_after: None,
        },
        format!(
            "{target} did not run: its idempotency key (`{key_argument}`) was used by an earlier call with other arguments"
        ),
    )
}

impl<C: Send + Sync + 'static> Server<C> {
    /// The name of the argument that is `index`'s idempotency key, if it has one.
    pub(super) fn idempotency_argument(&self, index: usize) -> Option<&'static str> {
        self.inner.registry.handlers[index].spec.idempotency_key
    }

    /// The store key of a call to a tool with an idempotency key argument that the call
    /// sets: the tool, the action and the key's value.
    pub(super) fn idempotency_key(
        &self,
        index: usize,
        target: &Target<'_>,
        args: &Value,
    ) -> Option<String> {
        let name = self.inner.registry.handlers[index].spec.idempotency_key?;
        let value = match args.get(name)? {
            Value::String(text) if !text.is_empty() => text.clone(),
            Value::Number(number) => number.to_string(),
            _ => return None,
        };
        Some(format!(
            "{}/{}:{value}",
            target.tool,
            target.action.unwrap_or("")
        ))
    }
}
