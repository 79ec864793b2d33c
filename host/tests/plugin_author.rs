//! A plugin author's first hour with the command: what it shows while a
//! plugin compiles, and what `new --help`, a missing configuration,
//! `inspect` and `call --json` tell them.

mod common;

use std::path::Path;
use std::process::Command;

use common::{TestConfig, run, texts, wasm};
use serde_json::Value;

/// `toolhost ARGS` with stdout and stderr on a terminal (a pseudo-terminal
/// from `script`): what a person at a terminal sees, both streams mixed.
fn on_a_terminal(args: &[&str]) -> String {
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_toolhost"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &quoted.join(" "), "/dev/null"])
        .env_remove("RUST_LOG")
        .output()
        .expect("`script` (util-linux) runs a command on a pseudo-terminal");
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stdout
}

/// A configuration with the template plugin and a compiled-code cache of
/// its own, empty: the first command compiles.
fn cold_config(dir: &Path) -> String {
    let path = dir.join("toolhost.toml");
    std::fs::write(
        &path,
        format!(
            "[host]\ncache_dir = \"{}\"\n\n[plugins.template]\nwasm = \"{}\"\n",
            dir.join("cache").display(),
            wasm("template").display()
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_compile_shows_a_progress_line_on_a_terminal_and_nothing_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let config = cold_config(dir.path());
    let call = ["call", "--config", &config, "echo", r#"{"text": "hi"}"#];
    let seen = on_a_terminal(&call);
    let size = std::fs::metadata(wasm("template")).unwrap().len();
    let mb = format!(
        "{}.{} MB",
        (size + 50_000) / 1_000_000,
        (size + 50_000) / 100_000 % 10
    );
    assert!(
        seen.contains(&format!("compiling plugin `template` ({mb}) …")),
        "{seen:?}"
    );
    let done = format!("compiled plugin `template` ({mb}) in ");
    let at = seen.find(&done).unwrap_or_else(|| panic!("{seen:?}"));
    let took = seen[at + done.len()..].split(" s").next().unwrap();
    assert!(took.parse::<f64>().is_ok(), "{seen:?}");
    assert!(
        seen.trim_end().ends_with("hi"),
        "the result follows: {seen:?}"
    );
    // Compiled once: the next run reads the cache and shows nothing.
    let warm = on_a_terminal(&call);
    assert!(!warm.contains("compil"), "{warm:?}");
    assert_eq!(warm.trim(), "hi");
    // Not a terminal: nothing but the result, however cold the cache.
    let dir = tempfile::tempdir().unwrap();
    let config = cold_config(dir.path());
    let out = run(&["call", "--config", &config, "echo", r#"{"text": "hi"}"#]);
    assert_eq!(texts(&out), ("hi\n".into(), String::new()));
    // `inspect` compiles under the file's name.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("mine.wasm");
    std::fs::copy(wasm("template"), &copy).unwrap();
    let shown = Command::new("script")
        .args([
            "-q",
            "-e",
            "-c",
            &format!(
                "'{}' inspect '{}'",
                env!("CARGO_BIN_EXE_toolhost"),
                copy.display()
            ),
            "/dev/null",
        ])
        .env("XDG_CACHE_HOME", dir.path().join("xdg"))
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let shown = texts(&shown).0;
    assert!(shown.contains("compiled plugin `mine` ("), "{shown:?}");
}

#[test]
fn new_help_states_the_whole_naming_rule() {
    let out = run(&["new", "--help"]);
    let help = texts(&out)
        .0
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for part in [
        "lowercase ASCII letters, digits, `-` and `_`",
        "starting with a letter",
        "at most 64 characters",
        "not a Rust keyword",
        "`word-count` makes the tool `word_count`",
    ] {
        assert!(help.contains(part), "{part}: {help}");
    }
    // The refusal states the same rule.
    let dir = tempfile::tempdir().unwrap();
    let out = common::toolhost()
        .current_dir(dir.path())
        .args(["new", "type"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = texts(&out).1;
    assert!(stderr.contains("not a Rust keyword"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_missing_configuration_suggests_toolhost_new_with_config() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::toolhost()
        .current_dir(dir.path())
        .args(["call", "echo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = texts(&out).1;
    assert!(
        stderr.contains("`toolhost new NAME --config toolhost.toml` starts a plugin project"),
        "{stderr}"
    );
}

#[test]
fn inspect_calls_stderr_standard_error() {
    let out = run(&["inspect", wasm("template").to_str().unwrap()]);
    let stdout = texts(&out).0;
    let line = |import: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(import))
            .unwrap_or_else(|| panic!("{import}: {stdout}"))
            .to_owned()
    };
    assert!(
        line("wasi:cli/stderr").contains("— standard error: "),
        "{stdout}"
    );
    assert!(
        line("wasi:cli/stdout").contains("— standard output: "),
        "{stdout}"
    );
}

#[test]
fn call_json_prints_a_failure_once_with_retryable() {
    let config = TestConfig::new("");
    for (tool, kind, retryable) in [("spin", "timeout", true), ("panic", "sandbox", false)] {
        let out = run(&["call", "--config", config.path(), tool, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{tool}");
        let (stdout, stderr) = texts(&out);
        assert_eq!(stderr, "", "{tool}: printed once, on stdout");
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(doc["error"]["kind"], kind, "{tool}: {doc}");
        assert_eq!(doc["error"]["retryable"], retryable, "{tool}: {doc}");
        assert!(
            doc["error"]["message"]
                .as_str()
                .unwrap()
                .contains("runaway"),
            "{doc}"
        );
    }
    // A result is unchanged.
    let out = run(&[
        "call",
        "--config",
        config.path(),
        "echo",
        r#"{"text": "x"}"#,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc.get("ok").is_some(), "{doc}");
}
