//! Replay: a call with an idempotency key seen before gets the first call's result; the
//! result is stored in a JSON form any build can read back.

use serde_json::Value;

use crate::failure::Target;

use super::CallReport;
use crate::server::Server;

impl CallReport {
    /// The report as stored for an idempotency key.
    pub(super) fn to_json(&self) -> Value {
        serde_json::json!({
            "result": serde_json::to_value(&self.result).unwrap_or(Value::Null),
            "data": self.data,
            "system_rules": self.system_rules,
            "ui_blocks": serde_json::to_value(&self.ui_blocks).unwrap_or(Value::Null),
        })
    }

    /// A stored report; `None` if the store returned something else.
    pub(super) fn from_json(stored: Value) -> Option<Self> {
        let Value::Object(mut stored) = stored else {
            return None;
        };
        Some(Self {
            result: serde_json::from_value(stored.remove("result")?).ok()?,
            data: stored.remove("data").unwrap_or(Value::Null),
            system_rules: serde_json::from_value(stored.remove("system_rules")?).ok()?,
            ui_blocks: serde_json::from_value(stored.remove("ui_blocks")?).ok()?,
            fatal: false,
            internal: false,
        })
    }
}

impl<C: Send + Sync + 'static> Server<C> {
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
