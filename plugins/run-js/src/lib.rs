//! Runs a JavaScript snippet in the Boa engine and returns the value of its
//! last expression with everything it wrote through `console`.
//!
//! The engine gets nothing from outside: no `require`, no `fs`, no `fetch`,
//! no timers, and a module loader that loads nothing. Whatever the host's
//! policy grants this plugin is out of a script's reach anyway, since the
//! engine offers no API for it; run it with a policy that grants nothing.
//! Time and memory are bounded by the host's sandbox, which stops the
//! instance at its deadline or its memory limit.

use std::path::Path;
use std::rc::Rc;

use boa_engine::builtins::promise::PromiseState;
use boa_engine::module::IdleModuleLoader;
use boa_engine::{Context, JsError, Source};
use toolhost_sdk::prelude::*;

mod console;
mod fast_fill;
mod inspect;
mod render;

/// The name scripts see in error positions (`snippet.js:3:7`).
const SOURCE_NAME: &str = "snippet.js";
/// Bytes of a snippet accepted.
const MAX_CODE_BYTES: usize = 1 << 20;
/// Bytes of console output repeated in an error message.
const MAX_ERROR_CONSOLE_BYTES: usize = 4 << 10;
/// Stack frames kept in an error message.
const MAX_FRAMES: usize = 10;

/// Arguments of `run_js`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// JavaScript source, run as a script. The value of its last expression
    /// is returned, with everything written through console.log, info,
    /// debug, warn and error.
    code: String,
}

fn run_js(args: Args, _call: &CallInfo) -> Result<Output, ToolError> {
    if args.code.len() > MAX_CODE_BYTES {
        return Err(ToolError::invalid(
            "/code",
            format!(
                "the snippet is {} bytes; the limit is {MAX_CODE_BYTES}",
                args.code.len()
            ),
        ));
    }
    let outcome = evaluate(&args.code);
    let captured = console::take();
    match outcome {
        Ok(value) => {
            let (for_llm, for_user) = render::render(&captured, &value);
            Ok(Output::dual(for_llm, for_user))
        }
        Err(message) => {
            let logged = render::transcript(&captured);
            Err(ToolError::failed(if logged.is_empty() {
                message
            } else {
                format!(
                    "{message}\nconsole before the error:\n{}",
                    render::cut(logged.trim_end(), MAX_ERROR_CONSOLE_BYTES)
                )
            }))
        }
    }
}

/// Runs `code` as a script, then its pending promise jobs; the displayed
/// value of its last expression (a settled promise's outcome), or the
/// error that ended it.
fn evaluate(code: &str) -> Result<String, String> {
    let mut context = Context::builder()
        .module_loader(Rc::new(IdleModuleLoader))
        .build()
        .map_err(|e| format!("cannot start the engine: {e}"))?;
    console::install(&mut context).map_err(|e| format!("cannot start the engine: {e}"))?;
    fast_fill::install(&mut context).map_err(|e| format!("cannot start the engine: {e}"))?;
    let source = Source::from_bytes(code.as_bytes()).with_path(Path::new(SOURCE_NAME));
    let value = context
        .eval(source)
        .map_err(|e| describe(&e, &mut context))?;
    context.run_jobs().map_err(|e| describe(&e, &mut context))?;
    let value = match value.as_promise().map(|p| p.state()) {
        Some(PromiseState::Fulfilled(v)) => v,
        Some(PromiseState::Rejected(reason)) => {
            return Err(describe(&JsError::from_opaque(reason), &mut context));
        }
        Some(PromiseState::Pending) => return Ok("Promise { <pending> }".into()),
        None => value,
    };
    Ok(inspect::render(&value, &mut context))
}

/// "Uncaught TypeError: message" and the innermost stack frames, each
/// "at function (snippet.js:LINE:COLUMN)". Syntax errors carry their line
/// and column in the message.
fn describe(error: &JsError, context: &mut Context) -> String {
    let head = match error.try_native(context) {
        Ok(native) => {
            let message = native.message().trim();
            if message.is_empty() {
                native.kind().to_string()
            } else {
                format!("{}: {message}", native.kind())
            }
        }
        // A thrown value that is not an error object: `throw 5`.
        Err(_) => error
            .as_opaque()
            .map_or_else(|| error.to_string(), |v| v.display().to_string()),
    };
    let mut message = format!("Uncaught {head}");
    let text = error.to_string();
    let frames: Vec<&str> = text.lines().filter(|l| l.starts_with("    at ")).collect();
    for frame in frames.iter().take(MAX_FRAMES) {
        message.push('\n');
        message.push_str(frame);
    }
    if frames.len() > MAX_FRAMES {
        message.push_str(&format!(
            "\n    … {} more frames",
            frames.len() - MAX_FRAMES
        ));
    }
    message
}

fn register(tools: &mut Tools) {
    tools
        .add(
            "run_js",
            "Runs a JavaScript snippet (ECMAScript, as a script) and returns the value of its last \
             expression and what it wrote with console.log/info/debug/warn/error. There is no \
             filesystem, network, require, import or timers. A thrown exception or a syntax error \
             fails the call with its message and line.",
            run_js,
        )
        .safe()
        .idempotent()
        .read_only()
        .open_world(false);
}

toolhost_sdk::tool_plugin!(register);
