//! Which tenant a caller is (rule A2): a host that serves a team maps each
//! caller's identity (the subject or the client of its access token) to a
//! tenant named in the configuration, whose quotas its calls count
//! against, whose name labels them, and whose tool patterns, if it has
//! any, are all it sees and may call. A caller no tenant lists is the
//! tenant [`DEFAULT_TENANT`].

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use crate::rules::ToolPattern;

pub use crate::tool::DEFAULT_TENANT;

/// Subjects and clients, each mapped to its tenant.
#[derive(Debug, Clone, Default)]
pub struct TenantMap {
    subjects: HashMap<String, Arc<str>>,
    clients: HashMap<String, Arc<str>>,
    /// The tools each tenant that is limited to some sees.
    tools: HashMap<Arc<str>, Vec<ToolPattern>>,
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
        self.subjects.is_empty() && self.clients.is_empty() && self.tools.is_empty()
    }

    /// Limits the tenant `tenant` to the tools `patterns` match: it sees
    /// and may call those and no other. A tenant not limited sees every
    /// tool.
    pub fn limit_tools(&mut self, tenant: &str, patterns: Vec<ToolPattern>) {
        self.tools.insert(Arc::from(tenant), patterns);
    }

    /// Whether the tenant `tenant` may see and call `tool`.
    pub fn may_use(&self, tenant: &str, tool: &str) -> bool {
        self.tools
            .get(tenant)
            .is_none_or(|patterns| patterns.iter().any(|p| p.matches(tool)))
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
            .unwrap_or_else(default_tenant)
    }
}

/// [`DEFAULT_TENANT`], made once and shared: it is the tenant of every
/// call on a host without tenants, and a fresh `Arc` would be an
/// allocation each.
fn default_tenant() -> Arc<str> {
    static DEFAULT: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(DEFAULT_TENANT));
    DEFAULT.clone()
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

    #[test]
    fn a2_a_tenant_limited_to_some_tools_sees_only_those() {
        let mut map = TenantMap::new();
        map.limit_tools(
            "acme",
            vec![
                ToolPattern::new("calc").unwrap(),
                ToolPattern::new("note_*").unwrap(),
            ],
        );
        map.limit_tools("none", Vec::new());
        assert!(map.may_use("acme", "calc"));
        assert!(map.may_use("acme", "note_read"));
        assert!(!map.may_use("acme", "fetch"));
        assert!(!map.may_use("none", "calc"));
        assert!(map.may_use("beta", "fetch"));
        assert!(map.may_use(DEFAULT_TENANT, "fetch"));
    }
}
