//! The MCP server's line transport: one JSON-RPC message per line, over any
//! pair of byte streams (stdin and stdout in `toolhost serve`).
//!
//! rmcp's own stdio transport drops a line it cannot parse without a word
//! (and a line past its length cap too), so a client whose request was too
//! deep or held `1e400` waits forever. This one answers every such request
//! with a JSON-RPC error ([`Refusal`]) and reads on: the next request on
//! the connection is served as usual. Only a malformed *notification* goes
//! unanswered, as JSON-RPC requires.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use super::undecodable_frame_reply::Refusal;

/// The longest line accepted, in bytes: 16 MiB, rmcp's own cap on stdio.
/// A longer line is skipped as it arrives (never buffered whole) and
/// answered with an error.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// How much of an over-long line is kept to read its id from.
const HEAD_BYTES: usize = 4 << 10;

/// A reply being written, kept across cancelled calls of
/// [`Transport::receive`].
type Writing = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

/// Serves MCP messages as lines on `read` and `write`, answering lines that
/// do not decode (see the module documentation).
pub(crate) struct LineTransport<R, W> {
    lines: LineReader<R>,
    write: LineWriter<W>,
    replying: Option<Writing>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading lines of at most [`MAX_LINE_BYTES`] from `read`
    /// and writing to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self::with_max_line(read, write, MAX_LINE_BYTES)
    }

    fn with_max_line(read: R, write: W, max: usize) -> Self {
        Self {
            lines: LineReader::new(read, max),
            write: LineWriter(Arc::new(Mutex::new(Some(write)))),
            replying: None,
        }
    }

    /// Starts writing `refusal`'s reply; [`Transport::receive`] finishes it
    /// before reading on.
    fn refuse(&mut self, refusal: Refusal) {
        tracing::debug!(
            target: "toolhost::mcp",
            code = refusal.code().0,
            "refused an MCP message: {}",
            refusal.error.message
        );
        if refusal.notification {
            return;
        }
        self.replying = Some(Box::pin(self.write.write_line(refusal.to_json())));
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let line = serde_json::to_vec(&item).map_err(io::Error::from);
        let write = self.write.clone();
        async move { write.write_line(line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Everything here is cancel-safe: the reply in progress and the
            // partial line live in `self`, and resume on the next call.
            if let Some(reply) = self.replying.as_mut() {
                let written = reply.await;
                self.replying = None;
                if let Err(e) = written {
                    tracing::debug!(target: "toolhost::mcp", "cannot answer on stdout: {e}");
                    return None;
                }
            }
            let refusal = match self.lines.next().await {
                Line::Complete => {
                    let frame = trim_frame(&self.lines.line);
                    if frame.iter().all(u8::is_ascii_whitespace) {
                        None
                    } else {
                        match toolhost_core::tool::check_unique_keys(frame) {
                            Err(repeated) => Some(Refusal::repeated_key(frame, &repeated)),
                            Ok(()) => {
                                match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(frame)
                                {
                                    Ok(message) => {
                                        self.lines.line.clear();
                                        return Some(message);
                                    }
                                    Err(e) => Some(Refusal::for_frame(frame, &e)),
                                }
                            }
                        }
                    }
                }
                Line::TooLong(len) => {
                    Some(Refusal::too_large(&self.lines.line, len, self.lines.max))
                }
                Line::End => return None,
                Line::Failed(e) => {
                    tracing::error!(target: "toolhost::mcp", "cannot read MCP messages: {e}");
                    return None;
                }
            };
            self.lines.line.clear();
            if let Some(refusal) = refusal {
                self.refuse(refusal);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let writer = self.write.0.lock().await.take();
        if let Some(mut writer) = writer {
            writer.shutdown().await?;
        }
        Ok(())
    }
}

/// A line without its `\r`, and without a UTF-8 byte order mark (RFC 8259
/// lets a reader ignore one).
fn trim_frame(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// The writing end, shared by the replies of the server and of this
/// transport; one line is written whole before the next starts.
struct LineWriter<W>(Arc<Mutex<Option<W>>>);

impl<W> Clone for LineWriter<W> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> LineWriter<W> {
    fn write_line(
        &self,
        mut line: Vec<u8>,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let writer = self.0.clone();
        async move {
            line.push(b'\n');
            let mut writer = writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            };
            writer.write_all(&line).await?;
            writer.flush().await
        }
    }
}

/// What one call of [`LineReader::next`] found.
enum Line {
    /// A whole line (without its `\n`) is in [`LineReader::line`].
    Complete,
    /// A line of this many bytes, more than the cap, was skipped; its
    /// beginning is in [`LineReader::line`].
    TooLong(usize),
    /// The stream ended; a last line without `\n` is dropped, as it may be
    /// cut short.
    End,
    /// Reading failed.
    Failed(io::Error),
}

/// Reads lines of at most `max` bytes without ever holding more.
struct LineReader<R> {
    read: BufReader<R>,
    max: usize,
    /// The line read so far (or the beginning of an over-long one).
    line: Vec<u8>,
    /// The length of the current line, counting skipped bytes.
    len: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(read: R, max: usize) -> Self {
        Self {
            read: BufReader::new(read),
            max,
            line: Vec::new(),
            len: 0,
        }
    }

    /// Reads up to the end of the next line. Cancel-safe: a partial line is
    /// kept and completed by the next call. The caller clears
    /// [`LineReader::line`] once it has used it.
    async fn next(&mut self) -> Line {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => return Line::Failed(e),
            };
            if available.is_empty() {
                return Line::End;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let taken = newline.map_or(available.len(), |i| i + 1);
            let content = &available[..newline.unwrap_or(taken)];
            self.len += content.len();
            if self.len <= self.max {
                self.line.extend_from_slice(content);
            } else {
                // Keep only the beginning, to read the id from.
                let room = HEAD_BYTES.saturating_sub(self.line.len());
                self.line
                    .extend_from_slice(&content[..room.min(content.len())]);
                self.line.truncate(HEAD_BYTES);
            }
            self.read.consume(taken);
            if newline.is_some() {
                let len = std::mem::take(&mut self.len);
                return if len <= self.max {
                    Line::Complete
                } else {
                    Line::TooLong(len)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

    use super::*;

    /// A transport on in-memory pipes; returns it with the client's ends.
    fn transport(
        max: usize,
    ) -> (
        LineTransport<DuplexStream, DuplexStream>,
        DuplexStream,
        BufReader<DuplexStream>,
    ) {
        let (client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_in) = tokio::io::duplex(1 << 20);
        (
            LineTransport::with_max_line(server_in, server_out, max),
            client_out,
            BufReader::new(client_in),
        )
    }

    async fn reply(from: &mut BufReader<DuplexStream>) -> Value {
        let mut line = String::new();
        from.read_line(&mut line).await.unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn ping(id: u64) -> String {
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
        )
    }

    #[tokio::test]
    async fn c6_undecodable_lines_are_answered_and_the_next_line_is_read() {
        let (mut transport, mut client, mut replies) = transport(1 << 20);
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let input = format!(
            "{deep}\nnot json\n\n{}\n{}",
            r#"{"jsonrpc":"1.0","method":"notifications/cancelled"}"#,
            ping(6)
        );
        let writer = tokio::spawn(async move {
            client.write_all(input.as_bytes()).await.unwrap();
            client
        });
        let message = transport.receive().await.unwrap();
        assert!(
            matches!(message, rmcp::model::JsonRpcMessage::Request(ref r) if r.id == rmcp::model::RequestId::Number(6)),
            "{message:?}"
        );
        let _client = writer.await.unwrap();
        let deep = reply(&mut replies).await;
        assert_eq!(deep["id"], 5);
        assert_eq!(deep["error"]["code"], -32700);
        let garbage = reply(&mut replies).await;
        assert_eq!(garbage["id"], Value::Null);
        assert_eq!(garbage["error"]["code"], -32700);
        // The malformed notification got no answer: nothing else is waiting.
        transport.close().await.unwrap();
        let mut rest = String::new();
        replies.read_line(&mut rest).await.unwrap();
        assert_eq!(rest, "");
    }

    #[tokio::test]
    async fn c12_a_frame_that_repeats_a_key_is_refused_naming_it() {
        let (mut transport, mut client, mut replies) = transport(1 << 20);
        let input = format!(
            "{}\n{}",
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{"path":"/etc/passwd","path":"/safe/x"}}}"#,
            ping(8)
        );
        let writer = tokio::spawn(async move {
            client.write_all(input.as_bytes()).await.unwrap();
            client
        });
        let message = transport.receive().await.unwrap();
        assert!(
            matches!(message, rmcp::model::JsonRpcMessage::Request(ref r) if r.id == rmcp::model::RequestId::Number(8)),
            "{message:?}"
        );
        let _client = writer.await.unwrap();
        let refused = reply(&mut replies).await;
        assert_eq!(refused["id"], 7);
        assert_eq!(refused["error"]["code"], -32600);
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(
                r#"the key "path" appears more than once in the object at /params/arguments"#
            ),
            "{message}"
        );
    }

    #[tokio::test]
    async fn c6_an_over_long_line_is_skipped_answered_and_the_next_line_is_read() {
        let (mut transport, mut client, mut replies) = transport(1000);
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{{"name":"x","arguments":{{"s":"{}"}}}}}}"#,
            "x".repeat(64 << 10)
        );
        let input = format!("{long}\r\n{}", ping(2));
        let writer = tokio::spawn(async move {
            client.write_all(input.as_bytes()).await.unwrap();
            client
        });
        let message = transport.receive().await.unwrap();
        assert!(matches!(message, rmcp::model::JsonRpcMessage::Request(_)));
        let _client = writer.await.unwrap();
        let refused = reply(&mut replies).await;
        assert_eq!(refused["id"], "big");
        assert_eq!(refused["error"]["code"], -32600);
        let text = refused["error"]["message"].as_str().unwrap();
        assert!(
            text.contains(&format!(
                "{} bytes exceeds the limit of 1000 bytes",
                long.len() + 1
            )),
            "{text}"
        );
        assert!(transport.lines.line.capacity() <= 1000 + (8 << 10));
    }

    #[tokio::test]
    async fn c6_the_end_of_input_ends_the_transport() {
        let (mut transport, client, _replies) = transport(1000);
        drop(client);
        assert!(transport.receive().await.is_none());
    }
}
