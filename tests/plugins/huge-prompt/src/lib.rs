//! An extension whose system prompt is 50 MB (rule C3): left out, with the
//! bound named in the log, instead of flooding the model's context.

use toolhost_sdk::prelude::*;

struct HugePrompt;

impl Extension for HugePrompt {
    fn system_prompt() -> Option<String> {
        Some("p".repeat(50 << 20))
    }
}

toolhost_sdk::extension!(HugePrompt);
