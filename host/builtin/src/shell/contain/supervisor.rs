//! A supervising subreaper per call, for hosts that cannot create cgroups.
//!
//! Between fork and exec, the child the host spawned marks itself a *child
//! subreaper* (`PR_SET_CHILD_SUBREAPER`) and forks once more: the grandchild
//! goes on to exec the command, the child stays behind as the call's
//! supervisor. Whatever the command's processes do with sessions and process
//! groups (`setsid`, `nohup`, a double fork, `disown`), when one's parent
//! dies the kernel reparents it to its nearest subreaper ancestor — the
//! supervisor, never the host or init. So every process of the call stays a
//! descendant of its supervisor until it is killed, and the kernel does the
//! attribution: two calls running at once have two supervisors and never
//! see each other's processes, and the host process itself is not a
//! subreaper (orphans of other tools' processes are not handed to it, and
//! nothing reaps children behind the runtime's back).
//!
//! The supervisor closes every descriptor but its *lifeline* (the read end
//! of a pipe whose write end only the host holds), ignores every signal that
//! can be ignored, and waits until the command exits or the lifeline closes —
//! the host timed out, dropped the call, or died. Then it SIGKILLs all its
//! children, reaps them, and repeats (each round catches the orphans the
//! last one made) until it has no child left; then it exits as the command
//! did (the same code, or the same signal), which is when the host sees the
//! command end and its output pipes close.
//!
//! Limits: the supervisor runs as the host's user, so a command can kill it
//! with SIGKILL (`kill -9 $PPID`); what the command started then falls to
//! init and is not killed (the host notices nothing but the supervisor's
//! death). A command can stop it with SIGSTOP; the host sends SIGCONT when
//! it lets go. It needs `/proc/thread-self/children` (`CONFIG_PROC_CHILDREN`)
//! to find its children; without it, this mode is refused.

use std::ffi::{CStr, c_int, c_long, c_uint, c_ulong};
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::Path;
use std::{mem, ptr};

use tokio::process::Command;

use super::{ContainmentError, above_stdio};

/// The supervisor's children, as listed by the kernel.
const CHILDREN: &CStr = c"/proc/thread-self/children";

/// How the supervisor exits when the command's status is unknown.
const UNKNOWN_STATUS: c_int = 125;

/// Whether a supervisor can work on this machine.
pub(super) fn check() -> Result<(), ContainmentError> {
    let path = Path::new(CHILDREN.to_str().unwrap_or_default());
    if path.exists() {
        Ok(())
    } else {
        Err(ContainmentError::NoChildrenList {
            path: path.to_owned(),
        })
    }
}

/// The host's side of one supervised call. Dropping it lets go of the
/// lifeline: the supervisor kills everything and exits.
#[derive(Debug)]
pub(crate) struct Supervised {
    /// The write end, held by the host alone until it lets go.
    lifeline: Option<OwnedFd>,
    /// The read end, for the supervisor; closed in the host once spawned.
    supervisor_end: Option<OwnedFd>,
    /// The supervisor, once spawned.
    pid: Option<libc::pid_t>,
}

impl Supervised {
    /// A lifeline for a supervisor still to be spawned.
    pub(super) fn new() -> Result<Self, ContainmentError> {
        check()?;
        let (reader, writer) = io::pipe().map_err(ContainmentError::Lifeline)?;
        let reader = above_stdio(reader.into()).map_err(ContainmentError::Lifeline)?;
        Ok(Self {
            lifeline: Some(writer.into()),
            supervisor_end: Some(reader),
            pid: None,
        })
    }

    /// Makes the spawned process become the supervisor and fork the
    /// command. Must be the last `pre_exec` hook of `cmd`.
    pub(super) fn install(&self, cmd: &mut Command) {
        let Some(end) = &self.supervisor_end else {
            return;
        };
        let fd = end.as_raw_fd();
        // SAFETY: `split` and everything it calls make only
        // async-signal-safe system calls, allocate nothing and cannot
        // panic, as a hook between fork and exec must. `fd` is open in the
        // forked child: the host closes it only once the child was spawned.
        unsafe {
            cmd.pre_exec(move || split(fd));
        }
        // Killing the supervisor would set the command's processes free:
        // when the call is dropped, the lifeline closes instead.
        cmd.kill_on_drop(false);
    }

    /// The supervisor was spawned (or failed to be).
    pub(super) fn spawned(&mut self, pid: Option<u32>) {
        self.supervisor_end = None;
        self.pid = pid.and_then(|p| libc::pid_t::try_from(p).ok());
    }

    /// The supervisor was reaped: never signal its id again.
    pub(super) fn reaped(&mut self) {
        self.pid = None;
    }

    /// Lets go of the lifeline, and wakes the supervisor should the
    /// command have stopped it.
    pub(super) fn release(&mut self) {
        if self.lifeline.take().is_some()
            && let Some(pid) = self.pid
        {
            // SAFETY: plain syscall. `pid` is the host's child and not
            // reaped (so not reused): the host calls `reaped` as soon as it
            // has reaped it, and a dropped call drops this value first.
            unsafe {
                libc::kill(pid, libc::SIGCONT);
            }
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.release();
    }
}

// Everything below runs in the spawned child between fork and exec, in a
// copy of a multi-threaded process: only async-signal-safe calls, no
// allocation, no panics.

/// Becomes a subreaper and forks: the grandchild returns (and execs the
/// command), the child becomes the supervisor and never returns.
///
/// The grandchild waits until the supervisor has closed its descriptors.
/// The host's spawn returns only once every copy of the runtime's
/// exec-status channel is closed; were the command to run first, it could
/// stop the supervisor (`kill -STOP $PPID`) while the supervisor still held
/// its copy, and the host's spawn would block past every deadline.
fn split(lifeline: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls. The process is single-threaded (a child
    // of fork), so a second fork copies no lock another thread holds.
    unsafe {
        if libc::prctl(
            libc::PR_SET_CHILD_SUBREAPER,
            c_ulong::from(1u8),
            c_ulong::from(0u8),
            c_ulong::from(0u8),
            c_ulong::from(0u8),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        // The supervisor's "all closed": its write end closes with the rest.
        let mut gate: [c_int; 2] = [-1, -1];
        if libc::pipe2(gate.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        let [gate_read, gate_write] = gate;
        match libc::fork() {
            -1 => {
                let err = io::Error::last_os_error();
                libc::close(gate_read);
                libc::close(gate_write);
                Err(err)
            }
            // The command: subreaping is not inherited by fork.
            0 => {
                libc::close(gate_write);
                wait_for_eof(gate_read);
                libc::close(gate_read);
                Ok(())
            }
            command => supervise(command, lifeline),
        }
    }
}

/// Blocks until every write end of `fd`'s pipe is closed.
fn wait_for_eof(fd: RawFd) {
    let mut byte = 0u8;
    loop {
        // SAFETY: reading at most one byte into `byte`.
        let n = unsafe { libc::read(fd, (&raw mut byte).cast(), 1) };
        let interrupted = n < 0 && errno() == Some(libc::EINTR);
        if n <= 0 && !interrupted {
            return;
        }
    }
}

/// The supervisor's life: wait, then kill everything, then exit as the
/// command did.
fn supervise(command: libc::pid_t, lifeline: RawFd) -> ! {
    close_all_but(lifeline);
    ignore_signals();
    let sigchld = sigchld_fd();
    let mut status = None;
    // Until the command ends or the host lets go.
    while reap(command, &mut status) && status.is_none() {
        let mut fds = [poll_in(lifeline), poll_in(sigchld)];
        let timeout = if sigchld < 0 { 50 } else { -1 };
        // SAFETY: `fds` is a valid array of two pollfd.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if ready > 0 && fds[0].revents != 0 {
            break;
        }
        drain(sigchld);
    }
    // Then nothing else may live.
    while reap(command, &mut status) {
        kill_children();
        let mut fds = [poll_in(sigchld)];
        // SAFETY: `fds` is a valid array of one pollfd.
        unsafe { libc::poll(fds.as_mut_ptr(), 1, 10) };
        drain(sigchld);
    }
    exit_as(status)
}

fn poll_in(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

fn errno() -> Option<i32> {
    io::Error::last_os_error().raw_os_error()
}

/// Closes every descriptor but `keep` (the output pipes, so that the host
/// sees them close when the last process of the call is gone; the
/// runtime's exec-status channel, so that the host's spawn returns; the
/// gate's write end, which lets the command run; and the lifeline's write
/// end, which only the host may hold).
fn close_all_but(keep: RawFd) {
    let close_range = |first: c_uint, last: c_uint| {
        // SAFETY: plain syscall; closing descriptors this process owns.
        unsafe {
            libc::syscall(
                libc::SYS_close_range,
                c_long::from(first),
                c_long::from(last),
                c_long::from(0u8),
            ) == 0
        }
    };
    let keep_u = c_uint::try_from(keep).unwrap_or(0);
    if (keep_u == 0 || close_range(0, keep_u - 1)) && close_range(keep_u + 1, c_uint::MAX) {
        return;
    }
    // Kernels before 5.9: one by one, up to the descriptor limit.
    // SAFETY: `limit` is a valid rlimit to write to.
    let mut limit: libc::rlimit = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20)
    } else {
        1024
    };
    for fd in 0..c_int::try_from(max).unwrap_or(1024) {
        if fd != keep {
            // SAFETY: plain syscall on a descriptor of this process.
            unsafe { libc::close(fd) };
        }
    }
}

/// Ignores every signal that can be ignored and would end the process by
/// default, so that only SIGKILL can end the supervisor early.
fn ignore_signals() {
    for sig in 1..=64 {
        if matches!(
            sig,
            libc::SIGKILL
                | libc::SIGSTOP
                | libc::SIGCHLD
                | libc::SIGCONT
                | libc::SIGSEGV
                | libc::SIGBUS
                | libc::SIGFPE
                | libc::SIGILL
                | libc::SIGTRAP
                | libc::SIGABRT
                | libc::SIGSYS
        ) {
            continue;
        }
        set_disposition(sig, libc::SIG_IGN);
    }
}

fn set_disposition(sig: c_int, handler: libc::sighandler_t) {
    // SAFETY: a zeroed sigaction is a valid one (no flags, empty mask);
    // sigaction is async-signal-safe. Numbers the C library reserves are
    // refused with EINVAL, which is fine.
    unsafe {
        let mut action: libc::sigaction = mem::zeroed();
        action.sa_sigaction = handler;
        libc::sigaction(sig, &action, ptr::null_mut());
    }
}

/// Blocks SIGCHLD and returns a signalfd for it (or -1: then the loops poll
/// with a timeout).
fn sigchld_fd() -> RawFd {
    // SAFETY: the set is initialised by sigemptyset before use; all calls
    // are async-signal-safe system calls or pure bit operations.
    unsafe {
        let mut set: libc::sigset_t = mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        if libc::sigprocmask(libc::SIG_BLOCK, &set, ptr::null_mut()) != 0 {
            return -1;
        }
        libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC)
    }
}

fn drain(fd: RawFd) {
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 1024];
    // SAFETY: reading into a buffer of the given length.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

/// Reaps every child that has ended, noting the command's status. Returns
/// whether the supervisor still has children.
fn reap(command: libc::pid_t, status: &mut Option<c_int>) -> bool {
    loop {
        let mut st: c_int = 0;
        // SAFETY: plain syscall writing to `st`.
        let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if pid > 0 {
            if pid == command && status.is_none() {
                *status = Some(st);
            }
            continue;
        }
        if pid == 0 {
            return true;
        }
        match errno() {
            Some(libc::EINTR) => continue,
            Some(libc::ECHILD) => return false,
            _ => return true,
        }
    }
}

/// SIGKILLs every child of the supervisor. A child cannot be reaped by
/// anyone else, so its number cannot have been reused.
fn kill_children() {
    // SAFETY: a NUL-terminated path; plain syscall.
    let fd = unsafe { libc::open(CHILDREN.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return;
    }
    let kill = |pid: libc::pid_t| {
        if pid > 0 {
            // SAFETY: plain syscall.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    };
    let mut buf = [0u8; 512];
    let (mut pid, mut in_number): (libc::pid_t, bool) = (0, false);
    loop {
        // SAFETY: reading into a buffer of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 && errno() == Some(libc::EINTR) {
            continue;
        }
        let Ok(n) = usize::try_from(n) else { break };
        if n == 0 {
            break;
        }
        // A number may be split between two reads: the state carries over.
        for &b in buf.iter().take(n) {
            if b.is_ascii_digit() {
                pid = pid
                    .wrapping_mul(10)
                    .wrapping_add(libc::pid_t::from(b - b'0'));
                in_number = true;
            } else {
                if in_number {
                    kill(pid);
                }
                (pid, in_number) = (0, false);
            }
        }
    }
    if in_number {
        kill(pid);
    }
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
}

/// Exits with the command's exit code, or dies of the signal it died of.
fn exit_as(status: Option<c_int>) -> ! {
    // SAFETY: system calls only; `_exit` does not run the parent's atexit
    // handlers or flush its buffers, which belong to the host.
    unsafe {
        match status {
            Some(st) if libc::WIFEXITED(st) => libc::_exit(libc::WEXITSTATUS(st)),
            Some(st) if libc::WIFSIGNALED(st) => {
                let sig = libc::WTERMSIG(st);
                // No core file of the supervisor: the command's, if any,
                // was written already.
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                set_disposition(sig, libc::SIG_DFL);
                let mut set: libc::sigset_t = mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, sig);
                libc::sigprocmask(libc::SIG_UNBLOCK, &set, ptr::null_mut());
                libc::kill(libc::getpid(), sig);
                libc::_exit(128 + sig)
            }
            _ => libc::_exit(UNKNOWN_STATUS),
        }
    }
}
