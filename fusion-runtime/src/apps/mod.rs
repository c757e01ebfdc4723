//! MCP Apps (the official extension `io.modelcontextprotocol/ui`, stable 2026-01-26): a
//! tool's results shown to a person in an HTML view the host renders beside the answer.
//!
//! A view is an HTML document served as a `ui://` resource of type
//! `text/html;profile=mcp-app`, with the extension's `_meta.ui` (the CSP domains it needs,
//! the browser permissions it asks for, a dedicated domain, a border preference). A tool
//! linked to a view carries `_meta.ui.resourceUri` in `tools/list` for the clients that
//! declared the extension (its `mimeTypes` naming the view's type); the host reads the view
//! with `resources/read` and hands it the call's arguments and result. The result's
//! `structuredContent` is what the view renders, and its `content` stays what the model
//! reads: a tool with a typed output already sends both. Clients that did not declare the
//! extension get the tool as before, without `_meta.ui`.
//!
//! ```
//! use fusion_runtime::{apps::{AppView, Csp}, prelude::*, testing::Tester};
//!
//! #[mcp_type]
//! #[derive(Serialize, JsonSchema)]
//! struct Forecast {
//!     city: String,
//!     celsius: f64,
//! }
//!
//! /// Tomorrow's forecast for a city.
//! #[mcp_tool(read_only)]
//! async fn forecast(city: String) -> Forecast {
//!     Forecast { city, celsius: 21.5 }
//! }
//!
//! let view = AppView::new("ui://weather/forecast", "Forecast")
//!     .html("<!DOCTYPE html><html><body><div id=\"forecast\"></div></body></html>")
//!     .csp(Csp::new().connect_domains(["https://api.weather.example"]))
//!     .prefers_border(true);
//! let server = Server::builder("weather", "1.0.0")
//!     .tool(forecast)
//!     .app_view("forecast", view)
//!     .build();
//! // The view is a resource any client can read.
//! assert_eq!(server.resources()[0].uri, "ui://weather/forecast");
//! ```
//!
//! A view's HTML is a string: `include_str!("view.html")` embeds a file at compile time. A
//! view whose URI is not `ui://`, whose HTML is empty or over [`MAX_VIEW_BYTES`], or that
//! names a tool the server does not have, is a [`BuildError`] when the
//! server is built, never a broken link at call time.

mod builder;

use std::{collections::HashMap, sync::Arc};

use serde_json::{Map, Value, json};

use crate::setup::{error::BuildError, registry::Registry};

/// The extension's identifier, under which a client declares it in
/// `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an HTML view.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The largest view's HTML, in bytes (2 MiB): a host reads it whole into an iframe, and a
/// larger document is almost always a bundle that should load its assets from a
/// [`Csp::resource_domains`] origin instead.
pub const MAX_VIEW_BYTES: usize = 2 << 20;

/// An HTML view of a tool's results (MCP Apps), linked to a tool with
/// [`ServerBuilder::app_view`](crate::ServerBuilder::app_view).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppView {
    pub(crate) uri: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) html: Arc<str>,
    csp: Csp,
    permissions: Permissions,
    domain: Option<String>,
    prefers_border: Option<bool>,
}

impl AppView {
    /// A view at `uri` (it must start with `ui://`) called `name`, with no HTML yet.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            description: None,
            html: Arc::from(""),
            csp: Csp::default(),
            permissions: Permissions::default(),
            domain: None,
            prefers_border: None,
        }
    }

    /// The view's HTML document (`include_str!("view.html")` embeds a file).
    pub fn html(mut self, html: impl Into<String>) -> Self {
        self.html = Arc::from(html.into());
        self
    }

    /// What the view shows, for the host's listing.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The origins the view may reach; none by default (the host's restrictive CSP).
    pub fn csp(mut self, csp: Csp) -> Self {
        self.csp = csp;
        self
    }

    /// The browser permissions the view asks for; none by default.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = permissions;
        self
    }

    /// A dedicated origin for the view's sandbox, in the form the host documents.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// Whether the host draws a border and background around the view (hosts' defaults
    /// vary: the extension recommends saying).
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.prefers_border = Some(border);
        self
    }

    /// Why this view cannot be served, if it cannot.
    pub(crate) fn problem(&self) -> Option<String> {
        if !self.uri.starts_with("ui://") || self.uri.len() <= "ui://".len() {
            return Some(format!("its URI `{}` must start with `ui://`", self.uri));
        }
        if self.html.trim().is_empty() {
            return Some("its HTML is empty".to_owned());
        }
        if self.html.len() > MAX_VIEW_BYTES {
            return Some(format!(
                "its HTML is {} bytes, over the limit of {MAX_VIEW_BYTES}",
                self.html.len()
            ));
        }
        None
    }

    /// The resource's `_meta`: `{"ui": {csp, permissions, domain, prefersBorder}}`, the
    /// fields given.
    pub(crate) fn resource_meta(&self) -> Map<String, Value> {
        let mut ui = Map::new();
        let csp = self.csp.to_json();
        if !csp.is_empty() {
            ui.insert("csp".to_owned(), Value::Object(csp));
        }
        let permissions = self.permissions.to_json();
        if !permissions.is_empty() {
            ui.insert("permissions".to_owned(), Value::Object(permissions));
        }
        if let Some(domain) = &self.domain {
            ui.insert("domain".to_owned(), json!(domain));
        }
        if let Some(border) = self.prefers_border {
            ui.insert("prefersBorder".to_owned(), json!(border));
        }
        let mut meta = Map::new();
        meta.insert("ui".to_owned(), Value::Object(ui));
        meta
    }
}

/// The origins a view may reach (`_meta.ui.csp`); each list empty by default, which the
/// host reads as "none".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csp {
    connect: Vec<String>,
    resource: Vec<String>,
    frame: Vec<String>,
    base_uri: Vec<String>,
}

impl Csp {
    /// No origin at all.
    pub fn new() -> Self {
        Self::default()
    }

    /// Origins for `fetch`, XHR and WebSocket (CSP `connect-src`).
    pub fn connect_domains<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.connect = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Origins for scripts, styles, images, fonts and media (`https://*.example.com`
    /// allowed).
    pub fn resource_domains<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.resource = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Origins for nested iframes (CSP `frame-src`).
    pub fn frame_domains<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.frame = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Allowed base URIs of the document (CSP `base-uri`).
    pub fn base_uri_domains<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.base_uri = origins.into_iter().map(Into::into).collect();
        self
    }

    fn to_json(&self) -> Map<String, Value> {
        let mut csp = Map::new();
        for (key, origins) in [
            ("connectDomains", &self.connect),
            ("resourceDomains", &self.resource),
            ("frameDomains", &self.frame),
            ("baseUriDomains", &self.base_uri),
        ] {
            if !origins.is_empty() {
                csp.insert(key.to_owned(), json!(origins));
            }
        }
        csp
    }
}

/// The browser permissions a view asks for (`_meta.ui.permissions`); the host may refuse
/// them, so a view feature-detects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    camera: bool,
    microphone: bool,
    geolocation: bool,
    clipboard_write: bool,
}

impl Permissions {
    /// None.
    pub fn new() -> Self {
        Self::default()
    }

    /// The camera.
    pub fn camera(mut self) -> Self {
        self.camera = true;
        self
    }

    /// The microphone.
    pub fn microphone(mut self) -> Self {
        self.microphone = true;
        self
    }

    /// The location.
    pub fn geolocation(mut self) -> Self {
        self.geolocation = true;
        self
    }

    /// Writing to the clipboard.
    pub fn clipboard_write(mut self) -> Self {
        self.clipboard_write = true;
        self
    }

    fn to_json(self) -> Map<String, Value> {
        let mut permissions = Map::new();
        for (key, asked) in [
            ("camera", self.camera),
            ("microphone", self.microphone),
            ("geolocation", self.geolocation),
            ("clipboardWrite", self.clipboard_write),
        ] {
            if asked {
                permissions.insert(key.to_owned(), json!({}));
            }
        }
        permissions
    }
}

/// Whether `ui` (a client's `capabilities.extensions["io.modelcontextprotocol/ui"]`)
/// declares MCP Apps with HTML views.
pub(crate) fn declared(ui: Option<&Map<String, Value>>) -> bool {
    ui.and_then(|ui| ui.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|kind| kind == APP_MIME_TYPE))
}

/// The links whose tool the server does not have, as build errors.
pub(crate) fn unknown_tools<'a, C>(
    links: &'a [(String, String)],
    registry: &'a Registry<C>,
) -> impl Iterator<Item = BuildError> + 'a {
    links
        .iter()
        .filter(|(tool, _)| !registry.knows(tool))
        .map(|(tool, _)| BuildError::UnknownTarget(tool.clone()))
}

/// The links by listed name: a view linked by a group's or a tool's own name goes to what
/// is listed for it.
pub(crate) fn listed_links<C>(
    links: &[(String, String)],
    registry: &Registry<C>,
) -> HashMap<String, String> {
    links
        .iter()
        .flat_map(|(name, uri)| {
            registry
                .listed_names_of(name)
                .into_iter()
                .map(move |listed| (listed, uri.clone()))
        })
        .collect()
}

/// `tool` with `_meta.ui.resourceUri` pointing at `uri`.
pub(crate) fn link(tool: &mut rmcp::model::Tool, uri: &str) {
    let meta = tool.meta.get_or_insert_with(Default::default);
    let ui = meta
        .0
        .entry("ui".to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(ui) = ui {
        ui.insert("resourceUri".to_owned(), json!(uri));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> AppView {
        AppView::new("ui://demo/view", "view").html("<!DOCTYPE html><p>hi</p>")
    }

    #[test]
    fn a_view_is_checked_before_it_is_served() {
        assert_eq!(view().problem(), None);
        assert!(
            AppView::new("https://x/view", "v")
                .html("<p>")
                .problem()
                .is_some_and(|why| why.contains("ui://"))
        );
        assert!(AppView::new("ui://", "v").html("<p>").problem().is_some());
        assert!(
            AppView::new("ui://x", "v")
                .problem()
                .is_some_and(|why| why.contains("empty"))
        );
        let huge = "x".repeat(MAX_VIEW_BYTES + 1);
        assert!(
            AppView::new("ui://x", "v")
                .html(huge)
                .problem()
                .is_some_and(|why| why.contains("over the limit"))
        );
    }

    #[test]
    fn the_resource_meta_says_only_what_was_given() {
        assert_eq!(Value::Object(view().resource_meta()), json!({"ui": {}}));
        let full = view()
            .csp(
                Csp::new()
                    .connect_domains(["https://api.example"])
                    .resource_domains(["https://cdn.example"]),
            )
            .permissions(Permissions::new().clipboard_write())
            .domain("abc.example")
            .prefers_border(false);
        assert_eq!(
            Value::Object(full.resource_meta()),
            json!({"ui": {
                "csp": {"connectDomains": ["https://api.example"], "resourceDomains": ["https://cdn.example"]},
                "permissions": {"clipboardWrite": {}},
                "domain": "abc.example",
                "prefersBorder": false,
            }})
        );
    }

    #[test]
    fn only_a_client_that_names_the_html_type_has_declared_apps() {
        let names = |value: Value| declared(value.as_object());
        assert!(names(json!({"mimeTypes": [APP_MIME_TYPE]})));
        assert!(!names(json!({"mimeTypes": ["text/uri-list"]})));
        assert!(!names(json!({"mimeTypes": APP_MIME_TYPE})));
        assert!(!names(json!({})));
        assert!(!declared(None));
    }
}
