//! Conversions between toolhost's types and MCP's: tool descriptors, results
//! and errors, in both directions.
//!
//! Results map to MCP content so that a client shows what toolhost means:
//!
//! | [`ToolOutput`] | MCP content |
//! |---|---|
//! | `Text` | one text block, no audience |
//! | `Dual` | `for_llm` with audience `assistant`, `for_user` with audience `user` |
//! | `Silent` | one text block with audience `assistant` |
//! | `Blocks` | each block as its MCP kind, with its annotations: text, image and audio (base64), resource link, embedded resource (text or blob); other media as an embedded blob |
//! | `Structured` | its blocks, and the value as `structuredContent` |
//! | `Offloaded` | the reference for the model (`assistant`), the user's text (`user`) |
//!
//! A remote result maps back the same way, block for block, so a result
//! that crosses two hops is what the first server sent (rule N1). Audience
//! annotations are presentation hints, never confidentiality (rule T4):
//! every block reaches the client, whoever it is meant for.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{
    self as mcp, AudioContent, CallToolResult, EmbeddedResource, ErrorCode, ErrorData,
    ImageContent, JsonObject, ResourceContents, Role, TextContent, ToolAnnotations,
};
use serde_json::Value;

use crate::error::SpecError;
use toolhost_core::CompiledSchema;
use toolhost_core::error::ToolError;
use toolhost_core::output::{self, Annotations, Audience, ContentBlock, ResourceLink, ToolOutput};
use toolhost_core::schema::PatternBudget;
use toolhost_core::tool::{ToolHints, ToolSpec};

/// The MCP descriptor of a registered tool: its name, description,
/// argument schema and output schema, and its annotations: `idempotentHint`
/// when the tool is declared idempotent, and the `readOnlyHint`,
/// `destructiveHint` and `openWorldHint` it declares. A schema that is not a JSON object (say `true`) is sent as
/// `{"type": "object"}`, which MCP requires.
pub fn spec_to_mcp(spec: &ToolSpec) -> mcp::Tool {
    let schema = match &spec.parameters {
        Value::Object(map) => map.clone(),
        _ => object_schema(),
    };
    let mut tool = mcp::Tool::new(spec.name.clone(), spec.description.clone(), schema);
    if let Some(Value::Object(output)) = &spec.output_schema {
        tool = tool.with_raw_output_schema(output.clone().into());
    }
    if !spec.idempotent && spec.hints.is_empty() {
        return tool;
    }
    let mut annotations = ToolAnnotations::new();
    if spec.idempotent {
        annotations = annotations.idempotent(true);
    }
    let hints = spec.hints;
    if let Some(read_only) = hints.read_only {
        annotations = annotations.read_only(read_only);
    }
    if let Some(destructive) = hints.destructive {
        annotations = annotations.destructive(destructive);
    }
    if let Some(open_world) = hints.open_world {
        annotations = annotations.open_world(open_world);
    }
    tool.with_annotations(annotations)
}

fn object_schema() -> JsonObject {
    let mut map = JsonObject::new();
    map.insert("type".into(), Value::String("object".into()));
    map
}

/// The toolhost descriptor of a remote tool, named `prefix.name` (or `name`
/// with an empty prefix), with its input schema compiled (once: the tool
/// hands it to the registry). The server's annotations are hints from a party
/// the host does not control, so they declare nothing the host acts on by
/// itself: the tool's concurrency safety is unset and it is not idempotent;
/// its `readOnlyHint`, `destructiveHint` and `openWorldHint` are kept as
/// [`hints`](ToolSpec::hints), which only rules that ask for them read.
///
/// Returns the spec with its input schema and, if it has one, its output
/// schema compiled, their patterns' memory taken from `budget`, which the
/// tools of one server share ([`PatternBudget::per_plugin`], rule C9).
///
/// Fails, naming the tool, if the prefixed name is not a valid tool name or
/// a schema does not compile.
pub fn spec_from_mcp(
    tool: &mcp::Tool,
    prefix: &str,
    budget: &mut PatternBudget,
) -> Result<(ToolSpec, CompiledSchema, Option<CompiledSchema>), SpecError> {
    let name = if prefix.is_empty() {
        tool.name.to_string()
    } else {
        format!("{prefix}.{}", tool.name)
    };
    if let Err(e) = ToolSpec::validate_name(&name) {
        return Err(SpecError::InvalidName { name, source: e });
    }
    let schema = Value::Object((*tool.input_schema).clone());
    let compiled =
        CompiledSchema::compile_within(&schema, budget).map_err(|e| SpecError::Schema {
            tool: tool.name.to_string(),
            source: e,
        })?;
    let description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or_default();
    let mut spec = ToolSpec::new(name, description, schema).hints(hints_from_mcp(tool));
    spec.output_schema = tool
        .output_schema
        .as_ref()
        .map(|o| Value::Object((**o).clone()));
    let output = spec
        .output_schema
        .as_ref()
        .map(|o| CompiledSchema::compile_within(o, budget))
        .transpose()
        .map_err(|e| SpecError::OutputSchema {
            tool: tool.name.to_string(),
            source: e,
        })?;
    Ok((spec, compiled, output))
}

/// A remote tool's `readOnlyHint`, `destructiveHint` and `openWorldHint`,
/// as declared
/// (undeclared stays `None`: MCP's defaults are not filled in). Hints from
/// a party the host does not control: only rules that ask for them read
/// them (rule O4).
pub fn hints_from_mcp(tool: &mcp::Tool) -> ToolHints {
    let mut hints = ToolHints::NONE;
    if let Some(a) = &tool.annotations {
        hints.read_only = a.read_only_hint;
        hints.destructive = a.destructive_hint;
        hints.open_world = a.open_world_hint;
    }
    hints
}

fn annotations_to_mcp(a: &Annotations) -> Option<mcp::Annotations> {
    if a.is_empty() {
        return None;
    }
    let mut out = mcp::Annotations::default();
    if !a.audience.is_empty() {
        out.audience = Some(
            a.audience
                .iter()
                .map(|who| match who {
                    Audience::User => Role::User,
                    Audience::Assistant => Role::Assistant,
                })
                .collect(),
        );
    }
    // MCP's priority is a 32-bit float; 0 to 1 loses nothing a reader sees.
    out.priority = a.priority.map(|p| p as f32);
    out.last_modified = a.last_modified.clone();
    Some(out)
}

fn annotations_from_mcp(a: Option<&mcp::Annotations>) -> Annotations {
    let Some(a) = a else {
        return Annotations::default();
    };
    Annotations {
        audience: a
            .audience
            .iter()
            .flatten()
            .map(|role| match role {
                Role::User => Audience::User,
                Role::Assistant => Audience::Assistant,
            })
            .collect(),
        priority: a.priority.map(f64::from),
        last_modified: a.last_modified.clone(),
    }
}

/// The MCP result of a successful call (see the module's table): its
/// blocks in order, each with its annotations, and its structured content.
pub fn output_to_mcp(out: &ToolOutput) -> CallToolResult {
    // Blocks made for the occasion (text shapes) are moved, not copied
    // again: a large text result is copied once on its way out.
    let blocks = match out.content_blocks() {
        Cow::Owned(blocks) => blocks,
        Cow::Borrowed(blocks) => blocks.to_vec(),
    };
    let content = blocks
        .into_iter()
        .enumerate()
        .map(|(i, b)| block_to_mcp(i, b))
        .collect();
    let mut result = CallToolResult::success(content);
    result.structured_content = out.structured_value().cloned();
    result
}

/// The URI of an embedded blob that stands for [`ContentBlock::Media`] that
/// MCP has no block for (a PDF, say): `toolhost:media/<index>`.
const MEDIA_URI: &str = "toolhost:media/";

fn block_to_mcp(index: usize, block: ContentBlock) -> mcp::ContentBlock {
    let annotations = annotations_to_mcp(block.annotations());
    match block {
        ContentBlock::Text { text, .. } => {
            let mut t = TextContent::new(text);
            t.annotations = annotations;
            mcp::ContentBlock::Text(t)
        }
        ContentBlock::Image {
            mime_type, data, ..
        } => {
            let mut img = ImageContent::new(STANDARD.encode(data), mime_type);
            img.annotations = annotations;
            mcp::ContentBlock::Image(img)
        }
        ContentBlock::Media {
            mime_type, data, ..
        } if mime_type.starts_with("audio/") => {
            let mut audio = AudioContent::new(STANDARD.encode(data), mime_type);
            audio.annotations = annotations;
            mcp::ContentBlock::Audio(audio)
        }
        ContentBlock::Media {
            mime_type, data, ..
        } => {
            let blob = ResourceContents::blob(STANDARD.encode(data), format!("{MEDIA_URI}{index}"))
                .with_mime_type(mime_type);
            let mut embedded = EmbeddedResource::new(blob);
            embedded.annotations = annotations;
            mcp::ContentBlock::Resource(embedded)
        }
        ContentBlock::ResourceLink { link, .. } => {
            let mut r = mcp::Resource::new(link.uri, link.name);
            r.title = link.title;
            r.description = link.description;
            r.mime_type = link.mime_type;
            r.size = link.size;
            r.annotations = annotations;
            mcp::ContentBlock::ResourceLink(r)
        }
        ContentBlock::Resource { resource, .. } => {
            let (uri, mime_type) = (resource.uri, resource.mime_type);
            let contents = match resource.contents {
                output::ResourceContents::Text(text) => ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    meta: None,
                },
                output::ResourceContents::Blob(data) => ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob: STANDARD.encode(&data),
                    meta: None,
                },
            };
            let mut embedded = EmbeddedResource::new(contents);
            embedded.annotations = annotations;
            mcp::ContentBlock::Resource(embedded)
        }
    }
}

/// The JSON-RPC error code of a call refused by a quota (rule A3), in the
/// range JSON-RPC leaves to servers.
pub const OVER_QUOTA_CODE: i32 = -32029;

/// The protocol error for a call a quota refused: code [`OVER_QUOTA_CODE`],
/// the refusal's text as its message, and as data the quota's key, whose
/// quota it is and when to try again: `{"quota": "in_flight", "scope":
/// "tenant \"acme\"", "retryAfterMs": 1000}`. Any other error is reported
/// as a failed call.
pub fn over_quota_error(err: &ToolError) -> ErrorData {
    match err {
        ToolError::OverQuota {
            quota,
            scope,
            retry_after,
        } => ErrorData::new(
            ErrorCode(OVER_QUOTA_CODE),
            err.to_string(),
            Some(serde_json::json!({
                "quota": quota.key(),
                "scope": scope,
                "retryAfterMs": u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX),
            })),
        ),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

/// The MCP result of a failed call: `isError: true` and the reason, so the
/// model can read it and correct itself. (An unknown tool is a protocol
/// error instead; the server decides that.)
pub fn error_to_mcp(err: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![mcp::ContentBlock::text(err.to_string())])
}

/// Converts a remote server's result into a toolhost result, keeping every
/// block, in order, with its annotations (rule N1): the inverse of
/// [`output_to_mcp`]. The plain shapes [`output_to_mcp`] writes come back
/// as what they were (one unannotated text block is `Text`, the model's and
/// the user's text `Dual`, text for the model alone `Silent`); anything else
/// is `Blocks`, or `Structured` when the result has structured content.
///
/// A result with `isError: true` is [`ToolError::Failed`] with the
/// result's text as the message. Media that is not valid base64 is a
/// failure too, naming the block.
pub fn output_from_mcp(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    if result.is_error == Some(true) {
        let text = joined_text(&result.content);
        let message = if text.is_empty() {
            "the tool failed without saying why".to_owned()
        } else {
            text
        };
        return Err(ToolError::failed(message));
    }
    let blocks = result
        .content
        .iter()
        .enumerate()
        .map(|(i, b)| block_from_mcp(i, b))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(structured) = result.structured_content {
        return Ok(ToolOutput::Structured { structured, blocks });
    }
    Ok(plain_shape(&blocks).unwrap_or(ToolOutput::Blocks { blocks }))
}

/// The text-only shapes of [`ToolOutput`], recognised by their blocks.
fn plain_shape(blocks: &[ContentBlock]) -> Option<ToolOutput> {
    let only = |who: Audience| Annotations::for_audience([who]);
    Some(match blocks {
        [] => ToolOutput::text(""),
        [ContentBlock::Text { text, annotations }] if annotations.is_empty() => {
            ToolOutput::text(text.as_str())
        }
        [ContentBlock::Text { text, annotations }] if *annotations == only(Audience::Assistant) => {
            ToolOutput::silent(text.as_str())
        }
        [
            ContentBlock::Text {
                text: for_llm,
                annotations: a,
            },
            ContentBlock::Text {
                text: for_user,
                annotations: b,
            },
        ] if *a == only(Audience::Assistant) && *b == only(Audience::User) => {
            ToolOutput::dual(for_llm.as_str(), for_user.as_str())
        }
        _ => return None,
    })
}

fn joined_text(content: &[mcp::ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn decode(index: usize, kind: &str, data: &str) -> Result<Vec<u8>, ToolError> {
    STANDARD.decode(data).map_err(|e| {
        ToolError::failed(format!(
            "content block {index} ({kind}) is not valid base64: {e}"
        ))
    })
}

fn block_from_mcp(index: usize, block: &mcp::ContentBlock) -> Result<ContentBlock, ToolError> {
    Ok(match block {
        mcp::ContentBlock::Text(t) => ContentBlock::text(t.text.as_str())
            .with_annotations(annotations_from_mcp(t.annotations.as_ref())),
        mcp::ContentBlock::Image(img) => {
            ContentBlock::image(img.mime_type.as_str(), decode(index, "image", &img.data)?)
                .with_annotations(annotations_from_mcp(img.annotations.as_ref()))
        }
        mcp::ContentBlock::Audio(a) => {
            ContentBlock::media(a.mime_type.as_str(), decode(index, "audio", &a.data)?)
                .with_annotations(annotations_from_mcp(a.annotations.as_ref()))
        }
        mcp::ContentBlock::Resource(r) => {
            let annotations = annotations_from_mcp(r.annotations.as_ref());
            match &r.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => ContentBlock::resource(output::EmbeddedResource {
                    uri: uri.clone(),
                    mime_type: mime_type.clone(),
                    contents: output::ResourceContents::Text(text.clone()),
                }),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let data = decode(index, "resource", blob)?;
                    match mime_type {
                        // Media that only this host writes as a blob.
                        Some(mime) if uri.starts_with(MEDIA_URI) => {
                            ContentBlock::media(mime.as_str(), data)
                        }
                        _ => ContentBlock::resource(output::EmbeddedResource {
                            uri: uri.clone(),
                            mime_type: mime_type.clone(),
                            contents: output::ResourceContents::Blob(data),
                        }),
                    }
                }
                _ => unknown_block(index),
            }
            .with_annotations(annotations)
        }
        mcp::ContentBlock::ResourceLink(link) => ContentBlock::resource_link(ResourceLink {
            uri: link.uri.clone(),
            name: link.name.clone(),
            title: link.title.clone(),
            description: link.description.clone(),
            mime_type: link.mime_type.clone(),
            size: link.size,
        })
        .with_annotations(annotations_from_mcp(link.annotations.as_ref())),
        _ => unknown_block(index),
    })
}

/// A block of a kind newer than this version of the protocol library:
/// named in the text rather than dropped silently.
fn unknown_block(index: usize) -> ContentBlock {
    ContentBlock::text(format!(
        "[content block {index} of a kind toolhost does not know]"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use toolhost_core::artifact::ArtifactId;
    use toolhost_core::output::OffloadedOutput;

    fn round_trip(out: ToolOutput) -> ToolOutput {
        // Through the wire format, as a peer would see it.
        let wire = serde_json::to_value(output_to_mcp(&out)).unwrap();
        let back: CallToolResult = serde_json::from_value(wire).unwrap();
        output_from_mcp(back).unwrap()
    }

    #[test]
    fn t4_every_output_shape_survives_a_round_trip_through_mcp() {
        let shapes = [
            ToolOutput::text("plain"),
            ToolOutput::dual("3 files", "a.rs\nb.rs\nc.rs"),
            ToolOutput::dual("same", "same"),
            ToolOutput::silent("for the model only"),
            ToolOutput::blocks(vec![
                ContentBlock::text("look:"),
                ContentBlock::image("image/png", vec![0x89, b'P', b'N', b'G']),
                ContentBlock::media("audio/wav", vec![1, 2, 3]),
                ContentBlock::media("application/pdf", b"%PDF".to_vec()),
            ]),
            ToolOutput::structured(json!({"n": 1})),
        ];
        for out in shapes {
            assert_eq!(round_trip(out.clone()), out);
        }
    }

    #[test]
    fn t4_dual_output_carries_audience_annotations() {
        let wire = serde_json::to_value(output_to_mcp(&ToolOutput::dual("short", "long"))).unwrap();
        assert_eq!(
            wire["content"],
            json!([
                {"type": "text", "text": "short", "annotations": {"audience": ["assistant"]}},
                {"type": "text", "text": "long", "annotations": {"audience": ["user"]}},
            ])
        );
        assert_eq!(wire["isError"], false);
        let silent = serde_json::to_value(output_to_mcp(&ToolOutput::silent("s"))).unwrap();
        assert_eq!(
            silent["content"][0]["annotations"]["audience"],
            json!(["assistant"])
        );
    }

    #[test]
    fn t4_images_become_base64_image_content() {
        let out = ToolOutput::blocks(vec![ContentBlock::image(
            "image/png",
            vec![0x89, b'P', b'N', b'G'],
        )]);
        let wire = serde_json::to_value(output_to_mcp(&out)).unwrap();
        assert_eq!(
            wire["content"][0],
            json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"})
        );
    }

    #[test]
    fn t5_offloaded_output_sends_the_reference_to_the_model() {
        let out = ToolOutput::Offloaded(OffloadedOutput {
            artifact: ArtifactId::fresh(),
            size_bytes: 100_000,
            line_count: 10,
            preview: "head".into(),
            for_user: Some("everything".into()),
        });
        match round_trip(out) {
            ToolOutput::Dual { for_llm, for_user } => {
                assert!(for_llm.contains("artifact_read"), "{for_llm}");
                assert_eq!(for_user, "everything");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn p3_errors_are_results_flagged_as_errors_with_the_reason() {
        let err = ToolError::invalid_arguments("/text", "expected a string");
        let wire = serde_json::to_value(error_to_mcp(&err)).unwrap();
        assert_eq!(wire["isError"], true);
        assert_eq!(
            wire["content"][0]["text"],
            "invalid arguments at `/text`: expected a string"
        );
        let back: CallToolResult = serde_json::from_value(wire).unwrap();
        assert_eq!(
            output_from_mcp(back).unwrap_err(),
            ToolError::failed("invalid arguments at `/text`: expected a string")
        );
    }

    /// What the conformance suite's and server-everything's tools send.
    fn remote(result: Value) -> CallToolResult {
        serde_json::from_value(result).unwrap()
    }

    #[test]
    fn n1_remote_content_passes_through_whole_and_in_order() {
        let sent = json!({
            "content": [
                {"type": "text", "text": "mixed", "annotations": {"priority": 0.5}},
                {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav",
                 "annotations": {"audience": ["user"]}},
                {"type": "resource", "resource": {"uri": "test://text", "mimeType": "text/plain", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "test://blob", "mimeType": "application/octet-stream", "blob": "AAEC"},
                 "annotations": {"audience": ["assistant"], "lastModified": "2026-01-01T00:00:00Z"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b", "title": "B",
                 "description": "the letter b", "mimeType": "text/plain", "size": 1},
            ]
        });
        let out = output_from_mcp(remote(sent.clone())).unwrap();
        assert!(matches!(out, ToolOutput::Blocks { .. }), "{out:?}");
        let forwarded = serde_json::to_value(output_to_mcp(&out)).unwrap();
        assert_eq!(forwarded["content"], sent["content"]);
        let model = out.llm_text();
        assert!(model.contains("[resource test://text]\ninside"), "{model}");
        assert!(model.contains("[resource link `b`: file:///b]"), "{model}");
    }

    #[test]
    fn n1_a_result_meant_only_for_the_user_is_never_emptied() {
        let sent = json!({"content": [
            {"type": "text", "text": "one", "annotations": {"audience": ["user"]}},
            {"type": "text", "text": "two", "annotations": {"audience": ["user"], "priority": 1.0}},
        ]});
        let out = output_from_mcp(remote(sent.clone())).unwrap();
        assert_eq!(
            serde_json::to_value(output_to_mcp(&out)).unwrap()["content"],
            sent["content"]
        );
        assert_eq!(out.llm_text(), "one\ntwo");
    }

    #[test]
    fn n2_structured_content_and_output_schemas_pass_through() {
        let sent = json!({
            "content": [{"type": "text", "text": "{\"temperature\":22.5}"}],
            "structuredContent": {"temperature": 22.5},
        });
        let out = output_from_mcp(remote(sent.clone())).unwrap();
        assert_eq!(out.structured_value(), Some(&json!({"temperature": 22.5})));
        let forwarded = serde_json::to_value(output_to_mcp(&out)).unwrap();
        assert_eq!(forwarded["structuredContent"], sent["structuredContent"]);
        assert_eq!(forwarded["content"], sent["content"]);

        let bare = output_from_mcp(remote(
            json!({"content": [], "structuredContent": {"n": 1}}),
        ));
        assert_eq!(bare.unwrap().llm_text(), r#"{"n":1}"#);

        let mut output = JsonObject::new();
        output.insert("type".into(), json!("object"));
        let tool = mcp::Tool::new("weather", "d", object_schema())
            .with_raw_output_schema(output.clone().into());
        let (spec, _, _) = spec_from_mcp(&tool, "w", &mut PatternBudget::per_plugin()).unwrap();
        assert_eq!(spec.output_schema, Some(Value::Object(output)));
        let wire = serde_json::to_value(spec_to_mcp(&spec)).unwrap();
        assert_eq!(wire["outputSchema"], json!({"type": "object"}));
    }

    #[test]
    fn e3_remote_results_keep_bad_media_out() {
        let bad = remote(json!({
            "content": [{"type": "image", "data": "%%%", "mimeType": "image/png"}]
        }));
        let err = output_from_mcp(bad).unwrap_err();
        assert!(err.to_string().contains("content block 0 (image)"), "{err}");
    }

    #[test]
    fn o4_a_remote_tools_hints_are_kept_as_declared() {
        let plain = mcp::Tool::new("search", "d", object_schema());
        assert_eq!(hints_from_mcp(&plain), ToolHints::NONE);
        let read = plain
            .clone()
            .with_annotations(ToolAnnotations::new().read_only(true));
        assert_eq!(hints_from_mcp(&read).read_only, Some(true));
        assert_eq!(hints_from_mcp(&read).destructive, None);
        let rm = plain.with_annotations(ToolAnnotations::new().destructive(true).read_only(false));
        assert_eq!(
            hints_from_mcp(&rm),
            ToolHints::default().destructive(true).read_only(false)
        );
    }

    #[test]
    fn e3_remote_names_are_prefixed_and_checked() {
        let tool = mcp::Tool::new("search", "Finds things", object_schema());
        let (spec, _, _) = spec_from_mcp(&tool, "docs", &mut PatternBudget::per_plugin()).unwrap();
        assert_eq!(spec.name, "docs.search");
        assert_eq!(spec.description, "Finds things");
        assert_eq!(spec.parameters, json!({"type": "object"}));
        assert_eq!(spec.concurrency_safe, None);
        assert!(!spec.idempotent);
        assert_eq!(
            spec_from_mcp(&tool, "", &mut PatternBudget::per_plugin())
                .unwrap()
                .0
                .name,
            "search"
        );
        let spaced = mcp::Tool::new("has space", "d", object_schema());
        let err = toolhost_core::report(
            &spec_from_mcp(&spaced, "docs", &mut PatternBudget::per_plugin()).unwrap_err(),
        );
        assert!(err.contains("docs.has space"), "{err}");
        assert!(err.contains("contains ' '"), "the cause is kept: {err}");
        let mut bad_schema = JsonObject::new();
        bad_schema.insert("type".into(), json!("no-such-type"));
        let err = spec_from_mcp(
            &mcp::Tool::new("odd", "d", bad_schema),
            "docs",
            &mut PatternBudget::per_plugin(),
        )
        .unwrap_err();
        let text = toolhost_core::report(&err);
        assert!(text.starts_with("tool `odd` has a schema"), "{text}");
        assert!(text.contains("no-such-type"), "the cause is kept: {text}");
    }

    #[test]
    fn t1_descriptors_keep_name_schema_and_idempotence() {
        let spec = ToolSpec::new(
            "echo",
            "Echoes",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        )
        .idempotent(true);
        let wire = serde_json::to_value(spec_to_mcp(&spec)).unwrap();
        assert_eq!(wire["name"], "echo");
        assert_eq!(wire["description"], "Echoes");
        assert_eq!(wire["inputSchema"]["properties"]["text"]["type"], "string");
        assert_eq!(wire["annotations"]["idempotentHint"], true);
        let odd = ToolSpec::new("any", "d", json!(true));
        assert_eq!(
            serde_json::to_value(spec_to_mcp(&odd)).unwrap()["inputSchema"],
            json!({"type": "object"})
        );
    }

    #[test]
    fn a3_a_quotas_refusal_is_a_protocol_error_naming_the_quota() {
        let err = ToolError::OverQuota {
            quota: toolhost_core::quota::QuotaKind::InFlight,
            scope: "tenant \"acme\"".into(),
            retry_after: std::time::Duration::from_millis(1500),
        };
        let wire = serde_json::to_value(over_quota_error(&err)).unwrap();
        assert_eq!(wire["code"], OVER_QUOTA_CODE);
        assert_eq!(
            wire["data"],
            json!({"quota": "in_flight", "scope": "tenant \"acme\"", "retryAfterMs": 1500})
        );
        assert_eq!(
            wire["message"],
            "over quota: in_flight of tenant \"acme\" is used up; try again in 1.50s"
        );
    }

    #[test]
    fn o4_a_tools_hints_go_out_as_its_annotations_and_come_back() {
        let plain = ToolSpec::new("plain", "d", json!({"type": "object"}));
        let wire = serde_json::to_value(spec_to_mcp(&plain)).unwrap();
        assert!(wire.get("annotations").is_none(), "{wire}");
        let spec = plain.clone().hints(
            ToolHints::NONE
                .read_only(false)
                .destructive(true)
                .open_world(false),
        );
        let tool = spec_to_mcp(&spec);
        let wire = serde_json::to_value(&tool).unwrap();
        assert_eq!(
            wire["annotations"],
            json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false})
        );
        let (back, _, _) =
            spec_from_mcp(&tool, "remote", &mut PatternBudget::per_plugin()).unwrap();
        assert_eq!(back.hints, spec.hints);
    }
}
