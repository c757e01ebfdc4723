//! What a handler's success value becomes on the wire.
//!
//! - text types (`String`, `&'static str`, `Cow<'static, str>`, `Box<str>`) → one text block;
//! - `()` → a short text, "done" (MCP content is never empty);
//! - any other `Serialize + JsonSchema` type → `structuredContent`, a JSON text copy, and an
//!   output schema on the tool;
//! - a type implementing [`IntoToolOutput`] by hand → whatever it says.

use std::borrow::Cow;

use rmcp::model::ContentBlock;
use serde::Serialize;
use serde_json::Value;

use crate::failure::Failure;

/// The success of a tool call, before the server turns it into a `CallToolResult`.
#[derive(Clone, Debug)]
pub struct ToolOutput {
    pub(crate) content: Vec<ContentBlock>,
    pub(crate) structured: Option<Value>,
    pub(crate) data: Value,
    /// `data` is the first block's text, filled in once the result is final (after the
    /// output limit): a large text is then not held twice while the call is answered.
    pub(crate) data_is_text: bool,
    /// System rules, UI blocks and the agent limit, from the tool's presenter.
    pub(crate) presentation: Option<crate::tool::present::Presentation>,
}

impl ToolOutput {
    /// One text block. `data` in the tester is the text as a JSON string.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text.into())],
            structured: None,
            data: Value::Null,
            data_is_text: true,
            presentation: None,
        }
    }

    /// Structured content with a JSON text copy, from any serializable value. Its
    /// `#[redact]` fields are written as their masks (see [`Redact`](crate::tool::Redact)).
    ///
    /// # Errors
    /// Fails when the value cannot be represented as JSON (a map with non-string keys,
    /// a `Serialize` impl that errors); the server reports that as an internal error.
    pub fn structured<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        let value = {
            let _redacting = crate::tool::redact::Redacting::begin();
            serde_json::to_value(value)?
        };
        let text = serde_json::to_string(&value)?;
        Ok(Self {
            content: vec![ContentBlock::text(text)],
            structured: Some(value.clone()),
            data: value,
            data_is_text: false,
            presentation: None,
        })
    }

    /// Content blocks as given (images, audio, resources, several texts). Empty content is
    /// replaced by a short text at send time, because MCP clients read an empty result as
    /// a call that silently produced nothing.
    pub fn content(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            structured: None,
            data: Value::Null,
            data_is_text: false,
            presentation: None,
        }
    }

    /// Attaches a presentation (system rules, UI blocks, an agent limit).
    pub fn presented(mut self, presentation: crate::tool::present::Presentation) -> Self {
        self.presentation = Some(presentation);
        self
    }

    /// The content blocks.
    pub fn blocks(&self) -> &[ContentBlock] {
        &self.content
    }
}

/// Converts a handler's success value into a [`ToolOutput`].
///
/// Implemented for text types and `()`. Types that are `Serialize + JsonSchema` need no
/// impl: `#[mcp_tool]` renders them as structured content. Implement it to take over the
/// rendering of your own type.
///
/// ```
/// use fusion_runtime::{IntoToolOutput, ToolOutput};
///
/// struct Banner(&'static str);
///
/// impl IntoToolOutput for Banner {
///     fn into_tool_output(self) -> ToolOutput {
///         ToolOutput::text(format!("*** {} ***", self.0))
///     }
/// }
/// # let _ = Banner("hi").into_tool_output();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by an `#[mcp_tool]` function",
    label = "return a text type, `()`, or a type that derives `Serialize` and `JsonSchema`",
    note = "text types become one text block; `Serialize + JsonSchema` types become structured content; implement `IntoToolOutput` for anything else"
)]
pub trait IntoToolOutput {
    /// Renders the value.
    fn into_tool_output(self) -> ToolOutput;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolOutput {
        self
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for Cow<'static, str> {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for Box<str> {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for () {
    fn into_tool_output(self) -> ToolOutput {
        let mut output = ToolOutput::text("done");
        output.data = Value::Null;
        output.data_is_text = false;
        output
    }
}

impl IntoToolOutput for Vec<ContentBlock> {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::content(self)
    }
}

/// How one tool call ended, as the handler reported it.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The handler succeeded.
    Success(ToolOutput),
    /// The handler (or the pipeline around it) failed.
    Failure(Failure),
}

/// Compile-time selection of the rendering of a handler's return value.
///
/// `#[mcp_tool]` knows the return type only as tokens, and Rust has no specialization, so
/// the choice between "a `Result`" and "a plain value", and between "an
/// [`IntoToolOutput`] type", "a `Serialize + JsonSchema` type" and "anything else" (an
/// error on the return type), is made by method resolution on references of different depth
/// (autoref specialization): an impl on `&&Probe<T>` is found before one on `&Probe<T>`,
/// and that before one on `Probe<T>`. The generated code names the return
/// type, so the choice is made with the concrete type, never by its name.
#[doc(hidden)]
pub mod ladder {
    use std::convert::Infallible;

    use schemars::JsonSchema;
    use serde::Serialize;

    use super::{IntoToolOutput, Outcome, ToolOutput};
    use crate::failure::Failure;

    pub use crate::autoref::Probe;

    /// `Result<T, E>` splits into itself.
    pub trait SplitResult {
        /// The success type.
        type Ok;
        /// The error type.
        type Err;
        /// The value as a result.
        fn split(self, value: Result<Self::Ok, Self::Err>) -> Result<Self::Ok, Self::Err>;
        /// Probes for both halves.
        fn halves(self) -> (Probe<Self::Ok>, Probe<Self::Err>);
    }

    impl<T, E> SplitResult for &Probe<Result<T, E>> {
        type Ok = T;
        type Err = E;
        fn split(self, value: Result<T, E>) -> Result<T, E> {
            value
        }
        fn halves(self) -> (Probe<T>, Probe<E>) {
            (Probe::new(), Probe::new())
        }
    }

    /// Any other type is a success that cannot fail.
    pub trait SplitPlain {
        /// The success type.
        type Ok;
        /// The value as a result.
        fn split(self, value: Self::Ok) -> Result<Self::Ok, Infallible>;
        /// Probes for both halves.
        fn halves(self) -> (Probe<Self::Ok>, Probe<Infallible>);
    }

    impl<T> SplitPlain for Probe<T> {
        type Ok = T;
        fn split(self, value: T) -> Result<T, Infallible> {
            Ok(value)
        }
        fn halves(self) -> (Probe<T>, Probe<Infallible>) {
            (Probe::new(), Probe::new())
        }
    }

    /// Types with their own rendering come first.
    pub trait RenderOwn {
        /// The success type.
        type Value;
        /// Renders a success.
        fn render(self, value: Self::Value) -> Outcome;
        /// The output schema: none, the rendering is the type's own.
        fn output_schema(self) -> Option<schemars::Schema>;
    }

    impl<T: IntoToolOutput> RenderOwn for &&Probe<T> {
        type Value = T;
        fn render(self, value: T) -> Outcome {
            Outcome::Success(value.into_tool_output())
        }
        fn output_schema(self) -> Option<schemars::Schema> {
            None
        }
    }

    /// Then any `Serialize + JsonSchema` type, as structured content.
    pub trait RenderStructured {
        /// The success type.
        type Value;
        /// Renders a success.
        fn render(self, value: Self::Value) -> Outcome;
        /// The output schema of the type.
        fn output_schema(self) -> Option<schemars::Schema>;
    }

    impl<T: Serialize + JsonSchema> RenderStructured for &Probe<T> {
        type Value = T;
        fn render(self, value: T) -> Outcome {
            match ToolOutput::structured(&value) {
                Ok(output) => Outcome::Success(output),
                Err(error) => Outcome::Failure(Failure::internal_message(format!(
                    "the tool's result could not be serialized to JSON: {error}"
                ))),
            }
        }
        fn output_schema(self) -> Option<schemars::Schema> {
            Some(crate::tool::schema::output_schema::<T>())
        }
    }

    /// Last, any other type: not something a tool can return. Its `render` is never run
    /// (the program does not compile), and its `output_schema` is the one error the user
    /// reads, on the return type: [`ToolResult`]'s message, naming what is supported. Without
    /// this rung, both ladders would fail with rustc's "method exists but its trait bounds
    /// were not satisfied", once each, listing three traits.
    pub trait RenderUnsupported {
        /// The success type.
        type Value;
        /// Never called in a program that compiles.
        fn render(self, value: Self::Value) -> Outcome;
        /// Refused at compile time: `Self::Value` is not a [`ToolResult`].
        fn output_schema(self) -> Option<schemars::Schema>
        where
            Self::Value: ToolResult;
    }

    impl<T> RenderUnsupported for Probe<T> {
        type Value = T;
        fn render(self, _value: T) -> Outcome {
            Outcome::Failure(Failure::internal_message(
                "the tool's return type cannot be rendered",
            ))
        }
        fn output_schema(self) -> Option<schemars::Schema>
        where
            T: ToolResult,
        {
            None
        }
    }

    /// What a tool may return, named in the error for any other type. Nothing implements it:
    /// the supported types are found by the rungs above it, and only the others reach the
    /// bound that asks for it.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be returned by a tool",
        label = "a tool returns a type that implements `IntoToolOutput`, or `Serialize` and `JsonSchema`, or a `Result` of one",
        note = "return `String`, `()`, `ToolOutput` (or any `IntoToolOutput`), or a type with `#[mcp_type]` and `#[derive(Serialize, JsonSchema)]` (structured content), or `Result<T, E>` of one with an error type that implements `std::error::Error`"
    )]
    pub trait ToolResult {}

    /// A handler's error of a type that classifies itself.
    pub trait FailClassified {
        /// The error type.
        type Error;
        /// Converts the error.
        fn fail(self, error: Self::Error) -> Outcome;
        /// Accepts the error type (`output_schema!` asks, so that the error is reported once).
        fn check(self);
    }

    impl<E: crate::failure::classify::Classify + std::error::Error + 'static> FailClassified
        for &&Probe<E>
    {
        type Error = E;
        fn fail(self, error: E) -> Outcome {
            Outcome::Failure(Failure::classified(error.classification(), &error))
        }
        fn check(self) {}
    }

    /// Any other error (including `Box<dyn Error>` and `anyhow::Error`): its source chain
    /// is searched for a classified error.
    pub trait FailDynamic {
        /// The error type.
        type Error;
        /// Converts the error.
        fn fail(self, error: Self::Error) -> Outcome;
        /// Accepts the error type.
        fn check(self);
    }

    impl<E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>> FailDynamic for &Probe<E> {
        type Error = E;
        fn fail(self, error: E) -> Outcome {
            let boxed: Box<dyn std::error::Error + Send + Sync + 'static> = error.into();
            Outcome::Failure(Failure::from_error(boxed.as_ref()))
        }
        fn check(self) {}
    }

    /// Last, an error type that is not an error: its `fail` is never run (the program does
    /// not compile), and its `check` is the one error the user reads, on the return type
    /// (`output_schema!` calls it), as [`RenderUnsupported`] does for the success type.
    pub trait FailUnsupported {
        /// The error type.
        type Error;
        /// Never called in a program that compiles.
        fn fail(self, error: Self::Error) -> Outcome;
        /// Refused at compile time: `Self::Error` is not a [`ToolError`].
        fn check(self)
        where
            Self::Error: ToolError;
    }

    impl<E> FailUnsupported for Probe<E> {
        type Error = E;
        fn fail(self, _error: E) -> Outcome {
            Outcome::Failure(Failure::internal_message(
                "the tool's error type cannot be reported",
            ))
        }
        fn check(self)
        where
            E: ToolError,
        {
        }
    }

    /// What a tool's error type must be, named in the error for any other type. Nothing
    /// implements it, as with [`ToolResult`].
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool's error type",
        label = "the error type of a tool's `Result` must implement `std::error::Error`",
        note = "derive `thiserror::Error` (and `Classify`, to say whether it is transient, invalid input, internal or fatal) on the error type, or return `Box<dyn std::error::Error + Send + Sync>`"
    )]
    pub trait ToolError {}
}

/// Renders a handler's return value into an [`Outcome`]; used by `#[mcp_tool]`.
#[doc(hidden)]
#[macro_export]
macro_rules! __render_outcome {
    ($ret:ty, $value:expr) => {{
        #[allow(unused_imports)]
        use $crate::__private::ladder::{
            FailClassified as _, FailDynamic as _, FailUnsupported as _, RenderOwn as _,
            RenderStructured as _, RenderUnsupported as _, SplitPlain as _, SplitResult as _,
        };
        let probe = $crate::__private::ladder::Probe::<$ret>::new();
        let (ok_probe, err_probe) = (&probe).halves();
        match (&probe).split($value) {
            ::core::result::Result::Ok(value) => (&&ok_probe).render(value),
            ::core::result::Result::Err(error) => (&&err_probe).fail(error),
        }
    }};
}

/// Like `__render_outcome`, with a presenter applied to the success value first.
#[doc(hidden)]
#[macro_export]
macro_rules! __render_presented {
    ($ret:ty, $value:expr, $present:expr) => {{
        #[allow(unused_imports)]
        use $crate::__private::ladder::{
            FailClassified as _, FailDynamic as _, FailUnsupported as _, RenderOwn as _,
            RenderStructured as _, RenderUnsupported as _, SplitPlain as _, SplitResult as _,
        };
        let probe = $crate::__private::ladder::Probe::<$ret>::new();
        let (ok_probe, err_probe) = (&probe).halves();
        match (&probe).split($value) {
            ::core::result::Result::Ok(value) => {
                let presentation = ($present)(&value);
                $crate::__private::attach_presentation((&&ok_probe).render(value), presentation)
            }
            ::core::result::Result::Err(error) => (&&err_probe).fail(error),
        }
    }};
}

/// Attaches a presentation to a success (used by `#[mcp_tool(presenter = ..)]`).
#[doc(hidden)]
pub fn attach_presentation(
    outcome: Outcome,
    presentation: crate::tool::present::Presentation,
) -> Outcome {
    match outcome {
        Outcome::Success(output) => Outcome::Success(output.presented(presentation)),
        failure => failure,
    }
}

/// The output schema of a handler's return type, if it renders as structured content.
#[doc(hidden)]
#[macro_export]
macro_rules! __output_schema {
    ($ret:ty) => {{
        #[allow(unused_imports)]
        use $crate::__private::ladder::{
            FailClassified as _, FailDynamic as _, FailUnsupported as _, RenderOwn as _,
            RenderStructured as _, RenderUnsupported as _, SplitPlain as _, SplitResult as _,
        };
        let probe = $crate::__private::ladder::Probe::<$ret>::new();
        let (ok_probe, err_probe) = (&probe).halves();
        // Each half that a tool cannot return is reported here, once, where the caller
        // spans this macro (the return type).
        (&&err_probe).check();
        (&&ok_probe).output_schema()
    }};
}
