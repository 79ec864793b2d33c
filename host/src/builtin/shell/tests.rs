use std::time::Duration;

use super::*;
use crate::builtin::workdir::Workdir;
use crate::{Arguments, CallContext, ErrorKind, ToolHost};

fn setup() -> (tempfile::TempDir, LocalShell) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let shell = LocalShell::new(Arc::new(Workdir::open(dir.path()).unwrap()));
    (dir, shell)
}

fn line(cmd: &str) -> ShellRequest {
    ShellRequest {
        command: CommandLine::Line(cmd.into()),
        cwd: String::new(),
        timeout: Duration::from_secs(30),
        max_output_bytes: 64 * 1024,
    }
}

/// Whether process `pid` is gone (or a zombie waiting to be reaped).
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_dead(pid: i32) -> bool {
    for _ in 0..200 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn read_pid(dir: &tempfile::TempDir) -> i32 {
    std::fs::read_to_string(dir.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn b5_timeout_kills_the_process_group() {
    let (dir, shell) = setup();
    let mut req = line("sleep 300 & echo $! > bg.pid; sleep 300");
    req.timeout = Duration::from_millis(500);
    let err = shell.run(req).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let pid = read_pid(&dir);
    assert!(
        wait_dead(pid).await,
        "the shell's child {pid} survived the timeout"
    );
}

#[tokio::test]
async fn b5_dropping_the_call_kills_the_process_group() {
    let (dir, shell) = setup();
    let run = shell.run(line("sleep 300 & echo $! > bg.pid; sleep 300"));
    let _ = tokio::time::timeout(Duration::from_millis(500), run).await;
    let pid = read_pid(&dir);
    assert!(
        wait_dead(pid).await,
        "the shell's child {pid} survived the call"
    );
}

#[tokio::test]
async fn b5_processes_left_behind_are_killed_when_the_command_ends() {
    let (dir, shell) = setup();
    let res = shell
        .run(line("sleep 300 & echo $! > bg.pid; echo started"))
        .await
        .unwrap();
    assert_eq!(res.stdout.text, "started\n");
    let pid = read_pid(&dir);
    assert!(
        wait_dead(pid).await,
        "background process {pid} outlived its command"
    );
}

#[tokio::test]
async fn b5_exit_code_and_both_streams_are_reported() {
    let (_dir, shell) = setup();
    let res = shell
        .run(line("echo out; echo err >&2; exit 3"))
        .await
        .unwrap();
    assert_eq!(res.exit_code, Some(3));
    assert_eq!(res.stdout.text, "out\n");
    assert_eq!(res.stderr.text, "err\n");
    let res = shell.run(line("kill -9 $$")).await.unwrap();
    assert_eq!((res.exit_code, res.signal), (None, Some(9)));
}

#[tokio::test]
async fn b5_output_is_capped_with_a_marker() {
    let (_dir, shell) = setup();
    let mut req = line("head -c 100000 /dev/zero | tr '\\0' a; echo; echo END");
    req.max_output_bytes = 1000;
    let res = shell.run(req).await.unwrap();
    assert_eq!(res.stdout.total_bytes, 100_005);
    assert_eq!(res.stdout.cut_bytes, 99_005);
    assert!(
        res.stdout.text.contains("[… 99005 bytes cut …]"),
        "{}",
        res.stdout.text
    );
    assert!(res.stdout.text.ends_with("a\nEND\n"));
}

#[tokio::test]
async fn b5_environment_is_cleared_except_grants() {
    let (_dir, shell) = setup();
    let shell = shell.env("GRANTED", "yes");
    let mut req = line("");
    req.command = CommandLine::Argv(vec!["env".into()]);
    let res = shell.run(req).await.unwrap();
    let mut vars: Vec<_> = res.stdout.text.lines().collect();
    vars.sort();
    assert_eq!(vars, ["GRANTED=yes", "PATH=/usr/local/bin:/usr/bin:/bin"]);
}

#[tokio::test]
async fn b5_working_directory_is_confined() {
    let (dir, shell) = setup();
    let mut req = line("pwd");
    req.cwd = "sub".into();
    let res = shell.run(req.clone()).await.unwrap();
    let expected = std::fs::canonicalize(dir.path().join("sub")).unwrap();
    assert_eq!(res.stdout.text.trim(), expected.to_str().unwrap());
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    for cwd in ["..", "/tmp", "out", "sub/../.."] {
        req.cwd = cwd.into();
        let err = shell.run(req.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArguments, "{cwd}: {err}");
        assert!(
            err.to_string().contains(&format!("`{cwd}` is outside")),
            "{err}"
        );
    }
}

fn host(config: ShellConfig) -> (tempfile::TempDir, ToolHost) {
    let (dir, shell) = setup();
    let host = ToolHost::builder().validate_arguments(true).build();
    host.register_tool(shell_tool(Arc::new(shell), config))
        .unwrap();
    (dir, host)
}

async fn call(host: &ToolHost, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
    host.invoke_tool(
        CallContext::new(),
        "shell",
        Arguments::from_value(&args).unwrap(),
    )
    .await
}

#[tokio::test]
async fn b5_lists_are_checked_before_anything_runs() {
    let config = ShellConfig {
        policy: CommandPolicy::open().allow(["echo", "touch"]),
        ..ShellConfig::default()
    };
    let (dir, host) = host(config);
    let out = call(&host, json!({"command": "echo hi"})).await.unwrap();
    assert_eq!(out.llm_text(), "exit code 0\n--- stdout ---\nhi\n");
    assert_eq!(out.user_text().unwrap(), "$ echo hi\nhi\n[exit code 0]");
    let err = call(&host, json!({"command": "touch made; rm -rf made"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Rejected);
    assert!(
        err.to_string().contains("`rm` is not on the allowlist"),
        "{err}"
    );
    assert!(!dir.path().join("made").exists(), "nothing ran");
    let err = call(&host, json!({"command": "touch $(echo made)"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("cannot be checked"), "{err}");
    let err = call(&host, json!({"argv": ["rm", "x"]})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Rejected);
}

#[tokio::test]
async fn b5_arguments_are_typed_and_checked() {
    let (_dir, host) = host(ShellConfig::default());
    for args in [
        json!({"command": "ls", "argv": ["ls"]}),
        json!({}),
        json!({"command": "ls", "timeout_secs": 100000}),
        json!({"command": "ls", "extra": 1}),
    ] {
        let err = call(&host, args.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArguments, "{args}: {err}");
    }
    let out = call(&host, json!({"argv": ["sh", "-c", "echo $0", "it's"]}))
        .await
        .unwrap();
    assert_eq!(
        out.user_text().unwrap(),
        "$ sh -c 'echo $0' 'it'\\''s'\nit's\n[exit code 0]"
    );
}
