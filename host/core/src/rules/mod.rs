//! Declarative permission rules (rule O4): which calls are allowed, asked
//! about or denied, by tool name and by conditions on the arguments.
//!
//! A [`RuleSet`] is a list of [`Rule`]s, each a [`ToolPattern`], zero or
//! more [`Condition`]s that must all hold, and a [`RuleDecision`]. The
//! pipeline judges every call once, after the before hooks, on the final
//! arguments (a hook that rewrote them cannot slip a call past a rule):
//!
//! 1. among the rules that match the call, deny beats ask beats allow; of
//!    several with the winning decision, the first decides;
//! 2. when no rule matches and annotation defaults are on, the tool's own
//!    hints decide: `readOnlyHint` allows, else `destructiveHint` asks;
//! 3. otherwise the fallback decides: allow unless configured otherwise,
//!    so a host without rules runs every call as it always has.
//!
//! A denial refuses the call with [`ToolError::Denied`] naming the rule,
//! before the tool runs; an ask goes to the call's approver, once, with
//! any hook's ask (rule P7); an allow does not overrule a hook that
//! rejects or asks.
//!
//! | module | what it holds |
//! |---|---|
//! | `pattern` | [`ToolPattern`]: a glob over tool names |
//! | `condition` | [`Condition`]: a glob, a regex or a range at a JSON Pointer |
//! | `analysis` | [`RuleSet::never_deciding`]: rules that can never decide |

use std::fmt;

use serde_json::Value;

use crate::error::{Cause, ToolError};
use crate::tool::ToolHints;
use crate::tool::approval::AskedBy;

mod analysis;
mod condition;
mod pattern;

pub use analysis::{NeverDecides, Unreachable};
pub use condition::{Condition, Miss, REGEX_SIZE_LIMIT};
pub use pattern::ToolPattern;

/// What a rule decides about the calls it matches, weakest first: the
/// order is precedence (`Deny > Ask > Allow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleDecision {
    /// The call runs (unless a hook refuses or asks).
    Allow,
    /// A person is asked first, through the call's approver.
    Ask,
    /// The call is refused before the tool runs.
    Deny,
}

impl RuleDecision {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }

    /// The decision named `word` (`allow`, `ask`, `deny`), if it is one.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "allow" => Some(Self::Allow),
            "ask" => Some(Self::Ask),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for RuleDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule that does not compile: what is wrong with it. The glob's or
/// regular expression's own error is kept as the source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// The tool pattern is empty.
    #[error("the tool pattern is empty (`*` is every tool)")]
    EmptyToolPattern,
    /// The tool pattern is not a glob.
    #[error("`{pattern}` is not a glob")]
    BadToolPattern {
        /// The pattern as written.
        pattern: String,
        /// The glob compiler's complaint.
        #[source]
        source: Cause,
    },
    /// A condition's glob does not compile.
    #[error("`{pattern}` is not a glob")]
    BadGlob {
        /// The pattern as written.
        pattern: String,
        /// The glob compiler's complaint.
        #[source]
        source: Cause,
    },
    /// A condition's regular expression does not compile, or is larger
    /// than [`REGEX_SIZE_LIMIT`] once compiled.
    #[error("`{pattern}` is not a regular expression the rules accept")]
    BadRegex {
        /// The expression as written.
        pattern: String,
        /// The regex compiler's complaint.
        #[source]
        source: Cause,
    },
    /// A condition's pointer is not an RFC 6901 JSON Pointer.
    #[error("`{pointer}` is not a JSON Pointer: {reason}")]
    BadPointer {
        /// The pointer as written.
        pointer: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A condition's pointer is deeper than any arguments can be.
    #[error(
        "`{pointer}` goes {depth} levels deep; arguments nest at most {max} levels, so it could never match"
    )]
    PointerTooDeep {
        /// The pointer's start.
        pointer: String,
        /// How many tokens it has.
        depth: usize,
        /// How deep arguments may nest.
        max: usize,
    },
    /// A range without `min` or `max`.
    #[error("a range needs `min`, `max` or both")]
    NoBound,
    /// A range bound that is NaN.
    #[error("a range bound is not a number (nan)")]
    NotANumber,
    /// A range that no number is in.
    #[error("the range is empty: min {min} is greater than max {max}")]
    EmptyRange {
        /// The lower bound.
        min: String,
        /// The upper bound.
        max: String,
    },
}

/// One rule: the tools it is about, the conditions on their arguments
/// that must all hold, and what it decides.
#[derive(Debug, Clone)]
pub struct Rule {
    tool: ToolPattern,
    when: Vec<Condition>,
    decision: RuleDecision,
    reason: Option<String>,
}

/// Why a rule does not match a call (for `toolhost explain`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleMiss {
    /// The tool's name does not match the rule's pattern.
    Tool,
    /// A condition does not hold.
    Condition {
        /// Its index in the rule's conditions, from 0.
        index: usize,
        /// Why it does not hold.
        miss: Miss,
    },
}

impl Rule {
    /// A rule deciding `decision` for every call of a tool `tool` matches.
    pub fn new(tool: ToolPattern, decision: RuleDecision) -> Self {
        Self {
            tool,
            when: Vec::new(),
            decision,
            reason: None,
        }
    }

    /// Adds a condition; all must hold for the rule to match.
    pub fn when(mut self, condition: Condition) -> Self {
        self.when.push(condition);
        self
    }

    /// Gives the reason shown to the model and the person asked.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// The tools it is about.
    pub fn tool(&self) -> &ToolPattern {
        &self.tool
    }

    /// Its conditions, in order.
    pub fn conditions(&self) -> &[Condition] {
        &self.when
    }

    /// What it decides.
    pub fn decision(&self) -> RuleDecision {
        self.decision
    }

    /// Its reason, if it gives one.
    pub fn given_reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Whether it matches a call of `tool` with `args`, and if not, why.
    pub fn check(&self, tool: &str, args: &Value) -> Result<(), RuleMiss> {
        if !self.tool.matches(tool) {
            return Err(RuleMiss::Tool);
        }
        for (index, condition) in self.when.iter().enumerate() {
            condition
                .check(args)
                .map_err(|miss| RuleMiss::Condition { index, miss })?;
        }
        Ok(())
    }
}

/// What a rule matches, in words: `tool "shell" where /cmd matches regex
/// "rm"`.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} tool {}", self.decision, self.tool)?;
        for (i, c) in self.when.iter().enumerate() {
            f.write_str(if i == 0 { " where " } else { " and " })?;
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// What decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecidedBy {
    /// The rule at this index, from 0.
    Rule(usize),
    /// No rule matched; the tool declares `readOnlyHint`.
    ReadOnlyHint,
    /// No rule matched; the tool declares `destructiveHint`.
    DestructiveHint,
    /// No rule matched, and no hint decided: the fallback.
    Fallback,
}

impl DecidedBy {
    /// How errors and questions name it: `rules[2]`, `readOnlyHint`,
    /// `destructiveHint`, `rules_default`.
    pub fn label(self) -> String {
        match self {
            Self::Rule(i) => format!("rules[{i}]"),
            Self::ReadOnlyHint => "readOnlyHint".into(),
            Self::DestructiveHint => "destructiveHint".into(),
            Self::Fallback => "rules_default".into(),
        }
    }
}

/// The rules' verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Judgement {
    /// What the rules decide.
    pub decision: RuleDecision,
    /// What decided it.
    pub by: DecidedBy,
    /// Why, for the model and the person asked: the rule's reason, or
    /// what the rule is.
    pub reason: String,
}

impl Judgement {
    /// The error a denial refuses the call with.
    pub fn denial(&self) -> ToolError {
        ToolError::Denied {
            rule: self.by.label(),
            reason: self.reason.clone(),
        }
    }

    /// How an ask joins the hooks' asks in the approval request.
    pub fn asked_by(&self) -> AskedBy {
        AskedBy {
            hook: self.by.label(),
            reason: self.reason.clone(),
        }
    }
}

/// Every rule's verdict on one call, and the judgement (for `toolhost
/// explain`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Explanation {
    /// What the rules decide, and which decided.
    pub judgement: Judgement,
    /// For each rule in order: whether it matched, and if not, why.
    pub rules: Vec<Result<(), RuleMiss>>,
}

/// The rules a host judges calls by, what tools' hints count for, and the
/// fallback. The default holds no rule and allows everything: calls run as
/// they would without rules.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Rule>,
    annotations: bool,
    fallback: RuleDecision,
}

impl Default for RuleSet {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl RuleSet {
    /// `rules`, in order; no annotation defaults; allow when none matches.
    pub fn new(rules: Vec<Rule>) -> Self {
        Self {
            rules,
            annotations: false,
            fallback: RuleDecision::Allow,
        }
    }

    /// When no rule matches a call, let the tool's hints decide: a tool
    /// that declares `readOnlyHint` is allowed, else one that declares
    /// `destructiveHint` is asked about. Off by default: a remote server's
    /// hints come from a party the host does not control, and a read-only
    /// claim allows what the fallback might deny.
    pub fn annotation_defaults(mut self, on: bool) -> Self {
        self.annotations = on;
        self
    }

    /// What is decided when no rule matches and no hint decides (default
    /// [`RuleDecision::Allow`]). `Deny` makes the rules an allow list.
    pub fn fallback(mut self, decision: RuleDecision) -> Self {
        self.fallback = decision;
        self
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether every call is allowed whatever it is: no rule, no hints,
    /// an allowing fallback. The pipeline skips judging then.
    pub fn allows_everything(&self) -> bool {
        self.rules.is_empty() && !self.annotations && self.fallback == RuleDecision::Allow
    }

    /// Judges a call of `tool`, whose hints are `hints`, with `args`.
    /// Rules weaker than one already matched are not even tried.
    pub fn judge(&self, tool: &str, hints: ToolHints, args: &Value) -> Judgement {
        let mut best: Option<usize> = None;
        for (i, rule) in self.rules.iter().enumerate() {
            if best.is_some_and(|b| self.rules[b].decision >= rule.decision) {
                continue;
            }
            if rule.check(tool, args).is_ok() {
                best = Some(i);
                if rule.decision == RuleDecision::Deny {
                    break;
                }
            }
        }
        self.verdict(best, hints)
    }

    /// Judges a call as [`judge`](Self::judge) does, and says for every
    /// rule whether it matched, and if not, why.
    pub fn explain(&self, tool: &str, hints: ToolHints, args: &Value) -> Explanation {
        let rules: Vec<_> = self.rules.iter().map(|r| r.check(tool, args)).collect();
        let mut best: Option<usize> = None;
        for (i, matched) in rules.iter().enumerate() {
            if matched.is_ok()
                && best.is_none_or(|b| self.rules[b].decision < self.rules[i].decision)
            {
                best = Some(i);
            }
        }
        Explanation {
            judgement: self.verdict(best, hints),
            rules,
        }
    }

    fn verdict(&self, best: Option<usize>, hints: ToolHints) -> Judgement {
        if let Some(i) = best {
            let rule = &self.rules[i];
            return Judgement {
                decision: rule.decision,
                by: DecidedBy::Rule(i),
                reason: rule
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("the call matches the rule `{rule}`")),
            };
        }
        if self.annotations {
            if hints.read_only == Some(true) {
                return Judgement {
                    decision: RuleDecision::Allow,
                    by: DecidedBy::ReadOnlyHint,
                    reason: "no rule matches, and the tool declares that it only reads".into(),
                };
            }
            if hints.destructive == Some(true) {
                return Judgement {
                    decision: RuleDecision::Ask,
                    by: DecidedBy::DestructiveHint,
                    reason: "no rule matches, and the tool declares that it may destroy or \
                             overwrite something"
                        .into(),
                };
            }
        }
        Judgement {
            decision: self.fallback,
            by: DecidedBy::Fallback,
            reason: format!(
                "no rule matches the call, and the default is to {}",
                self.fallback
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(tool: &str, decision: RuleDecision) -> Rule {
        Rule::new(ToolPattern::new(tool).unwrap(), decision)
    }

    #[test]
    fn o4_deny_beats_ask_beats_allow() {
        use RuleDecision::*;
        let set = RuleSet::new(vec![
            rule("*", Allow),
            rule("shell", Ask).reason("runs commands"),
            rule("shell", Deny)
                .when(Condition::regex("/command", r"\brm\b").unwrap())
                .reason("no deleting"),
            rule("shell", Ask),
        ]);
        let judge = |tool: &str, args: Value| set.judge(tool, ToolHints::NONE, &args);
        let j = judge("calc", json!({}));
        assert_eq!((j.decision, j.by), (Allow, DecidedBy::Rule(0)));
        let j = judge("shell", json!({"command": "ls"}));
        assert_eq!((j.decision, j.by), (Ask, DecidedBy::Rule(1)));
        assert_eq!(j.reason, "runs commands");
        let j = judge("shell", json!({"command": "rm -r x"}));
        assert_eq!((j.decision, j.by), (Deny, DecidedBy::Rule(2)));
        assert_eq!(
            j.denial(),
            ToolError::Denied {
                rule: "rules[2]".into(),
                reason: "no deleting".into()
            }
        );
        assert_eq!(j.denial().to_string(), "denied by rules[2]: no deleting");
        // The order of the rules does not change who wins.
        let mut reversed = set.rules().to_vec();
        reversed.reverse();
        let set = RuleSet::new(reversed);
        let j = set.judge("shell", ToolHints::NONE, &json!({"command": "rm x"}));
        assert_eq!((j.decision, j.by), (Deny, DecidedBy::Rule(1)));
        // explain agrees with judge.
        let e = set.explain("shell", ToolHints::NONE, &json!({"command": "rm x"}));
        assert_eq!(e.judgement, j);
        assert_eq!(e.rules.len(), 4);
        assert!(e.rules.iter().all(Result::is_ok));
    }

    #[test]
    fn o4_every_condition_of_a_rule_must_hold() {
        let set = RuleSet::new(vec![
            rule("write_file", RuleDecision::Deny)
                .when(Condition::glob("/path", "secrets/**").unwrap())
                .when(Condition::range("/mode", Some(0.0), Some(511.0)).unwrap()),
        ]);
        let j = |args: Value| set.judge("write_file", ToolHints::NONE, &args).decision;
        assert_eq!(
            j(json!({"path": "secrets/a", "mode": 420})),
            RuleDecision::Deny
        );
        assert_eq!(j(json!({"path": "secrets/a"})), RuleDecision::Allow);
        assert_eq!(
            j(json!({"path": "src/a", "mode": 420})),
            RuleDecision::Allow
        );
        let e = set.explain("write_file", ToolHints::NONE, &json!({"path": "secrets/a"}));
        assert_eq!(
            e.rules[0],
            Err(RuleMiss::Condition {
                index: 1,
                miss: Miss::Absent
            })
        );
    }

    #[test]
    fn o4_without_a_matching_rule_nothing_changes_unless_configured() {
        let set = RuleSet::default();
        assert!(set.allows_everything());
        let j = set.judge("anything", ToolHints::NONE, &json!({}));
        assert_eq!(
            (j.decision, j.by),
            (RuleDecision::Allow, DecidedBy::Fallback)
        );
        // An allow list: deny unless a rule allows.
        let set =
            RuleSet::new(vec![rule("calc", RuleDecision::Allow)]).fallback(RuleDecision::Deny);
        assert_eq!(
            set.judge("calc", ToolHints::NONE, &json!({})).decision,
            RuleDecision::Allow
        );
        let j = set.judge("fetch", ToolHints::NONE, &json!({}));
        assert_eq!(j.decision, RuleDecision::Deny);
        assert_eq!(
            j.denial().to_string(),
            "denied by rules_default: no rule matches the call, and the default is to deny"
        );
    }

    #[test]
    fn o4_annotations_decide_only_when_asked_to_and_no_rule_matches() {
        let read_only = ToolHints::default().read_only(true);
        let destructive = ToolHints::default().destructive(true);
        let both = read_only.destructive(true);
        let off = RuleSet::default();
        assert_eq!(
            off.judge("t", destructive, &json!({})).decision,
            RuleDecision::Allow
        );
        let on = RuleSet::default()
            .annotation_defaults(true)
            .fallback(RuleDecision::Deny);
        let j = on.judge("t", destructive, &json!({}));
        assert_eq!(
            (j.decision, j.by),
            (RuleDecision::Ask, DecidedBy::DestructiveHint)
        );
        assert_eq!(j.asked_by().hook, "destructiveHint");
        let j = on.judge("t", read_only, &json!({}));
        assert_eq!(
            (j.decision, j.by),
            (RuleDecision::Allow, DecidedBy::ReadOnlyHint)
        );
        // MCP: destructiveHint means something only when readOnlyHint is false.
        assert_eq!(
            on.judge("t", both, &json!({})).decision,
            RuleDecision::Allow
        );
        assert_eq!(
            on.judge("t", ToolHints::NONE, &json!({})).decision,
            RuleDecision::Deny
        );
        // A rule that matches overrides the hint.
        let on = RuleSet::new(vec![rule("t", RuleDecision::Allow)]).annotation_defaults(true);
        assert_eq!(
            on.judge("t", destructive, &json!({})).by,
            DecidedBy::Rule(0)
        );
    }
}
