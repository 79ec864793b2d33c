//! A tool whose parameters or output schema makes validation exponential
//! (rule C9): nested `$defs`, each an `allOf` of two `$ref`s to the next
//! level. Which schema and how deep is read from `/bomb/spec` in a granted
//! directory (`params 30`, `output 40`), so one plugin tries every depth.
//!
//! Or patterns that compile to megabytes: `regex 200`, one `\w{200}`
//! (11 MB compiled); `regexes 2000`, that many distinct `\w{N}` in one
//! schema; `spread 256`, that many tools each with three `\w{20}`, each
//! schema within its own bound and all of them together not.

use toolhost_sdk::bindings::tool_world::exports::toolhost::plugin::tool::Guest;
use toolhost_sdk::bindings::types::{CallInfo, ToolDescriptor, ToolError, ToolOutput};

use hostile_kit::{descriptor, object};

struct Plugin;

/// The doubling family: about 60 bytes a level.
fn bomb(depth: usize) -> String {
    let mut defs = Vec::new();
    for i in 0..depth {
        let next = format!("#/$defs/l{}", i + 1);
        defs.push(format!(
            r#""l{i}":{{"allOf":[{{"$ref":"{next}"}},{{"$ref":"{next}"}}]}}"#
        ));
    }
    defs.push(format!(r#""l{depth}":{{"type":"string"}}"#));
    format!(
        r##"{{"type":"object","$defs":{{{}}},"properties":{{"x":{{"$ref":"#/$defs/l0"}}}}}}"##,
        defs.join(",")
    )
}

/// An object schema whose properties each have one of `patterns`.
fn with_patterns(patterns: impl Iterator<Item = String>) -> String {
    let props: Vec<String> = patterns
        .enumerate()
        .map(|(i, p)| format!(r#""p{i}":{{"type":"string","pattern":"{p}"}}"#))
        .collect();
    format!(
        r#"{{"type":"object","properties":{{{}}}}}"#,
        props.join(",")
    )
}

impl Guest for Plugin {
    fn list_tools() -> Vec<ToolDescriptor> {
        let spec = std::fs::read_to_string("/bomb/spec").unwrap_or_default();
        let (kind, depth) = spec.trim().split_once(' ').unwrap_or(("params", "30"));
        let depth = depth.parse().unwrap_or(30);
        let mut tool = descriptor("bomb", "validation that never ends".into(), object());
        match kind {
            "regex" => {
                tool.parameters_schema =
                    with_patterns(std::iter::once(format!("\\\\w{{{depth}}}")));
            }
            "regexes" => {
                tool.parameters_schema =
                    with_patterns((0..depth).map(|i| format!("\\\\w{{{}}}", 10 + i)));
            }
            "spread" => {
                return (0..depth)
                    .map(|i| {
                        let mut t = descriptor(&format!("bomb{i}"), "patterns".into(), object());
                        t.parameters_schema =
                            with_patterns((0..3).map(|k| format!("\\\\w{{{}}}x{i}", 15 + k)));
                        t
                    })
                    .collect();
            }
            "output" => tool.output_schema = Some(bomb(depth)),
            _ => tool.parameters_schema = bomb(depth),
        }
        vec![tool]
    }

    fn call_tool(
        _name: String,
        _arguments: String,
        _info: CallInfo,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Text("ok".into()))
    }
}

toolhost_sdk::bindings::tool_world::__export_tool_plugin!(Plugin with_types_in toolhost_sdk::bindings::tool_world);
