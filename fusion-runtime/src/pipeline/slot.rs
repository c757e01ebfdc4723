//! Where a call's tool is kept.

use std::sync::Arc;

use crate::setup::registered::RegisteredTool;

/// Where a call's tool is kept, for a step that must find it again from a task of its own
/// (`cache.rs`'s shared run): in the registry, or among the tools a mounted upstream added
/// since the server started (`setup/mounts.rs`).
pub(crate) enum Slot<C> {
    Registry(usize),
    Added(Arc<RegisteredTool<C>>),
}

impl<C> Clone for Slot<C> {
    fn clone(&self) -> Self {
        match self {
            Self::Registry(index) => Self::Registry(*index),
            Self::Added(tool) => Self::Added(Arc::clone(tool)),
        }
    }
}
