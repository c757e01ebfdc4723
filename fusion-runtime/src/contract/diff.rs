//! The rated difference between two contracts: each change, from the caller's side, as
//! [`Severity::Breaking`], [`Severity::Risky`], [`Severity::Safe`] or
//! [`Severity::Cosmetic`].
//!
//! The caller is a client (and the model behind it) that learned the old surface. This
//! file rates the tools, actions, hints, scopes, policies, resources and prompts; the
//! schemas are walked in `diff/schema_diff.rs`.

mod cost_diff;
mod schema_diff;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;

use crate::contract::model::{
    CacheContract, CircuitContract, Contract, Hints, PolicyContract, PromptContract,
    ResourceContract, RetryContract, TaskSupport, ToolContract, ToolSearchContract,
};

/// How a change looks to a caller who learned the old surface, from worst to least:
/// `Breaking > Risky > Safe > Cosmetic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// A title changed: nothing a caller does changes.
    Cosmetic,
    /// Something added or loosened: every call that worked still works.
    Safe,
    /// What the model reads, or how failures are recovered, changed: calls still validate,
    /// but may be chosen or behave differently.
    Risky,
    /// A call that worked may now fail, or do harm it did not do.
    Breaking,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Breaking => "BREAKING",
            Self::Risky => "RISKY",
            Self::Safe => "SAFE",
            Self::Cosmetic => "COSMETIC",
        })
    }
}

/// One difference between two contracts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The tool (or the resource's URI, the template, the prompt's name) it is about.
    pub tool: String,
    /// How it looks to a caller.
    pub severity: Severity,
    /// A sentence saying what changed.
    pub message: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.severity, self.tool, self.message)
    }
}

/// Every change from `old` to `new`, worst first (then by tool, then by message).
pub fn diff(old: &Contract, new: &Contract) -> Vec<Change> {
    let mut changes = Vec::new();
    for (name, old, new) in pairs(&old.tools, &new.tools) {
        let mut report = Report::new(name, &mut changes);
        match (old, new) {
            (Some(old), Some(new)) => rated_tool(&mut report, old, new),
            (Some(_), None) => report.push(Severity::Breaking, "the tool was removed"),
            (None, Some(_)) => report.push(Severity::Safe, "the tool was added"),
            (None, None) => {}
        }
    }
    let resources = [
        ("resource", &old.resources, &new.resources),
        (
            "resource template",
            &old.resource_templates,
            &new.resource_templates,
        ),
    ];
    for (kind, old, new) in resources {
        for (uri, old, new) in pairs(old, new) {
            resource(&mut Report::new(uri, &mut changes), kind, old, new);
        }
    }
    for (name, old, new) in pairs(&old.prompts, &new.prompts) {
        prompt(&mut Report::new(name, &mut changes), old, new);
    }
    tool_search(
        &mut Report::new("(tool search)", &mut changes),
        old.tool_search,
        new.tool_search,
    );
    Report::new("(surface)", &mut changes).surface_cost(old.cost, new.cost);
    if old.format != new.format {
        let message = format!("the format changed from {} to {}", old.format, new.format);
        Report::new("(contract)", &mut changes).push(Severity::Risky, message);
    }
    changes.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.tool.cmp(&b.tool))
            .then_with(|| a.message.cmp(&b.message))
    });
    changes
}

/// Tool search turned on or off, or its number of results changed. The tools stay
/// callable by name either way, but the model finds them another way: risky.
fn tool_search(
    report: &mut Report<'_>,
    old: Option<ToolSearchContract>,
    new: Option<ToolSearchContract>,
) {
    match (old, new) {
        (None, Some(_)) => report.push(
            Severity::Risky,
            "tools/list now lists `search_tools` and `call_tool` in place of the tools",
        ),
        (Some(_), None) => report.push(
            Severity::Risky,
            "tools/list lists every tool again, in place of `search_tools` and `call_tool`",
        ),
        (Some(old), Some(new)) if old != new => report.push(
            Severity::Safe,
            format!(
                "a search returns {} results by default (was {}), at most {} (was {})",
                new.default_limit, old.default_limit, new.max_limit, old.max_limit
            ),
        ),
        _ => {}
    }
}

/// Every name of either map, in order, with its value in each.
fn pairs<'a, V>(
    old: &'a BTreeMap<String, V>,
    new: &'a BTreeMap<String, V>,
) -> impl Iterator<Item = (&'a str, Option<&'a V>, Option<&'a V>)> {
    let names: BTreeSet<&'a String> = old.keys().chain(new.keys()).collect();
    names
        .into_iter()
        .map(move |name| (name.as_str(), old.get(name), new.get(name)))
}

/// Where the changes of one tool (or resource, template, prompt) go, each message led by
/// the action it is about, if any.
struct Report<'a> {
    /// The listed tool's name (the resource's URI, the template, the prompt's name).
    tool: &'a str,
    /// What each message starts with: empty, or the action's name.
    prefix: String,
    /// Every change of the diff so far.
    changes: &'a mut Vec<Change>,
}

impl<'a> Report<'a> {
    /// The changes of `tool`.
    fn new(tool: &'a str, changes: &'a mut Vec<Change>) -> Self {
        Self {
            tool,
            prefix: String::new(),
            changes,
        }
    }

    /// The changes of one action of the grouped tool: each message starts with its name.
    fn action(&mut self, name: &str) -> Report<'_> {
        let prefix = format!("{}action `{name}`: ", self.prefix);
        Report {
            tool: self.tool,
            prefix,
            changes: self.changes,
        }
    }

    /// Records one change.
    fn push(&mut self, severity: Severity, message: impl Display) {
        self.changes.push(Change {
            tool: self.tool.to_owned(),
            severity,
            message: format!("{}{message}", self.prefix),
        });
    }

    /// One optional text field: added, removed or changed, each at `severity`.
    fn text(&mut self, severity: Severity, what: &str, old: Option<&str>, new: Option<&str>) {
        let message = match (old, new) {
            (Some(old), Some(new)) if old != new => format!("{what} changed{}", from_to(old, new)),
            (None, Some(new)) => format!("{what} was added{}", aside("", new)),
            (Some(old), None) => format!("{what} was removed{}", aside("was ", old)),
            _ => return,
        };
        self.push(severity, message);
    }
}

/// ` from `old` to `new``, or nothing when either is too long for a message.
fn from_to(old: &str, new: &str) -> String {
    match (short(old), short(new)) {
        (Some(old), Some(new)) => format!(" from {old} to {new}"),
        _ => String::new(),
    }
}

/// ` (`text`)` led by `lead`, or nothing when the text is too long for a message.
fn aside(lead: &str, text: &str) -> String {
    short(text).map_or_else(String::new, |text| format!(" ({lead}{text})"))
}

/// A text in backticks, or `None` when it is too long for a message.
fn short(text: &str) -> Option<String> {
    (text.chars().count() <= 60).then(|| format!("`{text}`"))
}

/// A tool's changes, or, when no rule names the difference, one saying that it changed:
/// two contracts that differ never diff to nothing.
fn rated_tool(report: &mut Report, old: &ToolContract, new: &ToolContract) {
    let before = report.changes.len();
    tool(report, old, new);
    let unrated = report.changes.len() == before;
    report.tool_cost(old.cost, new.cost);
    // The cost is rated on its own line above; only the rest can be unrated.
    let uncosted = |tool: &ToolContract| ToolContract {
        cost: None,
        ..tool.clone()
    };
    if unrated && uncosted(old) != uncosted(new) {
        report.push(
            Severity::Risky,
            "its contract changed in a way no rule rates",
        );
    }
}

/// The changes of one tool, or of one action of a grouped tool.
fn tool(report: &mut Report, old: &ToolContract, new: &ToolContract) {
    let (old_title, new_title) = (old.title.as_deref(), new.title.as_deref());
    report.text(Severity::Cosmetic, "the title", old_title, new_title);
    // The model picks a tool, and fills in its arguments, by what the description says.
    let (old_text, new_text) = (old.description.as_str(), new.description.as_str());
    report.text(
        Severity::Risky,
        "the description",
        Some(old_text),
        Some(new_text),
    );
    report.schemas(old, new);
    hints(report, &old.annotations, &new.annotations);
    scopes(report, &old.scopes, &new.scopes);
    tags(report, &old.tags, &new.tags);
    policy(report, old.policy.as_ref(), new.policy.as_ref());
    task(report, old.task, new.task);
    for (name, old, new) in pairs(&old.actions, &new.actions) {
        match (old, new) {
            (Some(old), Some(new)) => tool(&mut report.action(name), old, new),
            (Some(_), None) => {
                report.push(Severity::Breaking, format!("action `{name}` was removed"))
            }
            (None, Some(_)) => report.push(Severity::Safe, format!("action `{name}` was added")),
            (None, None) => {}
        }
    }
}

/// The OAuth scopes a caller must hold: a caller without a new one is refused.
fn scopes(report: &mut Report, old: &[String], new: &[String]) {
    for scope in new.iter().filter(|scope| !old.contains(scope)) {
        report.push(
            Severity::Breaking,
            format!("scope `{scope}` is now required"),
        );
    }
    for scope in old.iter().filter(|scope| !new.contains(scope)) {
        report.push(
            Severity::Safe,
            format!("scope `{scope}` is no longer required"),
        );
    }
}

/// The tags: visibility rules read them, so a change may show the tool to other callers,
/// or hide it from some.
fn tags(report: &mut Report, old: &[String], new: &[String]) {
    for tag in new.iter().filter(|tag| !old.contains(tag)) {
        report.push(
            Severity::Risky,
            format!("tag `{tag}` added: callers shown the tool by tag may change"),
        );
    }
    for tag in old.iter().filter(|tag| !new.contains(tag)) {
        report.push(
            Severity::Risky,
            format!("tag `{tag}` removed: callers shown the tool by tag may change"),
        );
    }
}

/// The behaviour hints: clients confirm, retry or auto-approve calls by them.
fn hints(report: &mut Report, old: &Hints, new: &Hints) {
    // A client that runs a read-only tool unconfirmed would now let it write.
    let lost = (Severity::Breaking, "the tool is no longer read-only");
    let gained = (Severity::Safe, "the tool became read-only");
    hint(
        report,
        "readOnlyHint",
        (old.read_only, new.read_only),
        lost,
        gained,
    );
    // A client that ran it unconfirmed would now let it destroy.
    let lost = (Severity::Safe, "the tool is no longer destructive");
    let gained = (Severity::Breaking, "the tool became destructive");
    hint(
        report,
        "destructiveHint",
        (old.destructive, new.destructive),
        lost,
        gained,
    );
    // A caller that retries after a timeout may now repeat the tool's effect.
    let lost = (Severity::Risky, "the tool is no longer idempotent");
    let gained = (Severity::Safe, "the tool became idempotent");
    hint(
        report,
        "idempotentHint",
        (old.idempotent, new.idempotent),
        lost,
        gained,
    );
    if old.open_world != new.open_world {
        let (from, to) = (hint_text(old.open_world), hint_text(new.open_world));
        report.push(
            Severity::Risky,
            format!("`openWorldHint` changed from {from} to {to}"),
        );
    }
}

/// One hint: `lost` when `Some(true)` goes away, `gained` when it arrives. Unset and
/// `false` trading places is Cosmetic, except for `destructiveHint`, which MCP reads as
/// `true` when unset: a client then assumes the other way, so it is Risky.
fn hint(
    report: &mut Report,
    name: &str,
    (old, new): (Option<bool>, Option<bool>),
    lost: (Severity, &str),
    gained: (Severity, &str),
) {
    match (old == Some(true), new == Some(true)) {
        (true, false) => report.push(lost.0, lost.1),
        (false, true) => report.push(gained.0, gained.1),
        _ if old != new => {
            let unset_is_true = name == "destructiveHint";
            let severity = if unset_is_true {
                Severity::Risky
            } else {
                Severity::Cosmetic
            };
            let (from, to) = (hint_text(old), hint_text(new));
            report.push(severity, format!("`{name}` changed from {from} to {to}"));
        }
        _ => {}
    }
}

/// A hint as a message shows it.
fn hint_text(hint: Option<bool>) -> String {
    hint.map_or_else(|| "unset".to_owned(), |hint| hint.to_string())
}

/// The recovery promises. Every call still validates but may fail, wait or repeat where
/// it did not, so each difference is Risky.
fn policy(report: &mut Report, old: Option<&PolicyContract>, new: Option<&PolicyContract>) {
    let (old, new) = match (old, new) {
        (Some(old), Some(new)) => (old, new),
        (None, Some(_)) => return report.push(Severity::Risky, "a recovery policy was added"),
        (Some(_), None) => return report.push(Severity::Risky, "the recovery policy was dropped"),
        (None, None) => return,
    };
    let timeouts = (Some(old.timeout_ms), Some(new.timeout_ms));
    setting(report, "the timeout", timeouts, |ms: &u64| {
        format!("{ms} ms")
    });
    setting(
        report,
        "the retry policy",
        (old.retry, new.retry),
        retry_text,
    );
    setting(
        report,
        "the circuit breaker",
        (old.circuit, new.circuit),
        circuit_text,
    );
    let limits = (Some(old.max_output_bytes), Some(new.max_output_bytes));
    setting(report, "the output limit", limits, |bytes: &u64| {
        format!("{bytes} bytes")
    });
    let keys = (old.idempotency_key.as_ref(), new.idempotency_key.as_ref());
    setting(report, "the idempotency key", keys, |key: &&String| {
        (*key).clone()
    });
    // Added: calls that ran side by side now wait for each other. Dropped: calls on one
    // key may now run at once, and interleave their writes.
    let serialized = (old.serialize.as_ref(), new.serialize.as_ref());
    setting(
        report,
        "the serialized argument",
        serialized,
        |key: &&String| (*key).clone(),
    );
    // Added: answers may now be up to its age old. Dropped: every call reaches the source.
    setting(
        report,
        "the cache",
        (old.cache.as_ref(), new.cache.as_ref()),
        |cache: &&CacheContract| cache_text(cache),
    );
    // A write that stops invalidating a cached read leaves that read stale after it.
    let invalidated = |policy: &PolicyContract| {
        (!policy.invalidates.is_empty()).then(|| policy.invalidates.join(", "))
    };
    setting(
        report,
        "the list of invalidated tools",
        (invalidated(old), invalidated(new)),
        |names: &String| names.clone(),
    );
}

/// A cache policy as a message shows it.
fn cache_text(cache: &CacheContract) -> String {
    format!(
        "{} ms, stale {} ms, {}",
        cache.ttl_ms, cache.stale_if_error_ms, cache.scope
    )
}

/// One recovery setting, Risky whether added, dropped or changed.
fn setting<T: PartialEq>(
    report: &mut Report,
    what: &str,
    (old, new): (Option<T>, Option<T>),
    show: impl Fn(&T) -> String,
) {
    let message = match (&old, &new) {
        (Some(old), Some(new)) if old != new => {
            format!("{what} changed from `{}` to `{}`", show(old), show(new))
        }
        (None, Some(new)) => format!("{what} was added (`{}`)", show(new)),
        (Some(old), None) => format!("{what} was dropped (was `{}`)", show(old)),
        _ => return,
    };
    report.push(Severity::Risky, message);
}

/// A retry policy as a message shows it.
fn retry_text(retry: &RetryContract) -> String {
    let RetryContract {
        attempts,
        backoff_ms,
        max_backoff_ms,
    } = retry;
    format!("{attempts} attempts, backoff {backoff_ms} ms up to {max_backoff_ms} ms")
}

/// A circuit breaker as a message shows it.
fn circuit_text(circuit: &CircuitContract) -> String {
    let CircuitContract {
        failures,
        window_ms,
        cooldown_ms,
    } = circuit;
    format!("{failures} failures in {window_ms} ms, open for {cooldown_ms} ms")
}

/// Task support. A client without the tasks extension cannot call a tool that only runs
/// as a task; any other move changes how a call runs, not whether it can.
fn task(report: &mut Report, old: Option<TaskSupport>, new: Option<TaskSupport>) {
    if old == new {
        return;
    }
    let name = |task: Option<TaskSupport>| match task {
        None => "none",
        Some(TaskSupport::Optional) => "optional",
        Some(TaskSupport::Required) => "required",
    };
    let required = new == Some(TaskSupport::Required);
    let severity = if required {
        Severity::Breaking
    } else {
        Severity::Risky
    };
    let message = format!("task support changed from {} to {}", name(old), name(new));
    report.push(severity, message);
}

/// A resource, by its URI, or a resource template, by its URI template (`kind` says which).
fn resource(
    report: &mut Report,
    kind: &str,
    old: Option<&ResourceContract>,
    new: Option<&ResourceContract>,
) {
    let (old, new) = match (old, new) {
        (Some(old), Some(new)) => (old, new),
        (Some(_), None) => {
            return report.push(Severity::Breaking, format!("the {kind} was removed"));
        }
        (None, Some(_)) => return report.push(Severity::Safe, format!("the {kind} was added")),
        (None, None) => return,
    };
    // Reads go by URI; the name is what a client lists and the model reads.
    report.text(
        Severity::Risky,
        "the name",
        Some(&old.name),
        Some(&new.name),
    );
    let (old_title, new_title) = (old.title.as_deref(), new.title.as_deref());
    report.text(Severity::Cosmetic, "the title", old_title, new_title);
    let (old_text, new_text) = (old.description.as_deref(), new.description.as_deref());
    report.text(Severity::Risky, "the description", old_text, new_text);
    // A caller parses the content by its MIME type.
    let (old_mime, new_mime) = (old.mime_type.as_deref(), new.mime_type.as_deref());
    report.text(Severity::Risky, "the MIME type", old_mime, new_mime);
}

/// A prompt, by its name, and its arguments.
fn prompt(report: &mut Report, old: Option<&PromptContract>, new: Option<&PromptContract>) {
    let (old, new) = match (old, new) {
        (Some(old), Some(new)) => (old, new),
        (Some(_), None) => return report.push(Severity::Breaking, "the prompt was removed"),
        (None, Some(_)) => return report.push(Severity::Safe, "the prompt was added"),
        (None, None) => return,
    };
    let (old_title, new_title) = (old.title.as_deref(), new.title.as_deref());
    report.text(Severity::Cosmetic, "the title", old_title, new_title);
    let (old_text, new_text) = (old.description.as_deref(), new.description.as_deref());
    report.text(Severity::Risky, "the description", old_text, new_text);
    for (name, old, new) in pairs(&old.arguments, &new.arguments) {
        let argument = format!("argument `{name}`");
        // A caller that does not send a required argument is refused.
        let (severity, message) = match (old, new) {
            (Some(_), None) => (Severity::Breaking, format!("{argument} was removed")),
            (None, Some(new)) if new.required => (
                Severity::Breaking,
                format!("{argument} was added as required"),
            ),
            (None, Some(_)) => (Severity::Safe, format!("optional {argument} was added")),
            (Some(old), Some(new)) => {
                let (old_text, new_text) = (old.description.as_deref(), new.description.as_deref());
                let what = format!("{argument}: the description");
                report.text(Severity::Risky, &what, old_text, new_text);
                match (old.required, new.required) {
                    (false, true) => (Severity::Breaking, format!("{argument} became required")),
                    (true, false) => (Severity::Safe, format!("{argument} became optional")),
                    _ => continue,
                }
            }
            (None, None) => continue,
        };
        report.push(severity, message);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::contract::model::{FORMAT, PromptArgumentContract};

    /// A contract with these tools.
    fn contract(tools: Vec<(&str, ToolContract)>) -> Contract {
        Contract {
            format: FORMAT,
            tools: tools
                .into_iter()
                .map(|(name, tool)| (name.to_owned(), tool))
                .collect(),
            resources: BTreeMap::new(),
            resource_templates: BTreeMap::new(),
            prompts: BTreeMap::new(),
            tool_search: None,
            cost: None,
        }
    }

    /// A tool taking this input schema, with a policy as a built server gives it.
    fn taking(schema: Value) -> ToolContract {
        ToolContract {
            description: "Find notes.".to_owned(),
            input_schema: Some(schema),
            policy: Some(PolicyContract {
                timeout_ms: 30_000,
                ..PolicyContract::default()
            }),
            ..ToolContract::default()
        }
    }

    /// The changes between two versions of the tool `find`.
    fn tools(old: ToolContract, new: ToolContract) -> Vec<Change> {
        diff(
            &contract(vec![("find", old)]),
            &contract(vec![("find", new)]),
        )
    }

    /// The changes between two input schemas of the tool `find`.
    fn inputs(old: Value, new: Value) -> Vec<Change> {
        tools(taking(old), taking(new))
    }

    /// An object schema with these properties, requiring `required`.
    fn object(properties: Value, required: &[&str]) -> Value {
        json!({"type": "object", "properties": properties, "required": required})
    }

    /// The changes between two schemas of the optional parameter `x`.
    fn parameter(old: Value, new: Value) -> Vec<Change> {
        inputs(
            object(json!({"x": old}), &[]),
            object(json!({"x": new}), &[]),
        )
    }

    /// The one change, with its severity and message.
    fn only(changes: &[Change]) -> (Severity, &str) {
        assert_eq!(changes.len(), 1, "one change: {changes:#?}");
        (changes[0].severity, changes[0].message.as_str())
    }

    /// Asserts one change of this severity whose message is this.
    #[track_caller]
    fn assert_only(changes: &[Change], severity: Severity, message: &str) {
        assert_eq!(only(changes), (severity, message), "{changes:#?}");
    }

    #[test]
    fn equal_contracts_have_no_change() {
        let schema = object(json!({"text": {"type": "string"}}), &["text"]);
        assert_eq!(inputs(schema.clone(), schema), Vec::new());
    }

    #[test]
    fn a_removed_tool_is_breaking_and_an_added_one_safe() {
        let old = contract(vec![("find", taking(json!({})))]);
        let new = contract(vec![("search", taking(json!({})))]);
        let changes = diff(&old, &new);
        assert_eq!(changes.len(), 2, "{changes:#?}");
        assert_eq!(
            (
                changes[0].severity,
                changes[0].tool.as_str(),
                changes[0].message.as_str()
            ),
            (Severity::Breaking, "find", "the tool was removed")
        );
        assert_eq!(
            (
                changes[1].severity,
                changes[1].tool.as_str(),
                changes[1].message.as_str()
            ),
            (Severity::Safe, "search", "the tool was added")
        );
    }

    /// A grouped tool with these actions.
    fn grouped(actions: Vec<(&str, ToolContract)>) -> ToolContract {
        ToolContract {
            description: "The users.".to_owned(),
            actions: actions
                .into_iter()
                .map(|(name, action)| (name.to_owned(), action))
                .collect(),
            ..ToolContract::default()
        }
    }

    #[test]
    fn a_removed_action_is_breaking_and_an_added_one_safe() {
        let old = grouped(vec![
            ("find", taking(json!({}))),
            ("delete", taking(json!({}))),
        ]);
        let new = grouped(vec![
            ("find", taking(json!({}))),
            ("create", taking(json!({}))),
        ]);
        let changes = tools(old, new);
        assert_eq!(changes.len(), 2, "{changes:#?}");
        assert_eq!(
            (changes[0].severity, changes[0].message.as_str()),
            (Severity::Breaking, "action `delete` was removed")
        );
        assert_eq!(
            (changes[1].severity, changes[1].message.as_str()),
            (Severity::Safe, "action `create` was added")
        );
        assert_eq!(changes[0].tool, "find", "the listed tool's name");
    }

    #[test]
    fn a_parameter_that_became_required_is_breaking() {
        let properties = json!({"text": {"type": "string"}});
        let changes = inputs(
            object(properties.clone(), &[]),
            object(properties, &["text"]),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `text` became required",
        );
    }

    #[test]
    fn a_parameter_added_as_required_is_breaking() {
        let old = object(json!({"text": {"type": "string"}}), &["text"]);
        let new = object(
            json!({"text": {"type": "string"}, "limit": {"type": "integer"}}),
            &["limit", "text"],
        );
        assert_only(
            &inputs(old, new),
            Severity::Breaking,
            "parameter `limit` was added as required",
        );
    }

    #[test]
    fn an_optional_parameter_added_is_safe() {
        let old = object(json!({"text": {"type": "string"}}), &["text"]);
        let new = object(
            json!({"text": {"type": "string"}, "limit": {"type": "integer"}}),
            &["text"],
        );
        assert_only(
            &inputs(old, new),
            Severity::Safe,
            "optional parameter `limit` was added",
        );
    }

    #[test]
    fn a_removed_parameter_is_breaking() {
        let old = object(
            json!({"text": {"type": "string"}, "limit": {"type": "integer"}}),
            &["text"],
        );
        let new = object(json!({"text": {"type": "string"}}), &["text"]);
        assert_only(
            &inputs(old, new),
            Severity::Breaking,
            "parameter `limit` was removed",
        );
        // Removed while required: one change, not also "became optional".
        let old = object(json!({"text": {"type": "string"}}), &["text"]);
        let changes = inputs(old, object(json!({}), &[]));
        assert_only(&changes, Severity::Breaking, "parameter `text` was removed");
    }

    #[test]
    fn a_parameter_that_became_optional_is_safe() {
        let properties = json!({"text": {"type": "string"}});
        let changes = inputs(
            object(properties.clone(), &["text"]),
            object(properties, &[]),
        );
        assert_only(&changes, Severity::Safe, "parameter `text` became optional");
    }

    #[test]
    fn a_narrowed_type_is_breaking() {
        let changes = parameter(
            json!({"type": ["string", "null"]}),
            json!({"type": "string"}),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: type narrowed from `null or string` to `string`",
        );
        let changes = parameter(json!({"type": "number"}), json!({"type": "integer"}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: type narrowed from `number` to `integer`",
        );
        // schemars' other spelling of an `Option`.
        let nullable =
            json!({"anyOf": [{"type": "string"}, {"type": "null"}], "description": "A name."});
        let changes = parameter(
            nullable,
            json!({"type": "string", "description": "A name."}),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: type narrowed from `null or string` to `string`",
        );
        // A `oneOf` (a Rust enum) that no longer takes null.
        let variants = json!([{"const": "a"}, {"const": "b"}]);
        let nullable = json!({"anyOf": [{"oneOf": variants}, {"type": "null"}]});
        let changes = parameter(nullable, json!({"oneOf": variants}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: no longer accepts null",
        );
    }

    #[test]
    fn a_type_changed_to_an_unrelated_one_is_breaking() {
        let changes = parameter(json!({"type": "string"}), json!({"type": "integer"}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: type changed from `string` to `integer`",
        );
    }

    #[test]
    fn a_widened_type_is_safe() {
        let changes = parameter(json!({"type": "integer"}), json!({"type": "number"}));
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: type widened from `integer` to `number`",
        );
        let nullable = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
        let changes = parameter(json!({"type": "string"}), nullable);
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: type widened from `string` to `null or string`",
        );
        let changes = parameter(json!({"type": "string"}), json!({}));
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: type widened from `string` to `any`",
        );
    }

    #[test]
    fn a_tightened_or_added_bound_is_breaking() {
        let changes = parameter(
            json!({"type": "integer", "maximum": 100}),
            json!({"type": "integer", "maximum": 50}),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `maximum` tightened from 100 to 50",
        );
        for (key, old, new) in [
            ("minimum", 1, 2),
            ("exclusiveMinimum", 0, 1),
            ("minLength", 1, 3),
            ("minItems", 0, 1),
            ("minProperties", 0, 2),
            ("exclusiveMaximum", 10, 9),
            ("maxLength", 80, 40),
            ("maxItems", 10, 5),
            ("maxProperties", 4, 3),
        ] {
            let changes = parameter(json!({key: old}), json!({key: new}));
            assert_only(
                &changes,
                Severity::Breaking,
                &format!("parameter `x`: `{key}` tightened from {old} to {new}"),
            );
            let changes = parameter(json!({}), json!({key: new}));
            assert_only(
                &changes,
                Severity::Breaking,
                &format!("parameter `x`: `{key}` added ({new})"),
            );
        }
    }

    #[test]
    fn a_loosened_or_removed_bound_is_safe() {
        for (key, old, new) in [
            ("minimum", 2, 1),
            ("minLength", 3, 0),
            ("maximum", 50, 100),
            ("maxItems", 5, 10),
        ] {
            let changes = parameter(json!({key: old}), json!({key: new}));
            assert_only(
                &changes,
                Severity::Safe,
                &format!("parameter `x`: `{key}` loosened from {old} to {new}"),
            );
            let changes = parameter(json!({key: old}), json!({}));
            assert_only(
                &changes,
                Severity::Safe,
                &format!("parameter `x`: `{key}` removed (was {old})"),
            );
        }
        // The same bound spelled as a float is no change.
        assert_eq!(
            parameter(json!({"maximum": 5}), json!({"maximum": 5.0})).len(),
            1,
            "only the catch-all"
        );
    }

    #[test]
    fn a_multiple_of_added_or_changed_is_breaking() {
        let changes = parameter(
            json!({"type": "integer"}),
            json!({"type": "integer", "multipleOf": 5}),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `multipleOf` added (5)",
        );
        let changes = parameter(json!({"multipleOf": 2}), json!({"multipleOf": 3}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `multipleOf` changed from 2 to 3",
        );
        let changes = parameter(json!({"multipleOf": 2}), json!({}));
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: `multipleOf` removed (was 2)",
        );
    }

    #[test]
    fn a_pattern_or_format_added_or_changed_is_breaking() {
        let changes = parameter(
            json!({"type": "string"}),
            json!({"type": "string", "pattern": "^[a-z]+$"}),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `pattern` added (`^[a-z]+$`)",
        );
        let changes = parameter(json!({"pattern": "^a"}), json!({"pattern": "^b"}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `pattern` changed from `^a` to `^b`",
        );
        let changes = parameter(json!({}), json!({"format": "email"}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `format` added (`email`)",
        );
        let changes = parameter(json!({"format": "email"}), json!({"format": "uri"}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `format` changed from `email` to `uri`",
        );
    }

    #[test]
    fn a_pattern_or_format_removed_is_safe() {
        let changes = parameter(json!({"pattern": "^a"}), json!({}));
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: `pattern` removed (was `^a`)",
        );
        let changes = parameter(json!({"format": "email"}), json!({}));
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: `format` removed (was `email`)",
        );
    }

    #[test]
    fn an_enum_value_removed_or_a_const_changed_is_breaking() {
        let changes = parameter(
            json!({"enum": ["a", "b", "c"]}),
            json!({"enum": ["a", "c"]}),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: enum value `b` removed",
        );
        let changes = parameter(
            json!({"type": "string"}),
            json!({"type": "string", "enum": ["a"]}),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `enum` added (`[\"a\"]`)",
        );
        let changes = parameter(json!({"const": "v1"}), json!({"const": "v2"}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `const` changed from `v1` to `v2`",
        );
    }

    #[test]
    fn an_enum_value_added_is_safe() {
        let changes = parameter(json!({"enum": ["a"]}), json!({"enum": ["a", "b"]}));
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: enum value `b` added",
        );
        let changes = parameter(json!({"enum": [1, 2]}), json!({}));
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: `enum` removed (was `[1,2]`)",
        );
    }

    #[test]
    fn additional_properties_turned_off_is_breaking() {
        let open = object(json!({"a": {"type": "string"}}), &[]);
        let mut closed = open.clone();
        closed["additionalProperties"] = json!(false);
        assert_only(
            &inputs(open.clone(), closed.clone()),
            Severity::Breaking,
            "the input schema: other properties are no longer allowed",
        );
        let mut allowed = open.clone();
        allowed["additionalProperties"] = json!(true);
        assert_only(
            &inputs(allowed, closed.clone()),
            Severity::Breaking,
            "the input schema: other properties are no longer allowed",
        );
        assert_only(
            &inputs(closed, open),
            Severity::Safe,
            "the input schema: other properties are now allowed",
        );
    }

    #[test]
    fn nested_parameters_and_array_items_are_named_by_path() {
        let old = object(
            json!({
                "filter": object(json!({"limit": {"type": "integer", "maximum": 100}}), &[]),
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}},
            }),
            &[],
        );
        let new = object(
            json!({
                "filter": object(json!({"limit": {"type": "integer", "maximum": 50}}), &["limit"]),
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}},
            }),
            &[],
        );
        let messages: Vec<String> = inputs(old, new)
            .into_iter()
            .map(|change| change.message)
            .collect();
        assert_eq!(
            messages,
            [
                "parameter `filter.limit` became required",
                "parameter `filter.limit`: `maximum` tightened from 100 to 50",
                "parameter `tags[]`: `maxLength` tightened from 20 to 10",
            ]
        );
    }

    #[test]
    fn a_tool_that_is_no_longer_read_only_is_breaking() {
        let old = ToolContract {
            annotations: Hints {
                read_only: Some(true),
                ..Hints::default()
            },
            ..taking(json!({}))
        };
        assert_only(
            &tools(old.clone(), taking(json!({}))),
            Severity::Breaking,
            "the tool is no longer read-only",
        );
        let not = ToolContract {
            annotations: Hints {
                read_only: Some(false),
                ..Hints::default()
            },
            ..taking(json!({}))
        };
        assert_only(
            &tools(old, not),
            Severity::Breaking,
            "the tool is no longer read-only",
        );
    }

    #[test]
    fn a_tool_that_became_read_only_is_safe() {
        let new = ToolContract {
            annotations: Hints {
                read_only: Some(true),
                ..Hints::default()
            },
            ..taking(json!({}))
        };
        assert_only(
            &tools(taking(json!({})), new),
            Severity::Safe,
            "the tool became read-only",
        );
    }

    #[test]
    fn a_tool_that_became_destructive_is_breaking() {
        let destructive = ToolContract {
            annotations: Hints {
                destructive: Some(true),
                ..Hints::default()
            },
            ..taking(json!({}))
        };
        let old = grouped(vec![("delete", taking(json!({})))]);
        let new = grouped(vec![("delete", destructive)]);
        assert_only(
            &tools(old, new),
            Severity::Breaking,
            "action `delete`: the tool became destructive",
        );
    }

    #[test]
    fn a_tool_that_is_no_longer_destructive_is_safe() {
        let old = ToolContract {
            annotations: Hints {
                destructive: Some(true),
                ..Hints::default()
            },
            ..taking(json!({}))
        };
        assert_only(
            &tools(old, taking(json!({}))),
            Severity::Safe,
            "the tool is no longer destructive",
        );
    }

    #[test]
    fn a_hint_between_unset_and_false_is_cosmetic_but_for_destructive() {
        let hinted = |hints: Hints| ToolContract {
            annotations: hints,
            ..taking(json!({}))
        };
        let changes = tools(
            taking(json!({})),
            hinted(Hints {
                read_only: Some(false),
                ..Hints::default()
            }),
        );
        assert_only(
            &changes,
            Severity::Cosmetic,
            "`readOnlyHint` changed from unset to false",
        );
        let changes = tools(
            taking(json!({})),
            hinted(Hints {
                destructive: Some(false),
                ..Hints::default()
            }),
        );
        assert_only(
            &changes,
            Severity::Risky,
            "`destructiveHint` changed from unset to false",
        );
    }

    #[test]
    fn the_idempotent_hint_dropped_is_risky() {
        let old = ToolContract {
            annotations: Hints {
                idempotent: Some(true),
                ..Hints::default()
            },
            ..taking(json!({}))
        };
        assert_only(
            &tools(old.clone(), taking(json!({}))),
            Severity::Risky,
            "the tool is no longer idempotent",
        );
        assert_only(
            &tools(taking(json!({})), old),
            Severity::Safe,
            "the tool became idempotent",
        );
    }

    #[test]
    fn a_changed_open_world_hint_is_risky() {
        let hinted = |open_world| ToolContract {
            annotations: Hints {
                open_world,
                ..Hints::default()
            },
            ..taking(json!({}))
        };
        assert_only(
            &tools(hinted(Some(true)), hinted(Some(false))),
            Severity::Risky,
            "`openWorldHint` changed from true to false",
        );
        assert_only(
            &tools(hinted(None), hinted(Some(true))),
            Severity::Risky,
            "`openWorldHint` changed from unset to true",
        );
    }

    /// A tool whose output is this schema.
    fn giving(schema: Option<Value>) -> ToolContract {
        ToolContract {
            output_schema: schema,
            ..taking(json!({}))
        }
    }

    #[test]
    fn an_output_field_removed_or_retyped_or_the_output_schema_removed_is_breaking() {
        let user = object(
            json!({"id": {"type": "integer"}, "name": {"type": "string"}}),
            &["id", "name"],
        );
        let without = object(json!({"id": {"type": "integer"}}), &["id"]);
        let changes = tools(giving(Some(user.clone())), giving(Some(without)));
        assert_only(
            &changes,
            Severity::Breaking,
            "output field `name` was removed",
        );
        let retyped = object(
            json!({"id": {"type": "string"}, "name": {"type": "string"}}),
            &["id", "name"],
        );
        let changes = tools(giving(Some(user.clone())), giving(Some(retyped)));
        assert_only(
            &changes,
            Severity::Breaking,
            "output field `id`: type changed from `integer` to `string`",
        );
        // A field that may now be null is a type the caller never received.
        let nullable = object(
            json!({"id": {"type": ["integer", "null"]}, "name": {"type": "string"}}),
            &["id", "name"],
        );
        let changes = tools(giving(Some(user.clone())), giving(Some(nullable)));
        assert_only(
            &changes,
            Severity::Breaking,
            "output field `id`: type widened from `integer` to `integer or null`",
        );
        let optional = object(
            json!({"id": {"type": "integer"}, "name": {"type": "string"}}),
            &["id"],
        );
        let changes = tools(giving(Some(user.clone())), giving(Some(optional)));
        assert_only(
            &changes,
            Severity::Breaking,
            "output field `name` may now be absent",
        );
        let changes = tools(giving(Some(user)), giving(None));
        assert_only(
            &changes,
            Severity::Breaking,
            "the output schema was removed",
        );
    }

    #[test]
    fn an_output_field_or_an_output_schema_added_is_safe() {
        let user = object(json!({"id": {"type": "integer"}}), &["id"]);
        let more = object(
            json!({"id": {"type": "integer"}, "name": {"type": "string"}}),
            &["id", "name"],
        );
        let changes = tools(giving(Some(user.clone())), giving(Some(more)));
        assert_only(&changes, Severity::Safe, "output field `name` was added");
        let changes = tools(giving(None), giving(Some(user)));
        assert_only(&changes, Severity::Safe, "an output schema was added");
    }

    #[test]
    fn an_output_that_narrows_is_safe_and_one_that_widens_is_risky() {
        let ranged = |maximum: u32| {
            Some(object(
                json!({"n": {"type": "integer", "maximum": maximum}}),
                &["n"],
            ))
        };
        let changes = tools(giving(ranged(100)), giving(ranged(50)));
        assert_only(
            &changes,
            Severity::Safe,
            "output field `n`: `maximum` tightened from 100 to 50",
        );
        let changes = tools(giving(ranged(50)), giving(ranged(100)));
        assert_only(
            &changes,
            Severity::Risky,
            "output field `n`: `maximum` loosened from 50 to 100",
        );
        let nullable = Some(object(json!({"n": {"type": ["integer", "null"]}}), &["n"]));
        let strict = Some(object(json!({"n": {"type": "integer"}}), &["n"]));
        let changes = tools(giving(nullable), giving(strict));
        assert_only(
            &changes,
            Severity::Safe,
            "output field `n`: type narrowed from `integer or null` to `integer`",
        );
    }

    #[test]
    fn a_scope_added_is_breaking_and_one_removed_safe() {
        let scoped = |scopes: &[&str]| ToolContract {
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            ..taking(json!({}))
        };
        let changes = tools(scoped(&["notes:read"]), scoped(&["notes:write"]));
        assert_eq!(changes.len(), 2, "{changes:#?}");
        assert_eq!(
            (changes[0].severity, changes[0].message.as_str()),
            (Severity::Breaking, "scope `notes:write` is now required")
        );
        assert_eq!(
            (changes[1].severity, changes[1].message.as_str()),
            (Severity::Safe, "scope `notes:read` is no longer required")
        );
    }

    #[test]
    fn a_tag_added_or_removed_is_risky() {
        let tagged = |tags: &[&str]| ToolContract {
            tags: tags.iter().map(|tag| (*tag).to_owned()).collect(),
            ..taking(json!({}))
        };
        let changes = tools(tagged(&["beta"]), tagged(&["billing"]));
        assert_eq!(changes.len(), 2, "{changes:#?}");
        assert!(
            changes
                .iter()
                .all(|change| change.severity == Severity::Risky),
            "{changes:#?}"
        );
        let said = |start: &str| {
            changes
                .iter()
                .any(|change| change.message.starts_with(start))
        };
        assert!(said("tag `billing` added"), "{changes:#?}");
        assert!(said("tag `beta` removed"), "{changes:#?}");
        assert!(tools(tagged(&["beta"]), tagged(&["beta"])).is_empty());
    }

    /// A tool with this task support.
    fn tasking(task: Option<TaskSupport>) -> ToolContract {
        ToolContract {
            task,
            ..taking(json!({}))
        }
    }

    #[test]
    fn task_support_that_became_required_is_breaking() {
        let changes = tools(tasking(None), tasking(Some(TaskSupport::Required)));
        assert_only(
            &changes,
            Severity::Breaking,
            "task support changed from none to required",
        );
        let changes = tools(
            tasking(Some(TaskSupport::Optional)),
            tasking(Some(TaskSupport::Required)),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "task support changed from optional to required",
        );
    }

    #[test]
    fn task_support_otherwise_changed_is_risky() {
        let changes = tools(tasking(None), tasking(Some(TaskSupport::Optional)));
        assert_only(
            &changes,
            Severity::Risky,
            "task support changed from none to optional",
        );
        let changes = tools(tasking(Some(TaskSupport::Required)), tasking(None));
        assert_only(
            &changes,
            Severity::Risky,
            "task support changed from required to none",
        );
    }

    #[test]
    fn a_changed_tool_or_action_description_is_risky() {
        let old = taking(json!({}));
        let new = ToolContract {
            description: "Find notes by text.".to_owned(),
            ..old.clone()
        };
        assert_only(
            &tools(old.clone(), new.clone()),
            Severity::Risky,
            "the description changed from `Find notes.` to `Find notes by text.`",
        );
        let changes = tools(grouped(vec![("find", old)]), grouped(vec![("find", new)]));
        assert_only(
            &changes,
            Severity::Risky,
            "action `find`: the description changed from `Find notes.` to `Find notes by text.`",
        );
    }

    #[test]
    fn a_changed_parameter_description_is_risky() {
        let changes = parameter(
            json!({"description": "The text."}),
            json!({"description": "Words to find."}),
        );
        assert_only(
            &changes,
            Severity::Risky,
            "parameter `x`: `description` changed from `The text.` to `Words to find.`",
        );
    }

    #[test]
    fn a_changed_default_is_risky() {
        let changes = parameter(
            json!({"type": "integer", "default": 10}),
            json!({"type": "integer", "default": 20}),
        );
        assert_only(
            &changes,
            Severity::Risky,
            "parameter `x`: `default` changed from 10 to 20",
        );
    }

    /// A tool with this policy.
    fn recovering(policy: PolicyContract) -> ToolContract {
        ToolContract {
            policy: Some(policy),
            ..taking(json!({}))
        }
    }

    #[test]
    fn a_changed_output_limit_is_risky() {
        let base = PolicyContract {
            max_output_bytes: 1 << 20,
            ..PolicyContract::default()
        };
        let smaller = PolicyContract {
            max_output_bytes: 64 << 10,
            ..base.clone()
        };
        assert_only(
            &tools(recovering(base), recovering(smaller)),
            Severity::Risky,
            "the output limit changed from `1048576 bytes` to `65536 bytes`",
        );
    }

    #[test]
    fn a_changed_recovery_policy_is_risky() {
        let base = PolicyContract {
            timeout_ms: 30_000,
            ..PolicyContract::default()
        };
        let retry = RetryContract {
            attempts: 3,
            backoff_ms: 10,
            max_backoff_ms: 1_000,
        };
        let circuit = CircuitContract {
            failures: 5,
            window_ms: 30_000,
            cooldown_ms: 10_000,
        };
        let full = PolicyContract {
            retry: Some(retry),
            circuit: Some(circuit),
            idempotency_key: Some("id".to_owned()),
            ..base.clone()
        };
        let changes = tools(
            recovering(base.clone()),
            recovering(PolicyContract {
                timeout_ms: 5_000,
                ..base.clone()
            }),
        );
        assert_only(
            &changes,
            Severity::Risky,
            "the timeout changed from `30000 ms` to `5000 ms`",
        );
        let changes = tools(recovering(base.clone()), recovering(full.clone()));
        let messages: Vec<(Severity, &str)> = changes
            .iter()
            .map(|change| (change.severity, change.message.as_str()))
            .collect();
        assert_eq!(
            messages,
            [
                (
                    Severity::Risky,
                    "the circuit breaker was added (`5 failures in 30000 ms, open for 10000 ms`)"
                ),
                (Severity::Risky, "the idempotency key was added (`id`)"),
                (
                    Severity::Risky,
                    "the retry policy was added (`3 attempts, backoff 10 ms up to 1000 ms`)"
                ),
            ]
        );
        let fewer = PolicyContract {
            retry: Some(RetryContract {
                attempts: 2,
                ..retry
            }),
            ..full.clone()
        };
        let changes = tools(recovering(full.clone()), recovering(fewer));
        assert_only(
            &changes,
            Severity::Risky,
            "the retry policy changed from `3 attempts, backoff 10 ms up to 1000 ms` to `2 attempts, backoff 10 ms up to 1000 ms`",
        );
        let changes = tools(
            recovering(full),
            recovering(PolicyContract {
                circuit: None,
                retry: None,
                idempotency_key: None,
                ..base
            }),
        );
        assert_eq!(changes.len(), 3, "{changes:#?}");
        assert!(
            changes
                .iter()
                .all(|change| change.severity == Severity::Risky
                    && change.message.contains("was dropped")),
            "{changes:#?}"
        );
    }

    #[test]
    fn serialization_added_dropped_or_moved_is_risky() {
        let base = PolicyContract {
            timeout_ms: 30_000,
            ..PolicyContract::default()
        };
        let on = |argument: &str| PolicyContract {
            serialize: Some(argument.to_owned()),
            ..base.clone()
        };
        let changes = tools(recovering(base.clone()), recovering(on("account")));
        assert_only(
            &changes,
            Severity::Risky,
            "the serialized argument was added (`account`)",
        );
        let changes = tools(recovering(on("account")), recovering(base.clone()));
        assert_only(
            &changes,
            Severity::Risky,
            "the serialized argument was dropped (was `account`)",
        );
        let changes = tools(recovering(on("account")), recovering(on("owner")));
        assert_only(
            &changes,
            Severity::Risky,
            "the serialized argument changed from `account` to `owner`",
        );
        assert!(tools(recovering(on("account")), recovering(on("account"))).is_empty());
    }

    #[test]
    fn a_cache_or_an_invalidation_added_dropped_or_changed_is_risky() {
        let base = PolicyContract {
            timeout_ms: 30_000,
            ..PolicyContract::default()
        };
        let cached = |ttl_ms: u64| PolicyContract {
            cache: Some(CacheContract {
                ttl_ms,
                stale_if_error_ms: 0,
                scope: "private".to_owned(),
            }),
            ..base.clone()
        };
        let changes = tools(recovering(base.clone()), recovering(cached(30_000)));
        assert_only(
            &changes,
            Severity::Risky,
            "the cache was added (`30000 ms, stale 0 ms, private`)",
        );
        let changes = tools(recovering(cached(30_000)), recovering(cached(60_000)));
        assert_only(
            &changes,
            Severity::Risky,
            "the cache changed from `30000 ms, stale 0 ms, private` to `60000 ms, stale 0 ms, private`",
        );
        let writer = PolicyContract {
            invalidates: vec!["quote".to_owned()],
            ..base.clone()
        };
        let changes = tools(recovering(writer), recovering(base.clone()));
        assert_only(
            &changes,
            Severity::Risky,
            "the list of invalidated tools was dropped (was `quote`)",
        );
        assert!(tools(recovering(cached(1)), recovering(cached(1))).is_empty());
    }

    #[test]
    fn a_changed_title_is_cosmetic() {
        let titled = |title: &str| ToolContract {
            title: Some(title.to_owned()),
            ..taking(json!({}))
        };
        assert_only(
            &tools(titled("Find"), titled("Search")),
            Severity::Cosmetic,
            "the title changed from `Find` to `Search`",
        );
        let changes = tools(
            grouped(vec![("find", titled("Find"))]),
            grouped(vec![("find", titled("Search"))]),
        );
        assert_only(
            &changes,
            Severity::Cosmetic,
            "action `find`: the title changed from `Find` to `Search`",
        );
        let changes = parameter(json!({"title": "Text"}), json!({"title": "Words"}));
        assert_only(
            &changes,
            Severity::Cosmetic,
            "parameter `x`: `title` changed from `Text` to `Words`",
        );
        let (old, new) = (
            with_resource(resource_titled(Some("Notes"))),
            with_resource(resource_titled(None)),
        );
        assert_only(
            &diff(&old, &new),
            Severity::Cosmetic,
            "the title was removed (was `Notes`)",
        );
        let (old, new) = (
            with_prompt(prompt_with(Some("Greet"), &[])),
            with_prompt(prompt_with(Some("Hello"), &[])),
        );
        assert_only(
            &diff(&old, &new),
            Severity::Cosmetic,
            "the title changed from `Greet` to `Hello`",
        );
    }

    /// The resource `notes://all` with this title.
    fn resource_titled(title: Option<&str>) -> ResourceContract {
        ResourceContract {
            name: "notes".to_owned(),
            title: title.map(str::to_owned),
            description: Some("Every note.".to_owned()),
            mime_type: Some("text/plain".to_owned()),
        }
    }

    /// A contract with this resource as `notes://all`, the same as a template, and no tool.
    fn with_resource(resource: ResourceContract) -> Contract {
        Contract {
            resources: BTreeMap::from([("notes://all".to_owned(), resource)]),
            ..contract(Vec::new())
        }
    }

    /// The prompt `greet` with this title and these arguments (name, required).
    fn prompt_with(title: Option<&str>, arguments: &[(&str, bool)]) -> PromptContract {
        let arguments = arguments.iter().map(|(name, required)| {
            let argument = PromptArgumentContract {
                description: None,
                required: *required,
            };
            ((*name).to_owned(), argument)
        });
        PromptContract {
            title: title.map(str::to_owned),
            description: Some("Say hello.".to_owned()),
            arguments: arguments.collect(),
        }
    }

    /// A contract with this prompt as `greet`, and no tool.
    fn with_prompt(prompt: PromptContract) -> Contract {
        Contract {
            prompts: BTreeMap::from([("greet".to_owned(), prompt)]),
            ..contract(Vec::new())
        }
    }

    #[test]
    fn a_removed_resource_template_or_prompt_is_breaking() {
        let resource = with_resource(resource_titled(None));
        let changes = diff(&resource, &contract(Vec::new()));
        assert_only(&changes, Severity::Breaking, "the resource was removed");
        assert_eq!(changes[0].tool, "notes://all");
        let template = Contract {
            resource_templates: BTreeMap::from([(
                "notes://{id}".to_owned(),
                resource_titled(None),
            )]),
            ..contract(Vec::new())
        };
        let changes = diff(&template, &contract(Vec::new()));
        assert_only(
            &changes,
            Severity::Breaking,
            "the resource template was removed",
        );
        assert_eq!(changes[0].tool, "notes://{id}");
        let changes = diff(&with_prompt(prompt_with(None, &[])), &contract(Vec::new()));
        assert_only(&changes, Severity::Breaking, "the prompt was removed");
        assert_eq!(changes[0].tool, "greet");
    }

    #[test]
    fn an_added_resource_template_or_prompt_is_safe() {
        let template = Contract {
            resource_templates: BTreeMap::from([(
                "notes://{id}".to_owned(),
                resource_titled(None),
            )]),
            ..contract(Vec::new())
        };
        let none = contract(Vec::new());
        assert_only(
            &diff(&none, &with_resource(resource_titled(None))),
            Severity::Safe,
            "the resource was added",
        );
        assert_only(
            &diff(&none, &template),
            Severity::Safe,
            "the resource template was added",
        );
        assert_only(
            &diff(&none, &with_prompt(prompt_with(None, &[]))),
            Severity::Safe,
            "the prompt was added",
        );
    }

    #[test]
    fn a_changed_resource_or_prompt_description_or_mime_type_is_risky() {
        let old = resource_titled(None);
        let described = ResourceContract {
            description: Some("All the notes.".to_owned()),
            ..old.clone()
        };
        let changes = diff(&with_resource(old.clone()), &with_resource(described));
        assert_only(
            &changes,
            Severity::Risky,
            "the description changed from `Every note.` to `All the notes.`",
        );
        let markdown = ResourceContract {
            mime_type: Some("text/markdown".to_owned()),
            ..old.clone()
        };
        let changes = diff(&with_resource(old), &with_resource(markdown));
        assert_only(
            &changes,
            Severity::Risky,
            "the MIME type changed from `text/plain` to `text/markdown`",
        );
        let old = prompt_with(None, &[]);
        let new = PromptContract {
            description: None,
            ..old.clone()
        };
        let changes = diff(&with_prompt(old), &with_prompt(new));
        assert_only(
            &changes,
            Severity::Risky,
            "the description was removed (was `Say hello.`)",
        );
    }

    #[test]
    fn a_prompt_argument_removed_added_as_required_or_made_required_is_breaking() {
        let changes = diff(
            &with_prompt(prompt_with(None, &[("name", false)])),
            &with_prompt(prompt_with(None, &[])),
        );
        assert_only(&changes, Severity::Breaking, "argument `name` was removed");
        let changes = diff(
            &with_prompt(prompt_with(None, &[])),
            &with_prompt(prompt_with(None, &[("name", true)])),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "argument `name` was added as required",
        );
        let changes = diff(
            &with_prompt(prompt_with(None, &[("name", false)])),
            &with_prompt(prompt_with(None, &[("name", true)])),
        );
        assert_only(
            &changes,
            Severity::Breaking,
            "argument `name` became required",
        );
    }

    #[test]
    fn a_prompt_argument_added_as_optional_or_made_optional_is_safe() {
        let changes = diff(
            &with_prompt(prompt_with(None, &[])),
            &with_prompt(prompt_with(None, &[("tone", false)])),
        );
        assert_only(
            &changes,
            Severity::Safe,
            "optional argument `tone` was added",
        );
        let changes = diff(
            &with_prompt(prompt_with(None, &[("tone", true)])),
            &with_prompt(prompt_with(None, &[("tone", false)])),
        );
        assert_only(&changes, Severity::Safe, "argument `tone` became optional");
    }

    #[test]
    fn contracts_differing_only_in_an_unusual_keyword_give_a_risky_change() {
        let changes = parameter(
            json!({"type": "string"}),
            json!({"type": "string", "contentEncoding": "base64"}),
        );
        assert_only(
            &changes,
            Severity::Risky,
            "parameter `x`: its schema changed (`contentEncoding`)",
        );
        let changes = inputs(
            json!({"type": "object", "x-internal": 1}),
            json!({"type": "object", "x-internal": 2}),
        );
        assert_only(
            &changes,
            Severity::Risky,
            "the input schema: its schema changed (`x-internal`)",
        );
    }

    #[test]
    fn unequal_contracts_never_diff_to_nothing() {
        // Two spellings of one nullable string: no rule sees a difference, yet the
        // contracts differ, so the diff says so.
        let changes = parameter(
            json!({"type": ["string", "null"]}),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
        );
        assert_only(
            &changes,
            Severity::Risky,
            "its contract changed in a way no rule rates",
        );
        let mut old = contract(Vec::new());
        old.format = 2;
        assert_only(
            &diff(&old, &contract(Vec::new())),
            Severity::Risky,
            "the format changed from 2 to 1",
        );
    }

    #[test]
    fn an_any_of_branch_removed_is_breaking_and_one_added_safe() {
        let (a, b, c) = (
            json!({"type": "string"}),
            json!({"type": "integer"}),
            json!({"type": "boolean"}),
        );
        let changes = parameter(json!({"anyOf": [a, b, c]}), json!({"anyOf": [a, b]}));
        assert_only(
            &changes,
            Severity::Breaking,
            "parameter `x`: `anyOf`: 1 branch(es) removed, 0 added",
        );
        let changes = parameter(json!({"anyOf": [a, b]}), json!({"anyOf": [a, b, c]}));
        assert_only(
            &changes,
            Severity::Safe,
            "parameter `x`: `anyOf`: 0 branch(es) removed, 1 added",
        );
        // A `oneOf` refuses a value two branches match: a new branch may overlap.
        let changes = parameter(json!({"oneOf": [a, b]}), json!({"oneOf": [a, b, c]}));
        assert_only(
            &changes,
            Severity::Risky,
            "parameter `x`: `oneOf`: 0 branch(es) removed, 1 added",
        );
        // An edited branch is compared with the one it replaced.
        let old = json!({"oneOf": [{"const": "a", "description": "A."}, {"const": "b"}]});
        let new = json!({"oneOf": [{"const": "a", "description": "The a."}, {"const": "b"}]});
        assert_only(
            &parameter(old, new),
            Severity::Risky,
            "parameter `x`: `description` changed from `A.` to `The a.`",
        );
    }

    #[test]
    fn changes_come_worst_first_then_by_tool_then_by_message() {
        let titled = ToolContract {
            title: Some("B".to_owned()),
            ..taking(json!({}))
        };
        let old = contract(vec![
            ("b", taking(json!({}))),
            ("c", taking(json!({}))),
            ("z", taking(json!({}))),
        ]);
        let new = contract(vec![
            ("a", taking(json!({}))),
            ("b", titled),
            ("y", taking(json!({}))),
        ]);
        let order: Vec<(Severity, String)> = diff(&old, &new)
            .into_iter()
            .map(|change| (change.severity, change.tool))
            .collect();
        assert_eq!(
            order,
            [
                (Severity::Breaking, "c".to_owned()),
                (Severity::Breaking, "z".to_owned()),
                (Severity::Safe, "a".to_owned()),
                (Severity::Safe, "y".to_owned()),
                (Severity::Cosmetic, "b".to_owned()),
            ]
        );
        assert_eq!(
            diff(&old, &new)[0].to_string(),
            "BREAKING c: the tool was removed"
        );
    }
}
