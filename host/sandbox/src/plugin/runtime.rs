//! [`PluginRuntime`]: what runs a loaded plugin's exports. Each call gets a
//! fresh store and instance (rule W4), once one of the plugin's instance
//! slots is free, and ends at its deadline wherever the guest is (rule
//! C1); a failure is classified into a typed error for that call alone
//! (rule W3). What the guest answers comes back in the 0.2 types,
//! unchecked: the tool, hook and descriptor checks are the callers'.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Instance, InstancePre};
use wasmtime::{Engine, Store, UpdateDeadline};

use super::slots::{Slot, Slots, Taken};
use crate::bindings::v03::toolhost::plugin::types;
use crate::bindings::{Exports, ExtensionGuest, error_from_guest, output_from_guest};
use crate::classify_fault::classify;
use crate::cpu_time::metered;
use crate::deadline::{Alarm, DeadlineClock};
use crate::http::HttpGrant;
use crate::policy::GuestBounds;
use crate::state::{ResolvedPolicy, StoreState};
use toolhost_core::error::{SandboxFault, ToolError};
use toolhost_core::observe::{GuestCall, Observer, Stage};
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext};

/// Everything needed to run a plugin's exports, shared by its tools and
/// hooks.
pub(crate) struct PluginRuntime {
    pub(crate) name: Arc<str>,
    pub(crate) engine: Engine,
    pub(crate) clock: Arc<DeadlineClock>,
    pub(crate) pre: InstancePre<StoreState>,
    pub(crate) exports: Exports,
    pub(crate) policy: ResolvedPolicy,
    pub(crate) slots: Slots,
    /// What the outgoing requests of all its calls share.
    pub(crate) grant: Arc<HttpGrant>,
}

/// A store and an instance, ready for one export call, holding one of the
/// plugin's instance slots and the call's alarm until dropped.
pub(crate) struct Running<'a> {
    store: Store<StoreState>,
    instance: Instance,
    started: Instant,
    /// When the instance slot was had (rule X1: the queue wait ends here).
    slot_at: Instant,
    alarm: Alarm<'a>,
    _slot: Slot<'a>,
}

/// One of a plugin's instances serving a call, for the call's observer
/// (rule X1): counted in use from its making until its guest returns (or,
/// for a call dropped before that, until this is dropped). It holds the
/// call's times until the guest returns, when they are reported in one
/// [`GuestCall`], which also ends the instance's service; a call dropped
/// before that (its caller gone) still reports its wait for a slot and its
/// instantiation, and the end of its instance's service, as it drops.
struct InUse<'a> {
    observer: &'a dyn Observer,
    plugin: &'a str,
    /// When the call entered, had its slot and its instance; `None` once
    /// reported.
    times: Option<(Instant, Instant, Instant)>,
}

impl<'a> InUse<'a> {
    fn new(
        observer: &'a dyn Observer,
        plugin: &'a str,
        (entered, slot_at, instantiated): (Instant, Instant, Instant),
    ) -> Self {
        observer.instance(plugin, true);
        Self {
            observer,
            plugin,
            times: Some((entered, slot_at, instantiated)),
        }
    }

    /// Reports the call's stages, its guest having answered at `ended`
    /// with `memory` bytes of linear memory at most.
    fn guest_returned(&mut self, ended: Instant, memory: u64) {
        if let Some((entered, slot_at, instantiated)) = self.times.take() {
            self.observer.guest_call(
                self.plugin,
                &GuestCall::new(entered, slot_at, instantiated, ended, memory),
            );
        }
    }
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        if let Some((entered, slot_at, instantiated)) = self.times.take() {
            let o = self.observer;
            o.stage_ended(self.plugin, Stage::QueueWait, slot_at - entered, slot_at);
            o.stage_ended(
                self.plugin,
                Stage::Instantiate,
                instantiated - slot_at,
                instantiated,
            );
            o.instance(self.plugin, false);
        }
    }
}

/// Runs `work` until it finishes or `alarm` rings, whichever is first; on
/// the alarm the work's future is dropped where it stands (rule C1), and
/// `None` is returned.
fn race<'a, F: Future>(
    alarm: &'a mut Alarm<'_>,
    work: F,
) -> Race<F, impl Future<Output = ()> + 'a> {
    Race {
        work,
        rung: alarm.rung(),
    }
}

pin_project_lite::pin_project! {
    /// What [`race`] returns. A future of its own rather than an `async
    /// fn`: an `async fn` keeps its argument and the pinned copy it polls
    /// side by side, so every call's future would hold a guest's
    /// instantiation or call twice, kilobytes copied again at every move
    /// of the call's future (BENCHMARKS.md).
    struct Race<W, R> {
        #[pin]
        work: W,
        #[pin]
        rung: R,
    }
}

impl<W: Future, R: Future<Output = ()>> Future for Race<W, R> {
    type Output = Option<W::Output>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        // `work` is polled first, so work that is ready wins a tie.
        if let std::task::Poll::Ready(out) = this.work.poll(cx) {
            return std::task::Poll::Ready(Some(out));
        }
        this.rung.poll(cx).map(|()| None)
    }
}

impl PluginRuntime {
    /// A fresh store and instance whose guest is stopped at `deadline`, once
    /// one of the plugin's instance slots is free. `entered` is when the
    /// call reached the plugin: the deadline was computed then, before any
    /// queueing, and a call whose deadline passes while it waits for a slot
    /// never starts (rule C1). Only a `timed` call reads the clock when its
    /// slot is had (rule X1: a call without metrics pays for none). The
    /// instance reads `tenant`'s settings and secrets (`None`: the
    /// plugin's own; rule A2).
    pub(crate) async fn start(
        &self,
        entered: Instant,
        deadline: Instant,
        timed: bool,
        tenant: Option<&str>,
    ) -> Result<Running<'_>, ToolError> {
        let mut alarm = self.clock.alarm(deadline, entered);
        // A free slot is taken at once: the call waited for none, and no
        // clock is read for the wait. A slot had after the deadline does
        // not count (a deadline past as the call entered, or one that
        // passed at the very moment a slot was freed): a call whose
        // deadline passed before it got a slot never starts.
        // The plugin's own instances (its list, hooks, prompt) queue as
        // a tenant of their own.
        let (slot, slot_at) = match self.slots.take(tenant.unwrap_or("")) {
            Taken::Now(slot) => (Some(slot).filter(|_| deadline > entered), entered),
            Taken::Queued(queued) => match race(&mut alarm, queued).await {
                Some(slot) => (
                    Some(slot).filter(|_| !alarm.is_past()),
                    if timed { Instant::now() } else { entered },
                ),
                None => (None, entered),
            },
        };
        let Some(slot) = slot else {
            return Err(self.timeout(entered));
        };
        let state = StoreState::new(&self.grant, &self.policy, tenant, deadline)
            .map_err(|e| self.host_fault(format!("{e:#}")))?;
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        // The clock bumps the epoch at every deadline and every slice; each
        // bump makes the guest check the wall clock against its own.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|ctx| {
            Ok(if Instant::now() >= ctx.data().deadline {
                UpdateDeadline::Interrupt
            } else {
                // Yield so other tasks on this thread run, then carry on.
                UpdateDeadline::Yield(1)
            })
        });
        match race(&mut alarm, self.pre.instantiate_async(&mut store)).await {
            Some(Ok(instance)) => Ok(Running {
                store,
                instance,
                started: entered,
                slot_at,
                alarm,
                _slot: slot,
            }),
            Some(Err(e)) => Err(self.fail(&e, &store, entered)),
            None => Err(self.timeout(entered)),
        }
    }

    fn host_fault(&self, reason: impl Into<String>) -> ToolError {
        ToolError::Sandbox {
            plugin: self.name.to_string(),
            fault: SandboxFault::Host(reason.into()),
        }
    }

    /// The failure of a hook or system prompt asked of a plugin that is not
    /// an extension.
    fn not_extension(&self) -> ToolError {
        self.host_fault("the plugin is not an extension")
    }

    /// The timeout of a call that entered the plugin at `entered`.
    fn timeout(&self, entered: Instant) -> ToolError {
        ToolError::Timeout {
            after: entered.elapsed(),
            plugin: Some(self.name.to_string()),
        }
    }

    fn fail(
        &self,
        err: &wasmtime::Error,
        store: &Store<StoreState>,
        started: Instant,
    ) -> ToolError {
        let error = classify(err, store.data(), started);
        store.data().flush_output();
        error
    }

    /// The call's deadline: its own, or the policy's timeout if sooner.
    fn deadline(&self, entered: Instant, ctx_deadline: Option<tokio::time::Instant>) -> Instant {
        // A timeout past the clock's range (`Duration::MAX`) means no limit
        // in practice: a century.
        let policy = entered
            .checked_add(self.policy.granted.timeout)
            .unwrap_or(entered + Duration::from_secs(100 * 365 * 86_400));
        ctx_deadline.map_or(policy, |d| d.into_std().min(policy))
    }

    fn bounds(&self) -> &GuestBounds {
        &self.policy.granted.bounds
    }

    /// Lists the plugin's tools (at load), within the policy's timeout,
    /// reading the plugin's own settings: no tenant's changes its list.
    pub(crate) async fn list_tools(&self) -> Result<Vec<types::ToolDescriptor>, ToolError> {
        let mut run = self.own_instance().await?;
        let guest = match self.exports.tool(&mut run.store, &run.instance) {
            Ok(guest) => guest,
            Err(e) => return Err(self.fail(&e, &run.store, run.started)),
        };
        let result = race(&mut run.alarm, guest.list_tools(&mut run.store)).await;
        self.finish(run, result)
    }

    /// Calls one tool in a fresh instance.
    pub(crate) async fn call_tool(
        &self,
        name: &str,
        ctx: &CallContext,
        args: &Arguments,
    ) -> Result<ToolOutput, ToolError> {
        let entered = Instant::now();
        let deadline = self.deadline(entered, ctx.deadline());
        let timed = ctx.observer().is_some();
        let tenant = Some(ctx.tenant());
        let mut run = self.start(entered, deadline, timed, tenant).await?;
        // The guest starts now: one reading of the clock for the deadline
        // it is told and, with metrics, the stages' times.
        let instantiated = Instant::now();
        // With metrics or traces (rules X1, X2): the instance counted in
        // use until the call ends, its stages reported as the guest
        // returns.
        let mut observed = ctx.observer().map(|observer| {
            InUse::new(
                &**observer,
                &self.name,
                (entered, run.slot_at, instantiated),
            )
        });
        run.store
            .data_mut()
            .set_progress(ctx.progress_sink().cloned());
        let info = types::CallInfo {
            call_id: ctx.call_id().to_string(),
            attempt: ctx.attempt(),
            deadline_ms: Some(
                u64::try_from(deadline.saturating_duration_since(instantiated).as_millis())
                    .unwrap_or(u64::MAX),
            ),
        };
        // The guest's CPU time goes to the call's meter, if quotas count
        // it (rule A3).
        let result = race(
            &mut run.alarm,
            metered(
                ctx.cpu_meter(),
                self.exports
                    .call_tool(&mut run.store, &run.instance, name, args.as_str(), &info),
            ),
        )
        .await;
        if let Some(in_use) = &mut observed {
            let ended = Instant::now();
            let memory = run.store.data().limiter.high_water();
            in_use.guest_returned(ended, u64::try_from(memory).unwrap_or(u64::MAX));
            // Stopped at the plugin's own deadline, earlier than the
            // call's (interrupted, or cut off by the alarm): the pipeline
            // sees no deadline of its own pass.
            let own = ctx.deadline().is_none_or(|d| deadline < d.into_std());
            if !matches!(result, Some(Ok(_))) && own && ended >= deadline {
                in_use
                    .observer
                    .deadline_overshoot(&self.name, ended - deadline);
            }
        }
        let denials = run.store.data().network_denials();
        match self.finish(run, result)? {
            Ok(out) => {
                output_from_guest(out, self.policy.granted.max_output_bytes).map_err(|fault| {
                    ToolError::Sandbox {
                        plugin: self.name.to_string(),
                        fault,
                    }
                })
            }
            Err(e) => {
                let error = error_from_guest(e, &self.name, self.bounds().max_message_bytes)
                    .map_err(|fault| ToolError::Sandbox {
                        plugin: self.name.to_string(),
                        fault,
                    })?;
                Err(with_denials(error, &denials))
            }
        }
    }

    /// A fresh instance for a call of the plugin's own (its tool list, a
    /// hook, its system prompt), reading the plugin's own settings, stopped
    /// at the policy's timeout (counted from now, before any queueing).
    async fn own_instance(&self) -> Result<Running<'_>, ToolError> {
        let entered = Instant::now();
        self.start(entered, self.deadline(entered, None), false, None)
            .await
    }

    /// Ends a hook's call as [`finish`](Self::finish) does; a plugin without
    /// the hook's export (`Some(None)`) is not an extension.
    fn finish_hook<R>(
        &self,
        run: Running<'_>,
        result: Option<Option<wasmtime::Result<R>>>,
    ) -> Result<R, ToolError> {
        match result {
            Some(None) => Err(self.not_extension()),
            Some(Some(r)) => self.finish(run, Some(r)),
            None => self.finish(run, None),
        }
    }

    /// A fresh instance and its `extension` exports, stopped at the policy's
    /// timeout (counted from now, before any queueing).
    async fn extension_instance(&self) -> Result<(Running<'_>, ExtensionGuest), ToolError> {
        let mut run = self.own_instance().await?;
        let guest = self
            .exports
            .extension(&mut run.store, &run.instance)
            .ok_or_else(|| self.not_extension())?;
        match guest {
            Ok(guest) => Ok((run, guest)),
            Err(e) => Err(self.fail(&e, &run.store, run.started)),
        }
    }

    /// Runs the extension's `system-prompt` in a fresh instance.
    pub(crate) async fn system_prompt(&self) -> Result<Option<String>, ToolError> {
        let (mut run, guest) = self.extension_instance().await?;
        let result = race(&mut run.alarm, guest.system_prompt(&mut run.store)).await;
        self.finish(run, result)
    }

    /// Runs the extension's `before-call` in a fresh instance, as a 0.2
    /// decision, unchecked.
    pub(crate) async fn before_call(
        &self,
        call: &types::HookCall,
    ) -> Result<types::BeforeDecision, ToolError> {
        let mut run = self.own_instance().await?;
        let before = self
            .exports
            .before_call(&mut run.store, &run.instance, call);
        let result = race(&mut run.alarm, before).await;
        self.finish_hook(run, result)
    }

    /// Runs the extension's `after-call` in a fresh instance, as a 0.2
    /// decision, unchecked.
    pub(crate) async fn after_call(
        &self,
        call: &types::HookCall,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> Result<types::AfterDecision, ToolError> {
        let mut run = self.own_instance().await?;
        let after = self
            .exports
            .after_call(&mut run.store, &run.instance, call, outcome);
        let result = race(&mut run.alarm, after).await;
        self.finish_hook(run, result)
    }

    /// Ends a call: logs what the guest wrote and classifies a failure; a
    /// call cut off by its alarm (`None`) is a timeout. The store is dropped
    /// here, with everything the call held.
    fn finish<R>(
        &self,
        run: Running<'_>,
        result: Option<wasmtime::Result<R>>,
    ) -> Result<R, ToolError> {
        match result {
            Some(Ok(r)) => {
                run.store.data().flush_output();
                Ok(r)
            }
            Some(Err(e)) => Err(self.fail(&e, &run.store, run.started)),
            None => {
                run.store.data().flush_output();
                Err(self.timeout(run.started))
            }
        }
    }
}

/// Appends the host's reasons for refusing network requests to a tool's own
/// failure message, so the caller sees why, not only the guest's summary.
fn with_denials(err: ToolError, denials: &[String]) -> ToolError {
    match err {
        ToolError::Failed { message, retryable } if !denials.is_empty() => ToolError::Failed {
            message: format!("{message} (host refused: {})", denials.join("; ")),
            retryable,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use toolhost_core::testing::DropFlag;

    use super::*;

    fn clock() -> (Engine, DeadlineClock) {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = Engine::new(&config).unwrap();
        let clock = DeadlineClock::start(&engine).unwrap();
        (engine, clock)
    }

    #[tokio::test]
    async fn c1_work_ready_as_the_alarm_rings_wins_the_tie() {
        let (_engine, clock) = clock();
        let mut alarm = clock.alarm(Instant::now() - Duration::from_millis(5), Instant::now());
        assert_eq!(race(&mut alarm, async { 7 }).await, Some(7));
    }

    #[tokio::test]
    async fn c1_work_still_waiting_at_the_deadline_is_dropped_where_it_stands() {
        let (_engine, clock) = clock();
        let dropped = Arc::new(AtomicBool::new(false));
        let guard = DropFlag(dropped.clone());
        let mut alarm = clock.alarm(Instant::now() + Duration::from_millis(30), Instant::now());
        let work = async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        };
        // A bound far looser than expected, only to catch a hang.
        let raced = tokio::time::timeout(Duration::from_secs(10), race(&mut alarm, work)).await;
        assert_eq!(raced, Ok(None), "the alarm ended the race");
        assert!(dropped.load(Ordering::SeqCst), "the work was dropped");
        assert!(alarm.is_past());
    }
}
