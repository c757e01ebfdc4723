//! The circuit breaker: its policy, and the state of one tool's circuit (closed, open,
//! half-open with one probe owned by a guard).

use std::{
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

// tokio's clock, not std's: the same readings outside tests, and a paused clock in
// tests drives the breaker deterministically.
use tokio::time::Instant;

/// When a tool's circuit opens: after `failures` consecutive transient failures within
/// `window`, calls fail fast for `cooldown`; then one probe call decides.
///
/// [`CircuitPolicy::NONE`] (`failures` 0) is no breaker at all: where a default would put
/// one (an upstream's [`DEFAULT_POLICY`](crate::upstream::DEFAULT_POLICY)), it takes it
/// off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitPolicy {
    /// Consecutive transient failures that open the circuit (0: it never opens).
    pub failures: u32,
    /// The window they must fall within.
    pub window: Duration,
    /// How long the circuit stays open before a probe.
    pub cooldown: Duration,
}

impl CircuitPolicy {
    /// No breaker: calls are never failed fast, whatever fails.
    ///
    /// ```
    /// use fusion_runtime::policy::{CircuitPolicy, Policy};
    ///
    /// // Over an upstream's default policy: its timeout and retries, and no breaker.
    /// let no_breaker = Policy { circuit: Some(CircuitPolicy::NONE), ..Default::default() };
    /// # let _ = no_breaker;
    /// ```
    pub const NONE: Self = Self {
        failures: 0,
        window: Duration::ZERO,
        cooldown: Duration::ZERO,
    };

    /// The breaker this policy asks for: none for [`NONE`](Self::NONE) (`failures` 0).
    pub(crate) fn breaker(self) -> Option<Circuit> {
        (self.failures > 0).then(|| Circuit::new(self))
    }

    /// The window of `#[mcp_tool(circuit(..))]` without `window`.
    pub const DEFAULT_WINDOW: Duration = Duration::from_secs(30);

    /// The open time of `#[mcp_tool(circuit(..))]` without `cooldown`.
    pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(10);

    /// What `#[mcp_tool(circuit(..))]` generates: the parts the attribute names, the
    /// defaults for the rest (the runtime owns the defaults; the macro writes none).
    #[doc(hidden)]
    pub const fn from_attribute(
        failures: u32,
        window: Option<Duration>,
        cooldown: Option<Duration>,
    ) -> Self {
        Self {
            failures,
            window: match window {
                Some(window) => window,
                None => Self::DEFAULT_WINDOW,
            },
            cooldown: match cooldown {
                Some(cooldown) => cooldown,
                None => Self::DEFAULT_COOLDOWN,
            },
        }
    }
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
    /// Whether calls run as usual: neither open nor waiting on a probe (a mounted
    /// upstream's tools are listed only then).
    #[cfg_attr(not(feature = "upstream"), allow(dead_code))]
    pub(crate) fn is_closed(&self) -> bool {
        self.state
            .lock()
            .is_ok_and(|state| matches!(*state, State::Closed { .. }))
    }

    pub(crate) fn is_open(&self) -> bool {
        self.state
            .lock()
            .is_ok_and(|state| matches!(*state, State::Open { until } if until > Instant::now()))
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
