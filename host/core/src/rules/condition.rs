//! [`Condition`]: one test of a call's arguments, at a JSON Pointer.
//!
//! What a condition does not do: it does not normalise what it tests. A
//! glob or a regular expression sees the string exactly as the arguments
//! hold it: `a/../b`, `./b`, `a//b`, a relative path, a symbolic link,
//! `%2e%2e`, another case or another Unicode form are not resolved or
//! folded, so `/etc/**` does not match `/tmp/../etc/passwd`. Rules that
//! guard paths should deny or ask for `..` segments too (a regex such as
//! `(^|/)\.\.(/|$)`), and the tools themselves stay the boundary (the
//! file tools cannot leave their directory, rule B3).

use std::cmp::Ordering;
use std::fmt;

use globset::{GlobBuilder, GlobMatcher};
use regex::{Regex, RegexBuilder};
use serde_json::{Number, Value};

use super::RuleError;
use crate::error::Cause;
use crate::tool::MAX_ARGUMENT_DEPTH;

/// The most a regular expression may take once compiled, and its lazy
/// DFA's cache: enough for any rule a person writes, too little for one
/// built to exhaust memory. Matching is linear in the string's length
/// whatever the expression (the `regex` crate has no backtracking).
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A test of the value at one JSON Pointer (RFC 6901) into a call's
/// arguments. It holds only when the value is there and has the right
/// type: an absent value, or a number where a string is tested (or the
/// reverse), does not match.
#[derive(Debug, Clone)]
pub struct Condition {
    pointer: String,
    test: Test,
}

/// What a condition checks of its value.
#[derive(Debug, Clone)]
enum Test {
    /// A string matching a glob.
    Glob { text: String, matcher: GlobMatcher },
    /// A string in which a regular expression finds a match.
    Regex(Regex),
    /// A number in `[min, max]`.
    Range { min: Option<f64>, max: Option<f64> },
}

/// Why a condition does not hold for a call (for `toolhost explain`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Miss {
    /// Nothing is at the pointer.
    Absent,
    /// The value is not of the type tested.
    WrongType {
        /// What the test takes: `a string`, `a number`.
        expected: &'static str,
        /// What is there: `an object`, `a boolean`, …
        found: &'static str,
    },
    /// The value is of the right type and does not match.
    NoMatch,
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Absent => f.write_str("nothing is there"),
            Self::WrongType { expected, found } => {
                write!(f, "it is {found}, not {expected}")
            }
            Self::NoMatch => f.write_str("the value does not match"),
        }
    }
}

impl Condition {
    /// The string at `pointer` matches the glob `pattern`: `*` and `?`
    /// stop at `/`, `**` crosses it, `[abc]` is a class, `{a,b}`
    /// alternatives, `\` escapes. The whole string must match.
    pub fn glob(pointer: &str, pattern: &str) -> Result<Self, RuleError> {
        check_pointer(pointer)?;
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| RuleError::BadGlob {
                pattern: pattern.to_owned(),
                source: Cause::new(e),
            })?;
        Ok(Self {
            pointer: pointer.to_owned(),
            test: Test::Glob {
                text: pattern.to_owned(),
                matcher: glob.compile_matcher(),
            },
        })
    }

    /// The regular expression `pattern` (the `regex` crate's syntax) finds
    /// a match somewhere in the string at `pointer`. It is not anchored:
    /// write `^…$` to match the whole string. Compiled within
    /// [`REGEX_SIZE_LIMIT`].
    pub fn regex(pointer: &str, pattern: &str) -> Result<Self, RuleError> {
        check_pointer(pointer)?;
        let regex = RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| RuleError::BadRegex {
                pattern: pattern.to_owned(),
                source: Cause::new(e),
            })?;
        Ok(Self {
            pointer: pointer.to_owned(),
            test: Test::Regex(regex),
        })
    }

    /// The number at `pointer` lies in `[min, max]`, both inclusive, either
    /// open when `None`. At least one bound; neither may be NaN; `min`
    /// may not exceed `max`. Integers are compared exactly, beyond
    /// `f64`'s 53 bits.
    pub fn range(pointer: &str, min: Option<f64>, max: Option<f64>) -> Result<Self, RuleError> {
        check_pointer(pointer)?;
        if min.is_none() && max.is_none() {
            return Err(RuleError::NoBound);
        }
        if min.is_some_and(f64::is_nan) || max.is_some_and(f64::is_nan) {
            return Err(RuleError::NotANumber);
        }
        if let (Some(lo), Some(hi)) = (min, max)
            && lo > hi
        {
            return Err(RuleError::EmptyRange {
                min: lo.to_string(),
                max: hi.to_string(),
            });
        }
        Ok(Self {
            pointer: pointer.to_owned(),
            test: Test::Range { min, max },
        })
    }

    /// The JSON Pointer, as written.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    /// Whether the condition holds for `args`, and if not, why.
    pub fn check(&self, args: &Value) -> Result<(), Miss> {
        let value = args.pointer(&self.pointer).ok_or(Miss::Absent)?;
        let holds = match (&self.test, value) {
            (Test::Glob { matcher, .. }, Value::String(s)) => matcher.is_match(s),
            (Test::Regex(regex), Value::String(s)) => regex.is_match(s),
            (Test::Range { min, max }, Value::Number(n)) => {
                min.is_none_or(|lo| compare(n, lo) != Ordering::Less)
                    && max.is_none_or(|hi| compare(n, hi) != Ordering::Greater)
            }
            (Test::Range { .. }, other) => {
                return Err(Miss::WrongType {
                    expected: "a number",
                    found: type_name(other),
                });
            }
            (_, other) => {
                return Err(Miss::WrongType {
                    expected: "a string",
                    found: type_name(other),
                });
            }
        };
        if holds { Ok(()) } else { Err(Miss::NoMatch) }
    }

    /// Whether every value this condition holds for, `other` holds for
    /// too: the same pointer and test, or a range inside `other`'s. Used
    /// to find rules that can never decide; it may say no when the answer
    /// is yes (two regular expressions are not compared), never the
    /// reverse.
    pub(super) fn implies(&self, other: &Self) -> bool {
        if self.pointer != other.pointer {
            return false;
        }
        match (&self.test, &other.test) {
            (Test::Glob { text: a, .. }, Test::Glob { text: b, .. }) => a == b,
            (Test::Regex(a), Test::Regex(b)) => a.as_str() == b.as_str(),
            (
                Test::Range {
                    min: min_a,
                    max: max_a,
                },
                Test::Range {
                    min: min_b,
                    max: max_b,
                },
            ) => {
                let lower = match (min_a, min_b) {
                    (_, None) => true,
                    (None, Some(_)) => false,
                    (Some(a), Some(b)) => a >= b,
                };
                let upper = match (max_a, max_b) {
                    (_, None) => true,
                    (None, Some(_)) => false,
                    (Some(a), Some(b)) => a <= b,
                };
                lower && upper
            }
            _ => false,
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "the arguments"
        } else {
            &self.pointer
        };
        match &self.test {
            Test::Glob { text, .. } => write!(f, "{at} matches glob {text:?}"),
            Test::Regex(regex) => write!(f, "{at} matches regex {:?}", regex.as_str()),
            Test::Range { min, max } => match (min, max) {
                (Some(lo), Some(hi)) => write!(f, "{at} is a number from {lo} to {hi}"),
                (Some(lo), None) => write!(f, "{at} is a number of at least {lo}"),
                (None, Some(hi)) => write!(f, "{at} is a number of at most {hi}"),
                (None, None) => write!(f, "{at} is a number"),
            },
        }
    }
}

/// Checks `pointer` against RFC 6901: empty (the whole value) or `/`
/// followed by reference tokens in which `~` is always `~0` or `~1`; and
/// no deeper than any arguments can be ([`MAX_ARGUMENT_DEPTH`]), since a
/// deeper one could never match.
fn check_pointer(pointer: &str) -> Result<(), RuleError> {
    let bad = |reason: &'static str| RuleError::BadPointer {
        pointer: pointer.to_owned(),
        reason,
    };
    if pointer.is_empty() {
        return Ok(());
    }
    if !pointer.starts_with('/') {
        return Err(bad(
            "a JSON Pointer is empty or starts with `/` (`/path`, `/items/0`)",
        ));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(bad(
                "`~` must be followed by `0` (for `~`) or `1` (for `/`)",
            ));
        }
    }
    let depth = pointer.matches('/').count();
    if depth > MAX_ARGUMENT_DEPTH {
        return Err(RuleError::PointerTooDeep {
            pointer: pointer.chars().take(64).collect(),
            depth,
            max: MAX_ARGUMENT_DEPTH,
        });
    }
    Ok(())
}

/// `n` compared with `bound` (not NaN), exactly for integers.
fn compare(n: &Number, bound: f64) -> Ordering {
    let int = n
        .as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from));
    match int {
        Some(i) => compare_int(i, bound),
        // Arguments hold no NaN (JSON has none), so this is total.
        None => n
            .as_f64()
            .and_then(|f| f.partial_cmp(&bound))
            .unwrap_or(Ordering::Less),
    }
}

/// An integer of at most 64 bits compared with a finite or infinite
/// `bound`, without rounding the integer to an `f64`.
fn compare_int(i: i128, bound: f64) -> Ordering {
    // Past ±2^64, every such integer is on one side.
    const BEYOND: f64 = 18_446_744_073_709_551_616.0;
    if bound >= BEYOND {
        return Ordering::Less;
    }
    if bound <= -BEYOND {
        return Ordering::Greater;
    }
    let floor = bound.floor();
    // In range: |floor| < 2^64, which an i128 holds exactly.
    match i.cmp(&(floor as i128)) {
        Ordering::Equal if floor < bound => Ordering::Less,
        other => other,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn o4_a_condition_on_an_absent_pointer_or_another_type_does_not_match() {
        let glob = Condition::glob("/path", "*.md").unwrap();
        assert_eq!(glob.check(&json!({})), Err(Miss::Absent));
        assert_eq!(
            glob.check(&json!({"path": 3})),
            Err(Miss::WrongType {
                expected: "a string",
                found: "a number"
            })
        );
        assert_eq!(glob.check(&json!({"path": ["a.md"]})).unwrap_err(), {
            Miss::WrongType {
                expected: "a string",
                found: "an array",
            }
        });
        assert_eq!(glob.check(&json!({"path": "a.md"})), Ok(()));
        let range = Condition::range("/n", Some(1.0), None).unwrap();
        assert!(matches!(
            range.check(&json!({"n": "5"})),
            Err(Miss::WrongType { .. })
        ));
        assert_eq!(range.check(&json!({"n": 5})), Ok(()));
    }

    #[test]
    fn o4_pointers_follow_rfc_6901() {
        let args = json!({"a/b": {"m~n": ["x", "y"]}, "": 1});
        let c = Condition::glob("/a~1b/m~0n/1", "y").unwrap();
        assert_eq!(c.check(&args), Ok(()));
        // The empty token is the key "".
        let c = Condition::range("/", Some(1.0), Some(1.0)).unwrap();
        assert_eq!(c.check(&args), Ok(()));
        // The empty pointer is the whole value: an object, not a string.
        let c = Condition::glob("", "*").unwrap();
        assert!(matches!(c.check(&args), Err(Miss::WrongType { .. })));
        for bad in ["path", "/a~2", "/a~", "#/a"] {
            let err = Condition::glob(bad, "*").unwrap_err();
            assert!(
                matches!(err, RuleError::BadPointer { .. }),
                "{bad}: {err:?}"
            );
        }
        let deep = "/a".repeat(MAX_ARGUMENT_DEPTH + 1);
        assert!(matches!(
            Condition::glob(&deep, "*").unwrap_err(),
            RuleError::PointerTooDeep { .. }
        ));
        assert!(Condition::glob(&"/a".repeat(MAX_ARGUMENT_DEPTH), "*").is_ok());
    }

    #[test]
    fn o4_a_glob_on_arguments_keeps_to_path_segments_and_normalises_nothing() {
        let c = Condition::glob("/p", "/etc/*").unwrap();
        assert_eq!(c.check(&json!({"p": "/etc/passwd"})), Ok(()));
        assert_eq!(c.check(&json!({"p": "/etc/ssl/x"})), Err(Miss::NoMatch));
        let c = Condition::glob("/p", "/etc/**").unwrap();
        assert_eq!(c.check(&json!({"p": "/etc/ssl/x"})), Ok(()));
        // Not resolved: the rule language says so, and a rule for `..`
        // catches it.
        assert_eq!(
            c.check(&json!({"p": "/tmp/../etc/passwd"})),
            Err(Miss::NoMatch)
        );
        let dots = Condition::regex("/p", r"(^|/)\.\.(/|$)").unwrap();
        assert_eq!(dots.check(&json!({"p": "/tmp/../etc/passwd"})), Ok(()));
        assert_eq!(dots.check(&json!({"p": "..."})), Err(Miss::NoMatch));
    }

    #[test]
    fn o4_a_regex_is_unanchored_and_bounded() {
        let c = Condition::regex("/cmd", "rm -rf").unwrap();
        assert_eq!(c.check(&json!({"cmd": "cd / && rm -rf x"})), Ok(()));
        let anchored = Condition::regex("/cmd", "^ls$").unwrap();
        assert_eq!(
            anchored.check(&json!({"cmd": "ls; rm x"})),
            Err(Miss::NoMatch)
        );
        // Too large once compiled: refused, not built.
        let err = Condition::regex("/cmd", r"\w{1000}{1000}").unwrap_err();
        assert!(matches!(err, RuleError::BadRegex { .. }), "{err:?}");
        let err = Condition::regex("/cmd", "(").unwrap_err();
        assert!(matches!(err, RuleError::BadRegex { .. }), "{err:?}");
        // A huge argument is searched in linear time.
        let c = Condition::regex("/cmd", "(a|aa)*b").unwrap();
        let huge = "a".repeat(1 << 20);
        let started = std::time::Instant::now();
        assert_eq!(c.check(&json!({ "cmd": huge })), Err(Miss::NoMatch));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn o4_a_range_is_inclusive_exact_for_integers_and_never_empty() {
        let c = Condition::range("/n", Some(0.0), Some(10.0)).unwrap();
        for (n, ok) in [
            (json!(0), true),
            (json!(10), true),
            (json!(10.5), false),
            (json!(-1), false),
            (json!(-0.0), true),
        ] {
            assert_eq!(c.check(&json!({ "n": n })).is_ok(), ok, "{n}");
        }
        // 2^53 + 1 is not 2^53, though both are the same f64.
        let c = Condition::range("/n", None, Some(9_007_199_254_740_992.0)).unwrap();
        assert!(c.check(&json!({"n": 9_007_199_254_740_992_u64})).is_ok());
        assert!(c.check(&json!({"n": 9_007_199_254_740_993_u64})).is_err());
        assert!(
            Condition::range("/n", Some(0.5), None)
                .unwrap()
                .check(&json!({"n": 0}))
                .is_err()
        );
        assert!(
            Condition::range("/n", None, Some(f64::INFINITY))
                .unwrap()
                .check(&json!({"n": u64::MAX}))
                .is_ok()
        );
        assert!(matches!(
            Condition::range("/n", Some(2.0), Some(1.0)).unwrap_err(),
            RuleError::EmptyRange { .. }
        ));
        assert_eq!(
            Condition::range("/n", None, None).unwrap_err(),
            RuleError::NoBound
        );
        assert_eq!(
            Condition::range("/n", Some(f64::NAN), None).unwrap_err(),
            RuleError::NotANumber
        );
    }
}
