//! Which tenant a caller is (rule A2): a host that serves a team maps each
//! caller's identity (the subject or the client of its access token) to a
//! tenant named in the configuration, whose quotas its calls count
//! against and whose name labels them. A caller no tenant lists is the
//! tenant [`DEFAULT_TENANT`].

use std::collections::HashMap;
use std::sync::Arc;

pub use crate::tool::DEFAULT_TENANT;

/// Subjects and clients, each mapped to its tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantMap {
    subjects: HashMap<String, Arc<str>>,
    clients: HashMap<String, Arc<str>>,
}

/// A subject or client listed by two tenants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{who}` is already listed by tenant `{first}`: a caller belongs to one tenant")]
#[non_exhaustive]
pub struct TenantClash {
    /// The subject or client.
    pub who: String,
    /// The tenant that listed it first.
    pub first: String,
}

impl TenantMap {
    /// No tenant: every caller is [`DEFAULT_TENANT`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no tenant is named.
    pub fn is_empty(&self) -> bool {
        self.subjects.is_empty() && self.clients.is_empty()
    }

    /// Lists the token subject `subject` as the tenant `tenant`'s.
    pub fn add_subject(&mut self, subject: &str, tenant: &str) -> Result<(), TenantClash> {
        insert(&mut self.subjects, subject, tenant)
    }

    /// Lists the OAuth client `client` as the tenant `tenant`'s.
    pub fn add_client(&mut self, client: &str, tenant: &str) -> Result<(), TenantClash> {
        insert(&mut self.clients, client, tenant)
    }

    /// The tenant of a caller with token subject `subject` and client
    /// `client`: the one listing the subject, else the one listing the
    /// client, else [`DEFAULT_TENANT`].
    pub fn tenant_of(&self, subject: Option<&str>, client: Option<&str>) -> Arc<str> {
        subject
            .and_then(|s| self.subjects.get(s))
            .or_else(|| client.and_then(|c| self.clients.get(c)))
            .cloned()
            .unwrap_or_else(|| Arc::from(DEFAULT_TENANT))
    }
}

fn insert(map: &mut HashMap<String, Arc<str>>, who: &str, tenant: &str) -> Result<(), TenantClash> {
    match map.get(who) {
        Some(first) if &**first != tenant => Err(TenantClash {
            who: who.to_owned(),
            first: first.to_string(),
        }),
        _ => {
            map.insert(who.to_owned(), Arc::from(tenant));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a2_a_caller_is_the_tenant_listing_its_subject_else_its_client_else_default() {
        let mut map = TenantMap::new();
        map.add_subject("alice", "acme").unwrap();
        map.add_client("acme-ci", "acme").unwrap();
        map.add_subject("bob", "beta").unwrap();
        assert_eq!(&*map.tenant_of(Some("alice"), None), "acme");
        assert_eq!(&*map.tenant_of(Some("carol"), Some("acme-ci")), "acme");
        assert_eq!(&*map.tenant_of(Some("bob"), Some("acme-ci")), "beta");
        assert_eq!(&*map.tenant_of(Some("eve"), None), DEFAULT_TENANT);
        assert_eq!(&*map.tenant_of(None, None), DEFAULT_TENANT);
        let clash = map.add_subject("alice", "beta").unwrap_err();
        assert_eq!(clash.first, "acme");
    }
}
