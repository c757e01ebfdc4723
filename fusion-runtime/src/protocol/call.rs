//! `tools/call` by protocol revision:
//!
//! - before 2026-07-28, in a session: the pipeline as it is (`Server::serve_call`); a tool
//!   asks the client with requests on the session;
//! - 2026-07-28: multi-round-trip requests. The handler runs on each round with the
//!   answers so far (the signed request state and this round's `inputResponses`); a
//!   question it cannot have answered ends the round with `input_required`
//!   (`input.rs`, `request_state.rs`);
//! - a tool declared to run as a task, for a client that declared the tasks extension:
//!   the call becomes a task at once, or when the handler asks
//!   ([`Call::continue_as_task`]), and goes on in the background (`tasks/`).

use std::collections::BTreeMap;

use rmcp::{
    RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, CreateTaskResult, ErrorData,
        InputRequiredResult, ProtocolVersion,
    },
    service::RequestContext,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    call::{Call, LogLevel},
    future::BoxFuture,
    identity::RequestInfo,
    input::InputState,
    request_state,
    server::Server,
    tasks::TaskOutcome,
};

/// Whether a request speaks the 2026-07-28 revision or a later one.
pub(crate) fn is_current(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// How a round ended.
enum Step {
    Done(Box<TaskOutcome>),
    InputRequired,
    ContinueAsTask,
    Cancelled,
}

impl<C: Send + Sync + 'static> Server<C> {
    /// Answers one `tools/call`.
    pub(crate) async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let current = is_current(&context);
        let tasking = self.inner.tasks.tasking(&request.name);
        let capabilities = context.client_capabilities().unwrap_or_default();
        let declared_tasks = capabilities.supports_tasks();
        if tasking.is_some_and(|tasking| tasking.is_required()) && !declared_tasks {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        let as_task = tasking.filter(|_| declared_tasks);
        if !current && as_task.is_none() {
            return Ok(CallToolResponse::from(
                self.serve_call(request, context).await,
            ));
        }
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let info = match context.extensions.get::<http::request::Parts>() {
            Some(parts) => RequestInfo::from_http(parts),
            None => RequestInfo::stdio(),
        };
        let binding = request_state::binding(&request.name, &args, info.subject());
        let mut answers = BTreeMap::new();
        if current {
            if let Some(state) = &request.request_state {
                answers = self.inner.sealer.open(state, &binding)?;
            }
            answers.extend(request.input_responses.unwrap_or_default());
        }
        let input = InputState::rounds(answers, capabilities);
        let log_level = if current {
            context.meta.log_level().map(LogLevel::from_rmcp)
        } else {
            self.log_level()
        };
        // The call's own token: a task outlives the request (and its token); the round
        // watches the request's token itself.
        let cancel = CancellationToken::new();
        let call = Call::connected(
            request_id_text(&context.id),
            context.meta.get_progress_token(),
            context.peer.clone(),
            cancel.clone(),
            log_level,
            crate::validate::NumberLiterals::from_meta(&context.meta),
            info,
        )
        .with_input(input.clone());
        let server = self.clone();
        let name = request.name.to_string();
        let mut work: BoxFuture<'static, TaskOutcome> = Box::pin(async move {
            let report = server.call(&name, None, args, None, &call).await;
            TaskOutcome {
                internal: report.internal,
                message: report.data.as_str().unwrap_or("").to_owned(),
                result: report.result,
            }
        });
        if let Some(tasking) = as_task {
            if !tasking.is_started_by_tool() {
                let task = self.inner.tasks.start(work, cancel, input).await?;
                return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
            }
            input.allow_task();
        }
        // Await: the round. Holds `work` (the pipeline's future, with its guards): a drop
        // here drops it, as a cancelled call.
        let step = tokio::select! {
            biased;
            () = input.task_requested() => Step::ContinueAsTask,
            () = input.input_required() => Step::InputRequired,
            outcome = &mut work => Step::Done(Box::new(outcome)),
            () = context.ct.cancelled() => Step::Cancelled,
        };
        match step {
            Step::Done(outcome) => {
                if current
                    && outcome.result.is_error == Some(true)
                    && let Some(kind) = input.missing_capability()
                {
                    let mut required = serde_json::Map::new();
                    required.insert(
                        kind.capability().to_owned(),
                        Value::Object(Default::default()),
                    );
                    let required: ClientCapabilities =
                        serde_json::from_value(Value::Object(required)).unwrap_or_default();
                    return Err(ErrorData::missing_required_client_capability(required));
                }
                Ok(CallToolResponse::Complete(outcome.result))
            }
            Step::InputRequired => {
                drop(work);
                let state = self.inner.sealer.seal(&input.used(), &binding);
                Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                    Some(input.pending()),
                    Some(state),
                )))
            }
            Step::ContinueAsTask => {
                let task = self.inner.tasks.start(work, cancel, input).await?;
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
            Step::Cancelled => Err(ErrorData::internal_error("the request was cancelled", None)),
        }
    }
}

fn request_id_text(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(number) => number.to_string(),
        rmcp::model::NumberOrString::String(text) => text.to_string(),
    }
}
