//! A zero-sized probe for autoref specialization: `#[mcp_tool]`'s generated code and the
//! `Classify` derive pick an impl by method resolution on `&Probe<T>` vs `Probe<T>` (see
//! [`output::ladder`](crate::tool::output::ladder) and [`classify::ladder`](crate::failure::classify::ladder)).

use std::marker::PhantomData;

/// A zero-sized stand-in for a value of type `T`.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// A probe for `T`.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
    /// A probe for the type of `_value`.
    pub const fn of(_value: &T) -> Self {
        Self(PhantomData)
    }
}

// Derives would demand `T: Clone`; a probe holds no `T`.
impl<T> Clone for Probe<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Probe<T> {}

impl<T> Default for Probe<T> {
    fn default() -> Self {
        Self::new()
    }
}
