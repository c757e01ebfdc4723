//! One run of the handler: decode and validate the arguments, run it (or the fault a
//! tester injected in its place) behind a panic boundary, and classify what it returned.

use std::time::Duration;

use serde_json::Value;

use crate::{
    call::Call,
    failure::panic as recover,
    failure::{Classification, ErrorClass, Failure, FailureKind},
    future::BoxFuture,
    inject::{fault::FaultKind, watch::Tool},
    tool::ToolDefinition,
    tool::output::Outcome,
};

/// The handler's future for one run, its arguments decoded (and so validated) first: the
/// future, not yet polled (the handler has not started), or the failure of a call that
/// cannot start (invalid arguments, a panic while decoding).
pub(super) fn start<'a, C: Send + Sync + 'static>(
    definition: &'a ToolDefinition<C>,
    context: &'a C,
    call: &'a Call,
    args: &Value,
) -> Result<BoxFuture<'a, Outcome>, Failure> {
    let validator = &definition.validator;
    // Decoding is user-controlled (custom `Deserialize` impls): inside the boundary too.
    let started = recover::catch_sync(|| definition.invoker.invoke(context, call, args, validator));
    match started {
        Ok(Ok(future)) => Ok(future),
        Ok(Err(issues)) => Err(Failure::new(FailureKind::InvalidArguments(issues))),
        Err(panic) => Err(Failure::panic(panic)),
    }
}

/// One run of the handler: decode (unless `started` is this run's future, from
/// [`start`]), then the future behind the panic boundary and the timeout. Dropping the
/// future at the deadline runs the handler's destructors.
pub(super) async fn invoke<'a, C: Send + Sync + 'static>(
    definition: &'a ToolDefinition<C>,
    context: &'a C,
    call: &'a Call,
    args: &Value,
    timeout: Option<Duration>,
    started: Option<BoxFuture<'a, Outcome>>,
) -> Outcome {
    let future = match started {
        Some(future) => future,
        None => match start(definition, context, call, args) {
            Ok(future) => future,
            Err(failure) => return Outcome::Failure(failure),
        },
    };
    // A tester's fault takes the handler's place here, inside the panic boundary, the
    // timeout and the retries, so that each counts as a run. One check for a served call.
    let fault = call.watch().and_then(|watch| {
        let spec = &definition.spec;
        watch.fault(&Tool {
            name: spec.name,
            group: spec.group,
            action: spec.action,
        })
    });
    let future = match fault {
        Some(fault) => run_fault(fault, future),
        None => future,
    };
    let guarded = recover::catch(future);
    // From here the handler may do part of its work: a keyed call dropped from now on
    // leaves its key stopped, not free (`idempotency::ClaimGuard`).
    call.mark_handler_started();
    // Await: the handler. Holds nothing of ours; a drop (deadline, cancellation) drops
    // the handler's future, so its destructors run.
    let finished = match timeout {
        Some(limit) => match tokio::time::timeout(limit, guarded).await {
            Ok(finished) => finished,
            Err(_) => return Outcome::Failure(Failure::new(FailureKind::Timeout { limit })),
        },
        None => guarded.await,
    };
    match finished {
        Ok(outcome) => outcome,
        Err(panic) => Outcome::Failure(Failure::panic(panic)),
    }
}

/// One run with an injected `fault` in place of `handler` (the handler's future, its
/// arguments already decoded): the result still goes through the panic boundary and the
/// timeout of the run.
fn run_fault<'a>(fault: FaultKind, handler: BoxFuture<'a, Outcome>) -> BoxFuture<'a, Outcome> {
    let failure = |class: ErrorClass, message: String, retry_after: Option<Duration>| {
        let classification = Classification {
            retry_after,
            ..Classification::of(class)
        };
        let mut failure = Failure::new(FailureKind::Handler(classification));
        failure.chain = vec![message];
        Outcome::Failure(failure)
    };
    let outcome = match fault {
        FaultKind::Delay(delay) => {
            return Box::pin(async move {
                tokio::time::sleep(delay).await;
                handler.await
            });
        }
        FaultKind::Panic(message) => return Box::pin(async move { panicking(message) }),
        FaultKind::Transient {
            message,
            retry_after,
        } => failure(ErrorClass::Transient, message, retry_after),
        FaultKind::Internal(message) => failure(ErrorClass::Internal, message, None),
        FaultKind::Fatal(message) => failure(ErrorClass::Fatal, message, None),
    };
    // The handler's future is dropped unpolled: the handler never starts.
    drop(handler);
    Box::pin(std::future::ready(outcome))
}

/// A real panic, so that the pipeline's panic boundary (and the panic hook that records
/// where it happened) handles it as a handler's own.
fn panicking(message: String) -> Outcome {
    std::panic::panic_any(message)
}
