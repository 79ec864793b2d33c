//! What a tool returns.

/// A tool's result; mirrors the host's typed output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Plain text, for the model and the user alike.
    Text(String),
    /// Compact text for the model, richer text for the user.
    Dual {
        /// What goes into the model's context.
        for_llm: String,
        /// What a user interface displays.
        for_user: String,
    },
    /// Text the model sees and a user interface does not display.
    Silent(String),
    /// Multimodal content.
    Blocks(Vec<ContentBlock>),
}

/// One piece of multimodal content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentBlock {
    /// Text.
    Text(String),
    /// An image with its `image/*` MIME type.
    Image {
        /// The MIME type, such as `image/png`.
        mime_type: String,
        /// The encoded image.
        data: Vec<u8>,
    },
    /// Other media with its MIME type.
    Media {
        /// The MIME type.
        mime_type: String,
        /// The encoded bytes.
        data: Vec<u8>,
    },
}

impl Output {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// Compact text for the model, richer text for the user.
    pub fn dual(for_llm: impl Into<String>, for_user: impl Into<String>) -> Self {
        Self::Dual {
            for_llm: for_llm.into(),
            for_user: for_user.into(),
        }
    }

    /// Text the model sees and a user interface does not display.
    pub fn silent(text: impl Into<String>) -> Self {
        Self::Silent(text.into())
    }
}

impl From<String> for Output {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for Output {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}
