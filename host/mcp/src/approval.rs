//! Asking the person behind an MCP client whether a call may run (rule
//! P7): the approvers a `tools/call` served by [`McpServer`](crate::McpServer)
//! carries, and the form and answers they share.
//!
//! A client of protocol 2025-11-25 or earlier, in a session, is asked by a
//! server-to-client `elicitation/create` while the call waits
//! ([`ElicitApprover`]). A 2026-07-28 client is asked by a multi
//! round-trip request instead ([`DeferToCaller`], then [`Answered`]; see
//! [`approval_round_trip`](crate::approval_round_trip)).

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
};
use rmcp::service::Peer;
use toolhost_core::tool::approval::{Approval, ApprovalRequest, Approver};

/// Longest excerpt of a call's arguments shown in the question.
pub(crate) const SHOWN_ARGUMENTS: usize = 2000;

/// Asks the client through `elicitation/create`, with a form of one
/// boolean, `approve`. Fails closed: a client that did not declare form
/// elicitation, an error, a decline or a cancel is a denial, each saying
/// which. (A server without sessions never uses it: see
/// [`McpServer`](crate::McpServer).) The pipeline bounds the wait.
pub(crate) struct ElicitApprover {
    peer: Peer<RoleServer>,
}

impl ElicitApprover {
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }
}

/// The form the client shows: one required yes-or-no.
pub(crate) fn form() -> ElicitationSchema {
    ElicitationSchema::builder()
        .required_bool_with("approve", |b| {
            b.title("Approve").description("Let this call run")
        })
        .build()
        .expect("one required boolean is a valid form")
}

/// Whether `capabilities` offer form elicitation (a declared `elicitation`
/// with neither `form` nor `url` means form, as the specification says).
pub(crate) fn offers_form(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The approval a person's answer to the [`form`] gives.
pub(crate) fn approval_from_answer(answer: &ElicitResult) -> Approval {
    match answer.action {
        ElicitationAction::Accept => {
            let approve = answer
                .content
                .as_ref()
                .and_then(|c| c.get("approve"))
                .and_then(serde_json::Value::as_bool);
            if approve == Some(true) {
                Approval::Approved
            } else {
                Approval::denied("the client's user did not approve it")
            }
        }
        ElicitationAction::Decline => Approval::denied("the client's user declined"),
        ElicitationAction::Cancel => Approval::denied("the client's user cancelled"),
        _ => Approval::denied("the client answered with an action toolhost does not know"),
    }
}

#[async_trait]
impl Approver for ElicitApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let Some(info) = self.peer.peer_info() else {
            return Approval::denied("the MCP client cannot be asked: it has not initialized");
        };
        if !offers_form(Some(&info.capabilities)) {
            return Approval::denied(
                "the MCP client cannot be asked: it does not offer form elicitation",
            );
        }
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: request.question(SHOWN_ARGUMENTS),
            requested_schema: form(),
        };
        match self.peer.create_elicitation(params).await {
            Ok(answer) => approval_from_answer(&answer),
            Err(e) => Approval::denied(format!(
                "the MCP client could not be asked: {}",
                crate::rmcp_error_text::service_error(&e)
            )),
        }
    }
}

/// Defers the question to a 2026-07-28 client: the call ends with
/// [`ToolError::ApprovalRequired`](toolhost_core::error::ToolError::ApprovalRequired),
/// which the server answers as `input_required`.
pub(crate) struct DeferToCaller;

#[async_trait]
impl Approver for DeferToCaller {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::Deferred
    }
}

/// The answer a retried call brought, checked against its sealed state.
pub(crate) struct Answered(pub(crate) Approval);

#[async_trait]
impl Approver for Answered {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.0.clone()
    }
}

/// A denial known before anyone is asked, with its reason.
pub(crate) struct CannotAsk(pub(crate) &'static str);

#[async_trait]
impl Approver for CannotAsk {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::denied(self.0)
    }
}
