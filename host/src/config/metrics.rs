//! `[metrics]`: Prometheus metrics of every call, served by `serve --http`
//! at `/metrics` (rule X1).
//!
//! Contract: without the table, or with `enabled = false`, nothing is
//! recorded. `token` names a `[secrets.NAME]` whose value a scraper must
//! present as a bearer token; `open = true` asks for none (for a server on
//! loopback); with neither, `/metrics` asks for what `/mcp` asks for. A
//! token and `open` together, a token that names no secret, and a cap of
//! no tool labels are errors naming the key.

use serde::Deserialize;
use toolhost_core::Secret;
use toolhost_core::metrics::DEFAULT_TOOL_LABELS;

use super::{Config, ConfigError};

/// The `[metrics]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSection {
    /// Record metrics and serve them at `/metrics` (default false).
    pub enabled: bool,
    /// The `[secrets.NAME]` whose value a scraper presents as
    /// `Authorization: Bearer VALUE`, instead of what `/mcp` asks for.
    pub token: Option<String>,
    /// Serve `/metrics` without any token: only on a loopback address.
    pub open: bool,
    /// How many distinct tool names get a label of their own; calls of
    /// any other tool are counted as `other` (default 500).
    pub max_tool_labels: usize,
}

impl Default for MetricsSection {
    fn default() -> Self {
        Self {
            enabled: false,
            token: None,
            open: false,
            max_tool_labels: DEFAULT_TOOL_LABELS,
        }
    }
}

impl Config {
    /// The secret a scraper must present at `/metrics`, if `[metrics]
    /// token` names one; checks the table whether or not it is enabled.
    pub fn metrics_token(&self) -> Result<Option<Secret>, ConfigError> {
        let section = &self.metrics;
        if section.max_tool_labels == 0 {
            return Err(ConfigError::OutOfRange {
                key: "metrics.max_tool_labels".into(),
                reason: "must be at least 1".into(),
            });
        }
        let Some(name) = &section.token else {
            // Every tenant's calls are in the one registry /metrics
            // serves (their counts by `tenant`, instances and stages by
            // plugin): guarded as /mcp is, any tenant's caller would read
            // the others' activity.
            if section.enabled && !section.open && !self.tenants.is_empty() {
                return Err(ConfigError::Required {
                    key: "metrics.token".into(),
                    reason: "with [tenants], /metrics holds every tenant's calls, and without \
                             a token of its own any caller of /mcp could read them: name the \
                             [secrets.NAME] a scraper presents (token = \"NAME\")",
                });
            }
            return Ok(None);
        };
        if section.open {
            return Err(ConfigError::Conflict {
                key: "metrics.open".into(),
                reason: "a token and `open = true` exclude each other: say which one guards /metrics",
            });
        }
        if !self.secrets.contains_key(name) {
            return Err(ConfigError::BadSecret {
                key: "metrics.token".into(),
                reason: format!("there is no [secrets.{name}]"),
            });
        }
        let mut secrets = self.granted_secrets("metrics.token", std::slice::from_ref(name))?;
        Ok(secrets.pop())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/base"))
    }

    #[test]
    fn x1_metrics_are_off_unless_enabled() {
        let config = parse("").unwrap();
        assert!(!config.metrics.enabled);
        assert!(config.metrics_token().unwrap().is_none());
        let config = parse("[metrics]\nenabled = true\nopen = true\n").unwrap();
        assert!(config.metrics.enabled && config.metrics.open);
        let err = parse("[metrics]\nenabeld = true\n").unwrap_err();
        assert!(err.to_string().contains("enabeld"), "{err}");
    }

    #[test]
    fn x1_a_metrics_token_names_a_secret_and_excludes_open() {
        let err = parse("[metrics]\nenabled = true\ntoken = \"scrape\"\n")
            .unwrap()
            .metrics_token()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "metrics.token: there is no [secrets.scrape]"
        );
        let err = parse("[metrics]\ntoken = \"scrape\"\nopen = true\n")
            .unwrap()
            .metrics_token()
            .unwrap_err();
        assert!(err.to_string().starts_with("metrics.open: "), "{err}");
        let err = parse("[metrics]\nmax_tool_labels = 0\n")
            .unwrap()
            .metrics_token()
            .unwrap_err();
        assert!(
            err.to_string().starts_with("metrics.max_tool_labels: "),
            "{err}"
        );
    }

    #[test]
    fn x1_with_tenants_metrics_ask_for_a_token_of_their_own() {
        let tenants =
            "\n[tenants.a]\nsubjects = [\"alice\"]\n\n[tenants.b]\nsubjects = [\"bob\"]\n";
        // Guarded as /mcp is, a caller of tenant a would read b's calls.
        let err = parse(&format!("[metrics]\nenabled = true\n{tenants}"))
            .unwrap()
            .metrics_token()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("metrics.token: with [tenants], /metrics holds every tenant's calls"),
            "{err}"
        );
        // A scraper's own token, an explicit open endpoint, or metrics off.
        let with_token = format!(
            "[metrics]\nenabled = true\ntoken = \"scrape\"\n\n[secrets.scrape]\nenv = \"PATH\"\n{tenants}"
        );
        assert!(
            parse(&with_token)
                .unwrap()
                .metrics_token()
                .unwrap()
                .is_some()
        );
        let open = format!("[metrics]\nenabled = true\nopen = true\n{tenants}");
        assert!(parse(&open).unwrap().metrics_token().unwrap().is_none());
        assert!(parse(tenants).unwrap().metrics_token().unwrap().is_none());
    }
}
