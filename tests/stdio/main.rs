//! The example servers as processes over stdio: their command lines, starts, lifecycle, robustness and logs.
//!
//! One module a file; `tests/README.md` says what each holds.

#[path = "../support/mod.rs"]
mod support;

mod banner;
mod call_log_format;
mod cancel_storm;
mod cli;
mod current_client;
mod lifecycle;
mod otel;
mod robustness;
mod soak;
mod startup;
