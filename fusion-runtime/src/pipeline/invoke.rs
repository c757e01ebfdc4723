//! One run of the handler: decode and validate the arguments, run it behind a panic
//! boundary, and classify what it returned.

use std::time::Duration;

use serde_json::Value;

use crate::{
    call::Call,
    failure::panic as recover,
    failure::{Failure, FailureKind},
    tool::ToolDefinition,
    tool::output::Outcome,
};

/// One run of the handler: decode, then the future behind the panic boundary and the
/// timeout. Dropping the future at the deadline runs the handler's destructors.
pub(super) async fn invoke<C: Send + Sync + 'static>(
    definition: &ToolDefinition<C>,
    context: &C,
    call: &Call,
    args: &Value,
    timeout: Option<Duration>,
) -> Outcome {
    let validator = &definition.validator;
    // Decoding is user-controlled (custom `Deserialize` impls): inside the boundary too.
    let started = recover::catch_sync(|| definition.invoker.invoke(context, call, args, validator));
    let future = match started {
        Ok(Ok(future)) => future,
        Ok(Err(issues)) => {
            return Outcome::Failure(Failure::new(FailureKind::InvalidArguments(issues)));
        }
        Err(panic) => return Outcome::Failure(Failure::panic(panic)),
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
