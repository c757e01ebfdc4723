//! Every request but `tools/call` as the exported telemetry sees it (feature `otel`):
//! `prompts/get`, `resources/read`, and the methods without a target (`initialize`,
//! `ping`, the lists, `completion/complete`, the tasks' methods, ...), each answered inside
//! its server span, its duration recorded with its outcome. A `tools/call` gets the same
//! from the pipeline, which knows how the call failed.

use rmcp::{RoleServer, model::ErrorData, service::RequestContext};

#[cfg(feature = "otel")]
use crate::{
    log::otel::{self, Operation},
    protocol::request::{request_id_text, request_info},
};

/// What a request reads: a prompt by its name (`known`: whether one is registered under
/// it, else its metrics say `_OTHER`), a resource by its URI, or nothing named (a method
/// such as `tools/list`, by its name).
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) enum Read<'a> {
    Prompt { name: &'a str, known: bool },
    Resource { uri: &'a str },
    Method(&'static str),
}

/// What a request's duration is recorded under: a bounded label, never a client's text.
#[cfg(feature = "otel")]
enum Label {
    /// A registered prompt's name, or `_OTHER`.
    Prompt(String),
    /// `resources/read`: its URI is no label.
    Resource,
    Method(&'static str),
}

/// One request watched from its arrival: its span (when spans are exported) and what its
/// duration is recorded under. Made before the request's context is handed on.
pub(crate) struct Watch {
    #[cfg(feature = "otel")]
    span: Option<tracing::Span>,
    #[cfg(feature = "otel")]
    started: std::time::Instant,
    #[cfg(feature = "otel")]
    label: Label,
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
                    Read::Method(method) => Operation::Method(method),
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
                Read::Prompt { name, known: true } => Label::Prompt(name.to_owned()),
                Read::Prompt { known: false, .. } => Label::Prompt(otel::OTHER.to_owned()),
                Read::Resource { .. } => Label::Resource,
                Read::Method(method) => Label::Method(method),
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

    /// An answer made at once (no `.await` in it): its duration and outcome recorded.
    pub(crate) fn answered<T>(self, answer: Result<T, ErrorData>) -> Result<T, ErrorData> {
        #[cfg(feature = "otel")]
        self.record(answer.as_ref().err());
        answer
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
            self.record(answered.as_ref().err());
            answered
        }
        #[cfg(not(feature = "otel"))]
        answer.await
    }

    /// Ends the span (with the error's code, if any) and records the duration.
    #[cfg(feature = "otel")]
    fn record(self, error: Option<&ErrorData>) {
        let error_code = error.map(|error| error.code.0);
        if let (Some(span), Some(code)) = (&self.span, error_code) {
            span.in_scope(|| otel::record_error_code(code));
        }
        let operation = match &self.label {
            Label::Prompt(prompt) => Operation::GetPrompt(prompt),
            Label::Resource => Operation::ReadResource(""),
            Label::Method(method) => Operation::Method(method),
        };
        let error_type = error_code.map(|code| code.to_string());
        let seconds = self.started.elapsed().as_secs_f64();
        otel::record_operation(operation, seconds, error_type.as_deref());
    }
}
