//! Multi-round calls: what a call asks the client when it cannot send a request of its own
//! (under the 2026-07-28 revision, or inside a task), kept between rounds.
//!
//! - `questions.rs`: the questions a handler asks and the answers it reads, by key;
//! - `state.rs`: the sealed request state that carries the answers from one round to the next.
//!
//! The protocol's side (a round opened from a request, ended with `input_required`) is
//! `protocol/input_required.rs`; the tool's side is [`Call`](crate::Call)'s questions
//! (`call/ask.rs`).

pub(crate) mod questions;
pub(crate) mod state;
