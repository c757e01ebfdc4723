//! The number literals of a `tools/call` body over HTTP, kept beside the request (in the
//! HTTP request's extensions, which rmcp's service hands on in the request's parts) the
//! way the stdio transport keeps them beside its requests, so that the pipeline sees
//! numbers exactly as sent. The body is passed on as it came.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::validate::{NumberLiterals, literal};

/// The number literals of a `tools/call` body's arguments that a JSON value cannot hold
/// exactly (see [`crate::validate::literal`]); `None` for other bodies (a batch, another
/// method, what does not parse) and for calls without such numbers.
pub(super) fn number_literals_of(body: &[u8]) -> Option<NumberLiterals> {
    /// The members that decide whether there is anything to record.
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
    }
    let Message {
        method: Some(method),
        params: Some(params),
    } = serde_json::from_slice::<Message<'_>>(body).ok()?
    else {
        return None;
    };
    if method != "tools/call" {
        return None;
    }
    let arguments = serde_json::from_str::<Params<'_>>(params.get())
        .ok()?
        .arguments?;
    let literals = literal::scan(arguments.get());
    (!literals.is_empty()).then_some(literals)
}
