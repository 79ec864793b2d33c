//! [`until_cancelled`]: running a future against a cancellation token, with
//! the token checked first.

use std::future::Future;
use std::pin::pin;

use futures::future::{Either, select};
use tokio_util::sync::CancellationToken;

/// Runs `work` until it finishes or `token` is cancelled; `None` means
/// cancelled. The token is checked first on every poll, so work that would
/// finish in the same poll as the cancellation is dropped, not returned:
/// once a caller has cancelled, it gets `None` (tokio-util's
/// `run_until_cancelled` checks the work first).
pub async fn until_cancelled<F: Future>(token: &CancellationToken, work: F) -> Option<F::Output> {
    let cancelled = pin!(token.cancelled());
    let work = pin!(work);
    match select(cancelled, work).await {
        Either::Left(((), _)) => None,
        Either::Right((out, _)) => Some(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn p1_a_cancelled_token_wins_over_ready_work() {
        let token = CancellationToken::new();
        assert_eq!(until_cancelled(&token, async { 1 }).await, Some(1));
        token.cancel();
        assert_eq!(until_cancelled(&token, async { 1 }).await, None);
    }

    #[tokio::test]
    async fn p1_cancelling_drops_pending_work() {
        let token = CancellationToken::new();
        let trigger = token.clone();
        tokio::spawn(async move { trigger.cancel() });
        let out = until_cancelled(&token, std::future::pending::<()>()).await;
        assert_eq!(out, None);
    }
}
