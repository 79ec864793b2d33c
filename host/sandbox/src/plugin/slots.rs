//! [`Slots`]: a plugin's instance slots (rule W4: the host decides how
//! many instances run), shared among the tenants whose calls want them
//! (rule A3: one tenant never starves another).
//!
//! Two rules on top of a plain counting semaphore:
//!
//! - **A slot kept for the others.** On a host with tenants, one tenant
//!   holds at most all but one of a plugin's slots; its next call waits
//!   even with that slot free, so that another tenant's call starts at
//!   once instead of queueing behind calls that may run to their deadline.
//! - **Handed to whoever holds fewest.** A freed slot goes to the waiting
//!   tenant that holds the fewest of them now (the longest-waiting call
//!   first among equals; first come, first served within a tenant), not to
//!   the oldest call of all: a tenant that queued a hundred calls first
//!   does not make the others wait for all of them.
//!
//! Written here rather than taken from a crate: the semaphores at hand
//! (tokio's, `async-lock`'s) serve their waiters in arrival order and know
//! nothing of whose they are. One lock is taken to have a slot and one to
//! give it back, uncontended unless calls of the plugin start or end at the
//! same moment: tens of nanoseconds against the microseconds of a fresh
//! instance.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use tokio::sync::oneshot;

/// Idle tenants are forgotten only past this many known ones: the
/// tenants of a served host are few (its configuration names them), and
/// remembering them spares every call an allocation.
const REMEMBERED_TENANTS: usize = 64;

/// A plugin's instance slots, shared fairly among tenants (see the module
/// documentation).
pub(crate) struct Slots {
    /// Most slots one tenant holds at once.
    per_tenant: usize,
    state: Mutex<State>,
}

struct State {
    free: usize,
    /// Calls waiting, all tenants together.
    waiting: usize,
    next_ticket: u64,
    tenants: HashMap<Arc<str>, Tenant>,
}

#[derive(Default)]
struct Tenant {
    held: usize,
    waiting: VecDeque<Waiter>,
}

struct Waiter {
    ticket: u64,
    grant: oneshot::Sender<()>,
}

impl Slots {
    /// `capacity` slots (at least 1). `shared` (a host with tenants): one
    /// tenant holds at most `capacity - 1` of them, or the one slot there
    /// is.
    pub(crate) fn new(capacity: usize, shared: bool) -> Self {
        let capacity = capacity.max(1);
        Self {
            per_tenant: if shared {
                (capacity - 1).max(1)
            } else {
                capacity
            },
            state: Mutex::new(State {
                free: capacity,
                waiting: 0,
                next_ticket: 0,
                tenants: HashMap::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Counts left by a panic elsewhere are still counts.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for a call of `tenant` ("" for the plugin's own instances:
    /// its tool list, hooks and prompt): had [at once](Taken::Now) if one
    /// is free for it, else a [place in the queue](Taken::Queued).
    pub(crate) fn take(&self, tenant: &str) -> Taken<'_> {
        let mut state = self.state();
        let state = &mut *state;
        let name = match state.tenants.get_key_value(tenant) {
            Some((name, _)) => name.clone(),
            None => Arc::from(tenant),
        };
        let entry = state.tenants.entry(name.clone()).or_default();
        if state.free > 0 && entry.held < self.per_tenant && entry.waiting.is_empty() {
            entry.held += 1;
            state.free -= 1;
            return Taken::Now(Slot {
                slots: self,
                tenant: name,
            });
        }
        let (grant, granted) = oneshot::channel();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        entry.waiting.push_back(Waiter { ticket, grant });
        state.waiting += 1;
        Taken::Queued(Queued {
            slots: self,
            tenant: Some(name),
            ticket,
            granted,
        })
    }

    /// Gives free slots to waiting calls, each to the waiting tenant
    /// holding the fewest under its cap, the longest-waiting first among
    /// equals.
    fn dispatch(&self, state: &mut State) {
        while state.free > 0 && state.waiting > 0 {
            let next = state
                .tenants
                .iter()
                .filter(|(_, t)| t.held < self.per_tenant)
                .filter_map(|(name, t)| t.waiting.front().map(|w| (t.held, w.ticket, name)))
                .min_by_key(|&(held, ticket, _)| (held, ticket))
                .map(|(_, _, name)| name.clone());
            let Some(tenant) = next.and_then(|name| state.tenants.get_mut(&name)) else {
                return;
            };
            let Some(waiter) = tenant.waiting.pop_front() else {
                return;
            };
            state.waiting -= 1;
            // A waiter whose call is gone has dropped its receiver under
            // this lock, and removed itself: a send only fails for one
            // being dropped right now, which then finds nothing granted.
            if waiter.grant.send(()).is_ok() {
                tenant.held += 1;
                state.free -= 1;
            }
        }
    }

    /// Gives back a slot `tenant` held.
    fn give_back(&self, tenant: &str) {
        let mut state = self.state();
        let state = &mut *state;
        let idle = match state.tenants.get_mut(tenant) {
            Some(entry) => {
                entry.held = entry.held.saturating_sub(1);
                entry.held == 0 && entry.waiting.is_empty()
            }
            None => false,
        };
        state.free += 1;
        if idle && state.tenants.len() > REMEMBERED_TENANTS {
            state.tenants.remove(tenant);
        }
        self.dispatch(state);
    }
}

/// What [`Slots::take`] returns.
pub(crate) enum Taken<'a> {
    /// A slot was free.
    Now(Slot<'a>),
    /// None was: this resolves to one when it is handed over.
    Queued(Queued<'a>),
}

/// One of a plugin's instance slots, held for a tenant until dropped.
pub(crate) struct Slot<'a> {
    slots: &'a Slots,
    tenant: Arc<str>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.slots.give_back(&self.tenant);
    }
}

/// A call waiting for a slot; dropping it (the call's deadline, or its
/// caller gone) leaves the queue, and gives back a slot handed to it
/// that it never took.
pub(crate) struct Queued<'a> {
    slots: &'a Slots,
    /// `None` once the slot was taken.
    tenant: Option<Arc<str>>,
    ticket: u64,
    granted: oneshot::Receiver<()>,
}

impl<'a> Future for Queued<'a> {
    type Output = Slot<'a>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Slot<'a>> {
        match Pin::new(&mut self.granted).poll(cx) {
            Poll::Ready(Ok(())) => match self.tenant.take() {
                Some(tenant) => Poll::Ready(Slot {
                    slots: self.slots,
                    tenant,
                }),
                // Polled again after it resolved: the slot went with the
                // first answer.
                None => Poll::Pending,
            },
            // The sender is only dropped having sent, or by this waiter's
            // own drop: never while it is polled.
            Poll::Ready(Err(_)) | Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        let Some(tenant) = self.tenant.take() else {
            return;
        };
        let mut state = self.slots.state();
        // Under the lock no slot can be handed over meanwhile: either one
        // was (give it back), or the waiter is still queued (leave).
        self.granted.close();
        if self.granted.try_recv().is_ok() {
            drop(state);
            self.slots.give_back(&tenant);
            return;
        }
        if let Some(entry) = state.tenants.get_mut(&*tenant)
            && let Some(at) = entry.waiting.iter().position(|w| w.ticket == self.ticket)
        {
            entry.waiting.remove(at);
            state.waiting -= 1;
        }
        // Nothing to hand on: a free slot is never held back for a waiter
        // that could have it (dispatch passes over tenants at their cap).
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use super::*;

    fn now<'a>(taken: Taken<'a>) -> Slot<'a> {
        match taken {
            Taken::Now(slot) => slot,
            Taken::Queued(_) => panic!("queued, with a slot free for it"),
        }
    }

    fn queued(taken: Taken<'_>) -> Queued<'_> {
        match taken {
            Taken::Now(_) => panic!("had a slot that should have been kept"),
            Taken::Queued(q) => q,
        }
    }

    /// Whether the waiter has its slot yet, without waiting.
    fn poll<'a>(q: &mut Queued<'a>) -> Option<Slot<'a>> {
        match Pin::new(q).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(slot) => Some(slot),
            Poll::Pending => None,
        }
    }

    #[test]
    fn w4_without_tenants_one_caller_may_hold_every_slot() {
        let slots = Slots::new(3, false);
        let held: Vec<_> = (0..3).map(|_| now(slots.take("default"))).collect();
        let mut fourth = queued(slots.take("default"));
        assert!(poll(&mut fourth).is_none());
        drop(held);
        assert!(poll(&mut fourth).is_some());
    }

    #[test]
    fn a3_with_tenants_the_last_slot_is_kept_for_another_tenant() {
        let slots = Slots::new(4, true);
        let mut greedy: Vec<_> = (0..3).map(|_| now(slots.take("greedy"))).collect();
        let mut more = queued(slots.take("greedy"));
        let polite = now(slots.take("polite"));
        // Freed by the other tenant, the slot is still not greedy's fourth.
        drop(polite);
        assert!(poll(&mut more).is_none());
        // One of its own freed, its next call has it.
        greedy.pop();
        assert!(poll(&mut more).is_some());
    }

    #[test]
    fn a3_with_one_slot_a_tenant_may_still_have_it() {
        let slots = Slots::new(1, true);
        let one = now(slots.take("a"));
        let mut b = queued(slots.take("b"));
        drop(one);
        assert!(poll(&mut b).is_some());
    }

    #[test]
    fn a3_a_freed_slot_goes_to_the_tenant_holding_fewest_not_the_oldest_call() {
        let slots = Slots::new(4, true);
        let _a: Vec<_> = (0..2).map(|_| now(slots.take("a"))).collect();
        let mut b: Vec<_> = (0..2).map(|_| now(slots.take("b"))).collect();
        // a's two calls queued first, then c's.
        let mut a_more = [queued(slots.take("a")), queued(slots.take("a"))];
        let mut c = queued(slots.take("c"));
        // c holds none, a two: c has the first slot freed.
        b.pop();
        let c = poll(&mut c);
        assert!(c.is_some());
        assert!(poll(&mut a_more[0]).is_none());
        // Then a, its calls in order.
        b.pop();
        assert!(poll(&mut a_more[1]).is_none());
        assert!(poll(&mut a_more[0]).is_some());
    }

    #[test]
    fn a3_within_a_tenant_calls_are_served_in_order() {
        let slots = Slots::new(1, false);
        let first = now(slots.take("t"));
        let mut second = queued(slots.take("t"));
        let mut third = queued(slots.take("t"));
        drop(first);
        assert!(poll(&mut third).is_none());
        let second = poll(&mut second).unwrap();
        drop(second);
        assert!(poll(&mut third).is_some());
    }

    #[test]
    fn c1_a_waiter_gone_loses_no_slot_whether_or_not_it_was_handed_one() {
        let slots = Slots::new(1, false);
        let first = now(slots.take("t"));
        // Gone while queued: it leaves the queue.
        drop(queued(slots.take("t")));
        // Handed the slot, then gone before taking it: the slot comes back.
        let handed = queued(slots.take("t"));
        drop(first);
        drop(handed);
        let again = now(slots.take("u"));
        drop(again);
        let state = slots.state();
        assert_eq!((state.free, state.waiting), (1, 0));
        assert!(state.tenants.values().all(|t| t.held == 0));
    }

    #[test]
    fn a3_idle_tenants_are_forgotten_past_the_remembered_few() {
        let slots = Slots::new(2, true);
        for i in 0..1_000 {
            drop(now(slots.take(&format!("t{i}"))));
        }
        assert!(slots.state().tenants.len() <= REMEMBERED_TENANTS + 1);
    }
}
