//! Building a [`ToolHost`] from the configuration: [`Config::build_host`]
//! and the [`BuildOptions`] it takes.
//!
//! Contract: the configuration is [checked](Config::check) first, then the
//! host is made with validation, timeouts, approvals and `[[rules]]` as
//! the file says;
//! every plugin is fetched (held to the lock when the run is locked, its
//! signature verified when required), loaded under its policy and
//! registered, in name order; the built-in tools follow, then every MCP
//! server is started and its tools registered (extension `mcp.NAME`). The
//! host's own paths are protected in the returned sandbox (rule C5). On an
//! error nothing is left running: MCP servers already started are stopped.

use std::sync::Arc;
use std::time::Duration;

use toolhost_builtin::{BuiltinTool, BuiltinTools, SandboxedCode};
use toolhost_core::middleware::Logging;
use toolhost_core::quota::Quotas;
use toolhost_core::{ApproveAll, Approver, Cause, DenyAll, Metrics, ToolHost, Traces};
use toolhost_mcp::McpClient;
use toolhost_sandbox::{CodeSource, LoadError, Sandbox, WarmUp};

use super::builtin::interpreter_key;
use super::check::Settings;
use super::{ApprovalsEntry, Config, ConfigError};

impl Config {
    /// Builds a host: validation as configured, logging and timeout
    /// middleware, every plugin loaded and registered (in name order), the
    /// built-in tools, and every MCP server started and its tools registered
    /// (extension `mcp.NAME`). Returns the sandbox too, to load more plugins
    /// into. Call [`ToolHost::shutdown`] when done: it stops the MCP servers.
    pub async fn build_host(&self) -> Result<BuiltHost, ConfigError> {
        self.build_host_with(BuildOptions::new()).await
    }

    /// [`build_host`](Self::build_host), as `options` say: who answers hooks
    /// that ask for approval, and whether plugins and run_code's
    /// interpreters are loaded now or by the first call that needs them.
    pub async fn build_host_with(&self, options: BuildOptions) -> Result<BuiltHost, ConfigError> {
        // The engine is made on a thread of its own beside the check and
        // the plugins' registration (which needs none when a plugin is
        // listed from the cache), and waited for before anything is
        // served. The check's error comes first.
        let sandbox = Sandbox::starting_for(self.cache_dir(), self.live_instances());
        // Each plugin's settings are checked by its load below.
        self.check_with(Settings::AtLoad)?;
        let sandbox = sandbox.map_err(|e| ConfigError::build("host", e))?;
        let approver: Arc<dyn Approver> = match self.host.approvals {
            ApprovalsEntry::Ask => options.asker,
            ApprovalsEntry::Deny => Arc::new(DenyAll),
            ApprovalsEntry::Allow => Arc::new(ApproveAll),
        };
        let builder = ToolHost::builder()
            .rules(self.rule_set()?)
            .secrets(self.secret_set()?)
            .approver(approver)
            .approval_timeout(Duration::from_millis(self.host.approval_timeout_ms))
            .validate_arguments(self.host.validate_arguments)
            // The deadline starts when the call enters the pipeline, so the
            // approval wait and validation end by it too (rule C1).
            .call_timeout(Duration::from_millis(self.host.call_timeout_ms))
            .middleware(Logging)
            // A host that replaces another (a reload) counts on from its
            // quotas' usage (rule A3).
            .quotas(Arc::new(match &options.quotas {
                Some(previous) => self.quotas()?.continuing(previous),
                None => self.quotas()?,
            }));
        let builder = match &options.traces {
            Some(traces) => builder.traces(traces.clone()),
            None => builder,
        };
        let host = match &options.metrics {
            Some(metrics) => builder.metrics(metrics.clone()),
            None => builder,
        }
        .build();
        for p in self.protected_paths() {
            sandbox.protect(p.path, p.what);
        }
        let lock = if options.locked {
            Some(self.required_lock()?)
        } else {
            None
        };
        let keys = self.trusted_keys()?;
        let mut warming = Vec::new();
        for plugin in self.each_plugin() {
            let (name, key) = (plugin.name(), plugin.table_key());
            let policy = plugin.policy()?;
            let (fetched, pin) = plugin.fetch(lock.as_ref(), &keys).await?;
            let mut load = sandbox
                .plugin_bytes(name, fetched.bytes)
                .policy(policy)
                .lazy(options.lazy || options.warm_up);
            if let Some(pin) = pin {
                load = load.pin(pin);
            }
            let loaded = load.load().await.map_err(|e| match e {
                // Named as `check` names them.
                LoadError::Settings { source, .. } => plugin.settings_error(source),
                e => ConfigError::build(&key, e),
            })?;
            if let Some(metrics) = &options.metrics {
                match loaded.code_source() {
                    CodeSource::Cache => metrics.code_cache(true),
                    CodeSource::Compiled => metrics.code_cache(false),
                    // Not looked up yet: its first call loads it.
                    CodeSource::Deferred => {}
                }
            }
            if options.warm_up
                && let Some(warm_up) = loaded.warm_up()
            {
                warming.push(warm_up);
            }
            host.register_extension(loaded.into_extension())
                .await
                .map_err(|e| ConfigError::build(&key, e))?;
        }
        // An engine that could not be made stops the build here, before any
        // built-in tool or MCP server starts.
        sandbox.ready().map_err(|e| ConfigError::build("host", e))?;
        if let Some(mut config) = self.builtin_config()? {
            if let Some(code) = config
                .run_code_config()
                .filter(|_| config.offers(BuiltinTool::RunCode))
            {
                // Eagerly, the interpreters are loaded now, into the host's
                // sandbox, so that a bad file fails here rather than at the
                // first run; lazily, only their files are checked now.
                let code = if options.lazy {
                    SandboxedCode::new(sandbox.clone(), code.clone())
                } else {
                    SandboxedCode::load(sandbox.clone(), code.clone()).await
                }
                .map_err(|e| {
                    let key = e.language().map_or("run_code_wasm", interpreter_key);
                    ConfigError::build(format!("builtin.{key}"), e)
                })?;
                config = config.code_ops(Arc::new(code));
            }
            let tools = BuiltinTools::new(config).map_err(|e| ConfigError::Build {
                key: "builtin.workdir".into(),
                reason: "cannot open the working directory".into(),
                source: Some(Cause::new(e)),
            })?;
            host.register_extension(Arc::new(tools))
                .await
                .map_err(|e| ConfigError::build("builtin", e))?;
        }
        for name in self.mcp.keys() {
            let key = format!("mcp.{name}");
            let client =
                McpClient::new(self.mcp_server(name)?).map_err(|e| ConfigError::build(&key, e))?;
            if let Err(e) = host.register_extension(Arc::new(client)).await {
                // Servers already started are stopped, not left running.
                host.shutdown().await;
                return Err(ConfigError::build(&key, e));
            }
        }
        Ok(BuiltHost {
            host,
            sandbox,
            warming,
        })
    }
}

/// What [`Config::build_host`] builds: the host, and the sandbox its plugins
/// run in. Keep the sandbox for as long as the host serves calls (it
/// drives the plugins' deadlines), and load more plugins into it if needed.
#[non_exhaustive]
pub struct BuiltHost {
    /// The host, with every configured plugin, built-in tool and MCP
    /// server registered.
    pub host: ToolHost,
    /// The sandbox the plugins were loaded into.
    pub sandbox: Sandbox,
    /// With [`BuildOptions::warm_up`], the loads of the plugins whose code
    /// waits (registered from their cached tool lists), for the caller to
    /// run once it answers; empty otherwise.
    pub warming: Vec<WarmUp>,
}

impl Config {
    /// How many plugin instances this configuration can have alive at
    /// once: every plugin's `max_instances` and, when `run_code` is
    /// offered, its `max_instances` for each interpreter. The sandbox makes
    /// room for that many (at most [`Sandbox::MAX_LIVE_INSTANCES`]); a
    /// reload builds a sandbox of its own. A value the check refuses counts
    /// as given or as its default: the check's error comes first anyway.
    pub(crate) fn live_instances(&self) -> usize {
        let default = toolhost_sandbox::PluginPolicy::default().max_instances;
        let plugins = self
            .each_plugin()
            .map(|p| p.max_instances().unwrap_or(default))
            .fold(0usize, usize::saturating_add);
        let interpreters = self
            .builtin_config()
            .ok()
            .flatten()
            .filter(|b| b.offers(BuiltinTool::RunCode))
            .and_then(|b| {
                b.run_code_config()
                    .map(|c| c.languages().len().saturating_mul(c.policy().max_instances))
            })
            .unwrap_or(0);
        plugins.saturating_add(interpreters)
    }
}

/// How [`Config::build_host_with`] builds a host. The default: every hook's
/// request for approval is denied, and everything is loaded at once.
#[derive(Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// Answers hooks that ask for a person's approval when `[host]
    /// approvals` is `ask`.
    pub asker: Arc<dyn Approver>,
    /// Loads run_code's interpreters on their first run, and registers
    /// each plugin whose tool list the cache holds from that list, loading
    /// its code on first use
    /// ([`PluginLoad::lazy`](toolhost_sandbox::PluginLoad::lazy)), instead
    /// of loading everything now: a command that makes one call should not
    /// pay for plugins it does not use. Files, pins and policies are
    /// checked now either way.
    pub lazy: bool,
    /// Registers each plugin whose tool list the cache holds from that
    /// list, as [`lazy`](Self::lazy) does, and hands the load of its code
    /// back in [`BuiltHost::warming`], to be run in the background: a
    /// server answers as soon as it can list its tools, and its first
    /// calls find the code loaded (or wait for the load under way).
    /// run_code's interpreters are loaded now. A plugin whose list the
    /// cache does not hold (its first load, a changed wasm or policy) is
    /// loaded now, so a component that does not load still stops the
    /// build.
    pub warm_up: bool,
    /// Holds every plugin to `toolhost.lock` (which must exist and list
    /// each): a component that resolves to another digest is refused, and
    /// a component already in the store is used without asking its
    /// registry.
    pub locked: bool,
    /// Counts and times every call in these metrics (rule X1), and every
    /// plugin's compiled-code cache lookup; none by default. A host built
    /// to replace another is given the same, so counts carry on.
    pub metrics: Option<Metrics>,
    /// Makes a span of every call (rule X2); none by default. A host
    /// built to replace another is given the same.
    pub traces: Option<Traces>,
    /// The quotas of the host this one replaces, whose usage its own count
    /// on from (rule A3): a reload hands no tenant a fresh minute or free
    /// slots in flight. None by default: every quota starts unused.
    pub quotas: Option<Arc<Quotas>>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl BuildOptions {
    /// Deny every approval; load everything now.
    pub fn new() -> Self {
        Self {
            asker: Arc::new(DenyAll),
            lazy: false,
            warm_up: false,
            locked: false,
            metrics: None,
            traces: None,
            quotas: None,
        }
    }

    /// Counts every quota on from `previous`'s usage, if any (rule A3).
    pub fn quotas(mut self, previous: Option<Arc<Quotas>>) -> Self {
        self.quotas = previous;
        self
    }

    /// Makes a span of every call in `traces`, if any (rule X2).
    pub fn traces(mut self, traces: Option<Traces>) -> Self {
        self.traces = traces;
        self
    }

    /// Counts every call in `metrics`, if any (rule X1).
    pub fn metrics(mut self, metrics: Option<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Asks `asker` when `[host] approvals` is `ask`.
    pub fn asker(mut self, asker: Arc<dyn Approver>) -> Self {
        self.asker = asker;
        self
    }

    /// Loads what can wait on first use.
    pub fn lazy(mut self, lazy: bool) -> Self {
        self.lazy = lazy;
        self
    }

    /// Registers plugins from their cached tool lists and leaves the
    /// load of their code to the caller, in [`BuiltHost::warming`].
    pub fn warm_up(mut self, warm_up: bool) -> Self {
        self.warm_up = warm_up;
        self
    }

    /// Holds every plugin to `toolhost.lock`.
    pub fn locked(mut self, locked: bool) -> Self {
        self.locked = locked;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration whose cache directory is a file: no sandbox can be
    /// made for it. `extra` is appended.
    fn with_unusable_cache(extra: &str) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a-file"), b"").unwrap();
        std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
        let text = format!("[host]\ncache_dir = \"a-file\"\n{extra}");
        let config = Config::parse(&text, dir.path()).unwrap();
        (dir, config)
    }

    #[test]
    fn c4_the_sandbox_has_room_for_every_plugins_instances_and_run_codes() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["p.wasm", "js.wasm", "py.wasm"] {
            std::fs::write(dir.path().join(f), b"").unwrap();
        }
        let plugins = "[plugins.a]\nwasm = \"p.wasm\"\n\n\
                       [plugins.b]\nwasm = \"p.wasm\"\nmax_instances = 2\n";
        let code = "[builtin]\nworkdir = \".\"\nrun_code_wasm = \"js.wasm\"\n\
                    run_code_python_wasm = \"py.wasm\"\n";
        let live = |text: &str| Config::parse(text, dir.path()).unwrap().live_instances();
        // The default max_instances (4), 2, and 4 for each interpreter.
        assert_eq!(
            live(&format!("{plugins}{code}tools = [\"run_code\"]\n")),
            4 + 2 + 2 * 4
        );
        // Interpreters count only when run_code is offered.
        assert_eq!(live(&format!("{plugins}{code}")), 4 + 2);
        assert_eq!(
            live(&format!("{plugins}{code}tools = [\"read_file\"]\n")),
            4 + 2
        );
        assert_eq!(live(plugins), 4 + 2);
        assert_eq!(live(""), 0);
    }

    #[tokio::test]
    async fn a_build_reports_its_failed_check_before_its_sandbox() {
        let (_dir, config) =
            with_unusable_cache("[plugins.p]\nwasm = \"p.wasm\"\ninsecure = true\n");
        let err = config.build_host().await.err().unwrap();
        assert_eq!(
            err.to_string(),
            "plugins.p.insecure: applies only to a plugin pulled from a registry (wasm = \"oci://…\")"
        );
    }

    #[tokio::test]
    async fn a_build_that_passes_its_check_reports_a_sandbox_that_cannot_be_made() {
        let (_dir, config) = with_unusable_cache("");
        let err = crate::error::report(&config.build_host().await.err().unwrap());
        assert!(err.starts_with("host: cannot start the sandbox"), "{err}");
        assert!(err.contains("a-file"), "{err}");
    }
}
