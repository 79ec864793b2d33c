//! rmcp's errors in words: what failed and why, down to the cause (a
//! refused connection, a status code), never the transport's type names
//! (`Transport [rmcp::transport::worker::WorkerTransport<…>]`) that rmcp's
//! own messages carry.

use std::error::Error;

use rmcp::ServiceError;
#[cfg(feature = "client")]
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;

/// The longest piece of a peer's message kept in an error.
const MAX_QUOTED: usize = 300;

/// Why the MCP handshake with a server failed.
#[cfg(feature = "client")]
pub(crate) fn init_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context} failed: {}", transport(error))
        }
        ClientInitializeError::ConnectionClosed(context) => {
            format!("the connection closed before the handshake finished ({context})")
        }
        ClientInitializeError::JsonRpcError(err) => format!(
            "it refused the handshake with error {}: {}",
            err.code.0,
            quoted(&err.message)
        ),
        other => quoted(&other.to_string()),
    }
}

/// An error rmcp returned, kept whole, whose text is [`init_error`]'s or
/// [`service_error`]'s words for it. Those words already hold the causes
/// below it, so it reports no source of its own; [`RemoteError::get_ref`]
/// gives rmcp's error itself.
#[cfg(feature = "client")]
#[derive(Debug)]
pub(crate) struct RemoteError {
    words: String,
    error: Box<dyn Error + Send + Sync>,
}

#[cfg(feature = "client")]
impl RemoteError {
    /// A failed handshake.
    pub(crate) fn init(error: ClientInitializeError) -> Self {
        Self {
            words: init_error(&error),
            error: Box::new(error),
        }
    }

    /// A failed request.
    pub(crate) fn service(error: ServiceError) -> Self {
        Self {
            words: service_error(&error),
            error: Box::new(error),
        }
    }

    /// The error rmcp returned (a `ClientInitializeError` or a
    /// `ServiceError`).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn get_ref(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.error
    }
}

#[cfg(feature = "client")]
impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words)
    }
}

#[cfg(feature = "client")]
impl Error for RemoteError {}

/// Why a request to a connected peer failed.
pub(crate) fn service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(err) => format!(
            "it answered with error {}: {}",
            err.code.0,
            quoted(&err.message)
        ),
        ServiceError::TransportSend(error) => format!("sending failed: {}", transport(error)),
        ServiceError::TransportClosed => "its connection closed".into(),
        ServiceError::UnexpectedResponse => "it answered with a response of the wrong kind".into(),
        other => quoted(&other.to_string()),
    }
}

/// A transport's error: its own error and causes, without the name rmcp
/// wraps them in.
fn transport(e: &DynamicTransportError) -> String {
    chain(&*e.error)
}

/// `e` and its causes, joined with `: `; a cause whose text the message so
/// far already holds is left out (many errors repeat their source).
fn chain(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    quoted(&text)
}

/// `text`, cut to [`MAX_QUOTED`] bytes at a character boundary.
fn quoted(text: &str) -> String {
    if text.len() <= MAX_QUOTED {
        return text.to_owned();
    }
    format!("{}…", &text[..text.floor_char_boundary(MAX_QUOTED)])
}

#[cfg(test)]
mod tests {
    use std::any::TypeId;

    use super::*;

    fn transport_error() -> DynamicTransportError {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let outer: Box<dyn Error + Send + Sync> = Box::new(std::io::Error::other(Wrapped(refused)));
        DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>",
            TypeId::of::<()>(),
            outer,
        )
    }

    #[derive(Debug)]
    struct Wrapped(std::io::Error);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("error sending request")
        }
    }

    impl Error for Wrapped {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn e3_remote_errors_say_what_failed_without_rmcp_internals() {
        let send = service_error(&ServiceError::TransportSend(transport_error()));
        assert_eq!(send, "sending failed: error sending request: refused");
        assert!(
            !send.contains("rmcp") && !send.contains("Transport ["),
            "{send}"
        );
        assert_eq!(
            service_error(&ServiceError::TransportClosed),
            "its connection closed"
        );
        let long = "x".repeat(1000);
        assert_eq!(quoted(&long).len(), MAX_QUOTED + "…".len());
    }

    #[cfg(feature = "client")]
    #[test]
    fn e3_a_failed_handshake_says_what_failed_without_rmcp_internals() {
        let init = init_error(&ClientInitializeError::TransportError {
            error: transport_error(),
            context: "send initialize request".into(),
        });
        assert_eq!(
            init,
            "send initialize request failed: error sending request: refused"
        );
        assert!(
            !init.contains("rmcp") && !init.contains("Transport ["),
            "{init}"
        );
    }
}
