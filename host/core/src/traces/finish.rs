//! [`Finisher`]: where a traced call's spans are finished, off the call's
//! thread (rule X2).
//!
//! A call records its stages as plain timestamps and, as it ends, hands
//! the record to a bounded queue; a thread of the finisher's own turns
//! each record into the span's attributes and child spans and ends it.
//! Building an OpenTelemetry span (its attribute vector, its boxed data,
//! the hand-over to the span processor) costs about half a microsecond,
//! and doing that for every stage on the call's thread was a fifth of an
//! echo call; the queue costs a lock and a push.
//!
//! The thread is not woken per call (a wake-up is a system call): it
//! looks at the queue every [`PERIOD`], or sooner when the queue is half
//! full. Past [`CAPACITY`] records a call's spans are dropped, and
//! counted: a tracer that cannot keep up never holds a call back nor
//! grows without bound. [`Finisher::flush`] finishes everything queued
//! before it returns.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use crossbeam_utils::CachePadded;
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanId, SpanKind, Status, TraceContextExt as _, TraceId,
};
use opentelemetry::{Context, KeyValue, Value};

use super::context::ParentSpan;
use super::{bounded, keys};
use crate::observe::Stage;
use crate::secret::SecretSet;

/// How often the thread looks at the queue when nobody wakes it.
pub(crate) const PERIOD: Duration = Duration::from_millis(100);

/// The most calls whose spans wait to be finished; past it, a call's
/// spans are dropped.
pub(crate) const CAPACITY: usize = 8192;

/// How many records' room each of the two buffers keeps however quiet
/// the calls are.
const SPARE_ROOM: usize = 256;

/// How many takes in a row must use under a quarter of a buffer's room
/// before it gives half of it back: calls come in bursts, and a room given
/// back at the first quiet take would be grown again, and its records
/// copied, by the next burst's calls.
const QUIET_TAKES: u32 = 4;

/// A child span as the call recorded it, timed in nanoseconds from the
/// call's base reading of the monotonic clock (the finisher places it on
/// the wall clock). Small (32 bytes): a call's record crosses to the
/// finisher's thread, and every cache line it spans is one the calls'
/// thread must take back from that thread's cache to write the next.
pub(crate) struct Child {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) name: ChildName,
    /// Whether the stage's metric is the finisher's to count (the call's
    /// counts are deferred, and the stage was reported for its plugin).
    pub(crate) counted_later: bool,
    /// `None` for a stage's span and validation's, which have none; one
    /// pointer wide, where a vector would be three.
    #[expect(
        clippy::box_collection,
        reason = "a thin pointer keeps the record small; few calls have attributes here"
    )]
    pub(crate) attributes: Option<Box<Vec<KeyValue>>>,
}

/// What a child span times, which names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChildName {
    /// A stage reported to the call's observer (with the
    /// `toolhost.stage` attribute).
    Stage(Stage),
    /// The validation of the arguments.
    Validate,
    /// The rules' judgement.
    Rules,
    /// One hook.
    Hook,
}

impl ChildName {
    /// The span's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Stage(Stage::QueueWait) => "toolhost.queue_wait",
            Self::Stage(Stage::Instantiate) => "toolhost.instantiate",
            Self::Stage(Stage::Guest) => "toolhost.guest",
            Self::Stage(Stage::Hooks) => "toolhost.hooks",
            Self::Stage(Stage::ApprovalWait) => "toolhost.approval_wait",
            Self::Stage(Stage::McpForward) => "toolhost.mcp_forward",
            Self::Validate => "toolhost.validate",
            Self::Rules => "toolhost.rules",
            Self::Hook => "toolhost.hook",
        }
    }
}

/// A call's child spans as it records them: held in place for the few a
/// call has (an echo has three: validation, instantiation and the guest),
/// so that recording them allocates nothing the finisher's thread would
/// then free.
pub(crate) type Children = smallvec::SmallVec<[Child; 3]>;

/// The tool a call's span is about.
pub(crate) enum CalledTool {
    /// A registered tool's entry, shared with the registry: its name, its
    /// plugin and its metric series come with one reference, where each
    /// of its own would be one more count the calls' thread raises and
    /// the finisher's thread lowers.
    Registered(Arc<crate::registry::ToolEntry>),
    /// A name no tool is registered under: the span is not named after
    /// it (any caller can make up any number of them), and it has no
    /// plugin.
    Unknown(Arc<str>),
}

impl CalledTool {
    /// The name the tool was called by.
    pub(crate) fn name(&self) -> &str {
        match self {
            Self::Registered(entry) => &entry.name,
            Self::Unknown(name) => name,
        }
    }

    /// The plugin, extension or server the tool belongs to; "" for the
    /// host's own and for an unknown tool.
    pub(crate) fn plugin(&self) -> &str {
        match self {
            Self::Registered(entry) => &entry.plugin,
            Self::Unknown(_) => "",
        }
    }
}

/// What a call's span is named after and says, as the call knew it: it
/// is redacted and bounded by the finisher.
pub(crate) struct About {
    pub(crate) tool: CalledTool,
    /// Whether the finisher counts the call in the metrics the tool's
    /// entry keeps (rule X1): its duration and outcome, and the stages its
    /// children mark `counted_later`.
    pub(crate) metered: bool,
    /// `None`: the default tenant.
    pub(crate) tenant: Option<std::sync::Arc<str>>,
    pub(crate) call_id: crate::tool::CallId,
    pub(crate) secrets: SecretSet,
}

impl About {
    /// Counts the stages of `children` the call left to the finisher,
    /// and, if it `ended` (with the outcome and the nanoseconds from the
    /// span's start), the call itself.
    pub(crate) fn count(&self, children: &[Child], ended: Option<(&'static str, u64)>) {
        let CalledTool::Registered(entry) = &self.tool else {
            return;
        };
        let Some(tool) = entry.metrics.get().filter(|_| self.metered) else {
            return;
        };
        for child in children.iter().filter(|c| c.counted_later) {
            if let ChildName::Stage(stage) = child.name {
                let took = Duration::from_nanos(child.end.saturating_sub(child.start));
                tool.observer().stage(&entry.plugin, stage, took);
            }
        }
        if let Some((outcome, took)) = ended {
            let tenant = self
                .tenant
                .as_deref()
                .unwrap_or(crate::tool::DEFAULT_TENANT);
            tool.call(tenant, outcome, Duration::from_nanos(took));
        }
    }
}

/// A call's own span: started by the tracer on the call's thread, or to
/// be built by the finisher with the ids the call was given
/// ([`Traces::ids_from_host`](super::Traces::ids_from_host)).
pub(crate) enum CallSpanState {
    /// Started by the tracer at `started` on the wall clock (the reading
    /// the tracer was given, which the call's other times are placed by).
    Started(Context, SystemTime),
    Later {
        /// The trace id's bytes: a `TraceId` is aligned to 16 bytes, which
        /// would pad the record.
        trace_id: [u8; 16],
        span_id: SpanId,
        /// The trace context the call came with, as the span's parent.
        parent: Option<ParentSpan>,
    },
}

/// A call's span with what it needs to be finished: what it is about, its
/// children and how it ended.
pub(crate) struct Finished {
    pub(crate) span: CallSpanState,
    /// When the call's span started, on the monotonic clock: every other
    /// time of the call is a distance from it (read where the call reads
    /// the clock anyway), placed on the wall clock by the span's start
    /// when the tracer was given one, or by the finisher's reading of both
    /// clocks.
    pub(crate) base: Instant,
    /// `None`: the call was dropped before it ended, and its span ends as
    /// it stands (no attributes, no children).
    pub(crate) about: Option<About>,
    pub(crate) children: Children,
    pub(crate) outcome: &'static str,
    /// Nanoseconds from `base`.
    pub(crate) end: u64,
}

impl Finished {
    /// Sets the call span's name and attributes, builds its children and
    /// ends it. `now` is a reading of both clocks made just before, which
    /// places the call's monotonic times on the wall clock when the call
    /// read only the monotonic one.
    fn finish(self, tracer: &opentelemetry::global::BoxedTracer, now: (SystemTime, Instant)) {
        use opentelemetry::trace::Tracer as _;
        let base = match &self.span {
            CallSpanState::Started(_, started) => *started,
            CallSpanState::Later { .. } => on_wall_clock(now, self.base),
        };
        let wall = |nanos: u64| base + Duration::from_nanos(nanos);
        let cx = match self.span {
            CallSpanState::Started(cx, _) => cx,
            CallSpanState::Later {
                trace_id,
                span_id,
                parent,
            } => {
                let parent = match parent {
                    Some(p) => Context::new()
                        .with_remote_span_context(p.to_span_context(TraceId::from_bytes(trace_id))),
                    None => Context::new(),
                };
                let builder = SpanBuilder::from_name("tools/call")
                    .with_kind(SpanKind::Server)
                    .with_start_time(base);
                let trace_id = TraceId::from_bytes(trace_id);
                let span = super::ids::with_preset(trace_id, span_id, || {
                    tracer.build_with_context(builder, &parent)
                });
                Context::new().with_span(span)
            }
        };
        let Some(about) = self.about else {
            cx.span().end_with_timestamp(wall(self.end));
            return;
        };
        about.count(&self.children, Some((self.outcome, self.end)));
        for child in self.children {
            let mut attributes = child.attributes.map_or_else(Vec::new, |a| *a);
            if let ChildName::Stage(stage) = child.name {
                attributes.push(KeyValue::new(keys::STAGE, stage.as_str()));
            }
            let builder = SpanBuilder::from_name(child.name.as_str())
                .with_kind(SpanKind::Internal)
                .with_start_time(wall(child.start))
                .with_attributes(attributes);
            tracer
                .build_with_context(builder, &cx)
                .end_with_timestamp(wall(child.end));
        }
        let span = cx.span();
        let attr = |s: &str| bounded(&about.secrets, s);
        if matches!(about.tool, CalledTool::Registered(_))
            && let Value::String(tool) = attr(about.tool.name())
        {
            span.update_name(format!("tools/call {tool}"));
        }
        span.set_attributes([
            KeyValue::new(keys::METHOD, "tools/call"),
            KeyValue::new(keys::TOOL, attr(about.tool.name())),
            KeyValue::new(keys::PLUGIN, attr(about.tool.plugin())),
            KeyValue::new(
                keys::TENANT,
                attr(
                    about
                        .tenant
                        .as_deref()
                        .unwrap_or(crate::tool::DEFAULT_TENANT),
                ),
            ),
            KeyValue::new(keys::CALL_ID, attr(about.call_id.as_str())),
        ]);
        span.set_attribute(KeyValue::new(keys::OUTCOME, self.outcome));
        if self.outcome != "ok" {
            span.set_attribute(KeyValue::new(keys::ERROR_TYPE, self.outcome));
            span.set_status(Status::error(self.outcome));
        }
        span.end_with_timestamp(wall(self.end));
    }
}

/// `t` on the wall clock, by its distance from `now`, a reading of both
/// clocks. The wall clock may have been set since `t`; a call's times are
/// placed by one reading, so their order and distances hold.
fn on_wall_clock((wall, mono): (SystemTime, Instant), t: Instant) -> SystemTime {
    let placed = if t <= mono {
        wall.checked_sub(mono - t)
    } else {
        wall.checked_add(t - mono)
    };
    placed.unwrap_or(wall)
}

/// The queue and its thread. Clones share them; the thread ends once the
/// last clone is dropped.
#[derive(Clone)]
pub(crate) struct Finisher {
    shared: Arc<Shared>,
}

struct Shared {
    tracer: Arc<opentelemetry::global::BoxedTracer>,
    /// In cache lines of its own: every traced call takes its lock, and
    /// anything the finisher's thread writes beside it would take the
    /// lines from the calls' core (about 20 ns a call, measured).
    queue: CachePadded<Mutex<VecDeque<Finished>>>,
    /// Signalled when the queue is half full.
    filling: Condvar,
    /// The records taken from the queue, held while they are finished
    /// (so that a flush can wait for them). It is swapped with the queue
    /// rather than taken from it: calls then push into a buffer that has
    /// room already, instead of growing an empty one again each period,
    /// copying every record at each doubling.
    finishing: Mutex<Taking>,
    dropped: AtomicU64,
}

/// What the takes keep from one to the next.
#[derive(Default)]
struct Taking {
    /// The buffer last taken, drained: the queue's next buffer.
    batch: VecDeque<Finished>,
    /// How many takes in a row used under a quarter of their room (both
    /// buffers, taken in turn, count the same takes).
    quiet: u32,
}

impl Finisher {
    /// A finisher of `tracer`'s spans, with its thread started.
    pub(crate) fn start(tracer: Arc<opentelemetry::global::BoxedTracer>) -> Self {
        let shared = Arc::new(Shared {
            tracer,
            queue: CachePadded::new(Mutex::new(VecDeque::new())),
            filling: Condvar::new(),
            finishing: Mutex::new(Taking::default()),
            dropped: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&shared);
        // Without the thread spans are still finished, by `flush`.
        let spawned = std::thread::Builder::new()
            .name("toolhost-spans".into())
            .spawn(move || run(&weak));
        if let Err(e) = spawned {
            tracing::warn!(target: "toolhost::traces", "no thread to finish spans on: {e}");
        }
        Self { shared }
    }

    /// A finisher of `tracer`'s spans without its thread: what is queued
    /// waits for a flush (or for metrics to be read), as a test decides.
    #[cfg(test)]
    pub(crate) fn unthreaded(tracer: Arc<opentelemetry::global::BoxedTracer>) -> Self {
        Self {
            shared: Arc::new(Shared {
                tracer,
                queue: CachePadded::new(Mutex::new(VecDeque::new())),
                filling: Condvar::new(),
                finishing: Mutex::new(Taking::default()),
                dropped: AtomicU64::new(0),
            }),
        }
    }

    /// Queues a call's spans. When the queue is full they are dropped:
    /// the call's span is ended as it stands (named `tools/call`, without
    /// attributes or children) and the tracer's processor decides its
    /// fate.
    pub(crate) fn push(&self, finished: Finished) {
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.len() >= CAPACITY {
            drop(queue);
            // The spans are dropped; the counts owed to the metrics are
            // not.
            if let Some(about) = &finished.about {
                about.count(&finished.children, Some((finished.outcome, finished.end)));
            }
            if self.shared.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    target: "toolhost::traces",
                    "spans are made faster than the tracer takes them: {CAPACITY} calls wait; \
                     further calls' spans are dropped"
                );
            }
            return;
        }
        queue.push_back(finished);
        if queue.len() == CAPACITY / 2 {
            self.shared.filling.notify_one();
        }
    }

    /// Finishes every span queued so far before it returns.
    pub(crate) fn flush(&self) {
        self.shared.finish_queued();
    }

    /// The counts this finisher owes to metrics, for them to make before
    /// they are read.
    pub(crate) fn deferred(&self) -> Weak<dyn crate::metrics::Deferred> {
        let shared: Arc<dyn crate::metrics::Deferred> = self.shared.clone();
        Arc::downgrade(&shared)
    }

    /// How many calls' spans were dropped because the queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

impl Shared {
    /// Takes what is queued and finishes it, holding `finishing`.
    fn finish_queued(&self) {
        let mut taking = self.finishing.lock().unwrap_or_else(|p| p.into_inner());
        let Taking { batch, quiet } = &mut *taking;
        std::mem::swap(
            batch,
            &mut *self.queue.lock().unwrap_or_else(|p| p.into_inner()),
        );
        let taken = batch.len();
        let now = (SystemTime::now(), Instant::now());
        for finished in batch.drain(..) {
            finished.finish(&self.tracer, now);
        }
        // This buffer is the one the calls push into after the next
        // take. Room for what came in this period, and half again, is made
        // here, off the calls' thread: a call that grows the queue copies
        // every record in it. After a burst, room is given back a half at
        // a time, once the takes have been quiet for a while.
        let room = batch.capacity();
        let wanted = (taken + taken / 2).min(CAPACITY);
        if room > SPARE_ROOM && taken < room / 4 {
            *quiet = quiet.saturating_add(1);
            if *quiet >= QUIET_TAKES {
                batch.shrink_to(room / 2);
            }
        } else {
            *quiet = 0;
            if room < wanted {
                batch.reserve(wanted);
            }
        }
    }
}

impl crate::metrics::Deferred for Shared {
    /// Counts owed to metrics are made as the spans are finished.
    fn count_now(&self) {
        self.finish_queued();
    }
}

/// The thread: every [`PERIOD`] (or when the queue is half full) finishes
/// what is queued, until the finisher is gone.
fn run(weak: &Weak<Shared>) {
    while let Some(shared) = weak.upgrade() {
        {
            let queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            if queue.len() < CAPACITY / 2 {
                let _woken = shared
                    .filling
                    .wait_timeout(queue, PERIOD)
                    .unwrap_or_else(|p| p.into_inner());
            }
        }
        shared.finish_queued();
    }
}

impl Drop for Shared {
    /// What is still queued when the last clone goes is finished, not lost.
    fn drop(&mut self) {
        let now = (SystemTime::now(), Instant::now());
        for finished in std::mem::take(self.queue.get_mut().unwrap_or_else(|p| p.into_inner())) {
            finished.finish(&self.tracer, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::noop::NoopTracer;

    use super::*;

    /// A finisher without its thread, so that the test decides when the
    /// queue is taken.
    fn finisher() -> Finisher {
        Finisher::unthreaded(Arc::new(opentelemetry::global::BoxedTracer::new(Box::new(
            NoopTracer::new(),
        ))))
    }

    fn record() -> Finished {
        let now = Instant::now();
        Finished {
            span: CallSpanState::Later {
                trace_id: [1; 16],
                span_id: SpanId::from_bytes([2; 8]),
                parent: None,
            },
            base: now,
            about: None,
            children: Children::new(),
            outcome: "ok",
            end: 0,
        }
    }

    fn queued_room(f: &Finisher) -> (usize, usize) {
        let queue = f.shared.queue.lock().unwrap();
        (queue.len(), queue.capacity())
    }

    /// Pushes `records` calls' records, asserting that the queue had room
    /// for them (did not grow), then takes them.
    fn period_within_room(f: &Finisher, records: usize) {
        let room = queued_room(f).1;
        for _ in 0..records {
            f.push(record());
        }
        assert_eq!(
            queued_room(f).1,
            room,
            "pushing {records} grew the queue from {room}"
        );
        f.flush();
    }

    /// `periods` periods of `records` calls each, every period's queue
    /// taken and finished at its end.
    fn periods(f: &Finisher, periods: usize, records: usize) {
        for _ in 0..periods {
            for _ in 0..records {
                f.push(record());
            }
            f.flush();
        }
    }

    #[test]
    fn x2_a_calls_times_are_placed_on_the_wall_clock_by_their_distance_from_one_reading() {
        let mono = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let earlier = mono.checked_sub(Duration::from_millis(250)).unwrap_or(mono);
        let later = mono + Duration::from_millis(40);
        assert_eq!(
            on_wall_clock((wall, mono), earlier),
            wall - mono.duration_since(earlier)
        );
        assert_eq!(
            on_wall_clock((wall, mono), later),
            wall + Duration::from_millis(40)
        );
        assert_eq!(on_wall_clock((wall, mono), mono), wall);
    }

    #[test]
    fn x2_the_queue_calls_push_into_keeps_its_room_from_one_period_to_the_next() {
        let f = finisher();
        periods(&f, 2, 1000);
        // Two periods in, each buffer has held 1000 records: the calls of
        // the next period push without growing (and copying) the queue.
        let (len, room) = queued_room(&f);
        assert_eq!(len, 0);
        assert!(room >= 1000, "the queue has room for {room}");
        period_within_room(&f, 1000);
        assert_eq!(f.dropped(), 0);
    }

    #[test]
    fn x2_calls_do_not_grow_the_queue_when_busy_and_quiet_periods_alternate() {
        let f = finisher();
        periods(&f, 2, 4000);
        // Busy periods between quiet ones, none busier than half again
        // the one before: each push finds the room made for it.
        for records in [300, 4000, 100, 3000, 200, 4000, 50, 3500, 4000] {
            period_within_room(&f, records);
        }
        assert_eq!(f.dropped(), 0);
    }

    #[test]
    fn x2_the_room_a_period_needs_is_made_off_the_calls_thread() {
        let f = finisher();
        // A period of 100, then one of 1000: the second grows the queue on
        // the calls' thread (nothing could know), but when the buffer it
        // filled comes back, it has room for 1500.
        periods(&f, 1, 100);
        periods(&f, 1, 1000);
        periods(&f, 1, 0);
        let (len, room) = queued_room(&f);
        assert_eq!(len, 0);
        assert!(room >= 1500, "the queue has room for {room}");
    }

    #[test]
    fn x2_after_a_burst_the_room_is_given_back_by_halves() {
        let f = finisher();
        periods(&f, 2, 4096);
        let burst = queued_room(&f).1;
        // Quiet periods: a record each.
        periods(&f, 40, 1);
        let quiet = queued_room(&f).1;
        assert!(quiet < burst / 4, "{quiet} of {burst} kept");
        assert!(quiet >= SPARE_ROOM / 2, "{quiet}: the spare room went too");
    }
}
