//! # fusion: declarative, fault-tolerant MCP tools
//!
//! Write each tool as a plain `async fn`; `#[mcp_tool]` turns it into a tool any MCP
//! client can discover and call. The runtime generates nothing by hand-written string: the
//! input schema comes from the parameter types, arguments are validated strictly (every
//! problem at once, with the field's path, what was expected and what came), a panicking
//! handler becomes an `isError` result with a correlation id, and every call gets exactly
//! one answer.
//!
//! ```
//! use fusion_runtime::prelude::*;
//!
//! /// Add two integers.
//! #[mcp_tool]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # async fn serve() -> std::process::ExitCode {
//! Server::builder("calc", "1.0.0").tool(add).serve_stdio().await
//! # }
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // The function stays callable as written:
//! assert_eq!(add(2, 3).await, 5);
//! # });
//! ```
//!
//! See [`mcp_tool`] for the attribute's options, [`Server`] for the builder, and
//! [`testing::Tester`] for calling tools in memory. The guide takes a reader from a first
//! tool to a fleet: `guide/` in the repository, an mdBook (`mdbook build guide`; its chapters
//! are listed in `guide/src/SUMMARY.md`), whose every Rust block is a doc test of this crate.
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs` on nightly: feature-gated items say which feature they need.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod apps;
mod autoref;
pub mod cache;
pub mod call;
mod canonical_json;
pub mod changes;
pub mod contract;
pub mod exit;
pub mod failure;
mod future;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
// Every chapter of the guide, and the README, as doc tests.
#[cfg(doctest)]
mod guide;
pub mod idempotency;
pub mod identity;
mod inject;
mod json_cost;
pub mod limits;
pub mod lock;
pub mod log;
pub mod meta;
pub mod metrics;
pub mod middleware;
pub(crate) mod pipeline;
pub mod policy;
mod protocol;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
mod rounds;
pub mod search;
mod setup;
mod suggest;
pub mod tasks;
pub mod testing;
#[cfg(any(feature = "oauth", feature = "otel", feature = "upstream"))]
mod tls;
pub mod tool;
mod transport;
#[cfg(feature = "upstream")]
#[cfg_attr(docsrs, doc(cfg(feature = "upstream")))]
pub mod upstream;
pub mod validate;

// `prompt` and `resource` live in `setup/`, beside the catalog that holds what they
// describe, each in the folder of its name.
pub use setup::{prompt, resource};

/// axum, as the HTTP transport uses it: mount [`Server::router`] with the same version.
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use axum;
pub use call::Call;
pub use failure::classify::Classify;
pub use future::BoxFuture;
pub use setup::builder::ServerBuilder;
pub use setup::error::{BuildError, BuildWarning, StartupError};
pub use setup::server::Server;
pub use tool::{
    Tool,
    output::{IntoToolOutput, ToolOutput},
};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use transport::{HttpConfigError, HttpOptions};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use transport::{JwtAlgorithm, OAuth};
pub use transport::{StdioOptions, Transport};

#[doc = include_str!("../docs/mcp_tool.md")]
pub use fusion_macros::mcp_tool;

/// Prepares a struct or enum used in tool arguments or results:
/// - its fields may carry `#[arg(..)]` constraints, with the same vocabulary and meaning as
///   on tool parameters (each becomes a JSON Schema keyword that the runtime enforces);
/// - its `Serialize`, `Deserialize` and `JsonSchema` derives use the serde and schemars that
///   fusion re-exports, so a crate needs neither as a dependency;
/// - a field marked `#[redact]` keeps its value in the program (a presenter sees it) but is
///   masked in every result the server sends: `"[redacted]"` for text, `null` for an
///   `Option` (see [`tool::Redact`]). A field of a type that cannot hold the mask does not
///   compile.
///
/// Its fields take the keys of `#[arg(..)]` listed under [`mcp_tool`](macro@mcp_tool#every-key-of-arg).
///
/// Put it before the `#[derive(..)]`. The prelude's derives need it: without it they
/// report, in one error, that `#[mcp_type]` is missing. A crate that depends on serde and
/// schemars itself may import their derives by name instead and leave it out.
///
/// ```
/// use fusion_runtime::prelude::*;
///
/// #[mcp_type]
/// #[derive(Deserialize, JsonSchema)]
/// struct Filter {
///     /// At most 50 rows.
///     #[arg(min = 1, max = 50, default = 10)]
///     limit: u32,
///     #[arg(pattern = "^[a-z_]+$")]
///     column: String,
/// }
///
/// /// Query rows.
/// #[mcp_tool]
/// async fn query(filters: Vec<Filter>) -> usize {
///     filters.len()
/// }
/// # let _ = Server::builder("db", "1").tool(query).build();
/// ```
pub use fusion_macros::mcp_type;

/// Derives [`Classify`](trait@Classify) for an error enum or struct; see the trait for the attributes.
pub use fusion_macros::Classify;

/// What most servers need: `use fusion_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Classify, IntoToolOutput, Server, ToolOutput, mcp_tool, mcp_type,
        testing::{TestResult, Tester},
    };
    // The derive macros of these names are fusion's: under `#[mcp_type]` they become
    // serde's and schemars' own, and bare they report that `#[mcp_type]` is missing rather
    // than that the crate lacks a serde dependency. The traits come from the glob below,
    // whose macros of the same names the explicit import shadows.
    pub use fusion_macros::{Deserialize, JsonSchema, Serialize};
    #[doc(no_inline)]
    pub use traits::*;

    mod traits {
        pub use schemars::JsonSchema;
        pub use serde::{Deserialize, Serialize};
    }
}

/// Re-exports for users who name these crates through fusion (`rmcp` for its model types:
/// content blocks, prompt messages).
pub use {rmcp, schemars, serde, serde_json};

/// A block of a tool result or a prompt message: text, image, audio, an embedded resource.
pub use rmcp::model::ContentBlock;

/// What `#[mcp_tool]`'s generated code names. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::{
        __classify_source as classify_source, __output_schema as output_schema,
        __render_outcome as render_outcome, __render_presented as render_presented,
        cache::{CachePolicy, CacheScope},
        call::Call,
        failure::classify::{
            Classification, Classify, ErrorClass, ErrorCode, ladder as classify_ladder,
        },
        future::BoxFuture,
        policy::{CircuitPolicy, Policy, RetryPolicy, reconnect::reconnect},
        tool::constraint::{
            Constraint, Literal, apply as constrain, custom_check, kinds, run_custom_checks,
        },
        tool::output::{Outcome, attach_presentation, ladder},
        tool::present::present,
        tool::redact::{schema as redacted_schema, serialize as serialize_redacted},
        tool::{Annotations, Tool, ToolDefinition, ToolSpec},
    };
    pub use schemars;
    pub use serde;
    pub use serde_json;

    /// Boxes a handler future.
    pub fn boxed<'a, F>(future: F) -> BoxFuture<'a, F::Output>
    where
        F: core::future::Future + Send + 'a,
    {
        Box::pin(future)
    }

    /// Boxes a future for the direct-call function pointer of a tool.
    pub fn boxed_call<'a, T, F>(
        future: F,
    ) -> core::pin::Pin<Box<dyn core::future::Future<Output = T> + Send + 'a>>
    where
        F: core::future::Future<Output = T> + Send + 'a,
    {
        Box::pin(future)
    }

    /// The boxed future type of a tool's direct-call function pointer.
    pub type CallFuture<'a, T> =
        core::pin::Pin<Box<dyn core::future::Future<Output = T> + Send + 'a>>;

    pub use crate::tool::argument::{
        Arg, ArgCheck, ArgCheckFallback, ArgType, NotAnArgument, ToolArgument, assert_argument,
    };
    pub use crate::tool::fields::{ArgField, ArgSource, FieldArgs, field_schema};

    /// The definition of a tool whose arguments are decoded field by field.
    pub fn field_definition<C, A, F>(
        spec: ToolSpec,
        output_schema: Option<schemars::Schema>,
        run: F,
    ) -> ToolDefinition<C>
    where
        C: Send + Sync + 'static,
        A: FieldArgs,
        F: for<'a> Fn(&'a C, &'a Call, A) -> BoxFuture<'a, Outcome> + Send + Sync + 'static,
    {
        ToolDefinition::from_fields(spec, output_schema, run)
    }
}
