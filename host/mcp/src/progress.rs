//! A call's progress, between MCP's progress notifications and the call
//! context's [`ProgressSink`] (rule N3), in both directions.
//!
//! A tool reports from wherever it runs, synchronously; the reports travel
//! through a bounded queue to whoever sends them on. A tool that reports
//! faster than they can be sent loses reports (progress is a hint), never
//! memory, and never blocks.

#[cfg(feature = "server")]
use std::future::Future;
#[cfg(feature = "server")]
use std::pin::pin;

use rmcp::model::ProgressNotificationParam;
#[cfg(feature = "server")]
use rmcp::model::ProgressToken;
#[cfg(feature = "server")]
use tokio::sync::mpsc;
use toolhost_core::tool::Progress;
#[cfg(feature = "server")]
use toolhost_core::tool::ProgressSink;

/// How many reports may wait to be sent.
#[cfg(feature = "server")]
const QUEUE: usize = 64;

/// A sink for a call's context, and the queue its reports arrive on.
#[cfg(feature = "server")]
pub(crate) fn channel() -> (ProgressSink, mpsc::Receiver<Progress>) {
    let (tx, rx) = mpsc::channel(QUEUE);
    let sink = ProgressSink::new(move |p| {
        // Full: the report is dropped; closed: the call is over.
        let _ = tx.try_send(p);
    });
    (sink, rx)
}

/// Runs `call`, handing each report that arrives meanwhile to `send`, and
/// once it ends, the reports still queued: every report of the call goes
/// out before its result does.
#[cfg(feature = "server")]
pub(crate) async fn forwarding<T, F, Fut>(
    call: impl Future<Output = T>,
    mut reports: mpsc::Receiver<Progress>,
    mut send: F,
) -> T
where
    F: FnMut(Progress) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut call = pin!(call);
    let outcome = loop {
        tokio::select! {
            biased;
            outcome = &mut call => break outcome,
            Some(p) = reports.recv() => send(p).await,
        }
    };
    reports.close();
    while let Ok(p) = reports.try_recv() {
        send(p).await;
    }
    outcome
}

/// The MCP notification of `progress` for `token`.
#[cfg(feature = "server")]
pub(crate) fn to_mcp(token: ProgressToken, progress: Progress) -> ProgressNotificationParam {
    let mut param = ProgressNotificationParam::new(token, progress.progress);
    param.total = progress.total;
    param.message = progress.message;
    param
}

/// The report an MCP notification carries.
#[cfg(feature = "client")]
pub(crate) fn from_mcp(param: ProgressNotificationParam) -> Progress {
    Progress {
        progress: param.progress,
        total: param.total,
        message: param.message,
    }
}

#[cfg(all(test, feature = "server"))]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[tokio::test]
    async fn n3_every_report_is_sent_before_the_result_and_a_flood_is_bounded() {
        let (sink, rx) = channel();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let log = sent.clone();
        let outcome = forwarding(
            async move {
                for i in 0..3 {
                    sink.report(Progress {
                        progress: f64::from(i),
                        total: Some(2.0),
                        message: None,
                    });
                    tokio::task::yield_now().await;
                }
                // A flood: more than the queue holds, without yielding.
                for i in 0..10_000 {
                    sink.report(Progress {
                        progress: f64::from(3 + i),
                        total: None,
                        message: None,
                    });
                }
                "done"
            },
            rx,
            move |p| {
                log.lock().unwrap().push(p.progress);
                async {}
            },
        )
        .await;
        assert_eq!(outcome, "done");
        let sent = sent.lock().unwrap();
        assert_eq!(sent[..3], [0.0, 1.0, 2.0]);
        assert!(sent.len() <= 3 + QUEUE, "{} reports queued", sent.len());
        assert!(sent.windows(2).all(|w| w[0] < w[1]), "in order");
    }
}
