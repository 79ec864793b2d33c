//! Embeds only the sandbox: loads a wasm tool plugin under a deny-by-default
//! policy, registers it with a host, and calls one of its tools through the
//! pipeline.
//!
//! ```text
//! cargo run --release -p embed-sandbox -- [PLUGIN.wasm] [TOOL] [ARGUMENTS-JSON]
//! ```
//!
//! With no arguments it runs the bundled calculator plugin (`make plugins`
//! builds it) on `2 + 3 * 4`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use toolhost_core::{Arguments, CallContext, ToolHost};
use toolhost_sandbox::Sandbox;

/// The calculator plugin as `make plugins` leaves it.
fn default_plugin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/wasm32-wasip2/release/calc.wasm")
}

/// Loads `wasm`, calls `tool` with `arguments` and returns the text the
/// model would see. Every error is returned as text naming what failed.
async fn run(wasm: &Path, tool: &str, arguments: &str) -> Result<String, String> {
    // No compiled-code cache: nothing is written outside the process.
    let sandbox = Sandbox::new(None).map_err(|e| format!("starting the sandbox: {e}"))?;
    // The default policy grants nothing: no files, no network, no
    // environment; bounded memory, time and output.
    let plugin = sandbox
        .plugin_file("calc", wasm)
        .load()
        .await
        .map_err(|e| format!("loading {}: {e}", wasm.display()))?;
    let host = ToolHost::builder().validate_arguments(true).build();
    host.register_extension(plugin.into_extension())
        .await
        .map_err(|e| format!("registering the plugin: {}", toolhost_core::report(&e)))?;
    let args = Arguments::parse(arguments).map_err(|e| format!("the arguments: {e}"))?;
    let output = host
        .invoke_tool(CallContext::new(), tool, args)
        .await
        .map_err(|e| format!("calling `{tool}`: {e}"))?;
    Ok(output.llm_text().into_owned())
}

fn main() -> ExitCode {
    let mut argv = std::env::args_os().skip(1);
    let wasm = argv
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(default_plugin);
    let tool = argv
        .next()
        .map(|t| t.to_string_lossy().into_owned())
        .unwrap_or_else(|| "calc".to_owned());
    let arguments = argv
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| r#"{"expression": "2 + 3 * 4"}"#.to_owned());
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&wasm, &tool, &arguments)) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Runtime::new().unwrap()
    }

    #[test]
    fn the_sandbox_alone_runs_a_plugin_call() {
        let text = runtime()
            .block_on(run(
                &default_plugin(),
                "calc",
                r#"{"expression": "2 + 3 * 4"}"#,
            ))
            .unwrap();
        assert_eq!(text, "14");
    }

    #[test]
    fn a_bad_call_is_an_error_naming_what_failed() {
        let err = runtime()
            .block_on(run(&default_plugin(), "calc", r#"{"expression": "2 +"}"#))
            .unwrap_err();
        assert!(err.contains("calling `calc`"), "{err}");
        let err = runtime()
            .block_on(run(Path::new("/nonexistent.wasm"), "calc", "{}"))
            .unwrap_err();
        assert!(err.contains("/nonexistent.wasm"), "{err}");
    }
}
