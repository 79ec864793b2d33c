//! Attacks on time, memory, the stack, the host's log and the result size.
//! Each tool is named after what it does.

use std::hint::black_box;

use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct Megabytes {
    mb: usize,
}

#[derive(Deserialize, JsonSchema)]
struct Millis {
    ms: u64,
}

/// Waits `ms` in the host, then answers: a slow call that behaves.
fn nap(a: Millis, _: &CallInfo) -> Result<Output, ToolError> {
    std::thread::sleep(std::time::Duration::from_millis(a.ms));
    Ok(Output::text(format!("napped {}", a.ms)))
}

/// Waits 30 s in the host: blocked where epoch interruption cannot reach.
fn block(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    std::thread::sleep(std::time::Duration::from_secs(30));
    Ok(Output::text("woke up"))
}

fn spin(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let mut x: u64 = 0;
    loop {
        x = black_box(x.wrapping_add(1));
    }
}

fn grow(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(black_box(vec![1u8; 1 << 20]));
    }
}

fn depth(n: u64) -> u64 {
    if n == u64::MAX {
        return 0;
    }
    black_box(depth(black_box(n + 1))) + 1
}

fn recurse(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text(depth(0).to_string()))
}

fn panic(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let items: Vec<u8> = black_box(Vec::new());
    panic!("the plugin gave up: {} items", items.len())
}

fn trap(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    std::process::abort()
}

fn exit(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    std::process::exit(black_box(7))
}

fn flood(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let line = "x".repeat(1023);
    for _ in 0..(8 << 10) {
        println!("{line}");
        eprintln!("{line}");
    }
    for i in 0..100 {
        toolhost_sdk::log::info(&format!("log line {i}"));
    }
    Ok(Output::text("flooded"))
}

fn big(a: Megabytes, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text("y".repeat(a.mb << 20)))
}

fn bad_utf8(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    // SAFETY: deliberately not: the host must refuse invalid UTF-8 in a string.
    let text = unsafe { String::from_utf8_unchecked(vec![b'o', b'k', 0xff, 0xfe]) };
    Ok(Output::text(text))
}

static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Counts the calls this instance has served: with a fresh instance per
/// call, always 1.
fn counter(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    Ok(Output::text(n.to_string()))
}

fn fine(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text("still here"))
}

fn register(tools: &mut Tools) {
    tools.add("spin", "loops forever", spin);
    tools.add("nap", "waits `ms` milliseconds, then answers", nap);
    tools.add("block", "waits 30 s in a host call", block);
    tools.add("grow", "allocates until it dies", grow);
    tools.add("recurse", "recurses without end", recurse);
    tools.add("panic", "panics", panic);
    tools.add("trap", "aborts", trap);
    tools.add("exit", "exits with status 7", exit);
    tools.add(
        "flood",
        "floods stdout and stderr, and logs 100 lines",
        flood,
    );
    tools.add("big", "returns a result of `mb` megabytes", big);
    tools.add("bad_utf8", "returns a string that is not UTF-8", bad_utf8);
    tools.add("counter", "counts calls to this instance", counter);
    tools.add("fine", "behaves", fine).safe();
}

toolhost_sdk::tool_plugin!(register);
