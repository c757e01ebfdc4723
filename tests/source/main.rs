//! The source and the build rather than a server: compile-time diagnostics, the runtime's layout, the docs' key tables, the guide's links and compiled blocks, and the examples built outside the workspace.
//!
//! One module a file; `tests/README.md` says what each holds.

#[path = "../support/mod.rs"]
mod support;

mod docs_keys;
mod guide;
mod layout;
mod outside_crate;
mod ui;
