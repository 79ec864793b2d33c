//! The exfiltration guard (rule O2): an outgoing request that carries a
//! secret's value, raw or in a common encoding, in its URL, headers or
//! body, to a destination that secret is not bound to, is refused, naming
//! the secret and never its value.
//!
//! The body is scanned as it streams: each piece is checked together with
//! the end of the one before, and the last [`SecretSet::longest_form`]
//! bytes are held back until the next piece (or the end) arrives, so no
//! byte of a secret's form leaves before the whole form was seen.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::body::{Body, Frame};
use toolhost_core::SecretSet;
use toolhost_net::NetPolicy;
use wasmtime_wasi_http::{Error as HttpError, WasiBody};

/// Every secret of the host, and where each may be sent.
#[derive(Clone, Default, PartialEq)]
pub struct SecretGuard {
    set: SecretSet,
    /// For each secret of `set`, by name, the destinations it may reach.
    bound: Arc<[(String, NetPolicy)]>,
}

impl std::fmt::Debug for SecretGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretGuard")
            .field("secrets", &self.set)
            .finish_non_exhaustive()
    }
}

impl SecretGuard {
    /// A guard over `set`; `bound` gives, by secret name, the destinations
    /// each may be sent to (a secret not named there may go nowhere).
    pub fn new(set: SecretSet, bound: Vec<(String, NetPolicy)>) -> Self {
        Self {
            set,
            bound: bound.into(),
        }
    }

    /// The secrets, for redacting what the guest writes.
    pub fn secrets(&self) -> &SecretSet {
        &self.set
    }

    /// The name of a secret `data` carries that may not go to
    /// `scheme://host:port`, if any.
    pub fn refused(&self, data: &[u8], scheme: &str, host: &str, port: u16) -> Option<String> {
        self.set
            .find_all(data)
            .into_iter()
            .find(|secret| {
                !self.bound.iter().any(|(name, dest)| {
                    name == secret.name() && dest.check_host(scheme, host, port).is_ok()
                })
            })
            .map(|secret| secret.name().to_owned())
    }

    /// `body`, scanned as it streams: a piece that completes a secret that
    /// may not go to the destination ends the body with an error instead,
    /// and `on_refusal` is told the secret's name.
    pub(crate) fn guard_body(
        &self,
        body: WasiBody,
        destination: (String, String, u16),
        on_refusal: impl Fn(String) + Send + 'static,
    ) -> WasiBody {
        if self.set.is_empty() {
            return body;
        }
        GuardedBody {
            inner: body,
            guard: self.clone(),
            destination,
            held: BytesMut::new(),
            keep: self.set.longest_form(),
            on_refusal: Box::new(on_refusal),
            done: false,
        }
        .boxed_unsync()
    }
}

struct GuardedBody {
    inner: WasiBody,
    guard: SecretGuard,
    destination: (String, String, u16),
    /// The end of what was seen, not yet sent.
    held: BytesMut,
    keep: usize,
    on_refusal: Box<dyn Fn(String) + Send>,
    done: bool,
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(frame))) => {
                let data = match frame.into_data() {
                    Ok(data) => data,
                    // Trailers: checked like headers.
                    Err(frame) => {
                        if let Some(trailers) = frame.trailers_ref() {
                            for (name, value) in trailers {
                                if let Some(secret) = this
                                    .check(name.as_str().as_bytes())
                                    .or_else(|| this.check(value.as_bytes()))
                                {
                                    return this.refuse(secret);
                                }
                            }
                        }
                        let held = this.held.split().freeze();
                        if !held.is_empty() {
                            // Trailers end the body: what was held goes first.
                            this.done = true;
                            return Poll::Ready(Some(Ok(Frame::data(held))));
                        }
                        return Poll::Ready(Some(Ok(frame)));
                    }
                };
                this.held.extend_from_slice(&data);
                if let Some(secret) = this.check(&this.held) {
                    return this.refuse(secret);
                }
                let ready = this.held.len().saturating_sub(this.keep);
                Poll::Ready(Some(Ok(Frame::data(this.held.split_to(ready).freeze()))))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => {
                this.done = true;
                let held = this.held.split().freeze();
                if held.is_empty() {
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Ok(Frame::data(held))))
                }
            }
        }
    }
}

impl GuardedBody {
    fn check(&self, data: &[u8]) -> Option<String> {
        let (scheme, host, port) = &self.destination;
        self.guard.refused(data, scheme, host, *port)
    }

    fn refuse(&mut self, secret: String) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        self.done = true;
        self.held.clear();
        (self.on_refusal)(secret);
        Poll::Ready(Some(Err(HttpError::HttpRequestDenied)))
    }
}
