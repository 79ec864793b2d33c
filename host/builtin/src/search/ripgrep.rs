//! The ripgrep backend: `rg --files` for file queries and `rg --json` for
//! content queries, run in the search directory, sorted here.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::external::BackendUnavailable;
use super::external::{collect_paths, locate, run_records, strip_dot};
use super::filter::optional;
use super::{
    FileAnswer, FileQuery, GrepAnswer, GrepQuery, RawMatch, SearchOps, answer_prefix,
    build_matcher, finish_files, finish_grep, too_many,
};
use crate::workdir::Workdir;
use toolhost_core::error::ToolError;

/// Flags that pin ripgrep to the semantics every backend shares (see the
/// module documentation of `search`).
const COMMON: &[&str] = &[
    "--no-config",
    "--no-require-git",
    "--no-ignore-parent",
    "--no-ignore-global",
    "--no-messages",
];

/// Searches with the `rg` program.
#[derive(Debug, Clone)]
pub struct RipgrepSearch {
    program: PathBuf,
    workdir: Arc<Workdir>,
    max_collected: usize,
}

impl RipgrepSearch {
    /// Finds `rg` on `PATH` and checks that it takes the flags this backend
    /// needs. The error says what is missing.
    pub fn new(workdir: Arc<Workdir>, max_collected: usize) -> Result<Self, BackendUnavailable> {
        Self::find(workdir, max_collected, None)
    }

    pub(crate) fn find(
        workdir: Arc<Workdir>,
        max_collected: usize,
        path: Option<&std::ffi::OsStr>,
    ) -> Result<Self, BackendUnavailable> {
        let program = locate(&["rg"], path, "ripgrep (`rg`)")?;
        Ok(Self {
            program,
            workdir,
            max_collected,
        })
    }

    fn common_args(hidden: bool) -> Vec<String> {
        let mut args: Vec<String> = COMMON.iter().map(|s| s.to_string()).collect();
        if hidden {
            args.extend(["--hidden".into(), "--glob=!.git".into()]);
        }
        args
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "lowercase")]
enum Message {
    Begin(IgnoredAny),
    Match {
        path: Data,
        lines: Data,
        line_number: Option<u64>,
    },
    Context(IgnoredAny),
    End {
        path: Data,
        binary_offset: Option<u64>,
    },
    Summary(IgnoredAny),
}

/// Text, or bytes that are not UTF-8 (base64).
#[derive(Deserialize)]
#[serde(untagged)]
enum Data {
    Text { text: String },
    Bytes { bytes: String },
}

impl Data {
    fn into_bytes(self) -> Result<Vec<u8>, ToolError> {
        match self {
            Self::Text { text } => Ok(text.into_bytes()),
            Self::Bytes { bytes } => base64::engine::general_purpose::STANDARD
                .decode(bytes)
                .map_err(|e| ToolError::failed(format!("ripgrep sent bad base64: {e}"))),
        }
    }
}

#[async_trait]
impl SearchOps for RipgrepSearch {
    async fn find_files(&self, query: &FileQuery) -> Result<FileAnswer, ToolError> {
        let filter = optional(query.pattern.as_deref(), "pattern")?;
        let dir = self.workdir.open_dir(&query.path, "path")?;
        let mut args = Self::common_args(query.hidden);
        args.extend(["--files".into(), "--null".into(), "--".into(), ".".into()]);
        let mut paths = Vec::new();
        run_records(
            &self.program,
            &args,
            &dir,
            0,
            collect_paths(&mut paths, filter.as_ref(), self.max_collected),
        )
        .await?;
        let prefix = answer_prefix(&self.workdir, &query.path);
        Ok(finish_files(paths, query.limit, &prefix))
    }

    async fn grep(&self, query: &GrepQuery) -> Result<GrepAnswer, ToolError> {
        let filter = optional(query.glob.as_deref(), "glob")?;
        // Compiled here too, so a bad pattern gets the same error as from
        // the other backends.
        build_matcher(&query.pattern, query.ignore_case, query.literal)?;
        let dir = self.workdir.open_dir(&query.path, "path")?;
        let mut args = Self::common_args(query.hidden);
        args.extend(["--json", "--no-mmap", "--encoding=none"].map(String::from));
        if query.ignore_case {
            args.push("--ignore-case".into());
        }
        if query.literal {
            args.push("--fixed-strings".into());
        }
        args.push(format!("--regexp={}", query.pattern));
        args.extend(["--".into(), ".".into()]);
        let (mut matches, mut pending) = (Vec::new(), Vec::<RawMatch>::new());
        run_records(&self.program, &args, &dir, b'\n', |rec| {
            let msg: Message = serde_json::from_slice(rec)
                .map_err(|e| ToolError::failed(format!("cannot read ripgrep's output: {e}")))?;
            match msg {
                Message::Match {
                    path,
                    lines,
                    line_number,
                } => {
                    let path = strip_dot(&path.into_bytes()?).to_vec();
                    if filter.as_ref().is_none_or(|f| f.matches(&path)) {
                        pending.push(RawMatch {
                            path,
                            line: line_number.unwrap_or(0),
                            text: lines.into_bytes()?,
                        });
                    }
                }
                Message::End {
                    path,
                    binary_offset,
                } => {
                    // ripgrep reports a file's messages together, from
                    // `begin` to `end`; a binary file's matches are dropped.
                    let path = path.into_bytes()?;
                    let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut pending)
                        .into_iter()
                        .partition(|m| m.path == strip_dot(&path));
                    pending = rest;
                    if binary_offset.is_none() {
                        matches.extend(mine);
                    }
                    if matches.len() > self.max_collected {
                        return Err(too_many(self.max_collected, "lines"));
                    }
                }
                Message::Begin(_) | Message::Context(_) | Message::Summary(_) => {}
            }
            Ok(())
        })
        .await?;
        let prefix = answer_prefix(&self.workdir, &query.path);
        Ok(finish_grep(matches, query, &prefix))
    }
}
