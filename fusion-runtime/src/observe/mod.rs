//! What the server tells the people who run it: the call log and redaction (`log.rs`),
//! and the metrics per tool (`metrics.rs`). Both are public as `fusion_runtime::log` and
//! `fusion_runtime::metrics`.

pub mod log;
pub mod metrics;
