//! The `glob` and `grep` tools over a [`SearchOps`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{FileQuery, GrepQuery, SearchLimits, SearchOps};
use crate::{BuiltinTool, constrain, schema_of, typed_tool};
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Tool, ToolSpec};

impl SearchLimits {
    /// The limit a call gets: its own (at most `max_limit`), or the
    /// default.
    fn clamp(&self, asked: Option<usize>) -> usize {
        asked.unwrap_or(self.default_limit).min(self.max_limit)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    /// Glob matched against the path relative to `path`; without `/` it matches the file name at any depth.
    #[schemars(length(min = 1))]
    pattern: String,
    /// Directory to search, relative to the working directory. Default: the working directory.
    #[serde(default)]
    path: String,
    /// Include hidden files and directories (.git is always skipped). Default false.
    #[serde(default)]
    hidden: bool,
    /// Results to return at most.
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    /// Regular expression, or a literal string with `literal`.
    pattern: String,
    /// Directory to search, relative to the working directory. Default: the working directory.
    #[serde(default)]
    path: String,
    /// Only search files matching this glob (see the glob tool).
    #[schemars(length(min = 1))]
    glob: Option<String>,
    /// Match case-insensitively. Default false.
    #[serde(default)]
    ignore_case: bool,
    /// Treat the pattern as a literal string. Default false.
    #[serde(default)]
    literal: bool,
    /// Include hidden files and directories (.git is always skipped). Default false.
    #[serde(default)]
    hidden: bool,
    /// Results to return at most.
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

/// The search tools over `ops` that `on` selects.
pub(crate) fn search_tools(
    ops: &Arc<dyn SearchOps>,
    limits: &SearchLimits,
    on: impl Fn(BuiltinTool) -> bool,
) -> Vec<Arc<dyn Tool>> {
    let mut tools = Vec::new();
    // The configured bounds of `limit`, on both tools' schemas.
    let bound = |mut schema: serde_json::Value| {
        constrain(&mut schema, "limit", "maximum", json!(limits.max_limit));
        let text = format!(
            "Results to return at most (default {}).",
            limits.default_limit
        );
        constrain(&mut schema, "limit", "description", json!(text));
        schema
    };
    if on(BuiltinTool::Glob) {
        let spec = ToolSpec::new(
            "glob",
            "Finds files by glob pattern (e.g. `*.rs`, `src/**/*.toml`). Paths come back in \
             lexical order; .gitignore rules apply; symlinks are not followed.",
            bound(schema_of::<GlobArgs>()),
        )
        .concurrency_safe(true)
        .idempotent(true);
        let (ops, limits) = (ops.clone(), limits.clone());
        tools.push(typed_tool(spec, move |_ctx, a: GlobArgs| {
            let query = FileQuery {
                path: a.path,
                pattern: Some(a.pattern),
                hidden: a.hidden,
                limit: limits.clamp(a.limit),
            };
            let ops = ops.clone();
            async move { Ok(ToolOutput::text(ops.find_files(&query).await?.render())) }
        }));
    }
    if on(BuiltinTool::Grep) {
        let spec = ToolSpec::new(
            "grep",
            "Searches file contents for a regular expression (Rust regex syntax) and returns \
             `path:line:text` lines, ordered by path then line. .gitignore rules apply; binary \
             files are skipped.",
            bound(schema_of::<GrepArgs>()),
        )
        .concurrency_safe(true)
        .idempotent(true);
        let (ops, limits) = (ops.clone(), limits.clone());
        tools.push(typed_tool(spec, move |_ctx, a: GrepArgs| {
            let query = GrepQuery {
                path: a.path,
                pattern: a.pattern,
                glob: a.glob,
                ignore_case: a.ignore_case,
                literal: a.literal,
                hidden: a.hidden,
                limit: limits.clamp(a.limit),
                max_line_chars: limits.max_line_chars,
            };
            let ops = ops.clone();
            async move { Ok(ToolOutput::text(ops.grep(&query).await?.render())) }
        }));
    }
    tools
}
