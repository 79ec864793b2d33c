//! An extension plugin: it adds a rule to the system prompt, masks what
//! looks like a credential in any call's arguments (a rewrite) and in any
//! result (a redaction), asks a person before a call to a tool whose name
//! says it destroys something, and counts outcomes in the host's log.
//!
//! Rewriting and redacting need `hooks = "rewrite"` in the plugin's table;
//! under the default `hooks = "veto"` the host refuses a call this hook
//! tries to change, so a secret never passes either way. It runs sandboxed
//! like any plugin; if it failed, calls would be refused, not let through.

use toolhost_sdk::log;
use toolhost_sdk::prelude::*;
use toolhost_sdk::serde_json::Value;

struct Guard;

/// Fragments that start a credential.
const SECRET_MARKERS: &[&str] = &["AKIA", "-----BEGIN", "sk-live-", "ghp_", "xoxb-"];

/// Words in a tool's name that mean the call cannot be undone.
const DESTRUCTIVE: &[&str] = &["delete", "remove", "drop", "destroy"];

const MASK: &str = "[masked]";

/// `text` with every credential replaced by [`MASK`]: from a marker to the
/// next whitespace or quote. `None` if there was none.
fn mask(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some((at, _)) = SECRET_MARKERS
        .iter()
        .filter_map(|m| rest.find(m).map(|at| (at, m)))
        .min()
    {
        out.push_str(&rest[..at]);
        out.push_str(MASK);
        let secret = &rest[at..];
        let end = secret
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(secret.len());
        rest = &secret[end..];
        changed = true;
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// Masks every string in `value`; whether anything changed.
fn mask_value(value: &mut Value) -> bool {
    match value {
        Value::String(s) => match mask(s) {
            Some(masked) => {
                *s = masked;
                true
            }
            None => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |c, v| mask_value(v) | c),
        Value::Object(map) => map.values_mut().fold(false, |c, v| mask_value(v) | c),
        _ => false,
    }
}

impl Extension for Guard {
    fn system_prompt() -> Option<String> {
        Some("Never pass credentials, keys or tokens to tools; the host masks any it sees.".into())
    }

    fn decide_before(call: &HookCall) -> Decision {
        let mut args = call.arguments_json();
        if mask_value(&mut args) {
            return Decision::rewrite(&args);
        }
        let name = call.tool.to_ascii_lowercase();
        match DESTRUCTIVE.iter().find(|w| name.contains(*w)) {
            Some(word) => Decision::Ask(format!("`{}` may {word} something for good", call.tool)),
            None => Decision::Allow,
        }
    }

    fn decide_after(call: &HookCall, outcome: &CallOutcome) -> AfterDecision {
        let result = match outcome {
            CallOutcome::Ok(_) => "ok",
            CallOutcome::Err(_) => "error",
        };
        log::log(
            log::Level::Info,
            "call finished",
            &[("tool", &call.tool), ("result", result)],
        );
        match outcome {
            CallOutcome::Ok(Output::Text(text)) => match mask(text) {
                Some(masked) => AfterDecision::Replace(CallOutcome::Ok(Output::Text(masked))),
                None => AfterDecision::Keep,
            },
            _ => AfterDecision::Keep,
        }
    }
}

toolhost_sdk::extension!(Guard);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_each_credential_to_its_end() {
        assert_eq!(
            mask("key AKIAIOSFODNN7EXAMPLE and ghp_abc\"x").as_deref(),
            Some("key [masked] and [masked]\"x")
        );
        assert_eq!(mask("nothing here"), None);
    }
}
