//! A tenant's own settings and secrets (rule A2):
//! `[tenants.NAME.settings.PLUGIN]` and `[tenants.NAME.secrets]`.
//!
//! ```toml
//! [tenants.acme.settings.template]   # merged over [plugins.template.settings]
//! prefix = "acme: "                  # for acme's calls alone
//!
//! [tenants.acme.secrets]             # a secret the plugins are granted → this tenant's
//! api_key = "acme_api_key"           # source, another [secrets.NAME]
//! ```
//!
//! Contract: a tenant's call of a plugin reads through `wasi:config/store`
//! the plugin's settings with the tenant's of the same key in their place
//! (key by key: a value the tenant gives replaces the plugin's whole), and
//! every secret the plugin is granted, under its granted name, with the
//! value of the tenant's source where `[tenants.NAME.secrets]` names one.
//! Nothing of another tenant's. A source is a `[secrets.NAME]` like any
//! other: redacted from everything, and sent only to its own `hosts`.
//! The merged settings are checked against the plugin's schema at `check`
//! and at every load, an error naming `tenants.NAME.settings.PLUGIN.KEY`.
//! A tenant's settings for a plugin the file does not have, a granted name
//! no plugin is granted, and a source that is not a `[secrets.NAME]` are
//! errors naming the key. The tool list is the plugin's own: it is listed
//! with the plugin's settings, never a tenant's.

use std::collections::BTreeMap;

use toolhost_sandbox::TenantOverlay;

use super::{Config, ConfigError, PluginConfig};

impl Config {
    /// Checks every tenant's `settings` and `secrets` tables against the
    /// plugins and secrets the file has; the error names the key.
    pub(super) fn check_tenant_overlays(&self) -> Result<(), ConfigError> {
        for (tenant, section) in &self.tenants {
            for plugin in section.settings.keys() {
                if !self.plugins.contains_key(plugin) {
                    return Err(ConfigError::Invalid {
                        key: format!("tenants.{tenant}.settings.{plugin}"),
                        reason: format!("there is no [plugins.{plugin}]"),
                        source: None,
                    });
                }
            }
            for (granted, source) in &section.secrets {
                let key = format!("tenants.{tenant}.secrets.{granted}");
                if !self.plugins.values().any(|p| p.secrets.contains(granted)) {
                    return Err(ConfigError::BadSecret {
                        key,
                        reason: format!(
                            "no plugin is granted a secret `{granted}` for this tenant's to replace"
                        ),
                    });
                }
                if !self.secrets.contains_key(source) {
                    return Err(ConfigError::BadSecret {
                        key,
                        reason: format!("there is no [secrets.{source}]"),
                    });
                }
            }
        }
        Ok(())
    }
}

impl PluginConfig<'_> {
    /// What each tenant's calls of this plugin read in place of its own
    /// settings and secrets, for the tenants that change any.
    pub(super) fn tenant_overlays(&self) -> Result<BTreeMap<String, TenantOverlay>, ConfigError> {
        self.config.check_tenant_overlays()?;
        let mut overlays = BTreeMap::new();
        for (tenant, section) in &self.config.tenants {
            let settings = match section.settings.get(self.name()) {
                Some(table) => {
                    let prefix = format!("tenants.{tenant}.settings.{}", self.name());
                    super::plugin::settings_json(table, &prefix)?
                }
                None => serde_json::Map::new(),
            };
            let mut secrets = Vec::new();
            for (granted, source) in &section.secrets {
                if self.section().secrets.contains(granted) {
                    let secret = self.config.granted_secrets(
                        &format!("tenants.{tenant}.secrets.{granted}"),
                        std::slice::from_ref(source),
                    )?;
                    secrets.extend(secret.into_iter().map(|s| (granted.clone(), s)));
                }
            }
            let overlay = TenantOverlay::new(settings, secrets);
            if !overlay.is_empty() {
                overlays.insert(tenant.clone(), overlay);
            }
        }
        Ok(overlays)
    }
}
