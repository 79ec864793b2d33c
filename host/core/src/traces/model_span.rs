//! [`ModelSpan`]: the span of one model call an agent makes (rule X2).

use opentelemetry::Context;
use opentelemetry::KeyValue;
use opentelemetry::global::BoxedSpan;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry::trace::{Span as _, SpanBuilder, SpanKind, Status, Tracer as _};

use super::{TraceContext, Traces};
use crate::model::{ModelError, Usage};

/// The span of one call to a model provider: a client span named `chat
/// PROVIDER`, whose trace context the provider's request carries as its
/// `traceparent` header. Ended by [`end`](Self::end); dropped unended, it
/// ends then.
pub struct ModelSpan {
    span: BoxedSpan,
    context: TraceContext,
}

impl std::fmt::Debug for ModelSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSpan")
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl Traces {
    /// Starts the span of a call to the model of `provider` (its name for
    /// logs), a child of `parent` if given.
    pub fn model_call(&self, provider: &str, parent: Option<&TraceContext>) -> ModelSpan {
        let cx = match parent {
            Some(tc) => Context::new().with_remote_span_context(tc.to_span_context()),
            None => Context::new(),
        };
        let provider = super::bounded(&crate::SecretSet::default(), provider);
        let name = format!("chat {provider}");
        let builder = SpanBuilder::from_name(name)
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", provider),
            ]);
        let span = self.tracer.build_with_context(builder, &cx);
        let context = TraceContext::of_span(
            span.span_context(),
            parent.and_then(TraceContext::baggage_shared),
        );
        ModelSpan { span, context }
    }
}

impl ModelSpan {
    /// The trace context the provider's request carries.
    pub fn context(&self) -> &TraceContext {
        &self.context
    }

    /// Ends the span with the call's token counts, or the kind of its
    /// error (never the provider's message, which may quote the prompt).
    pub fn end(mut self, outcome: Result<&Usage, &ModelError>) {
        if self.span.is_recording() {
            match outcome {
                Ok(usage) => {
                    self.span.set_attribute(KeyValue::new(
                        "gen_ai.usage.input_tokens",
                        i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
                    ));
                    self.span.set_attribute(KeyValue::new(
                        "gen_ai.usage.output_tokens",
                        i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
                    ));
                }
                Err(e) => {
                    let kind = match e {
                        ModelError::Http { .. } => "http",
                        ModelError::RateLimited { .. } => "rate_limited",
                        ModelError::Malformed(_) => "malformed",
                        ModelError::Transport(_) => "transport",
                        ModelError::Stream { .. } => "stream",
                        _ => "other",
                    };
                    self.span.set_attribute(KeyValue::new("error.type", kind));
                    self.span.set_status(Status::error(kind));
                }
            }
        }
        self.span.end();
    }
}
