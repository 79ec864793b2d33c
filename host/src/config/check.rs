//! [`Config::check`]: the whole configuration checked without loading,
//! pulling or starting anything.
//!
//! Contract: a configuration that passes has, for every plugin, a source
//! that can be read (a file that exists, or a reference with a plugin
//! store to pull it into), keys that fit that source, a policy that holds
//! (see [`PluginConfig::policy`](super::PluginConfig::policy)), a `sha256`
//! pin that is a digest and `signed_by` keys that `[trust]` has; trusted
//! keys that can be read; built-in tools and MCP servers whose tables
//! translate. The first problem found is returned, naming its key. What
//! only loading can prove (the bytes match their pins, lock and
//! signatures; the component is a plugin) is left to
//! [`Config::build_host`].

use toolhost_supply::Source;

use super::{Config, ConfigError};

/// Whether [`Config::check_with`] checks file plugins' settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settings {
    /// Now: reading each plugin's wasm for the schema it declares.
    Check,
    /// At the plugin's load, which checks them with the same function
    /// (and may find them checked before, in the cache); a build's error
    /// names the same key ([`PluginConfig::settings_error`](super::PluginConfig::settings_error)).
    AtLoad,
}

impl Config {
    /// Checks every plugin's file and policy, the built-in tools' settings
    /// and the MCP servers' tables, without loading or starting anything.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.check_with(Settings::Check)
    }

    /// [`check`](Self::check), with each file plugin's settings checked
    /// now or left to its load (`settings`).
    pub(super) fn check_with(&self, settings: Settings) -> Result<(), ConfigError> {
        let keys = self.trusted_keys()?;
        self.secret_guard()?;
        for plugin in self.each_plugin() {
            let section = plugin.section();
            match plugin.source()? {
                Source::File(_) => {
                    let wasm = plugin.wasm_path()?;
                    if settings == Settings::Check {
                        plugin.check_settings(&wasm)?;
                    }
                    for (key, set) in [
                        ("insecure", section.insecure),
                        ("registry_hosts", !section.registry_hosts.is_empty()),
                    ] {
                        if set {
                            return Err(ConfigError::NotApplicable {
                                key: plugin.key(key),
                                applies_to: "only to a plugin pulled from a registry \
                                             (wasm = \"oci://…\")",
                            });
                        }
                    }
                }
                Source::Oci(_) if self.store().is_none() => {
                    return Err(ConfigError::Required {
                        key: plugin.key("wasm"),
                        reason: "a plugin from a registry needs the plugin store, which lives in \
                                 the cache directory: set [host] cache_dir",
                    });
                }
                _ => {}
            }
            plugin.policy()?;
            plugin.check_pin()?;
            for (i, name) in section.signed_by.iter().enumerate() {
                if !keys.contains(name) {
                    return Err(ConfigError::UnknownTrustKey {
                        key: plugin.key(&format!("signed_by[{i}]")),
                        name: name.clone(),
                    });
                }
            }
        }
        if let Some(trust) = &self.trust
            && trust.require_signatures
            && trust.keys.is_empty()
        {
            return Err(ConfigError::Required {
                key: "trust.require_signatures".into(),
                reason: "no plugin could be signed: [trust] keys is empty",
            });
        }
        self.builtin_config()?;
        for name in self.mcp.keys() {
            self.mcp_server(name)?;
        }
        self.rule_set()?;
        self.metrics_token()?;
        self.trace_settings()?;
        self.auth_settings()?;
        self.quotas()?;
        self.tenant_map()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s1_registry_keys_apply_only_to_a_plugin_from_a_registry() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
        let text = "[plugins.p]\nwasm = \"p.wasm\"\ninsecure = true\n";
        let err = Config::parse(text, dir.path())
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "plugins.p.insecure: applies only to a plugin pulled from a registry (wasm = \"oci://…\")"
        );
    }

    #[test]
    fn s3_signed_by_names_a_trusted_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
        let text = "[plugins.p]\nwasm = \"p.wasm\"\nsigned_by = [\"release\"]\n";
        let err = Config::parse(text, dir.path())
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "plugins.p.signed_by[0]: no key `release` in [trust] keys"
        );
    }
}
