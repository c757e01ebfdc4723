//! The request state of multi-round calls (2026-07-28, SEP-2322): the answers a handler
//! read in earlier rounds, sealed with HMAC-SHA256 by rmcp's `RequestStateCodec` and
//! bound to the method, the tool or prompt, its arguments and the caller, so that a client can neither forge an
//! answer, nor replay one round's state against another call, nor hand it to another
//! caller. It expires after [`STATE_TTL`].
//!
//! The key is drawn from the operating system when the server is built; replicas behind a
//! load balancer share one with
//! [`ServerBuilder::request_state_key`](crate::ServerBuilder::request_state_key).

use std::{collections::BTreeMap, time::Duration};

use rmcp::model::{ErrorData, RequestStateCodec, SealOptions};
use serde_json::Value;

/// How long a round's state stays valid.
pub const STATE_TTL: Duration = Duration::from_secs(600);

/// Seals and opens request states.
#[derive(Clone, Debug)]
pub(crate) struct Sealer {
    codec: RequestStateCodec,
}

impl Sealer {
    /// A sealer with a fresh random key from the operating system.
    pub(crate) fn random() -> Self {
        let mut key = [0_u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // No entropy source: the process cannot keep states tamper-proof, and must not
            // pretend to. Refusing every state (a key nobody can match) is not possible
            // with a fixed key, so fall back to the clock and the address space, and say so.
            tracing::error!(
                target: "fusion::protocol",
                "the operating system gave no random bytes; request states are signed with a weak key"
            );
            let seed = format!("{:?}{:p}", std::time::SystemTime::now(), &key);
            for (byte, source) in key.iter_mut().zip(seed.bytes().cycle()) {
                *byte ^= source;
            }
        }
        Self {
            codec: RequestStateCodec::new_unchecked(key.to_vec()),
        }
    }

    /// A sealer with the given key (shared by replicas).
    pub(crate) fn with_key(key: [u8; 32]) -> Self {
        Self {
            codec: RequestStateCodec::new_unchecked(key.to_vec()),
        }
    }

    /// The state carrying `answers`, bound to `binding`.
    pub(crate) fn seal(&self, answers: &BTreeMap<String, Value>, binding: &[u8]) -> String {
        let payload = serde_json::to_vec(answers).unwrap_or_default();
        self.codec.seal_with(
            &payload,
            &SealOptions::new().associated_data(binding).ttl(STATE_TTL),
        )
    }

    /// The answers in a state the client echoed, if it is one this server sealed for the
    /// same binding and it has not expired; one error for every way it is not (the
    /// details are logged, not told).
    pub(crate) fn open(
        &self,
        state: &str,
        binding: &[u8],
    ) -> Result<BTreeMap<String, Value>, ErrorData> {
        self.codec
            .open_json_with(state, binding)
            .map_err(|error| {
                tracing::warn!(target: "fusion::protocol", %error, "a request state was refused");
                ErrorData::invalid_params(
                    "requestState failed verification: it was altered, belongs to another call, or expired; call the tool again without it",
                    None,
                )
            })
    }
}

/// What a state is bound to: the method (`tools/call`, `prompts/get`), the tool or
/// prompt, its arguments (keys sorted at every depth) and the caller's subject.
pub(crate) fn binding(method: &str, name: &str, args: &Value, subject: Option<&str>) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(method.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(name.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(canonical(args).to_string().as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(subject.unwrap_or("").as_bytes());
    bytes
}

/// `value` with every object's keys in order, so that two clients' spellings of the same
/// arguments bind the same.
fn canonical(value: &Value) -> Value {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_sealed_state_opens_for_the_same_call_only() {
        let sealer = Sealer::random();
        let mut answers = BTreeMap::new();
        answers.insert("name".to_owned(), json!({"action": "accept"}));
        let bound = binding(
            "tools/call",
            "greet",
            &json!({"b": 1, "a": 2}),
            Some("alice"),
        );
        let state = sealer.seal(&answers, &bound);
        let reordered = binding(
            "tools/call",
            "greet",
            &json!({"a": 2, "b": 1}),
            Some("alice"),
        );
        assert_eq!(sealer.open(&state, &reordered).ok(), Some(answers));
        let other_args = binding(
            "tools/call",
            "greet",
            &json!({"a": 3, "b": 1}),
            Some("alice"),
        );
        assert!(sealer.open(&state, &other_args).is_err());
        let other_caller = binding("tools/call", "greet", &json!({"a": 2, "b": 1}), Some("bob"));
        assert!(sealer.open(&state, &other_caller).is_err());
        // A tool's state does not open for a prompt of the same name and arguments.
        let prompt = binding(
            "prompts/get",
            "greet",
            &json!({"a": 2, "b": 1}),
            Some("alice"),
        );
        assert!(sealer.open(&state, &prompt).is_err());
        let mut tampered = state.clone();
        tampered.push('x');
        assert!(sealer.open(&tampered, &bound).is_err());
        assert!(Sealer::random().open(&state, &bound).is_err());
    }

    #[test]
    fn replicas_with_one_key_open_each_other_s_states() {
        let bound = binding("tools/call", "t", &json!({}), None);
        let state = Sealer::with_key([7; 32]).seal(&BTreeMap::new(), &bound);
        assert!(Sealer::with_key([7; 32]).open(&state, &bound).is_ok());
        assert!(Sealer::with_key([8; 32]).open(&state, &bound).is_err());
    }
}
