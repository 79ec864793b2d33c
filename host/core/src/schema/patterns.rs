//! What compiling a schema's regular expressions costs, bounded before the
//! validator is built (rule C9).
//!
//! A `pattern` is a few bytes of text that can compile to megabytes: the
//! Unicode class `\w` alone is about 57 KB once compiled, and `\w{200}`
//! about 11 MB, taking 170 ms. A schema of 64 KiB can hold thousands of
//! such patterns, so the expanded-size bound of [`cost`](super::cost),
//! which counts a pattern as one subschema, says nothing about them. Here
//! every distinct pattern of a schema (a `pattern` keyword's value, a
//! `patternProperties` key) is measured before the validator compiles it:
//!
//! - a regular pattern is compiled by the engine the validator uses for it
//!   (regex-automata's meta engine, which `fancy-regex` delegates regular
//!   patterns to), with a size limit of what is left of the budget, and
//!   its memory as measured is charged;
//! - a pattern that engine cannot compile (look-around, back-references:
//!   `fancy-regex` compiles it as several regular pieces around a
//!   backtracking program) is charged its worst case: as many pieces as it
//!   has `(` and `\` characters plus one (each piece starts at a group or an
//!   escape), each at most the per-pattern limit the validator is then
//!   given, three times (forward and reverse automata and the one-pass
//!   engine each keep a copy of the size).
//!
//! A schema whose patterns need more than [`MAX_SCHEMA_PATTERN_BYTES`], or
//! more than is left of a budget shared by several schemas
//! ([`PatternBudget`]: the host gives each plugin and remote server one for
//! all its tools), is refused, naming the pattern that did not fit. The
//! work is bounded too: compiling is about linear in the size compiled,
//! and the size is bounded.

use std::collections::BTreeSet;

use regex_automata::meta::Regex;
use serde_json::Value;

use super::cost::CostError;

/// The most memory the compiled patterns of one schema may take.
pub const MAX_SCHEMA_PATTERN_BYTES: usize = 4 << 20;

/// The most memory the compiled patterns of all the schemas of one plugin
/// or remote server may take together.
pub const MAX_PLUGIN_PATTERN_BYTES: usize = 16 << 20;

/// The largest size limit one pattern (or one piece of a pattern with
/// look-around) is compiled with; a pattern needing more is refused.
pub const MAX_PATTERN_BYTES: usize = 1 << 20;

/// The most memory one pattern's lazy DFA may cache while it matches, per
/// thread (the engine's default is 2 MiB): past it the cache is cleared, or
/// the match goes on with a slower engine, still in linear time.
pub const PATTERN_CACHE_BYTES: usize = 256 << 10;

/// The smallest per-pattern limit a schema with look-around patterns may be
/// given: below it, the budget cannot cover their worst case.
const MIN_PATTERN_BYTES: usize = 16 << 10;

/// How many copies of its size limit a compiled pattern may keep (forward
/// and reverse automata, the one-pass engine).
const COPIES: usize = 3;

/// Memory left for compiled patterns, shared by the schemas compiled
/// against it (see [`CompiledSchema::compile_within`](super::CompiledSchema::compile_within)).
#[derive(Debug, Clone)]
pub struct PatternBudget {
    left: usize,
}

impl PatternBudget {
    /// A budget of `bytes`.
    pub const fn new(bytes: usize) -> Self {
        Self { left: bytes }
    }

    /// The budget of all the schemas of one plugin or remote server:
    /// [`MAX_PLUGIN_PATTERN_BYTES`].
    pub const fn per_plugin() -> Self {
        Self::new(MAX_PLUGIN_PATTERN_BYTES)
    }

    /// What is left of it.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Takes `bytes` from it; `bytes` was measured within [`left`](Self::left).
    pub(crate) fn charge(&mut self, bytes: usize) {
        self.left = self.left.saturating_sub(bytes);
    }
}

/// What a schema's patterns were measured to need: the bytes charged, and
/// the per-pattern size limit the validator is to be built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PatternCost {
    pub(crate) bytes: usize,
    pub(crate) limit: usize,
}

/// Measures the patterns of `schema` within `available` bytes (at most
/// [`MAX_SCHEMA_PATTERN_BYTES`] are used).
pub(crate) fn measure(schema: &Value, available: usize) -> Result<PatternCost, CostError> {
    let budget = available.min(MAX_SCHEMA_PATTERN_BYTES);
    let mut used = 0usize;
    let mut irregular_pieces = 0usize;
    let mut largest = 0usize;
    for pattern in collect(schema) {
        let left = budget - used;
        let limit = left.min(MAX_PATTERN_BYTES);
        // The settings `fancy-regex` builds the validator's regexes with.
        let config = Regex::config()
            .nfa_size_limit(Some(limit))
            .hybrid_cache_capacity(PATTERN_CACHE_BYTES);
        match Regex::builder().configure(config).build(pattern) {
            Ok(regex) => {
                let size = regex.memory_usage();
                if size > left {
                    return Err(too_large(pattern, limit));
                }
                used += size;
                largest = largest.max(size);
            }
            Err(e) if e.size_limit().is_some() => {
                return Err(too_large(pattern, limit));
            }
            // Not a regular expression this engine takes: look-around or
            // back-references (or no pattern at all, which the validator
            // will refuse itself).
            Err(_) => {
                let pieces = 1 + pattern
                    .bytes()
                    .filter(|b| matches!(b, b'(' | b'\\'))
                    .count();
                irregular_pieces = irregular_pieces.saturating_add(pieces);
            }
        }
    }
    let left = budget - used;
    let limit = if irregular_pieces == 0 {
        MAX_PATTERN_BYTES
    } else {
        let share = left / irregular_pieces.saturating_mul(COPIES);
        if share < MIN_PATTERN_BYTES {
            return Err(CostError::PatternsTooLarge {
                pattern: format!(
                    "each of its {irregular_pieces} pieces of patterns with look-around or back-references"
                ),
                limit: share,
            });
        }
        share.min(MAX_PATTERN_BYTES)
    };
    // Every regular pattern measured must also fit the limit the
    // validator applies to each.
    if largest > limit {
        return Err(CostError::PatternsTooLarge {
            pattern:
                "its largest regular pattern, beside patterns with look-around or back-references,"
                    .to_owned(),
            limit,
        });
    }
    let reserved = irregular_pieces
        .saturating_mul(COPIES)
        .saturating_mul(limit)
        .min(left);
    Ok(PatternCost {
        bytes: used + reserved,
        limit,
    })
}

fn too_large(pattern: &str, limit: usize) -> CostError {
    let mut shown: String = pattern.chars().take(80).collect();
    if shown.len() < pattern.len() {
        shown.push('…');
    }
    CostError::PatternsTooLarge {
        pattern: format!("pattern {shown:?}"),
        limit,
    }
}

/// Every distinct pattern `schema` holds: the string value of each
/// `pattern` member and each key of a `patternProperties` object, wherever
/// they are (a `pattern` inside an `enum` or `default` counts too: the
/// measure may only err on the side of more).
fn collect(schema: &Value) -> BTreeSet<&str> {
    let mut found = BTreeSet::new();
    // A stack rather than recursion: the schema's depth is the guest's.
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(p)) = map.get("pattern") {
                    found.insert(p.as_str());
                }
                if let Some(Value::Object(props)) = map.get("patternProperties") {
                    found.extend(props.keys().map(String::as_str));
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn c9_patterns_are_found_wherever_the_validator_compiles_them() {
        let schema = json!({
            "properties": {
                "a": {"type": "string", "pattern": "^a+$"},
                "b": {"items": {"pattern": "^b$"}},
                "pattern": {"type": "string"}
            },
            "patternProperties": {"^x-": {}, "^a+$": {}}
        });
        let found: Vec<&str> = collect(&schema).into_iter().collect();
        assert_eq!(found, ["^a+$", "^b$", "^x-"]);
    }

    #[test]
    fn c9_ordinary_patterns_cost_little() {
        let schema = json!({"properties": {
            "email": {"pattern": "^[\\w.-]+@[\\w.-]+$"},
            "date": {"pattern": "^\\d{4}-\\d{2}-\\d{2}$"},
            "password": {"pattern": "^(?=.*[A-Z])(?=.*\\d).{8,}$"}
        }});
        let cost = measure(&schema, MAX_SCHEMA_PATTERN_BYTES).unwrap();
        assert!(cost.bytes <= MAX_SCHEMA_PATTERN_BYTES, "{cost:?}");
        assert!(cost.limit >= 256 << 10, "{cost:?}");
    }

    #[test]
    fn c9_a_pattern_that_compiles_to_megabytes_is_refused_naming_it() {
        let schema = json!({"pattern": "\\w{200}"});
        let err = measure(&schema, MAX_SCHEMA_PATTERN_BYTES).unwrap_err();
        assert_eq!(
            err.to_string(),
            "pattern \"\\\\w{200}\" needs more than the 1048576 bytes it may take once compiled (at most 1 MiB a pattern, 4 MiB for the patterns of a schema, 16 MiB for those of all the tools of a plugin or server)"
        );
    }

    #[test]
    fn c9_thousands_of_patterns_in_one_schema_are_refused_before_most_are_compiled() {
        let props: serde_json::Map<String, Value> = (0..2_800)
            .map(|i| (format!("p{i}"), json!({"pattern": format!("\\w{{2}}x{i}")})))
            .collect();
        let schema = json!({"properties": props});
        let started = std::time::Instant::now();
        assert!(matches!(
            measure(&schema, MAX_SCHEMA_PATTERN_BYTES),
            Err(CostError::PatternsTooLarge { .. })
        ));
        // Reported, not asserted: the work is bounded by the budget.
        eprintln!("refused in {:?}", started.elapsed());
    }

    #[test]
    fn c9_look_around_patterns_are_charged_their_worst_case() {
        let many: serde_json::Map<String, Value> = (0..200)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"pattern": format!("(?=a{i})\\w(?!b)\\w")}),
                )
            })
            .collect();
        assert!(matches!(
            measure(&json!({"properties": many}), MAX_SCHEMA_PATTERN_BYTES),
            Err(CostError::PatternsTooLarge { .. })
        ));
        let one = measure(&json!({"pattern": "(?=a)\\w"}), MAX_SCHEMA_PATTERN_BYTES).unwrap();
        assert!(one.bytes <= MAX_SCHEMA_PATTERN_BYTES && one.limit >= MIN_PATTERN_BYTES);
    }

    #[test]
    fn c9_a_shared_budget_runs_out_across_schemas() {
        let schema = json!({"properties": {
            "a": {"pattern": "\\w{10}"},
            "b": {"pattern": "\\w{11}"}
        }});
        let mut budget = PatternBudget::new(MAX_PLUGIN_PATTERN_BYTES);
        let mut compiled = 0;
        loop {
            match measure(&schema, budget.left()) {
                Ok(cost) => {
                    budget.charge(cost.bytes);
                    compiled += 1;
                }
                Err(CostError::PatternsTooLarge { .. }) => break,
                Err(other) => panic!("{other}"),
            }
            assert!(compiled < 10_000, "the budget never ran out");
        }
        assert!(compiled > 0);
    }
}
