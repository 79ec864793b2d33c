//! Approvals by multi round-trip requests (rule N6: rule P7 under MCP 2026-07-28,
//! where a server may not send its client a request of its own).
//!
//! The first `tools/call` that a hook wants approved ends with
//! `resultType: "input_required"`: one elicitation form (the same yes-or-no
//! as [`ElicitApprover`](crate::approval::ElicitApprover) shows) under the
//! key [`APPROVAL_INPUT`], and a `requestState`. The client asks its user and
//! calls again with the answer in `inputResponses` and the state echoed;
//! that call runs the pipeline again, and when a hook asks, the answer is
//! the approval.
//!
//! The state is the server's memory held by the client, so it is untrusted
//! input. It is sealed with HMAC-SHA256 under the server's key (rmcp's
//! `RequestStateCodec`; readable, not secret) and holds digests of the tool's
//! name, the call's arguments and the caller (the `Authorization` header
//! the request came with, or the local stdio peer), a single-use nonce and
//! its expiry. A state is refused, with the reason, when:
//! - it does not open under the server's key: altered, forged, or sealed by
//!   a server with another key (replicas of one cluster share the key);
//! - its expiry has passed;
//! - it was issued for another tool, other arguments or another caller
//!   (a transplant);
//! - its nonce was already redeemed on this server (a replay).
//!
//! What is not caught: a replay to *another* replica within the expiry, as
//! replicas share no memory; the expiry (the approval timeout) bounds that
//! window, and the replayed answer only re-runs the very call, arguments
//! and caller that were approved.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, RequestStateCodec, RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use toolhost_core::tool::approval::Approval;

use crate::approval::{approval_from_answer, form};

/// The key of the approval question in `inputRequests` and of its answer
/// in `inputResponses`.
pub const APPROVAL_INPUT: &str = "approval";

/// The fewest bytes a key for sealing approval states may have.
pub const MIN_APPROVAL_KEY_BYTES: usize = RequestStateCodec::MIN_KEY_LENGTH;

/// A key for sealing approval states that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalKeyError {
    /// Shorter than [`MIN_APPROVAL_KEY_BYTES`].
    #[error("the approval key has {actual} bytes; it needs at least {MIN_APPROVAL_KEY_BYTES}")]
    TooShort {
        /// Its length in bytes.
        actual: usize,
        /// rmcp's own refusal.
        #[source]
        source: RequestStateError,
    },
}

/// Why a retried call's `requestState` was refused. The text says what the
/// client can do; none of it reveals the key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateRefusal {
    /// It does not open under this server's key: altered, forged, or sealed
    /// by a server with another key.
    #[error(
        "the approval's requestState was not issued by this server or was altered \
         (replicas must share one approval key); call again without it to be asked anew"
    )]
    NotIssuedHere(#[source] RequestStateError),
    /// Its expiry has passed.
    #[error("the approval's requestState has expired; call again without it to be asked anew")]
    Expired,
    /// It was issued for another call.
    #[error("the approval's requestState was issued for {0}, not this one")]
    OtherCall(&'static str),
    /// It was already redeemed.
    #[error("the approval's requestState was already used; call again without it to be asked anew")]
    Replayed,
}

/// What the sealed state holds: digests, not the values, so that the state
/// shows nothing of the arguments or the caller's credentials.
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    /// SHA-256 of the tool's name, hex.
    tool: String,
    /// SHA-256 of the arguments in canonical JSON (keys sorted), hex.
    args: String,
    /// SHA-256 of the caller's identity, hex.
    caller: String,
    /// 16 random bytes, hex: the state is redeemed once.
    nonce: String,
    /// When it expires, in milliseconds since the Unix epoch (for forgetting
    /// redeemed nonces; the codec checks its own copy of the expiry).
    until_ms: u64,
}

/// The call a state is bound to.
pub(crate) struct CallBinding<'a> {
    /// The tool's name, as requested.
    pub(crate) tool: &'a str,
    /// The arguments, as requested.
    pub(crate) arguments: &'a Value,
    /// Who called: see [`caller_identity`](crate::server).
    pub(crate) caller: &'a str,
}

impl CallBinding<'_> {
    fn digests(&self) -> (String, String, String) {
        let mut args = String::new();
        canonical_json(self.arguments, &mut args);
        (
            sha256_hex(self.tool.as_bytes()),
            sha256_hex(args.as_bytes()),
            sha256_hex(self.caller.as_bytes()),
        )
    }
}

/// Issues approval questions as `input_required` results and redeems the
/// answers: one per server, shared by its sessions and transports.
pub(crate) struct ApprovalRoundTrips {
    codec: RequestStateCodec,
    /// How long an issued state stays good: the person's time to answer.
    ttl: Duration,
    /// Nonces redeemed here, with their expiry (ms), forgotten once expired.
    redeemed: Mutex<HashMap<String, u64>>,
}

impl ApprovalRoundTrips {
    /// Round trips sealed under `key`, good for `ttl`.
    pub(crate) fn new(key: &[u8], ttl: Duration) -> Result<Self, ApprovalKeyError> {
        // The key id names the key in each state (rmcp's `rs2` format), so a
        // state from a server with another key is told apart from an altered
        // one in the logs.
        let kid = sha256_hex(key)[..16].to_owned();
        let codec = RequestStateCodec::new_with_keyring(kid.clone(), [(kid, key.to_vec())])
            .map_err(|source| ApprovalKeyError::TooShort {
                actual: key.len(),
                source,
            })?;
        Ok(Self {
            codec,
            ttl,
            redeemed: Mutex::new(HashMap::new()),
        })
    }

    /// Round trips under a random key of this process: enough for one
    /// server; replicas that finish each other's calls need a shared key.
    pub(crate) fn with_random_key(ttl: Duration) -> Self {
        let key: [u8; 32] = rand::random();
        Self::new(&key, ttl).expect("a 32-byte key is long enough")
    }

    /// The `input_required` answer to `call`: the approval form with
    /// `question`, and a fresh sealed state bound to the call.
    pub(crate) fn ask(&self, call: &CallBinding<'_>, question: String) -> InputRequiredResult {
        let (tool, args, caller) = call.digests();
        let nonce: [u8; 16] = rand::random();
        let sealed = Sealed {
            tool,
            args,
            caller,
            nonce: hex::encode(nonce),
            until_ms: now_ms().saturating_add(self.ttl.as_millis() as u64),
        };
        let state = self
            .codec
            .seal_json_with(&sealed, &SealOptions::new().ttl(self.ttl))
            .expect("the sealed state is plain JSON");
        let mut requests = InputRequests::new();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question,
            requested_schema: form(),
        };
        requests.insert(
            APPROVAL_INPUT.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        InputRequiredResult::new(Some(requests), Some(state))
    }

    /// The person's answer to the question of `state`, for `call`: checks
    /// the state (see the module's documentation) and redeems its nonce,
    /// then reads the answer under [`APPROVAL_INPUT`]. No answer there asks
    /// again ([`Approval::Deferred`]).
    pub(crate) fn answer(
        &self,
        call: &CallBinding<'_>,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Result<Approval, StateRefusal> {
        let sealed: Sealed = self.codec.open_json(state).map_err(|e| match e {
            RequestStateError::Expired => StateRefusal::Expired,
            other => StateRefusal::NotIssuedHere(other),
        })?;
        let (tool, args, caller) = call.digests();
        if sealed.tool != tool {
            return Err(StateRefusal::OtherCall("a call to another tool"));
        }
        if sealed.args != args {
            return Err(StateRefusal::OtherCall("a call with other arguments"));
        }
        if sealed.caller != caller {
            return Err(StateRefusal::OtherCall("another caller"));
        }
        self.redeem(sealed.nonce, sealed.until_ms)?;
        Ok(match responses.and_then(|r| r.get(APPROVAL_INPUT)) {
            None => Approval::Deferred,
            Some(answer) => match serde_json::from_value::<ElicitResult>(answer.clone()) {
                Ok(answer) => approval_from_answer(&answer),
                Err(e) => Approval::denied(format!(
                    "the client's answer to the approval question is not an elicitation result: {e}"
                )),
            },
        })
    }

    /// Marks `nonce` redeemed, refusing one that already is.
    fn redeem(&self, nonce: String, until_ms: u64) -> Result<(), StateRefusal> {
        let now = now_ms();
        let mut redeemed = self.redeemed.lock().unwrap_or_else(|e| e.into_inner());
        redeemed.retain(|_, until| *until > now);
        if redeemed.insert(nonce, until_ms).is_some() {
            return Err(StateRefusal::Replayed);
        }
        Ok(())
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `value` as JSON with every object's keys sorted, so that the digest of
/// the arguments does not depend on the order a client wrote them in.
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TTL: Duration = Duration::from_secs(60);

    fn trips() -> ApprovalRoundTrips {
        ApprovalRoundTrips::new(b"0123456789abcdef0123456789abcdef", TTL).unwrap()
    }

    fn binding<'a>(tool: &'a str, arguments: &'a Value, caller: &'a str) -> CallBinding<'a> {
        CallBinding {
            tool,
            arguments,
            caller,
        }
    }

    /// The state of a question about `call`, and an answer approving it.
    fn asked(trips: &ApprovalRoundTrips, call: &CallBinding<'_>) -> (String, InputResponses) {
        let result = trips.ask(call, "May it run?".into());
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(wire["resultType"], "input_required");
        let question = &wire["inputRequests"][APPROVAL_INPUT];
        assert_eq!(question["method"], "elicitation/create");
        assert_eq!(question["params"]["message"], "May it run?");
        assert_eq!(
            question["params"]["requestedSchema"]["properties"]["approve"]["type"],
            "boolean"
        );
        let mut answer = InputResponses::new();
        answer.insert(
            APPROVAL_INPUT.into(),
            json!({"action": "accept", "content": {"approve": true}}),
        );
        (result.request_state.unwrap(), answer)
    }

    #[test]
    fn n6_an_answered_round_trip_approves_the_very_call_it_was_asked_for() {
        let trips = trips();
        let args = json!({"path": "/tmp/x", "n": 1});
        let call = binding("rm", &args, "http:Bearer a");
        let (state, answer) = asked(&trips, &call);
        // The same arguments in another key order are the same call.
        let reordered: Value = serde_json::from_str(r#"{"n":1,"path":"/tmp/x"}"#).unwrap();
        let same = binding("rm", &reordered, "http:Bearer a");
        assert_eq!(
            trips.answer(&same, &state, Some(&answer)).unwrap(),
            Approval::Approved
        );
    }

    #[test]
    fn n6_each_answer_of_the_person_gives_its_own_approval_or_denial() {
        let trips = trips();
        let args = json!({});
        let call = binding("t", &args, "local");
        for (answer, expected) in [
            (
                json!({"action": "accept", "content": {"approve": false}}),
                Approval::denied("the client's user did not approve it"),
            ),
            (
                json!({"action": "decline"}),
                Approval::denied("the client's user declined"),
            ),
            (
                json!({"action": "cancel"}),
                Approval::denied("the client's user cancelled"),
            ),
        ] {
            let (state, _) = asked(&trips, &call);
            let responses = InputResponses::from([(APPROVAL_INPUT.to_owned(), answer)]);
            assert_eq!(
                trips.answer(&call, &state, Some(&responses)).unwrap(),
                expected
            );
        }
        // No answer under the key: asked again, not approved.
        let (state, _) = asked(&trips, &call);
        assert_eq!(
            trips.answer(&call, &state, None).unwrap(),
            Approval::Deferred
        );
        // An answer that is not an elicitation result is a denial saying so.
        let (state, _) = asked(&trips, &call);
        let junk = InputResponses::from([(APPROVAL_INPUT.to_owned(), json!(["yes"]))]);
        let Approval::Denied { reason } = trips.answer(&call, &state, Some(&junk)).unwrap() else {
            panic!("junk approved");
        };
        assert!(reason.contains("not an elicitation result"), "{reason}");
    }

    #[test]
    fn n6_a_tampered_or_forged_state_is_refused() {
        let trips = trips();
        let args = json!({"n": 1});
        let call = binding("t", &args, "local");
        let (state, answer) = asked(&trips, &call);
        // Flip one character of every part of the state in turn.
        for i in 0..state.len() {
            let mut bytes = state.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let Ok(tampered) = String::from_utf8(bytes) else {
                continue;
            };
            if tampered == state {
                continue;
            }
            let refused = trips.answer(&call, &tampered, Some(&answer));
            assert!(
                matches!(refused, Err(StateRefusal::NotIssuedHere(_))),
                "byte {i}: {refused:?}"
            );
        }
        for junk in ["", "approved", "rs2.a.b.c", &"A".repeat(10_000)] {
            assert!(matches!(
                trips.answer(&call, junk, Some(&answer)),
                Err(StateRefusal::NotIssuedHere(_))
            ));
        }
        // A state sealed under another key (another server's) is refused.
        let other = ApprovalRoundTrips::new(b"another key of thirty-two bytes!", TTL).unwrap();
        let (foreign, _) = asked(&other, &call);
        let refusal = trips.answer(&call, &foreign, Some(&answer)).unwrap_err();
        assert!(matches!(refusal, StateRefusal::NotIssuedHere(_)));
        assert!(refusal.to_string().contains("share one approval key"));
        // The untouched state still works.
        assert_eq!(
            trips.answer(&call, &state, Some(&answer)).unwrap(),
            Approval::Approved
        );
    }

    #[test]
    fn n6_a_state_transplanted_to_another_tool_arguments_or_caller_is_refused() {
        let trips = trips();
        let args = json!({"path": "/tmp/x"});
        let call = binding("read", &args, "http:Bearer alice");
        let other_args = json!({"path": "/etc/shadow"});
        for (to, what) in [
            (
                binding("delete", &args, "http:Bearer alice"),
                "another tool",
            ),
            (
                binding("read", &other_args, "http:Bearer alice"),
                "other arguments",
            ),
            (
                binding("read", &args, "http:Bearer mallory"),
                "another caller",
            ),
        ] {
            let (state, answer) = asked(&trips, &call);
            let refusal = trips.answer(&to, &state, Some(&answer)).unwrap_err();
            assert!(matches!(refusal, StateRefusal::OtherCall(_)), "{what}");
            assert!(refusal.to_string().contains(what), "{refusal}");
        }
    }

    #[test]
    fn n6_a_replayed_state_is_refused() {
        let trips = trips();
        let args = json!({});
        let call = binding("t", &args, "local");
        let (state, answer) = asked(&trips, &call);
        assert_eq!(
            trips.answer(&call, &state, Some(&answer)).unwrap(),
            Approval::Approved
        );
        assert!(matches!(
            trips.answer(&call, &state, Some(&answer)),
            Err(StateRefusal::Replayed)
        ));
        // A fresh question for the same call is a fresh state.
        let (again, answer) = asked(&trips, &call);
        assert_ne!(again, state);
        assert_eq!(
            trips.answer(&call, &again, Some(&answer)).unwrap(),
            Approval::Approved
        );
    }

    #[test]
    fn n6_an_expired_state_is_refused() {
        let trips = ApprovalRoundTrips::new(
            b"0123456789abcdef0123456789abcdef",
            Duration::from_millis(1),
        )
        .unwrap();
        let args = json!({});
        let call = binding("t", &args, "local");
        let (state, answer) = asked(&trips, &call);
        std::thread::sleep(Duration::from_millis(20));
        assert!(matches!(
            trips.answer(&call, &state, Some(&answer)),
            Err(StateRefusal::Expired)
        ));
    }

    #[test]
    fn n6_a_key_shorter_than_32_bytes_is_refused() {
        let Err(e) = ApprovalRoundTrips::new(b"short", TTL) else {
            panic!("a short key was taken");
        };
        assert!(matches!(e, ApprovalKeyError::TooShort { actual: 5, .. }));
        assert!(e.to_string().contains("at least 32"), "{e}");
    }
}
