//! `cargo fusion` driven as a user drives it: the real binary, against the real demo
//! server (`examples/demo`), which it builds with cargo.

mod support;

mod call;
mod install;
mod lock;
mod tools;
