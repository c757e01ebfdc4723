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

/// `value`'s canonical text (what `canonical(value).to_string()` spells), written to `out`
/// without building the sorted copy first: a request state's binding is spelled for every
/// 2026-07-28 call (`rounds/state.rs`), most of which never ask.
pub(crate) fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<(&String, &Value)> = map.iter().collect();
            keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (at, (key, value)) in keys.into_iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                write_scalar(key, out);
                out.push(b':');
                write_canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        other => write_scalar(other, out),
    }
}

/// A string or scalar as serde_json's compact writer spells it.
fn write_scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Writing a string, a number, a bool or null to a `Vec` cannot fail.
    let _ = serde_json::to_writer(out, value);
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

    #[test]
    fn the_written_text_is_the_canonical_value_spelled() {
        let values = [
            json!(null),
            json!({}),
            json!([]),
            json!({"b": [1, 2.5, -3e40, {"z": null, "a": true}], "a": "x\"y\\\u{1}é😀\n", "": {}}),
            serde_json::from_str::<Value>(
                r#"{"é":1,"e":2,"E":3,"ab":4,"a":5,"n":18446744073709551615,"f":1.0}"#,
            )
            .expect("JSON"),
        ];
        for value in values {
            let mut written = Vec::new();
            write_canonical(&value, &mut written);
            assert_eq!(
                String::from_utf8(written).expect("UTF-8"),
                canonical(&value).to_string(),
                "{value}"
            );
        }
    }
}
