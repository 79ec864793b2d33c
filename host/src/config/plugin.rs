//! [`PluginConfig`]: one `[plugins.NAME]` table seen through the file it is
//! in, and its translation into a [`PluginPolicy`] (rule W2).
//!
//! Contract: a [`PluginConfig`] exists only for a plugin the file has
//! ([`Config::plugin`] refuses any other name). Its [`policy`](PluginConfig::policy)
//! grants exactly what the table lists and nothing else, with the sandbox's
//! defaults for every limit the table leaves out; it is checked before it
//! is returned: directories exist, network rules parse, limits are in
//! range, and no grant covers one of the host's own paths (rule C5). Paths
//! resolve against the configuration's directory. The supply-chain side of
//! the same table (where the bytes come from, who must have signed them) is
//! in the `supply` module.

use std::path::PathBuf;
use std::time::Duration;

use toolhost_net::NetPolicy;
use toolhost_sandbox::{DirGrant, DirMode, GuestBounds, HookPower, PluginPolicy};
use toolhost_supply::{OCI_SCHEME, OciRef, Source};

use super::{Config, ConfigError, HooksEntry, ModeEntry, PluginSection};

/// One plugin's configuration: its `[plugins.NAME]` table and the file it
/// is in. Get one with [`Config::plugin`] or [`Config::each_plugin`].
#[derive(Debug, Clone, Copy)]
pub struct PluginConfig<'a> {
    pub(super) config: &'a Config,
    name: &'a str,
    section: &'a PluginSection,
}

impl Config {
    /// Plugin `name`'s configuration; [`ConfigError::NotConfigured`] if the
    /// file has no such plugin.
    pub fn plugin(&self, name: &str) -> Result<PluginConfig<'_>, ConfigError> {
        let (name, section) =
            self.plugins
                .get_key_value(name)
                .ok_or_else(|| ConfigError::NotConfigured {
                    key: format!("plugins.{name}"),
                    what: "plugin",
                })?;
        Ok(PluginConfig {
            config: self,
            name,
            section,
        })
    }

    /// Every plugin's configuration, in name order.
    pub fn each_plugin(&self) -> impl Iterator<Item = PluginConfig<'_>> {
        self.plugins.iter().map(|(name, section)| PluginConfig {
            config: self,
            name,
            section,
        })
    }
}

impl<'a> PluginConfig<'a> {
    /// The plugin's name (its table's).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The table as written.
    pub fn section(&self) -> &'a PluginSection {
        self.section
    }

    /// `plugins.NAME.KEY`, for errors.
    pub(super) fn key(&self, key: &str) -> String {
        format!("plugins.{}.{key}", self.name)
    }

    /// `plugins.NAME`, for errors about the whole table.
    pub(super) fn table_key(&self) -> String {
        format!("plugins.{}", self.name)
    }

    /// Where the component comes from: its file (resolved against the
    /// configuration's directory, not checked to exist) or its OCI
    /// reference (checked to parse).
    pub fn source(&self) -> Result<Source, ConfigError> {
        match self.section.wasm.to_str() {
            Some(text) if text.starts_with(OCI_SCHEME) => OciRef::parse(text)
                .map(Source::Oci)
                .map_err(|e| ConfigError::invalid(self.key("wasm"), e)),
            _ => Ok(Source::File(self.config.resolve(&self.section.wasm))),
        }
    }

    /// The `wasm` value as written: what `toolhost.lock` records the
    /// plugin under.
    pub fn source_text(&self) -> String {
        self.section.wasm.to_string_lossy().into_owned()
    }

    /// The component file, checked to exist. A plugin from a registry has
    /// none ([`ConfigError::NotAFile`]).
    pub fn wasm_path(&self) -> Result<PathBuf, ConfigError> {
        let key = self.key("wasm");
        let Source::File(path) = self.source()? else {
            return Err(ConfigError::NotAFile { key });
        };
        if !path.is_file() {
            return Err(ConfigError::MissingFile { key, path });
        }
        Ok(path)
    }

    /// The plugin's `max_instances` as written, if it is.
    pub(crate) fn max_instances(&self) -> Option<usize> {
        self.section.max_instances
    }

    /// The plugin's policy, checked: directories exist, rules parse,
    /// limits are in range, no directory grant covers a path of the host's
    /// own (rule C5).
    pub fn policy(&self) -> Result<PluginPolicy, ConfigError> {
        let s = self.section;
        let mut dirs = Vec::new();
        for (i, d) in s.dirs.iter().enumerate() {
            let host = self.config.resolve(&d.host);
            if !host.is_dir() {
                return Err(ConfigError::MissingDirectory {
                    key: self.key(&format!("dirs[{i}].host")),
                    path: host,
                });
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
        let mut net =
            NetPolicy::new(&s.hosts, &s.deny_hosts).map_err(|error| ConfigError::BadGrant {
                key: self.key("hosts"),
                error,
            })?;
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
            settings: self.settings()?,
            settings_schema: self.settings_schema()?,
            secrets: self
                .config
                .granted_secrets(&self.key("secrets"), &s.secrets)?,
            secret_guard: self.config.secret_guard()?,
            tenants: self.tenant_overlays()?,
            shared_by_tenants: !self.config.tenants.is_empty(),
        };
        policy.validate().map_err(|error| ConfigError::BadPolicy {
            key: self.table_key(),
            error,
        })?;
        toolhost_sandbox::check_grants(&policy.dirs, &self.config.protected_paths()).map_err(
            |error| ConfigError::ProtectedPath {
                key: self.key("dirs"),
                error,
            },
        )?;
        Ok(policy)
    }
}

impl PluginConfig<'_> {
    /// `[plugins.NAME.settings]` as the JSON the plugin's schema judges.
    fn settings(&self) -> Result<serde_json::Map<String, serde_json::Value>, ConfigError> {
        settings_json(&self.section.settings, &self.key("settings"))
    }

    /// The schema file `settings_schema` names, read and parsed.
    fn settings_schema(&self) -> Result<Option<serde_json::Value>, ConfigError> {
        let Some(file) = &self.section.settings_schema else {
            return Ok(None);
        };
        let key = self.key("settings_schema");
        let path = self.config.resolve(file);
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::BadSetting {
            key: key.clone(),
            reason: format!("cannot read {}: {e}", path.display()),
        })?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ConfigError::BadSetting {
                key,
                reason: format!("{} is not JSON: {e}", path.display()),
            })
    }

    /// Checks the settings against the schema the configuration gives or
    /// the component at `wasm` declares, without loading it (rule O1).
    pub fn check_settings(&self, wasm: &std::path::Path) -> Result<(), ConfigError> {
        let policy = self.policy()?;
        let bytes = std::fs::read(wasm).map_err(|e| ConfigError::BadSetting {
            key: self.key("wasm"),
            reason: format!("cannot read {}: {e}", wasm.display()),
        })?;
        toolhost_sandbox::settings::check(&bytes, &policy).map_err(|e| self.settings_error(e))
    }

    /// A sandbox's complaint about the settings, under the key it names.
    pub fn settings_error(&self, error: toolhost_sandbox::settings::SettingsError) -> ConfigError {
        use toolhost_sandbox::settings::SettingsError;
        let key = match &error {
            // A tenant's settings merged over the plugin's (rule A2).
            SettingsError::Invalid {
                key,
                tenant: Some(tenant),
                ..
            } => {
                let table = format!("tenants.{tenant}.settings.{}", self.name);
                if key.is_empty() {
                    table
                } else {
                    format!("{table}.{key}")
                }
            }
            SettingsError::Invalid { key, .. } if !key.is_empty() => {
                self.key(&format!("settings.{key}"))
            }
            SettingsError::BadSchema { .. } if self.section.settings_schema.is_some() => {
                self.key("settings_schema")
            }
            _ => self.key("settings"),
        };
        let reason = match error {
            // The key says which setting.
            SettingsError::Invalid { message, .. } => message,
            other => other.to_string(),
        };
        ConfigError::BadSetting { key, reason }
    }
}

/// A settings table as the JSON a plugin's schema judges; an error names
/// the key under `prefix` (the table's own key).
pub(super) fn settings_json(
    table: &toml::Table,
    prefix: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, ConfigError> {
    let mut out = serde_json::Map::new();
    for (key, value) in table {
        let json = toml_to_json(value).map_err(|reason| ConfigError::BadSetting {
            key: format!("{prefix}.{key}"),
            reason,
        })?;
        out.insert(key.clone(), json);
    }
    Ok(out)
}

/// A TOML value as JSON: a date or time as its text; a float JSON cannot
/// hold (NaN, infinity) is refused.
fn toml_to_json(value: &toml::Value) -> Result<serde_json::Value, String> {
    use serde_json::Value as J;
    Ok(match value {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => J::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .ok_or_else(|| format!("{f} is not a number a plugin can be given"))?,
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(items) => J::Array(
            items
                .iter()
                .map(toml_to_json)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        toml::Value::Table(table) => J::Object(
            table
                .iter()
                .map(|(k, v)| Ok((k.clone(), toml_to_json(v)?)))
                .collect::<Result<serde_json::Map<_, _>, String>>()?,
        ),
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sandbox::describe_policy;

    #[test]
    fn a3_with_tenants_every_plugin_shares_its_instances_fairly() {
        let plugin = "[plugins.p]\nwasm = \"p.wasm\"\n";
        let shared = |text: &str| {
            let config = Config::parse(text, std::path::Path::new("/base")).unwrap();
            config
                .plugin("p")
                .unwrap()
                .policy()
                .unwrap()
                .shared_by_tenants
        };
        assert!(!shared(plugin));
        assert!(shared(&format!(
            "{plugin}\n[tenants.a]\nsubjects = [\"alice\"]\n"
        )));
    }

    #[test]
    fn w2_missing_paths_are_errors_that_name_the_key_and_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
        let text = "[plugins.p]\nwasm = \"p.wasm\"\ndirs = [{ host = \"nope\", guest = \"/d\" }]\n";
        let config = Config::parse(text, dir.path()).unwrap();
        assert!(config.plugin("p").unwrap().wasm_path().is_ok());
        let err = config.check().unwrap_err();
        assert_eq!(err.key(), "plugins.p.dirs[0].host");
        assert_eq!(
            err,
            ConfigError::MissingDirectory {
                key: "plugins.p.dirs[0].host".into(),
                path: dir.path().join("nope"),
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "plugins.p.dirs[0].host: directory {} does not exist",
                dir.path().join("nope").display()
            )
        );
        let config = Config::parse("[plugins.q]\nwasm = \"q.wasm\"\n", dir.path()).unwrap();
        let err = config.check().unwrap_err();
        assert_eq!(err.key(), "plugins.q.wasm");
        assert!(matches!(err, ConfigError::MissingFile { .. }), "{err:?}");
        assert!(err.to_string().contains("q.wasm does not exist"), "{err}");
    }

    #[test]
    fn w2_a_plugin_the_file_does_not_have_is_named() {
        let config = Config::parse("", std::path::Path::new("/base")).unwrap();
        let err = config.plugin("ghost").unwrap_err();
        assert_eq!(err.to_string(), "plugins.ghost: no such plugin");
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
            describe_policy(&config.plugin("bare").unwrap().policy().unwrap()),
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
            describe_policy(&config.plugin("busy").unwrap().policy().unwrap()),
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
            config.plugin("p").unwrap().policy().unwrap().bounds,
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
        let err = zero.plugin("p").unwrap().policy().unwrap_err();
        assert_eq!(err.key(), "plugins.p");
        assert!(matches!(err, ConfigError::BadPolicy { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "plugins.p: max_requests must be at least 1"
        );
    }

    #[test]
    fn w2_bad_values_name_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::parse(
            "[plugins.p]\nwasm = \"p.wasm\"\nhosts = [\"ftp://x\"]\n",
            dir.path(),
        )
        .unwrap();
        let err = config.plugin("p").unwrap().policy().unwrap_err();
        assert_eq!(err.key(), "plugins.p.hosts");
        assert!(matches!(err, ConfigError::BadGrant { .. }), "{err:?}");
        let config = Config::parse(
            "[plugins.p]\nwasm = \"p.wasm\"\nmemory_mb = 4096\n",
            dir.path(),
        )
        .unwrap();
        let err = config.plugin("p").unwrap().policy().unwrap_err();
        assert_eq!(err.key(), "plugins.p");
        assert!(
            err.to_string().starts_with("plugins.p: memory must be"),
            "{err}"
        );
        let err =
            Config::parse("[plugins.\"bad name\"]\nwasm = \"p.wasm\"\n", dir.path()).unwrap_err();
        assert_eq!(err.key(), "plugins.bad name");
    }
}
