//! The `run_code` tool: decodes the arguments, checks the language, and
//! hands the snippet to [`CodeOps`].

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::{CodeOps, CodeRequest, Language};
use crate::builtin::typed_tool;
use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::tool::{Tool, ToolSpec};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunCodeArgs {
    language: String,
    code: String,
}

/// The `run_code` tool over `ops`, offering the languages `ops` runs.
///
/// Concurrency safe: every run is a fresh, isolated interpreter instance.
/// Idempotent: a snippet has no effect outside its own instance, so running
/// it again changes nothing (its output may differ, e.g. `Math.random()`),
/// and retrying is harmless.
pub(crate) fn run_code_tool(ops: Arc<dyn CodeOps>) -> Arc<dyn Tool> {
    let languages = ops.languages();
    let names: Vec<&str> = languages.iter().map(|l| l.name()).collect();
    let spec = ToolSpec::new(
        "run_code",
        format!(
            "Runs a code snippet in an isolated interpreter and returns the value of its last \
             expression and everything it printed (console.log and friends in JavaScript, \
             print and the standard streams in Python). Languages: {}. The snippet has no \
             filesystem, network, environment, subprocesses or timers (Python offers the pure \
             standard-library modules: math, json, re, datetime, ...), and is stopped at its time \
             and memory limits. An error in the snippet fails the call with its message and line.",
            names.join(", ")
        ),
        json!({
            "type": "object",
            "properties": {
                "language": {"type": "string", "enum": names, "description": "The snippet's language."},
                "code": {"type": "string", "minLength": 1, "description": "The source to run. The value of its last expression is returned."}
            },
            "required": ["language", "code"],
            "additionalProperties": false
        }),
    )
    .concurrency_safe(true)
    .idempotent(true);
    typed_tool(spec, move |ctx, args: RunCodeArgs| {
        let ops = ops.clone();
        let language = Language::from_name(&args.language).filter(|l| languages.contains(l));
        async move {
            let language = language.ok_or_else(|| unsupported(&args.language, &ops))?;
            if args.code.trim().is_empty() {
                return Err(ToolError::invalid_arguments(
                    "/code",
                    "the snippet is empty",
                ));
            }
            let result = ops
                .run(CodeRequest {
                    language,
                    code: args.code,
                    time_left: ctx.remaining(),
                })
                .await?;
            Ok(ToolOutput::dual(result.summary, result.transcript))
        }
    })
}

fn unsupported(asked: &str, ops: &Arc<dyn CodeOps>) -> ToolError {
    let known: Vec<&str> = ops.languages().iter().map(|l| l.name()).collect();
    ToolError::invalid_arguments(
        "/language",
        format!("`{asked}` is not one of {}", known.join(", ")),
    )
}
