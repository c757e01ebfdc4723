//! The boxed future type shared by tools, policies and setup steps.

use std::{future::Future, pin::Pin};

/// A boxed, `Send` future: what tool handlers return once erased.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
