//! [`ToolHost`]: the registry, the pipeline and the extensions, behind one
//! cheaply cloneable handle.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use futures::FutureExt as _;

use crate::artifact::{ArtifactReadTool, ArtifactStore, OffloadConfig, Offloader};
use crate::error::{RegistryError, ToolError};
use crate::extension::{Extension, ExtensionContext};
use crate::hook::{AfterHook, BeforeHook, HookScope};
use crate::lifecycle::LifecycleHook;
use crate::metrics::Metrics;
use crate::output::ToolOutput;
use crate::pipeline::{self, Middleware, Owned, Pipeline, Stack, drop_owned};
use crate::quota::Quotas;
use crate::registry::Registry;
use crate::rules::{Explanation, RuleSet};
use crate::secret::SecretSet;
use crate::tool::approval::{Approvals, Approver};
use crate::tool::{Arguments, CallContext, Tool, ToolSpec};
use crate::traces::Traces;

/// The host: a live tool registry, the hooks and middleware every call goes
/// through, and the extensions that contributed them.
///
/// Clone it freely: clones share everything. All methods are safe to call
/// from many tasks at once.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use toolhost_core::{Arguments, CallContext, FnTool, ToolHost, ToolOutput, ToolSpec};
/// use toolhost_core::middleware::Timeout;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let host = ToolHost::builder()
///     .validate_arguments(true)
///     .middleware(Timeout::new(Duration::from_secs(5)))
///     .build();
/// host.register_tool(FnTool::arc(
///     ToolSpec::new("greet", "Greets someone", json!({
///         "type": "object",
///         "properties": {"name": {"type": "string"}},
///         "required": ["name"]
///     })),
///     |_ctx, args| async move {
///         let name = args.to_value()["name"].as_str().unwrap_or_default().to_owned();
///         Ok(ToolOutput::text(format!("Hello, {name}!")))
///     },
/// )).unwrap();
/// let out = host
///     .invoke_tool(CallContext::new(), "greet", Arguments::parse(r#"{"name":"Ada"}"#).unwrap())
///     .await
///     .unwrap();
/// assert_eq!(out.llm_text(), "Hello, Ada!");
/// # });
/// ```
#[derive(Clone)]
pub struct ToolHost {
    inner: Arc<HostInner>,
}

struct HostInner {
    registry: Arc<Registry>,
    layers: ArcSwap<Layers>,
    /// Held while the layers are replaced, so that two updates made at once
    /// both land (each copies the layers the other wrote).
    updating: Mutex<()>,
    validate: bool,
    offloader: Option<Offloader>,
    approvals: Approvals,
    call_timeout: Option<Duration>,
    rules: RuleSet,
    secrets: SecretSet,
    metrics: Option<Metrics>,
    quotas: Option<Arc<Quotas>>,
    traces: Option<Traces>,
    extensions: Mutex<Extensions>,
}

/// What every call and every agent run goes through: the call pipeline's
/// hooks and middleware, and the agent's lifecycle hooks. Both are replaced
/// together, copy on write, so an extension's contributions
/// appear and disappear at once, and a call or run in flight keeps the
/// snapshot it started with.
#[derive(Default, Clone)]
struct Layers {
    calls: Arc<Stack>,
    lifecycle: Arc<[Owned<dyn LifecycleHook>]>,
}

/// Registered extensions by name, in registration order.
type Extensions = Vec<(Arc<str>, Arc<dyn Extension>)>;

/// Configures a [`ToolHost`].
#[derive(Default)]
pub struct HostBuilder {
    validate: bool,
    stack: Stack,
    lifecycle: Vec<Owned<dyn LifecycleHook>>,
    offload: Option<(Arc<dyn ArtifactStore>, OffloadConfig)>,
    approvals: Approvals,
    call_timeout: Option<Duration>,
    rules: RuleSet,
    secrets: SecretSet,
    metrics: Option<Metrics>,
    quotas: Option<Arc<Quotas>>,
    traces: Option<Traces>,
}

impl HostBuilder {
    /// Admits every call through `quotas` (rule A3): the tenant's and the
    /// tool's plugin's calls per minute, calls in flight and guest CPU time
    /// per minute. A call over a quota fails at once with
    /// [`ToolError::OverQuota`], before any hook or the tool runs. Give a
    /// host that replaces this one the same handle, so usage carries on.
    /// Without quotas, the default, nothing is counted.
    pub fn quotas(mut self, quotas: Arc<Quotas>) -> Self {
        self.quotas = (!quotas.is_unlimited()).then_some(quotas);
        self
    }

    /// Counts and times every call in `metrics` (rule X1): by tool, plugin,
    /// outcome and tenant, whole and by stage. Without metrics, the
    /// default, nothing is recorded and no clock is read for them. Give a
    /// host that replaces this one the same handle, so counts carry on.
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Starts an OpenTelemetry span for every call in `traces` (rule X2),
    /// with a child span for each of its stages and hooks, joined to the
    /// trace context the call came with. Without traces, the default,
    /// nothing is made per call and no clock is read for them.
    pub fn traces(mut self, traces: Traces) -> Self {
        self.traces = Some(traces);
        self
    }

    /// Redacts `secrets` from every call's result, error and progress
    /// messages as they leave the tool (rule O2), so middleware, after
    /// hooks, artifacts and callers never see them in the clear. Without
    /// secrets nothing is scanned.
    pub fn secrets(mut self, secrets: SecretSet) -> Self {
        self.secrets = secrets;
        self
    }

    /// Judges every call by `rules` after its before hooks, on the final
    /// arguments (rule O4): a denial refuses the call naming the rule, an
    /// ask goes to the approver with any hook's. Without rules every call
    /// is allowed, as before.
    pub fn rules(mut self, rules: RuleSet) -> Self {
        self.rules = rules;
        self
    }

    /// Gives every call a deadline `timeout` after it enters the pipeline
    /// (rule C1): argument validation, before hooks, the approval wait, the
    /// middleware and the tool all end by then, and the call fails with
    /// [`ToolError::Timeout`] (or, waiting for an approval, is refused
    /// saying that the deadline ended the wait). An earlier deadline the
    /// caller set is kept. Unlike [`Timeout`](crate::middleware::Timeout)
    /// middleware, which starts when the middleware chain does, this
    /// covers everything before the tool too.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// Validates every call's arguments against the tool's schema before
    /// hooks run (rule T2). Off by default. Validation never replaces
    /// authorization.
    pub fn validate_arguments(mut self, on: bool) -> Self {
        self.validate = on;
        self
    }

    /// Asks `approver` whether a call may run when a before hook asks for a
    /// person's approval (rule P7) and the call carries no approver of its
    /// own ([`CallContext::with_approver`]). Without one, every such call is
    /// denied ([`DenyAll`]).
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approvals.approver = approver;
        self
    }

    /// How long an approval may take before it counts as a denial; the
    /// default is [`DEFAULT_APPROVAL_TIMEOUT`](crate::DEFAULT_APPROVAL_TIMEOUT).
    /// A call's own deadline, if sooner, bounds it too.
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approvals.timeout = timeout;
        self
    }

    /// Appends a middleware; the first added is the outermost.
    pub fn middleware(mut self, m: impl Middleware + 'static) -> Self {
        self.stack.middleware.push(owned(Arc::new(m), None));
        self
    }

    /// Adds a before hook.
    pub fn before_hook(mut self, scope: HookScope, hook: impl BeforeHook + 'static) -> Self {
        self.stack.add_before(scope, owned(Arc::new(hook), None));
        self
    }

    /// Adds an after hook.
    pub fn after_hook(mut self, scope: HookScope, hook: impl AfterHook + 'static) -> Self {
        self.stack.add_after(scope, owned(Arc::new(hook), None));
        self
    }

    /// Adds a lifecycle hook.
    pub fn lifecycle_hook(mut self, hook: impl LifecycleHook + 'static) -> Self {
        self.lifecycle.push(owned(Arc::new(hook), None));
        self
    }

    /// Offloads large outputs into `store` (rule T5) and registers the
    /// `artifact_read` tool.
    pub fn artifact_offload(
        mut self,
        store: Arc<dyn ArtifactStore>,
        config: OffloadConfig,
    ) -> Self {
        self.offload = Some((store, config));
        self
    }

    /// Builds the host.
    pub fn build(self) -> ToolHost {
        // A traced call's counts are made by the traces' finisher: the
        // metrics make them before they are read.
        if let (Some(metrics), Some(traces)) = (&self.metrics, &self.traces) {
            metrics.defer_to(traces.deferred());
        }
        let registry = Arc::new(Registry::redacting(self.secrets.clone()));
        let offloader = self.offload.map(|(store, config)| {
            registry
                .register(Arc::new(ArtifactReadTool::new(store.clone())))
                .expect("an empty registry accepts artifact_read");
            Offloader { store, config }
        });
        ToolHost {
            inner: Arc::new(HostInner {
                registry,
                layers: ArcSwap::from_pointee(Layers {
                    calls: Arc::new(self.stack),
                    lifecycle: self.lifecycle.into(),
                }),
                updating: Mutex::new(()),
                validate: self.validate,
                offloader,
                approvals: self.approvals,
                call_timeout: self.call_timeout,
                rules: self.rules,
                secrets: self.secrets,
                metrics: self.metrics,
                quotas: self.quotas,
                traces: self.traces,
                extensions: Mutex::new(Vec::new()),
            }),
        }
    }
}

fn owned<T: ?Sized>(item: Arc<T>, owner: Option<Arc<str>>) -> Owned<T> {
    Owned { item, owner }
}

impl Default for ToolHost {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolHost {
    /// A host with no tools, hooks or middleware, and validation off.
    pub fn new() -> Self {
        HostBuilder::default().build()
    }

    /// Starts configuring a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// Runs one call through the pipeline (rule P1): validation, before
    /// hooks, middleware, the tool, after hooks, offload. This is the only
    /// way a tool runs; a panic anywhere in it fails this call only.
    pub async fn invoke_tool(
        &self,
        ctx: CallContext,
        name: &str,
        args: Arguments,
    ) -> Result<ToolOutput, ToolError> {
        let stack = self.stack();
        let pipeline = Pipeline {
            registry: &self.inner.registry,
            stack: &stack,
            validate: self.inner.validate,
            offloader: self.inner.offloader.as_ref(),
            approvals: &self.inner.approvals,
            call_timeout: self.inner.call_timeout,
            rules: &self.inner.rules,
            secrets: &self.inner.secrets,
            metrics: self.inner.metrics.as_ref(),
            quotas: self.inner.quotas.as_ref(),
            traces: self.inner.traces.as_ref(),
        };
        AssertUnwindSafe(pipeline::run_call(pipeline, ctx, name, args))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| Err(ToolError::failed("a hook or middleware panicked")))
    }

    /// Registers a tool owned by the host itself.
    pub fn register_tool(&self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        self.inner.registry.register(tool)
    }

    /// Unregisters a tool; returns whether it was there.
    pub fn unregister_tool(&self, name: &str) -> bool {
        self.inner.registry.unregister(name)
    }

    /// Registered tool names, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.registry.names()
    }

    /// The descriptor of a registered tool.
    pub fn get_tool(&self, name: &str) -> Option<Arc<ToolSpec>> {
        self.inner.registry.get(name)
    }

    /// Every descriptor, sorted by name.
    pub fn tool_specs(&self) -> Vec<Arc<ToolSpec>> {
        self.inner.registry.specs()
    }

    /// The live registry.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// How long an approval may take before it counts as a denial
    /// ([`HostBuilder::approval_timeout`]).
    pub fn approval_timeout(&self) -> Duration {
        self.inner.approvals.timeout
    }

    /// The rules every call is judged by ([`HostBuilder::rules`]).
    pub fn secrets(&self) -> &SecretSet {
        &self.inner.secrets
    }

    /// Whether the host admits calls through quotas
    /// ([`HostBuilder::quotas`]).
    pub fn has_quotas(&self) -> bool {
        self.inner.quotas.is_some()
    }

    /// The quotas calls are admitted through, if any: what a host built to
    /// replace this one counts on from ([`Quotas::continuing`](crate::quota::Quotas::continuing)).
    pub fn quotas(&self) -> Option<&Arc<crate::quota::Quotas>> {
        self.inner.quotas.as_ref()
    }

    /// Whether a call of `tool` by `tenant` would be refused by a quota now
    /// (rule A3), and by which; takes nothing. `None` also for an unknown
    /// tool and a host without quotas. For an early answer (an HTTP 429)
    /// before a call is made; the call is still admitted or refused as it
    /// enters the pipeline.
    pub fn quota_check(&self, tenant: &str, tool: &str) -> Option<crate::quota::OverQuota> {
        let quotas = self.inner.quotas.as_ref()?;
        let entry = self.inner.registry.entry(tool)?;
        let plugin = entry.tool.plugin().or(entry.owner.as_deref()).unwrap_or("");
        quotas.check(tenant, plugin)
    }

    /// The traces every call's span goes to, if the host makes them
    /// ([`HostBuilder::traces`]).
    pub fn traces(&self) -> Option<&Traces> {
        self.inner.traces.as_ref()
    }

    /// The metrics every call is counted in, if the host keeps them
    /// ([`HostBuilder::metrics`]).
    pub fn metrics(&self) -> Option<&Metrics> {
        self.inner.metrics.as_ref()
    }

    /// The rules every call is judged by.
    pub fn rules(&self) -> &RuleSet {
        &self.inner.rules
    }

    /// How the rules would judge a call of `name` with `args` as they are
    /// (before hooks would run, which may rewrite them first), and why;
    /// `None` for an unknown tool.
    pub fn explain(&self, name: &str, args: &Arguments) -> Option<Explanation> {
        let entry = self.inner.registry.entry(name)?;
        Some(
            self.inner
                .rules
                .explain(name, entry.tool.hints(), args.as_value()),
        )
    }

    /// Whether argument validation is on.
    pub fn validates_arguments(&self) -> bool {
        self.inner.validate
    }

    /// Adds a before hook at run time; calls already in flight are not
    /// affected.
    pub fn add_before_hook(&self, scope: HookScope, hook: Arc<dyn BeforeHook>) {
        self.update_stack(|s| s.add_before(scope, owned(hook, None)));
    }

    /// Adds an after hook at run time.
    pub fn add_after_hook(&self, scope: HookScope, hook: Arc<dyn AfterHook>) {
        self.update_stack(|s| s.add_after(scope, owned(hook, None)));
    }

    /// Appends a middleware at run time (innermost so far).
    pub fn add_middleware(&self, m: Arc<dyn Middleware>) {
        self.update_stack(|s| s.middleware.push(owned(m, None)));
    }

    /// Adds a lifecycle hook at run time.
    pub fn add_lifecycle_hook(&self, hook: Arc<dyn LifecycleHook>) {
        self.update_lifecycle(|l| l.push(owned(hook, None)));
    }

    /// The lifecycle hooks, in registration order.
    pub fn lifecycle_hooks(&self) -> Vec<Arc<dyn LifecycleHook>> {
        self.layers()
            .lifecycle
            .iter()
            .map(|o| o.item.clone())
            .collect()
    }

    /// Registers an extension (rule E1): `init`, then every contribution,
    /// all or none. The error names the extension and what clashed.
    pub async fn register_extension(&self, ext: Arc<dyn Extension>) -> Result<(), RegistryError> {
        let name: Arc<str> = ext.name().into();
        {
            let mut exts = self.extensions();
            if exts.iter().any(|(n, _)| *n == name) {
                return Err(RegistryError::DuplicateExtension {
                    name: name.to_string(),
                });
            }
            exts.push((name.clone(), ext.clone()));
        }
        let ctx = ExtensionContext::new(name.clone(), Arc::downgrade(&self.inner.registry));
        let applied = match ext.init(&ctx).await {
            Err(e) => Err(RegistryError::ExtensionInit {
                name: name.to_string(),
                source: e,
            }),
            Ok(()) => self.apply(&name, &*ext),
        };
        if let Err(e) = applied {
            self.inner.registry.remove_owned(&name);
            self.extensions().retain(|(n, _)| *n != name);
            ext.dispose().await;
            return Err(e);
        }
        Ok(())
    }

    fn apply(&self, name: &Arc<str>, ext: &dyn Extension) -> Result<(), RegistryError> {
        let tools = ext.tools();
        if !tools.is_empty() {
            self.inner
                .registry
                .register_all(tools, Some(name.clone()))?;
        }
        let owner = Some(name.clone());
        let (before, after) = (ext.before_hooks(), ext.after_hooks());
        let (middleware, lifecycle) = (ext.middleware(), ext.lifecycle_hooks());
        self.update_layers(|s, l| {
            for (scope, h) in before {
                s.add_before(scope, owned(h, owner.clone()));
            }
            for (scope, h) in after {
                s.add_after(scope, owned(h, owner.clone()));
            }
            s.middleware
                .extend(middleware.into_iter().map(|m| owned(m, owner.clone())));
            l.extend(lifecycle.into_iter().map(|h| owned(h, owner.clone())));
        });
        Ok(())
    }

    /// Unloads an extension: removes its tools, hooks, middleware and
    /// lifecycle hooks, then calls its `dispose`.
    pub async fn unload_extension(&self, name: &str) -> Result<(), RegistryError> {
        let ext = {
            let mut exts = self.extensions();
            let pos = exts.iter().position(|(n, _)| &**n == name).ok_or_else(|| {
                RegistryError::UnknownExtension {
                    name: name.to_owned(),
                }
            })?;
            exts.remove(pos).1
        };
        self.inner.registry.remove_owned(name);
        self.update_layers(|s, l| {
            s.remove_owner(name);
            drop_owned(l, name);
        });
        ext.dispose().await;
        Ok(())
    }

    /// Names of the tools the extension `name` contributed, sorted.
    pub fn extension_tools(&self, name: &str) -> Vec<String> {
        self.inner.registry.names_owned_by(name)
    }

    /// Names of the registered extensions, in registration order.
    pub fn extension_names(&self) -> Vec<String> {
        self.extensions()
            .iter()
            .map(|(n, _)| n.to_string())
            .collect()
    }

    /// Unloads every extension, the most recently registered first.
    pub async fn shutdown(&self) {
        let names = self.extension_names();
        for name in names.iter().rev() {
            // An extension unloaded concurrently is already gone: fine.
            let _ = self.unload_extension(name).await;
        }
    }

    /// The extensions' system-prompt texts, in registration order, joined by
    /// blank lines (empty if none has any), each redacted of the host's
    /// secrets (rule O2): an extension may read one it is granted.
    pub async fn system_prompt(&self) -> String {
        let exts: Vec<_> = self.extensions().iter().map(|(_, e)| e.clone()).collect();
        let mut parts = Vec::new();
        for ext in exts {
            if let Some(text) = ext.system_prompt().await.filter(|t| !t.trim().is_empty()) {
                parts.push(self.inner.secrets.redact(&text).into_owned());
            }
        }
        parts.join("\n\n")
    }

    fn extensions(&self) -> std::sync::MutexGuard<'_, Extensions> {
        self.inner
            .extensions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn layers(&self) -> arc_swap::Guard<Arc<Layers>> {
        self.inner.layers.load()
    }

    /// The call layer only: every call takes this snapshot, so it clones
    /// one `Arc`, not the lifecycle layer too.
    pub(crate) fn stack(&self) -> Arc<Stack> {
        self.layers().calls.clone()
    }

    fn update_stack(&self, f: impl FnOnce(&mut Stack)) {
        self.update_layers(|s, _| f(s));
    }

    fn update_lifecycle(&self, f: impl FnOnce(&mut Vec<Owned<dyn LifecycleHook>>)) {
        self.update_layers(|_, l| f(l));
    }

    /// Replaces both layers at once, one update at a time.
    fn update_layers(&self, f: impl FnOnce(&mut Stack, &mut Vec<Owned<dyn LifecycleHook>>)) {
        let _one_at_a_time = self
            .inner
            .updating
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let current = self.inner.layers.load();
        let mut calls = Stack::clone(&current.calls);
        let mut lifecycle = current.lifecycle.to_vec();
        f(&mut calls, &mut lifecycle);
        self.inner.layers.store(Arc::new(Layers {
            calls: Arc::new(calls),
            lifecycle: lifecycle.into(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::LifecycleHook;

    struct Noop;
    impl LifecycleHook for Noop {}

    #[test]
    fn e1_hooks_added_from_many_threads_at_once_all_land() {
        // Each update copies the layers it read and stores the copy: two
        // made at once must not lose one another's hook.
        let host = ToolHost::builder().build();
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..1000 {
                        host.add_lifecycle_hook(Arc::new(Noop));
                    }
                });
            }
        });
        assert_eq!(host.lifecycle_hooks().len(), 4000);
    }
}
