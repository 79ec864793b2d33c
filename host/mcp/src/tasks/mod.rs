//! Long tool calls as tasks (MCP's `io.modelcontextprotocol/tasks`
//! extension, protocol 2026-07-28; rule N8).
//!
//! A call from a client that declared the extension starts as any other.
//! If it has not finished after [`TaskSettings::after`], or as soon as it
//! has a question for the caller, the client gets a task instead of the
//! result: the call goes on, on this replica, and its progress is kept in
//! the [`TaskStore`]. The client polls `tasks/get` (on any replica sharing
//! the store), answers questions with `tasks/update` and may `tasks/cancel`.
//!
//! Questions in a task (a hook's request for approval, a remote server's
//! elicitation) are the task's `inputRequests`, answered through the store.
//! A task belongs to the caller that started it, in its tenant (rules N8,
//! A2): the record holds both, and to anyone else, of another tenant or
//! the same, `tasks/get`, `tasks/update` and `tasks/cancel` answer exactly
//! as for an id that never existed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, CreateTaskResult, DetailedTask, ElicitRequest,
    ElicitRequestParams, ElicitResult, ErrorCode, InputRequest, InputRequests, InputResponses,
    Task, TaskPayload, TaskStatus,
};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolhost_core::tool::approval::{Approval, ApprovalRequest, Approver};
use toolhost_core::tool::elicitation::{
    ElicitationAnswer, ElicitationError, ElicitationRequest, Elicitor,
};

use super::approval::{SHOWN_ARGUMENTS, approval_from_answer, form};
use super::client_question::{answer_of, form_request};
use super::server::Caller;
use super::task_store::{TaskRecord, TaskState, TaskStore, TaskStoreError};

/// When a call becomes a task, how long tasks are kept, how often clients
/// should poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskSettings {
    /// A call still running after this long becomes a task (zero: every
    /// call of a client that declared the extension does).
    pub after: Duration,
    /// How long after its creation a task and its result are kept; a task
    /// still running then is stopped and reported failed.
    pub ttl: Duration,
    /// How often clients are asked to poll.
    pub poll_interval: Duration,
}

/// See [`TaskSettings::after`].
pub const DEFAULT_TASK_AFTER: Duration = Duration::from_secs(2);
/// See [`TaskSettings::ttl`].
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);
/// See [`TaskSettings::poll_interval`].
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            after: DEFAULT_TASK_AFTER,
            ttl: DEFAULT_TASK_TTL,
            poll_interval: DEFAULT_POLL_INTERVAL,
        }
    }
}

impl TaskSettings {
    /// The defaults: [`DEFAULT_TASK_AFTER`], [`DEFAULT_TASK_TTL`],
    /// [`DEFAULT_POLL_INTERVAL`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`TaskSettings::after`].
    pub fn after(mut self, after: Duration) -> Self {
        self.after = after;
        self
    }

    /// Sets [`TaskSettings::ttl`].
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets [`TaskSettings::poll_interval`].
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }
}

/// How long the owner's lease on a running task lasts: a task whose owner
/// has not renewed it for this long (the replica died or stalled) is
/// reported failed.
pub const TASK_LEASE: Duration = Duration::from_secs(15);
/// How often the owner renews its lease (well inside [`TASK_LEASE`]).
const LEASE_RENEWAL: Duration = Duration::from_secs(3);
/// How often the owner looks for answers and a request to cancel.
const OWNER_TICK: Duration = Duration::from_millis(200);

/// How a call ended, in MCP's terms.
pub(crate) enum Finished {
    /// A result (which may be a tool's error).
    Result(CallToolResult),
    /// A JSON-RPC error (the request was at fault).
    Error(ErrorData),
    /// Cancelled by the caller.
    Cancelled,
}

/// The questions of one call, shared by its elicitor and approver (which
/// ask) and the server (which turns them into a task's `inputRequests`).
pub(crate) struct TaskQuestions {
    pending: Mutex<Pending>,
    /// Bumped whenever a question is asked or answered.
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct Pending {
    /// Each open question, under its key: the request as JSON and where
    /// its answer goes.
    open: BTreeMap<String, (Value, oneshot::Sender<Value>)>,
    /// Numbers the keys (a key is never used twice in a task).
    next: u64,
}

impl TaskQuestions {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            pending: Mutex::new(Pending::default()),
            changed: watch::channel(0).0,
        })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks `params` under a new key starting with `kind`; waits for the answer.
    async fn ask(&self, kind: &str, params: ElicitRequestParams) -> Option<Value> {
        let request = serde_json::to_value(InputRequest::Elicitation(ElicitRequest::new(params)))
            .expect("an elicitation request is plain JSON");
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending();
            pending.next += 1;
            let key = format!("{kind}-{}", pending.next);
            pending.open.insert(key, (request, tx));
        }
        self.changed.send_modify(|n| *n += 1);
        // Dropped (no answer) when the task is cancelled or ends.
        rx.await.ok()
    }

    /// The open questions, as a task's `inputRequests` (JSON, by key).
    fn open(&self) -> Map<String, Value> {
        self.pending()
            .open
            .iter()
            .map(|(k, (request, _))| (k.clone(), request.clone()))
            .collect()
    }

    /// Gives each answer to its open question; answers to anything else
    /// are ignored. Returns whether any question was answered.
    fn answer(&self, answers: Map<String, Value>) -> bool {
        let mut answered = false;
        {
            let mut pending = self.pending();
            for (key, value) in answers {
                if let Some((_, tx)) = pending.open.remove(&key) {
                    let _ = tx.send(value);
                    answered = true;
                }
            }
        }
        if answered {
            self.changed.send_modify(|n| *n += 1);
        }
        answered
    }

    /// Drops every open question unanswered (their askers get no answer).
    fn drop_all(&self) {
        self.pending().open.clear();
        self.changed.send_modify(|n| *n += 1);
    }

    fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// Asks the caller of a task a remote server's question, as one of the
/// task's `inputRequests`.
pub(crate) struct TaskElicitor(pub(crate) Arc<TaskQuestions>);

#[async_trait]
impl Elicitor for TaskElicitor {
    async fn elicit(
        &self,
        request: &ElicitationRequest,
    ) -> Result<ElicitationAnswer, ElicitationError> {
        let params = form_request(request)?;
        let answer = self.0.ask("question", params).await.ok_or_else(|| {
            ElicitationError::Failed("the task ended before the question was answered".into())
        })?;
        let answer: ElicitResult = serde_json::from_value(answer).map_err(|e| {
            ElicitationError::Failed(format!("the answer is not an elicitation result: {e}"))
        })?;
        answer_of(answer)
    }
}

/// Asks the caller of a task for approval, as one of the task's
/// `inputRequests` (the same form as every other way of asking).
pub(crate) struct TaskApprover(pub(crate) Arc<TaskQuestions>);

#[async_trait]
impl Approver for TaskApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: request.question(SHOWN_ARGUMENTS),
            requested_schema: form(),
        };
        let Some(answer) = self.0.ask("approval", params).await else {
            return Approval::denied("the task ended before the approval was answered");
        };
        match serde_json::from_value::<ElicitResult>(answer) {
            Ok(answer) => approval_from_answer(&answer),
            Err(e) => Approval::denied(format!(
                "the client's answer is not an elicitation result: {e}"
            )),
        }
    }
}

/// The tasks of a server: where they are kept and how long.
pub(crate) struct Tasks {
    store: Arc<dyn TaskStore>,
    settings: TaskSettings,
}

/// A running call that may become a task.
pub(crate) struct TaskCall {
    /// The call, spawned.
    pub(crate) running: JoinHandle<Finished>,
    /// Its questions.
    pub(crate) questions: Arc<TaskQuestions>,
    /// Cancels the call.
    pub(crate) cancel: CancellationToken,
}

impl Tasks {
    pub(crate) fn new(store: Arc<dyn TaskStore>, settings: TaskSettings) -> Self {
        Self { store, settings }
    }

    /// Answers `call` for `caller`: its result if it ends within
    /// [`TaskSettings::after`] without a question, a task otherwise. The
    /// client's own cancellation (`request_ct`) cancels the call until it
    /// is a task, after which only `tasks/cancel` does.
    pub(crate) async fn answer(
        &self,
        caller: &Caller,
        call: TaskCall,
        request_ct: CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let TaskCall {
            mut running,
            questions,
            cancel,
        } = call;
        let mut asked = questions.watch();
        // Questions asked before this point count too.
        asked.mark_changed();
        let finished = tokio::select! {
            done = &mut running => Some(done),
            () = tokio::time::sleep(self.settings.after) => None,
            _ = wait_for_question(&mut asked, &questions) => None,
            () = request_ct.cancelled() => {
                cancel.cancel();
                Some((&mut running).await)
            }
        };
        if let Some(done) = finished {
            return respond(joined(done));
        }
        let record = new_record(caller, &self.settings, &questions);
        if let Err(e) = self
            .store
            .create(&record, self.settings.ttl, TASK_LEASE)
            .await
        {
            // The call is not lost: the client waits for it as if it had
            // not asked for tasks.
            tracing::warn!(target: "toolhost::mcp", "a call could not become a task, so the client waits for it: {}", toolhost_core::error::report(&e));
            return respond(joined(running.await));
        }
        let seed = to_task(&record);
        let owner = Owner {
            store: self.store.clone(),
            record,
            questions,
            cancel,
        };
        tokio::spawn(owner.run(running));
        Ok(CallToolResponse::Task(CreateTaskResult::new(seed)))
    }

    /// `tasks/get`: the task's state, for its caller. A running task whose
    /// owner's lease has lapsed, or that outlived its time, is settled as
    /// failed first.
    pub(crate) async fn get(&self, caller: &Caller, id: &str) -> Result<DetailedTask, ErrorData> {
        let record = self.record(caller, id).await?;
        let record = self.settle_if_abandoned(record).await?;
        Ok(to_detailed(&record))
    }

    /// `tasks/update`: keeps the answers to the task's open questions for
    /// its owner; answers to anything else are ignored.
    pub(crate) async fn update(
        &self,
        caller: &Caller,
        id: &str,
        answers: InputResponses,
    ) -> Result<(), ErrorData> {
        let record = self.record(caller, id).await?;
        let TaskState::InputRequired { requests } = &record.state else {
            return Ok(());
        };
        for (key, answer) in answers {
            if requests.contains_key(&key) {
                self.store
                    .put_answer(id, &key, &answer)
                    .await
                    .map_err(store_error)?;
            }
        }
        Ok(())
    }

    /// `tasks/cancel`: asks the owner to cancel the task (it ends as
    /// `cancelled`, or as it would have if it finished first).
    pub(crate) async fn cancel(&self, caller: &Caller, id: &str) -> Result<(), ErrorData> {
        let record = self.record(caller, id).await?;
        if !record.state.is_terminal() {
            self.store.request_cancel(id).await.map_err(store_error)?;
        }
        Ok(())
    }

    /// The task `id` if `caller` started it, in the tenant it is of now;
    /// for anyone else, as for an unknown id, `-32602` (whether a task
    /// exists is nobody else's business).
    async fn record(&self, caller: &Caller, id: &str) -> Result<TaskRecord, ErrorData> {
        self.store
            .get(id)
            .await
            .map_err(store_error)?
            .filter(|r| belongs_to(r, caller))
            .ok_or_else(|| unknown_task(id))
    }

    async fn settle_if_abandoned(&self, record: TaskRecord) -> Result<TaskRecord, ErrorData> {
        if record.state.is_terminal() {
            return Ok(record);
        }
        let why = if now_ms() >= record.created_ms.saturating_add(record.ttl_ms) {
            "the task ran past its time to live"
        } else if !self
            .store
            .lease_held(&record.id)
            .await
            .map_err(store_error)?
        {
            "the server running the task stopped before it finished"
        } else {
            return Ok(record);
        };
        let failed = settled(
            &record,
            TaskState::Failed {
                error: object(&ErrorData::internal_error(why, None)),
            },
            why,
        );
        if self.store.update(&failed).await.map_err(store_error)? {
            return Ok(failed);
        }
        // The owner finished it meanwhile: that end stands.
        self.store
            .get(&record.id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| ErrorData::invalid_params(format!("no task {:?}", record.id), None))
    }
}

async fn wait_for_question(asked: &mut watch::Receiver<u64>, questions: &TaskQuestions) {
    loop {
        if asked.changed().await.is_err() {
            return std::future::pending().await;
        }
        if !questions.open().is_empty() {
            return;
        }
    }
}

/// The replica running a task: writes its progress and end, takes the
/// caller's answers and requests to cancel, and renews its lease.
struct Owner {
    store: Arc<dyn TaskStore>,
    record: TaskRecord,
    questions: Arc<TaskQuestions>,
    cancel: CancellationToken,
}

impl Owner {
    async fn run(mut self, mut running: JoinHandle<Finished>) {
        let mut changed = self.questions.watch();
        let mut tick = tokio::time::interval(OWNER_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut renew = tokio::time::interval(LEASE_RENEWAL);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let until_ms = self.record.created_ms.saturating_add(self.record.ttl_ms);
        let end = loop {
            tokio::select! {
                done = &mut running => break joined(done),
                Ok(()) = changed.changed() => self.write_progress().await,
                _ = renew.tick() => {
                    if let Err(e) = self.store.renew_lease(&self.record.id, TASK_LEASE).await {
                        tracing::warn!(target: "toolhost::mcp", task = %self.record.id, "could not renew a task's lease: {}", toolhost_core::error::report(&e));
                    }
                }
                _ = tick.tick() => {
                    if now_ms() >= until_ms {
                        self.cancel.cancel();
                        self.questions.drop_all();
                        running.abort();
                        break Finished::Error(ErrorData::internal_error("the task ran past its time to live", None));
                    }
                    self.take_from_caller().await;
                }
            }
        };
        let (state, message) = match end {
            Finished::Result(result) => (
                TaskState::Completed {
                    result: object(&result),
                },
                None,
            ),
            Finished::Error(error) => {
                let message = error.message.to_string();
                (
                    TaskState::Failed {
                        error: object(&error),
                    },
                    Some(message),
                )
            }
            Finished::Cancelled => (TaskState::Cancelled, Some("cancelled by its caller".into())),
        };
        let finished = settled(&self.record, state, message.as_deref().unwrap_or(""));
        if let Err(e) = self.store.update(&finished).await {
            tracing::warn!(target: "toolhost::mcp", task = %self.record.id, "could not record a task's end: {}", toolhost_core::error::report(&e));
        }
    }

    /// Writes the task's state as its open questions make it.
    async fn write_progress(&mut self) {
        let open = self.questions.open();
        self.record.state = if open.is_empty() {
            TaskState::Working
        } else {
            TaskState::InputRequired { requests: open }
        };
        self.record.last_updated_at = rmcp::task_manager::current_timestamp();
        if let Err(e) = self.store.update(&self.record).await {
            tracing::warn!(target: "toolhost::mcp", task = %self.record.id, "could not record a task's questions: {}", toolhost_core::error::report(&e));
        }
    }

    /// Takes the caller's answers, and cancels the call if asked to.
    async fn take_from_caller(&mut self) {
        match self.store.cancel_requested(&self.record.id).await {
            Ok(true) if !self.cancel.is_cancelled() => {
                self.cancel.cancel();
                self.questions.drop_all();
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(target: "toolhost::mcp", task = %self.record.id, "could not read a task's cancellation: {}", toolhost_core::error::report(&e));
            }
        }
        if matches!(self.record.state, TaskState::InputRequired { .. }) {
            match self.store.take_answers(&self.record.id).await {
                Ok(answers) if !answers.is_empty() => {
                    self.questions.answer(answers);
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(target: "toolhost::mcp", task = %self.record.id, "could not read a task's answers: {}", toolhost_core::error::report(&e));
                }
            }
        }
    }
}

/// A finished join: a call that panicked or was aborted fails the task.
fn joined(done: Result<Finished, tokio::task::JoinError>) -> Finished {
    done.unwrap_or_else(|e| {
        Finished::Error(ErrorData::internal_error(
            format!("the call ended abnormally: {e}"),
            None,
        ))
    })
}

/// The direct answer to a call that ended before becoming a task: as if
/// the client had not declared tasks.
fn respond(finished: Finished) -> Result<CallToolResponse, ErrorData> {
    match finished {
        Finished::Result(result) => Ok(CallToolResponse::Complete(result)),
        Finished::Error(error) => Err(error),
        Finished::Cancelled => Ok(CallToolResponse::Complete(CallToolResult::error(vec![
            rmcp::model::ContentBlock::text("the call was cancelled by its caller"),
        ]))),
    }
}

/// The answer to a task id the caller may not know of: the same whether
/// it never existed, has expired, or is another caller's or tenant's.
fn unknown_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no task {id:?}: it never existed, belongs to another caller, or has expired"),
        None,
    )
}

/// Whether `record` is `caller`'s: made by the same caller, in the same
/// tenant. A record without a tenant (written before tasks held one) is
/// nobody's.
fn belongs_to(record: &TaskRecord, caller: &Caller) -> bool {
    !record.tenant.is_empty()
        && record.tenant == *caller.tenant
        && record.owner == caller_digest(&caller.identity)
}

fn new_record(caller: &Caller, settings: &TaskSettings, questions: &TaskQuestions) -> TaskRecord {
    let now = rmcp::task_manager::current_timestamp();
    let open = questions.open();
    TaskRecord {
        id: hex::encode(rand::random::<[u8; 16]>()),
        owner: caller_digest(&caller.identity),
        tenant: caller.tenant.to_string(),
        subject: caller.subject.clone(),
        created_at: now.clone(),
        created_ms: now_ms(),
        last_updated_at: now,
        ttl_ms: millis(settings.ttl),
        poll_interval_ms: millis(settings.poll_interval),
        status_message: None,
        state: if open.is_empty() {
            TaskState::Working
        } else {
            TaskState::InputRequired { requests: open }
        },
    }
}

/// `record` in `state`, with `message` for people.
fn settled(record: &TaskRecord, state: TaskState, message: &str) -> TaskRecord {
    let mut next = record.clone();
    next.state = state;
    next.last_updated_at = rmcp::task_manager::current_timestamp();
    next.status_message = (!message.is_empty()).then(|| message.to_owned());
    next
}

fn caller_digest(caller: &str) -> String {
    hex::encode(Sha256::digest(caller.as_bytes()))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn object<T: serde::Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

fn store_error(e: TaskStoreError) -> ErrorData {
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        toolhost_core::error::report(&e),
        None,
    )
}

fn to_task(record: &TaskRecord) -> Task {
    let status = match &record.state {
        TaskState::Working => TaskStatus::Working,
        TaskState::InputRequired { .. } => TaskStatus::InputRequired,
        TaskState::Completed { .. } => TaskStatus::Completed,
        TaskState::Failed { .. } => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    };
    let mut task = Task::new(
        record.id.clone(),
        status,
        record.created_at.clone(),
        record.last_updated_at.clone(),
    )
    .with_ttl_ms(record.ttl_ms)
    .with_poll_interval_ms(record.poll_interval_ms);
    task.status_message = record.status_message.clone();
    task
}

fn to_detailed(record: &TaskRecord) -> DetailedTask {
    let payload = match &record.state {
        TaskState::Working => TaskPayload::Working,
        TaskState::InputRequired { requests } => TaskPayload::InputRequired {
            input_requests: requests
                .iter()
                .filter_map(|(k, v)| {
                    serde_json::from_value::<InputRequest>(v.clone())
                        .ok()
                        .map(|r| (k.clone(), r))
                })
                .collect::<InputRequests>(),
        },
        TaskState::Completed { result } => TaskPayload::Completed {
            result: result.clone(),
        },
        TaskState::Failed { error } => TaskPayload::Failed {
            error: error.clone(),
        },
        TaskState::Cancelled => TaskPayload::Cancelled,
    };
    DetailedTask::new(to_task(record), payload)
}

#[cfg(all(test, feature = "client"))]
mod tests;
