//! `[quota]`, `[tenants.NAME]` and `[plugins.NAME.quota]`: who a caller
//! is for (rule A2) and the quotas their calls are admitted through (rule
//! A3).
//!
//! ```toml
//! [quota]                    # every tenant without a quota of its own
//! calls_per_minute = 600
//! in_flight = 8
//! cpu_ms_per_minute = 60000  # guest CPU time
//!
//! [tenants.acme]             # callers whose token subject or client is listed
//! subjects = ["alice", "bob"]
//! clients = ["acme-ci"]
//! quota = { in_flight = 2, cpu_ms_per_minute = 20000 }
//!
//! [plugins.runaway.quota]    # counted for each tenant separately
//! cpu_ms_per_minute = 2000
//! ```
//!
//! Contract: a limit of 0 is refused (it would refuse every call: leave the
//! tenant or plugin out of the configuration instead), as is a quota of a
//! plugin that is not configured and a subject or client listed by two
//! tenants; each error names its key. A caller whose subject and client no
//! tenant lists is the tenant `default`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toolhost_core::quota::{QuotaLimits, Quotas};
use toolhost_core::rules::ToolPattern;
use toolhost_core::tenant::{TenantClash, TenantMap};

use super::{Config, ConfigError};

/// A quota table: `[quota]`, a tenant's `quota` or `[plugins.NAME.quota]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaSection {
    /// Calls admitted per minute (a burst of this many, refilled evenly).
    pub calls_per_minute: Option<u32>,
    /// Calls running at once.
    pub in_flight: Option<u32>,
    /// Milliseconds of guest CPU time per minute.
    pub cpu_ms_per_minute: Option<u64>,
}

/// A `[tenants.NAME]` table.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantSection {
    /// Token subjects (`sub`) whose calls are this tenant's.
    #[serde(default)]
    pub subjects: Vec<String>,
    /// OAuth clients (`client_id`/`azp`) whose calls are this tenant's.
    #[serde(default)]
    pub clients: Vec<String>,
    /// The tenant's quota, instead of `[quota]`.
    pub quota: Option<QuotaSection>,
    /// The tools the tenant sees and may call, as globs over tool names
    /// (as in `[[rules]]`); every tool when left out.
    pub tools: Option<Vec<String>>,
    /// `[tenants.NAME.settings.PLUGIN]`: settings the tenant's calls of
    /// the plugin read in place of the plugin's of the same key (see
    /// `tenant_overlay`).
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Table>,
    /// `[tenants.NAME.secrets]`: for the tenant's calls, the name of a
    /// secret plugins are granted, mapped to the `[secrets.NAME]` read in
    /// its place.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
}

impl QuotaSection {
    /// The limits, checked: each set limit at least 1.
    fn limits(&self, key: &str) -> Result<QuotaLimits, ConfigError> {
        let positive = |name: &str, value: Option<u64>| match value {
            Some(0) => Err(ConfigError::OutOfRange {
                key: format!("{key}.{name}"),
                reason: "0 would refuse every call; leave the key out for no limit".into(),
            }),
            _ => Ok(()),
        };
        positive("calls_per_minute", self.calls_per_minute.map(u64::from))?;
        positive("in_flight", self.in_flight.map(u64::from))?;
        positive("cpu_ms_per_minute", self.cpu_ms_per_minute)?;
        let mut limits = QuotaLimits::NONE;
        limits.calls_per_minute = self.calls_per_minute;
        limits.in_flight = self.in_flight;
        limits.cpu_per_minute = self.cpu_ms_per_minute.map(Duration::from_millis);
        Ok(limits)
    }
}

impl Config {
    /// The quotas of `[quota]`, `[tenants.NAME] quota` and
    /// `[plugins.NAME.quota]`, checked.
    pub fn quotas(&self) -> Result<Quotas, ConfigError> {
        let mut quotas = Quotas::new();
        if let Some(every) = &self.quota {
            quotas = quotas.every_tenant(every.limits("quota")?);
        }
        for (name, tenant) in &self.tenants {
            if let Some(q) = &tenant.quota {
                quotas = quotas.tenant(name, q.limits(&format!("tenants.{name}.quota"))?);
            }
        }
        for (name, plugin) in &self.plugins {
            if let Some(q) = &plugin.quota {
                quotas = quotas.plugin(name, q.limits(&format!("plugins.{name}.quota"))?);
            }
        }
        Ok(quotas)
    }

    /// Which tenant each subject and client belongs to, checked: a name
    /// listed by two tenants is an error naming the second.
    pub fn tenant_map(&self) -> Result<TenantMap, ConfigError> {
        self.check_tenant_overlays()?;
        let mut map = TenantMap::new();
        for (name, tenant) in &self.tenants {
            let listed = |field: &str, e: TenantClash| ConfigError::Invalid {
                key: format!("tenants.{name}.{field}"),
                reason: e.to_string(),
                source: None,
            };
            for subject in &tenant.subjects {
                map.add_subject(subject, name)
                    .map_err(|e| listed("subjects", e))?;
            }
            for client in &tenant.clients {
                map.add_client(client, name)
                    .map_err(|e| listed("clients", e))?;
            }
            if let Some(globs) = &tenant.tools {
                let patterns = globs
                    .iter()
                    .enumerate()
                    .map(|(i, glob)| {
                        ToolPattern::new(glob).map_err(|source| ConfigError::BadRule {
                            key: format!("tenants.{name}.tools[{i}]"),
                            source,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                map.limit_tools(name, patterns);
            }
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(text: &str) -> Config {
        Config::parse(text, Path::new("/base")).unwrap()
    }

    #[test]
    fn a3_quotas_come_from_every_table_and_zero_is_refused_naming_the_key() {
        let config = parse(
            "[quota]\ncalls_per_minute = 60\n\n[tenants.acme]\nsubjects = [\"alice\"]\nquota = { in_flight = 2 }\n\n[plugins.spin]\nwasm = \"s.wasm\"\nquota = { cpu_ms_per_minute = 500 }\n",
        );
        assert!(!config.quotas().unwrap().is_unlimited());
        let zero = parse("[tenants.acme.quota]\nin_flight = 0\n");
        let err = zero.quotas().unwrap_err();
        assert!(
            err.to_string().contains("tenants.acme.quota.in_flight"),
            "{err}"
        );
        let err = Config::parse("[quota]\ncpu_ms = 5\n", Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("unknown field `cpu_ms`"), "{err}");
    }

    #[test]
    fn a2_a_caller_is_the_tenant_listing_its_subject_or_client_else_default() {
        let config = parse(
            "[tenants.acme]\nsubjects = [\"alice\"]\nclients = [\"acme-ci\"]\n\n[tenants.beta]\nsubjects = [\"bob\"]\n",
        );
        let map = config.tenant_map().unwrap();
        assert_eq!(&*map.tenant_of(Some("alice"), None), "acme");
        assert_eq!(&*map.tenant_of(Some("carol"), Some("acme-ci")), "acme");
        assert_eq!(&*map.tenant_of(Some("bob"), Some("acme-ci")), "beta");
        assert_eq!(&*map.tenant_of(Some("eve"), None), "default");
        let twice = parse(
            "[tenants.acme]\nsubjects = [\"alice\"]\n\n[tenants.beta]\nsubjects = [\"alice\"]\n",
        );
        let err = twice.tenant_map().unwrap_err();
        assert!(err.to_string().contains("tenants.beta.subjects"), "{err}");
        assert!(err.to_string().contains("tenant `acme`"), "{err}");
    }
}
