//! Where tasks are kept (rule N8): the [`TaskStore`] trait, the record it
//! holds, and the store of one process ([`MemoryTaskStore`]).
//!
//! A task is run by the replica that created it (its *owner*), which alone
//! writes the task's progress. Any replica answers `tasks/get`,
//! `tasks/update` and `tasks/cancel` from the store: answers to the task's
//! questions and a request to cancel are put there for the owner to take.
//! The owner renews a lease while it runs the task; a task whose lease has
//! lapsed before it finished is reported failed, so a replica that dies
//! mid-task never leaves its callers polling for ever.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a stored task is doing, with what each state carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskState {
    /// Running.
    Working,
    /// Waiting for the caller's answers to `requests` (MCP `inputRequests`,
    /// by key).
    InputRequired {
        /// The questions, by the key their answers come back under.
        requests: Map<String, Value>,
    },
    /// Finished with a `tools/call` result (which may be a tool error).
    Completed {
        /// The `CallToolResult`, as JSON.
        result: Map<String, Value>,
    },
    /// Ended by a JSON-RPC error.
    Failed {
        /// The JSON-RPC error object.
        error: Map<String, Value>,
    },
    /// Cancelled by its caller.
    Cancelled,
}

impl TaskState {
    /// Whether the task has finished (nothing changes it any more).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Completed { .. } | Self::Failed { .. } | Self::Cancelled
        )
    }
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task's id: 128 random bits, in hex (not guessable).
    pub id: String,
    /// A digest of the caller that created it (its identity within its
    /// tenant): only that caller may see, answer or cancel the task.
    pub owner: String,
    /// The tenant the task was created for (rule A2): a caller of another
    /// tenant is never given it, whatever its identity. Empty in a record
    /// written before tasks held their tenant, which no caller is given.
    #[serde(default)]
    pub tenant: String,
    /// The token subject of the caller that created it, when known (with
    /// OAuth), for whoever reads the store.
    #[serde(default)]
    pub subject: Option<String>,
    /// When it was created (RFC 3339), and in milliseconds since the epoch.
    pub created_at: String,
    /// See [`TaskRecord::created_at`].
    pub created_ms: u64,
    /// When it last changed (RFC 3339).
    pub last_updated_at: String,
    /// How long after creation the task and its result are kept.
    pub ttl_ms: u64,
    /// How often a client should poll.
    pub poll_interval_ms: u64,
    /// A line for people about the current state.
    pub status_message: Option<String>,
    /// What it is doing.
    pub state: TaskState,
}

/// A store that could not be read or written, with its cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The store did not answer or refused the operation.
    #[error("the task store failed: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A stored record that does not decode (written by another version,
    /// or by someone else).
    #[error("a stored task does not decode: {0}")]
    Corrupt(#[source] serde_json::Error),
}

/// Where tasks are kept, shared by every replica that answers for them.
///
/// Each operation is atomic on its own. Implementations keep a task's
/// record, the answers given to it and a request to cancel it for the
/// `retain` time given at creation, and no longer.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task, kept for `retain`, with its owner's lease held
    /// for `lease`; it is readable by [`TaskStore::get`] on every replica
    /// once this returns.
    async fn create(
        &self,
        record: &TaskRecord,
        retain: Duration,
        lease: Duration,
    ) -> Result<(), TaskStoreError>;

    /// The task `id`, if it is kept.
    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, TaskStoreError>;

    /// Replaces the stored record with `record` unless the stored one has
    /// already finished (a task's end is written once). Returns whether it
    /// was written.
    async fn update(&self, record: &TaskRecord) -> Result<bool, TaskStoreError>;

    /// Removes the task and everything kept for it.
    async fn remove(&self, id: &str) -> Result<(), TaskStoreError>;

    /// Renews the owner's lease on the task for `lease`.
    async fn renew_lease(&self, id: &str, lease: Duration) -> Result<(), TaskStoreError>;

    /// Whether the owner's lease is current.
    async fn lease_held(&self, id: &str) -> Result<bool, TaskStoreError>;

    /// Records that the caller asked to cancel the task.
    async fn request_cancel(&self, id: &str) -> Result<(), TaskStoreError>;

    /// Whether the caller asked to cancel the task.
    async fn cancel_requested(&self, id: &str) -> Result<bool, TaskStoreError>;

    /// Keeps the caller's `answer` to the question under `key`, for the
    /// owner to take.
    async fn put_answer(&self, id: &str, key: &str, answer: &Value) -> Result<(), TaskStoreError>;

    /// Takes (returns and forgets) every answer kept for the task.
    async fn take_answers(&self, id: &str) -> Result<Map<String, Value>, TaskStoreError>;
}

/// The tasks of one process: enough for one server, lost when it stops.
/// Replicas share tasks through a store they all reach instead.
///
/// It keeps at most a set number of tasks ([`DEFAULT_MEMORY_TASKS`] unless
/// [`MemoryTaskStore::with_capacity`] says otherwise): when full, the
/// finished task that would go first anyway makes room; with every kept
/// task still running, a new one is refused (the server then answers that
/// call when it ends, as for a client without tasks), so callers that start
/// long calls without end cannot fill the memory.
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<String, Kept>>,
    capacity: usize,
}

/// How many tasks a [`MemoryTaskStore`] keeps by default.
pub const DEFAULT_MEMORY_TASKS: usize = 10_000;

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_TASKS)
    }
}

/// One task in a [`MemoryTaskStore`].
struct Kept {
    record: TaskRecord,
    until: Instant,
    lease_until: Option<Instant>,
    cancel: bool,
    answers: Map<String, Value>,
}

impl MemoryTaskStore {
    /// An empty store that keeps at most [`DEFAULT_MEMORY_TASKS`] tasks.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that keeps at most `capacity` tasks (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            tasks: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// The tasks, with those past their retention dropped.
    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<String, Kept>> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        tasks.retain(|_, kept| kept.until > now);
        tasks
    }
}

#[async_trait]
impl TaskStore for MemoryTaskStore {
    async fn create(
        &self,
        record: &TaskRecord,
        retain: Duration,
        lease: Duration,
    ) -> Result<(), TaskStoreError> {
        let now = Instant::now();
        let mut tasks = self.tasks();
        if tasks.len() >= self.capacity {
            let first_to_go = tasks
                .iter()
                .filter(|(_, k)| k.record.state.is_terminal())
                .min_by_key(|(_, k)| k.until)
                .map(|(id, _)| id.clone());
            match first_to_go {
                Some(id) => {
                    tasks.remove(&id);
                }
                None => {
                    return Err(TaskStoreError::Unavailable(
                        format!(
                            "the store is full: {} tasks are running, the most it keeps",
                            tasks.len()
                        )
                        .into(),
                    ));
                }
            }
        }
        let kept = Kept {
            record: record.clone(),
            until: now + retain,
            lease_until: Some(now + lease),
            cancel: false,
            answers: Map::new(),
        };
        tasks.insert(record.id.clone(), kept);
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, TaskStoreError> {
        Ok(self.tasks().get(id).map(|k| k.record.clone()))
    }

    async fn update(&self, record: &TaskRecord) -> Result<bool, TaskStoreError> {
        let mut tasks = self.tasks();
        match tasks.get_mut(&record.id) {
            Some(kept) if !kept.record.state.is_terminal() => {
                kept.record = record.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn remove(&self, id: &str) -> Result<(), TaskStoreError> {
        self.tasks().remove(id);
        Ok(())
    }

    async fn renew_lease(&self, id: &str, lease: Duration) -> Result<(), TaskStoreError> {
        if let Some(kept) = self.tasks().get_mut(id) {
            kept.lease_until = Some(Instant::now() + lease);
        }
        Ok(())
    }

    async fn lease_held(&self, id: &str) -> Result<bool, TaskStoreError> {
        Ok(self
            .tasks()
            .get(id)
            .and_then(|k| k.lease_until)
            .is_some_and(|until| until > Instant::now()))
    }

    async fn request_cancel(&self, id: &str) -> Result<(), TaskStoreError> {
        if let Some(kept) = self.tasks().get_mut(id) {
            kept.cancel = true;
        }
        Ok(())
    }

    async fn cancel_requested(&self, id: &str) -> Result<bool, TaskStoreError> {
        Ok(self.tasks().get(id).is_some_and(|k| k.cancel))
    }

    async fn put_answer(&self, id: &str, key: &str, answer: &Value) -> Result<(), TaskStoreError> {
        if let Some(kept) = self.tasks().get_mut(id) {
            kept.answers.insert(key.to_owned(), answer.clone());
        }
        Ok(())
    }

    async fn take_answers(&self, id: &str) -> Result<Map<String, Value>, TaskStoreError> {
        Ok(self
            .tasks()
            .get_mut(id)
            .map(|k| std::mem::take(&mut k.answers))
            .unwrap_or_default())
    }
}

/// What every [`TaskStore`] must do (rule N8), run against each store.
#[cfg(test)]
pub(crate) mod contract {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn record(id: &str) -> TaskRecord {
        TaskRecord {
            id: id.to_owned(),
            owner: "owner-digest".into(),
            tenant: "acme".into(),
            subject: Some("alice".into()),
            created_at: "2026-01-01T00:00:00Z".into(),
            created_ms: 1,
            last_updated_at: "2026-01-01T00:00:00Z".into(),
            ttl_ms: 60_000,
            poll_interval_ms: 1000,
            status_message: None,
            state: TaskState::Working,
        }
    }

    const KEEP: Duration = Duration::from_secs(60);

    /// Runs the whole contract on `store`, with ids unique to `run`.
    pub(crate) async fn holds(store: &dyn TaskStore, run: &str) {
        let id = format!("{run}-a");
        assert_eq!(store.get(&id).await.unwrap(), None);
        let mut task = record(&id);
        store.create(&task, KEEP, KEEP).await.unwrap();
        assert_eq!(store.get(&id).await.unwrap().as_ref(), Some(&task));
        assert!(store.lease_held(&id).await.unwrap());

        // Questions and answers: only kept answers are taken, once.
        let mut requests = Map::new();
        requests.insert("approval-1".into(), json!({"method": "elicitation/create"}));
        task.state = TaskState::InputRequired { requests };
        assert!(store.update(&task).await.unwrap());
        assert_eq!(store.take_answers(&id).await.unwrap(), Map::new());
        store
            .put_answer(&id, "approval-1", &json!({"action": "decline"}))
            .await
            .unwrap();
        let taken = store.take_answers(&id).await.unwrap();
        assert_eq!(taken["approval-1"], json!({"action": "decline"}));
        assert!(store.take_answers(&id).await.unwrap().is_empty());

        // Cancellation is recorded.
        assert!(!store.cancel_requested(&id).await.unwrap());
        store.request_cancel(&id).await.unwrap();
        assert!(store.cancel_requested(&id).await.unwrap());

        // A task's end is written once.
        task.state = TaskState::Cancelled;
        assert!(store.update(&task).await.unwrap());
        let mut late = task.clone();
        late.state = TaskState::Working;
        assert!(!store.update(&late).await.unwrap());
        assert_eq!(
            store.get(&id).await.unwrap().unwrap().state,
            TaskState::Cancelled
        );

        // Nothing is kept for a task that is not there.
        let ghost = format!("{run}-ghost");
        assert!(!store.update(&record(&ghost)).await.unwrap());
        store.put_answer(&ghost, "k", &json!(1)).await.unwrap();
        store.request_cancel(&ghost).await.unwrap();
        assert!(store.take_answers(&ghost).await.unwrap().is_empty());
        assert!(!store.cancel_requested(&ghost).await.unwrap());
        assert_eq!(store.get(&ghost).await.unwrap(), None);

        // A lease lapses unless renewed; a task goes after its retention.
        let short = format!("{run}-short");
        store
            .create(
                &record(&short),
                Duration::from_secs(2),
                Duration::from_millis(50),
            )
            .await
            .unwrap();
        // Waits far past both (expiry, not speed, is what is checked).
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(!store.lease_held(&short).await.unwrap());
        store.renew_lease(&short, KEEP).await.unwrap();
        assert!(store.lease_held(&short).await.unwrap());
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(store.get(&short).await.unwrap(), None);

        store.remove(&id).await.unwrap();
        assert_eq!(store.get(&id).await.unwrap(), None);
    }

    #[tokio::test]
    async fn n8_the_memory_store_keeps_the_contract() {
        holds(&MemoryTaskStore::new(), "memory").await;
    }

    #[tokio::test]
    async fn n8_a_full_memory_store_makes_room_only_by_finished_tasks() {
        let store = MemoryTaskStore::with_capacity(2);
        for id in ["a", "b"] {
            store.create(&record(id), KEEP, KEEP).await.unwrap();
        }
        // Both running: a third is refused, and nothing is lost.
        let err = store.create(&record("c"), KEEP, KEEP).await.unwrap_err();
        assert!(err.to_string().contains("full"), "{err}");
        assert!(store.get("a").await.unwrap().is_some());
        // One finished: it makes room.
        let mut done = record("a");
        done.state = TaskState::Cancelled;
        store.update(&done).await.unwrap();
        store.create(&record("c"), KEEP, KEEP).await.unwrap();
        assert_eq!(store.get("a").await.unwrap(), None);
        assert!(store.get("b").await.unwrap().is_some());
        assert!(store.get("c").await.unwrap().is_some());
    }
}
