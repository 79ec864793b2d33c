//! The `toolhost` command's subcommands, success and failure: output, exit
//! codes, and that every failure is one line naming what was wrong.

mod common;

use std::process::{Output, Stdio};

use common::{RUNAWAY_TIMEOUT_MS, TestConfig, root, run, texts, toolhost, wasm};
use serde_json::Value;

#[test]
fn inspect_describes_a_plugin() {
    let template = wasm("template");
    let out = run(&["inspect", template.to_str().unwrap()]);
    let (stdout, _) = texts(&out);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("world:   toolhost:plugin/tool-plugin@"),
        "{stdout}"
    );
    assert!(
        stdout.contains("echo — Returns the text it is given"),
        "{stdout}"
    );

    let out = run(&["inspect", template.to_str().unwrap(), "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["tools"][0]["name"], "echo");
    assert_eq!(doc["sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn inspect_fails_on_a_missing_or_broken_file() {
    let out = run(&["inspect", "/nonexistent/plugin.wasm"]);
    assert_eq!(out.status.code(), Some(1));
    let (stdout, stderr) = texts(&out);
    assert!(stdout.is_empty());
    assert!(
        stderr.starts_with("error: cannot read /nonexistent/plugin.wasm"),
        "{stderr}"
    );
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"not a component").unwrap();
    let out = run(&["inspect", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(texts(&out).1.starts_with("error: "), "{out:?}");
}

#[test]
fn check_prints_what_each_plugin_is_granted() {
    let config = TestConfig::new("");
    let out = run(&["check", "--config", config.path()]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with(&format!("{}: ok", config.path())),
        "{stdout}"
    );
    assert!(stdout.contains("plugin template ("), "{stdout}");
    assert!(stdout.contains("  tools: echo\n"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "limits: 64 MiB memory, {RUNAWAY_TIMEOUT_MS} ms per call"
        )),
        "{stdout}"
    );

    // The same, for programs.
    let out = run(&["check", "--config", config.path(), "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["host"]["validate_arguments"], true);
    let runaway = doc["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "runaway")
        .unwrap();
    assert!(
        runaway["tools"]
            .as_array()
            .unwrap()
            .contains(&"spin".into())
    );
    assert!(
        runaway["grants"].as_array().unwrap().iter().any(|g| g
            .as_str()
            .unwrap()
            .contains(&format!("{RUNAWAY_TIMEOUT_MS} ms per call"))),
        "{runaway}"
    );
}

#[test]
fn check_fails_naming_the_key() {
    let config = TestConfig::new("\n[plugins.extra]\nwasm = \"missing.wasm\"\n");
    let out = run(&["check", "--config", config.path()]);
    assert_eq!(out.status.code(), Some(1));
    let (stdout, stderr) = texts(&out);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.starts_with("error: plugins.extra.wasm: "),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    let out = run(&["check", "--config", "/nonexistent/toolhost.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        texts(&out)
            .1
            .starts_with("error: /nonexistent/toolhost.toml: there is no configuration file here"),
        "{out:?}"
    );
}

#[test]
fn call_prints_the_model_facing_text() {
    let config = TestConfig::new("");
    let out = run(&[
        "call",
        "--config",
        config.path(),
        "echo",
        r#"{"text": "hi"}"#,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(texts(&out).0, "hi\n");

    let out = run(&[
        "call",
        "--config",
        config.path(),
        "echo",
        r#"{"text": "hi"}"#,
        "--json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["ok"], serde_json::json!({"type": "text", "text": "hi"}));
}

#[test]
fn call_failures_exit_1_with_the_reason() {
    let config = TestConfig::new("");
    let cases = [
        (vec!["nope"], "error: nope: unknown tool `nope`"),
        (
            vec!["echo", r#"{"text": 5}"#],
            "error: echo: invalid arguments at `/text`",
        ),
        (
            vec!["echo", "{broken"],
            "error: echo: invalid arguments: arguments are not valid JSON",
        ),
        (
            vec!["spin"],
            "error: spin: plugin `runaway` timed out after ",
        ),
    ];
    for (args, expected) in cases {
        let mut all = vec!["call", "--config", config.path()];
        all.extend(args.iter().copied());
        let out = run(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let (stdout, stderr) = texts(&out);
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        // Quiet by default: the failure is one line, without log records
        // before it or colour codes in it (stderr is not a terminal here).
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains('\x1b'), "{args:?}: {stderr}");
    }
    let out = run(&["call", "--config", config.path(), "nope", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "unknown_tool");
}

#[test]
fn call_suggests_the_closest_tool_name_for_a_slip() {
    let config = TestConfig::new("");
    let out = run(&["call", "--config", config.path(), "ecko"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        texts(&out).1,
        "error: ecko: unknown tool `ecko`; did you mean `echo`?\n"
    );
    // Nothing close: no suggestion.
    let out = run(&["call", "--config", config.path(), "translate"]);
    assert_eq!(
        texts(&out).1,
        "error: translate: unknown tool `translate`\n"
    );
}

#[test]
fn call_of_a_plugins_name_lists_its_tools() {
    let config = TestConfig::new("");
    let out = run(&["call", "--config", config.path(), "template"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        texts(&out).1,
        "error: template: unknown tool `template`; `template` is a plugin, not a tool: call one of its tools, `echo`\n"
    );
    // A slip in a plugin's name, with no tool name close to it.
    let out = run(&["call", "--config", config.path(), "runawya"]);
    let stderr = texts(&out).1;
    assert!(
        stderr.starts_with("error: runawya: unknown tool `runawya`; `runaway` is a plugin, not a tool: call one of its tools, `"),
        "{stderr}"
    );
}

#[test]
fn a_missing_configuration_says_how_to_make_one() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("toolhost.toml");
    let missing_path = missing.to_str().unwrap();
    for args in [
        vec!["check", "--config", missing_path],
        vec!["call", "--config", missing_path, "echo"],
    ] {
        let command = args[0];
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{command}");
        let stderr = texts(&out).1;
        assert!(
            stderr.starts_with(&format!(
                "error: {}: there is no configuration file here",
                missing.display()
            )),
            "{command}: {stderr}"
        );
        assert!(stderr.contains("--config FILE"), "{command}: {stderr}");
    }
}

#[test]
fn inspect_refuses_what_is_not_wasm_in_one_line() {
    let readme = root().join("README.md");
    let out = run(&["inspect", readme.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let (stdout, stderr) = texts(&out);
    assert!(stdout.is_empty());
    assert_eq!(
        stderr,
        format!(
            "error: {} is not a WebAssembly component (it does not start with \\0asm)\n",
            readme.display()
        )
    );
}

#[test]
fn tools_lists_every_tool_with_where_it_comes_from_and_its_schemas() {
    common::require_python_sdk();
    let server = common::fixture("mcp_server.py");
    let config = TestConfig::new(&format!(
        "\n[builtin]\nworkdir = \".\"\ntools = [\"read_file\"]\n\n\
         [mcp.py]\ncommand = [\"python3\", \"{}\"]\nprefix = \"docs\"\n",
        server.display()
    ));
    let out = run(&["tools", "--config", config.path(), "--json"]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let tools: Value = serde_json::from_str(&stdout).unwrap();
    let find = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {stdout}"))
            .clone()
    };
    assert_eq!(find("echo")["from"], "plugin template");
    assert_eq!(find("spin")["from"], "plugin runaway");
    assert_eq!(find("read_file")["from"], "built in");
    let remote = find("docs.echo");
    assert_eq!(remote["from"], "mcp server py");
    assert_eq!(
        remote["parameters"]["required"],
        serde_json::json!(["text"])
    );
    assert_eq!(remote["output_schema"]["type"], "object");

    let out = run(&["tools", "--config", config.path()]);
    let text = texts(&out).0;
    assert!(text.contains("echo (plugin template) — "), "{text}");
    assert!(
        text.contains("docs.echo (mcp server py) — Returns the text it is given.\n  arguments: {"),
        "{text}"
    );
    assert!(text.contains("\n  result: {"), "{text}");
}

#[test]
fn completions_are_printed_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completions", shell]);
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{shell}: {stderr}");
        assert!(stdout.contains("toolhost"), "{shell}");
        assert!(
            stdout.contains("serve") && stdout.contains("stateless"),
            "{shell}"
        );
    }
    let out = run(&["completions", "cmd.exe"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(texts(&out).1.contains("invalid value 'cmd.exe'"), "{out:?}");
}

#[test]
fn serve_fails_before_serving_on_bad_input() {
    let config = TestConfig::new("");
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty-token");
    std::fs::write(&empty, "\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--config", "/nonexistent/toolhost.toml"],
            "error: /nonexistent/toolhost.toml: there is no configuration file here",
        ),
        (
            vec!["--config", config.path(), "--http", "localhost:80"],
            "error: --http localhost:80: expected HOST:PORT",
        ),
        (
            vec![
                "--config",
                config.path(),
                "--http",
                "0",
                "--token-file",
                "/nonexistent/token",
            ],
            "error: --token-file /nonexistent/token: ",
        ),
        (
            vec![
                "--config",
                config.path(),
                "--http",
                "0",
                "--token-file",
                empty.to_str().unwrap(),
            ],
            "the file is empty",
        ),
        (
            vec![
                "--config",
                config.path(),
                "--http",
                "0",
                "--allow-origin",
                "evil.example",
            ],
            "error: allowed origin `evil.example` needs an http or https scheme",
        ),
    ];
    for (args, expected) in cases {
        let mut all = vec!["serve"];
        all.extend(args.iter().copied());
        let out = run(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let (stdout, stderr) = texts(&out);
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // HTTP-only options without --http are a usage error (clap: exit 2).
    let out = run(&["serve", "--token-file", "t"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(texts(&out).1.contains("--http"), "{out:?}");
}

#[test]
fn c8_serve_refuses_a_reachable_address_without_a_token() {
    // The configuration does not exist: the refusal must come before it is
    // read, so nothing is ever bound (were it not refused, the run would
    // fail on the configuration instead, still without binding).
    let missing = "/nonexistent/toolhost.toml";
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let out = run(&["serve", "--config", missing, "--http", addr]);
        assert_eq!(out.status.code(), Some(1), "{addr}: {out:?}");
        let (stdout, stderr) = texts(&out);
        assert!(stdout.is_empty(), "{addr}: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{addr}: {stderr}");
        for needle in [
            format!("error: --http {addr}: refusing to serve"),
            "--token-file FILE".to_owned(),
            "--insecure-no-auth".to_owned(),
        ] {
            assert!(stderr.contains(&needle), "{addr}: {needle}: {stderr}");
        }
    }
    // Loopback, a token, or the explicit opt-out pass the check (and then
    // stop at the missing configuration).
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "Kq7vX2mP9sT4wB8nR3jL6yF1hZ5cD0gE\n").unwrap();
    let token = token.to_str().unwrap();
    for args in [
        vec!["--http", "127.0.0.1:0"],
        vec!["--http", "0.0.0.0:0", "--token-file", token],
        vec!["--http", "0.0.0.0:0", "--insecure-no-auth"],
    ] {
        let mut all = vec!["serve", "--config", missing];
        all.extend(args.iter().copied());
        let out = run(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let stderr = texts(&out).1;
        assert!(
            stderr.starts_with(
                "error: /nonexistent/toolhost.toml: there is no configuration file here"
            ),
            "{args:?}: {stderr}"
        );
    }
    // The opt-out and a token contradict each other; the opt-out alone is
    // an HTTP option.
    let out = run(&[
        "serve",
        "--http",
        "0.0.0.0:0",
        "--token-file",
        token,
        "--insecure-no-auth",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = run(&["serve", "--insecure-no-auth"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn c8_a_token_file_must_carry_128_bits() {
    // The refusal comes before the configuration is read, whatever the
    // address: a missing configuration is what a good token reaches.
    let missing = "/nonexistent/toolhost.toml";
    let dir = tempfile::tempdir().unwrap();
    let weak = [
        "x".to_owned(),
        "secret".to_owned(),
        "3f9a0c1e7b2d4c6a8e0f1a3b5c7d9e1".to_owned(), // 124 bits of hex
        "a".repeat(200),
        "ab".repeat(100),
    ];
    for (i, token) in weak.iter().enumerate() {
        let file = dir.path().join(format!("weak-{i}"));
        std::fs::write(&file, format!("{token}\n")).unwrap();
        let file = file.to_str().unwrap();
        for addr in ["0.0.0.0:0", "127.0.0.1:0"] {
            let out = run(&[
                "serve",
                "--config",
                missing,
                "--http",
                addr,
                "--token-file",
                file,
            ]);
            assert_eq!(out.status.code(), Some(1), "{token} {addr}: {out:?}");
            let stderr = texts(&out).1;
            for needle in [
                format!("error: --token-file {file}: the token is too weak"),
                "128".to_owned(),
                "openssl rand -base64 32".to_owned(),
            ] {
                assert!(
                    stderr.contains(&needle),
                    "{token} {addr}: {needle}: {stderr}"
                );
            }
        }
    }
    // Tokens as the message says to make them (32 random bytes, in base64
    // and in hex): accepted, and the run goes on to the configuration.
    for (i, token) in [
        "q2Xh0bQ3mK0v6d4JzT+8Yw1oVn3sR7uP5eC9aLf2gHk=",
        "ab8d1e5f21c9074b36e2fa9d40c7158e3b62da0f94c7e815d3a02b6f9e4c7d10",
    ]
    .iter()
    .enumerate()
    {
        let file = dir.path().join(format!("good-{i}"));
        std::fs::write(&file, format!("{token}\n")).unwrap();
        let out = run(&[
            "serve",
            "--config",
            missing,
            "--http",
            "0.0.0.0:0",
            "--token-file",
            file.to_str().unwrap(),
        ]);
        let stderr = texts(&out).1;
        assert!(
            stderr.starts_with(
                "error: /nonexistent/toolhost.toml: there is no configuration file here"
            ),
            "{token}: {stderr}"
        );
    }
}

#[test]
fn serve_help_explains_how_to_connect() {
    let out = run(&["serve", "--help"]);
    assert!(out.status.success());
    let text = texts(&out).0;
    for needle in [
        "--http",
        "--token-file",
        "--insecure-no-auth",
        "--allow-origin",
        "mcpServers",
        "stdio",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

#[test]
fn e3_check_starts_each_mcp_server_and_call_reaches_its_tools() {
    common::require_python_sdk();
    let server = common::fixture("mcp_server.py");
    let config = TestConfig::new(&format!(
        "\n[mcp.py]\ncommand = [\"python3\", \"{}\"]\nprefix = \"docs\"\n",
        server.display()
    ));
    let out = run(&["check", "--config", config.path()]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("\nmcp py (python3 {})\n", server.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("  tools: docs.add, docs.add_tool, docs.annotated,"),
        "{stdout}"
    );
    assert!(stdout.contains("runs outside the sandbox"), "{stdout}");

    let out = run(&[
        "call",
        "--config",
        config.path(),
        "docs.add",
        r#"{"a": 1, "b": 2}"#,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(texts(&out).0, "3\n");

    let broken = TestConfig::new("\n[mcp.gone]\ncommand = [\"/nonexistent/server\"]\n");
    let out = run(&["check", "--config", broken.path()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = texts(&out).1;
    assert!(
        stderr.starts_with("error: mcp.gone: extension `mcp.gone` failed to initialise: cannot start MCP server `gone`"),
        "{stderr}"
    );
}

/// Runs `toolhost ARGS` with stdout a pipe nobody reads (its read end is
/// closed before the command starts), as in `toolhost … | head` once `head`
/// has exited.
fn run_into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    toolhost()
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn broken_pipe_ends_every_command_quietly() {
    let config = TestConfig::new("");
    let template = wasm("template");
    let template = template.to_str().unwrap();
    let cases: [&[&str]; 7] = [
        &["--help"],
        &["inspect", "--help"],
        &["inspect", template],
        &["inspect", template, "--json"],
        &["check", "--config", config.path()],
        &[
            "call",
            "--config",
            config.path(),
            "echo",
            r#"{"text": "hi"}"#,
        ],
        &[
            "call",
            "--config",
            config.path(),
            "echo",
            r#"{"text": "hi"}"#,
            "--json",
        ],
    ];
    for args in cases {
        let out = run_into_closed_pipe(args);
        let stderr = texts(&out).1;
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        // Logs may come (a warning about the compiled-code cache), but no
        // error.
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
    // A call that fails still says why, on stderr, with its status.
    let out = run_into_closed_pipe(&["call", "--config", config.path(), "nope"]);
    let stderr = texts(&out).1;
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error: nope: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn x1_call_trace_shows_where_the_time_went_on_stderr_only() {
    let config = TestConfig::new("");
    let out = run(&[
        "call",
        "--config",
        config.path(),
        "--trace",
        "echo",
        r#"{"text": "hi"}"#,
    ]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    // The result alone on stdout, as without --trace.
    assert_eq!(stdout.trim(), "hi");
    assert!(stderr.starts_with("trace of `echo`:\n"), "{stderr}");
    for stage in ["queue_wait", "instantiate", "guest", "the rest", "total"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.trim_start().starts_with(stage) && l.contains(" ms")),
            "{stage} missing in {stderr}"
        );
    }
    assert!(stderr.contains("(template)"), "{stderr}");
    // A call that fails is traced too, before its error.
    let out = run(&["call", "--config", config.path(), "--trace", "spin"]);
    let (_, stderr) = texts(&out);
    assert!(!out.status.success());
    assert!(stderr.starts_with("trace of `spin`:\n"), "{stderr}");
    assert!(stderr.contains("guest"), "{stderr}");
    // The time it ran, at least its deadline (how much more depends on
    // the machine's load).
    // It reads `…ms` under a second, `….2s` from one on.
    let ran = stderr
        .trim_end()
        .rsplit_once("timed out after ")
        .and_then(|(_, after)| match after.strip_suffix("ms") {
            Some(ms) => ms.parse::<f64>().ok(),
            None => after
                .strip_suffix('s')
                .and_then(|s| s.parse::<f64>().ok())
                .map(|s| s * 1000.0),
        })
        .unwrap_or_else(|| panic!("no timeout at the end of {stderr}"));
    // Rounded to hundredths of a second.
    assert!(ran >= RUNAWAY_TIMEOUT_MS as f64 - 10.0, "{stderr}");
}
