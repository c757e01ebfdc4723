//! What every middleware is: the trait, what it knows of a call, its verdict, and the
//! refusals the built-ins share.

use std::{any::Any, time::Duration};

use serde_json::Value;

use crate::{
    failure::classify::{Classification, ErrorClass, ErrorCode},
    failure::{Failure, FailureKind},
    future::BoxFuture,
    identity::RequestInfo,
};

/// What a middleware knows of the call it is about to let through.
#[derive(Debug)]
pub struct CallInfo<'a> {
    /// The tool as the client named it.
    pub tool: &'a str,
    /// The action, for a grouped tool.
    pub action: Option<&'a str>,
    /// The arguments (before decoding).
    pub args: &'a Value,
    /// Who is calling: headers, session, the verified token's claims.
    pub request: &'a RequestInfo,
}

/// Something a middleware keeps alive while the handler runs (a permit). It is dropped
/// when the call ends, however it ends: finished, refused by a later step, or its future
/// dropped (the client cancelled or went away). Put whatever must be given back in its
/// `Drop`, as tokio's `OwnedSemaphorePermit` does.
pub type Guard = Box<dyn Any + Send>;

/// A middleware's verdict: go on (optionally holding a guard), or refuse.
pub type Verdict = Result<Option<Guard>, Failure>;

/// Runs before a handler. Implement it for a middleware with state; use [`from_fn`] for a
/// plain function.
pub trait Middleware<C>: Send + Sync + 'static {
    /// Inspects (and may change) the context; `Err` refuses the call.
    fn before<'a>(&'a self, ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict>;
}

/// A refusal with a classification: the model reads `message` (prefixed by the code's
/// words, such as "Unauthorized: "), plus the hint.
pub fn refuse(classification: Classification, message: impl Into<String>) -> Failure {
    Failure {
        kind: FailureKind::Handler(classification),
        chain: vec![message.into()],
        attempts: 0,
        not_sent: false,
    }
}

struct FromFn<F>(F);

impl<C, F> Middleware<C> for FromFn<F>
where
    C: Send + Sync + 'static,
    F: Fn(&mut C, &CallInfo<'_>) -> Result<(), Failure> + Send + Sync + 'static,
{
    fn before<'a>(&'a self, ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict> {
        let verdict = (self.0)(ctx, call).map(|()| None);
        Box::pin(std::future::ready(verdict))
    }
}

/// A middleware from a synchronous function of the context and the call.
pub fn from_fn<C, F>(function: F) -> impl Middleware<C>
where
    C: Send + Sync + 'static,
    F: Fn(&mut C, &CallInfo<'_>) -> Result<(), Failure> + Send + Sync + 'static,
{
    FromFn(function)
}

/// A refusal that tells the model to wait and call again.
pub(crate) fn busy(message: String) -> Failure {
    refuse(
        Classification {
            class: ErrorClass::Transient,
            code: Some(ErrorCode::RateLimited),
            hint: Some("the tool is busy with other calls; wait a moment and call again"),
            retry_after: Some(Duration::from_secs(1)),
        },
        message,
    )
}
