//! `cargo fusion` driven as a user drives it: the real binary, against the real demo
//! server (`examples/demo`), which it builds with cargo, and against the crates
//! `cargo fusion new` creates.

mod support;

mod call;
#[cfg(unix)]
mod dev;
mod install;
mod lock;
mod new;
mod tools;
