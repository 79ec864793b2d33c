//! An extension whose hooks exhaust resources (rules C1, W3): memory in the
//! before hook, the CPU in the after hook, the stack in its prompt. Each
//! fails that hook alone, and a failed before hook refuses the call.

use std::hint::black_box;

use toolhost_sdk::prelude::*;

struct HookHog;

fn depth(n: u64) -> u64 {
    if n == u64::MAX {
        return 0;
    }
    black_box(depth(black_box(n + 1))) + 1
}

impl Extension for HookHog {
    fn system_prompt() -> Option<String> {
        Some(depth(0).to_string())
    }

    fn before_call(call: &HookCall) -> Result<(), String> {
        if call.tool == "hog_memory" {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(black_box(vec![1u8; 1 << 20]));
            }
        }
        Ok(())
    }

    fn after_call(call: &HookCall, _: &CallOutcome) {
        if call.tool == "hog_cpu" {
            let mut x = 0u64;
            loop {
                x = black_box(x.wrapping_add(1));
            }
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn ok(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text("ran"))
}

fn register(tools: &mut Tools) {
    tools
        .add("hog_memory", "its before hook hoards memory", ok)
        .safe();
    tools.add("hog_cpu", "its after hook spins", ok).safe();
}

toolhost_sdk::extension!(HookHog, tools = register);
