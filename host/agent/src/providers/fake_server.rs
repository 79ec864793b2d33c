//! A tiny HTTP/1.1 server on 127.0.0.1 for the provider tests: it records
//! each request and answers with the next scripted reply, one request per
//! connection.
#![cfg_attr(not(all(feature = "openai", feature = "anthropic")), allow(dead_code))]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Header names in lower case.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// One scripted answer.
pub(crate) enum Reply {
    /// A complete response.
    Full {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// A 200 `text/event-stream` response sent in these pieces (chunked),
    /// each written and flushed on its own.
    Stream { pieces: Vec<Vec<u8>> },
    /// Close the connection without answering.
    Hangup,
}

impl Reply {
    pub(crate) fn json(status: u16, body: &Value) -> Self {
        Self::Full {
            status,
            headers: Vec::new(),
            body: body.to_string().into_bytes(),
        }
    }

    pub(crate) fn raw(status: u16, body: &str) -> Self {
        Self::Full {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    pub(crate) fn with_header(mut self, name: &'static str, value: &str) -> Self {
        if let Self::Full { headers, .. } = &mut self {
            headers.push((name, value.to_owned()));
        }
        self
    }

    /// `text` streamed in pieces whose sizes cycle through `sizes`: small
    /// odd sizes cut lines, `\r\n` pairs and UTF-8 characters apart.
    pub(crate) fn stream_split(text: &str, sizes: &[usize]) -> Self {
        let bytes = text.as_bytes();
        let mut pieces = Vec::new();
        let mut at = 0;
        for &size in sizes.iter().cycle() {
            if at >= bytes.len() {
                break;
            }
            let end = (at + size.max(1)).min(bytes.len());
            pieces.push(bytes[at..end].to_vec());
            at = end;
        }
        Self::Stream { pieces }
    }
}

/// Server-sent events text from `(event, data)` pairs.
pub(crate) fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| {
            if name.is_empty() {
                format!("data: {data}\n\n")
            } else {
                format!("event: {name}\ndata: {data}\n\n")
            }
        })
        .collect()
}

/// The server. Dropping it stops it.
pub(crate) struct FakeServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: JoinHandle<()>,
}

impl FakeServer {
    /// Starts serving `replies` in order; past the last, every request gets
    /// a 500.
    pub(crate) async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let log = requests.clone();
        let task = tokio::spawn(async move {
            let mut replies = replies.into_iter();
            while let Ok((mut conn, _)) = listener.accept().await {
                let Some(request) = read_request(&mut conn).await else {
                    continue;
                };
                log.lock().unwrap().push(request);
                let reply = replies
                    .next()
                    .unwrap_or_else(|| Reply::raw(500, "the script has no more replies"));
                // A client that went away is the test's business, not ours.
                let _ = write_reply(&mut conn, reply).await;
            }
        });
        Self {
            addr,
            requests,
            task,
        }
    }

    /// `http://127.0.0.1:port` followed by `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request received so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn read_request(conn: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, path) = (
        request_line.next()?.to_owned(),
        request_line.next()?.to_owned(),
    );
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

async fn write_reply(conn: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::Hangup => Ok(()),
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            conn.write_all(head.as_bytes()).await?;
            conn.write_all(&body).await?;
            conn.flush().await
        }
        Reply::Stream { pieces } => {
            conn.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
            )
            .await?;
            conn.set_nodelay(true)?;
            for (i, piece) in pieces.into_iter().enumerate() {
                conn.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                conn.write_all(&piece).await?;
                conn.write_all(b"\r\n").await?;
                conn.flush().await?;
                // Gives the client a chance to read pieces on their own,
                // now and then pausing long enough that it surely does.
                if i % 16 == 15 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                } else {
                    tokio::task::yield_now().await;
                }
            }
            conn.write_all(b"0\r\n\r\n").await?;
            conn.flush().await
        }
    }
}
