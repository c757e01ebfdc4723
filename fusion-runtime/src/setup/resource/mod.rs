//! Resources: data a server offers by URI (`resources/list`, `resources/read`), fixed or
//! from a URI template (`resources/templates/list`), with subscriptions
//! (`resources/subscribe`) so that clients hear when one changes.
//!
//! A resource is registered on the builder with a closure that returns its content; the
//! runtime answers the protocol around it (listing, URI matching, base64 for bytes, the
//! `uri` and `mimeType` of each content, errors, panics).
//!
//! ```
//! use std::collections::HashMap;
//! use fusion_runtime::prelude::*;
//!
//! let server = Server::builder("docs", "1.0.0")
//!     // A fixed resource: text.
//!     .resource("docs://readme", "readme", "text/markdown", || async { "# Hello" })
//!     // Bytes are sent as a base64 blob.
//!     .resource("docs://logo", "logo", "image/png", || async { vec![0x89_u8, b'P', b'N', b'G'] })
//!     // A template: `{id}` is matched in the URI and handed to the closure.
//!     .resource_template("docs://pages/{id}", "page", "text/plain", |vars: HashMap<String, String>| async move {
//!         format!("page {}", vars["id"])
//!     })
//!     .build();
//! assert_eq!(server.resources().len(), 2);
//! assert_eq!(server.resource_templates().len(), 1);
//! ```
//!
//! Template variables arrive as strings; the closure takes anything that deserializes from a
//! map of them (a `HashMap<String, String>`, or a struct of `String` fields).

mod builder;

use std::{fmt::Display, sync::Arc};

use base64::Engine as _;
use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::{Map, Value};

use crate::{
    failure::wording::catalog as words, future::BoxFuture, setup::error::BuildError,
    setup::uri_template::UriTemplate,
};

/// What a resource's closure returns: text or bytes, with an optional MIME type that
/// overrides the one the resource was registered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceContent {
    body: Body,
    mime_type: Option<String>,
    /// Set for the contents of a multi-part resource that name their own URI.
    uri: Option<String>,
    /// The content's `_meta` (an MCP Apps view's `ui`: `apps/`).
    meta: Option<Map<String, Value>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Body {
    Text(String),
    Bytes(Vec<u8>),
}

impl ResourceContent {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            body: Body::Text(text.into()),
            mime_type: None,
            uri: None,
            meta: None,
        }
    }

    /// Binary content, sent base64-encoded as a `blob`.
    pub fn bytes(bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            body: Body::Bytes(bytes.into()),
            mime_type: None,
            uri: None,
            meta: None,
        }
    }

    /// A value as JSON text, with the MIME type `application/json`.
    ///
    /// # Errors
    /// When the value cannot be serialized (a map with non-string keys, a failing
    /// `Serialize` impl).
    pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        Ok(Self::text(serde_json::to_string(value)?).mime_type("application/json"))
    }

    /// Sets the MIME type of this content.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the URI of this content (by default, the URI that was read).
    pub fn uri(mut self, uri: impl Into<String>) -> Self {
        self.uri = Some(uri.into());
        self
    }

    /// With this `_meta` on the wire.
    pub(crate) fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    fn into_wire(self, uri: &str, default_mime: Option<&str>) -> ResourceContents {
        let uri = self.uri.unwrap_or_else(|| uri.to_owned());
        let mime_type = self.mime_type.or_else(|| default_mime.map(str::to_owned));
        let contents = match self.body {
            Body::Text(text) => ResourceContents::text(text, uri),
            Body::Bytes(bytes) => ResourceContents::blob(encode_base64(&bytes), uri),
        };
        let contents = match mime_type {
            Some(mime_type) => contents.with_mime_type(mime_type),
            // `ResourceContents::text` assumes text/plain; with no type registered, say so.
            None => contents,
        };
        match self.meta {
            Some(meta) => contents.with_meta(rmcp::model::MetaObject(meta)),
            None => contents,
        }
    }
}

/// What a resource closure may return: text (`String`, `&'static str`), bytes
/// (`Vec<u8>`), JSON (`serde_json::Value`), one or several [`ResourceContent`]s, or a
/// `Result` of any of these whose error becomes a masked internal error.
pub trait IntoResourceContents {
    /// The contents, or the error's text (logged, never sent).
    ///
    /// # Errors
    /// The closure's own error, as text.
    fn into_resource_contents(self) -> Result<Vec<ResourceContent>, String>;
}

impl IntoResourceContents for ResourceContent {
    fn into_resource_contents(self) -> Result<Vec<ResourceContent>, String> {
        Ok(vec![self])
    }
}

impl IntoResourceContents for Vec<ResourceContent> {
    fn into_resource_contents(self) -> Result<Vec<ResourceContent>, String> {
        Ok(self)
    }
}

impl IntoResourceContents for String {
    fn into_resource_contents(self) -> Result<Vec<ResourceContent>, String> {
        Ok(vec![ResourceContent::text(self)])
    }
}

impl IntoResourceContents for &'static str {
    fn into_resource_contents(self) -> Result<Vec<ResourceContent>, String> {
        Ok(vec![ResourceContent::text(self)])
    }
}

impl IntoResourceContents for Vec<u8> {
    fn into_resource_contents(self) -> Result<Vec<ResourceContent>, String> {
        Ok(vec![ResourceContent::bytes(self)])
    }
}

impl IntoResourceContents for Value {
    fn into_resource_contents(self) -> Result<Vec<ResourceContent>, String> {
        ResourceContent::json(&self)
            .map(|content| vec![content])
            .map_err(|error| error.to_string())
    }
}

impl<T: IntoResourceContents, E: Display> IntoResourceContents for Result<T, E> {
    fn into_resource_contents(self) -> Result<Vec<ResourceContent>, String> {
        self.map_err(|error| error.to_string())?
            .into_resource_contents()
    }
}

/// How a resource is listed: its URI (or URI template), name, and optional title,
/// description and MIME type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
}

impl ResourceInfo {
    /// A resource at `uri` (for a template, the URI template) called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
        }
    }

    /// A title for people.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the resource holds (for the model and for people).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MIME type of the contents, unless a content sets its own.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    fn to_resource(&self) -> rmcp::model::Resource {
        let mut resource = rmcp::model::Resource::new(&self.uri, &self.name);
        if let Some(title) = &self.title {
            resource = resource.with_title(title);
        }
        if let Some(description) = &self.description {
            resource = resource.with_description(description);
        }
        if let Some(mime_type) = &self.mime_type {
            resource = resource.with_mime_type(mime_type);
        }
        resource
    }

    fn to_template(&self) -> rmcp::model::ResourceTemplate {
        let mut template = rmcp::model::ResourceTemplate::new(&self.uri, &self.name);
        if let Some(title) = &self.title {
            template = template.with_title(title);
        }
        if let Some(description) = &self.description {
            template = template.with_description(description);
        }
        if let Some(mime_type) = &self.mime_type {
            template = template.with_mime_type(mime_type);
        }
        template
    }
}

pub(crate) type ReadFn = Arc<dyn Fn(Map<String, Value>) -> BoxFuture<'static, Read> + Send + Sync>;

/// What one run of a resource closure gave.
type Read = Result<Vec<ResourceContent>, ReadFailure>;

/// Why a read failed, before it is turned into a JSON-RPC error.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The template variables did not decode into the closure's argument type.
    Variables(String),
    /// The closure returned an error.
    Error(String),
}

struct FixedResource {
    info: ResourceInfo,
    read: ReadFn,
}

struct TemplateResource {
    info: ResourceInfo,
    template: UriTemplate,
    read: ReadFn,
}

/// The resources of a server: fixed ones, templates, and the
/// mistakes made registering them (reported by `try_build`). The prompts and completions
/// have their own catalog (`prompt.rs`); `catalog.rs` holds both.
#[derive(Default)]
pub(crate) struct Resources {
    fixed: Vec<FixedResource>,
    templates: Vec<TemplateResource>,
    errors: Vec<BuildError>,
}

impl Resources {
    /// The registration mistakes: duplicate URIs, malformed templates.
    pub(crate) fn take_errors(&mut self) -> Vec<BuildError> {
        std::mem::take(&mut self.errors)
    }

    pub(crate) fn has_resources(&self) -> bool {
        !self.fixed.is_empty() || !self.templates.is_empty()
    }

    pub(crate) fn resources(&self) -> Vec<rmcp::model::Resource> {
        self.fixed
            .iter()
            .map(|resource| resource.info.to_resource())
            .collect()
    }

    pub(crate) fn templates(&self) -> Vec<rmcp::model::ResourceTemplate> {
        self.templates
            .iter()
            .map(|resource| resource.info.to_template())
            .collect()
    }

    /// Whether `uri` names a fixed resource or matches a template.
    pub(crate) fn knows(&self, uri: &str) -> bool {
        self.fixed.iter().any(|resource| resource.info.uri == uri)
            || self
                .templates
                .iter()
                .any(|resource| resource.template.matches(uri).is_some())
    }

    /// Reads `uri`: a fixed resource first, then the first template that matches.
    pub(crate) async fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, ReadError> {
        let (read, mime_type, variables) =
            if let Some(fixed) = self.fixed.iter().find(|resource| resource.info.uri == uri) {
                (
                    Arc::clone(&fixed.read),
                    fixed.info.mime_type.clone(),
                    Map::new(),
                )
            } else {
                let found = self.templates.iter().find_map(|resource| {
                    resource
                        .template
                        .matches(uri)
                        .map(|variables| (resource, variables))
                });
                let Some((resource, variables)) = found else {
                    return Err(ReadError::NotFound);
                };
                let variables = variables
                    .into_iter()
                    .map(|(name, value)| (name, Value::String(value)))
                    .collect();
                (
                    Arc::clone(&resource.read),
                    resource.info.mime_type.clone(),
                    variables,
                )
            };
        let ran = crate::failure::panic::catch(async move { read(variables).await }).await;
        let reference = crate::failure::panic::next_reference();
        match ran {
            Ok(Ok(contents)) => Ok(contents
                .into_iter()
                .map(|content| content.into_wire(uri, mime_type.as_deref()))
                .collect()),
            Ok(Err(ReadFailure::Variables(details))) => {
                tracing::warn!(target: "fusion::resource", uri, %details, "template variables did not decode");
                Err(ReadError::InvalidUri(details))
            }
            Ok(Err(ReadFailure::Error(error))) => {
                tracing::error!(target: "fusion::resource", uri, reference, %error, "reading a resource failed");
                Err(ReadError::Failed { reference })
            }
            Err(message) => {
                tracing::error!(target: "fusion::resource", uri, reference, panic = %message, "a resource closure panicked");
                Err(ReadError::Failed { reference })
            }
        }
    }

    pub(crate) fn push_fixed(&mut self, info: ResourceInfo, read: ReadFn) {
        if self
            .fixed
            .iter()
            .any(|resource| resource.info.uri == info.uri)
        {
            self.errors.push(BuildError::DuplicateResource(info.uri));
            return;
        }
        self.fixed.push(FixedResource { info, read });
    }

    pub(crate) fn push_template(&mut self, info: ResourceInfo, read: ReadFn) {
        if self
            .templates
            .iter()
            .any(|resource| resource.info.uri == info.uri)
        {
            self.errors.push(BuildError::DuplicateResource(info.uri));
            return;
        }
        match UriTemplate::parse(&info.uri) {
            Ok(template) => self.templates.push(TemplateResource {
                info,
                template,
                read,
            }),
            Err(problem) => self.errors.push(BuildError::InvalidUriTemplate {
                template: info.uri,
                problem,
            }),
        }
    }

    /// The variables of the template `uri_template`, if it is registered.
    pub(crate) fn template_variables(&self, uri_template: &str) -> Option<Vec<String>> {
        self.templates
            .iter()
            .find(|resource| resource.info.uri == uri_template)
            .map(|resource| resource.template.variables())
    }
}

/// Two handles on the same client session: rmcp stores the client's `initialize`
/// parameters once per session, so their address identifies it.
/// Why `resources/read` failed.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// No resource has this URI and no template matches it.
    NotFound,
    /// A template matched but its variables did not decode.
    InvalidUri(String),
    /// The closure failed or panicked; details are in the log under `reference`.
    Failed { reference: String },
}

impl ReadError {
    /// The message of a failed read of `uri`, as the client reads it.
    pub(crate) fn message(&self, uri: &str) -> String {
        match self {
            Self::NotFound => words::resource_not_found(uri),
            Self::InvalidUri(details) => words::resource_uri_invalid(uri, details),
            Self::Failed { reference } => words::resource_read_failed(uri, reference),
        }
    }
}

/// Content blocks for tool results and prompt messages, from raw bytes.
///
/// ```
/// let block = fusion_runtime::resource::image(&[1, 2, 3], "image/png");
/// assert_eq!(serde_json::to_value(&block).unwrap()["data"], "AQID");
/// ```
pub fn image(bytes: &[u8], mime_type: &str) -> ContentBlock {
    ContentBlock::image(encode_base64(bytes), mime_type)
}

/// An audio content block from raw bytes (base64-encoded on the wire).
pub fn audio(bytes: &[u8], mime_type: &str) -> ContentBlock {
    ContentBlock::audio(encode_base64(bytes), mime_type)
}

/// An embedded text resource as a content block (`{"type": "resource", ...}`).
///
/// ```
/// let block = fusion_runtime::resource::embedded_text("test://doc", "text/plain", "hello");
/// let json = serde_json::to_value(&block).unwrap();
/// assert_eq!(json["type"], "resource");
/// assert_eq!(json["resource"]["text"], "hello");
/// ```
pub fn embedded_text(uri: &str, mime_type: &str, text: &str) -> ContentBlock {
    ContentBlock::resource(ResourceContents::text(text, uri).with_mime_type(mime_type))
}

/// Base64 (standard alphabet, padded), as MCP carries binary data.
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
