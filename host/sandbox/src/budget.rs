//! Host resources shared out among plugins at load (rule C4): the
//! process's file descriptors and the engine's instance slots.
//!
//! A plugin's instances hold descriptors for the files and directories they
//! open and for their outgoing connections. Each is bounded by the plugin's
//! policy (handles per instance, preopened directories, requests in
//! flight), so a plugin's worst case is known when it loads. The sandbox
//! raises the soft descriptor limit to the hard one when it starts, keeps a
//! reserve for the host itself (its own files, sockets, child processes),
//! and reserves each plugin's worst case from the rest at load: a plugin
//! whose worst case does not fit is refused, naming the numbers, so one
//! plugin at its limits can never make another's call fail with "too many
//! open files".

use std::sync::{Arc, Mutex};

/// What the host keeps for itself: a quarter of the limit, and at least
/// this many.
const MIN_HOST_RESERVE: u64 = 256;

/// Which resource a budget shares out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resource {
    /// The process's file descriptors.
    Descriptors,
    /// The engine's live instance slots.
    Instances,
}

/// One resource, shared out among plugins.
#[derive(Debug)]
pub(crate) struct Budget {
    resource: Resource,
    /// The limit the budget comes from.
    limit: u64,
    /// What plugins may hold in all.
    total: usize,
    free: Mutex<usize>,
}

/// Why a plugin's share of a host resource does not fit: its worst case
/// against what the host has left for plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OverBudget {
    /// The resource.
    pub resource: Resource,
    /// The plugin's worst case.
    pub needed: usize,
    /// What is left for plugins.
    pub free: usize,
    /// The limit the budget comes from (the process's descriptor limit, or
    /// the engine's instance slots).
    pub limit: u64,
}

impl std::error::Error for OverBudget {}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.resource {
            Resource::Descriptors => write!(
                f,
                "it may hold up to {} file descriptors, but only {} of the process's limit of {} \
                 remain for plugins; lower max_instances or max_handles, or raise the limit (ulimit -n)",
                self.needed, self.free, self.limit
            ),
            Resource::Instances => write!(
                f,
                "it may run {} instances at once, but only {} of the sandbox's {} instance slots \
                 are free; lower max_instances, or unload another plugin",
                self.needed, self.free, self.limit
            ),
        }
    }
}

impl Budget {
    /// Raises the process's soft descriptor limit to its hard limit, and
    /// budgets what is left after the host's reserve.
    pub(crate) fn from_process() -> Arc<Self> {
        Arc::new(Self::with_limit(raise_soft_limit()))
    }

    /// A descriptor budget for a process whose limit is `limit`.
    pub(crate) fn with_limit(limit: u64) -> Self {
        let reserve = (limit / 4).max(MIN_HOST_RESERVE);
        let total = usize::try_from(limit.saturating_sub(reserve)).unwrap_or(usize::MAX);
        Self {
            resource: Resource::Descriptors,
            limit,
            total,
            free: Mutex::new(total),
        }
    }

    /// A budget of `slots` instance slots, all for plugins.
    pub(crate) fn instances(slots: u32) -> Arc<Self> {
        Arc::new(Self {
            resource: Resource::Instances,
            limit: u64::from(slots),
            total: slots as usize,
            free: Mutex::new(slots as usize),
        })
    }

    /// Takes `needed` descriptors from the budget until the reservation is
    /// dropped.
    pub(crate) fn reserve(self: &Arc<Self>, needed: usize) -> Result<Reservation, OverBudget> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if needed > *free {
            return Err(OverBudget {
                resource: self.resource,
                needed,
                free: *free,
                limit: self.limit,
            });
        }
        *free -= needed;
        Ok(Reservation {
            budget: self.clone(),
            held: needed,
        })
    }

    /// What is not reserved.
    #[cfg(test)]
    pub(crate) fn free(&self) -> usize {
        *self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A plugin's share of the budget, returned when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<Budget>,
    held: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut free = self.budget.free.lock().unwrap_or_else(|e| e.into_inner());
        *free = (*free + self.held).min(self.budget.total);
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit where allowed, and
/// returns the soft limit in force afterwards.
#[cfg(unix)]
fn raise_soft_limit() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if let Some(hard) = limit.maximum
        && limit.current.is_some_and(|soft| soft < hard)
    {
        limit.current = Some(hard);
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            tracing::debug!(error = %e, "could not raise the descriptor limit");
        }
    }
    // `None` is unlimited; count it as a large finite number.
    getrlimit(Resource::Nofile).current.unwrap_or(1 << 20)
}

#[cfg(not(unix))]
fn raise_soft_limit() -> u64 {
    // No per-process descriptor limit to raise; budget generously.
    1 << 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c4_the_host_keeps_a_reserve() {
        let b = Budget::with_limit(1024);
        assert_eq!(b.free(), 768);
        let b = Budget::with_limit(400);
        assert_eq!(b.free(), 144);
    }

    #[test]
    fn c4_a_plugin_that_does_not_fit_is_refused_and_a_dropped_one_gives_back() {
        let b = Arc::new(Budget::with_limit(1024));
        let first = b.reserve(700).unwrap();
        let err = b.reserve(100).unwrap_err();
        assert_eq!(
            err,
            OverBudget {
                resource: Resource::Descriptors,
                needed: 100,
                free: 68,
                limit: 1024
            }
        );
        assert!(err.to_string().contains("ulimit -n"), "{err}");
        drop(first);
        assert_eq!(b.free(), 768);
        b.reserve(768).unwrap();
    }

    #[test]
    fn c4_instance_slots_are_shared_out_too() {
        let b = Budget::instances(8);
        let _a = b.reserve(6).unwrap();
        let err = b.reserve(4).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it may run 4 instances at once, but only 2 of the sandbox's 8 instance slots are free; lower max_instances, or unload another plugin"
        );
    }

    #[test]
    fn c4_the_soft_limit_is_raised_to_the_hard_one() {
        let soft = raise_soft_limit();
        let now = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        assert_eq!(now.current, now.maximum.or(now.current));
        assert!(soft >= 1);
    }
}
