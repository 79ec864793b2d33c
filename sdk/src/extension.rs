//! Extensions: a system-prompt text and hooks around every call the host
//! makes.

use crate::bindings::types;
use crate::output::Output;

/// A call as a hook sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCall {
    /// The tool being called (any tool of the host).
    pub tool: String,
    /// The arguments, as JSON text.
    pub arguments: String,
    /// The call's id.
    pub call_id: String,
}

/// A call's outcome, as an after hook sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// It succeeded.
    Ok(Output),
    /// It failed; the text says why.
    Err(String),
}

/// An extension's behaviour. Every method has a default that does nothing
/// (and allows every call). Export the type with
/// [`extension!`](crate::extension).
///
/// The host runs these in a fresh sandboxed instance, under the plugin's
/// limits. A `before_call` that traps or runs out of time rejects the call.
pub trait Extension {
    /// Text to add to the agent's system prompt.
    fn system_prompt() -> Option<String> {
        None
    }

    /// Runs before every call: `Err(reason)` rejects it.
    fn before_call(call: &HookCall) -> Result<(), String> {
        let _ = call;
        Ok(())
    }

    /// Runs after every call with its outcome.
    fn after_call(call: &HookCall, outcome: &CallOutcome) {
        let _ = (call, outcome);
    }
}

impl From<types::HookCall> for HookCall {
    fn from(c: types::HookCall) -> Self {
        Self {
            tool: c.tool,
            arguments: c.arguments,
            call_id: c.call_id,
        }
    }
}

impl From<types::CallOutcome> for CallOutcome {
    fn from(o: types::CallOutcome) -> Self {
        match o {
            types::CallOutcome::Ok(out) => Self::Ok(out.into()),
            types::CallOutcome::Err(e) => Self::Err(e),
        }
    }
}
