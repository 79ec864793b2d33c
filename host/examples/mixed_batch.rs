//! Sends one model turn's worth of native tool calls through the pipeline in
//! mixed mode, and prints what the hooks saw and what each call returned.
//!
//! Run with `make run` or `cargo run --release -p toolhost --example mixed_batch`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use toolhost::middleware::{Logging, Retry, Timeout};
use toolhost::{
    BatchCall, BatchConfig, CallContext, ExecutionMode, FnAfterHook, FnBeforeHook, FnTool,
    HookScope, Rejection, ToolError, ToolHost, ToolOutput, ToolSpec,
};

#[tokio::main]
async fn main() {
    // The logging middleware's lines (sizes, never payloads) go to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .without_time()
        .init();
    let started = Instant::now();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = {
        let seen = seen.clone();
        move |line: String| {
            let ms = started.elapsed().as_millis();
            seen.lock().unwrap().push(format!("{ms:>5} ms  {line}"));
        }
    };

    let host = ToolHost::builder()
        .validate_arguments(true)
        .middleware(Logging)
        .middleware(Retry::new(3))
        .middleware(Timeout::new(Duration::from_millis(300)))
        .before_hook(HookScope::Global, {
            let log = log.clone();
            FnBeforeHook::new("policy", move |call| {
                log(format!("before  {} {}", call.call_id, call.tool()));
                if call.tool() == "append_note" && call.arguments.as_str().contains("rm -rf") {
                    return Err(Rejection::new("notes may not contain shell commands"));
                }
                Ok(())
            })
        })
        .after_hook(HookScope::Global, {
            let log = log.clone();
            FnAfterHook::new("audit", move |call, outcome| {
                let what = match outcome {
                    Ok(out) => format!("ok, {} bytes", out.size_bytes()),
                    Err(e) => format!("{}: {e}", e.kind().as_str()),
                };
                log(format!(
                    "after   {} {} -> {what}",
                    call.call_id,
                    call.tool()
                ));
            })
        })
        .build();

    let notes: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(vec!["buy milk".into()]));
    let text_arg = |prop: &str| {
        json!({
            "type": "object",
            "properties": {prop: {"type": "string", "minLength": 1}},
            "required": [prop],
            "additionalProperties": false
        })
    };

    let n = notes.clone();
    host.register_tool(FnTool::arc(
        ToolSpec::new(
            "search_notes",
            "Find notes containing a word",
            text_arg("word"),
        )
        .concurrency_safe(true)
        .idempotent(true),
        move |_ctx, args| {
            let n = n.clone();
            async move {
                let word = args.to_value()["word"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                tokio::time::sleep(Duration::from_millis(60)).await;
                let hits: Vec<String> = n
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|t| t.contains(&word))
                    .cloned()
                    .collect();
                Ok(ToolOutput::dual(
                    format!("{} match(es)", hits.len()),
                    hits.join("\n"),
                ))
            }
        },
    ))
    .unwrap();

    let n = notes.clone();
    host.register_tool(FnTool::arc(
        ToolSpec::new("append_note", "Append a note", text_arg("text")).concurrency_safe(false),
        move |_ctx, args| {
            let n = n.clone();
            async move {
                let text = args.to_value()["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                tokio::time::sleep(Duration::from_millis(40)).await;
                n.lock().unwrap().push(text);
                Ok(ToolOutput::silent("appended"))
            }
        },
    ))
    .unwrap();

    host.register_tool(FnTool::arc(
        ToolSpec::new(
            "slow_report",
            "A report that takes too long",
            json!({"type": "object"}),
        ),
        |_ctx, _args| async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok(ToolOutput::text("never"))
        },
    ))
    .unwrap();

    let calls = [
        ("search_notes", r#"{"word": "milk"}"#),
        ("search_notes", r#"{"word": "eggs"}"#),
        ("append_note", r#"{"text": "buy eggs"}"#),
        ("search_notes", r#"{"word": "eggs"}"#),
        ("search_notes", r#"{"word": 42}"#),
        ("append_note", r#"{"text": "rm -rf /"}"#),
        ("slow_report", "{}"),
        ("delete_everything", "{}"),
    ];
    println!(
        "toolhost: one batch of {} native calls, mixed mode, at most 4 at once\n",
        calls.len()
    );
    let batch: Vec<BatchCall> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| BatchCall::from_model(format!("call-{}", i + 1), *name, args))
        .collect();
    let config = BatchConfig {
        mode: ExecutionMode::Mixed,
        concurrency: 4,
    };
    let results = host.run_batch(&CallContext::new(), batch, config).await;

    println!("What the hooks saw (search_notes is declared safe and runs in the pool;");
    println!("append_note is unsafe and slow_report undeclared, so each is a barrier):");
    for line in seen.lock().unwrap().iter() {
        println!("  {line}");
    }
    println!("\nResults, in call order:");
    for (i, ((name, args), result)) in calls.iter().zip(&results).enumerate() {
        let shown = match result {
            Ok(out) => format!("ok    {}", out.llm_text()),
            Err(e @ ToolError::UnknownTool { .. }) => format!("error {e}"),
            Err(e) => format!("error [{}] {e}", e.kind().as_str()),
        };
        println!("  call-{} {name} {args}\n         {shown}", i + 1);
    }
}
