//! Extensions: a system-prompt text and hooks around every call the host
//! makes.

use crate::bindings::types;
use crate::output::Output;

/// A call as a hook sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCall {
    /// The tool being called (any tool of the host).
    pub tool: String,
    /// The arguments, as JSON text, as the hooks before this one left them.
    pub arguments: String,
    /// The call's id.
    pub call_id: String,
}

impl HookCall {
    /// The arguments as a JSON value (`Value::Null` if the host sent
    /// something that is not JSON, which it never does).
    pub fn arguments_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.arguments).unwrap_or_default()
    }
}

/// A call's outcome, as an after hook sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// It succeeded.
    Ok(Output),
    /// It failed; the text says why.
    Err(String),
}

/// What a before hook decides about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call goes on, unchanged.
    Allow,
    /// The call is refused, for this reason.
    Reject(String),
    /// The call goes on with these arguments (a JSON object, as text). The
    /// host checks them against the tool's schema and refuses the call if
    /// they do not fit. Only a plugin whose policy grants
    /// `hooks = "rewrite"` may rewrite; for any other the call is refused.
    Rewrite(String),
    /// The call goes on only if a person approves it; the text says why
    /// they are asked. No answer in time is a denial.
    Ask(String),
}

impl Decision {
    /// Rewrites the arguments to `value` (a JSON object).
    pub fn rewrite(value: &serde_json::Value) -> Self {
        Self::Rewrite(value.to_string())
    }
}

impl From<Result<(), String>> for Decision {
    fn from(r: Result<(), String>) -> Self {
        match r {
            Ok(()) => Self::Allow,
            Err(reason) => Self::Reject(reason),
        }
    }
}

/// What an after hook decides about a call's outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterDecision {
    /// The outcome stays.
    Keep,
    /// The outcome is replaced (`Err` fails the call with that text). Later
    /// hooks and the caller see the replacement. Only a plugin whose policy
    /// grants `hooks = "rewrite"` may replace; for any other the call fails.
    Replace(CallOutcome),
}

/// An extension's behaviour. Every method has a default that does nothing
/// (and allows every call). Export the type with
/// [`extension!`](crate::extension).
///
/// Each hook comes in two forms: the simple one (`before_call` vetoes,
/// `after_call` observes) and the deciding one (`decide_before`,
/// `decide_after`), which by default calls the simple one. Implement
/// whichever you need.
///
/// The host runs these in a fresh sandboxed instance, under the plugin's
/// limits. A before hook that traps or runs out of time rejects the call.
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

    /// Runs before every call and decides about it: allow, reject, rewrite
    /// the arguments, or ask a person. The default asks
    /// [`before_call`](Self::before_call).
    fn decide_before(call: &HookCall) -> Decision {
        Self::before_call(call).into()
    }

    /// Runs after every call with its outcome.
    fn after_call(call: &HookCall, outcome: &CallOutcome) {
        let _ = (call, outcome);
    }

    /// Runs after every call and keeps or replaces its outcome. The default
    /// runs [`after_call`](Self::after_call) and keeps it.
    fn decide_after(call: &HookCall, outcome: &CallOutcome) -> AfterDecision {
        Self::after_call(call, outcome);
        AfterDecision::Keep
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

impl From<CallOutcome> for types::CallOutcome {
    fn from(o: CallOutcome) -> Self {
        match o {
            CallOutcome::Ok(out) => Self::Ok(out.into()),
            CallOutcome::Err(e) => Self::Err(e),
        }
    }
}

impl From<Decision> for types::BeforeDecision {
    fn from(d: Decision) -> Self {
        match d {
            Decision::Allow => Self::Allow,
            Decision::Reject(r) => Self::Reject(r),
            Decision::Rewrite(a) => Self::Rewrite(a),
            Decision::Ask(r) => Self::Ask(r),
        }
    }
}

impl From<AfterDecision> for types::AfterDecision {
    fn from(d: AfterDecision) -> Self {
        match d {
            AfterDecision::Keep => Self::Keep,
            AfterDecision::Replace(o) => Self::Replace(o.into()),
        }
    }
}
