//! Example servers shared by the runnable examples and the integration tests.
//!
//! The tests drive exactly the tools the examples serve, so what a user runs is what CI
//! checks.

pub mod cancel_safety;
pub mod faults;
pub mod inventory;
