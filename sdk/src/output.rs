//! What a tool returns.

/// A tool's result; mirrors the host's typed output.
#[derive(Debug, Clone, PartialEq)]
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
    /// A JSON value that matches the tool's output schema (declare it with
    /// [`ToolBuilder::output_schema`](crate::ToolBuilder::output_schema)),
    /// and blocks for clients that read only content. With no blocks, the
    /// host shows the value's JSON text.
    Structured {
        /// The value.
        value: serde_json::Value,
        /// Blocks beside it.
        blocks: Vec<ContentBlock>,
    },
}

/// One piece of multimodal content.
#[derive(Debug, Clone, PartialEq)]
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
    /// A link to a resource the client may fetch.
    ResourceLink(ResourceLink),
    /// A resource carried whole.
    Resource(EmbeddedResource),
    /// A block with hints about it (made by
    /// [`with_annotations`](Self::with_annotations)).
    Annotated {
        /// The block.
        block: Box<ContentBlock>,
        /// The hints.
        annotations: Annotations,
    },
}

/// A reference to a resource the client may fetch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceLink {
    /// Its URI.
    pub uri: String,
    /// A short name.
    pub name: String,
    /// A human title.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its MIME type.
    pub mime_type: Option<String>,
    /// Its size in bytes.
    pub size: Option<u64>,
}

/// A resource carried whole in the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedResource {
    /// Its URI.
    pub uri: String,
    /// Its MIME type.
    pub mime_type: Option<String>,
    /// Its contents.
    pub contents: ResourceContents,
}

/// The contents of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// Who a block is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The person using the host.
    User,
    /// The model.
    Assistant,
}

/// Hints about a block. The host keeps them and passes them on to MCP
/// clients; it never drops a block because of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Annotations {
    /// Who the block is for; empty: everyone.
    pub audience: Vec<Audience>,
    /// How important it is, from 0 to 1; the host refuses other values.
    pub priority: Option<f64>,
    /// When it last changed, as ISO 8601 text.
    pub last_modified: Option<String>,
}

impl ContentBlock {
    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// The same block with `annotations` (replacing any it had).
    pub fn with_annotations(self, annotations: Annotations) -> Self {
        let block = match self {
            Self::Annotated { block, .. } => block,
            other => Box::new(other),
        };
        Self::Annotated { block, annotations }
    }

    /// The same block, meant for the person only.
    pub fn for_user(self) -> Self {
        self.with_annotations(Annotations {
            audience: vec![Audience::User],
            ..Annotations::default()
        })
    }

    /// The same block, meant for the model only.
    pub fn for_assistant(self) -> Self {
        self.with_annotations(Annotations {
            audience: vec![Audience::Assistant],
            ..Annotations::default()
        })
    }
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

    /// Structured output from any serializable value, with no blocks (the
    /// host shows its JSON text). A value that does not serialize (a map
    /// with non-string keys) is a failure of the tool.
    pub fn structured(value: &impl serde::Serialize) -> Result<Self, crate::ToolError> {
        let value = serde_json::to_value(value)
            .map_err(|e| crate::ToolError::failed(format!("the result does not serialize: {e}")))?;
        Ok(Self::Structured {
            value,
            blocks: Vec::new(),
        })
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
