//! `run_code`: a trivial snippet (`1 + 1`) and one whose value is an
//! object, in JavaScript and in Python, through the whole pipeline —
//! validation, timeout middleware, the built-in tool, and a fresh instance
//! of the sandboxed interpreter that evaluates and renders the result; and
//! how long a snippet that grows its memory without end takes to be stopped
//! at a 32 MiB limit, in each language.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use serde_json::json;
use toolhost::builtin::{
    BuiltinConfig, BuiltinTool, BuiltinTools, CodeConfig, Language, SandboxedCode,
};
use toolhost::middleware::Timeout;
use toolhost::sandbox::Sandbox;
use toolhost::{Arguments, CallContext, SandboxFault, ToolError, ToolHost};

fn target() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target")
}

fn wasm(name: &str) -> PathBuf {
    let path = target().join(format!("wasm32-wasip2/release/{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run `make plugins`",
        path.display()
    );
    path
}

/// A host offering `run_code` with both interpreters under `tune`'s
/// limits, loaded up front so that the measured calls never include
/// compiling.
fn host(rt: &tokio::runtime::Runtime, tune: impl FnOnce(&mut CodeConfig)) -> ToolHost {
    let sandbox = Sandbox::new(Some(target().join("bench-code-cache"))).unwrap();
    let mut limits = CodeConfig::new()
        .interpreter(Language::JavaScript, wasm("run_js"))
        .interpreter(Language::Python, wasm("run_py"));
    tune(&mut limits);
    rt.block_on(async {
        let code = SandboxedCode::load(sandbox, limits).await.unwrap();
        let config = BuiltinConfig::new(std::env::temp_dir())
            .tools([BuiltinTool::RunCode])
            .code_ops(Arc::new(code));
        let host = ToolHost::builder()
            .validate_arguments(true)
            .middleware(Timeout::new(Duration::from_secs(300)))
            .build();
        host.register_extension(Arc::new(BuiltinTools::new(config).unwrap()))
            .await
            .unwrap();
        host
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn run_code_benches(c: &mut Criterion) {
    let rt = runtime();
    let host = host(&rt, |_| ());
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

/// The memory limit of the blow-up cases.
const BLOW_UP_LIMIT: u64 = 32 << 20;

/// Snippets that keep what they allocate until the limit stops them, as
/// in the memory tests of rule B7 (`tests/integration/run_code.rs`): in
/// JavaScript an array of 100,000 integers at a time, filled element by
/// element, and small objects one by one; in Python a 1 MiB buffer at a
/// time, and a list of 100,000 integers at a time.
const BLOW_UPS: [(&str, &str, &str); 4] = [
    (
        "javascript",
        "javascript_memory_blow_up_32_mib",
        "const keep = []; while (true) { keep.push(new Array(100000).fill(keep.length)); }",
    ),
    (
        "javascript",
        "javascript_object_blow_up_32_mib",
        "const keep = []; while (true) { keep.push({ n: keep.length, s: 'x' + keep.length }); }",
    ),
    (
        "python",
        "python_memory_blow_up_32_mib",
        "keep = []\nwhile True:\n    keep.append(bytearray(1 << 20))",
    ),
    (
        "python",
        "python_list_blow_up_32_mib",
        "keep = []\nwhile True:\n    keep.append(list(range(len(keep), len(keep) + 100000)))",
    ),
];

/// Each blow-up from the call to the memory-limit error. A run takes up to
/// seconds, so each of the ten samples is one run.
fn memory_blow_up_benches(c: &mut Criterion) {
    let rt = runtime();
    let host = host(&rt, |limits| {
        limits.memory_bytes = BLOW_UP_LIMIT;
        limits.timeout = Duration::from_secs(300);
    });
    let mut group = c.benchmark_group("run_code");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100));
    for (language, name, code) in BLOW_UPS {
        let args = Arguments::from_value(&json!({"language": language, "code": code})).unwrap();
        let stopped = || {
            let (host, args) = (host.clone(), args.clone());
            async move {
                match host.invoke_tool(CallContext::new(), "run_code", args).await {
                    Err(ToolError::Sandbox {
                        fault: SandboxFault::LimitExceeded(what),
                        ..
                    }) if what.starts_with("memory limit of 32 MiB") => {}
                    other => panic!("{name}: expected the memory limit, got {other:?}"),
                }
            }
        };
        // Once outside the measurement, to know how long the group takes.
        let started = std::time::Instant::now();
        rt.block_on(stopped());
        group.measurement_time(started.elapsed() * 9);
        group.bench_function(name, |b| b.to_async(&rt).iter(stopped));
    }
    group.finish();
}

criterion_group!(benches, run_code_benches, memory_blow_up_benches);
criterion_main!(benches);
