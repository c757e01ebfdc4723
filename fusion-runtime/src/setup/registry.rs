//! The tools a server exposes, and how a call finds its handler.
//!
//! A handler is one `#[mcp_tool]` function. Handlers marked `group = "db_user", action =
//! "find_many"` form a grouped tool. How groups appear to clients is chosen when the server
//! is built ([`Exposure`]): *grouped*, one tool `db_user` whose `action` property selects the
//! handler, or *flat*, one tool per action named `db_user_find_many`. Either way each action
//! keeps its own strict validation.

use std::{collections::HashMap, sync::Arc};

use serde_json::Value;

use crate::{
    failure::FailureKind,
    limits::MAX_NAME_BYTES,
    setup::registered::RegisteredTool,
    setup::visibility::Shown,
    setup::{
        error::{BuildError, BuildWarning},
        group,
    },
    tool::listing::SchemaListing,
    tool::{ACTION_KEY, Annotations, Exposure, ToolDefinition},
};

/// What one listed tool routes to.
enum Entry {
    Single(usize),
    Group(Vec<(&'static str, usize)>),
}

pub(crate) struct Registry<C> {
    /// Every tool (a grouped tool's actions each on its own), in registration order.
    pub(crate) tools: Vec<RegisteredTool<C>>,
    /// Listed name → what it routes to.
    entries: HashMap<String, Entry>,
    /// Group name → its actions, for addressing `(group, action)` in flat mode too.
    groups: HashMap<&'static str, Vec<(&'static str, usize)>>,
    /// The `tools/list` answer, in registration order.
    pub(crate) wire: Vec<rmcp::model::Tool>,
    /// The descriptions given to groups (`ServerBuilder::group`), by group.
    group_descriptions: HashMap<String, String>,
    /// What builds but probably should not (a group whose reads are listed destructive).
    pub(crate) warnings: Vec<BuildWarning>,
    /// How schemas are listed (lists rebuilt for a caller do the same).
    schema_listing: SchemaListing,
    /// The longest tool name looked up ([`MAX_NAME_BYTES`], or the longest name this server
    /// has): a longer one cannot match, so it is refused before hashing it.
    max_tool_bytes: usize,
    /// The same for action names.
    max_action_bytes: usize,
    /// The tools mounted upstreams added since the server started (`setup/mounts.rs`).
    pub(crate) added: Arc<crate::setup::mounts::AddedTools<C>>,
}

impl<C> Registry<C> {
    /// Each flat tool with a `task_after`, and its deadline (`RegisteredTool::task_deadline`).
    pub(crate) fn task_deadlines(&self) -> Vec<(&'static str, std::time::Duration)> {
        self.tools
            .iter()
            .filter_map(RegisteredTool::task_deadline)
            .collect()
    }

    pub(crate) fn build(
        handlers: Vec<ToolDefinition<C>>,
        exposure: Exposure,
        group_descriptions: &HashMap<String, String>,
        schema_listing: SchemaListing,
    ) -> Result<Self, Vec<BuildError>> {
        let mut errors = Vec::new();
        let mut groups: HashMap<&'static str, Vec<(&'static str, usize)>> = HashMap::new();
        let mut order: Vec<Listed> = Vec::new();
        for (index, handler) in handlers.iter().enumerate() {
            match (handler.spec.group, handler.spec.action) {
                (Some(group), Some(action)) => {
                    let actions = groups.entry(group).or_default();
                    if actions.iter().any(|(known, _)| *known == action) {
                        errors.push(BuildError::DuplicateAction {
                            group: group.to_owned(),
                            action: action.to_owned(),
                        });
                        continue;
                    }
                    if actions.is_empty() && exposure == Exposure::Grouped {
                        order.push(Listed::Group(group));
                    }
                    actions.push((action, index));
                    if exposure == Exposure::Flat {
                        order.push(Listed::Single(index, format!("{group}_{action}")));
                    }
                }
                _ => order.push(Listed::Single(index, handler.spec.name.to_owned())),
            }
        }
        // Whatever the exposure: a parameter declared two ways is a mistake in the code, and
        // the grouped schema could not say both.
        let mut names: Vec<&&str> = groups.keys().collect();
        names.sort();
        for name in names {
            errors.extend(group::conflicts(name, &groups[*name], &handlers));
        }
        for description in group_descriptions.keys() {
            if !groups.contains_key(description.as_str()) {
                errors.push(BuildError::UnknownTarget(description.clone()));
            }
        }
        let mut entries = HashMap::new();
        let mut wire = Vec::new();
        let mut warnings = Vec::new();
        for listed in order {
            let (name, entry, tool) = match listed {
                Listed::Single(index, name) => {
                    let tool = wire_tool(&name, &handlers[index], schema_listing);
                    (name, Entry::Single(index), tool)
                }
                Listed::Group(name) => {
                    let actions = groups.get(name).cloned().unwrap_or_default();
                    let listed =
                        group::group_tool(name, group_descriptions.get(name), &actions, |index| {
                            &handlers[index]
                        });
                    let mut tool = rmcp::model::Tool::new(
                        name.to_owned(),
                        listed.description,
                        schema_listing.listed(&Arc::new(listed.schema)),
                    );
                    if let Some(annotations) = annotations(listed.hints, None) {
                        tool = tool.with_annotations(annotations);
                    }
                    warnings.extend(listed.warning);
                    (name.to_owned(), Entry::Group(actions), tool)
                }
            };
            if entries.contains_key(&name) {
                errors.push(BuildError::DuplicateTool(name));
                continue;
            }
            entries.insert(name, entry);
            wire.push(tool);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let max_tool_bytes = entries
            .keys()
            .map(String::len)
            .chain(groups.keys().map(|group| group.len()))
            .fold(MAX_NAME_BYTES, usize::max);
        let max_action_bytes = groups
            .values()
            .flatten()
            .map(|(action, _)| action.len())
            .fold(MAX_NAME_BYTES, usize::max);
        Ok(Self {
            tools: handlers.into_iter().map(RegisteredTool::new).collect(),
            entries,
            groups,
            wire,
            group_descriptions: group_descriptions.clone(),
            warnings,
            schema_listing,
            max_tool_bytes,
            max_action_bytes,
            added: Arc::default(),
        })
    }

    /// What the listed tool `name` routes to, and for a group the description it was
    /// given.
    pub(crate) fn listing(&self, name: &str) -> Option<Listing<'_>> {
        match self.entries.get(name)? {
            Entry::Single(index) => Some(Listing::Single(*index)),
            Entry::Group(actions) => Some(Listing::Group {
                actions,
                description: self.group_descriptions.get(name).map(String::as_str),
            }),
        }
    }

    /// The listed tool names, in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.wire.iter().map(|tool| tool.name.to_string()).collect()
    }

    /// The listed names a caller is shown, in order: a grouped tool when any of its
    /// actions is shown.
    pub(crate) fn shown_names(&self, shown: &Shown) -> Vec<String> {
        self.wire
            .iter()
            .filter(|tool| self.is_shown(&tool.name, shown))
            .map(|tool| tool.name.to_string())
            .collect()
    }

    fn is_shown(&self, listed: &str, shown: &Shown) -> bool {
        match self.entries.get(listed) {
            Some(Entry::Single(index)) => shown.has(*index),
            Some(Entry::Group(actions)) => actions.iter().any(|(_, index)| shown.has(*index)),
            None => false,
        }
    }

    /// `tools/list` for a caller shown `shown`: the tools it is shown, in order, a grouped
    /// tool with only its shown actions (its schema, hints and made-up description built
    /// from them, as [`Self::build`] does from all).
    pub(crate) fn shown_wire(&self, shown: &Shown) -> Vec<rmcp::model::Tool> {
        self.wire
            .iter()
            .filter_map(|tool| match self.entries.get(tool.name.as_ref())? {
                Entry::Single(index) => shown.has(*index).then(|| tool.clone()),
                Entry::Group(actions) => {
                    let visible: Vec<(&'static str, usize)> = actions
                        .iter()
                        .filter(|(_, index)| shown.has(*index))
                        .copied()
                        .collect();
                    if visible.is_empty() {
                        None
                    } else if visible.len() == actions.len() {
                        Some(tool.clone())
                    } else {
                        Some(self.group_wire(&tool.name, &visible))
                    }
                }
            })
            .collect()
    }

    /// `tools/list` as the contract measures it: every tool, and every group's actions, in
    /// name order, so that the order they were registered in does not change a count.
    pub(crate) fn wire_in_name_order(&self) -> Vec<rmcp::model::Tool> {
        let mut wire: Vec<rmcp::model::Tool> = self
            .wire
            .iter()
            .map(|tool| match self.entries.get(tool.name.as_ref()) {
                Some(Entry::Group(actions)) => {
                    let mut sorted = actions.clone();
                    sorted.sort_by_key(|(action, _)| *action);
                    self.group_wire(&tool.name, &sorted)
                }
                _ => tool.clone(),
            })
            .collect();
        wire.sort_by(|a, b| a.name.cmp(&b.name));
        wire
    }

    /// The listed tool of `group` with only `actions`.
    fn group_wire(&self, group: &str, actions: &[(&'static str, usize)]) -> rmcp::model::Tool {
        let listed = group::group_tool(
            group,
            self.group_descriptions.get(group),
            actions,
            |index| &self.tools[index].definition,
        );
        let mut tool = rmcp::model::Tool::new(
            group.to_owned(),
            listed.description,
            self.schema_listing.listed(&Arc::new(listed.schema)),
        );
        if let Some(annotations) = annotations(listed.hints, None) {
            tool = tool.with_annotations(annotations);
        }
        tool
    }

    /// [`Self::resolve`] for a caller shown `shown`: a handler it is not shown is answered
    /// as one that does not exist (an unknown tool, or an unknown action of a grouped tool
    /// it is shown other actions of), and no answer names a handler it is not shown.
    pub(crate) fn resolve_shown(
        &self,
        tool: &str,
        action: Option<&str>,
        args: &mut Value,
        shown: &Shown,
    ) -> Result<(usize, Option<&'static str>), FailureKind> {
        let unknown_tool = |requested: String| FailureKind::UnknownTool {
            requested,
            available: self.shown_names(shown),
            action_of: self.action_named_like(tool, Some(shown)).map(Box::new),
        };
        // The actions of the group `tool` names (listed grouped, or addressed as
        // `(group, action)` under flat exposure) that the caller is shown.
        let shown_actions = |group: &str| -> Option<Vec<String>> {
            let actions = match self.entries.get(group) {
                Some(Entry::Group(actions)) => actions,
                _ => self.groups.get(group)?,
            };
            let visible: Vec<String> = actions
                .iter()
                .filter(|(_, index)| shown.has(*index))
                .map(|(action, _)| (*action).to_owned())
                .collect();
            (!visible.is_empty()).then_some(visible)
        };
        match self.resolve(tool, action, args) {
            Ok((index, resolved)) if shown.has(index) => Ok((index, resolved)),
            Ok((_, resolved)) => match (shown_actions(tool), resolved) {
                (Some(available), Some(requested)) if !self.entries_single(tool) => {
                    Err(FailureKind::UnknownAction {
                        tool: tool.to_owned(),
                        requested: requested.to_owned(),
                        available,
                    })
                }
                _ => Err(unknown_tool(tool.to_owned())),
            },
            Err(FailureKind::UnknownTool { requested, .. }) => Err(unknown_tool(requested)),
            Err(FailureKind::UnknownAction {
                tool: group,
                requested,
                ..
            }) => match shown_actions(&group) {
                Some(available) => Err(FailureKind::UnknownAction {
                    tool: group,
                    requested,
                    available,
                }),
                None => Err(unknown_tool(tool.to_owned())),
            },
            Err(FailureKind::MissingAction { tool: group, .. }) => match shown_actions(&group) {
                Some(available) => Err(FailureKind::MissingAction {
                    tool: group,
                    available,
                }),
                None => Err(unknown_tool(tool.to_owned())),
            },
            Err(other) => Err(other),
        }
    }

    /// Whether `name` is listed as one handler (not a group).
    fn entries_single(&self, name: &str) -> bool {
        matches!(self.entries.get(name), Some(Entry::Single(_)))
    }

    /// The name a handler is listed under, when it is listed on its own (not inside a
    /// grouped tool).
    /// The listed names `name` reaches: itself when it is listed; a group's actions when
    /// they are listed one by one; the listed entry (a tool, or its group) of a tool named
    /// by its own name.
    pub(crate) fn listed_names_of(&self, name: &str) -> Vec<String> {
        if self.entries.contains_key(name) {
            return vec![name.to_owned()];
        }
        let indexes: Vec<usize> = match self.groups.get(name) {
            Some(actions) => actions.iter().map(|(_, index)| *index).collect(),
            None => (0..self.tools.len())
                .filter(|index| self.tools[*index].definition.spec.name == name)
                .collect(),
        };
        let mut names: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, entry)| match entry {
                Entry::Single(single) => indexes.contains(single),
                Entry::Group(actions) => actions.iter().any(|(_, index)| indexes.contains(index)),
            })
            .map(|(listed, _)| listed.clone())
            .collect();
        names.sort();
        names
    }

    pub(crate) fn listed_name(&self, index: usize) -> Option<String> {
        self.entries.iter().find_map(|(name, entry)| match entry {
            Entry::Single(single) if *single == index => Some(name.clone()),
            _ => None,
        })
    }

    /// How a caller would check what the action at `index` did: a read-only action of the
    /// same group, as the model should call it ("`db_user` action `find_many`").
    pub(crate) fn read_only_sibling(&self, index: usize) -> Option<String> {
        let group = self.tools[index].definition.spec.group?;
        let actions = self.groups.get(group)?;
        let (action, _) = actions.iter().find(|(_, sibling)| {
            *sibling != index
                && self.tools[*sibling].definition.spec.annotations.read_only == Some(true)
        })?;
        Some(match self.entries.get(group) {
            Some(_) => format!("`{group}` action `{action}`"),
            None => format!("`{group}_{action}`"),
        })
    }

    /// Whether a call to `tool` with `args` is safe to run a second time: its handler is
    /// read-only or idempotent (`ToolSpec::is_safe_to_repeat`; an idempotency key alone
    /// is not enough). A task whose replica died is then run again elsewhere.
    pub(crate) fn is_rerunnable(&self, tool: &str, args: &Value) -> bool {
        let mut args = args.clone();
        self.resolve(tool, None, &mut args)
            .is_ok_and(|(index, _)| self.tools[index].definition.spec.is_safe_to_repeat())
    }

    /// Whether `name` is a listed tool, a group or a handler's own name (for middleware
    /// targets).
    /// Whether `name` is a group of this server, however it is listed.
    pub(crate) fn has_group(&self, name: &str) -> bool {
        self.groups.contains_key(name)
    }

    pub(crate) fn knows(&self, name: &str) -> bool {
        self.entries.contains_key(name)
            || self.groups.contains_key(name)
            || self
                .tools
                .iter()
                .any(|tool| tool.definition.spec.name == name)
    }

    /// The handler for a call to `tool` (with `action` from the caller, or else from the
    /// arguments' `action` property, which is then removed from them).
    pub(crate) fn resolve(
        &self,
        tool: &str,
        action: Option<&str>,
        args: &mut Value,
    ) -> Result<(usize, Option<&'static str>), FailureKind> {
        if tool.len() > self.max_tool_bytes {
            // No tool has a name this long: refused without hashing it or comparing it with
            // the tool names, and quoted cut.
            return Err(FailureKind::UnknownTool {
                requested: crate::limits::name(tool).into_owned(),
                available: self.names(),
                action_of: None,
            });
        }
        let action = action.map(|action| self.bounded_action(action));
        let action = action.as_deref();
        match self.entries.get(tool) {
            Some(Entry::Single(index)) => {
                let handler = &self.tools[*index].definition;
                match action {
                    None => Ok((*index, handler.spec.action)),
                    Some(action) if handler.spec.action == Some(action) => {
                        Ok((*index, handler.spec.action))
                    }
                    Some(action) => Err(FailureKind::UnknownAction {
                        tool: tool.to_owned(),
                        requested: action.to_owned(),
                        available: Vec::new(),
                    }),
                }
            }
            Some(Entry::Group(actions)) => {
                let requested = match action {
                    Some(action) => {
                        // An explicit action wins; a copy in the arguments is dropped.
                        take_action(args);
                        Some(action.to_owned())
                    }
                    None => self.take_action(args),
                };
                pick(tool, actions, requested)
            }
            None => match (self.groups.get(tool), action) {
                // Flat exposure, addressed as (group, action): the tester's `call_action`.
                (Some(actions), Some(action)) => pick(tool, actions, Some(action.to_owned())),
                (Some(actions), None) => pick(tool, actions, self.take_action(args)),
                (None, _) => Err(FailureKind::UnknownTool {
                    requested: tool.to_owned(),
                    available: self.names(),
                    action_of: self.action_named_like(tool, None).map(Box::new),
                }),
            },
        }
    }
}

impl<C> Registry<C> {
    /// The grouped tool and action that `name` (not a tool) looks like: the action and the
    /// group's name, or its singular, joined by `_`, `.` or `-` in either order
    /// (`add_note`, `notes_add`, `note.add` for action `add` of tool `notes`). With
    /// `shown`, only an action the caller is shown.
    fn action_named_like(&self, name: &str, shown: Option<&Shown>) -> Option<(String, String)> {
        let mut groups: Vec<_> = self.groups.iter().collect();
        // The same answer whatever the map's order.
        groups.sort_by_key(|(group, _)| **group);
        groups.into_iter().find_map(|(group, actions)| {
            let singular = group.strip_suffix('s').unwrap_or(group);
            actions.iter().find_map(|(action, index)| {
                if shown.is_some_and(|shown| !shown.has(*index)) {
                    return None;
                }
                let names_it = [*group, singular].iter().any(|group| {
                    ['_', '.', '-'].iter().any(|joint| {
                        name == format!("{action}{joint}{group}")
                            || name == format!("{group}{joint}{action}")
                    })
                });
                names_it.then(|| ((*group).to_owned(), (*action).to_owned()))
            })
        })
    }

    /// An action name as it is matched: whole when it could be one of ours, else cut (it
    /// can match none, and the cut form is what the message quotes).
    fn bounded_action<'a>(&self, action: &'a str) -> std::borrow::Cow<'a, str> {
        if action.len() > self.max_action_bytes {
            std::borrow::Cow::Owned(crate::limits::name(action).into_owned())
        } else {
            std::borrow::Cow::Borrowed(action)
        }
    }

    /// Removes and returns the `action` property of an arguments object, bounded as
    /// [`Self::bounded_action`] says.
    fn take_action(&self, args: &mut Value) -> Option<String> {
        take_action(args).map(|action| self.bounded_action(&action).into_owned())
    }
}

/// What one listed tool is, for those that describe the surface (`contract/surface.rs`).
pub(crate) enum Listing<'a> {
    /// One handler, by its index in [`Registry::tools`].
    Single(usize),
    /// A grouped tool: its actions' names and indexes, and the description it was given.
    Group {
        actions: &'a [(&'static str, usize)],
        description: Option<&'a str>,
    },
}

enum Listed {
    Single(usize, String),
    Group(&'static str),
}

/// Removes and returns the `action` property of an arguments object. An action that is not
/// a string is named by a preview of its JSON (bounded, however large the value).
fn take_action(args: &mut Value) -> Option<String> {
    let object = args.as_object_mut()?;
    match object.remove(ACTION_KEY) {
        Some(Value::String(action)) => Some(action),
        Some(other) => Some(crate::limits::preview(&other)),
        None => None,
    }
}

fn pick(
    tool: &str,
    actions: &[(&'static str, usize)],
    requested: Option<String>,
) -> Result<(usize, Option<&'static str>), FailureKind> {
    let available = || actions.iter().map(|(name, _)| (*name).to_owned()).collect();
    let Some(requested) = requested else {
        return Err(FailureKind::MissingAction {
            tool: tool.to_owned(),
            available: available(),
        });
    };
    actions
        .iter()
        .find(|(name, _)| *name == requested)
        .map(|(name, index)| (*index, Some(*name)))
        .ok_or_else(|| FailureKind::UnknownAction {
            tool: tool.to_owned(),
            requested,
            available: available(),
        })
}

fn annotations(hints: Annotations, title: Option<&str>) -> Option<rmcp::model::ToolAnnotations> {
    if hints.is_empty() && title.is_none() {
        return None;
    }
    let mut annotations = rmcp::model::ToolAnnotations::new();
    annotations.read_only_hint = hints.read_only;
    annotations.destructive_hint = hints.destructive;
    annotations.idempotent_hint = hints.idempotent;
    annotations.open_world_hint = hints.open_world;
    annotations.title = title.map(str::to_owned);
    Some(annotations)
}

fn wire_tool<C>(
    name: &str,
    definition: &ToolDefinition<C>,
    schema_listing: SchemaListing,
) -> rmcp::model::Tool {
    let spec = &definition.spec;
    let mut tool = rmcp::model::Tool::new(
        name.to_owned(),
        spec.description,
        schema_listing.listed(&definition.input_schema),
    );
    if let Some(title) = spec.title {
        tool = tool.with_title(title);
    }
    if let Some(schema) = &definition.output_schema {
        tool = tool.with_raw_output_schema(schema_listing.listed(schema));
    }
    if let Some(annotations) = annotations(spec.annotations, spec.title) {
        tool = tool.with_annotations(annotations);
    }
    tool
}
