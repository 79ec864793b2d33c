//! Turns what went wrong inside a guest into a typed error for that call
//! alone (rule W3).

use std::time::Instant;

use wasmtime::Trap;
use wasmtime::component::ResourceTableError;

use super::state::StoreState;
use toolhost_core::error::{SandboxFault, ToolError};

/// Classifies `err`, raised while running a guest in a store whose data is
/// `state`, for a call that started at `started`.
pub(crate) fn classify(err: &wasmtime::Error, state: &StoreState, started: Instant) -> ToolError {
    let plugin = state.plugin.to_string();
    if let Some(hit) = state.limiter.hit.as_ref().or(state.bound_hit.as_ref()) {
        return ToolError::Sandbox {
            plugin,
            fault: SandboxFault::LimitExceeded(hit.clone()),
        };
    }
    let table_full = err.chain().any(|e| {
        matches!(
            e.downcast_ref::<ResourceTableError>(),
            Some(ResourceTableError::Full)
        )
    }) || matches!(
        err.downcast_ref::<ResourceTableError>(),
        Some(ResourceTableError::Full)
    );
    if table_full {
        return ToolError::Sandbox {
            plugin,
            fault: SandboxFault::LimitExceeded(format!(
                "handle limit of {} per instance (max_handles)",
                state.max_handles
            )),
        };
    }
    if let Some(exit) = err.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return ToolError::Sandbox {
            plugin,
            fault: SandboxFault::Exited(exit.0),
        };
    }
    let fault = match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => {
            return ToolError::Timeout {
                after: started.elapsed(),
                plugin: Some(plugin),
            };
        }
        Some(Trap::StackOverflow) => {
            SandboxFault::Trap("stack overflow (recursion too deep)".into())
        }
        Some(Trap::UnreachableCodeReached) => match panic_message(&state.stderr.peek()) {
            Some(message) => SandboxFault::Panic(message),
            None => SandboxFault::Trap("unreachable code reached".into()),
        },
        Some(trap) => SandboxFault::Trap(trap.to_string()),
        None => SandboxFault::Trap(format!("{err:#}")),
    };
    ToolError::Sandbox { plugin, fault }
}

/// The message of a Rust panic, from what the guest wrote to stderr.
fn panic_message(stderr: &str) -> Option<String> {
    let at = stderr.rfind("panicked at ")?;
    let rest = &stderr[at + "panicked at ".len()..];
    // "src/lib.rs:10:5:\nthe message\nnote: run with ..."
    let (location, message) = rest.split_once('\n').unwrap_or((rest, ""));
    let message: Vec<&str> = message
        .lines()
        .take_while(|l| !l.starts_with("note: "))
        .collect();
    let location = location.trim_end_matches(':');
    Some(format!("{} (at {location})", message.join("\n").trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w3_panic_messages_are_recovered_from_stderr() {
        let stderr = "thread '<unnamed>' panicked at src/lib.rs:12:9:\nindex out of bounds\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(
            panic_message(stderr).unwrap(),
            "index out of bounds (at src/lib.rs:12:9)"
        );
        assert!(panic_message("nothing here").is_none());
    }
}
