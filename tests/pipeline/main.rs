//! In memory, through the real pipeline (no transport): what a call goes through, from arguments to the result and its `_meta`.
//!
//! One module a file; `tests/README.md` says what each holds.

#[path = "../support/mod.rs"]
mod support;

mod caching;
mod cancel_safety;
mod contract;
mod failure_meta;
mod group_hints;
mod grouped_schema;
mod heartbeat;
mod hoisted_schema;
mod identity;
mod numbers;
mod observability;
mod output_limits;
mod pipeline;
mod recovery;
mod redaction;
mod resources_prompts;
mod schema;
mod seed;
mod serialize;
mod setup_context;
mod side_effects;
mod testkit;
mod tool_search;
mod validation;
mod visibility;
