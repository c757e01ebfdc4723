//! The builder's options for how schemas are listed (`tool/listing.rs` lists them).

use crate::setup::builder::ServerBuilder;

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
