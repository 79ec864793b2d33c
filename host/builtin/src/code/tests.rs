use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::{BuiltinConfig, BuiltinTool, BuiltinTools};
use toolhost_core::extension::Extension;
use toolhost_core::{Arguments, CallContext, ErrorKind, ToolHost, ToolOutput};
use toolhost_sandbox::describe_policy;

/// Records each request and answers with a fixed result.
#[derive(Default)]
struct Recorder(Mutex<Vec<CodeRequest>>);

#[async_trait]
impl CodeOps for Recorder {
    fn languages(&self) -> Vec<Language> {
        vec![Language::JavaScript]
    }

    async fn run(&self, request: CodeRequest) -> Result<CodeResult, ToolError> {
        self.0.lock().unwrap().push(request);
        Ok(CodeResult {
            summary: "result: 2".into(),
            transcript: "=> 2".into(),
        })
    }
}

async fn host(ops: Arc<dyn CodeOps>, validate: bool) -> ToolHost {
    let host = ToolHost::builder().validate_arguments(validate).build();
    host.register_tool(run_code_tool(ops)).unwrap();
    host
}

async fn call(
    host: &ToolHost,
    ctx: CallContext,
    args: serde_json::Value,
) -> Result<ToolOutput, ToolError> {
    host.invoke_tool(ctx, "run_code", Arguments::from_value(&args).unwrap())
        .await
}

#[tokio::test]
async fn b7_the_schema_offers_exactly_the_languages_the_operations_run() {
    let tool = run_code_tool(Arc::new(Recorder::default()));
    let spec = tool.spec();
    assert_eq!(spec.name, "run_code");
    assert_eq!(
        spec.parameters["properties"]["language"]["enum"],
        json!(["javascript"])
    );
    assert_eq!(spec.parameters["required"], json!(["language", "code"]));
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert_eq!((spec.concurrency_safe, spec.idempotent), (Some(true), true));
}

#[tokio::test]
async fn b2_the_tool_hands_the_snippet_and_the_time_left_to_its_operations() {
    let ops = Arc::new(Recorder::default());
    let host = host(ops.clone(), true).await;
    let ctx = CallContext::new().with_timeout(Duration::from_secs(30));
    let out = call(
        &host,
        ctx,
        json!({"language": "javascript", "code": "1 + 1"}),
    )
    .await
    .unwrap();
    assert_eq!(out, ToolOutput::dual("result: 2", "=> 2"));
    let seen = ops.0.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].language, Language::JavaScript);
    assert_eq!(seen[0].code, "1 + 1");
    let left = seen[0].time_left.expect("the call had a deadline");
    assert!(
        left <= Duration::from_secs(30) && left > Duration::ZERO,
        "{left:?}"
    );
}

#[tokio::test]
async fn b7_bad_arguments_are_refused_before_the_operations_run() {
    let ops = Arc::new(Recorder::default());
    // Without schema validation the tool's own checks still apply.
    let tool_only = host(ops.clone(), false).await;
    for (args, path, says) in [
        (
            json!({"language": "python", "code": "1"}),
            "/language",
            "`python` is not one of javascript",
        ),
        (
            json!({"language": "javascript", "code": "  \n"}),
            "/code",
            "the snippet is empty",
        ),
        (
            json!({"language": "javascript"}),
            "",
            "missing field `code`",
        ),
        (
            json!({"language": "javascript", "code": "1", "fs": true}),
            "/fs",
            "unknown field `fs`",
        ),
    ] {
        match call(&tool_only, CallContext::new(), args.clone()).await {
            Err(ToolError::InvalidArguments { path: p, message }) => {
                assert_eq!(p, path, "{args}");
                assert!(message.contains(says), "{args}: {message}");
            }
            other => panic!("{args}: {other:?}"),
        }
    }
    assert!(ops.0.lock().unwrap().is_empty());
    let validating = host(Arc::new(Recorder::default()), true).await;
    let err = call(
        &validating,
        CallContext::new(),
        json!({"language": "ruby", "code": "1"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
}

#[test]
fn b7_the_interpreter_policy_grants_nothing_and_keeps_the_limits() {
    let mut config = CodeConfig::new().interpreter(Language::JavaScript, "run_js.wasm");
    config.memory_bytes = 32 << 20;
    config.timeout = Duration::from_millis(1500);
    config.max_instances = 2;
    let policy = config.policy();
    assert!(policy.dirs.is_empty());
    assert!(policy.net.is_deny_all());
    assert!(policy.env.is_empty());
    assert_eq!(
        describe_policy(&policy),
        [
            "files: none",
            "network: none",
            "environment: none",
            "sockets: none",
            "limits: 32 MiB memory, 1500 ms per call, 2 instance(s) at once, 16384 KiB result",
            "bounds: 256 tools, 16384 B description, 65536 B schema, 16384 B messages, 8192 B per log record and 262144 B of log per call, 256 handles per instance, 16 requests in flight",
        ]
    );
}

#[test]
fn b7_a_missing_interpreter_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("nope.wasm");
    let sandbox = toolhost_sandbox::Sandbox::new(None).unwrap();
    let err = SandboxedCode::new(sandbox.clone(), CodeConfig::new())
        .err()
        .unwrap();
    assert_eq!(err, InterpreterError::NoInterpreter);
    let js = CodeConfig::new().interpreter(Language::JavaScript, &wasm);
    let err = SandboxedCode::new(sandbox, js.clone()).err().unwrap();
    assert_eq!(
        err,
        InterpreterError::Missing {
            language: Language::JavaScript,
            path: wasm.clone()
        }
    );
    assert_eq!(err.language(), Some(Language::JavaScript));
    assert_eq!(
        err.to_string(),
        format!(
            "the javascript interpreter {} does not exist (build the plugins first, e.g. `make plugins`)",
            wasm.display()
        )
    );
    let config = BuiltinConfig::new(dir.path()).enable(BuiltinTool::RunCode);
    let err = BuiltinTools::new(config.clone()).err().unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        err.to_string()
            .starts_with("run_code is enabled without an interpreter"),
        "{err}"
    );
    let err = BuiltinTools::new(config.clone().run_code(js))
        .err()
        .unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(
        err.to_string().contains("nope.wasm does not exist"),
        "{err}"
    );
    // Replaced operations need no interpreter file.
    let tools = BuiltinTools::new(config.code_ops(Arc::new(Recorder::default()))).unwrap();
    assert!(tools.tools().iter().any(|t| t.spec().name == "run_code"));
}

#[test]
fn b7_languages_round_trip_through_their_names() {
    for l in Language::ALL {
        assert_eq!(Language::from_name(l.name()), Some(l));
        assert_eq!(l.to_string(), l.name());
    }
    assert_eq!(Language::from_name("JavaScript"), None);
}

#[test]
fn b7_the_description_speaks_of_the_offered_languages_only() {
    let js = tool::description(&[Language::JavaScript]);
    assert!(
        js.contains("javascript: ") && !js.contains("python"),
        "{js}"
    );
    let both = tool::description(&Language::ALL);
    assert!(
        both.contains("javascript: ") && both.contains("python: "),
        "{both}"
    );
    assert!(both.contains("no filesystem, network"), "{both}");
}
