//! The glob filter every backend applies, in process, to the paths it
//! walks — so that glob semantics cannot differ between backends.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use toolhost_core::error::ToolError;

/// A compiled glob. A pattern without `/` matches the file name; one with
/// `/` matches the whole path relative to the search directory (a leading
/// `/` anchors it there and is dropped). `*` and `?` do not cross `/`.
#[derive(Debug, Clone)]
pub(crate) struct PathFilter {
    matcher: GlobMatcher,
    name_only: bool,
}

impl PathFilter {
    /// Compiles `pattern`; the error names the argument `arg` and the
    /// problem.
    pub(crate) fn new(pattern: &str, arg: &str) -> Result<Self, ToolError> {
        let name_only = !pattern.contains('/');
        let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                ToolError::invalid_arguments(format!("/{arg}"), format!("bad glob: {e}"))
            })?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            name_only,
        })
    }

    /// Whether the relative path `rel` (bytes, `/`-separated) matches.
    pub(crate) fn matches(&self, rel: &[u8]) -> bool {
        let subject = if self.name_only {
            rel.rsplit(|&b| b == b'/').next().unwrap_or(rel)
        } else {
            rel
        };
        self.matcher.is_match(Path::new(OsStr::from_bytes(subject)))
    }
}

/// Compiles an optional filter.
pub(crate) fn optional(pattern: Option<&str>, arg: &str) -> Result<Option<PathFilter>, ToolError> {
    pattern.map(|p| PathFilter::new(p, arg)).transpose()
}

/// The regex matcher of a grep query, configured as ripgrep configures it
/// by default (line-oriented, case-sensitive unless asked, Unicode on).
pub(crate) fn build_matcher(
    pattern: &str,
    ignore_case: bool,
    literal: bool,
) -> Result<grep_regex::RegexMatcher, ToolError> {
    grep_regex::RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .fixed_strings(literal)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| {
            ToolError::invalid_arguments("/pattern", format!("bad regular expression: {e}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b4_glob_without_slash_matches_names_at_any_depth() {
        let f = PathFilter::new("*.rs", "pattern").unwrap();
        assert!(f.matches(b"a.rs"));
        assert!(f.matches(b"src/deep/a.rs"));
        assert!(!f.matches(b"src/a.rsx"));
    }

    #[test]
    fn b4_glob_with_slash_matches_the_relative_path() {
        let f = PathFilter::new("src/*.rs", "pattern").unwrap();
        assert!(f.matches(b"src/a.rs"));
        assert!(!f.matches(b"src/deep/a.rs"));
        let f = PathFilter::new("src/**/*.rs", "pattern").unwrap();
        assert!(f.matches(b"src/deep/a.rs"));
        assert!(f.matches(b"src/a.rs"));
        let f = PathFilter::new("/top.txt", "pattern").unwrap();
        assert!(f.matches(b"top.txt"));
        assert!(!f.matches(b"sub/top.txt"));
    }

    #[test]
    fn b4_bad_patterns_name_the_argument() {
        let err = PathFilter::new("a[", "glob").unwrap_err();
        assert!(err.to_string().contains("at `/glob`"), "{err}");
        let err = build_matcher("(", false, false).unwrap_err();
        assert!(err.to_string().contains("at `/pattern`"), "{err}");
    }
}
