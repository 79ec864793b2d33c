//! [`until_cancelled`]: running a future against a cancellation token, with
//! the token checked first.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use tokio_util::sync::CancellationToken;

/// Runs `work` until it finishes or `token` is cancelled; `None` means
/// cancelled. The token is checked first on every poll, so work that would
/// finish in the same poll as the cancellation is dropped, not returned:
/// once a caller has cancelled, it gets `None` (tokio-util's
/// `run_until_cancelled` checks the work first).
///
/// Work that finishes in its first poll (a plugin's echo) is never
/// registered with the token: a waiter's entry costs a lock to add and one
/// to remove, so the wait for the cancellation is polled only once the
/// work has to wait.
pub async fn until_cancelled<F: Future>(token: &CancellationToken, work: F) -> Option<F::Output> {
    let mut work = pin!(work);
    // Made now, polled only if the work waits: no wake-up is lost between
    // the two, since it checks the token again as it is polled.
    let mut cancelled = pin!(token.cancelled());
    std::future::poll_fn(|cx| {
        if token.is_cancelled() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        cancelled.as_mut().poll(cx).map(|()| None)
    })
    .await
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
    async fn p1_a_cancellation_while_the_work_waits_drops_it_at_once() {
        let token = CancellationToken::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let trigger = token.clone();
        let waiting = tokio::spawn(async move {
            // The work waits on a channel nobody sends on until after the
            // cancellation: only the token can end it.
            until_cancelled(&token, rx).await
        });
        tokio::task::yield_now().await;
        trigger.cancel();
        let out = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
            .await
            .expect("the cancellation ends the wait")
            .expect("the task ran");
        assert!(out.is_none());
        drop(tx);
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
