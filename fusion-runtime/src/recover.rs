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

pub(crate) use policy::{Admission, Circuit, Transition};
pub use policy::{CircuitPolicy, DEFAULT_TIMEOUT, Policy, Reconnect, RetryPolicy};

/// Reconnects a tool's resource once for all concurrent callers (what
/// `#[mcp_tool(reconnect = field)]` generates a call to).
#[doc(hidden)]
pub fn reconnect<R: Reconnect>(
    resource: &R,
) -> crate::future::BoxFuture<'_, (bool, Result<(), String>)> {
    Box::pin(policy::reconnect_once(resource))
}

mod policy {
    use std::{
        collections::HashMap,
        fmt::Display,
        future::Future,
        sync::{
            Arc, Mutex, OnceLock,
            atomic::{AtomicU64, Ordering},
        },
        time::Duration,
    };

    // tokio's clock, not std's: the same readings outside tests, and a paused clock in
    // tests drives the breaker deterministically.
    use tokio::time::Instant;

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

        /// `attempts` runs in all, starting with a `backoff` wait, capped at 30 s.
        pub const fn new(attempts: u32, backoff: Duration) -> Self {
            Self {
                attempts,
                backoff,
                max_backoff: Duration::from_secs(30),
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

    /// When a tool's circuit opens: after `failures` consecutive transient failures within
    /// `window`, calls fail fast for `cooldown`; then one probe call decides.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct CircuitPolicy {
        /// Consecutive transient failures that open the circuit.
        pub failures: u32,
        /// The window they must fall within.
        pub window: Duration,
        /// How long the circuit stays open before a probe.
        pub cooldown: Duration,
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

    /// The recovery policy of a tool: each part set on the tool wins over the server's.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Policy {
        /// The deadline of one run of the handler.
        pub timeout: Option<Duration>,
        /// Retries of transient failures.
        pub retry: Option<RetryPolicy>,
        /// The circuit breaker.
        pub circuit: Option<CircuitPolicy>,
    }

    impl Policy {
        /// This policy with the unset parts taken from `defaults`.
        pub fn or(self, defaults: Policy) -> Policy {
            Policy {
                timeout: self.timeout.or(defaults.timeout),
                retry: self.retry.or(defaults.retry),
                circuit: self.circuit.or(defaults.circuit),
            }
        }
    }

    /// A resource a tool depends on (a database pool, an HTTP client) that can be
    /// re-established after a transient failure, instead of restarting the server.
    ///
    /// Name it in `#[mcp_tool(reconnect = field)]`, where `field` is a field of the
    /// tool's context. Concurrent callers share one reconnect.
    ///
    /// ```
    /// use fusion_runtime::Reconnect;
    ///
    /// struct Upstream { url: String }
    ///
    /// impl Reconnect for Upstream {
    ///     type Error = std::io::Error;
    ///     async fn reconnect(&self) -> Result<(), std::io::Error> {
    ///         // re-open connections to self.url here
    ///         Ok(())
    ///     }
    /// }
    /// ```
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be reconnected: it does not implement `Reconnect`",
        label = "named by `reconnect = ..`",
        note = "implement `fusion_runtime::Reconnect` for the resource's type (an `async fn reconnect(&self)` that re-opens it), or name another field of the context"
    )]
    pub trait Reconnect: Send + Sync {
        /// Why a reconnect failed.
        type Error: Display;
        /// Re-establishes the resource.
        fn reconnect(&self) -> impl Future<Output = Result<(), Self::Error>> + Send;

        /// What identifies the resource for single-flight: its address. A handle (an
        /// `Arc`) reports its target's, so clones of one context share a reconnect.
        #[doc(hidden)]
        fn resource_identity(&self) -> usize {
            std::ptr::from_ref(self).cast::<()>() as usize
        }
    }

    impl<T: Reconnect> Reconnect for Arc<T> {
        type Error = T::Error;
        fn reconnect(&self) -> impl Future<Output = Result<(), Self::Error>> + Send {
            T::reconnect(self)
        }
        fn resource_identity(&self) -> usize {
            T::resource_identity(self)
        }
    }

    /// One gate per resource (keyed by its address), shared by the callers that reconnect
    /// it at the same time.
    #[derive(Default)]
    struct Gate {
        /// Held while a reconnect runs.
        running: tokio::sync::Mutex<()>,
        /// Completed reconnects: a caller that saw a generation before waiting, and finds a
        /// newer one once it holds the gate, skips its own reconnect.
        generation: AtomicU64,
    }

    type Gates = Mutex<HashMap<usize, Arc<Gate>>>;

    fn gates() -> &'static Gates {
        static GATES: OnceLock<Gates> = OnceLock::new();
        GATES.get_or_init(Mutex::default)
    }

    /// A caller's hold on a resource's gate. Its `Drop` removes the gate from the registry
    /// once no other caller holds it, however the caller ends (finished, or its future
    /// dropped mid-reconnect), so the registry only holds resources being reconnected.
    struct GateHold {
        key: usize,
        gate: Arc<Gate>,
    }

    impl GateHold {
        fn take(key: usize) -> Option<Self> {
            let mut map = gates().lock().ok()?;
            let gate = Arc::clone(map.entry(key).or_default());
            Some(Self { key, gate })
        }
    }

    impl Drop for GateHold {
        fn drop(&mut self) {
            if let Ok(mut map) = gates().lock()
                // The registry's reference and ours: nobody else is waiting.
                && Arc::strong_count(&self.gate) <= 2
            {
                map.remove(&self.key);
            }
        }
    }

    /// Reconnects `resource` unless another caller did while this one waited for the gate.
    /// Returns whether this call ran the reconnect, and its error.
    ///
    /// Cancel safety: dropped while waiting, it leaves nothing behind; dropped during the
    /// reconnect, the gate's lock is released unchanged (the generation only moves when a
    /// reconnect completes), so the next caller reconnects.
    pub(crate) async fn reconnect_once<R: Reconnect>(resource: &R) -> (bool, Result<(), String>) {
        let Some(hold) = GateHold::take(resource.resource_identity()) else {
            return (false, Err("the reconnect registry is poisoned".into()));
        };
        let seen = hold.gate.generation.load(Ordering::Acquire);
        // Await: waits for another caller's reconnect; holds only `hold` (released on drop).
        let running = hold.gate.running.lock().await;
        if hold.gate.generation.load(Ordering::Acquire) != seen {
            return (false, Ok(()));
        }
        // Await: the user's reconnect; a drop here releases `running` with the generation
        // unchanged, so the next caller runs its own.
        let result = resource
            .reconnect()
            .await
            .map_err(|error| error.to_string());
        hold.gate.generation.fetch_add(1, Ordering::Release);
        drop(running);
        (true, result)
    }

    /// The state of one tool's circuit breaker.
    #[derive(Debug)]
    pub(crate) struct Circuit {
        policy: CircuitPolicy,
        state: Mutex<State>,
        /// Numbers the probes, so a late guard never releases a newer probe's slot.
        probes: AtomicU64,
    }

    #[derive(Debug, Clone, Copy)]
    enum State {
        Closed {
            failures: u32,
            since: Option<Instant>,
        },
        Open {
            until: Instant,
        },
        /// One probe is running; `probe` tells it apart from later ones.
        HalfOpen {
            probe: u64,
        },
    }

    /// What the breaker says about a call about to start.
    pub(crate) enum Admission<'a> {
        /// Run it.
        Run,
        /// Run it as the probe of a half-open circuit, holding the guard until its outcome is
        /// reported.
        Probe(ProbeGuard<'a>),
        /// Fail fast; the circuit opens again for the given time.
        Reject(Duration),
    }

    /// The slot of a half-open circuit's one probe. If the probe ends without a verdict (its
    /// future dropped, the client cancelled), `Drop` gives the slot back: the circuit counts
    /// it as neither success nor failure, and the next call probes again. Without it, a
    /// cancelled probe would leave the circuit refusing every call for good.
    #[must_use = "dropping the guard gives up the probe"]
    pub(crate) struct ProbeGuard<'a> {
        circuit: &'a Circuit,
        probe: u64,
    }

    impl Drop for ProbeGuard<'_> {
        fn drop(&mut self) {
            if let Ok(mut state) = self.circuit.state.lock()
                && matches!(*state, State::HalfOpen { probe } if probe == self.probe)
            {
                *state = State::Open {
                    until: Instant::now(),
                };
            }
        }
    }

    /// A change of state worth logging.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Transition {
        Opened,
        Closed,
    }

    impl Circuit {
        pub(crate) fn new(policy: CircuitPolicy) -> Self {
            Self {
                policy,
                state: Mutex::new(State::Closed {
                    failures: 0,
                    since: None,
                }),
                probes: AtomicU64::new(0),
            }
        }

        pub(crate) fn admit(&self) -> Admission<'_> {
            let Ok(mut state) = self.state.lock() else {
                return Admission::Run;
            };
            match *state {
                State::Closed { .. } => Admission::Run,
                State::Open { until } => {
                    let now = Instant::now();
                    if now >= until {
                        let probe = self.probes.fetch_add(1, Ordering::Relaxed);
                        *state = State::HalfOpen { probe };
                        Admission::Probe(ProbeGuard {
                            circuit: self,
                            probe,
                        })
                    } else {
                        Admission::Reject(until - now)
                    }
                }
                // One probe at a time: the others fail fast until it reports.
                State::HalfOpen { .. } => Admission::Reject(self.policy.cooldown),
            }
        }

        pub(crate) fn success(&self) -> Option<Transition> {
            let mut state = self.state.lock().ok()?;
            let was_closed = matches!(*state, State::Closed { .. });
            *state = State::Closed {
                failures: 0,
                since: None,
            };
            (!was_closed).then_some(Transition::Closed)
        }

        pub(crate) fn failure(&self) -> Option<Transition> {
            let mut state = self.state.lock().ok()?;
            let now = Instant::now();
            match *state {
                State::Closed { failures, since } => {
                    let in_window =
                        since.is_some_and(|start| now.duration_since(start) <= self.policy.window);
                    let (failures, since) = if in_window {
                        (failures + 1, since)
                    } else {
                        (1, Some(now))
                    };
                    if failures >= self.policy.failures {
                        *state = State::Open {
                            until: now + self.policy.cooldown,
                        };
                        Some(Transition::Opened)
                    } else {
                        *state = State::Closed { failures, since };
                        None
                    }
                }
                State::HalfOpen { .. } | State::Open { .. } => {
                    *state = State::Open {
                        until: now + self.policy.cooldown,
                    };
                    Some(Transition::Opened)
                }
            }
        }

        /// Whether calls are failing fast now.
        pub(crate) fn is_open(&self) -> bool {
            self.state.lock().is_ok_and(
                |state| matches!(*state, State::Open { until } if until > Instant::now()),
            )
        }

        /// Releases a half-open circuit whose probe ended without a verdict (a failure
        /// that says nothing about the upstream, such as invalid arguments).
        pub(crate) fn neutral(&self) {
            if let Ok(mut state) = self.state.lock()
                && matches!(*state, State::HalfOpen { .. })
            {
                *state = State::Open {
                    until: Instant::now(),
                };
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

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
                assert!(
                    second >= Duration::from_millis(100) && second <= Duration::from_millis(200)
                );
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
}
