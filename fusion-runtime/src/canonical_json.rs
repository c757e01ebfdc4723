//! One spelling of a JSON value: every object's keys in order, so that two clients'
//! spellings of the same arguments compare (and hash) the same. Request states are bound to
//! it (`rounds/state.rs`), and a result stored under an idempotency key carries its
//! arguments' fingerprint (`pipeline/replay.rs`).

use std::collections::BTreeMap;

use serde_json::Value;

/// `value` with every object's keys in order.
pub(crate) fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> = map
                .iter()
                .map(|(key, value)| (key, canonical(value)))
                .collect();
            Value::Object(
                sorted
                    .into_iter()
                    .map(|(key, value)| (key.clone(), value))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The SHA-256 of `value`'s canonical text, in hex: equal for equal values, whatever the
/// order their keys were sent in.
pub(crate) fn fingerprint(value: &Value) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(canonical(value).to_string().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The SHA-256, in hex, of `prefix`, a newline and `value`'s canonical text: one hash for
/// a value and what it belongs to (a cached call's caller and arguments).
pub(crate) fn fingerprint_with(prefix: &str, value: &Value) -> String {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    hasher.update(prefix.as_bytes());
    hasher.update(b"\n");
    hasher.update(canonical(value).to_string().as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_same_arguments_in_another_order_have_the_same_fingerprint() {
        let one = json!({"id": 1, "request_id": "k", "tags": [{"b": 1, "a": 2}]});
        let other: Value =
            serde_json::from_str(r#"{"tags":[{"a":2,"b":1}],"request_id":"k","id":1}"#)
                .expect("JSON");
        assert_eq!(fingerprint(&one), fingerprint(&other));
        assert_ne!(
            fingerprint(&one),
            fingerprint(&json!({"id": 2, "request_id": "k"}))
        );
    }
}
