//! One run of the handler: decode and validate the arguments, run it (or the fault a
//! tester injected in its place) behind a panic boundary, and classify what it returned.

use std::time::Duration;

use serde_json::Value;

use crate::{
    call::Call,
    failure::panic as recover,
    failure::{Failure, FailureKind},
    future::BoxFuture,
    testing::watch::Tool,
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
        Some(fault) => fault.run(future),
        None => future,
    };
    let guarded = recover::catch(future);
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
