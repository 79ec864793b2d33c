//! The built-in tools through the public API: registered as one extension,
//! called through the pipeline like any tool, confined to the working
//! directory, and able to run their operations somewhere else.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolhost::builtin::browse::{BrowseRequest, BrowseResult, BrowserOps};
use toolhost::builtin::fs::{DirEntryInfo, EntryKind, FileOps};
use toolhost::builtin::search::{FileAnswer, FileQuery, GrepAnswer, GrepQuery, SearchOps};
use toolhost::builtin::shell::{CapturedOutput, ShellOps, ShellRequest, ShellResult};
use toolhost::builtin::web::{FetchRequest, FetchResponse, WebOps};
use toolhost::builtin::{
    BuiltinConfig, BuiltinTool, BuiltinTools, CodeConfig, CommandPolicy, Language, ShellConfig,
};
use toolhost::{
    Arguments, CallContext, ErrorKind, FnBeforeHook, HookScope, Rejection, ToolError, ToolHost,
    ToolOutput,
};

async fn host_with(config: BuiltinConfig) -> ToolHost {
    let host = ToolHost::builder().validate_arguments(true).build();
    let ext = BuiltinTools::new(config).expect("the working directory opens");
    host.register_extension(Arc::new(ext)).await.unwrap();
    host
}

async fn call(host: &ToolHost, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
    host.invoke_tool(
        CallContext::new(),
        tool,
        Arguments::from_value(&args).unwrap(),
    )
    .await
}

#[tokio::test]
async fn b1_extension_registers_every_tool_with_truthful_declarations() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(
        BuiltinConfig::new(dir.path())
            .tools(BuiltinTool::ALL)
            .run_code(
                CodeConfig::new().interpreter(Language::JavaScript, crate::common::wasm("run_js")),
            ),
    )
    .await;
    assert_eq!(
        host.tool_names(),
        [
            "browse",
            "edit_file",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "run_code",
            "shell",
            "web_fetch",
            "write_file"
        ]
    );
    let declared: BTreeMap<String, (Option<bool>, bool)> = host
        .tool_specs()
        .iter()
        .map(|s| (s.name.clone(), (s.concurrency_safe, s.idempotent)))
        .collect();
    let expected: BTreeMap<String, (Option<bool>, bool)> = [
        ("browse", (Some(true), false)),
        ("edit_file", (Some(false), false)),
        ("glob", (Some(true), true)),
        ("grep", (Some(true), true)),
        ("list_dir", (Some(true), true)),
        ("read_file", (Some(true), true)),
        ("run_code", (Some(true), true)),
        ("shell", (Some(false), false)),
        ("web_fetch", (Some(true), true)),
        ("write_file", (Some(false), true)),
    ]
    .into_iter()
    .map(|(n, d)| (n.to_owned(), d))
    .collect();
    assert_eq!(declared, expected);
    for spec in host.tool_specs() {
        assert_eq!(
            spec.parameters["additionalProperties"],
            json!(false),
            "{}",
            spec.name
        );
    }
}

#[tokio::test]
async fn b1_defaults_deny_shell_and_network_tools() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(BuiltinConfig::new(dir.path())).await;
    assert_eq!(
        host.tool_names(),
        [
            "edit_file",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "write_file"
        ]
    );
}

#[tokio::test]
async fn b1_file_tools_work_through_the_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(BuiltinConfig::new(dir.path())).await;
    let out = call(
        &host,
        "write_file",
        json!({"path": "src/a.txt", "content": "one\ntwo\nthree\n"}),
    )
    .await
    .unwrap();
    assert_eq!(out.llm_text(), "wrote 14 bytes to src/a.txt");
    let out = call(
        &host,
        "read_file",
        json!({"path": "src/a.txt", "offset": 2, "limit": 1}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.llm_text(),
        "     2\ttwo\n[lines 2–2 of 3; continue with offset 3]"
    );
    call(
        &host,
        "edit_file",
        json!({"path": "src/a.txt", "old_text": "two", "new_text": "2"}),
    )
    .await
    .unwrap();
    let err = call(
        &host,
        "edit_file",
        json!({"path": "src/a.txt", "old_text": "e", "new_text": "E"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("matches 3 times"), "{err}");
    let out = call(
        &host,
        "edit_file",
        json!({"path": "src/a.txt", "old_text": "e", "new_text": "E", "replace_all": true}),
    )
    .await
    .unwrap();
    assert_eq!(out.llm_text(), "replaced 3 occurrences in src/a.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/a.txt")).unwrap(),
        "onE\n2\nthrEE\n"
    );
    let out = call(&host, "list_dir", json!({})).await.unwrap();
    assert_eq!(out.llm_text(), "src/");
    let out = call(&host, "glob", json!({"pattern": "*.txt"}))
        .await
        .unwrap();
    assert_eq!(out.llm_text(), "src/a.txt");
    let out = call(&host, "grep", json!({"pattern": "thr"}))
        .await
        .unwrap();
    assert_eq!(out.llm_text(), "src/a.txt:3:thrEE");
    std::fs::write(dir.path().join("img.bin"), b"\x89PNG\0\0").unwrap();
    let err = call(&host, "read_file", json!({"path": "img.bin"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("binary file"), "{err}");
    let err = call(&host, "read_file", json!({"path": "src/a.txt", "bogus": 1}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
}

#[tokio::test]
async fn b1_hooks_apply_to_builtin_tools_like_any_other() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(BuiltinConfig::new(dir.path())).await;
    host.add_before_hook(
        HookScope::Tool("write_file".into()),
        Arc::new(FnBeforeHook::new("read-only", |_| {
            Err(Rejection::new("writes are off"))
        })),
    );
    let err = call(
        &host,
        "write_file",
        json!({"path": "x.txt", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Rejected);
    assert!(!dir.path().join("x.txt").exists());
}

#[tokio::test]
async fn b3_file_tools_cannot_leave_the_working_directory() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(BuiltinConfig::new(dir.path())).await;
    // Created after the tools were set up.
    std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
    let secret = outside.path().join("secret.txt");
    for (tool, args, path) in [
        (
            "read_file",
            json!({"path": "../secret.txt"}),
            "../secret.txt".to_owned(),
        ),
        (
            "read_file",
            json!({"path": secret}),
            secret.display().to_string(),
        ),
        (
            "read_file",
            json!({"path": "escape/secret.txt"}),
            "escape/secret.txt".to_owned(),
        ),
        (
            "write_file",
            json!({"path": "escape/new.txt", "content": "x"}),
            "escape/new.txt".to_owned(),
        ),
        (
            "edit_file",
            json!({"path": "escape/secret.txt", "old_text": "s", "new_text": "S"}),
            "escape/secret.txt".to_owned(),
        ),
        ("list_dir", json!({"path": "escape"}), "escape".to_owned()),
        (
            "glob",
            json!({"pattern": "*", "path": "escape"}),
            "escape".to_owned(),
        ),
        (
            "grep",
            json!({"pattern": "secret", "path": ".."}),
            "..".to_owned(),
        ),
    ] {
        let err = call(&host, tool, args).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArguments, "{tool}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("`{path}` is outside the working directory")),
            "{tool}: {err}"
        );
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
    assert!(!outside.path().join("new.txt").exists());
}

/// File operations on an in-memory map, recording each call: what a host
/// that runs file operations in a sandbox or on another machine plugs in.
#[derive(Default)]
struct RemoteFiles {
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    log: Mutex<Vec<String>>,
}

#[async_trait]
impl FileOps for RemoteFiles {
    async fn read(&self, path: &str, _max: u64) -> Result<Vec<u8>, ToolError> {
        self.log.lock().unwrap().push(format!("read {path}"));
        self.files
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .ok_or_else(|| ToolError::failed(format!("`{path}` does not exist")))
    }

    async fn write(&self, path: &str, contents: Vec<u8>) -> Result<(), ToolError> {
        self.log.lock().unwrap().push(format!("write {path}"));
        self.files.lock().unwrap().insert(path.into(), contents);
        Ok(())
    }

    async fn list(&self, path: &str) -> Result<Vec<DirEntryInfo>, ToolError> {
        self.log.lock().unwrap().push(format!("list {path}"));
        Ok(self
            .files
            .lock()
            .unwrap()
            .iter()
            .map(|(name, data)| DirEntryInfo {
                name: name.clone(),
                kind: EntryKind::File,
                size: data.len() as u64,
            })
            .collect())
    }
}

struct RemoteSearch(Mutex<Vec<String>>);

#[async_trait]
impl SearchOps for RemoteSearch {
    async fn find_files(&self, q: &FileQuery) -> Result<FileAnswer, ToolError> {
        self.0.lock().unwrap().push(format!("find {:?}", q.pattern));
        Ok(FileAnswer {
            paths: vec!["remote.rs".into()],
            total: 1,
        })
    }

    async fn grep(&self, q: &GrepQuery) -> Result<GrepAnswer, ToolError> {
        self.0.lock().unwrap().push(format!("grep {}", q.pattern));
        Ok(GrepAnswer {
            matches: vec![],
            total: 0,
        })
    }
}

struct RemoteShell(Mutex<Vec<ShellRequest>>);

#[async_trait]
impl ShellOps for RemoteShell {
    async fn run(&self, request: ShellRequest) -> Result<ShellResult, ToolError> {
        self.0.lock().unwrap().push(request);
        Ok(ShellResult {
            exit_code: Some(0),
            signal: None,
            stdout: CapturedOutput {
                text: "ran remotely\n".into(),
                total_bytes: 13,
                cut_bytes: 0,
            },
            stderr: CapturedOutput::default(),
        })
    }
}

/// Fetches and page renders answered by a stand-in for a remote fetcher.
struct RemoteWeb(Mutex<Vec<String>>);

#[async_trait]
impl WebOps for RemoteWeb {
    async fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, ToolError> {
        self.0
            .lock()
            .unwrap()
            .push(format!("fetch {}", request.url));
        Ok(FetchResponse {
            final_url: request.url,
            status: 200,
            content_type: Some("text/plain".into()),
            body: b"fetched remotely".to_vec(),
            truncated: false,
            redirects: vec![],
        })
    }
}

#[async_trait]
impl BrowserOps for RemoteWeb {
    async fn browse(&self, request: BrowseRequest) -> Result<BrowseResult, ToolError> {
        self.0
            .lock()
            .unwrap()
            .push(format!("browse {}", request.url));
        Ok(BrowseResult {
            final_url: request.url,
            title: "Remote".into(),
            text: "rendered remotely".into(),
            screenshot: None,
            blocked: vec![],
        })
    }
}

#[tokio::test]
async fn b2_web_and_browser_can_be_delegated() {
    let dir = tempfile::tempdir().unwrap();
    let remote = Arc::new(RemoteWeb(Mutex::default()));
    let config = BuiltinConfig::new(dir.path())
        .tools([BuiltinTool::WebFetch, BuiltinTool::Browse])
        .web_ops(remote.clone())
        .browser_ops(remote.clone());
    let host = host_with(config).await;
    let out = call(&host, "web_fetch", json!({"url": "https://example.org/a"}))
        .await
        .unwrap();
    assert!(
        out.llm_text().ends_with("\n\nfetched remotely"),
        "{}",
        out.llm_text()
    );
    let out = call(&host, "browse", json!({"url": "https://example.org/b"}))
        .await
        .unwrap();
    assert_eq!(
        out.llm_text(),
        "https://example.org/b — Remote\n\nrendered remotely"
    );
    assert_eq!(
        *remote.0.lock().unwrap(),
        [
            "fetch https://example.org/a",
            "browse https://example.org/b"
        ]
    );
}

#[tokio::test]
async fn b2_operations_can_be_delegated_out_of_process() {
    let dir = tempfile::tempdir().unwrap();
    let files = Arc::new(RemoteFiles::default());
    let search = Arc::new(RemoteSearch(Mutex::default()));
    let shell = Arc::new(RemoteShell(Mutex::default()));
    let config = BuiltinConfig::new(dir.path())
        .enable(BuiltinTool::Shell)
        .shell(ShellConfig {
            policy: CommandPolicy::open().allow(["make"]),
            ..ShellConfig::default()
        })
        .file_ops(files.clone())
        .search_ops(search.clone())
        .shell_ops(shell.clone());
    let host = host_with(config).await;
    call(
        &host,
        "write_file",
        json!({"path": "notes.md", "content": "hello"}),
    )
    .await
    .unwrap();
    call(
        &host,
        "edit_file",
        json!({"path": "notes.md", "old_text": "hello", "new_text": "bye"}),
    )
    .await
    .unwrap();
    let out = call(&host, "read_file", json!({"path": "notes.md"}))
        .await
        .unwrap();
    assert_eq!(out.llm_text(), "     1\tbye");
    assert_eq!(
        call(&host, "glob", json!({"pattern": "*.rs"}))
            .await
            .unwrap()
            .llm_text(),
        "remote.rs"
    );
    call(&host, "grep", json!({"pattern": "x"})).await.unwrap();
    let out = call(
        &host,
        "shell",
        json!({"command": "make test", "cwd": "sub"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.llm_text(),
        "exit code 0\n--- stdout ---\nran remotely\n"
    );
    // The policy is the tool's, whatever runs the command.
    let err = call(&host, "shell", json!({"command": "rm -rf /"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Rejected);

    assert_eq!(
        *files.log.lock().unwrap(),
        [
            "write notes.md",
            "read notes.md",
            "write notes.md",
            "read notes.md"
        ]
    );
    assert_eq!(*search.0.lock().unwrap(), ["find Some(\"*.rs\")", "grep x"]);
    let runs = shell.0.lock().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].cwd, "sub");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing touched the disk"
    );
}

/// Live processes whose command line mentions `marker` as a whole number.
fn processes_with(marker: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| {
            c.match_indices(marker)
                .any(|(at, m)| !c[at + m.len()..].starts_with(|ch: char| ch.is_ascii_digit()))
        })
        .collect()
}

/// Waits (60 s at most, returning as soon as it holds) until no process
/// mentions `marker`.
async fn assert_nothing_left(marker: &str, what: &str) {
    for _ in 0..1200 {
        if processes_with(marker).is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{what}: left behind: {:?}", processes_with(marker));
}

#[tokio::test]
async fn c7_shell_tool_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(BuiltinConfig::new(dir.path()).enable(BuiltinTool::Shell)).await;
    let escape = |m: &str| {
        format!(
            "setsid sleep {m} & ( (sleep {m} &) & ); nohup sleep {m} >/dev/null 2>&1 & \
             setsid sh -c 'trap \"\" TERM HUP INT; sleep {m}' >/dev/null 2>&1 &"
        )
    };
    let marker = |n: u32| format!("600.{}0{n}", std::process::id());

    // The command ends, leaving escaped processes behind.
    let m = marker(1);
    let out = call(
        &host,
        "shell",
        json!({"command": format!("{} echo done", escape(&m))}),
    )
    .await
    .unwrap();
    assert_eq!(out.llm_text(), "exit code 0\n--- stdout ---\ndone\n");
    assert_nothing_left(&m, "finished call").await;

    // The command fails.
    let m = marker(2);
    let out = call(
        &host,
        "shell",
        json!({"command": format!("{} exit 4", escape(&m))}),
    )
    .await
    .unwrap();
    assert!(
        out.llm_text().starts_with("exit code 4"),
        "{}",
        out.llm_text()
    );
    assert_nothing_left(&m, "failed call").await;

    // The command's own timeout.
    let m = marker(3);
    let args = json!({"command": format!("{} sleep {m}", escape(&m)), "timeout_secs": 0.7});
    let err = call(&host, "shell", args).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_nothing_left(&m, "timed-out call").await;

    // The call's deadline: the pipeline drops the tool's future.
    let m = marker(4);
    let ctx = CallContext::new().with_timeout(std::time::Duration::from_millis(700));
    let args = json!({"command": format!("{} sleep {m}", escape(&m))});
    let err = host
        .invoke_tool(ctx, "shell", Arguments::from_value(&args).unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_nothing_left(&m, "dropped call").await;

    let out = call(&host, "shell", json!({"command": "echo still here"}))
        .await
        .unwrap();
    assert_eq!(out.llm_text(), "exit code 0\n--- stdout ---\nstill here\n");
}
