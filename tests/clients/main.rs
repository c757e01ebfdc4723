//! Real clients against real servers: the official Python SDK (the gateway too), the MCP Inspector CLI, the conformance suite, and the script that finds them Node.
//!
//! One module a file; `tests/README.md` says what each holds.

#[path = "../support/mod.rs"]
mod support;

mod conformance;
mod gateway;
mod inspector;
mod node_env;
mod python_client;
mod typescript_client;
