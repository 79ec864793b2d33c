//! Starting child processes for the built-in tools: in their own process
//! group (so the whole group can be killed), in a directory given as a
//! capability (`fchdir` on an open `Dir` between fork and exec, never a path
//! resolved again), and found on `PATH` once, at setup.
// Each family uses part of this module; a build with only some of them
// leaves the rest unused.
#![cfg_attr(
    not(all(feature = "search", feature = "shell", feature = "browser")),
    allow(dead_code)
)]

use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use tokio::process::Command;

use super::workdir::dir_fd;

/// Makes `cmd` start as the leader of a new process group, in `dir`.
///
/// `dir` must stay open until the command has been spawned.
pub(crate) fn confine(cmd: &mut Command, dir: Option<&Dir>) {
    cmd.process_group(0);
    if let Some(dir) = dir {
        let fd = dir_fd(dir);
        // SAFETY: `fchdir` is async-signal-safe and the descriptor is open
        // in the child (cap-std opens it close-on-exec, which only closes it
        // at exec, after this runs).
        unsafe {
            cmd.pre_exec(move || {
                if libc::fchdir(fd) == 0 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
    }
}

/// Kills a process group when dropped, unless disarmed: a call whose future
/// is dropped (at a deadline) takes its processes with it.
#[derive(Debug)]
pub(crate) struct GroupGuard {
    pgid: Option<libc::pid_t>,
}

impl GroupGuard {
    /// Guards the group led by the process `pid` (`None` if the child has
    /// no id, i.e. has already been reaped).
    pub(crate) fn new(pid: Option<u32>) -> Self {
        Self {
            pgid: pid.and_then(|p| libc::pid_t::try_from(p).ok()),
        }
    }

    /// Forgets the group without killing it (once its leader has been
    /// reaped and nothing of it can be left running).
    pub(crate) fn disarm(&mut self) {
        self.pgid = None;
    }

    /// Sends SIGKILL to every process of the group.
    pub(crate) fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: plain syscall; a group that no longer exists gives
            // ESRCH, which is fine.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The first of `names` found as an executable file on the search path
/// `path` (the host's `PATH` if `None`).
pub(crate) fn find_program(names: &[&str], path: Option<&OsStr>) -> Option<PathBuf> {
    let path = match path {
        Some(p) => p.to_owned(),
        None => std::env::var_os("PATH")?,
    };
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| is_executable(p))
    })
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `program` accepts every flag of `flags` (asked with `--version`,
/// which clap-based tools reject when an unknown flag precedes it).
pub(crate) fn accepts_flags(program: &Path, flags: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(flags)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// An environment with nothing from the host's but a minimal `PATH`, and
/// `HOME`/`XDG_CONFIG_HOME` pointing nowhere so that no per-user
/// configuration (global ignore files, rc files) is read.
pub(crate) fn clean_env(cmd: &mut Command) {
    cmd.env_clear();
    cmd.env("PATH", MINIMAL_PATH);
    for (k, v) in [
        ("HOME", "/nonexistent"),
        ("XDG_CONFIG_HOME", "/nonexistent"),
    ] {
        cmd.env(k, OsStr::new(v));
    }
}

/// The `PATH` child processes get.
pub(crate) const MINIMAL_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
