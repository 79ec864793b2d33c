//! Hoards directory listings (rule C11): opens as many `read-directory`
//! streams on a huge granted directory as the host allows, reads a little
//! of each so that each holds what the host buffered for it, and keeps
//! them all open, so that a host that holds whole listings in memory per
//! stream runs out of memory.

use std::time::Duration;

use toolhost_sdk::prelude::*;
use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{Descriptor, DirectoryEntryStream};

/// The preopened directory the guest sees at `path`.
fn preopen(path: &str) -> Result<Descriptor, ToolError> {
    get_directories()
        .into_iter()
        .find_map(|(d, p)| (p == path).then_some(d))
        .ok_or_else(|| ToolError::failed(format!("{path} is not granted")))
}

#[derive(Deserialize, JsonSchema)]
struct Hoard {
    /// The granted directory, as the guest sees it.
    dir: String,
    /// Most listings to open (it stops earlier if refused).
    streams: u32,
    /// Entries to read from each listing before opening the next.
    read_each: u32,
    /// How long to hold the listings, in milliseconds.
    hold_ms: u64,
}

fn hoard(a: Hoard, _: &CallInfo) -> Result<Output, ToolError> {
    let dir = preopen(&a.dir)?;
    let mut held: Vec<DirectoryEntryStream> = Vec::new();
    let mut read = 0u64;
    let mut first_error = None;
    'open: for _ in 0..a.streams {
        let stream = match dir.read_directory() {
            Ok(s) => s,
            Err(e) => {
                first_error = Some(format!("{e:?}"));
                break;
            }
        };
        for _ in 0..a.read_each {
            match stream.read_directory_entry() {
                Ok(Some(_)) => read += 1,
                Ok(None) => break,
                Err(e) => {
                    first_error = Some(format!("{e:?}"));
                    break 'open;
                }
            }
        }
        held.push(stream);
    }
    std::thread::sleep(Duration::from_millis(a.hold_ms));
    Ok(Output::text(format!(
        "held {} listings, read {read} entries; then: {}",
        held.len(),
        first_error.unwrap_or_else(|| "no error".into())
    )))
}

#[derive(Deserialize, JsonSchema)]
struct List {
    /// The granted directory, as the guest sees it.
    dir: String,
    /// A subdirectory of it to list instead, if any (opened through the
    /// grant, like any path the guest names).
    sub: Option<String>,
}

fn list(a: List, _: &CallInfo) -> Result<Output, ToolError> {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let root = preopen(&a.dir)?;
    let dir = match &a.sub {
        Some(sub) => root
            .open_at(
                PathFlags::empty(),
                sub,
                OpenFlags::DIRECTORY,
                DescriptorFlags::READ,
            )
            .map_err(|e| ToolError::failed(format!("open {sub}: {e:?}")))?,
        None => root,
    };
    let stream = dir
        .read_directory()
        .map_err(|e| ToolError::failed(format!("read-directory: {e:?}")))?;
    let (mut count, mut bytes, mut dirs) = (0u64, 0u64, 0u64);
    let mut names = std::collections::HashSet::new();
    while let Some(entry) = stream
        .read_directory_entry()
        .map_err(|e| ToolError::failed(format!("read-directory-entry: {e:?}")))?
    {
        count += 1;
        bytes += entry.name.len() as u64;
        if matches!(
            entry.type_,
            wasip2::filesystem::types::DescriptorType::Directory
        ) {
            dirs += 1;
        }
        names.insert(entry.name);
    }
    Ok(Output::text(format!(
        "{count} entries, {} distinct, {bytes} name bytes, {dirs} directories",
        names.len()
    )))
}

#[derive(Deserialize, JsonSchema)]
struct Churn {
    /// The granted directory, as the guest sees it.
    dir: String,
    /// Listings to open, read one entry of, and drop, one after another.
    streams: u32,
}

fn churn(a: Churn, _: &CallInfo) -> Result<Output, ToolError> {
    let dir = preopen(&a.dir)?;
    for i in 0..a.streams {
        let stream = dir
            .read_directory()
            .map_err(|e| ToolError::failed(format!("listing {i}: {e:?}")))?;
        stream
            .read_directory_entry()
            .map_err(|e| ToolError::failed(format!("listing {i}: {e:?}")))?;
    }
    Ok(Output::text(format!(
        "opened and dropped {} listings",
        a.streams
    )))
}

fn register(tools: &mut Tools) {
    tools.add(
        "churn",
        "opens and drops directory listings one after another",
        churn,
    );
    tools.add(
        "hoard",
        "opens directory listings until refused and holds them",
        hoard,
    );
    tools
        .add("list", "lists a granted directory whole", list)
        .safe();
}

toolhost_sdk::tool_plugin!(register);
