//! The supply chain as the configuration sets it up (rules S1–S4): the
//! lock file beside the configuration, the plugin store in the cache
//! directory, the `[trust]` keys, and, per plugin, how it is pulled, whose
//! signature it needs and how its bytes are fetched and checked.
//!
//! Contract: nothing here grants a plugin anything; it decides which bytes
//! a plugin's name stands for. A plugin's bytes come from its file, the
//! store or its registry, are held to `toolhost.lock` when the run is
//! locked, and must carry a signature by an accepted key when one is
//! required. A registry's redirects reach only the hosts the plugin's
//! `registry_hosts` grant (rule S4). Failures are
//! [`ConfigError::Supply`], naming the plugin's key, with the supply
//! layer's error as the cause.

use std::path::PathBuf;

use toolhost_net::NetPolicy;
use toolhost_supply::{
    Fetched, KeyError, LOCK_FILE, LockEntry, LockFile, PullOptions, Registry, Store, Supplier,
    TrustedKeys,
};

use super::{Config, ConfigError, PluginConfig};

impl Config {
    /// `toolhost.lock`, beside this file.
    pub fn lock_path(&self) -> PathBuf {
        self.base_dir.join(LOCK_FILE)
    }

    /// The lock file, if there is one.
    pub fn lock_file(&self) -> Result<Option<LockFile>, ConfigError> {
        LockFile::read(&self.lock_path())
            .map_err(|e| ConfigError::supply(self.lock_path().display().to_string(), e))
    }

    /// The lock file a locked run holds to: it must exist
    /// ([`ConfigError::NoLockFile`]).
    pub fn required_lock(&self) -> Result<LockFile, ConfigError> {
        self.lock_file()?.ok_or_else(|| ConfigError::NoLockFile {
            key: self.lock_path().display().to_string(),
        })
    }

    /// The plugin store (pulled components), in the cache directory; none
    /// without a cache directory.
    pub fn store(&self) -> Option<Store> {
        self.cache_dir().map(|d| Store::new(d.join("store")))
    }

    /// The keys of `[trust]`, read; none without the table. A key that
    /// cannot be read or parsed is named (`trust.keys.NAME`).
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
                KeyError::Read { name, .. } | KeyError::Format { name, .. } => name.clone(),
                _ => String::new(),
            };
            ConfigError::supply(format!("trust.keys.{name}"), e)
        })
    }

    /// Fetches plugins into this configuration's store. Without a cache
    /// directory there is no store; [`check`](Self::check) refuses every
    /// registry plugin then, so the placeholder is never written to.
    fn supplier(&self) -> Supplier {
        Supplier::new(self.store().unwrap_or_else(|| Store::new(".")))
    }
}

impl PluginConfig<'_> {
    /// The keys one of which must have signed the plugin: its
    /// `signed_by`, else every key when `[trust] require_signatures`, else
    /// none (no signature is required).
    pub fn accepted_keys(&self) -> Vec<String> {
        let section = self.section();
        if !section.signed_by.is_empty() {
            return section.signed_by.clone();
        }
        match &self.config.trust {
            Some(t) if t.require_signatures => t.keys.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// How the plugin is pulled: its `insecure` and its `registry_hosts`,
    /// the only hosts besides the registry its redirects may reach (rule
    /// S4). The error names a grant that does not parse.
    pub fn pull_options(&self) -> Result<PullOptions, ConfigError> {
        let section = self.section();
        let hosts = NetPolicy::new(&section.registry_hosts, &[] as &[&str]).map_err(|error| {
            ConfigError::BadGrant {
                key: self.key("registry_hosts"),
                error,
            }
        })?;
        Ok(PullOptions::default()
            .insecure(section.insecure)
            .registry_hosts(hosts))
    }

    /// The registry client for the plugin, as [`pull_options`](Self::pull_options) say.
    pub fn registry(&self) -> Result<Registry, ConfigError> {
        Ok(Registry::new(self.pull_options()?))
    }

    /// The plugin's bytes, from its file or the store or its registry,
    /// checked against `toolhost.lock` when `locked` and against its
    /// signature when one is required; and the digest the sandbox's load
    /// must find (its `sha256` pin, else the digest the fetch checked).
    pub async fn fetch(
        &self,
        locked: Option<&LockFile>,
        keys: &TrustedKeys,
    ) -> Result<(Fetched, Option<String>), ConfigError> {
        let name = self.name();
        let lock = locked.map(|l| l.plugins.get(name));
        let fetched = self
            .config
            .supplier()
            .fetch(
                name,
                &self.source()?,
                &self.source_text(),
                &self.registry()?,
                lock,
            )
            .await
            .map_err(|e| ConfigError::supply(self.key("wasm"), e))?;
        let accepted = self.accepted_keys();
        if !accepted.is_empty() {
            keys.verify(name, &fetched.bytes, &accepted)
                .map_err(|e| ConfigError::supply(self.key("signed_by"), e))?;
        }
        let pin = self.section().sha256.clone();
        let pin = pin.or_else(|| fetched.wasm.map(|d| d.hex()));
        Ok((fetched, pin))
    }

    /// What the plugin's source resolves to now, for `toolhost lock`: its
    /// file hashed, or its reference asked of the registry (and pulled
    /// into the store if the store lacks it).
    pub async fn lock_entry(&self) -> Result<LockEntry, ConfigError> {
        self.config
            .supplier()
            .lock_entry(
                self.name(),
                &self.source()?,
                &self.source_text(),
                &self.registry()?,
            )
            .await
            .map_err(|e| ConfigError::supply(self.key("wasm"), e))
    }

    /// The `sha256` pin, if any, must be a digest (64 hex digits), so that
    /// a placeholder or a typo is named as such, not reported later as a
    /// file that does not match ([`ConfigError::BadDigest`]).
    pub(super) fn check_pin(&self) -> Result<(), ConfigError> {
        match &self.section().sha256 {
            Some(pin) if !(pin.len() == 64 && pin.bytes().all(|b| b.is_ascii_hexdigit())) => {
                Err(ConfigError::BadDigest {
                    key: self.key("sha256"),
                    pin: pin.clone(),
                })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(err.key(), "plugins.p.sha256", "{pin}");
            assert!(matches!(err, ConfigError::BadDigest { .. }), "{err:?}");
            assert!(err.to_string().contains("expected 64 hex digits"), "{err}");
        }
        let digest = "0123456789abcdefABCDEF".repeat(3)[..64].to_owned();
        let text = format!("[plugins.p]\nwasm = \"p.wasm\"\nsha256 = \"{digest}\"\n");
        Config::parse(&text, dir.path()).unwrap().check().unwrap();
    }
}
