//! `toolhost new`: a project in each language, made in a temporary
//! directory outside this repository, built with the command it documents
//! (the Rust one with cargo; the Python and JavaScript ones with the
//! componentizers `make setup` installs), added to a `toolhost.toml`, and
//! called through the host.

mod common;

use std::path::Path;
use std::process::Command;

use common::{root, run, texts};

/// Runs `command` in `dir`, failing with its output if it fails.
fn build(dir: &Path, command: &mut Command) {
    let out = command.current_dir(dir).output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(
        out.status.success(),
        "{command:?} failed:\n{stdout}\n{stderr}"
    );
}

/// `toolhost call TOOL ARGS` with `config`: (success, stdout, stderr).
fn call(config: &Path, tool: &str, args: &str) -> (bool, String, String) {
    let out = run(&["call", "--config", config.to_str().unwrap(), tool, args]);
    let (stdout, stderr) = texts(&out);
    (out.status.success(), stdout, stderr)
}

fn new(dir: &Path, name: &str, lang: &str) -> String {
    let config = dir.join("toolhost.toml");
    let out = common::toolhost()
        .current_dir(dir)
        .args(["new", name, "--lang", lang, "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("Added [plugins.{name}] to")),
        "{stdout}"
    );
    stdout
}

fn check_calls(config: &Path, tool: &str) {
    assert_eq!(
        call(config, tool, r#"{"text": "hello"}"#),
        (true, "hello\n".into(), String::new())
    );
    let (ok, _, stderr) = call(config, tool, r#"{"text": ""}"#);
    assert!(!ok);
    assert_eq!(
        stderr,
        format!("error: {tool}: invalid arguments at `/text`: the text is empty\n")
    );
}

#[test]
fn a_rust_project_builds_outside_the_repository_and_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let printed = new(dir.path(), "word-count", "rust");
    assert!(
        printed.contains("cargo build --release --target wasm32-wasip2"),
        "{printed}"
    );
    let project = dir.path().join("word-count");
    // Its own target directory would build every dependency again; the
    // shared one is kept between runs. The wasm then goes where the table
    // says it is.
    let shared = root().join("target/new-plugins");
    build(
        &project,
        Command::new("cargo")
            .args(["build", "--release", "--target", "wasm32-wasip2"])
            .env("CARGO_TARGET_DIR", &shared)
            .env_remove("CARGO_MANIFEST_DIR"),
    );
    let out = project.join("target/wasm32-wasip2/release");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::copy(
        shared.join("wasm32-wasip2/release/word_count.wasm"),
        out.join("word_count.wasm"),
    )
    .unwrap();
    check_calls(&dir.path().join("toolhost.toml"), "word_count");
}

#[test]
fn a_python_project_builds_with_componentize_py_and_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let printed = new(dir.path(), "py-echo", "python");
    assert!(
        printed.contains("componentize-py -d wit -w tool-plugin componentize app -o py_echo.wasm"),
        "{printed}"
    );
    build(
        &dir.path().join("py-echo"),
        Command::new("python3").args([
            "-c",
            "import sys, componentize_py; sys.argv[0] = 'componentize-py'; sys.exit(componentize_py.script())",
            "-d", "wit", "-w", "tool-plugin", "componentize", "app", "-o", "py_echo.wasm",
        ]),
    );
    check_calls(&dir.path().join("toolhost.toml"), "py_echo");
}

#[test]
fn a_javascript_project_builds_with_componentize_js_and_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let printed = new(dir.path(), "js-echo", "javascript");
    assert!(
        printed.contains("npm install && npm run build"),
        "{printed}"
    );
    let project = dir.path().join("js-echo");
    // `npm run build` runs this script; ComponentizeJS comes from the copy
    // `make setup` installed rather than a download per test.
    let package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(project.join("package.json")).unwrap())
            .unwrap();
    let script = package["scripts"]["build"].as_str().unwrap();
    let args: Vec<&str> = script.split_whitespace().collect();
    assert_eq!(args[0], "componentize-js");
    build(
        &project,
        Command::new(root().join("plugins/js-slug/node_modules/.bin/componentize-js"))
            .args(&args[1..]),
    );
    check_calls(&dir.path().join("toolhost.toml"), "js_echo");
}

#[test]
fn new_refuses_a_bad_name_an_existing_directory_and_a_taken_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = common::toolhost()
        .current_dir(d)
        .args(["new", "Bad Name"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        texts(&out)
            .1
            .starts_with("error: `Bad Name` cannot name a plugin")
    );
    new(dir.path(), "twice", "python");
    let out = common::toolhost()
        .current_dir(d)
        .args(["new", "twice", "--lang", "python"])
        .output()
        .unwrap();
    assert!(texts(&out).1.contains("twice: already exists"), "{out:?}");
    let out = common::toolhost()
        .current_dir(d)
        .args([
            "new",
            "twice",
            "--dir",
            "elsewhere",
            "--config",
            "toolhost.toml",
        ])
        .output()
        .unwrap();
    assert!(
        texts(&out).1.contains("already has [plugins.twice]"),
        "{out:?}"
    );
    assert!(!dir.path().join("elsewhere").exists(), "nothing is written");
}
