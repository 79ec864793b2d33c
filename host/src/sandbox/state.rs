//! The data of one call's store: its WASI context built from the policy
//! alone, its limits, its deadline, and what the guest wrote.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, format_err};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::toolhost::plugin::{host, types};
use super::http::PolicyHttp;
use super::policy::{DirMode, PluginPolicy};

/// Most `log` lines a guest may write in one call.
const MAX_LOG_LINES: u32 = 256;
/// Longest `log` message kept, in bytes.
const MAX_LOG_MESSAGE: usize = 4096;

/// A plugin's policy, resolved once at load: environment values read, limits
/// converted.
#[derive(Debug)]
pub(crate) struct ResolvedPolicy {
    pub(crate) policy: PluginPolicy,
    pub(crate) env: Vec<(String, String)>,
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
        Self { policy, env }
    }
}

/// The store data of one call.
pub(crate) struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_hooks: PolicyHttp,
    pub(crate) limiter: Limiter,
    pub(crate) plugin: Arc<str>,
    pub(crate) deadline: Option<Instant>,
    log_lines: u32,
    pub(crate) stdout: CappedPipe,
    pub(crate) stderr: CappedPipe,
}

impl StoreState {
    /// A store state that grants exactly what `resolved` says.
    pub(crate) fn new(
        plugin: Arc<str>,
        resolved: &ResolvedPolicy,
        deadline: Option<Instant>,
    ) -> wasmtime::Result<Self> {
        let policy = &resolved.policy;
        let stdout = CappedPipe::new(policy.max_log_bytes);
        let stderr = CappedPipe::new(policy.max_log_bytes);
        let mut b = WasiCtxBuilder::new();
        b.stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .allow_blocking_current_thread(false);
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
        table.set_max_capacity(10_000);
        Ok(Self {
            wasi: b.build(),
            table,
            http: WasiHttpCtx::new(),
            http_hooks: PolicyHttp::new(plugin.clone(), policy.net.clone()),
            limiter: Limiter::new(policy.memory_bytes as usize),
            plugin,
            deadline,
            log_lines: 0,
            stdout,
            stderr,
        })
    }

    /// Why the host refused the guest's network requests during this call.
    pub(crate) fn network_denials(&self) -> Vec<String> {
        self.http_hooks.denials()
    }

    /// Sends what the guest wrote to stdout and stderr to the host's log.
    pub(crate) fn flush_output(&self) {
        for (stream, pipe) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let (text, cut) = pipe.take();
            if !text.is_empty() {
                tracing::info!(target: "toolhost::guest", plugin = %self.plugin, stream, cut_bytes = cut, "{}", text.trim_end());
            }
        }
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

impl types::Host for StoreState {}

impl host::Host for StoreState {
    fn log(&mut self, level: host::LogLevel, message: String, fields: Vec<(String, String)>) {
        self.log_lines += 1;
        if self.log_lines > MAX_LOG_LINES {
            if self.log_lines == MAX_LOG_LINES + 1 {
                tracing::warn!(target: "toolhost::guest", plugin = %self.plugin, "log line limit reached; further lines of this call are dropped");
            }
            return;
        }
        let mut message = message;
        if message.len() > MAX_LOG_MESSAGE {
            message.truncate(message.floor_char_boundary(MAX_LOG_MESSAGE));
            message.push_str(" […]");
        }
        let fields: String = fields
            .iter()
            .take(32)
            .map(|(k, v)| format!(" {k}={v:?}"))
            .collect();
        let plugin = &*self.plugin;
        match level {
            host::LogLevel::Trace => {
                tracing::trace!(target: "toolhost::guest", plugin, "{message}{fields}")
            }
            host::LogLevel::Debug => {
                tracing::debug!(target: "toolhost::guest", plugin, "{message}{fields}")
            }
            host::LogLevel::Info => {
                tracing::info!(target: "toolhost::guest", plugin, "{message}{fields}")
            }
            host::LogLevel::Warn => {
                tracing::warn!(target: "toolhost::guest", plugin, "{message}{fields}")
            }
            host::LogLevel::Error => {
                tracing::error!(target: "toolhost::guest", plugin, "{message}{fields}")
            }
        }
    }

    fn remaining_ms(&mut self) -> Option<u64> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64)
    }
}

/// Bounds memory and tables, and remembers which limit was hit, so a trap
/// caused by a limit is reported as such.
pub(crate) struct Limiter {
    memory: usize,
    pub(crate) hit: Option<String>,
}

impl Limiter {
    const TABLE_ELEMENTS: usize = 100_000;

    fn new(memory: usize) -> Self {
        Self { memory, hit: None }
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory {
            self.hit = Some(format!(
                "memory limit of {} MiB (it asked for {} MiB)",
                self.memory >> 20,
                desired.div_ceil(1 << 20)
            ));
            return Err(format_err!("memory limit exceeded"));
        }
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

/// A stdout/stderr sink that keeps the first `cap` bytes and counts the rest.
/// Writes never fail, so a guest that floods its output is not trapped: the
/// excess is dropped and the log says how much.
#[derive(Clone)]
pub(crate) struct CappedPipe(Arc<Mutex<Captured>>);

struct Captured {
    data: Vec<u8>,
    cap: usize,
    cut: u64,
}

impl CappedPipe {
    fn new(cap: usize) -> Self {
        Self(Arc::new(Mutex::new(Captured {
            data: Vec::new(),
            cap,
            cut: 0,
        })))
    }

    /// The kept text and how many bytes were dropped; empties the pipe.
    pub(crate) fn take(&self) -> (String, u64) {
        let mut c = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&c.data).into_owned();
        c.data.clear();
        (text, std::mem::take(&mut c.cut))
    }

    /// The kept text, leaving it in place.
    pub(crate) fn peek(&self) -> String {
        let c = self.0.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&c.data).into_owned()
    }
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
        let mut c = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let room = c.cap.saturating_sub(c.data.len());
        let kept = buf.len().min(room);
        c.data.extend_from_slice(&buf[..kept]);
        c.cut += (buf.len() - kept) as u64;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
