//! The `glob` and `grep` tools over a [`SearchOps`].

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::{FileQuery, GrepQuery, SearchLimits, SearchOps};
use crate::{BuiltinTool, typed_tool};
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Tool, ToolSpec};

impl SearchLimits {
    /// The limit a call gets: its own (at most `max_limit`), or the
    /// default.
    fn clamp(&self, asked: Option<usize>) -> usize {
        asked.unwrap_or(self.default_limit).min(self.max_limit)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    pattern: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    hidden: bool,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: String,
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    literal: bool,
    #[serde(default)]
    hidden: bool,
    limit: Option<usize>,
}

/// The search tools over `ops` that `on` selects.
pub(crate) fn search_tools(
    ops: &Arc<dyn SearchOps>,
    limits: &SearchLimits,
    on: impl Fn(BuiltinTool) -> bool,
) -> Vec<Arc<dyn Tool>> {
    let mut tools = Vec::new();
    let limit_schema = json!({
        "type": "integer", "minimum": 1, "maximum": limits.max_limit,
        "description": format!("Results to return at most (default {}).", limits.default_limit)
    });
    let path_schema = json!({
        "type": "string",
        "description": "Directory to search, relative to the working directory. Default: the working directory."
    });
    let hidden_schema = json!({
        "type": "boolean",
        "description": "Include hidden files and directories (.git is always skipped). Default false."
    });
    if on(BuiltinTool::Glob) {
        let spec = ToolSpec::new(
            "glob",
            "Finds files by glob pattern (e.g. `*.rs`, `src/**/*.toml`). Paths come back in \
             lexical order; .gitignore rules apply; symlinks are not followed.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "minLength": 1, "description": "Glob matched against the path relative to `path`; without `/` it matches the file name at any depth."},
                    "path": path_schema,
                    "hidden": hidden_schema,
                    "limit": limit_schema,
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
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
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression, or a literal string with `literal`."},
                    "path": path_schema,
                    "glob": {"type": "string", "minLength": 1, "description": "Only search files matching this glob (see the glob tool)."},
                    "ignore_case": {"type": "boolean", "description": "Match case-insensitively. Default false."},
                    "literal": {"type": "boolean", "description": "Treat the pattern as a literal string. Default false."},
                    "hidden": hidden_schema,
                    "limit": limit_schema,
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
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
