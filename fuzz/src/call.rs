//! A call's arguments, from the text a model or client sends to the tool
//! that decodes them, and the `artifact_read` tool's ranges.

use std::sync::Arc;

use arbitrary::Unstructured;
use serde::Deserialize;
use serde_json::json;

use toolhost_core::artifact::{ArtifactStore, MemoryArtifactStore, OffloadConfig};
use toolhost_core::tenant::DEFAULT_TENANT;
use toolhost_core::{Arguments, CallContext, FnTool, ToolError, ToolHost, ToolOutput, ToolSpec};

use crate::block_on;

/// What the typed tool decodes; its schema below says the same.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Typed {
    n: i64,
    x: Option<f64>,
    s: Option<String>,
    tags: Option<Vec<String>>,
    nested: Option<serde_json::Map<String, serde_json::Value>>,
}

fn host() -> ToolHost {
    let host = ToolHost::builder().validate_arguments(true).build();
    let schema = json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": -1000000, "maximum": 1000000},
            "x": {"type": "number"},
            "s": {"type": "string", "maxLength": 64},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
            "nested": {"type": "object"}
        },
        "required": ["n"],
        "additionalProperties": false
    });
    host.register_tool(FnTool::arc(
        ToolSpec::new("typed", "decodes its arguments", schema),
        |_, args: Arguments| async move {
            args.deserialize::<Typed>()?;
            Ok(ToolOutput::text("ok"))
        },
    ))
    .expect("the typed tool registers");
    host
}

/// Arguments text through [`Arguments::parse`], then through the pipeline
/// (schema validation) to a tool that decodes them into a Rust type.
///
/// Must hold: no panic; text that parses prints back to text that parses
/// to the same value; a call is answered `Ok` or `InvalidArguments` and
/// nothing else, and arguments the schema accepts always decode (the schema
/// and the type agree, whatever the numbers, nesting or escapes).
pub fn arguments(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(args) = Arguments::parse(text) else {
        return;
    };
    let again = Arguments::parse(args.as_str()).expect("printed arguments parse");
    assert_eq!(again.as_value(), args.as_value());
    thread_local! {
        static HOST: ToolHost = host();
    }
    let host = HOST.with(ToolHost::clone);
    match block_on(host.invoke_tool(CallContext::new(), "typed", args)) {
        Ok(_) | Err(ToolError::InvalidArguments { .. }) => {}
        Err(other) => panic!("a call was answered {other:?}"),
    }
}

/// `artifact_read` over a stored artifact of fuzzed bytes, with fuzzed
/// ranges (and sometimes a fuzzed id).
///
/// Must hold: no panic; a call is answered `Ok` or `InvalidArguments`;
/// a byte range never returns more than 64 KiB, nor bytes the artifact
/// does not hold.
pub fn artifact_read(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(content) = u.arbitrary::<Vec<u8>>() else {
        return;
    };
    let store = Arc::new(MemoryArtifactStore::new());
    let host = ToolHost::builder()
        .validate_arguments(true)
        .artifact_offload(store.clone(), OffloadConfig::default())
        .build();
    let size = content.len();
    // Kept for the tenant every call of `CallContext::new()` is for, so
    // that the read below can find it.
    let id = block_on(store.put(DEFAULT_TENANT, content)).expect("a memory store keeps anything");
    let mut args = serde_json::Map::new();
    let id = match u.arbitrary::<Option<String>>() {
        Ok(Some(fuzzed)) => fuzzed,
        _ => id.to_string(),
    };
    args.insert("id".into(), json!(id));
    for key in ["offset", "length", "line_start", "line_count"] {
        if let Ok(Some(v)) = u.arbitrary::<Option<u64>>() {
            args.insert(key.into(), json!(v));
        }
    }
    let args = Arguments::from_value(&serde_json::Value::Object(args)).expect("an object");
    let byte_range =
        args.as_value().get("line_start").is_none() && args.as_value().get("line_count").is_none();
    match block_on(host.invoke_tool(CallContext::new(), "artifact_read", args)) {
        Ok(ToolOutput::Text { text }) if byte_range => {
            let (header, body) = text.split_once('\n').expect("a header line");
            let range = header
                .split(": bytes ")
                .nth(1)
                .and_then(|r| r.split(" of ").next())
                .and_then(|r| r.split_once('-'))
                .expect("the header names the range");
            let (start, end): (u64, u64) = (range.0.parse().unwrap(), range.1.parse().unwrap());
            assert!(start <= end && end - start <= 64 * 1024, "{header}");
            assert!(end <= size as u64 || start == end, "{header} of {size}");
            let _ = body;
        }
        Ok(_) | Err(ToolError::InvalidArguments { .. }) => {}
        Err(other) => panic!("artifact_read answered {other:?}"),
    }
}
