//! `[auth]`: `serve --http` as an OAuth 2.1 resource server (rule A1).
//!
//! ```toml
//! [auth]
//! issuer = "https://auth.example.com"           # tokens' `iss`, and where its metadata is read
//! resource = "https://tools.example.com/mcp"    # this server's URL: tokens' `aud` must name it
//! # audience = ["https://tools.example.com/mcp"]  # other `aud` values to accept instead
//! # jwks_uri = "https://auth.example.com/jwks"  # default: from the issuer's metadata
//! # algorithms = ["RS256", "ES256"]             # asymmetric only; never `none` or HS256
//! # leeway_s = 30                               # clock skew allowed on exp and nbf (at most 300)
//! # fetch_timeout_ms = 5000                     # each request to the authorization server
//! # max_response_kb = 256                       # the largest answer read from it
//! # jwks_refetch_s = 30                         # unknown key ids fetch the keys at most this often
//! # jwks_max_age_s = 3600                       # keys are fetched again once this old
//! # introspection_endpoint = "https://auth.example.com/token/introspection"
//! # introspection_client_id = "toolhost"        # opaque tokens are introspected (RFC 7662)
//! # introspection_secret = "as_client"          # the [secrets.NAME] holding the client secret
//!
//! [auth.scopes]                                 # scope = the tools it shows and lets call (globs)
//! "tools:read" = ["read_*", "docs.*"]
//! "tools:admin" = ["*"]
//! ```
//!
//! Contract: [`Config::auth_settings`] turns the table into
//! [`AuthSettings`] or fails with a [`ConfigError`] naming the key, for
//! every value the resource server would refuse as well as those only the
//! file can get wrong (a secret that does not exist, a glob that does not
//! compile, half of the introspection keys). Without `[auth.scopes]`,
//! every token that verifies sees every tool.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toolhost_core::rules::ToolPattern;
use toolhost_mcp::auth::{AuthError, AuthField, AuthSettings, Introspection, ScopeMap};

use super::{Config, ConfigError};

/// The `[auth]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// This server's resource identifier: the URL clients reach it at.
    pub resource: String,
    /// The `aud` values accepted (default: the resource alone).
    #[serde(default)]
    pub audience: Vec<String>,
    /// The key set's address (default: from the issuer's metadata).
    pub jwks_uri: Option<String>,
    /// The signature algorithms accepted (default RS256 and ES256).
    pub algorithms: Option<Vec<String>>,
    /// Seconds of clock skew allowed on `exp` and `nbf` (default 30).
    pub leeway_s: Option<u64>,
    /// Deadline of each request to the authorization server, in
    /// milliseconds (default 5000).
    pub fetch_timeout_ms: Option<u64>,
    /// The largest answer read from it, in KiB (default 256).
    pub max_response_kb: Option<usize>,
    /// Shortest time between fetches of the key set caused by unknown key
    /// ids, in seconds (default 30).
    pub jwks_refetch_s: Option<u64>,
    /// Age after which the key set is fetched again, in seconds (default
    /// 3600).
    pub jwks_max_age_s: Option<u64>,
    /// The introspection endpoint, for opaque tokens.
    pub introspection_endpoint: Option<String>,
    /// The client id introspection authenticates with.
    pub introspection_client_id: Option<String>,
    /// The `[secrets.NAME]` holding the client secret.
    pub introspection_secret: Option<String>,
    /// Scope name → globs of the tools it shows and lets call.
    #[serde(default)]
    pub scopes: BTreeMap<String, Vec<String>>,
}

impl Config {
    /// The resource server's settings from `[auth]`, if the table is
    /// there; every value checked, an error naming its key.
    pub fn auth_settings(&self) -> Result<Option<AuthSettings>, ConfigError> {
        let Some(section) = &self.auth else {
            return Ok(None);
        };
        let invalid = |key: &str, reason: String| ConfigError::Invalid {
            key: format!("auth.{key}"),
            reason,
            source: None,
        };
        let mut settings = AuthSettings::new(&section.issuer, &section.resource);
        settings.audiences = section.audience.clone();
        settings.jwks_uri = section.jwks_uri.clone();
        if let Some(names) = &section.algorithms {
            settings.algorithms = names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    name.parse()
                        .map_err(|e: toolhost_mcp::auth::UnknownAlgorithm| {
                            invalid(&format!("algorithms[{i}]"), e.to_string())
                        })
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(s) = section.leeway_s {
            settings.leeway = Duration::from_secs(s);
        }
        if let Some(ms) = section.fetch_timeout_ms {
            settings.fetch_timeout = Duration::from_millis(ms);
        }
        if let Some(kb) = section.max_response_kb {
            settings.max_response_bytes = kb.saturating_mul(1024);
        }
        if let Some(s) = section.jwks_refetch_s {
            settings.jwks_refetch = Duration::from_secs(s);
        }
        if let Some(s) = section.jwks_max_age_s {
            settings.jwks_max_age = Duration::from_secs(s);
        }
        settings.introspection = self.introspection(section)?;
        let mut scopes = ScopeMap::new();
        for (scope, globs) in &section.scopes {
            if scope.is_empty() || scope.contains(|c: char| c.is_whitespace() || c == '"') {
                return Err(invalid(
                    &format!("scopes.{scope}"),
                    "a scope name has no spaces or quotes (RFC 6749 §3.3)".into(),
                ));
            }
            let patterns = globs
                .iter()
                .enumerate()
                .map(|(i, glob)| {
                    ToolPattern::new(glob).map_err(|source| ConfigError::BadRule {
                        key: format!("auth.scopes.{scope}[{i}]"),
                        source,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            scopes = scopes.grant(scope.clone(), patterns);
        }
        settings.scopes = scopes;
        settings.validate().map_err(|e| match e {
            AuthError::Setting { field, reason } => invalid(auth_key(field), reason),
            other => ConfigError::Invalid {
                key: "auth".into(),
                reason: other.to_string(),
                source: None,
            },
        })?;
        Ok(Some(settings))
    }

    /// The introspection keys: all three or none.
    fn introspection(&self, section: &AuthSection) -> Result<Option<Introspection>, ConfigError> {
        match (
            &section.introspection_endpoint,
            &section.introspection_client_id,
            &section.introspection_secret,
        ) {
            (None, None, None) => Ok(None),
            (Some(endpoint), Some(client_id), Some(secret)) => {
                let secret = match self.secrets.get(secret) {
                    Some(_) => self
                        .granted_secrets("auth.introspection_secret", std::slice::from_ref(secret))?
                        .remove(0),
                    // The value is not echoed: it may be the secret itself,
                    // written where its name belongs.
                    None => {
                        return Err(ConfigError::BadSecret {
                            key: "auth.introspection_secret".into(),
                            reason: "names no [secrets.NAME] table; give the name of the one \
                                     holding the client secret, never the secret itself"
                                .into(),
                        });
                    }
                };
                Ok(Some(Introspection::new(endpoint, client_id, secret)))
            }
            _ => Err(ConfigError::Required {
                key: "auth".into(),
                reason: "introspection needs all of introspection_endpoint, \
                         introspection_client_id and introspection_secret",
            }),
        }
    }
}

/// The key of `field` in `[auth]`.
fn auth_key(field: AuthField) -> &'static str {
    match field {
        AuthField::Issuer => "issuer",
        AuthField::Resource => "resource",
        AuthField::Audiences => "audience",
        AuthField::JwksUri => "jwks_uri",
        AuthField::Algorithms => "algorithms",
        AuthField::Leeway => "leeway_s",
        AuthField::FetchTimeout => "fetch_timeout_ms",
        AuthField::MaxResponseBytes => "max_response_kb",
        AuthField::JwksRefetch => "jwks_refetch_s",
        AuthField::JwksMaxAge => "jwks_max_age_s",
        AuthField::IntrospectionEndpoint => "introspection_endpoint",
        AuthField::IntrospectionClientId => "introspection_client_id",
        AuthField::Scopes => "scopes",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn settings(extra: &str) -> Result<Option<AuthSettings>, ConfigError> {
        let text = format!(
            "[auth]\nissuer = \"https://as.example.com\"\n\
             resource = \"https://tools.example.com/mcp\"\n{extra}"
        );
        Config::parse(&text, Path::new("/base"))?.auth_settings()
    }

    #[test]
    fn a1_auth_is_read_with_its_defaults() {
        assert_eq!(
            Config::parse("", Path::new("/"))
                .unwrap()
                .auth_settings()
                .unwrap()
                .map(|_| ()),
            None
        );
        let s = settings("leeway_s = 10\n[auth.scopes]\n\"tools:read\" = [\"read_*\"]\n")
            .unwrap()
            .unwrap();
        assert_eq!(s.leeway, Duration::from_secs(10));
        assert_eq!(s.accepted_audiences(), ["https://tools.example.com/mcp"]);
        assert_eq!(s.scopes.granting("read_file"), ["tools:read"]);
        assert!(s.introspection.is_none());
    }

    #[test]
    fn a1_bad_auth_values_are_refused_naming_the_key() {
        for (extra, key, words) in [
            (
                "algorithms = [\"RS256\", \"HS256\"]",
                "auth.algorithms[1]",
                "HMAC",
            ),
            ("algorithms = [\"none\"]", "auth.algorithms[0]", "unsigned"),
            ("algorithms = []", "auth.algorithms", "no algorithm"),
            ("leeway_s = 3600", "auth.leeway_s", "more leeway"),
            (
                "jwks_uri = \"http://as.example.com/jwks\"",
                "auth.jwks_uri",
                "plain http",
            ),
            (
                "fetch_timeout_ms = 0",
                "auth.fetch_timeout_ms",
                "above zero",
            ),
            ("max_response_kb = 0", "auth.max_response_kb", "between"),
            ("jwks_refetch_s = 0", "auth.jwks_refetch_s", "above zero"),
            ("audience = [\"\"]", "auth.audience", "empty"),
            ("introspection_client_id = \"x\"", "auth", "all of"),
            (
                "introspection_endpoint = \"https://as.example.com/i\"\n\
                 introspection_client_id = \"x\"\nintrospection_secret = \"s3cr3t-value\"",
                "auth.introspection_secret",
                "names no [secrets.NAME]",
            ),
            (
                "[auth.scopes]\n\"a b\" = [\"*\"]",
                "auth.scopes.a b",
                "no spaces",
            ),
            (
                "[auth.scopes]\nx = [\"[\"]",
                "auth.scopes.x[0]",
                "invalid rule",
            ),
        ] {
            let err = settings(extra).unwrap_err();
            assert_eq!(err.key(), key, "{extra}: {err}");
            assert!(err.to_string().contains(words), "{extra}: {err}");
            assert!(!err.to_string().contains("s3cr3t"), "{err}");
        }
        let err = Config::parse(
            "[auth]\nissuer = \"http://as.example.com\"\nresource = \"https://t/mcp\"\n",
            Path::new("/"),
        )
        .unwrap()
        .auth_settings()
        .unwrap_err();
        assert_eq!(err.key(), "auth.issuer");
        let err = Config::parse("[auth]\nissuer = \"https://a\"\n", Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("resource"), "{err}");
    }
}
