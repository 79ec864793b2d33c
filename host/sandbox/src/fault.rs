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
    // wasmtime bounds the data one host call copies out of a guest (its
    // private `HostcallFuelExhausted`, known by its message): a limit the
    // guest ran into, not a bug in it.
    if err.chain().any(|e| {
        e.to_string()
            .contains("fuel allocated for hostcalls has been exhausted")
    }) {
        return ToolError::Sandbox {
            plugin,
            fault: SandboxFault::LimitExceeded(
                "data limit of one host call (128 MiB as the engine counts it)".into(),
            ),
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
        Some(Trap::UnreachableCodeReached) => {
            let stderr = state.stderr.peek();
            match (python_traceback(&stderr), panic_message(&stderr)) {
                (Some(traceback), _) => SandboxFault::Panic(traceback),
                (None, Some(message)) => SandboxFault::Panic(message),
                (None, None) => match last_words(&stderr) {
                    Some(words) => SandboxFault::Trap(format!(
                        "unreachable code reached; its last words on stderr: {words}"
                    )),
                    None => SandboxFault::Trap("unreachable code reached".into()),
                },
            }
        }
        Some(trap) => SandboxFault::Trap(trap.to_string()),
        None => SandboxFault::Trap(format!("{err:#}")),
    };
    ToolError::Sandbox { plugin, fault }
}

/// Most of a guest's stderr quoted in an error: the end, where the cause is.
const QUOTED_STDERR: usize = 4 << 10;

/// The last [`QUOTED_STDERR`] bytes of `text`, cut at a character
/// boundary, with `…` in front if cut.
fn tail(text: &str) -> String {
    if text.len() <= QUOTED_STDERR {
        return text.to_owned();
    }
    let mut at = text.len() - QUOTED_STDERR;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    format!("…{}", &text[at..])
}

/// An uncaught Python exception's traceback (componentize-py writes it to
/// stderr before its runtime gives up), without the runtime's own panic
/// after it.
fn python_traceback(stderr: &str) -> Option<String> {
    let at = stderr.rfind("Traceback (most recent call last):")?;
    let traceback: Vec<&str> = stderr[at..]
        .lines()
        .take_while(|l| !l.starts_with("thread '"))
        .collect();
    Some(tail(traceback.join("\n").trim_end()))
}

/// The end of whatever a guest wrote to stderr before it trapped (a
/// JavaScript engine's uncaught error, a C runtime's abort message).
fn last_words(stderr: &str) -> Option<String> {
    let text = stderr.trim();
    (!text.is_empty()).then(|| tail(text))
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

    #[test]
    fn w3_a_python_traceback_is_recovered_without_the_runtimes_panic() {
        let stderr = "Traceback (most recent call last):\n  File \"/0/app.py\", line 3, in call_tool\nZeroDivisionError: division by zero\n\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\nPython function threw an unexpected exception\n";
        assert_eq!(
            python_traceback(stderr).unwrap(),
            "Traceback (most recent call last):\n  File \"/0/app.py\", line 3, in call_tool\nZeroDivisionError: division by zero"
        );
        let long = format!(
            "Traceback (most recent call last):\n{}\nValueError: x",
            "é".repeat(10_000)
        );
        let cut = python_traceback(&long).unwrap();
        assert!(
            cut.starts_with('…') && cut.ends_with("ValueError: x"),
            "{}",
            &cut[..20]
        );
        assert!(cut.len() <= QUOTED_STDERR + '…'.len_utf8());
        assert_eq!(last_words("  \n"), None);
        assert_eq!(last_words("Error: boom\n").as_deref(), Some("Error: boom"));
    }
}
