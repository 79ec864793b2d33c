//! Results that cost the host more than their text suggests (rule C3): six
//! hundred thousand empty content blocks, and a result just past the output bound.

use toolhost_sdk::ContentBlock;
use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn empty_blocks(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::Blocks(
        (0..600_000)
            .map(|_| ContentBlock::Text(String::new()))
            .collect(),
    ))
}

/// More blocks than the engine copies out of a guest in one call.
fn million_blocks(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::Blocks(
        (0..1_000_000)
            .map(|_| ContentBlock::Text(String::new()))
            .collect(),
    ))
}

fn few_blocks(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::Blocks(vec![
        ContentBlock::Text("one".into()),
        ContentBlock::Text("two".into()),
    ]))
}

fn register(tools: &mut Tools) {
    tools.add("empty_blocks", "600 000 empty blocks", empty_blocks);
    tools.add("few_blocks", "two small blocks", few_blocks);
    tools.add("million_blocks", "a million empty blocks", million_blocks);
}

toolhost_sdk::tool_plugin!(register);
