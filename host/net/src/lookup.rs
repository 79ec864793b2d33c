//! Name lookups, bounded by how many are running, not by how many are
//! waited for.
//!
//! The system's resolver (`getaddrinfo`) blocks a thread until it answers,
//! which for a name whose servers do not reply is the resolver's whole
//! timeout (seconds, per server and attempt). Whoever asked can give up
//! sooner, a guest by dropping its request, but the thread cannot be
//! stopped: tokio's `lookup_host` lets the lookup run on in the blocking
//! pool, unaccounted. A guest that starts requests and drops them could
//! fill that pool (512 threads), and with it stall every tenant's file
//! access, which runs there too (rule C4). So each lookup here holds a
//! slot from the moment it starts until the resolver returns, inside the
//! thread that waits for it, and a lookup that finds every slot held waits
//! for one (without a thread: until whoever asked gives up).
//!
//! Written here rather than taken from a resolver crate: the bound has to
//! hold the thread the system's resolver occupies, and an asynchronous
//! resolver would answer differently from the system's configuration
//! (`/etc/hosts`, `nsswitch.conf`) that operators expect.

use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::sync::Arc;

use tokio::sync::Semaphore;

/// Lookups in flight when nothing else is said: what a plugin may have of
/// outgoing requests by default.
pub const DEFAULT_MAX_LOOKUPS: usize = 16;

/// A bound on the name lookups in flight of whoever holds it (and its
/// clones, which share it). A lookup counts from its start until the
/// system's resolver answers, even when the future that asked for it was
/// dropped long before.
#[derive(Clone)]
pub struct Lookups {
    slots: Arc<Semaphore>,
    limit: usize,
}

impl Lookups {
    /// At most `limit` lookups in flight; at least one is always allowed.
    pub fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        Self {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// The bound.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The addresses `name` resolves to, with `port`, from the system's
    /// resolver, or its error. When the bound is reached this waits for a
    /// lookup in flight to end; dropping the future stops the wait, and
    /// once the lookup has started, only the wait for its answer.
    pub async fn lookup(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        let name = name.to_owned();
        self.lookup_with(move || {
            (name.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect)
        })
        .await
    }

    /// `resolve` on a blocking thread, holding a slot until it returns.
    async fn lookup_with(
        &self,
        resolve: impl FnOnce() -> io::Result<Vec<SocketAddr>> + Send + 'static,
    ) -> io::Result<Vec<SocketAddr>> {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| io::Error::other("name lookups are closed"))?;
        tokio::task::spawn_blocking(move || {
            // Given back when the resolver returns, whether or not anyone
            // still waits for the answer.
            let _slot = slot;
            resolve()
        })
        .await
        .map_err(|e| io::Error::other(format!("the lookup's thread failed: {e}")))?
    }
}

impl Default for Lookups {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LOOKUPS)
    }
}

/// Two bounds are equal when their limits are: a policy compared with its
/// reloaded copy is the same policy.
impl PartialEq for Lookups {
    fn eq(&self, other: &Self) -> bool {
        self.limit == other.limit
    }
}

impl Eq for Lookups {}

impl fmt::Debug for Lookups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lookups")
            .field("limit", &self.limit)
            .field("in_flight", &(self.limit - self.slots.available_permits()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A lookup that blocks its thread until `release` sends, then answers
    /// one address; and a way to know it started.
    fn stalled() -> (
        impl FnOnce() -> io::Result<Vec<SocketAddr>> + Send + 'static,
        mpsc::Sender<()>,
        mpsc::Receiver<()>,
    ) {
        let (release, wait) = mpsc::channel::<()>();
        let (started_tx, started) = mpsc::channel::<()>();
        let resolve = move || {
            started_tx.send(()).unwrap();
            wait.recv().unwrap();
            Ok(vec!["192.0.2.1:80".parse().unwrap()])
        };
        (resolve, release, started)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn c4_an_abandoned_lookup_holds_its_slot_until_the_resolver_answers() {
        let lookups = Lookups::new(2);
        let mut releases = Vec::new();
        for _ in 0..2 {
            let (resolve, release, started) = stalled();
            let asker = {
                let lookups = lookups.clone();
                tokio::spawn(async move { lookups.lookup_with(resolve).await })
            };
            // Started on its thread, then given up by whoever asked.
            tokio::task::spawn_blocking(move || started.recv().unwrap())
                .await
                .unwrap();
            asker.abort();
            assert!(asker.await.unwrap_err().is_cancelled());
            releases.push(release);
        }
        // Two abandoned lookups still run: a third waits, and does not
        // start (it would answer at once).
        let third = {
            let lookups = lookups.clone();
            tokio::spawn(async move {
                lookups
                    .lookup_with(|| Ok(vec!["192.0.2.2:80".parse().unwrap()]))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!third.is_finished(), "a third lookup started");
        // One resolver answers: its slot comes back, and the third runs.
        releases.pop().unwrap().send(()).unwrap();
        // A bound that only catches a hang.
        let answer = tokio::time::timeout(Duration::from_secs(60), third)
            .await
            .expect("the slot of the lookup that answered is given back")
            .unwrap();
        assert_eq!(answer.unwrap(), vec!["192.0.2.2:80".parse().unwrap()]);
        releases.pop().unwrap().send(()).unwrap();
    }

    #[tokio::test]
    async fn a_resolvers_error_is_kept_and_a_zero_bound_is_one() {
        let lookups = Lookups::new(0);
        assert_eq!(lookups.limit(), 1);
        let err = lookups
            .lookup_with(|| Err(io::Error::new(io::ErrorKind::NotFound, "no such name")))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(err.to_string(), "no such name");
        let addrs = lookups.lookup("localhost", 80).await.unwrap();
        assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 80));
    }
}
