//! `tools/call` by protocol revision:
//!
//! - before 2026-07-28, in a session: the pipeline as it is (`serve_call`); a tool
//!   asks the client with requests on the session;
//! - 2026-07-28: multi-round-trip requests. The handler runs on each round with the
//!   answers so far (the signed request state and this round's `inputResponses`); a
//!   question it cannot have answered ends the round with `input_required`
//!   (`rounds/questions.rs`, `rounds/state.rs`);
//! - a tool declared to run as a task, for a client that declared the tasks extension:
//!   the call becomes a task at once, or when the handler asks
//!   ([`Call::continue_as_task`]), and goes on in the background (`tasks/`).

use std::sync::{Arc, atomic::AtomicU64};

use rmcp::{
    RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, CreateTaskResult, ErrorData,
    },
    service::RequestContext,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    call::{Call, client::OwnStream},
    future::BoxFuture,
    identity::{Claims, RequestInfo},
    pipeline,
    protocol::input_required::{Round, connected_call, is_current},
    protocol::request::{request_id_text, request_info},
    setup::server::Server,
    tasks::{Relaunch, TaskOrigin, TaskOutcome, Tasking, refusal},
};

/// How a round ended.
enum Step {
    Done(Box<TaskOutcome>),
    InputRequired,
    ContinueAsTask,
    Cancelled,
}

/// Answers one `tools/call`: the protocol's entry for it, which the transports that serve
/// calls past rmcp's service loop also call.
pub(crate) async fn answer_call<C: Send + Sync + 'static>(
    server: &Server<C>,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    // With tool search, `call_tool` is the tool it names from here on: whether it runs as
    // a task, and what a round's state is bound to, are that tool's.
    let request = pipeline::unwrap_call_tool(server, request);
    // A session whose caller now sees other tools is told (`tools_changed.rs`).
    if server.inner.visibility.depends_on_caller() {
        server.note_shown(&super::request::request_info(&context.extensions), &context);
    }
    let current = is_current(&context);
    let tasking = server.inner.tasks.tasking(&request.name).or_else(|| {
        // A tool an upstream added since start, with a `task_after`.
        (server.inner.registry.added)
            .task_deadline(&request.name)
            .map(Tasking::after)
    });
    // The client's capabilities are a copy: only made for a tool that runs as a task.
    let declared_tasks = tasking.is_some()
        && context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
    if tasking.is_some_and(|tasking| tasking.is_required()) && !declared_tasks {
        return Err(ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        ));
    }
    let as_task = tasking.filter(|_| declared_tasks);
    if !current && as_task.is_none() {
        return Ok(CallToolResponse::from(
            serve_call(server, request, context).await,
        ));
    }
    let args = request.arguments.map_or(Value::Null, Value::Object);
    let round = Round::open(
        &server.inner.sealer,
        "tools/call",
        &request.name,
        &args,
        &context,
        current,
        request.request_state.as_deref(),
        request.input_responses,
    )?;
    let input = round.input.clone();
    let origin = as_task.map(|_| server.task_origin(&request.name, &args, &context));
    // The call's own token: a task outlives the request (and its token); the round
    // watches the request's token itself.
    let cancel = CancellationToken::new();
    let mut call =
        connected_call(server, &context, current, cancel.clone()).with_input(input.clone());
    if let Some(origin) = &origin {
        call = call.with_task_fence(Arc::clone(&origin.fence));
    }
    let owned = server.clone();
    let name = request.name.to_string();
    let work = async move {
        let report = pipeline::run(&owned, &name, None, args, None, &call).await;
        TaskOutcome {
            internal: report.internal,
            message: report.data.as_str().unwrap_or("").to_owned(),
            result: report.result,
        }
    };
    let Some(tasking) = as_task else {
        // A round that cannot become a task: its work stays on this future's stack (no
        // box, which a task's store would need). Await: the round, as below.
        let mut work = std::pin::pin!(work);
        let step = tokio::select! {
            biased;
            () = input.input_required() => Step::InputRequired,
            outcome = &mut work => Step::Done(Box::new(outcome)),
            () = context.ct.cancelled() => Step::Cancelled,
        };
        return round_ended(server, current, &round, step);
    };
    let mut work: BoxFuture<'static, TaskOutcome> = Box::pin(work);
    let mut origin = origin;
    if !tasking.is_started_by_tool()
        && let Some(origin) = origin.take()
    {
        match (server.inner.tasks)
            .start(work, cancel.clone(), input.clone(), origin)
            .await
        {
            Ok(task) => return Ok(CallToolResponse::Task(CreateTaskResult::new(task))),
            // A full store runs a tool whose tasking is optional as an ordinary
            // call: the client waits for it instead of being locked out.
            Err(refused) if refused.is_full() && !tasking.is_required() => {
                tracing::info!(target: "fusion::tasks", tool = %request.name, reason = %refused.error, "the task store is full; the call runs as an ordinary call");
                work = refused.work;
            }
            Err(refused) => {
                return refusal(refused.error).map(CallToolResponse::Complete);
            }
        }
    } else {
        input.allow_task();
    }
    // A call still running at its `task_after` becomes a task as if the handler asked.
    let deadline = async {
        match tasking.deadline() {
            Some(after) => tokio::time::sleep(after).await,
            None => std::future::pending().await,
        }
    };
    // Await: the round. Holds `work` (the pipeline's future, with its guards): a drop
    // here drops it, as a cancelled call.
    let step = tokio::select! {
        biased;
        () = input.task_requested() => Step::ContinueAsTask,
        () = input.input_required() => Step::InputRequired,
        outcome = &mut work => Step::Done(Box::new(outcome)),
        () = context.ct.cancelled() => Step::Cancelled,
        () = deadline => Step::ContinueAsTask,
    };
    if let Step::ContinueAsTask = step {
        // Only a tool that runs as a task may continue as one (`allow_task`).
        let Some(origin) = origin else {
            return Err(ErrorData::internal_error(
                "the call cannot continue as a task",
                None,
            ));
        };
        return match server.inner.tasks.start(work, cancel, input, origin).await {
            Ok(task) => Ok(CallToolResponse::Task(CreateTaskResult::new(task))),
            Err(refused) => refusal(refused.error).map(CallToolResponse::Complete),
        };
    }
    drop(work);
    round_ended(server, current, &round, step)
}

/// The answer of a round that ended with `step` (its work dropped, unless it is done).
fn round_ended<C: Send + Sync + 'static>(
    server: &Server<C>,
    current: bool,
    round: &Round,
    step: Step,
) -> Result<CallToolResponse, ErrorData> {
    match step {
        Step::Done(outcome) => {
            if current
                && outcome.result.is_error == Some(true)
                && let Some(error) = round.missing_capability()
            {
                return Err(error);
            }
            Ok(CallToolResponse::Complete(outcome.result))
        }
        Step::InputRequired => Ok(CallToolResponse::InputRequired(
            round.input_required(&server.inner.sealer),
        )),
        Step::ContinueAsTask => Err(ErrorData::internal_error(
            "the call cannot continue as a task",
            None,
        )),
        Step::Cancelled => Err(ErrorData::internal_error("the request was cancelled", None)),
    }
}

/// Serves one `tools/call` of a session before 2026-07-28: the request's id, progress
/// token and cancellation become the tool's [`Call`], and the call goes through the
/// pipeline.
pub(crate) async fn serve_call<C: Send + Sync + 'static>(
    server: &Server<C>,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> rmcp::model::CallToolResult {
    let progress_token = context.meta.get_progress_token();
    let numbers = crate::validate::NumberLiterals::of(&context.extensions);
    let call = Call::connected(
        request_id_text(&context.id),
        progress_token,
        context.peer,
        context.ct,
        server.log_level(),
        numbers,
        request_info(&context.extensions),
    )
    .with_trace_context(&context.meta)
    .with_request_key(&context.meta);
    // A transport that keeps the call's own stream to the client (HTTP) hands it over.
    let call = match context.extensions.get::<OwnStream>() {
        Some(OwnStream(stream)) => call.with_stream(Arc::clone(stream)),
        None => call,
    };
    let args = request.arguments.map_or(Value::Null, Value::Object);
    pipeline::run(server, &request.name, None, args, None, &call)
        .await
        .result
}

impl<C: Send + Sync + 'static> Server<C> {
    /// What a task created by this call records: the tool and arguments (to run it again
    /// elsewhere, if that is safe), the caller who may reach it, and their claims and
    /// capabilities.
    fn task_origin(
        &self,
        tool: &str,
        args: &Value,
        context: &RequestContext<RoleServer>,
    ) -> TaskOrigin {
        let caller = request_info(&context.extensions);
        TaskOrigin {
            tool: tool.to_owned(),
            arguments: args.clone(),
            owner: caller.subject().map(str::to_owned),
            // The per-caller cap counts by subject, else by session; a stateless request
            // names neither and is held by the store's total cap only.
            session: caller.session_id().map(str::to_owned),
            requestor: (caller.subject().is_some() || caller.session_id().is_some())
                .then(|| caller.caller_key()),
            claims: caller
                .claims()
                .map(|claims| Value::Object(claims.all().clone())),
            capabilities: context
                .client_capabilities()
                .and_then(|capabilities| serde_json::to_value(capabilities).ok()),
            rerunnable: self.inner.registry.is_rerunnable(tool, args),
            fence: Arc::default(),
        }
    }

    /// Starts what tasks on a shared store need while the server serves: the sweeper that
    /// takes over the tasks of replicas that died, and the listener for cancels and
    /// answers sent from other replicas. Nothing for a store of one process.
    pub(crate) fn start_tasks(&self) {
        self.inner.tasks.start_background(self.task_relaunch());
    }

    /// How a replica runs a task's tool again when it takes the task over: through the
    /// pipeline, as the caller the task recorded, without a client connection.
    pub(crate) fn task_relaunch(&self) -> Relaunch {
        let server = self.clone();
        Arc::new(move |record, cancel, input, fence| {
            let server = server.clone();
            let claims = record.claims.clone().map(Claims::from_json);
            let call = Call::resumed(cancel, RequestInfo::resumed(claims), input)
                .with_task_fence(Arc::new(AtomicU64::new(fence)));
            let tool = record.tool.clone();
            let args = record.arguments.clone();
            Box::pin(async move {
                let report = pipeline::run(&server, &tool, None, args, None, &call).await;
                TaskOutcome {
                    internal: report.internal,
                    message: report.data.as_str().unwrap_or("").to_owned(),
                    result: report.result,
                }
            })
        })
    }
}
