//! [`Logging`]: the middleware that records each call through `tracing`
//! (rule P6).
//!
//! Contract: a record names the tool and the call and gives sizes,
//! duration and outcome kind; it never holds arguments, results or error
//! messages, which may quote them.

use async_trait::async_trait;
use tokio::time::Instant;

use crate::error::ToolError;
use crate::hook::CallInfo;
use crate::output::ToolOutput;
use crate::pipeline::{Middleware, Next};
use crate::tool::CallContext;

/// Logs each call through `tracing` (rule P6): tool name, call id, argument
/// and result sizes in bytes, duration and outcome — never the payloads, and
/// for errors only their kind (an error message may quote an argument).
///
/// Events go to the `toolhost::call` target: `info` for successes, `warn`
/// for failures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Logging;

#[async_trait]
impl Middleware for Logging {
    fn name(&self) -> &str {
        "logging"
    }

    async fn handle(
        &self,
        call: &CallInfo,
        ctx: CallContext,
        next: Next<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let result = next.run(ctx).await;
        let duration_us = started.elapsed().as_micros() as u64;
        match &result {
            Ok(output) => tracing::info!(
                target: "toolhost::call",
                tool = call.tool(),
                call_id = %call.call_id,
                args_bytes = call.arguments.len(),
                result_bytes = output.size_bytes(),
                duration_us,
                outcome = "ok",
            ),
            Err(err) => tracing::warn!(
                target: "toolhost::call",
                tool = call.tool(),
                call_id = %call.call_id,
                args_bytes = call.arguments.len(),
                duration_us,
                outcome = err.kind().as_str(),
            ),
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;
    use crate::{Arguments, FnTool, ToolHost, ToolSpec};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn p6_logging_records_identity_and_sizes_never_payloads() {
        let buf = Buffer::default();
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);

        let host = ToolHost::builder().middleware(Logging).build();
        host.register_tool(FnTool::arc(
            ToolSpec::new("login", "", json!({"type": "object"})),
            |_, _| async { Ok(ToolOutput::text("session=SECRET-SESSION")) },
        ))
        .unwrap();
        host.register_tool(FnTool::arc(
            ToolSpec::new("fails", "", json!({"type": "object"})),
            |_, _| async { Err(ToolError::failed("bad password hunter2")) },
        ))
        .unwrap();
        let args = Arguments::parse(r#"{"password":"hunter2"}"#).unwrap();
        let ctx = CallContext::new().with_call_id("c-1");
        host.invoke_tool(ctx, "login", args.clone()).await.unwrap();
        let ctx = CallContext::new().with_call_id("c-2");
        host.invoke_tool(ctx, "fails", args).await.unwrap_err();

        let log = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert!(
            log.contains("tool=\"login\"") || log.contains("tool=login"),
            "{log}"
        );
        assert!(log.contains("call_id=c-1"), "{log}");
        assert!(log.contains("args_bytes=22"), "{log}");
        assert!(log.contains("result_bytes=22"), "{log}");
        assert!(log.contains("duration_us="), "{log}");
        assert!(
            log.contains("outcome=\"failed\"") || log.contains("outcome=failed"),
            "{log}"
        );
        assert!(!log.contains("hunter2"), "payload leaked: {log}");
        assert!(!log.contains("SECRET-SESSION"), "payload leaked: {log}");
    }
}
