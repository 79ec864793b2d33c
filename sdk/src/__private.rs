//! Glue used by the exporting macros; not part of the public API.

use crate::bindings::types;
use crate::output::{
    Annotations, Audience, ContentBlock, EmbeddedResource, Output, ResourceContents, ResourceLink,
};
use crate::tools::{CallInfo, ToolError, Tools};

/// Registration function of an extension without tools.
pub fn no_tools(_: &mut Tools) {}

/// Implements `list-tools`.
pub fn list_tools(register: fn(&mut Tools)) -> Vec<types::ToolDescriptor> {
    let mut tools = Tools::new();
    register(&mut tools);
    tools
        .entries
        .iter()
        .map(|e| types::ToolDescriptor {
            name: e.name.clone(),
            description: e.description.clone(),
            parameters_schema: (e.schema)().to_string(),
            concurrency_safe: e.concurrency_safe,
            idempotent: e.idempotent,
            output_schema: e.output_schema.map(|schema| schema().to_string()),
            hints: types::ToolHints {
                read_only: e.read_only,
                destructive: e.destructive,
                open_world: e.open_world,
            },
        })
        .collect()
}

/// Implements `call-tool`.
pub fn call_tool(
    register: fn(&mut Tools),
    name: &str,
    arguments: &str,
    info: types::CallInfo,
) -> Result<types::ToolOutput, types::ToolError> {
    let mut tools = Tools::new();
    register(&mut tools);
    let info = CallInfo {
        call_id: info.call_id,
        attempt: info.attempt,
        deadline_ms: info.deadline_ms,
    };
    match tools.call(name, arguments, &info) {
        None => Err(types::ToolError::UnknownTool(name.to_owned())),
        Some(Ok(out)) => Ok(out.into()),
        Some(Err(e)) => Err(e.into()),
    }
}

impl From<Output> for types::ToolOutput {
    fn from(o: Output) -> Self {
        let blocks = |bs: Vec<ContentBlock>| bs.into_iter().map(Into::into).collect();
        match o {
            Output::Text(t) => Self::Text(t),
            Output::Silent(t) => Self::Silent(t),
            Output::Dual { for_llm, for_user } => {
                Self::Dual(types::DualOutput { for_llm, for_user })
            }
            Output::Blocks(bs) => Self::Blocks(blocks(bs)),
            Output::Structured { value, blocks: bs } => Self::Structured(types::StructuredOutput {
                json: value.to_string(),
                blocks: blocks(bs),
            }),
        }
    }
}

impl From<types::ToolOutput> for Output {
    fn from(o: types::ToolOutput) -> Self {
        let blocks = |bs: Vec<types::ContentBlock>| bs.into_iter().map(Into::into).collect();
        match o {
            types::ToolOutput::Text(t) => Self::Text(t),
            types::ToolOutput::Silent(t) => Self::Silent(t),
            types::ToolOutput::Dual(d) => Self::Dual {
                for_llm: d.for_llm,
                for_user: d.for_user,
            },
            types::ToolOutput::Blocks(bs) => Self::Blocks(blocks(bs)),
            types::ToolOutput::Structured(s) => Self::Structured {
                // The host sends JSON it produced itself.
                value: serde_json::from_str(&s.json).unwrap_or_default(),
                blocks: blocks(s.blocks),
            },
        }
    }
}

impl From<ContentBlock> for types::ContentBlock {
    fn from(b: ContentBlock) -> Self {
        let (content, annotations) = match b {
            ContentBlock::Annotated { block, annotations } => {
                let inner: types::ContentBlock = (*block).into();
                return Self {
                    content: inner.content,
                    annotations: Some(annotations.into()),
                };
            }
            ContentBlock::Text(t) => (types::Content::Text(t), None),
            ContentBlock::Image { mime_type, data } => (
                types::Content::Image(types::Media { mime_type, data }),
                None,
            ),
            ContentBlock::Media { mime_type, data } => (
                types::Content::Media(types::Media { mime_type, data }),
                None,
            ),
            ContentBlock::ResourceLink(l) => (
                types::Content::ResourceLink(types::ResourceLink {
                    uri: l.uri,
                    name: l.name,
                    title: l.title,
                    description: l.description,
                    mime_type: l.mime_type,
                    size: l.size,
                }),
                None,
            ),
            ContentBlock::Resource(r) => (
                types::Content::Embedded(types::EmbeddedResource {
                    uri: r.uri,
                    mime_type: r.mime_type,
                    contents: match r.contents {
                        ResourceContents::Text(t) => types::ResourceContents::Text(t),
                        ResourceContents::Blob(b) => types::ResourceContents::Blob(b),
                    },
                }),
                None,
            ),
        };
        Self {
            content,
            annotations,
        }
    }
}

impl From<types::ContentBlock> for ContentBlock {
    fn from(b: types::ContentBlock) -> Self {
        let block = match b.content {
            types::Content::Text(t) => Self::Text(t),
            types::Content::Image(m) => Self::Image {
                mime_type: m.mime_type,
                data: m.data,
            },
            types::Content::Media(m) => Self::Media {
                mime_type: m.mime_type,
                data: m.data,
            },
            types::Content::ResourceLink(l) => Self::ResourceLink(ResourceLink {
                uri: l.uri,
                name: l.name,
                title: l.title,
                description: l.description,
                mime_type: l.mime_type,
                size: l.size,
            }),
            types::Content::Embedded(r) => Self::Resource(EmbeddedResource {
                uri: r.uri,
                mime_type: r.mime_type,
                contents: match r.contents {
                    types::ResourceContents::Text(t) => ResourceContents::Text(t),
                    types::ResourceContents::Blob(b) => ResourceContents::Blob(b),
                },
            }),
        };
        match b.annotations {
            Some(a) => block.with_annotations(a.into()),
            None => block,
        }
    }
}

impl From<Annotations> for types::Annotations {
    fn from(a: Annotations) -> Self {
        Self {
            audience: a
                .audience
                .into_iter()
                .map(|who| match who {
                    Audience::User => types::Audience::User,
                    Audience::Assistant => types::Audience::Assistant,
                })
                .collect(),
            priority: a.priority,
            last_modified: a.last_modified,
        }
    }
}

impl From<types::Annotations> for Annotations {
    fn from(a: types::Annotations) -> Self {
        Self {
            audience: a
                .audience
                .into_iter()
                .map(|who| match who {
                    types::Audience::User => Audience::User,
                    types::Audience::Assistant => Audience::Assistant,
                })
                .collect(),
            priority: a.priority,
            last_modified: a.last_modified,
        }
    }
}

impl From<ToolError> for types::ToolError {
    fn from(e: ToolError) -> Self {
        match e {
            ToolError::InvalidArguments { path, message } => {
                Self::InvalidArguments(types::InvalidArguments { path, message })
            }
            ToolError::Failed { message, retryable } => {
                Self::Failed(types::Failure { message, retryable })
            }
        }
    }
}
