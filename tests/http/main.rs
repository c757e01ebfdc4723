//! Streamable HTTP, as a process and mounted in axum: the transport, its guard, authorization and tasks.
//!
//! One module a file; `tests/README.md` says what each holds.

#[path = "../support/mod.rs"]
mod support;

mod client_requests;
mod http;
mod mount;
mod oauth;
mod otel;
mod report_task;
mod visibility;
