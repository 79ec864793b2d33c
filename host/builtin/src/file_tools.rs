//! The file tools: `read_file`, `write_file`, `edit_file` and `list_dir`.
//! They talk only to a [`FileOps`]; confinement is that implementation's job.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::fs::{EntryKind, FileOps};
use super::text::cut_line;
use super::{BuiltinTool, constrain, schema_of, typed_tool};
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Tool, ToolSpec};

/// Caps of the file tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLimits {
    /// Largest file `read_file` and `edit_file` will load, in bytes.
    pub max_read_bytes: u64,
    /// Lines `read_file` returns when the call gives no `limit`.
    pub default_line_limit: usize,
    /// Longer lines are cut in `read_file` output, with a marker.
    pub max_line_chars: usize,
    /// Entries `list_dir` shows; the rest are counted.
    pub max_list_entries: usize,
}

impl Default for FileLimits {
    fn default() -> Self {
        Self {
            max_read_bytes: 10 * 1024 * 1024,
            default_line_limit: 2000,
            max_line_chars: 2000,
            max_list_entries: 1000,
        }
    }
}

/// The file tools over `ops` that `on` selects.
pub(crate) fn file_tools(
    ops: &Arc<dyn FileOps>,
    limits: &FileLimits,
    on: impl Fn(BuiltinTool) -> bool,
) -> Vec<Arc<dyn Tool>> {
    let mut tools = Vec::new();
    if on(BuiltinTool::ReadFile) {
        tools.push(read_file(ops.clone(), limits.clone()));
    }
    if on(BuiltinTool::ListDir) {
        tools.push(list_dir(ops.clone(), limits.clone()));
    }
    if on(BuiltinTool::WriteFile) {
        tools.push(write_file(ops.clone()));
    }
    if on(BuiltinTool::EditFile) {
        tools.push(edit_file(ops.clone(), limits.clone()));
    }
    tools
}

/// Decodes file bytes as text, refusing binary files: a NUL byte marks a
/// file as binary. Invalid UTF-8 elsewhere is replaced with U+FFFD.
pub(crate) fn decode_text(path: &str, bytes: Vec<u8>) -> Result<String, ToolError> {
    if let Some(at) = memchr_nul(&bytes) {
        return Err(ToolError::failed(format!(
            "`{path}` is a binary file (NUL byte at offset {at}); it cannot be shown as text"
        )));
    }
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

fn memchr_nul(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == 0)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// File path, relative to the working directory.
    #[schemars(length(min = 1))]
    path: String,
    /// First line to return (1-based). Default 1.
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    /// Number of lines to return.
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

fn read_file(ops: Arc<dyn FileOps>, limits: FileLimits) -> Arc<dyn Tool> {
    let spec = ToolSpec::new(
        "read_file",
        "Reads a text file in the working directory and returns its lines, numbered from 1. \
         Use offset and limit to page through long files. Binary files are refused.",
        {
            let mut schema = schema_of::<ReadArgs>();
            let default = limits.default_line_limit;
            constrain(
                &mut schema,
                "limit",
                "description",
                json!(format!("Number of lines to return. Default {default}.")),
            );
            schema
        },
    )
    .concurrency_safe(true)
    .idempotent(true);
    typed_tool(spec, move |_ctx, args: ReadArgs| {
        let (ops, limits) = (ops.clone(), limits.clone());
        async move {
            let bytes = ops.read(&args.path, limits.max_read_bytes).await?;
            let text = decode_text(&args.path, bytes)?;
            let offset = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(limits.default_line_limit).max(1);
            Ok(ToolOutput::text(number_lines(
                &text,
                offset,
                limit,
                limits.max_line_chars,
            )?))
        }
    })
}

/// `limit` lines of `text` from line `offset`, numbered like `cat -n`, with
/// a trailer saying where to continue when lines remain.
fn number_lines(
    text: &str,
    offset: usize,
    limit: usize,
    max_chars: usize,
) -> Result<String, ToolError> {
    if text.is_empty() {
        return Ok("[empty file]".into());
    }
    let total = text.lines().count();
    if offset > total {
        return Err(ToolError::invalid_arguments(
            "/offset",
            format!("offset {offset} is past the end: the file has {total} lines"),
        ));
    }
    let mut out = String::new();
    let mut last = offset - 1;
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        last = i + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        let _ = writeln!(out, "{:>6}\t{}", i + 1, cut_line(line, max_chars));
    }
    if last < total {
        let _ = write!(
            out,
            "[lines {offset}–{last} of {total}; continue with offset {}]",
            last + 1
        );
    } else if out.ends_with('\n') {
        out.pop();
    }
    Ok(out)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// File path, relative to the working directory.
    #[schemars(length(min = 1))]
    path: String,
    /// The complete new contents.
    content: String,
}

fn write_file(ops: Arc<dyn FileOps>) -> Arc<dyn Tool> {
    let spec = ToolSpec::new(
        "write_file",
        "Writes a file in the working directory, replacing it if it exists and creating \
         missing parent directories.",
        schema_of::<WriteArgs>(),
    )
    .concurrency_safe(false)
    .idempotent(true);
    typed_tool(spec, move |_ctx, args: WriteArgs| {
        let ops = ops.clone();
        async move {
            let n = args.content.len();
            ops.write(&args.path, args.content.into_bytes()).await?;
            Ok(ToolOutput::text(format!(
                "wrote {n} bytes to {}",
                args.path
            )))
        }
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// File path, relative to the working directory.
    #[schemars(length(min = 1))]
    path: String,
    /// The exact text to replace.
    #[schemars(length(min = 1))]
    old_text: String,
    /// The replacement text.
    new_text: String,
    /// Replace every occurrence. Default false.
    #[serde(default)]
    replace_all: bool,
}

fn edit_file(ops: Arc<dyn FileOps>, limits: FileLimits) -> Arc<dyn Tool> {
    let spec = ToolSpec::new(
        "edit_file",
        "Replaces exact text in a file. old_text must occur exactly once, unless replace_all \
         is true, in which case every occurrence is replaced. Include enough surrounding text \
         to make old_text unique.",
        schema_of::<EditArgs>(),
    )
    .concurrency_safe(false)
    .idempotent(false);
    typed_tool(spec, move |_ctx, args: EditArgs| {
        let (ops, limits) = (ops.clone(), limits.clone());
        async move {
            let edited = edit_text(&args, {
                let bytes = ops.read(&args.path, limits.max_read_bytes).await?;
                decode_text(&args.path, bytes)?
            })?;
            ops.write(&args.path, edited.text.into_bytes()).await?;
            Ok(ToolOutput::text(format!(
                "replaced {} occurrence{} in {}",
                edited.count,
                if edited.count == 1 { "" } else { "s" },
                args.path
            )))
        }
    })
}

struct Edited {
    text: String,
    count: usize,
}

fn edit_text(args: &EditArgs, text: String) -> Result<Edited, ToolError> {
    if args.old_text.is_empty() {
        return Err(ToolError::invalid_arguments(
            "/old_text",
            "old_text is empty",
        ));
    }
    if args.old_text == args.new_text {
        return Err(ToolError::invalid_arguments(
            "/new_text",
            "new_text is the same as old_text: nothing would change",
        ));
    }
    let count = text.matches(args.old_text.as_str()).count();
    match (count, args.replace_all) {
        (0, _) => Err(ToolError::failed(format!(
            "old_text was not found in `{}` (0 matches); it must match exactly, including whitespace",
            args.path
        ))),
        (1, _) | (_, true) => Ok(Edited {
            text: text.replace(args.old_text.as_str(), &args.new_text),
            count,
        }),
        (n, false) => Err(ToolError::failed(format!(
            "old_text matches {n} times in `{}`; include more surrounding text to make it unique, or set replace_all",
            args.path
        ))),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Directory, relative to the working directory. Default: the working directory.
    #[serde(default)]
    path: String,
}

fn list_dir(ops: Arc<dyn FileOps>, limits: FileLimits) -> Arc<dyn Tool> {
    let spec = ToolSpec::new(
        "list_dir",
        "Lists a directory in the working directory: one entry a line, directories with a \
         trailing `/`, symlinks with a trailing `@` (not followed), files with their size.",
        schema_of::<ListArgs>(),
    )
    .concurrency_safe(true)
    .idempotent(true);
    typed_tool(spec, move |_ctx, args: ListArgs| {
        let (ops, limits) = (ops.clone(), limits.clone());
        async move {
            let entries = ops.list(&args.path).await?;
            if entries.is_empty() {
                return Ok(ToolOutput::text("[empty directory]"));
            }
            let mut out = String::new();
            for e in entries.iter().take(limits.max_list_entries) {
                let _ = match e.kind {
                    EntryKind::Dir => writeln!(out, "{}/", e.name),
                    EntryKind::Symlink => writeln!(out, "{}@", e.name),
                    EntryKind::File => writeln!(out, "{}  ({} bytes)", e.name, e.size),
                    EntryKind::Other => writeln!(out, "{}  (special file)", e.name),
                };
            }
            let cut = entries.len().saturating_sub(limits.max_list_entries);
            if cut > 0 {
                let _ = write!(
                    out,
                    "[{cut} more entries not shown; {} in all]",
                    entries.len()
                );
            } else {
                out.pop();
            }
            Ok(ToolOutput::text(out))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(text: &str, old: &str, new: &str, all: bool) -> Result<(String, usize), ToolError> {
        let args = EditArgs {
            path: "f.txt".into(),
            old_text: old.into(),
            new_text: new.into(),
            replace_all: all,
        };
        edit_text(&args, text.into()).map(|e| (e.text, e.count))
    }

    #[test]
    fn b1_edit_replaces_a_unique_match() {
        assert_eq!(edit("a b c", "b", "x", false).unwrap(), ("a x c".into(), 1));
    }

    #[test]
    fn b1_edit_with_several_matches_says_how_many() {
        let err = edit("x x x", "x", "y", false).unwrap_err();
        assert!(err.to_string().contains("matches 3 times"), "{err}");
        assert_eq!(edit("x x x", "x", "y", true).unwrap(), ("y y y".into(), 3));
    }

    #[test]
    fn b1_edit_without_a_match_says_zero() {
        let err = edit("abc", "z", "y", false).unwrap_err();
        assert!(err.to_string().contains("0 matches"), "{err}");
    }

    #[test]
    fn b1_read_numbers_lines_and_pages() {
        let text = "one\ntwo\r\nthree\nfour\n";
        assert_eq!(
            number_lines(text, 2, 2, 100).unwrap(),
            "     2\ttwo\n     3\tthree\n[lines 2–3 of 4; continue with offset 4]"
        );
        assert_eq!(number_lines(text, 4, 10, 100).unwrap(), "     4\tfour");
        let err = number_lines(text, 9, 1, 100).unwrap_err();
        assert_eq!(err.kind(), toolhost_core::ErrorKind::InvalidArguments);
        assert!(err.to_string().contains("4 lines"), "{err}");
        assert_eq!(
            number_lines("abcdef", 1, 1, 3).unwrap(),
            "     1\tabc… [line cut: 6 chars]"
        );
    }

    #[test]
    fn b1_binary_files_are_refused() {
        let err = decode_text("img.png", vec![0x89, b'P', 0, 1]).unwrap_err();
        assert!(
            err.to_string().contains("`img.png` is a binary file"),
            "{err}"
        );
        assert_eq!(decode_text("t", b"caf\xc3\xa9".to_vec()).unwrap(), "café");
    }
}
