//! What a tester shares with the calls it makes: the faults armed for its tools, the call
//! log's events of its calls, and which tools its calls reached. The pipeline reaches it
//! through the call ([`Call::watch`](crate::call::Call)); a server without a tester never
//! has one.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use serde_json::Value;

use super::fault::{Fault, FaultKind};

/// The state of one tester and its [`as_caller`](crate::testing::Tester::as_caller) copies.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    faults: Mutex<Vec<Armed>>,
    events: Mutex<Vec<Value>>,
    /// The registry indexes of the tools (and actions) a call resolved to.
    reached: Mutex<BTreeSet<usize>>,
}

/// A fault waiting for its tool's next runs.
#[derive(Debug)]
struct Armed {
    tool: String,
    /// `None`: any action of a group named `tool`, or the ungrouped tool `tool`.
    action: Option<String>,
    fault: Fault,
}

impl Armed {
    fn fits(&self, tool: &Tool<'_>) -> bool {
        match (tool.group, &self.action) {
            (Some(group), Some(action)) => {
                group == self.tool && tool.action == Some(action.as_str())
            }
            (Some(group), None) => group == self.tool,
            (None, None) => tool.name == self.tool,
            (None, Some(_)) => false,
        }
    }
}

/// The names a run's tool goes by (`ToolSpec`'s): its own, and its group and action if
/// it is an action of a grouped tool.
pub(crate) struct Tool<'a> {
    pub(crate) name: &'a str,
    pub(crate) group: Option<&'a str>,
    pub(crate) action: Option<&'a str>,
}

/// A lock that a panicking test thread cannot make unusable for the next assertion.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn arm(&self, tool: &str, action: Option<&str>, fault: Fault) {
        if fault.times == 0 {
            return;
        }
        lock(&self.faults).push(Armed {
            tool: tool.to_owned(),
            action: action.map(str::to_owned),
            fault,
        });
    }

    /// The fault that takes the place of this run of the tool `spec` describes, if one is
    /// armed for it: the first armed, in the order they were injected. Counts the run.
    fn take(&self, tool: &Tool<'_>) -> Option<FaultKind> {
        let mut faults = lock(&self.faults);
        let index = faults.iter().position(|armed| armed.fits(tool))?;
        let armed = &mut faults[index];
        armed.fault.times -= 1;
        let kind = armed.fault.kind.clone();
        if armed.fault.times == 0 {
            faults.remove(index);
        }
        Some(kind)
    }

    pub(crate) fn events(&self) -> Vec<Value> {
        lock(&self.events).clone()
    }

    pub(crate) fn reach(&self, index: usize) {
        lock(&self.reached).insert(index);
    }

    pub(crate) fn reached(&self) -> BTreeSet<usize> {
        lock(&self.reached).clone()
    }
}

/// What the pipeline sees of the tester through one call: the tester's [`Shared`] state,
/// and this call's own event of the call log.
#[derive(Debug)]
pub(crate) struct Watch {
    shared: Arc<Shared>,
    event: Mutex<Option<Value>>,
}

impl Watch {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            event: Mutex::new(None),
        }
    }

    /// The watch of a cached tool's shared run (`pipeline/cache.rs`): the same tester, so
    /// its faults fire in the run, and no event of its own (the calls that joined the run
    /// each log theirs).
    pub(crate) fn for_shared_run(&self) -> Self {
        Self::new(Arc::clone(&self.shared))
    }

    /// The fault to run in place of `tool`'s handler this time, if any.
    pub(crate) fn fault(&self, tool: &Tool<'_>) -> Option<FaultKind> {
        self.shared.take(tool)
    }

    /// The call log's event of this call, as the log writes it.
    pub(crate) fn logged(&self, event: Value) {
        lock(&self.shared.events).push(event.clone());
        *lock(&self.event) = Some(event);
    }

    /// This call's event, once the call ended.
    pub(crate) fn event(&self) -> Option<Value> {
        lock(&self.event).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(
        name: &'static str,
        group: Option<&'static str>,
        action: Option<&'static str>,
    ) -> Tool<'static> {
        Tool {
            name,
            group,
            action,
        }
    }

    #[test]
    fn faults_fire_in_the_order_injected_each_for_its_times() {
        let shared = Shared::default();
        shared.arm("quote", None, Fault::transient("503").times(2));
        shared.arm("quote", None, Fault::internal("bug"));
        let quote = spec("quote", None, None);
        let kinds: Vec<Option<FaultKind>> = (0..4).map(|_| shared.take(&quote)).collect();
        assert_eq!(
            kinds,
            [
                Some(Fault::transient("503").kind),
                Some(Fault::transient("503").kind),
                Some(Fault::internal("bug").kind),
                None
            ]
        );
    }

    #[test]
    fn a_fault_fits_its_tool_its_action_or_any_action_of_its_group() {
        let shared = Shared::default();
        let add = spec("add_note", Some("notes"), Some("add"));
        let list = spec("list_notes", Some("notes"), Some("list"));
        let plain = spec("notes", None, None);
        shared.arm("notes", Some("add"), Fault::panic("add"));
        assert_eq!(shared.take(&list), None);
        assert_eq!(shared.take(&plain), None);
        assert_eq!(shared.take(&add), Some(Fault::panic("add").kind));
        shared.arm("notes", None, Fault::panic("any"));
        assert_eq!(shared.take(&list), Some(Fault::panic("any").kind));
    }

    #[test]
    fn a_fault_of_zero_times_is_never_armed() {
        let shared = Shared::default();
        shared.arm("quote", None, Fault::fatal("never").times(0));
        assert_eq!(shared.take(&spec("quote", None, None)), None);
    }

    #[test]
    fn retry_after_is_for_transient_faults_only() {
        let wait = std::time::Duration::from_secs(3);
        let transient = Fault::transient("429").retry_after(wait);
        assert_eq!(
            transient.kind,
            FaultKind::Transient {
                message: "429".into(),
                retry_after: Some(wait)
            }
        );
        assert_eq!(Fault::internal("x").retry_after(wait), Fault::internal("x"));
    }
}
