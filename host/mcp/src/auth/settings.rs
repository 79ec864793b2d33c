//! [`AuthSettings`]: what the resource server checks tokens against, and
//! [`SigningAlgorithm`], the signature algorithms it may accept.
//!
//! Contract: [`AuthSettings::validate`] refuses every value the checks
//! could not honour — an address that is not https (plain http only on
//! loopback), an algorithm that is not an asymmetric signature, a leeway
//! above five minutes, a zero deadline or cap — naming the field, so that
//! nothing starts half-configured.

use std::str::FromStr;
use std::time::Duration;

use toolhost_core::Secret;

use super::error::{AuthError, AuthField};
use super::scopes::ScopeMap;

/// The default leeway on `exp` and `nbf`: 30 seconds of clock skew.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// The most leeway allowed: five minutes.
pub const MAX_LEEWAY: Duration = Duration::from_secs(300);
/// The default total deadline of one fetch (key set, metadata,
/// introspection), connection to last byte.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The default cap on a fetched document: 256 KiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 256 << 10;
/// The default shortest time between two fetches of the key set caused by
/// tokens naming a key it does not have.
pub const DEFAULT_JWKS_REFETCH: Duration = Duration::from_secs(30);
/// The default age after which the key set is fetched again on the next
/// request (a failure then keeps the keys at hand).
pub const DEFAULT_JWKS_MAX_AGE: Duration = Duration::from_secs(3600);

/// A signature algorithm of JWS (RFC 7518) that the resource server can
/// verify. Only asymmetric ones exist here: `none` and the HMAC algorithms
/// (`HS256`…) are refused by [`FromStr`], so no configuration can accept
/// them, and a token's header never chooses what is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// Ed25519.
    EdDSA,
}

impl SigningAlgorithm {
    /// Every algorithm, in the order above.
    pub const ALL: [Self; 9] = [
        Self::RS256,
        Self::RS384,
        Self::RS512,
        Self::PS256,
        Self::PS384,
        Self::PS512,
        Self::ES256,
        Self::ES384,
        Self::EdDSA,
    ];

    /// The name JWS gives it (`RS256`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RS256 => "RS256",
            Self::RS384 => "RS384",
            Self::RS512 => "RS512",
            Self::PS256 => "PS256",
            Self::PS384 => "PS384",
            Self::PS512 => "PS512",
            Self::ES256 => "ES256",
            Self::ES384 => "ES384",
            Self::EdDSA => "EdDSA",
        }
    }
}

impl std::fmt::Display for SigningAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An algorithm name that is not an accepted signature algorithm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` {why}")]
pub struct UnknownAlgorithm {
    /// The name as given.
    pub name: String,
    /// Why it is refused.
    pub why: &'static str,
}

impl FromStr for SigningAlgorithm {
    type Err = UnknownAlgorithm;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if let Some(alg) = Self::ALL.into_iter().find(|a| a.as_str() == name) {
            return Ok(alg);
        }
        let why = if name.eq_ignore_ascii_case("none") {
            "is an unsigned token: never accepted"
        } else if name.starts_with("HS") {
            "is a shared-secret (HMAC) algorithm: only asymmetric signatures are accepted, \
             since a resource server holding the secret could forge tokens"
        } else {
            "is not a signature algorithm toolhost verifies \
             (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA)"
        };
        Err(UnknownAlgorithm {
            name: name.to_owned(),
            why,
        })
    }
}

/// Introspection of opaque tokens (RFC 7662): a token that is not a JWT is
/// sent to the endpoint, which says whether it is active and what it holds.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Introspection {
    /// The introspection endpoint.
    pub endpoint: String,
    /// The resource server's client id at the authorization server.
    pub client_id: String,
    /// Its client secret (HTTP Basic authentication, RFC 6749 §2.3.1).
    pub client_secret: Secret,
}

impl Introspection {
    /// Introspection at `endpoint`, authenticated as `client_id` with
    /// `client_secret`.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Secret,
    ) -> Self {
        Self {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret,
        }
    }
}

/// What the resource server checks access tokens against (rule A1).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthSettings {
    /// The authorization server's issuer identifier: tokens' `iss` must be
    /// exactly this, and its metadata is read from it when
    /// [`jwks_uri`](Self::jwks_uri) is not given.
    pub issuer: String,
    /// This server's resource identifier (RFC 8707, RFC 9728): the URL
    /// clients reach the MCP endpoint at. The protected resource metadata
    /// names it, and tokens must be issued for it.
    pub resource: String,
    /// The `aud` values accepted; a token must carry one of them. Empty
    /// means the resource identifier alone.
    pub audiences: Vec<String>,
    /// The key set's address; `None` reads it from the issuer's metadata
    /// (`/.well-known/oauth-authorization-server`, then
    /// `/.well-known/openid-configuration`) when the server starts.
    pub jwks_uri: Option<String>,
    /// The signature algorithms accepted, whatever a token's header says.
    pub algorithms: Vec<SigningAlgorithm>,
    /// How far past `exp` and ahead of `nbf` a token is still taken, for
    /// clock skew.
    pub leeway: Duration,
    /// The total deadline of each fetch, connection to last byte.
    pub fetch_timeout: Duration,
    /// The largest document a fetch reads; reading stops beyond it.
    pub max_response_bytes: usize,
    /// The shortest time between two fetches of the key set caused by a
    /// token naming a key the set lacks (so a flood of made-up key ids
    /// cannot make the server hammer the authorization server).
    pub jwks_refetch: Duration,
    /// The age after which the key set is fetched again on the next
    /// request.
    pub jwks_max_age: Duration,
    /// Introspection of opaque tokens, if wanted.
    pub introspection: Option<Introspection>,
    /// What each scope lets a caller see and call.
    pub scopes: ScopeMap,
}

impl AuthSettings {
    /// Settings for tokens of `issuer` meant for `resource`, with the
    /// defaults: RS256 and ES256, 30 s of leeway, 5 s fetches of at most
    /// 256 KiB, the key set fetched again for an unknown key at most every
    /// 30 s and at least hourly, no introspection, every tool visible.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            resource: resource.into(),
            audiences: Vec::new(),
            jwks_uri: None,
            algorithms: vec![SigningAlgorithm::RS256, SigningAlgorithm::ES256],
            leeway: DEFAULT_LEEWAY,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            jwks_refetch: DEFAULT_JWKS_REFETCH,
            jwks_max_age: DEFAULT_JWKS_MAX_AGE,
            introspection: None,
            scopes: ScopeMap::default(),
        }
    }

    /// The `aud` values accepted: [`audiences`](Self::audiences), or the
    /// resource identifier when none are given.
    pub fn accepted_audiences(&self) -> Vec<String> {
        if self.audiences.is_empty() {
            vec![self.resource.clone()]
        } else {
            self.audiences.clone()
        }
    }

    /// Checks every setting; the error names the field.
    pub fn validate(&self) -> Result<(), AuthError> {
        let bad = |field, reason: String| AuthError::Setting { field, reason };
        check_url(&self.issuer, false).map_err(|r| bad(AuthField::Issuer, r))?;
        let resource = check_url(&self.resource, false).map_err(|r| bad(AuthField::Resource, r))?;
        if resource.fragment().is_some() {
            return Err(bad(
                AuthField::Resource,
                "a resource identifier has no fragment (RFC 8707)".into(),
            ));
        }
        if let Some(jwks) = &self.jwks_uri {
            check_url(jwks, true).map_err(|r| bad(AuthField::JwksUri, r))?;
        }
        if let Some(i) = &self.introspection {
            check_url(&i.endpoint, true).map_err(|r| bad(AuthField::IntrospectionEndpoint, r))?;
            if i.client_id.trim().is_empty() {
                return Err(bad(
                    AuthField::IntrospectionClientId,
                    "introspection needs the client id the authorization server knows this \
                     server by"
                        .into(),
                ));
            }
        }
        if self.audiences.iter().any(|a| a.trim().is_empty()) {
            return Err(bad(AuthField::Audiences, "an audience is empty".into()));
        }
        if self.algorithms.is_empty() {
            return Err(bad(
                AuthField::Algorithms,
                "no algorithm is accepted: no token could verify".into(),
            ));
        }
        if self.leeway > MAX_LEEWAY {
            return Err(bad(
                AuthField::Leeway,
                format!(
                    "{} s is more leeway than the {} s allowed",
                    self.leeway.as_secs(),
                    MAX_LEEWAY.as_secs()
                ),
            ));
        }
        if self.fetch_timeout.is_zero() || self.fetch_timeout > Duration::from_secs(60) {
            return Err(bad(
                AuthField::FetchTimeout,
                "must be above zero and at most 60 s (a request waits for it)".into(),
            ));
        }
        if self.max_response_bytes < 1024 || self.max_response_bytes > 16 << 20 {
            return Err(bad(
                AuthField::MaxResponseBytes,
                "must be between 1 KiB and 16 MiB".into(),
            ));
        }
        if self.jwks_refetch.is_zero() {
            return Err(bad(
                AuthField::JwksRefetch,
                "must be above zero: each made-up key id would fetch the key set again".into(),
            ));
        }
        if self.jwks_max_age < self.jwks_refetch {
            return Err(bad(
                AuthField::JwksMaxAge,
                "must be at least the refetch interval".into(),
            ));
        }
        Ok(())
    }
}

/// `text` as an absolute https URL (http only to a loopback host, for
/// tests and a local authorization server), without credentials, and
/// without a query unless `allow_query`.
pub(crate) fn check_url(text: &str, allow_query: bool) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(format!("`{text}` has no host")),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(format!(
                "`{text}` is plain http: OAuth needs https (http only on loopback)"
            ));
        }
        other => return Err(format!("`{text}` has scheme `{other}`; expected https")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("`{text}` carries credentials; give them elsewhere"));
    }
    if !allow_query && url.query().is_some() {
        return Err(format!("`{text}` has a query; an identifier has none"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a1_only_asymmetric_algorithms_parse() {
        assert_eq!("RS256".parse(), Ok(SigningAlgorithm::RS256));
        assert_eq!("EdDSA".parse(), Ok(SigningAlgorithm::EdDSA));
        for (name, why) in [
            ("none", "unsigned"),
            ("None", "unsigned"),
            ("HS256", "HMAC"),
            ("HS512", "HMAC"),
            ("rs256", "not a signature algorithm"),
        ] {
            let err = name.parse::<SigningAlgorithm>().unwrap_err();
            assert!(err.to_string().contains(why), "{name}: {err}");
        }
    }

    #[test]
    fn a1_settings_are_checked_naming_the_field() {
        let good = AuthSettings::new("https://as.example.com", "https://tools.example.com/mcp");
        good.validate().unwrap();
        let local = AuthSettings::new("http://127.0.0.1:9000", "http://localhost:8000/mcp");
        local.validate().unwrap();
        let cases: Vec<(AuthSettings, AuthField, &str)> = vec![
            (
                AuthSettings::new("http://as.example.com", "https://t/mcp"),
                AuthField::Issuer,
                "plain http",
            ),
            (
                AuthSettings::new("https://as", "https://t/mcp#x"),
                AuthField::Resource,
                "fragment",
            ),
            (
                AuthSettings::new("https://as", "https://t/mcp?x=1"),
                AuthField::Resource,
                "query",
            ),
            (
                AuthSettings {
                    algorithms: vec![],
                    ..good.clone()
                },
                AuthField::Algorithms,
                "no algorithm",
            ),
            (
                AuthSettings {
                    leeway: Duration::from_secs(301),
                    ..good.clone()
                },
                AuthField::Leeway,
                "more leeway",
            ),
            (
                AuthSettings {
                    jwks_uri: Some("ftp://as/keys".into()),
                    ..good.clone()
                },
                AuthField::JwksUri,
                "scheme",
            ),
            (
                AuthSettings {
                    fetch_timeout: Duration::ZERO,
                    ..good.clone()
                },
                AuthField::FetchTimeout,
                "above zero",
            ),
            (
                AuthSettings {
                    jwks_refetch: Duration::ZERO,
                    ..good.clone()
                },
                AuthField::JwksRefetch,
                "above zero",
            ),
        ];
        for (settings, field, words) in cases {
            match settings.validate() {
                Err(AuthError::Setting { field: f, reason }) => {
                    assert_eq!(f, field, "{reason}");
                    assert!(reason.contains(words), "{reason}");
                }
                other => panic!("{field:?}: {other:?}"),
            }
        }
    }
}
