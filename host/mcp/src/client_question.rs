//! Putting a question from the middle of a call (a remote MCP server's
//! elicitation, forwarded) to the user of the MCP client that made the call:
//! the [`Elicitor`] each `tools/call` served by
//! [`McpServer`](crate::McpServer) carries.

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use toolhost_core::tool::elicitation::{
    ElicitationAnswer, ElicitationError, ElicitationRequest, Elicitor,
};

/// Asks a client of protocol 2025-11-25 or earlier, in a session, with an
/// `elicitation/create` request of its own carrying the question and the
/// form as they were asked.
pub(crate) struct ClientElicitor {
    peer: Peer<RoleServer>,
}

impl ClientElicitor {
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }
}

#[async_trait]
impl Elicitor for ClientElicitor {
    async fn elicit(
        &self,
        request: &ElicitationRequest,
    ) -> Result<ElicitationAnswer, ElicitationError> {
        let answer = self
            .peer
            .create_elicitation(form_request(request)?)
            .await
            .map_err(|e| {
                ElicitationError::Failed(format!(
                    "the MCP client could not be asked: {}",
                    crate::rmcp_error_text::service_error(&e)
                ))
            })?;
        answer_of(answer)
    }
}

/// `request` as MCP's form elicitation, its form checked.
pub(crate) fn form_request(
    request: &ElicitationRequest,
) -> Result<ElicitRequestParams, ElicitationError> {
    let requested_schema: ElicitationSchema =
        serde_json::from_value(request.requested_schema.clone()).map_err(|e| {
            ElicitationError::Failed(format!("the form is not an elicitation form: {e}"))
        })?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: request.message.clone(),
        requested_schema,
    })
}

/// What the person's `answer` says, in toolhost's terms.
pub(crate) fn answer_of(answer: ElicitResult) -> Result<ElicitationAnswer, ElicitationError> {
    Ok(match answer.action {
        ElicitationAction::Accept => ElicitationAnswer::Accept(answer.content.unwrap_or_default()),
        ElicitationAction::Decline => ElicitationAnswer::Decline,
        ElicitationAction::Cancel => ElicitationAnswer::Cancel,
        _ => {
            return Err(ElicitationError::Failed(
                "the client answered with an action toolhost does not know".into(),
            ));
        }
    })
}

/// No one to ask, with the reason.
pub(crate) struct NoOneToAsk(pub(crate) &'static str);

#[async_trait]
impl Elicitor for NoOneToAsk {
    async fn elicit(
        &self,
        _request: &ElicitationRequest,
    ) -> Result<ElicitationAnswer, ElicitationError> {
        Err(ElicitationError::NoOneToAsk(self.0.into()))
    }
}
