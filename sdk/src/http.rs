//! Outgoing HTTP through `wasi:http` (feature `http`).
//!
//! The host decides where a plugin may connect: a request to a host its policy
//! does not grant, or to a granted name that resolves to a loopback, private or
//! link-local address, fails with [`HttpError::Denied`].

use std::fmt;

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

/// A response, with its whole body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// The headers, in order, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The URL could not be understood.
    BadUrl(String),
    /// The host's policy refused the destination (the host's log, and the
    /// error the host reports for the call, say why).
    Denied,
    /// The body was larger than the limit given.
    TooLarge(usize),
    /// The request failed on the way (connection, DNS, timeout, protocol).
    Failed(String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadUrl(u) => write!(f, "bad URL: {u}"),
            Self::Denied => f.write_str("denied by the host's policy"),
            Self::TooLarge(limit) => write!(f, "response body larger than {limit} bytes"),
            Self::Failed(why) => write!(f, "request failed: {why}"),
        }
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for crate::ToolError {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Failed(_) => Self::transient(e),
            _ => Self::failed(e),
        }
    }
}

fn error_code(e: ErrorCode) -> HttpError {
    match e {
        ErrorCode::HttpRequestDenied | ErrorCode::DestinationIpProhibited => HttpError::Denied,
        other => HttpError::Failed(format!("{other:?}")),
    }
}

/// Sends a GET request to `url` (`http://` or `https://`) and reads a body of
/// at most `max_body` bytes.
pub fn get(url: &str, max_body: usize) -> Result<Response, HttpError> {
    request("GET", url, &[], None, max_body)
}

/// Sends a request with optional headers and body, and reads a response body
/// of at most `max_body` bytes.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    max_body: usize,
) -> Result<Response, HttpError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| HttpError::BadUrl(format!("`{url}` has no scheme")))?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err(HttpError::BadUrl(format!("unsupported scheme `{other}`"))),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(HttpError::BadUrl(format!("`{url}` has no host")));
    }
    let fields = Fields::new();
    for (name, value) in headers {
        fields
            .append(&name.to_string(), &value.as_bytes().to_vec())
            .map_err(|e| HttpError::BadUrl(format!("header `{name}`: {e:?}")))?;
    }
    let req = OutgoingRequest::new(fields);
    let method = match method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "HEAD" => Method::Head,
        "PATCH" => Method::Patch,
        other => Method::Other(other.to_owned()),
    };
    let bad = |what: &str| HttpError::BadUrl(format!("invalid {what} in `{url}`"));
    req.set_method(&method).map_err(|()| bad("method"))?;
    req.set_scheme(Some(&scheme)).map_err(|()| bad("scheme"))?;
    req.set_authority(Some(authority))
        .map_err(|()| bad("authority"))?;
    req.set_path_with_query(Some(path))
        .map_err(|()| bad("path"))?;

    let out_body = req
        .body()
        .map_err(|()| HttpError::Failed("request body taken twice".into()))?;
    let future = outgoing_handler::handle(req, None).map_err(error_code)?;
    {
        let stream = out_body
            .write()
            .map_err(|()| HttpError::Failed("request body stream taken twice".into()))?;
        if let Some(bytes) = body {
            for chunk in bytes.chunks(4096) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| HttpError::Failed(format!("writing the body: {e:?}")))?;
            }
        }
    }
    OutgoingBody::finish(out_body, None).map_err(error_code)?;

    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(error_code(e)),
        Some(Err(())) => return Err(HttpError::Failed("response already taken".into())),
        None => return Err(HttpError::Failed("response not ready".into())),
    };
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect();
    let body = response
        .consume()
        .map_err(|()| HttpError::Failed("response body taken twice".into()))?;
    let data = read_body(&body, max_body)?;
    drop(body);
    Ok(Response {
        status,
        headers,
        body: data,
    })
}

fn read_body(body: &IncomingBody, max_body: usize) -> Result<Vec<u8>, HttpError> {
    let stream = body
        .stream()
        .map_err(|()| HttpError::Failed("response stream taken twice".into()))?;
    let mut data = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                if data.len() + chunk.len() > max_body {
                    return Err(HttpError::TooLarge(max_body));
                }
                data.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => return Ok(data),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(HttpError::Failed(e.to_debug_string()));
            }
        }
    }
}
