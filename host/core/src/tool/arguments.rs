//! [`Arguments`]: a call's JSON arguments, checked once at the edge.
//!
//! Arguments come from outside (a model, an MCP client, the command line),
//! so every constructor refuses what the host could not handle later:
//! text over [`MAX_ARGUMENT_BYTES`], nesting deeper than
//! [`MAX_ARGUMENT_DEPTH`], numbers no `f64` can hold (`1e400`), strings
//! with lone UTF-16 surrogates (`"\ud800"`), and anything that is not JSON.
//! What is accepted is parsed once into a [`Value`] and kept beside the
//! text, so reading the value back can never fail.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::{Path, Segment};

use super::unique_keys::ReadError;
use crate::error::ToolError;

/// The largest argument text accepted, in bytes: 4 MiB, the same as the
/// MCP HTTP server's default request cap. It bounds every string inside
/// the arguments too.
pub const MAX_ARGUMENT_BYTES: usize = 4 << 20;

/// The deepest nesting of arrays and objects accepted: `[[1]]` is two
/// levels deep. Arguments travel inside other JSON documents (MCP frames, a
/// model provider's conversation), which readers such as serde_json parse
/// to a depth of 128, so half of that is left for the arguments.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// The JSON arguments of a call, shared cheaply between retries, hooks and
/// the tool.
///
/// An `Arguments` always holds JSON the host can read: at most
/// [`MAX_ARGUMENT_BYTES`] of text, at most [`MAX_ARGUMENT_DEPTH`] levels
/// deep, every number a finite `f64` or a 64-bit integer, every string
/// valid Unicode. A number too small to represent, such as `1e-400`, reads
/// as zero, as in any IEEE 754 parser; only numbers too large are refused.
#[derive(Clone)]
pub struct Arguments(Arc<Checked>);

/// The text as received and the value it parsed to.
struct Checked {
    text: Box<str>,
    value: Value,
}

impl Arguments {
    /// Parses argument text. Empty or all-whitespace text means `{}` (models
    /// often send nothing for a tool without parameters). Anything else must
    /// be JSON within the bounds above, or the error,
    /// [`ToolError::InvalidArguments`], says what was wrong and where.
    pub fn parse(text: &str) -> Result<Self, ToolError> {
        let text = if text.trim().is_empty() { "{}" } else { text };
        check_size(text.len())?;
        check_depth(text.as_bytes())?;
        // Within the depth bound serde_json's own recursion limit cannot
        // trigger; what remains to fail here is syntax, an out-of-range
        // number, a lone surrogate or a repeated key.
        let value = super::unique_keys::parse(text).map_err(|e| match e {
            ReadError::Json(e) => {
                ToolError::invalid_arguments("", format!("arguments are not valid JSON: {e}"))
            }
            ReadError::Repeated(repeated) => ToolError::InvalidArguments {
                message: format!(
                    "{repeated}; arguments must name each key once, so that the tool reads the value that was checked"
                ),
                path: repeated.pointer,
            },
        })?;
        Ok(Self(Arc::new(Checked {
            text: text.into(),
            value,
        })))
    }

    /// Arguments from an already parsed value, held to the same bounds as
    /// [`Arguments::parse`] (a [`Value`] can only hold finite numbers and
    /// valid strings, so depth and size are what is checked).
    pub fn from_value(value: &Value) -> Result<Self, ToolError> {
        check_value_depth(value)?;
        Self::checked(value.clone())
    }

    /// [`Arguments::from_value`] for a value the caller gives up, which is
    /// kept rather than copied.
    pub fn from_json(value: Value) -> Result<Self, ToolError> {
        check_value_depth(&value)?;
        Self::checked(value)
    }

    /// Arguments of `value`, whose depth was checked: its text is written
    /// and held to the size bound.
    fn checked(value: Value) -> Result<Self, ToolError> {
        // Writing a `Value` as text cannot fail: its keys are strings and
        // its numbers finite.
        let text = value.to_string();
        check_size(text.len())?;
        Ok(Self(Arc::new(Checked {
            text: text.into(),
            value,
        })))
    }

    /// The JSON text exactly as received (`{}` for empty text).
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// The arguments as a JSON value, parsed once when they were made.
    pub fn as_value(&self) -> &Value {
        &self.0.value
    }

    /// Size of the JSON text in bytes.
    pub fn len(&self) -> usize {
        self.0.text.len()
    }

    /// Whether the JSON text is empty (never true: the text is valid JSON).
    pub fn is_empty(&self) -> bool {
        self.0.text.is_empty()
    }

    /// A copy of the arguments as a JSON value.
    pub fn to_value(&self) -> Value {
        self.0.value.clone()
    }

    /// Decodes the arguments into a typed struct. A mismatch is
    /// [`ToolError::InvalidArguments`] naming the JSON path that failed.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, ToolError> {
        let de = &mut serde_json::Deserializer::from_str(&self.0.text);
        serde_path_to_error::deserialize(de).map_err(|e| ToolError::InvalidArguments {
            path: json_pointer(e.path()),
            message: e.inner().to_string(),
        })
    }
}

impl fmt::Debug for Arguments {
    /// Prints the size, never the payload: arguments may hold secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Arguments({} bytes)", self.len())
    }
}

impl PartialEq for Arguments {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

/// Refuses a value nested beyond [`MAX_ARGUMENT_DEPTH`], before it is
/// copied or written.
fn check_value_depth(value: &Value) -> Result<(), ToolError> {
    if nested_deeper_than(value, MAX_ARGUMENT_DEPTH) {
        return Err(too_deep(None));
    }
    Ok(())
}

fn check_size(len: usize) -> Result<(), ToolError> {
    if len > MAX_ARGUMENT_BYTES {
        return Err(ToolError::invalid_arguments(
            "",
            format!("arguments of {len} bytes exceed the limit of {MAX_ARGUMENT_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn too_deep(at_byte: Option<usize>) -> ToolError {
    let at = at_byte.map_or(String::new(), |i| format!(" (at byte {i})"));
    ToolError::invalid_arguments(
        "",
        format!("arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels{at}"),
    )
}

/// Refuses text whose arrays and objects nest deeper than
/// [`MAX_ARGUMENT_DEPTH`], before anything is parsed, by counting brackets
/// outside strings. On text that is not JSON the count may be off, but
/// such text is refused by the parser anyway.
fn check_depth(text: &[u8]) -> Result<(), ToolError> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => i = string_end(text, i + 1),
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_ARGUMENT_DEPTH {
                    return Err(too_deep(Some(i)));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The index of the quote that closes the string starting at `start` (just
/// after its opening quote), or the end of `text` if it is not closed.
fn string_end(text: &[u8], start: usize) -> usize {
    let mut i = start;
    while let Some(offset) = text[i..].iter().position(|&b| b == b'"' || b == b'\\') {
        i += offset;
        if text[i] == b'"' {
            return i;
        }
        // Skip the backslash and the character it escapes.
        i += 2;
        if i >= text.len() {
            break;
        }
    }
    text.len()
}

/// Whether `value` nests arrays and objects more than `limit` levels deep.
/// The recursion stops at `limit`, so it is bounded whatever the value.
fn nested_deeper_than(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(|v| nested_deeper_than(v, limit - 1)),
        Value::Object(map) => limit == 0 || map.values().any(|v| nested_deeper_than(v, limit - 1)),
        _ => false,
    }
}

/// The JSON pointer (RFC 6901) of a serde_path_to_error path: `/a/b~1c/0`
/// for key `a`, key `b/c`, index 0. A segment the deserializer could not
/// name ends the pointer, which then names the deepest known enclosing
/// value.
// A copy lives in the SDK (`sdk/src/tools.rs`), which is compiled to wasm
// and cannot depend on the host's crates; keep the two in step.
fn json_pointer(path: &Path) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => {
                out.push('/');
                out.push_str(&index.to_string());
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                out.push('/');
                out.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    fn refused(text: &str) -> String {
        match Arguments::parse(text) {
            Err(ToolError::InvalidArguments { path, message }) => {
                assert_eq!(path, "", "{message}");
                message
            }
            Err(other) => panic!("expected InvalidArguments, got {other:?}"),
            Ok(a) => panic!("accepted {} bytes", a.len()),
        }
    }

    fn nested(open: &str, close: &str, depth: usize) -> String {
        format!("{}1{}", open.repeat(depth), close.repeat(depth))
    }

    #[test]
    fn t1_arguments_keep_raw_json_and_treat_empty_as_object() {
        let a = Arguments::parse(r#"{"a": 1}"#).unwrap();
        assert_eq!(a.as_str(), r#"{"a": 1}"#);
        assert_eq!(a.as_value(), &json!({"a": 1}));
        assert_eq!(Arguments::parse("  ").unwrap().as_str(), "{}");
        let err = Arguments::parse("{oops").unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    }

    #[test]
    fn t1_typed_decoding_names_the_failing_path() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Args {
            items: Vec<Item>,
        }
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Item {
            count: u32,
        }
        let a = Arguments::parse(r#"{"items": [{"count": 1}, {"count": "x"}]}"#).unwrap();
        match a.deserialize::<Args>().unwrap_err() {
            ToolError::InvalidArguments { path, message } => {
                assert_eq!(path, "/items/1/count");
                assert!(message.contains("invalid type"), "{message}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn t1_debug_of_arguments_never_shows_the_payload() {
        let a = Arguments::parse(r#"{"password": "hunter2"}"#).unwrap();
        let shown = format!("{a:?}");
        assert!(!shown.contains("hunter2"));
        assert!(shown.contains("bytes"));
    }

    #[test]
    fn c6_numbers_out_of_range_are_refused_and_tiny_ones_read_as_zero() {
        for text in [r#"{"limit": 1e400}"#, r#"{"limit": -1e400}"#, "[1e309]"] {
            let message = refused(text);
            assert!(message.contains("number out of range"), "{text}: {message}");
        }
        let tiny = Arguments::parse(r#"{"limit": 1e-400}"#).unwrap();
        assert_eq!(tiny.as_value()["limit"].as_f64(), Some(0.0));
        // Integers past u64 are still numbers: they read as f64.
        let big = Arguments::parse(r#"{"n": 100000000000000000000000}"#).unwrap();
        assert_eq!(big.as_value()["n"].as_f64(), Some(1e23));
        assert!(Arguments::parse("{}").is_ok());
    }

    #[test]
    fn c6_deep_nesting_is_refused_before_parsing() {
        for (open, close) in [("[", "]"), (r#"{"a":"#, "}")] {
            let message = refused(&nested(open, close, 100_000));
            assert!(
                message.contains(&format!("nested deeper than {MAX_ARGUMENT_DEPTH} levels")),
                "{message}"
            );
            // Past the bound but within serde_json's own limit: the same error.
            let message = refused(&nested(open, close, MAX_ARGUMENT_DEPTH + 1));
            assert!(message.contains("nested deeper"), "{message}");
            let at_bound = Arguments::parse(&nested(open, close, MAX_ARGUMENT_DEPTH)).unwrap();
            assert!(!at_bound.as_value().is_null());
        }
        // Brackets inside strings, escaped quotes included, are not nesting.
        let text = format!(r#"{{"s": "\"{}\\"}}"#, "[".repeat(1000));
        assert!(Arguments::parse(&text).is_ok(), "{text}");
    }

    #[test]
    fn c6_oversized_arguments_are_refused_with_their_size() {
        let text = format!(r#"{{"s": "{}"}}"#, "x".repeat(64 << 20));
        let message = refused(&text);
        assert_eq!(
            message,
            format!(
                "arguments of {} bytes exceed the limit of {MAX_ARGUMENT_BYTES} bytes",
                text.len()
            )
        );
        let value = json!({ "s": "x".repeat(MAX_ARGUMENT_BYTES) });
        refused_both_ways(value, "exceed the limit");
    }

    #[test]
    fn c6_lone_surrogates_are_refused_and_pairs_accepted() {
        // serde_json names a lone leading surrogate "unexpected end of hex
        // escape" and the others "lone leading surrogate in hex escape".
        for text in [
            r#"{"s": "\ud800"}"#,
            r#"{"s": "\ud800\u0041"}"#,
            r#"{"s": "\udc00x"}"#,
        ] {
            let message = refused(text);
            assert!(message.contains("hex escape"), "{text}: {message}");
        }
        let pair = Arguments::parse(r#"{"s": "\ud83d\ude00"}"#).unwrap();
        assert_eq!(pair.as_value()["s"], "😀");
    }

    #[test]
    fn c6_every_accepted_text_reads_back_as_a_value() {
        for text in [
            "{}",
            "[]",
            "null",
            "0",
            r#""x""#,
            r#"{"a": [1, 2.5, -3e10, true]}"#,
        ] {
            let a = Arguments::parse(text).unwrap();
            assert_eq!(a.to_value(), serde_json::from_str::<Value>(text).unwrap());
        }
        for text in ["{", "{} x", "[1,]", "{'a': 1}", "NaN", r#"{"a": Infinity}"#] {
            refused(text);
        }
    }

    /// `value` is refused, with a message containing `says`, whether it is
    /// lent (`from_value`) or given up (`from_json`).
    fn refused_both_ways(value: Value, says: &str) {
        for refusal in [
            Arguments::from_value(&value).unwrap_err(),
            Arguments::from_json(value).unwrap_err(),
        ] {
            match refusal {
                ToolError::InvalidArguments { message, .. } => {
                    assert!(message.contains(says), "{message}")
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn c6_values_deeper_than_the_bound_are_refused() {
        let mut value = json!(1);
        for _ in 0..=MAX_ARGUMENT_DEPTH {
            value = json!([value]);
        }
        refused_both_ways(value, "nested deeper");
        let shallow = Arguments::from_value(&json!({"a": [1]})).unwrap();
        assert_eq!(shallow.as_str(), r#"{"a":[1]}"#);
        let kept = Arguments::from_json(json!({"a": [1]})).unwrap();
        assert_eq!(kept.as_str(), r#"{"a":[1]}"#);
        assert_eq!(kept.as_value(), shallow.as_value());
    }

    #[test]
    fn c6_paths_escape_keys_with_dots_slashes_tildes_and_brackets() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Item {
            count: u32,
        }
        let text = r#"{"a.b": {"c/d": {"e~f": {"[0]": [{"count": 1}, {"count": "x"}]}}}}"#;
        let a = Arguments::parse(text).unwrap();
        type Nested =
            BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<Item>>>>>;
        match a.deserialize::<Nested>().unwrap_err() {
            ToolError::InvalidArguments { path, message } => {
                assert_eq!(path, "/a.b/c~1d/e~0f/[0]/1/count");
                assert!(message.contains("invalid type"), "{message}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn c6_an_error_at_the_top_has_an_empty_pointer() {
        let a = Arguments::parse("[1]").unwrap();
        match a.deserialize::<BTreeMap<String, u32>>().unwrap_err() {
            ToolError::InvalidArguments { path, .. } => assert_eq!(path, ""),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn c12_arguments_that_repeat_a_key_are_refused_naming_it() {
        match Arguments::parse(r#"{"opts":{"path":"/etc/passwd","path":"/safe/x"}}"#) {
            Err(ToolError::InvalidArguments { path, message }) => {
                assert_eq!(path, "/opts");
                assert!(
                    message.contains(r#"the key "path" appears more than once"#),
                    "{message}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        // Repeats in different objects are fine.
        assert!(Arguments::parse(r#"{"a":{"k":1},"b":{"k":2}}"#).is_ok());
    }
}
