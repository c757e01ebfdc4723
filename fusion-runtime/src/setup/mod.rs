//! Putting a server together: the builder, the build and start-up errors, the registry of
//! tools, and the catalog of resources, prompts and completions (URI templates included),
//! with the builder and server methods that register and read them.

pub(crate) mod builder;
pub(crate) mod catalog;
pub(crate) mod error;
pub(crate) mod group;
pub(crate) mod invalidation;
pub(crate) mod listed_schema;
pub(crate) mod mounts;
pub mod prompt;
pub(crate) mod registered;
pub(crate) mod registry;
pub mod resource;
pub(crate) mod server;
pub(crate) mod startup;
mod stores;
pub(crate) mod uri_template;
pub(crate) mod visibility;
