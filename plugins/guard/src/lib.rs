//! An extension plugin: it adds a rule to the system prompt, refuses any
//! call whose arguments look like they carry a secret, and counts outcomes in
//! the host's log. It runs sandboxed like any plugin; if it failed, calls
//! would be refused, not let through.

use toolhost_sdk::log;
use toolhost_sdk::prelude::*;

struct Guard;

/// Fragments that mark a credential in arguments.
const SECRET_MARKERS: &[&str] = &["AKIA", "-----BEGIN", "sk-live-", "ghp_", "xoxb-"];

impl Extension for Guard {
    fn system_prompt() -> Option<String> {
        Some(
            "Never pass credentials, keys or tokens to tools; calls that carry them are refused."
                .into(),
        )
    }

    fn before_call(call: &HookCall) -> Result<(), String> {
        match SECRET_MARKERS.iter().find(|m| call.arguments.contains(*m)) {
            Some(marker) => Err(format!(
                "the arguments contain what looks like a secret (`{marker}…`)"
            )),
            None => Ok(()),
        }
    }

    fn after_call(call: &HookCall, outcome: &CallOutcome) {
        let result = match outcome {
            CallOutcome::Ok(_) => "ok",
            CallOutcome::Err(_) => "error",
        };
        log::log(
            log::Level::Info,
            "call finished",
            &[("tool", &call.tool), ("result", result)],
        );
    }
}

toolhost_sdk::extension!(Guard);
