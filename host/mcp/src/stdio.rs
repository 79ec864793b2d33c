//! Serving MCP over this process's stdin and stdout.
//!
//! Over stdio, stdout *is* the protocol: one stray line on it breaks the
//! client. Nothing in toolhost writes there (logs go to stderr, guests'
//! output to the log, children's stdout to pipes), and [`ProtocolStdio::take`]
//! makes sure of it at the descriptor level: the protocol keeps a private
//! copy of the stdout descriptor, and descriptor 1 is pointed at stderr, so
//! anything that still writes to "stdout" — a library, an inherited
//! descriptor — lands in the log stream instead.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

use rmcp::ServiceExt as _;
use rmcp::service::QuitReason;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::error::ServeError;
use super::line_transport::LineTransport;
use super::server::McpServer;

/// The protocol's ends of stdin and stdout, taken from the process.
pub struct ProtocolStdio {
    reader: Box<dyn AsyncRead + Send + Unpin>,
    writer: Box<dyn AsyncWrite + Send + Unpin>,
}

impl ProtocolStdio {
    /// Takes stdin and stdout for the protocol and points descriptor 1 at
    /// stderr. Call it once, early, before anything could print. Must be
    /// called inside a Tokio runtime.
    ///
    /// Pipes (how MCP clients start servers) are driven without blocking
    /// threads, on descriptions of their own, so the process's descriptors
    /// keep their flags; anything else (a terminal, a file, a socket) goes
    /// through Tokio's blocking standard streams.
    pub fn take() -> io::Result<Self> {
        // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor that nothing else
        // owns; it is wrapped in an OwnedFd at once.
        let out = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
        if out < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `out` is a valid descriptor owned by nobody else.
        let out = unsafe { OwnedFd::from_raw_fd(out) };
        // SAFETY: dup2 onto descriptor 1, which the process owns; from here
        // on, writes to stdout go to stderr.
        if unsafe { libc::dup2(2, 1) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let writer: Box<dyn AsyncWrite + Send + Unpin> = match reopen_fifo(out.as_raw_fd(), true) {
            Some(file) => Box::new(tokio::net::unix::pipe::Sender::from_file(file)?),
            None => Box::new(tokio::fs::File::from_std(File::from(out))),
        };
        let reader: Box<dyn AsyncRead + Send + Unpin> = match reopen_fifo(0, false) {
            Some(file) => Box::new(tokio::net::unix::pipe::Receiver::from_file(file)?),
            None => Box::new(tokio::io::stdin()),
        };
        Ok(Self { reader, writer })
    }

    /// The same line protocol over any other pair of byte streams: a
    /// socket, or a pipe in a test.
    pub fn from_streams(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        Self {
            reader: Box::new(reader),
            writer: Box::new(writer),
        }
    }
}

/// Opens descriptor `fd` again through `/proc/self/fd`, non-blocking, if it
/// is a FIFO: a description of its own, so setting `O_NONBLOCK` on it does
/// not change the descriptor other processes share.
fn reopen_fifo(fd: i32, write: bool) -> Option<File> {
    let file = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{fd}"))
        .ok()?;
    file.metadata()
        .ok()
        .filter(|m| m.file_type().is_fifo())
        .map(|_| file)
}

/// Serves `server` on `stdio` until the client closes stdin or `shutdown`
/// fires; returns why it stopped. Fails if the client's `initialize` does
/// not arrive or is malformed.
///
/// Every request that cannot be decoded (not JSON, nested too deep, a
/// number out of range, a line over [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES))
/// is answered with a JSON-RPC error carrying its id where it can be read,
/// and the connection carries on.
pub async fn serve_stdio(
    server: McpServer,
    stdio: ProtocolStdio,
    shutdown: CancellationToken,
) -> Result<QuitReason, ServeError> {
    let transport = LineTransport::new(stdio.reader, stdio.writer);
    let running = server
        .serve_with_ct(transport, shutdown)
        .await
        .map_err(|e| ServeError::Handshake(Box::new(e)))?;
    running.waiting().await.map_err(ServeError::Session)
}
