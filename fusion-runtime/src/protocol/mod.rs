//! The protocol: rmcp's `ServerHandler` over a [`Server`]. rmcp (the official Rust SDK)
//! negotiates the version and dispatches JSON-RPC; every method lands here, and a
//! `tools/call` enters the pipeline through `call::serve_call` (`pipeline::run`). Both
//! transports serve this handler.

mod builder;
mod call;

pub(crate) use call::answer_call;
mod embed;
mod input_required;
mod list_hints;
mod observed;
mod params;
mod prompt;
pub(crate) mod request;
mod tools_changed;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as WireTool,
    },
    service::RequestContext,
};

use crate::setup::server::Server;

/// Whether the request's client declared MCP Apps (`apps/`): in the request's `_meta`
/// (2026-07-28), else in its session's handshake.
fn declares_apps(context: &RequestContext<RoleServer>) -> bool {
    match context
        .meta
        .get("io.modelcontextprotocol/clientCapabilities")
        .and_then(|capabilities| capabilities.get("extensions"))
    {
        Some(extensions) => crate::apps::declared(
            extensions
                .get(crate::apps::EXTENSION_ID)
                .and_then(serde_json::Value::as_object),
        ),
        None => context.client_capabilities().is_some_and(|capabilities| {
            crate::apps::declared(
                capabilities
                    .extensions
                    .as_ref()
                    .and_then(|extensions| extensions.get(crate::apps::EXTENSION_ID)),
            )
        }),
    }
}

impl<C: Send + Sync + 'static> ServerHandler for Server<C> {
    /// A request rmcp could not read as a method it knows: `-32602` when it is a known
    /// method whose params do not fit, `-32601` otherwise (the private `params::reject_custom`).
    fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<rmcp::model::CustomResult, ErrorData>> + Send + '_ {
        // The 2026-07-28 revision removed the session's methods: a request of that
        // revision naming one is for a method this server does not serve.
        let answer = if input_required::is_current(&context) && params::is_removed(&request.method)
        {
            ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "Method not found: `{}` is not part of the 2026-07-28 revision.",
                    request.method
                ),
                None,
            )
        } else {
            params::reject_custom(&request)
        };
        std::future::ready(Err(answer))
    }

    /// `subscriptions/listen` (2026-07-28): every notification the client asks for that
    /// the server advertises (rmcp narrows the filter to those).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.clone())
    }

    /// Sends the stream every change it accepted, from this replica and the others
    /// (`changes/`), until the client ends it.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let hub = std::sync::Arc::clone(&self.catalog().changes);
        hub.listen(context.sink().clone(), context.cancelled())
            .await;
        Ok(())
    }

    /// `initialize` as rmcp's default answers it (the peer's info kept, the version
    /// negotiated), inside its server span.
    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, ErrorData> {
        let watch = observed::Watch::start(observed::Read::Method("initialize"), &context);
        let answer = self.negotiate_initialize(&request);
        context.peer.set_peer_info(request);
        watch.answered(answer)
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        observed::Watch::start(observed::Read::Method("ping"), &context).answered(Ok(()))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let caller = request::request_info(&context.extensions);
        let watch = observed::Watch::start(observed::Read::Method("tasks/get"), &context);
        watch
            .run(self.inner.tasks.get(&request.task_id, caller.subject()))
            .await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = request::request_info(&context.extensions);
        let watch = observed::Watch::start(observed::Read::Method("tasks/update"), &context);
        watch
            .run(self.inner.tasks.update(
                &request.task_id,
                caller.subject(),
                request.input_responses,
            ))
            .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = request::request_info(&context.extensions);
        let watch = observed::Watch::start(observed::Read::Method("tasks/cancel"), &context);
        watch
            .run(self.inner.tasks.cancel(&request.task_id, caller.subject()))
            .await
    }

    fn get_info(&self) -> ServerConfig {
        // Logging is advertised so that tools can send `notifications/message` through
        // `Call::log` once the client sets a level (rmcp deprecates it, SEP-2577).
        // Resources, prompts and completions are advertised only when registered.
        #[allow(deprecated)]
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        // The lists may change while a client is connected: what a caller is shown
        // (`tools_changed.rs`), a mounted upstream going down (`setup/mounts.rs`), and
        // whatever the application tells through its `Notifier` (`changes/`).
        if let Some(tools) = capabilities.tools.as_mut() {
            tools.list_changed = Some(true);
        }
        let catalog = self.catalog();
        if catalog.resources.has_resources() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = Some(true);
            resources.list_changed = Some(true);
            capabilities.resources = Some(resources);
        }
        if catalog.prompts.has_prompts() {
            let mut prompts = rmcp::model::PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        if catalog.prompts.has_completions() {
            capabilities.completions = Some(Default::default());
        }
        if self.inner.tasks.any() || self.inner.mounts.tasks_later {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    rmcp::model::JsonObject::new(),
                );
        }
        let mut config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(self.name(), self.version()));
        if let Some(instructions) = self.instructions() {
            config = config.with_instructions(instructions);
        }
        // The surface's digest, so that a client (or an operator's probe) sees which
        // contract this replica serves: rmcp's `server/discover` copies this `_meta`.
        let mut meta = rmcp::model::MetaObject::new();
        meta.0.insert(
            crate::contract::SURFACE_META_KEY.to_owned(),
            serde_json::json!({ "digest": self.surface_digest() }),
        );
        config.meta = Some(meta);
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let watch = observed::Watch::start(observed::Read::Method("tools/list"), &context);
        let request = request::request_info(&context.extensions);
        if self.inner.visibility.depends_on_caller() {
            self.note_shown(&request, &context);
        }
        // A list that depends on the caller must not be shared between callers.
        let private = self.inner.visibility.depends_on_caller();
        let hints = list_hints::hints(&context, self.inner.list_ttl, private);
        let mut tools = self.tools_for(&request).into_owned();
        if !self.inner.app_links.is_empty() && declares_apps(&context) {
            for tool in &mut tools {
                if let Some(uri) = self.inner.app_links.get(tool.name.as_ref()) {
                    crate::apps::link(tool, uri);
                }
            }
        }
        watch.answered(Ok(list_hints::with_hints!(
            ListToolsResult::with_all_items(tools),
            hints
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed: rmcp spawns a task a request whose future holds this one, and moves it
        // (into the task, on each stage): measured, copying the pipeline's kilobytes of
        // state on every call cost more than one allocation.
        Box::pin(call::answer_call(self, request, context)).await
    }

    // rmcp deprecates logging (SEP-2577); clients of earlier protocol versions still send it.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let watch = observed::Watch::start(observed::Read::Method("logging/setLevel"), &context);
        self.set_log_level(crate::call::LogLevel::from_rmcp(request.level));
        watch.answered(Ok(()))
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        if let Some(peers) = &self.session_peers {
            peers.initialized(&context.extensions, &context.peer);
        }
    }

    fn get_tool(&self, name: &str) -> Option<WireTool> {
        let listed = self
            .inner
            .tool_search
            .as_ref()
            .map(|search| search.listed());
        listed
            .unwrap_or_default()
            .iter()
            .chain(self.tools())
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let watch = observed::Watch::start(observed::Read::Method("resources/list"), &context);
        watch.answered(self.require_resources().map(|()| {
            let hints = list_hints::hints(&context, self.inner.list_ttl, false);
            list_hints::with_hints!(
                rmcp::model::ListResourcesResult::with_all_items(self.resources()),
                hints
            )
        }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        let read = observed::Read::Method("resources/templates/list");
        let watch = observed::Watch::start(read, &context);
        watch.answered(self.require_resources().map(|()| {
            let hints = list_hints::hints(&context, self.inner.list_ttl, false);
            list_hints::with_hints!(
                rmcp::model::ListResourceTemplatesResult::with_all_items(self.resource_templates()),
                hints
            )
        }))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let watch =
            observed::Watch::start(observed::Read::Resource { uri: &request.uri }, &context);
        watch.run(self.answer_resource(request)).await
    }

    // `resources/subscribe` is legacy-only in rmcp (2026-07-28 replaces it); clients of
    // the earlier versions use it.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let watch = observed::Watch::start(observed::Read::Method("resources/subscribe"), &context);
        watch.answered(self.answer_subscribe(request, context))
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let read = observed::Read::Method("resources/unsubscribe");
        let watch = observed::Watch::start(read, &context);
        watch.answered(self.require_resources().map(|()| {
            self.catalog()
                .changes
                .unsubscribe(&request.uri, &context.peer);
        }))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let watch = observed::Watch::start(observed::Read::Method("prompts/list"), &context);
        if !self.catalog().prompts.has_prompts() {
            return watch.answered(Err(ErrorData::method_not_found::<
                rmcp::model::ListPromptsRequestMethod,
            >()));
        }
        let hints = list_hints::hints(&context, self.inner.list_ttl, false);
        watch.answered(Ok(list_hints::with_hints!(
            rmcp::model::ListPromptsResult::with_all_items(self.prompts()),
            hints
        )))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        // Boxed: the largest of these futures (1.9 KB, with the prompt's own), and rmcp's
        // dispatch holds room for the largest in every request's task and, through the
        // `initialize` it serves, in every session's task for as long as it lives.
        let read = observed::Read::Prompt {
            name: &request.name,
            known: self.catalog().prompts.knows(&request.name),
        };
        let watch = observed::Watch::start(read, &context);
        watch
            .run(Box::pin(self.answer_prompt(request, context)))
            .await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let watch = observed::Watch::start(observed::Read::Method("completion/complete"), &context);
        watch.answered(self.answer_complete(request))
    }
}

impl<C: Send + Sync + 'static> Server<C> {
    /// Answers one `completion/complete`.
    fn answer_complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        let catalog = self.catalog();
        if !catalog.prompts.has_completions() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CompleteRequestMethod,
            >());
        }
        let context = request
            .context
            .and_then(|context| context.arguments)
            .unwrap_or_default();
        catalog
            .prompts
            .complete(
                &|uri| catalog.resources.template_variables(uri),
                &request.r#ref,
                &request.argument.name,
                &request.argument.value,
                &context,
            )
            .map(rmcp::model::CompleteResult::new)
            .map_err(|message| ErrorData::invalid_params(message, None))
    }

    /// Answers one `resources/subscribe`.
    fn answer_subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.require_resources()?;
        if !self.catalog().resources.knows(&request.uri) {
            let message = crate::failure::wording::catalog::subscribe_not_found(&request.uri);
            return Err(ErrorData::resource_not_found(
                message,
                Some(serde_json::json!({ "uri": request.uri })),
            ));
        }
        self.catalog()
            .changes
            .subscribe(&request.uri, &context.peer);
        Ok(())
    }

    /// Answers one `resources/read`.
    async fn answer_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        self.require_resources()?;
        match self.catalog().resources.read(&request.uri).await {
            Ok(contents) => Ok(rmcp::model::ReadResourceResult::new(contents).into()),
            Err(error) => {
                let message = error.message(&request.uri);
                let data = Some(serde_json::json!({ "uri": request.uri }));
                Err(match error {
                    crate::setup::resource::ReadError::NotFound => {
                        ErrorData::resource_not_found(message, data)
                    }
                    crate::setup::resource::ReadError::InvalidUri(_) => {
                        ErrorData::invalid_params(message, data)
                    }
                    crate::setup::resource::ReadError::Failed { .. } => {
                        ErrorData::internal_error(message, data)
                    }
                })
            }
        }
    }

    /// `-32601` when the server offers no resources (the capability is not advertised).
    fn require_resources(&self) -> Result<(), ErrorData> {
        if self.catalog().resources.has_resources() {
            Ok(())
        } else {
            Err(ErrorData::method_not_found::<
                rmcp::model::ListResourcesRequestMethod,
            >())
        }
    }
}
