//! What a record of settings that passed their schema (rule O1) is keyed
//! by, so that loading the same wasm with the same settings again need not
//! check them again. Checking builds the JSON Schema meta-schema's
//! validator, a millisecond and more of a start that otherwise lists its
//! plugins from the cache; the record stands in for that work.
//!
//! The check reads the wasm (the schema it declares, found by its digest),
//! the schema the configuration gives instead, the plugin's settings and
//! each tenant's settings merged over them, and nothing else; with the
//! host's version (which fixes the checks) keying the record's directory,
//! the same key gives the same verdict. Every field of [`PluginPolicy`] is
//! named below, so one added later does not compile until it is placed in
//! or out of the key.
//!
//! The key is a keyed BLAKE3 under the cache's key: settings can hold
//! values an entry's name must not let anyone test guesses of. Only
//! settings that passed a schema are recorded (with none to check against,
//! there is nothing to spare); a refusal is checked again on every load,
//! so its message is always the check's own.

use super::listing::Fields;
use crate::policy::PluginPolicy;

/// The digest of what checking a plugin's settings reads, in hex: the
/// record's name and part of its MAC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SettingsKey(String);

impl SettingsKey {
    /// The key of checking `policy`'s settings for the wasm whose sha256 is
    /// `digest`, under the cache key `key`.
    pub(crate) fn of(key: &[u8; 32], digest: &str, policy: &PluginPolicy) -> Self {
        let PluginPolicy {
            settings,
            settings_schema,
            tenants,
            // Not read by the check.
            dirs: _,
            net: _,
            env: _,
            memory_bytes: _,
            bounds: _,
            secrets: _,
            secret_guard: _,
            timeout: _,
            max_instances: _,
            shared_by_tenants: _,
            max_output_bytes: _,
            max_log_bytes: _,
            hooks: _,
        } = policy;
        let mut h = Fields(blake3::Hasher::new_keyed(key));
        h.field(b"toolhost checked-settings key 1");
        // The schema the component declares is in its bytes.
        h.field(digest.as_bytes());
        match settings_schema {
            Some(schema) => {
                h.field(b"schema");
                h.field(schema.to_string().as_bytes());
            }
            None => h.field(b"declared"),
        }
        h.field(
            serde_json::Value::Object(settings.clone())
                .to_string()
                .as_bytes(),
        );
        for (tenant, overlay) in tenants {
            h.field(b"tenant");
            h.field(tenant.as_bytes());
            h.field(
                serde_json::Value::Object(overlay.settings.clone())
                    .to_string()
                    .as_bytes(),
            );
        }
        Self(h.0.finalize().to_hex().to_string())
    }

    /// The key in hex.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::TenantOverlay;

    const KEY: [u8; 32] = [7; 32];
    const DIGEST: &str = "ab12";

    fn key(policy: &PluginPolicy) -> String {
        SettingsKey::of(&KEY, DIGEST, policy).0
    }

    fn with_settings(value: serde_json::Value) -> PluginPolicy {
        let serde_json::Value::Object(settings) = value else {
            unreachable!("an object")
        };
        PluginPolicy {
            settings,
            ..PluginPolicy::default()
        }
    }

    #[test]
    fn o1_what_the_settings_check_reads_changes_the_key_and_nothing_else_does() {
        let base = with_settings(json!({"port": 80}));
        let same = key(&base);
        assert_eq!(same, key(&base.clone()));
        assert_ne!(same, SettingsKey::of(&[8; 32], DIGEST, &base).0);
        assert_ne!(same, SettingsKey::of(&KEY, "cd34", &base).0);
        // Not read by the check: the same key.
        let mut quiet = base.clone();
        quiet.timeout *= 2;
        quiet.memory_bytes += 1 << 20;
        quiet.env = vec!["PATH".into()];
        assert_eq!(key(&quiet), same);
        // Read: another key.
        let other_value = with_settings(json!({"port": "80"}));
        let other_key = with_settings(json!({"ports": 80}));
        let mut schema = base.clone();
        schema.settings_schema = Some(json!({"type": "object"}));
        let mut tenant = base.clone();
        tenant.tenants.insert(
            "acme".into(),
            TenantOverlay::new(
                serde_json::Map::from_iter([("port".to_owned(), json!("eighty"))]),
                Vec::new(),
            ),
        );
        let mut empty_tenant = base.clone();
        empty_tenant
            .tenants
            .insert("acme".into(), TenantOverlay::default());
        for other in [&other_value, &other_key, &schema, &tenant, &empty_tenant] {
            assert_ne!(key(other), same, "{other:?}");
        }
        assert_ne!(key(&tenant), key(&empty_tenant));
    }
}
