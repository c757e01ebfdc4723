//! How a tool's schemas are listed to clients: with every reference inlined (some clients do
//! not resolve `$ref`), the parts a schema repeats hoisted into `$defs` once
//! (`tool/hoist.rs`), or as schemars wrote them. The options are set by
//! `setup/listed_schema.rs`.

use std::{collections::HashMap, sync::Arc};

use serde_json::{Map, Value};

/// The listing options of [`ServerBuilder::keep_schema_refs`](crate::ServerBuilder::keep_schema_refs) and
/// [`ServerBuilder::hoist_shared_schemas`](crate::ServerBuilder::hoist_shared_schemas).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SchemaListing {
    /// Schemas listed as schemars wrote them, `$defs` and `$ref`s included.
    pub(crate) keep_refs: bool,
    /// A subschema repeated within one schema listed once, under `$defs`.
    pub(crate) hoist: bool,
}

impl Default for SchemaListing {
    fn default() -> Self {
        Self {
            keep_refs: false,
            hoist: true,
        }
    }
}

impl SchemaListing {
    /// `schema` as clients get it.
    pub(crate) fn listed(self, schema: &Arc<Map<String, Value>>) -> Arc<Map<String, Value>> {
        let has_refs = schema.contains_key("$defs");
        if self.keep_refs || (!has_refs && !self.hoist) {
            return Arc::clone(schema);
        }
        let mut listed = (**schema).clone();
        let names = if self.hoist && has_refs {
            type_names(schema)
        } else {
            HashMap::new()
        };
        if has_refs {
            crate::tool::schema::inline_refs(&mut listed);
        }
        let hoisted = self.hoist && crate::tool::hoist::hoist_shared(&mut listed, &names);
        if !has_refs && !hoisted {
            return Arc::clone(schema);
        }
        Arc::new(listed)
    }
}

/// Each of schemars' `$defs` by its inlined spelling (as `tool/hoist.rs` compares
/// subschemas), so that a hoisted type keeps its Rust name: `#/$defs/Address`.
fn type_names(schema: &Map<String, Value>) -> HashMap<String, String> {
    let Some(Value::Object(defs)) = schema.get("$defs") else {
        return HashMap::new();
    };
    defs.iter()
        .filter_map(|(name, def)| {
            let Value::Object(def) = def else {
                return None;
            };
            let mut alone = def.clone();
            alone.insert("$defs".to_owned(), Value::Object(defs.clone()));
            crate::tool::schema::inline_refs(&mut alone);
            alone.remove("$defs");
            Some((
                crate::tool::hoist::spelling(&Value::Object(alone)),
                name.clone(),
            ))
        })
        .collect()
}
