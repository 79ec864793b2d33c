//! An extension built for `toolhost:plugin@0.1.0` (the frozen
//! `wit/0.1/plugin.wit`), without the SDK, which targets 0.2: the host must
//! keep loading it unchanged beside 0.2 plugins. It offers one tool, vetoes
//! calls whose arguments hold `LEGACY-NO`, and logs every outcome.

wit_bindgen::generate!({
    path: "../../../wit/0.1",
    world: "toolhost:plugin/extension-plugin@0.1.0",
});

use exports::toolhost::plugin::{extension, tool};
use toolhost::plugin::host;
use toolhost::plugin::types::{
    CallInfo, CallOutcome, HookCall, ToolDescriptor, ToolError, ToolOutput,
};

struct Legacy;

impl tool::Guest for Legacy {
    fn list_tools() -> Vec<ToolDescriptor> {
        vec![ToolDescriptor {
            name: "legacy_echo".into(),
            description: "Echoes its arguments (a 0.1 plugin)".into(),
            parameters_schema: r#"{"type":"object"}"#.into(),
            concurrency_safe: Some(true),
            idempotent: true,
        }]
    }

    fn call_tool(
        name: String,
        arguments: String,
        _info: CallInfo,
    ) -> Result<ToolOutput, ToolError> {
        match name.as_str() {
            "legacy_echo" => Ok(ToolOutput::Text(format!("legacy: {arguments}"))),
            _ => Err(ToolError::UnknownTool(name)),
        }
    }
}

impl extension::Guest for Legacy {
    fn system_prompt() -> Option<String> {
        Some("A 0.1 extension is here.".into())
    }

    fn before_call(call: HookCall) -> Result<(), String> {
        if call.arguments.contains("LEGACY-NO") {
            Err("the 0.1 extension says no".into())
        } else {
            Ok(())
        }
    }

    fn after_call(call: HookCall, outcome: CallOutcome) {
        let result = match outcome {
            CallOutcome::Ok(_) => "ok",
            CallOutcome::Err(_) => "error",
        };
        host::log(
            host::LogLevel::Info,
            "legacy saw a call",
            &[("tool".into(), call.tool), ("result".into(), result.into())],
        );
    }
}

export!(Legacy);
