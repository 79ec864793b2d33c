//! `run_code`: a trivial JavaScript snippet (`1 + 1`) through the whole
//! pipeline — validation, timeout middleware, the built-in tool, and a
//! fresh instance of the sandboxed interpreter that starts a JavaScript
//! engine, evaluates, and renders the result.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use toolhost::builtin::{
    BuiltinConfig, BuiltinTool, BuiltinTools, CodeConfig, Language, SandboxedCode,
};
use toolhost::middleware::Timeout;
use toolhost::sandbox::Sandbox;
use toolhost::{Arguments, CallContext, ToolHost, ToolOutput};

fn target() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target")
}

fn run_code_benches(c: &mut Criterion) {
    let wasm = target().join("wasm32-wasip2/release/run_js.wasm");
    assert!(
        wasm.exists(),
        "{} is missing: run `make plugins`",
        wasm.display()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sandbox = Sandbox::new(Some(target().join("bench-code-cache"))).unwrap();
    let host = rt.block_on(async {
        // Loaded up front, so the measured calls never include compiling.
        let code = SandboxedCode::load(
            sandbox,
            CodeConfig::new().interpreter(Language::JavaScript, wasm),
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
    let args = Arguments::parse(r#"{"language": "javascript", "code": "1 + 1"}"#).unwrap();
    let out = rt
        .block_on(host.invoke_tool(CallContext::new(), "run_code", args.clone()))
        .unwrap();
    assert_eq!(out, ToolOutput::dual("result: 2", "=> 2"));
    c.bench_function("run_code/javascript_1_plus_1", |b| {
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

criterion_group!(benches, run_code_benches);
criterion_main!(benches);
