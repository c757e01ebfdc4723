//! Putting a server together: the build and start-up errors, the registration of
//! resources, prompts and completions on the builder.

pub(crate) mod builder;
pub(crate) mod error;
mod prompts;
mod resources;
pub(crate) mod uri_template;
