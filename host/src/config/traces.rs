//! `[tracing]`: an OpenTelemetry span for every call, exported by
//! OTLP/HTTP (rule X2).
//!
//! Contract: without the table, or with `enabled = false`, no span is
//! made. `endpoint` is the collector's OTLP/HTTP traces URL; a URL whose
//! path is empty or `/` gets `/v1/traces`. Without it, the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as is) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (with `/v1/traces`) is read. `headers`
//! are sent to the collector as written; `secret_headers` name a
//! `[secrets.NAME]` whose value is the header's. Every bad value is an
//! error naming its key.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::{Config, ConfigError};

/// The service name spans carry by default.
pub const DEFAULT_SERVICE_NAME: &str = "toolhost";

/// How long one export may take by default, in milliseconds.
pub const DEFAULT_EXPORT_TIMEOUT_MS: u64 = 10_000;

/// How many finished spans wait for export by default; past that, new
/// ones are dropped.
pub const DEFAULT_MAX_QUEUE_SIZE: usize = 2048;

/// The `[tracing]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracingSection {
    /// Make and export spans (default true when the table is there).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The collector's OTLP/HTTP traces URL.
    pub endpoint: Option<String>,
    /// The `service.name` resource attribute (default `toolhost`).
    pub service_name: Option<String>,
    /// The share of traces a call that starts one samples, from 0 to 1
    /// (default 1); a call in a caller's trace follows the caller's
    /// choice.
    pub sampling_ratio: Option<f64>,
    /// Headers sent to the collector, as written.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Headers sent to the collector whose values are `[secrets.NAME]`s.
    #[serde(default)]
    pub secret_headers: BTreeMap<String, String>,
    /// How long one export may take, in milliseconds (default 10000).
    pub export_timeout_ms: Option<u64>,
    /// How many finished spans may wait for export (default 2048); past
    /// that, new ones are dropped.
    pub max_queue_size: Option<usize>,
}

fn yes() -> bool {
    true
}

/// `[tracing]` checked and resolved: where and how spans are exported.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct TraceSettings {
    /// The collector's OTLP/HTTP traces URL.
    pub endpoint: String,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// The share of new traces sampled.
    pub sampling_ratio: f64,
    /// Headers sent with every export, secret values included.
    pub headers: Vec<(http::HeaderName, http::HeaderValue)>,
    /// How long one export may take.
    pub export_timeout: Duration,
    /// How many finished spans may wait for export.
    pub max_queue_size: usize,
}

impl std::fmt::Debug for TraceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may be secrets: shown by name only.
        f.debug_struct("TraceSettings")
            .field("endpoint", &self.endpoint)
            .field("service_name", &self.service_name)
            .field("sampling_ratio", &self.sampling_ratio)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("export_timeout", &self.export_timeout)
            .field("max_queue_size", &self.max_queue_size)
            .finish()
    }
}

impl Config {
    /// `[tracing]` checked and resolved (rule X2); `None` without the
    /// table or with `enabled = false`. The table is checked either way.
    pub fn trace_settings(&self) -> Result<Option<TraceSettings>, ConfigError> {
        self.trace_settings_with(|var| std::env::var(var).ok())
    }

    /// [`trace_settings`](Self::trace_settings), reading the environment
    /// through `env`.
    fn trace_settings_with(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<TraceSettings>, ConfigError> {
        let Some(section) = &self.tracing else {
            return Ok(None);
        };
        let endpoint = match &section.endpoint {
            Some(url) => endpoint("tracing.endpoint", url, true)?,
            None => match (
                env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").filter(|v| !v.is_empty()),
                env("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|v| !v.is_empty()),
            ) {
                (Some(url), _) => endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &url, false)?,
                (None, Some(url)) => endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", &url, true)?,
                (None, None) => {
                    return Err(ConfigError::Required {
                        key: "tracing.endpoint".into(),
                        reason: "the collector's OTLP/HTTP URL (or set \
                                 OTEL_EXPORTER_OTLP_ENDPOINT)",
                    });
                }
            },
        };
        let service_name = section
            .service_name
            .clone()
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.into());
        if service_name.trim().is_empty() || service_name.len() > 256 {
            return Err(ConfigError::OutOfRange {
                key: "tracing.service_name".into(),
                reason: "must be 1 to 256 characters, not all spaces".into(),
            });
        }
        let sampling_ratio = section.sampling_ratio.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&sampling_ratio) {
            return Err(ConfigError::OutOfRange {
                key: "tracing.sampling_ratio".into(),
                reason: format!("{sampling_ratio} is not between 0 and 1"),
            });
        }
        let timeout_ms = section
            .export_timeout_ms
            .unwrap_or(DEFAULT_EXPORT_TIMEOUT_MS);
        if !(1..=600_000).contains(&timeout_ms) {
            return Err(ConfigError::OutOfRange {
                key: "tracing.export_timeout_ms".into(),
                reason: "must be 1 to 600000".into(),
            });
        }
        let max_queue_size = section.max_queue_size.unwrap_or(DEFAULT_MAX_QUEUE_SIZE);
        if !(1..=1_000_000).contains(&max_queue_size) {
            return Err(ConfigError::OutOfRange {
                key: "tracing.max_queue_size".into(),
                reason: "must be 1 to 1000000".into(),
            });
        }
        let mut headers = Vec::new();
        for (name, value) in &section.headers {
            headers.push(header(&format!("tracing.headers.{name}"), name, value)?);
        }
        for (name, secret) in &section.secret_headers {
            let key = format!("tracing.secret_headers.{name}");
            if section.headers.contains_key(name) {
                return Err(ConfigError::Conflict {
                    key,
                    reason: "also in tracing.headers: give each header once",
                });
            }
            if !self.secrets.contains_key(secret) {
                return Err(ConfigError::BadSecret {
                    key,
                    reason: format!("there is no [secrets.{secret}]"),
                });
            }
            let value = self
                .granted_secrets(&key, std::slice::from_ref(secret))?
                .pop()
                .map(|s| s.expose().to_owned())
                .unwrap_or_default();
            let (name, mut value) = header(&key, name, &value)?;
            value.set_sensitive(true);
            headers.push((name, value));
        }
        if !section.enabled {
            return Ok(None);
        }
        Ok(Some(TraceSettings {
            endpoint,
            service_name,
            sampling_ratio,
            headers,
            export_timeout: Duration::from_millis(timeout_ms),
            max_queue_size,
        }))
    }
}

/// The traces URL `url` names: http or https, with a host and no user
/// name or password; with `append`, an empty or `/` path becomes
/// `/v1/traces`.
fn endpoint(key: &str, url: &str, append: bool) -> Result<String, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        key: key.into(),
        reason,
        source: None,
    };
    let mut parsed =
        reqwest::Url::parse(url).map_err(|e| invalid(format!("`{url}` is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "`{url}`: OTLP/HTTP needs an http or https URL"
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid(format!("`{url}` names no host")));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(invalid(
            "a user name or password in the URL would be logged; send it in \
             tracing.secret_headers instead"
                .into(),
        ));
    }
    if append && matches!(parsed.path(), "" | "/") {
        parsed.set_path("/v1/traces");
    }
    Ok(parsed.into())
}

/// A header to send to the collector, checked.
fn header(
    key: &str,
    name: &str,
    value: &str,
) -> Result<(http::HeaderName, http::HeaderValue), ConfigError> {
    let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| ConfigError::Invalid {
        key: key.into(),
        reason: "not a valid HTTP header name".into(),
        source: None,
    })?;
    let value = http::HeaderValue::from_str(value).map_err(|_| ConfigError::Invalid {
        key: key.into(),
        reason: "its value is not a valid HTTP header value (no line breaks or control \
                 characters)"
            .into(),
        source: None,
    })?;
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn settings(text: &str) -> Result<Option<TraceSettings>, ConfigError> {
        Config::parse(text, Path::new("/base"))?.trace_settings_with(|_| None)
    }

    fn key_of(text: &str) -> String {
        let err = settings(text).unwrap_err();
        err.to_string().split(':').next().unwrap().to_owned()
    }

    #[test]
    fn x2_tracing_is_off_without_the_table() {
        assert!(settings("").unwrap().is_none());
        assert!(
            settings("[tracing]\nenabled = false\nendpoint = \"http://127.0.0.1:4318\"\n")
                .unwrap()
                .is_none()
        );
        let on = settings("[tracing]\nendpoint = \"http://127.0.0.1:4318\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(on.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(on.service_name, "toolhost");
        assert_eq!(on.sampling_ratio, 1.0);
        let kept = settings("[tracing]\nendpoint = \"https://c.example/otlp/traces\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(kept.endpoint, "https://c.example/otlp/traces");
    }

    #[test]
    fn x2_every_bad_tracing_value_names_its_key() {
        let ep = "endpoint = \"http://127.0.0.1:4318\"\n";
        for (text, key) in [
            ("[tracing]\n".to_owned(), "tracing.endpoint"),
            (
                "[tracing]\nendpoint = \"ftp://x\"\n".into(),
                "tracing.endpoint",
            ),
            (
                "[tracing]\nendpoint = \"not a url\"\n".into(),
                "tracing.endpoint",
            ),
            (
                "[tracing]\nendpoint = \"http://u:p@c.example\"\n".into(),
                "tracing.endpoint",
            ),
            (
                format!("[tracing]\n{ep}sampling_ratio = 1.5\n"),
                "tracing.sampling_ratio",
            ),
            (
                format!("[tracing]\n{ep}sampling_ratio = -0.1\n"),
                "tracing.sampling_ratio",
            ),
            (
                format!("[tracing]\n{ep}sampling_ratio = nan\n"),
                "tracing.sampling_ratio",
            ),
            (
                format!("[tracing]\n{ep}service_name = \" \"\n"),
                "tracing.service_name",
            ),
            (
                format!("[tracing]\n{ep}export_timeout_ms = 0\n"),
                "tracing.export_timeout_ms",
            ),
            (
                format!("[tracing]\n{ep}max_queue_size = 0\n"),
                "tracing.max_queue_size",
            ),
            (
                format!("[tracing]\n{ep}headers = {{ \"bad name\" = \"v\" }}\n"),
                "tracing.headers.bad name",
            ),
            (
                format!("[tracing]\n{ep}headers = {{ x = \"a\\nb\" }}\n"),
                "tracing.headers.x",
            ),
            (
                format!("[tracing]\n{ep}secret_headers = {{ authorization = \"nope\" }}\n"),
                "tracing.secret_headers.authorization",
            ),
        ] {
            assert_eq!(key_of(&text), key, "{text}");
        }
        // An unknown key is named by toml.
        let err = settings(&format!("[tracing]\n{ep}endpont = \"x\"\n")).unwrap_err();
        assert!(err.to_string().contains("endpont"), "{err}");
    }

    #[test]
    fn x2_a_secret_header_is_sent_and_never_shown() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("otlp");
        std::fs::write(&file, "Bearer s3cr3t-t0ken").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let text = "[secrets.otlp]\nfile = \"otlp\"\n\
                    [tracing]\nendpoint = \"http://127.0.0.1:4318\"\n\
                    headers = { x-scope = \"ops\" }\n\
                    secret_headers = { authorization = \"otlp\" }\n";
        let s = Config::parse(text, dir.path())
            .unwrap()
            .trace_settings_with(|_| None)
            .unwrap()
            .unwrap();
        let auth = s
            .headers
            .iter()
            .find(|(n, _)| n == "authorization")
            .unwrap();
        assert_eq!(auth.1, "Bearer s3cr3t-t0ken");
        assert!(auth.1.is_sensitive());
        assert!(!format!("{s:?}").contains("s3cr3t"));
    }

    #[test]
    fn x2_the_standard_environment_variables_name_the_collector() {
        let config = Config::parse("[tracing]\n", Path::new("/base")).unwrap();
        let base = config
            .trace_settings_with(|v| {
                (v == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://10.0.0.1:4318".into())
            })
            .unwrap()
            .unwrap();
        assert_eq!(base.endpoint, "http://10.0.0.1:4318/v1/traces");
        let exact = config
            .trace_settings_with(|v| {
                (v == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| "http://c/x".into())
            })
            .unwrap()
            .unwrap();
        assert_eq!(exact.endpoint, "http://c/x");
        let err = config
            .trace_settings_with(|v| (v == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "nope".into()))
            .unwrap_err();
        assert!(
            err.to_string().starts_with("OTEL_EXPORTER_OTLP_ENDPOINT: "),
            "{err}"
        );
    }
}
