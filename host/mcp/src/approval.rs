//! Asking the person behind an MCP client whether a call may run (rule
//! P7), through MCP elicitation: the [`Approver`] every `tools/call` served
//! by [`McpServer`](crate::McpServer) carries.

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer};
use toolhost_core::tool::approval::{Approval, ApprovalRequest, Approver};

/// Longest excerpt of a call's arguments shown in the question.
const SHOWN_ARGUMENTS: usize = 2000;

/// Asks the client through `elicitation/create`, with a form of one
/// boolean, `approve`. Fails closed: a client that did not declare form
/// elicitation, a request the session cannot carry (a stateless server, or
/// protocol 2026-07-28, which forbids server-to-client requests), an error,
/// a decline or a cancel is a denial. The pipeline bounds the wait.
pub(crate) struct ElicitApprover {
    peer: Peer<RoleServer>,
}

impl ElicitApprover {
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }
}

/// The form the client shows: one required yes-or-no.
fn form() -> Option<ElicitationSchema> {
    ElicitationSchema::builder()
        .required_bool_with("approve", |b| {
            b.title("Approve").description("Let this call run")
        })
        .build()
        .ok()
}

#[async_trait]
impl Approver for ElicitApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        if !self
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return Approval::denied(
                "the MCP client cannot be asked: it does not offer elicitation",
            );
        }
        let Some(requested_schema) = form() else {
            return Approval::denied("the approval form could not be built");
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: request.question(SHOWN_ARGUMENTS),
            requested_schema,
        };
        match self.peer.create_elicitation(params).await {
            Ok(answer) => match answer.action {
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
            },
            Err(e) => Approval::denied(format!(
                "the MCP client could not be asked: {}",
                crate::rmcp_error_text::service_error(&e)
            )),
        }
    }
}
