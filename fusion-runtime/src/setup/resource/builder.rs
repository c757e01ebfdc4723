//! The builder and server methods for resources.

use std::{future::Future, sync::Arc};

use rmcp::model::ResourceContents;
use serde::de::DeserializeOwned;

use crate::{
    setup::builder::ServerBuilder,
    setup::resource::{IntoResourceContents, ReadFailure, ReadFn, ResourceInfo},
    setup::server::Server,
};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Registers a fixed resource at `uri` named `name` whose contents have the MIME type
    /// `mime_type`; `content` is called on each `resources/read`.
    ///
    /// `content` returns anything [`IntoResourceContents`]: text, bytes (sent as a base64
    /// blob), JSON, [`ResourceContent`](crate::resource::ResourceContent)s, or a `Result` of these (an
    /// error is logged and the client gets an internal error with a reference, never the
    /// error's text).
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// let server = Server::builder("notes", "1.0.0")
    ///     .resource("notes://today", "today", "text/plain", || async { "Buy milk." })
    ///     .build();
    /// assert_eq!(server.resources()[0].uri, "notes://today");
    /// ```
    pub fn resource<F, Fut>(
        self,
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        content: F,
    ) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoResourceContents,
    {
        self.resource_with(ResourceInfo::new(uri, name).mime_type(mime_type), content)
    }

    /// [`resource`](Self::resource) with a title and a description.
    ///
    /// ```
    /// use fusion_runtime::{resource::ResourceInfo, prelude::*};
    ///
    /// let info = ResourceInfo::new("config://app", "config")
    ///     .description("The application's configuration")
    ///     .mime_type("application/json");
    /// let server = Server::builder("app", "1.0.0")
    ///     .resource_with(info, || async { serde_json::json!({"debug": false}) })
    ///     .build();
    /// assert_eq!(server.resources()[0].description.as_deref(), Some("The application's configuration"));
    /// ```
    pub fn resource_with<F, Fut>(mut self, info: ResourceInfo, content: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoResourceContents,
    {
        let content = Arc::new(content);
        let read: ReadFn = Arc::new(move |_variables| {
            let future = content();
            Box::pin(async move {
                future
                    .await
                    .into_resource_contents()
                    .map_err(ReadFailure::Error)
            })
        });
        self.catalog.resources.push_fixed(info, read);
        self
    }

    /// Registers a resource template: URIs that match `uri_template` (RFC 6570 level 1:
    /// `{name}` matches one path segment, `{+name}` anything) are read by calling `content`
    /// with the template's variables.
    ///
    /// The variables arrive as strings, decoded into `P`: a `HashMap<String, String>`, or
    /// a struct of `String` fields named like the variables.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// #[mcp_type]
    /// #[derive(Deserialize)]
    /// struct Page {
    ///     id: String,
    /// }
    ///
    /// let server = Server::builder("wiki", "1.0.0")
    ///     .resource_template("wiki://pages/{id}", "page", "text/plain", |Page { id }| async move {
    ///         format!("the page {id}")
    ///     })
    ///     .build();
    /// assert_eq!(server.resource_templates()[0].uri_template, "wiki://pages/{id}");
    /// ```
    pub fn resource_template<P, F, Fut>(
        self,
        uri_template: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        content: F,
    ) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(P) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoResourceContents,
    {
        self.resource_template_with(
            ResourceInfo::new(uri_template, name).mime_type(mime_type),
            content,
        )
    }

    /// [`resource_template`](Self::resource_template) with a title and a description
    /// (`info`'s URI is the template).
    pub fn resource_template_with<P, F, Fut>(mut self, info: ResourceInfo, content: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(P) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoResourceContents,
    {
        let content = Arc::new(content);
        let read: ReadFn = Arc::new(move |variables| {
            let decoded = crate::validate::decode_map::<P>(variables);
            let content = Arc::clone(&content);
            Box::pin(async move {
                let variables = decoded.map_err(ReadFailure::Variables)?;
                content(variables)
                    .await
                    .into_resource_contents()
                    .map_err(ReadFailure::Error)
            })
        });
        self.catalog.resources.push_template(info, read);
        self
    }
}

impl<C: Send + Sync + 'static> Server<C> {
    /// The fixed resources, as `resources/list` describes them.
    pub fn resources(&self) -> Vec<rmcp::model::Resource> {
        self.catalog().resources.resources()
    }

    /// The resource templates, as `resources/templates/list` describes them.
    pub fn resource_templates(&self) -> Vec<rmcp::model::ResourceTemplate> {
        self.catalog().resources.templates()
    }

    /// Reads a resource as a client would (`resources/read`): the contents, with each
    /// one's URI and MIME type filled in.
    ///
    /// # Errors
    /// A message when no resource has this URI, or when its closure failed.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let server = Server::builder("notes", "1.0.0")
    ///     .resource("notes://today", "today", "text/plain", || async { "Buy milk." })
    ///     .build();
    /// let contents = server.read_resource("notes://today").await.unwrap();
    /// assert_eq!(serde_json::to_value(&contents[0]).unwrap()["text"], "Buy milk.");
    /// assert!(server.read_resource("notes://nope").await.is_err());
    /// # });
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, String> {
        self.catalog()
            .resources
            .read(uri)
            .await
            .map_err(|error| error.message(uri))
    }

    /// Tells every client subscribed to `uri` that it changed
    /// (`notifications/resources/updated`), on this replica and, through the change bus
    /// ([`ServerBuilder::change_bus`]), on the others; they read it again when they want
    /// it. The same as [`Notifier::resource_updated`](crate::changes::Notifier::resource_updated).
    pub async fn notify_resource_updated(&self, uri: &str) {
        self.notifier().resource_updated(uri).await;
    }
}
