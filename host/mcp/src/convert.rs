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
//! | `Blocks` | text, image (base64), audio; other media as an embedded blob |
//! | `Offloaded` | the reference for the model (`assistant`), the user's text (`user`) |
//!
//! A remote result maps back the same way, so a result that crosses two hops
//! keeps its shape. Audience annotations are presentation hints, never
//! confidentiality (rule T4).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{
    self as mcp, Annotations, AudioContent, CallToolResult, EmbeddedResource, ImageContent,
    JsonObject, ResourceContents, Role, TextContent, ToolAnnotations,
};
use serde_json::Value;

use crate::error::SpecError;
use toolhost_core::CompiledSchema;
use toolhost_core::error::ToolError;
use toolhost_core::output::{ContentBlock, ToolOutput};
use toolhost_core::tool::ToolSpec;

/// The MCP descriptor of a registered tool: its name, description and
/// argument schema, and `idempotentHint` when the tool is declared
/// idempotent. A schema that is not a JSON object (say `true`) is sent as
/// `{"type": "object"}`, which MCP requires.
pub fn spec_to_mcp(spec: &ToolSpec) -> mcp::Tool {
    let schema = match &spec.parameters {
        Value::Object(map) => map.clone(),
        _ => object_schema(),
    };
    let tool = mcp::Tool::new(spec.name.clone(), spec.description.clone(), schema);
    if spec.idempotent {
        tool.with_annotations(ToolAnnotations::new().idempotent(true))
    } else {
        tool
    }
}

fn object_schema() -> JsonObject {
    let mut map = JsonObject::new();
    map.insert("type".into(), Value::String("object".into()));
    map
}

/// The toolhost descriptor of a remote tool, named `prefix.name` (or `name`
/// with an empty prefix), with its input schema compiled (once: the tool
/// hands it to the registry). The server's annotations are hints from a party
/// the host does not control, so they declare nothing: the tool's
/// concurrency safety is unset and it is not idempotent.
///
/// Fails, naming the tool, if the prefixed name is not a valid tool name or
/// the schema does not compile.
pub fn spec_from_mcp(
    tool: &mcp::Tool,
    prefix: &str,
) -> Result<(ToolSpec, CompiledSchema), SpecError> {
    let name = if prefix.is_empty() {
        tool.name.to_string()
    } else {
        format!("{prefix}.{}", tool.name)
    };
    if let Err(e) = ToolSpec::validate_name(&name) {
        return Err(SpecError::InvalidName { name, source: e });
    }
    let schema = Value::Object((*tool.input_schema).clone());
    let compiled = CompiledSchema::compile(&schema).map_err(|e| SpecError::Schema {
        tool: tool.name.to_string(),
        source: e,
    })?;
    let description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or_default();
    Ok((ToolSpec::new(name, description, schema), compiled))
}

fn audience(roles: &[Role]) -> Annotations {
    Annotations::default().with_audience(roles.to_vec())
}

fn text_for(text: &str, roles: Option<&[Role]>) -> mcp::ContentBlock {
    let content = TextContent::new(text);
    mcp::ContentBlock::Text(match roles {
        Some(roles) => content.with_annotations(audience(roles)),
        None => content,
    })
}

/// The MCP result of a successful call (see the module's table).
pub fn output_to_mcp(out: &ToolOutput) -> CallToolResult {
    let content = match out {
        ToolOutput::Text { text } => vec![text_for(text, None)],
        ToolOutput::Dual { for_llm, for_user } => vec![
            text_for(for_llm, Some(&[Role::Assistant])),
            text_for(for_user, Some(&[Role::User])),
        ],
        ToolOutput::Silent { text } => vec![text_for(text, Some(&[Role::Assistant]))],
        ToolOutput::Blocks { blocks } => blocks
            .iter()
            .enumerate()
            .map(|(i, b)| block_to_mcp(i, b))
            .collect(),
        ToolOutput::Offloaded(o) => {
            let mut content = vec![text_for(&o.reference_text(), Some(&[Role::Assistant]))];
            if let Some(user) = &o.for_user {
                content.push(text_for(user, Some(&[Role::User])));
            }
            content
        }
    };
    CallToolResult::success(content)
}

fn block_to_mcp(index: usize, block: &ContentBlock) -> mcp::ContentBlock {
    match block {
        ContentBlock::Text { text } => text_for(text, None),
        ContentBlock::Image { mime_type, data } => {
            mcp::ContentBlock::Image(ImageContent::new(STANDARD.encode(data), mime_type))
        }
        ContentBlock::Media { mime_type, data } if mime_type.starts_with("audio/") => {
            mcp::ContentBlock::Audio(AudioContent::new(STANDARD.encode(data), mime_type))
        }
        ContentBlock::Media { mime_type, data } => {
            let blob =
                ResourceContents::blob(STANDARD.encode(data), format!("toolhost:media/{index}"))
                    .with_mime_type(mime_type);
            mcp::ContentBlock::Resource(EmbeddedResource::new(blob))
        }
    }
}

/// The MCP result of a failed call: `isError: true` and the reason, so the
/// model can read it and correct itself. (An unknown tool is a protocol
/// error instead; the server decides that.)
pub fn error_to_mcp(err: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![text_for(&err.to_string(), None)])
}

/// Where a remote content block is meant to go.
struct Audience {
    model: bool,
    user: bool,
}

impl Audience {
    fn of(annotations: Option<&Annotations>) -> Self {
        match annotations.and_then(|a| a.audience.as_deref()) {
            Some(roles) if !roles.is_empty() => Self {
                model: roles.contains(&Role::Assistant),
                user: roles.contains(&Role::User),
            },
            _ => Self {
                model: true,
                user: true,
            },
        }
    }

    fn both(&self) -> bool {
        self.model && self.user
    }
}

/// Converts a remote server's result back into a toolhost result: the
/// inverse of [`output_to_mcp`] (text, dual, silent, blocks). With media,
/// the result is blocks of what the model may see (user-only parts are
/// dropped). Embedded text resources become text, resource links a line
/// naming the link, and an empty result with structured content its JSON.
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
    if result.content.is_empty() {
        let text = result
            .structured_content
            .map(|v| v.to_string())
            .unwrap_or_default();
        return Ok(ToolOutput::text(text));
    }
    let mut model_text = Vec::new();
    let mut user_text = Vec::new();
    let mut blocks = Vec::new();
    let mut has_media = false;
    let mut all_shared = true;
    for (i, block) in result.content.iter().enumerate() {
        let (converted, annotations) = block_from_mcp(i, block)?;
        let to = Audience::of(annotations);
        all_shared &= to.both();
        match &converted {
            ContentBlock::Text { text } => {
                if to.model {
                    model_text.push(text.clone());
                }
                if to.user {
                    user_text.push(text.clone());
                }
            }
            _ => has_media = true,
        }
        if to.model {
            blocks.push(converted);
        }
    }
    Ok(if has_media {
        ToolOutput::blocks(blocks)
    } else if all_shared {
        ToolOutput::text(model_text.join("\n"))
    } else if user_text.is_empty() {
        ToolOutput::silent(model_text.join("\n"))
    } else {
        ToolOutput::dual(model_text.join("\n"), user_text.join("\n"))
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

fn block_from_mcp(
    index: usize,
    block: &mcp::ContentBlock,
) -> Result<(ContentBlock, Option<&Annotations>), ToolError> {
    Ok(match block {
        mcp::ContentBlock::Text(t) => (
            ContentBlock::Text {
                text: t.text.clone(),
            },
            t.annotations.as_ref(),
        ),
        mcp::ContentBlock::Image(img) => (
            ContentBlock::Image {
                mime_type: img.mime_type.clone(),
                data: decode(index, "image", &img.data)?,
            },
            img.annotations.as_ref(),
        ),
        mcp::ContentBlock::Audio(a) => (
            ContentBlock::Media {
                mime_type: a.mime_type.clone(),
                data: decode(index, "audio", &a.data)?,
            },
            a.annotations.as_ref(),
        ),
        mcp::ContentBlock::Resource(r) => {
            let converted = match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => {
                    ContentBlock::Text { text: text.clone() }
                }
                ResourceContents::BlobResourceContents {
                    blob, mime_type, ..
                } => ContentBlock::Media {
                    mime_type: mime_type
                        .clone()
                        .unwrap_or_else(|| "application/octet-stream".into()),
                    data: decode(index, "resource", blob)?,
                },
                _ => unsupported(index),
            };
            (converted, r.annotations.as_ref())
        }
        mcp::ContentBlock::ResourceLink(link) => (
            ContentBlock::Text {
                text: format!("[resource {}: {}]", link.name, link.uri),
            },
            None,
        ),
        _ => (unsupported(index), None),
    })
}

/// A block of a kind newer than this version of the protocol library: named
/// in the text rather than dropped silently.
fn unsupported(index: usize) -> ContentBlock {
    ContentBlock::Text {
        text: format!("[content block {index} of a kind toolhost does not know]"),
    }
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
                ContentBlock::Text {
                    text: "look:".into(),
                },
                ContentBlock::Image {
                    mime_type: "image/png".into(),
                    data: vec![0x89, b'P', b'N', b'G'],
                },
                ContentBlock::Media {
                    mime_type: "audio/wav".into(),
                    data: vec![1, 2, 3],
                },
                ContentBlock::Media {
                    mime_type: "application/pdf".into(),
                    data: b"%PDF".to_vec(),
                },
            ]),
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
        let out = ToolOutput::blocks(vec![ContentBlock::Image {
            mime_type: "image/png".into(),
            data: vec![0x89, b'P', b'N', b'G'],
        }]);
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

    #[test]
    fn e3_remote_results_map_resources_links_and_structured_content() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"},
            ]
        }))
        .unwrap();
        assert_eq!(
            output_from_mcp(result).unwrap(),
            ToolOutput::text("inside\n[resource b: file:///b]")
        );
        let structured: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": {"n": 1}})).unwrap();
        assert_eq!(
            output_from_mcp(structured).unwrap(),
            ToolOutput::text(r#"{"n":1}"#)
        );
        let bad: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "image", "data": "%%%", "mimeType": "image/png"}]
        }))
        .unwrap();
        let err = output_from_mcp(bad).unwrap_err();
        assert!(err.to_string().contains("content block 0 (image)"), "{err}");
    }

    #[test]
    fn e3_remote_names_are_prefixed_and_checked() {
        let tool = mcp::Tool::new("search", "Finds things", object_schema());
        let (spec, _) = spec_from_mcp(&tool, "docs").unwrap();
        assert_eq!(spec.name, "docs.search");
        assert_eq!(spec.description, "Finds things");
        assert_eq!(spec.parameters, json!({"type": "object"}));
        assert_eq!(spec.concurrency_safe, None);
        assert!(!spec.idempotent);
        assert_eq!(spec_from_mcp(&tool, "").unwrap().0.name, "search");
        let spaced = mcp::Tool::new("has space", "d", object_schema());
        let err = toolhost_core::report(&spec_from_mcp(&spaced, "docs").unwrap_err());
        assert!(err.contains("docs.has space"), "{err}");
        assert!(err.contains("contains ' '"), "the cause is kept: {err}");
        let mut bad_schema = JsonObject::new();
        bad_schema.insert("type".into(), json!("no-such-type"));
        let err = spec_from_mcp(&mcp::Tool::new("odd", "d", bad_schema), "docs").unwrap_err();
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
}
