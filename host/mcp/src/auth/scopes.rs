//! [`ScopeMap`]: which tools each OAuth scope lets a caller see and call,
//! as globs over tool names, and [`Access`], what one caller was granted.
//!
//! Contract: an empty map filters nothing (every token that verifies sees
//! every tool). Otherwise a caller sees and may call exactly the tools
//! that a glob of one of its scopes matches; a scope the map does not name
//! grants nothing, and a caller with no named scope sees no tool.

use std::sync::Arc;

use toolhost_core::rules::ToolPattern;

/// Scopes and the tools each grants.
#[derive(Debug, Clone, Default)]
pub struct ScopeMap {
    entries: Vec<(String, Vec<ToolPattern>)>,
}

impl ScopeMap {
    /// An empty map: scopes filter nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// `scope` grants the tools `patterns` match (added to what it already
    /// grants).
    pub fn grant(mut self, scope: impl Into<String>, patterns: Vec<ToolPattern>) -> Self {
        let scope = scope.into();
        match self.entries.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, existing)) => existing.extend(patterns),
            None => self.entries.push((scope, patterns)),
        }
        self
    }

    /// Whether the map is empty (scopes then filter nothing).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The scopes the map names, in the order granted (the protected
    /// resource metadata's `scopes_supported`).
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(s, _)| s.as_str())
    }

    /// The scopes that grant `tool`, in the order granted.
    pub fn granting(&self, tool: &str) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|(_, patterns)| patterns.iter().any(|p| p.matches(tool)))
            .map(|(s, _)| s.as_str())
            .collect()
    }

    /// What a caller holding `scopes` may use.
    pub(crate) fn access(
        self: &Arc<Self>,
        subject: Option<String>,
        client: Option<String>,
        scopes: Vec<String>,
    ) -> Access {
        Access(Arc::new(AccessInner {
            subject,
            client,
            scopes,
            map: self.clone(),
        }))
    }
}

/// What one caller's token grants: who it is, its scopes, and so which
/// tools it sees and may call. Put in the HTTP request's extensions by the
/// resource server, read by the MCP server for `tools/list` and
/// `tools/call`.
#[derive(Debug, Clone)]
pub struct Access(Arc<AccessInner>);

#[derive(Debug)]
struct AccessInner {
    subject: Option<String>,
    client: Option<String>,
    scopes: Vec<String>,
    map: Arc<ScopeMap>,
}

impl Access {
    /// The token's subject (`sub`, else `client_id`), if it names one.
    pub fn subject(&self) -> Option<&str> {
        self.0.subject.as_deref()
    }

    /// The OAuth client the token was issued to (`client_id`), if it
    /// names one: with the subject, it selects the caller's tenant (rule
    /// A2).
    pub fn client(&self) -> Option<&str> {
        self.0.client.as_deref()
    }

    /// The token's scopes.
    pub fn scopes(&self) -> &[String] {
        &self.0.scopes
    }

    /// Whether the caller may see and call `tool`.
    pub fn may_use(&self, tool: &str) -> bool {
        let map = &self.0.map;
        map.is_empty()
            || map.entries.iter().any(|(scope, patterns)| {
                self.0.scopes.contains(scope) && patterns.iter().any(|p| p.matches(tool))
            })
    }

    /// Whether every tool is granted (the scope map is empty).
    pub fn is_unrestricted(&self) -> bool {
        self.0.map.is_empty()
    }

    /// The scopes that would grant `tool` (for an `insufficient_scope`
    /// challenge).
    pub fn scopes_granting(&self, tool: &str) -> Vec<&str> {
        self.0.map.granting(tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(p: &[&str]) -> Vec<ToolPattern> {
        p.iter().map(|p| ToolPattern::new(p).unwrap()).collect()
    }

    #[test]
    fn a1_scopes_grant_the_tools_their_globs_match() {
        let map = Arc::new(
            ScopeMap::new()
                .grant("tools:read", globs(&["read_*", "docs.*"]))
                .grant("tools:write", globs(&["write_*"]))
                .grant("tools:read", globs(&["echo"])),
        );
        let reader = map.access(
            Some("alice".into()),
            None,
            vec!["tools:read".into(), "x".into()],
        );
        for tool in ["read_file", "docs.search", "echo"] {
            assert!(reader.may_use(tool), "{tool}");
        }
        assert!(!reader.may_use("write_file"));
        assert_eq!(reader.scopes_granting("write_file"), ["tools:write"]);
        let nobody = map.access(None, None, vec!["other".into()]);
        assert!(!nobody.may_use("echo"));
        // An empty map filters nothing.
        let open = Arc::new(ScopeMap::new()).access(None, None, vec![]);
        assert!(open.may_use("anything"));
        assert_eq!(
            map.scopes().collect::<Vec<_>>(),
            ["tools:read", "tools:write"]
        );
    }
}
