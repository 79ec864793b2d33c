//! What validating against a schema can cost, bounded before it is compiled
//! (rule C9).
//!
//! A schema comes from outside the host (a plugin, a remote MCP server), and
//! JSON Schema lets a small document describe exponential work: a chain of
//! `$defs`, each an `allOf` of two `$ref`s to the next, makes a validator
//! apply the last definition 2^depth times to the same value, and a
//! recursive definition that refers to itself twice at the same place does
//! the same along the depth of the value. The validator has no budget of
//! its own, so the host measures the schema first and refuses one whose
//! cost it cannot bound:
//!
//! - every `$ref` is expanded where it is used, as the validator applies
//!   it, and the expanded schema may hold at most [`MAX_EXPANDED_NODES`]
//!   subschemas;
//! - a reference back to a definition that is being expanded (recursion) is
//!   allowed only when it moves to another part of the value, and when no
//!   two such references of the same definition can reach the same part of
//!   it: each pass through the recursion then covers a distinct part of the
//!   value, so the work grows with the value, not exponentially;
//! - a reference must point inside the schema (`#`, `#/json/pointer`,
//!   `#anchor`, or the `$id` of one of its subschemas): a host that bounds
//!   work cannot follow one it cannot see.
//!
//! The walk itself stops as soon as the budget is spent, so measuring costs
//! at most [`MAX_EXPANDED_NODES`] steps whatever the schema.
//!
//! The analysis is conservative: it may refuse a schema whose recursion is
//! in fact harmless (two recursive references of one definition where one
//! path is a prefix of the other), never accept one that is not.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The most subschemas a schema may hold once every `$ref` is expanded
/// where it is used. Real tool schemas hold tens to a few hundred; the
/// exponential family of depth 14 already needs more.
pub const MAX_EXPANDED_NODES: usize = 20_000;

/// Why validating against a schema cannot be bounded (rule C9).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CostError {
    /// The schema's regular expressions would take more memory once
    /// compiled than is left for them ([`patterns`](super::patterns)).
    #[error(
        "{pattern} needs more than the {limit} bytes it may take once compiled (at most 1 MiB a pattern, 4 MiB for the patterns of a schema, 16 MiB for those of all the tools of a plugin or server)"
    )]
    PatternsTooLarge {
        /// The pattern that did not fit (its first 80 characters), or which
        /// patterns.
        pattern: String,
        /// The bytes it could have taken: the bound of one pattern, or what
        /// was left of the schema's or the plugin's.
        limit: usize,
    },
    /// Expanding every `$ref` where it is used gives more subschemas than the
    /// bound.
    #[error(
        "the schema expands to more than {limit} subschemas once each `$ref` is followed where it is used (refs that fan out to the same definition repeatedly make validation exponential)"
    )]
    TooLarge {
        /// [`MAX_EXPANDED_NODES`].
        limit: usize,
    },
    /// A `$ref` leads back to the definition it is in without moving to
    /// another part of the value: validation would never end.
    #[error("`$ref` {reference:?} at {at} refers back to itself without descending into the value")]
    InPlaceCycle {
        /// The reference, as written.
        reference: String,
        /// The JSON pointer of the subschema holding it.
        at: String,
    },
    /// Two recursive references of one definition can apply to the same part
    /// of the value, so each level of the value doubles the work.
    #[error(
        "`$ref` {reference:?} at {at} recurses into the same part of the value as another reference to the same definition, which makes validation exponential in the value's depth"
    )]
    MultipliedRecursion {
        /// The reference, as written.
        reference: String,
        /// The JSON pointer of the subschema holding it.
        at: String,
    },
    /// A `$ref` that does not point inside the schema.
    #[error(
        "`$ref` {reference:?} at {at} does not point inside the schema; only `#`, `#/json/pointer`, `#anchor` and subschema `$id`s are followed"
    )]
    Unresolvable {
        /// The reference, as written.
        reference: String,
        /// The JSON pointer of the subschema holding it.
        at: String,
    },
}

/// Checks that validating against `schema` has a bounded cost, as described
/// in the module documentation, and returns how many subschemas it expands
/// to: the most a validator applies to any one part of a value.
pub fn check(schema: &Value) -> Result<usize, CostError> {
    let index = Index::build(schema);
    let mut walk = Walk {
        index: &index,
        budget: MAX_EXPANDED_NODES,
        frames: Vec::new(),
        instance: Vec::new(),
        recursions: HashMap::new(),
        pointer: Vec::new(),
    };
    walk.schema(schema)?;
    Ok(MAX_EXPANDED_NODES - walk.budget)
}

/// One step from a value to a part of it, as a keyword descends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step<'s> {
    /// The member of that name (`properties`).
    Key(&'s str),
    /// Some member of an object (`patternProperties`, …); with a map, any
    /// member but those it names (`additionalProperties` beside
    /// `properties`).
    Member(Option<&'s Map<String, Value>>),
    /// Some item of an array (`items`, `prefixItems`, `contains`, …).
    Item,
    /// Something that is not a part of the value: its member names
    /// (`propertyNames`) or its decoded content (`contentSchema`).
    Other,
}

impl Step<'_> {
    /// Whether two steps can lead to the same part of one value: a value
    /// is an object or an array, never both.
    fn may_meet(self, other: Self) -> bool {
        match (self, other) {
            (Step::Key(a), Step::Key(b)) => a == b,
            (Step::Key(name), Step::Member(Some(except)))
            | (Step::Member(Some(except)), Step::Key(name)) => !except.contains_key(name),
            (Step::Key(_) | Step::Member(_), Step::Key(_) | Step::Member(_)) => true,
            (Step::Item, Step::Item) | (Step::Other, Step::Other) => true,
            _ => false,
        }
    }
}

/// Whether two descents from one definition can lead to the same part of
/// the value, or one to a part inside the other's (then the recursions
/// interleave and their counts multiply).
fn overlap(a: &[Step<'_>], b: &[Step<'_>]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.may_meet(*y))
}

/// Where references can point: anchors and `$id`s of the document.
struct Index<'s> {
    root: &'s Value,
    /// `$anchor` and `$dynamicAnchor` names (draft 2019+), and draft-6/7
    /// `$id: "#name"` fragments.
    anchors: HashMap<&'s str, &'s Value>,
    /// Every `$id` as written, and the root's `$id` without a fragment.
    ids: HashMap<&'s str, &'s Value>,
    root_id: Option<&'s str>,
}

impl<'s> Index<'s> {
    fn build(root: &'s Value) -> Self {
        let mut index = Self {
            root,
            anchors: HashMap::new(),
            ids: HashMap::new(),
            root_id: root
                .get("$id")
                .and_then(Value::as_str)
                .map(|id| id.trim_end_matches('#')),
        };
        index.collect(root, 0);
        index
    }

    fn collect(&mut self, value: &'s Value, depth: usize) {
        // Deeper than any schema a host accepts; the bound keeps the
        // recursion safe on a hostile document.
        if depth > 256 {
            return;
        }
        match value {
            Value::Object(map) => {
                for key in ["$anchor", "$dynamicAnchor"] {
                    if let Some(name) = map.get(key).and_then(Value::as_str) {
                        self.anchors.insert(name, value);
                    }
                }
                if let Some(id) = map.get("$id").and_then(Value::as_str) {
                    match id.strip_prefix('#') {
                        Some(anchor) => {
                            self.anchors.insert(anchor, value);
                        }
                        None => {
                            self.ids.insert(id.trim_end_matches('#'), value);
                        }
                    }
                }
                for v in map.values() {
                    self.collect(v, depth + 1);
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.collect(v, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// The subschema `reference` points to, if it is inside the document.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let (base, fragment) = match reference.split_once('#') {
            Some((base, fragment)) => (base, Some(fragment)),
            None => (reference, None),
        };
        let document = if base.is_empty() || Some(base) == self.root_id {
            self.root
        } else {
            self.ids.get(base).copied()?
        };
        match fragment {
            None | Some("") => Some(document),
            Some(f) if f.starts_with('/') => document.pointer(&percent_decode(f)?),
            Some(anchor) => self.anchors.get(anchor).copied(),
        }
    }
}

/// Undoes the percent-encoding a URI fragment may use (`%25` for `%`).
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A definition being expanded, and how deep into the value it started.
struct Frame<'s> {
    target: &'s Value,
    instance_depth: usize,
}

struct Walk<'i, 's> {
    index: &'i Index<'s>,
    budget: usize,
    /// Definitions being expanded, outermost first.
    frames: Vec<Frame<'s>>,
    /// The path from the value's root to the part being validated.
    instance: Vec<Step<'s>>,
    /// For each definition reached again while expanding it: the descents
    /// each such reference makes from where the definition applied.
    recursions: HashMap<*const Value, Vec<Vec<Step<'s>>>>,
    /// Where in the schema document the walk is, for errors.
    pointer: Vec<String>,
}

/// Keywords whose value is one subschema applied to the same value.
const IN_PLACE: &[&str] = &["not", "if", "then", "else"];
/// Keywords whose value is an array of subschemas applied to the same value.
const IN_PLACE_ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf"];
/// Keywords whose value is one subschema applied to some members, some
/// items, or something derived from the value.
const DESCEND_ONE: &[(&str, Step<'static>)] = &[
    ("unevaluatedProperties", Step::Member(None)),
    ("propertyNames", Step::Other),
    ("items", Step::Item),
    ("additionalItems", Step::Item),
    ("unevaluatedItems", Step::Item),
    ("contains", Step::Item),
    ("contentSchema", Step::Other),
];
/// Keywords whose value is an array of subschemas, each applied to some items.
const DESCEND_ARRAYS: &[&str] = &["prefixItems", "items"];
/// Keywords whose value maps names to subschemas applied to the same value.
const IN_PLACE_MAPS: &[&str] = &["dependentSchemas", "dependencies"];
/// References.
const REFERENCES: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

impl<'s> Walk<'_, 's> {
    fn schema(&mut self, schema: &'s Value) -> Result<(), CostError> {
        self.budget = self.budget.checked_sub(1).ok_or(CostError::TooLarge {
            limit: MAX_EXPANDED_NODES,
        })?;
        let Value::Object(map) = schema else {
            // `true`, `false`, or something the compiler will refuse.
            return Ok(());
        };
        for key in REFERENCES {
            if let Some(Value::String(reference)) = map.get(*key) {
                self.reference(key, reference)?;
            }
        }
        for key in IN_PLACE {
            self.child(map, key, None)?;
        }
        for key in IN_PLACE_ARRAYS {
            self.children(map, key, None)?;
        }
        for key in IN_PLACE_MAPS {
            if let Some(Value::Object(members)) = map.get(*key) {
                for (name, sub) in members {
                    if sub.is_object() || sub.is_boolean() {
                        self.at(&[key, name], None, |w| w.schema(sub))?;
                    }
                }
            }
        }
        if let Some(Value::Object(members)) = map.get("properties") {
            for (name, sub) in members {
                self.at(&["properties", name], Some(Step::Key(name)), |w| {
                    w.schema(sub)
                })?;
            }
        }
        if let Some(Value::Object(members)) = map.get("patternProperties") {
            for (pattern, sub) in members {
                self.at(
                    &["patternProperties", pattern],
                    Some(Step::Member(None)),
                    |w| w.schema(sub),
                )?;
            }
        }
        let named = match map.get("properties") {
            Some(Value::Object(named)) => Some(named),
            _ => None,
        };
        self.child(map, "additionalProperties", Some(Step::Member(named)))?;
        for (key, step) in DESCEND_ONE {
            self.child(map, key, Some(*step))?;
        }
        for key in DESCEND_ARRAYS {
            self.children(map, key, Some(Step::Item))?;
        }
        Ok(())
    }

    fn child(
        &mut self,
        map: &'s Map<String, Value>,
        key: &str,
        step: Option<Step<'s>>,
    ) -> Result<(), CostError> {
        match map.get(key) {
            Some(sub @ (Value::Object(_) | Value::Bool(_))) => {
                self.at(&[key], step, |w| w.schema(sub))
            }
            _ => Ok(()),
        }
    }

    fn children(
        &mut self,
        map: &'s Map<String, Value>,
        key: &str,
        step: Option<Step<'s>>,
    ) -> Result<(), CostError> {
        let Some(Value::Array(subs)) = map.get(key) else {
            return Ok(());
        };
        for (i, sub) in subs.iter().enumerate() {
            self.at(&[key, &i.to_string()], step, |w| w.schema(sub))?;
        }
        Ok(())
    }

    /// Runs `f` with the schema pointer extended by `segments` and the value
    /// path by `step`.
    fn at(
        &mut self,
        segments: &[&str],
        step: Option<Step<'s>>,
        f: impl FnOnce(&mut Self) -> Result<(), CostError>,
    ) -> Result<(), CostError> {
        let depth = self.pointer.len();
        self.pointer
            .extend(segments.iter().map(|s| (*s).to_owned()));
        if let Some(step) = step {
            self.instance.push(step);
        }
        let result = f(self);
        if step.is_some() {
            self.instance.pop();
        }
        self.pointer.truncate(depth);
        result
    }

    fn here(&self) -> String {
        let mut out = String::new();
        for s in &self.pointer {
            out.push('/');
            out.push_str(&s.replace('~', "~0").replace('/', "~1"));
        }
        out
    }

    fn reference(&mut self, keyword: &str, reference: &'s str) -> Result<(), CostError> {
        let targets: Vec<&'s Value> = match keyword {
            // `$recursiveRef: "#"` (2019-09) goes to the root or a
            // `$recursiveAnchor` further out; the root is where it starts.
            "$recursiveRef" => vec![self.index.root],
            // `$dynamicRef` may land on any `$dynamicAnchor` of that name;
            // each is counted.
            "$dynamicRef" => {
                let name = reference.rsplit_once('#').map_or("", |(_, n)| n);
                let all: Vec<&'s Value> = self
                    .index
                    .anchors
                    .iter()
                    .filter(|(n, v)| **n == name && v.get("$dynamicAnchor").is_some())
                    .map(|(_, v)| *v)
                    .collect();
                if all.is_empty() {
                    self.index.resolve(reference).into_iter().collect()
                } else {
                    all
                }
            }
            _ => self.index.resolve(reference).into_iter().collect(),
        };
        if targets.is_empty() {
            return Err(CostError::Unresolvable {
                reference: reference.to_owned(),
                at: self.here(),
            });
        }
        for target in targets {
            self.follow(reference, target)?;
        }
        Ok(())
    }

    fn follow(&mut self, reference: &str, target: &'s Value) -> Result<(), CostError> {
        let key: *const Value = target;
        if let Some(frame) = self.frames.iter().find(|f| std::ptr::eq(f.target, target)) {
            let descent = self.instance[frame.instance_depth..].to_vec();
            if descent.is_empty() {
                return Err(CostError::InPlaceCycle {
                    reference: reference.to_owned(),
                    at: self.here(),
                });
            }
            let seen = self.recursions.entry(key).or_default();
            if seen.iter().any(|other| overlap(other, &descent)) {
                return Err(CostError::MultipliedRecursion {
                    reference: reference.to_owned(),
                    at: self.here(),
                });
            }
            seen.push(descent);
            return Ok(());
        }
        self.frames.push(Frame {
            target,
            instance_depth: self.instance.len(),
        });
        let result = self.schema(target);
        self.frames.pop();
        result
    }
}

/// Schemas the tests of this crate share.
#[cfg(test)]
pub(crate) mod tests_support {
    use serde_json::{Map, Value, json};

    /// The family an outside review used: each level an `allOf` of two
    /// references to the next.
    pub(crate) fn doubling(depth: usize) -> Value {
        let mut defs = Map::new();
        for i in 0..depth {
            let next = format!("#/$defs/l{}", i + 1);
            defs.insert(
                format!("l{i}"),
                json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert(format!("l{depth}"), json!({"type": "string"}));
        json!({"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/l0"}}})
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::tests_support::doubling;
    use super::*;

    #[test]
    fn c9_the_doubling_family_is_refused_at_every_depth_from_20_to_60() {
        for depth in [14, 20, 28, 30, 40, 60] {
            assert_eq!(
                check(&doubling(depth)),
                Err(CostError::TooLarge {
                    limit: MAX_EXPANDED_NODES
                }),
                "depth {depth}"
            );
        }
        // A few levels are harmless and accepted.
        assert!(check(&doubling(8)).is_ok(), "{:?}", check(&doubling(8)));
    }

    #[test]
    fn c9_recursion_that_descends_once_per_level_is_accepted() {
        // A tree: each node's children are trees.
        let tree = json!({
            "$defs": {"node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "left": {"$ref": "#/$defs/node"},
                    "right": {"$ref": "#/$defs/node"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                }
            }},
            "$ref": "#/$defs/node"
        });
        assert!(check(&tree).is_ok(), "{:?}", check(&tree));
        // The root itself, by `#`, and by anchor.
        let list = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
        assert!(check(&list).is_ok(), "{:?}", check(&list));
        // Items and members of one value never meet: it is an array or an
        // object.
        let json_like = json!({"$defs": {"j": {"anyOf": [
            {"type": "array", "items": {"$ref": "#/$defs/j"}},
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/j"}},
            {"type": ["string", "number", "boolean", "null"]}
        ]}}, "$ref": "#/$defs/j"});
        assert!(check(&json_like).is_ok(), "{:?}", check(&json_like));
        // `additionalProperties` skips the members `properties` names.
        let config = json!({"$defs": {"c": {"type": "object",
            "properties": {"include": {"$ref": "#/$defs/c"}},
            "additionalProperties": {"$ref": "#/$defs/c"}}}, "$ref": "#/$defs/c"});
        assert!(check(&config).is_ok(), "{:?}", check(&config));
        let anchored = json!({"$defs": {"n": {"$anchor": "node", "properties": {"n": {"$ref": "#node"}}}}, "$ref": "#node"});
        assert!(check(&anchored).is_ok(), "{:?}", check(&anchored));
    }

    #[test]
    fn c9_recursion_that_doubles_at_the_same_place_is_refused() {
        let doubled = json!({
            "$defs": {"n": {"properties": {"x": {"allOf": [{"$ref": "#/$defs/n"}, {"$ref": "#/$defs/n"}]}}}},
            "$ref": "#/$defs/n"
        });
        assert!(
            matches!(check(&doubled), Err(CostError::MultipliedRecursion { .. })),
            "{:?}",
            check(&doubled)
        );
        // Through `properties` and `additionalProperties`, which may meet.
        let meeting = json!({
            "$defs": {"n": {"properties": {"a": {"$ref": "#/$defs/n"}}, "patternProperties": {"^a": {"$ref": "#/$defs/n"}}}},
            "$ref": "#/$defs/n"
        });
        assert!(matches!(
            check(&meeting),
            Err(CostError::MultipliedRecursion { .. })
        ));
        // One and two levels down: counts grow like Fibonacci's.
        let fib = json!({
            "$defs": {"n": {"items": {"$ref": "#/$defs/n", "items": {"$ref": "#/$defs/n"}}}},
            "$ref": "#/$defs/n"
        });
        assert!(matches!(
            check(&fib),
            Err(CostError::MultipliedRecursion { .. })
        ));
    }

    #[test]
    fn c9_a_reference_to_itself_in_place_is_refused() {
        for schema in [
            json!({"$ref": "#"}),
            json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}),
        ] {
            assert!(
                matches!(check(&schema), Err(CostError::InPlaceCycle { .. })),
                "{schema}"
            );
        }
    }

    #[test]
    fn c9_a_reference_outside_the_schema_is_refused_naming_it() {
        let err = check(&json!({"properties": {"a": {"$ref": "https://example.com/s.json"}}}))
            .unwrap_err();
        assert_eq!(
            err,
            CostError::Unresolvable {
                reference: "https://example.com/s.json".into(),
                at: "/properties/a".into()
            }
        );
        assert!(err.to_string().contains("/properties/a"), "{err}");
        // A `$id` inside the schema is followed.
        let by_id = json!({"$id": "https://example.com/root", "$defs": {"x": {"$id": "item", "type": "string"}},
            "properties": {"a": {"$ref": "item"}, "b": {"$ref": "https://example.com/root#/$defs/x"}}});
        assert!(check(&by_id).is_ok(), "{:?}", check(&by_id));
    }

    #[test]
    fn c9_a_huge_flat_schema_is_refused_without_following_references() {
        let mut props = Map::new();
        for i in 0..MAX_EXPANDED_NODES {
            props.insert(format!("p{i}"), json!({"type": "string"}));
        }
        assert!(matches!(
            check(&json!({"properties": props})),
            Err(CostError::TooLarge { .. })
        ));
    }
}
