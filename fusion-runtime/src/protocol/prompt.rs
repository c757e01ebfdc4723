//! `prompts/get` by protocol revision. The prompt's closure gets a [`Call`](crate::Call):
//!
//! - before 2026-07-28, in a session, its questions are requests to the client;
//! - under 2026-07-28 they go through a round (`input_required.rs`): a question the round cannot
//!   answer ends it with `input_required`, and the closure runs again with the answers.

use rmcp::{
    RoleServer,
    model::{ErrorData, GetPromptRequestMethod, GetPromptRequestParams, GetPromptResponse},
    service::RequestContext,
};
use serde_json::Value;

use crate::{
    protocol::input_required::{Round, connected_call, is_current},
    setup::prompt::PromptError,
    setup::server::Server,
};

impl<C: Send + Sync + 'static> Server<C> {
    /// Answers one `prompts/get`.
    pub(crate) async fn answer_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let prompts = &self.catalog().prompts;
        if !prompts.has_prompts() {
            return Err(ErrorData::method_not_found::<GetPromptRequestMethod>());
        }
        let current = is_current(&context);
        let args = request.arguments.clone().map_or(Value::Null, Value::Object);
        let round = Round::open(
            &self.inner.sealer,
            "prompts/get",
            &request.name,
            &args,
            &context,
            current,
            request.request_state.as_deref(),
            request.input_responses,
        )?;
        let call = connected_call(self, &context, current, context.ct.clone());
        let call = if current {
            call.with_input(round.input.clone())
        } else {
            call
        };
        let render = prompts.get(&request.name, request.arguments, call);
        let rendered = if current {
            // Await: the closure, or a question this round cannot answer. Holds `render`
            // (the closure's future): ending the round drops it, as does a dropped request.
            tokio::select! {
                biased;
                () = round.input.input_required() => {
                    return Ok(GetPromptResponse::InputRequired(
                        round.input_required(&self.inner.sealer),
                    ));
                }
                rendered = render => rendered,
            }
        } else {
            // Await: the closure; a dropped request drops it.
            render.await
        };
        match rendered {
            Ok(result) => Ok(GetPromptResponse::Complete(result)),
            Err(error) => {
                if let (PromptError::Failed { .. }, Some(missing)) =
                    (&error, round.missing_capability())
                {
                    return Err(missing);
                }
                let message = error.message(&request.name);
                Err(match error {
                    PromptError::Failed { .. } => ErrorData::internal_error(message, None),
                    _ => ErrorData::invalid_params(message, None),
                })
            }
        }
    }
}
