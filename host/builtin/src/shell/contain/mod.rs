//! Containment of a shell call (rule C7): every process a command starts —
//! including those that leave its process group or session (`setsid`,
//! `nohup`, a double fork, `disown`) — is killed when the call ends, whether
//! the command finished, failed, timed out or the call was dropped.
//!
//! Two mechanisms, chosen per [`Containment`]:
//!
//! - **A cgroup v2 per call** ([`cgroup`]), preferred. The command is moved
//!   into a fresh cgroup below the host's own before it runs anything; no
//!   process can leave a cgroup by forking, changing session or being
//!   orphaned, so at the end `cgroup.kill` takes every one of them at once.
//!   Needs a cgroup2 hierarchy in which the host may create cgroups (root, or
//!   a delegated subtree) and Linux 5.14 or later (`cgroup.kill`).
//! - **A supervising subreaper per call** ([`supervisor`]), the fallback. A
//!   small process between the host and the command marks itself a child
//!   subreaper, so the kernel reparents every orphan of the command to it;
//!   at the end it kills its children round after round until none is left.
//!   Needs `/proc/thread-self/children`.
//!
//! Neither mechanism holds against a command with more rights than the
//! host's user grants it for this: see each module for its limits. Both are
//! Linux mechanisms; elsewhere a call fails rather than run uncontained.

// Raw process and descriptor calls (pre_exec, prctl, poll, signals), each
// `unsafe` block with its SAFETY comment.
#[allow(unsafe_code)]
mod cgroup;
#[allow(unsafe_code)]
mod supervisor;

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Once};
use std::time::Duration;

use tokio::process::{Child, Command};

use cgroup::CallCgroup;
#[cfg(test)]
pub(crate) use cgroup::parent as cgroup_parent;
use supervisor::Supervised;

/// How [`LocalShell`](super::LocalShell) makes sure that nothing a command
/// started outlives its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Containment {
    /// A cgroup per call where the host can create one, a supervising
    /// subreaper otherwise (the default).
    #[default]
    Auto,
    /// A cgroup v2 per call, required: a call for which no cgroup can be
    /// created fails before anything runs.
    Cgroup,
    /// A supervising subreaper process per call, never a cgroup.
    Subreaper,
}

impl Containment {
    /// The mechanism calls would use now: [`Containment::Cgroup`] or
    /// [`Containment::Subreaper`] (`Auto` resolved), or why the one asked
    /// for cannot be used on this machine.
    pub fn in_force(self) -> Result<Self, ContainmentError> {
        match self {
            Self::Cgroup => cgroup::parent().map(|_| Self::Cgroup),
            Self::Subreaper => supervisor::check().map(|()| Self::Subreaper),
            Self::Auto => match cgroup::parent() {
                Ok(_) => Ok(Self::Cgroup),
                Err(_) => supervisor::check().map(|()| Self::Subreaper),
            },
        }
    }
}

/// Why a command cannot be contained, so it is not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContainmentError {
    /// No cgroup v2 hierarchy was found that holds the host, or the host
    /// may not create cgroups in its own. Found once per process, so the
    /// reason is shared.
    #[error("no cgroup v2 hierarchy holds this process")]
    NoCgroup2(#[source] Arc<Cgroup2Error>),
    /// The per-call cgroup could not be created.
    #[error("cannot create the cgroup {path}")]
    CannotCreate {
        /// The cgroup directory that was to be created.
        path: PathBuf,
        /// Why not.
        #[source]
        source: io::Error,
    },
    /// The kernel cannot kill a cgroup at once (it needs Linux 5.14).
    #[error("the cgroup {0} has no cgroup.kill (Linux 5.14 or later is needed)")]
    NoCgroupKill(PathBuf),
    /// The supervisor could not list its children.
    #[error(
        "{path} is missing (a kernel without CONFIG_PROC_CHILDREN, or no /proc): \
         a supervisor could not find the processes to kill"
    )]
    NoChildrenList {
        /// The file that is missing.
        path: PathBuf,
    },
    /// The supervisor's lifeline could not be created.
    #[error("cannot create the supervisor's lifeline pipe")]
    Lifeline(#[source] io::Error),
}

/// Why the host's own cgroup cannot hold per-call cgroups.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Cgroup2Error {
    /// A file of `/proc` that says where the host's cgroup is could not be
    /// read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: &'static str,
        /// Why not.
        #[source]
        source: io::Error,
    },
    /// The host is in no cgroup v2 (or its cgroup was deleted).
    #[error("/proc/self/cgroup has no cgroup v2 entry")]
    NoEntry,
    /// The host's cgroup is on no cgroup2 mount this process can see.
    #[error("no cgroup2 mount shows the cgroup {cgroup}")]
    NoMount {
        /// The host's cgroup, as `/proc/self/cgroup` gives it.
        cgroup: String,
    },
    /// The host may not move processes out of its own cgroup.
    #[error("cannot move processes out of the cgroup {path}")]
    CannotMove {
        /// The host's own cgroup directory.
        path: PathBuf,
        /// Why not.
        #[source]
        source: io::Error,
    },
}

/// How long the host waits for a supervisor that was told to stop before it
/// kills it (and with it only what is left of the command's process group).
const SUPERVISOR_GRACE: Duration = Duration::from_secs(10);

/// The containment of one call, from before the command is spawned until
/// everything it started is gone. Dropping it (the call's future was
/// dropped) kills everything without waiting.
#[derive(Debug)]
pub(crate) enum Scope {
    Cgroup(CallCgroup),
    Supervised(Supervised),
}

impl Scope {
    /// Prepares `cmd` (its last `pre_exec` hook) so that the command runs
    /// contained as `mode` says.
    pub(crate) fn enter(mode: Containment, cmd: &mut Command) -> Result<Self, ContainmentError> {
        let scope = match mode {
            Containment::Cgroup => Self::Cgroup(CallCgroup::create()?),
            Containment::Subreaper => Self::Supervised(Supervised::new()?),
            Containment::Auto => match CallCgroup::create() {
                Ok(cgroup) => Self::Cgroup(cgroup),
                Err(e) => {
                    static NOTED: Once = Once::new();
                    NOTED.call_once(|| {
                        tracing::info!(
                            "shell commands are contained by a supervising subreaper, not a \
                             cgroup: {e}"
                        );
                    });
                    Self::Supervised(Supervised::new()?)
                }
            },
        };
        match &scope {
            Self::Cgroup(cgroup) => cgroup.install(cmd),
            Self::Supervised(supervised) => supervised.install(cmd),
        }
        Ok(scope)
    }

    /// The mechanism in force for this call.
    pub(crate) fn mode(&self) -> Containment {
        match self {
            Self::Cgroup(_) => Containment::Cgroup,
            Self::Supervised(_) => Containment::Subreaper,
        }
    }

    /// To be called once the command was spawned (or failed to spawn).
    pub(crate) fn spawned(&mut self, pid: Option<u32>) {
        match self {
            Self::Cgroup(cgroup) => cgroup.spawned(),
            Self::Supervised(supervised) => supervised.spawned(pid),
        }
    }

    /// The spawned process has been reaped: its id may be reused and must
    /// not be signalled any more.
    pub(crate) fn reaped(&mut self) {
        if let Self::Supervised(supervised) = self {
            supervised.reaped();
        }
    }

    /// Starts killing everything the command started, without waiting.
    pub(crate) fn kill_all(&mut self) {
        match self {
            Self::Cgroup(cgroup) => cgroup.kill(),
            Self::Supervised(supervised) => supervised.release(),
        }
    }

    /// Kills everything the command started and waits until it is gone:
    /// `child` (the process the host spawned) has been reaped and, for a
    /// cgroup, the cgroup is empty and removed.
    pub(crate) async fn end(&mut self, child: &mut Child) {
        self.kill_all();
        match self {
            Self::Cgroup(cgroup) => {
                let _ = child.wait().await;
                cgroup.remove().await;
            }
            Self::Supervised(_) => {
                if tokio::time::timeout(SUPERVISOR_GRACE, child.wait())
                    .await
                    .is_err()
                {
                    tracing::warn!(
                        "a shell command's supervisor did not finish within {}s; killing it \
                         and its process group",
                        SUPERVISOR_GRACE.as_secs()
                    );
                    if let Some(pid) = child.id().and_then(|p| libc::pid_t::try_from(p).ok()) {
                        // SAFETY: plain syscall on the group led by our own
                        // child, which has not been reaped (so its id is not
                        // reused).
                        unsafe {
                            libc::killpg(pid, libc::SIGKILL);
                        }
                    }
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
            }
        }
    }
}

/// `fd`, or a duplicate of it numbered 3 or more: a descriptor a `pre_exec`
/// hook uses must not be one of 0, 1 and 2, which the child's standard
/// streams replace before the hook runs (a host started with a standard
/// stream closed gets such numbers for new descriptors).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: plain syscall duplicating a descriptor we own; on success the
    // new descriptor is ours alone.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `dup` was just opened and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(dup) })
}
