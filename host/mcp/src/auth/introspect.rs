//! [`Introspector`]: opaque access tokens checked by asking the
//! authorization server (RFC 7662).
//!
//! Contract: the token is POSTed to the introspection endpoint with the
//! resource server's client credentials, within the fetch deadline and
//! size cap; an answer that cannot be had is
//! [`TokenError::IntrospectionUnavailable`] (503), never a pass. The
//! token is taken only when the answer says `active: true`, names the
//! issuer if it names one, holds an accepted audience in `aud` (required:
//! a token not bound to this resource is refused, RFC 8707), and its
//! `exp` and `nbf`, when given, hold with the leeway. Answers are not
//! cached: a revoked token is refused on its next request.
//!
//! Anyone can send a made-up token, and each one not shaped as a JWT costs
//! the authorization server a request made with this server's
//! credentials; at most [`MAX_IN_FLIGHT`] are asked at once, and a token
//! that finds them all busy is answered 503 at once
//! ([`TokenError::IntrospectionBusy`]), so a flood of them turns into
//! refusals here, not into a flood the authorization server throttles
//! this server's client for.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use serde::Deserialize;

use super::error::TokenError;
use super::fetch::Fetcher;
use super::scopes::{Access, ScopeMap};
use super::settings::Introspection;
use super::verify::{Claims, OneOrMany, check_times, grant};

/// The most introspection requests in flight at once.
pub(crate) const MAX_IN_FLIGHT: usize = 16;

/// Asks the introspection endpoint about opaque tokens.
#[derive(Debug)]
pub(crate) struct Introspector {
    /// The requests in flight ([`MAX_IN_FLIGHT`]).
    pub(crate) in_flight: Arc<Semaphore>,
    pub(crate) settings: Introspection,
    pub(crate) fetcher: Fetcher,
    pub(crate) issuer: String,
    pub(crate) audiences: Vec<String>,
    pub(crate) leeway: Duration,
    pub(crate) scopes: Arc<ScopeMap>,
}

/// The introspection answer's fields read.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    active: bool,
    iss: Option<String>,
    aud: Option<OneOrMany>,
    exp: Option<f64>,
    nbf: Option<f64>,
    sub: Option<String>,
    client_id: Option<String>,
    scope: Option<String>,
}

impl Introspector {
    /// Asks about `token`; what it grants.
    pub(crate) async fn check(&self, token: &str) -> Result<Access, TokenError> {
        let Ok(_asking) = self.in_flight.try_acquire() else {
            return Err(TokenError::IntrospectionBusy {
                limit: MAX_IN_FLIGHT,
            });
        };
        let answer: Answer = self
            .fetcher
            .post_form_json(
                &self.settings.endpoint,
                &[("token", token), ("token_type_hint", "access_token")],
                (
                    &self.settings.client_id,
                    self.settings.client_secret.expose(),
                ),
            )
            .await
            .map_err(|source| TokenError::IntrospectionUnavailable { source })?;
        if !answer.active {
            return Err(TokenError::Inactive);
        }
        check_times(answer.exp, answer.nbf, now(), self.leeway, false)?;
        if answer.iss.as_ref().is_some_and(|iss| *iss != self.issuer) {
            return Err(TokenError::Issuer);
        }
        match &answer.aud {
            None => return Err(TokenError::Claim { claim: "aud" }),
            Some(aud) => {
                let wanted = &self.audiences;
                let ok = match aud {
                    OneOrMany::One(a) => wanted.contains(a),
                    OneOrMany::Many(all) => all.iter().any(|a| wanted.contains(a)),
                };
                if !ok {
                    return Err(TokenError::Audience);
                }
            }
        }
        Ok(grant(
            &self.scopes,
            Claims {
                iss: answer.iss,
                aud: answer.aud,
                exp: answer.exp,
                nbf: answer.nbf,
                sub: answer.sub,
                client_id: answer.client_id,
                scope: answer.scope,
                scp: None,
            },
        ))
    }
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
