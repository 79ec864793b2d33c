//! [`RuleSet::never_deciding`]: rules that can never decide a call, for
//! `toolhost check`.

use std::fmt;

use super::{Rule, RuleSet};

/// A rule that can never decide a call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unreachable {
    /// The rule's index, from 0.
    pub index: usize,
    /// Why it never decides.
    pub why: NeverDecides,
}

/// Why a rule never decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NeverDecides {
    /// Its tool pattern matches none of the tools.
    NoTool,
    /// The rule at this index matches every call it matches and wins: its
    /// decision is stronger, or the same and it comes first.
    ShadowedBy(usize),
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.why {
            NeverDecides::NoTool => write!(
                f,
                "rules[{}] never matches: its tool pattern matches no tool",
                self.index
            ),
            NeverDecides::ShadowedBy(by) => write!(
                f,
                "rules[{}] never decides: rules[{by}] matches every call it matches, and wins",
                self.index
            ),
        }
    }
}

impl RuleSet {
    /// The rules that can never decide a call to any of `tools` (the
    /// registered names): those whose tool pattern matches none of them,
    /// and those another rule shadows: the other matches every call this
    /// one matches (every tool, and conditions this one's imply) and wins
    /// (a stronger decision, or the same one earlier). Conservative: a
    /// rule listed can never decide; one not listed might still not (two
    /// different regular expressions are never compared). A tool list
    /// that changes later (a remote server's) can change the answer.
    pub fn never_deciding(&self, tools: &[&str]) -> Vec<Unreachable> {
        let matched: Vec<Vec<bool>> = self
            .rules
            .iter()
            .map(|r| tools.iter().map(|t| r.tool.matches(t)).collect())
            .collect();
        let mut out = Vec::new();
        for (b, rule) in self.rules.iter().enumerate() {
            if !matched[b].contains(&true) {
                out.push(Unreachable {
                    index: b,
                    why: NeverDecides::NoTool,
                });
                continue;
            }
            let shadow = self.rules.iter().enumerate().find(|&(a, other)| {
                a != b
                    && (other.decision > rule.decision
                        || (other.decision == rule.decision && a < b))
                    && matched[b]
                        .iter()
                        .zip(&matched[a])
                        .all(|(&in_b, &in_a)| !in_b || in_a)
                    && conditions_cover(other, rule)
            });
            if let Some((a, _)) = shadow {
                out.push(Unreachable {
                    index: b,
                    why: NeverDecides::ShadowedBy(a),
                });
            }
        }
        out
    }
}

/// Whether `wide`'s conditions hold whenever `narrow`'s do: each of
/// `wide`'s is implied by one of `narrow`'s.
fn conditions_cover(wide: &Rule, narrow: &Rule) -> bool {
    wide.when
        .iter()
        .all(|w| narrow.when.iter().any(|n| n.implies(w)))
}

#[cfg(test)]
mod tests {
    use super::super::{Condition, RuleDecision, ToolPattern};
    use super::*;

    fn rule(tool: &str, decision: RuleDecision) -> Rule {
        Rule::new(ToolPattern::new(tool).unwrap(), decision)
    }

    #[test]
    fn o4_check_lists_rules_that_can_never_match_or_decide() {
        use RuleDecision::*;
        let set = RuleSet::new(vec![
            // 0: matches no tool.
            rule("nosuch*", Deny),
            // 1: denies shell calls with rm.
            rule("shell", Deny).when(Condition::regex("/cmd", "rm").unwrap()),
            // 2: shadowed by 1 (same condition and more, weaker decision).
            rule("shell", Ask)
                .when(Condition::regex("/cmd", "rm").unwrap())
                .when(Condition::range("/n", Some(1.0), None).unwrap()),
            // 3: not shadowed: 1's condition does not cover every call.
            rule("shell", Ask),
            // 4: shadowed by 3, which comes first and covers it.
            rule("shell", Ask).when(Condition::glob("/cmd", "ls*").unwrap()),
            // 5: a narrower range than 6, which denies: shadowed.
            rule("*", Allow).when(Condition::range("/n", Some(2.0), Some(3.0)).unwrap()),
            rule("*", Deny).when(Condition::range("/n", Some(0.0), Some(10.0)).unwrap()),
            // 7: a wider range than 6's: not shadowed.
            rule("*", Ask).when(Condition::range("/n", None, Some(10.0)).unwrap()),
        ]);
        let found = set.never_deciding(&["calc", "shell"]);
        let found: Vec<(usize, NeverDecides)> = found.iter().map(|u| (u.index, u.why)).collect();
        assert_eq!(
            found,
            vec![
                (0, NeverDecides::NoTool),
                (2, NeverDecides::ShadowedBy(1)),
                (4, NeverDecides::ShadowedBy(3)),
                (5, NeverDecides::ShadowedBy(6)),
            ]
        );
        let text = set.never_deciding(&["calc"])[0].to_string();
        assert_eq!(
            text,
            "rules[0] never matches: its tool pattern matches no tool"
        );
    }
}
