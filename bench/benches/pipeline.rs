//! The pipeline's own cost: a native no-op tool called through
//! `invoke_tool` with argument validation, a before hook, an after hook and
//! timeout middleware — everything but the tool's work.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolhost::middleware::Timeout;
use toolhost::{
    Arguments, CallContext, FnAfterHook, FnBeforeHook, FnTool, HookScope, ToolHost, ToolOutput,
    ToolSpec,
};

fn host() -> ToolHost {
    let host = ToolHost::builder()
        .validate_arguments(true)
        .before_hook(HookScope::Global, FnBeforeHook::new("allow", |_| Ok(())))
        .after_hook(HookScope::Global, FnAfterHook::new("observe", |_, _| {}))
        .middleware(Timeout::new(Duration::from_secs(30)))
        .build();
    host.register_tool(FnTool::arc(
        ToolSpec::new(
            "noop",
            "does nothing",
            json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
                "required": ["path"]
            }),
        ),
        |_, _| async { Ok(ToolOutput::text("ok")) },
    ))
    .unwrap();
    host
}

fn pipeline(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = host();
    let args = Arguments::parse(r#"{"path": "src/lib.rs", "limit": 20}"#).unwrap();
    c.bench_function("pipeline/noop_validated_2hooks_timeout", |b| {
        b.to_async(&rt).iter(|| {
            let (host, args) = (host.clone(), args.clone());
            async move {
                host.invoke_tool(CallContext::new(), "noop", args)
                    .await
                    .unwrap()
            }
        })
    });
    let bare = ToolHost::new();
    bare.register_tool(FnTool::arc(
        ToolSpec::new("noop", "does nothing", json!({"type": "object"})),
        |_, _| async { Ok(ToolOutput::text("ok")) },
    ))
    .unwrap();
    c.bench_function("pipeline/noop_bare", |b| {
        b.to_async(&rt).iter(|| {
            let (host, args) = (bare.clone(), args.clone());
            async move {
                host.invoke_tool(CallContext::new(), "noop", args)
                    .await
                    .unwrap()
            }
        })
    });
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
