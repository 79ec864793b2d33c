//! [`LocalShell`]: runs commands as local processes, started in a directory
//! opened through the working directory's capability, with a cleared
//! environment, each contained (see [`Containment`]) so that nothing it
//! starts outlives its call.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::process::Command;

use super::capture::capture;
use super::contain::{Containment, ContainmentError, Scope};
use super::{CommandLine, ShellOps, ShellRequest, ShellResult};
use crate::process::{MINIMAL_PATH, confine};
use crate::workdir::Workdir;
use toolhost_core::error::ToolError;

/// Runs shell requests on this machine.
///
/// This is a policy aid, not isolation: the process runs with the host's
/// user, sees the whole filesystem and the network. What it does guarantee:
/// it starts in a directory inside the working directory, with only the
/// granted environment variables (and a minimal `PATH`), and every process
/// it starts — including ones that leave its process group or session — is
/// killed when the call ends: when the command exits (whatever it left
/// running in the background), fails, reaches its timeout, or when the
/// call's future is dropped. How depends on the [`Containment`]: a cgroup
/// per call where the host can create one, a supervising subreaper process
/// otherwise. A call that cannot be contained fails before anything runs.
#[derive(Debug, Clone)]
pub struct LocalShell {
    workdir: Arc<Workdir>,
    shell: PathBuf,
    env: Vec<(OsString, OsString)>,
    containment: Containment,
}

impl LocalShell {
    /// Runs command lines with `/bin/sh -c`, with no environment but a
    /// minimal `PATH`, contained by [`Containment::Auto`].
    pub fn new(workdir: Arc<Workdir>) -> Self {
        Self {
            workdir,
            shell: PathBuf::from("/bin/sh"),
            env: Vec::new(),
            containment: Containment::Auto,
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

    /// Contains commands with `mode` instead of [`Containment::Auto`] (e.g.
    /// [`Containment::Cgroup`] to refuse to run without a cgroup).
    pub fn containment(mut self, mode: Containment) -> Self {
        self.containment = mode;
        self
    }

    /// The mechanism calls use on this machine ([`Containment::Cgroup`] or
    /// [`Containment::Subreaper`]), or why the configured one is not
    /// available (calls then fail).
    pub fn containment_in_force(&self) -> Result<Containment, ContainmentError> {
        self.containment.in_force()
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
        let mut scope = Scope::enter(self.containment, &mut cmd).map_err(|e| {
            ToolError::failed(format!(
                "cannot run `{}` contained: {}",
                req.command.program(&self.shell),
                toolhost_core::report(&e)
            ))
        })?;
        tracing::debug!(containment = ?scope.mode(), "starting a shell command");
        let spawned = cmd.spawn();
        scope.spawned(spawned.as_ref().ok().and_then(|c| c.id()));
        let mut child = spawned.map_err(|e| {
            ToolError::failed(format!(
                "cannot start `{}`: {e}",
                req.command.program(&self.shell)
            ))
        })?;
        drop(dir);
        // Bound again after `child`, so that a dropped call drops the scope
        // first, while the child (possibly the supervisor) is not reaped yet.
        let mut scope = scope;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let started = tokio::time::Instant::now();
        let run = async {
            let exited = async {
                let status = child.wait().await;
                scope.reaped();
                // Whatever the command left running is killed, so that the
                // pipes close and nothing outlives the call.
                scope.kill_all();
                status
            };
            futures::join!(
                capture(stdout, req.max_output_bytes),
                capture(stderr, req.max_output_bytes),
                exited
            )
        };
        let outcome = tokio::time::timeout(req.timeout, run).await;
        // Whatever happened, nothing of the command is left once this
        // returns (and if this future is dropped first, `scope` kills it).
        scope.end(&mut child).await;
        match outcome {
            Err(_) => Err(ToolError::timeout(
                started.elapsed().max(Duration::from_millis(1)),
            )),
            Ok((stdout, stderr, status)) => {
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
