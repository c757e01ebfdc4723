//! The keys fusion writes under `_meta`, in results and in requests: what a client that
//! reads results programmatically looks for.
//!
//! ```
//! assert_eq!(fusion_runtime::meta::FAILURE_META_KEY, "fusion/failure");
//! ```

/// The `_meta` key of a failed (or warning) call's [`FailureEntry`](crate::failure::FailureEntry).
pub const FAILURE_META_KEY: &str = "fusion/failure";

/// The `_meta` key of the draft standard failure (SEP-3313,
/// `io.modelcontextprotocol/toolFailure`): the same failure as [`FAILURE_META_KEY`], in the
/// SEP's shape, on error results of a server that turns it on
/// ([`ServerBuilder::draft_tool_failure`](crate::ServerBuilder::draft_tool_failure)).
///
/// ```
/// assert_eq!(
///     fusion_runtime::meta::TOOL_FAILURE_META_KEY,
///     "io.modelcontextprotocol/toolFailure"
/// );
/// ```
pub const TOOL_FAILURE_META_KEY: &str = "io.modelcontextprotocol/toolFailure";

/// The `_meta` key under which invalid-argument results list their problems, for
/// programmatic clients: `[{path, code, expected, received, hint}]`.
pub const ISSUES_META_KEY: &str = "fusion/issues";

/// The `_meta` key of a `tools/call` request that names the request's idempotency key,
/// for hosts and gateways that set one themselves: a non-empty string. It keys any tool's
/// call as its `idempotency_key` argument does (a repeat returns the first result, the
/// same key with other arguments is a `conflict`); the argument wins when a tool has one
/// and the call sets it. Over HTTP the `Idempotency-Key` header does the same, after this.
///
/// ```
/// assert_eq!(fusion_runtime::meta::IDEMPOTENCY_KEY_META_KEY, "fusion/idempotencyKey");
/// ```
pub const IDEMPOTENCY_KEY_META_KEY: &str = "fusion/idempotencyKey";
