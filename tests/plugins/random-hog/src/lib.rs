//! Asks the host for more than it should hand over in one host call: a
//! terabyte of random bytes (or any number), and a stream read of 2^63 bytes. Each is
//! refused by the host's own per-call bounds, failing that call only.

use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn random(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let bytes = wasip2::random::random::get_random_bytes(1 << 40);
    Ok(Output::text(format!("got {} bytes", bytes.len())))
}

fn insecure(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let bytes = wasip2::random::insecure::get_insecure_random_bytes(u64::MAX);
    Ok(Output::text(format!("got {} bytes", bytes.len())))
}

#[derive(Deserialize, JsonSchema)]
struct Bytes {
    /// How many random bytes to ask for in one host call.
    bytes: u64,
}

fn random_bytes(a: Bytes, _: &CallInfo) -> Result<Output, ToolError> {
    let bytes = wasip2::random::random::get_random_bytes(a.bytes);
    Ok(Output::text(format!("got {} bytes", bytes.len())))
}

fn stdin(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let input = wasip2::cli::stdin::get_stdin();
    let got = input.blocking_read(1 << 63);
    Ok(Output::text(format!(
        "read {:?} bytes",
        got.map(|b| b.len())
    )))
}

fn register(tools: &mut Tools) {
    tools.add("random", "asks for a terabyte of random bytes", random);
    tools.add("insecure", "asks for 2^64 insecure random bytes", insecure);
    tools.add(
        "random_bytes",
        "asks for as many random bytes as told",
        random_bytes,
    );
    tools.add("stdin", "reads 2^63 bytes from stdin", stdin);
}

toolhost_sdk::tool_plugin!(register);
