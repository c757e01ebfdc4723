//! The builder and server methods for prompts.

use std::{collections::HashMap, future::Future, sync::Arc};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    call::Call,
    setup::builder::ServerBuilder,
    setup::error::BuildError,
    setup::prompt::{
        CompletionTarget, IntoPromptMessages, PromptInfo, RegisteredPrompt, Render, RenderFn,
    },
    setup::server::Server,
};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Registers a prompt; `render` is called on each `prompts/get` with the arguments
    /// (required ones are checked first: a missing one is an invalid-params error naming
    /// it).
    ///
    /// ```
    /// use fusion_runtime::{prompt::PromptInfo, prelude::*, prompt};
    ///
    /// #[mcp_type]
    /// #[derive(Deserialize)]
    /// struct Topic {
    ///     topic: String,
    ///     tone: Option<String>,
    /// }
    ///
    /// let info = PromptInfo::new("explain", "Explain a topic")
    ///     .required("topic", "What to explain")
    ///     .optional("tone", "How to sound");
    /// let server = Server::builder("teacher", "1.0.0")
    ///     .prompt(info, |Topic { topic, tone }: Topic| async move {
    ///         vec![
    ///             prompt::user(format!("Explain {topic}.")),
    ///             prompt::assistant(format!("In a {} tone, then.", tone.unwrap_or("plain".into()))),
    ///         ]
    ///     })
    ///     // A prompt without arguments takes `()`.
    ///     .prompt(PromptInfo::new("hello", "Say hello"), |()| async { "Hello!" })
    ///     .build();
    /// assert_eq!(server.prompts().len(), 2);
    /// ```
    pub fn prompt<A, F, Fut>(self, info: PromptInfo, render: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoPromptMessages,
    {
        self.prompt_with_call(info, move |arguments: A, _call: Call| render(arguments))
    }

    /// Registers a prompt whose closure also gets the request's [`Call`]: it may ask the
    /// client (the user with [`Call::elicit`], the client's model with
    /// [`Call::sample_text`], its roots with [`Call::list_roots`], each keyed with
    /// [`Call::ask`]) and read who is calling ([`Call::request`]).
    ///
    /// Over a session (protocol revisions before 2026-07-28) a question is a request to
    /// the client. Under 2026-07-28 `prompts/get` answers `input_required` with the
    /// questions and a signed request state, and the closure runs again, from the start,
    /// when the client sends the answers: everything before the first unanswered
    /// question runs once per round, so keep it free of side effects.
    ///
    /// ```
    /// use fusion_runtime::{Call, call::ClientRequestError, prompt::PromptInfo, prelude::*, prompt};
    ///
    /// let info = PromptInfo::new("standup", "Draft a stand-up update");
    /// let server = Server::builder("team", "1.0.0")
    ///     .prompt_with_call(info, |(): (), call: Call| async move {
    ///         let form = serde_json::json!({
    ///             "type": "object",
    ///             "properties": {"done": {"type": "string"}},
    ///             "required": ["done"]
    ///         });
    ///         let answer = call.ask("done").elicit("What did you finish yesterday?", form).await?;
    ///         let done = answer.content["done"].as_str().unwrap_or("nothing yet").to_owned();
    ///         Ok::<_, ClientRequestError>(prompt::user(format!("Write my stand-up: I finished {done}.")))
    ///     })
    ///     .build();
    /// assert_eq!(server.prompts()[0].name, "standup");
    /// ```
    pub fn prompt_with_call<A, F, Fut>(mut self, info: PromptInfo, render: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(A, Call) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoPromptMessages,
    {
        let prompts = &mut self.catalog.prompts;
        if prompts.prompts.iter().any(|p| p.info.name == info.name) {
            prompts.errors.push(BuildError::DuplicatePrompt(info.name));
            return self;
        }
        let render = Arc::new(render);
        let render: RenderFn = Arc::new(move |arguments, call| {
            let decoded = crate::validate::decode_map::<A>(arguments);
            let render = Arc::clone(&render);
            Box::pin(async move {
                let arguments = decoded.map_err(Render::Arguments)?;
                render(arguments, call)
                    .await
                    .into_prompt_messages()
                    .map_err(Render::Error)
            })
        });
        prompts.prompts.push(RegisteredPrompt { info, render });
        self
    }

    /// Computes `completion/complete` suggestions for an argument of a prompt: `complete`
    /// gets what the user typed so far and the other arguments already given.
    ///
    /// ```
    /// use fusion_runtime::{prompt::PromptInfo, prelude::*};
    ///
    /// let cities = ["Paris", "Porto", "Prague"];
    /// let server = Server::builder("travel", "1.0.0")
    ///     .prompt(PromptInfo::new("trip", "Plan a trip").required("city", "Where to"), |()| async { "Plan it." })
    ///     .complete_prompt_argument("trip", "city", move |typed, _others| {
    ///         cities.iter().filter(|c| c.starts_with(typed)).map(|c| c.to_string()).collect()
    ///     })
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn complete_prompt_argument<F>(
        mut self,
        prompt: impl Into<String>,
        argument: impl Into<String>,
        complete: F,
    ) -> Self
    where
        F: Fn(&str, &HashMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    {
        let target = CompletionTarget::Prompt {
            prompt: prompt.into(),
            argument: argument.into(),
        };
        self.catalog
            .prompts
            .completers
            .insert(target, Arc::new(complete));
        self
    }

    /// Computes `completion/complete` suggestions for a variable of a resource template
    /// (the template as registered, e.g. `"docs://pages/{id}"`).
    pub fn complete_resource_argument<F>(
        mut self,
        uri_template: impl Into<String>,
        variable: impl Into<String>,
        complete: F,
    ) -> Self
    where
        F: Fn(&str, &HashMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    {
        let target = CompletionTarget::Template {
            template: uri_template.into(),
            variable: variable.into(),
        };
        self.catalog
            .prompts
            .completers
            .insert(target, Arc::new(complete));
        self
    }
}

impl<C: Send + Sync + 'static> Server<C> {
    /// The prompts, as `prompts/list` describes them.
    pub fn prompts(&self) -> Vec<rmcp::model::Prompt> {
        self.catalog().prompts.list()
    }

    /// Renders a prompt as a client would get it (`prompts/get`), without a client: a
    /// question the closure asks fails with [`ClientRequestError::NoClient`](crate::call::ClientRequestError::NoClient).
    ///
    /// # Errors
    /// A message when no prompt has this name, a required argument is missing, or the
    /// closure failed.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use fusion_runtime::{prompt::PromptInfo, prelude::*};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let server = Server::builder("p", "1.0.0")
    ///     .prompt(PromptInfo::new("greet", "Greet").required("name", "Who"), |args: HashMap<String, String>| async move {
    ///         format!("Say hello to {}.", args["name"])
    ///     })
    ///     .build();
    /// let args = serde_json::json!({"name": "Ada"});
    /// let result = server.get_prompt("greet", args.as_object().cloned()).await.unwrap();
    /// assert_eq!(serde_json::to_value(&result.messages[0]).unwrap()["content"]["text"], "Say hello to Ada.");
    /// assert!(server.get_prompt("greet", None).await.unwrap_err().contains("name"));
    /// # });
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<rmcp::model::GetPromptResult, String> {
        self.catalog()
            .prompts
            .get(name, arguments, Call::detached())
            .await
            .map_err(|error| error.message(name))
    }
}
