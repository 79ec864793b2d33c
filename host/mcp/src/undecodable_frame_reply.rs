//! The JSON-RPC error reply to an MCP frame that cannot be decoded.
//!
//! Both transports of the server use it: stdio for a line, HTTP for a POST
//! body. The reply carries the frame's `id` whenever one can be read, even
//! from a frame that is too deep, holds a number out of range or was cut
//! short, so the client's pending request is answered; otherwise `id` is
//! `null`, as JSON-RPC 2.0 prescribes for a parse error.

use rmcp::model::{ErrorCode, ErrorData, RequestId};
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// Why a frame was refused, and how to answer it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    /// The frame's id, if it could be read.
    pub id: Option<RequestId>,
    /// The error to send back.
    pub error: ErrorData,
    /// Whether the frame is a well-formed notification (a method, no id).
    /// JSON-RPC never answers a notification; only HTTP, which must answer
    /// every request somehow, sends the error anyway.
    pub notification: bool,
}

impl Refusal {
    /// The refusal of `frame`, which failed to decode with `error`:
    ///
    /// - JSON that cannot be read (syntax, a cut-off frame, nesting past
    ///   serde_json's limit of 128, a number out of range, invalid UTF-8)
    ///   is a parse error, -32700;
    /// - JSON that is not a JSON-RPC message is an invalid request, -32600.
    ///
    /// (A request for a known method whose params do not fit decodes, as
    /// a custom request: the server answers it with invalid params.)
    pub fn for_frame(frame: &[u8], error: &serde_json::Error) -> Self {
        use serde_json::error::Category;
        let head = Head::read(frame);
        let error = match error.classify() {
            Category::Syntax | Category::Eof | Category::Io => {
                ErrorData::parse_error(format!("Parse error: {error}"), None)
            }
            Category::Data => ErrorData::invalid_request(format!("Invalid request: {error}"), None),
        };
        Self {
            notification: head.is_notification(),
            id: head.id,
            error,
        }
    }

    /// The refusal of `frame`, one of whose objects repeats a key (rule
    /// C12): invalid request, -32600, naming the key and where it is. A
    /// JSON-RPC reader keeps one of the two values, and which one differs
    /// between readers, so the host refuses to guess.
    pub fn repeated_key(frame: &[u8], repeated: &toolhost_core::tool::RepeatedKey) -> Self {
        let head = Head::read(frame);
        Self {
            notification: head.is_notification(),
            id: head.id,
            error: ErrorData::invalid_request(
                format!("Invalid request: {repeated}; each key may appear once"),
                None,
            ),
        }
    }

    /// The refusal of a frame of `len` bytes, more than `max`, of which
    /// `prefix` is the beginning (enough to read an id that comes before the
    /// params, as it does from every common client): invalid request,
    /// -32600.
    pub fn too_large(prefix: &[u8], len: usize, max: usize) -> Self {
        Self {
            id: Head::read(prefix).id,
            error: ErrorData::invalid_request(
                format!(
                    "Invalid request: a message of {len} bytes exceeds the limit of {max} bytes"
                ),
                None,
            ),
            notification: false,
        }
    }

    /// The reply as one JSON-RPC message, `"id": null` when no id could be
    /// read.
    pub fn to_json(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Reply<'a> {
            jsonrpc: &'static str,
            id: Option<&'a RequestId>,
            error: &'a ErrorData,
        }
        let reply = Reply {
            jsonrpc: "2.0",
            id: self.id.as_ref(),
            error: &self.error,
        };
        // Unreachable failure: the reply holds strings, integers and a
        // `Value`, all of which serialize.
        serde_json::to_vec(&reply).expect("a JSON-RPC error reply serializes")
    }

    /// The JSON-RPC error code.
    pub fn code(&self) -> ErrorCode {
        self.error.code
    }
}

/// What can be read of a frame's top level without decoding the rest.
#[derive(Debug, Default)]
struct Head {
    id: Option<RequestId>,
    method: bool,
    /// Whether the whole top-level object was read.
    complete: bool,
}

impl Head {
    /// Reads what it can. serde_json skips the values of other members
    /// without building them, iteratively (any depth) and without converting
    /// numbers, so only broken syntax stops it early; what was seen before
    /// that is kept.
    fn read(frame: &[u8]) -> Self {
        let mut head = Self::default();
        let mut de = serde_json::Deserializer::from_slice(frame);
        // The visitor records into `head` as it goes; the result only says
        // whether the object went on to end cleanly.
        let _ = de.deserialize_map(HeadVisitor(&mut head));
        head
    }

    fn is_notification(&self) -> bool {
        self.complete && self.method && self.id.is_none()
    }
}

struct HeadVisitor<'a>(&'a mut Head);

impl<'de> Visitor<'de> for HeadVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id => self.0.id = Some(map.next_value()?),
                Key::Method => {
                    map.next_value::<String>()?;
                    self.0.method = true;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        self.0.complete = true;
        Ok(())
    }
}

/// The members of a JSON-RPC message that matter here.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Id,
    Method,
    #[serde(other)]
    Other,
}

#[cfg(test)]
mod tests {
    use rmcp::model::ClientJsonRpcMessage;
    use serde_json::{Value, json};

    use super::*;

    fn refuse(frame: &str) -> Refusal {
        let error = serde_json::from_str::<ClientJsonRpcMessage>(frame)
            .expect_err("the frame must not decode");
        Refusal::for_frame(frame.as_bytes(), &error)
    }

    fn call(arguments: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{arguments}}}}}"#
        )
    }

    #[test]
    fn c6_unreadable_json_is_a_parse_error_with_the_id_when_it_can_be_read() {
        let deep = format!(r#"{{"x":{}1{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        for arguments in [r#"{"limit":1e400}"#, r#"{"limit":-1e400}"#, deep.as_str()] {
            let refusal = refuse(&call(arguments));
            assert_eq!(
                refusal.code(),
                ErrorCode::PARSE_ERROR,
                "{:?}",
                refusal.error
            );
            assert_eq!(refusal.id, Some(RequestId::Number(7)));
            assert!(!refusal.notification);
        }
        let lone = refuse(&call(r#"{"s":"\ud800"}"#));
        assert_eq!(lone.code(), ErrorCode::PARSE_ERROR);
        assert_eq!(lone.id, Some(RequestId::Number(7)));
    }

    #[test]
    fn c6_without_a_readable_id_the_reply_says_null() {
        for frame in ["{oops", r#"{"id": 1"#, "", "[1, 2", r#"{"id": {"a": 1}}"#] {
            let refusal = match serde_json::from_str::<ClientJsonRpcMessage>(frame) {
                Err(e) => Refusal::for_frame(frame.as_bytes(), &e),
                Ok(m) => panic!("{frame} decoded: {m:?}"),
            };
            assert!(refusal.id.is_none() || frame == r#"{"id": 1"#, "{frame}");
            let reply: Value = serde_json::from_slice(&refusal.to_json()).unwrap();
            assert_eq!(reply["jsonrpc"], "2.0");
            if refusal.id.is_none() {
                assert_eq!(reply["id"], Value::Null);
                assert!(reply.as_object().unwrap().contains_key("id"));
            }
        }
        let cut = refuse(r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"#);
        assert_eq!(cut.code(), ErrorCode::PARSE_ERROR);
        assert_eq!(cut.id, Some(RequestId::String("a-1".into())));
    }

    #[test]
    fn c6_json_that_is_no_message_is_an_invalid_request() {
        for frame in [
            "42",
            "[]",
            r#"{"id": 3}"#,
            r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
        ] {
            let refusal = refuse(frame);
            assert_eq!(refusal.code(), ErrorCode::INVALID_REQUEST, "{frame}");
            assert!(!refusal.notification, "{frame}");
        }
        let refusal = refuse(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#);
        assert_eq!(refusal.id, Some(RequestId::Number(3)));
        let reply: Value = serde_json::from_slice(&refusal.to_json()).unwrap();
        assert_eq!(reply["id"], 3);
        assert_eq!(reply["error"]["code"], -32600);
    }

    #[test]
    fn c6_a_malformed_notification_is_marked_so_it_goes_unanswered() {
        let refusal = refuse(r#"{"jsonrpc":"1.0","method":"notifications/cancelled"}"#);
        assert!(refusal.notification);
        assert!(refusal.id.is_none());
    }

    #[test]
    fn c6_an_oversized_frame_is_answered_with_the_id_from_its_beginning() {
        let frame = call(&json!({ "s": "x".repeat(1000) }).to_string());
        let refusal = Refusal::too_large(&frame.as_bytes()[..100], 64 << 20, 16 << 20);
        assert_eq!(refusal.code(), ErrorCode::INVALID_REQUEST);
        assert_eq!(refusal.id, Some(RequestId::Number(7)));
        assert!(
            refusal
                .error
                .message
                .contains("67108864 bytes exceeds the limit of 16777216 bytes"),
            "{}",
            refusal.error.message
        );
    }
}
