//! `#[mcp_tool(invalidates = ["quote", "db_user.find_many"])]`, resolved when the server is
//! built: each name becomes the cache names of the cached tools it means, or a build error
//! that says why it means none.

use std::sync::Arc;

use crate::setup::{error::BuildError, registry::Registry};

/// Resolves every tool's `invalidates`. A name is a tool's (`quote`), an action's
/// (`db_user.find_many`), or a group's (`db_user`: each of its cached actions). A name
/// that reaches no tool, or only tools without `cache`, is an error: the write would
/// invalidate nothing, and stale reads would follow it unseen.
pub(crate) fn resolve<C>(registry: &mut Registry<C>) -> Result<(), Vec<BuildError>> {
    let mut errors = Vec::new();
    let mut resolved = Vec::with_capacity(registry.tools.len());
    for tool in &registry.tools {
        let spec = &tool.definition.spec;
        let mut names: Vec<Arc<str>> = Vec::new();
        for &target in spec.invalidates {
            let meant: Vec<_> = registry
                .tools
                .iter()
                .filter(|other| {
                    let other_spec = &other.definition.spec;
                    &*other.cache_name == target
                        || other_spec.name == target
                        || other_spec.group == Some(target)
                })
                .collect();
            let cached: Vec<Arc<str>> = meant
                .iter()
                .filter(|other| other.definition.spec.cache.is_some())
                .map(|other| Arc::clone(&other.cache_name))
                .collect();
            if cached.is_empty() {
                errors.push(BuildError::UnknownInvalidation {
                    tool: tool.cache_name.to_string(),
                    target: target.to_owned(),
                    problem: if meant.is_empty() {
                        "which is no tool, action or group of this server; check the spelling (an action is `group.action`)".to_owned()
                    } else {
                        "which has no `cache`: there is nothing to invalidate; add `cache = \"..\"` to it or remove it from the list".to_owned()
                    },
                });
            }
            for name in cached {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        resolved.push(names);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    for (tool, names) in registry.tools.iter_mut().zip(resolved) {
        tool.invalidates = names;
    }
    Ok(())
}
