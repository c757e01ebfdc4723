//! The panic boundary and correlation ids.
//!
//! A handler that panics must not take the server (or the other calls) with it, and the
//! client must still get its one answer: the pipeline catches the unwind, turns it into an
//! internal failure, and logs the panic message under a correlation id that the model's
//! message repeats, so a person can find the details.

use std::{
    any::Any,
    hash::{BuildHasher, RandomState},
    sync::OnceLock,
};

/// The text of a panic payload (`panic!("...")` carries a `&str` or a `String`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

/// A short id unique to this call: a per-process random prefix (so ids from two runs of
/// the server do not collide in one log store) and the call's sequence number.
pub(crate) fn correlation_id(call_number: u64) -> String {
    static PREFIX: OnceLock<u32> = OnceLock::new();
    // `RandomState` is seeded randomly per process: no extra dependency for a nonce.
    let prefix = PREFIX.get_or_init(|| RandomState::new().hash_one(std::process::id()) as u32);
    format!("{prefix:08x}-{call_number}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_payloads_become_text() {
        let payload = std::panic::catch_unwind(|| panic!("boom {}", 1)).expect_err("it panics");
        assert_eq!(panic_message(payload.as_ref()), "boom 1");
        let payload =
            std::panic::catch_unwind(|| std::panic::panic_any(7_u8)).expect_err("it panics");
        assert_eq!(
            panic_message(payload.as_ref()),
            "a panic with a non-text payload"
        );
    }

    #[test]
    fn correlation_ids_differ_per_call() {
        assert_ne!(correlation_id(1), correlation_id(2));
        assert!(correlation_id(3).ends_with("-3"));
    }
}
