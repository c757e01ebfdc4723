//! Many replicas: shared Redis state, tasks taken over when their runner dies, nginx in front.
//!
//! One module a file; `tests/README.md` says what each holds.

#[path = "../support/mod.rs"]
mod support;

mod caching;
mod changes;
mod chaos;
mod cluster;
mod fencing;
mod fleet;
mod scale_out;
mod serialize;
mod surface;
mod task_after;
mod task_fleet;
