//! An extension built for `toolhost:plugin@0.2.0` (the frozen
//! `wit/0.2/plugin.wit`), without the SDK, which targets 0.3: the host must
//! keep loading it unchanged beside 0.3 and 0.1 plugins, with everything
//! 0.2 offers going through the upgrade to 0.3 and back.
//!
//! Its tool `v02_rich` returns an annotated block and a resource link and
//! reports progress; `v02_sum` returns structured output under an output
//! schema. Its before hook rewrites arguments holding `V02-MASK` to
//! `{"text": "###"}` and asks a person about arguments holding `V02-ASK`;
//! its after hook replaces `V02-HIDDEN` in a text result with `[v02]`.

wit_bindgen::generate!({
    path: "../../../wit/0.2",
    world: "toolhost:plugin/extension-plugin@0.2.0",
});

use exports::toolhost::plugin::{extension, tool};
use toolhost::plugin::host;
use toolhost::plugin::types::{
    AfterDecision, Annotations, Audience, BeforeDecision, CallInfo, CallOutcome, Content,
    ContentBlock, HookCall, ResourceLink, StructuredOutput, ToolDescriptor, ToolError, ToolOutput,
};

struct Frozen;

impl tool::Guest for Frozen {
    fn list_tools() -> Vec<ToolDescriptor> {
        vec![
            ToolDescriptor {
                name: "v02_rich".into(),
                description: "Returns an annotated block and a link (a 0.2 plugin)".into(),
                parameters_schema: r#"{"type":"object"}"#.into(),
                concurrency_safe: Some(true),
                idempotent: true,
                output_schema: None,
            },
            ToolDescriptor {
                name: "v02_sum".into(),
                description: "Adds two numbers, as structured output (a 0.2 plugin)".into(),
                parameters_schema: r#"{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}"#.into(),
                concurrency_safe: Some(true),
                idempotent: true,
                output_schema: Some(
                    r#"{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}"#
                        .into(),
                ),
            },
        ]
    }

    fn call_tool(
        name: String,
        arguments: String,
        _info: CallInfo,
    ) -> Result<ToolOutput, ToolError> {
        match name.as_str() {
            "v02_rich" => {
                host::report_progress(1.0, Some(2.0), Some("half way"));
                Ok(ToolOutput::Blocks(vec![
                    ContentBlock {
                        content: Content::Text(format!("v02: {arguments}")),
                        annotations: Some(Annotations {
                            audience: vec![Audience::User],
                            priority: Some(0.5),
                            last_modified: None,
                        }),
                    },
                    ContentBlock {
                        content: Content::ResourceLink(ResourceLink {
                            uri: "file:///v02.txt".into(),
                            name: "v02.txt".into(),
                            title: None,
                            description: None,
                            mime_type: Some("text/plain".into()),
                            size: Some(3),
                        }),
                        annotations: None,
                    },
                ]))
            }
            "v02_sum" => {
                let number = |key: &str| {
                    arguments
                        .split(&format!("\"{key}\":"))
                        .nth(1)
                        .and_then(|rest| rest.split([',', '}']).next())
                        .and_then(|n| n.trim().parse::<f64>().ok())
                        .unwrap_or(0.0)
                };
                Ok(ToolOutput::Structured(StructuredOutput {
                    json: format!(r#"{{"sum":{}}}"#, number("a") + number("b")),
                    blocks: vec![],
                }))
            }
            _ => Err(ToolError::UnknownTool(name)),
        }
    }
}

impl extension::Guest for Frozen {
    fn system_prompt() -> Option<String> {
        Some("A 0.2 extension is here.".into())
    }

    fn before_call(call: HookCall) -> BeforeDecision {
        if call.arguments.contains("V02-ASK") {
            BeforeDecision::Ask("the 0.2 extension asks".into())
        } else if call.arguments.contains("V02-MASK") {
            BeforeDecision::Rewrite(r####"{"text":"###"}"####.into())
        } else {
            BeforeDecision::Allow
        }
    }

    fn after_call(_call: HookCall, outcome: CallOutcome) -> AfterDecision {
        match outcome {
            CallOutcome::Ok(ToolOutput::Text(t)) if t.contains("V02-HIDDEN") => {
                AfterDecision::Replace(CallOutcome::Ok(ToolOutput::Text(
                    t.replace("V02-HIDDEN", "[v02]"),
                )))
            }
            _ => AfterDecision::Keep,
        }
    }
}

export!(Frozen);
