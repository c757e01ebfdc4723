//! The request state of multi-round calls (2026-07-28, SEP-2322): the answers a handler
//! read in earlier rounds, sealed with HMAC-SHA256 by rmcp's `RequestStateCodec` and
//! bound to the method, the tool or prompt, its arguments and the caller, so that a client can neither forge an
//! answer, nor replay one round's state against another call, nor hand it to another
//! caller. It expires after [`STATE_TTL`].
//!
//! The key is drawn from the operating system when the server is built; replicas behind a
//! load balancer share one with
//! [`ServerBuilder::request_state_key`](crate::ServerBuilder::request_state_key), and roll it
//! with [`ServerBuilder::request_state_keys`](crate::ServerBuilder::request_state_keys): a
//! state is sealed with the current key and tagged with its id (rmcp's keyring, `rs2`), and
//! opened with any listed key, so that a new key reaches the fleet without failing the
//! rounds in progress. A key's id is derived from the key (a SHA-256 prefix), never the key.

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

    /// A sealer with the given key (shared by replicas). It seals as a server with one key
    /// always did (untagged, `rs1`), so that replicas of an older build still open its
    /// states during a rolling upgrade, and opens states sealed with this key in either
    /// form (a replica already given `request_state_keys(key, ..)` tags them).
    pub(crate) fn with_key(key: [u8; 32]) -> Self {
        let id = key_id(&key);
        let codec = RequestStateCodec::new_with_keyring(id.clone(), [(id.clone(), key.to_vec())])
            .and_then(|codec| codec.with_rs1_signing(&id));
        Self {
            // Only an invalid keyring fails, and one 32-byte key with a hex id is valid.
            codec: codec.unwrap_or_else(|_| RequestStateCodec::new_unchecked(key.to_vec())),
        }
    }

    /// A sealer that seals with `current`, tagged with its id, and opens states sealed
    /// with `current` or any of `previous`, tagged or not (a key being rolled out, or one
    /// being retired).
    pub(crate) fn with_keys(current: [u8; 32], previous: &[[u8; 32]]) -> Self {
        let active = key_id(&current);
        let mut ring: Vec<(String, Vec<u8>)> = vec![(active.clone(), current.to_vec())];
        for key in previous {
            let id = key_id(key);
            // The same key listed twice is one key.
            if !ring.iter().any(|(known, _)| *known == id) {
                ring.push((id, key.to_vec()));
            }
        }
        let ids: Vec<String> = ring.iter().map(|(id, _)| id.clone()).collect();
        let codec = ids.iter().try_fold(
            RequestStateCodec::new_with_keyring(active, ring),
            |codec, id| codec.map(|codec| codec.with_rs1_fallback(id)),
        );
        match codec.and_then(|codec| codec) {
            Ok(codec) => Self { codec },
            // Unreachable for distinct 32-byte keys with hex ids; sealing with the current
            // key alone is the safe side (older states are refused, never forged).
            Err(_) => Self::with_key(current),
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

/// The id a key's states are tagged with: the first 8 bytes of the key's SHA-256, in hex.
/// It names the key without revealing it.
fn key_id(key: &[u8; 32]) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(key);
    digest[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// What a state is bound to: the method (`tools/call`, `prompts/get`), the tool or
/// prompt, its arguments (keys sorted at every depth) and the caller's subject.
pub(crate) fn binding(method: &str, name: &str, args: &Value, subject: Option<&str>) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(method.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(name.as_bytes());
    bytes.push(0);
    crate::canonical_json::write_canonical(args, &mut bytes);
    bytes.push(0);
    bytes.extend_from_slice(subject.unwrap_or("").as_bytes());
    bytes
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

    #[test]
    fn a_fleet_rolls_a_new_key_without_failing_the_rounds_in_progress() {
        let bound = binding("tools/call", "t", &json!({"a": 1}), Some("alice"));
        let mut answers = BTreeMap::new();
        answers.insert("q".to_owned(), json!({"action": "accept"}));
        let (old, new) = ([1; 32], [2; 32]);
        // A round sealed by a replica of the old fleet (one key)...
        let before = Sealer::with_key(old).seal(&answers, &bound);
        // ...opens on a replica rolled to the new key that still lists the old one.
        let rolled = Sealer::with_keys(new, &[old]);
        assert_eq!(rolled.open(&before, &bound).ok(), Some(answers.clone()));
        // Its own states are sealed with the new key: replicas not yet rolled (one key,
        // the old) refuse them, replicas listing the new key open them.
        let after = rolled.seal(&answers, &bound);
        assert_eq!(
            Sealer::with_keys(new, &[]).open(&after, &bound).ok(),
            Some(answers.clone())
        );
        assert_eq!(
            Sealer::with_key(new).open(&after, &bound).ok(),
            Some(answers.clone()),
            "a one-key replica opens tagged states of its key"
        );
        assert!(Sealer::with_key(old).open(&after, &bound).is_err());
        // Once the old key is dropped, its states are refused.
        assert!(Sealer::with_keys(new, &[]).open(&before, &bound).is_err());
        // Tampered, or bound to another call: refused with any ring.
        let mut tampered = after.clone();
        tampered.pop();
        assert!(rolled.open(&tampered, &bound).is_err());
        let other = binding("tools/call", "t", &json!({"a": 2}), Some("alice"));
        assert!(rolled.open(&after, &other).is_err());
        // A key listed twice, or as both current and previous, is one key.
        let doubled = Sealer::with_keys(new, &[new, old, old]);
        assert!(doubled.open(&before, &bound).is_ok());
        assert!(doubled.open(&after, &bound).is_ok());
    }

    #[test]
    fn key_ids_name_keys_without_revealing_them() {
        let id = key_id(&[9; 32]);
        assert_eq!(id.len(), 16);
        assert_ne!(id, key_id(&[10; 32]));
        assert!(!id.contains("0909"), "not the key's bytes");
    }
}
