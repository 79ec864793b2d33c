//! [`Skills`]: folders of task instructions the model loads when it needs
//! them.
//!
//! A skill is a folder holding a `SKILL.md` whose YAML front matter gives a
//! `name` and a `description` (see `front_matter`); the rest of the file is
//! its instructions, and the folder may hold scripts and references beside
//! it. Each configured root's immediate subfolders are skills, roots in
//! order, folders by name.
//!
//! The system prompt lists every skill as one line, name and description,
//! so the listing stays small however long the instructions are. The
//! `load_skill` tool returns one skill's whole `SKILL.md` and names its
//! other files. A skill whose front matter is unusable, or whose name an
//! earlier skill took, is skipped; the problem, with file and line, is
//! logged as a warning and kept for [`Skills::problems`].

pub(crate) mod front_matter;
mod tool;

use std::fmt;
use std::fs::{self, File};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;

pub use tool::LOAD_SKILL_TOOL;

use toolhost_core::InitError;
use toolhost_core::extension::{Extension, ExtensionContext};
use toolhost_core::tool::Tool;

/// The file that makes a folder a skill.
const SKILL_FILE: &str = "SKILL.md";

/// Settings of [`Skills`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillsConfig {
    /// Folders whose subfolders are skills, in order of precedence.
    pub roots: Vec<PathBuf>,
    /// The most bytes of a `SKILL.md` that `load_skill` returns.
    pub max_skill_bytes: usize,
    /// The most other files `load_skill` names.
    pub max_listed_files: usize,
}

impl SkillsConfig {
    /// Skills under `roots`, up to 256 KiB of instructions and 100 named
    /// files each.
    pub fn new<I, P>(roots: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Self {
            roots: roots.into_iter().map(Into::into).collect(),
            max_skill_bytes: 256 * 1024,
            max_listed_files: 100,
        }
    }
}

/// A discovered skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name, as `load_skill` takes it.
    pub name: String,
    /// When to use it, from the front matter.
    pub description: String,
    /// Its folder.
    pub dir: PathBuf,
}

impl Skill {
    /// Its `SKILL.md`.
    pub fn skill_file(&self) -> PathBuf {
        self.dir.join(SKILL_FILE)
    }
}

/// Why a skill (or a root) was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    /// The file or folder at fault.
    pub path: PathBuf,
    /// The line (from 1), when the problem is inside a file.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// What one scan found.
#[derive(Debug, Default)]
struct Catalog {
    /// Sorted by name.
    skills: Vec<Skill>,
    problems: Vec<SkillProblem>,
}

impl Catalog {
    fn scan(config: &SkillsConfig) -> Self {
        let mut catalog = Self::default();
        for root in &config.roots {
            let entries = match fs::read_dir(root) {
                Ok(entries) => entries,
                Err(e) => {
                    catalog.problem(root, None, format!("cannot read the skills folder: {e}"));
                    continue;
                }
            };
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join(SKILL_FILE).is_file())
                .collect();
            dirs.sort();
            for dir in dirs {
                catalog.add(dir);
            }
        }
        catalog.skills.sort_by(|a, b| a.name.cmp(&b.name));
        catalog
    }

    fn add(&mut self, dir: PathBuf) {
        let path = dir.join(SKILL_FILE);
        // The front matter is at the start; 64 KiB is plenty to find it.
        let text = match read_start(&path, 64 * 1024) {
            Ok((text, _)) => text,
            Err(e) => return self.problem(&path, None, format!("cannot read: {e}")),
        };
        let front = match front_matter::parse(&text) {
            Ok(front) => front,
            Err(e) => return self.problem(&path, Some(e.line), e.message),
        };
        if let Some(first) = self.skills.iter().find(|s| s.name == front.name) {
            let message = format!(
                "a skill named `{}` is already defined in {}; this one is skipped",
                front.name,
                first.skill_file().display()
            );
            return self.problem(&path, None, message);
        }
        self.skills.push(Skill {
            name: front.name,
            description: front.description,
            dir,
        });
    }

    fn problem(&mut self, path: &Path, line: Option<usize>, message: String) {
        let problem = SkillProblem {
            path: path.to_path_buf(),
            line,
            message,
        };
        tracing::warn!(problem = %problem, "skill skipped");
        self.problems.push(problem);
    }

    fn prompt(&self) -> Option<String> {
        if self.skills.is_empty() {
            return None;
        }
        let mut out = format!(
            "# Skills\n\nSkills are folders of instructions (and sometimes scripts and reference \
             files) for particular tasks. When a task matches a skill's description, call \
             `{LOAD_SKILL_TOOL}` with the skill's name and follow its instructions.\n\n"
        );
        for skill in &self.skills {
            let description: Vec<&str> = skill.description.split_whitespace().collect();
            out.push_str(&format!("- {}: {}\n", skill.name, description.join(" ")));
        }
        Some(out)
    }
}

/// Reads at most `cap` bytes of a file, cut at a character boundary;
/// returns the text and the file's full size.
fn read_start(path: &Path, cap: usize) -> std::io::Result<(String, u64)> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut bytes = Vec::new();
    file.take(cap as u64).read_to_end(&mut bytes)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > cap {
        text.truncate(text.floor_char_boundary(cap));
    }
    Ok((text, size))
}

/// The skills extension. Cloning shares its catalog.
#[derive(Clone)]
pub struct Skills {
    config: Arc<SkillsConfig>,
    catalog: Arc<RwLock<Catalog>>,
}

impl Skills {
    /// The extension with `config`; the roots are scanned at registration
    /// (and by [`refresh`](Self::refresh)).
    pub fn new(config: SkillsConfig) -> Self {
        Self {
            config: Arc::new(config),
            catalog: Arc::default(),
        }
    }

    /// Scans the roots again (blocking file system work). Later agent runs
    /// and `load_skill` calls see the result.
    pub fn refresh(&self) {
        let catalog = Catalog::scan(&self.config);
        *self.catalog.write().unwrap_or_else(|e| e.into_inner()) = catalog;
    }

    /// The skills found, sorted by name.
    pub fn skills(&self) -> Vec<Skill> {
        self.read().skills.clone()
    }

    /// The problems of the last scan: skipped skills and unreadable roots.
    pub fn problems(&self) -> Vec<SkillProblem> {
        self.read().problems.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl Extension for Skills {
    fn name(&self) -> &str {
        "skills"
    }

    async fn init(&self, _ctx: &ExtensionContext) -> Result<(), InitError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.refresh())
            .await
            .map_err(|e| InitError::with_source("reading the skill folders", e))?;
        Ok(())
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(tool::LoadSkill::new(
            self.config.clone(),
            self.catalog.clone(),
        ))]
    }

    async fn system_prompt(&self) -> Option<String> {
        self.read().prompt()
    }
}

#[cfg(test)]
mod tests;
