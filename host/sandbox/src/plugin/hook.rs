//! [`WasmHook`]: an extension-plugin's before and after hooks (rule E4),
//! and the checks of what the guest decides. The checks run outside the
//! sandbox: a rewrite or a replacement from a plugin whose policy grants
//! only veto refuses the call (fail closed), rewritten arguments must be a
//! JSON object, and every text and output the guest hands back is bounded
//! like a tool's (rule C3).

use std::sync::Arc;

use async_trait::async_trait;
use toolhost_core::error::{Rejection, ToolError};
use toolhost_core::hook::{AfterDecision, AfterHook, BeforeHook, CallInfo, Decision};
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::Arguments;

use crate::bindings::output_from_guest;
use crate::bindings::v03::toolhost::plugin::types;
use crate::lazy::{LazyRuntime, check_message};
use crate::policy::{HookPower, PluginPolicy};

/// An extension-plugin's before and after hooks. What the guest decides is
/// checked here, outside the sandbox: a rewrite or a replacement from a
/// plugin whose policy grants only veto refuses the call (fail closed), and
/// everything the guest hands back is bounded like a tool's result.
pub(super) struct WasmHook(pub(super) Arc<LazyRuntime>);

fn hook_call(call: &CallInfo) -> types::HookCall {
    types::HookCall {
        tool: call.tool().to_owned(),
        arguments: call.arguments.as_str().to_owned(),
        call_id: call.call_id.to_string(),
    }
}

impl WasmHook {
    fn may_rewrite(&self) -> bool {
        may_rewrite(&self.0.policy)
    }

    /// Runs the guest's `before-call`, as a 0.2 decision.
    async fn run_before(&self, call: &CallInfo) -> Result<types::BeforeDecision, ToolError> {
        let rt = self.0.get().await?;
        rt.before_call(&hook_call(call)).await
    }

    /// Runs the guest's `after-call`, as a 0.2 decision.
    async fn run_after(
        &self,
        call: &CallInfo,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> Result<types::AfterDecision, ToolError> {
        let rt = self.0.get().await?;
        rt.after_call(&hook_call(call), outcome).await
    }
}

fn may_rewrite(policy: &PluginPolicy) -> bool {
    policy.hooks == HookPower::Rewrite
}

/// Why a change the guest of `plugin` asked for is refused under a
/// veto-only policy.
fn forbidden(plugin: &str, what: &str) -> String {
    format!(
        "extension `{plugin}` tried to {what}, and its policy lets its hooks only observe, reject and ask (grant `hooks = \"rewrite\"` to allow it)"
    )
}

/// The host's decision for the before decision of `plugin`'s guest,
/// checked against its `policy` and bounds: a rewrite under a veto-only
/// policy, or into anything but a JSON object, rejects the call; a reason
/// past the message bound is an error.
fn check_before(
    plugin: &str,
    policy: &PluginPolicy,
    d: types::BeforeDecision,
) -> Result<Decision, ToolError> {
    let message = |what: &str, text| check_message(plugin, &policy.bounds, what, text);
    Ok(match d {
        types::BeforeDecision::Allow => Decision::Allow,
        types::BeforeDecision::Reject(reason) => {
            Decision::reject(message("a rejection reason", reason)?)
        }
        types::BeforeDecision::Ask(reason) => Decision::ask(message("an approval reason", reason)?),
        types::BeforeDecision::Rewrite(_) if !may_rewrite(policy) => {
            Decision::reject(forbidden(plugin, "rewrite the arguments"))
        }
        types::BeforeDecision::Rewrite(text) => match Arguments::parse(&text) {
            Ok(args) if args.as_value().is_object() => Decision::Rewrite(args),
            Ok(_) => Decision::reject(format!(
                "extension `{plugin}` rewrote the arguments into JSON that is not an object"
            )),
            Err(e) => Decision::reject(format!(
                "extension `{plugin}` rewrote the arguments into something that is not acceptable: {e}"
            )),
        },
    })
}

/// The host's decision for the after decision of `plugin`'s guest, checked
/// against its `policy` and bounds: a replacement under a veto-only policy
/// fails the call; a replacement error past the message bound, or an
/// output the host refuses, is an error.
fn check_after(
    plugin: &str,
    policy: &PluginPolicy,
    d: types::AfterDecision,
) -> Result<AfterDecision, ToolError> {
    Ok(match d {
        types::AfterDecision::Keep => AfterDecision::Keep,
        types::AfterDecision::Replace(_) if !may_rewrite(policy) => AfterDecision::Replace(Err(
            ToolError::failed(forbidden(plugin, "replace the result")),
        )),
        types::AfterDecision::Replace(types::CallOutcome::Err(message)) => {
            AfterDecision::Replace(Err(ToolError::failed(check_message(
                plugin,
                &policy.bounds,
                "a replacement error",
                message,
            )?)))
        }
        types::AfterDecision::Replace(types::CallOutcome::Ok(out)) => {
            let out = output_from_guest(out, policy.max_output_bytes).map_err(|fault| {
                ToolError::Sandbox {
                    plugin: plugin.to_owned(),
                    fault,
                }
            })?;
            AfterDecision::Replace(Ok(out))
        }
    })
}

#[async_trait]
impl BeforeHook for WasmHook {
    fn name(&self) -> &str {
        &self.0.name
    }

    /// Fails closed: if the hook traps, overruns its time, cannot run, or
    /// hands back what the host refuses, the call is rejected, and the
    /// reason names the extension.
    async fn before(&self, call: &CallInfo) -> Decision {
        let decision = self
            .run_before(call)
            .await
            .and_then(|d| check_before(&self.0.name, &self.0.policy, d));
        decision.unwrap_or_else(|fault| {
            Decision::Reject(Rejection::new(format!(
                "extension `{}` failed, so the call is refused: {fault}",
                self.0.name
            )))
        })
    }
}

#[async_trait]
impl AfterHook for WasmHook {
    fn name(&self) -> &str {
        &self.0.name
    }

    /// A hook that fails is logged. For a veto-only plugin the outcome stays
    /// as it was: it could only observe. For a plugin granted rewriting the
    /// call fails instead (fail closed), since the hook may have been there
    /// to redact the result. A replacement the host refuses fails the call.
    async fn after(
        &self,
        call: &CallInfo,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> AfterDecision {
        match self.run_after(call, outcome).await {
            Ok(d) => check_after(&self.0.name, &self.0.policy, d).unwrap_or_else(|e| {
                AfterDecision::Replace(Err(ToolError::failed(format!(
                    "extension `{}` replaced the result with one the host refuses: {e}",
                    self.0.name
                ))))
            }),
            Err(e) => {
                tracing::warn!(plugin = %self.0.name, tool = call.tool(), error = %e, "an extension's after hook failed");
                if self.may_rewrite() {
                    AfterDecision::Replace(Err(ToolError::failed(format!(
                        "extension `{}` failed after the call, so its result is withheld: {e}",
                        self.0.name
                    ))))
                } else {
                    AfterDecision::Keep
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_core::error::SandboxFault;

    const PLUGIN: &str = "guard";

    fn veto() -> PluginPolicy {
        PluginPolicy::default()
    }

    fn rewrite() -> PluginPolicy {
        PluginPolicy {
            hooks: HookPower::Rewrite,
            ..PluginPolicy::default()
        }
    }

    fn rejection(decision: Decision) -> String {
        match decision {
            Decision::Reject(r) => r.reason,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    fn replaced_error(decision: AfterDecision) -> String {
        match decision {
            AfterDecision::Replace(Err(e)) => e.to_string(),
            other => panic!("expected a replaced error, got {other:?}"),
        }
    }

    #[test]
    fn e4_allow_reject_and_ask_pass_under_either_policy() {
        for policy in [veto(), rewrite()] {
            let allow = check_before(PLUGIN, &policy, types::BeforeDecision::Allow).unwrap();
            assert!(matches!(allow, Decision::Allow), "{allow:?}");
            let reject =
                check_before(PLUGIN, &policy, types::BeforeDecision::Reject("no".into())).unwrap();
            assert!(rejection(reject).contains("no"));
            let ask =
                check_before(PLUGIN, &policy, types::BeforeDecision::Ask("sure?".into())).unwrap();
            assert!(
                matches!(&ask, Decision::Ask { reason } if reason == "sure?"),
                "{ask:?}"
            );
            let keep = check_after(PLUGIN, &policy, types::AfterDecision::Keep).unwrap();
            assert!(matches!(keep, AfterDecision::Keep), "{keep:?}");
        }
    }

    #[test]
    fn e4_a_veto_only_hook_that_rewrites_rejects_the_call() {
        let d = check_before(
            PLUGIN,
            &veto(),
            types::BeforeDecision::Rewrite(r#"{"a":1}"#.into()),
        )
        .unwrap();
        let reason = rejection(d);
        assert!(reason.contains("`guard`"), "{reason}");
        assert!(reason.contains("hooks = \"rewrite\""), "{reason}");
    }

    #[test]
    fn e4_a_veto_only_hook_that_replaces_the_result_fails_the_call() {
        for outcome in [
            types::CallOutcome::Ok(types::ToolOutput::Text("new".into())),
            types::CallOutcome::Err("new".into()),
        ] {
            let d = check_after(PLUGIN, &veto(), types::AfterDecision::Replace(outcome)).unwrap();
            let error = replaced_error(d);
            assert!(error.contains("replace the result"), "{error}");
        }
    }

    #[test]
    fn e4_a_rewriting_hook_may_rewrite_and_replace() {
        let d = check_before(
            PLUGIN,
            &rewrite(),
            types::BeforeDecision::Rewrite(r#"{"a":1}"#.into()),
        )
        .unwrap();
        match d {
            Decision::Rewrite(args) => assert_eq!(args.as_value(), &serde_json::json!({"a": 1})),
            other => panic!("expected a rewrite, got {other:?}"),
        }
        let d = check_after(
            PLUGIN,
            &rewrite(),
            types::AfterDecision::Replace(types::CallOutcome::Ok(types::ToolOutput::Text(
                "redacted".into(),
            ))),
        )
        .unwrap();
        match d {
            AfterDecision::Replace(Ok(out)) => assert_eq!(out.llm_text(), "redacted"),
            other => panic!("expected a replaced output, got {other:?}"),
        }
        let d = check_after(
            PLUGIN,
            &rewrite(),
            types::AfterDecision::Replace(types::CallOutcome::Err("withheld".into())),
        )
        .unwrap();
        assert_eq!(replaced_error(d), ToolError::failed("withheld").to_string());
    }

    #[test]
    fn p7_rewritten_arguments_that_are_not_a_json_object_reject_the_call() {
        for text in ["[1, 2]", "not json"] {
            let d = check_before(
                PLUGIN,
                &rewrite(),
                types::BeforeDecision::Rewrite(text.into()),
            )
            .unwrap();
            let reason = rejection(d);
            assert!(reason.contains("rewrote the arguments"), "{reason}");
        }
    }

    #[test]
    fn c3_a_reason_past_the_message_bound_is_a_limit_fault() {
        let mut policy = rewrite();
        policy.bounds.max_message_bytes = 4;
        let long = "x".repeat(5);
        for d in [
            types::BeforeDecision::Reject(long.clone()),
            types::BeforeDecision::Ask(long.clone()),
        ] {
            let err = check_before(PLUGIN, &policy, d).unwrap_err();
            assert!(
                matches!(&err, ToolError::Sandbox { plugin, fault: SandboxFault::LimitExceeded(_) } if plugin == PLUGIN),
                "{err:?}"
            );
        }
        let err = check_after(
            PLUGIN,
            &policy,
            types::AfterDecision::Replace(types::CallOutcome::Err(long)),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                ToolError::Sandbox {
                    fault: SandboxFault::LimitExceeded(_),
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn c3_a_replacement_past_the_output_bound_is_refused() {
        let mut policy = rewrite();
        policy.max_output_bytes = 4;
        let err = check_after(
            PLUGIN,
            &policy,
            types::AfterDecision::Replace(types::CallOutcome::Ok(types::ToolOutput::Text(
                "x".repeat(5),
            ))),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::Sandbox { plugin, .. } if plugin == PLUGIN),
            "{err:?}"
        );
    }
}
