//! Faults a test injects in place of a tool's handler, and what the pipeline sees of the
//! tester through a call (`Call::watch`): the faults to fire, where a call's log event goes,
//! which tools were reached. Below the pipeline and the call, so that both can consult it;
//! the tester (`testing/`) is built on top, and names [`Fault`] publicly.

pub(crate) mod fault;
pub(crate) mod watch;
