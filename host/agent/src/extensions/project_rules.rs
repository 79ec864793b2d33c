//! [`ProjectRules`]: instruction files found in the project, added to the
//! system prompt with their paths.
//!
//! **Where it looks.** From the working directory up to the repository root:
//! the nearest ancestor (or the directory itself) that contains `.git` (a
//! directory, or a file in a git worktree). Without one, up to the
//! configured stop directory, else up to the filesystem root. A stop
//! directory also ends the walk when it comes before any `.git`.
//!
//! **Order.** Root first, then each directory closer to the working
//! directory; within a directory, in the order of the configured names
//! (`AGENTS.md` first by default). Closer files come later and, as the
//! prompt says, win where they disagree. A file reached under two names
//! (a symbolic link) is included once.
//!
//! **Caps.** Each file is cut at `max_file_bytes`, and all files together
//! at `max_total_bytes`; the total is shared out from the closest file
//! outwards, so the rules that win are the ones kept. A cut file ends with a
//! line saying so; a file left out entirely is named at the end.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use toolhost_core::extension::Extension;

/// Settings of [`ProjectRules`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRulesConfig {
    /// Where the agent works; the walk starts here.
    pub working_dir: PathBuf,
    /// The instruction file names to look for in each directory, in order.
    pub file_names: Vec<String>,
    /// Where to stop when no `.git` is found first (inclusive).
    pub stop_dir: Option<PathBuf>,
    /// The most bytes taken from one file.
    pub max_file_bytes: usize,
    /// The most bytes taken from all files together.
    pub max_total_bytes: usize,
}

impl ProjectRulesConfig {
    /// Looks for `AGENTS.md` from `working_dir` up, at most 32 KiB a file
    /// and 64 KiB in all.
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        Self {
            working_dir: working_dir.into(),
            file_names: vec!["AGENTS.md".into()],
            stop_dir: None,
            max_file_bytes: 32 * 1024,
            max_total_bytes: 64 * 1024,
        }
    }

    /// Also looks for these names (for example `CLAUDE.md`,
    /// `.cursorrules`), after the ones already configured.
    pub fn with_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for name in names {
            let name = name.into();
            if !self.file_names.contains(&name) {
                self.file_names.push(name);
            }
        }
        self
    }
}

/// One instruction file, as it goes into the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its text (lossily decoded as UTF-8), cut to the caps.
    pub text: String,
    /// Its full size in bytes.
    pub size_bytes: u64,
    /// Whether `text` is only the start of the file.
    pub truncated: bool,
}

/// What a discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RulesFound {
    /// The directory the walk stopped at (the repository root when there
    /// is one).
    pub root: PathBuf,
    /// The files that go into the prompt, root first.
    pub files: Vec<RuleFile>,
    /// Files left out because the total cap was used up.
    pub omitted: Vec<PathBuf>,
    /// Files or directories that could not be read, with the reason.
    pub problems: Vec<(PathBuf, String)>,
}

impl RulesFound {
    /// Finds the instruction files `config` describes. Never fails: what
    /// cannot be read is listed in [`problems`](Self::problems).
    pub fn discover(config: &ProjectRulesConfig) -> Self {
        let mut found = Self::default();
        let start = match config.working_dir.canonicalize() {
            Ok(dir) => dir,
            Err(e) => {
                found
                    .problems
                    .push((config.working_dir.clone(), e.to_string()));
                return found;
            }
        };
        let stop = config.stop_dir.as_ref().and_then(|d| d.canonicalize().ok());
        let dirs = walk_up(&start, stop.as_deref());
        found.root = dirs.last().cloned().unwrap_or_else(|| start.clone());
        // Closest directory first, so the budget goes to the rules that win.
        let mut budget = config.max_total_bytes;
        let mut seen = HashSet::new();
        let mut closest_first = Vec::new();
        for dir in &dirs {
            for name in &config.file_names {
                let path = dir.join(name);
                let Ok(real) = path.canonicalize() else {
                    continue; // absent
                };
                if !real.is_file() || !seen.insert(real) {
                    continue;
                }
                let cap = config.max_file_bytes.min(budget);
                if cap == 0 {
                    found.omitted.push(path);
                    continue;
                }
                match read_capped(&path, cap) {
                    Ok(file) => {
                        budget -= file.text.len();
                        closest_first.push(file);
                    }
                    Err(e) => found.problems.push((path, e.to_string())),
                }
            }
        }
        // Root first; within a directory, keep the configured name order.
        let mut files = Vec::with_capacity(closest_first.len());
        for group in closest_first.chunk_by(|a, b| a.path.parent() == b.path.parent()) {
            files.splice(0..0, group.iter().cloned());
        }
        found.files = files;
        found.omitted.reverse();
        found
    }

    /// The system-prompt section, or `None` when no file was found.
    pub fn prompt(&self) -> Option<String> {
        if self.files.is_empty() {
            return None;
        }
        let mut out = String::from(
            "# Project rules\n\nInstruction files found in the project, from the repository root \
             down to the working directory. Where they disagree, the later (closer) file wins.\n",
        );
        for file in &self.files {
            let _ = write!(
                out,
                "\n## {}\n\n{}\n",
                file.path.display(),
                file.text.trim_end()
            );
            if file.truncated {
                let _ = writeln!(
                    out,
                    "\n[truncated: the file is {} bytes; only the first {} are shown]",
                    file.size_bytes,
                    file.text.len()
                );
            }
        }
        if !self.omitted.is_empty() {
            let names: Vec<String> = self
                .omitted
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            let _ = writeln!(
                out,
                "\n[left out, over the total size limit: {}]",
                names.join(", ")
            );
        }
        Some(out)
    }
}

/// The directories from `start` up to the root of the walk, closest first.
fn walk_up(start: &Path, stop: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in start.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() || Some(dir) == stop {
            break;
        }
    }
    dirs
}

/// Reads the start of a file: at most `cap` bytes, cut at a character
/// boundary.
fn read_capped(path: &Path, cap: usize) -> std::io::Result<RuleFile> {
    let file = File::open(path)?;
    let size_bytes = file.metadata()?.len();
    let mut bytes = Vec::new();
    file.take(cap as u64 + 4).read_to_end(&mut bytes)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    let truncated = text.len() > cap || (bytes.len() as u64) < size_bytes;
    if text.len() > cap {
        text.truncate(text.floor_char_boundary(cap));
    }
    Ok(RuleFile {
        path: path.to_path_buf(),
        text,
        size_bytes,
        truncated,
    })
}

/// The project rules extension: on every agent run it looks for the
/// instruction files again (they may have changed) and adds them to the
/// system prompt.
#[derive(Debug, Clone)]
pub struct ProjectRules {
    config: ProjectRulesConfig,
}

impl ProjectRules {
    /// The extension with `config`.
    pub fn new(config: ProjectRulesConfig) -> Self {
        Self { config }
    }

    /// Finds the files now (blocking file system work).
    pub fn discover(&self) -> RulesFound {
        RulesFound::discover(&self.config)
    }
}

#[async_trait]
impl Extension for ProjectRules {
    fn name(&self) -> &str {
        "project_rules"
    }

    async fn system_prompt(&self) -> Option<String> {
        let config = self.config.clone();
        let found = tokio::task::spawn_blocking(move || RulesFound::discover(&config))
            .await
            .unwrap_or_default();
        for (path, reason) in &found.problems {
            tracing::warn!(path = %path.display(), %reason, "cannot read a project rules file");
        }
        found.prompt()
    }
}

#[cfg(test)]
mod tests;
