//! The resource server's typed errors: a setting refused, a document that
//! could not be fetched, and a request's token refused.

use std::time::Duration;

/// Which setting of [`AuthSettings`](super::AuthSettings) an
/// [`AuthError::Setting`] is about, so that a configuration file can name
/// its own key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthField {
    /// [`AuthSettings::issuer`](super::AuthSettings::issuer).
    Issuer,
    /// [`AuthSettings::resource`](super::AuthSettings::resource).
    Resource,
    /// [`AuthSettings::audiences`](super::AuthSettings::audiences).
    Audiences,
    /// [`AuthSettings::jwks_uri`](super::AuthSettings::jwks_uri).
    JwksUri,
    /// [`AuthSettings::algorithms`](super::AuthSettings::algorithms).
    Algorithms,
    /// [`AuthSettings::leeway`](super::AuthSettings::leeway).
    Leeway,
    /// [`AuthSettings::fetch_timeout`](super::AuthSettings::fetch_timeout).
    FetchTimeout,
    /// [`AuthSettings::max_response_bytes`](super::AuthSettings::max_response_bytes).
    MaxResponseBytes,
    /// [`AuthSettings::jwks_refetch`](super::AuthSettings::jwks_refetch).
    JwksRefetch,
    /// [`AuthSettings::jwks_max_age`](super::AuthSettings::jwks_max_age).
    JwksMaxAge,
    /// [`Introspection::endpoint`](super::Introspection::endpoint).
    IntrospectionEndpoint,
    /// [`Introspection::client_id`](super::Introspection::client_id).
    IntrospectionClientId,
    /// [`AuthSettings::scopes`](super::AuthSettings::scopes).
    Scopes,
}

/// Why a resource server could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A setting is refused.
    #[error("{reason}")]
    Setting {
        /// Which setting.
        field: AuthField,
        /// What is wrong with it.
        reason: String,
    },
    /// The authorization server's metadata could not be read, so the key
    /// set's address is unknown.
    #[error("cannot discover the authorization server's metadata (tried {tried})")]
    Discovery {
        /// The addresses asked, in order.
        tried: String,
        /// The last failure.
        #[source]
        source: FetchError,
    },
    /// The authorization server's metadata names another issuer than the
    /// one configured (RFC 8414 §3.3: the metadata must be refused).
    #[error("the metadata at {url} names issuer `{found}`, not the configured `{expected}`")]
    IssuerMismatch {
        /// Where the metadata was read.
        url: String,
        /// The configured issuer.
        expected: String,
        /// The issuer the metadata names.
        found: String,
    },
    /// The authorization server's metadata names a key set's address that
    /// is refused as a configured one would be (plain http off loopback,
    /// credentials in it, not a URL).
    #[error("the metadata at {url} names a jwks_uri that cannot be used: {reason}")]
    BadJwksUri {
        /// Where the metadata was read.
        url: String,
        /// What is wrong with the address.
        reason: String,
    },
    /// The authorization server's metadata has no `jwks_uri`.
    #[error("the metadata at {url} has no jwks_uri; set it in the configuration")]
    NoJwksUri {
        /// Where the metadata was read.
        url: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot set up the HTTP client")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Why a document (a key set, metadata, an introspection answer) could not
/// be fetched. Every fetch has a total deadline and a size cap.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The request failed: no connection, a reset, a TLS failure.
    #[error("the request to {url} failed")]
    Request {
        /// The address.
        url: String,
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },
    /// The answer had a status other than 200.
    #[error("{url} answered {status}")]
    Status {
        /// The address.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The answer was larger than the cap; reading stopped there.
    #[error("the answer of {url} exceeds {limit} bytes")]
    TooLarge {
        /// The address.
        url: String,
        /// The cap.
        limit: usize,
    },
    /// No whole answer arrived before the deadline.
    #[error("{url} did not answer within {} ms", after.as_millis())]
    Deadline {
        /// The address.
        url: String,
        /// The deadline.
        after: Duration,
    },
    /// The answer is not the JSON document expected.
    #[error("the answer of {url} is not the JSON expected")]
    Json {
        /// The address.
        url: String,
        /// serde's error.
        #[source]
        source: serde_json::Error,
    },
}

/// Why a request's access token was refused. [`TokenError::status`] says
/// whether the caller is at fault (401) or the server cannot check now
/// (503).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// No `Authorization: Bearer` header.
    #[error("no bearer token")]
    Missing,
    /// Not a JWT whose parts decode, and no introspection to ask.
    #[error("the token is malformed")]
    Malformed {
        /// What did not decode, when something did not.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The token's `alg` is not in the accepted list (`none` and the HMAC
    /// algorithms never are).
    #[error("the token's algorithm `{alg}` is not accepted")]
    Algorithm {
        /// The header's `alg`, as written.
        alg: String,
    },
    /// No key of the authorization server has the token's `kid` (and
    /// algorithm), even after the key set was fetched again, or it was
    /// fetched too recently to ask again.
    #[error("no key of the authorization server matches the token (kid {kid:?})")]
    UnknownKey {
        /// The header's `kid`.
        kid: Option<String>,
    },
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    Signature,
    /// A claim the check needs is missing or has the wrong type.
    #[error("the token's `{claim}` claim is missing or malformed")]
    Claim {
        /// The claim.
        claim: &'static str,
    },
    /// `exp` is past, beyond the leeway.
    #[error("the token has expired")]
    Expired,
    /// `nbf` is ahead, beyond the leeway.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("the token was issued by another authorization server")]
    Issuer,
    /// No `aud` is this server's resource (RFC 8707).
    #[error("the token is not meant for this server (audience)")]
    Audience,
    /// Introspection says the token is not active.
    #[error("the token is not active")]
    Inactive,
    /// The key set could not be fetched and no key is at hand: the token
    /// may be good, but cannot be checked now (503).
    #[error("the authorization server's keys cannot be fetched")]
    KeysUnavailable {
        /// Why, when a fetch failed (none when another request's fetch
        /// was still under way at the deadline).
        #[source]
        source: Option<std::sync::Arc<FetchError>>,
    },
    /// As many tokens as may be are being introspected already (503): a
    /// flood of made-up tokens is refused here rather than passed on.
    #[error("the token cannot be checked now: {limit} others are being introspected")]
    IntrospectionBusy {
        /// How many are asked at once at most.
        limit: usize,
    },
    /// The introspection endpoint could not be asked (503).
    #[error("the token introspection endpoint cannot be reached")]
    IntrospectionUnavailable {
        /// Why.
        #[source]
        source: FetchError,
    },
}

impl TokenError {
    /// 401 when the token is at fault, 503 when the server cannot check
    /// it now.
    pub fn status(&self) -> http::StatusCode {
        match self {
            Self::KeysUnavailable { .. }
            | Self::IntrospectionUnavailable { .. }
            | Self::IntrospectionBusy { .. } => http::StatusCode::SERVICE_UNAVAILABLE,
            _ => http::StatusCode::UNAUTHORIZED,
        }
    }

    /// The `error_description` of the challenge: the error's own text,
    /// which never holds a quote or a backslash.
    pub fn description(&self) -> String {
        self.to_string().replace(['"', '\\'], "'")
    }
}
