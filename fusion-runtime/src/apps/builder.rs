//! [`ServerBuilder::app_view`](crate::ServerBuilder::app_view): an MCP Apps view checked,
//! served as a resource, and linked to its tool.

use super::{APP_MIME_TYPE, AppView};
use crate::{
    resource::{ResourceContent, ResourceInfo},
    setup::{builder::ServerBuilder, error::BuildError},
};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Links the tool `tool` (a tool's name, or a group's: every action of it, whether the
    /// group is listed as one tool or flat) to an MCP Apps view ([`AppView`](AppView)): the view is served as a `ui://` resource,
    /// and clients that declared the extension see `_meta.ui.resourceUri` on the tool. One
    /// view may serve several tools; two different views under one URI are an error.
    ///
    /// [`try_build`](Self::try_build) reports a view that cannot be served (a URI that is
    /// not `ui://`, empty HTML, HTML over [`MAX_VIEW_BYTES`](crate::apps::MAX_VIEW_BYTES)) and
    /// a tool the server does not have.
    ///
    /// ```
    /// use fusion_runtime::{apps::AppView, prelude::*};
    ///
    /// /// Add two integers.
    /// #[mcp_tool]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// let view = AppView::new("ui://calc/sum", "Sum").html("<!DOCTYPE html><p id=sum></p>");
    /// let server = Server::builder("calc", "1.0.0").tool(add).app_view("add", view).build();
    /// assert_eq!(server.resources().len(), 1);
    ///
    /// let broken = AppView::new("https://calc/sum", "Sum").html("<p>");
    /// let errors = Server::builder("calc", "1.0.0").tool(add).app_view("add", broken).try_build();
    /// assert!(errors.is_err());
    /// ```
    pub fn app_view(mut self, tool: impl Into<String>, view: AppView) -> Self {
        let tool = tool.into();
        if let Some(reason) = view.problem() {
            self.errors.push(BuildError::InvalidAppView {
                tool,
                uri: view.uri,
                reason,
            });
            return self;
        }
        let uri = view.uri.clone();
        match self.app_views.iter().find(|known| known.uri == uri) {
            Some(known) if *known != view => {
                self.errors.push(BuildError::InvalidAppView {
                    tool,
                    uri,
                    reason: "another view has this URI".to_owned(),
                });
                return self;
            }
            Some(_) => {}
            None => {
                let mut info =
                    ResourceInfo::new(uri.clone(), view.name.clone()).mime_type(APP_MIME_TYPE);
                if let Some(description) = &view.description {
                    info = info.description(description.clone());
                }
                let html = std::sync::Arc::clone(&view.html);
                let meta = view.resource_meta();
                self = self.resource_with(info, move || {
                    let content = ResourceContent::text(html.to_string())
                        .mime_type(APP_MIME_TYPE)
                        .with_meta(meta.clone());
                    std::future::ready(content)
                });
                self.app_views.push(view);
            }
        }
        self.app_links.push((tool, uri));
        self
    }
}
