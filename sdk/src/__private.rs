//! Glue used by the exporting macros; not part of the public API.

use crate::bindings::types;
use crate::output::{ContentBlock, Output};
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
        match o {
            Output::Text(t) => Self::Text(t),
            Output::Silent(t) => Self::Silent(t),
            Output::Dual { for_llm, for_user } => {
                Self::Dual(types::DualOutput { for_llm, for_user })
            }
            Output::Blocks(blocks) => Self::Blocks(blocks.into_iter().map(Into::into).collect()),
        }
    }
}

impl From<types::ToolOutput> for Output {
    fn from(o: types::ToolOutput) -> Self {
        match o {
            types::ToolOutput::Text(t) => Self::Text(t),
            types::ToolOutput::Silent(t) => Self::Silent(t),
            types::ToolOutput::Dual(d) => Self::Dual {
                for_llm: d.for_llm,
                for_user: d.for_user,
            },
            types::ToolOutput::Blocks(blocks) => {
                Self::Blocks(blocks.into_iter().map(Into::into).collect())
            }
        }
    }
}

impl From<ContentBlock> for types::ContentBlock {
    fn from(b: ContentBlock) -> Self {
        match b {
            ContentBlock::Text(t) => Self::Text(t),
            ContentBlock::Image { mime_type, data } => {
                Self::Image(types::Media { mime_type, data })
            }
            ContentBlock::Media { mime_type, data } => {
                Self::Media(types::Media { mime_type, data })
            }
        }
    }
}

impl From<types::ContentBlock> for ContentBlock {
    fn from(b: types::ContentBlock) -> Self {
        match b {
            types::ContentBlock::Text(t) => Self::Text(t),
            types::ContentBlock::Image(m) => Self::Image {
                mime_type: m.mime_type,
                data: m.data,
            },
            types::ContentBlock::Media(m) => Self::Media {
                mime_type: m.mime_type,
                data: m.data,
            },
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
