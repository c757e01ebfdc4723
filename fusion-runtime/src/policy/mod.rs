//! The policies a handler runs under ([`Policy`]: timeout, [`RetryPolicy`],
//! [`CircuitPolicy`], [`Reconnect`]), set with `#[mcp_tool(..)]`'s keys or on a
//! [`ToolDefinition`](crate::tool::ToolDefinition), apart from the mechanism that applies them
//! (`pipeline/attempts.rs`): retry with backoff (here), the circuit breaker (`circuit.rs`),
//! the reconnect hook (`reconnect.rs`), the timeout and their defaults.

pub(crate) mod cache;
mod circuit;
pub(crate) mod reconnect;

pub use circuit::CircuitPolicy;
pub(crate) use circuit::{Admission, Circuit, Transition};
pub use reconnect::Reconnect;

use std::time::Duration;

// tokio's clock, not std's: the same readings outside tests, and a paused clock in
// tests drives the breaker deterministically.

/// How a transient failure is retried: up to `attempts` runs in all, waiting
/// `backoff`, then twice that, and so on up to `max_backoff`, each wait shortened by a
/// random part of up to half (jitter) so that many clients do not retry in step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many runs in all (1 = no retry).
    pub attempts: u32,
    /// The first wait.
    pub backoff: Duration,
    /// The longest wait.
    pub max_backoff: Duration,
}

impl RetryPolicy {
    /// No retries.
    pub const NONE: Self = Self {
        attempts: 1,
        backoff: Duration::ZERO,
        max_backoff: Duration::ZERO,
    };

    /// The first wait of `#[mcp_tool(retry(..))]` without `backoff`.
    pub const DEFAULT_BACKOFF: Duration = Duration::from_millis(100);

    /// The longest wait when none is named: 30 s.
    pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(30);

    /// `attempts` runs in all, starting with a `backoff` wait, capped at
    /// [`DEFAULT_MAX_BACKOFF`](Self::DEFAULT_MAX_BACKOFF).
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::policy::RetryPolicy;
    ///
    /// let retry = RetryPolicy::new(3, Duration::from_millis(50));
    /// assert_eq!(retry.max_backoff, RetryPolicy::DEFAULT_MAX_BACKOFF);
    /// ```
    pub const fn new(attempts: u32, backoff: Duration) -> Self {
        Self {
            attempts,
            backoff,
            max_backoff: Self::DEFAULT_MAX_BACKOFF,
        }
    }

    /// What `#[mcp_tool(retry(..))]` generates: the parts the attribute names, the
    /// defaults for the rest (the runtime owns the defaults; the macro writes none).
    #[doc(hidden)]
    pub const fn from_attribute(
        attempts: u32,
        backoff: Option<Duration>,
        max_backoff: Option<Duration>,
    ) -> Self {
        Self {
            attempts,
            backoff: match backoff {
                Some(backoff) => backoff,
                None => Self::DEFAULT_BACKOFF,
            },
            max_backoff: match max_backoff {
                Some(max_backoff) => max_backoff,
                None => Self::DEFAULT_MAX_BACKOFF,
            },
        }
    }

    /// The wait before run number `next` (2 for the first retry).
    pub fn delay(&self, next: u32) -> Duration {
        let doublings = next.saturating_sub(2).min(20);
        let full = self
            .backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff);
        // "Equal jitter": half fixed, half random.
        let half = full / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// The deadline of one run of a handler when neither the tool (`#[mcp_tool(timeout =
/// "..")]`) nor the server ([`ServerBuilder::timeout`](crate::ServerBuilder::timeout))
/// sets one: 5 minutes.
///
/// Without it a handler that never returns stays in flight for good: over Streamable
/// HTTP a client that leaves does not cancel its call (the protocol lets it resume the
/// stream), so hung calls would pile up and hold a SIGTERM drain. Five minutes is
/// generous: five times the 60 s the official TypeScript SDK waits by default, so no
/// client still waits for the answer when it fires. A tool that legitimately runs
/// longer says so with its own `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a call whose client asked for progress may run without any before fusion sends
/// one itself, when neither the tool (`#[mcp_tool(heartbeat = "..")]`) nor the server
/// ([`ServerBuilder::heartbeat`](crate::ServerBuilder::heartbeat)) sets it: 10 s, well
/// inside the 60 s after which hosts give up on a silent call.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(10);

/// The recovery policy of a tool: each part set on the tool wins over the server's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// The deadline of one run of the handler.
    pub timeout: Option<Duration>,
    /// Retries of transient failures.
    pub retry: Option<RetryPolicy>,
    /// The circuit breaker.
    pub circuit: Option<CircuitPolicy>,
    /// How long the call may run without progress before a heartbeat is sent (`ZERO`:
    /// never); [`DEFAULT_HEARTBEAT`] when neither the tool nor the server sets it.
    pub heartbeat: Option<Duration>,
    /// How long a call may run before a client that declared the tasks extension is
    /// answered with a task, the work going on under it (`None`: never). See
    /// [`ServerBuilder::task_after`](crate::ServerBuilder::task_after).
    pub task_after: Option<Duration>,
}

impl Policy {
    /// This policy with the unset parts taken from `defaults`.
    pub fn or(self, defaults: Policy) -> Policy {
        Policy {
            timeout: self.timeout.or(defaults.timeout),
            retry: self.retry.or(defaults.retry),
            circuit: self.circuit.or(defaults.circuit),
            heartbeat: self.heartbeat.or(defaults.heartbeat),
            task_after: self.task_after.or(defaults.task_after),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_fills_in_what_an_attribute_leaves_out() {
        let retry = RetryPolicy::from_attribute(3, None, None);
        assert_eq!(
            (retry.attempts, retry.backoff, retry.max_backoff),
            (
                3,
                RetryPolicy::DEFAULT_BACKOFF,
                RetryPolicy::DEFAULT_MAX_BACKOFF
            )
        );
        let named = RetryPolicy::from_attribute(2, Some(Duration::from_millis(5)), None);
        assert_eq!(named.backoff, Duration::from_millis(5));
        let circuit = CircuitPolicy::from_attribute(5, None, Some(Duration::from_secs(1)));
        assert_eq!(
            (circuit.failures, circuit.window, circuit.cooldown),
            (5, CircuitPolicy::DEFAULT_WINDOW, Duration::from_secs(1))
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let policy = RetryPolicy {
            attempts: 10,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        };
        for _ in 0..50 {
            let first = policy.delay(2);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let second = policy.delay(3);
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200));
            let capped = policy.delay(9);
            assert!(capped <= Duration::from_millis(350));
        }
    }

    #[test]
    fn the_circuit_opens_after_consecutive_failures_and_probes_once() {
        let circuit = Circuit::new(CircuitPolicy {
            failures: 2,
            window: Duration::from_secs(60),
            cooldown: Duration::ZERO,
        });
        assert!(matches!(circuit.admit(), Admission::Run));
        assert_eq!(circuit.failure(), None);
        assert_eq!(circuit.failure(), Some(Transition::Opened));
        let probe = circuit.admit();
        assert!(matches!(probe, Admission::Probe(_)));
        assert!(matches!(circuit.admit(), Admission::Reject(_)));
        assert_eq!(circuit.success(), Some(Transition::Closed));
        drop(probe);
        assert!(matches!(circuit.admit(), Admission::Run));
    }

    #[test]
    fn a_dropped_probe_lets_the_next_call_probe() {
        let circuit = Circuit::new(CircuitPolicy {
            failures: 1,
            window: Duration::from_secs(60),
            cooldown: Duration::ZERO,
        });
        assert_eq!(circuit.failure(), Some(Transition::Opened));
        let first = circuit.admit();
        assert!(matches!(first, Admission::Probe(_)));
        assert!(matches!(circuit.admit(), Admission::Reject(_)));
        drop(first);
        let second = circuit.admit();
        assert!(matches!(second, Admission::Probe(_)), "the slot came back");
        // The probe fails, a newer probe starts; the older guard's drop must not give
        // away the newer probe's slot.
        assert_eq!(circuit.failure(), Some(Transition::Opened));
        let third = circuit.admit();
        assert!(matches!(third, Admission::Probe(_)));
        drop(second);
        assert!(matches!(circuit.admit(), Admission::Reject(_)));
        drop(third);
        assert!(matches!(circuit.admit(), Admission::Probe(_)));
    }
}
