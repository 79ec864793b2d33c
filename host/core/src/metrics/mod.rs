//! [`Metrics`]: Prometheus metrics of every call (rule X1).
//!
//! A host built with [`HostBuilder::metrics`](crate::HostBuilder::metrics)
//! counts every call by tool, plugin, outcome and tenant, times it whole
//! and by stage, and hands the stages that live outside the pipeline an
//! [`Observer`] through the call's context. A host built without metrics
//! records nothing and reads no clock for them.
//!
//! Label values are bounded: tool and plugin names are the registered ones
//! (never an argument, never the name an unknown-tool call asked for),
//! each family of them capped at a number of distinct values past which
//! names are counted as `other` (a remote MCP server may list any number
//! of tools); outcomes and stages are fixed words.
//!
//! The registry is [prometheus-client](prometheus_client)'s: read it as
//! text with [`Metrics::encode_text`] (the Prometheus text format, what
//! `promtool` and `curl` read) or [`Metrics::encode_openmetrics`], or
//! register an embedder's own metrics beside these with
//! [`Metrics::with_registry`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::error::{SandboxFault, ToolError};
use crate::observe::{GuestCall, Observer, Stage};
use crate::output::ToolOutput;

mod histogram;

use histogram::Histogram;

/// How many distinct tool names get a label of their own, by default; the
/// rest are counted as `other`.
pub const DEFAULT_TOOL_LABELS: usize = 500;

/// How many distinct plugin names get a label of their own; the rest are
/// counted as `other`.
const PLUGIN_LABELS: usize = 200;

/// The label value of names past the cap, and of an unknown tool.
pub const OTHER: &str = "other";

/// The tenant every call is counted under until a host serves several.
pub const DEFAULT_TENANT: &str = "default";

/// The content type of [`Metrics::encode_text`].
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The content type of [`Metrics::encode_openmetrics`].
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label value: a fixed word, or a name shared by every series that
/// carries it.
#[derive(Clone, Debug)]
enum Value {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Value {
    fn as_str(&self) -> &str {
        match self {
            Self::Static(s) => s,
            Self::Shared(s) => s,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl EncodeLabelValue for Value {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

type Labels<const N: usize> = [(&'static str, Value); N];

/// Names that have a label value of their own: at most `limit` of them,
/// the first to come; later ones are [`OTHER`].
struct Names {
    limit: usize,
    known: RwLock<HashMap<Box<str>, Arc<str>>>,
}

impl Names {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            known: RwLock::new(HashMap::new()),
        }
    }

    /// The label value of `name`; an empty name is the empty value.
    fn get(&self, name: &str) -> Value {
        if name.is_empty() {
            return Value::Static("");
        }
        {
            let known = self.known.read().unwrap_or_else(|e| e.into_inner());
            if let Some(v) = known.get(name) {
                return Value::Shared(v.clone());
            }
            if known.len() >= self.limit {
                return Value::Static(OTHER);
            }
        }
        let mut known = self.known.write().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = known.get(name) {
            return Value::Shared(v.clone());
        }
        if known.len() >= self.limit {
            return Value::Static(OTHER);
        }
        let v: Arc<str> = name.into();
        known.insert(name.into(), v.clone());
        Value::Shared(v)
    }
}

/// The series of one tool of one plugin, found once and kept, so that a
/// call counts itself without hashing its labels again.
struct Series {
    plugin: Box<str>,
    tenant: Box<str>,
    duration: Histogram,
    /// The call counter of each outcome met so far, by its place in
    /// [`OUTCOMES`].
    calls: [OnceLock<Counter>; OUTCOMES.len()],
}

impl Series {
    /// Counts a call of the tool labelled `tool` that ended with
    /// `outcome` after `took`: its duration, and the call in the counter
    /// made for the outcome on first use.
    fn call(&self, inner: &Inner, tool: &Value, outcome: &'static str, took: Duration) {
        self.duration.observe(took);
        let make = || {
            inner.calls.get_or_create_owned(&[
                ("tool", tool.clone()),
                ("plugin", inner.plugins.get(&self.plugin)),
                ("outcome", Value::Static(outcome)),
                ("tenant", tenant_label(&self.tenant)),
            ])
        };
        match OUTCOMES.iter().position(|o| *o == outcome) {
            Some(at) => self.calls[at].get_or_init(make).inc(),
            // Every word `outcome` gives is listed; another one is counted
            // all the same, through the family's own map.
            None => make().inc(),
        };
    }
}

/// A registered tool's series and its plugin's observer, found once and
/// kept by the tool's registry entry, so that a call of it looks nothing
/// up by name ([`Metrics::of_tool`]).
#[derive(Clone)]
pub(crate) struct ToolMetrics {
    /// The metrics these series belong to: an entry keeps one host's.
    inner: Arc<Inner>,
    tool: Arc<ToolSeries>,
    plugin: Arc<str>,
    /// The plugin's observer, for the call's context.
    observer: Arc<dyn Observer>,
    /// The series of the default tenant, which every call of a host
    /// without tenants is for.
    default_tenant: Arc<Series>,
}

impl ToolMetrics {
    /// The observer of the tool's plugin.
    pub(crate) fn observer(&self) -> &Arc<dyn Observer> {
        &self.observer
    }

    /// Counts a call of the tool for `tenant` that ended with `outcome`
    /// after `took` (rule X1).
    pub(crate) fn call(&self, tenant: &str, outcome: &'static str, took: Duration) {
        let inner = &*self.inner;
        let found;
        let series = if tenant == DEFAULT_TENANT {
            &self.default_tenant
        } else {
            found = inner.series(&self.tool, &self.plugin, tenant);
            &found
        };
        series.call(inner, &self.tool.label, outcome, took);
    }
}

/// Counts a host's metrics are owed that are made elsewhere, off the
/// calls' thread: a traced call's, which the traces' finisher makes from
/// the call's span record ([`HostBuilder::build`](crate::HostBuilder::build)
/// joins the two). They are made before the metrics are read, so a read
/// sees every call that returned before it.
pub(crate) trait Deferred: Send + Sync {
    /// Makes every count owed so far.
    fn count_now(&self);
}

/// One tool label's series, by plugin (a tool belongs to one plugin at a
/// time, but a reload may move it).
struct ToolSeries {
    label: Value,
    by_plugin: RwLock<Vec<Arc<Series>>>,
}

impl ToolSeries {
    fn new(label: Value) -> Arc<Self> {
        Arc::new(Self {
            label,
            by_plugin: RwLock::new(Vec::new()),
        })
    }
}

/// Prometheus metrics of a host's calls (rule X1). Clones share
/// everything; hand one to [`HostBuilder::metrics`](crate::HostBuilder::metrics)
/// (and to every host that replaces it, so that counts carry on).
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Mutex<Registry>,
    calls: Family<Labels<4>, Counter>,
    call_duration: Family<Labels<3>, Histogram>,
    stages: Family<Labels<2>, Histogram>,
    instances: Family<Labels<1>, Gauge>,
    overshoot: Family<Labels<1>, Histogram>,
    memory: Family<Labels<1>, Gauge>,
    code_cache: Family<Labels<1>, Counter>,
    reloads: Family<Labels<1>, Counter>,
    /// Each tool label's series: at most `tool_limit` names of their own,
    /// the rest under `other`.
    tools: RwLock<HashMap<Box<str>, Arc<ToolSeries>>>,
    tool_limit: usize,
    other: Arc<ToolSeries>,
    plugins: Names,
    /// Each plugin's observer, its series found once (at most as many as
    /// plugin labels).
    observers: RwLock<HashMap<Box<str>, Arc<PluginObserver>>>,
    /// Where counts owed to these metrics wait ([`Deferred`]).
    deferred: Mutex<Vec<Weak<dyn Deferred>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("tool_labels", &self.inner.tool_limit)
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// Metrics with at most [`DEFAULT_TOOL_LABELS`] tool names as labels.
    pub fn new() -> Self {
        Self::with_tool_labels(DEFAULT_TOOL_LABELS)
    }

    /// Metrics that give at most `limit` distinct tool names a label of
    /// their own; calls of any other tool are counted as `other`.
    pub fn with_tool_labels(limit: usize) -> Self {
        let inner = Inner {
            registry: Mutex::new(Registry::with_prefix("toolhost")),
            calls: Family::default(),
            call_duration: Family::default(),
            stages: Family::default(),
            instances: Family::default(),
            overshoot: Family::default(),
            memory: Family::default(),
            code_cache: Family::default(),
            reloads: Family::default(),
            tools: RwLock::new(HashMap::new()),
            tool_limit: limit,
            other: ToolSeries::new(Value::Static(OTHER)),
            plugins: Names::new(PLUGIN_LABELS),
            observers: RwLock::new(HashMap::new()),
            deferred: Mutex::new(Vec::new()),
        };
        {
            let mut r = inner.registry.lock().unwrap_or_else(|e| e.into_inner());
            r.register(
                "calls",
                "Calls by tool, plugin, outcome and tenant",
                inner.calls.clone(),
            );
            r.register_with_unit(
                "call_duration",
                "Time from a call entering the pipeline to its answer",
                Unit::Seconds,
                inner.call_duration.clone(),
            );
            r.register_with_unit(
                "call_stage_duration",
                "Time a call spent in each stage: queue_wait, instantiate, guest, hooks, approval_wait, mcp_forward",
                Unit::Seconds,
                inner.stages.clone(),
            );
            r.register(
                "instances_in_use",
                "A plugin's instances serving a call now",
                inner.instances.clone(),
            );
            r.register_with_unit(
                "deadline_overshoot",
                "How long after its deadline a call that timed out was answered",
                Unit::Seconds,
                inner.overshoot.clone(),
            );
            r.register_with_unit(
                "plugin_memory_high_water",
                "The largest linear memory any instance of a plugin has had",
                Unit::Bytes,
                inner.memory.clone(),
            );
            r.register(
                "code_cache_lookups",
                "Plugins loaded from the compiled-code cache (hit) or compiled (miss)",
                inner.code_cache.clone(),
            );
            r.register(
                "reloads",
                "Configuration reloads, by result (ok, failed)",
                inner.reloads.clone(),
            );
        }
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The metrics in the Prometheus text format (version 0.0.4), as
    /// `promtool check metrics` and a person with `curl` read them.
    pub fn encode_text(&self) -> String {
        to_prometheus_text(&self.encode_openmetrics())
    }

    /// The metrics in the OpenMetrics text format, as Prometheus prefers
    /// to scrape them.
    pub fn encode_openmetrics(&self) -> String {
        self.count_deferred();
        self.encode_as_they_stand()
    }

    /// The metrics in the OpenMetrics text format, without the counts
    /// still owed to them.
    fn encode_as_they_stand(&self) -> String {
        let mut out = String::new();
        let registry = self
            .inner
            .registry
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Writing to a String fails only if an embedder's metric does.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            tracing::warn!(target: "toolhost::metrics", "a metric could not be encoded: {e}");
        }
        out
    }

    /// Runs `f` on the registry: to read it, or to register an embedder's
    /// own metrics beside the host's.
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        self.count_deferred();
        f(&mut self
            .inner
            .registry
            .lock()
            .unwrap_or_else(|e| e.into_inner()))
    }

    /// Counts a reload of the configuration, built and swapped in (`ok`)
    /// or refused.
    pub fn reload(&self, ok: bool) {
        let result = if ok { "ok" } else { "failed" };
        self.inner
            .reloads
            .get_or_create(&[("result", Value::Static(result))])
            .inc();
    }

    /// Counts a plugin whose compiled code came from the cache (`hit`) or
    /// was compiled.
    pub fn code_cache(&self, hit: bool) {
        let result = if hit { "hit" } else { "miss" };
        self.inner
            .code_cache
            .get_or_create(&[("result", Value::Static(result))])
            .inc();
    }

    /// The observer the stages outside the pipeline report to.
    pub fn observer(&self) -> Arc<dyn Observer> {
        self.inner.clone()
    }

    /// The observer of a call of a tool of `plugin`: the same as
    /// [`observer`](Self::observer), with `plugin`'s series found once
    /// rather than at each report (a report for another plugin takes the
    /// general way).
    pub fn observer_for(&self, plugin: &str) -> Arc<dyn Observer> {
        let inner = &self.inner;
        {
            let observers = inner.observers.read().unwrap_or_else(|e| e.into_inner());
            if let Some(o) = observers.get(plugin) {
                return o.clone();
            }
            if observers.len() >= PLUGIN_LABELS {
                return inner.clone();
            }
        }
        let label = inner.plugins.get(plugin);
        let made = Arc::new(PluginObserver {
            inner: inner.clone(),
            plugin: plugin.into(),
            stages: Stage::ALL.map(|stage| {
                inner.stages.get_or_create_owned(&[
                    ("stage", Value::Static(stage.as_str())),
                    ("plugin", label.clone()),
                ])
            }),
            instances: inner
                .instances
                .get_or_create_owned(&[("plugin", label.clone())]),
            memory: inner
                .memory
                .get_or_create_owned(&[("plugin", label.clone())]),
            overshoot: inner.overshoot.get_or_create_owned(&[("plugin", label)]),
        });
        let mut observers = inner.observers.write().unwrap_or_else(|e| e.into_inner());
        observers
            .entry(plugin.into())
            .or_insert_with(|| made)
            .clone()
    }

    /// Counts and times one call of `tool` (`None`: no such tool) of
    /// `plugin`, made for `tenant`, that ended with `outcome`. Tenants are
    /// named by the configuration, so their number is bounded.
    pub(crate) fn call(
        &self,
        tool: Option<&str>,
        plugin: &str,
        tenant: &str,
        outcome: &'static str,
        took: Duration,
    ) {
        let inner = &*self.inner;
        let tool = match tool {
            Some(name) => inner.tool_series(name),
            None => inner.other.clone(),
        };
        let series = inner.series(&tool, plugin, tenant);
        series.call(inner, &tool.label, outcome, took);
    }
}

impl Metrics {
    /// The series of the registered tool `name` of `plugin`: those kept in
    /// `kept` (its registry entry's), found and kept there on its first
    /// call; found anew, and not kept, when `kept` holds another host's.
    pub(crate) fn of_tool<'a>(
        &self,
        kept: &'a OnceLock<ToolMetrics>,
        name: &str,
        plugin: &Arc<str>,
    ) -> std::borrow::Cow<'a, ToolMetrics> {
        let kept = kept.get_or_init(|| self.find_tool(name, plugin));
        if Arc::ptr_eq(&kept.inner, &self.inner) {
            std::borrow::Cow::Borrowed(kept)
        } else {
            std::borrow::Cow::Owned(self.find_tool(name, plugin))
        }
    }

    /// The series of the tool `name` of `plugin`, looked up by name.
    fn find_tool(&self, name: &str, plugin: &Arc<str>) -> ToolMetrics {
        let inner = &self.inner;
        let tool = inner.tool_series(name);
        ToolMetrics {
            inner: inner.clone(),
            default_tenant: inner.series(&tool, plugin, DEFAULT_TENANT),
            tool,
            plugin: plugin.clone(),
            observer: self.observer_for(plugin),
        }
    }

    /// Has these metrics make the counts owed in `deferred` before they
    /// are read (once per `deferred`, however often it is joined).
    pub(crate) fn defer_to(&self, deferred: Weak<dyn Deferred>) {
        let mut all = self
            .inner
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        all.retain(|d| d.strong_count() > 0);
        if !all.iter().any(|d| Weak::ptr_eq(d, &deferred)) {
            all.push(deferred);
        }
    }

    /// The metrics as they stand, without the counts owed to them.
    #[cfg(test)]
    pub(crate) fn encode_without_owed(&self) -> String {
        self.encode_as_they_stand()
    }

    /// Makes every count owed to these metrics, before they are read.
    fn count_deferred(&self) {
        let live: Vec<Arc<dyn Deferred>> = self
            .inner
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for deferred in live {
            deferred.count_now();
        }
    }
}

/// The label of `tenant`: static for the default tenant, the one every
/// call of a host without tenants is for.
fn tenant_label(tenant: &str) -> Value {
    if tenant == DEFAULT_TENANT {
        Value::Static(DEFAULT_TENANT)
    } else {
        Value::Shared(tenant.into())
    }
}

impl Inner {
    /// The series of the tool `name`: its own, or `other` past the cap.
    fn tool_series(&self, name: &str) -> Arc<ToolSeries> {
        {
            let tools = self.tools.read().unwrap_or_else(|e| e.into_inner());
            if let Some(series) = tools.get(name) {
                return series.clone();
            }
            if tools.len() >= self.tool_limit {
                return self.other.clone();
            }
        }
        let mut tools = self.tools.write().unwrap_or_else(|e| e.into_inner());
        if let Some(series) = tools.get(name) {
            return series.clone();
        }
        if tools.len() >= self.tool_limit {
            return self.other.clone();
        }
        let series = ToolSeries::new(Value::Shared(name.into()));
        tools.insert(name.into(), series.clone());
        series
    }

    /// `tool`'s series for `plugin` and `tenant`, made on first use.
    fn series(&self, tool: &ToolSeries, plugin: &str, tenant: &str) -> Arc<Series> {
        let mine = |s: &&Arc<Series>| &*s.plugin == plugin && &*s.tenant == tenant;
        {
            let by_plugin = tool.by_plugin.read().unwrap_or_else(|e| e.into_inner());
            if let Some(series) = by_plugin.iter().find(mine) {
                return series.clone();
            }
        }
        let mut by_plugin = tool.by_plugin.write().unwrap_or_else(|e| e.into_inner());
        if let Some(series) = by_plugin.iter().find(mine) {
            return series.clone();
        }
        let series = Arc::new(Series {
            plugin: plugin.into(),
            tenant: tenant.into(),
            duration: self.call_duration.get_or_create_owned(&[
                ("tool", tool.label.clone()),
                ("plugin", self.plugins.get(plugin)),
                ("tenant", tenant_label(tenant)),
            ]),
            calls: Default::default(),
        });
        by_plugin.push(series.clone());
        series
    }
}

impl Observer for Inner {
    fn stage(&self, plugin: &str, stage: Stage, took: Duration) {
        self.stages
            .get_or_create(&[
                ("stage", Value::Static(stage.as_str())),
                ("plugin", self.plugins.get(plugin)),
            ])
            .observe(took);
    }

    fn instance(&self, plugin: &str, started: bool) {
        let gauge = self
            .instances
            .get_or_create(&[("plugin", self.plugins.get(plugin))]);
        if started {
            gauge.inc();
        } else {
            gauge.dec();
        }
    }

    fn memory_high_water(&self, plugin: &str, bytes: u64) {
        raise_to(
            self.memory
                .get_or_create(&[("plugin", self.plugins.get(plugin))])
                .inner(),
            bytes,
        );
    }

    fn deadline_overshoot(&self, plugin: &str, late: Duration) {
        self.overshoot
            .get_or_create(&[("plugin", self.plugins.get(plugin))])
            .observe(late);
    }
}

/// Raises the high-water mark `mark` to `bytes`. Read first: a plugin's
/// calls mostly reach the mark they reached before, and a read, unlike
/// the atomic maximum, leaves the line shared and the core's stores
/// unflushed.
fn raise_to(mark: &std::sync::atomic::AtomicI64, bytes: u64) {
    let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
    if mark.load(Ordering::Relaxed) < bytes {
        mark.fetch_max(bytes, Ordering::Relaxed);
    }
}

/// The observer of one plugin's calls: its series, found when it was made.
/// Written for the call path: a report is an atomic update, where the
/// general way hashes the labels and looks the series up each time.
struct PluginObserver {
    inner: Arc<Inner>,
    plugin: Box<str>,
    /// By [`Stage::index`].
    stages: [Histogram; 6],
    instances: Gauge,
    memory: Gauge,
    overshoot: Histogram,
}

impl Observer for PluginObserver {
    fn stage(&self, plugin: &str, stage: Stage, took: Duration) {
        if plugin == &*self.plugin {
            self.stages[stage.index()].observe(took);
        } else {
            self.inner.stage(plugin, stage, took);
        }
    }

    fn instance(&self, plugin: &str, started: bool) {
        if plugin != &*self.plugin {
            return self.inner.instance(plugin, started);
        }
        if started {
            self.instances.inc();
        } else {
            self.instances.dec();
        }
    }

    fn memory_high_water(&self, plugin: &str, bytes: u64) {
        if plugin != &*self.plugin {
            return self.inner.memory_high_water(plugin, bytes);
        }
        raise_to(self.memory.inner(), bytes);
    }

    fn deadline_overshoot(&self, plugin: &str, late: Duration) {
        if plugin != &*self.plugin {
            return self.inner.deadline_overshoot(plugin, late);
        }
        self.overshoot.observe(late);
    }

    /// The plugin's name compared once for the whole report.
    fn guest_call(&self, plugin: &str, call: &GuestCall) {
        if plugin != &*self.plugin {
            return self.inner.guest_call(plugin, call);
        }
        self.stages[Stage::QueueWait.index()].observe(call.queue_wait.0);
        if let Some((took, _)) = call.instantiate {
            self.stages[Stage::Instantiate.index()].observe(took);
        }
        if let Some((took, _)) = call.guest {
            self.stages[Stage::Guest.index()].observe(took);
        }
        raise_to(self.memory.inner(), call.memory_high_water);
        self.instances.dec();
    }
}

/// Every word [`outcome`] gives, and the two the pipeline counts before a
/// call has a result (`unknown_tool`, `over_quota`): a series keeps one
/// counter for each, found without a lock.
pub(crate) const OUTCOMES: [&str; 18] = [
    "ok",
    "unknown_tool",
    "invalid_arguments",
    "approval_denied",
    "hook_rejected",
    "refused",
    "approval_required",
    "timeout",
    "cancelled",
    "failed",
    "invalid_output",
    "over_quota",
    "trap",
    "panic",
    "exited",
    "limit",
    "invalid_result",
    "host_fault",
];

/// The `outcome` label of a call's result. A rejection that came from the
/// approval wait (`approval_refused`) is `approval_denied`; any other is a
/// hook's.
pub(crate) fn outcome(
    result: &Result<ToolOutput, ToolError>,
    approval_refused: bool,
) -> &'static str {
    let Err(err) = result else {
        return "ok";
    };
    match err {
        ToolError::UnknownTool { .. } => "unknown_tool",
        ToolError::InvalidArguments { .. } => "invalid_arguments",
        ToolError::Rejected { .. } if approval_refused => "approval_denied",
        ToolError::Rejected { .. } => "hook_rejected",
        ToolError::Denied { .. } => "refused",
        ToolError::ApprovalRequired { .. } => "approval_required",
        ToolError::Timeout { .. } => "timeout",
        ToolError::Cancelled => "cancelled",
        ToolError::Failed { .. } => "failed",
        ToolError::InvalidOutput { .. } => "invalid_output",
        ToolError::OverQuota { .. } => "over_quota",
        ToolError::Sandbox { fault, .. } => match fault {
            SandboxFault::Trap(_) => "trap",
            SandboxFault::Panic(_) => "panic",
            SandboxFault::Exited(_) => "exited",
            SandboxFault::LimitExceeded(_) => "limit",
            SandboxFault::InvalidOutput(_) => "invalid_result",
            SandboxFault::Host(_) => "host_fault",
        },
    }
}

/// OpenMetrics text as the Prometheus text format 0.0.4: a counter's
/// `# HELP` and `# TYPE` name its samples' `_total` name, and the `# UNIT`
/// and `# EOF` lines, which that format lacks, are left out.
fn to_prometheus_text(open: &str) -> String {
    let mut out = String::with_capacity(open.len());
    let mut help: Option<&str> = None;
    for line in open.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            if let Some(held) = help.replace(rest) {
                let _ = writeln!(out, "# HELP {held}");
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            let (name, kind) = match kind {
                "counter" if !name.ends_with("_total") => (format!("{name}_total"), kind),
                "unknown" => (name.to_owned(), "untyped"),
                _ => (name.to_owned(), kind),
            };
            if let Some(held) = help.take() {
                let text = held.split_once(' ').map_or("", |(_, text)| text);
                let _ = writeln!(out, "# HELP {name} {text}");
            }
            let _ = writeln!(out, "# TYPE {name} {kind}");
            continue;
        }
        if let Some(held) = help.take() {
            let _ = writeln!(out, "# HELP {held}");
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(held) = help {
        let _ = writeln!(out, "# HELP {held}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x1_a_call_is_counted_under_its_tenant() {
        let m = Metrics::new();
        m.call(Some("echo"), "p", "acme", "ok", Duration::from_millis(1));
        m.call(Some("echo"), "p", "acme", "over_quota", Duration::ZERO);
        m.call(Some("echo"), "p", DEFAULT_TENANT, "ok", Duration::ZERO);
        let text = m.encode_text();
        for want in [
            r#"toolhost_calls_total{tool="echo",plugin="p",outcome="ok",tenant="acme"} 1"#,
            r#"toolhost_calls_total{tool="echo",plugin="p",outcome="over_quota",tenant="acme"} 1"#,
            r#"toolhost_calls_total{tool="echo",plugin="p",outcome="ok",tenant="default"} 1"#,
            r#"toolhost_call_duration_seconds_count{tool="echo",plugin="p",tenant="acme"} 2"#,
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
    }

    #[test]
    fn x1_tool_names_past_the_cap_are_other() {
        let m = Metrics::with_tool_labels(2);
        for tool in ["a", "b", "c", "d", "a"] {
            m.call(
                Some(tool),
                "",
                DEFAULT_TENANT,
                "ok",
                Duration::from_millis(1),
            );
        }
        m.call(None, "", DEFAULT_TENANT, "unknown_tool", Duration::ZERO);
        let text = m.encode_text();
        for want in [
            r#"toolhost_calls_total{tool="a",plugin="",outcome="ok",tenant="default"} 2"#,
            r#"toolhost_calls_total{tool="b",plugin="",outcome="ok",tenant="default"} 1"#,
            r#"toolhost_calls_total{tool="other",plugin="",outcome="ok",tenant="default"} 2"#,
            r#"toolhost_calls_total{tool="other",plugin="",outcome="unknown_tool",tenant="default"} 1"#,
        ] {
            assert!(text.contains(want), "{want}\n{text}");
        }
        assert!(!text.contains(r#"tool="c""#), "{text}");
    }

    #[test]
    fn x1_the_text_format_names_counters_by_their_samples() {
        let m = Metrics::new();
        m.reload(true);
        m.observer().memory_high_water("p", 1 << 16);
        m.observer().memory_high_water("p", 1 << 10);
        let text = m.encode_text();
        assert!(
            text.contains("# HELP toolhost_reloads_total Configuration reloads"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE toolhost_reloads_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_reloads_total{result=\"ok\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_plugin_memory_high_water_bytes{plugin=\"p\"} 65536\n"),
            "{text}"
        );
        assert!(
            !text.contains("# EOF") && !text.contains("# UNIT"),
            "{text}"
        );
        assert!(m.encode_openmetrics().ends_with("# EOF\n"));
    }

    #[test]
    fn x1_the_memory_high_water_mark_only_rises_whichever_observer_reports() {
        let m = Metrics::new();
        let mine = m.observer_for("p");
        let general = m.observer();
        let mark = |m: &Metrics| {
            let text = m.encode_text();
            text.lines()
                .find_map(|l| {
                    l.strip_prefix(r#"toolhost_plugin_memory_high_water_bytes{plugin="p"} "#)
                })
                .map(str::to_owned)
        };
        mine.memory_high_water("p", 4096);
        assert_eq!(mark(&m).as_deref(), Some("4096"));
        // Lower, equal, then higher: only the higher moves it.
        mine.memory_high_water("p", 1024);
        general.memory_high_water("p", 2048);
        mine.memory_high_water("p", 4096);
        assert_eq!(mark(&m).as_deref(), Some("4096"));
        general.memory_high_water("p", 1 << 20);
        mine.memory_high_water("p", 8192);
        assert_eq!(mark(&m).as_deref(), Some("1048576"));
        // Past what an i64 holds, it stays at the largest it can say.
        mine.memory_high_water("p", u64::MAX);
        assert_eq!(mark(&m).as_deref(), Some(i64::MAX.to_string().as_str()));
    }

    #[test]
    fn x1_a_guests_report_ends_its_instances_service_through_either_observer() {
        // Two instances start serving; each guest's report, one through the
        // plugin's own observer and one through the general one, ends one.
        let m = Metrics::new();
        let (general, mine) = (m.observer(), m.observer_for("p"));
        let at = std::time::Instant::now();
        let call = GuestCall::new(at, at, at, at, 4096);
        let in_use = |m: &Metrics| {
            m.encode_text()
                .lines()
                .find(|l| l.starts_with(r#"toolhost_instances_in_use{plugin="p"}"#))
                .map(str::to_owned)
        };
        general.instance("p", true);
        mine.instance("p", true);
        assert_eq!(
            in_use(&m).as_deref(),
            Some(r#"toolhost_instances_in_use{plugin="p"} 2"#)
        );
        mine.guest_call("p", &call);
        assert_eq!(
            in_use(&m).as_deref(),
            Some(r#"toolhost_instances_in_use{plugin="p"} 1"#)
        );
        general.guest_call("p", &call);
        assert_eq!(
            in_use(&m).as_deref(),
            Some(r#"toolhost_instances_in_use{plugin="p"} 0"#)
        );
    }

    #[test]
    fn x1_a_plugins_own_observer_reports_into_the_same_series() {
        // Reports through a plugin's observer and through the general one
        // land in the same series; one for another plugin still lands in
        // that plugin's.
        let m = Metrics::new();
        let general = m.observer();
        let mine = m.observer_for("p");
        assert!(Arc::ptr_eq(&mine, &m.observer_for("p")), "made once");
        for o in [&general, &mine] {
            o.stage("p", Stage::Guest, Duration::from_millis(2));
            o.instance("p", true);
            o.memory_high_water("p", 1 << 20);
            o.deadline_overshoot("p", Duration::from_millis(1));
        }
        mine.instance("p", false);
        mine.stage("q", Stage::Instantiate, Duration::from_millis(1));
        mine.memory_high_water("q", 4096);
        let text = m.encode_text();
        for want in [
            r#"toolhost_call_stage_duration_seconds_count{stage="guest",plugin="p"} 2"#,
            r#"toolhost_instances_in_use{plugin="p"} 1"#,
            r#"toolhost_plugin_memory_high_water_bytes{plugin="p"} 1048576"#,
            r#"toolhost_deadline_overshoot_seconds_count{plugin="p"} 2"#,
            r#"toolhost_call_stage_duration_seconds_count{stage="instantiate",plugin="q"} 1"#,
            r#"toolhost_plugin_memory_high_water_bytes{plugin="q"} 4096"#,
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
    }

    #[test]
    fn x1_a_tools_kept_series_count_as_the_looked_up_ones_do() {
        // A call counted through the series an entry keeps lands where
        // one counted by name does, for the default tenant and another.
        let m = Metrics::new();
        let kept = OnceLock::new();
        let plugin: Arc<str> = "p".into();
        let found = m.of_tool(&kept, "echo", &plugin);
        assert!(matches!(found, std::borrow::Cow::Borrowed(_)), "kept");
        found.call(DEFAULT_TENANT, "ok", Duration::from_millis(1));
        found.call("acme", "timeout", Duration::from_millis(1));
        found.call("acme", "a word of no list", Duration::ZERO);
        m.call(Some("echo"), "p", DEFAULT_TENANT, "ok", Duration::ZERO);
        m.call(Some("echo"), "p", "acme", "timeout", Duration::ZERO);
        found
            .observer()
            .stage("p", Stage::Guest, Duration::from_millis(2));
        let text = m.encode_text();
        for want in [
            r#"toolhost_calls_total{tool="echo",plugin="p",outcome="ok",tenant="default"} 2"#,
            r#"toolhost_calls_total{tool="echo",plugin="p",outcome="timeout",tenant="acme"} 2"#,
            r#"toolhost_calls_total{tool="echo",plugin="p",outcome="a word of no list",tenant="acme"} 1"#,
            r#"toolhost_call_duration_seconds_count{tool="echo",plugin="p",tenant="acme"} 3"#,
            r#"toolhost_call_stage_duration_seconds_count{stage="guest",plugin="p"} 1"#,
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
    }

    #[test]
    fn x1_kept_series_of_tools_past_the_cap_are_other() {
        // A remote server may list any number of tools: each registry
        // entry keeps its series, but past the cap that series is
        // `other`'s, as a look-up by name would give.
        let m = Metrics::with_tool_labels(1);
        let plugin: Arc<str> = "remote".into();
        for name in ["a", "b", "c"] {
            let kept = OnceLock::new();
            m.of_tool(&kept, name, &plugin)
                .call(DEFAULT_TENANT, "ok", Duration::ZERO);
        }
        let text = m.encode_text();
        assert!(
            text.contains(
                r#"toolhost_calls_total{tool="a",plugin="remote",outcome="ok",tenant="default"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"toolhost_calls_total{tool="other",plugin="remote",outcome="ok",tenant="default"} 2"#),
            "{text}"
        );
        assert!(
            !text.contains(r#"tool="b""#) && !text.contains(r#"tool="c""#),
            "{text}"
        );
    }

    #[test]
    fn x1_series_kept_for_one_hosts_metrics_are_not_used_by_another() {
        // An entry's kept series belong to the metrics that found them;
        // another host's metrics look their own up and keep nothing.
        let (first, second) = (Metrics::new(), Metrics::new());
        let kept = OnceLock::new();
        let plugin: Arc<str> = "p".into();
        first
            .of_tool(&kept, "echo", &plugin)
            .call(DEFAULT_TENANT, "ok", Duration::ZERO);
        let other = second.of_tool(&kept, "echo", &plugin);
        assert!(matches!(other, std::borrow::Cow::Owned(_)), "not kept");
        other.call(DEFAULT_TENANT, "failed", Duration::ZERO);
        let (one, two) = (first.encode_text(), second.encode_text());
        assert!(
            one.contains(r#"outcome="ok""#) && !one.contains(r#"outcome="failed""#),
            "{one}"
        );
        assert!(
            two.contains(r#"outcome="failed""#) && !two.contains(r#"outcome="ok""#),
            "{two}"
        );
    }

    /// Answers every approval as told.
    struct Answer(crate::Approval);

    #[async_trait::async_trait]
    impl crate::Approver for Answer {
        async fn approve(&self, _request: &crate::ApprovalRequest) -> crate::Approval {
            self.0.clone()
        }
    }

    #[tokio::test]
    async fn x1_a_host_counts_each_call_by_outcome_and_times_its_stages() {
        use crate::rules::{Rule, RuleDecision, RuleSet, ToolPattern};
        use crate::{
            Arguments, CallContext, Decision, FnBeforeHook, FnTool, HookScope, ToolHost, ToolSpec,
        };
        use serde_json::json;

        let metrics = Metrics::new();
        let observed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let host = ToolHost::builder()
            .metrics(metrics.clone())
            .validate_arguments(true)
            .approver(Arc::new(Answer(crate::Approval::denied("no"))))
            .rules(RuleSet::new(vec![
                Rule::new(ToolPattern::new("denied").unwrap(), RuleDecision::Deny),
                Rule::new(ToolPattern::new("asks").unwrap(), RuleDecision::Ask),
            ]))
            .before_hook(
                HookScope::Tool("hooked".into()),
                FnBeforeHook::deciding("gate", |_| Decision::reject("closed")),
            )
            .build();
        let seen = observed.clone();
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        host.register_tool(FnTool::arc(
            ToolSpec::new("ok", "", schema.clone()),
            move |ctx: CallContext, _| {
                // The stages outside the pipeline get the observer.
                if ctx.observer().is_some() {
                    seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                async { Ok(ToolOutput::text("fine")) }
            },
        ))
        .unwrap();
        for name in ["denied", "asks", "hooked"] {
            host.register_tool(FnTool::arc(
                ToolSpec::new(name, "", schema.clone()),
                |_, _| async { Ok(ToolOutput::text("ran")) },
            ))
            .unwrap();
        }
        host.register_tool(FnTool::arc(
            ToolSpec::new("fails", "", schema.clone()),
            |_, _| async { Err(ToolError::failed("no")) },
        ))
        .unwrap();
        let call = |tool: &'static str, args: &'static str| {
            let host = host.clone();
            async move {
                host.invoke_tool(CallContext::new(), tool, Arguments::parse(args).unwrap())
                    .await
            }
        };
        for _ in 0..3 {
            call("ok", "{}").await.unwrap();
        }
        call("ok", r#"{"n":"x"}"#).await.unwrap_err();
        call("fails", "{}").await.unwrap_err();
        call("denied", "{}").await.unwrap_err();
        call("asks", "{}").await.unwrap_err();
        call("hooked", "{}").await.unwrap_err();
        call("no-such-tool", "{}").await.unwrap_err();
        assert_eq!(observed.load(std::sync::atomic::Ordering::SeqCst), 3);
        let text = metrics.encode_text();
        for (tool, outcome, n) in [
            ("ok", "ok", 3),
            ("ok", "invalid_arguments", 1),
            ("fails", "failed", 1),
            ("denied", "refused", 1),
            ("asks", "approval_denied", 1),
            ("hooked", "hook_rejected", 1),
            ("other", "unknown_tool", 1),
        ] {
            let want = format!(
                "toolhost_calls_total{{tool=\"{tool}\",plugin=\"\",outcome=\"{outcome}\",tenant=\"default\"}} {n}\n"
            );
            assert!(text.contains(&want), "{want}{text}");
        }
        assert!(!text.contains("no-such-tool"), "{text}");
        assert!(
            text.contains("toolhost_call_stage_duration_seconds_count{stage=\"approval_wait\",plugin=\"\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("toolhost_call_duration_seconds_count{tool=\"ok\",plugin=\"\",tenant=\"default\"} 4\n"),
            "{text}"
        );
        // A host without metrics hands its tools no observer.
        let bare = ToolHost::new();
        let seen = observed.clone();
        bare.register_tool(FnTool::arc(
            ToolSpec::new("ok", "", schema),
            move |ctx: CallContext, _| {
                if ctx.observer().is_some() {
                    seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                async { Ok(ToolOutput::text("fine")) }
            },
        ))
        .unwrap();
        bare.invoke_tool(CallContext::new(), "ok", Arguments::parse("{}").unwrap())
            .await
            .unwrap();
        assert_eq!(observed.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[test]
    fn x1_outcomes_name_the_error_kind() {
        let fault = |fault| {
            Err(ToolError::Sandbox {
                plugin: "p".into(),
                fault,
            })
        };
        assert_eq!(outcome(&Ok(ToolOutput::text("")), false), "ok");
        assert_eq!(
            outcome(&fault(SandboxFault::Trap("x".into())), false),
            "trap"
        );
        assert_eq!(
            outcome(&fault(SandboxFault::LimitExceeded("x".into())), false),
            "limit"
        );
        let rejected = Err(ToolError::Rejected {
            hook: "h".into(),
            reason: "r".into(),
        });
        assert_eq!(outcome(&rejected, false), "hook_rejected");
        assert_eq!(outcome(&rejected, true), "approval_denied");
        assert_eq!(
            outcome(&Err(ToolError::timeout(Duration::ZERO)), false),
            "timeout"
        );
    }
}
