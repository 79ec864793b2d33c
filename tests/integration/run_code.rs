//! `run_code` (rule B7): JavaScript and Python snippets run in the
//! sandboxed interpreter plugins through the pipeline, with time and memory
//! limits and nothing granted; and (rule B2) its operations can be
//! replaced.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolhost::builtin::code::{
    CodeConfig, CodeOps, CodeRequest, CodeResult, Language, SandboxedCode,
};
use toolhost::builtin::{BuiltinConfig, BuiltinTool, BuiltinTools};
use toolhost::config::{BuiltHost, Config, describe_policy};
use toolhost::error::report;
use toolhost::{Arguments, CallContext, SandboxFault, ToolError, ToolHost, ToolOutput};

use crate::common::{sandbox, wasm};

/// The JavaScript interpreter with the default limits, except as `tune`
/// says.
fn interpreter(tune: impl FnOnce(&mut CodeConfig)) -> CodeConfig {
    let mut config = CodeConfig::new().interpreter(Language::JavaScript, wasm("run_js"));
    tune(&mut config);
    config
}

/// The Python interpreter with the default limits, except as `tune` says.
fn python(tune: impl FnOnce(&mut CodeConfig)) -> CodeConfig {
    let mut config = CodeConfig::new().interpreter(Language::Python, wasm("run_py"));
    tune(&mut config);
    config
}

async fn run_py(host: &ToolHost, code: &str) -> Result<ToolOutput, ToolError> {
    run_in(host, "python", code).await
}

/// A host offering only `run_code`, over the local sandboxed interpreter.
async fn host_with(config: CodeConfig) -> ToolHost {
    let dir = std::env::temp_dir();
    let builtin = BuiltinConfig::new(dir)
        .tools([BuiltinTool::RunCode])
        .run_code(config)
        .sandbox(sandbox());
    let host = ToolHost::builder().validate_arguments(true).build();
    host.register_extension(Arc::new(BuiltinTools::new(builtin).unwrap()))
        .await
        .unwrap();
    host
}

async fn run(host: &ToolHost, code: &str) -> Result<ToolOutput, ToolError> {
    run_in(host, "javascript", code).await
}

async fn run_in(host: &ToolHost, language: &str, code: &str) -> Result<ToolOutput, ToolError> {
    let args = json!({"language": language, "code": code});
    host.invoke_tool(
        CallContext::new(),
        "run_code",
        Arguments::from_value(&args).unwrap(),
    )
    .await
}

/// The deadline of a call whose snippet never ends: the timeout is the
/// outcome expected, so it may be short.
const RUNAWAY_DEADLINE: Duration = Duration::from_millis(300);

/// Runs `code` in `language` with a deadline of its own, `timeout` from
/// now; the interpreter's configured timeout still applies to other calls.
async fn run_within(
    host: &ToolHost,
    language: &str,
    code: &str,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let args = json!({"language": language, "code": code});
    host.invoke_tool(
        CallContext::new().with_timeout(timeout),
        "run_code",
        Arguments::from_value(&args).unwrap(),
    )
    .await
}

fn dual(out: ToolOutput) -> (String, String) {
    match out {
        ToolOutput::Dual { for_llm, for_user } => (for_llm, for_user),
        other => panic!("expected dual output, got {other:?}"),
    }
}

/// Checks that a run was stopped at the sandbox's memory limit of `mib`
/// MiB, and that the error names it.
fn assert_memory_limit(result: Result<ToolOutput, ToolError>, mib: u64) {
    match result {
        Err(ToolError::Sandbox {
            plugin,
            fault: SandboxFault::LimitExceeded(what),
        }) => {
            assert_eq!(plugin, "run_code");
            assert!(
                what.starts_with(&format!("memory limit of {mib} MiB")),
                "{what}"
            );
        }
        other => panic!("expected the memory limit, got {other:?}"),
    }
}

fn failure(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Failed {
            message,
            retryable: false,
        }) => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn b7_javascript_returns_its_value_and_console_output() {
    let host = host_with(interpreter(|_| ())).await;
    let code = r#"
        console.log("hello", 1 + 1, [1, 2]);
        console.error("careful");
        const squares = [1, 2, 3].map(x => x * x);
        squares.reduce((a, b) => a + b, 0)
    "#;
    let (for_llm, for_user) = dual(run(&host, code).await.unwrap());
    assert_eq!(
        for_llm,
        "console:\nhello 2 [ 1, 2 ]\n[error] careful\nresult: 14"
    );
    assert_eq!(for_user, "hello 2 [ 1, 2 ]\n[error] careful\n=> 14");
    let (for_llm, _) = dual(run(&host, "'a' + 'b'").await.unwrap());
    assert_eq!(for_llm, "result: \"ab\"");
    let (for_llm, _) = dual(run(&host, "let x = 1;").await.unwrap());
    assert_eq!(for_llm, "result: undefined");
    // Arrays and objects are spelled out on one line, to a depth.
    let (for_llm, _) = dual(
        run(
            &host,
            "const o = {a: [1, {b: 'x'}], 'k y': null}; o.me = o; o",
        )
        .await
        .unwrap(),
    );
    assert_eq!(
        for_llm,
        "result: { a: [ 1, { b: \"x\" } ], \"k y\": null, me: [Circular] }"
    );
    // Promise jobs run, and a settled promise gives its outcome.
    let (for_llm, _) = dual(
        run(
            &host,
            "Promise.resolve(41).then(x => { console.log('then'); return x + 1; })",
        )
        .await
        .unwrap(),
    );
    assert_eq!(for_llm, "console:\nthen\nresult: 42");
}

#[tokio::test]
async fn b7_errors_in_the_snippet_are_clear_failures() {
    let host = host_with(interpreter(|_| ())).await;
    let message = failure(run(&host, "let x = ;").await);
    assert!(message.starts_with("Uncaught SyntaxError: "), "{message}");
    assert!(message.contains("line 1, col 9"), "{message}");
    let message = failure(
        run(
            &host,
            "console.log('before');\nfunction check(n) {\n  throw new TypeError('bad ' + n);\n}\ncheck(7)",
        )
        .await,
    );
    assert!(
        message.starts_with(
            "Uncaught TypeError: bad 7\n    at check (snippet.js:3:9)\n    at <main> (snippet.js:5:6)\n"
        ),
        "{message}"
    );
    assert!(
        message.ends_with("console before the error:\nbefore"),
        "{message}"
    );
    let message = failure(run(&host, "throw 5").await);
    assert!(message.starts_with("Uncaught 5"), "{message}");
    let message = failure(run(&host, "Promise.reject(new RangeError('later'))").await);
    assert!(
        message.starts_with("Uncaught RangeError: later"),
        "{message}"
    );
    // Unbounded recursion is the engine's own error, not a crash.
    let message = failure(run(&host, "function f() { return f() + 1; } f()").await);
    assert!(
        message.starts_with("Uncaught InternalError: too much recursion"),
        "{message}"
    );
    assert!(message.contains("more frames"), "{message}");
}

#[tokio::test]
async fn b7_an_infinite_loop_is_stopped_at_its_deadline() {
    // The configured timeout stops the loop.
    let host = host_with(interpreter(|c| c.timeout = Duration::from_millis(300))).await;
    match run(&host, "while (true) {}").await {
        Err(ToolError::Timeout { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    // And after a loop stopped at its 300 ms, the interpreter still serves:
    // the next snippet runs under the default timeout, not that one.
    let host = host_with(interpreter(|_| ())).await;
    match run_within(&host, "javascript", "while (true) {}", RUNAWAY_DEADLINE).await {
        Err(ToolError::Timeout { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    let (for_llm, _) = dual(run(&host, "1 + 1").await.unwrap());
    assert_eq!(for_llm, "result: 2");
}

#[tokio::test]
async fn b7_the_call_deadline_stops_a_snippet_too() {
    let host = host_with(interpreter(|_| ())).await;
    let args = json!({"language": "javascript", "code": "for (;;) {}"});
    let ctx = CallContext::new().with_timeout(Duration::from_millis(200));
    match host
        .invoke_tool(ctx, "run_code", Arguments::from_value(&args).unwrap())
        .await
    {
        Err(ToolError::Timeout { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
}

/// How long a memory blow-up may run before the test calls it a hang.
/// Both runs end at the memory limit long before this deadline, which
/// only catches a run that never reaches it.
const BLOW_UP_DEADLINE: Duration = Duration::from_secs(300);

#[tokio::test]
async fn b7_a_memory_blow_up_hits_the_sandbox_limit() {
    let host = host_with(interpreter(|c| {
        c.memory_bytes = 32 << 20;
        c.timeout = BLOW_UP_DEADLINE;
    }))
    .await;
    // Array storage outside the garbage-collected heap, and objects in it.
    for grow in [
        "const keep = []; while (true) { keep.push(new Array(100000).fill(keep.length)); }",
        "const keep = []; while (true) { keep.push({ n: keep.length, s: 'x' + keep.length }); }",
    ] {
        assert_memory_limit(run(&host, grow).await, 32);
    }
    let (for_llm, _) = dual(run(&host, "[1, 2, 3].length").await.unwrap());
    assert_eq!(for_llm, "result: 3");
}

/// `Array.prototype.fill`, which the array blow-up above leans on, behaves
/// exactly as the language says wherever a fast path for ordinary arrays
/// could be observed (setters on a prototype, proxies, array-likes, frozen
/// arrays, bounds that run code).
#[tokio::test]
async fn b7_array_fill_behaves_as_the_language_says() {
    let host = host_with(interpreter(|_| ())).await;
    let cases = [
        // Ranges, as the specification's steps compute them.
        ("JSON.stringify(new Array(5).fill(7))", "[7,7,7,7,7]"),
        (
            "JSON.stringify([1, 2, 3, 4, 5].fill(0, 1, 3))",
            "[1,0,0,4,5]",
        ),
        ("JSON.stringify([1, 2, 3, 4, 5].fill(0, -2))", "[1,2,3,0,0]"),
        (
            "JSON.stringify([1, 2, 3, 4, 5].fill(0, -9, -4))",
            "[0,2,3,4,5]",
        ),
        ("JSON.stringify([1, 2, 3].fill(9, 5))", "[1,2,3]"),
        ("JSON.stringify([1, 2, 3].fill(9, 2, 1))", "[1,2,3]"),
        (
            "JSON.stringify([1, 2, 3].fill(9, NaN, Infinity))",
            "[9,9,9]",
        ),
        (
            "JSON.stringify([1, 2, 3].fill(9, 1.7, -Infinity))",
            "[1,2,3]",
        ),
        ("JSON.stringify([1, 2, 3].fill())", "[null,null,null]"),
        (
            "[1, 2, 3].fill(undefined).every(x => x === undefined)",
            "true",
        ),
        // Holes before the range stay holes; values of every kind.
        (
            "JSON.stringify(Object.keys(new Array(4).fill('a', 2)))",
            "[\"2\",\"3\"]",
        ),
        (
            "JSON.stringify([1, 'b', {c: 1}].fill(1.5, 1))",
            "[1,1.5,1.5]",
        ),
        (
            "const o = {}; const a = new Array(3).fill(o); a[0] === o && a[2] === o",
            "true",
        ),
        ("const a = [1]; a.fill(2) === a && a.length === 1", "true"),
        (
            "Array.prototype.fill.length + ' ' + Array.prototype.fill.name",
            "1 fill",
        ),
        // An indexed setter on Array.prototype sees the writes it would
        // see; so does a proxy, and an array-like object gets properties.
        (
            "let seen = ''; Object.defineProperty(Array.prototype, 1, \
             { set(v) { seen += 'set ' + v; }, configurable: true }); \
             const a = new Array(3).fill(5); delete Array.prototype[1]; \
             JSON.stringify([Object.keys(a), seen])",
            "[[\"0\",\"2\"],\"set 5\"]",
        ),
        (
            "let seen = ''; Object.defineProperty(Object.prototype, 0, \
             { set(v) { seen += 'set ' + v; }, configurable: true }); \
             const a = new Array(2).fill(3); delete Object.prototype[0]; \
             JSON.stringify([Object.keys(a), seen])",
            "[[\"1\"],\"set 3\"]",
        ),
        (
            "const log = []; const p = new Proxy([1, 2], \
             { set(t, k, v) { log.push(k); t[k] = v; return true; } }); \
             p.fill(0); JSON.stringify(log)",
            "[\"0\",\"1\"]",
        ),
        (
            "JSON.stringify(Array.prototype.fill.call({ length: 2 }, 1))",
            "{\"0\":1,\"1\":1,\"length\":2}",
        ),
        (
            "class A extends Array { set 1(v) { this.saw = v; } } \
             const a = new A(3).fill(4); JSON.stringify([a.saw, a[0], a[2]])",
            "[4,4,4]",
        ),
        (
            "const a = [0, 0]; Object.setPrototypeOf(a, null); \
             Array.prototype.fill.call(a, 6); a[0] + a[1]",
            "12",
        ),
        // Bounds that run code are converted once each, start first.
        (
            "const order = []; \
             [1, 2, 3].fill(0, { valueOf() { order.push('start'); return 1; } }, \
             { valueOf() { order.push('end'); return 2; } }); order.join()",
            "start,end",
        ),
        // An existing element kept writable when the array cannot grow.
        (
            "JSON.stringify(Object.preventExtensions([1, 2]).fill(3))",
            "[3,3]",
        ),
    ];
    for (code, expected) in cases {
        // Printed, so that the expected text is the value's own spelling.
        let printed = format!("console.log(String(eval({})))", json!(code));
        let (for_llm, _) = dual(run(&host, &printed).await.unwrap());
        assert_eq!(
            for_llm,
            format!("console:\n{expected}\nresult: undefined"),
            "{code}"
        );
    }
    // What the language refuses is still refused.
    for code in [
        "Object.freeze([1, 2]).fill(0)",
        "Object.preventExtensions(new Array(2)).fill(1)",
        "const a = [1, 2, 3]; Object.defineProperty(a, 1, { writable: false }); a.fill(0)",
        "Array.prototype.fill.call(null, 1)",
    ] {
        let message = failure(run(&host, code).await);
        assert!(
            message.starts_with("Uncaught TypeError"),
            "{code}: {message}"
        );
    }
}

#[tokio::test]
async fn b7_only_languages_that_work_are_offered() {
    let host = host_with(interpreter(|_| ())).await;
    let spec = host
        .tool_specs()
        .into_iter()
        .find(|s| s.name == "run_code")
        .unwrap();
    assert_eq!(
        spec.parameters["properties"]["language"]["enum"],
        json!(["javascript"])
    );
    match run_in(&host, "python", "1 + 1").await {
        Err(ToolError::InvalidArguments { path, .. }) => assert_eq!(path, "/language"),
        other => panic!("expected invalid arguments, got {other:?}"),
    }
    let both = interpreter(|c| {
        c.interpreters.insert(Language::Python, wasm("run_py"));
    });
    let host = host_with(both).await;
    let spec = host
        .tool_specs()
        .into_iter()
        .find(|s| s.name == "run_code")
        .unwrap();
    assert_eq!(
        spec.parameters["properties"]["language"]["enum"],
        json!(["javascript", "python"])
    );
    assert_eq!(dual(run(&host, "6 * 7").await.unwrap()).0, "result: 42");
    assert_eq!(dual(run_py(&host, "6 * 7").await.unwrap()).0, "result: 42");
}

#[tokio::test]
async fn b7_console_output_is_capped() {
    let host = host_with(interpreter(|_| ())).await;
    let code = "for (let i = 0; i < 2000; i++) console.log('x'.repeat(1000)); 'done'";
    let (for_llm, for_user) = dual(run(&host, code).await.unwrap());
    assert!(
        for_user.contains("[console output cut: "),
        "{}",
        &for_user[for_user.len() - 200..]
    );
    assert!(for_user.ends_with("=> \"done\""));
    assert!(for_llm.len() < 16 << 10, "{}", for_llm.len());
    assert!(for_llm.contains("bytes cut …]"), "{for_llm}");
    assert!(for_llm.ends_with("result: \"done\""));
}

#[tokio::test]
async fn b7_snippets_have_no_filesystem_or_network() {
    // The interpreter's policy grants nothing.
    let code = SandboxedCode::load(sandbox(), interpreter(|_| ()))
        .await
        .unwrap();
    let plugin = code.plugin(Language::JavaScript).await.unwrap().unwrap();
    let policy = plugin.policy();
    assert!(policy.dirs.is_empty());
    assert!(policy.net.is_deny_all());
    assert!(policy.env.is_empty());
    assert_eq!(
        describe_policy(policy)[..4],
        [
            "files: none",
            "network: none",
            "environment: none",
            "sockets: none"
        ]
    );
    // And the engine offers no API that could use a grant.
    let host = host_with(interpreter(|_| ())).await;
    let probe = "['require', 'process', 'fetch', 'XMLHttpRequest', 'WebSocket', 'Deno', 'Bun', \
                 'setTimeout', 'importScripts'].map(n => n + ':' + typeof globalThis[n]).join(' ')";
    let (for_llm, _) = dual(run(&host, probe).await.unwrap());
    assert_eq!(
        for_llm,
        "result: \"require:undefined process:undefined fetch:undefined \
         XMLHttpRequest:undefined WebSocket:undefined Deno:undefined Bun:undefined \
         setTimeout:undefined importScripts:undefined\""
    );
    let message = failure(run(&host, "require('fs').readFileSync('/etc/passwd', 'utf8')").await);
    assert!(
        message.starts_with("Uncaught ReferenceError: require is not defined"),
        "{message}"
    );
    let message = failure(run(&host, "import('/etc/passwd')").await);
    assert_eq!(
        message,
        "Uncaught TypeError: import() is not available: a snippet has no modules to load"
    );
    // An import() the scan cannot see, built at run time, traps the
    // engine: that one run fails as a trap, and the next run is served.
    match run(&host, "eval('imp' + 'ort(\"/etc/passwd\")')").await {
        Err(ToolError::Sandbox {
            fault: SandboxFault::Trap(_),
            ..
        }) => {}
        other => panic!("expected a contained trap, got {other:?}"),
    }
    assert_eq!(dual(run(&host, "1 + 1").await.unwrap()).0, "result: 2");
}

#[tokio::test]
async fn b7_python_returns_its_value_and_printed_output() {
    let host = host_with(python(|_| ())).await;
    let code = "import sys\nprint('hello', 1 + 1, [1, 2])\nprint('careful', file=sys.stderr)\n\
                squares = [x * x for x in (1, 2, 3)]\nsum(squares)";
    let (for_llm, for_user) = dual(run_py(&host, code).await.unwrap());
    assert_eq!(
        for_llm,
        "console:\nhello 2 [1, 2]\n[error] careful\nresult: 14"
    );
    assert_eq!(for_user, "hello 2 [1, 2]\n[error] careful\n=> 14");
    assert_eq!(
        dual(run_py(&host, "'a' + 'b'").await.unwrap()).0,
        "result: 'ab'"
    );
    assert_eq!(
        dual(run_py(&host, "x = 1").await.unwrap()).0,
        "result: None"
    );
    // The bundled standard-library modules import.
    let code = "import datetime, decimal, json, re, statistics\n\
                (datetime.date(2026, 1, 2).isoformat(), str(decimal.Decimal('1.1') + 1), \
                json.dumps({'a': [1]}), re.findall(r'\\d+', 'a1b22'), statistics.median([3, 1, 2]))";
    assert_eq!(
        dual(run_py(&host, code).await.unwrap()).0,
        "result: ('2026-01-02', '2.1', '{\"a\": [1]}', ['1', '22'], 2)"
    );
}

#[tokio::test]
async fn b7_python_errors_are_clear_failures() {
    let host = host_with(python(|_| ())).await;
    let message = failure(run_py(&host, "let x = ;").await);
    assert!(
        message.starts_with("  File \"snippet.py\", line 1\n"),
        "{message}"
    );
    assert!(
        message.ends_with("SyntaxError: invalid syntax"),
        "{message}"
    );
    let message = failure(
        run_py(
            &host,
            "print('before')\ndef check(n):\n    raise TypeError(f'bad {n}')\ncheck(7)",
        )
        .await,
    );
    assert_eq!(
        message,
        "TypeError: bad 7\nTraceback (most recent call last):\n  \
         File \"snippet.py\", line 4, in <module>\n  File \"snippet.py\", line 3, in check\n\
         console before the error:\nbefore"
    );
    // Unbounded recursion is Python's own error, not a crash.
    let message = failure(run_py(&host, "def f():\n    return f() + 1\nf()").await);
    assert!(
        message.starts_with("RecursionError: maximum recursion depth exceeded"),
        "{message}"
    );
    assert!(message.contains("earlier frames"), "{message}");
    // Exiting is an error of the snippet too.
    let message = failure(run_py(&host, "raise SystemExit(3)").await);
    assert!(message.starts_with("SystemExit: 3"), "{message}");
    // And ending the interpreter ends that run only.
    for (code, status) in [(4, 1), (0, 0)] {
        match run_py(&host, &format!("import os\nos._exit({code})")).await {
            Err(ToolError::Sandbox {
                fault: SandboxFault::Exited(s),
                ..
            }) => assert_eq!(s, status),
            other => panic!("expected an exit, got {other:?}"),
        }
    }
    assert_eq!(dual(run_py(&host, "1 + 1").await.unwrap()).0, "result: 2");
}

#[tokio::test]
async fn b7_python_an_infinite_loop_is_stopped_at_its_deadline() {
    // The configured timeout stops the loop.
    let host = host_with(python(|c| c.timeout = Duration::from_millis(300))).await;
    match run_py(&host, "while True:\n    pass").await {
        Err(ToolError::Timeout { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    // And after a loop stopped at its 300 ms, the interpreter still serves:
    // the next snippet runs under the default timeout, not that one.
    let host = host_with(python(|_| ())).await;
    match run_within(&host, "python", "while True:\n    pass", RUNAWAY_DEADLINE).await {
        Err(ToolError::Timeout { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(dual(run_py(&host, "1 + 1").await.unwrap()).0, "result: 2");
}

#[tokio::test]
async fn b7_python_a_memory_blow_up_hits_the_sandbox_limit() {
    let host = host_with(python(|_| ())).await;
    // Whole buffers, and small objects one by one.
    for grow in [
        "keep = []\nwhile True:\n    keep.append(bytearray(1 << 20))",
        "keep = []\nwhile True:\n    keep.append(list(range(len(keep), len(keep) + 100000)))",
    ] {
        assert_memory_limit(run_py(&host, grow).await, 64);
    }
    assert_eq!(
        dual(run_py(&host, "len([1, 2, 3])").await.unwrap()).0,
        "result: 3"
    );
}

#[tokio::test]
async fn b7_python_snippets_have_no_filesystem_network_or_environment() {
    let code = SandboxedCode::load(sandbox(), python(|_| ()))
        .await
        .unwrap();
    let plugin = code.plugin(Language::Python).await.unwrap().unwrap();
    assert!(plugin.policy().dirs.is_empty());
    assert!(plugin.policy().net.is_deny_all());
    assert!(plugin.policy().env.is_empty());
    let host = host_with(python(|_| ())).await;
    let message = failure(run_py(&host, "open('/etc/passwd').read()").await);
    assert!(message.starts_with("FileNotFoundError: "), "{message}");
    let message = failure(run_py(&host, "import os\nos.listdir('/')").await);
    assert!(message.starts_with("FileNotFoundError: "), "{message}");
    for module in ["socket", "subprocess", "urllib.request", "http.client"] {
        let message = failure(run_py(&host, &format!("import {module}")).await);
        assert!(
            message.starts_with("ModuleNotFoundError: No module named "),
            "{module}: {message}"
        );
    }
    assert_eq!(
        dual(run_py(&host, "import os\ndict(os.environ)").await.unwrap()).0,
        "result: {}"
    );
    // Nothing survives from one run to the next.
    dual(
        run_py(&host, "import json\njson.leak = 'secret'")
            .await
            .unwrap(),
    );
    assert_eq!(
        dual(
            run_py(&host, "import json\nhasattr(json, 'leak')")
                .await
                .unwrap()
        )
        .0,
        "result: False"
    );
}

/// Records each request and answers like a remote runner would.
#[derive(Default)]
struct RemoteRunner(Mutex<Vec<CodeRequest>>);

#[async_trait]
impl CodeOps for RemoteRunner {
    fn languages(&self) -> Vec<Language> {
        vec![Language::JavaScript]
    }

    async fn run(&self, request: CodeRequest) -> Result<CodeResult, ToolError> {
        self.0.lock().unwrap().push(request);
        Ok(CodeResult {
            summary: "result: \"remote\"".into(),
            transcript: "ran remotely\n=> \"remote\"".into(),
        })
    }
}

#[tokio::test]
async fn b2_run_code_can_be_delegated() {
    let runner = Arc::new(RemoteRunner::default());
    let dir = tempfile::tempdir().unwrap();
    let config = BuiltinConfig::new(dir.path())
        .enable(BuiltinTool::RunCode)
        .code_ops(runner.clone());
    let host = ToolHost::builder().validate_arguments(true).build();
    host.register_extension(Arc::new(BuiltinTools::new(config).unwrap()))
        .await
        .unwrap();
    let out = run(&host, "6 * 7").await.unwrap();
    assert_eq!(
        out,
        ToolOutput::dual("result: \"remote\"", "ran remotely\n=> \"remote\"")
    );
    let seen = runner.0.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].language, seen[0].code.as_str()),
        (Language::JavaScript, "6 * 7")
    );
}

/// The error building a host from configuration `text` in `dir`.
async fn refusal(text: &str, dir: &std::path::Path) -> toolhost::config::ConfigError {
    let config = Config::parse(text, dir).unwrap();
    config.build_host().await.err().expect("a load error")
}

#[tokio::test]
async fn b7_the_builtin_table_loads_the_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[host]\ncache_dir = {cache:?}\n\n[builtin]\nworkdir = \".\"\ntools = [\"run_code\"]\n\
         run_code_wasm = {wasm:?}\nrun_code_memory_mb = 32\nrun_code_timeout_ms = 30000\n",
        cache = env!("CARGO_MANIFEST_DIR").to_owned() + "/../target/test-code-cache",
        wasm = wasm("run_js").display().to_string(),
    );
    let config = Config::parse(&text, dir.path()).unwrap();
    let BuiltHost {
        host,
        sandbox: _sandbox,
        ..
    } = config.build_host().await.unwrap();
    assert_eq!(host.tool_names(), ["run_code"]);
    let (for_llm, _) = dual(run(&host, "JSON.stringify({sum: 2 + 3})").await.unwrap());
    assert_eq!(for_llm, "result: \"{\\\"sum\\\":5}\"");
    // A component that is not the interpreter is refused at load, by key.
    let text = text.replace("run_js.wasm", "calc.wasm");
    let err = refusal(&text, dir.path()).await;
    assert_eq!(err.key(), "builtin.run_code_wasm");
    let said = report(&err);
    assert!(
        said.ends_with("offers no `run_js` tool: it is not the javascript interpreter"),
        "{said}"
    );
    // The Python interpreter has its own key, and errors name it.
    let text = format!(
        "{text}run_code_python_wasm = {py:?}\n",
        py = wasm("calc").display().to_string()
    )
    .replace(
        "calc.wasm\"\nrun_code_memory",
        "run_js.wasm\"\nrun_code_memory",
    );
    let err = refusal(&text, dir.path()).await;
    assert_eq!(err.key(), "builtin.run_code_python_wasm");
    let said = report(&err);
    assert!(
        said.ends_with("offers no `run_py` tool: it is not the python interpreter"),
        "{said}"
    );
    let text = text.replace("calc.wasm", "run_py.wasm");
    let BuiltHost {
        host,
        sandbox: _sandbox,
        ..
    } = Config::parse(&text, dir.path())
        .unwrap()
        .build_host()
        .await
        .unwrap();
    assert_eq!(dual(run_py(&host, "2 + 3").await.unwrap()).0, "result: 5");
}

#[tokio::test]
async fn b7_runs_are_isolated_from_each_other() {
    let host = host_with(interpreter(|_| ())).await;
    dual(run(&host, "globalThis.leak = 'secret'; 1").await.unwrap());
    let (for_llm, _) = dual(run(&host, "typeof leak").await.unwrap());
    assert_eq!(for_llm, "result: \"undefined\"");
    let calls: Vec<Value> = (0..4)
        .map(|i| json!({"language": "javascript", "code": format!("{i} * 10")}))
        .collect();
    let results = run_all(&host, calls).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(dual(r.unwrap()).0, format!("result: {}", i * 10));
    }
}

async fn run_all(host: &ToolHost, calls: Vec<Value>) -> Vec<Result<ToolOutput, ToolError>> {
    let mut handles = Vec::new();
    for args in calls {
        let host = host.clone();
        handles.push(tokio::spawn(async move {
            host.invoke_tool(
                CallContext::new(),
                "run_code",
                Arguments::from_value(&args).unwrap(),
            )
            .await
        }));
    }
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
