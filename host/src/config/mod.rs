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
//! rules_default = "allow"       # what [[rules]] decide when none matches
//! rules_from_annotations = false # or: readOnlyHint allows, destructiveHint asks
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
//! [[rules]]                     # allow, ask or deny calls (rule O4; see `rules`)
//! tool = "note_write"           # a glob over tool names
//! when = [{ pointer = "/name", glob = "*.md" }]  # all must hold (optional)
//! decision = "ask"              # "allow", "ask" or "deny"; deny beats ask beats allow
//! reason = "notes are kept"     # shown to the model and the person asked
//!
//! [auth]                        # serve --http as an OAuth resource server (rule A1; see `auth`)
//! issuer = "https://auth.example.com"
//! resource = "https://tools.example.com/mcp"
//!
//! [metrics]                     # Prometheus metrics at serve --http's /metrics (rule X1)
//! enabled = true
//! token = "scrape"              # a [secrets.NAME] a scraper presents as a bearer
//!                               # token; or open = true (loopback only); neither:
//!                               # whatever /mcp asks for
//! max_tool_labels = 500         # distinct tool names as labels; the rest are `other`
//!
//! [tracing]                     # OpenTelemetry spans by OTLP/HTTP (rule X2; see `traces`)
//! endpoint = "http://127.0.0.1:4318"  # /v1/traces is added to an empty path
//! service_name = "toolhost"
//! sampling_ratio = 1.0          # of traces a call starts; a caller's choice stands
//! secret_headers = { authorization = "otlp" }  # a [secrets.NAME] as a header's value
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
//!
//! | module | what it holds |
//! |---|---|
//! | `mod.rs` | [`Config`]: reading and parsing the file, table names checked |
//! | `sections` | the tables as written ([`HostSection`], [`PluginSection`], …) |
//! | `error` | [`ConfigError`], one variant per kind of mistake |
//! | `plugin` | [`PluginConfig`]: one plugin's table, its source and [`PluginPolicy`](toolhost_sandbox::PluginPolicy) |
//! | `protected` | the host's own paths, which no grant may cover (rule C5) |
//! | `supply` | the supply chain: the lock file, the store, trusted keys, fetching a plugin |
//! | `builtin` | `[builtin]` into a [`BuiltinConfig`](toolhost_builtin::BuiltinConfig) |
//! | `mcp` | `[mcp.NAME]` into a [`McpServerConfig`](toolhost_mcp::McpServerConfig) |
//! | `rules` | `[[rules]]` into a [`RuleSet`](toolhost_core::RuleSet) (rule O4) |
//! | `auth` | `[auth]` into the OAuth resource server's [`AuthSettings`](toolhost_mcp::auth::AuthSettings) (rule A1) |
//! | `metrics` | `[metrics]`: what `/metrics` serves, and to whom (rule X1) |
//! | `traces` | `[tracing]`: where spans are exported (rule X2) |
//! | `check` | [`Config::check`]: the whole file, without loading anything |
//! | `build` | [`Config::build_host`] and [`BuildOptions`] |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolhost_agent::AgentSection;
use toolhost_core::ToolSpec;
use toolhost_sandbox::Sandbox;

mod auth;
mod build;
mod builtin;
mod check;
mod error;
mod mcp;
mod metrics;
mod plugin;
mod protected;
mod quota;
mod rules;
mod secrets;
mod sections;
mod supply;
mod tenant_overlay;
mod traces;

pub use auth::AuthSection;
pub use build::{BuildOptions, BuiltHost};
pub use error::ConfigError;
pub use metrics::MetricsSection;
pub use plugin::PluginConfig;
pub use quota::{QuotaSection, TenantSection};
pub use rules::{ConditionSection, RuleSection};
pub use secrets::SecretSection;
pub use sections::{
    ApprovalsEntry, BuiltinSection, DirEntry, HooksEntry, HostSection, McpSection, ModeEntry,
    PluginSection, TrustSection,
};
pub use toolhost_sandbox::describe_policy;
pub use traces::{TraceSettings, TracingSection};

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
    /// The `[[rules]]` entries, in order (rule O4).
    pub rules: Vec<RuleSection>,
    /// The `[secrets.NAME]` tables, by name (rule O2).
    pub secrets: BTreeMap<String, SecretSection>,
    /// The `[auth]` table: `serve --http` as an OAuth resource server
    /// (rule A1).
    pub auth: Option<AuthSection>,
    /// The `[metrics]` table (rule X1).
    pub metrics: MetricsSection,
    /// The `[tracing]` table: spans exported by OTLP/HTTP (rule X2).
    pub tracing: Option<TracingSection>,
    /// The `[quota]` table: every tenant's quota unless its own says
    /// otherwise (rule A3).
    pub quota: Option<QuotaSection>,
    /// The `[tenants.NAME]` tables, by name (rule A2).
    pub tenants: BTreeMap<String, TenantSection>,
    /// The directory relative paths are resolved against.
    pub base_dir: PathBuf,
    /// The file it was read from, if it was read from one.
    pub file: Option<PathBuf>,
}

impl Config {
    /// Reads and parses the file at `path`. A file that cannot be read is
    /// [`ConfigError::Unreadable`]; a parse error names the file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Unreadable {
            key: path.display().to_string(),
            source: toolhost_core::Cause::new(e),
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut config =
            Self::parse(&text, &base).map_err(|e| e.in_file(|| path.display().to_string()))?;
        config.file = Some(path.to_owned());
        Ok(config)
    }

    /// Parses configuration text; relative paths resolve against `base_dir`.
    /// Syntax errors and unknown keys come back with an empty key and
    /// toml's message, which names the key and line; a plugin or server
    /// table whose name is not a valid name is refused, naming the table.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Self, ConfigError> {
        let file: sections::File =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(text, &e))?;
        check_names("plugins", "plugin", file.plugins.keys())?;
        check_names("mcp", "server", file.mcp.keys())?;
        check_names("tenants", "tenant", file.tenants.keys())?;
        Ok(Self {
            host: file.host,
            plugins: file.plugins,
            builtin: file.builtin,
            mcp: file.mcp,
            agent: file.agent,
            trust: file.trust,
            rules: file.rules,
            secrets: file.secrets,
            auth: file.auth,
            metrics: file.metrics,
            tracing: file.tracing,
            quota: file.quota,
            tenants: file.tenants,
            base_dir: base_dir.to_owned(),
            file: None,
        })
    }

    /// `p` resolved against the configuration's directory (absolute paths
    /// stay as they are).
    fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_owned()
        } else {
            self.base_dir.join(p)
        }
    }

    /// The compiled-code cache directory in effect: `[host] cache_dir`,
    /// else the user's cache directory (none without a home).
    pub fn cache_dir(&self) -> Option<PathBuf> {
        match &self.host.cache_dir {
            Some(d) => Some(self.resolve(d)),
            None => Sandbox::default_cache_dir(),
        }
    }
}

/// Each table name under `[table]` must be a valid name, since it prefixes
/// tool and extension names.
fn check_names<'a>(
    table: &str,
    what: &'static str,
    names: impl Iterator<Item = &'a String>,
) -> Result<(), ConfigError> {
    for name in names {
        ToolSpec::validate_name(name).map_err(|source| ConfigError::InvalidName {
            key: format!("{table}.{name}"),
            what,
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/base"))
    }

    #[test]
    fn w2_unknown_keys_are_errors_that_name_the_key() {
        let err = parse("[plugins.calc]\nwasm = \"c.wasm\"\nmemroy_mb = 5\n").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `memroy_mb`"),
            "{err}"
        );
        assert!(err.to_string().contains("line 3"), "{err}");
        assert!(
            matches!(&err, ConfigError::UnknownKey { name, .. } if name == "memroy_mb"),
            "{err:?}"
        );
        let err = parse("[hots]\nx = 1\n").unwrap_err();
        assert!(err.to_string().contains("unknown field `hots`"), "{err}");
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
