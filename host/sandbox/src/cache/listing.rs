//! What a cached tool list is keyed by (rule W6): everything the plugin's
//! `list-tools` can observe besides its own bytes, so that a list made
//! under one policy is never served under another.
//!
//! The wasm's digest and this host's version (which fixes the WIT worlds
//! and versions it links, and the checks a list was read under) key the
//! entry already; this adds a digest of the policy as the guest sees it:
//! the environment variables it is granted, with their values as they are
//! read now (unset ones are absent, as they are for the guest); its
//! directory grants; its network grants; its memory limit and handle
//! bounds (a guest can see an allocation or an open fail). Every field of
//! [`PluginPolicy`] is named below, so one added later does not compile
//! until it is placed in or out of the key.
//!
//! What a guest can read that no key can capture — what is in a granted
//! directory, what a granted host answers — makes its list uncacheable: a
//! plugin granted a directory or a host is listed afresh on every load.
//! (A list that depends on the clock or on randomness is the plugin's own
//! doing; nothing can key it.)
//!
//! The digest is a keyed BLAKE3 under the cache's key: the environment's
//! values (tokens, say) are in it, and an entry's name must not let anyone
//! who can read the cache directory test guesses of them.

use crate::policy::{DirMode, PluginPolicy};

/// The digest of what a plugin's tool list can depend on under one policy,
/// in hex; part of the cached list's name and of its MAC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListingKey(String);

impl ListingKey {
    /// The key of `policy`'s listing under the cache key `key`, or `None`
    /// if the guest could base its list on something no key captures.
    pub(crate) fn of(key: &[u8; 32], policy: &PluginPolicy) -> Option<Self> {
        let PluginPolicy {
            dirs,
            net,
            env,
            memory_bytes,
            bounds,
            settings,
            secrets,
            // The settings are checked against it, not read through it.
            settings_schema: _,
            // What the guest may send and log, not what it reads.
            secret_guard: _,
            // Read by a tenant's calls, never by `list-tools`, which reads
            // the plugin's own settings and secrets (rule A2): no tenant's
            // changes the list.
            tenants: _,
            // Not visible to `list-tools`: the host's own time limit (a
            // list that does not finish is not cached), how many instances
            // run at once, and what calls, logs and hooks may do.
            timeout: _,
            max_instances: _,
            shared_by_tenants: _,
            max_output_bytes: _,
            max_log_bytes: _,
            hooks: _,
        } = policy;
        if !dirs.is_empty() || !net.is_deny_all() {
            return None;
        }
        let mut h = Fields(blake3::Hasher::new_keyed(key));
        h.field(b"toolhost tool-list key 1");
        // The variables as the instance is given them (see
        // `ResolvedPolicy::new`): granted names in order, each with its
        // value if it is set.
        for name in env {
            if let Some(value) = std::env::var_os(name) {
                h.field(b"env");
                h.field(name.as_bytes());
                h.field(value.as_encoded_bytes());
            }
        }
        // Empty by the check above; keyed all the same, so that lifting
        // that check cannot make two grants share a list.
        for grant in dirs {
            h.field(b"dir");
            h.field(grant.host.as_os_str().as_encoded_bytes());
            h.field(grant.guest.as_bytes());
            h.field(match grant.mode {
                DirMode::ReadOnly => b"ro",
                DirMode::ReadWrite => b"rw",
            });
        }
        // As `wasi:config/store` hands them to the instance.
        for (key, value) in settings {
            h.field(b"setting");
            h.field(key.as_bytes());
            h.field(crate::settings::as_config_string(value).as_bytes());
        }
        // Keyed, so the name of an entry tells nothing of their values.
        for secret in secrets {
            h.field(b"secret");
            h.field(secret.name().as_bytes());
            h.field(secret.expose().as_bytes());
        }
        h.field(format!("{net:?}").as_bytes());
        h.field(&memory_bytes.to_le_bytes());
        h.field(format!("{bounds:?}").as_bytes());
        let digest = h.0.finalize();
        Some(Self(digest.to_hex()[..32].to_owned()))
    }

    /// The key in hex.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// A hasher fed length-prefixed fields, so that no two sequences of
/// fields hash the same bytes.
pub(super) struct Fields(pub(super) blake3::Hasher);

impl Fields {
    pub(super) fn field(&mut self, bytes: &[u8]) {
        self.0.update(&(bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DirGrant;

    const KEY: [u8; 32] = [7; 32];

    fn key(policy: &PluginPolicy) -> String {
        ListingKey::of(&KEY, policy).unwrap().0
    }

    #[test]
    fn w6_what_the_guest_sees_changes_the_key_and_nothing_else_does() {
        let base = PluginPolicy::default();
        let same = key(&base);
        assert_eq!(same, key(&base.clone()));
        assert_ne!(same, ListingKey::of(&[8; 32], &base).unwrap().0);
        // Invisible to a listing: the same key.
        let mut quiet = base.clone();
        quiet.timeout *= 2;
        quiet.max_instances += 1;
        quiet.max_output_bytes += 1;
        quiet.max_log_bytes += 1;
        assert_eq!(key(&quiet), same);
        // Visible: another key.
        let mut memory = base.clone();
        memory.memory_bytes += 1 << 20;
        let mut handles = base.clone();
        handles.bounds.max_handles += 1;
        // A granted variable that is unset is not seen; PATH is set in
        // any test run, so granting it changes what the guest sees.
        let mut unset = base.clone();
        unset.env = vec!["TOOLHOST_W6_SURELY_UNSET".into()];
        let mut path = base.clone();
        path.env = vec!["PATH".into()];
        assert_eq!(key(&unset), same);
        for other in [&memory, &handles, &path] {
            assert_ne!(key(other), same, "{other:?}");
        }
    }

    #[test]
    fn w6_what_no_key_can_capture_is_not_cached() {
        let dirs = PluginPolicy {
            dirs: vec![DirGrant {
                host: "/tmp".into(),
                guest: "/data".into(),
                mode: DirMode::ReadOnly,
            }],
            ..PluginPolicy::default()
        };
        assert_eq!(ListingKey::of(&KEY, &dirs), None);
        let net = PluginPolicy {
            net: toolhost_net::NetPolicy::new(["example.com"], &[] as &[&str]).unwrap(),
            ..PluginPolicy::default()
        };
        assert_eq!(ListingKey::of(&KEY, &net), None);
    }
}
