use std::time::Duration;

use super::*;
use crate::process::MINIMAL_PATH;
use crate::workdir::Workdir;
use toolhost_core::{Arguments, CallContext, ErrorKind, ToolHost};

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

/// Whether `pid` dies within 60 s (returning as soon as it does).
async fn wait_dead(pid: i32) -> bool {
    for _ in 0..1200 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn read_pid(dir: &tempfile::TempDir) -> i32 {
    try_read_pid(dir).expect("the shell wrote its child's pid to bg.pid")
}

/// The pid in `bg.pid`, once the shell has written it whole.
fn try_read_pid(dir: &tempfile::TempDir) -> Option<i32> {
    std::fs::read_to_string(dir.path().join("bg.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[tokio::test]
async fn b5_timeout_kills_the_process_group() {
    let (dir, shell) = setup();
    let mut req = line("sleep 300 & echo $! > bg.pid; sleep 300");
    // Long enough for bash to start and write bg.pid on a busy machine.
    req.timeout = Duration::from_secs(5);
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
    // Boxed, so that dropping it below drops the call itself.
    let mut run = Box::pin(shell.run(line("sleep 300 & echo $! > bg.pid; sleep 300")));
    // The call runs until the shell has started its child (60 s at most),
    // then it is dropped.
    let started = async {
        for _ in 0..1200 {
            if try_read_pid(&dir).is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        ended = &mut run => panic!("the call ended by itself: {ended:?}"),
        () = started => {}
    }
    drop(run);
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

// Rule C7: nothing a command started outlives its call, in either
// containment mode.

/// The containment modes this machine can test: the subreaper always, a
/// cgroup where the host may create one.
fn modes() -> Vec<Containment> {
    let mut modes = vec![Containment::Subreaper];
    match Containment::Cgroup.in_force() {
        Ok(_) => modes.push(Containment::Cgroup),
        Err(e) => eprintln!("cgroup containment is not tested here: {e}"),
    }
    modes
}

fn setup_in(mode: Containment) -> (tempfile::TempDir, LocalShell) {
    let (dir, shell) = setup();
    let shell = shell.containment(mode);
    assert_eq!(shell.containment_in_force().unwrap(), mode);
    (dir, shell)
}

/// A `sleep` duration no other process on the machine has: `sleep MARKER`
/// is found in /proc by it.
fn marker() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("600.{}0{n}", std::process::id())
}

/// Live processes whose command line mentions `marker` (a zombie's command
/// line is empty), with their command lines.
fn with_marker(marker: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let mentions = cmdline
            .match_indices(marker)
            .any(|(at, m)| !cmdline[at + m.len()..].starts_with(|c: char| c.is_ascii_digit()));
        if mentions {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Waits (60 s at most, returning as soon as it holds) until no process
/// mentions `marker`.
async fn assert_none_left(marker: &str, what: &str) {
    for _ in 0..1200 {
        if with_marker(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: left behind: {:?}", with_marker(marker));
}

/// Waits (60 s at most, returning as soon as it holds) until some process
/// mentions `marker`.
async fn assert_running(marker: &str, what: &str) {
    for _ in 0..1200 {
        if !with_marker(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: `sleep {marker}` never started");
}

async fn assert_still_works(shell: &LocalShell, what: &str) {
    let res = shell
        .run(line("echo ok"))
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        (res.exit_code, res.stdout.text.as_str()),
        (Some(0), "ok\n"),
        "{what}"
    );
}

/// Runs the command `attack(marker)` in each mode; it must print `started`
/// and exit 0, and leave no process mentioning the marker.
async fn check_attack(name: &str, attack: impl Fn(&str) -> CommandLine) {
    for mode in modes() {
        let what = format!("{name} ({mode:?})");
        let (_dir, shell) = setup_in(mode);
        let m = marker();
        let mut req = line("");
        req.command = attack(&m);
        let res = shell
            .run(req)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(res.exit_code, Some(0), "{what}: {res:?}");
        assert_eq!(res.stdout.text, "started\n", "{what}");
        assert_none_left(&m, &what).await;
        assert_still_works(&shell, &what).await;
    }
}

#[tokio::test]
async fn c7_setsid_background_is_killed() {
    check_attack("setsid", |m| {
        CommandLine::Line(format!("setsid sleep {m} & echo started"))
    })
    .await;
}

#[tokio::test]
async fn c7_nohup_background_is_killed() {
    check_attack("nohup", |m| {
        CommandLine::Line(format!("nohup sleep {m} >/dev/null 2>&1 & echo started"))
    })
    .await;
}

#[tokio::test]
async fn c7_double_fork_is_killed() {
    check_attack("double fork", |m| {
        CommandLine::Line(format!("( (sleep {m} &) & ); echo started"))
    })
    .await;
}

#[tokio::test]
async fn c7_disowned_job_is_killed() {
    if crate::process::find_program(&["bash"], Some(MINIMAL_PATH.as_ref())).is_none() {
        eprintln!("no bash: `disown` is not tested");
        return;
    }
    check_attack("disown", |m| {
        CommandLine::Argv(vec![
            "bash".into(),
            "-c".into(),
            format!("sleep {m} & disown; echo started"),
        ])
    })
    .await;
}

#[tokio::test]
async fn c7_process_ignoring_signals_is_killed() {
    check_attack("signal traps", |m| {
        CommandLine::Line(format!(
            "setsid sh -c 'trap \"\" TERM INT HUP QUIT USR1 USR2; sleep {m}; sleep {m}' \
             >/dev/null 2>&1 & echo started"
        ))
    })
    .await;
}

#[tokio::test]
async fn c7_failed_command_leaves_nothing() {
    for mode in modes() {
        let what = format!("failed command ({mode:?})");
        let (_dir, shell) = setup_in(mode);
        let m = marker();
        let res = shell
            .run(line(&format!(
                "setsid sleep {m} & ( (sleep {m} &) & ); exit 3"
            )))
            .await
            .unwrap();
        assert_eq!(res.exit_code, Some(3), "{what}");
        assert_none_left(&m, &what).await;
        assert_still_works(&shell, &what).await;
    }
}

/// Starts children that leave the process group and session, then waits.
fn escapes(m: &str) -> String {
    format!(
        "setsid sleep {m} & ( (sleep {m} &) & ); nohup sleep {m} >/dev/null 2>&1 & \
         setsid sh -c 'trap \"\" TERM HUP; sleep {m}' >/dev/null 2>&1 & touch ready; sleep {m}"
    )
}

#[tokio::test]
async fn c7_timeout_kills_children_that_left_the_group() {
    for mode in modes() {
        let what = format!("timeout ({mode:?})");
        let (_dir, shell) = setup_in(mode);
        let m = marker();
        let mut req = line(&escapes(&m));
        req.timeout = Duration::from_millis(700);
        let err = shell.run(req).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{what}: {err}");
        assert_none_left(&m, &what).await;
        assert_still_works(&shell, &what).await;
    }
}

#[tokio::test]
async fn c7_dropped_call_kills_children_that_left_the_group() {
    for mode in modes() {
        let what = format!("dropped call ({mode:?})");
        let (dir, shell) = setup_in(mode);
        let m = marker();
        let mut run = Box::pin(shell.run(line(&escapes(&m))));
        let ready = dir.path().join("ready");
        tokio::select! {
            res = &mut run => panic!("{what}: the call ended: {res:?}"),
            () = async {
                while !ready.exists() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            } => {}
        }
        assert_running(&m, &what).await;
        drop(run);
        assert_none_left(&m, &what).await;
        assert_still_works(&shell, &what).await;
    }
}

#[tokio::test]
async fn c7_concurrent_calls_are_contained_separately() {
    for mode in modes() {
        let what = format!("concurrent calls ({mode:?})");
        let (dir, shell) = setup_in(mode);
        let (ma, mb) = (marker(), marker());
        let long = tokio::spawn({
            let shell = shell.clone();
            let cmd = format!("setsid sleep {ma} & while [ ! -e go ]; do sleep 0.05; done; echo a");
            async move { shell.run(line(&cmd)).await }
        });
        assert_running(&ma, &what).await;
        let res = shell
            .run(line(&format!("setsid sleep {mb} & echo b")))
            .await
            .unwrap();
        assert_eq!(res.stdout.text, "b\n", "{what}");
        assert_none_left(&mb, &what).await;
        assert!(
            !with_marker(&ma).is_empty(),
            "{what}: the end of one call killed another's processes"
        );
        std::fs::write(dir.path().join("go"), "").unwrap();
        let res = long.await.unwrap().unwrap();
        assert_eq!(res.stdout.text, "a\n", "{what}");
        assert_none_left(&ma, &what).await;
    }
}

#[tokio::test]
async fn c7_cgroup_mode_runs_each_call_in_a_cgroup_of_its_own() {
    if !modes().contains(&Containment::Cgroup) {
        return;
    }
    let (_dir, shell) = setup_in(Containment::Cgroup);
    let mut seen = Vec::new();
    for _ in 0..2 {
        let res = shell.run(line("cat /proc/self/cgroup")).await.unwrap();
        let path = res
            .stdout
            .text
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or_else(|| panic!("no cgroup v2 line in {:?}", res.stdout.text))
            .to_owned();
        let name = path.rsplit('/').next().unwrap().to_owned();
        assert!(name.starts_with("toolhost-"), "{path}");
        let dir = super::contain::cgroup_parent().unwrap().join(&name);
        assert!(!dir.exists(), "{} was not removed", dir.display());
        seen.push(name);
    }
    assert_ne!(seen[0], seen[1], "two calls shared a cgroup");
}

#[tokio::test]
async fn c7_subreaper_mode_keeps_exit_codes_signals_and_output() {
    let (_dir, shell) = setup_in(Containment::Subreaper);
    let res = shell
        .run(line("echo out; echo err >&2; exit 3"))
        .await
        .unwrap();
    assert_eq!(res.exit_code, Some(3));
    assert_eq!(res.stdout.text, "out\n");
    assert_eq!(res.stderr.text, "err\n");
    for sig in [9, 15] {
        let res = shell.run(line(&format!("kill -{sig} $$"))).await.unwrap();
        assert_eq!((res.exit_code, res.signal), (None, Some(sig)));
    }
    // The supervisor (the command's parent) shrugs off what it can.
    let res = shell
        .run(line(
            "kill -TERM $PPID; kill -HUP $PPID; kill -INT $PPID; echo alive",
        ))
        .await
        .unwrap();
    assert_eq!(
        (res.exit_code, res.stdout.text.as_str()),
        (Some(0), "alive\n")
    );
    let mut req = line("pwd");
    req.cwd = "sub".into();
    let res = shell.run(req).await.unwrap();
    assert!(res.stdout.text.trim_end().ends_with("/sub"), "{res:?}");
}

/// The command runs only once its supervisor holds nothing of the host's
/// but the lifeline: had it kept the runtime's exec-status channel, a
/// command that stops it at once would block the host's spawn (and the
/// call) past every deadline.
#[tokio::test]
async fn c7_subreaper_mode_runs_the_command_after_its_supervisor_let_go() {
    let (_dir, shell) = setup_in(Containment::Subreaper);
    for _ in 0..20 {
        let req = line(r#"for f in /proc/$PPID/fd/*; do readlink "$f"; done"#);
        let res = shell.run(req).await.unwrap();
        assert_eq!(res.exit_code, Some(0), "{res:?}");
        let held: Vec<&str> = res.stdout.text.lines().collect();
        let pipes = held.iter().filter(|l| l.starts_with("pipe:")).count();
        let others: Vec<_> = held
            .iter()
            .filter(|l| !l.starts_with("pipe:") && **l != "anon_inode:[signalfd]")
            .collect();
        assert!(
            pipes == 1 && others.is_empty(),
            "the supervisor holds {held:?}"
        );
    }
}

#[tokio::test]
async fn c7_subreaper_mode_wakes_a_stopped_supervisor() {
    let (_dir, shell) = setup_in(Containment::Subreaper);
    let m = marker();
    let mut req = line(&format!("setsid sleep {m} & kill -STOP $PPID; sleep {m}"));
    req.timeout = Duration::from_millis(700);
    let err = shell.run(req).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_none_left(&m, "stopped supervisor").await;
    assert_still_works(&shell, "stopped supervisor").await;
}
