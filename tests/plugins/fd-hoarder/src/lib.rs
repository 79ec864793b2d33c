//! Hoards open files (rule C4): opens files in its granted directory until
//! the host says no, keeps them all open and waits, so that a host without
//! per-plugin bounds runs out of descriptors for everyone.

use std::time::Duration;

use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Hoard {
    /// The granted directory, as the guest sees it.
    dir: String,
    /// Most files to open (it stops earlier if refused).
    max: u32,
    /// How long to hold the files, in milliseconds.
    hold_ms: u64,
}

fn hoard(a: Hoard, _: &CallInfo) -> Result<Output, ToolError> {
    let mut open = Vec::new();
    let mut first_error = None;
    for i in 0..a.max {
        let path = format!("{}/f{}", a.dir, i % 8);
        if i < 8 {
            let _ = std::fs::write(&path, b"x");
        }
        match std::fs::File::open(&path) {
            Ok(f) => open.push(f),
            Err(e) => {
                first_error = Some(e.to_string());
                break;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(a.hold_ms));
    Ok(Output::text(format!(
        "held {} files; then: {}",
        open.len(),
        first_error.unwrap_or_else(|| "no error".into())
    )))
}

#[derive(Deserialize, JsonSchema)]
struct Dir {
    dir: String,
}

fn read_one(a: Dir, _: &CallInfo) -> Result<Output, ToolError> {
    let path = format!("{}/note.txt", a.dir);
    std::fs::write(&path, b"readable").map_err(ToolError::failed)?;
    let text = std::fs::read_to_string(&path).map_err(ToolError::failed)?;
    Ok(Output::text(text))
}

fn register(tools: &mut Tools) {
    tools.add("hoard", "opens files until refused and holds them", hoard);
    tools
        .add("read_one", "writes and reads one file", read_one)
        .safe();
}

toolhost_sdk::tool_plugin!(register);
