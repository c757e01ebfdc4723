//! Step 1, resolve: the tool and action a call names, as the caller is shown them (a tool
//! the caller is not shown is, to that caller, a tool that does not exist), among the
//! registry's tools and then those a mounted upstream added since start.

use std::sync::Arc;

use serde_json::Value;

use super::slot::Slot;
use crate::{
    call::Call,
    failure::FailureKind,
    setup::{registered::RegisteredTool, server::Server},
};

/// What a call resolved to. Held across the call's awaits: why a call is refused is
/// handed out beside it ([`Resolved::of`]), not kept in it.
pub(super) struct Resolved<C> {
    /// Where the tool is kept, when the call names one.
    found: Option<Slot<C>>,
    /// The action: the one resolved, or the one asked for when the call is refused.
    pub(super) action: Option<String>,
}

impl<C: Send + Sync + 'static> Resolved<C> {
    /// Resolves `tool` and `action` for `call`'s caller; `args` lose the action's
    /// selector member when a grouped tool takes it from there. With it, why the caller
    /// cannot call what it named (an unknown tool or action, a missing action), if so.
    pub(super) fn of(
        server: &Server<C>,
        tool: &str,
        action: Option<&str>,
        args: &mut Value,
        call: &Call,
    ) -> (Self, Option<FailureKind>) {
        let inner = &*server.inner;
        let resolved = match server.shown(call.request()) {
            None => inner.registry.resolve(tool, action, args),
            Some(shown) => inner.registry.resolve_shown(tool, action, args, &shown),
        };
        match resolved {
            Ok((index, resolved)) => Self::found(Slot::Registry(index), resolved),
            // A tool a mounted upstream added since the server started: looked for only
            // when the registry knows no such tool, so that a call to any other costs what
            // it did.
            Err(refused @ FailureKind::UnknownTool { .. }) if action.is_none() => {
                let visibility = &inner.visibility;
                match inner
                    .registry
                    .added
                    .find(tool, |spec| visibility.shows(spec, call.request()))
                {
                    Some(added) => Self::found(Slot::Added(added), None),
                    None => Self::refused(refused, action),
                }
            }
            Err(refused) => Self::refused(refused, action),
        }
    }

    fn found(slot: Slot<C>, action: Option<&str>) -> (Self, Option<FailureKind>) {
        let found = Self {
            found: Some(slot),
            action: action.map(str::to_owned),
        };
        (found, None)
    }

    fn refused(refused: FailureKind, action: Option<&str>) -> (Self, Option<FailureKind>) {
        let resolved = Self {
            found: None,
            action: action.map(str::to_owned),
        };
        (resolved, Some(refused))
    }

    /// The tool's one record, when the call names one.
    pub(super) fn registered<'s>(&'s self, server: &'s Server<C>) -> Option<&'s RegisteredTool<C>> {
        match self.found.as_ref()? {
            Slot::Registry(index) => server.inner.registry.tools.get(*index),
            Slot::Added(added) => Some(&**added),
        }
    }

    /// Where the tool is kept, for a step that finds it again from a task of its own.
    pub(super) fn slot(&self) -> Slot<C> {
        match &self.found {
            Some(Slot::Registry(index)) => Slot::Registry(*index),
            Some(Slot::Added(added)) => Slot::Added(Arc::clone(added)),
            None => Slot::Registry(0),
        }
    }
}
