//! A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe`:
//! JSON messages separated by NUL bytes, commands on the browser's fd 3,
//! replies and events on its fd 4. A pipe, unlike the debugging port, is
//! reachable by no other process.

use std::collections::VecDeque;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::unix::pipe;

use toolhost_core::error::ToolError;

/// One DevTools connection.
pub(crate) struct Cdp {
    tx: pipe::Sender,
    rx: BufReader<pipe::Receiver>,
    next_id: u64,
    /// Events read while waiting for a reply.
    events: VecDeque<Value>,
}

fn broken(e: impl std::fmt::Display) -> ToolError {
    ToolError::failed(format!("the browser's DevTools connection failed: {e}"))
}

impl Cdp {
    pub(crate) fn new(tx: pipe::Sender, rx: pipe::Receiver) -> Self {
        Self {
            tx,
            rx: BufReader::with_capacity(1 << 20, rx),
            next_id: 1,
            events: VecDeque::new(),
        }
    }

    async fn read(&mut self) -> Result<Value, ToolError> {
        let mut buf = Vec::new();
        let n = self.rx.read_until(0, &mut buf).await.map_err(broken)?;
        if n == 0 {
            return Err(broken("the browser closed it"));
        }
        buf.pop_if(|b| *b == 0);
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
