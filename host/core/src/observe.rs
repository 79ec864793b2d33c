//! [`Observer`]: where the stages of a call that live outside the pipeline
//! (the sandbox's instance slots and guest, a remote MCP server) report how
//! long they took (rule X1).
//!
//! The pipeline hands its observer to a tool through the call's context
//! ([`CallContext::observer`](crate::CallContext::observer)); a host built
//! without [metrics](crate::metrics::Metrics) hands none, and then a stage
//! neither reads the clock for it nor records anything. The trait knows
//! nothing of Prometheus: [`Metrics`](crate::metrics::Metrics) is one
//! observer, and anything else may be another.

use std::time::{Duration, Instant};

/// A stage of a call, timed on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// Waiting for one of a plugin's instance slots.
    QueueWait,
    /// Instantiating a plugin's component in a fresh store.
    Instantiate,
    /// The guest running the call, from the export's call to its answer.
    Guest,
    /// The before and after hooks (and the declarative rules).
    Hooks,
    /// Waiting for a person's approval.
    ApprovalWait,
    /// A remote MCP server answering the forwarded call.
    McpForward,
}

impl Stage {
    /// Its place in [`ALL`](Self::ALL).
    pub fn index(self) -> usize {
        match self {
            Self::QueueWait => 0,
            Self::Instantiate => 1,
            Self::Guest => 2,
            Self::Hooks => 3,
            Self::ApprovalWait => 4,
            Self::McpForward => 5,
        }
    }

    /// Every stage, in the order a call meets them.
    pub const ALL: [Stage; 6] = [
        Self::QueueWait,
        Self::Instantiate,
        Self::Guest,
        Self::Hooks,
        Self::ApprovalWait,
        Self::McpForward,
    ];

    /// The stage as a snake_case word (a metric's `stage` label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QueueWait => "queue_wait",
            Self::Instantiate => "instantiate",
            Self::Guest => "guest",
            Self::Hooks => "hooks",
            Self::ApprovalWait => "approval_wait",
            Self::McpForward => "mcp_forward",
        }
    }
}

/// Hears how a call's stages went. Every method must return quickly and
/// never block: it is called on the call's task. `plugin` names the
/// plugin, extension or server the call's tool belongs to; an observer
/// that turns it into a label must bound the values itself.
pub trait Observer: Send + Sync {
    /// `stage` of a call of a tool of `plugin` took `took`.
    fn stage(&self, plugin: &str, stage: Stage, took: Duration);

    /// `stage` took `took` and ended at `ended`, a reading of the clock
    /// the caller made anyway: for an observer that places stages in time
    /// (a trace), which would otherwise read the clock again. By default
    /// the same as [`stage`](Self::stage).
    fn stage_ended(&self, plugin: &str, stage: Stage, took: Duration, ended: Instant) {
        let _ = ended;
        self.stage(plugin, stage, took);
    }

    /// One of `plugin`'s instances started serving a call (`true`) or
    /// ended (`false`).
    fn instance(&self, plugin: &str, started: bool) {
        let _ = (plugin, started);
    }

    /// One of `plugin`'s instances had `bytes` of linear memory at its
    /// largest.
    fn memory_high_water(&self, plugin: &str, bytes: u64) {
        let _ = (plugin, bytes);
    }

    /// A call of a tool of `plugin` that timed out was answered `late`
    /// after its deadline.
    fn deadline_overshoot(&self, plugin: &str, late: Duration) {
        let _ = (plugin, late);
    }

    /// A guest of `plugin` answered a call: its stages and memory in one
    /// report, made as the guest returns, and the end of its instance's
    /// service, where they would otherwise be five reports (an observer
    /// that takes a lock or compares names per report does it once). Its
    /// instance no longer serves the call: no
    /// [`instance`](Self::instance)`(plugin, false)` follows. By default,
    /// each part as its own report, in the order the call met them.
    fn guest_call(&self, plugin: &str, call: &GuestCall) {
        let (took, ended) = call.queue_wait;
        self.stage_ended(plugin, Stage::QueueWait, took, ended);
        if let Some((took, ended)) = call.instantiate {
            self.stage_ended(plugin, Stage::Instantiate, took, ended);
        }
        if let Some((took, ended)) = call.guest {
            self.stage_ended(plugin, Stage::Guest, took, ended);
        }
        self.memory_high_water(plugin, call.memory_high_water);
        self.instance(plugin, false);
    }
}

/// What a guest's call reports as the guest returns
/// ([`Observer::guest_call`]): each stage as how long it took and when it
/// ended. A stage is `None` when the observer that passes the report on
/// has counted it already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GuestCall {
    /// The wait for an instance slot.
    pub queue_wait: (Duration, Instant),
    /// The instantiation of the plugin's component.
    pub instantiate: Option<(Duration, Instant)>,
    /// The guest running the call.
    pub guest: Option<(Duration, Instant)>,
    /// The instance's linear memory at its largest, in bytes.
    pub memory_high_water: u64,
}

impl GuestCall {
    /// The report of a call that entered at `entered`, had its instance
    /// slot at `slot_at`, its instance at `instantiated`, and its guest's
    /// answer at `ended`, with `memory_high_water` bytes at most. A
    /// reading earlier than the one before it counts as no time.
    pub fn new(
        entered: Instant,
        slot_at: Instant,
        instantiated: Instant,
        ended: Instant,
        memory_high_water: u64,
    ) -> Self {
        Self {
            queue_wait: (slot_at.saturating_duration_since(entered), slot_at),
            instantiate: Some((
                instantiated.saturating_duration_since(slot_at),
                instantiated,
            )),
            guest: Some((ended.saturating_duration_since(instantiated), ended)),
            memory_high_water,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Hears reports part by part, as an observer that does not take a
    /// guest's report whole.
    #[derive(Default)]
    struct Parts(
        Mutex<Vec<(Stage, Duration)>>,
        Mutex<Vec<u64>>,
        Mutex<Vec<bool>>,
    );

    impl Observer for Parts {
        fn stage(&self, _plugin: &str, stage: Stage, took: Duration) {
            self.0.lock().unwrap().push((stage, took));
        }

        fn memory_high_water(&self, _plugin: &str, bytes: u64) {
            self.1.lock().unwrap().push(bytes);
        }

        fn instance(&self, _plugin: &str, started: bool) {
            // Heard after the memory: the instance's service ends last.
            assert_eq!(self.1.lock().unwrap().len(), 1);
            self.2.lock().unwrap().push(started);
        }
    }

    #[test]
    fn x1_a_guests_report_is_heard_part_by_part_in_the_order_the_call_met_them() {
        let entered = Instant::now();
        let slot_at = entered + Duration::from_micros(7);
        let instantiated = slot_at + Duration::from_micros(3);
        let ended = instantiated + Duration::from_micros(5);
        let parts = Parts::default();
        parts.guest_call(
            "p",
            &GuestCall::new(entered, slot_at, instantiated, ended, 42),
        );
        assert_eq!(
            *parts.0.lock().unwrap(),
            [
                (Stage::QueueWait, Duration::from_micros(7)),
                (Stage::Instantiate, Duration::from_micros(3)),
                (Stage::Guest, Duration::from_micros(5)),
            ]
        );
        assert_eq!(*parts.1.lock().unwrap(), [42]);
        // The instance serves the call no more.
        assert_eq!(*parts.2.lock().unwrap(), [false]);
        // A stage another observer counted already is left out.
        let parts = Parts::default();
        let mut call = GuestCall::new(entered, slot_at, instantiated, ended, 42);
        call.guest = None;
        parts.guest_call("p", &call);
        assert_eq!(parts.0.lock().unwrap().len(), 2);
    }

    #[test]
    fn x1_a_reading_earlier_than_the_one_before_it_counts_as_no_time() {
        let now = Instant::now();
        let earlier = now.checked_sub(Duration::from_millis(1)).unwrap_or(now);
        let call = GuestCall::new(now, earlier, earlier, earlier, 0);
        assert_eq!(call.queue_wait.0, Duration::ZERO);
        assert_eq!(call.instantiate, Some((Duration::ZERO, earlier)));
    }
}
