//! Tool search in the pipeline (`search/`): `search_tools` is answered here, from the
//! index of what the caller is shown; `call_tool` is unwrapped to the tool it names,
//! which then takes the whole pipeline as a call by its own name would; any other name
//! passes through untouched. Without tool search, nothing here runs.

use std::borrow::Cow;

use rmcp::model::{CallToolRequestParams, JsonObject, Tool};
use serde_json::{Map, Value};

use crate::{
    call::Call,
    failure::{Classification, ErrorClass, Failure, FailureKind},
    search::{
        CALL_TOOL, SEARCH_TOOLS,
        index::{IndexKey, Indexed, Searching, query_words},
        listed,
    },
    setup::{mounts::SearchedTool, registry::Listing, server::Server, visibility::Shown},
    tool::output::Outcome,
};

/// Where a call goes.
pub(super) enum Route<'a> {
    /// To a tool of the server's: the one called, or the one `call_tool` names.
    Tool(Cow<'a, str>, Value),
    /// `search_tools`, or a `call_tool` refused: answered with `outcome`, logged as a
    /// call of `tool` with `args`.
    Answered {
        tool: &'static str,
        args: Value,
        /// Boxed: a failure or a search's answer, far larger than the other variant.
        outcome: Box<Outcome>,
    },
}

/// Where a call of `tool` with `args` goes.
pub(super) fn route<'a, C: Send + Sync + 'static>(
    server: &Server<C>,
    tool: &'a str,
    args: Value,
    call: &Call,
) -> Route<'a> {
    let Some(searching) = server.inner.tool_search.as_ref() else {
        return Route::Tool(Cow::Borrowed(tool), args);
    };
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    if tool == SEARCH_TOOLS {
        let outcome = Box::new(search(server, searching, &args, call));
        return Route::Answered {
            tool: SEARCH_TOOLS,
            args,
            outcome,
        };
    }
    if tool != CALL_TOOL {
        return Route::Tool(Cow::Borrowed(tool), args);
    }
    let issues = searching.check_call(&args);
    if !issues.is_empty() {
        return Route::Answered {
            tool: CALL_TOOL,
            outcome: Box::new(Outcome::Failure(Failure::new(
                FailureKind::InvalidArguments(issues),
            ))),
            args,
        };
    }
    match unwrapped(&args) {
        Some((name, arguments)) if !is_listed(name) => {
            Route::Tool(Cow::Owned(name.to_owned()), arguments)
        }
        // Checked above: a string. Naming one of the two listed tools.
        _ => Route::Answered {
            tool: CALL_TOOL,
            args,
            outcome: Box::new(Outcome::Failure(invalid(&NotThroughCallTool))),
        },
    }
}

/// `call_tool`'s arguments, checked by its schema: the tool's name and its arguments.
fn unwrapped(args: &Value) -> Option<(&str, Value)> {
    let name = args.get("name")?.as_str()?;
    let arguments = args.get("arguments").cloned().unwrap_or(Value::Null);
    Some((name, arguments))
}

/// Whether `name` is one of the two tools of tool search.
fn is_listed(name: &str) -> bool {
    name == SEARCH_TOOLS || name == CALL_TOOL
}

/// `call_tool` that names `search_tools` or itself.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{CALL_TOOL}` calls the server's own tools; call `{SEARCH_TOOLS}` directly, and pass `{CALL_TOOL}` the name of a tool it found"
)]
struct NotThroughCallTool;

/// A failure the model fixes by changing its arguments, in `error`'s words.
fn invalid(error: &(dyn std::error::Error + 'static)) -> Failure {
    Failure::classified(Classification::of(ErrorClass::InvalidInput), error)
}

/// A `tools/call` of `call_tool` as the tool it names, when tool search is on and its
/// arguments are right: the protocol unwraps it first, so that what depends on the name
/// before the pipeline (a tool that runs as a task, the binding of a multi-round call's
/// state) sees the real tool. Anything else is left for [`route`] to answer.
pub(crate) fn unwrap_call_tool<C: Send + Sync + 'static>(
    server: &Server<C>,
    request: CallToolRequestParams,
) -> CallToolRequestParams {
    let Some(searching) = server.inner.tool_search.as_ref() else {
        return request;
    };
    if request.name != CALL_TOOL {
        return request;
    }
    let args = Value::Object(request.arguments.clone().unwrap_or_default());
    if !searching.check_call(&args).is_empty() {
        return request;
    }
    let Some((name, arguments)) = unwrapped(&args) else {
        return request;
    };
    if is_listed(name) {
        return request;
    }
    let arguments: Option<JsonObject> = match arguments {
        Value::Object(object) => Some(object),
        _ => None,
    };
    let mut request = request;
    request.name = name.to_owned().into();
    request.arguments = arguments;
    request
}

/// Answers one `search_tools`: the caller's tools that best match the query.
fn search<C: Send + Sync + 'static>(
    server: &Server<C>,
    searching: &Searching,
    args: &Value,
    call: &Call,
) -> Outcome {
    // The query's bounds first, in their own words: a megabyte of text is refused before
    // the schema's checks read it again.
    let query = args.get("query").and_then(Value::as_str);
    let words = match query.map(query_words) {
        Some(Err(refused)) => return Outcome::Failure(invalid(&refused)),
        Some(Ok(words)) => words,
        None => Vec::new(),
    };
    let issues = searching.check_search(args);
    if !issues.is_empty() {
        return Outcome::Failure(Failure::new(FailureKind::InvalidArguments(issues)));
    }
    // The schema requires a string `query`, so `words` are its words.
    let query = query.unwrap_or_default();
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .and_then(|limit| usize::try_from(limit).ok())
        .unwrap_or(searching.settings().limit());
    let shown = server.shown(call.request());
    let added = &server.inner.registry.added;
    let indexed = if added.is_empty() {
        searching.indexed(shown.as_ref(), || index(server, shown.as_ref(), Vec::new()))
    } else {
        // Read before the table: a change meanwhile makes the next search build anew.
        let generation = added.generation();
        let visibility = &server.inner.visibility;
        let searched = added.searched(|spec| visibility.shows(spec, call.request()));
        let key = IndexKey {
            shown: shown.clone(),
            added: searched.iter().map(|tool| tool.name).collect(),
        };
        searching.indexed_with_added(key, generation, || index(server, shown.as_ref(), searched))
    };
    let mounts = &server.inner.mounts;
    let (hits, matched) = indexed.search(&words, limit, |tool| mounts.is_listed(&tool.name));
    Outcome::Success(listed::answer(query, &hits, matched, indexed.len()))
}

/// The index of the tools a caller shown `shown` sees (`None`: all), as `tools/list`
/// would describe them without tool search, then the tools upstreams `added` since start
/// that it is shown.
fn index<C>(server: &Server<C>, shown: Option<&Shown>, added: Vec<SearchedTool>) -> Indexed {
    let registry = &server.inner.registry;
    let mut tools = match shown {
        None => registry.wire.clone(),
        Some(shown) => registry.shown_wire(shown),
    };
    let added_tags: std::collections::HashMap<&str, &[&str]> =
        added.iter().map(|tool| (tool.name, tool.tags)).collect();
    tools.extend(added.iter().map(|tool| tool.wire.clone()));
    // The words a listing does not show: the group, the actions, the handlers' own
    // names, the tags, of the handlers the caller is shown.
    let labels = |tool: &Tool| -> Vec<String> {
        let visible = |index: &usize| shown.is_none_or(|shown| shown.has(*index));
        let mut labels = Vec::new();
        let handler = |index: usize, labels: &mut Vec<String>| {
            if let Some(registered) = registry.tools.get(index) {
                let spec = &registered.definition.spec;
                labels.push(spec.name.to_owned());
                labels.extend(spec.group.map(str::to_owned));
                labels.extend(spec.action.map(str::to_owned));
                labels.extend(spec.tags.iter().map(|tag| (*tag).to_owned()));
            }
        };
        match registry.listing(&tool.name) {
            Some(Listing::Single(index)) => handler(index, &mut labels),
            Some(Listing::Group { actions, .. }) => {
                for (_, index) in actions.iter().filter(|(_, index)| visible(index)) {
                    handler(*index, &mut labels);
                }
            }
            None => {
                // An added tool: its tags (`upstream` and its prefix).
                if let Some(tags) = added_tags.get(tool.name.as_ref()) {
                    labels.extend(tags.iter().map(|tag| (*tag).to_owned()));
                }
            }
        }
        labels
    };
    Indexed::new(tools, labels)
}
