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
    new_with(common::toolhost(), dir, name, lang)
}

/// `toolhost new` run by `toolhost` (a `Command` of the binary) in `dir`.
fn new_with(mut toolhost: Command, dir: &Path, name: &str, lang: &str) -> String {
    let config = dir.join("toolhost.toml");
    toolhost
        .current_dir(dir)
        .args(["new", name, "--lang", lang, "--config"])
        .arg(&config);
    // A binary just copied can be "busy" for a moment: a child another test
    // thread forked meanwhile holds the copy's descriptor until it execs.
    let mut tries = 0;
    let out = loop {
        match toolhost.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => break other.unwrap(),
        }
    };
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

/// Every file under `dir`, with its text.
/// The project reads the `prefix` setting its table holds, through
/// `wasi:config/store` (rule O1).
fn assert_reads_its_setting(config: &Path, tool: &str) {
    let text = std::fs::read_to_string(config).unwrap();
    assert!(text.contains("prefix = \"\""), "{text}");
    std::fs::write(config, text.replace("prefix = \"\"", "prefix = \"> \"")).unwrap();
    let (ok, stdout, stderr) = call(config, tool, r#"{"text": "hello"}"#);
    assert!(ok && stdout == "> hello\n", "{stdout}{stderr}");
    std::fs::write(config, text).unwrap();
}

fn files(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
    out
}

#[test]
fn a_rust_project_made_by_a_binary_installed_anywhere_builds_and_is_called() {
    // The binary as `cargo install` leaves it: a copy, elsewhere, run from
    // a directory that is not the repository's.
    let installed = tempfile::tempdir().unwrap();
    let binary = installed.path().join("toolhost");
    std::fs::copy(env!("CARGO_BIN_EXE_toolhost"), &binary).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut toolhost = Command::new(&binary);
    toolhost
        .env_remove("RUST_LOG")
        .env_remove("CARGO_MANIFEST_DIR");
    let printed = new_with(toolhost, dir.path(), "word-count", "rust");
    assert!(
        printed.contains("cargo build --release --target wasm32-wasip2"),
        "{printed}"
    );
    let project = dir.path().join("word-count");
    // Nothing the project holds leads back into the repository: the SDK
    // and the interfaces are written into it.
    let repository = std::fs::canonicalize(root()).unwrap();
    let written = files(&project);
    for (path, text) in &written {
        assert!(
            !text.contains(repository.to_str().unwrap())
                && !text.contains(root().to_str().unwrap()),
            "{} points into the repository",
            path.display()
        );
    }
    let manifest: toml::Table = std::fs::read_to_string(project.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        manifest["dependencies"]["toolhost-sdk"]["path"].as_str(),
        Some("sdk")
    );
    assert_eq!(
        std::fs::read_to_string(project.join("wit/plugin.wit")).unwrap(),
        std::fs::read_to_string(root().join("wit/plugin.wit")).unwrap()
    );
    // Cargo sees the SDK in the project, as its own package.
    let out = Command::new("cargo")
        .args(["metadata", "--offline", "--format-version", "1"])
        .current_dir(&project)
        .env_remove("CARGO_MANIFEST_DIR")
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let metadata: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let sdk = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "toolhost-sdk")
        .unwrap();
    let sdk_manifest = std::fs::canonicalize(project.join("sdk/Cargo.toml")).unwrap();
    assert_eq!(sdk["manifest_path"].as_str(), sdk_manifest.to_str());
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
        printed.contains(
            "componentize-py -d wit -w tool-plugin-with-settings componentize app -o py_echo.wasm"
        ),
        "{printed}"
    );
    // A slip an author makes: returning the text itself rather than a
    // `types.ToolOutput_Text`.
    let app = dir.path().join("py-echo/app.py");
    let text = std::fs::read_to_string(&app).unwrap();
    let slip = "        if text == \"slip\":\n            return text\n";
    let at = text.find("        # A setting, read through").unwrap();
    std::fs::write(&app, format!("{}{slip}{}", &text[..at], &text[at..])).unwrap();
    build(
        &dir.path().join("py-echo"),
        Command::new("python3").args([
            "-c",
            "import sys, componentize_py; sys.argv[0] = 'componentize-py'; sys.exit(componentize_py.script())",
            "-d", "wit", "-w", "tool-plugin-with-settings", "componentize", "app", "-o", "py_echo.wasm",
        ]),
    );
    let config = dir.path().join("toolhost.toml");
    check_calls(&config, "py_echo");
    assert_reads_its_setting(&config, "py_echo");
    // The wrong value is named, not the runtime's `unwrap`.
    let (ok, _, stderr) = call(&config, "py_echo", r#"{"text": "slip"}"#);
    assert!(!ok);
    assert!(
        stderr.starts_with("error: py_echo: plugin `py-echo` returned an invalid result: "),
        "{stderr}"
    );
    assert!(
        stderr.contains("a `str` where the interface takes one of a variant's cases"),
        "{stderr}"
    );
    assert!(!stderr.contains("unwrap"), "{stderr}");
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
    // A bug an author makes: a property that is not there.
    let source = project.join("plugin.js");
    let text = std::fs::read_to_string(&source).unwrap();
    let bug = "  if (text === \"bug\") {\n    return { tag: \"text\", val: text.nothing.toUpperCase() };\n  }\n";
    let at = text.find("  // A setting, read through").unwrap();
    let line = text[..at].lines().count() + 2;
    std::fs::write(&source, format!("{}{bug}{}", &text[..at], &text[at..])).unwrap();
    build(
        &project,
        Command::new(root().join("plugins/js-slug/node_modules/.bin/componentize-js"))
            .args(&args[1..]),
    );
    let config = dir.path().join("toolhost.toml");
    check_calls(&config, "js_echo");
    assert_reads_its_setting(&config, "js_echo");
    // The author's error leads, with its line in plugin.js.
    let (ok, _, stderr) = call(&config, "js_echo", r#"{"text": "bug"}"#);
    assert!(!ok);
    let expected = format!(
        "error: js_echo: plugin `js-echo` panicked: TypeError: can't access property \"toUpperCase\", text.nothing is undefined (at plugin.js:{line}:"
    );
    assert!(stderr.starts_with(&expected), "{expected}\n{stderr}");
    assert!(!stderr.contains("initializer.js"), "{stderr}");
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
