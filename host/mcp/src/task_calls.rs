//! A `tools/call` of a client that declared the tasks extension (rule N8):
//! the call, with its questions going to the task, run through
//! [`Tasks::answer`].

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use tokio_util::sync::CancellationToken;
use toolhost_core::error::ToolError;
use toolhost_core::tool::approval::Approver;
use toolhost_core::tool::{Arguments, CallContext};

use super::approval::{CannotAsk, offers_form};
use super::convert;
use super::server::{Caller, Hosted, McpServer};
use super::tasks::{Finished, TaskApprover, TaskCall, TaskElicitor, TaskQuestions, Tasks};

impl McpServer {
    /// Runs `request` for `caller`, in its tenant, on `hosted` (which the
    /// call holds to its end, task or not); answers its result, or a task
    /// (`caller`'s alone) if it runs long or asks a question.
    pub(crate) async fn call_as_task(
        &self,
        hosted: Arc<Hosted>,
        tasks: &Tasks,
        request: CallToolRequestParams,
        args: Arguments,
        caller: &Caller,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let questions = TaskQuestions::new();
        let cancel = CancellationToken::new();
        let mut ctx = CallContext::new()
            .with_cancellation(cancel.clone())
            .with_tenant(caller.tenant.clone())
            .with_elicitor(Arc::new(TaskElicitor(questions.clone())));
        if self.asks_clients() {
            let approver: Arc<dyn Approver> = if offers_form(context.client_capabilities().as_ref())
            {
                Arc::new(TaskApprover(questions.clone()))
            } else {
                Arc::new(CannotAsk(
                    "the MCP client cannot be asked: it does not offer form elicitation",
                ))
            };
            ctx = ctx.with_approver(approver);
        }
        // The caller's trace context, as for a call answered at once
        // (rule X2).
        if let Some(trace) = crate::trace_context::of_call(&request, context) {
            ctx = ctx.with_trace_context(trace);
        }
        let name = request.name.to_string();
        let token = cancel.clone();
        // Counted while it runs, task or not: a draining server waits for it.
        let counted = self.count_call();
        let running = tokio::spawn(async move {
            let _counted = counted;
            match hosted.host.invoke_tool(ctx, &name, args).await {
                Ok(out) => Finished::Result(convert::output_to_mcp(&out)),
                Err(e @ ToolError::UnknownTool { .. }) => {
                    Finished::Error(ErrorData::invalid_params(e.to_string(), None))
                }
                Err(e @ ToolError::OverQuota { .. }) => {
                    Finished::Error(convert::over_quota_error(&e))
                }
                Err(_) if token.is_cancelled() => Finished::Cancelled,
                Err(e) => Finished::Result(convert::error_to_mcp(&e)),
            }
        });
        let call = TaskCall {
            running,
            questions,
            cancel,
        };
        tasks.answer(caller, call, context.ct.clone()).await
    }
}
