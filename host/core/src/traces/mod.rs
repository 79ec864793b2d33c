//! [`Traces`]: an OpenTelemetry span for every call, with a child span for
//! each of its stages (rule X2).
//!
//! A host built with [`HostBuilder::traces`](crate::HostBuilder::traces)
//! starts a span for every call, a child of the trace context the call
//! came with ([`CallContext::with_trace_context`](crate::CallContext::with_trace_context)),
//! and hands the call's context the span's own trace context for whatever
//! the call sends on (a remote MCP server's request). Each before and
//! after hook, the rules, validation and the approval wait get a child
//! span from the pipeline; the stages outside it (the wait for an instance
//! slot, instantiation, the guest, a remote server's answer) report to the
//! call's [`Observer`], which turns each into a child span. A call the
//! sampler leaves out gets no child spans.
//!
//! Attributes carry names and fixed words only: the tool, plugin, tenant,
//! call id, outcome and stage, never an argument or a result. Every string
//! attribute goes through the host's [`SecretSet`] and is cut to
//! [`MAX_ATTRIBUTE_BYTES`].
//!
//! A host built without traces creates nothing per call and reads no
//! clock for them.

pub mod context;
mod model_span;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanKind, Status, TraceContextExt as _, Tracer, TracerProvider,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue, Value};

/// The OpenTelemetry API this crate is built with, for embedders to make
/// their providers with the same version.
pub use opentelemetry;

use crate::observe::{Observer, Stage};
use crate::secret::SecretSet;
use crate::tool::CallContext;

pub use context::TraceContext;
pub use model_span::ModelSpan;

/// The longest a string attribute gets, in bytes; longer ones are cut at
/// a character boundary.
pub const MAX_ATTRIBUTE_BYTES: usize = 256;

/// The instrumentation scope of the host's spans.
pub const SCOPE: &str = "toolhost";

/// Attribute keys of the host's spans.
pub mod keys {
    /// `tools/call`, on a call's span.
    pub const METHOD: &str = "mcp.method.name";
    /// The tool called, as the call named it.
    pub const TOOL: &str = "gen_ai.tool.name";
    /// The plugin, extension or server the tool belongs to.
    pub const PLUGIN: &str = "toolhost.plugin";
    /// The tenant the call was made for.
    pub const TENANT: &str = "toolhost.tenant";
    /// The call's id.
    pub const CALL_ID: &str = "toolhost.call_id";
    /// How the call ended: the words of the `outcome` metric label.
    pub const OUTCOME: &str = "toolhost.outcome";
    /// The kind of error a failed call ended with (the outcome word).
    pub const ERROR_TYPE: &str = "error.type";
    /// The stage a child span times.
    pub const STAGE: &str = "toolhost.stage";
    /// A hook's name, on its span.
    pub const HOOK: &str = "toolhost.hook.name";
    /// `before` or `after`, on a hook's span.
    pub const HOOK_PHASE: &str = "toolhost.hook.phase";
    /// What a before hook decided: allow, reject, rewrite, ask; an after
    /// hook: keep, replace.
    pub const HOOK_DECISION: &str = "toolhost.hook.decision";
}

/// Traces of a host's calls (rule X2): an OpenTelemetry tracer, which the
/// embedder's `TracerProvider` (and exporter) decides the fate of. Clones
/// share the tracer.
#[derive(Clone)]
pub struct Traces {
    pub(crate) tracer: Arc<BoxedTracer>,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traces").finish_non_exhaustive()
    }
}

impl Traces {
    /// Traces made by `tracer`.
    pub fn new<T>(tracer: T) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        Self {
            tracer: Arc::new(BoxedTracer::new(Box::new(tracer))),
        }
    }

    /// Traces made by `provider`'s tracer of the scope [`SCOPE`], with
    /// this crate's version.
    pub fn from_provider<P>(provider: &P) -> Self
    where
        P: TracerProvider,
        P::Tracer: Send + Sync + 'static,
        <P::Tracer as Tracer>::Span: Send + Sync + 'static,
    {
        let scope = InstrumentationScope::builder(SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Self::new(provider.tracer_with_scope(scope))
    }

    /// Starts the span of a call of `tool` (registered: `true`) of
    /// `plugin`, a child of the trace context `ctx` came with.
    pub(crate) fn start_call(
        &self,
        ctx: &CallContext,
        tool: &str,
        registered: bool,
        plugin: &str,
        secrets: &SecretSet,
    ) -> CallSpan {
        let parent = match ctx.trace_context() {
            Some(tc) => Context::new().with_remote_span_context(tc.to_span_context()),
            None => Context::new(),
        };
        let attr = |s: &str| bounded(secrets, s);
        let name: Cow<'static, str> = if registered {
            match attr(tool) {
                Value::String(s) => format!("tools/call {s}").into(),
                _ => "tools/call".into(),
            }
        } else {
            "tools/call".into()
        };
        let started = SystemTime::now();
        let builder = SpanBuilder::from_name(name)
            .with_kind(SpanKind::Server)
            .with_start_time(started)
            .with_attributes([
                KeyValue::new(keys::METHOD, "tools/call"),
                KeyValue::new(keys::TOOL, attr(tool)),
                KeyValue::new(keys::PLUGIN, attr(plugin)),
                KeyValue::new(keys::TENANT, attr(ctx.tenant())),
                KeyValue::new(keys::CALL_ID, attr(&ctx.call_id().to_string())),
            ]);
        let span = self.tracer.build_with_context(builder, &parent);
        let recording = span.is_recording();
        let outgoing = TraceContext::of_span(
            span.span_context(),
            ctx.trace_context().and_then(TraceContext::baggage_shared),
        );
        CallSpan {
            cx: Context::new().with_span(span),
            tracer: self.tracer.clone(),
            secrets: secrets.clone(),
            recording,
            outgoing,
            started,
        }
    }
}

/// One call's span, and what its child spans need. Ends when
/// [`end`](Self::end) is called (or, unended, when dropped).
pub(crate) struct CallSpan {
    cx: Context,
    tracer: Arc<BoxedTracer>,
    secrets: SecretSet,
    recording: bool,
    outgoing: TraceContext,
    /// When the call's span started: no child starts earlier.
    started: SystemTime,
}

impl CallSpan {
    /// Whether the span is recorded (sampled in); a span that is not gets
    /// no children.
    pub(crate) fn recording(&self) -> bool {
        self.recording
    }

    /// The trace context to send on from inside the call.
    pub(crate) fn outgoing(&self) -> &TraceContext {
        &self.outgoing
    }

    /// A string attribute value: redacted and bounded.
    pub(crate) fn text(&self, s: &str) -> Value {
        bounded(&self.secrets, s)
    }

    /// A child span `name` from `start` to `end`, with `attributes`.
    pub(crate) fn child(
        &self,
        name: &'static str,
        start: SystemTime,
        end: SystemTime,
        attributes: Vec<KeyValue>,
    ) {
        if !self.recording {
            return;
        }
        let builder = SpanBuilder::from_name(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes);
        let mut span = self.tracer.build_with_context(builder, &self.cx);
        span.end_with_timestamp(end);
    }

    /// A child span for `stage`, which took `took` up to now. A wait for
    /// an instance slot that did not wait (under a microsecond) is no
    /// span: it would be one per call, saying nothing.
    pub(crate) fn stage(&self, stage: Stage, took: Duration) {
        if !self.recording || (stage == Stage::QueueWait && took < Duration::from_micros(1)) {
            return;
        }
        // A stage timed on the monotonic clock, placed on the wall clock:
        // within the call's span even where the two clocks drift apart.
        let end = SystemTime::now();
        let start = end.checked_sub(took).unwrap_or(end).max(self.started);
        self.child(
            stage_span_name(stage),
            start,
            end,
            // The plugin is the call's, on the call's span.
            vec![KeyValue::new(keys::STAGE, stage.as_str())],
        );
    }

    /// Ends the call's span with `outcome` (the metric's word), an error
    /// unless it is `ok`.
    pub(crate) fn end(&self, outcome: &'static str) {
        let span = self.cx.span();
        if self.recording {
            span.set_attribute(KeyValue::new(keys::OUTCOME, outcome));
            if outcome != "ok" {
                span.set_attribute(KeyValue::new(keys::ERROR_TYPE, outcome));
                span.set_status(Status::error(outcome));
            }
        }
        span.end();
    }
}

/// The span name of a stage.
fn stage_span_name(stage: Stage) -> &'static str {
    match stage {
        Stage::QueueWait => "toolhost.queue_wait",
        Stage::Instantiate => "toolhost.instantiate",
        Stage::Guest => "toolhost.guest",
        Stage::Hooks => "toolhost.hooks",
        Stage::ApprovalWait => "toolhost.approval_wait",
        Stage::McpForward => "toolhost.mcp_forward",
    }
}

/// `s` with `secrets` redacted, cut to [`MAX_ATTRIBUTE_BYTES`] at a
/// character boundary.
fn bounded(secrets: &SecretSet, s: &str) -> Value {
    let clean = secrets.redact(s);
    if clean.len() <= MAX_ATTRIBUTE_BYTES {
        return Value::String(clean.into_owned().into());
    }
    let mut end = MAX_ATTRIBUTE_BYTES;
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    Value::String(clean[..end].to_owned().into())
}

/// The observer of a traced call: each stage reported becomes a child of
/// the call's span, and goes on to the host's metrics, if any.
pub(crate) struct SpanObserver {
    pub(crate) metrics: Option<Arc<dyn Observer>>,
    pub(crate) span: Arc<CallSpan>,
}

impl Observer for SpanObserver {
    fn stage(&self, plugin: &str, stage: Stage, took: Duration) {
        if let Some(m) = &self.metrics {
            m.stage(plugin, stage, took);
        }
        self.span.stage(stage, took);
    }

    fn instance(&self, plugin: &str, started: bool) {
        if let Some(m) = &self.metrics {
            m.instance(plugin, started);
        }
    }

    fn memory_high_water(&self, plugin: &str, bytes: u64) {
        if let Some(m) = &self.metrics {
            m.memory_high_water(plugin, bytes);
        }
    }

    fn deadline_overshoot(&self, plugin: &str, late: Duration) {
        if let Some(m) = &self.metrics {
            m.deadline_overshoot(plugin, late);
        }
    }
}

#[cfg(test)]
mod tests;
