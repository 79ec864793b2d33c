//! [`LocalShell`]: runs commands as local processes, each in its own process
//! group, started in a directory opened through the working directory's
//! capability, with a cleared environment.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::process::Command;

use super::capture::capture;
use super::{CommandLine, ShellOps, ShellRequest, ShellResult};
use crate::builtin::process::{GroupGuard, MINIMAL_PATH, confine};
use crate::builtin::workdir::Workdir;
use crate::error::ToolError;

/// Runs shell requests on this machine.
///
/// This is a policy aid, not isolation: the process runs with the host's
/// user, sees the whole filesystem and the network. What it does guarantee:
/// it starts in a directory inside the working directory, with only the
/// granted environment variables (and a minimal `PATH`), and at its
/// timeout — or when the call is dropped — its whole process group is
/// killed; any process it leaves behind is killed when it exits.
#[derive(Debug, Clone)]
pub struct LocalShell {
    workdir: Arc<Workdir>,
    shell: PathBuf,
    env: Vec<(OsString, OsString)>,
}

impl LocalShell {
    /// Runs command lines with `/bin/sh -c`, with no environment but a
    /// minimal `PATH`.
    pub fn new(workdir: Arc<Workdir>) -> Self {
        Self {
            workdir,
            shell: PathBuf::from("/bin/sh"),
            env: Vec::new(),
        }
    }

    /// Uses `shell` (run as `shell -c LINE`) for command lines.
    pub fn shell_program(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell = shell.into();
        self
    }

    /// Sets `name=value` in every command's environment (after the minimal
    /// `PATH`, so a granted `PATH` replaces it).
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }
}

#[async_trait]
impl ShellOps for LocalShell {
    async fn run(&self, req: ShellRequest) -> Result<ShellResult, ToolError> {
        let dir = self.workdir.open_dir(&req.cwd, "cwd")?;
        let mut cmd = match &req.command {
            CommandLine::Line(line) => {
                let mut c = Command::new(&self.shell);
                c.arg("-c").arg(line);
                c
            }
            CommandLine::Argv(argv) => {
                let (program, args) = argv
                    .split_first()
                    .ok_or_else(|| ToolError::invalid_arguments("/argv", "argv is empty"))?;
                let mut c = Command::new(program);
                c.args(args);
                c
            }
        };
        cmd.env_clear()
            .env("PATH", MINIMAL_PATH)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        confine(&mut cmd, Some(&dir));
        let mut child = cmd.spawn().map_err(|e| {
            ToolError::failed(format!(
                "cannot start `{}`: {e}",
                req.command.program(&self.shell)
            ))
        })?;
        drop(dir);
        let mut guard = GroupGuard::new(child.id());
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let started = tokio::time::Instant::now();
        let run = async {
            let exited = async {
                let status = child.wait().await;
                // Whatever the command left running is killed, so that the
                // pipes close and nothing outlives the call.
                guard.kill();
                status
            };
            tokio::join!(
                capture(stdout, req.max_output_bytes),
                capture(stderr, req.max_output_bytes),
                exited
            )
        };
        match tokio::time::timeout(req.timeout, run).await {
            Err(_) => {
                guard.kill();
                let _ = child.wait().await;
                guard.disarm();
                Err(ToolError::timeout(
                    started.elapsed().max(Duration::from_millis(1)),
                ))
            }
            Ok((stdout, stderr, status)) => {
                guard.disarm();
                let status = status
                    .map_err(|e| ToolError::failed(format!("waiting for the command: {e}")))?;
                Ok(ShellResult {
                    exit_code: status.code(),
                    signal: status.signal(),
                    stdout,
                    stderr,
                })
            }
        }
    }
}
