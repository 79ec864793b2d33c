//! A 0.2 extension whose every decision is driven by the call, for the
//! tests of rules P7 and P8, including the hostile ones: each key of the
//! arguments below makes its before hook decide one way; each marker in the
//! result makes its after hook replace it.
//!
//! Before: `mask` → rewrite that value to `***`; `ask` → ask a person;
//! `not_json` → rewrite into text that is not JSON; `array` → rewrite into
//! a JSON array; `huge` → rewrite into 8 MiB of arguments; `add_key` → add
//! a key the tool's schema may forbid; `long_reason` → ask with a 1 MiB
//! reason. After: `SECRET` in a text result → replaced with `[redacted]`;
//! an error holding `explain` → a text for the model; `BOMB` → a result of
//! 100 000 blocks; `FAIL` → an error of its own.
//!
//! Its tools use what 0.2 added: `count_up` reports progress, `sum` returns
//! structured output under an output schema, `rich` returns every kind of
//! block with annotations.

use toolhost_sdk::prelude::*;
use toolhost_sdk::serde_json::{Value, json};
use toolhost_sdk::{Annotations, Audience, EmbeddedResource, ResourceContents, ResourceLink};

struct Decider;

#[derive(Deserialize, JsonSchema)]
struct CountUp {
    /// How many reports to send.
    n: u32,
    /// Send a report whose numbers are not finite first.
    #[serde(default)]
    nan: bool,
}

fn count_up(args: CountUp, _: &CallInfo) -> Result<Output, ToolError> {
    if args.nan {
        toolhost_sdk::progress::report(f64::NAN, None, Some("not a number"));
    }
    for i in 1..=args.n {
        toolhost_sdk::progress::report(f64::from(i), Some(f64::from(args.n)), Some("counting"));
    }
    Ok(Output::text(format!("counted to {}", args.n)))
}

#[derive(Deserialize, JsonSchema)]
struct SumArgs {
    numbers: Vec<f64>,
    /// Return a value that breaks the output schema.
    #[serde(default)]
    wrong: bool,
}

/// The structured result of `sum`.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// The total.
    sum: f64,
    /// How many numbers.
    count: usize,
}

fn sum(args: SumArgs, _: &CallInfo) -> Result<Output, ToolError> {
    if args.wrong {
        return Output::structured(&json!({"total": "many"}));
    }
    Output::structured(&Sum {
        sum: args.numbers.iter().sum(),
        count: args.numbers.len(),
    })
}

#[derive(Deserialize, JsonSchema)]
struct RichArgs {
    /// The priority of the first block.
    priority: f64,
}

fn rich(args: RichArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::Blocks(vec![
        ContentBlock::text("for the person").with_annotations(Annotations {
            audience: vec![Audience::User],
            priority: Some(args.priority),
            last_modified: Some("2026-01-02T03:04:05Z".into()),
        }),
        ContentBlock::ResourceLink(ResourceLink {
            uri: "file:///notes/a.md".into(),
            name: "a.md".into(),
            mime_type: Some("text/markdown".into()),
            size: Some(12),
            ..ResourceLink::default()
        }),
        ContentBlock::Resource(EmbeddedResource {
            uri: "file:///notes/b.txt".into(),
            mime_type: Some("text/plain".into()),
            contents: ResourceContents::Text("bee".into()),
        })
        .for_assistant(),
        ContentBlock::Resource(EmbeddedResource {
            uri: "file:///notes/c.bin".into(),
            mime_type: None,
            contents: ResourceContents::Blob(vec![0, 1, 2]),
        }),
    ]))
}

fn register(tools: &mut Tools) {
    tools.add("count_up", "Reports progress n times", count_up);
    tools
        .add("sum", "Sums numbers, as structured output", sum)
        .output_schema::<Sum>();
    tools.add("rich", "Returns every kind of block", rich);
}

impl Extension for Decider {
    fn decide_before(call: &HookCall) -> Decision {
        let mut args = call.arguments_json();
        let Some(map) = args.as_object_mut() else {
            return Decision::Allow;
        };
        if map.contains_key("mask") {
            map.insert("mask".into(), json!("***"));
            return Decision::rewrite(&args);
        }
        if map.contains_key("ask") {
            return Decision::Ask(format!("{} wants approval", call.tool));
        }
        if map.contains_key("not_json") {
            return Decision::Rewrite("this is not JSON".into());
        }
        if map.contains_key("array") {
            return Decision::Rewrite("[1, 2, 3]".into());
        }
        if map.contains_key("huge") {
            return Decision::rewrite(&json!({ "huge": "x".repeat(8 << 20) }));
        }
        if map.contains_key("add_key") {
            map.insert("added".into(), Value::Bool(true));
            return Decision::rewrite(&args);
        }
        if map.contains_key("long_reason") {
            return Decision::Ask("r".repeat(1 << 20));
        }
        Decision::Allow
    }

    fn decide_after(_call: &HookCall, outcome: &CallOutcome) -> AfterDecision {
        match outcome {
            CallOutcome::Ok(Output::Text(t)) if t.contains("SECRET") => AfterDecision::Replace(
                CallOutcome::Ok(Output::Text(t.replace("SECRET", "[redacted]"))),
            ),
            CallOutcome::Ok(Output::Text(t)) if t.contains("BOMB") => {
                AfterDecision::Replace(CallOutcome::Ok(Output::Blocks(
                    (0..100_000).map(|_| ContentBlock::text("")).collect(),
                )))
            }
            CallOutcome::Ok(Output::Text(t)) if t.contains("FAIL") => {
                AfterDecision::Replace(CallOutcome::Err("the decider failed it".into()))
            }
            CallOutcome::Err(e) if e.contains("explain") => {
                AfterDecision::Replace(CallOutcome::Ok(Output::text(format!(
                    "The call failed ({e}); try another way."
                ))))
            }
            _ => AfterDecision::Keep,
        }
    }
}

toolhost_sdk::extension!(Decider, tools = register);
