//! A loaded plugin: its pre-linked component, its policy, and the tools,
//! hooks and prompt it contributes. Every call runs in a fresh instance in a
//! fresh store (rule W4), so no state survives between calls.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::{Semaphore, SemaphorePermit};
use wasmtime::component::{Instance, InstancePre};
use wasmtime::{Engine, Store, UpdateDeadline};

use super::bindings::v02::toolhost::plugin::types;
use super::bindings::{error_from_guest, outcome_to_guest, output_from_guest, v01, v02};
use super::deadline::{Alarm, DeadlineClock};
use super::error::{SchemaKind, ToolListError};
use super::classify_fault::classify;
use super::inspect::{PluginWorld, WitVersion};
use super::lazy::LazyRuntime;
use super::policy::{GuestBounds, HookPower};
use super::state::{ResolvedPolicy, StoreState};
use toolhost_core::error::{Rejection, SandboxFault, ToolError};
use toolhost_core::extension::Extension;
use toolhost_core::hook::{AfterDecision, Decision};
use toolhost_core::output::ToolOutput;
use toolhost_core::hook::{AfterHook, BeforeHook, CallInfo, HookScope};
use toolhost_core::tool::{Arguments, CallContext, Tool, ToolSpec};
use toolhost_core::{Cause, CompiledSchema};

/// Everything needed to run a plugin's exports, shared by its tools and
/// hooks.
pub(crate) struct PluginRuntime {
    pub(crate) name: Arc<str>,
    pub(crate) engine: Engine,
    pub(crate) clock: Arc<DeadlineClock>,
    pub(crate) pre: InstancePre<StoreState>,
    pub(crate) exports: Exports,
    pub(crate) policy: ResolvedPolicy,
    pub(crate) slots: Semaphore,
    /// Outgoing requests in flight, across all instances.
    pub(crate) requests: Arc<Semaphore>,
}

type Tool01 = v01::exports::toolhost::plugin::tool::GuestIndices;
type Ext01 = v01::exports::toolhost::plugin::extension::GuestIndices;
type Tool02 = v02::exports::toolhost::plugin::tool::GuestIndices;
type Ext02 = v02::exports::toolhost::plugin::extension::GuestIndices;

/// Where a plugin's exports are, in the bindings of the interface version
/// it was built for (rule W1); the extension's only for an extension.
pub(crate) enum Exports {
    V01 { tool: Tool01, ext: Option<Ext01> },
    V02 { tool: Tool02, ext: Option<Ext02> },
}

impl Exports {
    /// Finds the exports of a component of `world`, built for `wit`.
    pub(crate) fn new(
        pre: &InstancePre<StoreState>,
        world: PluginWorld,
        wit: WitVersion,
    ) -> wasmtime::Result<Self> {
        let extension = world == PluginWorld::ExtensionPlugin;
        Ok(match wit {
            WitVersion::V0_1 => Self::V01 {
                tool: Tool01::new(pre)?,
                ext: extension.then(|| Ext01::new(pre)).transpose()?,
            },
            WitVersion::V0_2 => Self::V02 {
                tool: Tool02::new(pre)?,
                ext: extension.then(|| Ext02::new(pre)).transpose()?,
            },
        })
    }
}

/// A plugin's `tool` exports in one instance.
enum ToolGuest {
    V01(v01::exports::toolhost::plugin::tool::Guest),
    V02(v02::exports::toolhost::plugin::tool::Guest),
}

/// A plugin's `extension` exports in one instance.
enum ExtGuest {
    V01(v01::exports::toolhost::plugin::extension::Guest),
    V02(v02::exports::toolhost::plugin::extension::Guest),
}

/// A store and an instance, ready for one export call, holding one of the
/// plugin's instance slots and the call's alarm until dropped.
pub(crate) struct Running<'a> {
    store: Store<StoreState>,
    instance: Instance,
    started: Instant,
    alarm: Alarm,
    _slot: SemaphorePermit<'a>,
}

/// Runs `work` until it finishes or `alarm` rings, whichever is first; on
/// the alarm the work's future is dropped where it stands (rule C1), and
/// `None` is returned.
async fn race<F: Future>(alarm: &mut Alarm, work: F) -> Option<F::Output> {
    let work = std::pin::pin!(work);
    let rung = std::pin::pin!(alarm.rung());
    // `work` is polled first, so work that is ready wins a tie.
    match futures::future::select(work, rung).await {
        futures::future::Either::Left((out, _)) => Some(out),
        futures::future::Either::Right(((), _)) => None,
    }
}

impl PluginRuntime {
    /// A fresh store and instance whose guest is stopped at `deadline`, once
    /// one of the plugin's instance slots is free. `entered` is when the
    /// call reached the plugin: the deadline was computed then, before any
    /// queueing, and a call whose deadline passes while it waits for a slot
    /// never starts (rule C1).
    pub(crate) async fn start(
        &self,
        entered: Instant,
        deadline: Instant,
    ) -> Result<Running<'_>, ToolError> {
        let mut alarm = self.clock.arm(deadline);
        let slot = match race(&mut alarm, self.slots.acquire()).await {
            // A slot freed at the very moment the deadline passed does not
            // count: a call whose deadline passed while queued never starts.
            Some(Ok(_)) if alarm.is_past() => return Err(self.timeout(entered)),
            Some(Ok(slot)) => slot,
            Some(Err(_closed)) => return Err(self.host_fault("the plugin is unloaded")),
            None => return Err(self.timeout(entered)),
        };
        let state = StoreState::new(
            self.name.clone(),
            &self.policy,
            deadline,
            self.requests.clone(),
        )
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
            .checked_add(self.policy.policy.timeout)
            .unwrap_or(entered + Duration::from_secs(100 * 365 * 86_400));
        ctx_deadline.map_or(policy, |d| d.into_std().min(policy))
    }

    fn bounds(&self) -> &GuestBounds {
        &self.policy.policy.bounds
    }

    /// Lists the plugin's tools (at load), within the policy's timeout.
    pub(crate) async fn list_tools(&self) -> Result<Vec<types::ToolDescriptor>, ToolError> {
        let entered = Instant::now();
        let (mut run, guest) = self
            .tool_instance(entered, self.deadline(entered, None))
            .await?;
        let store = &mut run.store;
        let result = match guest {
            ToolGuest::V01(g) => {
                race(&mut run.alarm, async {
                    let list = g.call_list_tools(&mut *store).await?;
                    Ok(list.into_iter().map(v01::upgrade_descriptor).collect())
                })
                .await
            }
            ToolGuest::V02(g) => race(&mut run.alarm, g.call_list_tools(store)).await,
        };
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
        let (mut run, guest) = self.tool_instance(entered, deadline).await?;
        run.store
            .data_mut()
            .set_progress(ctx.progress_sink().cloned());
        let info = types::CallInfo {
            call_id: ctx.call_id().to_string(),
            attempt: ctx.attempt(),
            deadline_ms: Some(
                u64::try_from(
                    deadline
                        .saturating_duration_since(Instant::now())
                        .as_millis(),
                )
                .unwrap_or(u64::MAX),
            ),
        };
        let store = &mut run.store;
        let result = match guest {
            ToolGuest::V01(g) => {
                race(&mut run.alarm, async {
                    let info = v01::call_info(&info);
                    let r = g
                        .call_call_tool(&mut *store, name, args.as_str(), &info)
                        .await?;
                    Ok(r.map(v01::upgrade_output).map_err(v01::upgrade_error))
                })
                .await
            }
            ToolGuest::V02(g) => {
                race(
                    &mut run.alarm,
                    g.call_call_tool(store, name, args.as_str(), &info),
                )
                .await
            }
        };
        let denials = run.store.data().network_denials();
        match self.finish(run, result)? {
            Ok(out) => {
                output_from_guest(out, self.policy.policy.max_output_bytes).map_err(|fault| {
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

    /// A fresh instance and its `tool` exports.
    async fn tool_instance(
        &self,
        entered: Instant,
        deadline: Instant,
    ) -> Result<(Running<'_>, ToolGuest), ToolError> {
        let mut run = self.start(entered, deadline).await?;
        let guest = match &self.exports {
            Exports::V01 { tool, .. } => {
                tool.load(&mut run.store, &run.instance).map(ToolGuest::V01)
            }
            Exports::V02 { tool, .. } => {
                tool.load(&mut run.store, &run.instance).map(ToolGuest::V02)
            }
        };
        match guest {
            Ok(guest) => Ok((run, guest)),
            Err(e) => Err(self.fail(&e, &run.store, run.started)),
        }
    }

    /// A fresh instance and its `extension` exports, stopped at the policy's
    /// timeout (counted from now, before any queueing).
    async fn extension_instance(&self) -> Result<(Running<'_>, ExtGuest), ToolError> {
        let not_extension = || self.host_fault("the plugin is not an extension");
        let entered = Instant::now();
        let mut run = self.start(entered, self.deadline(entered, None)).await?;
        let guest = match &self.exports {
            Exports::V01 { ext, .. } => ext
                .as_ref()
                .ok_or_else(not_extension)?
                .load(&mut run.store, &run.instance)
                .map(ExtGuest::V01),
            Exports::V02 { ext, .. } => ext
                .as_ref()
                .ok_or_else(not_extension)?
                .load(&mut run.store, &run.instance)
                .map(ExtGuest::V02),
        };
        match guest {
            Ok(guest) => Ok((run, guest)),
            Err(e) => Err(self.fail(&e, &run.store, run.started)),
        }
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

/// One of a plugin's tools.
pub(crate) struct WasmTool {
    spec: ToolSpec,
    schema: CompiledSchema,
    runtime: Arc<LazyRuntime>,
}

impl WasmTool {
    pub(crate) fn new(spec: ToolSpec, schema: CompiledSchema, runtime: Arc<LazyRuntime>) -> Self {
        Self {
            spec,
            schema,
            runtime,
        }
    }
}

#[async_trait]
impl Tool for WasmTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn compiled_schema(&self) -> Option<CompiledSchema> {
        Some(self.schema.clone())
    }

    async fn call(&self, ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError> {
        let runtime = self.runtime.get().await?;
        runtime.call_tool(&self.spec.name, &ctx, &args).await
    }
}

/// A loaded plugin registered as an extension: its tools, and for an
/// extension-plugin its prompt and hooks (rule E4).
pub(crate) struct WasmExtension {
    pub(crate) runtime: Arc<LazyRuntime>,
    pub(crate) world: PluginWorld,
    pub(crate) specs: Vec<(ToolSpec, CompiledSchema)>,
}

impl WasmExtension {
    fn is_extension(&self) -> bool {
        self.world == PluginWorld::ExtensionPlugin
    }
}

#[async_trait]
impl Extension for WasmExtension {
    fn name(&self) -> &str {
        &self.runtime.name
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.specs
            .iter()
            .map(|(spec, schema)| {
                Arc::new(WasmTool::new(
                    spec.clone(),
                    schema.clone(),
                    self.runtime.clone(),
                )) as Arc<dyn Tool>
            })
            .collect()
    }

    async fn system_prompt(&self) -> Option<String> {
        if !self.is_extension() {
            return None;
        }
        let lazy = &self.runtime;
        let result = async {
            let rt = lazy.get().await?;
            let (mut run, guest) = rt.extension_instance().await?;
            let store = &mut run.store;
            let result = match guest {
                ExtGuest::V01(g) => race(&mut run.alarm, g.call_system_prompt(store)).await,
                ExtGuest::V02(g) => race(&mut run.alarm, g.call_system_prompt(store)).await,
            };
            rt.finish(run, result)?
                .map(|text| lazy.message("the system prompt", text))
                .transpose()
        }
        .await;
        result.unwrap_or_else(|e| {
            tracing::warn!(plugin = %lazy.name, error = %e, "the extension's system prompt failed; leaving it out");
            None
        })
    }

    fn before_hooks(&self) -> Vec<(HookScope, Arc<dyn BeforeHook>)> {
        if !self.is_extension() {
            return Vec::new();
        }
        vec![(HookScope::Global, Arc::new(WasmHook(self.runtime.clone())))]
    }

    fn after_hooks(&self) -> Vec<(HookScope, Arc<dyn AfterHook>)> {
        if !self.is_extension() {
            return Vec::new();
        }
        vec![(HookScope::Global, Arc::new(WasmHook(self.runtime.clone())))]
    }
}

/// An extension-plugin's before and after hooks. What the guest decides is
/// checked here, outside the sandbox: a rewrite or a replacement from a
/// plugin whose policy grants only veto refuses the call (fail closed), and
/// everything the guest hands back is bounded like a tool's result.
struct WasmHook(Arc<LazyRuntime>);

fn hook_call(call: &CallInfo) -> types::HookCall {
    types::HookCall {
        tool: call.tool().to_owned(),
        arguments: call.arguments.as_str().to_owned(),
        call_id: call.call_id.to_string(),
    }
}

impl WasmHook {
    fn may_rewrite(&self) -> bool {
        self.0.policy.hooks == HookPower::Rewrite
    }

    /// Why a change the guest asked for is refused under a veto-only policy.
    fn forbidden(&self, what: &str) -> String {
        format!(
            "extension `{}` tried to {what}, and its policy lets its hooks only observe, reject and ask (grant `hooks = \"rewrite\"` to allow it)",
            self.0.name
        )
    }

    /// Runs the guest's `before-call`, as a 0.2 decision.
    async fn run_before(&self, call: &CallInfo) -> Result<types::BeforeDecision, ToolError> {
        let rt = self.0.get().await?;
        let (mut run, guest) = rt.extension_instance().await?;
        let store = &mut run.store;
        let hook_call = hook_call(call);
        let result = match guest {
            ExtGuest::V01(g) => {
                race(&mut run.alarm, async {
                    let r = g
                        .call_before_call(&mut *store, &v01::hook_call(&hook_call))
                        .await?;
                    Ok(match r {
                        Ok(()) => types::BeforeDecision::Allow,
                        Err(reason) => types::BeforeDecision::Reject(reason),
                    })
                })
                .await
            }
            ExtGuest::V02(g) => race(&mut run.alarm, g.call_before_call(store, &hook_call)).await,
        };
        rt.finish(run, result)
    }

    /// Runs the guest's `after-call`, as a 0.2 decision.
    async fn run_after(
        &self,
        call: &CallInfo,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> Result<types::AfterDecision, ToolError> {
        let rt = self.0.get().await?;
        let (mut run, guest) = rt.extension_instance().await?;
        let store = &mut run.store;
        let hook_call = hook_call(call);
        let result = match guest {
            ExtGuest::V01(g) => {
                race(&mut run.alarm, async {
                    let outcome = v01::outcome_to_guest(outcome);
                    g.call_after_call(&mut *store, &v01::hook_call(&hook_call), &outcome)
                        .await?;
                    Ok(types::AfterDecision::Keep)
                })
                .await
            }
            ExtGuest::V02(g) => {
                let outcome = outcome_to_guest(outcome);
                race(
                    &mut run.alarm,
                    g.call_after_call(store, &hook_call, &outcome),
                )
                .await
            }
        };
        rt.finish(run, result)
    }

    /// The host's decision for the guest's, checked against the policy and
    /// the bounds.
    fn before_decision(&self, d: types::BeforeDecision) -> Result<Decision, ToolError> {
        let rt = &self.0;
        Ok(match d {
            types::BeforeDecision::Allow => Decision::Allow,
            types::BeforeDecision::Reject(reason) => {
                Decision::reject(rt.message("a rejection reason", reason)?)
            }
            types::BeforeDecision::Ask(reason) => {
                Decision::ask(rt.message("an approval reason", reason)?)
            }
            types::BeforeDecision::Rewrite(_) if !self.may_rewrite() => {
                Decision::reject(self.forbidden("rewrite the arguments"))
            }
            types::BeforeDecision::Rewrite(text) => match Arguments::parse(&text) {
                Ok(args) if args.as_value().is_object() => Decision::Rewrite(args),
                Ok(_) => Decision::reject(format!(
                    "extension `{}` rewrote the arguments into JSON that is not an object",
                    rt.name
                )),
                Err(e) => Decision::reject(format!(
                    "extension `{}` rewrote the arguments into something that is not acceptable: {e}",
                    rt.name
                )),
            },
        })
    }

    /// The host's decision for the guest's, checked against the policy and
    /// the bounds.
    fn after_decision(&self, d: types::AfterDecision) -> Result<AfterDecision, ToolError> {
        let rt = &self.0;
        Ok(match d {
            types::AfterDecision::Keep => AfterDecision::Keep,
            types::AfterDecision::Replace(_) if !self.may_rewrite() => {
                AfterDecision::Replace(Err(ToolError::failed(self.forbidden("replace the result"))))
            }
            types::AfterDecision::Replace(types::CallOutcome::Err(message)) => {
                AfterDecision::Replace(Err(ToolError::failed(
                    rt.message("a replacement error", message)?,
                )))
            }
            types::AfterDecision::Replace(types::CallOutcome::Ok(out)) => {
                let out = output_from_guest(out, rt.policy.max_output_bytes).map_err(|fault| {
                    ToolError::Sandbox {
                        plugin: rt.name.to_string(),
                        fault,
                    }
                })?;
                AfterDecision::Replace(Ok(out))
            }
        })
    }
}

#[async_trait]
impl BeforeHook for WasmHook {
    fn name(&self) -> &str {
        &self.0.name
    }

    /// Fails closed: if the hook traps, overruns its time, cannot run, or
    /// hands back what the host refuses, the call is rejected, and the
    /// reason names the extension.
    async fn before(&self, call: &CallInfo) -> Decision {
        let decision = self
            .run_before(call)
            .await
            .and_then(|d| self.before_decision(d));
        decision.unwrap_or_else(|fault| {
            Decision::Reject(Rejection::new(format!(
                "extension `{}` failed, so the call is refused: {fault}",
                self.0.name
            )))
        })
    }
}

#[async_trait]
impl AfterHook for WasmHook {
    fn name(&self) -> &str {
        &self.0.name
    }

    /// A hook that fails is logged. For a veto-only plugin the outcome stays
    /// as it was: it could only observe. For a plugin granted rewriting the
    /// call fails instead (fail closed), since the hook may have been there
    /// to redact the result. A replacement the host refuses fails the call.
    async fn after(
        &self,
        call: &CallInfo,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> AfterDecision {
        match self.run_after(call, outcome).await {
            Ok(d) => self.after_decision(d).unwrap_or_else(|e| {
                AfterDecision::Replace(Err(ToolError::failed(format!(
                    "extension `{}` replaced the result with one the host refuses: {e}",
                    self.0.name
                ))))
            }),
            Err(e) => {
                tracing::warn!(plugin = %self.0.name, tool = call.tool(), error = %e, "an extension's after hook failed");
                if self.may_rewrite() {
                    AfterDecision::Replace(Err(ToolError::failed(format!(
                        "extension `{}` failed after the call, so its result is withheld: {e}",
                        self.0.name
                    ))))
                } else {
                    AfterDecision::Keep
                }
            }
        }
    }
}

/// Converts the guest's descriptors, checking each: within `bounds` (count,
/// description and schema sizes), a valid name, a schema that is JSON and
/// compiles, no duplicates.
pub(crate) fn specs_from_descriptors(
    descriptors: Vec<types::ToolDescriptor>,
    bounds: &GuestBounds,
) -> Result<Vec<(ToolSpec, CompiledSchema)>, ToolListError> {
    if descriptors.len() > bounds.max_tools {
        return Err(ToolListError::TooMany {
            count: descriptors.len(),
            limit: bounds.max_tools,
        });
    }
    let mut seen = std::collections::HashSet::new();
    descriptors
        .into_iter()
        .map(|d| {
            ToolSpec::validate_name(&d.name).map_err(ToolListError::Name)?;
            if d.description.len() > bounds.max_description_bytes {
                return Err(ToolListError::DescriptionTooLong {
                    tool: d.name,
                    len: d.description.len(),
                    limit: bounds.max_description_bytes,
                });
            }
            if !seen.insert(d.name.clone()) {
                return Err(ToolListError::Duplicate { tool: d.name });
            }
            let (parameters, schema) = schema_from_guest(
                &d.name,
                &d.parameters_schema,
                SchemaKind::Parameters,
                bounds,
            )?;
            let output_schema = match &d.output_schema {
                Some(text) => Some(schema_from_guest(&d.name, text, SchemaKind::Output, bounds)?.0),
                None => None,
            };
            let spec = ToolSpec {
                name: d.name,
                description: d.description,
                parameters,
                concurrency_safe: d.concurrency_safe,
                idempotent: d.idempotent,
                output_schema,
            };
            Ok((spec, schema))
        })
        .collect()
}

/// Reads one of a tool's schemas: within the size bound, JSON, and a JSON
/// Schema that compiles.
fn schema_from_guest(
    tool: &str,
    text: &str,
    kind: SchemaKind,
    bounds: &GuestBounds,
) -> Result<(serde_json::Value, CompiledSchema), ToolListError> {
    if text.len() > bounds.max_schema_bytes {
        return Err(ToolListError::SchemaTooLong {
            tool: tool.to_owned(),
            schema: kind,
            len: text.len(),
            limit: bounds.max_schema_bytes,
        });
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ToolListError::SchemaNotJson {
            tool: tool.to_owned(),
            schema: kind,
            source: Cause::new(e),
        })?;
    let compiled =
        CompiledSchema::compile(&value).map_err(|source| ToolListError::SchemaInvalid {
            tool: tool.to_owned(),
            schema: kind,
            source,
        })?;
    Ok((value, compiled))
}
