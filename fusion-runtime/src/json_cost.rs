//! What a JSON value kept in memory costs, for the stores that bound what they keep by
//! bytes (idempotency results, tasks): estimated from the value itself, without writing it.

use serde_json::Value;

/// About what `value` takes as JSON text: its strings and keys, plus a few bytes per
/// value. Walks with its own stack, so a deep value cannot overflow the thread's.
pub(crate) fn json_bytes(value: &Value) -> usize {
    let mut total = 0_usize;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        total += match value {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 24,
            Value::String(text) => text.len() + 2,
            Value::Array(items) => {
                pending.extend(items);
                2 + items.len()
            }
            Value::Object(entries) => {
                pending.extend(entries.values());
                2 + entries.keys().map(|key| key.len() + 4).sum::<usize>()
            }
        };
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bytes_counts_text_and_survives_depth() {
        let value = serde_json::json!({"text": "x".repeat(1_000), "list": [1, 2, 3]});
        let bytes = json_bytes(&value);
        assert!((1_000..1_200).contains(&bytes), "{bytes}");
        let mut deep = Value::Null;
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        assert!(json_bytes(&deep) > 100_000);
        // Dropping a value this deep recurses in serde_json itself: leak it instead.
        std::mem::forget(deep);
    }
}
