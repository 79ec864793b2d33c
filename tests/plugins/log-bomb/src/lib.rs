//! Floods the host's log through the `log` import (rule C3): one record
//! with 64 fields of 1 MB each (64 MiB at once, within a 64 MiB guest only
//! because the host lifts each string), and many small records that add up.

use toolhost_sdk::log::{Level, log};
use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn wide_record(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let value = "v".repeat(1 << 20);
    let names: Vec<String> = (0..16).map(|i| format!("f{i}")).collect();
    let fields: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), value.as_str())).collect();
    loop {
        log(Level::Info, "wide", &fields);
    }
}

fn long_message(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    log(Level::Info, &"m".repeat(8 << 20), &[]);
    Ok(Output::text("logged"))
}

fn many_records(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let line = "r".repeat(4000);
    for _ in 0..100_000 {
        log(Level::Info, &line, &[("k", "v")]);
    }
    Ok(Output::text("logged"))
}

fn polite(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    for i in 0..10 {
        log(Level::Info, &format!("line {i}"), &[("i", &i.to_string())]);
    }
    Ok(Output::text("logged politely"))
}

fn register(tools: &mut Tools) {
    tools.add("wide_record", "logs 16 MiB records for ever", wide_record);
    tools.add("long_message", "logs one 8 MiB message", long_message);
    tools.add("many_records", "logs 400 MB in 4 KB records", many_records);
    tools.add("polite", "logs ten short lines", polite);
}

toolhost_sdk::tool_plugin!(register);
