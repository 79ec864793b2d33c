//! [`CompiledSchema`]: a tool's parameters or output schema, measured and
//! compiled once.
//!
//! A schema comes from whoever offers the tool, a plugin or a remote server,
//! so compiling it first bounds what validating against it can cost
//! ([`cost`], rule C9), and patterns run with a backtracking budget.

pub mod cost;
pub mod patterns;

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::error::ToolError;

pub use cost::{CostError, MAX_EXPANDED_NODES};
pub use patterns::PatternBudget;

/// How many steps a `pattern` with backreferences or look-around may
/// backtrack for one string before the match counts as failed. Patterns
/// without those features run on a linear-time engine and never backtrack.
pub const PATTERN_BACKTRACK_LIMIT: usize = 10_000;

/// Builds, once per process, what the first [`CompiledSchema::compile`]
/// needs before it can check a schema: the validator of the JSON Schema
/// meta-schema (draft 2020-12, the default), about a millisecond and a half
/// of work. A program about to compile schemas may call this on a spare
/// thread at start-up so that the work overlaps its own; a compile that
/// comes first builds the validator itself, or waits for the build under
/// way. Calling it again costs nothing.
pub fn prepare_meta_schema() {
    let _ = jsonschema::meta::is_valid(&Value::Object(serde_json::Map::new()));
}

/// A JSON Schema compiled for validating arguments. Cloning shares the
/// compiled form, so a schema compiled while loading a plugin or listing a
/// remote server's tools is not compiled again at registration (see
/// [`Tool::compiled_schema`](crate::Tool::compiled_schema)).
#[derive(Clone)]
pub struct CompiledSchema(Arc<Compiled>);

struct Compiled {
    /// The validator, built at [`CompiledSchema::compile`] or, for a
    /// [deferred](CompiledSchema::deferred) schema, on first use.
    validator: OnceLock<Result<jsonschema::Validator, SchemaError>>,
    /// A deferred schema's text, which its validator is built from.
    deferred: Option<Value>,
    /// Subschemas once every `$ref` is expanded ([`cost::check`]).
    expanded_nodes: usize,
}

/// Why a schema is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// It is not a valid JSON Schema: the compiler's complaint.
    #[error("{reason}")]
    Invalid {
        /// What the schema compiler rejected.
        reason: String,
    },
    /// Validating against it could take unbounded time (rule C9). The
    /// reason is the source (an error report shows it once).
    #[error("validating against it cannot be bounded")]
    Unbounded(#[from] CostError),
}

impl CompiledSchema {
    /// Compiles `schema`, refusing one that is not a valid JSON Schema or
    /// whose validation cost cannot be bounded (rule C9): its patterns may
    /// take at most [`patterns::MAX_SCHEMA_PATTERN_BYTES`] once compiled.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        Self::compile_within(
            schema,
            &mut PatternBudget::new(patterns::MAX_SCHEMA_PATTERN_BYTES),
        )
    }

    /// [`compile`](Self::compile), its patterns' memory taken from
    /// `budget`, which the schemas of one plugin or remote server share
    /// ([`PatternBudget::per_plugin`]): a schema whose patterns do not fit
    /// what is left is refused, naming the pattern, before it is compiled.
    pub fn compile_within(schema: &Value, budget: &mut PatternBudget) -> Result<Self, SchemaError> {
        let expanded_nodes = cost::check(schema)?;
        let patterns = patterns::measure(schema, budget.left())?;
        let validator = build(schema, patterns.limit)?;
        budget.charge(patterns.bytes);
        Ok(Self(Arc::new(Compiled {
            validator: OnceLock::from(Ok(validator)),
            deferred: None,
            expanded_nodes,
        })))
    }

    /// A schema that [`compile`](Self::compile) accepted before, in a
    /// record this process trusts (the authenticated tool list a cache
    /// kept of it): its cost is bounded now (rule C9), and its validator
    /// is built on first use or by [`prepare`](Self::prepare). This keeps
    /// the meta-schema's validator, a millisecond and a half of work, off
    /// the path of a start that lists cached tools. Should the build fail
    /// after all, every value is refused with its reason.
    pub fn deferred(schema: Value) -> Result<Self, SchemaError> {
        let expanded_nodes = cost::check(&schema)?;
        Ok(Self(Arc::new(Compiled {
            validator: OnceLock::new(),
            deferred: Some(schema),
            expanded_nodes,
        })))
    }

    /// Builds a [deferred](Self::deferred) schema's validator now, so that
    /// its first use does not; what [`compile`](Self::compile) would have
    /// refused it for, if anything.
    pub fn prepare(&self) -> Result<(), SchemaError> {
        self.validator().map(|_| ())
    }

    /// Whether its validator is built (or failed to build): always after
    /// [`compile`](Self::compile); for a [deferred](Self::deferred) schema,
    /// once it was used or prepared.
    pub fn is_built(&self) -> bool {
        self.0.validator.get().is_some()
    }

    fn validator(&self) -> Result<&jsonschema::Validator, SchemaError> {
        self.0
            .validator
            .get_or_init(|| match &self.0.deferred {
                Some(schema) => patterns::measure(schema, patterns::MAX_SCHEMA_PATTERN_BYTES)
                    .map_err(SchemaError::from)
                    .and_then(|p| build(schema, p.limit)),
                None => unreachable!("`compile` sets the validator it built"),
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A measure of the work validating `value` may take: the schema's
    /// expanded size times the size of the value's text. Callers use it to
    /// decide whether validation may run on an async worker or needs a
    /// thread of its own.
    pub fn work(&self, value_bytes: usize) -> usize {
        self.0.expanded_nodes.saturating_mul(value_bytes.max(1))
    }

    /// Checks `args` against the schema (rule T2). The error names the
    /// first offending JSON path and the schema's complaint.
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.check(args)
            .map_err(|(path, message)| ToolError::InvalidArguments { path, message })
    }

    /// Checks a tool's structured result against its output schema (rule
    /// N2): [`ToolError::InvalidOutput`] naming the first offending path.
    pub fn validate_output(&self, value: &Value) -> Result<(), ToolError> {
        self.check(value)
            .map_err(|(path, message)| ToolError::InvalidOutput { path, message })
    }

    /// The first place where `value` breaks the schema, if any, with the
    /// path as its segments: for callers that report it in their own terms
    /// (a setting's dotted key, say) rather than as a JSON pointer.
    pub fn first_violation(&self, value: &Value) -> Option<Violation> {
        let validator = match self.validator() {
            Ok(validator) => validator,
            Err(e) => {
                return Some(Violation {
                    path: Vec::new(),
                    missing: None,
                    message: unusable(&e),
                });
            }
        };
        let error = validator.iter_errors(value).next()?;
        let path = error
            .instance_path()
            .iter()
            .map(|segment| segment.to_string())
            .collect();
        let missing = match error.kind() {
            jsonschema::error::ValidationErrorKind::Required { property } => {
                property.as_str().map(str::to_owned)
            }
            _ => None,
        };
        Some(Violation {
            path,
            missing,
            message: error.to_string(),
        })
    }

    fn check(&self, value: &Value) -> Result<(), (String, String)> {
        self.validator()
            .map_err(|e| (String::new(), unusable(&e)))?
            .validate(value)
            .map_err(|e| (e.instance_path().as_str().to_owned(), e.to_string()))
    }
}

/// Builds the validator of `schema`, which checks it against its
/// meta-schema first, compiling each pattern within `pattern_limit` bytes
/// (what [`patterns::measure`] found).
fn build(schema: &Value, pattern_limit: usize) -> Result<jsonschema::Validator, SchemaError> {
    let patterns = jsonschema::PatternOptions::fancy_regex()
        .backtrack_limit(PATTERN_BACKTRACK_LIMIT)
        .size_limit(pattern_limit)
        .dfa_size_limit(patterns::PATTERN_CACHE_BYTES);
    jsonschema::options()
        .with_pattern_options(patterns)
        .build(schema)
        .map_err(|e| SchemaError::Invalid {
            reason: e.to_string(),
        })
}

/// Why a value is refused by a deferred schema that did not compile.
fn unusable(e: &SchemaError) -> String {
    format!(
        "the tool's schema does not compile: {}",
        crate::error::report(e)
    )
}

/// Where a value breaks a schema: [`CompiledSchema::first_violation`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Violation {
    /// The offending value's place: object keys and array indices, outermost
    /// first; empty for the value itself.
    pub path: Vec<String>,
    /// The property a `required` keyword found missing, when that is what
    /// failed (the path is then the object that lacks it).
    pub missing: Option<String>,
    /// The schema's complaint, in the validator's words.
    pub message: String,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompiledSchema")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn t2_schemas_are_still_checked_against_the_meta_schema_prepared_on_other_threads() {
        let threads: Vec<_> = (0..3)
            .map(|_| std::thread::spawn(prepare_meta_schema))
            .collect();
        // A compile racing the preparation waits for it, or does it.
        let refused = CompiledSchema::compile(&json!({"type": 12}));
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(
            matches!(refused, Err(SchemaError::Invalid { .. })),
            "{:?}",
            refused.err()
        );
        assert!(matches!(
            CompiledSchema::compile(&json!({"minLength": "three"})),
            Err(SchemaError::Invalid { .. })
        ));
        assert!(CompiledSchema::compile(&json!({"type": "string"})).is_ok());
    }

    #[test]
    fn t2_a_schema_compiles_once_and_validates_naming_the_path() {
        let schema = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}}
        }))
        .unwrap();
        let shared = schema.clone();
        assert!(shared.validate(&json!({"n": 1})).is_ok());
        match schema.validate(&json!({"n": "x"})) {
            Err(ToolError::InvalidArguments { path, .. }) => assert_eq!(path, "/n"),
            other => panic!("{other:?}"),
        }
        let err = CompiledSchema::compile(&json!({"type": "no-such-type"})).unwrap_err();
        assert!(matches!(err, SchemaError::Invalid { .. }), "{err}");
    }

    #[test]
    fn c9_an_unbounded_schema_is_refused_when_compiled() {
        for depth in [20, 28, 40, 60] {
            let err = CompiledSchema::compile(&cost::tests_support::doubling(depth)).unwrap_err();
            assert!(
                matches!(err, SchemaError::Unbounded(CostError::TooLarge { .. })),
                "{err}"
            );
            assert!(err.to_string().contains("cannot be bounded"), "{err}");
        }
    }

    #[test]
    fn t2_a_deferred_schema_judges_values_as_a_compiled_one_does() {
        let text = json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}, "s": {"pattern": "^(a*)*\\1b$"}},
            "required": ["n"]
        });
        let compiled = CompiledSchema::compile(&text).unwrap();
        let deferred = CompiledSchema::deferred(text).unwrap();
        // From several threads at once: the build happens once.
        let values = [
            json!({"n": 1}),
            json!({"n": "x"}),
            json!({}),
            json!({"n": 1, "s": "a".repeat(40)}),
        ];
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for value in &values {
                        assert_eq!(
                            format!("{:?}", deferred.validate(value)),
                            format!("{:?}", compiled.validate(value)),
                            "{value}"
                        );
                        assert_eq!(
                            deferred.first_violation(value),
                            compiled.first_violation(value)
                        );
                    }
                });
            }
        });
        assert_eq!(deferred.work(10), compiled.work(10));
        assert!(deferred.is_built() && compiled.is_built());
        let unused = CompiledSchema::deferred(json!({"type": "string"})).unwrap();
        assert!(!unused.is_built());
        assert!(unused.prepare().is_ok());
        assert!(unused.is_built());
    }

    #[test]
    fn c9_a_deferred_schema_is_bounded_at_once() {
        let err = CompiledSchema::deferred(cost::tests_support::doubling(40)).unwrap_err();
        assert!(matches!(err, SchemaError::Unbounded(_)), "{err}");
    }

    #[test]
    fn t2_a_deferred_schema_that_does_not_compile_refuses_every_value_with_its_reason() {
        // Only a record the host trusts is deferred; should it hold a
        // schema that does not compile, nothing passes it.
        let schema = CompiledSchema::deferred(json!({"type": 12})).unwrap();
        for value in [json!(12), json!("x"), json!({})] {
            match schema.validate(&value) {
                Err(ToolError::InvalidArguments { path, message }) => {
                    assert_eq!(path, "");
                    assert!(message.contains("does not compile"), "{message}");
                }
                other => panic!("{value}: {other:?}"),
            }
            assert!(matches!(
                schema.validate_output(&value),
                Err(ToolError::InvalidOutput { .. })
            ));
            let violation = schema.first_violation(&value).expect("refused");
            assert!(violation.message.contains("does not compile"));
        }
        assert!(matches!(schema.prepare(), Err(SchemaError::Invalid { .. })));
    }

    #[test]
    fn c9_a_catastrophic_pattern_fails_the_value_instead_of_hanging() {
        // A backreference forces the backtracking engine; `(a*)*\1b` on a
        // long run of `a`s backtracks exponentially without a budget.
        let schema = CompiledSchema::compile(&json!({
            "type": "array",
            "items": {"type": "string", "pattern": "^(a*)*\\1b$"}
        }))
        .unwrap();
        let value = json!(vec!["a".repeat(40); 200]);
        assert!(schema.validate(&value).is_err());
    }
}
