//! Bindings of `toolhost:plugin@0.1.0` (`wit/0.1/plugin.wit`), kept so that
//! components built for it load unchanged, and the upgrade of what such a
//! guest hands over into the 0.3 types.

use toolhost_core::error::ToolError;
use toolhost_core::output::{ContentBlock, ToolOutput};

use super::v03::toolhost::plugin::types as new;

wasmtime::component::bindgen!({
    path: "../../wit/0.1",
    world: "toolhost:plugin/extension-plugin@0.1.0",
    exports: { default: async },
    imports: { default: trappable },
});

use self::toolhost::plugin::types;

/// A 0.1 descriptor as a 0.3 one: no output schema, no hints.
pub(crate) fn upgrade_descriptor(d: types::ToolDescriptor) -> new::ToolDescriptor {
    new::ToolDescriptor {
        name: d.name,
        description: d.description,
        parameters_schema: d.parameters_schema,
        concurrency_safe: d.concurrency_safe,
        idempotent: d.idempotent,
        output_schema: None,
        hints: super::NO_HINTS,
    }
}

fn upgrade_media(m: types::Media) -> new::Media {
    new::Media {
        mime_type: m.mime_type,
        data: m.data,
    }
}

fn upgrade_block(b: types::ContentBlock) -> new::ContentBlock {
    new::ContentBlock {
        content: match b {
            types::ContentBlock::Text(t) => new::Content::Text(t),
            types::ContentBlock::Image(m) => new::Content::Image(upgrade_media(m)),
            types::ContentBlock::Media(m) => new::Content::Media(upgrade_media(m)),
        },
        annotations: None,
    }
}

/// A 0.1 output as a 0.3 one.
pub(crate) fn upgrade_output(out: types::ToolOutput) -> new::ToolOutput {
    match out {
        types::ToolOutput::Text(t) => new::ToolOutput::Text(t),
        types::ToolOutput::Silent(t) => new::ToolOutput::Silent(t),
        types::ToolOutput::Dual(d) => new::ToolOutput::Dual(new::DualOutput {
            for_llm: d.for_llm,
            for_user: d.for_user,
        }),
        types::ToolOutput::Blocks(bs) => {
            new::ToolOutput::Blocks(bs.into_iter().map(upgrade_block).collect())
        }
    }
}

/// A 0.1 tool error as a 0.3 one.
pub(crate) fn upgrade_error(e: types::ToolError) -> new::ToolError {
    match e {
        types::ToolError::InvalidArguments(a) => {
            new::ToolError::InvalidArguments(new::InvalidArguments {
                path: a.path,
                message: a.message,
            })
        }
        types::ToolError::Failed(f) => new::ToolError::Failed(new::Failure {
            message: f.message,
            retryable: f.retryable,
        }),
        types::ToolError::UnknownTool(name) => new::ToolError::UnknownTool(name),
    }
}

/// A 0.1 call's info, from the 0.3 one the host builds.
pub(crate) fn call_info(info: &new::CallInfo) -> types::CallInfo {
    types::CallInfo {
        call_id: info.call_id.clone(),
        attempt: info.attempt,
        deadline_ms: info.deadline_ms,
    }
}

/// A 0.1 hook call, from the 0.3 one the host builds.
pub(crate) fn hook_call(call: &new::HookCall) -> types::HookCall {
    types::HookCall {
        tool: call.tool.clone(),
        arguments: call.arguments.clone(),
        call_id: call.call_id.clone(),
    }
}

/// A block as version 0.1 of the interface has it: text, images and media
/// whole, resources as a line of text naming them (annotations have no
/// place there).
fn block_to_guest(b: &ContentBlock) -> types::ContentBlock {
    match b {
        ContentBlock::Text { text, .. } => types::ContentBlock::Text(text.clone()),
        ContentBlock::Image {
            mime_type, data, ..
        } => types::ContentBlock::Image(types::Media {
            mime_type: mime_type.clone(),
            data: data.clone(),
        }),
        ContentBlock::Media {
            mime_type, data, ..
        } => types::ContentBlock::Media(types::Media {
            mime_type: mime_type.clone(),
            data: data.clone(),
        }),
        other => {
            let mut text = String::new();
            other.describe(&mut text);
            types::ContentBlock::Text(text)
        }
    }
}

/// Converts a call's outcome for a 0.1 extension's after hook. Media travel
/// whole; an offloaded output travels as its reference text, structured
/// output as its blocks (or its JSON text when it has none).
pub(crate) fn outcome_to_guest(outcome: &Result<ToolOutput, ToolError>) -> types::CallOutcome {
    match outcome {
        Err(e) => types::CallOutcome::Err(e.to_string()),
        Ok(out) => types::CallOutcome::Ok(match out {
            ToolOutput::Text { text } => types::ToolOutput::Text(text.clone()),
            ToolOutput::Silent { text } => types::ToolOutput::Silent(text.clone()),
            ToolOutput::Dual { for_llm, for_user } => types::ToolOutput::Dual(types::DualOutput {
                for_llm: for_llm.clone(),
                for_user: for_user.clone(),
            }),
            ToolOutput::Structured { structured, blocks } if blocks.is_empty() => {
                types::ToolOutput::Text(structured.to_string())
            }
            ToolOutput::Blocks { blocks } | ToolOutput::Structured { blocks, .. } => {
                types::ToolOutput::Blocks(blocks.iter().map(block_to_guest).collect())
            }
            ToolOutput::Offloaded(o) => types::ToolOutput::Text(o.reference_text()),
        }),
    }
}
