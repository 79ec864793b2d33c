//! Notes kept as files in the directory the host grants at `/notes`. The
//! plugin can reach nothing else: the host opens only its granted
//! directories, so `..`, absolute paths and symlinks out fail.

use std::fs;
use std::path::PathBuf;

use toolhost_sdk::prelude::*;

const ROOT: &str = "/notes";

/// Arguments naming one note.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoteName {
    /// The note's file name, such as `todo.md`.
    name: String,
}

/// Arguments of `note_write`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoteWrite {
    /// The note's file name, such as `todo.md`.
    name: String,
    /// The note's text.
    text: String,
}

/// `note_list` takes no arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

fn path(name: &str) -> PathBuf {
    PathBuf::from(ROOT).join(name)
}

fn note_read(a: NoteName, _: &CallInfo) -> Result<Output, ToolError> {
    let text = fs::read_to_string(path(&a.name))
        .map_err(|e| ToolError::failed(format!("cannot read `{}`: {e}", a.name)))?;
    Ok(Output::text(text))
}

fn note_write(a: NoteWrite, _: &CallInfo) -> Result<Output, ToolError> {
    fs::write(path(&a.name), &a.text)
        .map_err(|e| ToolError::failed(format!("cannot write `{}`: {e}", a.name)))?;
    Ok(Output::silent(format!(
        "wrote {} bytes to {}",
        a.text.len(),
        a.name
    )))
}

fn note_list(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let mut names: Vec<String> = fs::read_dir(ROOT)
        .map_err(|e| ToolError::failed(format!("cannot list notes: {e}")))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(Output::dual(
        format!("{} notes", names.len()),
        names.join("\n"),
    ))
}

fn register(tools: &mut Tools) {
    tools
        .add("note_read", "Reads a note", note_read)
        .safe()
        .idempotent()
        .read_only();
    tools
        .add("note_write", "Writes (replaces) a note", note_write)
        .exclusive()
        .idempotent()
        .destructive();
    tools
        .add("note_list", "Lists the notes", note_list)
        .safe()
        .idempotent()
        .read_only();
}

toolhost_sdk::tool_plugin!(register);
