//! `run_code`: a trivial snippet (`1 + 1`) and one whose value is an
//! object, in JavaScript and in Python, through the whole pipeline —
//! validation, timeout middleware, the built-in tool, and a fresh instance
//! of the sandboxed interpreter that evaluates and renders the result.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolhost::builtin::{
    BuiltinConfig, BuiltinTool, BuiltinTools, CodeConfig, Language, SandboxedCode,
};
use toolhost::middleware::Timeout;
use toolhost::sandbox::Sandbox;
use toolhost::{Arguments, CallContext, ToolHost};

fn target() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target")
}

fn run_code_benches(c: &mut Criterion) {
    let wasm = |name: &str| {
        let path = target().join(format!("wasm32-wasip2/release/{name}.wasm"));
        assert!(
            path.exists(),
            "{} is missing: run `make plugins`",
            path.display()
        );
        path
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sandbox = Sandbox::new(Some(target().join("bench-code-cache"))).unwrap();
    let host = rt.block_on(async {
        // Loaded up front, so the measured calls never include compiling.
        let code = SandboxedCode::load(
            sandbox,
            CodeConfig::new()
                .interpreter(Language::JavaScript, wasm("run_js"))
                .interpreter(Language::Python, wasm("run_py")),
        )
        .await
        .unwrap();
        let config = BuiltinConfig::new(std::env::temp_dir())
            .tools([BuiltinTool::RunCode])
            .code_ops(Arc::new(code));
        let host = ToolHost::builder()
            .validate_arguments(true)
            .middleware(Timeout::new(Duration::from_secs(30)))
            .build();
        host.register_extension(Arc::new(BuiltinTools::new(config).unwrap()))
            .await
            .unwrap();
        host
    });
    for (language, name, code, expected) in [
        ("javascript", "javascript_1_plus_1", "1 + 1", "result: 2"),
        (
            "javascript",
            "javascript_object_result",
            "({sum: 1 + 1, list: [1, 2]})",
            "result: { sum: 2, list: [ 1, 2 ] }",
        ),
        ("python", "python_1_plus_1", "1 + 1", "result: 2"),
        (
            "python",
            "python_object_result",
            "{'sum': 1 + 1, 'list': [1, 2]}",
            "result: {'sum': 2, 'list': [1, 2]}",
        ),
    ] {
        let args = Arguments::from_value(&json!({"language": language, "code": code})).unwrap();
        let out = rt
            .block_on(host.invoke_tool(CallContext::new(), "run_code", args.clone()))
            .unwrap();
        assert_eq!(out.llm_text(), expected);
        c.bench_function(&format!("run_code/{name}"), |b| {
            b.to_async(&rt).iter(|| {
                let (host, args) = (host.clone(), args.clone());
                async move {
                    host.invoke_tool(CallContext::new(), "run_code", args)
                        .await
                        .unwrap()
                }
            })
        });
    }
}

criterion_group!(benches, run_code_benches);
criterion_main!(benches);
