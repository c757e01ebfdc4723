//! Strict argument decoding: every problem of a call at once, each with the field's path,
//! what was expected, what was received and how to fix it.
//!
//! The tool's input schema is compiled once, at registration, into a [`Validator`]
//! (`compile.rs`, over the nodes of `node.rs`). A call is decoded by serde first
//! (`arguments.rs`; the fast path: a valid call costs one `Deserialize`); when serde refuses,
//! or when the schema declares constraints serde does not check, the walker (`walk/`)
//! checks the arguments against the schema and collects every problem as an [`ArgIssue`]
//! (`issue.rs`). What the schema declares, the runtime enforces. The server's [`Limits`]
//! (`limits.rs`) are checked before any of it; numbers are judged by the literals the
//! client wrote (`literal.rs`, `number.rs`), strings by the formats of `format.rs`. The
//! words of each problem are in `failure/wording/args.rs`.

mod arguments;
mod compile;
mod format;
mod limits;
pub(crate) mod literal;
mod node;
pub(crate) mod number;
mod walk;

pub(crate) use crate::failure::issue::issue_json;
pub use crate::failure::issue::{ArgIssue, IssueCode};
pub(crate) use arguments::{Input, decode_map};
pub use compile::Validator;
pub use limits::Limits;
pub(crate) use literal::NumberLiterals;
