//! The host's configuration file, `toolhost.toml` (rule W2).
//!
//! ```toml
//! [host]
//! validate_arguments = true     # check arguments against each tool's schema
//! call_timeout_ms = 30000       # every call's deadline
//! cache_dir = ".toolhost-cache" # compiled plugin code (default: ~/.cache/toolhost)
//! approvals = "ask"             # a hook asks for approval: "ask" a person (the
//!                               # terminal, or the MCP client), "deny", "allow"
//! approval_timeout_ms = 120000  # no answer by then is a denial
//!
//! [plugins.notes]
//! wasm = "plugins/notes.wasm"   # relative to this file, or an OCI reference:
//!                               # "oci://HOST[:PORT]/REPO:TAG" or "…/REPO@sha256:…"
//! # sha256 = "…"                # optional pin, 64 hex digits: a different file is refused
//! # insecure = true             # plain HTTP to a registry not on loopback
//! # registry_hosts = ["pkg-containers.githubusercontent.com"]  # where the
//! #                             # registry may redirect, besides itself
//! # signed_by = ["release"]     # must carry a valid signature by one of these keys
//! dirs = [{ host = "notes", guest = "/notes", mode = "rw" }]
//! hosts = ["https://api.example.com"]   # outgoing HTTP grants
//! deny_hosts = ["internal.example.com"]
//! pin = { "api.example.com" = ["93.184.216.34"] }
//! env = ["LANG"]                # environment variables, by name
//! memory_mb = 64
//! timeout_ms = 10000
//! max_instances = 4
//! max_output_kb = 16384
//! # Bounds on what the plugin hands the host and holds (defaults shown):
//! max_tools = 256
//! max_description_bytes = 16384
//! max_schema_bytes = 65536
//! max_message_bytes = 16384     # rejection reasons, error messages, prompt
//! max_log_record_bytes = 8192
//! max_log_bytes_per_call = 262144
//! max_handles = 256             # open files, streams, … per instance
//! max_requests = 16             # outgoing HTTP requests in flight
//! hooks = "veto"                # an extension's hooks: "veto" (observe, reject,
//!                               # ask) or "rewrite" (also change arguments, results)
//!
//! [trust]                       # keys that sign plugins (wasmsign2; optional)
//! keys = { release = "keys/release.public" }  # name = public key file
//! require_signatures = false    # true: every plugin must be signed by one of them
//!
//! [builtin]                     # the built-in tools (optional)
//! workdir = "."                 # file tools cannot leave it
//! tools = ["read_file", "glob", "grep", "shell"]
//! search_backend = "native"     # or "ripgrep", "fd"
//! hosts = []                    # web_fetch and browse grants
//! shell_allow = ["ls", "cat", "git"]
//! shell_block = ["rm"]
//! shell_env = ["LANG"]
//! run_code_wasm = "target/wasm32-wasip2/release/run_js.wasm"  # run_code's JavaScript
//! run_code_python_wasm = "target/wasm32-wasip2/release/run_py.wasm"  # and Python
//! run_code_memory_mb = 64
//! run_code_timeout_ms = 10000
//!
//! [mcp.docs]                    # a remote MCP server's tools (rule E3)
//! command = ["python3", "docs_server.py"]  # or: url = "http://127.0.0.1:8000/mcp"
//! prefix = "docs"               # tools become docs.NAME (default: the table's name)
//! env = { DOCS_ROOT = "docs" }  # for a command, on top of toolhost's environment
//! cwd = "."                     # a command's directory (default: this file's)
//! bearer_token_env = "DOCS_TOKEN"  # for a url: the variable holding the token
//! timeout_ms = 30000            # each listing and call
//! connect_timeout_ms = 30000    # starting it and the handshake
//!
//! [agent]                       # for `toolhost agent` (see the agent module)
//! provider = "openai"
//! model = "gpt-4o-mini"
//! ```
//!
//! `toolhost.lock`, beside this file, records what each plugin resolved to
//! (`toolhost lock` writes it; `--locked` holds a run to it).
//!
//! Everything a plugin may do is listed under its table; nothing else is
//! granted. Unknown keys, missing files and directories, and out-of-range
//! limits are errors that name the key.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use toolhost_agent::AgentSection;
use toolhost_builtin::{
    BuiltinConfig, BuiltinTool, BuiltinTools, CodeConfig, CommandPolicy, Language, SandboxedCode,
    SearchBackend, ShellConfig,
};
use toolhost_core::middleware::Logging;
use toolhost_core::{ApproveAll, Approver, Cause, DenyAll, ToolHost, ToolSpec};
use toolhost_mcp::{McpClient, McpField, McpServerConfig, McpTransport};
use toolhost_net::NetPolicy;
pub use toolhost_sandbox::describe_policy;
use toolhost_sandbox::{
    DirGrant, DirMode, GuestBounds, HookPower, MAX_PLUGIN_MEMORY, PluginPolicy, ProtectedPath,
    Sandbox,
};
use toolhost_supply::{
    LOCK_FILE, LockEntry, LockFile, OCI_SCHEME, OciRef, PullOptions, Registry, Source, Store,
    Supplier, TrustedKeys,
};

/// A configuration error: the key (or file) it concerns, what is wrong,
/// and the underlying error when there is one, kept as the
/// [`source`](std::error::Error::source) (print the whole chain with
/// [`report`](toolhost_core::report)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
#[non_exhaustive]
pub struct ConfigError {
    /// Where: a dotted key such as `plugins.notes.dirs[0].host`, or the file.
    pub key: String,
    /// What is wrong.
    pub reason: String,
    /// The underlying error, if any.
    #[source]
    pub source: Option<Cause>,
}

impl ConfigError {
    fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            reason: reason.into(),
            source: None,
        }
    }

    /// `error`'s own text is the reason, its causes the source.
    fn wrap(key: impl Into<String>, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self {
            key: key.into(),
            reason: error.to_string(),
            source: Cause::source_of(error),
        }
    }

    /// `reason` says what could not be done; `source` says why.
    fn caused(
        key: impl Into<String>,
        reason: impl fmt::Display,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            key: key.into(),
            reason: reason.to_string(),
            source: Some(Cause::new(source)),
        }
    }
}

/// The `[host]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostSection {
    /// Validate arguments against each tool's schema (default true).
    pub validate_arguments: bool,
    /// Deadline of every call in milliseconds (default 30000).
    pub call_timeout_ms: u64,
    /// Where compiled plugin code is cached; relative to the file. Default:
    /// the user's cache directory.
    pub cache_dir: Option<PathBuf>,
    /// What happens when a hook asks for a person's approval (default
    /// `ask`).
    pub approvals: ApprovalsEntry,
    /// How long an approval may take before it counts as a denial, in
    /// milliseconds (default 120000).
    pub approval_timeout_ms: u64,
}

impl Default for HostSection {
    fn default() -> Self {
        Self {
            validate_arguments: true,
            call_timeout_ms: 30_000,
            cache_dir: None,
            approvals: ApprovalsEntry::Ask,
            approval_timeout_ms: 120_000,
        }
    }
}

/// `ask`, `deny` or `allow`: what a hook's request for approval meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalsEntry {
    /// Ask a person: at the terminal (`call`, `agent`) or the MCP client's
    /// user through elicitation (`serve`); with no one to ask, deny.
    #[default]
    Ask,
    /// Deny every such call without asking.
    Deny,
    /// Approve every such call without asking (for unattended runs where a
    /// person has agreed in advance).
    Allow,
}

/// A directory grant as written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirEntry {
    /// The host directory; relative to the file.
    pub host: PathBuf,
    /// Where the plugin sees it.
    pub guest: String,
    /// `ro` (default) or `rw`.
    #[serde(default)]
    pub mode: ModeEntry,
}

/// `ro` or `rw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum ModeEntry {
    /// Read only.
    #[default]
    #[serde(rename = "ro")]
    ReadOnly,
    /// Read and write.
    #[serde(rename = "rw")]
    ReadWrite,
}

/// `veto` or `rewrite`: what an extension's hooks may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HooksEntry {
    /// Observe, reject and ask; never change a call.
    #[default]
    Veto,
    /// Also rewrite arguments and replace results.
    Rewrite,
}

/// A `[plugins.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSection {
    /// The component file, relative to the file, or an OCI reference
    /// (`oci://HOST[:PORT]/REPO:TAG`, `oci://HOST[:PORT]/REPO@sha256:…`).
    pub wasm: PathBuf,
    /// The component's expected sha256, in hex.
    pub sha256: Option<String>,
    /// Reach the plugin's registry over plain HTTP though it is not on
    /// loopback (default false; loopback registries always are).
    #[serde(default)]
    pub insecure: bool,
    /// The hosts besides the registry itself that its redirects may reach
    /// (`[scheme://]host[:port]`, names or addresses; rule S4).
    #[serde(default)]
    pub registry_hosts: Vec<String>,
    /// The `[trust]` keys one of which must have signed the plugin.
    #[serde(default)]
    pub signed_by: Vec<String>,
    /// Directory grants.
    #[serde(default)]
    pub dirs: Vec<DirEntry>,
    /// Outgoing HTTP grants (`[scheme://]host[:port]`, names or addresses).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Destinations refused even if granted.
    #[serde(default)]
    pub deny_hosts: Vec<String>,
    /// Names resolved to fixed addresses instead of DNS.
    #[serde(default)]
    pub pin: BTreeMap<String, Vec<IpAddr>>,
    /// Environment variables the plugin may read.
    #[serde(default)]
    pub env: Vec<String>,
    /// Memory limit in MiB (default 64).
    pub memory_mb: Option<u64>,
    /// Per-call time limit in milliseconds (default 10000).
    pub timeout_ms: Option<u64>,
    /// Instances alive at once (default 4).
    pub max_instances: Option<usize>,
    /// Largest result in KiB (default 16384).
    pub max_output_kb: Option<usize>,
    /// Most tools the plugin may list (default 256).
    pub max_tools: Option<usize>,
    /// Longest tool description in bytes (default 16384).
    pub max_description_bytes: Option<usize>,
    /// Largest parameters schema in bytes (default 65536).
    pub max_schema_bytes: Option<usize>,
    /// Longest rejection reason, error message or prompt in bytes (default
    /// 16384).
    pub max_message_bytes: Option<usize>,
    /// Largest log record in bytes (default 8192).
    pub max_log_record_bytes: Option<usize>,
    /// Most log bytes per call (default 262144).
    pub max_log_bytes_per_call: Option<usize>,
    /// Most handles (open files, streams, …) per instance (default 256).
    pub max_handles: Option<usize>,
    /// Most outgoing HTTP requests in flight (default 16).
    pub max_requests: Option<usize>,
    /// What the plugin's hooks may do, if it is an extension (default
    /// `veto`).
    #[serde(default)]
    pub hooks: HooksEntry,
}

/// The `[builtin]` table: the built-in tools and their working directory.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuiltinSection {
    /// The working directory the file tools are confined to; relative to
    /// the file.
    pub workdir: PathBuf,
    /// The tools to offer, by name (default: the file and search tools).
    pub tools: Option<Vec<String>>,
    /// `native` (default), `ripgrep` or `fd`.
    pub search_backend: Option<String>,
    /// Network grants of `web_fetch` and `browse`.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Destinations refused even if granted.
    #[serde(default)]
    pub deny_hosts: Vec<String>,
    /// Commands the shell may run (all others refused).
    pub shell_allow: Option<Vec<String>>,
    /// Commands the shell refuses.
    #[serde(default)]
    pub shell_block: Vec<String>,
    /// Environment variables the shell's commands see.
    #[serde(default)]
    pub shell_env: Vec<String>,
    /// The JavaScript interpreter component of `run_code` (the `run-js`
    /// plugin's `run_js.wasm`); relative to the file. This or
    /// `run_code_python_wasm` is required when `run_code` is offered.
    pub run_code_wasm: Option<PathBuf>,
    /// The Python interpreter component of `run_code` (the `run-py`
    /// plugin's `run_py.wasm`); relative to the file.
    pub run_code_python_wasm: Option<PathBuf>,
    /// Memory limit of one `run_code` run, in MiB (default 64).
    pub run_code_memory_mb: Option<u64>,
    /// Time limit of one `run_code` run, in milliseconds (default 10000).
    pub run_code_timeout_ms: Option<u64>,
}

/// A `[mcp.NAME]` table: a remote MCP server whose tools join the registry
/// (rule E3). Exactly one of `command` and `url`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// The server's command line, started with MCP on its stdin and stdout.
    pub command: Option<Vec<String>>,
    /// The server's streamable HTTP endpoint.
    pub url: Option<String>,
    /// Prefix of its tools' names (default: the table's name; `""` for
    /// none).
    pub prefix: Option<String>,
    /// Environment variables set for the command, on top of toolhost's own.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The command's working directory; relative to the file (default: the
    /// file's directory).
    pub cwd: Option<PathBuf>,
    /// The environment variable that holds the bearer token for `url` (the
    /// token itself is never in the file).
    pub bearer_token_env: Option<String>,
    /// Time limit of each listing and call in milliseconds (default 30000).
    pub timeout_ms: Option<u64>,
    /// Time limit of starting the server and the handshake in milliseconds
    /// (default 30000).
    pub connect_timeout_ms: Option<u64>,
}

/// The `[trust]` table: who may sign plugins.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustSection {
    /// Public keys by name (wasmsign2's format, PEM, DER or OpenSSH
    /// ed25519); relative to the file.
    #[serde(default)]
    pub keys: BTreeMap<String, PathBuf>,
    /// Every plugin must carry a valid signature by one of the keys (those
    /// with `signed_by`, by one of theirs). Default false: only plugins with
    /// `signed_by` are checked.
    #[serde(default)]
    pub require_signatures: bool,
}

/// A parsed `toolhost.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The `[host]` table.
    pub host: HostSection,
    /// The plugins, by name, in name order.
    pub plugins: BTreeMap<String, PluginSection>,
    /// The `[builtin]` table, if the built-in tools are wanted.
    pub builtin: Option<BuiltinSection>,
    /// The remote MCP servers, by name, in name order.
    pub mcp: BTreeMap<String, McpSection>,
    /// The `[agent]` table, for `toolhost agent`.
    pub agent: Option<AgentSection>,
    /// The `[trust]` table, if plugins are signed.
    pub trust: Option<TrustSection>,
    /// The directory relative paths are resolved against.
    pub base_dir: PathBuf,
    /// The file it was read from, if it was read from one.
    pub file: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    host: HostSection,
    #[serde(default)]
    plugins: BTreeMap<String, PluginSection>,
    builtin: Option<BuiltinSection>,
    #[serde(default)]
    mcp: BTreeMap<String, McpSection>,
    agent: Option<AgentSection>,
    trust: Option<TrustSection>,
}

impl Config {
    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::caused(path.display().to_string(), "cannot read", e))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut config = Self::parse(&text, &base).map_err(|e| {
            if e.key.is_empty() {
                ConfigError {
                    key: path.display().to_string(),
                    ..e
                }
            } else {
                e
            }
        })?;
        config.file = Some(path.to_owned());
        Ok(config)
    }

    /// Parses configuration text; relative paths resolve against `base_dir`.
    /// Syntax errors and unknown keys come back with an empty key and
    /// toml's message, which names the key and line.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Self, ConfigError> {
        let file: File =
            toml::from_str(text).map_err(|e| ConfigError::new("", e.to_string().trim_end()))?;
        for name in file.plugins.keys() {
            ToolSpec::validate_name(name).map_err(|e| {
                ConfigError::caused(format!("plugins.{name}"), "invalid plugin name", e)
            })?;
        }
        for name in file.mcp.keys() {
            ToolSpec::validate_name(name).map_err(|e| {
                ConfigError::caused(format!("mcp.{name}"), "invalid server name", e)
            })?;
        }
        Ok(Self {
            host: file.host,
            plugins: file.plugins,
            builtin: file.builtin,
            mcp: file.mcp,
            agent: file.agent,
            trust: file.trust,
            base_dir: base_dir.to_owned(),
            file: None,
        })
    }

    fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_owned()
        } else {
            self.base_dir.join(p)
        }
    }

    /// Where plugin `name`'s component comes from: its file (resolved
    /// against this file's directory, not checked to exist) or its OCI
    /// reference (checked to parse).
    pub fn source(&self, name: &str) -> Result<Source, ConfigError> {
        let section = self.section(name)?;
        match section.wasm.to_str() {
            Some(text) if text.starts_with(OCI_SCHEME) => OciRef::parse(text)
                .map(Source::Oci)
                .map_err(|e| ConfigError::wrap(format!("plugins.{name}.wasm"), e)),
            _ => Ok(Source::File(self.resolve(&section.wasm))),
        }
    }

    /// Plugin `name`'s `wasm` value as written: what `toolhost.lock`
    /// records it under.
    pub fn source_text(&self, name: &str) -> Result<String, ConfigError> {
        Ok(self.section(name)?.wasm.to_string_lossy().into_owned())
    }

    /// The component file of plugin `name`, checked to exist. A plugin
    /// from a registry has none.
    pub fn wasm_path(&self, name: &str) -> Result<PathBuf, ConfigError> {
        let key = format!("plugins.{name}.wasm");
        let Source::File(path) = self.source(name)? else {
            return Err(ConfigError::new(
                key,
                "is an OCI reference, not a file (the plugin store holds its component)",
            ));
        };
        if !path.is_file() {
            return Err(ConfigError::new(
                key,
                format!(
                    "{} does not exist (build the plugins first, e.g. `make plugins`)",
                    path.display()
                ),
            ));
        }
        Ok(path)
    }

    fn section(&self, name: &str) -> Result<&PluginSection, ConfigError> {
        self.plugins
            .get(name)
            .ok_or_else(|| ConfigError::new(format!("plugins.{name}"), "no such plugin"))
    }

    /// The policy of plugin `name`, checked: directories exist, rules parse,
    /// limits are in range.
    pub fn policy(&self, name: &str) -> Result<PluginPolicy, ConfigError> {
        let s = self.section(name)?;
        let key = |k: &str| format!("plugins.{name}.{k}");
        let mut dirs = Vec::new();
        for (i, d) in s.dirs.iter().enumerate() {
            let host = self.resolve(&d.host);
            if !host.is_dir() {
                return Err(ConfigError::new(
                    format!("plugins.{name}.dirs[{i}].host"),
                    format!("directory {} does not exist", host.display()),
                ));
            }
            dirs.push(DirGrant {
                host,
                guest: d.guest.clone(),
                mode: match d.mode {
                    ModeEntry::ReadOnly => DirMode::ReadOnly,
                    ModeEntry::ReadWrite => DirMode::ReadWrite,
                },
            });
        }
        let mut net = NetPolicy::new(&s.hosts, &s.deny_hosts)
            .map_err(|r| ConfigError::new(key("hosts"), r.to_string()))?;
        for (host, addrs) in &s.pin {
            net = net.pin(host, addrs.clone());
        }
        let defaults = PluginPolicy::default();
        let policy = PluginPolicy {
            dirs,
            net,
            env: s.env.clone(),
            memory_bytes: s
                .memory_mb
                .map_or(defaults.memory_bytes, |mb| mb.saturating_mul(1 << 20)),
            timeout: s.timeout_ms.map_or(defaults.timeout, Duration::from_millis),
            max_instances: s.max_instances.unwrap_or(defaults.max_instances),
            max_output_bytes: s
                .max_output_kb
                .map_or(defaults.max_output_bytes, |kb| kb.saturating_mul(1024)),
            max_log_bytes: defaults.max_log_bytes,
            bounds: bounds(s),
            hooks: match s.hooks {
                HooksEntry::Veto => HookPower::Veto,
                HooksEntry::Rewrite => HookPower::Rewrite,
            },
        };
        policy
            .validate()
            .map_err(|r| ConfigError::new(format!("plugins.{name}"), r.to_string()))?;
        toolhost_sandbox::check_grants(&policy.dirs, &self.protected_paths())
            .map_err(|r| ConfigError::new(key("dirs"), r.to_string()))?;
        Ok(policy)
    }

    /// The host's own paths that no plugin may be granted (rule C5): this
    /// file, the compiled-code cache and its key, and every plugin's and
    /// interpreter's wasm.
    pub fn protected_paths(&self) -> Vec<ProtectedPath> {
        let mut paths = Vec::new();
        if let Some(file) = &self.file {
            paths.push(ProtectedPath::new(file, "the configuration file"));
        }
        if let Some(dir) = self.cache_dir() {
            paths.push(ProtectedPath::new(
                Sandbox::cache_key_path(&dir),
                "the compiled-code cache's key",
            ));
            paths.push(ProtectedPath::new(dir, "the compiled-code cache"));
        }
        for name in self.plugins.keys() {
            if let Ok(Source::File(path)) = self.source(name) {
                paths.push(ProtectedPath::new(
                    path,
                    format!("the wasm of plugin `{name}`"),
                ));
            }
        }
        paths.push(ProtectedPath::new(self.lock_path(), "the lock file"));
        if let Some(trust) = &self.trust {
            for (name, key) in &trust.keys {
                paths.push(ProtectedPath::new(
                    self.resolve(key),
                    format!("the trusted key `{name}`"),
                ));
            }
        }
        if let Some(b) = &self.builtin {
            for language in Language::ALL {
                if let Some(p) = interpreter_key(b, language) {
                    paths.push(ProtectedPath::new(
                        self.resolve(p),
                        format!("run_code's {language} interpreter"),
                    ));
                }
            }
        }
        paths
    }

    /// Checks every plugin's file and policy, the built-in tools' settings
    /// and the MCP servers' tables, without loading or starting anything.
    pub fn check(&self) -> Result<(), ConfigError> {
        let keys = self.trusted_keys()?;
        for (name, section) in &self.plugins {
            match self.source(name)? {
                Source::File(_) => {
                    self.wasm_path(name)?;
                    for (key, set) in [
                        ("insecure", section.insecure),
                        ("registry_hosts", !section.registry_hosts.is_empty()),
                    ] {
                        if set {
                            return Err(ConfigError::new(
                                format!("plugins.{name}.{key}"),
                                "applies only to a plugin pulled from a registry (wasm = \"oci://…\")",
                            ));
                        }
                    }
                }
                Source::Oci(_) if self.store().is_none() => {
                    return Err(ConfigError::new(
                        format!("plugins.{name}.wasm"),
                        "a plugin from a registry needs the plugin store, which lives in the \
                         cache directory: set [host] cache_dir",
                    ));
                }
                _ => {}
            }
            self.policy(name)?;
            if let Some(pin) = &section.sha256 {
                check_digest(name, pin)?;
            }
            for (i, key) in section.signed_by.iter().enumerate() {
                if !keys.contains(key) {
                    return Err(ConfigError::new(
                        format!("plugins.{name}.signed_by[{i}]"),
                        format!("no key `{key}` in [trust] keys"),
                    ));
                }
            }
        }
        if let Some(trust) = &self.trust
            && trust.require_signatures
            && trust.keys.is_empty()
        {
            return Err(ConfigError::new(
                "trust.require_signatures",
                "no plugin could be signed: [trust] keys is empty",
            ));
        }
        self.builtin_config()?;
        for name in self.mcp.keys() {
            self.mcp_server(name)?;
        }
        Ok(())
    }

    /// The remote MCP server `name`, checked: exactly one of `command` and
    /// `url`, keys that fit the transport, the directory and the token's
    /// variable present. Errors name the key.
    pub fn mcp_server(&self, name: &str) -> Result<McpServerConfig, ConfigError> {
        let s = self
            .mcp
            .get(name)
            .ok_or_else(|| ConfigError::new(format!("mcp.{name}"), "no such MCP server"))?;
        let key = |k: &str| format!("mcp.{name}.{k}");
        let mut server = match (&s.command, &s.url) {
            (Some(argv), None) => {
                if s.bearer_token_env.is_some() {
                    return Err(ConfigError::new(
                        key("bearer_token_env"),
                        "applies to a `url`, not a `command`",
                    ));
                }
                let cwd = self.resolve(s.cwd.as_deref().unwrap_or(Path::new("")));
                let cwd = if cwd.as_os_str().is_empty() {
                    None
                } else {
                    Some(cwd)
                };
                if let Some(dir) = cwd.as_ref().filter(|d| !d.is_dir()) {
                    return Err(ConfigError::new(
                        key("cwd"),
                        format!("directory {} does not exist", dir.display()),
                    ));
                }
                let transport = McpTransport::Command {
                    argv: argv.clone(),
                    env: s.env.clone(),
                    cwd,
                };
                McpServerConfig::new(name, transport)
            }
            (None, Some(url)) => {
                for (k, set) in [("env", !s.env.is_empty()), ("cwd", s.cwd.is_some())] {
                    if set {
                        return Err(ConfigError::new(
                            key(k),
                            "applies to a `command`, not a `url`",
                        ));
                    }
                }
                let bearer_token = match &s.bearer_token_env {
                    None => None,
                    Some(var) => Some(std::env::var(var).map_err(|_| {
                        ConfigError::new(
                            key("bearer_token_env"),
                            format!("the environment variable `{var}` is not set"),
                        )
                    })?),
                };
                McpServerConfig::new(
                    name,
                    McpTransport::Http {
                        url: url.clone(),
                        bearer_token,
                    },
                )
            }
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    format!("mcp.{name}"),
                    "give either `command` or `url`, not both",
                ));
            }
            (None, None) => {
                return Err(ConfigError::new(
                    format!("mcp.{name}"),
                    "give `command` (a server started over stdio) or `url` (streamable HTTP)",
                ));
            }
        };
        if let Some(prefix) = &s.prefix {
            server = server.prefix(prefix.clone());
        }
        if let Some(ms) = s.timeout_ms {
            server = server.timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = s.connect_timeout_ms {
            server = server.connect_timeout(Duration::from_millis(ms));
        }
        server.validate().map_err(|e| {
            let at = match e.field {
                McpField::Name => format!("mcp.{name}"),
                McpField::Prefix => key("prefix"),
                McpField::Command => key("command"),
                McpField::Url => key("url"),
                McpField::Timeout => key("timeout_ms"),
                McpField::ConnectTimeout => key("connect_timeout_ms"),
            };
            ConfigError {
                key: at,
                reason: e.reason,
                source: e.source,
            }
        })?;
        Ok(server)
    }

    /// The built-in tools' configuration, if `[builtin]` is present.
    pub fn builtin_config(&self) -> Result<Option<BuiltinConfig>, ConfigError> {
        let Some(b) = &self.builtin else {
            return Ok(None);
        };
        let key = |k: &str| format!("builtin.{k}");
        let workdir = self.resolve(&b.workdir);
        if !workdir.is_dir() {
            return Err(ConfigError::new(
                key("workdir"),
                format!("directory {} does not exist", workdir.display()),
            ));
        }
        let mut config = BuiltinConfig::new(workdir);
        if let Some(names) = &b.tools {
            let tools = names
                .iter()
                .map(|n| {
                    BuiltinTool::ALL
                        .into_iter()
                        .find(|t| t.name() == n)
                        .ok_or_else(|| {
                            let known: Vec<&str> =
                                BuiltinTool::ALL.iter().map(|t| t.name()).collect();
                            ConfigError::new(
                                key("tools"),
                                format!("unknown tool `{n}` (known: {})", known.join(", ")),
                            )
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            config = config.tools(tools);
        }
        if let Some(backend) = &b.search_backend {
            config = config.search_backend(match backend.as_str() {
                "native" => SearchBackend::Native,
                "ripgrep" => SearchBackend::Ripgrep,
                "fd" => SearchBackend::Fd,
                other => {
                    return Err(ConfigError::new(
                        key("search_backend"),
                        format!("`{other}` is not one of native, ripgrep, fd"),
                    ));
                }
            });
        }
        let net = NetPolicy::new(&b.hosts, &b.deny_hosts)
            .map_err(|r| ConfigError::new(key("hosts"), r.to_string()))?;
        let mut policy = CommandPolicy::open().block(b.shell_block.iter().cloned());
        if let Some(allow) = &b.shell_allow {
            policy = policy.allow(allow.iter().cloned());
        }
        let shell = ShellConfig {
            policy,
            grant_env: b.shell_env.clone(),
            ..ShellConfig::default()
        };
        match self.code_config(b)? {
            Some(code) => config = config.run_code(code),
            None if config.offers(BuiltinTool::RunCode) => {
                return Err(ConfigError::new(
                    key("run_code_wasm"),
                    "required when `run_code` is offered (or `run_code_python_wasm`): the \
                     interpreter component, e.g. \"target/wasm32-wasip2/release/run_js.wasm\"",
                ));
            }
            None => {}
        }
        Ok(Some(config.net_policy(net).shell(shell)))
    }

    /// `run_code`'s interpreters and limits, if `run_code_wasm` or
    /// `run_code_python_wasm` is set: each file must exist and the limits
    /// be in range.
    fn code_config(&self, b: &BuiltinSection) -> Result<Option<CodeConfig>, ConfigError> {
        let key = |k: &str| format!("builtin.{k}");
        let mut code = CodeConfig::new();
        for language in Language::ALL {
            let Some(wasm) = interpreter_key(b, language) else {
                continue;
            };
            let wasm = self.resolve(wasm);
            if !wasm.is_file() {
                return Err(ConfigError::new(
                    key(interpreter_key_name(language)),
                    format!(
                        "{} does not exist (build the plugins first, e.g. `make plugins`)",
                        wasm.display()
                    ),
                ));
            }
            code = code.interpreter(language, wasm);
        }
        if code.interpreters.is_empty() {
            return Ok(None);
        }
        if let Some(mb) = b.run_code_memory_mb {
            let max = MAX_PLUGIN_MEMORY >> 20;
            if mb == 0 || mb > max {
                return Err(ConfigError::new(
                    key("run_code_memory_mb"),
                    format!("must be between 1 and {max}, not {mb}"),
                ));
            }
            code.memory_bytes = mb << 20;
        }
        if let Some(ms) = b.run_code_timeout_ms {
            if ms == 0 {
                return Err(ConfigError::new(
                    key("run_code_timeout_ms"),
                    "must be more than zero",
                ));
            }
            code.timeout = Duration::from_millis(ms);
        }
        Ok(Some(code))
    }

    /// `toolhost.lock`, beside this file.
    pub fn lock_path(&self) -> PathBuf {
        self.base_dir.join(LOCK_FILE)
    }

    /// The lock file, if there is one.
    pub fn lock_file(&self) -> Result<Option<LockFile>, ConfigError> {
        LockFile::read(&self.lock_path())
            .map_err(|e| ConfigError::wrap(self.lock_path().display().to_string(), e))
    }

    /// The plugin store (pulled components), in the cache directory.
    pub fn store(&self) -> Option<Store> {
        self.cache_dir().map(|d| Store::new(d.join("store")))
    }

    /// The keys of `[trust]`, read.
    pub fn trusted_keys(&self) -> Result<TrustedKeys, ConfigError> {
        let Some(trust) = &self.trust else {
            return Ok(TrustedKeys::default());
        };
        TrustedKeys::load(
            trust
                .keys
                .iter()
                .map(|(name, path)| (name.clone(), self.resolve(path))),
        )
        .map_err(|e| {
            let name = match &e {
                toolhost_supply::KeyError::Read { name, .. }
                | toolhost_supply::KeyError::Format { name, .. } => name.clone(),
                _ => String::new(),
            };
            ConfigError::wrap(format!("trust.keys.{name}"), e)
        })
    }

    /// The keys one of which must have signed plugin `name`: its
    /// `signed_by`, else every key when `[trust] require_signatures`, else
    /// none (no signature is required).
    pub fn accepted_keys(&self, name: &str) -> Result<Vec<String>, ConfigError> {
        let section = self.section(name)?;
        if !section.signed_by.is_empty() {
            return Ok(section.signed_by.clone());
        }
        Ok(match &self.trust {
            Some(t) if t.require_signatures => t.keys.keys().cloned().collect(),
            _ => Vec::new(),
        })
    }

    /// The registry client for plugin `name`.
    pub fn registry(&self, name: &str) -> Result<Registry, ConfigError> {
        Ok(Registry::new(self.pull_options(name)?))
    }

    /// How plugin `name` is pulled: its `insecure` and its
    /// `registry_hosts`, the only hosts besides the registry its redirects
    /// may reach (rule S4). The error names a grant that does not parse.
    pub fn pull_options(&self, name: &str) -> Result<PullOptions, ConfigError> {
        let section = self.section(name)?;
        let hosts = NetPolicy::new(&section.registry_hosts, &[] as &[&str])
            .map_err(|e| ConfigError::wrap(format!("plugins.{name}.registry_hosts"), e))?;
        Ok(PullOptions::default()
            .insecure(section.insecure)
            .registry_hosts(hosts))
    }

    /// Plugin `name`'s bytes, from its file or the store or its registry,
    /// checked against `toolhost.lock` when `locked` and against its
    /// signature when one is required; and the digest the sandbox's load
    /// must find (its `sha256` pin, else the digest the fetch checked).
    pub async fn fetch_plugin(
        &self,
        name: &str,
        locked: Option<&LockFile>,
        keys: &TrustedKeys,
    ) -> Result<(toolhost_supply::Fetched, Option<String>), ConfigError> {
        let key = format!("plugins.{name}");
        let lock = locked.map(|l| l.plugins.get(name));
        let fetched = self
            .supplier()
            .fetch(
                name,
                &self.source(name)?,
                &self.source_text(name)?,
                &self.registry(name)?,
                lock,
            )
            .await
            .map_err(|e| ConfigError::wrap(format!("{key}.wasm"), e))?;
        let accepted = self.accepted_keys(name)?;
        if !accepted.is_empty() {
            keys.verify(name, &fetched.bytes, &accepted)
                .map_err(|e| ConfigError::wrap(format!("{key}.signed_by"), e))?;
        }
        let pin = self.section(name)?.sha256.clone();
        let pin = pin.or_else(|| fetched.wasm.map(|d| d.hex()));
        Ok((fetched, pin))
    }

    /// What plugin `name`'s source resolves to now, for `toolhost lock`:
    /// its file hashed, or its reference asked of the registry (and pulled
    /// into the store if the store lacks it).
    pub async fn lock_entry(&self, name: &str) -> Result<LockEntry, ConfigError> {
        self.supplier()
            .lock_entry(
                name,
                &self.source(name)?,
                &self.source_text(name)?,
                &self.registry(name)?,
            )
            .await
            .map_err(|e| ConfigError::wrap(format!("plugins.{name}.wasm"), e))
    }

    /// Fetches plugins into this configuration's store. Without a cache
    /// directory there is no store; [`check`](Self::check) refuses every
    /// registry plugin then, so the placeholder is never written to.
    fn supplier(&self) -> Supplier {
        Supplier::new(self.store().unwrap_or_else(|| Store::new(".")))
    }

    /// The lock file a locked run holds to: it must exist.
    pub fn required_lock(&self) -> Result<LockFile, ConfigError> {
        self.lock_file()?.ok_or_else(|| {
            ConfigError::new(
                self.lock_path().display().to_string(),
                "there is no lock file; write it with `toolhost lock`",
            )
        })
    }

    /// The compiled-code cache directory in effect.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        match &self.host.cache_dir {
            Some(d) => Some(self.resolve(d)),
            None => Sandbox::default_cache_dir(),
        }
    }

    /// Builds a host: validation as configured, logging and timeout
    /// middleware, every plugin loaded and registered (in name order), the
    /// built-in tools, and every MCP server started and its tools registered
    /// (extension `mcp.NAME`). Returns the sandbox too, to load more plugins
    /// into. Call [`ToolHost::shutdown`] when done: it stops the MCP servers.
    pub async fn build_host(&self) -> Result<(ToolHost, Sandbox), ConfigError> {
        self.build_host_with(BuildOptions::new()).await
    }

    /// [`build_host`](Self::build_host), as `options` say: who answers hooks
    /// that ask for approval, and whether plugins and run_code's
    /// interpreters are loaded now or by the first call that needs them.
    pub async fn build_host_with(
        &self,
        options: BuildOptions,
    ) -> Result<(ToolHost, Sandbox), ConfigError> {
        self.check()?;
        let approver: Arc<dyn Approver> = match self.host.approvals {
            ApprovalsEntry::Ask => options.asker,
            ApprovalsEntry::Deny => Arc::new(DenyAll),
            ApprovalsEntry::Allow => Arc::new(ApproveAll),
        };
        let host = ToolHost::builder()
            .approver(approver)
            .approval_timeout(Duration::from_millis(self.host.approval_timeout_ms))
            .validate_arguments(self.host.validate_arguments)
            // The deadline starts when the call enters the pipeline, so the
            // approval wait and validation end by it too (rule C1).
            .call_timeout(Duration::from_millis(self.host.call_timeout_ms))
            .middleware(Logging)
            .build();
        let sandbox = Sandbox::new(self.cache_dir()).map_err(|e| ConfigError::wrap("host", e))?;
        for p in self.protected_paths() {
            sandbox.protect(p.path, p.what);
        }
        let lock = if options.locked {
            Some(self.required_lock()?)
        } else {
            None
        };
        let keys = self.trusted_keys()?;
        for name in self.plugins.keys() {
            let key = format!("plugins.{name}");
            let policy = self.policy(name)?;
            let (fetched, pin) = self.fetch_plugin(name, lock.as_ref(), &keys).await?;
            let (bytes, pin) = (fetched.bytes, pin.as_deref());
            let plugin = if options.lazy {
                sandbox.load_lazy_bytes(name, bytes, policy, pin).await
            } else {
                sandbox.load_bytes(name, bytes, policy, pin).await
            }
            .map_err(|e| ConfigError::wrap(&key, e))?;
            host.register_extension(plugin.into_extension())
                .await
                .map_err(|e| ConfigError::wrap(&key, e))?;
        }
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
                    let key = e.language().map_or("run_code_wasm", interpreter_key_name);
                    ConfigError::wrap(format!("builtin.{key}"), e)
                })?;
                config = config.code_ops(Arc::new(code));
            }
            let tools = BuiltinTools::new(config).map_err(|e| {
                ConfigError::caused("builtin.workdir", "cannot open the working directory", e)
            })?;
            host.register_extension(Arc::new(tools))
                .await
                .map_err(|e| ConfigError::wrap("builtin", e))?;
        }
        for name in self.mcp.keys() {
            let key = format!("mcp.{name}");
            let client =
                McpClient::new(self.mcp_server(name)?).map_err(|e| ConfigError::wrap(&key, e))?;
            if let Err(e) = host.register_extension(Arc::new(client)).await {
                // Servers already started are stopped, not left running.
                host.shutdown().await;
                return Err(ConfigError::wrap(&key, e));
            }
        }
        Ok((host, sandbox))
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
    /// its code on first use ([`Sandbox::load_lazy`]), instead of loading
    /// everything now: a command that makes one call should not pay for
    /// plugins it does not use. Files, pins and policies are checked now
    /// either way.
    pub lazy: bool,
    /// Holds every plugin to `toolhost.lock` (which must exist and list
    /// each): a component that resolves to another digest is refused, and
    /// a component already in the store is used without asking its
    /// registry.
    pub locked: bool,
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
            locked: false,
        }
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

    /// Holds every plugin to `toolhost.lock`.
    pub fn locked(mut self, locked: bool) -> Self {
        self.locked = locked;
        self
    }
}

/// The bounds a plugin's table sets, the defaults elsewhere.
fn bounds(s: &PluginSection) -> GuestBounds {
    let d = GuestBounds::default();
    GuestBounds {
        max_tools: s.max_tools.unwrap_or(d.max_tools),
        max_description_bytes: s.max_description_bytes.unwrap_or(d.max_description_bytes),
        max_schema_bytes: s.max_schema_bytes.unwrap_or(d.max_schema_bytes),
        max_message_bytes: s.max_message_bytes.unwrap_or(d.max_message_bytes),
        max_log_record_bytes: s.max_log_record_bytes.unwrap_or(d.max_log_record_bytes),
        max_log_bytes_per_call: s.max_log_bytes_per_call.unwrap_or(d.max_log_bytes_per_call),
        max_handles: s.max_handles.unwrap_or(d.max_handles),
        max_requests: s.max_requests.unwrap_or(d.max_requests),
    }
}

/// The `[builtin]` key naming `language`'s interpreter.
fn interpreter_key_name(language: Language) -> &'static str {
    match language {
        Language::JavaScript => "run_code_wasm",
        Language::Python => "run_code_python_wasm",
    }
}

/// The path `[builtin]` gives for `language`'s interpreter, if any.
fn interpreter_key(b: &BuiltinSection, language: Language) -> Option<&PathBuf> {
    match language {
        Language::JavaScript => b.run_code_wasm.as_ref(),
        Language::Python => b.run_code_python_wasm.as_ref(),
    }
}

/// A plugin's `sha256` pin must be a digest (64 hex digits), so that a
/// placeholder or a typo is named as such, not reported later as a file
/// that does not match.
fn check_digest(plugin: &str, pin: &str) -> Result<(), ConfigError> {
    if pin.len() == 64 && pin.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    Err(ConfigError::new(
        format!("plugins.{plugin}.sha256"),
        format!(
            "`{pin}` is not a sha256 digest: expected 64 hex digits \
             (`toolhost inspect FILE` prints the file's)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_core::report;
    use toolhost_sandbox::describe_policy;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/base"))
    }

    #[test]
    fn e3_config_errors_keep_their_cause_as_source() {
        use std::error::Error as _;
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("toolhost.toml");
        let err = Config::load(&missing).unwrap_err();
        assert_eq!(err.key, missing.display().to_string());
        assert_eq!(err.reason, "cannot read");
        let io = err
            .source
            .as_ref()
            .and_then(|c| c.downcast_ref::<std::io::Error>())
            .expect("the io error is the source");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert!(err.source().is_some());
        assert!(report(&err).starts_with(&format!("{}: cannot read: ", missing.display())));
        let err = Config::parse("[plugins.\"a b\"]\nwasm = \"x.wasm\"\n", dir.path()).unwrap_err();
        assert_eq!(err.key, "plugins.a b");
        assert_eq!(
            report(&err),
            "plugins.a b: invalid plugin name: `a b` contains ' '; use ASCII letters, digits, `_`, `-` or `.`"
        );
    }

    #[test]
    fn w2_unknown_keys_are_errors_that_name_the_key() {
        let err = parse("[plugins.calc]\nwasm = \"c.wasm\"\nmemroy_mb = 5\n").unwrap_err();
        assert!(err.reason.contains("unknown field `memroy_mb`"), "{err}");
        assert!(err.reason.contains("line 3"), "{err}");
        let err = parse("[hots]\nx = 1\n").unwrap_err();
        assert!(err.reason.contains("unknown field `hots`"), "{err}");
    }

    #[test]
    fn w2_missing_paths_are_errors_that_name_the_key_and_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
        let text = "[plugins.p]\nwasm = \"p.wasm\"\ndirs = [{ host = \"nope\", guest = \"/d\" }]\n";
        let config = Config::parse(text, dir.path()).unwrap();
        assert!(config.wasm_path("p").is_ok());
        let err = config.check().unwrap_err();
        assert_eq!(err.key, "plugins.p.dirs[0].host");
        assert_eq!(
            err.reason,
            format!(
                "directory {} does not exist",
                dir.path().join("nope").display()
            )
        );
        let config = Config::parse("[plugins.q]\nwasm = \"q.wasm\"\n", dir.path()).unwrap();
        let err = config.check().unwrap_err();
        assert_eq!(err.key, "plugins.q.wasm");
        assert!(err.reason.contains("q.wasm does not exist"), "{err}");
    }

    #[test]
    fn w1_a_sha256_pin_that_is_not_a_digest_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
        for pin in ["…", "abc", &"g".repeat(64), &"a".repeat(65)] {
            let text = format!("[plugins.p]\nwasm = \"p.wasm\"\nsha256 = \"{pin}\"\n");
            let err = Config::parse(&text, dir.path())
                .unwrap()
                .check()
                .unwrap_err();
            assert_eq!(err.key, "plugins.p.sha256", "{pin}");
            assert!(err.reason.contains("expected 64 hex digits"), "{err}");
        }
        let digest = "0123456789abcdefABCDEF".repeat(3)[..64].to_owned();
        let text = format!("[plugins.p]\nwasm = \"p.wasm\"\nsha256 = \"{digest}\"\n");
        Config::parse(&text, dir.path()).unwrap().check().unwrap();
    }

    #[test]
    fn w2_deny_by_default_and_grants_are_described_exactly() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let text = r#"
            [plugins.bare]
            wasm = "b.wasm"

            [plugins.busy]
            wasm = "b.wasm"
            dirs = [{ host = "data", guest = "/data", mode = "rw" }]
            hosts = ["https://api.example.com", "127.0.0.1:8080"]
            deny_hosts = ["secret.example.com"]
            pin = { "api.example.com" = ["93.184.216.34"] }
            env = ["LANG"]
            memory_mb = 32
            timeout_ms = 500
            max_instances = 2
            hooks = "rewrite"
        "#;
        let config = Config::parse(text, dir.path()).unwrap();
        assert_eq!(
            describe_policy(&config.policy("bare").unwrap()),
            [
                "files: none",
                "network: none",
                "environment: none",
                "sockets: none",
                "limits: 64 MiB memory, 10000 ms per call, 4 instance(s) at once, 16384 KiB result",
                "bounds: 256 tools, 16384 B description, 65536 B schema, 16384 B messages, 8192 B per log record and 262144 B of log per call, 256 handles per instance, 16 requests in flight",
            ]
        );
        assert_eq!(
            describe_policy(&config.policy("busy").unwrap()),
            [
                format!(
                    "files: {} as /data (read-write)",
                    dir.path().join("data").display()
                ),
                "network: HTTP to https://api.example.com, 127.0.0.1:8080".into(),
                "network denied: secret.example.com".into(),
                "network pin: api.example.com -> 93.184.216.34".into(),
                "environment: LANG".into(),
                "sockets: none".into(),
                "hooks: may rewrite arguments and replace results".into(),
                "limits: 32 MiB memory, 500 ms per call, 2 instance(s) at once, 16384 KiB result"
                    .into(),
                "bounds: 256 tools, 16384 B description, 65536 B schema, 16384 B messages, 8192 B per log record and 262144 B of log per call, 256 handles per instance, 16 requests in flight".into(),
            ]
        );
    }

    #[test]
    fn c3_bounds_are_keys_of_the_plugins_table() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"
            [plugins.p]
            wasm = "p.wasm"
            max_tools = 3
            max_description_bytes = 100
            max_schema_bytes = 200
            max_message_bytes = 300
            max_log_record_bytes = 400
            max_log_bytes_per_call = 500
            max_handles = 64
            max_requests = 2
        "#;
        let config = Config::parse(text, dir.path()).unwrap();
        assert_eq!(
            config.policy("p").unwrap().bounds,
            GuestBounds {
                max_tools: 3,
                max_description_bytes: 100,
                max_schema_bytes: 200,
                max_message_bytes: 300,
                max_log_record_bytes: 400,
                max_log_bytes_per_call: 500,
                max_handles: 64,
                max_requests: 2,
            }
        );
        let zero = Config::parse(
            "[plugins.p]\nwasm = \"p.wasm\"\nmax_requests = 0\n",
            dir.path(),
        )
        .unwrap();
        let err = zero.policy("p").unwrap_err();
        assert_eq!(err.key, "plugins.p");
        assert_eq!(err.reason, "max_requests must be at least 1");
    }

    #[test]
    fn c5_a_grant_over_the_configuration_or_a_plugins_wasm_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("plugins")).unwrap();
        std::fs::create_dir_all(root.join("data")).unwrap();
        let file = root.join("toolhost.toml");
        std::fs::write(
            &file,
            r#"
            [host]
            cache_dir = "cache"

            [plugins.greedy]
            wasm = "plugins/g.wasm"
            dirs = [{ host = ".", guest = "/all", mode = "rw" }]

            [plugins.neighbour]
            wasm = "plugins/n.wasm"
            dirs = [{ host = "plugins", guest = "/p", mode = "rw" }]

            [plugins.cache_thief]
            wasm = "plugins/c.wasm"
            dirs = [{ host = "cache", guest = "/c", mode = "rw" }]

            [plugins.fine]
            wasm = "plugins/f.wasm"
            dirs = [{ host = "data", guest = "/d", mode = "rw" }]
            "#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join("cache")).unwrap();
        let config = Config::load(&file).unwrap();
        let err = config.policy("greedy").unwrap_err();
        assert_eq!(err.key, "plugins.greedy.dirs");
        assert!(err.reason.contains("the configuration file"), "{err}");
        assert!(err.reason.contains(&file.display().to_string()), "{err}");
        let err = config.policy("neighbour").unwrap_err();
        assert!(err.reason.contains("the wasm of plugin `"), "{err}");
        let err = config.policy("cache_thief").unwrap_err();
        assert!(err.reason.contains("the compiled-code cache"), "{err}");
        config.policy("fine").unwrap();
    }

    #[test]
    fn w2_bad_values_name_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::parse(
            "[plugins.p]\nwasm = \"p.wasm\"\nhosts = [\"ftp://x\"]\n",
            dir.path(),
        )
        .unwrap();
        let err = config.policy("p").unwrap_err();
        assert_eq!(err.key, "plugins.p.hosts");
        let config = Config::parse(
            "[plugins.p]\nwasm = \"p.wasm\"\nmemory_mb = 4096\n",
            dir.path(),
        )
        .unwrap();
        let err = config.policy("p").unwrap_err();
        assert_eq!(err.key, "plugins.p");
        assert!(err.reason.starts_with("memory must be"), "{err}");
        let err =
            Config::parse("[plugins.\"bad name\"]\nwasm = \"p.wasm\"\n", dir.path()).unwrap_err();
        assert_eq!(err.key, "plugins.bad name");
    }

    #[test]
    fn b1_the_builtin_table_configures_the_tools_extension() {
        let dir = tempfile::tempdir().unwrap();
        let ok = "[builtin]\nworkdir = \".\"\ntools = [\"read_file\", \"grep\", \"shell\"]\nsearch_backend = \"ripgrep\"\nshell_allow = [\"ls\"]\n";
        let config = Config::parse(ok, dir.path()).unwrap();
        assert!(config.builtin_config().unwrap().is_some());
        let err = Config::parse(
            "[builtin]\nworkdir = \".\"\ntools = [\"rm_rf\"]\n",
            dir.path(),
        )
        .unwrap()
        .check()
        .unwrap_err();
        assert_eq!(err.key, "builtin.tools");
        assert!(
            err.reason
                .starts_with("unknown tool `rm_rf` (known: read_file,"),
            "{err}"
        );
        let err = Config::parse("[builtin]\nworkdir = \"nope\"\n", dir.path())
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(err.key, "builtin.workdir");
        let err = Config::parse(
            "[builtin]\nworkdir = \".\"\nsearch_backend = \"grep\"\n",
            dir.path(),
        )
        .unwrap()
        .check()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "builtin.search_backend: `grep` is not one of native, ripgrep, fd"
        );
    }

    #[test]
    fn b7_run_code_keys_are_checked_and_errors_name_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("js.wasm"), b"").unwrap();
        std::fs::write(dir.path().join("py.wasm"), b"").unwrap();
        let check = |extra: &str| {
            Config::parse(
                &format!("[builtin]\nworkdir = \".\"\ntools = [\"run_code\"]\n{extra}"),
                dir.path(),
            )
            .unwrap()
            .check()
            .unwrap_err()
        };
        let err = check("");
        assert_eq!(err.key, "builtin.run_code_wasm");
        assert!(
            err.reason
                .starts_with("required when `run_code` is offered"),
            "{err}"
        );
        let err = check("run_code_wasm = \"nope.wasm\"\n");
        assert_eq!(err.key, "builtin.run_code_wasm");
        assert_eq!(
            err.reason,
            format!(
                "{} does not exist (build the plugins first, e.g. `make plugins`)",
                dir.path().join("nope.wasm").display()
            )
        );
        let err = check("run_code_wasm = \"js.wasm\"\nrun_code_python_wasm = \"nope.wasm\"\n");
        assert_eq!(err.key, "builtin.run_code_python_wasm");
        assert!(
            err.reason
                .ends_with("does not exist (build the plugins first, e.g. `make plugins`)")
        );
        let err = check("run_code_wasm = \"js.wasm\"\nrun_code_memory_mb = 0\n");
        assert_eq!(
            err.to_string(),
            "builtin.run_code_memory_mb: must be between 1 and 1024, not 0"
        );
        let err = check("run_code_wasm = \"js.wasm\"\nrun_code_timeout_ms = 0\n");
        assert_eq!(
            err.to_string(),
            "builtin.run_code_timeout_ms: must be more than zero"
        );
        let text = "[builtin]\nworkdir = \".\"\ntools = [\"run_code\"]\nrun_code_wasm = \"js.wasm\"\nrun_code_memory_mb = 16\nrun_code_timeout_ms = 750\n";
        let builtin = Config::parse(text, dir.path())
            .unwrap()
            .builtin_config()
            .unwrap()
            .unwrap();
        assert!(builtin.offers(BuiltinTool::RunCode));
        let code = builtin.run_code_config().unwrap();
        assert_eq!(
            code.interpreters,
            [(Language::JavaScript, dir.path().join("js.wasm"))].into()
        );
        assert_eq!(code.memory_bytes, 16 << 20);
        assert_eq!(code.timeout, Duration::from_millis(750));
        let text = "[builtin]\nworkdir = \".\"\ntools = [\"run_code\"]\nrun_code_python_wasm = \"py.wasm\"\n";
        let builtin = Config::parse(text, dir.path())
            .unwrap()
            .builtin_config()
            .unwrap()
            .unwrap();
        assert_eq!(
            builtin.run_code_config().unwrap().interpreters,
            [(Language::Python, dir.path().join("py.wasm"))].into()
        );
    }

    #[test]
    fn c6_hostile_configuration_is_an_error_not_a_panic() {
        let deep = format!("x = {}1{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let inline = format!("x = {}1{}\n", "{a = ".repeat(100_000), "}".repeat(100_000));
        for text in [
            deep.as_str(),
            inline.as_str(),
            "[host]\ncall_timeout_ms = 1e400\n",
            "[host]\ncall_timeout_ms = -1\n",
            "[host]\ncall_timeout_ms = inf\n",
            "[host]\ncall_timeout_ms = 99999999999999999999999\n",
            "\u{0}\u{ffff}[[[",
        ] {
            assert!(parse(text).is_err(), "{text:.80}");
        }
    }
}
