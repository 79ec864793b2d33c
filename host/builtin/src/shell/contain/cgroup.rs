//! A cgroup v2 per call.
//!
//! The host finds the cgroup2 hierarchy in `/proc/self/mountinfo` and its
//! own cgroup in `/proc/self/cgroup`, and creates, for each call, a child
//! cgroup `toolhost-<host pid>-<n>` below its own. The command moves itself
//! into it between fork and exec (a `write` of `0` to `cgroup.procs`, on a
//! descriptor the host opened), so everything it ever starts is born inside.
//! At the end the host writes `1` to `cgroup.kill` (the kernel SIGKILLs every
//! member, including ones forked meanwhile), waits until `cgroup.events` says
//! `populated 0`, and removes the cgroup. A call whose future is dropped
//! kills the cgroup at once; removal finishes on a background thread.
//!
//! Limits: a process allowed to write to another cgroup's `cgroup.procs`
//! (root, or the host's user when the host's cgroup is delegated to it) can
//! move itself out; and if the host itself is killed mid-call, the cgroup
//! and what is in it stay until the next host of the same parent cgroup
//! removes cgroups left by dead hosts.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::process::Command;

use super::{Cgroup2Error, ContainmentError, above_stdio};

/// Prefix of the cgroups the host creates.
const PREFIX: &str = "toolhost-";

/// How long the host waits for a killed cgroup to empty.
const EMPTY_WITHIN: Duration = Duration::from_secs(10);

/// The host's own cgroup directory, found once.
static PARENT: OnceLock<Result<PathBuf, Arc<Cgroup2Error>>> = OnceLock::new();

/// The directory of the host's own cgroup, in which call cgroups are
/// created, if the host may create them there.
pub(crate) fn parent() -> Result<&'static Path, ContainmentError> {
    let found = PARENT.get_or_init(|| {
        let dir = detect()?;
        remove_stale(&dir);
        Ok(dir)
    });
    match found {
        Ok(dir) => Ok(dir),
        Err(why) => Err(ContainmentError::NoCgroup2(why.clone())),
    }
}

fn detect() -> Result<PathBuf, Arc<Cgroup2Error>> {
    let read = |path: &'static str| {
        fs::read_to_string(path).map_err(|source| Cgroup2Error::Read { path, source })
    };
    let own = read("/proc/self/cgroup")?;
    let own = own_cgroup(&own).ok_or(Cgroup2Error::NoEntry)?;
    let dir =
        cgroup_dir(&read("/proc/self/mountinfo")?, own).ok_or_else(|| Cgroup2Error::NoMount {
            cgroup: own.to_owned(),
        })?;
    // Moving a process into a child needs write access to the common
    // ancestor's `cgroup.procs`: the host's own.
    let procs = dir.join("cgroup.procs");
    OpenOptions::new()
        .write(true)
        .open(&procs)
        .map_err(|source| Cgroup2Error::CannotMove {
            path: dir.clone(),
            source,
        })?;
    Ok(dir)
}

/// The cgroup v2 path in the contents of `/proc/self/cgroup` (`0::/path`).
fn own_cgroup(proc_self_cgroup: &str) -> Option<&str> {
    proc_self_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .filter(|path| path.starts_with('/') && !path.ends_with(" (deleted)"))
}

/// Where the cgroup `own` is on a cgroup2 mount listed in `mountinfo` (the
/// contents of `/proc/self/mountinfo`).
fn cgroup_dir(mountinfo: &str, own: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        if fs.split(' ').next() != Some("cgroup2") {
            return None;
        }
        let mut fields = mount.split(' ');
        let root = unescape(fields.nth(3)?);
        let point = unescape(fields.next()?);
        let rest = if root == "/" {
            own
        } else {
            let rest = own.strip_prefix(root.as_str())?;
            if !rest.is_empty() && !rest.starts_with('/') {
                return None;
            }
            rest
        };
        Some(Path::new(&point).join(rest.trim_start_matches('/')))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space, …).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            d.iter()
                .all(|b| (b'0'..=b'7').contains(b))
                .then(|| d.iter().fold(0u32, |n, b| n * 8 + u32::from(b - b'0')))
        });
        match (bytes[i], octal.and_then(|n| u8::try_from(n).ok())) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Kills and removes the cgroups that hosts no longer running left in
/// `parent` (a host killed mid-call cannot remove its own). Best effort.
fn remove_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let dir = entry.path();
            tracing::info!(
                "removing the cgroup {} left by a host that is gone",
                dir.display()
            );
            let _ = fs::write(dir.join("cgroup.kill"), "1");
            remove_in_background(dir);
        }
    }
}

/// One call's cgroup. Dropped before [`CallCgroup::remove`] finished, it
/// kills the cgroup and removes it in the background.
#[derive(Debug)]
pub(crate) struct CallCgroup {
    dir: PathBuf,
    /// `cgroup.procs`, open for the command to move itself in; closed once
    /// it was spawned.
    procs: Option<OwnedFd>,
    removed: bool,
}

impl CallCgroup {
    /// Creates a fresh cgroup below the host's own.
    pub(super) fn create() -> Result<Self, ContainmentError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let parent = parent()?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("{PREFIX}{}-{n}", std::process::id()));
        fs::create_dir(&dir).map_err(|source| ContainmentError::CannotCreate {
            path: dir.clone(),
            source,
        })?;
        let mut cgroup = Self {
            dir,
            procs: None,
            removed: false,
        };
        // From here on, dropping `cgroup` removes the directory again.
        if !cgroup.dir.join("cgroup.kill").exists() {
            return Err(ContainmentError::NoCgroupKill(cgroup.dir.clone()));
        }
        let procs = OpenOptions::new()
            .write(true)
            .open(cgroup.dir.join("cgroup.procs"))
            .and_then(|file| above_stdio(file.into()))
            .map_err(|source| ContainmentError::CannotCreate {
                path: cgroup.dir.clone(),
                source,
            })?;
        cgroup.procs = Some(procs);
        Ok(cgroup)
    }

    /// Makes the command move itself into the cgroup before it execs.
    pub(super) fn install(&self, cmd: &mut Command) {
        let Some(procs) = &self.procs else {
            return;
        };
        let fd = procs.as_raw_fd();
        // SAFETY: the hook only calls `write(2)`, which is
        // async-signal-safe, on a buffer that lives in the binary. The
        // descriptor stays open until `spawned` (after the fork) and is
        // close-on-exec, so the command never holds it.
        unsafe {
            cmd.pre_exec(move || {
                if libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
    }

    /// The command was spawned (or failed to): `cgroup.procs` is no longer
    /// needed.
    pub(super) fn spawned(&mut self) {
        self.procs = None;
    }

    /// SIGKILLs every process in the cgroup.
    pub(super) fn kill(&self) {
        if let Err(e) = fs::write(self.dir.join("cgroup.kill"), "1") {
            tracing::warn!("cannot kill the cgroup {}: {e}", self.dir.display());
        }
    }

    /// Kills the cgroup, waits until it is empty and removes it.
    pub(super) async fn remove(&mut self) {
        self.kill();
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            if !is_populated(&self.dir) {
                match fs::remove_dir(&self.dir) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => {}
                    _ => {
                        self.removed = true;
                        return;
                    }
                }
            }
            if started.elapsed() > EMPTY_WITHIN {
                tracing::warn!(
                    "the cgroup {} was killed but is not empty after {}s; it is left to a \
                     background thread",
                    self.dir.display(),
                    EMPTY_WITHIN.as_secs()
                );
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

impl Drop for CallCgroup {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        self.procs = None;
        let _ = fs::write(self.dir.join("cgroup.kill"), "1");
        if fs::remove_dir(&self.dir).is_err() {
            remove_in_background(self.dir.clone());
        }
    }
}

/// Whether `cgroup.events` of `dir` says the cgroup still has processes.
fn is_populated(dir: &Path) -> bool {
    fs::read_to_string(dir.join("cgroup.events"))
        .map(|events| events.lines().any(|l| l == "populated 1"))
        .unwrap_or(false)
}

/// Removes the (killed) cgroup `dir` once it is empty, from a thread of its
/// own, giving up after [`EMPTY_WITHIN`].
fn remove_in_background(dir: PathBuf) {
    let spawned = std::thread::Builder::new()
        .name("toolhost-cgroup-rm".into())
        .spawn(move || {
            let started = Instant::now();
            while fs::remove_dir(&dir).is_err() {
                if !dir.exists() {
                    return;
                }
                if started.elapsed() > EMPTY_WITHIN {
                    tracing::warn!("cannot remove the cgroup {}", dir.display());
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start a thread to remove a cgroup: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cgroup_is_the_v2_entry() {
        let text = "12:memory:/a\n0::/system.slice/x.service\n";
        assert_eq!(own_cgroup(text), Some("/system.slice/x.service"));
        assert_eq!(own_cgroup("0::/\n"), Some("/"));
        assert_eq!(own_cgroup("4:memory:/a\n"), None);
        assert_eq!(own_cgroup("0::/gone (deleted)\n"), None);
    }

    #[test]
    fn cgroup_dir_is_found_on_the_cgroup2_mount() {
        let hybrid = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        assert_eq!(
            cgroup_dir(hybrid, "/"),
            Some(PathBuf::from("/sys/fs/cgroup/unified/"))
        );
        assert_eq!(
            cgroup_dir(hybrid, "/a/b"),
            Some(PathBuf::from("/sys/fs/cgroup/unified/a/b"))
        );
        let unified = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup_dir(unified, "/user.slice"),
            Some(PathBuf::from("/sys/fs/cgroup/user.slice"))
        );
        // A mount of a subtree: the path is relative to its root.
        let sub = "50 1 0:26 /ctr /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup_dir(sub, "/ctr/job"),
            Some(PathBuf::from("/mnt/my cg/job"))
        );
        assert_eq!(cgroup_dir(sub, "/ctrl"), None);
        assert_eq!(cgroup_dir(sub, "/other"), None);
        assert_eq!(cgroup_dir("", "/"), None);
    }

    #[test]
    fn a_missing_cgroup_keeps_the_os_error_as_its_source() {
        use std::error::Error as _;
        let why = Arc::new(Cgroup2Error::CannotMove {
            path: PathBuf::from("/sys/fs/cgroup/host"),
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        });
        let err = ContainmentError::NoCgroup2(why);
        let cgroup = err.source().expect("the cgroup's problem");
        assert!(matches!(
            cgroup.downcast_ref::<Arc<Cgroup2Error>>().map(|e| &**e),
            Some(Cgroup2Error::CannotMove { .. })
        ));
        let os = cgroup.source().expect("the OS error");
        assert_eq!(
            os.downcast_ref::<io::Error>().map(io::Error::kind),
            Some(io::ErrorKind::PermissionDenied)
        );
        assert_eq!(
            toolhost_core::report(&err),
            format!(
                "no cgroup v2 hierarchy holds this process: cannot move processes out of the \
                 cgroup /sys/fs/cgroup/host: {os}"
            )
        );
    }
}
