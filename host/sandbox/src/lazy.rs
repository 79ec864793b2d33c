//! Plugins loaded when a call first needs them (a `toolhost call` of one
//! tool should cost what that tool costs): [`LazyRuntime`] holds either a
//! plugin's running form or what it takes to make it, and the tool list of
//! a plugin not yet loaded comes from a cached descriptor, [`ToolsEntry`],
//! keyed by the wasm's digest and authenticated like compiled code.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;
use toolhost_core::error::{SandboxFault, ToolError};
use toolhost_core::tool::ToolSpec;

use super::Sandbox;
use super::bindings::v03::toolhost::plugin::types;
use super::budget::Reservation;
use super::cache::CodeSource;
use super::inspect::{PluginWorld, WitVersion};
use super::plugin::PluginRuntime;
use super::policy::{GuestBounds, PluginPolicy};

/// The process resources a plugin holds while loaded, given back when
/// dropped (rule C4).
#[expect(dead_code, reason = "held only to be dropped with the plugin")]
pub(crate) struct Reserved {
    /// Its worst case of the process's file descriptors.
    pub(crate) descriptors: Reservation,
    /// Its instances, of the engine's total.
    pub(crate) instances: Reservation,
}

/// What a plugin not yet loaded needs to load: its bytes (checked against
/// its digest when they were read) and what its cached tool list says it
/// is, which the loaded component must match.
pub(crate) struct Pending {
    pub(crate) sandbox: Sandbox,
    pub(crate) bytes: Bytes,
    /// The bytes' sha256, computed when they were read.
    pub(crate) digest: String,
    pub(crate) world: PluginWorld,
    pub(crate) wit: WitVersion,
}

/// A plugin's running form, made on first use if it was not made at load.
pub(crate) struct LazyRuntime {
    pub(crate) name: Arc<str>,
    pub(crate) policy: PluginPolicy,
    cell: OnceCell<Arc<PluginRuntime>>,
    /// Where the code came from, once a deferred load made it.
    source: std::sync::OnceLock<CodeSource>,
    /// What loading it takes, until it is loaded: then `None`, so that
    /// its wasm's bytes are not held for the process's life.
    pending: Mutex<Option<Pending>>,
    /// Held for as long as the plugin is, loaded or not.
    _reserved: Mutex<Reserved>,
}

impl LazyRuntime {
    /// A plugin loaded now.
    pub(crate) fn ready(runtime: Arc<PluginRuntime>, reserved: Reserved) -> Self {
        Self {
            name: runtime.name.clone(),
            policy: runtime.policy.granted.clone(),
            cell: OnceCell::new_with(Some(runtime)),
            source: std::sync::OnceLock::new(),
            pending: Mutex::new(None),
            _reserved: Mutex::new(reserved),
        }
    }

    /// A plugin to load on first use.
    pub(crate) fn pending(
        name: &str,
        policy: PluginPolicy,
        pending: Pending,
        reserved: Reserved,
    ) -> Self {
        Self {
            name: name.into(),
            policy,
            cell: OnceCell::new(),
            source: std::sync::OnceLock::new(),
            pending: Mutex::new(Some(pending)),
            _reserved: Mutex::new(reserved),
        }
    }

    /// Whether the plugin is loaded.
    pub(crate) fn is_loaded(&self) -> bool {
        self.cell.initialized()
    }

    /// The running plugin, loading it now if this is its first use. A
    /// failed load fails this use, naming the plugin, and the next use
    /// tries again; concurrent first uses load it once.
    pub(crate) async fn get(&self) -> Result<&Arc<PluginRuntime>, ToolError> {
        self.cell.get_or_try_init(|| self.load()).await
    }

    /// The running plugin if it is loaded already: no wait, no load.
    pub(crate) fn loaded(&self) -> Option<&Arc<PluginRuntime>> {
        self.cell.get()
    }

    /// [`get`](Self::get), ahead of any use: where the deferred load,
    /// this one or a use's before it, took the code from (`None` for a
    /// plugin loaded at once, which had no deferred load).
    pub(crate) async fn warm(&self) -> Result<Option<CodeSource>, ToolError> {
        self.get().await?;
        Ok(self.source.get().copied())
    }

    /// Loads the pending plugin's code, checked against what its cached
    /// tool list says it is; once loaded, the wasm's bytes are let go.
    async fn load(&self) -> Result<Arc<PluginRuntime>, ToolError> {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|p| {
                (
                    p.sandbox.clone(),
                    p.bytes.clone(),
                    p.digest.clone(),
                    p.world,
                    p.wit,
                )
            });
        let Some((sandbox, bytes, digest, expected_world, expected_wit)) = pending else {
            return Err(self.fault("the plugin was never loaded".into()));
        };
        let (runtime, world, wit, source) = sandbox
            .runtime(&self.name, bytes, digest, self.policy.clone())
            .await
            .map_err(|e| self.fault(toolhost_core::report(&e)))?;
        if (world, wit) != (expected_world, expected_wit) {
            return Err(self.fault(format!(
                "its cached tool list says {expected_world} {expected_wit}, and the component is \
                 {world} {wit}"
            )));
        }
        tracing::debug!(plugin = %self.name, "code loaded ({source:?})");
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let _ = self.source.set(source);
        Ok(runtime)
    }

    fn fault(&self, reason: String) -> ToolError {
        ToolError::Sandbox {
            plugin: self.name.to_string(),
            fault: SandboxFault::Host(format!("loading its code failed: {reason}")),
        }
    }

    /// Checks a text the guest handed back against the message bound.
    pub(crate) fn message(&self, what: &str, text: String) -> Result<String, ToolError> {
        check_message(&self.name, &self.policy.bounds, what, text)
    }
}

/// Checks `text`, `what` the guest of `plugin` handed back, against the
/// message bound of `bounds` (rule C3): past it, a limit fault naming the
/// bound and the size.
pub(crate) fn check_message(
    plugin: &str,
    bounds: &GuestBounds,
    what: &str,
    text: String,
) -> Result<String, ToolError> {
    let max = bounds.max_message_bytes;
    if text.len() > max {
        return Err(ToolError::Sandbox {
            plugin: plugin.to_owned(),
            fault: SandboxFault::LimitExceeded(format!(
                "message limit of {max} bytes ({what} of {} bytes)",
                text.len()
            )),
        });
    }
    Ok(text)
}

/// A plugin's tool list as the cache keeps it, for a later run to register
/// the tools without loading the plugin. Bound to the wasm's digest and to
/// this host's version by the entry's MAC; read back, it goes through the
/// same checks as a list the plugin hands over.
#[derive(Serialize, Deserialize)]
pub(crate) struct ToolsEntry {
    world: String,
    version: String,
    wit: String,
    tools: Vec<CachedTool>,
}

#[derive(Serialize, Deserialize)]
struct CachedTool {
    name: String,
    description: String,
    parameters: serde_json::Value,
    concurrency_safe: Option<bool>,
    idempotent: bool,
    output_schema: Option<serde_json::Value>,
    /// Absent in entries written before tools had hints.
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    destructive: Option<bool>,
    #[serde(default)]
    open_world: Option<bool>,
}

impl ToolsEntry {
    /// The entry for a plugin of `world` and `version` with `specs`.
    pub(crate) fn new(
        world: PluginWorld,
        version: &str,
        wit: WitVersion,
        specs: &[&ToolSpec],
    ) -> Self {
        Self {
            world: world.to_string(),
            version: version.to_owned(),
            wit: wit.as_str().to_owned(),
            tools: specs
                .iter()
                .map(|s| CachedTool {
                    name: s.name.clone(),
                    description: s.description.clone(),
                    parameters: s.parameters.clone(),
                    concurrency_safe: s.concurrency_safe,
                    idempotent: s.idempotent,
                    output_schema: s.output_schema.clone(),
                    read_only: s.hints.read_only,
                    destructive: s.hints.destructive,
                    open_world: s.hints.open_world,
                })
                .collect(),
        }
    }

    /// What the entry says: world, version text, interface version and the
    /// descriptors as a guest would hand them over. `None` if it names a
    /// world or version this host does not know.
    pub(crate) fn into_parts(
        self,
    ) -> Option<(PluginWorld, String, WitVersion, Vec<types::ToolDescriptor>)> {
        let world = match self.world.as_str() {
            "tool-plugin" => PluginWorld::ToolPlugin,
            "extension-plugin" => PluginWorld::ExtensionPlugin,
            _ => return None,
        };
        let wit = WitVersion::ALL
            .into_iter()
            .find(|v| v.as_str() == self.wit)?;
        let tools = self
            .tools
            .into_iter()
            .map(|t| types::ToolDescriptor {
                name: t.name,
                description: t.description,
                parameters_schema: t.parameters.to_string(),
                concurrency_safe: t.concurrency_safe,
                idempotent: t.idempotent,
                output_schema: t.output_schema.map(|s| s.to_string()),
                hints: types::ToolHints {
                    read_only: t.read_only,
                    destructive: t.destructive,
                    open_world: t.open_world,
                },
            })
            .collect();
        Some((world, self.version, wit, tools))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Sandbox;
    use super::super::testing::wasm;

    #[tokio::test]
    async fn w7_a_loaded_plugin_lets_go_of_its_wasm() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
        let load = || sandbox.plugin_file("calc", wasm("calc")).lazy(true).load();
        load().await.unwrap();
        let deferred = load().await.unwrap();
        let runtime = deferred.runtime.clone();
        assert!(runtime.pending.lock().unwrap().is_some());
        deferred.warm_up().unwrap().run().await.unwrap();
        // Loaded: the bytes it was loaded from are not kept.
        assert!(runtime.pending.lock().unwrap().is_none());
        assert!(runtime.get().await.is_ok());
    }
}
