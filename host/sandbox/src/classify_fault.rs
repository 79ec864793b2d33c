//! Turns what went wrong inside a guest into a typed error for that call
//! alone (rule W3).

use std::time::Instant;

use wasmtime::Trap;
use wasmtime::component::ResourceTableError;

use super::shadow::ListTooLong;
use super::state::StoreState;
use toolhost_core::error::{SandboxFault, ToolError};

/// Classifies `err`, raised while running a guest in a store whose data is
/// `state`, for a call that started at `started`.
pub(crate) fn classify(err: &wasmtime::Error, state: &StoreState, started: Instant) -> ToolError {
    let plugin = state.plugin().to_string();
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
    // A list the host refused to read (`poll_list`, `request_head`).
    if let Some(refused) = err.chain().find_map(|e| e.downcast_ref::<ListTooLong>()) {
        return ToolError::Sandbox {
            plugin,
            fault: SandboxFault::LimitExceeded(refused.to_string()),
        };
    }
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
            let stderr = state.output.stderr();
            if let Some(fault) = guest_language_fault(&stderr) {
                return ToolError::Sandbox { plugin, fault };
            }
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

/// What an interpreter's runtime says, in its own terms, when the author's
/// code went wrong, said in the author's terms: an uncaught JavaScript
/// error (ComponentizeJS), or a Python value of the wrong type handed to
/// the interface (componentize-py). `None` for anything else.
fn guest_language_fault(stderr: &str) -> Option<SandboxFault> {
    if let Some(error) = javascript_error(stderr) {
        return Some(SandboxFault::Panic(error));
    }
    python_wrong_type(stderr).map(SandboxFault::InvalidOutput)
}

/// An error a JavaScript plugin threw that is not one of the interface's
/// errors: ComponentizeJS's bindings complain that it is no `ToolError`
/// (`invalid variant tag value … (received `ERROR`) specified for …`) and
/// quote only its text, with a stack of their own generated file. The
/// author's error leads, with the first place in the author's own code
/// that the stderr shows (the template prints a stray error's stack there
/// before it rethrows it: `shout@plugin.js:2:25`).
fn javascript_error(stderr: &str) -> Option<String> {
    const START: &str = "invalid variant tag value ";
    let at = stderr.rfind(START)?;
    let rest = &stderr[at..];
    let received = rest.find("(received `")? + "(received `".len();
    let end = rest[received..].find("`) specified for `")?;
    let error = rest[received..received + end].trim();
    let location = stderr[..at].lines().find_map(author_frame);
    Some(match location {
        Some(location) => format!("{error} (at {location})"),
        None => format!(
            "{error} (thrown from the plugin's code; print `e.stack` to stderr before rethrowing to see where)"
        ),
    })
}

/// `FILE:LINE:COLUMN` of a SpiderMonkey stack frame (`name@FILE:LINE:COLUMN`)
/// in the author's code rather than the bindings ComponentizeJS generates.
fn author_frame(line: &str) -> Option<&str> {
    let (_, place) = line.trim().rsplit_once('@')?;
    let mut parts = place.rsplitn(3, ':');
    let (column, line_no, file) = (parts.next()?, parts.next()?, parts.next()?);
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let generated = file.ends_with("initializer.js") || file.contains("/sources/");
    (numeric(column) && numeric(line_no) && !file.is_empty() && !generated).then_some(place)
}

/// A Python plugin that handed the interface a value of the wrong type (a
/// `str` returned where a `types.ToolOutput_*` belongs, an `int` in a
/// `str` field): componentize-py's runtime panics with the Python error it
/// met while converting the value. Says which value was wrong.
fn python_wrong_type(stderr: &str) -> Option<String> {
    let at = stderr.rfind("PyErr { type: <class '")?;
    let rest = &stderr[at..];
    let value_at = rest.find(", value: ")? + ", value: ".len();
    let value_end = rest[value_at..].find(", traceback: ")?;
    let value = &rest[value_at..value_at + value_end];
    let what = if let Some(class) = value
        .strip_prefix("KeyError(<class '")
        .and_then(|v| v.strip_suffix("'>)"))
    {
        format!(
            "a `{class}` where the interface takes one of a variant's cases (a `types.…_…` \
             value such as `types.ToolOutput_Text(text)`)"
        )
    } else if let Some((found, expected)) = value
        .strip_prefix("TypeError(\"'")
        .and_then(|v| v.strip_suffix("'\")"))
        .and_then(|v| v.split_once("' object is not an instance of '"))
    {
        format!("a `{found}` where the interface takes a `{expected}`")
    } else {
        format!("a value the interface cannot take ({value})")
    };
    Some(format!(
        "a value it handed over (what a method returned, or an argument to a host function) has the wrong type: {what}"
    ))
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
    fn w3_a_javascript_error_leads_with_the_authors_message_and_line() {
        let stderr = "shout@plugin.js:67:22\ncallTool@plugin.js:93:14\nexport_tool_0_2_0$callTool@/tmp/3c3b53702f59/sources/initializer.js:350:28\n\ninvalid variant tag value `undefined` (received `TypeError: can't access property \"toUpperCase\", args.txt is undefined`) specified for `ToolError`\nStack:\n  export_tool_0_2_0$callTool@/tmp/3c3b53702f59/sources/initializer.js:1091:17\n\nRedirecting call to abort() to mozalloc_abort\n";
        assert_eq!(
            guest_language_fault(stderr),
            Some(SandboxFault::Panic(
                "TypeError: can't access property \"toUpperCase\", args.txt is undefined (at plugin.js:67:22)".into()
            ))
        );
        // Without the template's stack, the message still leads.
        let bare = &stderr[stderr.find("invalid").unwrap()..];
        let Some(SandboxFault::Panic(text)) = guest_language_fault(bare) else {
            panic!("not recognised")
        };
        assert!(text.starts_with("TypeError: can't access"), "{text}");
        assert!(!text.contains("initializer.js"), "{text}");
        // Frames of the generated bindings or lines that are not frames
        // are never taken for the author's.
        for line in [
            "f@/tmp/x/sources/initializer.js:1:2",
            "a@b",
            "x@plugin.js:1",
            "x@:1:2",
            "x@plugin.js:a:2",
        ] {
            assert_eq!(author_frame(line), None, "{line}");
        }
        assert_eq!(guest_language_fault("invalid variant tag value `x`"), None);
    }

    #[test]
    fn w3_a_python_value_of_the_wrong_type_is_named() {
        let panic = |value: &str| {
            format!(
                "thread '<unnamed>' (1) panicked at runtime/src/lib.rs:1640:18:\ncalled `Result::unwrap()` on an `Err` value: PyErr {{ type: <class 'KeyError'>, value: {value}, traceback: None }}\n"
            )
        };
        let Some(SandboxFault::InvalidOutput(text)) =
            guest_language_fault(&panic("KeyError(<class 'str'>)"))
        else {
            panic!("not recognised")
        };
        assert!(
            text.contains("a `str` where the interface takes one of a variant's cases"),
            "{text}"
        );
        let Some(SandboxFault::InvalidOutput(text)) = guest_language_fault(&panic(
            "TypeError(\"'int' object is not an instance of 'str'\")",
        )) else {
            panic!("not recognised")
        };
        assert!(
            text.ends_with("a `int` where the interface takes a `str`"),
            "{text}"
        );
        let Some(SandboxFault::InvalidOutput(text)) =
            guest_language_fault(&panic("AttributeError(\"no\")"))
        else {
            panic!("not recognised")
        };
        assert!(text.ends_with("(AttributeError(\"no\"))"), "{text}");
        // A Rust plugin's own panic is not mistaken for one.
        assert_eq!(
            guest_language_fault("thread 'x' panicked at src/lib.rs:1:1:\nboom\n"),
            None
        );
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
