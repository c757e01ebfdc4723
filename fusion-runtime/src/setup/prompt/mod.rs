//! Prompts: message templates a client offers its user (`prompts/list`, `prompts/get`),
//! with arguments, and completions for those arguments and for resource-template
//! variables (`completion/complete`).
//!
//! ```
//! use std::collections::HashMap;
//! use fusion_runtime::{prompt::PromptArg, prompt::PromptInfo, prelude::*};
//!
//! let review = PromptInfo::new("review", "Review a piece of code")
//!     .arg(PromptArg::required("language", "The language").choices(["rust", "python", "go"]))
//!     .optional("focus", "What to look at first");
//! let server = Server::builder("reviewer", "1.0.0")
//!     .prompt(review, |args: HashMap<String, String>| async move {
//!         format!("Review this {} code.", args["language"])
//!     })
//!     .build();
//! assert_eq!(server.prompts()[0].name, "review");
//! ```
//!
//! The closure takes the arguments as anything that deserializes from a map of strings
//! (a `HashMap<String, String>`, a struct of `String` and `Option<String>` fields, or `()`
//! for a prompt without arguments), and returns text (one user message), a
//! [`PromptMessage`](rmcp::model::PromptMessage) or several, or a `Result` of these.

mod builder;

use std::{collections::HashMap, fmt::Display, sync::Arc};

use rmcp::model::{ContentBlock, PromptMessage, Role};
use serde_json::{Map, Value};

use crate::{
    call::Call, failure::wording::catalog as words, future::BoxFuture, setup::error::BuildError,
};

/// A prompt's name, description and arguments, as `prompts/list` shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptInfo {
    pub(crate) name: String,
    title: Option<String>,
    description: String,
    arguments: Vec<PromptArg>,
}

impl PromptInfo {
    /// A prompt called `name`, described by `description`.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
        }
    }

    /// A title for people.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: PromptArg) -> Self {
        self.arguments.push(arg);
        self
    }

    /// Adds a required argument.
    pub fn required(self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.arg(PromptArg::required(name, description))
    }

    /// Adds an optional argument.
    pub fn optional(self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.arg(PromptArg::optional(name, description))
    }

    fn to_wire(&self) -> rmcp::model::Prompt {
        let arguments = (!self.arguments.is_empty()).then(|| {
            self.arguments
                .iter()
                .map(|arg| {
                    rmcp::model::PromptArgument::new(&arg.name)
                        .with_description(&arg.description)
                        .with_required(arg.required)
                })
                .collect()
        });
        let mut prompt =
            rmcp::model::Prompt::new(&self.name, Some(self.description.clone()), arguments);
        if let Some(title) = &self.title {
            prompt = prompt.with_title(title);
        }
        prompt
    }
}

/// One argument of a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptArg {
    name: String,
    description: String,
    required: bool,
    /// Values offered by `completion/complete` (filtered by the typed prefix).
    choices: Vec<String>,
}

impl PromptArg {
    /// A required argument.
    pub fn required(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            required: true,
            choices: Vec::new(),
        }
    }

    /// An optional argument.
    pub fn optional(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            required: false,
            ..Self::required(name, description)
        }
    }

    /// Values that `completion/complete` suggests for this argument: those that start
    /// with what the user typed (ignoring case). For computed suggestions, see
    /// [`ServerBuilder::complete_prompt_argument`](crate::ServerBuilder::complete_prompt_argument).
    pub fn choices<I, S>(mut self, choices: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.choices = choices.into_iter().map(Into::into).collect();
        self
    }
}

/// What a prompt closure may return: text (one user message), a
/// [`PromptMessage`](rmcp::model::PromptMessage), several, or a `Result` of these whose
/// error is masked for the client and logged.
pub trait IntoPromptMessages {
    /// The messages, or the error's text.
    ///
    /// # Errors
    /// The closure's own error, as text.
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, String>;
}

impl IntoPromptMessages for String {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, String> {
        Ok(vec![user(self)])
    }
}

impl IntoPromptMessages for &'static str {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, String> {
        Ok(vec![user(self)])
    }
}

impl IntoPromptMessages for PromptMessage {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, String> {
        Ok(vec![self])
    }
}

impl IntoPromptMessages for Vec<PromptMessage> {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, String> {
        Ok(self)
    }
}

impl<T: IntoPromptMessages, E: Display> IntoPromptMessages for Result<T, E> {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, String> {
        self.map_err(|error| error.to_string())?
            .into_prompt_messages()
    }
}

/// A user message with text.
pub fn user(text: impl Into<String>) -> PromptMessage {
    PromptMessage::new_text(Role::User, text)
}

/// An assistant message with text.
pub fn assistant(text: impl Into<String>) -> PromptMessage {
    PromptMessage::new_text(Role::Assistant, text)
}

/// A user message with any content block (an image from
/// [`resource::image`](crate::resource::image), an embedded resource from
/// [`resource::embedded_text`](crate::resource::embedded_text), ...).
///
/// ```
/// use fusion_runtime::{prompt, resource};
///
/// let message = prompt::user_block(resource::image(&[0x89, b'P'], "image/png"));
/// assert_eq!(serde_json::to_value(&message).unwrap()["content"]["type"], "image");
/// ```
pub fn user_block(content: ContentBlock) -> PromptMessage {
    PromptMessage::new(Role::User, content)
}

/// A prompt's closure behind one type: the arguments and the request's [`Call`] (which a
/// closure registered with [`ServerBuilder::prompt`](crate::ServerBuilder::prompt) ignores).
pub(crate) type RenderFn = Arc<
    dyn Fn(Map<String, Value>, Call) -> BoxFuture<'static, Result<Vec<PromptMessage>, Render>>
        + Send
        + Sync,
>;

/// Why rendering a prompt failed.
#[derive(Debug)]
pub(crate) enum Render {
    Arguments(String),
    Error(String),
}

/// A completion source: the partial value and the other arguments already given, to the
/// suggestions.
pub(crate) type Completer =
    Arc<dyn Fn(&str, &HashMap<String, String>) -> Vec<String> + Send + Sync>;

pub(crate) struct RegisteredPrompt {
    pub(crate) info: PromptInfo,
    pub(crate) render: RenderFn,
}

/// What completions apply to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CompletionTarget {
    Prompt { prompt: String, argument: String },
    Template { template: String, variable: String },
}

/// The prompts and completions of a server, and the mistakes made registering them
/// (reported by `try_build`): its catalog beside the resources' (`catalog.rs`).
#[derive(Default)]
pub(crate) struct Prompts {
    pub(crate) prompts: Vec<RegisteredPrompt>,
    pub(crate) completers: HashMap<CompletionTarget, Completer>,
    pub(crate) errors: Vec<BuildError>,
}

/// Why `prompts/get` failed.
#[derive(Debug)]
pub(crate) enum PromptError {
    /// No prompt has this name; the names that exist.
    NotFound(Vec<String>),
    /// Required arguments are missing, or the arguments did not decode.
    InvalidArguments(String),
    /// The closure failed or panicked; the details are logged under `reference`.
    Failed { reference: String },
}

impl Prompts {
    pub(crate) fn take_errors(&mut self) -> Vec<BuildError> {
        let mut errors = std::mem::take(&mut self.errors);
        for target in self.completers.keys() {
            if let CompletionTarget::Prompt { prompt, argument } = target {
                let known = self.prompts.iter().any(|registered| {
                    registered.info.name == *prompt
                        && registered
                            .info
                            .arguments
                            .iter()
                            .any(|arg| arg.name == *argument)
                });
                if !known {
                    errors.push(BuildError::UnknownTarget(format!("{prompt}({argument})")));
                }
            }
        }
        errors
    }

    pub(crate) fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    pub(crate) fn has_completions(&self) -> bool {
        !self.completers.is_empty()
            || self.prompts.iter().any(|prompt| {
                prompt
                    .info
                    .arguments
                    .iter()
                    .any(|arg| !arg.choices.is_empty())
            })
    }

    /// Whether a prompt is registered as `name`.
    pub(crate) fn knows(&self, name: &str) -> bool {
        self.prompts.iter().any(|prompt| prompt.info.name == name)
    }

    pub(crate) fn list(&self) -> Vec<rmcp::model::Prompt> {
        self.prompts
            .iter()
            .map(|prompt| prompt.info.to_wire())
            .collect()
    }

    /// Renders `name` with `arguments`; the closure asks the client through `call`.
    pub(crate) async fn get(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        call: Call,
    ) -> Result<rmcp::model::GetPromptResult, PromptError> {
        let Some(prompt) = self.prompts.iter().find(|prompt| prompt.info.name == name) else {
            return Err(PromptError::NotFound(
                self.prompts
                    .iter()
                    .map(|prompt| prompt.info.name.clone())
                    .collect(),
            ));
        };
        let arguments = arguments.unwrap_or_default();
        let missing: Vec<&str> = prompt
            .info
            .arguments
            .iter()
            .filter(|arg| {
                let given = arguments
                    .get(&arg.name)
                    .is_some_and(|value| !value.is_null());
                arg.required && !given
            })
            .map(|arg| arg.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(PromptError::InvalidArguments(
                words::missing_prompt_arguments(&missing),
            ));
        }
        let render = Arc::clone(&prompt.render);
        let ran = crate::failure::panic::catch(async move { render(arguments, call).await }).await;
        match ran {
            Ok(Ok(messages)) => Ok(rmcp::model::GetPromptResult::new(messages)
                .with_description(prompt.info.description.clone())),
            Ok(Err(Render::Arguments(details))) => Err(PromptError::InvalidArguments(details)),
            Ok(Err(Render::Error(error))) => {
                let reference = crate::failure::panic::next_reference();
                tracing::error!(target: "fusion::prompt", prompt = name, reference, %error, "rendering a prompt failed");
                Err(PromptError::Failed { reference })
            }
            Err(message) => {
                let reference = crate::failure::panic::next_reference();
                tracing::error!(target: "fusion::prompt", prompt = name, reference, panic = %message, "a prompt closure panicked");
                Err(PromptError::Failed { reference })
            }
        }
    }

    /// Suggestions for a prompt argument or a template variable: the registered
    /// completer's, else the argument's choices that start with `partial`. At most 100.
    pub(crate) fn complete(
        &self,
        template_variables: &dyn Fn(&str) -> Option<Vec<String>>,
        reference: &rmcp::model::Reference,
        argument: &str,
        partial: &str,
        context: &HashMap<String, String>,
    ) -> Result<rmcp::model::CompletionInfo, String> {
        let target = match reference {
            rmcp::model::Reference::Prompt(prompt) => {
                if !self.prompts.iter().any(|p| p.info.name == prompt.name) {
                    return Err(words::completion_unknown_prompt(&prompt.name));
                }
                CompletionTarget::Prompt {
                    prompt: prompt.name.clone(),
                    argument: argument.to_owned(),
                }
            }
            rmcp::model::Reference::Resource(resource) => {
                if template_variables(&resource.uri).is_none() {
                    return Err(words::completion_unknown_template(&resource.uri));
                }
                CompletionTarget::Template {
                    template: resource.uri.clone(),
                    variable: argument.to_owned(),
                }
            }
            _ => return Err(words::completion_unsupported_reference()),
        };
        let values = if let Some(completer) = self.completers.get(&target) {
            let completer = Arc::clone(completer);
            crate::failure::panic::catch_sync(|| completer(partial, context))
                .map_err(|message| {
                    tracing::error!(target: "fusion::prompt", ?target, panic = %message, "a completer panicked");
                    words::completion_failed()
                })?
        } else {
            let choices = match &target {
                CompletionTarget::Prompt { prompt, argument } => self
                    .prompts
                    .iter()
                    .find(|p| p.info.name == *prompt)
                    .and_then(|p| p.info.arguments.iter().find(|arg| arg.name == *argument))
                    .map(|arg| arg.choices.as_slice())
                    .unwrap_or_default(),
                CompletionTarget::Template { .. } => &[],
            };
            filter_prefix(choices, partial)
        };
        let total = values.len();
        let shown: Vec<String> = values
            .into_iter()
            .take(rmcp::model::CompletionInfo::MAX_VALUES)
            .collect();
        let has_more = total > shown.len();
        rmcp::model::CompletionInfo::with_pagination(
            shown,
            Some(u32::try_from(total).unwrap_or(u32::MAX)),
            has_more,
        )
    }
}

/// The choices that start with `partial`, ignoring case, in their order.
pub fn filter_prefix(choices: &[String], partial: &str) -> Vec<String> {
    let partial = partial.to_lowercase();
    choices
        .iter()
        .filter(|choice| choice.to_lowercase().starts_with(&partial))
        .cloned()
        .collect()
}

impl PromptError {
    /// The message of a failed `prompts/get` of `name`, as the client reads it.
    pub(crate) fn message(&self, name: &str) -> String {
        match self {
            Self::NotFound(prompts) => words::prompt_not_found(name, prompts),
            Self::InvalidArguments(details) => words::prompt_arguments_invalid(name, details),
            Self::Failed { reference } => words::prompt_failed(name, reference),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_filter_by_prefix_ignoring_case() {
        let choices: Vec<String> = ["Paris", "park", "Rome"].map(String::from).to_vec();
        assert_eq!(filter_prefix(&choices, "par"), ["Paris", "park"]);
        assert_eq!(filter_prefix(&choices, ""), ["Paris", "park", "Rome"]);
        assert!(filter_prefix(&choices, "x").is_empty());
    }
}
