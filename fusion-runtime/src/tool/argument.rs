//! What a tool parameter's type must be ([`ToolArgument`]), and how `#[mcp_tool]` keeps a
//! type that is not one to a single error (issue 21).
//!
//! The generated argument struct derives `Deserialize` and `JsonSchema`. Had its fields the
//! parameters' own types, a type without those traits would fail inside both derives too
//! (serde alone reports it three times), after our own error. So each field's type is
//! chosen at compile time: the parameter's type when it is a [`ToolArgument`], else
//! [`NotAnArgument`], which derives happily. The choice is a constant
//! ([`ArgCheck::OK`], an inherent constant when the bounds hold, the trait
//! [`ArgCheckFallback`]'s otherwise: inherent items win only when their bounds hold) that
//! picks an impl of [`ArgType`]. The only error left is the one `assert_argument` reports,
//! on the parameter's type, with [`ToolArgument`]'s message.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// A parameter type must be decodable from JSON and describable as JSON Schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it must implement `Deserialize` and `JsonSchema`",
    label = "this parameter's type is decoded from the call's JSON arguments",
    note = "put `#[mcp_type]` and `#[derive(Deserialize, JsonSchema)]` on the type (all three are in `fusion_runtime::prelude`), or use a type that has them (`String`, numbers, `Vec`, `Option`, ...)"
)]
pub trait ToolArgument {}

// `do_not_recommend`: the error names `ToolArgument` (one error, our message), not each of
// its bounds in turn.
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + JsonSchema + Send + 'static> ToolArgument for T {}

/// Checks, at the parameter's type, that it can be a tool parameter.
pub const fn assert_argument<T: ToolArgument + ?Sized>() {}

/// `ArgCheck::<T>::OK`: whether `T` can be a tool parameter, as a constant.
pub struct ArgCheck<T: ?Sized>(PhantomData<T>);

impl<T: DeserializeOwned + JsonSchema + Send + 'static> ArgCheck<T> {
    /// `T` is a tool parameter type.
    pub const OK: bool = true;
}

/// `ArgCheck::<T>::OK` for the types that are not tool parameters (found only when the
/// inherent constant's bounds do not hold).
pub trait ArgCheckFallback {
    /// `T` is not a tool parameter type.
    const OK: bool = false;
}

impl<T: ?Sized> ArgCheckFallback for ArgCheck<T> {}

/// A parameter's type and whether it is a [`ToolArgument`], for [`ArgType`].
pub struct Arg<T, const OK: bool>(PhantomData<T>);

/// The type of a parameter's field in the argument struct, and the way back to the
/// parameter.
pub trait ArgType {
    /// The field's type: the parameter's own, or [`NotAnArgument`].
    type Field;
    /// The parameter's type.
    type Param;
    /// The decoded field, as the parameter.
    fn param(field: Self::Field) -> Self::Param;
    /// A parameter's value (a default), as the field.
    fn field(param: Self::Param) -> Self::Field;
}

impl<T> ArgType for Arg<T, true> {
    type Field = T;
    type Param = T;
    fn param(field: T) -> T {
        field
    }
    fn field(param: T) -> T {
        param
    }
}

impl<T> ArgType for Arg<T, false> {
    type Field = NotAnArgument;
    type Param = T;
    fn param(field: NotAnArgument) -> T {
        match field {}
    }
    fn field(_: T) -> NotAnArgument {
        // Unreachable in a program that compiled: `assert_argument` refused this type.
        panic!("a parameter type that is not a tool argument was compiled")
    }
}

/// The stand-in field of a parameter whose type is not a [`ToolArgument`]: it has the
/// traits the argument struct derives, and no value (the program does not compile anyway).
#[derive(Debug, serde::Deserialize, JsonSchema)]
pub enum NotAnArgument {}
