//! Running an external search program (ripgrep, fd) in the search
//! directory and streaming its output, record by record.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use cap_std::fs::Dir;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio::process::Command;

use super::filter::PathFilter;
use super::too_many;
use crate::process::{GroupGuard, accepts_flags, clean_env, confine, find_program};
use toolhost_core::error::ToolError;

/// Finds the first of `names` on `path` (the host's `PATH` if `None`) that
/// accepts `--no-require-git` and `--no-ignore-parent`; the error names
/// `what` and says what is missing.
pub(crate) fn locate(
    names: &[&str],
    path: Option<&OsStr>,
    what: &'static str,
) -> Result<PathBuf, BackendUnavailable> {
    let program =
        find_program(names, path).ok_or(BackendUnavailable::NotOnPath { program: what })?;
    if !accepts_flags(&program, &["--no-require-git", "--no-ignore-parent"]) {
        return Err(BackendUnavailable::TooOld {
            program: what,
            path: program,
        });
    }
    Ok(program)
}

/// Why an external search backend cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendUnavailable {
    /// The program is not on `PATH`.
    #[error("{program} is not on PATH")]
    NotOnPath {
        /// Which program, as a person would name it.
        program: &'static str,
    },
    /// The program found does not take the flags the backend needs.
    #[error("`{}` does not accept --no-require-git; a newer {program} is needed", path.display())]
    TooOld {
        /// Which program, as a person would name it.
        program: &'static str,
        /// Where it was found.
        path: PathBuf,
    },
}

/// Runs `program args` with `dir` as its working directory and a clean
/// environment, calls `each` with every `sep`-terminated record of its
/// standard output (without the separator), and checks how it exited.
///
/// An error from `each` stops the program (its whole process group) and is
/// returned. Exit codes 0 and 1 are success (1 is "nothing found"); any
/// other exit with something on standard error is a failure quoting it.
pub(crate) async fn run_records<I, S>(
    program: &Path,
    args: I,
    dir: &Dir,
    sep: u8,
    mut each: impl FnMut(&[u8]) -> Result<(), ToolError>,
) -> Result<(), ToolError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let name = program.display();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    clean_env(&mut cmd);
    confine(&mut cmd, Some(dir));
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolError::failed(format!("cannot start `{name}`: {e}")))?;
    let mut guard = GroupGuard::new(child.id());
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let errors = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut buf).await;
        buf
    });
    let mut out =
        BufReader::with_capacity(256 * 1024, child.stdout.take().expect("stdout is piped"));
    let mut record = Vec::new();
    loop {
        record.clear();
        let n = out
            .read_until(sep, &mut record)
            .await
            .map_err(|e| ToolError::failed(format!("reading `{name}`'s output: {e}")))?;
        if n == 0 {
            break;
        }
        let rec = record.strip_suffix(&[sep]).unwrap_or(&record);
        each(rec)?;
    }
    let status = child
        .wait()
        .await
        .map_err(|e| ToolError::failed(format!("waiting for `{name}`: {e}")))?;
    guard.disarm();
    let stderr = errors.await.unwrap_or_default();
    match status.code() {
        Some(0 | 1) => Ok(()),
        Some(_) if stderr.is_empty() => Ok(()),
        code => Err(ToolError::failed(format!(
            "`{name}` failed ({}): {}",
            code.map_or("killed by a signal".into(), |c| format!("exit code {c}")),
            String::from_utf8_lossy(&stderr).trim()
        ))),
    }
}

/// A record handler that collects the paths (records, without a leading
/// `./`) that `filter` accepts, failing past `max`.
pub(crate) fn collect_paths<'a>(
    paths: &'a mut Vec<Vec<u8>>,
    filter: Option<&'a PathFilter>,
    max: usize,
) -> impl FnMut(&[u8]) -> Result<(), ToolError> + 'a {
    move |rec| {
        let rel = strip_dot(rec);
        if filter.is_none_or(|f| f.matches(rel)) {
            if paths.len() >= max {
                return Err(too_many(max, "files"));
            }
            paths.push(rel.to_vec());
        }
        Ok(())
    }
}

/// `rec` without a leading `./`.
pub(crate) fn strip_dot(rec: &[u8]) -> &[u8] {
    rec.strip_prefix(b"./").unwrap_or(rec)
}
