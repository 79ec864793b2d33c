//! The data of one call's store: its WASI context built from the policy
//! alone, its limits, its deadline, and what the guest wrote.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, format_err};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_config::WasiConfigVariables;

use crate::settings::GuestConfig;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::v01::toolhost::plugin as v01;
use super::bindings::v02::toolhost::plugin as v02;
use super::bindings::v03::toolhost::plugin as v03;
use super::http::{HttpGrant, PolicyHttp};
use super::policy::{DirMode, PluginPolicy};
use toolhost_core::{Progress, ProgressSink};

/// What a log record counts for beyond its text, in the per-call volume.
const RECORD_OVERHEAD: usize = 64;

/// Most progress reports one call forwards; later ones are dropped.
pub(crate) const MAX_PROGRESS_REPORTS: usize = 1024;

/// A plugin's policy, resolved once at load: environment values read, limits
/// converted.
#[derive(Debug)]
pub(crate) struct ResolvedPolicy {
    /// The policy as granted in the configuration.
    pub(crate) granted: PluginPolicy,
    /// The granted environment variables that are set, with their values.
    pub(crate) env: Vec<(String, String)>,
    /// The network grant, shared by every call's store.
    pub(crate) net: Arc<toolhost_net::NetPolicy>,
    /// What `wasi:config/store` answers, shared by every call's store.
    pub(crate) config: Arc<GuestConfig>,
    /// What it answers a call of each tenant with settings or secrets of
    /// its own (rule A2).
    pub(crate) tenant_configs: std::collections::HashMap<String, Arc<GuestConfig>>,
}

impl ResolvedPolicy {
    pub(crate) fn new(policy: PluginPolicy, plugin: &str) -> Self {
        let env = policy
            .env
            .iter()
            .filter_map(|name| match std::env::var(name) {
                Ok(v) => Some((name.clone(), v)),
                Err(_) => {
                    tracing::warn!(plugin, var = %name, "granted environment variable is not set; the plugin will not see it");
                    None
                }
            })
            .collect();
        // A bound of the plugin's own on its name lookups in flight (rule
        // C4): a request the guest drops stops waiting for its lookup, but
        // the lookup's thread runs on until the resolver answers.
        let net = Arc::new(
            policy
                .net
                .clone()
                .with_max_lookups(policy.bounds.max_requests),
        );
        let config = Arc::new(GuestConfig::of(&policy));
        let tenant_configs = policy
            .tenants
            .iter()
            .map(|(tenant, overlay)| {
                let theirs = Arc::new(GuestConfig::of_tenant(&policy, overlay));
                (tenant.clone(), theirs)
            })
            .collect();
        Self {
            granted: policy,
            env,
            net,
            config,
            tenant_configs,
        }
    }

    /// What the outgoing requests of every call of `plugin` share.
    pub(crate) fn http_grant(&self, plugin: Arc<str>) -> Arc<HttpGrant> {
        Arc::new(HttpGrant::new(
            plugin,
            self.net.clone(),
            self.granted.bounds.max_requests,
            self.granted.secret_guard.clone(),
        ))
    }

    /// What `wasi:config/store` answers a call of `tenant` (`None`: the
    /// plugin's own, for listing, hooks and the system prompt).
    pub(crate) fn config_for(&self, tenant: Option<&str>) -> Arc<GuestConfig> {
        tenant
            .and_then(|t| self.tenant_configs.get(t))
            .unwrap_or(&self.config)
            .clone()
    }
}

/// The most random bytes one `get-random-bytes` (or its insecure twin)
/// hands over; a larger request traps, naming the limit.
pub(crate) const MAX_RANDOM_BYTES: u64 = 64 << 10;

/// The store data of one call.
pub(crate) struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_hooks: PolicyHttp,
    pub(crate) limiter: Limiter,
    pub(crate) deadline: Instant,
    /// A bound of [`GuestBounds`](super::policy::GuestBounds) the guest
    /// exceeded through a host call; the trap that follows is reported as
    /// this.
    pub(crate) bound_hit: Option<String>,
    log_bytes: usize,
    /// The table's capacity, for messages.
    pub(crate) max_handles: usize,
    max_log_record: usize,
    max_log_per_call: usize,
    /// What the guest wrote to stdout and stderr.
    pub(crate) output: Arc<GuestOutput>,
    /// Where the call's progress goes, if its caller asked for it.
    progress: Option<ProgressSink>,
    progress_reports: usize,
    /// What the guest reads through `wasi:config/store`.
    config: Arc<GuestConfig>,
}

impl StoreState {
    /// A store state that grants exactly what `resolved` says, for a call
    /// of `tenant` (see [`ResolvedPolicy::config_for`]) that ends at
    /// `deadline`. Outgoing requests go by `grant`, the plugin's, shared
    /// by all its instances (made from `resolved` by
    /// [`ResolvedPolicy::http_grant`]).
    pub(crate) fn new(
        grant: &Arc<HttpGrant>,
        resolved: &ResolvedPolicy,
        tenant: Option<&str>,
        deadline: Instant,
    ) -> wasmtime::Result<Self> {
        let policy = &resolved.granted;
        let output = GuestOutput::new(policy.max_log_bytes);
        let mut b = WasiCtxBuilder::new();
        b.stdout(output.pipe(STDOUT))
            .stderr(output.pipe(STDERR))
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .allow_blocking_current_thread(false)
            // One request of random bytes is made in one go on the async
            // worker, which no deadline interrupts: at most 64 KiB (about
            // 0.1 ms), not wasmtime-wasi's 64 MiB (rule C2); a guest wanting
            // more asks again.
            .max_random_size(MAX_RANDOM_BYTES);
        for (k, v) in &resolved.env {
            b.env(k, v);
        }
        for d in &policy.dirs {
            let perms = match d.mode {
                DirMode::ReadOnly => FsPerms::ReadOnly,
                DirMode::ReadWrite => FsPerms::ReadWrite,
            };
            b.preopened_dir(&d.host, &d.guest, perms)?;
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(policy.bounds.max_handles);
        Ok(Self {
            wasi: b.build(),
            table,
            http: {
                let mut http = WasiHttpCtx::new();
                http.set_field_size_limit(super::request_head::MAX_FIELDS_BYTES);
                http
            },
            http_hooks: PolicyHttp::new(grant.clone(), deadline),
            limiter: Limiter::new(policy.memory_bytes as usize),
            deadline,
            bound_hit: None,
            log_bytes: 0,
            max_handles: policy.bounds.max_handles,
            max_log_record: policy.bounds.max_log_record_bytes,
            max_log_per_call: policy.bounds.max_log_bytes_per_call,
            output,
            progress: None,
            progress_reports: 0,
            config: resolved.config_for(tenant),
        })
    }

    /// The plugin's name.
    pub(crate) fn plugin(&self) -> &Arc<str> {
        &self.http_hooks.grant().plugin
    }

    /// Every secret of the host, redacted from what the guest logs.
    fn secrets(&self) -> &toolhost_core::SecretSet {
        self.http_hooks.grant().guard.secrets()
    }

    /// What the guest reads through `wasi:config/store`.
    pub(crate) fn config(&self) -> &WasiConfigVariables {
        self.config.vars()
    }

    /// Forwards the guest's progress reports to `sink`.
    pub(crate) fn set_progress(&mut self, sink: Option<ProgressSink>) {
        self.progress = sink;
    }

    /// Why the host refused the guest's network requests during this call.
    pub(crate) fn network_denials(&self) -> Vec<String> {
        self.http_hooks.denials()
    }

    /// Sends what the guest wrote to stdout and stderr to the host's log.
    pub(crate) fn flush_output(&self) {
        for (stream, (text, cut)) in ["stdout", "stderr"].into_iter().zip(self.output.take()) {
            if !text.is_empty() {
                let text = self.secrets().redact(&text);
                tracing::info!(target: "toolhost::guest", plugin = %self.plugin(), stream, cut_bytes = cut, "{}", text.trim_end());
            }
        }
    }
}

impl StoreState {
    /// The call's resource table.
    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    /// Charges `bytes` that a handle holds in the host against the
    /// instance's memory limit (rule C11); past it the call fails, naming
    /// the limit and `what` asked.
    pub(crate) fn charge_host(&mut self, bytes: usize, what: &str) -> wasmtime::Result<()> {
        self.limiter.charge(bytes, what)
    }

    /// Gives back what [`charge_host`](Self::charge_host) took.
    pub(crate) fn refund_host(&mut self, bytes: usize) {
        self.limiter.refund(bytes);
    }

    /// Drops a directory stream the guest dropped, and gives back its
    /// charge.
    pub(crate) fn close_dir_stream(
        &mut self,
        stream: wasmtime::component::Resource<super::dirstream::DirStream>,
    ) -> wasmtime::Result<()> {
        self.table.delete(stream)?;
        self.limiter.refund(super::dirstream::STREAM_HOST_BYTES);
        Ok(())
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for StoreState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_hooks,
        }
    }
}

impl v01::types::Host for StoreState {}
impl v02::types::Host for StoreState {}
impl v03::types::Host for StoreState {}

/// A log record's severity, whichever version the guest speaks.
#[derive(Clone, Copy)]
enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl StoreState {
    /// Logs one record. A record over the record bound, or one that takes the
    /// call past its log volume, fails the call (rule C3).
    fn log(
        &mut self,
        level: Level,
        message: String,
        fields: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        let size = fields.iter().fold(message.len(), |n, (k, v)| {
            n.saturating_add(k.len() + v.len())
        });
        if size > self.max_log_record {
            return Err(self.exceed(format!(
                "log record limit of {} bytes (a record of {size} bytes)",
                self.max_log_record
            )));
        }
        // Each record costs the log more than its text (time, level,
        // plugin), so it counts for a little more.
        self.log_bytes = self.log_bytes.saturating_add(size + RECORD_OVERHEAD);
        if self.log_bytes > self.max_log_per_call {
            return Err(self.exceed(format!(
                "log limit of {} bytes per call",
                self.max_log_per_call
            )));
        }
        let fields: String = fields.iter().map(|(k, v)| format!(" {k}={v:?}")).collect();
        // What the guest logs is redacted of every secret (rule O2).
        let (message, fields) = (
            self.secrets().redact(&message),
            self.secrets().redact(&fields),
        );
        let plugin = &**self.plugin();
        match level {
            Level::Trace => tracing::trace!(target: "toolhost::guest", plugin, "{message}{fields}"),
            Level::Debug => tracing::debug!(target: "toolhost::guest", plugin, "{message}{fields}"),
            Level::Info => tracing::info!(target: "toolhost::guest", plugin, "{message}{fields}"),
            Level::Warn => tracing::warn!(target: "toolhost::guest", plugin, "{message}{fields}"),
            Level::Error => tracing::error!(target: "toolhost::guest", plugin, "{message}{fields}"),
        }
        Ok(())
    }

    fn remaining_ms(&mut self) -> Option<u64> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        Some(u64::try_from(left.as_millis()).unwrap_or(u64::MAX))
    }

    /// Forwards one progress report, if the caller asked for progress. A
    /// report past [`MAX_PROGRESS_REPORTS`], with a number that is not
    /// finite, or with a message over the log record bound is dropped: progress
    /// is advice, so it never fails the call.
    fn report_progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(sink) = &self.progress else {
            return;
        };
        self.progress_reports += 1;
        let finite = progress.is_finite() && total.is_none_or(f64::is_finite);
        let short = message
            .as_ref()
            .is_none_or(|m| m.len() <= self.max_log_record);
        if self.progress_reports > MAX_PROGRESS_REPORTS || !finite || !short {
            return;
        }
        sink.report(Progress {
            progress,
            total,
            message,
        });
    }
}

/// Each version's log level as the host's. (The versions' enums are
/// distinct types with the same cases.)
macro_rules! level_from {
    ($version:ident) => {
        impl From<$version::host::LogLevel> for Level {
            fn from(level: $version::host::LogLevel) -> Self {
                use $version::host::LogLevel as L;
                match level {
                    L::Trace => Self::Trace,
                    L::Debug => Self::Debug,
                    L::Info => Self::Info,
                    L::Warn => Self::Warn,
                    L::Error => Self::Error,
                }
            }
        }
    };
}

level_from!(v01);
level_from!(v02);
level_from!(v03);

impl v01::host::Host for StoreState {
    fn log(
        &mut self,
        level: v01::host::LogLevel,
        message: String,
        fields: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        StoreState::log(self, level.into(), message, fields)
    }

    fn remaining_ms(&mut self) -> wasmtime::Result<Option<u64>> {
        Ok(StoreState::remaining_ms(self))
    }
}

/// The `host` interface of a version that has `report-progress` (0.2 on).
macro_rules! host_with_progress {
    ($v:ident) => {
        impl $v::host::Host for StoreState {
            fn log(
                &mut self,
                level: $v::host::LogLevel,
                message: String,
                fields: Vec<(String, String)>,
            ) -> wasmtime::Result<()> {
                StoreState::log(self, level.into(), message, fields)
            }

            fn remaining_ms(&mut self) -> wasmtime::Result<Option<u64>> {
                Ok(StoreState::remaining_ms(self))
            }

            fn report_progress(
                &mut self,
                progress: f64,
                total: Option<f64>,
                message: Option<String>,
            ) -> wasmtime::Result<()> {
                StoreState::report_progress(self, progress, total, message);
                Ok(())
            }
        }
    };
}

host_with_progress!(v02);
host_with_progress!(v03);

impl StoreState {
    /// Records that the guest exceeded `bound`, and the error that stops it.
    fn exceed(&mut self, bound: String) -> wasmtime::Error {
        let error = format_err!("{bound} exceeded");
        self.bound_hit = Some(bound);
        error
    }
}

/// Bounds memory and tables, and remembers which limit was hit, so a trap
/// caused by a limit is reported as such.
///
/// The memory limit covers the guest's linear memory and what its handles
/// hold in the host on its behalf (rule C11): a directory listing is
/// charged here while it is open, so growing memory counts what the
/// listings hold, and a listing counts what memory holds.
pub(crate) struct Limiter {
    memory: usize,
    /// The largest linear memory granted so far.
    linear: usize,
    /// Host memory charged by open handles.
    host: usize,
    pub(crate) hit: Option<String>,
}

impl Limiter {
    const TABLE_ELEMENTS: usize = 100_000;

    fn new(memory: usize) -> Self {
        Self {
            memory,
            linear: 0,
            host: 0,
            hit: None,
        }
    }

    /// The limit as messages name it, with its configuration key.
    fn limit(&self) -> String {
        format!("memory limit of {} MiB (memory_mb)", self.memory >> 20)
    }

    /// Takes `bytes` of host memory for a handle (`what`) from the limit,
    /// or fails naming the limit, what the instance holds and what asked.
    pub(crate) fn charge(&mut self, bytes: usize, what: &str) -> wasmtime::Result<()> {
        let total = self.linear.saturating_add(self.host).saturating_add(bytes);
        if total > self.memory {
            self.hit = Some(format!(
                "{}: the guest's memory is {} KiB and its handles hold {} KiB in the host; {what} needs {} KiB more",
                self.limit(),
                self.linear >> 10,
                self.host >> 10,
                bytes.div_ceil(1 << 10)
            ));
            return Err(format_err!("memory limit exceeded"));
        }
        self.host += bytes;
        Ok(())
    }

    /// Gives back `bytes` a handle held.
    pub(crate) fn refund(&mut self, bytes: usize) {
        self.host = self.host.saturating_sub(bytes);
    }

    /// The largest linear memory the guest has had, in bytes (rule X1).
    pub(crate) fn high_water(&self) -> usize {
        self.linear
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired.saturating_add(self.host) > self.memory {
            let held = match self.host {
                0 => String::new(),
                host => format!(", and its handles hold {} KiB in the host", host >> 10),
            };
            self.hit = Some(format!(
                "memory limit of {} MiB (it asked for {} MiB{held})",
                self.memory >> 20,
                desired.div_ceil(1 << 20)
            ));
            return Err(format_err!("memory limit exceeded"));
        }
        self.linear = self.linear.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > Self::TABLE_ELEMENTS {
            self.hit = Some(format!("table limit of {} elements", Self::TABLE_ELEMENTS));
            return Err(format_err!("table limit exceeded"));
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        256
    }

    fn memories(&self) -> usize {
        16
    }
}

/// What a guest writes to stdout and stderr during one call, kept for the
/// host's log: the first `cap` bytes of each stream, and a count of the
/// rest. Writes never fail, so a guest that floods its output is not
/// trapped: the excess is dropped and the log says how much. Both streams
/// share one allocation, and a call that wrote nothing is flushed without
/// taking a lock.
pub(crate) struct GuestOutput {
    /// stdout, then stderr.
    streams: [Mutex<Captured>; 2],
    /// Whether either stream was written to.
    written: AtomicBool,
}

struct Captured {
    data: Vec<u8>,
    cap: usize,
    cut: u64,
}

const STDOUT: usize = 0;
const STDERR: usize = 1;

impl GuestOutput {
    fn new(cap: usize) -> Arc<Self> {
        let stream = || {
            Mutex::new(Captured {
                data: Vec::new(),
                cap,
                cut: 0,
            })
        };
        Arc::new(Self {
            streams: [stream(), stream()],
            written: AtomicBool::new(false),
        })
    }

    fn lock(&self, stream: usize) -> std::sync::MutexGuard<'_, Captured> {
        self.streams[stream]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The kept text of each stream (stdout, then stderr) and how many
    /// bytes of it were dropped; empties both.
    fn take(&self) -> [(String, u64); 2] {
        if !self.written.load(Ordering::Acquire) {
            return Default::default();
        }
        let take = |stream| {
            let mut c = self.lock(stream);
            let text = String::from_utf8_lossy(&c.data).into_owned();
            c.data.clear();
            (text, std::mem::take(&mut c.cut))
        };
        [take(STDOUT), take(STDERR)]
    }

    /// The kept text of stderr, leaving it in place.
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.lock(STDERR).data).into_owned()
    }

    /// The guest's end of `stream`.
    fn pipe(self: &Arc<Self>, stream: usize) -> CappedPipe {
        CappedPipe {
            output: self.clone(),
            stream,
        }
    }
}

/// One of a call's output streams, as the guest's WASI sees it.
#[derive(Clone)]
struct CappedPipe {
    output: Arc<GuestOutput>,
    stream: usize,
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut c = self.output.lock(self.stream);
        let room = c.cap.saturating_sub(c.data.len());
        let kept = buf.len().min(room);
        c.data.extend_from_slice(&buf[..kept]);
        c.cut += (buf.len() - kept) as u64;
        self.output.written.store(true, Ordering::Release);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt as _;

    use super::*;

    #[test]
    fn c4_a_plugins_name_lookups_are_bounded_by_its_requests_in_flight() {
        let mut policy = PluginPolicy::default();
        policy.bounds.max_requests = 3;
        let resolved = ResolvedPolicy::new(policy, "p");
        assert_eq!(resolved.net.max_lookups(), 3);
    }

    #[tokio::test]
    async fn w3_each_stream_keeps_its_first_bytes_and_counts_the_rest() {
        let output = GuestOutput::new(4);
        let (mut out, mut err) = (output.pipe(STDOUT), output.pipe(STDERR));
        err.write_all(b"hello").await.unwrap();
        out.write_all(b"ok").await.unwrap();
        err.write_all(b"!").await.unwrap();
        assert_eq!(output.stderr(), "hell", "peeking leaves it in place");
        assert_eq!(
            output.take(),
            [("ok".to_owned(), 0), ("hell".to_owned(), 2)]
        );
        // Taken: both are empty, and the count starts again.
        assert_eq!(output.take(), [(String::new(), 0), (String::new(), 0)]);
        err.write_all(b"again").await.unwrap();
        assert_eq!(output.take()[1], ("agai".to_owned(), 1));
    }

    #[tokio::test]
    async fn w3_a_stream_written_alone_is_taken_and_the_other_is_empty() {
        let output = GuestOutput::new(64);
        assert_eq!(output.take(), [(String::new(), 0), (String::new(), 0)]);
        output.pipe(STDERR).write_all(b"panicked").await.unwrap();
        assert_eq!(
            output.take(),
            [(String::new(), 0), ("panicked".to_owned(), 0)]
        );
    }
}
