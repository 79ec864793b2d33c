//! What a plugin is granted (rule W2). Everything is denied unless granted
//! here; limits always apply.

use toolhost_core::Secret;

use crate::secret_guard::SecretGuard;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use toolhost_net::NetPolicy;

/// Whether a granted directory may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirMode {
    /// Read only.
    ReadOnly,
    /// Read and write.
    ReadWrite,
}

/// A host directory made visible to the plugin at a guest path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// The directory on the host. It must exist.
    pub host: PathBuf,
    /// Where the plugin sees it (an absolute guest path such as `/data`).
    pub guest: String,
    /// Read only or read-write.
    pub mode: DirMode,
}

/// What an extension's hooks may do to the calls they see (rules P7, P8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HookPower {
    /// Observe, allow, reject, and ask a person: a hook can stop a call but
    /// never change one. The default.
    #[default]
    Veto,
    /// Also rewrite a call's arguments and replace its outcome.
    Rewrite,
}

impl HookPower {
    /// `veto` or `rewrite`, as the configuration writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Veto => "veto",
            Self::Rewrite => "rewrite",
        }
    }
}

/// A plugin's grants and limits.
///
/// The default grants nothing — no directories, no network, no environment,
/// no settings, hooks that can veto but not rewrite — with 64 MiB of memory, 10 s per
/// call, and 4 instances at once.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginPolicy {
    /// Directories the plugin may open, through WASI preopens (capability
    /// handles: paths outside them, `..` and symlinks out cannot be opened).
    pub dirs: Vec<DirGrant>,
    /// Where outgoing HTTP may go; raw sockets are always denied.
    pub net: NetPolicy,
    /// Environment variables the plugin may read, by name; values come from
    /// the host's environment when the plugin is loaded.
    pub env: Vec<String>,
    /// Most linear memory, in bytes (at most [`super::MAX_PLUGIN_MEMORY`]).
    pub memory_bytes: u64,
    /// Longest a call (or hook) may run; the call's own deadline wins if
    /// earlier.
    pub timeout: Duration,
    /// Most instances of this plugin alive at once; further calls wait.
    pub max_instances: usize,
    /// Largest result, in bytes, accepted from one call.
    pub max_output_bytes: usize,
    /// Most guest stdout and stderr kept per call (each), for the host's log;
    /// the rest is dropped and the log says how much.
    pub max_log_bytes: usize,
    /// Bounds on what the guest hands the host and on the host resources it
    /// may hold (rules C3, C4).
    pub bounds: GuestBounds,
    /// What the plugin's hooks may do, if it is an extension: veto only
    /// unless rewriting is granted.
    pub hooks: HookPower,
    /// The plugin's settings, read by the guest through `wasi:config/store`
    /// (a string as written, any other value as its JSON text; rule O1).
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// The JSON Schema the settings must satisfy, when the operator gives
    /// one; otherwise the component's own, if it declares one (see
    /// [`settings`](crate::settings)).
    pub settings_schema: Option<serde_json::Value>,
    /// Secrets the plugin reads through `wasi:config/store`, each under
    /// its name (rule O2).
    pub secrets: Vec<Secret>,
    /// Every secret of the host and where each may be sent: what the guest
    /// logs is redacted of them, and an outgoing request that carries one
    /// to a destination it is not bound to is refused (rule O2).
    pub secret_guard: SecretGuard,
    /// What each tenant's calls read through `wasi:config/store` in place
    /// of [`settings`](Self::settings) and [`secrets`](Self::secrets), by
    /// tenant name (rule A2). A tenant not named here reads the plugin's
    /// own. `list-tools`, an extension's hooks and its system prompt read
    /// the plugin's own, whoever's call they serve.
    pub tenants: BTreeMap<String, TenantOverlay>,
    /// Whether calls of several tenants share the plugin's instances (a
    /// host with tenants; rule A3). Then one tenant's calls hold at most
    /// all but one of [`max_instances`](Self::max_instances) (or the one
    /// there is), the last kept for another tenant's call, and a freed
    /// instance goes to the waiting tenant that holds the fewest. Without
    /// it, calls take free instances in the order they come.
    pub shared_by_tenants: bool,
}

/// What one tenant's calls of a plugin read in place of the plugin's own
/// settings and secrets (rule A2).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TenantOverlay {
    /// Settings that replace the plugin's settings of the same key; the
    /// plugin's other settings stay as they are.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Secrets read in place of granted ones: under the name of the
    /// granted secret each replaces, the value of the secret given (which
    /// keeps its own name, and so its own destinations, for the guard).
    pub secrets: Vec<(String, Secret)>,
}

impl TenantOverlay {
    /// `settings` over the plugin's, and `secrets` in place of granted
    /// ones (see the fields).
    pub fn new(
        settings: serde_json::Map<String, serde_json::Value>,
        secrets: Vec<(String, Secret)>,
    ) -> Self {
        Self { settings, secrets }
    }

    /// Whether the overlay changes nothing.
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty() && self.secrets.is_empty()
    }
}

/// Bounds on everything a guest hands the host, and on the host resources
/// it can hold (rules C3, C4). Exceeding one fails that load or call with a
/// message naming the bound; none of them can be turned off, only set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestBounds {
    /// Most tools one plugin may list (default 256).
    pub max_tools: usize,
    /// Longest tool description, in bytes (default 16 KiB).
    pub max_description_bytes: usize,
    /// Largest parameters schema of one tool, as JSON text, in bytes
    /// (default 64 KiB).
    pub max_schema_bytes: usize,
    /// Longest text the guest returns besides its output: a hook's rejection
    /// reason, a tool's error message, the system prompt (default 16 KiB).
    pub max_message_bytes: usize,
    /// Largest log record (message and every field name and value
    /// together), in bytes (default 8 KiB).
    pub max_log_record_bytes: usize,
    /// Most bytes of log records one call may write (default 256 KiB).
    pub max_log_bytes_per_call: usize,
    /// Most handles one instance may hold at once: open files and
    /// directories, streams, pollables, HTTP requests and responses
    /// (default 256). Each open file is one handle, so this bounds the
    /// descriptors an instance can keep open.
    pub max_handles: usize,
    /// Most outgoing HTTP requests of the plugin in flight at once, across
    /// all its instances (default 16). Each holds one connection. The same
    /// number bounds the plugin's name lookups in flight, which are counted
    /// until the resolver answers even when the request that started one
    /// was dropped (each holds a thread of the host's).
    pub max_requests: usize,
}

impl Default for GuestBounds {
    fn default() -> Self {
        Self {
            max_tools: 256,
            max_description_bytes: 16 << 10,
            max_schema_bytes: 64 << 10,
            max_message_bytes: 16 << 10,
            max_log_record_bytes: 8 << 10,
            max_log_bytes_per_call: 256 << 10,
            max_handles: 256,
            max_requests: 16,
        }
    }
}

impl GuestBounds {
    /// The most host descriptors a plugin under these bounds can hold at
    /// once: each instance's handles and preopened directories, and its
    /// outgoing connections.
    pub fn descriptors(&self, max_instances: usize, dirs: usize) -> usize {
        max_instances
            .saturating_mul(self.max_handles.saturating_add(dirs))
            .saturating_add(self.max_requests)
    }

    fn validate(&self) -> Result<(), PolicyError> {
        let named = [
            ("max_tools", self.max_tools),
            ("max_description_bytes", self.max_description_bytes),
            ("max_schema_bytes", self.max_schema_bytes),
            ("max_message_bytes", self.max_message_bytes),
            ("max_log_record_bytes", self.max_log_record_bytes),
            ("max_log_bytes_per_call", self.max_log_bytes_per_call),
            ("max_handles", self.max_handles),
            ("max_requests", self.max_requests),
        ];
        for (name, value) in named {
            if value == 0 {
                return Err(PolicyError::ZeroBound { name });
            }
        }
        // A store needs a few handles of its own (its standard streams and
        // preopens) before the guest opens anything.
        if self.max_handles < 16 {
            return Err(PolicyError::TooFewHandles(self.max_handles));
        }
        Ok(())
    }
}

impl Default for PluginPolicy {
    fn default() -> Self {
        Self {
            dirs: Vec::new(),
            net: NetPolicy::deny_all(),
            env: Vec::new(),
            memory_bytes: 64 << 20,
            timeout: Duration::from_secs(10),
            max_instances: 4,
            max_output_bytes: 16 << 20,
            max_log_bytes: 64 << 10,
            bounds: GuestBounds::default(),
            hooks: HookPower::Veto,
            settings: serde_json::Map::new(),
            settings_schema: None,
            secrets: Vec::new(),
            secret_guard: SecretGuard::default(),
            tenants: BTreeMap::new(),
            shared_by_tenants: false,
        }
    }
}

/// What is wrong with a [`PluginPolicy`] (see [`PluginPolicy::validate`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The memory limit is zero or above [`MAX_PLUGIN_MEMORY`](crate::MAX_PLUGIN_MEMORY).
    #[error("memory must be between 1 byte and {max_mib} MiB, not {bytes} bytes", max_mib = crate::MAX_PLUGIN_MEMORY >> 20)]
    Memory {
        /// The limit asked for, in bytes.
        bytes: u64,
    },
    /// The timeout is zero.
    #[error("timeout must be more than zero")]
    ZeroTimeout,
    /// `max_instances` is zero.
    #[error("max_instances must be at least 1")]
    ZeroInstances,
    /// A guest bound (named by its configuration key) is zero.
    #[error("{name} must be at least 1")]
    ZeroBound {
        /// The bound's key, such as `max_tools`.
        name: &'static str,
    },
    /// `max_handles` leaves no room for the store's own handles.
    #[error("max_handles must be at least 16, not {0}")]
    TooFewHandles(usize),
    /// A granted host directory does not exist.
    #[error("granted directory {} does not exist", .0.display())]
    MissingDir(PathBuf),
    /// A guest path is not absolute.
    #[error("guest path `{0}` must be absolute")]
    RelativeGuest(String),
    /// Two grants use the same guest path.
    #[error("guest path `{0}` is granted twice")]
    DuplicateGuest(String),
    /// A granted environment variable name is empty or holds `=` or NUL.
    #[error("`{0}` is not an environment variable name")]
    BadEnvName(String),
    /// A secret granted to the plugin has the name of one of its settings.
    #[error("secret `{0}` has the name of a setting; the plugin would read only one of them")]
    SecretNamesSetting(String),
    /// A tenant's overlay replaces a secret the plugin is not granted, or
    /// sets a setting under a granted secret's name.
    #[error("tenant `{tenant}`: {problem}")]
    TenantOverlay {
        /// The tenant.
        tenant: String,
        /// What is wrong.
        problem: String,
    },
}

impl PluginPolicy {
    /// Checks the policy itself: limits in range, directories that exist,
    /// absolute distinct guest paths. The error names what is wrong.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.memory_bytes == 0 || self.memory_bytes > super::MAX_PLUGIN_MEMORY {
            return Err(PolicyError::Memory {
                bytes: self.memory_bytes,
            });
        }
        if self.timeout.is_zero() {
            return Err(PolicyError::ZeroTimeout);
        }
        if self.max_instances == 0 {
            return Err(PolicyError::ZeroInstances);
        }
        self.bounds.validate()?;
        let mut guests = std::collections::HashSet::new();
        for d in &self.dirs {
            if !d.host.is_dir() {
                return Err(PolicyError::MissingDir(d.host.clone()));
            }
            if !d.guest.starts_with('/') {
                return Err(PolicyError::RelativeGuest(d.guest.clone()));
            }
            if !guests.insert(d.guest.as_str()) {
                return Err(PolicyError::DuplicateGuest(d.guest.clone()));
            }
        }
        for secret in &self.secrets {
            if self.settings.contains_key(secret.name()) {
                return Err(PolicyError::SecretNamesSetting(secret.name().to_owned()));
            }
        }
        for name in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(PolicyError::BadEnvName(name.clone()));
            }
        }
        for (tenant, overlay) in &self.tenants {
            let refuse = |problem: String| {
                Err(PolicyError::TenantOverlay {
                    tenant: tenant.clone(),
                    problem,
                })
            };
            for (granted, _) in &overlay.secrets {
                if !self.secrets.iter().any(|s| s.name() == granted) {
                    return refuse(format!(
                        "replaces secret `{granted}`, which the plugin is not granted"
                    ));
                }
            }
            for secret in &self.secrets {
                if overlay.settings.contains_key(secret.name()) {
                    return refuse(format!(
                        "setting `{}` has the name of a granted secret; the plugin would read only one of them",
                        secret.name()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Describes exactly what `policy` grants, one line per capability.
pub fn describe_policy(policy: &PluginPolicy) -> Vec<String> {
    let mut lines = Vec::new();
    if policy.dirs.is_empty() {
        lines.push("files: none".to_owned());
    }
    for d in &policy.dirs {
        let mode = match d.mode {
            DirMode::ReadOnly => "read-only",
            DirMode::ReadWrite => "read-write",
        };
        lines.push(format!(
            "files: {} as {} ({mode})",
            d.host.display(),
            d.guest
        ));
    }
    let net = &policy.net;
    if net.is_deny_all() {
        lines.push("network: none".to_owned());
    } else {
        let grants: Vec<String> = net.grants().iter().map(ToString::to_string).collect();
        lines.push(format!("network: HTTP to {}", grants.join(", ")));
    }
    if !net.denials().is_empty() {
        let denied: Vec<String> = net.denials().iter().map(ToString::to_string).collect();
        lines.push(format!("network denied: {}", denied.join(", ")));
    }
    for (host, addrs) in net.pinned() {
        let addrs: Vec<String> = addrs.iter().map(ToString::to_string).collect();
        lines.push(format!("network pin: {host} -> {}", addrs.join(", ")));
    }
    lines.push(if policy.env.is_empty() {
        "environment: none".to_owned()
    } else {
        format!("environment: {}", policy.env.join(", "))
    });
    if !policy.secrets.is_empty() {
        let names: Vec<&str> = policy.secrets.iter().map(Secret::name).collect();
        lines.push(format!("secrets: {}", names.join(", ")));
    }
    if !policy.settings.is_empty() {
        let keys: Vec<&str> = policy.settings.keys().map(String::as_str).collect();
        lines.push(format!("settings: {}", keys.join(", ")));
    }
    lines.push("sockets: none".to_owned());
    // Veto is no grant (a hook can always refuse); only rewriting is.
    if policy.hooks == HookPower::Rewrite {
        lines.push("hooks: may rewrite arguments and replace results".to_owned());
    }
    lines.push(format!(
        "limits: {} MiB memory, {} ms per call, {} instance(s) at once, {} KiB result",
        policy.memory_bytes >> 20,
        policy.timeout.as_millis(),
        policy.max_instances,
        policy.max_output_bytes >> 10
    ));
    let b = &policy.bounds;
    lines.push(format!(
        "bounds: {} tools, {} B description, {} B schema, {} B messages, {} B per log record and {} B of log per call, {} handles per instance, {} requests in flight",
        b.max_tools,
        b.max_description_bytes,
        b.max_schema_bytes,
        b.max_message_bytes,
        b.max_log_record_bytes,
        b.max_log_bytes_per_call,
        b.max_handles,
        b.max_requests
    ));
    lines
}
