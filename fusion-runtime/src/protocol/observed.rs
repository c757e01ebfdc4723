//! `prompts/get` and `resources/read` as the exported telemetry sees them (feature `otel`):
//! each answered inside its server span, its duration recorded with its outcome. A
//! `tools/call` gets the same from the pipeline, which knows how the call failed.

use rmcp::{RoleServer, model::ErrorData, service::RequestContext};

#[cfg(feature = "otel")]
use crate::{
    log::otel::{self, Operation},
    protocol::request::{request_id_text, request_info},
};

/// What a request reads: a prompt by its name (`known`: whether one is registered under
/// it, else its metrics say `_OTHER`), or a resource by its URI.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) enum Read<'a> {
    Prompt { name: &'a str, known: bool },
    Resource { uri: &'a str },
}

/// One request watched from its arrival: its span (when spans are exported) and what its
/// duration is recorded under. Made before the request's context is handed on.
pub(crate) struct Watch {
    #[cfg(feature = "otel")]
    span: Option<tracing::Span>,
    #[cfg(feature = "otel")]
    started: std::time::Instant,
    /// The bounded label: a registered prompt's name, `_OTHER`, or none for a resource.
    #[cfg(feature = "otel")]
    label: Option<String>,
}

impl Watch {
    /// Starts watching `read`, a request that came with `context`.
    pub(crate) fn start(read: Read<'_>, context: &RequestContext<RoleServer>) -> Self {
        #[cfg(feature = "otel")]
        {
            let span = otel::active().then(|| {
                let operation = match read {
                    Read::Prompt { name, .. } => Operation::GetPrompt(name),
                    Read::Resource { uri } => Operation::ReadResource(uri),
                };
                let request_id = request_id_text(&context.id);
                let request = request_info(&context.extensions);
                let text = |key: &str| context.meta.get(key).and_then(serde_json::Value::as_str);
                let origin = otel::Origin {
                    request_id: Some(&request_id),
                    request: &request,
                    meta_trace: text("traceparent").map(|parent| (parent, text("tracestate"))),
                };
                otel::server_span(operation, &origin)
            });
            let label = match read {
                Read::Prompt { name, known: true } => Some(name.to_owned()),
                Read::Prompt { known: false, .. } => Some(otel::OTHER.to_owned()),
                Read::Resource { .. } => None,
            };
            Self {
                span,
                started: std::time::Instant::now(),
                label,
            }
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = (read, context);
            Self {}
        }
    }

    /// `answer`, inside the span; then its duration and outcome recorded.
    pub(crate) async fn run<T>(
        self,
        answer: impl Future<Output = Result<T, ErrorData>>,
    ) -> Result<T, ErrorData> {
        #[cfg(feature = "otel")]
        {
            let answered = match &self.span {
                Some(span) => tracing::Instrument::instrument(answer, span.clone()).await,
                None => answer.await,
            };
            let error_code = answered.as_ref().err().map(|error| error.code.0);
            if let (Some(span), Some(code)) = (&self.span, error_code) {
                span.in_scope(|| otel::record_error_code(code));
            }
            let operation = match &self.label {
                Some(prompt) => Operation::GetPrompt(prompt),
                None => Operation::ReadResource(""),
            };
            let error_type = error_code.map(|code| code.to_string());
            let seconds = self.started.elapsed().as_secs_f64();
            otel::record_operation(operation, seconds, error_type.as_deref());
            answered
        }
        #[cfg(not(feature = "otel"))]
        answer.await
    }
}
