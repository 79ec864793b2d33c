//! [`JwtCheck`]: an access token in JWT form (RFC 9068) checked against
//! the authorization server's keys and this server's settings.
//!
//! Contract, in order, each failure its own [`TokenError`]: the token is
//! three base64url parts of at most [`MAX_TOKEN_BYTES`]; the header's
//! `alg` is one of the accepted algorithms (the list comes from the
//! configuration, never from the token: `none`, the HMAC algorithms and
//! anything else are refused before any key is looked at) and it names no
//! `crit` extension; the key is the authorization server's, by `kid` (a
//! key embedded in or linked from the header — `jwk`, `jku`, `x5u`,
//! `x5c` — is never used); the signature verifies; then, and only then,
//! the claims are read: `iss` is the issuer, `aud` (a string or a list)
//! holds an accepted audience, `exp` is not past and `nbf`, if present, is
//! not ahead, each by more than the leeway.
//!
//! Signatures are verified with ring, already in the build through
//! rustls: the jsonwebtoken crate in the build has no crypto backend, and
//! its backends would bring a second set of RSA and elliptic-curve crates
//! (or aws-lc). jsonwebtoken's JWK types read the key set.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::Deserialize;

use super::error::TokenError;
use super::jwks::{KeyCache, Material, PublicKey};
use super::scopes::{Access, ScopeMap};
use super::settings::SigningAlgorithm;

/// The longest token read: 16 KiB (access tokens are rarely above 2).
pub const MAX_TOKEN_BYTES: usize = 16 << 10;

/// What a JWT access token is checked against.
#[derive(Debug)]
pub(crate) struct JwtCheck {
    pub(crate) keys: KeyCache,
    pub(crate) issuer: String,
    pub(crate) audiences: Vec<String>,
    pub(crate) algorithms: Vec<SigningAlgorithm>,
    pub(crate) leeway: Duration,
    pub(crate) scopes: Arc<ScopeMap>,
}

/// The header fields read.
#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
    crit: Option<serde_json::Value>,
}

/// The claims read.
#[derive(Deserialize)]
pub(crate) struct Claims {
    pub(crate) iss: Option<String>,
    pub(crate) aud: Option<OneOrMany>,
    pub(crate) exp: Option<f64>,
    pub(crate) nbf: Option<f64>,
    pub(crate) sub: Option<String>,
    pub(crate) client_id: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) scp: Option<OneOrMany>,
}

/// A claim that is a string or a list of strings.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn contains_any(&self, wanted: &[String]) -> bool {
        match self {
            Self::One(v) => wanted.contains(v),
            Self::Many(vs) => vs.iter().any(|v| wanted.contains(v)),
        }
    }

    fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(v) => v.split_whitespace().map(str::to_owned).collect(),
            Self::Many(vs) => vs,
        }
    }
}

/// The current time in seconds since the epoch.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn b64(part: &str) -> Result<Vec<u8>, TokenError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|e| TokenError::Malformed {
            source: Some(Box::new(e)),
        })
}

/// Whether `token` has the shape of a JWS (three parts, a header that
/// decodes to a JSON object): what is not is an opaque token.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    b64(header)
        .ok()
        .and_then(|h| serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&h).ok())
        .is_some()
}

impl JwtCheck {
    /// Checks `token` as the module's contract says; what it grants.
    pub(crate) async fn check(&self, token: &str) -> Result<Access, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Malformed { source: None });
        }
        let (signed, signature) = token
            .rsplit_once('.')
            .ok_or(TokenError::Malformed { source: None })?;
        let (header, payload) = signed
            .split_once('.')
            .ok_or(TokenError::Malformed { source: None })?;
        let header: Header =
            serde_json::from_slice(&b64(header)?).map_err(|e| TokenError::Malformed {
                source: Some(Box::new(e)),
            })?;
        let alg = header
            .alg
            .parse::<SigningAlgorithm>()
            .ok()
            .filter(|a| self.algorithms.contains(a))
            .ok_or_else(|| TokenError::Algorithm {
                alg: header.alg.chars().take(32).collect(),
            })?;
        if header.crit.is_some() {
            return Err(TokenError::Malformed { source: None });
        }
        let key = self.keys.key(header.kid.as_deref(), alg).await?;
        if !verify_signature(alg, &key, signed.as_bytes(), &b64(signature)?) {
            return Err(TokenError::Signature);
        }
        let claims: Claims =
            serde_json::from_slice(&b64(payload)?).map_err(|e| TokenError::Malformed {
                source: Some(Box::new(e)),
            })?;
        self.check_claims(claims, now())
    }

    /// Checks signed `claims` at time `now`; what they grant.
    pub(crate) fn check_claims(&self, claims: Claims, now: f64) -> Result<Access, TokenError> {
        check_times(claims.exp, claims.nbf, now, self.leeway, true)?;
        if claims.iss.as_deref() != Some(self.issuer.as_str()) {
            return Err(if claims.iss.is_none() {
                TokenError::Claim { claim: "iss" }
            } else {
                TokenError::Issuer
            });
        }
        match &claims.aud {
            None => return Err(TokenError::Claim { claim: "aud" }),
            Some(aud) if !aud.contains_any(&self.audiences) => return Err(TokenError::Audience),
            Some(_) => {}
        }
        Ok(grant(&self.scopes, claims))
    }
}

/// Checks `exp` (required when `exp_required`) and `nbf` against `now`
/// with `leeway`.
pub(crate) fn check_times(
    exp: Option<f64>,
    nbf: Option<f64>,
    now: f64,
    leeway: Duration,
    exp_required: bool,
) -> Result<(), TokenError> {
    let leeway = leeway.as_secs_f64();
    match exp {
        Some(exp) if !exp.is_finite() => return Err(TokenError::Claim { claim: "exp" }),
        Some(exp) if now > exp + leeway => return Err(TokenError::Expired),
        None if exp_required => return Err(TokenError::Claim { claim: "exp" }),
        _ => {}
    }
    match nbf {
        Some(nbf) if !nbf.is_finite() => Err(TokenError::Claim { claim: "nbf" }),
        Some(nbf) if now + leeway < nbf => Err(TokenError::NotYetValid),
        _ => Ok(()),
    }
}

/// What checked `claims` grant: the subject (`sub`, else `client_id`) and
/// the scopes (`scope`, space-separated, or `scp`).
pub(crate) fn grant(map: &Arc<ScopeMap>, claims: Claims) -> Access {
    let scopes = match (claims.scope, claims.scp) {
        (Some(scope), _) => scope.split_whitespace().map(str::to_owned).collect(),
        (None, Some(scp)) => scp.into_vec(),
        (None, None) => Vec::new(),
    };
    let subject = claims.sub.or_else(|| claims.client_id.clone());
    map.access(subject, claims.client_id, scopes)
}

/// Whether `signature` over `message` verifies under `key` with `alg`.
fn verify_signature(
    alg: SigningAlgorithm,
    key: &PublicKey,
    message: &[u8],
    signature: &[u8],
) -> bool {
    use SigningAlgorithm as A;
    use ring::signature as s;
    if !key.fits(alg) {
        return false;
    }
    let rsa = |params: &'static s::RsaParameters| match &key.material {
        Material::Rsa { n, e } => s::RsaPublicKeyComponents { n, e }
            .verify(params, message, signature)
            .is_ok(),
        _ => false,
    };
    let point = |algorithm: &'static dyn s::VerificationAlgorithm, bytes: &[u8]| {
        s::UnparsedPublicKey::new(algorithm, bytes)
            .verify(message, signature)
            .is_ok()
    };
    match (alg, &key.material) {
        (A::RS256, _) => rsa(&s::RSA_PKCS1_2048_8192_SHA256),
        (A::RS384, _) => rsa(&s::RSA_PKCS1_2048_8192_SHA384),
        (A::RS512, _) => rsa(&s::RSA_PKCS1_2048_8192_SHA512),
        (A::PS256, _) => rsa(&s::RSA_PSS_2048_8192_SHA256),
        (A::PS384, _) => rsa(&s::RSA_PSS_2048_8192_SHA384),
        (A::PS512, _) => rsa(&s::RSA_PSS_2048_8192_SHA512),
        (A::ES256, Material::P256(p)) => point(&s::ECDSA_P256_SHA256_FIXED, p),
        (A::ES384, Material::P384(p)) => point(&s::ECDSA_P384_SHA384_FIXED, p),
        (A::EdDSA, Material::Ed25519(p)) => point(&s::ED25519, p),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a1_times_are_held_with_the_leeway() {
        let leeway = Duration::from_secs(30);
        let now = 1_000_000.0;
        assert!(check_times(Some(now - 29.0), None, now, leeway, true).is_ok());
        assert!(matches!(
            check_times(Some(now - 31.0), None, now, leeway, true),
            Err(TokenError::Expired)
        ));
        assert!(check_times(Some(now + 60.0), Some(now + 29.0), now, leeway, true).is_ok());
        assert!(matches!(
            check_times(Some(now + 60.0), Some(now + 31.0), now, leeway, true),
            Err(TokenError::NotYetValid)
        ));
        assert!(matches!(
            check_times(None, None, now, leeway, true),
            Err(TokenError::Claim { claim: "exp" })
        ));
        assert!(check_times(None, None, now, leeway, false).is_ok());
    }

    #[test]
    fn a1_only_three_part_tokens_with_a_json_header_are_jwts() {
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256"}"#);
        assert!(looks_like_jwt(&format!("{header}.e30.c2ln")));
        assert!(!looks_like_jwt("opaque-token"));
        assert!(!looks_like_jwt("a.b.c"));
        assert!(!looks_like_jwt(&format!("{header}.e30.c2ln.x")));
    }
}
