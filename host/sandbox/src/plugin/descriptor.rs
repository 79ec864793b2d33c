//! The checks of the tool descriptors a guest lists (rule C3): how many,
//! each name valid and unique, each description and schema within its
//! bound, each schema JSON that compiles as a JSON Schema. A list that
//! fails one is refused whole, naming the tool and the bound.

use toolhost_core::schema::PatternBudget;
use toolhost_core::tool::{ToolHints, ToolSpec};
use toolhost_core::{Cause, CompiledSchema};

use crate::bindings::v03::toolhost::plugin::types;
use crate::error::{SchemaKind, ToolListError};
use crate::policy::GuestBounds;

/// A tool's schemas as [`specs_from_descriptors`] compiled them: the
/// compiled forms of its spec's `parameters` and `output_schema`, handed
/// to the registry so that it does not compile them again.
#[derive(Clone)]
pub(crate) struct Schemas {
    pub(crate) parameters: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
}

impl Schemas {
    /// Builds what a [deferred](Checked::Before) schema put off, in the
    /// background of a start, so that the first call does not wait for it.
    pub(crate) fn prepare(&self) {
        for schema in std::iter::once(&self.parameters).chain(&self.output) {
            // A failure is the call's to report, with its reason.
            let _ = schema.prepare();
        }
    }
}

/// Whether a tool list's schemas are compiled as they are read or were
/// compiled when the list was first read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checked {
    /// They come from the guest: each is compiled now, and one that does
    /// not compile refuses the list.
    Now,
    /// They come from the authenticated record of a list that passed
    /// [`Checked::Now`] (the cache's tool list): their cost is bounded
    /// again, and their validators are built when first needed
    /// ([`CompiledSchema::deferred`]).
    Before,
}

/// Converts the guest's descriptors, checking each: within `bounds` (count,
/// description and schema sizes), a valid name, a schema that is JSON and
/// compiles, no duplicates.
pub(crate) fn specs_from_descriptors(
    descriptors: Vec<types::ToolDescriptor>,
    bounds: &GuestBounds,
    checked: Checked,
) -> Result<Vec<(ToolSpec, Schemas)>, ToolListError> {
    if descriptors.len() > bounds.max_tools {
        return Err(ToolListError::TooMany {
            count: descriptors.len(),
            limit: bounds.max_tools,
        });
    }
    let mut seen = std::collections::HashSet::new();
    // One budget for the compiled patterns of all the plugin's schemas.
    let mut patterns = PatternBudget::per_plugin();
    descriptors
        .into_iter()
        .map(|d| {
            ToolSpec::validate_name(&d.name).map_err(ToolListError::Name)?;
            if d.description.len() > bounds.max_description_bytes {
                return Err(ToolListError::DescriptionTooLong {
                    tool: d.name,
                    len: d.description.len(),
                    limit: bounds.max_description_bytes,
                });
            }
            if !seen.insert(d.name.clone()) {
                return Err(ToolListError::Duplicate { tool: d.name });
            }
            let (parameters, schema) = schema_from_guest(
                &d.name,
                &d.parameters_schema,
                SchemaKind::Parameters,
                bounds,
                checked,
                &mut patterns,
            )?;
            let (output_schema, output) = match &d.output_schema {
                Some(text) => {
                    let (value, compiled) = schema_from_guest(
                        &d.name,
                        text,
                        SchemaKind::Output,
                        bounds,
                        checked,
                        &mut patterns,
                    )?;
                    (Some(value), Some(compiled))
                }
                None => (None, None),
            };
            let spec = ToolSpec {
                name: d.name,
                description: d.description,
                parameters,
                concurrency_safe: d.concurrency_safe,
                idempotent: d.idempotent,
                output_schema,
                hints: hints_from_guest(&d.hints),
            };
            Ok((
                spec,
                Schemas {
                    parameters: schema,
                    output,
                },
            ))
        })
        .collect()
}

/// A guest's hints about a tool's effects, as declared.
fn hints_from_guest(h: &types::ToolHints) -> ToolHints {
    let mut hints = ToolHints::NONE;
    hints.read_only = h.read_only;
    hints.destructive = h.destructive;
    hints.open_world = h.open_world;
    hints
}

/// Reads one of a tool's schemas: within the size bound, JSON, and a JSON
/// Schema that compiles, its patterns within what is left of `patterns`.
fn schema_from_guest(
    tool: &str,
    text: &str,
    kind: SchemaKind,
    bounds: &GuestBounds,
    checked: Checked,
    patterns: &mut PatternBudget,
) -> Result<(serde_json::Value, CompiledSchema), ToolListError> {
    if text.len() > bounds.max_schema_bytes {
        return Err(ToolListError::SchemaTooLong {
            tool: tool.to_owned(),
            schema: kind,
            len: text.len(),
            limit: bounds.max_schema_bytes,
        });
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ToolListError::SchemaNotJson {
            tool: tool.to_owned(),
            schema: kind,
            source: Cause::new(e),
        })?;
    let compiled = match checked {
        Checked::Now => CompiledSchema::compile_within(&value, patterns),
        Checked::Before => CompiledSchema::deferred(value.clone()),
    }
    .map_err(|source| ToolListError::SchemaInvalid {
        tool: tool.to_owned(),
        schema: kind,
        source,
    })?;
    Ok((value, compiled))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(name: &str) -> types::ToolDescriptor {
        types::ToolDescriptor {
            name: name.to_owned(),
            description: "does a thing".to_owned(),
            parameters_schema: r#"{"type":"object"}"#.to_owned(),
            concurrency_safe: Some(true),
            idempotent: false,
            output_schema: None,
            hints: crate::bindings::NO_HINTS,
        }
    }

    fn refusal(descriptors: Vec<types::ToolDescriptor>, bounds: &GuestBounds) -> ToolListError {
        match specs_from_descriptors(descriptors, bounds, Checked::Now) {
            Ok(_) => panic!("expected the list to be refused"),
            Err(e) => e,
        }
    }

    #[test]
    fn t1_a_descriptor_becomes_a_spec_with_its_schemas() {
        let mut d = descriptor("echo");
        d.output_schema = Some(r#"{"type":"string"}"#.to_owned());
        let specs = specs_from_descriptors(vec![d], &GuestBounds::default(), Checked::Now).unwrap();
        let [(spec, _schema)] = specs.as_slice() else {
            panic!("expected one spec, got {}", specs.len());
        };
        assert_eq!(spec.name, "echo");
        assert_eq!(spec.description, "does a thing");
        assert_eq!(spec.parameters, serde_json::json!({"type": "object"}));
        assert_eq!(
            spec.output_schema,
            Some(serde_json::json!({"type": "string"}))
        );
        assert_eq!(spec.concurrency_safe, Some(true));
        assert!(!spec.idempotent);
        assert!(spec.hints.is_empty());
    }

    #[test]
    fn c3_a_cached_list_is_checked_again_but_its_validators_wait_for_use() {
        let valid = |output: Option<&str>| {
            let mut d = descriptor("echo");
            d.parameters_schema = r#"{"type":"object","required":["text"]}"#.to_owned();
            d.output_schema = output.map(str::to_owned);
            d
        };
        let specs = specs_from_descriptors(
            vec![valid(Some(r#"{"type":"string"}"#))],
            &GuestBounds::default(),
            Checked::Before,
        )
        .unwrap();
        let [(_, schemas)] = specs.as_slice() else {
            panic!("expected one spec");
        };
        assert!(schemas.parameters.validate(&serde_json::json!({})).is_err());
        assert!(
            schemas
                .parameters
                .validate(&serde_json::json!({"text": "hi"}))
                .is_ok()
        );
        let output = schemas.output.as_ref().expect("the output schema");
        assert!(output.validate_output(&serde_json::json!(1)).is_err());
        // Bounds, names and JSON are checked whichever way: only the
        // validators' build waits.
        let bounds = GuestBounds {
            max_schema_bytes: 8,
            ..GuestBounds::default()
        };
        for (descriptors, bounds) in [
            (vec![valid(None)], &bounds),
            (vec![valid(Some("{not json"))], &GuestBounds::default()),
            (vec![valid(None), valid(None)], &GuestBounds::default()),
        ] {
            assert!(
                specs_from_descriptors(descriptors, bounds, Checked::Before).is_err(),
                "a cached list is held to the guest's bounds"
            );
        }
        // Each level an `allOf` of two references to the next: 2^40 nodes.
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            let next = format!("#/$defs/l{}", i + 1);
            defs.insert(
                format!("l{i}"),
                serde_json::json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert("l40".into(), serde_json::json!({"type": "string"}));
        let mut unbounded = descriptor("deep");
        unbounded.parameters_schema = serde_json::json!({
            "$defs": defs,
            "properties": {"x": {"$ref": "#/$defs/l0"}}
        })
        .to_string();
        assert!(
            specs_from_descriptors(vec![unbounded], &GuestBounds::default(), Checked::Before)
                .is_err()
        );
    }

    #[test]
    fn o4_a_tools_declared_hints_reach_its_spec() {
        let mut d = descriptor("rm");
        d.hints = types::ToolHints {
            read_only: Some(false),
            destructive: Some(true),
            open_world: None,
        };
        let specs = specs_from_descriptors(vec![d], &GuestBounds::default(), Checked::Now).unwrap();
        let hints = specs[0].0.hints;
        assert_eq!(hints, ToolHints::NONE.read_only(false).destructive(true));
    }

    #[test]
    fn c3_more_tools_than_the_bound_are_refused() {
        let bounds = GuestBounds {
            max_tools: 1,
            ..GuestBounds::default()
        };
        let err = refusal(vec![descriptor("a"), descriptor("b")], &bounds);
        assert!(
            matches!(err, ToolListError::TooMany { count: 2, limit: 1 }),
            "{err:?}"
        );
    }

    #[test]
    fn c3_a_description_past_its_bound_is_refused() {
        let bounds = GuestBounds {
            max_description_bytes: 4,
            ..GuestBounds::default()
        };
        let err = refusal(vec![descriptor("a")], &bounds);
        assert!(
            matches!(&err, ToolListError::DescriptionTooLong { tool, len: 12, limit: 4 } if tool == "a"),
            "{err:?}"
        );
    }

    #[test]
    fn c3_a_schema_past_its_bound_is_refused_naming_which() {
        let bounds = GuestBounds {
            max_schema_bytes: 20,
            ..GuestBounds::default()
        };
        let mut d = descriptor("a");
        d.output_schema = Some(format!(r#"{{"description":"{}"}}"#, "x".repeat(20)));
        let err = refusal(vec![d], &bounds);
        assert!(
            matches!(
                &err,
                ToolListError::SchemaTooLong {
                    schema: SchemaKind::Output,
                    limit: 20,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn c3_an_invalid_tool_name_is_refused() {
        let err = refusal(
            vec![descriptor("no spaces allowed")],
            &GuestBounds::default(),
        );
        assert!(matches!(err, ToolListError::Name(_)), "{err:?}");
    }

    #[test]
    fn t3_a_repeated_tool_name_is_refused() {
        let err = refusal(
            vec![descriptor("twice"), descriptor("twice")],
            &GuestBounds::default(),
        );
        assert!(
            matches!(&err, ToolListError::Duplicate { tool } if tool == "twice"),
            "{err:?}"
        );
    }

    #[test]
    fn t2_a_schema_that_is_not_json_or_does_not_compile_is_refused() {
        let mut not_json = descriptor("a");
        not_json.parameters_schema = "{".to_owned();
        let err = refusal(vec![not_json], &GuestBounds::default());
        assert!(
            matches!(
                err,
                ToolListError::SchemaNotJson {
                    schema: SchemaKind::Parameters,
                    ..
                }
            ),
            "{err:?}"
        );
        let mut invalid = descriptor("b");
        invalid.parameters_schema = r#"{"type":"no such type"}"#.to_owned();
        let err = refusal(vec![invalid], &GuestBounds::default());
        assert!(
            matches!(
                err,
                ToolListError::SchemaInvalid {
                    schema: SchemaKind::Parameters,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
