//! The keys fusion writes under `_meta`, in results and in requests: what a client that
//! reads results programmatically looks for.
//!
//! ```
//! assert_eq!(fusion_runtime::meta::FAILURE_META_KEY, "fusion/failure");
//! ```

/// The `_meta` key of a failed (or warning) call's [`FailureEntry`](crate::failure::FailureEntry).
pub const FAILURE_META_KEY: &str = "fusion/failure";

/// The `_meta` key under which invalid-argument results list their problems, for
/// programmatic clients: `[{path, code, expected, received, hint}]`.
pub const ISSUES_META_KEY: &str = "fusion/issues";

/// The `_meta` key of a `tools/call` request under which the transports record the number
/// literals of its arguments that a JSON value cannot hold exactly: an object from JSON
/// pointer (`/a`, `/items/0/price`) to the literal's text. Set by fusion's transports
/// only; a value a client sends is removed.
pub const NUMBER_LITERALS_META_KEY: &str = "fusion/number_literals";
