//! Bindings of `toolhost:plugin@0.2.0` (`wit/0.2/plugin.wit`), kept so that
//! components built for it load unchanged, and the conversions between its
//! types and the 0.3 ones.
//!
//! 0.3 added one thing, a tool's hints; every other type is the same shape
//! in both versions. The conversions of those shapes are written once, in
//! [`same_shape!`], and expanded twice: 0.2 to 0.3 for what a guest hands
//! over ([`up`]), 0.3 to 0.2 for what the host hands in ([`down`]).

wasmtime::component::bindgen!({
    path: "../../wit/0.2",
    world: "toolhost:plugin/extension-plugin@0.2.0",
    exports: { default: async },
    imports: { default: trappable },
});

use self::toolhost::plugin::types as old;
use super::v03::toolhost::plugin::types as new;

/// A 0.2 descriptor as a 0.3 one: no hints.
pub(crate) fn upgrade_descriptor(d: old::ToolDescriptor) -> new::ToolDescriptor {
    new::ToolDescriptor {
        name: d.name,
        description: d.description,
        parameters_schema: d.parameters_schema,
        concurrency_safe: d.concurrency_safe,
        idempotent: d.idempotent,
        output_schema: d.output_schema,
        hints: super::NO_HINTS,
    }
}

/// The conversions between types of the same shape in `from` and `to`
/// (module aliases in scope where it expands): a field-by-field move.
macro_rules! same_shape {
    () => {
        pub(crate) fn output(o: from::ToolOutput) -> to::ToolOutput {
            match o {
                from::ToolOutput::Text(t) => to::ToolOutput::Text(t),
                from::ToolOutput::Silent(t) => to::ToolOutput::Silent(t),
                from::ToolOutput::Dual(d) => to::ToolOutput::Dual(to::DualOutput {
                    for_llm: d.for_llm,
                    for_user: d.for_user,
                }),
                from::ToolOutput::Blocks(bs) => {
                    to::ToolOutput::Blocks(bs.into_iter().map(block).collect())
                }
                from::ToolOutput::Structured(s) => {
                    to::ToolOutput::Structured(to::StructuredOutput {
                        json: s.json,
                        blocks: s.blocks.into_iter().map(block).collect(),
                    })
                }
            }
        }

        fn media(m: from::Media) -> to::Media {
            to::Media {
                mime_type: m.mime_type,
                data: m.data,
            }
        }

        fn block(b: from::ContentBlock) -> to::ContentBlock {
            let content = match b.content {
                from::Content::Text(t) => to::Content::Text(t),
                from::Content::Image(m) => to::Content::Image(media(m)),
                from::Content::Media(m) => to::Content::Media(media(m)),
                from::Content::ResourceLink(l) => to::Content::ResourceLink(to::ResourceLink {
                    uri: l.uri,
                    name: l.name,
                    title: l.title,
                    description: l.description,
                    mime_type: l.mime_type,
                    size: l.size,
                }),
                from::Content::Embedded(r) => to::Content::Embedded(to::EmbeddedResource {
                    uri: r.uri,
                    mime_type: r.mime_type,
                    contents: match r.contents {
                        from::ResourceContents::Text(t) => to::ResourceContents::Text(t),
                        from::ResourceContents::Blob(b) => to::ResourceContents::Blob(b),
                    },
                }),
            };
            to::ContentBlock {
                content,
                annotations: b.annotations.map(|a| to::Annotations {
                    audience: a
                        .audience
                        .into_iter()
                        .map(|who| match who {
                            from::Audience::User => to::Audience::User,
                            from::Audience::Assistant => to::Audience::Assistant,
                        })
                        .collect(),
                    priority: a.priority,
                    last_modified: a.last_modified,
                }),
            }
        }

        pub(crate) fn error(e: from::ToolError) -> to::ToolError {
            match e {
                from::ToolError::InvalidArguments(a) => {
                    to::ToolError::InvalidArguments(to::InvalidArguments {
                        path: a.path,
                        message: a.message,
                    })
                }
                from::ToolError::Failed(f) => to::ToolError::Failed(to::Failure {
                    message: f.message,
                    retryable: f.retryable,
                }),
                from::ToolError::UnknownTool(name) => to::ToolError::UnknownTool(name),
            }
        }

        pub(crate) fn call_info(i: &from::CallInfo) -> to::CallInfo {
            to::CallInfo {
                call_id: i.call_id.clone(),
                attempt: i.attempt,
                deadline_ms: i.deadline_ms,
            }
        }

        pub(crate) fn hook_call(c: &from::HookCall) -> to::HookCall {
            to::HookCall {
                tool: c.tool.clone(),
                arguments: c.arguments.clone(),
                call_id: c.call_id.clone(),
            }
        }

        pub(crate) fn outcome(o: from::CallOutcome) -> to::CallOutcome {
            match o {
                from::CallOutcome::Ok(out) => to::CallOutcome::Ok(output(out)),
                from::CallOutcome::Err(e) => to::CallOutcome::Err(e),
            }
        }

        pub(crate) fn before(d: from::BeforeDecision) -> to::BeforeDecision {
            match d {
                from::BeforeDecision::Allow => to::BeforeDecision::Allow,
                from::BeforeDecision::Reject(r) => to::BeforeDecision::Reject(r),
                from::BeforeDecision::Rewrite(a) => to::BeforeDecision::Rewrite(a),
                from::BeforeDecision::Ask(r) => to::BeforeDecision::Ask(r),
            }
        }

        pub(crate) fn after(d: from::AfterDecision) -> to::AfterDecision {
            match d {
                from::AfterDecision::Keep => to::AfterDecision::Keep,
                from::AfterDecision::Replace(o) => to::AfterDecision::Replace(outcome(o)),
            }
        }
    };
}

/// From a 0.2 guest to the host's 0.3 types.
pub(crate) mod up {
    #![allow(
        dead_code,
        reason = "the host builds call info and hook calls in 0.3 only"
    )]
    use super::new as to;
    use super::old as from;
    same_shape!();
}

/// From the host's 0.3 types to a 0.2 guest.
pub(crate) mod down {
    #![allow(dead_code, reason = "a guest's outputs and errors only go up")]
    use super::new as from;
    use super::old as to;
    same_shape!();
}
