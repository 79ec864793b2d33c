//! `[[rules]]` into a [`RuleSet`]: declarative allow, ask and deny (rule
//! O4).
//!
//! ```toml
//! [host]
//! rules_default = "allow"          # what no matching rule means: "allow", "ask", "deny"
//! rules_from_annotations = false   # no rule matches: readOnlyHint allows, destructiveHint asks
//!
//! [[rules]]
//! tool = "shell"                   # a glob over tool names (`*`, `docs.*`, `note_{read,list}`)
//! decision = "deny"                # "allow", "ask" or "deny"
//! reason = "nothing is deleted"    # optional; the model and the person asked see it
//! when = [                         # optional; every condition must hold
//!   { pointer = "/command", regex = '\brm\b' },   # a regex found in a string
//!   { pointer = "/path", glob = "/etc/**" },      # a glob matching a whole string
//!   { pointer = "/count", min = 0, max = 100 },   # a number in a range (inclusive)
//! ]
//! ```
//!
//! Contract: [`Config::rule_set`] compiles every entry or fails with the
//! first that does not compile, naming its key (`rules[2].when[0].regex`),
//! so a host never starts with some of its rules. The entries as written
//! are [`RuleSection`]s (kept here rather than in `sections`, beside the
//! code that reads them).

use serde::Deserialize;
use toolhost_core::rules::{Condition, Rule, RuleDecision, RuleError, RuleSet, ToolPattern};

use super::{Config, ConfigError};

/// One `[[rules]]` entry as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSection {
    /// A glob over tool names.
    pub tool: String,
    /// `allow`, `ask` or `deny`.
    pub decision: String,
    /// Why, for the model and the person asked.
    pub reason: Option<String>,
    /// Conditions on the arguments, all of which must hold.
    #[serde(default)]
    pub when: Vec<ConditionSection>,
}

/// One condition of a rule as written: a JSON Pointer and exactly one
/// test: `glob`, `regex`, or a range (`min`, `max` or both).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionSection {
    /// An RFC 6901 JSON Pointer into the arguments (`/path`, `/items/0`).
    pub pointer: String,
    /// The string there matches this glob.
    pub glob: Option<String>,
    /// This regular expression finds a match in the string there.
    pub regex: Option<String>,
    /// The number there is at least this.
    pub min: Option<f64>,
    /// The number there is at most this.
    pub max: Option<f64>,
}

impl Config {
    /// The rules of `[[rules]]`, compiled, with `[host] rules_default` and
    /// `rules_from_annotations`. The first entry that does not compile is
    /// an error naming its key.
    pub fn rule_set(&self) -> Result<RuleSet, ConfigError> {
        let fallback = RuleDecision::parse(&self.host.rules_default).ok_or_else(|| {
            ConfigError::UnknownChoice {
                key: "host.rules_default".into(),
                value: self.host.rules_default.clone(),
                choices: "allow, ask, deny",
            }
        })?;
        let rules = self
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| compile(i, r))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RuleSet::new(rules)
            .fallback(fallback)
            .annotation_defaults(self.host.rules_from_annotations))
    }
}

fn compile(i: usize, section: &RuleSection) -> Result<Rule, ConfigError> {
    let bad = |key: String| move |source: RuleError| ConfigError::BadRule { key, source };
    let decision =
        RuleDecision::parse(&section.decision).ok_or_else(|| ConfigError::UnknownChoice {
            key: format!("rules[{i}].decision"),
            value: section.decision.clone(),
            choices: "allow, ask, deny",
        })?;
    let tool = ToolPattern::new(&section.tool).map_err(bad(format!("rules[{i}].tool")))?;
    let mut rule = Rule::new(tool, decision);
    if let Some(reason) = &section.reason {
        rule = rule.reason(reason.clone());
    }
    for (j, c) in section.when.iter().enumerate() {
        let key = |k: &str| format!("rules[{i}].when[{j}].{k}");
        let at = format!("rules[{i}].when[{j}]");
        let ranged = c.min.is_some() || c.max.is_some();
        let condition = match (&c.glob, &c.regex, ranged) {
            (Some(glob), None, false) => Condition::glob(&c.pointer, glob),
            (None, Some(regex), false) => Condition::regex(&c.pointer, regex),
            (None, None, true) => Condition::range(&c.pointer, c.min, c.max),
            (None, None, false) => {
                return Err(ConfigError::Required {
                    key: at,
                    reason: "give one test: `glob`, `regex`, or a range (`min`, `max`)",
                });
            }
            _ => {
                return Err(ConfigError::Conflict {
                    key: at,
                    reason: "give one test: `glob`, `regex`, or a range (`min`, `max`); \
                             several conditions go in several entries of `when`",
                });
            }
        };
        // Name the key at fault: the pointer, the pattern, or the bound.
        let condition = condition.map_err(|e| {
            let k = match &e {
                RuleError::BadPointer { .. } | RuleError::PointerTooDeep { .. } => key("pointer"),
                RuleError::BadGlob { .. } => key("glob"),
                RuleError::BadRegex { .. } => key("regex"),
                RuleError::NotANumber if c.min.is_some_and(f64::is_nan) => key("min"),
                RuleError::NotANumber => key("max"),
                _ => at.clone(),
            };
            ConfigError::BadRule { key: k, source: e }
        })?;
        rule = rule.when(condition);
    }
    Ok(rule)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;
    use toolhost_core::ToolHints;
    use toolhost_core::report;
    use toolhost_core::rules::DecidedBy;

    use super::*;

    fn rules(text: &str) -> Result<RuleSet, ConfigError> {
        Config::parse(text, Path::new("/base"))?.rule_set()
    }

    #[test]
    fn o4_rules_are_read_in_order_with_their_conditions() {
        let set = rules(
            r#"
[host]
rules_default = "deny"

[[rules]]
tool = "*"
decision = "allow"

[[rules]]
tool = "note_*"
decision = "ask"
reason = "notes are kept"
when = [{ pointer = "/name", glob = "*.md" }, { pointer = "/size", max = 1e3 }]
"#,
        )
        .unwrap();
        assert_eq!(set.rules().len(), 2);
        let j = set.judge(
            "note_write",
            ToolHints::NONE,
            &json!({"name": "a.md", "size": 10}),
        );
        assert_eq!((j.decision, j.by), (RuleDecision::Ask, DecidedBy::Rule(1)));
        assert_eq!(j.reason, "notes are kept");
        assert_eq!(
            set.judge("calc", ToolHints::NONE, &json!({})).decision,
            RuleDecision::Allow
        );
        // No rules: allow everything, as without the feature.
        assert!(rules("").unwrap().allows_everything());
    }

    #[test]
    fn o4_a_bad_regex_names_its_key() {
        let err = rules(
            "[[rules]]\ntool = \"a\"\ndecision = \"deny\"\n\n[[rules]]\ntool = \"b\"\ndecision = \"deny\"\n\
             [[rules]]\ntool = \"c\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/x\", glob = \"*\" }, { pointer = \"/cmd\", regex = \"(rm\" }]\n",
        )
        .unwrap_err();
        assert_eq!(err.key(), "rules[2].when[1].regex");
        let text = report(&err);
        assert!(
            text.starts_with(
                "rules[2].when[1].regex: invalid rule: `(rm` is not a regular expression"
            ),
            "{text}"
        );
        assert!(text.contains("unclosed group"), "the cause is kept: {text}");
        assert!(
            matches!(
                &err,
                ConfigError::BadRule {
                    source: RuleError::BadRegex { .. },
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn o4_every_bad_rule_is_an_error_naming_its_key() {
        let rule = |body: &str| format!("[[rules]]\n{body}\n");
        for (body, key) in [
            ("tool = \"a[\"\ndecision = \"deny\"", "rules[0].tool"),
            ("tool = \"\"\ndecision = \"deny\"", "rules[0].tool"),
            ("tool = \"a\"\ndecision = \"maybe\"", "rules[0].decision"),
            (
                "tool = \"a\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/p\", glob = \"a[\" }]",
                "rules[0].when[0].glob",
            ),
            (
                "tool = \"a\"\ndecision = \"deny\"\nwhen = [{ pointer = \"p\", glob = \"*\" }]",
                "rules[0].when[0].pointer",
            ),
            (
                "tool = \"a\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/a~2\", glob = \"*\" }]",
                "rules[0].when[0].pointer",
            ),
            (
                "tool = \"a\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/n\", min = 5, max = 1 }]",
                "rules[0].when[0]",
            ),
            (
                "tool = \"a\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/n\", min = nan }]",
                "rules[0].when[0].min",
            ),
            (
                "tool = \"a\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/n\" }]",
                "rules[0].when[0]",
            ),
            (
                "tool = \"a\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/n\", glob = \"*\", regex = \"x\" }]",
                "rules[0].when[0]",
            ),
        ] {
            let err = rules(&rule(body)).unwrap_err();
            assert_eq!(err.key(), key, "{body}: {err}");
        }
        let deep = format!(
            "tool = \"a\"\ndecision = \"deny\"\nwhen = [{{ pointer = \"{}\", glob = \"*\" }}]",
            "/x".repeat(1000)
        );
        assert_eq!(
            rules(&rule(&deep)).unwrap_err().key(),
            "rules[0].when[0].pointer"
        );
        let err = rules("[host]\nrules_default = \"sometimes\"\n").unwrap_err();
        assert_eq!(err.key(), "host.rules_default");
        // Unknown keys are refused, as everywhere in the file.
        let err = rules(&rule(
            "tool = \"a\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/n\", regexp = \"x\" }]",
        ))
        .unwrap_err();
        assert!(matches!(err, ConfigError::UnknownKey { .. }), "{err:?}");
    }

    #[test]
    fn o4_nothing_starts_half_configured() {
        // `check`, which every build runs first, compiles the rules.
        let config = Config::parse(
            "[[rules]]\ntool = \"*\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/x\", regex = \"[\" }]\n",
            Path::new("/base"),
        )
        .unwrap();
        assert_eq!(config.check().unwrap_err().key(), "rules[0].when[0].regex");
    }
}
