//! Whose each HTTP session is (rule A2): a session belongs to the caller
//! that opened it, in its tenant, and to anyone else it does not exist.
//!
//! A session carries what the server sends outside a request's own answer
//! (approval and elicitation requests of a 2025-era client, its standalone
//! stream's notifications), and rmcp hands a request naming a session to
//! that session whoever sends it. So a caller that learned another's
//! `Mcp-Session-Id` could, without this, run calls in that session and see
//! what the server sends there, or close it. Here the session is bound to
//! the [`Caller`] that opened it (its identity, which holds its tenant),
//! and a request naming it from anyone else gets exactly what a request
//! naming an unknown session gets: `404 Not Found: Session not found`
//! (rmcp's own words), or, for a `DELETE`, the `204` of a session already
//! gone, with nothing closed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use sha2::{Digest as _, Sha256};

use super::server::Caller;

use crate::header_names::MCP_SESSION_ID as SESSION_HEADER;

/// The owner of each open session.
pub(crate) struct SessionOwners {
    sessions: Arc<LocalSessionManager>,
    /// A digest of each session's caller, by session id.
    owners: Mutex<HashMap<String, [u8; 32]>>,
}

/// What a request may do with the session it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It names none: it may open one, for `caller`.
    Opens,
    /// It names one of `caller`'s, or one nobody owns (unknown to rmcp
    /// too, which answers it).
    Admitted,
    /// It names another caller's.
    Foreign,
}

impl SessionOwners {
    /// No session owned yet; `sessions` are rmcp's open sessions.
    pub(crate) fn new(sessions: Arc<LocalSessionManager>) -> Self {
        Self {
            sessions,
            owners: Mutex::new(HashMap::new()),
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, [u8; 32]>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a request with `headers` from `caller` may go on.
    pub(crate) fn admit(&self, headers: &HeaderMap, caller: &Caller) -> Admission {
        let Some(id) = session_of(headers) else {
            return Admission::Opens;
        };
        match self.owners().get(id) {
            Some(owner) if *owner != digest(caller) => Admission::Foreign,
            _ => Admission::Admitted,
        }
    }

    /// Records that the response with `headers` (to a request that named
    /// no session) opened a session for `caller`, and forgets the
    /// sessions closed since.
    pub(crate) async fn opened(&self, headers: &HeaderMap, caller: &Caller) {
        let Some(id) = session_of(headers) else {
            return;
        };
        let open = self.sessions.sessions.read().await;
        let mut owners = self.owners();
        owners.retain(|id, _| open.contains_key(id.as_str()));
        owners.insert(id.to_owned(), digest(caller));
    }

    /// Forgets the session `headers` name (its owner closed it).
    pub(crate) fn closed(&self, headers: &HeaderMap) {
        if let Some(id) = session_of(headers) {
            self.owners().remove(id);
        }
    }
}

/// What a request naming another caller's session gets: what it would
/// get for a session that does not exist.
pub(crate) fn as_unknown(method: &Method) -> Response {
    if method == Method::DELETE {
        return StatusCode::NO_CONTENT.into_response();
    }
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(&SESSION_HEADER).and_then(|v| v.to_str().ok())
}

fn digest(caller: &Caller) -> [u8; 32] {
    Sha256::digest(caller.identity.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(tenant: &str, who: &str) -> Caller {
        Caller {
            identity: format!("tenant:{}:{tenant}:oauth:{who}", tenant.len()),
            tenant: tenant.into(),
            subject: Some(who.into()),
        }
    }

    fn naming(id: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(SESSION_HEADER.clone(), id.parse().unwrap());
        headers
    }

    #[tokio::test]
    async fn a2_a_session_is_its_openers_alone() {
        let sessions = Arc::new(LocalSessionManager::default());
        let owners = SessionOwners::new(sessions);
        let alice = caller("acme", "alice");
        assert_eq!(owners.admit(&HeaderMap::new(), &alice), Admission::Opens);
        let mut response = StatusCode::OK.into_response();
        response
            .headers_mut()
            .insert(SESSION_HEADER.clone(), "s-1".parse().unwrap());
        owners.opened(response.headers(), &alice).await;
        assert_eq!(owners.admit(&naming("s-1"), &alice), Admission::Admitted);
        for other in [
            caller("acme", "mallory"),
            caller("beta", "alice"),
            caller("beta", "mallory"),
        ] {
            assert_eq!(owners.admit(&naming("s-1"), &other), Admission::Foreign);
        }
        // A session nobody opened here is rmcp's to answer (404).
        assert_eq!(
            owners.admit(&naming("s-2"), &caller("beta", "bob")),
            Admission::Admitted
        );
        owners.closed(&naming("s-1"));
        assert_eq!(
            owners.admit(&naming("s-1"), &caller("beta", "bob")),
            Admission::Admitted
        );
        assert_eq!(as_unknown(&Method::POST).status(), StatusCode::NOT_FOUND);
        assert_eq!(as_unknown(&Method::DELETE).status(), StatusCode::NO_CONTENT);
    }
}
