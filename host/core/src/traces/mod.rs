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
mod finish;
pub mod ids;
mod model_span;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanContext, SpanId, SpanKind, TraceContextExt as _, TraceFlags,
    TraceId, TraceState, Tracer, TracerProvider,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue, Value};

/// The OpenTelemetry API this crate is built with, for embedders to make
/// their providers with the same version.
pub use opentelemetry;

use crate::observe::{GuestCall, Observer, Stage};
use crate::secret::SecretSet;
use crate::tool::CallContext;

pub use context::TraceContext;
pub(crate) use finish::ChildName;
use finish::{About, CallSpanState, CalledTool, Child, Children, Finished, Finisher};
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
///
/// What a call pays: the call's span is started on its thread (its ids
/// and the sampler's decision are needed for the context it sends on);
/// its stages are recorded as timestamps, and the span's name and
/// attributes, its child spans and its end are made on a thread of the
/// traces' own ([`flush`](Self::flush) waits for them). The sampler
/// therefore sees a call's span as `tools/call` without attributes.
/// With [`sampling_ratio`](Self::sampling_ratio) the host samples itself,
/// before anything of the span is made.
#[derive(Clone)]
pub struct Traces {
    pub(crate) tracer: Arc<BoxedTracer>,
    finisher: Finisher,
    /// Sample a root call when its trace id's random part is below this
    /// (`None`: leave it all to the tracer's sampler).
    threshold: Option<u64>,
    /// Whether a sampled call's span gets its ids from the host and is
    /// built by the finisher ([`ids_from_host`](Self::ids_from_host)).
    host_ids: bool,
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
        Self::with_finisher(tracer, Finisher::start)
    }

    /// [`new`](Self::new), with a finisher that has no thread of its
    /// own: spans wait for [`flush`](Self::flush).
    #[cfg(test)]
    pub(crate) fn unthreaded<T>(tracer: T) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        Self::with_finisher(tracer, Finisher::unthreaded)
    }

    /// Traces made by `tracer`, their spans finished by what `finisher`
    /// makes of it.
    fn with_finisher<T>(tracer: T, finisher: fn(Arc<BoxedTracer>) -> Finisher) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        let tracer = Arc::new(BoxedTracer::new(Box::new(tracer)));
        Self {
            finisher: finisher(tracer.clone()),
            tracer,
            threshold: None,
            host_ids: false,
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

    /// These traces, sampling calls themselves: a call whose caller sent a
    /// trace context follows the caller's decision; any other call is
    /// sampled when its trace id falls in the first `ratio` of the id
    /// space (OpenTelemetry's `ParentBased(TraceIdRatioBased(ratio))`),
    /// `ratio` clamped to 0..=1. A call left out makes no span at all,
    /// only the context it sends on (unsampled, with a span id of its
    /// own); the tracer's sampler should then keep whatever it is given
    /// (`ParentBased(AlwaysOn)`).
    pub fn sampling_ratio(mut self, ratio: f64) -> Self {
        let ratio = if ratio.is_nan() {
            0.0
        } else {
            ratio.clamp(0.0, 1.0)
        };
        // As the SDK's TraceIdRatioBased: the low 63 bits of the trace
        // id's last 8 bytes against ratio * 2^63.
        self.threshold = Some((ratio * (1u64 << 63) as f64) as u64);
        self
    }

    /// These traces, for a tracer whose provider takes its ids from
    /// [`ids::preset_trace_id`] and [`ids::preset_span_id`] before its own
    /// generator (toolhost's OTLP export is one): with
    /// [`sampling_ratio`](Self::sampling_ratio) set, a sampled call's span
    /// is given its ids on the call's thread, which is all the call needs
    /// to send its trace context on, and the span itself is built, named
    /// and ended on the finisher's thread, so the call's thread makes
    /// nothing of OpenTelemetry's. With a provider whose generator does not
    /// ask, the spans would carry other ids than the calls sent on.
    /// Without `sampling_ratio` this changes nothing: the tracer's sampler
    /// must see each span as it starts.
    pub fn ids_from_host(mut self) -> Self {
        self.host_ids = true;
        self
    }

    /// Finishes every call span ended so far (names, attributes, child
    /// spans) and hands it to the tracer's processor before it returns.
    /// Call it before flushing or shutting down the provider.
    pub fn flush(&self) {
        self.finisher.flush();
    }

    /// The counts this host's finisher owes to metrics (rule X1).
    pub(crate) fn deferred(&self) -> std::sync::Weak<dyn crate::metrics::Deferred> {
        self.finisher.deferred()
    }

    /// How many calls' spans were dropped because the tracer's thread
    /// could not keep up: past 8192 calls waiting, a call's span is
    /// ended as it stands (named `tools/call`, without attributes or
    /// children).
    pub fn dropped(&self) -> u64 {
        self.finisher.dropped()
    }

    /// Starts the span of a call of the tool registered as `entry`, or of
    /// `name`, which none is, a child of the trace context `ctx` came
    /// with, at `at` (a reading the caller made already; `None`: now).
    /// The stages reported to the span go on to `metrics`, if any.
    ///
    /// With `metered`, when the series the tool's entry keeps are the
    /// host's, a sampled call's counts are left to the finisher, made from
    /// the span's record off the call's thread: the call's duration and
    /// outcome, and its plugin's instantiation and guest stages
    /// ([`counts_call`](CallSpan::counts_call)). `at` must then be the
    /// reading the call's duration is measured from.
    ///
    /// The span is made in its `Arc`, where the call's observers share it:
    /// it is a few hundred bytes, and moving it there from a value would
    /// copy it on every call.
    pub(crate) fn start_call(
        &self,
        ctx: &CallContext,
        tool: Result<&Arc<crate::registry::ToolEntry>, &str>,
        secrets: &SecretSet,
        at: Option<Instant>,
        (metrics, metered): (Option<Arc<dyn Observer>>, bool),
    ) -> Arc<CallSpan> {
        let incoming = ctx.trace_context();
        if let Some(threshold) = self.threshold {
            // Both ids from one draw of the thread's generator.
            let (random_trace, span_id) = random_ids();
            let trace_id = incoming.map_or(random_trace, TraceContext::trace_id);
            let sampled = match incoming {
                Some(tc) => tc.sampled(),
                None => {
                    let low = u64::from_be_bytes(
                        trace_id.to_bytes()[8..16].try_into().unwrap_or_default(),
                    ) >> 1;
                    low < threshold
                }
            };
            if sampled && self.host_ids {
                // The span's start is placed on the wall clock by the
                // finisher: no reading of it here.
                return self.recording(
                    CallSpanState::Later {
                        trace_id: trace_id.to_bytes(),
                        span_id,
                        parent: incoming.map(TraceContext::as_parent),
                    },
                    at.unwrap_or_else(Instant::now),
                    TraceContext::sampled_span(trace_id, span_id, incoming),
                    (ctx, tool, secrets),
                    (metrics, metered),
                );
            }
            if !sampled {
                let state = incoming.map_or_else(TraceState::default, |tc| {
                    tc.to_span_context().trace_state().clone()
                });
                let span = SpanContext::new(trace_id, span_id, TraceFlags::default(), false, state);
                return CallSpan::unsampled(
                    TraceContext::of_span(&span, incoming.and_then(TraceContext::baggage_shared)),
                    metrics,
                );
            }
        }
        let parent = match incoming {
            Some(tc) => Context::new().with_remote_span_context(tc.to_span_context()),
            None => Context::new(),
        };
        // The span starts at `at`, placed on the wall clock by its
        // distance from now: the call's duration is measured from it.
        let (wall, now) = (SystemTime::now(), Instant::now());
        let base = at.unwrap_or(now);
        let started = (
            wall.checked_sub(now.saturating_duration_since(base))
                .unwrap_or(wall),
            base,
        );
        // Name and attributes are set by the finisher: the sampler sees
        // neither.
        let builder = SpanBuilder::from_name("tools/call")
            .with_kind(SpanKind::Server)
            .with_start_time(started.0);
        let span = self.tracer.build_with_context(builder, &parent);
        let outgoing = TraceContext::of_span(
            span.span_context(),
            incoming.and_then(TraceContext::baggage_shared),
        );
        if !span.is_recording() {
            // Ends (unrecorded) as it drops.
            return CallSpan::unsampled(outgoing, metrics);
        }
        self.recording(
            CallSpanState::Started(Context::new().with_span(span), started.0),
            started.1,
            outgoing,
            (ctx, tool, secrets),
            (metrics, metered),
        )
    }

    /// The span of a sampled call, recording, whose own span is `span`,
    /// started at `base` on the monotonic clock.
    fn recording(
        &self,
        span: CallSpanState,
        base: Instant,
        outgoing: TraceContext,
        (ctx, tool, secrets): (
            &CallContext,
            Result<&Arc<crate::registry::ToolEntry>, &str>,
            &SecretSet,
        ),
        (metrics, metered): (Option<Arc<dyn Observer>>, bool),
    ) -> Arc<CallSpan> {
        let metered = metered && tool.is_ok();
        Arc::new(CallSpan {
            metrics,
            counts: metered,
            recording: Some(Recording {
                finisher: self.finisher.clone(),
                base,
                pending: Mutex::new(Pending {
                    span: Some(span),
                    about: Some(About {
                        tool: match tool {
                            Ok(entry) => CalledTool::Registered(entry.clone()),
                            Err(name) => CalledTool::Unknown(name.into()),
                        },
                        metered,
                        tenant: ctx.tenant_shared(),
                        call_id: ctx.call_id().clone(),
                        secrets: secrets.clone(),
                    }),
                    children: Children::new(),
                }),
            }),
            outgoing,
        })
    }
}

/// A random trace id and span id, neither all zeros.
///
/// Drawn from a small, fast generator of the thread's own, seeded from
/// the thread's cryptographic one, as OpenTelemetry's SDK draws its ids:
/// ids must be unique and unbiased, not unguessable (they travel in the
/// clear in `traceparent`), and the cryptographic generator took about
/// 35 ns of a traced call for its three words, where this takes a few.
fn random_ids() -> (TraceId, SpanId) {
    use rand::{Rng as _, SeedableRng as _, rngs::SmallRng};
    thread_local! {
        static IDS: std::cell::RefCell<SmallRng> =
            std::cell::RefCell::new(SmallRng::from_rng(&mut rand::rng()));
    }
    let [high, low, span]: [u64; 3] =
        IDS.with_borrow_mut(|rng| [rng.next_u64(), rng.next_u64(), rng.next_u64()]);
    let trace = (u128::from(high) << 64 | u128::from(low)).max(1);
    (
        TraceId::from_bytes(trace.to_be_bytes()),
        SpanId::from_bytes(span.max(1).to_be_bytes()),
    )
}

/// One call's span, and what its child spans need. Ends when
/// [`end`](Self::end) is called (or, unended, when dropped).
///
/// A sampled call's span is also the call's [`Observer`]: each stage
/// reported becomes a child span, and goes on to the host's metrics, if
/// any ([`with_metrics`](Self::with_metrics)).
pub(crate) struct CallSpan {
    /// `None` when the call is not sampled: it records nothing.
    recording: Option<Recording>,
    outgoing: TraceContext,
    /// Where the stages reported to the span go on to.
    metrics: Option<Arc<dyn Observer>>,
    /// Whether the call's counts are left to the finisher.
    counts: bool,
}

/// What a sampled call records for its span.
struct Recording {
    finisher: Finisher,
    /// When the call's span started, on the monotonic clock: the call's
    /// other times are kept as distances from it, and no child starts
    /// earlier.
    base: Instant,
    pending: Mutex<Pending>,
}

/// The span and its children until the call ends.
struct Pending {
    /// `None` once ended.
    span: Option<CallSpanState>,
    about: Option<About>,
    children: Children,
}

impl CallSpan {
    fn unsampled(outgoing: TraceContext, metrics: Option<Arc<dyn Observer>>) -> Arc<Self> {
        Arc::new(Self {
            recording: None,
            outgoing,
            metrics,
            counts: false,
        })
    }

    /// Whether the finisher counts the call in the metrics (its duration
    /// and outcome) as it finishes the span: the caller then does not.
    pub(crate) fn counts_call(&self) -> bool {
        self.counts
    }

    /// Whether the span is recorded (sampled in); a span that is not gets
    /// no children.
    pub(crate) fn recording(&self) -> bool {
        self.recording.is_some()
    }

    /// The trace context to send on from inside the call.
    pub(crate) fn outgoing(&self) -> &TraceContext {
        &self.outgoing
    }

    /// A string attribute value: redacted and bounded (by the secrets
    /// the span's record keeps for the finisher).
    pub(crate) fn text(&self, s: &str) -> Value {
        let pending = self
            .recording
            .as_ref()
            .map(|r| r.pending.lock().unwrap_or_else(|p| p.into_inner()));
        match pending.as_ref().and_then(|p| p.about.as_ref()) {
            Some(about) => bounded(&about.secrets, s),
            None => Value::String("".into()),
        }
    }

    /// A child span `name` from `start` to `end`, with `attributes`.
    pub(crate) fn child(
        &self,
        name: ChildName,
        start: Instant,
        end: Instant,
        attributes: Vec<KeyValue>,
    ) {
        let Some(r) = &self.recording else { return };
        self.record(r.child(name, start, end, attributes), None);
    }

    /// Records `child`, unless the span has ended. With `later_for`, the
    /// finisher is to count the child's stage if the call's plugin is
    /// that one: whether it will.
    fn record(&self, mut child: Child, later_for: Option<&str>) -> bool {
        self.while_open(|_, children, about| {
            child.counted_later &= later_for
                .zip(about)
                .is_some_and(|(plugin, about)| about.tool.plugin() == plugin);
            let later = child.counted_later;
            children.push(child);
            later
        })
        .unwrap_or(false)
    }

    /// `f` of the span's record, its children and what the call is
    /// about, under the record's lock; `None`, without calling it, when
    /// the span records nothing or has ended.
    fn while_open<R>(
        &self,
        f: impl FnOnce(&Recording, &mut Children, Option<&About>) -> R,
    ) -> Option<R> {
        let r = self.recording.as_ref()?;
        let mut pending = r.pending.lock().unwrap_or_else(|p| p.into_inner());
        let Pending {
            span,
            about,
            children,
        } = &mut *pending;
        span.as_ref()?;
        Some(f(r, children, about.as_ref()))
    }

    /// A child span for `stage`, which took `took` up to now, if it
    /// makes one ([`makes_span`]).
    pub(crate) fn stage_child(&self, stage: Stage, took: Duration) {
        self.stage_child_ended(stage, took, Instant::now(), None);
    }

    /// [`stage_child`](Self::stage_child), which ended at `end`; with
    /// `later_for`, the finisher counts the stage in the metrics if the
    /// call's plugin is that one. Whether it will.
    fn stage_child_ended(
        &self,
        stage: Stage,
        took: Duration,
        end: Instant,
        later_for: Option<&str>,
    ) -> bool {
        let Some(r) = &self.recording else {
            return false;
        };
        if !makes_span(stage, took) {
            return false;
        }
        // The plugin is the call's, on the call's span.
        self.record(r.stage_child(stage, took, end, true), later_for)
    }

    /// Ends the call's span with `outcome` (the metric's word), an error
    /// unless it is `ok`: the span is finished off the call's thread.
    pub(crate) fn end(&self, outcome: &'static str) {
        self.end_at(outcome, None, None);
    }

    /// [`end`](Self::end) at `end`, a clock reading the caller made
    /// (`None`: now; a span not recorded reads no clock), with the child
    /// span of the call's validation, from its start to its end, if it
    /// was validated: recorded here, under the lock the end takes anyway,
    /// rather than under one of its own as the validation ends. (A call
    /// dropped midway ends without children, so none is lost by waiting.)
    pub(crate) fn end_at(
        &self,
        outcome: &'static str,
        end: Option<Instant>,
        validated: Option<(Instant, Instant)>,
    ) {
        let Some(r) = &self.recording else { return };
        let end = end.unwrap_or_else(Instant::now);
        let (span, about, children) = {
            let mut pending = r.pending.lock().unwrap_or_else(|p| p.into_inner());
            let (Some(span), Some(about)) = (pending.span.take(), pending.about.take()) else {
                return;
            };
            let mut children = std::mem::take(&mut pending.children);
            if let Some((start, end)) = validated {
                children.push(r.child(ChildName::Validate, start, end, Vec::new()));
            }
            (span, about, children)
        };
        r.finisher.push(Finished {
            span,
            base: r.base,
            about: Some(about),
            children,
            outcome,
            end: r.since_base(end),
        });
    }
}

impl Drop for CallSpan {
    /// A span never ended (its call was dropped midway) ends as it stands:
    /// named `tools/call`, without attributes or children. A span the
    /// tracer built already would end so as it drops; one the finisher is
    /// to build is handed to it for that.
    fn drop(&mut self) {
        let Some(r) = &mut self.recording else { return };
        // The last owner: no lock to take.
        let pending = r.pending.get_mut().unwrap_or_else(|p| p.into_inner());
        // A call dropped midway is not counted, but the stages it left to
        // the finisher were made: they are counted here.
        if let Some(about) = &pending.about {
            about.count(&pending.children, None);
        }
        let span = match pending.span.take() {
            Some(later @ CallSpanState::Later { .. }) => later,
            _ => return,
        };
        r.finisher.push(Finished {
            span,
            base: r.base,
            about: None,
            children: Children::new(),
            outcome: "ok",
            end: r.since_base(Instant::now()),
        });
    }
}

impl Recording {
    /// The child span `name` from `start` to `end`, with `attributes`.
    fn child(
        &self,
        name: ChildName,
        start: Instant,
        end: Instant,
        attributes: Vec<KeyValue>,
    ) -> Child {
        Child {
            name,
            start: self.since_base(start),
            end: self.since_base(end),
            counted_later: false,
            attributes: (!attributes.is_empty()).then(|| Box::new(attributes)),
        }
    }

    /// The child span of `stage`, which took `took` and ended at `end`.
    /// With `later`, its metric is the finisher's to count, unless the
    /// stage started before the span did: the span cuts it there, and its
    /// metric, which needs the whole, is then counted by the caller.
    fn stage_child(&self, stage: Stage, took: Duration, end: Instant, later: bool) -> Child {
        let end = self.since_base(end);
        let took = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        Child {
            name: ChildName::Stage(stage),
            start: end.saturating_sub(took),
            end,
            counted_later: later && took <= end,
            attributes: None,
        }
    }

    /// Nanoseconds from the span's start to `t` (0 for a reading before
    /// it; a call does not last 584 years).
    fn since_base(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Whether `stage`, which took `took`, is a child span: a wait for an
/// instance slot that did not wait (under a microsecond) is none, since it
/// would be one per call, saying nothing.
fn makes_span(stage: Stage, took: Duration) -> bool {
    stage != Stage::QueueWait || took >= Duration::from_micros(1)
}

/// `s` with `secrets` redacted, cut to [`MAX_ATTRIBUTE_BYTES`] at a
/// character boundary.
pub(crate) fn bounded(secrets: &SecretSet, s: &str) -> Value {
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
impl Observer for CallSpan {
    fn stage(&self, plugin: &str, stage: Stage, took: Duration) {
        Observer::stage_ended(self, plugin, stage, took, Instant::now());
    }

    fn stage_ended(&self, plugin: &str, stage: Stage, took: Duration, ended: Instant) {
        // The call's own plugin's instantiation and guest, when the
        // finisher counts the call: counted from the span's record, off
        // the call's thread. Anything else is counted here.
        let later =
            (self.counts && matches!(stage, Stage::Instantiate | Stage::Guest)).then_some(plugin);
        if !self.stage_child_ended(stage, took, ended, later)
            && let Some(m) = &self.metrics
        {
            m.stage_ended(plugin, stage, took, ended);
        }
    }

    /// The guest's stages under one lock, and what the finisher does not
    /// count passed on to the metrics in one report.
    fn guest_call(&self, plugin: &str, call: &GuestCall) {
        let mut rest = *call;
        self.while_open(|r, children, about| {
            let later = self.counts && about.is_some_and(|a| a.tool.plugin() == plugin);
            let (took, ended) = call.queue_wait;
            if makes_span(Stage::QueueWait, took) {
                children.push(r.stage_child(Stage::QueueWait, took, ended, false));
            }
            for (stage, part) in [
                (Stage::Instantiate, &mut rest.instantiate),
                (Stage::Guest, &mut rest.guest),
            ] {
                if let Some((took, ended)) = *part {
                    let child = r.stage_child(stage, took, ended, later);
                    if child.counted_later {
                        *part = None;
                    }
                    children.push(child);
                }
            }
        });
        if let Some(m) = &self.metrics {
            m.guest_call(plugin, &rest);
        }
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
