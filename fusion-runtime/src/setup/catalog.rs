//! The catalog of a server: its resources (`resource.rs`) and its prompts and completions
//! (`prompt.rs`), side by side, and who is told when they change (`changes/`). Neither knows the other: a completion for a resource
//! template's variable asks the resources which variables the template has through a
//! closure the protocol passes in.

use crate::{setup::error::BuildError, setup::prompt::Prompts, setup::resource::Resources};

/// The resources, prompts and completions of a server.
#[derive(Default)]
pub(crate) struct Catalog {
    pub(crate) resources: Resources,
    pub(crate) prompts: Prompts,
    /// The subscribers of this replica, and the bus to the others.
    pub(crate) changes: std::sync::Arc<crate::changes::Hub>,
}

impl Catalog {
    /// The mistakes made registering either, reported together by `try_build`.
    pub(crate) fn take_errors(&mut self) -> Vec<BuildError> {
        let mut errors = self.resources.take_errors();
        errors.extend(self.prompts.take_errors());
        errors
    }
}
