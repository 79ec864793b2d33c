//! The tables of `toolhost.toml` as serde reads them: `[host]`,
//! `[plugins.NAME]`, `[builtin]`, `[mcp.NAME]`, `[trust]` (and `[agent]`,
//! whose table lives with the agent, and `[[rules]]`, whose entries live
//! in `rules`).
//!
//! Contract: these types hold what the file says, as written, and nothing
//! else: paths are not resolved, files are not read, values are not
//! checked beyond their types. Every table refuses keys it does not have
//! (rule W2). Turning a table into what the host runs with is the job of
//! the modules named after it (`plugin`, `builtin`, `mcp`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;

use toolhost_agent::AgentSection;

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
    /// What `[[rules]]` decide for a call no rule matches: `allow` (the
    /// default), `ask` or `deny` (rule O4).
    pub rules_default: String,
    /// When no rule matches, let a tool's MCP annotations decide:
    /// `readOnlyHint` allows, `destructiveHint` asks (default false).
    pub rules_from_annotations: bool,
}

impl Default for HostSection {
    fn default() -> Self {
        Self {
            validate_arguments: true,
            call_timeout_ms: 30_000,
            cache_dir: None,
            approvals: ApprovalsEntry::Ask,
            approval_timeout_ms: 120_000,
            rules_default: "allow".into(),
            rules_from_annotations: false,
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
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    /// `[plugins.NAME.settings]`: what the plugin reads through
    /// `wasi:config/store` (rule O1).
    #[serde(default)]
    pub settings: toml::Table,
    /// A JSON Schema file the settings must satisfy, relative to the file;
    /// it replaces the one the component declares, if any.
    pub settings_schema: Option<PathBuf>,
    /// `[secrets]` the plugin reads through `wasi:config/store`, by name
    /// (rule O2).
    #[serde(default)]
    pub secrets: Vec<String>,
    /// `[plugins.NAME.quota]`: the plugin's quota, counted for each tenant
    /// separately (rule A3).
    pub quota: Option<super::quota::QuotaSection>,
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
    /// The protocol version offered first: `"2025-11-25"` (the default) or
    /// `"2026-07-28"` (falling back to 2025-11-25 when the server does not
    /// offer it).
    pub protocol: Option<String>,
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

/// The whole file: every table, each optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    #[serde(default)]
    pub(super) host: HostSection,
    #[serde(default)]
    pub(super) plugins: BTreeMap<String, PluginSection>,
    pub(super) builtin: Option<BuiltinSection>,
    #[serde(default)]
    pub(super) mcp: BTreeMap<String, McpSection>,
    pub(super) agent: Option<AgentSection>,
    pub(super) trust: Option<TrustSection>,
    #[serde(default)]
    pub(super) rules: Vec<super::rules::RuleSection>,
    #[serde(default)]
    pub(super) secrets: BTreeMap<String, super::secrets::SecretSection>,
    #[serde(default)]
    pub(super) metrics: super::metrics::MetricsSection,
    pub(super) tracing: Option<super::traces::TracingSection>,
    pub(super) auth: Option<super::auth::AuthSection>,
    pub(super) quota: Option<super::quota::QuotaSection>,
    #[serde(default)]
    pub(super) tenants: BTreeMap<String, super::quota::TenantSection>,
}
