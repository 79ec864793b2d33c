//! What a client of MCP protocol 2026-07-28 gets from `toolhost serve`, on
//! stdio, HTTP with sessions and stateless HTTP (rules N9–N11): the official
//! Python SDK's client (`tests/fixtures/mcp_modern_client.py`) finds the
//! server with `server/discover`, calls, lists and listens; the requests it
//! would never send (headers that disagree with the body, a protocol
//! version nobody speaks) go out raw, beside its connection.

mod common;

use common::{HttpServe, TestConfig, fixture, modern_python_client, require_python_sdk};
use serde_json::{Value, json};

/// Every protocol version `toolhost serve` speaks, oldest first.
const SUPPORTED: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The template and runaway plugins, and the fixture MCP server as `py.*`
/// (whose `add_tool` changes the tool list of a running server).
fn config() -> TestConfig {
    require_python_sdk();
    TestConfig::new(&format!(
        "\n[mcp.py]\ncommand = [\"python3\", \"{}\"]\n",
        fixture("mcp_server.py").display()
    ))
}

/// How the server names itself.
fn server_info() -> Value {
    json!({"name": "toolhost", "version": env!("CARGO_PKG_VERSION")})
}

/// Runs `steps` with the 2026-07-28 client against `toolhost serve` on each
/// transport, the HTTP ones with `http_args` besides; `check` gets the
/// transport's name and the client's report.
fn on_every_transport(steps: Value, http_args: &[&str], check: impl Fn(&str, &Value)) {
    let config = config();
    let plan = |transport: Value| {
        let mut plan = json!({"steps": steps, "timeout": 120});
        plan.as_object_mut()
            .unwrap()
            .extend(transport.as_object().unwrap().clone());
        modern_python_client(&plan)
    };
    let stdio =
        json!({"stdio": [env!("CARGO_BIN_EXE_toolhost"), "serve", "--config", config.path()]});
    check("stdio", &plan(stdio));
    for (name, mode) in [("http", &[][..]), ("stateless http", &["--stateless"][..])] {
        let args: Vec<&str> = mode.iter().chain(http_args).copied().collect();
        let serve = HttpServe::start(&config, &args);
        check(name, &plan(json!({"http": serve.url()})));
    }
}

/// The `_meta` a 2026-07-28 request carries, naming `version`.
fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    })
}

/// A raw step: request `id` calling `method` with `params` (and `_meta`
/// naming `version`), sent with `headers`.
fn raw(id: &str, method: &str, mut params: Value, version: &str, headers: Value) -> Value {
    params["_meta"] = meta(version);
    json!({"raw": {
        "body": {"jsonrpc": "2.0", "id": id, "method": method, "params": params},
        "headers": headers,
    }})
}

/// The names of the tools a `list` step saw.
fn tool_names(step: &Value) -> Vec<&str> {
    step["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {step}"))
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

#[test]
fn n9_a_2026_client_discovers_the_server_and_each_result_names_it_on_every_transport() {
    let steps = json!([
        {"list": true},
        {"call": "echo", "args": {"text": "modern"}},
    ]);
    on_every_transport(steps, &[], |transport, report| {
        assert_eq!(
            report["protocol_version"], "2026-07-28",
            "{transport}: {report}"
        );
        // What `server/discover` told the client.
        let discover = &report["discover"];
        assert_eq!(
            discover["supported_versions"],
            json!(SUPPORTED),
            "{transport}"
        );
        assert_eq!(
            discover["capabilities"]["tools"],
            json!({"listChanged": true}),
            "{transport}: {discover}"
        );
        assert_eq!(discover["server_info"], server_info(), "{transport}");
        // Each result names the server that answered it.
        let steps = report["steps"].as_array().unwrap();
        let names = tool_names(&steps[0]);
        assert!(
            names.contains(&"echo") && names.contains(&"py.add_tool"),
            "{transport}: {names:?}"
        );
        assert_eq!(steps[0]["server_info"], server_info(), "{transport}");
        assert_eq!(
            steps[1],
            json!({"is_error": false, "text": "modern"}),
            "{transport}"
        );
        assert_eq!(report["server_info"], server_info(), "{transport}");
    });
}

#[test]
fn n9_a_2026_client_listening_hears_the_tool_list_change_on_every_transport() {
    let steps = json!([
        {"listen": 60, "then": [{"call": "py.add_tool", "args": {"name": "extra"}}]},
        {"list": true},
        {"call": "py.extra"},
    ]);
    on_every_transport(steps, &[], |transport, report| {
        let steps = report["steps"].as_array().unwrap();
        let listened = &steps[0];
        assert_eq!(
            listened["honored"],
            json!({"toolsListChanged": true}),
            "{transport}: {report}"
        );
        assert_eq!(
            listened["then"],
            json!([{"is_error": false, "text": "added extra"}]),
            "{transport}"
        );
        assert_eq!(
            listened["events"],
            json!(["tools_list_changed"]),
            "{transport}: {report}"
        );
        assert!(
            tool_names(&steps[1]).contains(&"py.extra"),
            "{transport}: {}",
            steps[1]
        );
        assert_eq!(
            steps[2],
            json!({"is_error": false, "text": "I am extra"}),
            "{transport}"
        );
    });
}

#[test]
fn n9_a_2026_client_opens_no_session_so_the_session_cap_does_not_hold_it_up() {
    let initialize = json!({"raw": {"body": {
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}},
    }}});
    let config = config();
    let serve = HttpServe::start(&config, &["--max-sessions", "1"]);
    let report = modern_python_client(&json!({
        "http": serve.url(),
        "timeout": 120,
        "steps": [
            // A 2025-era client takes the one session there is...
            initialize,
            // ...and the 2026-07-28 client is served all the same.
            {"call": "echo", "args": {"text": "no session needed"}},
            {"list": true},
            {"listen": 60, "then": [{"call": "py.add_tool", "args": {"name": "extra"}}]},
            initialize,
        ],
    }));
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps[0]["status"], 200, "{report}");
    assert_eq!(
        steps[1],
        json!({"is_error": false, "text": "no session needed"}),
        "{report}"
    );
    assert!(tool_names(&steps[2]).contains(&"echo"), "{report}");
    assert_eq!(
        steps[3]["events"],
        json!(["tools_list_changed"]),
        "{report}"
    );
    // The cap still holds for what would open a session.
    assert_eq!(steps[4]["status"], 503, "{report}");
}

/// The error a raw step got: its HTTP status and JSON-RPC error, checked to
/// answer request `id`.
fn refusal<'a>(step: &'a Value, id: &str) -> (&'a Value, &'a Value) {
    let answer = &step["json"];
    assert_eq!(answer["id"], id, "{step}");
    (&step["status"], &answer["error"])
}

#[test]
fn n10_http_refuses_a_2026_request_whose_headers_disagree_with_its_body() {
    let v = "2026-07-28";
    let echo = json!({"name": "echo", "arguments": {"text": "hi"}});
    // `add_tool` would change the tool list if it ran.
    let smuggle = json!({"name": "py.add_tool", "arguments": {"name": "smuggled"}});
    let cases = [
        (
            raw(
                "no-method",
                "tools/list",
                json!({}),
                v,
                json!({"MCP-Protocol-Version": v}),
            ),
            "missing required Mcp-Method header",
        ),
        (
            raw(
                "other-method",
                "tools/call",
                echo.clone(),
                v,
                json!({"MCP-Protocol-Version": v, "Mcp-Method": "tools/list", "Mcp-Name": "echo"}),
            ),
            "Mcp-Method header `tools/list` does not match body method `tools/call`",
        ),
        (
            raw(
                "no-name",
                "tools/call",
                smuggle.clone(),
                v,
                json!({"MCP-Protocol-Version": v, "Mcp-Method": "tools/call"}),
            ),
            "missing required Mcp-Name header for `tools/call`",
        ),
        (
            raw(
                "other-name",
                "tools/call",
                smuggle,
                v,
                json!({"MCP-Protocol-Version": v, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}),
            ),
            "Mcp-Name header `echo` does not match body value `py.add_tool`",
        ),
        (
            raw(
                "no-version",
                "tools/list",
                json!({}),
                v,
                json!({"Mcp-Method": "tools/list"}),
            ),
            "request _meta protocolVersion requires MCP-Protocol-Version header",
        ),
        (
            raw(
                "other-version",
                "tools/list",
                json!({}),
                v,
                json!({"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}),
            ),
            "MCP-Protocol-Version header (2025-11-25) does not match request _meta protocolVersion (2026-07-28)",
        ),
    ];
    let mut steps: Vec<Value> = cases.iter().map(|(step, _)| step.clone()).collect();
    // The same request with its headers right is served.
    steps.push(raw(
        "right",
        "tools/call",
        echo,
        v,
        json!({"MCP-Protocol-Version": v, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}),
    ));
    steps.push(json!({"list": true}));
    let config = config();
    for mode in [&[][..], &["--stateless"][..]] {
        let serve = HttpServe::start(&config, mode);
        let report = modern_python_client(&json!({
            "http": serve.url(), "timeout": 120, "steps": steps,
        }));
        let seen = report["steps"].as_array().unwrap();
        for ((step, message), seen) in cases.iter().zip(seen) {
            let id = step["raw"]["body"]["id"].as_str().unwrap();
            let (status, error) = refusal(seen, id);
            assert_eq!(status, 400, "{mode:?} {id}: {seen}");
            assert_eq!(
                *error,
                json!({"code": -32020, "message": message}),
                "{mode:?} {id}"
            );
        }
        let right = &seen[cases.len()];
        assert_eq!(right["status"], 200, "{mode:?}: {right}");
        assert_eq!(
            right["json"]["result"]["content"][0]["text"], "hi",
            "{mode:?}: {right}"
        );
        // Nothing ran for a refused request.
        let names = tool_names(&seen[cases.len() + 1]);
        assert!(!names.contains(&"py.smuggled"), "{mode:?}: {names:?}");
    }
}

#[test]
fn n11_a_protocol_version_the_server_does_not_speak_is_refused_naming_those_it_does() {
    let unsupported = [
        ("future", "server/discover", "2099-01-01"),
        ("future-list", "tools/list", "2099-01-01"),
        ("malformed", "server/discover", "26-7-28"),
        ("malformed-list", "tools/list", "not a version"),
    ];
    let mut steps: Vec<Value> = unsupported
        .iter()
        .map(|(id, method, version)| {
            let headers = json!({"MCP-Protocol-Version": version, "Mcp-Method": method});
            raw(id, method, json!({}), version, headers)
        })
        .collect();
    // A version that is not even a string is not one.
    steps.push(json!({"raw": {
        "body": {"jsonrpc": "2.0", "id": "not-a-string", "method": "tools/list",
                 "params": {"_meta": {
                     "io.modelcontextprotocol/protocolVersion": 20260728,
                     "io.modelcontextprotocol/clientCapabilities": {},
                 }}},
        "headers": {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
    }}));
    // The handshake of the earlier protocol answers with a version it has.
    steps.push(json!({"raw": {"body": {
        "jsonrpc": "2.0", "id": "initialize", "method": "initialize",
        "params": {"protocolVersion": "2099-01-01", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}},
    }}}));
    on_every_transport(json!(steps), &[], |transport, report| {
        let seen = report["steps"].as_array().unwrap();
        for ((id, _, version), seen) in unsupported.iter().zip(seen) {
            let (status, error) = refusal(seen, id);
            let expected = if transport == "stdio" {
                json!(null)
            } else {
                json!(400)
            };
            assert_eq!(*status, expected, "{transport} {id}: {seen}");
            assert_eq!(
                *error,
                json!({
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"requested": version, "supported": SUPPORTED},
                }),
                "{transport} {id}"
            );
        }
        let (status, error) = refusal(&seen[unsupported.len()], "not-a-string");
        let expected = if transport == "stdio" {
            json!(null)
        } else {
            json!(400)
        };
        assert_eq!(*status, expected, "{transport}");
        assert_eq!(error["code"], -32602, "{transport}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.ends_with(
                "request _meta is missing or has malformed required fields: \
                 io.modelcontextprotocol/protocolVersion"
            ),
            "{transport}: {message}"
        );
        let initialized = &seen[unsupported.len() + 1]["json"];
        assert_eq!(
            initialized["result"]["protocolVersion"], "2025-11-25",
            "{transport}: {initialized}"
        );
    });
}

#[test]
fn n11_over_http_a_version_header_nobody_speaks_is_refused_with_400() {
    // A request in the earlier form (no version in `_meta`) names its
    // version in the header alone.
    let config = config();
    for mode in [&[][..], &["--stateless"][..]] {
        let serve = HttpServe::start(&config, mode);
        let report = modern_python_client(&json!({
            "http": serve.url(), "timeout": 120,
            "steps": [{"raw": {
                "body": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                "headers": {"MCP-Protocol-Version": "2099-01-01"},
            }}],
        }));
        let seen = &report["steps"][0];
        assert_eq!(seen["status"], 400, "{mode:?}: {seen}");
        assert_eq!(
            seen["text"], "Bad Request: Unsupported MCP-Protocol-Version: 2099-01-01",
            "{mode:?}"
        );
    }
}

/// The raw 2026-07-28 `tools/call` of `tool` with `arguments`, as request
/// `id`, its headers right.
fn call_2026(id: &str, tool: &str, arguments: Value) -> Value {
    let v = "2026-07-28";
    raw(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        v,
        json!({"MCP-Protocol-Version": v, "Mcp-Method": "tools/call", "Mcp-Name": tool}),
    )
}

#[test]
fn h1_with_json_response_a_call_whose_answer_is_its_only_message_gets_one_json_body() {
    let config = TestConfig::new(&format!(
        "\n[plugins.decider]\nwasm = \"{}\"\n",
        common::wasm("decider").display()
    ));
    let mut progress = call_2026("progress", "count_up", json!({"n": 2}));
    progress["raw"]["body"]["params"]["_meta"]["progressToken"] = json!("p1");
    // A 2025-era request, served without a session by a stateless server.
    let legacy = json!({"raw": {
        "body": {"jsonrpc": "2.0", "id": "legacy", "method": "tools/call",
                 "params": {"name": "echo", "arguments": {"text": "old"}}},
        "headers": {"MCP-Protocol-Version": "2025-11-25"},
    }});
    let sdk = [
        json!({"call": "echo", "args": {"text": "sdk"}}),
        json!({"call": "count_up", "args": {"n": 3}}),
        json!({"list": true}),
    ];
    for (mode, as_json) in [
        (&["--json-response"][..], true),
        (&["--stateless", "--json-response"][..], true),
        (&["--stateless"][..], false),
        (&[][..], false),
    ] {
        let stateless = mode.contains(&"--stateless");
        let mut steps = vec![
            call_2026("echo", "echo", json!({"text": "hi"})),
            progress.clone(),
        ];
        if stateless {
            steps.push(legacy.clone());
        }
        steps.extend(sdk.iter().cloned());
        let serve = HttpServe::start(&config, mode);
        let report = modern_python_client(&json!({
            "http": serve.url(), "timeout": 120, "steps": steps,
        }));
        assert_eq!(
            report["protocol_version"], "2026-07-28",
            "{mode:?}: {report}"
        );
        let seen = report["steps"].as_array().unwrap();
        let mut answered_alone = vec![(&seen[0], "hi")];
        if stateless {
            answered_alone.push((&seen[2], "old"));
        }
        for (step, text) in answered_alone {
            assert_eq!(step["status"], 200, "{mode:?}: {step}");
            assert_eq!(
                step["json"]["result"]["content"][0]["text"], text,
                "{mode:?}: {step}"
            );
            let content_type = step["content_type"].as_str().unwrap();
            let expected = if as_json {
                "application/json"
            } else {
                "text/event-stream"
            };
            assert!(content_type.starts_with(expected), "{mode:?}: {step}");
        }
        // Progress before the answer keeps the stream, in order.
        let streamed = &seen[1];
        assert!(
            streamed["content_type"]
                .as_str()
                .unwrap()
                .starts_with("text/event-stream"),
            "{mode:?}: {streamed}"
        );
        assert_eq!(
            streamed["stream"],
            json!(["notifications/progress", "notifications/progress", "answer"]),
            "{mode:?}: {streamed}"
        );
        assert_eq!(
            streamed["json"]["result"]["content"][0]["text"], "counted to 2",
            "{mode:?}"
        );
        // The official client reads either.
        let sdk_seen = &seen[seen.len() - 3..];
        assert_eq!(
            sdk_seen[0],
            json!({"is_error": false, "text": "sdk"}),
            "{mode:?}"
        );
        assert_eq!(
            sdk_seen[1],
            json!({"is_error": false, "text": "counted to 3"}),
            "{mode:?}"
        );
        let names = tool_names(&sdk_seen[2]);
        assert!(
            names.contains(&"echo") && names.contains(&"count_up"),
            "{mode:?}: {names:?}"
        );
    }
}
