//! Middleware: code that runs before a handler, server-wide, per group and per tool (in
//! that order). It may enrich the call's context, or refuse the call with a classified
//! error that becomes an `isError` result like any other. A middleware may also hold a
//! guard for the duration of the call (a concurrency permit), released when the handler
//! ends.
//!
//! ```
//! use fusion_runtime::{middleware, prelude::*};
//!
//! #[derive(Clone, Default)]
//! struct Ctx {
//!     role: String,
//! }
//!
//! impl middleware::HasRoles for Ctx {
//!     fn has_role(&self, role: &str) -> bool {
//!         self.role == role
//!     }
//! }
//!
//! /// Delete everything.
//! #[mcp_tool(destructive)]
//! async fn wipe(#[ctx] ctx: &Ctx) -> String {
//!     format!("wiped by {}", ctx.role)
//! }
//!
//! let server = Server::builder("admin", "0")
//!     .context(Ctx::default)
//!     .tool(wipe)
//!     .tool_middleware("wipe", middleware::require_role("admin"))
//!     .build();
//! # let _ = server;
//! ```

mod access;
mod base;
mod concurrency;
pub(crate) mod rate;

pub(crate) use self::access::missing_scopes;
pub use self::{
    access::{HasRoles, require_role, require_scopes},
    base::{CallInfo, Guard, Middleware, Verdict, from_fn, refuse},
    concurrency::{concurrency_limit, concurrency_limit_per_caller},
    rate::{rate_limit, rate_limit_per_caller},
};
