//! How a tool's schemas are listed to clients: with every reference inlined (some clients do
//! not resolve `$ref`), the parts a schema repeats hoisted into `$defs` once
//! (`tool/hoist.rs`), or as schemars wrote them.

use std::{collections::HashMap, sync::Arc};

use serde_json::{Map, Value};

use crate::setup::builder::ServerBuilder;

/// The listing options of [`ServerBuilder::keep_schema_refs`] and
/// [`ServerBuilder::hoist_shared_schemas`].
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
            Some((crate::tool::hoist::spelling(&Value::Object(alone)), name.clone()))
        })
        .collect()
}

impl<C> ServerBuilder<C> {
    /// Lists schemas with `$defs` and `$ref`s, as schemars writes them, instead of inlining
    /// every reference (the default: some clients do not resolve references).
    pub fn keep_schema_refs(mut self, keep: bool) -> Self {
        self.schema_listing.keep_refs = keep;
        self
    }

    /// Whether a subschema that one tool's schema repeats (one `Address` type for `from`
    /// and `to`) is listed once under `$defs` and referenced, when that makes the listing
    /// shorter: on by default. Each use keeps its own description beside its `$ref`;
    /// everything else stays inline. Turn it off for a client that resolves no `$ref`.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// A postal address.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Address {
    ///     /// The street and number.
    ///     street: String,
    ///     /// The city.
    ///     city: String,
    ///     /// The postal code, as the country writes it.
    ///     postcode: String,
    /// }
    ///
    /// /// Ship a parcel.
    /// #[mcp_tool]
    /// async fn ship(
    ///     /// Where the parcel is picked up.
    ///     from: Address,
    ///     /// Where it goes.
    ///     to: Address,
    /// ) -> String {
    ///     format!("{} to {}", from.city, to.city)
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let listed = |hoist: bool| async move {
    ///     let server = Server::builder("post", "1").hoist_shared_schemas(hoist).tool(ship).build();
    ///     let tools = Tester::new(server).list_tools().await;
    ///     serde_json::Value::Object((*tools[0].input_schema).clone())
    /// };
    /// let (hoisted, inline) = (listed(true).await, listed(false).await);
    /// assert_eq!(hoisted["properties"]["to"]["$ref"], "#/$defs/Address");
    /// assert_eq!(hoisted["properties"]["to"]["description"], "Where it goes.");
    /// assert!(hoisted["$defs"]["Address"]["properties"]["city"].is_object());
    /// assert!(inline.get("$defs").is_none());
    /// assert!(hoisted.to_string().len() < inline.to_string().len());
    /// # });
    /// ```
    pub fn hoist_shared_schemas(mut self, hoist: bool) -> Self {
        self.schema_listing.hoist = hoist;
        self
    }
}
