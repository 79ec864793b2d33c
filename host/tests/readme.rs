//! The README's Rust code, compiled: each ```` ```rust ```` block of
//! README.md is the text between a `// readme:begin` and `// readme:end`
//! pair below, and `readme_rust_blocks_are_compiled_code` fails when one is
//! not (a block edited in one place only, or a new block with no home here).
//! What a block takes for granted (a `host`, a `spec`, its imports) is set
//! up outside its markers, so the README shows only what a reader needs.
//! Blocks that would reach outside the test (a plugin file, a child
//! process, a project folder) are compiled and not run.

#![allow(dead_code)]

use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use toolhost::{Arguments, CallContext, FnTool, ToolError, ToolHost, ToolOutput, ToolSpec};

type Result<T = ()> = std::result::Result<T, Box<dyn Error>>;

#[tokio::test]
#[rustfmt::skip]
async fn readme_first_tool() -> Result {
    // readme:begin
    use std::time::Duration;
    use serde_json::json;
    use toolhost::{middleware::Timeout, Arguments, CallContext, FnTool, ToolHost, ToolOutput, ToolSpec};

    let host = ToolHost::builder().validate_arguments(true).middleware(Timeout::new(Duration::from_secs(5))).build();
    host.register_tool(FnTool::arc(
        ToolSpec::new("greet", "Greets someone", json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})),
        |_ctx, args| async move { Ok(ToolOutput::text(format!("Hello, {}!", args.to_value()["name"].as_str().unwrap_or("?")))) },
    ))?;
    let out = host.invoke_tool(CallContext::new(), "greet", Arguments::parse(r#"{"name":"Ada"}"#)?).await?;
    assert_eq!(out.llm_text(), "Hello, Ada!");
    // readme:end
    Ok(())
}

#[rustfmt::skip]
async fn readme_sandbox_only() -> Result {
    // readme:begin
    let sandbox = toolhost_sandbox::Sandbox::new(None)?;
    let plugin = sandbox.plugin_file("calc", "calc.wasm").load().await?;
    let host = toolhost_core::ToolHost::builder().validate_arguments(true).build();
    host.register_extension(plugin.into_extension()).await?;
    let out = host.invoke_tool(CallContext::new(), "calc", Arguments::parse(r#"{"expression":"2+3*4"}"#)?).await?;
    // readme:end
    let _ = out;
    Ok(())
}

#[test]
#[rustfmt::skip]
fn readme_hooks() {
    let my_approver: Arc<dyn toolhost::Approver> = Arc::new(toolhost_core::DenyAll);
    // readme:begin
    use toolhost::{AfterDecision, Arguments, Decision, FnAfterHook, FnBeforeHook, HookScope, ToolHost, ToolOutput};

    let host = ToolHost::builder()
        .before_hook(HookScope::Tool("write_file".into()), FnBeforeHook::deciding("in-project", |call| {
            let mut args = call.arguments.to_value();
            let path = args["path"].as_str().unwrap_or_default().trim_start_matches('/').to_owned();
            args["path"] = format!("project/{path}").into();
            Decision::Rewrite(Arguments::from_value(&args).expect("still JSON"))
        }))
        .before_hook(HookScope::Global, FnBeforeHook::deciding("confirm-deletes", |call| {
            if call.tool().contains("delete") { Decision::ask("deleting cannot be undone") } else { Decision::Allow }
        }))
        .after_hook(HookScope::Global, FnAfterHook::deciding("redact", |_, outcome| match outcome {
            Ok(out) if out.llm_text().contains("BEGIN PRIVATE KEY") => {
                AfterDecision::Replace(Ok(ToolOutput::text("[a private key was removed from this result]")))
            }
            _ => AfterDecision::Keep,
        }))
        .approver(my_approver)          // an `Arc<dyn Approver>`; without one, every ask is denied
        .build();
    // readme:end
    drop(host);
}

#[test]
#[rustfmt::skip]
fn readme_content_blocks() {
    let source = String::from("fn main() {}");
    let output = {
        // readme:begin
        use toolhost::output::{Annotations, Audience, ContentBlock, EmbeddedResource, ResourceContents};

        ToolOutput::blocks(vec![
            ContentBlock::text("Found one match:"),
            ContentBlock::resource(EmbeddedResource {
                uri: "file:///src/main.rs".into(),
                mime_type: Some("text/x-rust".into()),
                contents: ResourceContents::Text(source),
            }),
            ContentBlock::text("(full listing)")
                .with_annotations(Annotations::for_audience([Audience::User])),
        ])
        // readme:end
    };
    assert!(output.llm_text().contains("Found one match:"));
}

#[test]
#[rustfmt::skip]
fn readme_structured_output() {
    // readme:begin
    let spec = ToolSpec::new("weather", "Current weather", json!({"type": "object"}))
        .output_schema(json!({
            "type": "object",
            "properties": {"temperature": {"type": "number"}},
            "required": ["temperature"]
        }));
    let tool = FnTool::arc(spec, |_ctx, _args| async {
        Ok(ToolOutput::structured(json!({"temperature": 22.5})))
    });
    // readme:end
    assert_eq!(tool.spec().name, "weather");
}

#[test]
#[rustfmt::skip]
fn readme_progress() {
    let spec = ToolSpec::new("index", "Indexes files", json!({"type": "object"}));
    // A constant, so that the closure (as the README writes it) captures nothing.
    #[allow(non_upper_case_globals)]
    const files: &[&str] = &["a.rs", "b.rs"];
    async fn index(_file: &str) -> std::result::Result<(), ToolError> {
        Ok(())
    }
    // readme:begin
    let tool = FnTool::arc(spec, |ctx: CallContext, _args| async move {
        for (i, file) in files.iter().enumerate() {
            ctx.report_progress(i as f64, Some(files.len() as f64), Some(&format!("indexing {file}")));
            index(file).await?;
        }
        Ok(ToolOutput::text("indexed"))
    });
    // readme:end
    assert_eq!(tool.spec().name, "index");
}

#[rustfmt::skip]
async fn readme_remote_mcp_server(host: ToolHost) -> Result {
    // readme:begin
    use toolhost::mcp::{McpClient, McpServerConfig};

    let docs = McpServerConfig::command("docs", vec!["python3".into(), "docs_server.py".into()]);
    host.register_extension(std::sync::Arc::new(McpClient::new(docs)?)).await?;
    // readme:end
    Ok(())
}

#[rustfmt::skip]
async fn readme_builtin_tools(host: ToolHost) -> Result {
    // readme:begin
    use toolhost::builtin::{BuiltinConfig, BuiltinTool, BuiltinTools, CommandPolicy, ShellConfig};
    use toolhost::net::NetPolicy;

    let tools = BuiltinTools::new(
        BuiltinConfig::new("/path/to/project")          // file and search tools by default
            .enable(BuiltinTool::Shell)
            .shell(ShellConfig { policy: CommandPolicy::open().allow(["cargo", "git", "ls"]), ..Default::default() })
            .enable(BuiltinTool::WebFetch)
            .net_policy(NetPolicy::new(["docs.rs", "*.crates.io"], [] as [&str; 0]).expect("valid rules")),
    )?;
    host.register_extension(std::sync::Arc::new(tools)).await?;
    // readme:end
    Ok(())
}

#[test]
#[rustfmt::skip]
fn readme_run_code() {
    // readme:begin
    use toolhost::builtin::{BuiltinConfig, BuiltinTool, CodeConfig, Language};

    let config = BuiltinConfig::new("/path/to/project")
        .enable(BuiltinTool::RunCode)
        .run_code(
            CodeConfig::new()
                .interpreter(Language::JavaScript, "target/wasm32-wasip2/release/run_js.wasm")
                .interpreter(Language::Python, "target/wasm32-wasip2/release/run_py.wasm"),
        );
    // readme:end
    drop(config);
}

/// The ```` ```rust ```` blocks of a Markdown file, each with the line it
/// starts on.
fn rust_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for (i, line) in markdown.lines().enumerate() {
        match &mut current {
            None if line.trim_end() == "```rust" => current = Some((i + 1, Vec::new())),
            Some(_) if line.trim_end() == "```" => {
                let (start, lines) = current.take().expect("inside a block");
                blocks.push((start, lines.join("\n")));
            }
            Some((_, lines)) => lines.push(line),
            None => {}
        }
    }
    blocks
}

/// The text between each pair of markers in `source`, with the indentation
/// they share removed.
fn marked_regions(source: &str) -> Vec<String> {
    let mut regions = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in source.lines() {
        match line.trim() {
            "// readme:begin" => current = Some(Vec::new()),
            "// readme:end" => regions.push(dedent(&current.take().expect("a begin marker first"))),
            _ => {
                if let Some(lines) = &mut current {
                    lines.push(line);
                }
            }
        }
    }
    regions
}

fn dedent(lines: &[&str]) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| {
            if l.len() >= indent {
                &l[indent..]
            } else {
                l.trim_start()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn readme_rust_blocks_are_compiled_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let compiled = marked_regions(include_str!("readme.rs"));
    let blocks = rust_blocks(&readme);
    assert!(
        !blocks.is_empty(),
        "README.md has no rust blocks: the parser is wrong"
    );
    let missing: Vec<String> = blocks
        .iter()
        .filter(|(_, block)| !compiled.contains(block))
        .map(|(line, block)| format!("README.md line {line}:\n{block}"))
        .collect();
    assert!(
        missing.is_empty(),
        "these README blocks are not the compiled code in host/tests/readme.rs (copy each between a `// readme:begin`/`// readme:end` pair there, and make it compile):\n\n{}",
        missing.join("\n\n")
    );
    // Every marked region is shown, so none is kept compiling for nothing.
    let shown: Vec<&String> = blocks.iter().map(|(_, b)| b).collect();
    for region in &compiled {
        assert!(
            shown.contains(&region),
            "a marked region README.md no longer shows:\n{region}"
        );
    }
}
