//! The in-process backend: `ignore`'s parallel walker, `grep-searcher` and
//! `grep-regex` (what ripgrep is made of), with sorting at the end.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use async_trait::async_trait;
use cap_std::fs::Dir;
use ignore::{WalkBuilder, WalkState};

use super::filter::{PathFilter, optional};
use super::matcher::{file_matches, searcher};
use super::{
    FileAnswer, FileQuery, GrepAnswer, GrepQuery, RawMatch, SearchOps, answer_prefix,
    build_matcher, finish_files, finish_grep, relative_bytes, too_many,
};
use crate::workdir::{Workdir, dir_fd};
use toolhost_core::error::ToolError;

/// Searches in process. See the [module documentation](super) for the
/// answer's contract.
#[derive(Debug, Clone)]
pub struct NativeSearch {
    workdir: Arc<Workdir>,
    max_collected: usize,
}

impl NativeSearch {
    /// A backend over `workdir` that fails queries collecting more than
    /// `max_collected` entries.
    pub fn new(workdir: Arc<Workdir>, max_collected: usize) -> Self {
        Self {
            workdir,
            max_collected,
        }
    }
}

/// A walker root that names an open directory by descriptor, so the walk
/// starts exactly where the capability points, whatever happens to the
/// path meanwhile. The trailing `/` makes the kernel resolve the link.
/// Needs Linux's `/proc`.
pub(crate) fn fd_root(dir: &Dir) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}/", dir_fd(dir)))
}

/// The walker every in-process walk uses (see the module documentation of
/// `search` for the semantics it pins).
fn walker(root: &Path, hidden: bool) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(!hidden)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false);
    if hidden {
        b.filter_entry(|e| e.file_name() != ".git");
    }
    b
}

/// Sets the flag when dropped: the blocking walk stops when the call's
/// future is dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `f` on the blocking pool with a stop flag that is raised if the
/// caller goes away.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce(&AtomicBool) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(stop.clone());
    tokio::task::spawn_blocking(move || f(&stop))
        .await
        .map_err(|e| ToolError::failed(format!("search aborted: {e}")))?
}

/// Walks `root` in parallel and calls a per-thread visitor (made by
/// `each_thread`) with the relative path of every regular file `filter`
/// accepts. A visitor returning `false` stops the walk (and raises `stop`).
fn walk_regular_files<'s, F>(
    root: &'s Path,
    hidden: bool,
    filter: Option<&'s PathFilter>,
    stop: &'s AtomicBool,
    mut each_thread: impl FnMut() -> F,
) where
    F: FnMut(Vec<u8>) -> bool + Send + 's,
{
    walker(root, hidden).build_parallel().run(|| {
        let mut visit = each_thread();
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Some(rel) = entry
                .ok()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .and_then(|e| relative_bytes(e.path(), root))
            else {
                return WalkState::Continue;
            };
            if filter.is_some_and(|f| !f.matches(&rel)) {
                return WalkState::Continue;
            }
            if visit(rel) {
                WalkState::Continue
            } else {
                stop.store(true, Ordering::Relaxed);
                WalkState::Quit
            }
        })
    });
}

/// How a bounded, cancellable collection ended: past `max` is the
/// too-many error, a raised `stop` without that is a cancellation.
fn ended(count: &AtomicUsize, max: usize, stop: &AtomicBool, what: &str) -> Result<(), ToolError> {
    if count.load(Ordering::Relaxed) > max {
        return Err(too_many(max, what));
    }
    if stop.load(Ordering::Relaxed) {
        return Err(ToolError::Cancelled);
    }
    Ok(())
}

/// Every regular file under `root` that `filter` accepts, as relative path
/// bytes, in no particular order. Fails past `max` paths.
fn walk_files(
    root: &Path,
    hidden: bool,
    filter: Option<&PathFilter>,
    max: usize,
    stop: &AtomicBool,
) -> Result<Vec<Vec<u8>>, ToolError> {
    let (tx, rx) = mpsc::channel();
    let count = AtomicUsize::new(0);
    walk_regular_files(root, hidden, filter, stop, || {
        let (tx, count) = (tx.clone(), &count);
        move |rel| {
            if count.fetch_add(1, Ordering::Relaxed) >= max {
                return false;
            }
            let _ = tx.send(rel);
            true
        }
    });
    drop(tx);
    ended(&count, max, stop, "files")?;
    Ok(rx.into_iter().collect())
}

#[async_trait]
impl SearchOps for NativeSearch {
    async fn find_files(&self, query: &FileQuery) -> Result<FileAnswer, ToolError> {
        let filter = optional(query.pattern.as_deref(), "pattern")?;
        let dir = self.workdir.open_dir(&query.path, "path")?;
        let prefix = answer_prefix(&self.workdir, &query.path);
        let (hidden, limit, max) = (query.hidden, query.limit, self.max_collected);
        blocking(move |stop| {
            let paths = walk_files(&fd_root(&dir), hidden, filter.as_ref(), max, stop)?;
            Ok(finish_files(paths, limit, &prefix))
        })
        .await
    }

    async fn grep(&self, query: &GrepQuery) -> Result<GrepAnswer, ToolError> {
        let filter = optional(query.glob.as_deref(), "glob")?;
        let matcher = build_matcher(&query.pattern, query.ignore_case, query.literal)?;
        let dir = self.workdir.open_dir(&query.path, "path")?;
        let prefix = answer_prefix(&self.workdir, &query.path);
        let (query, max) = (query.clone(), self.max_collected);
        blocking(move |stop| {
            let root = fd_root(&dir);
            let (tx, rx) = mpsc::channel::<Vec<RawMatch>>();
            let count = AtomicUsize::new(0);
            walk_regular_files(&root, query.hidden, filter.as_ref(), stop, || {
                let (tx, matcher, count, dir) = (tx.clone(), matcher.clone(), &count, &dir);
                let mut searcher = searcher();
                move |rel| match file_matches(&mut searcher, &matcher, dir, &rel, count, max) {
                    None => false,
                    Some(found) => {
                        if !found.is_empty() {
                            let _ = tx.send(found);
                        }
                        true
                    }
                }
            });
            drop(tx);
            ended(&count, max, stop, "lines")?;
            let matches = rx.into_iter().flatten().collect();
            Ok(finish_grep(matches, &query, &prefix))
        })
        .await
    }
}

/// Searches `files` (relative to `dir`) in process on every core, for
/// backends that walk with something else.
pub(crate) fn grep_files(
    dir: &Dir,
    files: Vec<Vec<u8>>,
    matcher: &grep_regex::RegexMatcher,
    max: usize,
    stop: &AtomicBool,
) -> Result<Vec<RawMatch>, ToolError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let count = AtomicUsize::new(0);
    let files = &files;
    let parts: Vec<Vec<RawMatch>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (next, count, matcher) = (&next, &count, matcher.clone());
                s.spawn(move || {
                    let mut searcher = searcher();
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= files.len() || stop.load(Ordering::Relaxed) {
                            break;
                        }
                        match file_matches(&mut searcher, &matcher, dir, &files[i], count, max) {
                            None => break,
                            Some(found) => out.extend(found),
                        }
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect()
    });
    ended(&count, max, stop, "lines")?;
    Ok(parts.into_iter().flatten().collect())
}
