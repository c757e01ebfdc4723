//! One run of the handler: decode and validate the arguments, run it behind a panic
//! boundary, and classify what it returned.

use std::{panic::AssertUnwindSafe, time::Duration};

use futures_util::FutureExt as _;
use serde_json::Value;

use crate::{
    call::Call,
    error::{Failure, FailureKind},
    output::Outcome,
    recover,
    tool::ToolDefinition,
};

use crate::server::Server;

impl<C: Send + Sync + 'static> Server<C> {
    /// One run of the handler: decode, then the future behind the panic boundary and the
    /// timeout. Dropping the future at the deadline runs the handler's destructors.
    pub(super) async fn run_once(
        &self,
        definition: &ToolDefinition<C>,
        context: &C,
        call: &Call,
        args: &Value,
        timeout: Option<Duration>,
    ) -> Outcome {
        let validator = &definition.validator;
        // Decoding is user-controlled (custom `Deserialize` impls): inside the boundary too.
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            definition.invoker.invoke(context, call, args, validator)
        }));
        let future = match started {
            Ok(Ok(future)) => future,
            Ok(Err(issues)) => {
                return Outcome::Failure(Failure::new(FailureKind::InvalidArguments(issues)));
            }
            Err(payload) => {
                return Outcome::Failure(Failure::panic(recover::panic_message(payload.as_ref())));
            }
        };
        let guarded = AssertUnwindSafe(future).catch_unwind();
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
            Err(payload) => {
                Outcome::Failure(Failure::panic(recover::panic_message(payload.as_ref())))
            }
        }
    }
}
