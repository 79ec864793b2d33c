//! Precise deadlines for guests (rules C1, C2).
//!
//! A guest can be in one of two places when its deadline passes, and each
//! needs its own way out:
//!
//! - running wasm: it only notices when the engine's epoch moves, so the
//!   clock thread bumps the epoch *at* each deadline (not at the next coarse
//!   tick), and the store's epoch callback, seeing the wall clock past its
//!   deadline, interrupts it;
//! - blocked inside a host call (a sleep, a poll, a stream, an HTTP request),
//!   or still waiting for an instance slot: no wasm runs, so no epoch check
//!   fires. The clock thread rings the call's [`Alarm`] at the deadline, and
//!   the host, which races every entry into the guest against it, drops the
//!   call's future and its store.
//!
//! Between deadlines the clock bumps the epoch every [`SLICE`], so that a
//! guest that computes for long yields its thread to other tasks now and
//! then. When nothing is armed it still wakes every slice: that costs one
//! wake-up every few milliseconds and saves arming a call from waking it.
//!
//! Most calls end long before their deadline, never having waited, so an
//! alarm is set on the clock only when it is needed: at once for a deadline
//! closer than [`EAGER`], else the first time the call has to wait (its
//! future is pending: blocked in a host call, waiting for a slot, or
//! yielding at the end of a slice). A guest that computes yields at the
//! first slice's end, at most one [`SLICE`] after it starts, so its
//! deadline, at least [`EAGER`] away, is set on the clock in time. A call
//! that never waits costs the clock nothing.
//!
//! A dedicated thread, rather than tokio's timer, because tokio's timer has
//! a resolution of one millisecond and only fires when a runtime thread gets
//! to it; a guest spinning on a current-thread runtime would hold it off.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use wasmtime::{Engine, EngineWeak};

/// How long a guest computes before it yields its thread to other tasks (it
/// resumes right after, unless its deadline has passed).
pub(crate) const SLICE: Duration = Duration::from_millis(10);

/// A deadline at least this far off is set on the clock only when its call
/// first waits (see the module's documentation): twice a [`SLICE`], so
/// that a guest computing from its start, which yields at the end of its
/// first slice, has its deadline set a slice ahead of it at least.
pub(crate) const EAGER: Duration = SLICE.saturating_mul(2);

/// Bumps the engine's epoch at every armed deadline and every [`SLICE`], on
/// its own thread, until dropped.
pub(crate) struct DeadlineClock {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    /// Armed deadlines, earliest first; the id keeps equal instants apart.
    armed: BTreeMap<(Instant, u64), oneshot::Sender<()>>,
    next_id: u64,
    /// When the thread will wake next unless notified.
    planned: Instant,
    stop: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent even if a holder panicked: every
        // critical section is a single map operation.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl DeadlineClock {
    /// Starts the clock thread for `engine`. It stops when the clock is
    /// dropped or the engine is gone.
    pub(crate) fn start(engine: &Engine) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                armed: BTreeMap::new(),
                next_id: 0,
                planned: Instant::now() + SLICE,
                stop: false,
            }),
            wake: Condvar::new(),
        });
        let weak = engine.weak();
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("toolhost-deadlines".into())
                .spawn(move || run(&shared, &weak))?
        };
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// An alarm for `deadline`, seen from `now`: at that instant the
    /// engine's epoch is bumped, so that a guest running wasm checks its
    /// deadline, and the alarm rings. It is set on the clock at once if
    /// the deadline is less than [`EAGER`] from `now`, else when it is
    /// first awaited ([`Alarm::rung`]). Dropping the alarm disarms it.
    pub(crate) fn alarm(&self, deadline: Instant, now: Instant) -> Alarm<'_> {
        let mut alarm = Alarm {
            shared: &self.shared,
            deadline,
            armed: None,
            rung: false,
        };
        if deadline.saturating_duration_since(now) < EAGER {
            alarm.armed = Some(set(&self.shared, deadline));
        }
        alarm
    }
}

impl Drop for DeadlineClock {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The clock thread: fire what is due, bump the epoch when anything fired or
/// a slice ended, sleep until the next of either.
fn run(shared: &Shared, engine: &EngineWeak) {
    // Linux lets a sleeping thread wake up to 50 µs late by default, to
    // batch wake-ups; this thread's whole job is to wake on time.
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1)) {
        tracing::debug!(error = %e, "could not tighten the deadline thread's timer slack");
    }
    let mut next_slice = Instant::now() + SLICE;
    let mut state = shared.lock();
    while !state.stop {
        let now = Instant::now();
        let mut bump = false;
        while let Some(entry) = state.armed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            // The receiver may be gone already (the call ended); nothing to
            // tell then.
            let _ = entry.remove().send(());
            bump = true;
        }
        if now >= next_slice {
            next_slice = now + SLICE;
            bump = true;
        }
        if bump {
            match engine.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => return,
            }
        }
        let wake_at = state
            .armed
            .first_key_value()
            .map_or(next_slice, |((at, _), _)| (*at).min(next_slice));
        state.planned = wake_at;
        let wait = wake_at.saturating_duration_since(Instant::now());
        state = shared
            .wake
            .wait_timeout(state, wait)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Rings at its deadline; see [`DeadlineClock::alarm`].
pub(crate) struct Alarm<'a> {
    shared: &'a Shared,
    deadline: Instant,
    /// Its key on the clock and where the clock rings it, once set.
    armed: Option<(u64, oneshot::Receiver<()>)>,
    rung: bool,
}

/// Sets an alarm for `deadline` on the clock of `shared`, which rings it
/// and bumps the epoch at that instant (at once if it has passed): its key
/// on the clock and where it rings.
fn set(shared: &Shared, deadline: Instant) -> (u64, oneshot::Receiver<()>) {
    let (tx, rx) = oneshot::channel();
    let mut state = shared.lock();
    let id = state.next_id;
    state.next_id += 1;
    state.armed.insert((deadline, id), tx);
    let sooner = deadline < state.planned;
    drop(state);
    if sooner {
        shared.wake.notify_one();
    }
    (id, rx)
}

impl Alarm<'_> {
    /// Resolves once the deadline has passed (at once if it already rang).
    /// The first wait sets the alarm on the clock if it is not set yet.
    pub(crate) async fn rung(&mut self) {
        if self.rung {
            return;
        }
        let (shared, deadline) = (self.shared, self.deadline);
        let (_, rx) = self.armed.get_or_insert_with(|| set(shared, deadline));
        // An error means the clock is gone (the sandbox is being dropped):
        // fall back to the tokio timer so the deadline still holds.
        if rx.await.is_err() {
            tokio::time::sleep_until(self.deadline.into()).await;
        }
        self.rung = true;
    }

    /// Whether the deadline has passed.
    pub(crate) fn is_past(&self) -> bool {
        self.rung || Instant::now() >= self.deadline
    }
}

impl Drop for Alarm<'_> {
    fn drop(&mut self) {
        if let Some((id, _)) = self.armed {
            self.shared.lock().armed.remove(&(self.deadline, id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        Engine::new(&config).unwrap()
    }

    #[tokio::test]
    async fn c2_an_alarm_rings_at_its_deadline_not_before() {
        let engine = engine();
        let clock = DeadlineClock::start(&engine).unwrap();
        let deadline = Instant::now() + Duration::from_millis(30);
        let mut alarm = clock.alarm(deadline, Instant::now());
        alarm.rung().await;
        let now = Instant::now();
        assert!(now >= deadline);
        // A bound far looser than expected, only to catch a hang.
        assert!(
            now - deadline < Duration::from_secs(10),
            "{:?}",
            now - deadline
        );
    }

    #[tokio::test]
    async fn c2_a_deadline_already_past_rings_at_once() {
        let engine = engine();
        let clock = DeadlineClock::start(&engine).unwrap();
        let mut alarm = clock.alarm(Instant::now() - Duration::from_millis(5), Instant::now());
        tokio::time::timeout(Duration::from_secs(5), alarm.rung())
            .await
            .expect("a past deadline rings");
    }

    #[tokio::test]
    async fn c2_an_alarm_that_rang_stays_rung() {
        let engine = engine();
        let clock = DeadlineClock::start(&engine).unwrap();
        let mut alarm = clock.alarm(Instant::now(), Instant::now());
        alarm.rung().await;
        alarm.rung().await;
        assert!(alarm.is_past());
    }

    #[tokio::test]
    async fn c2_a_dropped_alarm_is_disarmed() {
        let engine = engine();
        let clock = DeadlineClock::start(&engine).unwrap();
        let mut alarm = clock.alarm(Instant::now() + Duration::from_secs(60), Instant::now());
        assert!(futures::poll!(std::pin::pin!(alarm.rung())).is_pending());
        assert_eq!(clock.shared.lock().armed.len(), 1);
        drop(alarm);
        assert!(clock.shared.lock().armed.is_empty());
    }

    #[tokio::test]
    async fn c2_a_far_deadline_is_set_on_the_clock_when_first_awaited_and_only_once() {
        let engine = engine();
        let clock = DeadlineClock::start(&engine).unwrap();
        let now = Instant::now();
        let mut alarm = clock.alarm(now + EAGER, now);
        // A call that never waits never touches the clock.
        assert!(clock.shared.lock().armed.is_empty());
        for _ in 0..3 {
            assert!(futures::poll!(std::pin::pin!(alarm.rung())).is_pending());
            assert_eq!(clock.shared.lock().armed.len(), 1);
        }
        // Set late, it still rings at its deadline, not before.
        alarm.rung().await;
        assert!(Instant::now() >= now + EAGER);
        drop(alarm);
        assert!(clock.shared.lock().armed.is_empty());
    }

    #[tokio::test]
    async fn c2_a_near_deadline_is_set_on_the_clock_at_once() {
        let engine = engine();
        let clock = DeadlineClock::start(&engine).unwrap();
        let now = Instant::now();
        let alarm = clock.alarm(now + EAGER - Duration::from_millis(1), now);
        assert_eq!(clock.shared.lock().armed.len(), 1);
        // The clock fires it (and bumps the epoch) with nobody awaiting it:
        // a guest computing from its start is interrupted at its deadline.
        let fired = async {
            while !clock.shared.lock().armed.is_empty() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        // A bound far looser than expected, only to catch a hang.
        tokio::time::timeout(Duration::from_secs(10), fired)
            .await
            .expect("the clock fires a deadline set at once");
        assert!(Instant::now() >= now + EAGER - Duration::from_millis(1));
        assert!(alarm.is_past());
    }
}
