//! [`ToolPattern`]: which tools a rule is about, as a glob over tool names.

use std::fmt;

use globset::{GlobBuilder, GlobMatcher};

use super::RuleError;
use crate::error::Cause;

/// A glob over tool names: `*` and `?` match any characters (tool names
/// hold no `/`, so `*` crosses `.`: `docs.*` is every tool of the MCP
/// server prefixed `docs`), `[abc]` a class, `{a,b}` alternatives, `\` a
/// literal. Case matters, as it does in tool names. Native, wasm and
/// remote MCP tools are matched alike, by their registered name.
#[derive(Debug, Clone)]
pub struct ToolPattern {
    text: String,
    matcher: GlobMatcher,
}

impl ToolPattern {
    /// Compiles `pattern`; an empty or malformed glob is an error naming
    /// it.
    pub fn new(pattern: &str) -> Result<Self, RuleError> {
        if pattern.is_empty() {
            return Err(RuleError::EmptyToolPattern);
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map_err(|e| RuleError::BadToolPattern {
                pattern: pattern.to_owned(),
                source: Cause::new(e),
            })?;
        Ok(Self {
            text: pattern.to_owned(),
            matcher: glob.compile_matcher(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the tool named `tool` is one this pattern is about.
    pub fn matches(&self, tool: &str) -> bool {
        self.matcher.is_match(tool)
    }
}

impl PartialEq for ToolPattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl fmt::Display for ToolPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o4_a_tool_pattern_matches_native_wasm_and_remote_names_alike() {
        let all = ToolPattern::new("*").unwrap();
        let docs = ToolPattern::new("docs.*").unwrap();
        let notes = ToolPattern::new("note_{read,list}").unwrap();
        for name in ["calc", "docs.search", "note_write"] {
            assert!(all.matches(name), "{name}");
        }
        assert!(docs.matches("docs.search"));
        assert!(!docs.matches("docs"));
        assert!(!docs.matches("mydocs.search"));
        assert!(notes.matches("note_read") && notes.matches("note_list"));
        assert!(!notes.matches("note_write"));
        assert!(!ToolPattern::new("Calc").unwrap().matches("calc"));
    }

    #[test]
    fn o4_a_bad_tool_pattern_is_an_error_naming_it() {
        assert_eq!(
            ToolPattern::new("").unwrap_err(),
            RuleError::EmptyToolPattern
        );
        let err = ToolPattern::new("note_[").unwrap_err();
        assert!(
            matches!(&err, RuleError::BadToolPattern { pattern, .. } if pattern == "note_["),
            "{err:?}"
        );
        assert!(
            std::error::Error::source(&err).is_some(),
            "the glob error is kept"
        );
    }
}
