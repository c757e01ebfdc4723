//! The errors a client reads about resources, prompts and completions. Names and URIs
//! come from the client: they are quoted cut (`limits.rs`).

/// `resources/read` of a URI no resource has and no template matches.
pub(crate) fn resource_not_found(uri: &str) -> String {
    format!("no resource has the URI `{}`", quoted_uri(uri))
}

/// A URI that matches a template whose variables did not decode.
pub(crate) fn resource_uri_invalid(uri: &str, details: &str) -> String {
    format!(
        "the URI `{}` matches a template but its variables are invalid: {details}",
        quoted_uri(uri)
    )
}

/// A resource closure that failed or panicked; the details are logged under `reference`.
pub(crate) fn resource_read_failed(uri: &str, reference: &str) -> String {
    format!(
        "reading `{}` failed (reference {reference}; the details are in the server log)",
        quoted_uri(uri)
    )
}

/// `resources/subscribe` to a URI no resource has. (Quoted whole, as it always was; a
/// read's URI is cut.)
pub(crate) fn subscribe_not_found(uri: &str) -> String {
    format!("no resource has the URI `{uri}`")
}

/// The client's URI, quoted whole up to a generous URI length and cut beyond it.
fn quoted_uri(uri: &str) -> std::borrow::Cow<'_, str> {
    crate::limits::cut(uri, 2048)
}

/// `prompts/get` of a name no prompt has; `prompts` are the names that exist.
pub(crate) fn prompt_not_found(name: &str, prompts: &[String]) -> String {
    let names: Vec<String> = prompts.iter().map(|name| format!("`{name}`")).collect();
    format!(
        "no prompt is named `{}`; the prompts are: {}",
        crate::limits::name(name),
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )
}

/// Required prompt arguments that were not given (or were null).
pub(crate) fn missing_prompt_arguments(missing: &[&str]) -> String {
    format!("missing required argument(s): {}", missing.join(", "))
}

/// A prompt's arguments that are missing or did not decode.
pub(crate) fn prompt_arguments_invalid(name: &str, details: &str) -> String {
    format!(
        "invalid arguments for prompt `{}`: {details}",
        crate::limits::name(name)
    )
}

/// A prompt closure that failed or panicked; the details are logged under `reference`.
pub(crate) fn prompt_failed(name: &str, reference: &str) -> String {
    format!(
        "rendering prompt `{}` failed (reference {reference}; the details are in the server log)",
        crate::limits::name(name)
    )
}

/// `completion/complete` for a prompt that does not exist.
pub(crate) fn completion_unknown_prompt(name: &str) -> String {
    format!("no prompt is named `{name}`")
}

/// `completion/complete` for a resource template that is not registered.
pub(crate) fn completion_unknown_template(uri: &str) -> String {
    format!("no resource template is `{uri}`")
}

/// `completion/complete` for a reference of a kind fusion does not complete.
pub(crate) fn completion_unsupported_reference() -> String {
    "unsupported completion reference".to_owned()
}

/// A completer that panicked.
pub(crate) fn completion_failed() -> String {
    "the completion failed".to_owned()
}
