//! `serve --http` as an OAuth 2.1 resource server (rule A1), as the MCP
//! authorization specification (2025-06-18 onward) describes one.
//!
//! A [`ResourceServer`] is built from [`AuthSettings`] when the server
//! starts. It publishes its protected resource metadata (RFC 9728), which
//! names the authorization server, and checks the bearer token of every
//! request to the MCP endpoint: a JWT access token against the
//! authorization server's keys (its JWKS), or an opaque one by
//! introspection (RFC 7662) when that is configured. What a token grants
//! is an [`Access`]: the scopes it carries decide, through the
//! [`ScopeMap`], which tools the caller sees in `tools/list` and may call.
//!
//! | module | its one job |
//! |---|---|
//! | `settings` | [`AuthSettings`], [`SigningAlgorithm`]: what is checked, validated whole |
//! | `fetch` | every request to the authorization server: a deadline, a size cap, no redirects |
//! | `metadata` | the metadata document and its paths, `WWW-Authenticate` challenges, discovery of the key set |
//! | `jwks` | the key set: cached, fetched again on an unknown key at most once per interval |
//! | `verify` | a JWT checked: algorithm, key, signature, then issuer, audience, times |
//! | `introspect` | an opaque token checked by introspection |
//! | `scopes` | [`ScopeMap`] and [`Access`]: which tools a caller's scopes reach |
//! | `error` | [`AuthError`], [`FetchError`], [`TokenError`] |

mod error;
mod fetch;
mod introspect;
mod jwks;
mod metadata;
mod scopes;
mod settings;
mod verify;

use std::sync::Arc;

pub use error::{AuthError, AuthField, FetchError, TokenError};
pub use metadata::METADATA_PATH;
pub use scopes::{Access, ScopeMap};
pub use settings::{
    AuthSettings, DEFAULT_FETCH_TIMEOUT, DEFAULT_JWKS_MAX_AGE, DEFAULT_JWKS_REFETCH,
    DEFAULT_LEEWAY, DEFAULT_MAX_RESPONSE_BYTES, Introspection, MAX_LEEWAY, SigningAlgorithm,
    UnknownAlgorithm,
};
pub use verify::MAX_TOKEN_BYTES;

use fetch::Fetcher;
use introspect::Introspector;
use jwks::KeyCache;
use verify::JwtCheck;

/// The resource server: its metadata, and the check of every request's
/// token.
#[derive(Debug)]
pub struct ResourceServer {
    resource: url::Url,
    metadata_url: String,
    metadata_document: String,
    jwt: JwtCheck,
    introspection: Option<Introspector>,
}

impl ResourceServer {
    /// Checks `settings` (an error names the field), reads the key set's
    /// address from the authorization server's metadata when it is not
    /// given (an error if that fails: nothing starts half-configured), and
    /// fetches the key set once (a failure is logged; the first token
    /// tries again).
    pub async fn start(settings: AuthSettings) -> Result<Self, AuthError> {
        settings.validate()?;
        let resource = url::Url::parse(&settings.resource).map_err(|e| AuthError::Setting {
            field: AuthField::Resource,
            reason: e.to_string(),
        })?;
        let fetcher = Fetcher::new(settings.fetch_timeout, settings.max_response_bytes)?;
        let jwks_uri = match &settings.jwks_uri {
            Some(uri) => uri.clone(),
            None => metadata::discover_jwks_uri(&fetcher, &settings.issuer).await?,
        };
        let keys = KeyCache::new(
            jwks_uri,
            fetcher.clone(),
            settings.fetch_timeout,
            settings.jwks_refetch,
            settings.jwks_max_age,
        );
        match keys.prefetch().await {
            Ok(n) => tracing::info!(
                target: "toolhost::auth",
                "{n} signing keys of {} fetched from {}", settings.issuer, keys.uri()
            ),
            Err(e) => tracing::warn!(
                target: "toolhost::auth",
                "cannot fetch the signing keys yet; the first token will try again: {}",
                toolhost_core::report(&e)
            ),
        }
        let scopes = Arc::new(settings.scopes.clone());
        let audiences = settings.accepted_audiences();
        let metadata_document = metadata::metadata_document(
            &settings.resource,
            &settings.issuer,
            scopes.scopes().collect(),
        );
        let introspection = settings.introspection.clone().map(|i| Introspector {
            in_flight: Arc::new(tokio::sync::Semaphore::new(introspect::MAX_IN_FLIGHT)),
            settings: i,
            fetcher: fetcher.clone(),
            issuer: settings.issuer.clone(),
            audiences: audiences.clone(),
            leeway: settings.leeway,
            scopes: scopes.clone(),
        });
        Ok(Self {
            metadata_url: metadata::metadata_url(&resource),
            resource,
            metadata_document,
            jwt: JwtCheck {
                keys,
                issuer: settings.issuer,
                audiences,
                algorithms: settings.algorithms,
                leeway: settings.leeway,
                scopes,
            },
            introspection,
        })
    }

    /// The resource identifier.
    pub fn resource(&self) -> &str {
        self.resource.as_str()
    }

    /// The key set's address (given, or discovered).
    pub fn jwks_uri(&self) -> &str {
        self.jwt.keys.uri()
    }

    /// Where clients find the metadata: the address every challenge names.
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The metadata document (JSON).
    pub fn metadata_document(&self) -> &str {
        &self.metadata_document
    }

    /// The local paths the metadata is served at, for an MCP endpoint at
    /// `endpoint`.
    pub fn metadata_paths(&self, endpoint: &str) -> Vec<String> {
        metadata::metadata_paths(&self.resource, endpoint)
    }

    /// Checks the `Authorization` header's value: a `Bearer` token, a JWT
    /// checked against the keys or, when introspection is configured, any
    /// other token introspected. What it grants, or why it is refused.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Access, TokenError> {
        let token = authorization
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim())
            .filter(|t| !t.is_empty())
            .ok_or(TokenError::Missing)?;
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Malformed { source: None });
        }
        match &self.introspection {
            Some(introspector) if !verify::looks_like_jwt(token) => introspector.check(token).await,
            _ => self.jwt.check(token).await,
        }
    }

    /// The `WWW-Authenticate` value of a refusal: `invalid_token` with its
    /// description for a bad token, no error for a missing one.
    pub fn challenge(&self, error: &TokenError) -> String {
        match error {
            TokenError::Missing => metadata::challenge(&self.metadata_url, None, None),
            e => metadata::challenge(
                &self.metadata_url,
                Some(("invalid_token", &e.description())),
                None,
            ),
        }
    }

    /// The `WWW-Authenticate` value of a 403 for `tool`, which `access`
    /// does not reach: `insufficient_scope`, with the scopes that would.
    pub fn scope_challenge(&self, access: &Access, tool: &str) -> String {
        let granting = access.scopes_granting(tool);
        let description = format!("the token's scopes do not grant tool {tool}");
        let scope = (!granting.is_empty()).then(|| granting.join(" "));
        metadata::challenge(
            &self.metadata_url,
            Some(("insufficient_scope", &description)),
            scope.as_deref(),
        )
    }
}
