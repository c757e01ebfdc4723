//! How calls fail: why ([`FailureKind`]), the [`Failure`] that carries it, the class of a
//! user's error ([`Classify`], [`Classification`]) and the same failure as programs read it
//! under `_meta["fusion/failure"]` ([`FailureEntry`]).
//!
//! Inside: the tool (and action) a message names (`Target`), the class of a user's error (`classify.rs`), the
//! panic boundary (`panic.rs`), the words of every failure (`wording/`) and the same failure
//! for programs, `_meta["fusion/failure"]` (`entry.rs`), sit below.
//!
//! Every failure becomes a `CallToolResult` with `isError: true` (a warning excepted); the
//! wording is rendered in one place, `wording/`. Internal and fatal failures (a handler's
//! unclassified error, a panic) are masked: the model gets a generic message with a
//! correlation id, the log gets the details.

pub(crate) mod classify;
pub(crate) mod entry;
pub(crate) mod issue;
pub(crate) mod model;
pub(crate) mod panic;
pub(crate) mod tool_failure;
pub(crate) mod wording;

pub use classify::{
    Classification, Classify, ErrorClass, ErrorCode, classify_dyn, register as register_classified,
};
pub use entry::FailureEntry;

pub use model::{Failure, FailureKind};
pub(crate) use model::{Target, outcome};
