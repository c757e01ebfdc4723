//! What a tool can do with the request it is serving: report progress, send log messages
//! to the client, notice cancellation, and reach the client for anything else (sampling,
//! elicitation) through rmcp's peer.
//!
//! A tool asks for it with a `#[call]` parameter:
//!
//! ```
//! use fusion_runtime::{Call, prelude::*};
//!
//! /// Import rows, reporting progress.
//! #[mcp_tool]
//! async fn import(#[call] call: &Call, rows: u32) -> String {
//!     for done in 0..rows {
//!         if call.is_cancelled() {
//!             return format!("stopped after {done} rows");
//!         }
//!         call.progress(f64::from(done), Some(f64::from(rows)), None).await;
//!     }
//!     format!("imported {rows} rows")
//! }
//! # let _ = Server::builder("import", "0").tool(import).build();
//! ```

//!
//! Its questions to the client ([`Call::ask`], [`Call::elicit`], ...) are in `ask.rs`.

pub(crate) mod ask;
pub(crate) mod client;
mod handle;
pub(crate) mod progress;

pub use ask::{Ask, ClientRequestError, Elicitation, ElicitationAction, Root};
pub use handle::{Call, LogLevel};
