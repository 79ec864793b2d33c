//! Built-in extensions (rule E3).
//!
//! | extension | what it adds |
//! |---|---|
//! | [`PromptCache`] | cache breakpoints and a cache key on every model request, a byte-stable prefix, cache reads and writes counted from the provider's usage |
//! | [`ProjectRules`] | instruction files (`AGENTS.md`, …) from the repository root down to the working directory, in the system prompt |
//! | [`Skills`] | a compact list of skill folders (`SKILL.md`) in the system prompt and a `load_skill` tool that loads one on demand |

mod project_rules;
mod prompt_cache;
pub(crate) mod skills;

pub use project_rules::{ProjectRules, ProjectRulesConfig, RuleFile, RulesFound};
pub use prompt_cache::{CacheStats, PromptCache, PromptCacheConfig};
pub use skills::{LOAD_SKILL_TOOL, Skill, SkillProblem, Skills, SkillsConfig};
