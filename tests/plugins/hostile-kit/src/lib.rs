//! What several hostile plugins share. Attacks on loading hand the host
//! descriptors the SDK would never build, so those plugins export the WIT
//! interface directly with [`descriptor`]; attacks on outgoing HTTP set
//! options the SDK does not expose, through [`http`].

use toolhost_sdk::bindings::types::ToolDescriptor;

/// A raw tool descriptor, concurrency-safe and idempotent.
pub fn descriptor(name: &str, description: String, schema: String) -> ToolDescriptor {
    ToolDescriptor {
        name: name.to_owned(),
        description,
        parameters_schema: schema,
        concurrency_safe: Some(true),
        idempotent: true,
        output_schema: None,
        hints: toolhost_sdk::bindings::types::ToolHints {
            read_only: None,
            destructive: None,
            open_world: None,
        },
    }
}

/// The schema of a tool that takes any object.
pub fn object() -> String {
    r#"{"type":"object"}"#.to_owned()
}

/// Raw wasi-http requests.
pub mod http {
    use toolhost_sdk::ToolError;
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        Fields, FutureIncomingResponse, Method, OutgoingBody, OutgoingRequest, RequestOptions,
        Scheme,
    };

    pub use wasip2::http::types::RequestOptions as Options;

    /// Starts a GET of `url` with the given options and returns the pending
    /// response without waiting for it.
    pub fn start(
        url: &str,
        options: Option<RequestOptions>,
    ) -> Result<FutureIncomingResponse, ToolError> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| ToolError::failed("no scheme"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let req = OutgoingRequest::new(Fields::new());
        let _ = req.set_method(&Method::Get);
        let _ = req.set_scheme(Some(&if scheme == "https" {
            Scheme::Https
        } else {
            Scheme::Http
        }));
        let _ = req.set_authority(Some(authority));
        let _ = req.set_path_with_query(Some(path));
        let body = req.body().map_err(|()| ToolError::failed("no body"))?;
        let future = outgoing_handler::handle(req, options)
            .map_err(|e| ToolError::failed(format!("refused: {e:?}")))?;
        OutgoingBody::finish(body, None).map_err(|e| ToolError::failed(format!("{e:?}")))?;
        Ok(future)
    }

    /// Waits for a response and describes what came back.
    pub fn wait(future: &FutureIncomingResponse) -> String {
        future.subscribe().block();
        match future.get() {
            Some(Ok(Ok(r))) => format!("status {}", r.status()),
            Some(Ok(Err(e))) => format!("error {e:?}"),
            other => format!("{other:?}"),
        }
    }
}
