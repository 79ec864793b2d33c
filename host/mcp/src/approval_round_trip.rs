//! Questions for the person behind a 2026-07-28 client by multi round-trip
//! requests, where a server may not send its client a request of its own:
//! approvals (rule N6: rule P7 under MCP 2026-07-28) and a remote server's
//! questions in the middle of a call (rule N7).
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
//! A remote server's question is forwarded the same way
//! ([`RoundTripElicitor`]): the first time it is asked, the question is
//! recorded and the call is stopped, and the call is answered
//! `input_required` with the question as asked (under `question-N`) and a
//! state that carries every answer given so far, the approval's included.
//! When the client calls again with the answer, the call runs again, the
//! remote server asks again, and the elicitor answers from the state and
//! the client's `inputResponses`, matching each question by a digest of its
//! message and form and how many times that same question was asked before
//! in the run. A call with several questions takes a round for each, and
//! since every answer travels in the state, any replica holding the key
//! can run any round. The call itself runs once per round: a remote tool
//! that changes something before it asks changes it each time.
//!
//! What is not caught: a replay to *another* replica within the expiry, as
//! replicas share no memory; the expiry (the approval timeout) bounds that
//! window, and the replayed answer only re-runs the very call, arguments
//! and caller that were approved.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec,
    RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use tokio_util::sync::CancellationToken;
use toolhost_core::tool::approval::Approval;
use toolhost_core::tool::elicitation::{
    ElicitationAnswer, ElicitationError, ElicitationRequest, Elicitor,
};

use crate::approval::{approval_from_answer, form};

/// The key of the approval question in `inputRequests` and of its answer
/// in `inputResponses`.
pub const APPROVAL_INPUT: &str = "approval";

/// The prefix of the keys of a remote server's questions in `inputRequests`
/// and of their answers in `inputResponses` (`question-0`, `question-1`, …).
pub const QUESTION_INPUT: &str = "question-";

/// Most questions one call may put by multi round-trip: past it the call
/// fails, so a server that keeps asking cannot grow the state without end.
const MAX_QUESTIONS: usize = 32;

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
        "the requestState was not issued by this server or was altered (replicas must \
         share one approval key); call again without it to be asked anew"
    )]
    NotIssuedHere(#[source] RequestStateError),
    /// Its expiry has passed.
    #[error("the requestState has expired; call again without it to be asked anew")]
    Expired,
    /// It was issued for another call.
    #[error("the requestState was issued for {0}, not this one")]
    OtherCall(&'static str),
    /// It was already redeemed.
    #[error("the requestState was already used; call again without it to be asked anew")]
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
    /// The person's answer to the approval question (an elicitation
    /// result), once given: later rounds of the call carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approval: Option<Value>,
    /// A remote server's questions asked so far, each answered or waiting
    /// for its answer under its key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    questions: Vec<Question>,
}

/// A remote server's question put to the person, in a sealed state.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Question {
    /// Its key in `inputRequests` and `inputResponses`.
    key: String,
    /// SHA-256 of its message and form, hex.
    digest: String,
    /// How many times the same question came before it in the call.
    ordinal: u32,
    /// The person's answer (an elicitation result), once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Value>,
}

/// What a redeemed state brings to the call's new run: the approval's
/// answer and the answers to a remote server's questions.
#[derive(Debug, Default)]
pub(crate) struct Carried {
    approval: Option<Value>,
    answers: Vec<Question>,
}

impl Carried {
    /// The approval the person gave, or [`Approval::Deferred`] when they
    /// have not been asked or have not answered yet.
    pub(crate) fn approval(&self) -> Approval {
        match &self.approval {
            None => Approval::Deferred,
            Some(answer) => match serde_json::from_value::<ElicitResult>(answer.clone()) {
                Ok(answer) => approval_from_answer(&answer),
                Err(e) => Approval::denied(format!(
                    "the client's answer to the approval question is not an elicitation result: {e}"
                )),
            },
        }
    }
}

/// The call a state is bound to.
pub(crate) struct CallBinding<'a> {
    /// The tool's name, as requested.
    pub(crate) tool: &'a str,
    /// The arguments, as requested.
    pub(crate) arguments: &'a Value,
    /// Who called, with the tenant: see [`Caller`](crate::server::Caller).
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
    #[cfg(test)]
    fn ask(&self, call: &CallBinding<'_>, question: String) -> InputRequiredResult {
        self.ask_approval(call, &Carried::default(), question)
    }

    /// The `input_required` answer to `call`: the approval form with
    /// `question`, and a fresh sealed state bound to the call carrying the
    /// answers of `carried`.
    pub(crate) fn ask_approval(
        &self,
        call: &CallBinding<'_>,
        carried: &Carried,
        question: String,
    ) -> InputRequiredResult {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question,
            requested_schema: form(),
        };
        self.seal(
            call,
            None,
            carried.answers.clone(),
            APPROVAL_INPUT.to_owned(),
            params,
        )
    }

    /// The person's answer to the approval question of `state`, for
    /// `call` (see [`redeem`](Self::redeem)).
    #[cfg(test)]
    fn answer(
        &self,
        call: &CallBinding<'_>,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Result<Approval, StateRefusal> {
        Ok(self.redeem(call, state, responses)?.approval())
    }

    /// What `state` and the client's `responses` bring to the new run of
    /// `call`: checks the state (see the module's documentation) and
    /// redeems its nonce, then takes the answers, earlier rounds' from the
    /// state and this round's from `responses` (the approval's under
    /// [`APPROVAL_INPUT`], each question's under its key). A question still
    /// unanswered is asked again when it comes again.
    pub(crate) fn redeem(
        &self,
        call: &CallBinding<'_>,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Result<Carried, StateRefusal> {
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
        self.redeem_nonce(sealed.nonce, sealed.until_ms)?;
        let given = |key: &str| responses.and_then(|r| r.get(key)).cloned();
        let approval = sealed.approval.or_else(|| given(APPROVAL_INPUT));
        let answers = sealed
            .questions
            .into_iter()
            .filter_map(|mut q| {
                q.answer = q.answer.or_else(|| given(&q.key));
                q.answer.is_some().then_some(q)
            })
            .collect();
        Ok(Carried { approval, answers })
    }

    /// The `input_required` answer to `call` whose run stopped at the
    /// remote server's `question`: the question as asked, under a key of
    /// its own, and a fresh state carrying `carried` and the question.
    pub(crate) fn ask_question(
        &self,
        call: &CallBinding<'_>,
        carried: &Carried,
        question: Asked,
    ) -> Result<InputRequiredResult, ElicitationError> {
        let mut questions = carried.answers.clone();
        if questions.len() >= MAX_QUESTIONS {
            return Err(ElicitationError::Failed(format!(
                "the call asked more than {MAX_QUESTIONS} questions"
            )));
        }
        let key = format!("{QUESTION_INPUT}{}", questions.len());
        questions.push(Question {
            key: key.clone(),
            digest: question.digest,
            ordinal: question.ordinal,
            answer: None,
        });
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question.message,
            requested_schema: question.form,
        };
        Ok(self.seal(call, carried.approval.clone(), questions, key, params))
    }

    /// Seals a fresh state for `call` and puts it, with `params` under
    /// `key`, in an `input_required` answer.
    fn seal(
        &self,
        call: &CallBinding<'_>,
        approval: Option<Value>,
        questions: Vec<Question>,
        key: String,
        params: ElicitRequestParams,
    ) -> InputRequiredResult {
        let (tool, args, caller) = call.digests();
        let nonce: [u8; 16] = rand::random();
        let sealed = Sealed {
            tool,
            args,
            caller,
            nonce: hex::encode(nonce),
            until_ms: now_ms().saturating_add(self.ttl.as_millis() as u64),
            approval,
            questions,
        };
        let state = self
            .codec
            .seal_json_with(&sealed, &SealOptions::new().ttl(self.ttl))
            .expect("the sealed state is plain JSON");
        let mut requests = InputRequests::new();
        requests.insert(key, InputRequest::Elicitation(ElicitRequest::new(params)));
        InputRequiredResult::new(Some(requests), Some(state))
    }

    /// Marks `nonce` redeemed, refusing one that already is.
    fn redeem_nonce(&self, nonce: String, until_ms: u64) -> Result<(), StateRefusal> {
        let now = now_ms();
        let mut redeemed = self.redeemed.lock().unwrap_or_else(|e| e.into_inner());
        redeemed.retain(|_, until| *until > now);
        if redeemed.insert(nonce, until_ms).is_some() {
            return Err(StateRefusal::Replayed);
        }
        Ok(())
    }
}

/// A remote server's question that stopped a run, to be put to the client.
#[derive(Debug)]
pub(crate) struct Asked {
    digest: String,
    ordinal: u32,
    message: String,
    form: ElicitationSchema,
}

/// The elicitor of a call served to a 2026-07-28 client: answers a remote
/// server's question from the answers the call's state and the client's
/// retry carried; a question with no answer yet is recorded and stops the
/// run, so that the call is answered `input_required` with it.
pub(crate) struct RoundTripElicitor {
    answers: Vec<Question>,
    /// How many times each question (by digest) was asked in this run.
    seen: Mutex<HashMap<String, u32>>,
    /// The question that stopped the run.
    stopped_at: Mutex<Option<Asked>>,
    /// Cancels the run.
    stop: CancellationToken,
}

impl RoundTripElicitor {
    /// An elicitor answering from `carried`'s answers, cancelling `stop`
    /// at the first question it has no answer to.
    pub(crate) fn new(carried: &Carried, stop: CancellationToken) -> Self {
        Self {
            answers: carried.answers.clone(),
            seen: Mutex::new(HashMap::new()),
            stopped_at: Mutex::new(None),
            stop,
        }
    }

    /// The question that stopped the run, if one did.
    pub(crate) fn stopped_at(&self) -> Option<Asked> {
        self.stopped_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

#[async_trait]
impl Elicitor for RoundTripElicitor {
    async fn elicit(
        &self,
        request: &ElicitationRequest,
    ) -> Result<ElicitationAnswer, ElicitationError> {
        let form: ElicitationSchema = serde_json::from_value(request.requested_schema.clone())
            .map_err(|e| {
                ElicitationError::Failed(format!("the form is not an elicitation form: {e}"))
            })?;
        let mut text = request.message.clone();
        text.push('\0');
        canonical_json(&request.requested_schema, &mut text);
        let digest = sha256_hex(text.as_bytes());
        let ordinal = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            let count = seen.entry(digest.clone()).or_insert(0);
            *count += 1;
            *count - 1
        };
        let known = self
            .answers
            .iter()
            .find(|q| q.digest == digest && q.ordinal == ordinal)
            .and_then(|q| q.answer.as_ref());
        if let Some(answer) = known {
            let answer: ElicitResult = serde_json::from_value(answer.clone()).map_err(|e| {
                ElicitationError::Failed(format!(
                    "the MCP client's answer is not an elicitation result: {e}"
                ))
            })?;
            return match answer.action {
                ElicitationAction::Accept => Ok(ElicitationAnswer::Accept(
                    answer.content.unwrap_or_default(),
                )),
                ElicitationAction::Decline => Ok(ElicitationAnswer::Decline),
                ElicitationAction::Cancel => Ok(ElicitationAnswer::Cancel),
                _ => Err(ElicitationError::Failed(
                    "the client answered with an action toolhost does not know".into(),
                )),
            };
        }
        {
            let mut stopped = self.stopped_at.lock().unwrap_or_else(|e| e.into_inner());
            if stopped.is_none() {
                *stopped = Some(Asked {
                    digest,
                    ordinal,
                    message: request.message.clone(),
                    form,
                });
            }
        }
        self.stop.cancel();
        Err(ElicitationError::Failed(
            "the question goes to the MCP client by multi round-trip: this run of the call ends \
             and the call runs again with the answer"
                .into(),
        ))
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

    fn question(message: &str) -> ElicitationRequest {
        ElicitationRequest::new(
            "MCP server `docs`",
            message,
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
        )
    }

    fn answered(key: &str, answer: Value) -> InputResponses {
        InputResponses::from([(key.to_owned(), answer)])
    }

    /// A run with `carried`: the elicitor and whether it stopped the run.
    fn run(carried: &Carried) -> (RoundTripElicitor, CancellationToken) {
        let stop = CancellationToken::new();
        (RoundTripElicitor::new(carried, stop.clone()), stop)
    }

    #[tokio::test]
    async fn n7_a_remote_question_stops_the_run_and_its_answer_travels_to_any_replica() {
        let key = b"0123456789abcdef0123456789abcdef";
        let a = ApprovalRoundTrips::new(key, TTL).unwrap();
        let b = ApprovalRoundTrips::new(key, TTL).unwrap();
        let args = json!({"n": 1});
        let call = binding("t", &args, "http:Bearer a");

        // Round 1, on replica a: the first question stops the run, and
        // goes to the client as it was asked.
        let (e, stop) = run(&Carried::default());
        let err = e.elicit(&question("First?")).await.unwrap_err();
        assert!(err.to_string().contains("multi round-trip"), "{err}");
        assert!(stop.is_cancelled());
        let result = a
            .ask_question(&call, &Carried::default(), e.stopped_at().unwrap())
            .unwrap();
        let wire = serde_json::to_value(&result).unwrap();
        let asked = &wire["inputRequests"]["question-0"];
        assert_eq!(asked["method"], "elicitation/create");
        assert_eq!(asked["params"]["message"], "First?");
        assert_eq!(
            asked["params"]["requestedSchema"]["properties"]["ok"]["type"],
            "boolean"
        );
        let state = result.request_state.unwrap();

        // Round 2, on replica b: the answer comes with the retry; the
        // second question stops the run.
        let yes = json!({"action": "accept", "content": {"ok": true}});
        let carried = b
            .redeem(&call, &state, Some(&answered("question-0", yes)))
            .unwrap();
        let (e, stop) = run(&carried);
        assert_eq!(
            e.elicit(&question("First?")).await.unwrap(),
            ElicitationAnswer::Accept(json!({"ok": true}))
        );
        assert!(!stop.is_cancelled());
        e.elicit(&question("Second?")).await.unwrap_err();
        assert!(stop.is_cancelled());
        let result = b
            .ask_question(&call, &carried, e.stopped_at().unwrap())
            .unwrap();
        assert_eq!(
            result
                .input_requests
                .as_ref()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["question-1"]
        );
        let state = result.request_state.unwrap();

        // Round 3, back on a: the first answer from the state, the second
        // from the retry; the run goes through.
        let no = json!({"action": "decline"});
        let carried = a
            .redeem(&call, &state, Some(&answered("question-1", no)))
            .unwrap();
        let (e, stop) = run(&carried);
        assert_eq!(
            e.elicit(&question("First?")).await.unwrap(),
            ElicitationAnswer::Accept(json!({"ok": true}))
        );
        assert_eq!(
            e.elicit(&question("Second?")).await.unwrap(),
            ElicitationAnswer::Decline
        );
        assert!(!stop.is_cancelled());
        assert!(e.stopped_at().is_none());
        // The replica that redeemed a state refuses it again.
        assert!(matches!(
            a.redeem(&call, &state, None),
            Err(StateRefusal::Replayed)
        ));
    }

    #[tokio::test]
    async fn n7_an_answer_goes_only_to_the_very_question_it_answers() {
        let trips = trips();
        let args = json!({});
        let call = binding("t", &args, "local");
        let (e, _) = run(&Carried::default());
        e.elicit(&question("First?")).await.unwrap_err();
        let result = trips
            .ask_question(&call, &Carried::default(), e.stopped_at().unwrap())
            .unwrap();
        let state = result.request_state.unwrap();
        let yes = json!({"action": "accept", "content": {"ok": true}});
        let carried = trips
            .redeem(&call, &state, Some(&answered("question-0", yes.clone())))
            .unwrap();

        // The same question asked a second time in the run is a new one.
        let (e, stop) = run(&carried);
        e.elicit(&question("First?")).await.unwrap();
        e.elicit(&question("First?")).await.unwrap_err();
        assert!(stop.is_cancelled());
        // The same words with another form are another question.
        let (e, stop) = run(&carried);
        let other = ElicitationRequest::new(
            "MCP server `docs`",
            "First?",
            json!({"type": "object", "properties": {"ok": {"type": "string"}}}),
        );
        e.elicit(&other).await.unwrap_err();
        assert!(stop.is_cancelled());
        // An answer under a key no question was asked under answers nothing.
        let (e, _) = run(&Carried::default());
        e.elicit(&question("First?")).await.unwrap_err();
        let result = trips
            .ask_question(&call, &Carried::default(), e.stopped_at().unwrap())
            .unwrap();
        let carried = trips
            .redeem(
                &call,
                &result.request_state.unwrap(),
                Some(&answered("question-7", yes)),
            )
            .unwrap();
        let (e, stop) = run(&carried);
        e.elicit(&question("First?")).await.unwrap_err();
        assert!(stop.is_cancelled());
        // An answer that is not an elicitation result goes back as a
        // failure, never as an answer.
        let (e, _) = run(&Carried::default());
        e.elicit(&question("First?")).await.unwrap_err();
        let result = trips
            .ask_question(&call, &Carried::default(), e.stopped_at().unwrap())
            .unwrap();
        let carried = trips
            .redeem(
                &call,
                &result.request_state.unwrap(),
                Some(&answered("question-0", json!("yes"))),
            )
            .unwrap();
        let (e, _) = run(&carried);
        let err = e.elicit(&question("First?")).await.unwrap_err();
        assert!(
            err.to_string().contains("not an elicitation result"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn n6_n7_the_approval_travels_with_the_questions_and_a_call_cannot_ask_without_end() {
        let trips = trips();
        let args = json!({});
        let call = binding("t", &args, "local");
        // The approval, answered in the first round, holds in every later one.
        let (state, approve) = asked(&trips, &call);
        let mut carried = trips.redeem(&call, &state, Some(&approve)).unwrap();
        assert_eq!(carried.approval(), Approval::Approved);
        for n in 0..MAX_QUESTIONS {
            let (e, _) = run(&carried);
            e.elicit(&question(&format!("Question {n}?")))
                .await
                .unwrap_err();
            let result = trips
                .ask_question(&call, &carried, e.stopped_at().unwrap())
                .unwrap();
            let key = format!("question-{n}");
            assert!(result.input_requests.as_ref().unwrap().contains_key(&key));
            let yes = json!({"action": "accept", "content": {"ok": true}});
            carried = trips
                .redeem(
                    &call,
                    &result.request_state.unwrap(),
                    Some(&answered(&key, yes)),
                )
                .unwrap();
            assert_eq!(carried.approval(), Approval::Approved, "round {n}");
        }
        let (e, _) = run(&carried);
        e.elicit(&question("One more?")).await.unwrap_err();
        let err = trips
            .ask_question(&call, &carried, e.stopped_at().unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("more than 32 questions"), "{err}");
    }
}
