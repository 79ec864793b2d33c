//! An extension whose before hook misbehaves depending on the tool called:
//! it loops forever for `spin_me`, aborts for `trap_me`, and allows the
//! rest. The host must refuse the call when the hook fails (fail closed).

use toolhost_sdk::prelude::*;

struct BrokenGuard;

impl Extension for BrokenGuard {
    fn system_prompt() -> Option<String> {
        Some("Guarded by a fragile extension.".into())
    }

    fn before_call(call: &HookCall) -> Result<(), String> {
        match call.tool.as_str() {
            "spin_me" => {
                let mut x = 0u64;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "trap_me" => std::process::abort(),
            "refuse_me" => Err("this tool is off limits".into()),
            _ => Ok(()),
        }
    }
}

toolhost_sdk::extension!(BrokenGuard);
