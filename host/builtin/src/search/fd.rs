//! The fd backend: `fd` (or Debian's `fdfind`) walks; file queries are
//! filtered and sorted here, content queries search fd's file list with the
//! in-process matcher, so the answers match the other backends'.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use super::external::BackendUnavailable;
use super::external::{collect_paths, locate, run_records};
use super::filter::optional;
use super::native::{blocking, grep_files};
use super::{
    FileAnswer, FileQuery, GrepAnswer, GrepQuery, SearchOps, answer_prefix, build_matcher,
    finish_files, finish_grep,
};
use crate::workdir::Workdir;
use toolhost_core::error::ToolError;

/// Searches with the `fd` program.
#[derive(Debug, Clone)]
pub struct FdSearch {
    program: PathBuf,
    workdir: Arc<Workdir>,
    max_collected: usize,
}

impl FdSearch {
    /// Finds `fd` (or `fdfind`) on `PATH` and checks that it takes the flags
    /// this backend needs. The error says what is missing.
    pub fn new(workdir: Arc<Workdir>, max_collected: usize) -> Result<Self, BackendUnavailable> {
        Self::find(workdir, max_collected, None)
    }

    pub(crate) fn find(
        workdir: Arc<Workdir>,
        max_collected: usize,
        path: Option<&std::ffi::OsStr>,
    ) -> Result<Self, BackendUnavailable> {
        let program = locate(&["fd", "fdfind"], path, "fd (`fd` or `fdfind`)")?;
        Ok(Self {
            program,
            workdir,
            max_collected,
        })
    }

    /// Every regular file under `dir` that fd lists, filtered by `pattern`.
    async fn list(
        &self,
        dir: &cap_std::fs::Dir,
        hidden: bool,
        pattern: Option<&str>,
        arg: &str,
    ) -> Result<Vec<Vec<u8>>, ToolError> {
        let filter = optional(pattern, arg)?;
        let mut args = vec![
            "--type=f",
            "--no-require-git",
            "--no-ignore-parent",
            "--print0",
            "--color=never",
        ];
        if hidden {
            args.extend(["--hidden", "--exclude=.git"]);
        }
        let mut paths = Vec::new();
        run_records(
            &self.program,
            &args,
            dir,
            0,
            collect_paths(&mut paths, filter.as_ref(), self.max_collected),
        )
        .await?;
        Ok(paths)
    }
}

#[async_trait]
impl SearchOps for FdSearch {
    async fn find_files(&self, query: &FileQuery) -> Result<FileAnswer, ToolError> {
        let dir = self.workdir.open_dir(&query.path, "path")?;
        let paths = self
            .list(&dir, query.hidden, query.pattern.as_deref(), "pattern")
            .await?;
        let prefix = answer_prefix(&self.workdir, &query.path);
        Ok(finish_files(paths, query.limit, &prefix))
    }

    async fn grep(&self, query: &GrepQuery) -> Result<GrepAnswer, ToolError> {
        let matcher = build_matcher(&query.pattern, query.ignore_case, query.literal)?;
        let dir = self.workdir.open_dir(&query.path, "path")?;
        let files = self
            .list(&dir, query.hidden, query.glob.as_deref(), "glob")
            .await?;
        let prefix = answer_prefix(&self.workdir, &query.path);
        let (query, max) = (query.clone(), self.max_collected);
        blocking(move |stop| {
            let matches = grep_files(&dir, files, &matcher, max, stop)?;
            Ok(finish_grep(matches, &query, &prefix))
        })
        .await
    }
}
