//! Typed tool results (rule T4). Each variant is a presentation choice — what
//! the model sees and what the user is shown — never a confidentiality
//! guarantee.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::artifact_id::ArtifactId;

/// What a tool returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolOutput {
    /// Plain text, shown to the model and the user alike.
    Text {
        /// The text.
        text: String,
    },
    /// Compact text for the model and a richer rendering for the user.
    Dual {
        /// What goes into the model's context.
        for_llm: String,
        /// What a user interface displays.
        for_user: String,
    },
    /// Model-visible text that a user interface does not display.
    Silent {
        /// The text.
        text: String,
    },
    /// Content blocks, in order, each with its own annotations: what a
    /// multimodal result (text, images, audio, resources) is, and what a
    /// remote MCP server's result becomes unless it is plain text.
    Blocks {
        /// The blocks, in order.
        blocks: Vec<ContentBlock>,
    },
    /// Structured content (rule N2): a JSON value for programs, with the
    /// blocks a reader sees (by default the value as JSON text). A tool that
    /// declares an output schema returns this, and the value is checked
    /// against the schema.
    Structured {
        /// The structured value (MCP's `structuredContent`).
        structured: Value,
        /// What the model and a user interface see, in order.
        blocks: Vec<ContentBlock>,
    },
    /// A large output moved into the artifact store (rule T5): the model sees
    /// a reference and a preview, and reads the rest with `artifact_read`.
    Offloaded(OffloadedOutput),
}

/// Who a content block is meant for: MCP's `audience` annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Audience {
    /// The person using the application.
    User,
    /// The model.
    Assistant,
}

/// Hints that go with a content block (MCP's annotations). They are
/// presentation hints, never confidentiality: a block marked for the user
/// alone still reaches every MCP client (rule T4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Annotations {
    /// Who the block is for; empty means everyone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<Audience>,
    /// How important the block is, from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the content was last modified (ISO 8601), as its source said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// No annotations: the block is for everyone.
    pub fn is_empty(&self) -> bool {
        self.audience.is_empty() && self.priority.is_none() && self.last_modified.is_none()
    }

    /// Annotations that give the block to `audience` only.
    pub fn for_audience(audience: impl Into<Vec<Audience>>) -> Self {
        Self {
            audience: audience.into(),
            ..Self::default()
        }
    }

    /// Whether the block is meant for `who` (an empty audience is everyone).
    pub fn is_for(&self, who: Audience) -> bool {
        self.audience.is_empty() || self.audience.contains(&who)
    }
}

/// One piece of content, with its annotations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Who it is for, and how important it is.
        #[serde(default, skip_serializing_if = "Annotations::is_empty")]
        annotations: Annotations,
    },
    /// An image; `mime_type` is an `image/*` type such as `image/png`.
    Image {
        /// The image's MIME type.
        mime_type: String,
        /// The encoded image.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
        /// Who it is for, and how important it is.
        #[serde(default, skip_serializing_if = "Annotations::is_empty")]
        annotations: Annotations,
    },
    /// Other media (audio, a PDF, …) with its MIME type. Audio (`audio/*`)
    /// travels over MCP as audio content, anything else as an embedded blob.
    Media {
        /// The media's MIME type.
        mime_type: String,
        /// The encoded bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
        /// Who it is for, and how important it is.
        #[serde(default, skip_serializing_if = "Annotations::is_empty")]
        annotations: Annotations,
    },
    /// A link to a resource the reader may fetch (MCP's `resource_link`).
    ResourceLink {
        /// The link.
        #[serde(flatten)]
        link: ResourceLink,
        /// Who it is for, and how important it is.
        #[serde(default, skip_serializing_if = "Annotations::is_empty")]
        annotations: Annotations,
    },
    /// A resource's contents, carried inline (MCP's embedded `resource`).
    Resource {
        /// The resource.
        #[serde(flatten)]
        resource: EmbeddedResource,
        /// Who it is for, and how important it is.
        #[serde(default, skip_serializing_if = "Annotations::is_empty")]
        annotations: Annotations,
    },
}

/// A link to a resource: where it is and what it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name (an identifier, say a file name).
    pub name: String,
    /// A title for people, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A resource carried inline: its URI, MIME type and contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its contents.
    pub contents: ResourceContents,
}

/// The contents of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes (base64 in JSON).
    Blob(#[serde(with = "base64_bytes")] Vec<u8>),
}

impl ContentBlock {
    /// Text for everyone.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            annotations: Annotations::default(),
        }
    }

    /// An image for everyone.
    pub fn image(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self::Image {
            mime_type: mime_type.into(),
            data: data.into(),
            annotations: Annotations::default(),
        }
    }

    /// Other media (audio, a PDF, …) for everyone.
    pub fn media(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self::Media {
            mime_type: mime_type.into(),
            data: data.into(),
            annotations: Annotations::default(),
        }
    }

    /// A link to a resource, for everyone.
    pub fn resource_link(link: ResourceLink) -> Self {
        Self::ResourceLink {
            link,
            annotations: Annotations::default(),
        }
    }

    /// An embedded resource, for everyone.
    pub fn resource(resource: EmbeddedResource) -> Self {
        Self::Resource {
            resource,
            annotations: Annotations::default(),
        }
    }

    /// The same block with `annotations`.
    pub fn with_annotations(mut self, new: Annotations) -> Self {
        *self.annotations_mut() = new;
        self
    }

    /// The block's annotations.
    pub fn annotations(&self) -> &Annotations {
        match self {
            Self::Text { annotations, .. }
            | Self::Image { annotations, .. }
            | Self::Media { annotations, .. }
            | Self::ResourceLink { annotations, .. }
            | Self::Resource { annotations, .. } => annotations,
        }
    }

    fn annotations_mut(&mut self) -> &mut Annotations {
        match self {
            Self::Text { annotations, .. }
            | Self::Image { annotations, .. }
            | Self::Media { annotations, .. }
            | Self::ResourceLink { annotations, .. }
            | Self::Resource { annotations, .. } => annotations,
        }
    }

    /// The block's text, if it is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text, .. } => Some(text),
            _ => None,
        }
    }

    /// Its payload size in bytes (text, media or resource contents).
    pub fn size_bytes(&self) -> usize {
        match self {
            Self::Text { text, .. } => text.len(),
            Self::Image { data, .. } | Self::Media { data, .. } => data.len(),
            Self::ResourceLink { link, .. } => link.uri.len() + link.name.len(),
            Self::Resource { resource, .. } => match &resource.contents {
                ResourceContents::Text(text) => text.len(),
                ResourceContents::Blob(data) => data.len(),
            },
        }
    }

    /// The block as one piece of text, for a reader that takes text only:
    /// text as it is, media and resources as a line naming what they are.
    pub fn describe(&self, out: &mut String) {
        match self {
            Self::Text { text, .. } => out.push_str(text),
            Self::Image {
                mime_type, data, ..
            } => {
                let _ = write!(out, "[image: {mime_type}, {} bytes]", data.len());
            }
            Self::Media {
                mime_type, data, ..
            } => {
                let _ = write!(out, "[media: {mime_type}, {} bytes]", data.len());
            }
            Self::ResourceLink { link, .. } => {
                let _ = write!(out, "[resource link `{}`: {}]", link.name, link.uri);
            }
            Self::Resource { resource, .. } => match &resource.contents {
                ResourceContents::Text(text) => {
                    let _ = write!(out, "[resource {}]\n{text}", resource.uri);
                }
                ResourceContents::Blob(data) => {
                    let mime = resource.mime_type.as_deref().unwrap_or("bytes");
                    let _ = write!(
                        out,
                        "[resource {}: {mime}, {} bytes]",
                        resource.uri,
                        data.len()
                    );
                }
            },
        }
    }
}

/// A result that was stored as an artifact because it was large.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffloadedOutput {
    /// Where the full model-facing text is stored.
    pub artifact: ArtifactId,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// Its number of lines.
    pub line_count: u64,
    /// The start of the text, cut at a character boundary.
    pub preview: String,
    /// What the user would have been shown (`None` if the output was silent).
    pub for_user: Option<String>,
}

impl ToolOutput {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// Dual output: compact `for_llm`, richer `for_user`.
    pub fn dual(for_llm: impl Into<String>, for_user: impl Into<String>) -> Self {
        Self::Dual {
            for_llm: for_llm.into(),
            for_user: for_user.into(),
        }
    }

    /// Model-visible text that is not displayed.
    pub fn silent(text: impl Into<String>) -> Self {
        Self::Silent { text: text.into() }
    }

    /// Content blocks, in order.
    pub fn blocks(blocks: Vec<ContentBlock>) -> Self {
        Self::Blocks { blocks }
    }

    /// Structured content, shown to readers as its JSON text.
    pub fn structured(value: Value) -> Self {
        let text = value.to_string();
        Self::Structured {
            structured: value,
            blocks: vec![ContentBlock::text(text)],
        }
    }

    /// The blocks a result is made of, with the audience of each: what an
    /// MCP client receives, in order.
    pub fn content_blocks(&self) -> Cow<'_, [ContentBlock]> {
        let marked = |text: &str, who: &[Audience]| {
            ContentBlock::text(text).with_annotations(Annotations::for_audience(who))
        };
        match self {
            Self::Text { text } => Cow::Owned(vec![ContentBlock::text(text.as_str())]),
            Self::Dual { for_llm, for_user } => Cow::Owned(vec![
                marked(for_llm, &[Audience::Assistant]),
                marked(for_user, &[Audience::User]),
            ]),
            Self::Silent { text } => Cow::Owned(vec![marked(text, &[Audience::Assistant])]),
            Self::Blocks { blocks } | Self::Structured { blocks, .. } => Cow::Borrowed(blocks),
            Self::Offloaded(o) => {
                let mut blocks = vec![marked(&o.reference_text(), &[Audience::Assistant])];
                if let Some(user) = &o.for_user {
                    blocks.push(marked(user, &[Audience::User]));
                }
                Cow::Owned(blocks)
            }
        }
    }

    /// The structured value, if the result has one.
    pub fn structured_value(&self) -> Option<&Value> {
        match self {
            Self::Structured { structured, .. } => Some(structured),
            _ => None,
        }
    }

    /// The text that goes into the model's context. Structured content
    /// without blocks is its JSON text. Of content blocks, those
    /// meant for the model (no audience, or `assistant`) — or all of them if
    /// none is, so that a result never reaches the model empty; non-text
    /// blocks appear as a line naming what they are, for providers that
    /// cannot take them.
    pub fn llm_text(&self) -> Cow<'_, str> {
        match self {
            Self::Text { text } | Self::Silent { text } => Cow::Borrowed(text),
            Self::Dual { for_llm, .. } => Cow::Borrowed(for_llm),
            Self::Structured { structured, blocks } if blocks.is_empty() => {
                Cow::Owned(structured.to_string())
            }
            Self::Blocks { blocks } | Self::Structured { blocks, .. } => {
                blocks_text(model_blocks(blocks))
            }
            Self::Offloaded(o) => Cow::Owned(o.reference_text()),
        }
    }

    /// What a user interface displays; `None` for silent output. Of content
    /// blocks, those meant for the user (no audience, or `user`); `None` if
    /// there are none.
    pub fn user_text(&self) -> Option<Cow<'_, str>> {
        match self {
            Self::Text { text } => Some(Cow::Borrowed(text)),
            Self::Silent { .. } => None,
            Self::Dual { for_user, .. } => Some(Cow::Borrowed(for_user)),
            Self::Structured { structured, blocks } if blocks.is_empty() => {
                Some(Cow::Owned(structured.to_string()))
            }
            Self::Blocks { blocks } | Self::Structured { blocks, .. } => {
                let shown: Vec<&ContentBlock> = blocks
                    .iter()
                    .filter(|b| b.annotations().is_for(Audience::User))
                    .collect();
                (!shown.is_empty()).then(|| blocks_text(shown))
            }
            Self::Offloaded(o) => o.for_user.as_deref().map(Cow::Borrowed),
        }
    }

    /// Total payload size in bytes (text, media and structured JSON), for
    /// logs and metrics.
    pub fn size_bytes(&self) -> usize {
        match self {
            Self::Text { text } | Self::Silent { text } => text.len(),
            Self::Dual { for_llm, for_user } => for_llm.len() + for_user.len(),
            Self::Blocks { blocks } => blocks.iter().map(ContentBlock::size_bytes).sum(),
            Self::Structured { structured, blocks } => {
                json_len(structured) + blocks.iter().map(ContentBlock::size_bytes).sum::<usize>()
            }
            Self::Offloaded(o) => o.preview.len(),
        }
    }
}

/// The blocks the model is shown: those meant for it, or all of them when
/// none is (a result is never turned into nothing).
pub fn model_blocks(blocks: &[ContentBlock]) -> Vec<&ContentBlock> {
    let meant: Vec<&ContentBlock> = blocks
        .iter()
        .filter(|b| b.annotations().is_for(Audience::Assistant))
        .collect();
    if meant.is_empty() {
        blocks.iter().collect()
    } else {
        meant
    }
}

fn blocks_text(blocks: Vec<&ContentBlock>) -> Cow<'_, str> {
    if let [ContentBlock::Text { text, .. }] = blocks[..] {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    for (i, block) in blocks.into_iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        block.describe(&mut out);
    }
    Cow::Owned(out)
}

/// The length of `value` as compact JSON, without building the string.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

impl OffloadedOutput {
    /// The text the model sees in place of the full output.
    pub fn reference_text(&self) -> String {
        format!(
            "[output stored as artifact `{id}`: {size} bytes, {lines} lines. Preview:]\n{preview}\n\
             [end of preview; call `artifact_read` with {{\"id\": \"{id}\", \"line_start\": 1, \"line_count\": 200}} \
             or {{\"id\": \"{id}\", \"offset\": 0, \"length\": 8192}} to read more]",
            id = self.artifact,
            size = self.size_bytes,
            lines = self.line_count,
            preview = self.preview,
        )
    }
}

/// Media bytes travel as standard base64 in JSON.
mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(data))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t4_dual_output_splits_model_and_user_views() {
        let out = ToolOutput::dual("3 files", "a.rs\nb.rs\nc.rs");
        assert_eq!(out.llm_text(), "3 files");
        assert_eq!(out.user_text().unwrap(), "a.rs\nb.rs\nc.rs");
    }

    #[test]
    fn t4_silent_output_is_model_visible_but_not_displayed() {
        let out = ToolOutput::silent("ok");
        assert_eq!(out.llm_text(), "ok");
        assert!(out.user_text().is_none());
    }

    #[test]
    fn t4_blocks_keep_media_typed_and_describe_it_in_text() {
        let out = ToolOutput::blocks(vec![
            ContentBlock::text("screenshot:"),
            ContentBlock::image("image/png", vec![0x89, b'P', b'N', b'G']),
        ]);
        assert_eq!(out.llm_text(), "screenshot:\n[image: image/png, 4 bytes]");
        assert_eq!(out.size_bytes(), "screenshot:".len() + 4);
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["blocks"][1]["data"], "iVBORw==");
        let back: ToolOutput = serde_json::from_value(json).unwrap();
        assert_eq!(back, out);
    }

    fn every_kind_of_block() -> Vec<ContentBlock> {
        vec![
            ContentBlock::text("for the user").with_annotations(Annotations {
                audience: vec![Audience::User],
                priority: Some(0.5),
                last_modified: Some("2026-01-01T00:00:00Z".into()),
            }),
            ContentBlock::image("image/png", b"png".to_vec()),
            ContentBlock::media("audio/wav", b"wav".to_vec()),
            ContentBlock::resource_link(ResourceLink {
                uri: "file:///a.txt".into(),
                name: "a.txt".into(),
                title: Some("A".into()),
                description: Some("the letter a".into()),
                mime_type: Some("text/plain".into()),
                size: Some(1),
            }),
            ContentBlock::resource(EmbeddedResource {
                uri: "test://text".into(),
                mime_type: Some("text/plain".into()),
                contents: ResourceContents::Text("inline".into()),
            }),
            ContentBlock::resource(EmbeddedResource {
                uri: "test://blob".into(),
                mime_type: None,
                contents: ResourceContents::Blob(vec![0, 1, 2]),
            })
            .with_annotations(Annotations::for_audience([Audience::Assistant])),
        ]
    }

    #[test]
    fn n1_every_kind_of_block_keeps_its_fields_and_annotations_through_json() {
        let out = ToolOutput::blocks(every_kind_of_block());
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["blocks"][0]["annotations"]["priority"], 0.5);
        assert_eq!(json["blocks"][3]["uri"], "file:///a.txt");
        assert_eq!(json["blocks"][4]["contents"]["text"], "inline");
        assert_eq!(json["blocks"][5]["contents"]["blob"], "AAEC");
        let back: ToolOutput = serde_json::from_value(json).unwrap();
        assert_eq!(back, out);
        assert_eq!(out.content_blocks().len(), 6);
    }

    #[test]
    fn n1_the_model_sees_its_blocks_and_a_user_only_result_is_never_empty() {
        let out = ToolOutput::blocks(every_kind_of_block());
        let model = out.llm_text();
        assert!(!model.contains("for the user"), "{model}");
        assert!(
            model.contains("[resource link `a.txt`: file:///a.txt]"),
            "{model}"
        );
        assert!(model.contains("[resource test://text]\ninline"), "{model}");
        assert!(
            model.contains("[resource test://blob: bytes, 3 bytes]"),
            "{model}"
        );
        let user = out.user_text().unwrap();
        assert!(user.contains("for the user"), "{user}");
        assert!(!user.contains("test://blob"), "{user}");

        let for_user = Annotations::for_audience([Audience::User]);
        let only_user = ToolOutput::blocks(vec![
            ContentBlock::text("one").with_annotations(for_user.clone()),
            ContentBlock::text("two").with_annotations(for_user),
        ]);
        assert_eq!(only_user.llm_text(), "one\ntwo");
        let only_model = ToolOutput::blocks(vec![
            ContentBlock::text("x")
                .with_annotations(Annotations::for_audience([Audience::Assistant])),
        ]);
        assert!(only_model.user_text().is_none());
    }

    #[test]
    fn n2_structured_output_carries_its_value_and_shows_it_as_json() {
        let out = ToolOutput::structured(serde_json::json!({"n": 1}));
        assert_eq!(out.llm_text(), r#"{"n":1}"#);
        assert_eq!(out.structured_value(), Some(&serde_json::json!({"n": 1})));
        assert_eq!(out.size_bytes(), 2 * r#"{"n":1}"#.len());
        assert!(ToolOutput::text("t").structured_value().is_none());
    }

    #[test]
    fn t4_each_shape_has_its_blocks_with_audiences() {
        let dual = ToolOutput::dual("short", "long");
        let blocks = dual.content_blocks();
        assert_eq!(blocks[0].annotations().audience, [Audience::Assistant]);
        assert_eq!(blocks[1].annotations().audience, [Audience::User]);
        assert_eq!(blocks[1].as_text(), Some("long"));
        assert!(
            ToolOutput::text("t").content_blocks()[0]
                .annotations()
                .is_empty()
        );
    }
}
