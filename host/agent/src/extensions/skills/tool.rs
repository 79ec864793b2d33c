//! The `load_skill` tool: one skill's whole `SKILL.md`, and the names of its
//! other files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::{Catalog, SKILL_FILE, Skill, SkillsConfig, read_start};
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext, Tool, ToolSpec};

/// The tool's name.
pub const LOAD_SKILL_TOOL: &str = "load_skill";

/// Loads a skill by name.
pub(super) struct LoadSkill {
    spec: ToolSpec,
    config: Arc<SkillsConfig>,
    catalog: Arc<RwLock<Catalog>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: String,
}

impl LoadSkill {
    pub(super) fn new(config: Arc<SkillsConfig>, catalog: Arc<RwLock<Catalog>>) -> Self {
        let spec = ToolSpec::new(
            LOAD_SKILL_TOOL,
            "Loads a skill's full instructions (its SKILL.md) and lists the other files in its \
             folder. Use it when a task matches a skill listed in the system prompt.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name, as listed"}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        )
        .concurrency_safe(true)
        .idempotent(true);
        Self {
            spec,
            config,
            catalog,
        }
    }

    fn find(&self, name: &str) -> Result<Skill, ToolError> {
        let catalog = self.catalog.read().unwrap_or_else(|e| e.into_inner());
        if let Some(skill) = catalog.skills.iter().find(|s| s.name == name) {
            return Ok(skill.clone());
        }
        let known: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
        let known = if known.is_empty() {
            "there are none".to_owned()
        } else {
            format!("the skills are: {}", known.join(", "))
        };
        Err(ToolError::invalid_arguments(
            "/name",
            format!("no skill is named `{name}`; {known}"),
        ))
    }
}

#[async_trait]
impl Tool for LoadSkill {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError> {
        let Args { name } = args.deserialize()?;
        let skill = self.find(&name)?;
        let config = self.config.clone();
        tokio::task::spawn_blocking(move || render(&skill, &config))
            .await
            .map_err(|e| ToolError::failed(format!("loading the skill stopped: {e}")))?
    }
}

/// The model sees the whole text and the file list; a user interface shows
/// one line.
fn render(skill: &Skill, config: &SkillsConfig) -> Result<ToolOutput, ToolError> {
    let path = skill.skill_file();
    let (text, size) = read_start(&path, config.max_skill_bytes)
        .map_err(|e| ToolError::failed(format!("cannot read {}: {e}", path.display())))?;
    let (files, more) = other_files(&skill.dir, config.max_listed_files);
    let mut out = format!(
        "# Skill `{}`\n\nFolder: {}\n\n{}\n",
        skill.name,
        skill.dir.display(),
        text.trim_end()
    );
    if (text.len() as u64) < size {
        let _ = writeln!(
            out,
            "\n[truncated: SKILL.md is {size} bytes; only the first {} are shown]",
            text.len()
        );
    }
    if !files.is_empty() {
        out.push_str("\n## Other files in this skill (relative to its folder)\n\n");
        for file in &files {
            let _ = writeln!(out, "- {}", file.display());
        }
        if more > 0 {
            let _ = writeln!(out, "- … and {more} more");
        }
    }
    let summary = format!(
        "Loaded skill `{}` ({size} bytes, {} other files)",
        skill.name,
        files.len() + more
    );
    Ok(ToolOutput::dual(out, summary))
}

/// The skill folder's files other than `SKILL.md`, relative and sorted, at
/// most `cap` of them, and how many more there are. Hidden entries are left
/// out and symbolic links are not followed into folders.
fn other_files(dir: &Path, cap: usize) -> (Vec<PathBuf>, usize) {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(path),
                Ok(_) => {
                    if let Ok(rel) = path.strip_prefix(dir)
                        && rel != Path::new(SKILL_FILE)
                    {
                        files.push(rel.to_path_buf());
                    }
                }
                Err(_) => {}
            }
        }
    }
    files.sort();
    let more = files.len().saturating_sub(cap);
    files.truncate(cap);
    (files, more)
}
