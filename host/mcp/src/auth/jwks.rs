//! [`KeyCache`]: the authorization server's signing keys (its JWKS),
//! fetched, cached and fetched again when they rotate.
//!
//! Contract: a token is checked against the keys at hand. The set is
//! fetched again when a token names a key it lacks, but at most once per
//! refetch interval however many such tokens arrive (a flood of made-up
//! key ids costs the authorization server one request per interval), and
//! on the first request after the set is older than its maximum age. One
//! fetch runs at a time; a request waits for it at most the fetch
//! deadline. A failed fetch keeps the keys at hand. Keys of a type the
//! server cannot use (encryption keys, HMAC secrets, unknown types) are
//! skipped, never an error for the whole set.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};

use super::error::{FetchError, TokenError};
use super::fetch::Fetcher;
use super::settings::SigningAlgorithm;

/// One public key of the set.
#[derive(Debug)]
pub(crate) struct PublicKey {
    /// Its `kid`.
    pub(crate) kid: Option<String>,
    /// Its `alg`, if the set pins one.
    alg: Option<KeyAlgorithm>,
    /// The key itself.
    pub(crate) material: Material,
}

/// A key's public material, decoded.
#[derive(Debug)]
pub(crate) enum Material {
    /// An RSA key: modulus and exponent, big-endian without leading zeros.
    Rsa {
        /// The modulus.
        n: Vec<u8>,
        /// The exponent.
        e: Vec<u8>,
    },
    /// A P-256 point, uncompressed (`04 || x || y`).
    P256(Vec<u8>),
    /// A P-384 point, uncompressed.
    P384(Vec<u8>),
    /// An Ed25519 public key.
    Ed25519(Vec<u8>),
}

impl PublicKey {
    /// The key `jwk` describes, if it is a signature key of a type the
    /// server verifies.
    fn from_jwk(jwk: &Jwk) -> Option<Self> {
        if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
            return None;
        }
        let b64 = |text: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(text)
                .ok()
        };
        let material = match &jwk.algorithm {
            AlgorithmParameters::RSA(p) => {
                let strip = |v: Vec<u8>| {
                    let zeros = v.iter().take_while(|b| **b == 0).count();
                    v[zeros..].to_vec()
                };
                Material::Rsa {
                    n: strip(b64(&p.n)?),
                    e: strip(b64(&p.e)?),
                }
            }
            AlgorithmParameters::EllipticCurve(p) => {
                let point = |len: usize| -> Option<Vec<u8>> {
                    let (x, y) = (b64(&p.x)?, b64(&p.y)?);
                    (x.len() == len && y.len() == len).then(|| [&[4u8][..], &x, &y].concat())
                };
                match p.curve {
                    EllipticCurve::P256 => Material::P256(point(32)?),
                    EllipticCurve::P384 => Material::P384(point(48)?),
                    _ => return None,
                }
            }
            AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
                Material::Ed25519(b64(&p.x)?)
            }
            // HMAC secrets (`oct`) are never verification keys here.
            _ => return None,
        };
        Some(Self {
            kid: jwk.common.key_id.clone(),
            alg: jwk.common.key_algorithm,
            material,
        })
    }

    /// Whether the key can verify a signature of `alg`: its type fits, and
    /// the `alg` the set pins, if any, is that one.
    pub(crate) fn fits(&self, alg: SigningAlgorithm) -> bool {
        use SigningAlgorithm as A;
        let kind = matches!(
            (&self.material, alg),
            (
                Material::Rsa { .. },
                A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512,
            ) | (Material::P256(_), A::ES256)
                | (Material::P384(_), A::ES384)
                | (Material::Ed25519(_), A::EdDSA)
        );
        kind && self
            .alg
            .is_none_or(|pinned| format!("{pinned:?}") == alg.as_str())
    }
}

/// The keys at hand and when they were fetched.
#[derive(Debug, Default)]
struct KeySet {
    keys: Vec<Arc<PublicKey>>,
    fetched_at: Option<Instant>,
}

impl KeySet {
    /// The key for a token naming `kid` signed with `alg`. A token without
    /// a `kid` may use the one key that fits, when only one does.
    fn find(&self, kid: Option<&str>, alg: SigningAlgorithm) -> Option<Arc<PublicKey>> {
        let mut fitting = self.keys.iter().filter(|k| k.fits(alg));
        match kid {
            Some(kid) => fitting.find(|k| k.kid.as_deref() == Some(kid)).cloned(),
            None => {
                let first = fitting.next()?;
                fitting.next().is_none().then(|| first.clone())
            }
        }
    }
}

/// When the set was last asked for, and how that ended.
#[derive(Debug, Default)]
struct Attempt {
    at: Option<Instant>,
    failure: Option<Arc<FetchError>>,
}

/// The authorization server's keys, fetched from `uri` and cached.
#[derive(Debug)]
pub(crate) struct KeyCache {
    uri: String,
    fetcher: Fetcher,
    deadline: Duration,
    refetch: Duration,
    max_age: Duration,
    set: RwLock<Arc<KeySet>>,
    attempt: tokio::sync::Mutex<Attempt>,
}

/// The JWKS document: the keys are read one by one, so that one key the
/// server cannot read does not spoil the others.
#[derive(serde::Deserialize)]
struct Document {
    keys: Vec<serde_json::Value>,
}

impl KeyCache {
    /// A cache of the set at `uri`, empty until [`prefetch`](Self::prefetch)
    /// or the first token.
    pub(crate) fn new(
        uri: String,
        fetcher: Fetcher,
        deadline: Duration,
        refetch: Duration,
        max_age: Duration,
    ) -> Self {
        Self {
            uri,
            fetcher,
            deadline,
            refetch,
            max_age,
            set: RwLock::default(),
            attempt: tokio::sync::Mutex::default(),
        }
    }

    /// The key set's address.
    pub(crate) fn uri(&self) -> &str {
        &self.uri
    }

    /// Fetches the set once, at startup. A failure is returned for the
    /// log and does not count against the refetch interval: the first
    /// token tries again.
    pub(crate) async fn prefetch(&self) -> Result<usize, FetchError> {
        let keys = self.fetch().await?;
        Ok(keys)
    }

    /// The key that verifies a token of `alg` naming `kid`, fetching the
    /// set again as the contract says.
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
        alg: SigningAlgorithm,
    ) -> Result<Arc<PublicKey>, TokenError> {
        let set = self.snapshot();
        let fresh = set.fetched_at.is_some_and(|at| at.elapsed() < self.max_age);
        if fresh && let Some(key) = set.find(kid, alg) {
            return Ok(key);
        }
        let failure = self.refresh().await;
        let set = self.snapshot();
        match set.find(kid, alg) {
            Some(key) => Ok(key),
            None if set.fetched_at.is_none() => {
                Err(TokenError::KeysUnavailable { source: failure })
            }
            None => Err(TokenError::UnknownKey {
                kid: kid.map(str::to_owned),
            }),
        }
    }

    fn snapshot(&self) -> Arc<KeySet> {
        self.set.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Fetches the set unless it was asked for less than the refetch
    /// interval ago; waits for a fetch under way at most the deadline. The
    /// failure of the fetch, or of the last one, if it failed.
    async fn refresh(&self) -> Option<Arc<FetchError>> {
        let Ok(mut attempt) = tokio::time::timeout(self.deadline, self.attempt.lock()).await else {
            return None;
        };
        if attempt.at.is_some_and(|at| at.elapsed() < self.refetch) {
            return attempt.failure.clone();
        }
        attempt.at = Some(Instant::now());
        attempt.failure = match self.fetch().await {
            Ok(count) => {
                tracing::debug!(target: "toolhost::auth", "fetched {count} keys from {}", self.uri);
                None
            }
            Err(e) => {
                tracing::warn!(
                    target: "toolhost::auth",
                    "cannot fetch the authorization server's keys; keeping those at hand: {}",
                    toolhost_core::report(&e)
                );
                Some(Arc::new(e))
            }
        };
        attempt.failure.clone()
    }

    /// Fetches and installs the set; how many usable keys it has.
    async fn fetch(&self) -> Result<usize, FetchError> {
        let document: Document = self.fetcher.get_json(&self.uri).await?;
        let keys: Vec<Arc<PublicKey>> = document
            .keys
            .into_iter()
            .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
            .filter_map(|jwk| PublicKey::from_jwk(&jwk))
            .map(Arc::new)
            .collect();
        let count = keys.len();
        *self.set.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(KeySet {
            keys,
            fetched_at: Some(Instant::now()),
        });
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(json: serde_json::Value) -> Option<PublicKey> {
        PublicKey::from_jwk(&serde_json::from_value(json).unwrap())
    }

    #[test]
    fn a1_only_signature_keys_of_known_types_are_kept() {
        let rsa =
            key(serde_json::json!({"kty": "RSA", "kid": "r", "n": "AQAB", "e": "AQAB"})).unwrap();
        assert!(rsa.fits(SigningAlgorithm::RS256) && rsa.fits(SigningAlgorithm::PS512));
        assert!(!rsa.fits(SigningAlgorithm::ES256));
        let pinned =
            key(serde_json::json!({"kty": "RSA", "alg": "RS256", "n": "AQAB", "e": "AQAB"}))
                .unwrap();
        assert!(pinned.fits(SigningAlgorithm::RS256) && !pinned.fits(SigningAlgorithm::PS256));
        // Encryption keys and HMAC secrets are skipped.
        assert!(
            key(serde_json::json!({"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB"}))
                .is_none()
        );
        assert!(key(serde_json::json!({"kty": "oct", "k": "c2VjcmV0"})).is_none());
        // A P-256 point whose coordinates are the wrong size is no key.
        assert!(
            key(serde_json::json!({"kty": "EC", "crv": "P-256", "x": "AQAB", "y": "AQAB"}))
                .is_none()
        );
    }
}
