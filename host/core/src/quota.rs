//! Quotas per tenant and per plugin (rule A3): calls per minute, calls in
//! flight and CPU time per minute. A call is admitted only if every quota
//! that applies to it has room; one that has none fails at once, naming
//! the quota and when to try again, never waiting.
//!
//! Two scopes apply to a call of tenant `t` to a tool of plugin `p`: the
//! tenant's own limits (all its calls), and the plugin's limits counted for
//! that tenant alone, so that one tenant using up a plugin's share leaves
//! every other tenant's share of it whole.
//!
//! Calls per minute and CPU time are token buckets that refill
//! continuously: a limit of 60 calls a minute admits a burst of 60, then
//! one a second. CPU time is known only when a call ends, so a call is
//! admitted while the bucket is not empty and its CPU time is charged
//! afterwards: a bucket can go into debt by at most one call's CPU time
//! per call in flight (bounded by that call's deadline), and nothing is
//! admitted until the debt is repaid.
//!
//! Written here rather than taken from a rate-limiting crate: the CPU
//! bucket is charged after the fact and may go into debt, which the
//! governor-style crates (admit-before, fixed cost) do not model, and the
//! three quotas must be checked and taken together under one lock so that a
//! refusal by one takes nothing from the others.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The limits of one scope; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct QuotaLimits {
    /// Calls admitted per minute (a burst of this many, refilled evenly).
    pub calls_per_minute: Option<u32>,
    /// Calls running at once.
    pub in_flight: Option<u32>,
    /// CPU time of the plugin's guest code per minute (a burst of this
    /// much, refilled evenly).
    pub cpu_per_minute: Option<Duration>,
}

impl QuotaLimits {
    /// No limit at all.
    pub const NONE: Self = Self {
        calls_per_minute: None,
        in_flight: None,
        cpu_per_minute: None,
    };

    /// Limits the calls admitted per minute.
    pub fn calls_per_minute(mut self, n: u32) -> Self {
        self.calls_per_minute = Some(n);
        self
    }

    /// Limits the calls running at once.
    pub fn in_flight(mut self, n: u32) -> Self {
        self.in_flight = Some(n);
        self
    }

    /// Limits the guest CPU time per minute.
    pub fn cpu_per_minute(mut self, cpu: Duration) -> Self {
        self.cpu_per_minute = Some(cpu);
        self
    }

    fn is_none(&self) -> bool {
        *self == Self::NONE
    }
}

/// Which quota refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuotaKind {
    /// Calls per minute.
    CallsPerMinute,
    /// Calls in flight.
    InFlight,
    /// CPU time per minute.
    CpuPerMinute,
}

impl QuotaKind {
    /// The quota's configuration key: `calls_per_minute`, `in_flight`,
    /// `cpu_ms_per_minute`.
    pub fn key(self) -> &'static str {
        match self {
            Self::CallsPerMinute => "calls_per_minute",
            Self::InFlight => "in_flight",
            Self::CpuPerMinute => "cpu_ms_per_minute",
        }
    }
}

impl fmt::Display for QuotaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// A call refused by a quota: which one, whose, and when one may be
/// admitted again (a lower bound: another call may take the room first).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OverQuota {
    /// The quota.
    pub kind: QuotaKind,
    /// Whose: `tenant "t"` or `plugin "p" for tenant "t"`.
    pub scope: String,
    /// How long until the quota has room again.
    pub retry_after: Duration,
}

/// How long a full in-flight quota is said to last: how long a call takes
/// is not known, so the caller is told to come back soon.
const IN_FLIGHT_RETRY: Duration = Duration::from_secs(1);

const MINUTE: Duration = Duration::from_secs(60);

/// A bucket of `capacity` units refilled evenly over a minute; its level may
/// go below zero (debt) when charged after the fact.
#[derive(Debug)]
struct Bucket {
    capacity: f64,
    level: f64,
    at: Instant,
}

impl Bucket {
    fn full(capacity: f64, now: Instant) -> Self {
        Self {
            capacity,
            level: capacity,
            at: now,
        }
    }

    /// Refills for the time since it was last looked at.
    fn refill(&mut self, now: Instant) {
        let rate = self.capacity / MINUTE.as_secs_f64();
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + elapsed * rate).min(self.capacity);
        self.at = now;
    }

    /// How long until the level reaches `need`; zero if it has.
    fn wait_for(&self, need: f64) -> Duration {
        if self.level >= need || self.capacity <= 0.0 {
            return if self.capacity <= 0.0 && need > 0.0 {
                MINUTE
            } else {
                Duration::ZERO
            };
        }
        let rate = self.capacity / MINUTE.as_secs_f64();
        Duration::from_secs_f64(((need - self.level) / rate).min(MINUTE.as_secs_f64() * 1e3))
    }
}

/// What one scope has used.
#[derive(Debug)]
struct Usage {
    limits: QuotaLimits,
    calls: Option<Bucket>,
    /// CPU time, in seconds.
    cpu: Option<Bucket>,
    in_flight: u32,
}

impl Usage {
    fn new(limits: QuotaLimits, now: Instant) -> Self {
        Self {
            limits,
            calls: limits
                .calls_per_minute
                .map(|n| Bucket::full(f64::from(n), now)),
            cpu: limits
                .cpu_per_minute
                .map(|d| Bucket::full(d.as_secs_f64(), now)),
            in_flight: 0,
        }
    }

    /// The usage of `key` in `usage`, under `limits`: made if there is
    /// none, held to `limits` if it was counted under others.
    fn of<'a>(
        usage: &'a mut HashMap<Key, Usage>,
        key: &Key,
        limits: QuotaLimits,
        now: Instant,
    ) -> &'a mut Usage {
        let used = usage
            .entry(key.clone())
            .or_insert_with(|| Usage::new(limits, now));
        if used.limits != limits {
            used.limit_to(limits, now);
        }
        used
    }

    /// Counts on under `limits`: what was used stays used.
    fn limit_to(&mut self, limits: QuotaLimits, now: Instant) {
        fn resized(bucket: Option<Bucket>, capacity: Option<f64>, now: Instant) -> Option<Bucket> {
            let capacity = capacity?;
            Some(match bucket {
                Some(mut bucket) => {
                    bucket.refill(now);
                    bucket.level += capacity - bucket.capacity;
                    bucket.capacity = capacity;
                    bucket
                }
                None => Bucket::full(capacity, now),
            })
        }
        self.calls = resized(
            self.calls.take(),
            limits.calls_per_minute.map(f64::from),
            now,
        );
        self.cpu = resized(
            self.cpu.take(),
            limits.cpu_per_minute.map(|d| d.as_secs_f64()),
            now,
        );
        self.limits = limits;
    }

    /// The first quota with no room now, and how long until it has some.
    fn refusal(&mut self, now: Instant) -> Option<(QuotaKind, Duration)> {
        if let Some(bucket) = &mut self.calls {
            bucket.refill(now);
            if bucket.level < 1.0 {
                return Some((QuotaKind::CallsPerMinute, bucket.wait_for(1.0)));
            }
        }
        if let Some(limit) = self.limits.in_flight
            && self.in_flight >= limit
        {
            return Some((QuotaKind::InFlight, IN_FLIGHT_RETRY));
        }
        if let Some(bucket) = &mut self.cpu {
            bucket.refill(now);
            // Admitted while anything is left; the call's CPU time is
            // charged when it ends.
            if bucket.level <= 0.0 {
                return Some((QuotaKind::CpuPerMinute, bucket.wait_for(f64::MIN_POSITIVE)));
            }
        }
        None
    }

    fn take(&mut self) {
        if let Some(bucket) = &mut self.calls {
            bucket.level -= 1.0;
        }
        self.in_flight += 1;
    }
}

/// Whose usage: a tenant's, or a plugin's for one tenant.
type Key = (Arc<str>, Option<Arc<str>>);

/// The quotas of a host: limits per tenant and per plugin, and what each
/// has used. Cheap to share; every call of the host goes through
/// [`admit`](Self::admit).
#[derive(Debug, Default)]
pub struct Quotas {
    /// Limits of each named tenant.
    tenants: HashMap<String, QuotaLimits>,
    /// Limits of a tenant not named in `tenants`.
    any_tenant: QuotaLimits,
    /// Limits of each plugin, counted per tenant.
    plugins: HashMap<String, QuotaLimits>,
    /// What each scope has used; shared with the quotas of a host this one
    /// replaced, or that replaces it ([`continuing`](Self::continuing)).
    usage: Arc<Mutex<HashMap<Key, Usage>>>,
}

impl Quotas {
    /// No limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits every tenant not given limits of its own.
    pub fn every_tenant(mut self, limits: QuotaLimits) -> Self {
        self.any_tenant = limits;
        self
    }

    /// Limits the tenant `name`.
    pub fn tenant(mut self, name: impl Into<String>, limits: QuotaLimits) -> Self {
        self.tenants.insert(name.into(), limits);
        self
    }

    /// Limits the plugin `name`, for each tenant separately.
    pub fn plugin(mut self, name: impl Into<String>, limits: QuotaLimits) -> Self {
        self.plugins.insert(name.into(), limits);
        self
    }

    /// Counts on from what `previous` has counted, for a host that
    /// replaces `previous`'s (a reload): every tenant keeps its calls in
    /// flight (the old host's calls give their slots back here too), and
    /// the calls and CPU time it used in the minute. Where a scope's
    /// limits changed, what it used stays used: a bucket raised or lowered
    /// by `n` gains or loses `n` (a lowered one may go into debt), a bucket
    /// the scope did not have starts full.
    pub fn continuing(mut self, previous: &Quotas) -> Self {
        self.usage = previous.usage.clone();
        self
    }

    /// Whether no limit is set at all (calls then skip the quotas).
    pub fn is_unlimited(&self) -> bool {
        self.any_tenant.is_none()
            && self.tenants.values().all(QuotaLimits::is_none)
            && self.plugins.values().all(QuotaLimits::is_none)
    }

    fn usage(&self) -> MutexGuard<'_, HashMap<Key, Usage>> {
        // A panic while holding the lock leaves counts that are still
        // counts: carry on with them.
        self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The scopes that apply to a call of `tenant` to `plugin` ("" for a
    /// tool of no plugin), with their limits.
    fn scopes(&self, tenant: &str, plugin: &str) -> Vec<(Key, QuotaLimits)> {
        let mut scopes = Vec::with_capacity(2);
        let own = self.tenants.get(tenant).copied().unwrap_or(self.any_tenant);
        if !own.is_none() {
            scopes.push(((Arc::from(tenant), None), own));
        }
        if let Some(limits) = self.plugins.get(plugin)
            && !limits.is_none()
        {
            scopes.push(((Arc::from(tenant), Some(Arc::from(plugin))), *limits));
        }
        scopes
    }

    /// Admits a call of `tenant` to a tool of `plugin` if every quota that
    /// applies has room, taking one call and one slot in flight from each;
    /// otherwise takes nothing and says which quota refused. The slot is
    /// given back, and the call's CPU time charged, when the returned
    /// [`Admitted`] is finished or dropped.
    pub fn admit(self: &Arc<Self>, tenant: &str, plugin: &str) -> Result<Admitted, OverQuota> {
        let scopes = self.scopes(tenant, plugin);
        if scopes.is_empty() {
            return Ok(Admitted {
                quotas: None,
                keys: Vec::new(),
                counts_cpu: false,
            });
        }
        let counts_cpu = scopes.iter().any(|(_, l)| l.cpu_per_minute.is_some());
        let now = Instant::now();
        let mut usage = self.usage();
        for (key, limits) in &scopes {
            let used = Usage::of(&mut usage, key, *limits, now);
            if let Some((kind, retry_after)) = used.refusal(now) {
                return Err(OverQuota {
                    kind,
                    scope: describe(key),
                    retry_after,
                });
            }
        }
        let mut keys = Vec::with_capacity(scopes.len());
        for (key, _) in scopes {
            if let Some(used) = usage.get_mut(&key) {
                used.take();
            }
            keys.push(key);
        }
        Ok(Admitted {
            quotas: Some(self.clone()),
            keys,
            counts_cpu,
        })
    }

    /// Whether a call of `tenant` to `plugin` would be refused now, and by
    /// which quota; takes nothing. For an early answer (HTTP 429) before the
    /// call is decoded further; [`admit`](Self::admit) still decides.
    pub fn check(&self, tenant: &str, plugin: &str) -> Option<OverQuota> {
        let now = Instant::now();
        let mut usage = self.usage();
        self.scopes(tenant, plugin)
            .into_iter()
            .find_map(|(key, limits)| {
                let used = Usage::of(&mut usage, &key, limits, now);
                used.refusal(now).map(|(kind, retry_after)| OverQuota {
                    kind,
                    scope: describe(&key),
                    retry_after,
                })
            })
    }

    fn release(&self, keys: &[Key], cpu: Duration) {
        let mut usage = self.usage();
        for key in keys {
            if let Some(used) = usage.get_mut(key) {
                used.in_flight = used.in_flight.saturating_sub(1);
                if let Some(bucket) = &mut used.cpu {
                    bucket.refill(Instant::now());
                    // The whole debt, however deep: each call's CPU time is
                    // bounded by its deadline, and forgiving what lies past
                    // a minute's worth would let a call that spins to a
                    // long deadline take many times the quota.
                    bucket.level -= cpu.as_secs_f64();
                }
            }
        }
    }
}

fn describe((tenant, plugin): &Key) -> String {
    match plugin {
        None => format!("tenant \"{tenant}\""),
        Some(plugin) => format!("plugin \"{plugin}\" for tenant \"{tenant}\""),
    }
}

/// A call admitted by [`Quotas::admit`]: holds its slot in flight until it
/// is [finished](Self::finish) or dropped.
#[must_use = "the call's slot is given back when this is dropped"]
pub struct Admitted {
    quotas: Option<Arc<Quotas>>,
    keys: Vec<Key>,
    counts_cpu: bool,
}

impl Admitted {
    /// Whether a quota of the call counts CPU time: only then is it worth
    /// measuring (two reads of the thread's CPU clock per slice of guest
    /// code, a system call each).
    pub fn counts_cpu(&self) -> bool {
        self.counts_cpu
    }

    /// Ends the call, charging the CPU time its guest used.
    pub fn finish(mut self, cpu: Duration) {
        if let Some(quotas) = self.quotas.take() {
            quotas.release(&self.keys, cpu);
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if let Some(quotas) = self.quotas.take() {
            quotas.release(&self.keys, Duration::ZERO);
        }
    }
}

impl fmt::Debug for Admitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admitted")
            .field("scopes", &self.keys.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quotas(q: Quotas) -> Arc<Quotas> {
        Arc::new(q)
    }

    #[test]
    fn a3_calls_per_minute_admit_a_burst_then_refuse_saying_when() {
        let q = quotas(Quotas::new().every_tenant(QuotaLimits::NONE.calls_per_minute(3)));
        for _ in 0..3 {
            q.admit("t", "p").unwrap().finish(Duration::ZERO);
        }
        let refused = q.admit("t", "p").unwrap_err();
        assert_eq!(refused.kind, QuotaKind::CallsPerMinute);
        assert_eq!(refused.scope, "tenant \"t\"");
        // One call refills in 20 s; a few ms have passed.
        assert!(
            refused.retry_after > Duration::from_secs(19)
                && refused.retry_after <= Duration::from_secs(20),
            "{refused:?}"
        );
        // Another tenant has its own bucket.
        q.admit("u", "p").unwrap().finish(Duration::ZERO);
    }

    #[test]
    fn a3_quotas_that_replace_others_count_on_from_their_usage() {
        let every = |limits| Quotas::new().every_tenant(limits);
        let old = quotas(every(QuotaLimits::NONE.in_flight(1).calls_per_minute(3)));
        let running = old.admit("t", "p").unwrap();
        // A reload with the same limits: the call still runs, and one of
        // the minute's three calls is used.
        let new =
            quotas(every(QuotaLimits::NONE.in_flight(1).calls_per_minute(3)).continuing(&old));
        assert_eq!(new.admit("t", "p").unwrap_err().kind, QuotaKind::InFlight);
        // The old host's call ends: its slot comes back to the new quotas.
        running.finish(Duration::ZERO);
        for _ in 0..2 {
            new.admit("t", "p").unwrap().finish(Duration::ZERO);
        }
        assert_eq!(
            new.admit("t", "p").unwrap_err().kind,
            QuotaKind::CallsPerMinute
        );
        // Raised by two: two more calls this minute, not a fresh five.
        let raised = quotas(every(QuotaLimits::NONE.calls_per_minute(5)).continuing(&new));
        for _ in 0..2 {
            raised.admit("t", "p").unwrap().finish(Duration::ZERO);
        }
        let refused = raised.admit("t", "p").unwrap_err();
        assert_eq!(refused.kind, QuotaKind::CallsPerMinute);
        // Lowered below what was used: in debt, the wait says so (a call
        // refills in 60 s at one a minute; five used, so about 4 minutes).
        let lowered = quotas(every(QuotaLimits::NONE.calls_per_minute(1)).continuing(&raised));
        let refused = lowered.admit("t", "p").unwrap_err();
        assert!(
            refused.retry_after > Duration::from_secs(230),
            "{refused:?}"
        );
        // A CPU quota the scope did not have starts full; another tenant
        // was never counted.
        let cpu = quotas(
            every(QuotaLimits::NONE.cpu_per_minute(Duration::from_millis(10))).continuing(&lowered),
        );
        cpu.admit("t", "p")
            .unwrap()
            .finish(Duration::from_millis(20));
        assert_eq!(
            cpu.admit("t", "p").unwrap_err().kind,
            QuotaKind::CpuPerMinute
        );
        cpu.admit("u", "p").unwrap().finish(Duration::ZERO);
    }

    #[test]
    fn a3_in_flight_counts_running_calls_and_a_dropped_call_gives_its_slot_back() {
        let q = quotas(Quotas::new().every_tenant(QuotaLimits::NONE.in_flight(2)));
        let a = q.admit("t", "p").unwrap();
        let b = q.admit("t", "p").unwrap();
        let refused = q.admit("t", "p").unwrap_err();
        assert_eq!(refused.kind, QuotaKind::InFlight);
        assert_eq!(q.check("t", "p").map(|o| o.kind), Some(QuotaKind::InFlight));
        drop(a);
        let c = q.admit("t", "p").unwrap();
        b.finish(Duration::ZERO);
        c.finish(Duration::ZERO);
        assert_eq!(q.check("t", "p"), None);
    }

    #[test]
    fn a3_a_debt_deeper_than_a_minute_of_quota_is_repaid_whole() {
        let q = quotas(Quotas::new().plugin(
            "spin",
            QuotaLimits::NONE.cpu_per_minute(Duration::from_secs(1)),
        ));
        // One call that spun to a 60 s deadline under a quota of 1 s a
        // minute: refused for the hour it takes to repay, not one minute.
        q.admit("t", "spin")
            .unwrap()
            .finish(Duration::from_secs(60));
        let refused = q.admit("t", "spin").unwrap_err();
        assert_eq!(refused.kind, QuotaKind::CpuPerMinute);
        assert!(
            refused.retry_after > Duration::from_secs(58 * 60)
                && refused.retry_after <= Duration::from_secs(59 * 60 + 1),
            "{refused:?}"
        );
    }

    #[test]
    fn a3_cpu_time_is_charged_after_the_call_and_a_debt_refuses_until_repaid() {
        let q = quotas(Quotas::new().plugin(
            "spin",
            QuotaLimits::NONE.cpu_per_minute(Duration::from_secs(6)),
        ));
        // Admitted while the bucket is not empty, whatever the call costs.
        q.admit("t", "spin").unwrap().finish(Duration::from_secs(9));
        let refused = q.admit("t", "spin").unwrap_err();
        assert_eq!(refused.kind, QuotaKind::CpuPerMinute);
        assert_eq!(refused.scope, "plugin \"spin\" for tenant \"t\"");
        // 3 s of debt at 6 s a minute: 30 s to repay.
        assert!(
            refused.retry_after > Duration::from_secs(29)
                && refused.retry_after <= Duration::from_secs(30),
            "{refused:?}"
        );
        // The plugin's share is per tenant, and other plugins are not limited
        // (nor measured).
        let other_tenant = q.admit("u", "spin").unwrap();
        assert!(other_tenant.counts_cpu());
        other_tenant.finish(Duration::ZERO);
        let other_plugin = q.admit("t", "other").unwrap();
        assert!(!other_plugin.counts_cpu());
        other_plugin.finish(Duration::ZERO);
    }

    #[test]
    fn a3_a_refusal_by_one_scope_takes_nothing_from_the_other() {
        let q = quotas(
            Quotas::new()
                .tenant("t", QuotaLimits::NONE.calls_per_minute(5))
                .plugin("p", QuotaLimits::NONE.in_flight(1)),
        );
        let held = q.admit("t", "p").unwrap();
        for _ in 0..10 {
            assert_eq!(q.admit("t", "p").unwrap_err().kind, QuotaKind::InFlight);
        }
        drop(held);
        // Ten refusals took none of the tenant's five calls: four are left.
        for _ in 0..4 {
            q.admit("t", "p").unwrap().finish(Duration::ZERO);
        }
        assert_eq!(
            q.admit("t", "p").unwrap_err().kind,
            QuotaKind::CallsPerMinute
        );
    }

    #[test]
    fn a3_named_tenants_have_their_own_limits_and_zero_refuses_everything() {
        let q = quotas(
            Quotas::new()
                .every_tenant(QuotaLimits::NONE.calls_per_minute(1))
                .tenant("big", QuotaLimits::NONE.calls_per_minute(100))
                .tenant("blocked", QuotaLimits::NONE.calls_per_minute(0)),
        );
        for _ in 0..50 {
            q.admit("big", "p").unwrap().finish(Duration::ZERO);
        }
        let refused = q.admit("blocked", "p").unwrap_err();
        assert_eq!(refused.retry_after, MINUTE);
        assert!(!q.is_unlimited());
        assert!(Quotas::new().is_unlimited());
    }

    #[tokio::test]
    async fn a3_the_pipeline_refuses_a_call_over_quota_before_anything_of_it_runs() {
        use std::sync::atomic::{AtomicUsize, Ordering};

        use crate::tool::{CallContext, FnTool, ToolSpec};
        use crate::{Arguments, ToolError, ToolHost, ToolOutput};

        let runs = Arc::new(AtomicUsize::new(0));
        let host = ToolHost::builder()
            .quotas(quotas(
                Quotas::new().tenant("t", QuotaLimits::NONE.calls_per_minute(2)),
            ))
            .build();
        let counted = runs.clone();
        host.register_tool(FnTool::arc(
            ToolSpec::new("count", "counts", serde_json::json!({"type": "object"})),
            move |_, _| {
                let runs = counted.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(ToolOutput::text("ran"))
                }
            },
        ))
        .unwrap();
        let call = |tenant: &'static str| {
            host.invoke_tool(
                CallContext::new().with_tenant(tenant),
                "count",
                Arguments::parse("{}").unwrap(),
            )
        };
        call("t").await.unwrap();
        call("t").await.unwrap();
        let refused = call("t").await.unwrap_err();
        assert!(
            matches!(&refused, ToolError::OverQuota { quota: QuotaKind::CallsPerMinute, scope, .. } if scope == "tenant \"t\""),
            "{refused:?}"
        );
        assert!(
            refused.to_string().starts_with(
                "over quota: calls_per_minute of tenant \"t\" is used up; try again in"
            ),
            "{refused}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // Another tenant, and the default one, are not limited.
        call("u").await.unwrap();
        host.invoke_tool(CallContext::new(), "count", Arguments::parse("{}").unwrap())
            .await
            .unwrap();
        assert_eq!(
            host.quota_check("t", "count").map(|o| o.kind),
            Some(QuotaKind::CallsPerMinute)
        );
    }
}
