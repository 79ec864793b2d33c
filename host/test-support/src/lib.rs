//! A scriptable HTTP/1.1 server on 127.0.0.1 for toolhost's tests: the one
//! server the provider, web, browser and sandbox tests share.
//!
//! It answers each connection's one request (`connection: close`) with a
//! [`Reply`] chosen by a [`Responder`] — a script in order, a table of
//! paths, or one fixed reply — records every request, and counts how many
//! were in flight at once. Replies can stream in chunks, hang up without an
//! answer, or wait until several requests have arrived (to test
//! concurrency). Dropping the server stops it.
//!
//! Written by hand rather than on hyper so that a test controls the bytes
//! on the wire (chunk boundaries, a hang-up mid-script).

pub mod redis_server;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// Header names in lower case, in order.
    pub headers: Vec<(String, String)>,
    /// The body (by `content-length`).
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; panics if it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// One answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response (`content-type: application/json` unless the
    /// headers name another).
    Full {
        /// The status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(&'static str, String)>,
        /// The body.
        body: Vec<u8>,
    },
    /// A 200 `text/event-stream` response sent in these pieces (chunked),
    /// each written and flushed on its own.
    Stream {
        /// The pieces, in order.
        pieces: Vec<Vec<u8>>,
    },
    /// Close the connection without answering.
    Hangup,
}

impl Reply {
    /// `body` as JSON with `status`.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::Full {
            status,
            headers: Vec::new(),
            body: body.to_string().into_bytes(),
        }
    }

    /// `body` as is with `status` (content type `application/json`).
    pub fn raw(status: u16, body: &str) -> Self {
        Self::Full {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// A 200 with `body` of `content_type`.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::Full {
            status: 200,
            headers: vec![("content-type", content_type.to_owned())],
            body: body.into(),
        }
    }

    /// A 302 to `to`.
    pub fn redirect(to: impl Into<String>) -> Self {
        Self::Full {
            status: 302,
            headers: vec![("location", to.into())],
            body: Vec::new(),
        }
    }

    /// Adds a header (to a complete response; others are unchanged).
    pub fn with_header(mut self, name: &'static str, value: &str) -> Self {
        if let Self::Full { headers, .. } = &mut self {
            headers.push((name, value.to_owned()));
        }
        self
    }

    /// `text` streamed in pieces whose sizes cycle through `sizes`: small
    /// odd sizes cut lines, `\r\n` pairs and UTF-8 characters apart.
    pub fn stream_split(text: &str, sizes: &[usize]) -> Self {
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

/// Server-sent events text from `(event, data)` pairs (an empty event name
/// writes only `data:`).
pub fn sse(events: &[(&str, Value)]) -> String {
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

/// How the server picks each reply.
pub enum Responder {
    /// In order, one per request; past the last, a 500.
    Script(Vec<Reply>),
    /// By path (without the query); an unknown path gets a 404.
    Routes(Vec<(String, Reply)>),
    /// The same reply to every request.
    Fixed(Reply),
}

enum Chooser {
    Script(Mutex<VecDeque<Reply>>),
    Routes(HashMap<String, Reply>),
    Fixed(Reply),
}

impl Chooser {
    fn reply(&self, request: &Recorded) -> Reply {
        match self {
            Self::Script(replies) => replies
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| Reply::raw(500, "the script has no more replies")),
            Self::Routes(routes) => {
                let path = request.path.split('?').next().unwrap_or_default();
                routes.get(path).cloned().unwrap_or(Reply::Full {
                    status: 404,
                    headers: vec![("content-type", "text/plain".into())],
                    body: b"not found".to_vec(),
                })
            }
            Self::Fixed(reply) => reply.clone(),
        }
    }
}

struct State {
    chooser: Chooser,
    /// Requests to hold until this many are in flight (at most 2 s).
    gather: usize,
    requests: Mutex<Vec<Recorded>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    arrived: Notify,
}

/// The running server. Dropping it stops it.
pub struct HttpServer {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    /// Starts answering with `responder`. Must be called inside a tokio
    /// runtime, which then runs the server.
    pub async fn start(responder: Responder) -> Self {
        Self::gathering(responder, 1).await
    }

    /// Like [`start`](Self::start), but each request waits (up to 2 s)
    /// until `gather` requests are in flight before it is answered: a test
    /// of concurrency can then see how many arrived at once.
    pub async fn gathering(responder: Responder, gather: usize) -> Self {
        let chooser = match responder {
            Responder::Script(replies) => Chooser::Script(Mutex::new(replies.into())),
            Responder::Routes(routes) => Chooser::Routes(routes.into_iter().collect()),
            Responder::Fixed(reply) => Chooser::Fixed(reply),
        };
        let state = Arc::new(State {
            chooser,
            gather,
            requests: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            arrived: Notify::new(),
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn({
            let state = state.clone();
            async move {
                while let Ok((conn, _)) = listener.accept().await {
                    tokio::spawn(serve(conn, state.clone()));
                }
            }
        });
        Self { addr, state, task }
    }

    /// The replies in `script`, in order (see [`Responder::Script`]).
    pub async fn script(script: Vec<Reply>) -> Self {
        Self::start(Responder::Script(script)).await
    }

    /// Replies by path (see [`Responder::Routes`]).
    pub async fn routes(routes: Vec<(&str, Reply)>) -> Self {
        let routes = routes.into_iter().map(|(p, r)| (p.to_owned(), r)).collect();
        Self::start(Responder::Routes(routes)).await
    }

    /// The same reply to every request.
    pub async fn fixed(reply: Reply) -> Self {
        Self::start(Responder::Fixed(reply)).await
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:port` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request received so far, in the order they were read.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The paths requested so far.
    pub fn paths(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.path).collect()
    }

    /// How many requests have been read.
    pub fn hits(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// The most requests that were being answered at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut conn: TcpStream, state: Arc<State>) {
    let Some(request) = read_request(&mut conn).await else {
        return;
    };
    let reply = state.chooser.reply(&request);
    state.requests.lock().unwrap().push(request);
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    state.arrived.notify_waiters();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while state.requests.lock().unwrap().len() < state.gather
        && tokio::time::Instant::now() < deadline
    {
        let _ = tokio::time::timeout_at(deadline, state.arrived.notified()).await;
    }
    // Answered from here: the count drops before the reply leaves, so a
    // client that gets it and asks again at once is never counted twice,
    // however late this task runs again.
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    // A client that went away is the test's business, not the server's.
    let _ = write_reply(&mut conn, reply).await;
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
                "HTTP/1.1 {status} Scripted\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                head.push_str("content-type: application/json\r\n");
            }
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            conn.write_all(head.as_bytes()).await?;
            conn.write_all(&body).await?;
            conn.flush().await?;
            conn.shutdown().await
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
            conn.flush().await?;
            conn.shutdown().await
        }
    }
}
