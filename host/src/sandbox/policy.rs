//! What a plugin is granted (rule W2). Everything is denied unless granted
//! here; limits always apply.

use std::path::PathBuf;
use std::time::Duration;

use crate::net::NetPolicy;

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

/// A plugin's grants and limits.
///
/// The default grants nothing — no directories, no network, no environment —
/// with 64 MiB of memory, 10 s per call, and 4 instances at once.
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
    /// Most guest stdout and stderr kept per call (each), for the host's log.
    pub max_log_bytes: usize,
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
        }
    }
}

impl PluginPolicy {
    /// Checks the policy itself: limits in range, directories that exist,
    /// absolute distinct guest paths. The error names what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.memory_bytes == 0 || self.memory_bytes > super::MAX_PLUGIN_MEMORY {
            return Err(format!(
                "memory must be between 1 byte and {} MiB, not {} bytes",
                super::MAX_PLUGIN_MEMORY >> 20,
                self.memory_bytes
            ));
        }
        if self.timeout.is_zero() {
            return Err("timeout must be more than zero".into());
        }
        if self.max_instances == 0 {
            return Err("max_instances must be at least 1".into());
        }
        let mut guests = std::collections::HashSet::new();
        for d in &self.dirs {
            if !d.host.is_dir() {
                return Err(format!(
                    "granted directory {} does not exist",
                    d.host.display()
                ));
            }
            if !d.guest.starts_with('/') {
                return Err(format!("guest path `{}` must be absolute", d.guest));
            }
            if !guests.insert(d.guest.as_str()) {
                return Err(format!("guest path `{}` is granted twice", d.guest));
            }
        }
        for name in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(format!("`{name}` is not an environment variable name"));
            }
        }
        Ok(())
    }
}
