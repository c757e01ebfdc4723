//! The panic boundary and correlation ids.
//!
//! A handler that panics must not take the server (or the other calls) with it, and the
//! client must still get its one answer: the pipeline catches the unwind, turns it into an
//! internal failure, and logs the panic message under a correlation id that the model's
//! message repeats, so a person can find the details.
//!
//! That needs unwinding. A binary built with `panic = "abort"` (a Cargo profile's
//! `panic` setting) has no unwind to catch: a tool's panic ends the whole process, and
//! every call in flight with it. Serving such a binary says so on stderr, once, at start-up
//! ([`warn_if_panics_abort`]).

use std::{
    any::Any,
    future::Future,
    hash::{BuildHasher, RandomState},
    panic::AssertUnwindSafe,
    sync::OnceLock,
};

use futures_util::FutureExt as _;

/// Says loudly, once a process, that panics cannot be contained when this build aborts
/// on panic (`cfg(panic = "abort")`); nothing otherwise. Called as a transport starts.
pub(crate) fn warn_if_panics_abort() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    if let Some(warning) = abort_warning(cfg!(panic = "abort")) {
        WARNED.call_once(|| {
            eprintln!("{warning}");
            tracing::error!(target: "fusion::server", panic_strategy = "abort", "{warning}");
        });
    }
}

/// The warning for a build whose panics abort.
fn abort_warning(aborts: bool) -> Option<&'static str> {
    aborts.then_some(
        "fusion: WARNING: this binary is built with panic = \"abort\": a tool that panics \
         ends the whole process, with every call in flight, instead of answering isError. \
         Build with panic = \"unwind\" (Cargo's default) for fusion to contain panics.",
    )
}

/// Runs `future` behind the panic boundary: a panic becomes `Err` with its message.
pub(crate) async fn catch<F: Future>(future: F) -> Result<F::Output, String> {
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|payload| panic_message(payload.as_ref()))
}

/// Runs `f` behind the panic boundary: a panic becomes `Err` with its message.
pub(crate) fn catch_sync<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(payload.as_ref()))
}

/// A fresh reference for a failed resource read or prompt render, logged with the details
/// and quoted to the client.
pub(crate) fn next_reference() -> String {
    static REFERENCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    correlation_id(REFERENCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

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

thread_local! {
    /// Where the last panic on this thread happened, as the panic hook saw it.
    static PANIC_LOCATION: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Installs (once per process) a panic hook that remembers where each panic happened, so
/// the log event of a crashed call can say `src/tools.rs:42:9`. The previous hook still
/// runs (by default it prints the panic to stderr).
pub(crate) fn install_panic_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(location) = info.location() {
                let text = format!(
                    "{}:{}:{}",
                    location.file(),
                    location.line(),
                    location.column()
                );
                PANIC_LOCATION.with(|slot| *slot.borrow_mut() = Some(text));
            }
            previous(info);
        }));
    });
}

/// The location of the panic just caught on this thread, if the hook saw it.
pub(crate) fn take_panic_location() -> Option<String> {
    PANIC_LOCATION.with(|slot| slot.borrow_mut().take())
}

/// A call's correlation id, formatted only when something shows it (a masked failure's
/// message, a log event that is enabled): most calls never need the text.
pub(crate) struct CorrelationId {
    number: u64,
    text: OnceLock<String>,
}

impl CorrelationId {
    pub(crate) fn new(number: u64) -> Self {
        Self {
            number,
            text: OnceLock::new(),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        self.text.get_or_init(|| correlation_id(self.number))
    }

    /// The call's number, from which the text is made.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }
}

/// A short id unique to this call: a per-process random prefix (so ids from two runs of
/// the server do not collide in one log store) and the call's sequence number.
pub(crate) fn correlation_id(call_number: u64) -> String {
    CorrelationText::new(call_number).as_str().to_owned()
}

/// A correlation id's text on the stack: the log's writer thread writes one for every
/// call, and an allocation each was a sixth of its work.
pub(crate) struct CorrelationText {
    /// The prefix (8 hex digits and `-`) and at most 20 decimal digits.
    bytes: [u8; PREFIX_LEN + 20],
    len: usize,
}

/// `0123abcd-`.
const PREFIX_LEN: usize = 9;

impl CorrelationText {
    pub(crate) fn new(call_number: u64) -> Self {
        static PREFIX: OnceLock<[u8; PREFIX_LEN]> = OnceLock::new();
        let prefix = PREFIX.get_or_init(|| {
            // `RandomState` is seeded randomly per process: no extra dependency for a nonce.
            let nonce = RandomState::new().hash_one(std::process::id()) as u32;
            let mut prefix = [b'-'; PREFIX_LEN];
            prefix[..8].copy_from_slice(format!("{nonce:08x}").as_bytes());
            prefix
        });
        let mut bytes = [0; PREFIX_LEN + 20];
        bytes[..PREFIX_LEN].copy_from_slice(prefix);
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(call_number).as_bytes();
        let len = PREFIX_LEN + digits.len();
        bytes[PREFIX_LEN..len].copy_from_slice(digits);
        Self { bytes, len }
    }

    pub(crate) fn as_str(&self) -> &str {
        // ASCII by construction.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// The text's bytes, ASCII: hex digits, `-` and decimal digits.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_build_that_aborts_on_panic_is_warned_about() {
        assert_eq!(abort_warning(false), None);
        let warning = abort_warning(true).expect("a warning");
        assert!(warning.contains("panic = \"abort\"") && warning.contains("isError"));
        // This test binary unwinds (the test harness needs it): no warning here.
        assert_eq!(abort_warning(cfg!(panic = "abort")), None);
    }

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
        let (prefix, number) = correlation_id(u64::MAX)
            .split_once('-')
            .map(|(prefix, number)| (prefix.to_owned(), number.to_owned()))
            .expect("a dash");
        assert_eq!(number, u64::MAX.to_string());
        assert!(prefix.len() == 8 && prefix.bytes().all(|byte| byte.is_ascii_hexdigit()));
        assert_eq!(correlation_id(0), format!("{prefix}-0"));
    }
}
