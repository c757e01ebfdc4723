//! The early sampling decision: a request that no span would record makes none.

use std::sync::OnceLock;

use opentelemetry_sdk::trace::{SamplingDecision, ShouldSample};

/// The sampler the tracer provider was built with (the SDK's, from
/// `OTEL_TRACES_SAMPLER`), kept to decide early for a request that no span would record.
static SAMPLER: OnceLock<Box<dyn ShouldSample>> = OnceLock::new();

/// Whether the sampler drops a server span named `name` under `parent` (the client's span)
/// whatever the new span's trace id: under a parent, its trace id is the parent's; without
/// one, the decision must be the same for the lowest and the highest trace id.
pub(super) fn dropped(parent: Option<&opentelemetry::Context>, name: &str) -> bool {
    use opentelemetry::trace::{SpanKind, TraceContextExt as _, TraceId};
    let Some(sampler) = SAMPLER.get() else {
        return false;
    };
    let drops = |trace_id: TraceId| {
        let result = sampler.should_sample(parent, trace_id, name, &SpanKind::Server, &[], &[]);
        result.decision == SamplingDecision::Drop
    };
    let remote = parent.map(|context| context.span().span_context().clone());
    match remote.filter(opentelemetry::trace::SpanContext::is_valid) {
        Some(remote) => drops(remote.trace_id()),
        None => drops(TraceId::from(1)) && drops(TraceId::from(u128::MAX)),
    }
}

/// Keeps the sampler the tracer provider was built with; the first one stays.
pub(super) fn remember(sampler: Box<dyn ShouldSample>) {
    let _ = SAMPLER.set(sampler);
}
