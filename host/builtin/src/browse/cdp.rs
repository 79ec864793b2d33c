//! A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe`:
//! JSON messages separated by NUL bytes, commands on the browser's fd 3,
//! replies and events on its fd 4. A pipe, unlike the debugging port, is
//! reachable by no other process.

use std::collections::VecDeque;

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader,
};
use tokio::net::unix::pipe;

use toolhost_core::error::ToolError;

/// The longest message read from the browser (a full-page screenshot is
/// the largest it sends); a longer one breaks the connection rather than
/// growing the host's memory without end.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The most events kept while waiting for a reply; older ones are dropped
/// (a page can make the browser send events without end).
const MAX_QUEUED_EVENTS: usize = 1024;

/// One DevTools connection.
pub(crate) struct Cdp {
    tx: Box<dyn AsyncWrite + Send + Unpin>,
    rx: BufReader<Box<dyn AsyncRead + Send + Unpin>>,
    next_id: u64,
    /// Events read while waiting for a reply.
    events: VecDeque<Value>,
}

fn broken(e: impl std::fmt::Display) -> ToolError {
    ToolError::failed(format!("the browser's DevTools connection failed: {e}"))
}

impl Cdp {
    pub(crate) fn new(tx: pipe::Sender, rx: pipe::Receiver) -> Self {
        Self::from_streams(Box::new(tx), Box::new(rx))
    }

    /// The same client over any pair of streams (the fuzz target's).
    pub(crate) fn from_streams(
        tx: Box<dyn AsyncWrite + Send + Unpin>,
        rx: Box<dyn AsyncRead + Send + Unpin>,
    ) -> Self {
        Self {
            tx,
            rx: BufReader::with_capacity(1 << 20, rx),
            next_id: 1,
            events: VecDeque::new(),
        }
    }

    async fn read(&mut self) -> Result<Value, ToolError> {
        let mut buf = Vec::new();
        let limit = MAX_MESSAGE_BYTES as u64 + 1;
        let n = (&mut self.rx)
            .take(limit)
            .read_until(0, &mut buf)
            .await
            .map_err(broken)?;
        if n == 0 {
            return Err(broken("the browser closed it"));
        }
        if buf.pop_if(|b| *b == 0).is_none() && n as u64 == limit {
            return Err(broken(format!(
                "a message is longer than {MAX_MESSAGE_BYTES} bytes"
            )));
        }
        serde_json::from_slice(&buf).map_err(broken)
    }

    /// Sends `method` (to `session`, or to the browser) and returns its
    /// result; a protocol error is a failure quoting it.
    pub(crate) async fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, ToolError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(broken)?;
        bytes.push(0);
        self.tx.write_all(&bytes).await.map_err(broken)?;
        loop {
            let msg = self.read().await?;
            if msg.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(err) = msg.get("error") {
                    return Err(ToolError::failed(format!(
                        "the browser refused {method}: {}",
                        err.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("error")
                    )));
                }
                return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
            }
            if msg.get("method").is_some() {
                if self.events.len() == MAX_QUEUED_EVENTS {
                    self.events.pop_front();
                }
                self.events.push_back(msg);
            }
        }
    }

    /// Forgets the events read so far.
    pub(crate) fn clear_events(&mut self) {
        self.events.clear();
    }

    /// Waits for the event `method` on `session`.
    pub(crate) async fn event(&mut self, session: &str, method: &str) -> Result<Value, ToolError> {
        let is_it = |m: &Value| {
            m.get("method").and_then(Value::as_str) == Some(method)
                && m.get("sessionId").and_then(Value::as_str) == Some(session)
        };
        if let Some(pos) = self.events.iter().position(is_it) {
            return Ok(self.events.remove(pos).unwrap_or_default());
        }
        self.events.clear();
        loop {
            let msg = self.read().await?;
            if is_it(&msg) {
                return Ok(msg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(data: Vec<u8>) -> Cdp {
        Cdp::from_streams(
            Box::new(tokio::io::sink()),
            Box::new(std::io::Cursor::new(data)),
        )
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn b6_a_message_over_the_bound_breaks_the_connection() {
        let mut cdp = reading(vec![b' '; MAX_MESSAGE_BYTES + 10]);
        let err = block_on(cdp.call(None, "Browser.getVersion", Value::Null)).unwrap_err();
        assert!(err.to_string().contains("longer than"), "{err}");
        // Exactly at the bound is still read.
        let mut at_bound = vec![b' '; MAX_MESSAGE_BYTES - 20];
        at_bound.extend_from_slice(br#"{"id":1,"result":{}}"#);
        at_bound.push(0);
        assert_eq!(at_bound.len(), MAX_MESSAGE_BYTES + 1);
        let mut cdp = reading(at_bound);
        assert_eq!(
            block_on(cdp.call(None, "Browser.getVersion", Value::Null)).unwrap(),
            json!({})
        );
    }

    #[test]
    fn b6_events_kept_while_waiting_are_bounded() {
        let mut data = Vec::new();
        for i in 0..3 * MAX_QUEUED_EVENTS {
            data.extend_from_slice(
                format!(r#"{{"method":"Log.entryAdded","params":{{"i":{i}}}}}"#).as_bytes(),
            );
            data.push(0);
        }
        data.extend_from_slice(br#"{"id":1,"result":{}}"#);
        data.push(0);
        let mut cdp = reading(data);
        block_on(cdp.call(None, "Log.enable", Value::Null)).unwrap();
        assert_eq!(cdp.events.len(), MAX_QUEUED_EVENTS);
        // The newest are kept.
        assert_eq!(
            cdp.events.back().unwrap()["params"]["i"],
            json!(3 * MAX_QUEUED_EVENTS - 1)
        );
    }
}
