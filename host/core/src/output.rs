//! Typed tool results (rule T4). Each variant is a presentation choice — what
//! the model sees and what the user is shown — never a confidentiality
//! guarantee.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

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
    /// Multimodal content for providers that accept it.
    Blocks {
        /// The blocks, in order.
        blocks: Vec<ContentBlock>,
    },
    /// A large output moved into the artifact store (rule T5): the model sees
    /// a reference and a preview, and reads the rest with `artifact_read`.
    Offloaded(OffloadedOutput),
}

/// One piece of multimodal content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image; `mime_type` is an `image/*` type such as `image/png`.
    Image {
        /// The image's MIME type.
        mime_type: String,
        /// The encoded image.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
    /// Other media (audio, a PDF, …) with its MIME type.
    Media {
        /// The media's MIME type.
        mime_type: String,
        /// The encoded bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
    },
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

    /// Multimodal blocks.
    pub fn blocks(blocks: Vec<ContentBlock>) -> Self {
        Self::Blocks { blocks }
    }

    /// The text that goes into the model's context. Non-text blocks appear as
    /// a one-line placeholder naming their type and size, for providers that
    /// cannot take them.
    pub fn llm_text(&self) -> Cow<'_, str> {
        match self {
            Self::Text { text } | Self::Silent { text } => Cow::Borrowed(text),
            Self::Dual { for_llm, .. } => Cow::Borrowed(for_llm),
            Self::Blocks { blocks } => blocks_text(blocks),
            Self::Offloaded(o) => Cow::Owned(o.reference_text()),
        }
    }

    /// What a user interface displays; `None` for silent output.
    pub fn user_text(&self) -> Option<Cow<'_, str>> {
        match self {
            Self::Text { text } => Some(Cow::Borrowed(text)),
            Self::Silent { .. } => None,
            Self::Dual { for_user, .. } => Some(Cow::Borrowed(for_user)),
            Self::Blocks { blocks } => Some(blocks_text(blocks)),
            Self::Offloaded(o) => o.for_user.as_deref().map(Cow::Borrowed),
        }
    }

    /// Total payload size in bytes (text and media), for logs and metrics.
    pub fn size_bytes(&self) -> usize {
        match self {
            Self::Text { text } | Self::Silent { text } => text.len(),
            Self::Dual { for_llm, for_user } => for_llm.len() + for_user.len(),
            Self::Blocks { blocks } => blocks
                .iter()
                .map(|b| match b {
                    ContentBlock::Text { text } => text.len(),
                    ContentBlock::Image { data, .. } | ContentBlock::Media { data, .. } => {
                        data.len()
                    }
                })
                .sum(),
            Self::Offloaded(o) => o.preview.len(),
        }
    }
}

fn blocks_text(blocks: &[ContentBlock]) -> Cow<'_, str> {
    if let [ContentBlock::Text { text }] = blocks {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match block {
            ContentBlock::Text { text } => out.push_str(text),
            ContentBlock::Image { mime_type, data } => {
                let _ = write!(out, "[image: {mime_type}, {} bytes]", data.len());
            }
            ContentBlock::Media { mime_type, data } => {
                let _ = write!(out, "[media: {mime_type}, {} bytes]", data.len());
            }
        }
    }
    Cow::Owned(out)
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
            ContentBlock::Text {
                text: "screenshot:".into(),
            },
            ContentBlock::Image {
                mime_type: "image/png".into(),
                data: vec![0x89, b'P', b'N', b'G'],
            },
        ]);
        assert_eq!(out.llm_text(), "screenshot:\n[image: image/png, 4 bytes]");
        assert_eq!(out.size_bytes(), "screenshot:".len() + 4);
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["blocks"][1]["data"], "iVBORw==");
        let back: ToolOutput = serde_json::from_value(json).unwrap();
        assert_eq!(back, out);
    }
}
