//! The `run_code` tool: decodes the arguments, checks the language, and
//! hands the snippet to [`CodeOps`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{CodeOps, CodeRequest, Language};
use crate::{constrain, schema_of, typed_tool};
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Tool, ToolSpec};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunCodeArgs {
    /// The snippet's language.
    language: String,
    /// The source to run. The value of its last expression is returned.
    #[schemars(length(min = 1))]
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
    let mut schema = schema_of::<RunCodeArgs>();
    // Only the languages this build of `ops` runs.
    constrain(&mut schema, "language", "enum", json!(names));
    let spec = ToolSpec::new("run_code", description(&languages), schema)
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

/// What the model is told: what a run returns, for each offered language
/// what counts as printing and what it can use, and the limits.
pub(super) fn description(languages: &[Language]) -> String {
    let mut text = String::from(
        "Runs a code snippet in an isolated interpreter and returns the value of its last \
         expression and everything it printed.",
    );
    for language in languages {
        text.push(' ');
        text.push_str(match language {
            Language::JavaScript => {
                "javascript: ECMAScript run as a script; printing is console.log and friends; \
                 no require, import, fetch or timers."
            }
            Language::Python => {
                "python: Python 3 run as a module; printing is print and the standard streams; \
                 pure standard-library modules can be imported (math, json, re, datetime, \
                 decimal, statistics, itertools, collections, ...)."
            }
        });
    }
    text.push_str(
        " The snippet has no filesystem, network, environment or subprocesses, and is stopped \
         at its time and memory limits. An error in the snippet fails the call with its message \
         and line.",
    );
    text
}

fn unsupported(asked: &str, ops: &Arc<dyn CodeOps>) -> ToolError {
    let known: Vec<&str> = ops.languages().iter().map(|l| l.name()).collect();
    ToolError::invalid_arguments(
        "/language",
        format!("`{asked}` is not one of {}", known.join(", ")),
    )
}
