//! A call's questions to the client: the user (`elicit`), the client's model
//! (`sample_text`), its roots (`list_roots`), keyed with `ask`; and a call that continues
//! as a task. In a session they are requests to the client; under the 2026-07-28 revision
//! and in tasks they go through `rounds/questions.rs`.

use serde_json::Value;

use crate::rounds::questions::{self as input, Kind};

use super::Call;

impl Call {
    /// Asks the client's model to answer `prompt` (`sampling/createMessage`, one user
    /// message) and returns the text of its answer.
    ///
    /// # Errors
    /// [`ClientRequestError::NoClient`] in the tester, [`ClientRequestError::Unsupported`]
    /// when the client did not declare the `sampling` capability, and
    /// [`ClientRequestError::Failed`] when the request failed or the answer held no text.
    ///
    /// ```
    /// use fusion_runtime::{Call, call::ClientRequestError, prelude::*};
    ///
    /// /// Summarize a text with the client's model.
    /// #[mcp_tool]
    /// async fn summarize(#[call] call: &Call, text: String) -> Result<String, ClientRequestError> {
    ///     call.sample_text(&format!("Summarize: {text}"), 200).await
    /// }
    /// # let _ = Server::builder("s", "0").tool(summarize).build();
    /// ```
    pub async fn sample_text(
        &self,
        prompt: &str,
        max_tokens: u32,
    ) -> Result<String, ClientRequestError> {
        self.sample_keyed(None, prompt, max_tokens).await
    }

    async fn sample_keyed(
        &self,
        key: Option<&str>,
        prompt: &str,
        max_tokens: u32,
    ) -> Result<String, ClientRequestError> {
        if let Some(rounds) = &self.inner.input {
            rounds
                .check_capability(Kind::Sampling)
                .map_err(ClientRequestError::Unsupported)?;
            let question = input::request(
                "sampling/createMessage",
                Some(serde_json::json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": max_tokens,
                })),
            )
            .map_err(ClientRequestError::InvalidSchema)?;
            let answer = rounds
                .ask(Kind::Sampling, key, question, input::is_sampling_result)
                .await
                .map_err(ClientRequestError::Failed)?;
            return answer_text(&answer["content"]);
        }
        let link = self.link().ok_or(ClientRequestError::NoClient)?;
        let declared = link
            .capabilities()
            .is_some_and(|capabilities| capabilities.sampling.is_some());
        if !declared {
            return Err(ClientRequestError::Unsupported("sampling"));
        }
        // Sampling is deprecated by the 2026-07-28 protocol (SEP-2577); clients of the
        // earlier versions, and the conformance suite, still offer it.
        #[allow(deprecated)]
        let request = rmcp::model::ServerRequest::CreateMessageRequest(rmcp::model::Request::new(
            rmcp::model::CreateMessageRequestParams::new(
                vec![rmcp::model::SamplingMessage::user_text(prompt)],
                max_tokens,
            ),
        ));
        let answer = link
            .request(request)
            .await
            .map_err(ClientRequestError::Failed)?;
        answer_text(&answer["content"])
    }

    /// Asks the user for input through the client (`elicitation/create`, form mode):
    /// `message` says what for, `schema` is the form (a JSON Schema object of primitive
    /// properties, as the MCP specification restricts it).
    ///
    /// # Errors
    /// [`ClientRequestError::NoClient`] in the tester, [`ClientRequestError::Unsupported`]
    /// when the client did not declare the `elicitation` capability,
    /// [`ClientRequestError::InvalidSchema`] when `schema` is not a form MCP allows, and
    /// [`ClientRequestError::Failed`] when the request failed. A user who declines or
    /// cancels is not an error: see [`Elicitation::action`].
    ///
    /// ```
    /// use fusion_runtime::{Call, call::ClientRequestError, call::ElicitationAction, prelude::*};
    ///
    /// /// Book a table, asking the user how many people come.
    /// #[mcp_tool]
    /// async fn book(#[call] call: &Call) -> Result<String, ClientRequestError> {
    ///     let schema = serde_json::json!({
    ///         "type": "object",
    ///         "properties": {"people": {"type": "integer", "minimum": 1, "default": 2}},
    ///         "required": ["people"]
    ///     });
    ///     let answer = call.elicit("How many people?", schema).await?;
    ///     Ok(match answer.action {
    ///         ElicitationAction::Accept => format!("booked for {}", answer.content["people"]),
    ///         _ => "not booked".to_owned(),
    ///     })
    /// }
    /// # let _ = Server::builder("b", "0").tool(book).build();
    /// ```
    pub async fn elicit(
        &self,
        message: &str,
        schema: Value,
    ) -> Result<Elicitation, ClientRequestError> {
        self.elicit_keyed(None, message, schema).await
    }

    async fn elicit_keyed(
        &self,
        key: Option<&str>,
        message: &str,
        schema: Value,
    ) -> Result<Elicitation, ClientRequestError> {
        let requested_schema: rmcp::model::ElicitationSchema = serde_json::from_value(schema)
            .map_err(|error| ClientRequestError::InvalidSchema(error.to_string()))?;
        if let Some(rounds) = &self.inner.input {
            rounds
                .check_capability(Kind::Elicitation)
                .map_err(ClientRequestError::Unsupported)?;
            let question = input::request(
                "elicitation/create",
                Some(serde_json::json!({
                    "mode": "form",
                    "message": message,
                    "requestedSchema": requested_schema,
                })),
            )
            .map_err(ClientRequestError::InvalidSchema)?;
            let answer = rounds
                .ask(Kind::Elicitation, key, question, input::is_elicit_result)
                .await
                .map_err(ClientRequestError::Failed)?;
            let action = match answer["action"].as_str() {
                Some("accept") => ElicitationAction::Accept,
                Some("decline") => ElicitationAction::Decline,
                _ => ElicitationAction::Cancel,
            };
            return Ok(Elicitation {
                action,
                content: answer.get("content").cloned().unwrap_or(Value::Null),
            });
        }
        let link = self.link().ok_or(ClientRequestError::NoClient)?;
        if !link
            .capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
        {
            // Form mode: declared, or assumed when the client named neither mode.
            return Err(ClientRequestError::Unsupported("elicitation"));
        }
        let params = rmcp::model::ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.to_owned(),
            requested_schema,
        };
        let answer = link
            .request(rmcp::model::ServerRequest::ElicitRequest(
                rmcp::model::Request::new(params),
            ))
            .await
            .map_err(ClientRequestError::Failed)?;
        let result: rmcp::model::ElicitResult = serde_json::from_value(answer)
            .map_err(|error| ClientRequestError::Failed(format!("the client's answer: {error}")))?;
        let action = match result.action {
            rmcp::model::ElicitationAction::Accept => ElicitationAction::Accept,
            rmcp::model::ElicitationAction::Decline => ElicitationAction::Decline,
            _ => ElicitationAction::Cancel,
        };
        Ok(Elicitation {
            action,
            content: result.content.unwrap_or(Value::Null),
        })
    }

    /// The client's roots (`roots/list`): the directories or files it lets the server see.
    ///
    /// # Errors
    /// [`ClientRequestError::NoClient`] in the tester, [`ClientRequestError::Unsupported`]
    /// when the client did not declare the `roots` capability, and
    /// [`ClientRequestError::Failed`] when the request failed.
    ///
    /// ```
    /// use fusion_runtime::{Call, call::ClientRequestError, prelude::*};
    ///
    /// /// How many roots the client shares.
    /// #[mcp_tool]
    /// async fn count_roots(#[call] call: &Call) -> Result<usize, ClientRequestError> {
    ///     Ok(call.list_roots().await?.len())
    /// }
    /// # let _ = Server::builder("r", "0").tool(count_roots).build();
    /// ```
    pub async fn list_roots(&self) -> Result<Vec<Root>, ClientRequestError> {
        self.roots_keyed(None).await
    }

    async fn roots_keyed(&self, key: Option<&str>) -> Result<Vec<Root>, ClientRequestError> {
        let answer = if let Some(rounds) = &self.inner.input {
            rounds
                .check_capability(Kind::Roots)
                .map_err(ClientRequestError::Unsupported)?;
            let question =
                input::request("roots/list", None).map_err(ClientRequestError::InvalidSchema)?;
            rounds
                .ask(Kind::Roots, key, question, input::is_roots_result)
                .await
                .map_err(ClientRequestError::Failed)?
        } else {
            let link = self.link().ok_or(ClientRequestError::NoClient)?;
            let declared = link
                .capabilities()
                .is_some_and(|capabilities| capabilities.roots.is_some());
            if !declared {
                return Err(ClientRequestError::Unsupported("roots"));
            }
            // Roots are deprecated by the 2026-07-28 protocol (SEP-2577) as requests of
            // their own; clients of the earlier versions still answer them.
            #[allow(deprecated)]
            let request =
                rmcp::model::ServerRequest::ListRootsRequest(rmcp::model::RequestNoParam {
                    method: Default::default(),
                    extensions: Default::default(),
                });
            link.request(request)
                .await
                .map_err(ClientRequestError::Failed)?
        };
        serde_json::from_value(answer["roots"].clone())
            .map_err(|error| ClientRequestError::Failed(format!("the client's roots: {error}")))
    }

    /// From here on the call runs as a task, for a tool declared with
    /// [`Tasking::started_by_tool`](crate::tasks::Tasking::started_by_tool): the client
    /// gets the task's id at once and polls for the result, while the handler goes on.
    /// Questions asked before (in `input_required` rounds) keep their answers. Does
    /// nothing when the call cannot become a task (the tool is not declared so, the
    /// client did not declare the tasks extension, or it is a task already).
    ///
    /// ```
    /// use fusion_runtime::{Call, call::ClientRequestError, prelude::*, tasks::Tasking};
    ///
    /// /// Exports the user's data after they confirm which format.
    /// #[mcp_tool]
    /// async fn export(#[call] call: &Call) -> Result<String, ClientRequestError> {
    ///     let schema = serde_json::json!({
    ///         "type": "object",
    ///         "properties": {"format": {"type": "string", "enum": ["csv", "json"]}},
    ///         "required": ["format"]
    ///     });
    ///     let format = call.ask("format").elicit("Which format?", schema).await?;
    ///     call.continue_as_task().await; // the slow part runs as a task
    ///     Ok(format!("exported as {}", format.content["format"]))
    /// }
    /// # let _ = Server::builder("e", "0").task_tool(export, Tasking::optional().started_by_tool()).build();
    /// ```
    pub async fn continue_as_task(&self) {
        if let Some(input) = &self.inner.input
            && input.request_task()
        {
            // One `Pending`, so that the runner turns the call into a task before the
            // handler goes on.
            let mut yielded = false;
            std::future::poll_fn(|context| {
                if yielded {
                    std::task::Poll::Ready(())
                } else {
                    yielded = true;
                    context.waker().wake_by_ref();
                    std::task::Poll::Pending
                }
            })
            .await;
        }
    }

    /// Names the next question to the client `key`: `call.ask("user_name").elicit(..)`.
    ///
    /// Under the 2026-07-28 revision a question goes to the client inside an
    /// `input_required` result, keyed; the handler runs again with the answer. Unkeyed
    /// questions are numbered in the order the handler asks them (`elicitation-1`,
    /// `sampling-1`, ...), which is the same on every round as long as the handler asks
    /// the same questions in the same order; a key makes a question stable whatever else
    /// the handler asks.
    ///
    /// ```
    /// use fusion_runtime::{Call, call::ClientRequestError, prelude::*};
    ///
    /// /// Greets the user by name.
    /// #[mcp_tool]
    /// async fn greet_user(#[call] call: &Call) -> Result<String, ClientRequestError> {
    ///     let schema = serde_json::json!({
    ///         "type": "object",
    ///         "properties": {"name": {"type": "string"}},
    ///         "required": ["name"]
    ///     });
    ///     let answer = call.ask("user_name").elicit("What is your name?", schema).await?;
    ///     Ok(format!("Hello, {}!", answer.content["name"].as_str().unwrap_or("stranger")))
    /// }
    /// # let _ = Server::builder("g", "0").tool(greet_user).build();
    /// ```
    pub fn ask<'a>(&'a self, key: &'a str) -> Ask<'a> {
        Ask { call: self, key }
    }
}

/// A question to the client with a key of its own ([`Call::ask`]).
#[derive(Clone, Copy, Debug)]
pub struct Ask<'a> {
    call: &'a Call,
    key: &'a str,
}

impl Ask<'_> {
    /// [`Call::elicit`], keyed.
    ///
    /// # Errors
    /// As [`Call::elicit`].
    pub async fn elicit(
        self,
        message: &str,
        schema: Value,
    ) -> Result<Elicitation, ClientRequestError> {
        self.call
            .elicit_keyed(Some(self.key), message, schema)
            .await
    }

    /// [`Call::sample_text`], keyed.
    ///
    /// # Errors
    /// As [`Call::sample_text`].
    pub async fn sample_text(
        self,
        prompt: &str,
        max_tokens: u32,
    ) -> Result<String, ClientRequestError> {
        self.call
            .sample_keyed(Some(self.key), prompt, max_tokens)
            .await
    }

    /// [`Call::list_roots`], keyed.
    ///
    /// # Errors
    /// As [`Call::list_roots`].
    pub async fn list_roots(self) -> Result<Vec<Root>, ClientRequestError> {
        self.call.roots_keyed(Some(self.key)).await
    }
}

/// A root the client shares ([`Call::list_roots`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// Its URI (`file:///..`).
    pub uri: String,
    /// Its name, if the client gave one.
    #[serde(default)]
    pub name: Option<String>,
}

/// The text of a sampling answer's content (one block or a list of blocks).
fn answer_text(content: &Value) -> Result<String, ClientRequestError> {
    let blocks = match content {
        Value::Array(blocks) => blocks.iter().collect::<Vec<_>>(),
        single => vec![single],
    };
    let text: Vec<&str> = blocks
        .iter()
        .filter(|block| block["type"] == "text")
        .filter_map(|block| block["text"].as_str())
        .collect();
    if text.is_empty() {
        Err(ClientRequestError::Failed(
            "the client's answer held no text".to_owned(),
        ))
    } else {
        Ok(text.join("\n"))
    }
}

/// The user's answer to [`Call::elicit`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Elicitation {
    /// What the user did.
    pub action: ElicitationAction,
    /// The form's values when the user accepted (`null` otherwise).
    pub content: Value,
}

impl Elicitation {
    /// The accepted values decoded into `T`; `None` when the user declined or cancelled.
    ///
    /// # Errors
    /// When the values do not decode into `T`.
    pub fn accepted<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<Option<T>, ClientRequestError> {
        if self.action != ElicitationAction::Accept {
            return Ok(None);
        }
        serde_json::from_value(self.content.clone())
            .map(Some)
            .map_err(|error| ClientRequestError::Failed(format!("the user's answer: {error}")))
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElicitationAction {
    /// Submitted the form.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

impl ElicitationAction {
    /// The action's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }
}

/// Why a request to the client ([`Call::sample_text`], [`Call::elicit`]) failed. The model
/// reads the message (it is classified as invalid input: nothing is retried).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientRequestError {
    /// The call has no client (the in-memory tester).
    #[error("there is no client to ask (the call runs without a transport)")]
    NoClient,
    /// The client did not declare the capability.
    #[error("the client does not support {0}; answer without it")]
    Unsupported(&'static str),
    /// The elicitation form is not one MCP allows.
    #[error("the elicitation form is invalid: {0}")]
    InvalidSchema(String),
    /// The request failed or its answer was unusable.
    #[error("the request to the client failed: {0}")]
    Failed(String),
}

impl crate::failure::classify::Classify for ClientRequestError {
    fn classification(&self) -> crate::failure::classify::Classification {
        // The model can act on each (answer without the feature, ask differently); a
        // request that reached a user is never repeated by a retry.
        crate::failure::classify::Classification::of(
            crate::failure::classify::ErrorClass::InvalidInput,
        )
    }
}
