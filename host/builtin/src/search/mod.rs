//! Search (rule B4): file queries (`glob`) and content queries (`grep`)
//! behind the [`SearchOps`] trait, with three local backends that give
//! byte-identical answers to the same query.
//!
//! # The answer, whatever the backend
//!
//! - The search starts at a directory inside the working directory, opened
//!   through its capability handle; paths in answers are relative to the
//!   working directory, `/`-separated.
//! - Only regular files are listed or searched. Symlinks are neither
//!   followed nor listed, so a walk never leaves the directory it started in.
//! - `.gitignore` files apply whether or not the tree is a git repository
//!   (`--no-require-git` / `require_git(false)`), as do `.ignore` files and
//!   `.git/info/exclude`. Ignore files above the search directory and
//!   per-user global ignore files are never read. (`.rgignore` and
//!   `.fdignore` are read by ripgrep and fd only: a tree that has them may get
//!   different answers from those backends.)
//! - Hidden files and directories (names starting with `.`) are skipped
//!   unless the query asks for them; `.git` is skipped even then.
//! - A file containing a NUL byte is binary: it is listed by `glob` but never
//!   searched by `grep`, and none of its lines appear in an answer.
//! - `glob` patterns match the path relative to the search directory; a
//!   pattern without `/` matches the file name at any depth. `*` does not
//!   cross `/`; `**` does.
//! - Paths are sorted by their bytes; grep matches by path, then line
//!   number. The limit is applied after sorting, so a truncated answer is
//!   always the same prefix, and the answer says how many were cut.
//! - A query that collects more than a configured number of entries fails as
//!   a whole instead of returning an arbitrary subset.
//!
//! # Backends
//!
//! - [`SearchBackend::Native`]: in process, ripgrep's own crates (`ignore`'s
//!   parallel walker, `grep-searcher`, `grep-regex`), sorted at the end.
//! - [`SearchBackend::Ripgrep`]: `rg --files` and `rg --json`.
//! - [`SearchBackend::Fd`]: `fd` (or Debian's `fdfind`) for the file walk;
//!   grep is fd's file list searched by the in-process matcher.
//!
//! An external backend whose program is missing (or too old to take
//! `--no-require-git`) falls back to the native backend, with a logged note.

use std::fmt::Write as _;
use std::path::{Component, Path};
use std::sync::Arc;

use async_trait::async_trait;

use super::workdir::Workdir;
use toolhost_core::error::ToolError;

mod external;
mod fd;
mod filter;
mod matcher;
mod native;
mod ripgrep;
mod tools;

pub use external::BackendUnavailable;
pub use fd::FdSearch;
pub use native::NativeSearch;
pub use ripgrep::RipgrepSearch;
pub(crate) use tools::search_tools;

use filter::build_matcher;

/// A file query: regular files under `path` whose relative path matches
/// `pattern`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileQuery {
    /// Directory to search, relative to the working directory (`""` for the
    /// working directory itself).
    pub path: String,
    /// Glob pattern; `None` lists every file.
    pub pattern: Option<String>,
    /// Include hidden files and directories (`.git` excepted).
    pub hidden: bool,
    /// Paths to return at most.
    pub limit: usize,
}

/// A content query: lines matching `pattern` in the regular, non-binary
/// files under `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepQuery {
    /// Directory to search, relative to the working directory.
    pub path: String,
    /// Regular expression (Rust `regex` syntax), or a literal string.
    pub pattern: String,
    /// Only search files whose relative path matches this glob.
    pub glob: Option<String>,
    /// Match case-insensitively.
    pub ignore_case: bool,
    /// Treat `pattern` as a literal string.
    pub literal: bool,
    /// Include hidden files and directories (`.git` excepted).
    pub hidden: bool,
    /// Matches to return at most.
    pub limit: usize,
    /// Longer lines are cut to this many characters, with a marker.
    pub max_line_chars: usize,
}

/// The answer to a [`FileQuery`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAnswer {
    /// The first `limit` paths in byte order.
    pub paths: Vec<String>,
    /// How many paths matched in all.
    pub total: usize,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepMatch {
    /// The file, relative to the working directory.
    pub path: String,
    /// The line number, from 1.
    pub line: u64,
    /// The line, without its terminator, lossily decoded, possibly cut.
    pub text: String,
}

/// The answer to a [`GrepQuery`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepAnswer {
    /// The first `limit` matches, by path then line.
    pub matches: Vec<GrepMatch>,
    /// How many lines matched in all.
    pub total: usize,
}

/// The search operations behind `glob` and `grep`. Implementations must
/// keep the contract of the [module documentation](self): the same query
/// gives the same answer, sorted, truncated after sorting, confined to the
/// working directory. Methods may be called concurrently.
#[async_trait]
pub trait SearchOps: Send + Sync {
    /// Answers a file query.
    async fn find_files(&self, query: &FileQuery) -> Result<FileAnswer, ToolError>;

    /// Answers a content query.
    async fn grep(&self, query: &GrepQuery) -> Result<GrepAnswer, ToolError>;
}

/// Which local implementation answers searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchBackend {
    /// In process (the default).
    #[default]
    Native,
    /// The `rg` program.
    Ripgrep,
    /// The `fd` (or `fdfind`) program for walks, in-process matching.
    Fd,
}

/// Caps of the search tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchLimits {
    /// Results returned when the call gives no `limit`.
    pub default_limit: usize,
    /// The largest `limit` a call may ask for.
    pub max_limit: usize,
    /// A query collecting more entries than this fails (before sorting)
    /// rather than use unbounded memory.
    pub max_collected: usize,
    /// Matching lines are cut to this many characters.
    pub max_line_chars: usize,
}

impl Default for SearchLimits {
    fn default() -> Self {
        Self {
            default_limit: 200,
            max_limit: 5000,
            max_collected: 1_000_000,
            max_line_chars: 300,
        }
    }
}

/// The local implementation of `backend` over `workdir`; an external
/// backend whose program is missing falls back to [`NativeSearch`].
pub fn local_search(
    backend: SearchBackend,
    workdir: Arc<Workdir>,
    max_collected: usize,
) -> Arc<dyn SearchOps> {
    select(backend, workdir, max_collected, None).0
}

/// [`local_search`] with programs looked up on `path` (the host's `PATH`
/// if `None`); also says which backend was chosen.
fn select(
    backend: SearchBackend,
    workdir: Arc<Workdir>,
    max_collected: usize,
    path: Option<&std::ffi::OsStr>,
) -> (Arc<dyn SearchOps>, SearchBackend) {
    let external: Result<Arc<dyn SearchOps>, Option<BackendUnavailable>> = match backend {
        SearchBackend::Native => Err(None),
        SearchBackend::Ripgrep => RipgrepSearch::find(workdir.clone(), max_collected, path)
            .map(|rg| Arc::new(rg) as Arc<dyn SearchOps>)
            .map_err(Some),
        SearchBackend::Fd => FdSearch::find(workdir.clone(), max_collected, path)
            .map(|fd| Arc::new(fd) as _)
            .map_err(Some),
    };
    match external {
        Ok(ops) => (ops, backend),
        Err(why) => {
            if let Some(why) = why {
                tracing::warn!(target: "toolhost::search", "{why}; using the in-process search backend");
            }
            let native = NativeSearch::new(workdir, max_collected);
            (Arc::new(native), SearchBackend::Native)
        }
    }
}

/// A match as a backend collects it, before sorting and decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawMatch {
    /// Path relative to the search directory.
    pub(crate) path: Vec<u8>,
    pub(crate) line: u64,
    /// The line, possibly with its terminator.
    pub(crate) text: Vec<u8>,
}

/// Error for a query that collected more than `max` entries.
pub(crate) fn too_many(max: usize, what: &str) -> ToolError {
    ToolError::failed(format!(
        "the query matched more than {max} {what}; narrow the pattern or the path"
    ))
}

/// `prefix` (the search directory, relative to the working directory, with
/// `.` components dropped) followed by `/`, or empty for the working
/// directory itself.
pub(crate) fn answer_prefix(workdir: &Workdir, path: &str) -> String {
    let mut prefix = String::new();
    for c in workdir.relative(path).components() {
        match c {
            Component::CurDir => {}
            other => {
                prefix.push_str(&other.as_os_str().to_string_lossy());
                prefix.push('/');
            }
        }
    }
    prefix
}

/// Sorts `paths` by bytes, keeps `limit` and prefixes them.
pub(crate) fn finish_files(mut paths: Vec<Vec<u8>>, limit: usize, prefix: &str) -> FileAnswer {
    paths.sort_unstable();
    let total = paths.len();
    paths.truncate(limit);
    FileAnswer {
        paths: paths
            .into_iter()
            .map(|p| format!("{prefix}{}", String::from_utf8_lossy(&p)))
            .collect(),
        total,
    }
}

/// Sorts matches by path then line, keeps `limit`, strips line terminators,
/// cuts long lines and prefixes paths.
pub(crate) fn finish_grep(
    mut matches: Vec<RawMatch>,
    query: &GrepQuery,
    prefix: &str,
) -> GrepAnswer {
    matches.sort_unstable_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    let total = matches.len();
    matches.truncate(query.limit);
    GrepAnswer {
        matches: matches
            .into_iter()
            .map(|m| GrepMatch {
                path: format!("{prefix}{}", String::from_utf8_lossy(&m.path)),
                line: m.line,
                text: cut_line(&m.text, query.max_line_chars),
            })
            .collect(),
        total,
    }
}

fn cut_line(text: &[u8], max_chars: usize) -> String {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    crate::text::cut_line(&String::from_utf8_lossy(text), max_chars).into_owned()
}

/// Relative path bytes of `path` under `root` (which must be a prefix).
pub(crate) fn relative_bytes(path: &Path, root: &Path) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt as _;
    path.strip_prefix(root)
        .ok()
        .map(|p| p.as_os_str().as_bytes().to_vec())
}

impl FileAnswer {
    /// The answer as text: one path a line, and a line saying how many were
    /// cut.
    pub fn render(&self) -> String {
        if self.total == 0 {
            return "no files found".into();
        }
        let mut out = self.paths.join("\n");
        let cut = self.total - self.paths.len();
        if cut > 0 {
            let _ = write!(out, "\n[{cut} more paths not shown; {} in all]", self.total);
        }
        out
    }
}

impl GrepAnswer {
    /// The answer as text: `path:line:text` a line, and a line saying how
    /// many were cut.
    pub fn render(&self) -> String {
        if self.total == 0 {
            return "no matches".into();
        }
        let mut out = String::new();
        for m in &self.matches {
            let _ = writeln!(out, "{}:{}:{}", m.path, m.line, m.text);
        }
        out.pop();
        let cut = self.total - self.matches.len();
        if cut > 0 {
            let _ = write!(
                out,
                "\n[{cut} more matches not shown; {} in all]",
                self.total
            );
        }
        out
    }
}

#[cfg(test)]
mod tests;
