//! Rule C10: no UDP — nor any other datagram, raw or packet socket — leaves
//! the browser, whatever its flags say and whatever a page asks of it.
//!
//! A seccomp-bpf filter (compiled by `seccompiler`, installed with
//! `no_new_privs` between fork and exec, and inherited by every process the
//! browser starts) makes the kernel answer `EPERM` to:
//!
//! - `socket`/`socketpair` of any family but `AF_UNIX`, `AF_NETLINK`,
//!   `AF_INET` and `AF_INET6` (so `AF_PACKET`, `AF_VSOCK`, `AF_TIPC`, …);
//! - `AF_INET`/`AF_INET6` of a type other than `SOCK_STREAM`, compared on
//!   the bits the kernel takes as the type (`SOCK_TYPE_MASK`, 0xf: the
//!   `SOCK_NONBLOCK` and `SOCK_CLOEXEC` flags are above it, and any other
//!   flag makes the kernel refuse the call itself), or of a protocol other
//!   than 0 or TCP (no SCTP or MPTCP);
//! - `io_uring_setup` (an io_uring can open sockets without `socket`) and
//!   `pidfd_getfd` (which copies a socket out of another process);
//! - on x86_64, the same calls through the x32 ABI. 32-bit calls (`int
//!   0x80`, where `socketcall` lives) fail the filter's architecture check,
//!   which kills the process.
//!
//! Everything else is allowed: the browser keeps its Unix sockets, its
//! netlink sockets and TCP (which the proxy restricts).

use std::collections::BTreeMap;
use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use tokio::process::Command;

/// Why the filter could not be built; the browser is then not started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SocketFilterError {
    /// The filter does not compile for this machine (an architecture
    /// `seccompiler` does not know, or a rule it refuses).
    #[error("cannot build the browser's socket filter for {arch}: {source}")]
    Build {
        /// The architecture the host was built for.
        arch: &'static str,
        /// What `seccompiler` said.
        #[source]
        source: seccompiler::BackendError,
    },
}

/// A compiled filter, ready to be installed in children.
#[derive(Debug, Clone)]
pub(crate) struct SocketFilter {
    program: BpfProgram,
}

/// The x32 ABI's syscalls are the x86_64 numbers with this bit set, under
/// the same audit architecture.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

impl SocketFilter {
    /// The filter of rule C10 for the architecture the host was built for.
    pub(crate) fn new() -> Result<Self, SocketFilterError> {
        let arch = std::env::consts::ARCH;
        let build = |source| SocketFilterError::Build { arch, source };
        let target = TargetArch::try_from(arch).map_err(build)?;
        let socket = socket_rules().map_err(build)?;
        let mut rules = BTreeMap::new();
        for nr in numbers(libc::SYS_socket) {
            rules.insert(nr, socket.clone());
        }
        for nr in numbers(libc::SYS_socketpair) {
            rules.insert(nr, socket.clone());
        }
        // An empty chain matches every call of the syscall.
        for nr in numbers(libc::SYS_io_uring_setup) {
            rules.insert(nr, Vec::new());
        }
        for nr in numbers(libc::SYS_pidfd_getfd) {
            rules.insert(nr, Vec::new());
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            target,
        )
        .map_err(build)?;
        let program = BpfProgram::try_from(filter).map_err(build)?;
        Ok(Self { program })
    }

    /// Makes `cmd`'s child install the filter just before it executes its
    /// program; spawning fails (and nothing runs) if the kernel refuses it.
    /// Whatever `pre_exec` step comes later runs under the filter too.
    pub(crate) fn install(&self, cmd: &mut Command) {
        let program = self.program.clone();
        // SAFETY: the closure runs between fork and exec, where only
        // async-signal-safe work is allowed: `apply_filter` makes two
        // syscalls (`prctl(PR_SET_NO_NEW_PRIVS)` and `seccomp`) on the
        // program compiled above, in the parent, and allocates nothing on
        // either path; the error is rebuilt from its raw code, which does
        // not allocate either.
        unsafe {
            cmd.pre_exec(move || {
                seccompiler::apply_filter(&program).map_err(|e| {
                    let code = match &e {
                        seccompiler::Error::Prctl(io) | seccompiler::Error::Seccomp(io) => {
                            io.raw_os_error()
                        }
                        _ => None,
                    };
                    io::Error::from_raw_os_error(code.unwrap_or(libc::EINVAL))
                })
            });
        }
    }

    /// A filter the kernel refuses to load (its last instruction is not a
    /// return), to show that a launch whose filter fails does not run.
    #[cfg(test)]
    pub(crate) fn unloadable() -> Self {
        Self {
            program: vec![seccompiler::sock_filter {
                code: 0x20, // BPF_LD | BPF_W | BPF_ABS
                jt: 0,
                jf: 0,
                k: 0,
            }],
        }
    }
}

/// `nr` and, on x86_64, its x32 twin.
fn numbers(nr: i64) -> Vec<i64> {
    #[cfg(target_arch = "x86_64")]
    return vec![nr, nr | X32_SYSCALL_BIT];
    #[cfg(not(target_arch = "x86_64"))]
    return vec![nr];
}

/// Rules on `socket(domain, type, protocol)` (and `socketpair`, whose first
/// three arguments are the same); any rule that matches refuses the call.
/// The arguments are `int`s, so only their low 32 bits are compared, as the
/// kernel reads them.
fn socket_rules() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let cond = |arg, op, value: i32| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, u64::from(value as u32))
    };
    // SOCK_TYPE_MASK in the kernel: the type proper, below the flags.
    const TYPE_BITS: i32 = 0xf;
    const _: () = assert!(libc::SOCK_STREAM == 1 && TYPE_BITS & libc::SOCK_NONBLOCK == 0);
    const _: () = assert!(TYPE_BITS & libc::SOCK_CLOEXEC == 0);
    // A family outside these four.
    let mut rules = vec![SeccompRule::new(vec![
        cond(0, SeccompCmpOp::Ne, libc::AF_UNIX)?,
        cond(0, SeccompCmpOp::Ne, libc::AF_NETLINK)?,
        cond(0, SeccompCmpOp::Ne, libc::AF_INET)?,
        cond(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
    ])?];
    for family in [libc::AF_INET, libc::AF_INET6] {
        // `type & 0xf != SOCK_STREAM` (1) is: bit 0 clear, or bit 1, 2 or
        // 3 set — one masked comparison each, as the filter language has
        // no masked inequality.
        rules.push(SeccompRule::new(vec![
            cond(0, SeccompCmpOp::Eq, family)?,
            cond(1, SeccompCmpOp::MaskedEq(1), 0)?,
        ])?);
        for bit in [2, 4, 8] {
            rules.push(SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Eq, family)?,
                cond(1, SeccompCmpOp::MaskedEq(bit), bit as i32)?,
            ])?);
        }
        // A protocol other than the default (0) and TCP.
        rules.push(SeccompRule::new(vec![
            cond(0, SeccompCmpOp::Eq, family)?,
            cond(2, SeccompCmpOp::Ne, 0)?,
            cond(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP)?,
        ])?);
    }
    Ok(rules)
}

/// Tries to open each kind of socket the filter is about, and reports one
/// line per attempt: `C10PROBE <name> ok` or `C10PROBE <name> errno <n>`.
#[cfg(test)]
pub(crate) fn probe_report() -> String {
    use std::fmt::Write as _;

    const ETH_P_ALL_BE: i32 = (libc::ETH_P_ALL as u16).to_be() as i32;
    let sockets: &[(&str, i32, i32, i32)] = &[
        ("inet_dgram", libc::AF_INET, libc::SOCK_DGRAM, 0),
        (
            "inet_dgram_nonblock_cloexec",
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        ),
        (
            "inet_dgram_udp",
            libc::AF_INET,
            libc::SOCK_DGRAM,
            libc::IPPROTO_UDP,
        ),
        (
            "inet_icmp",
            libc::AF_INET,
            libc::SOCK_DGRAM,
            libc::IPPROTO_ICMP,
        ),
        ("inet6_dgram", libc::AF_INET6, libc::SOCK_DGRAM, 0),
        (
            "inet_raw_udp",
            libc::AF_INET,
            libc::SOCK_RAW,
            libc::IPPROTO_UDP,
        ),
        (
            "inet6_raw_udp",
            libc::AF_INET6,
            libc::SOCK_RAW,
            libc::IPPROTO_UDP,
        ),
        ("inet_seqpacket", libc::AF_INET, libc::SOCK_SEQPACKET, 0),
        // SOCK_PACKET (10), the legacy packet socket, deprecated in `libc`.
        ("inet_legacy_packet", libc::AF_INET, 10, 0),
        (
            "inet_stream_sctp",
            libc::AF_INET,
            libc::SOCK_STREAM,
            libc::IPPROTO_SCTP,
        ),
        ("packet_raw", libc::AF_PACKET, libc::SOCK_RAW, ETH_P_ALL_BE),
        (
            "packet_dgram",
            libc::AF_PACKET,
            libc::SOCK_DGRAM,
            ETH_P_ALL_BE,
        ),
        ("vsock_dgram", libc::AF_VSOCK, libc::SOCK_DGRAM, 0),
        // What must keep working.
        ("inet_stream", libc::AF_INET, libc::SOCK_STREAM, 0),
        (
            "inet_stream_tcp_nonblock_cloexec",
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            libc::IPPROTO_TCP,
        ),
        ("inet6_stream", libc::AF_INET6, libc::SOCK_STREAM, 0),
        ("unix_stream", libc::AF_UNIX, libc::SOCK_STREAM, 0),
        ("unix_dgram", libc::AF_UNIX, libc::SOCK_DGRAM, 0),
        ("unix_seqpacket", libc::AF_UNIX, libc::SOCK_SEQPACKET, 0),
        (
            "netlink_route",
            libc::AF_NETLINK,
            libc::SOCK_RAW,
            libc::NETLINK_ROUTE,
        ),
    ];
    let mut out = String::new();
    let mut line = |name: &str, r: Result<(), i32>| {
        let _ = match r {
            Ok(()) => writeln!(out, "C10PROBE {name} ok"),
            Err(e) => writeln!(out, "C10PROBE {name} errno {e}"),
        };
    };
    for &(name, domain, ty, proto) in sockets {
        line(name, probe::socket(libc::SYS_socket, domain, ty, proto));
    }
    line(
        "socketpair_inet_dgram",
        probe::pair(libc::AF_INET, libc::SOCK_DGRAM),
    );
    line(
        "socketpair_unix_stream",
        probe::pair(libc::AF_UNIX, libc::SOCK_STREAM),
    );
    line("io_uring_setup", probe::io_uring());
    #[cfg(target_arch = "x86_64")]
    line(
        "x32_inet_dgram",
        probe::socket(
            libc::SYS_socket | X32_SYSCALL_BIT,
            libc::AF_INET,
            libc::SOCK_DGRAM,
            0,
        ),
    );
    line("forked_child_inet_dgram", probe::in_child(libc::AF_INET));
    line("forked_child_unix_dgram", probe::in_child(libc::AF_UNIX));
    out
}

/// Raw calls for [`probe_report`], each closing what it opened.
#[cfg(test)]
mod probe {
    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    fn close(fd: libc::c_long) {
        if let Ok(fd) = i32::try_from(fd) {
            // SAFETY: closes a descriptor this module just opened.
            unsafe { libc::close(fd) };
        }
    }

    /// `syscall(nr, domain, ty, proto)`: `socket` by number, so that the
    /// x32 number can be tried too.
    pub(super) fn socket(nr: libc::c_long, domain: i32, ty: i32, proto: i32) -> Result<(), i32> {
        // SAFETY: a socket call with integer arguments.
        let fd = unsafe { libc::syscall(nr, domain, ty, proto) };
        if fd < 0 {
            return Err(errno());
        }
        close(fd);
        Ok(())
    }

    pub(super) fn pair(domain: i32, ty: i32) -> Result<(), i32> {
        let mut fds = [-1i32; 2];
        // SAFETY: `fds` has room for the two descriptors.
        let r = unsafe { libc::socketpair(domain, ty, 0, fds.as_mut_ptr()) };
        if r < 0 {
            return Err(errno());
        }
        fds.iter().for_each(|&fd| close(fd.into()));
        Ok(())
    }

    pub(super) fn io_uring() -> Result<(), i32> {
        // `struct io_uring_params` is 120 bytes; zeroed asks for defaults.
        let mut params = [0u8; 120];
        // SAFETY: one entry and a zeroed parameter block of the right size.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_io_uring_setup,
                1u32,
                params.as_mut_ptr().cast::<libc::c_void>(),
            )
        };
        if fd < 0 {
            return Err(errno());
        }
        close(fd);
        Ok(())
    }

    /// A datagram socket of `domain` opened by a forked child, which
    /// reports through its exit status.
    pub(super) fn in_child(domain: i32) -> Result<(), i32> {
        // SAFETY: the child makes only async-signal-safe calls (socket,
        // close, _exit).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above.
            unsafe {
                let fd = libc::socket(domain, libc::SOCK_DGRAM, 0);
                let code = if fd < 0 {
                    errno()
                } else {
                    libc::close(fd);
                    0
                };
                libc::_exit(code & 0x7f);
            }
        }
        if pid < 0 {
            return Err(-errno());
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        match libc::WEXITSTATUS(status) {
            0 => Ok(()),
            e => Err(e),
        }
    }
}
