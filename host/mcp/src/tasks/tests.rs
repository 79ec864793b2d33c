//! Rule N8, through rmcp's own client (protocol 2026-07-28, tasks
//! extension declared) over an in-memory pipe, and on [`Tasks`] directly.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    ElicitationCapability, FormElicitationCapability, GetTaskParams, Implementation,
    InputResponses, ProtocolVersion, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient};
use serde_json::json;
use tokio::sync::Notify;
use toolhost_core::ToolHost;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::elicitation::{ElicitationAnswer, ElicitationRequest};
use toolhost_core::tool::{CallContext, FnTool, ToolSpec};

use super::*;
use crate::McpServer;
use crate::task_store::MemoryTaskStore;

/// A 2026-07-28 client declaring form elicitation, and the tasks extension
/// if `tasks`.
#[derive(Clone)]
struct Client {
    tasks: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let builder = ClientCapabilities::builder();
        let mut capabilities = if self.tasks {
            builder.enable_tasks().build()
        } else {
            builder.build()
        };
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(capabilities, Implementation::new("task-test", "0"))
    }
}

/// Serves `host` (tasks after `after`) to a new client.
async fn connect(
    host: &ToolHost,
    after: Duration,
    tasks: bool,
) -> RunningService<RoleClient, Client> {
    let (client_end, server_end) = tokio::io::duplex(64 << 10);
    let server = McpServer::new(host.clone()).tasks(
        Arc::new(MemoryTaskStore::new()),
        TaskSettings::new()
            .after(after)
            .poll_interval(Duration::from_millis(50)),
    );
    tokio::spawn(async move {
        use rmcp::ServiceExt as _;
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    Client { tasks }
        .serve_with_lifecycle(
            client_end,
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: None,
            },
        )
        .await
        .unwrap()
}

/// A tool that waits for `release`, then answers "done".
fn held_tool(name: &str, release: Arc<Notify>) -> Arc<dyn toolhost_core::tool::Tool> {
    FnTool::arc(
        ToolSpec::new(name, "waits", json!({"type": "object"})),
        move |_, _| {
            let release = release.clone();
            async move {
                release.notified().await;
                Ok(ToolOutput::text("done"))
            }
        },
    )
}

/// Polls the task until `done` says so (10 s at most: a hang, not a
/// measure).
async fn poll_until(
    client: &RunningService<RoleClient, Client>,
    id: &str,
    done: impl Fn(TaskStatus) -> bool,
) -> rmcp::model::DetailedTask {
    let start = tokio::time::Instant::now();
    loop {
        let task = client.get_task(GetTaskParams::new(id)).await.unwrap().task;
        if done(task.status()) {
            return task;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the task stayed {:?}",
            task.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn start_task(client: &RunningService<RoleClient, Client>, tool: &str) -> String {
    match client
        .call_tool_once(CallToolRequestParams::new(tool.to_owned()))
        .await
        .unwrap()
    {
        CallToolResponse::Task(created) => {
            assert!(
                matches!(
                    created.task.status,
                    TaskStatus::Working | TaskStatus::InputRequired
                ),
                "{created:?}"
            );
            assert!(created.task.ttl_ms.is_some());
            created.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

fn text_of(result: &serde_json::Map<String, serde_json::Value>) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn n8_a_long_call_becomes_a_task_whose_result_is_polled() {
    let host = ToolHost::new();
    let release = Arc::new(Notify::new());
    host.register_tool(held_tool("slow", release.clone()))
        .unwrap();
    let client = connect(&host, Duration::from_millis(50), true).await;
    let info = client.peer_info().unwrap();
    assert!(
        info.capabilities.supports_tasks(),
        "the server declares tasks"
    );

    let id = start_task(&client, "slow").await;
    assert_eq!(id.len(), 32, "128 random bits in hex: {id}");
    let task = client.get_task(GetTaskParams::new(&id)).await.unwrap().task;
    assert_eq!(task.status(), TaskStatus::Working);

    release.notify_one();
    let task = poll_until(&client, &id, |s| s.is_terminal()).await;
    let TaskPayload::Completed { result } = &task.payload else {
        panic!("{task:?}")
    };
    assert_eq!(text_of(result), "done");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn n8_a_quick_call_is_answered_at_once_even_when_tasks_are_declared() {
    let host = ToolHost::new();
    host.register_tool(FnTool::arc(
        ToolSpec::new("quick", "answers", json!({"type": "object"})),
        |_, _| async { Ok(ToolOutput::text("at once")) },
    ))
    .unwrap();
    let client = connect(&host, Duration::from_secs(600), true).await;
    match client
        .call_tool_once(CallToolRequestParams::new("quick"))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(result) => {
            let wire = serde_json::to_value(&result).unwrap();
            assert_eq!(wire["content"][0]["text"], "at once");
            assert!(
                wire["_meta"]["io.modelcontextprotocol/serverInfo"].is_object(),
                "{wire}"
            );
        }
        other => panic!("expected the result, got {other:?}"),
    }
    // An unknown tool stays a protocol error, task or not.
    let err = client
        .call_tool_once(CallToolRequestParams::new("nope"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn n8_a_client_that_did_not_declare_tasks_never_gets_one() {
    let host = ToolHost::new();
    let release = Arc::new(Notify::new());
    host.register_tool(held_tool("slow", release.clone()))
        .unwrap();
    let client = connect(&host, Duration::ZERO, false).await;
    {
        let call = client.call_tool_once(CallToolRequestParams::new("slow"));
        tokio::pin!(call);
        // Not answered while the tool runs, although `after` is zero.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), &mut call)
                .await
                .is_err()
        );
        release.notify_one();
        assert!(matches!(call.await.unwrap(), CallToolResponse::Complete(_)));
    }
    // And tasks/* are refused with the missing capability.
    let err = client
        .get_task(GetTaskParams::new("0123"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("-32021") || err.to_string().contains("capabilit"),
        "{err}"
    );
    client.cancel().await.unwrap();
}

/// Notifies when dropped.
struct Ended(Arc<Notify>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

#[tokio::test]
async fn n8_cancelling_a_task_ends_its_call() {
    let host = ToolHost::new();
    let saw_cancel = Arc::new(Notify::new());
    let seen = saw_cancel.clone();
    host.register_tool(FnTool::arc(
        ToolSpec::new("forever", "runs until cancelled", json!({"type": "object"})),
        move |_, _| {
            let seen = seen.clone();
            async move {
                // Told when the call ends, however it ends (the pipeline
                // drops a cancelled call).
                let _ended = Ended(seen);
                std::future::pending::<()>().await;
                Ok(ToolOutput::text("never"))
            }
        },
    ))
    .unwrap();
    let client = connect(&host, Duration::ZERO, true).await;
    let id = start_task(&client, "forever").await;
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), saw_cancel.notified())
        .await
        .expect("the call ended");
    let task = poll_until(&client, &id, |s| s.is_terminal()).await;
    assert_eq!(task.status(), TaskStatus::Cancelled, "{task:?}");
    // Cancelling a finished task changes nothing.
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn n8_a_question_in_a_task_is_answered_by_tasks_update() {
    let host = ToolHost::new();
    host.register_tool(FnTool::arc(
        ToolSpec::new("ask", "asks its caller", json!({"type": "object"})),
        |ctx: CallContext, _| async move {
            let elicitor = ctx.elicitor().expect("a task's call can ask").clone();
            let question = ElicitationRequest::new(
                "remote",
                "Which colour?",
                json!({"type": "object", "properties": {"colour": {"type": "string"}}}),
            );
            match elicitor.elicit(&question).await {
                Ok(ElicitationAnswer::Accept(v)) => Ok(ToolOutput::text(v["colour"].to_string())),
                other => Ok(ToolOutput::text(format!("{other:?}"))),
            }
        },
    ))
    .unwrap();
    // A question makes the call a task at once, however long `after` is.
    let client = connect(&host, Duration::from_secs(600), true).await;
    let id = start_task(&client, "ask").await;
    let task = poll_until(&client, &id, |s| s == TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = &task.payload else {
        panic!("{task:?}")
    };
    let (key, request) = input_requests.iter().next().unwrap();
    let wire = serde_json::to_value(request).unwrap();
    assert_eq!(wire["method"], "elicitation/create", "{wire}");
    assert_eq!(wire["params"]["message"], "Which colour?");

    // An answer to a key never asked is ignored.
    let mut stray = InputResponses::new();
    stray.insert(
        "not-asked".into(),
        json!({"action": "accept", "content": {"colour": "red"}}),
    );
    client
        .update_task(UpdateTaskParams::new(&id, stray))
        .await
        .unwrap();
    let mut answers = InputResponses::new();
    answers.insert(
        key.clone(),
        json!({"action": "accept", "content": {"colour": "green"}}),
    );
    client
        .update_task(UpdateTaskParams::new(&id, answers))
        .await
        .unwrap();
    let task = poll_until(&client, &id, |s| s.is_terminal()).await;
    let TaskPayload::Completed { result } = &task.payload else {
        panic!("{task:?}")
    };
    assert_eq!(text_of(result), "\"green\"");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn n8_an_unknown_task_is_invalid_params() {
    let host = ToolHost::new();
    let client = connect(&host, Duration::ZERO, true).await;
    for id in ["", "0123456789abcdef0123456789abcdef", "../../etc"] {
        let err = client.get_task(GetTaskParams::new(id)).await.unwrap_err();
        assert!(err.to_string().contains("no task"), "{err}");
    }
    client.cancel().await.unwrap();
}

/// The caller `who` of tenant `tenant`, named as the server names callers
/// with OAuth.
fn caller(tenant: &str, who: &str) -> Caller {
    Caller {
        identity: format!("tenant:{}:{tenant}:oauth:{who}", tenant.len()),
        tenant: tenant.into(),
        subject: Some(who.to_owned()),
    }
}

/// A record for `caller`, working, in `store`, with a `lease`.
async fn stored(store: &Arc<MemoryTaskStore>, caller: &Caller, lease: Duration) -> TaskRecord {
    let questions = TaskQuestions::new();
    let record = new_record(caller, &TaskSettings::default(), &questions);
    store
        .create(&record, Duration::from_secs(60), lease)
        .await
        .unwrap();
    record
}

#[tokio::test]
async fn n8_a2_a_task_is_nobody_elses_in_its_tenant_or_another() {
    let store = Arc::new(MemoryTaskStore::new());
    let tasks = Tasks::new(store.clone(), TaskSettings::default());
    let alice = caller("acme", "alice");
    let record = stored(&store, &alice, TASK_LEASE).await;
    assert_eq!(record.tenant, "acme");
    assert_eq!(record.subject.as_deref(), Some("alice"));
    assert!(tasks.get(&alice, &record.id).await.is_ok());
    // The same subject in another tenant (say a client another tenant
    // lists, or after a reload moved it) is another caller.
    let mut moved = alice.clone();
    moved.tenant = "beta".into();
    let mut forged = alice.clone();
    forged.identity = caller("beta", "alice").identity;
    for other in [
        caller("acme", "mallory"),
        caller("beta", "alice"),
        caller("beta", "mallory"),
        moved,
        forged,
    ] {
        let unknown = tasks.get(&other, "0123456789abcdef0123456789abcdef").await;
        let err = tasks.get(&other, &record.id).await.unwrap_err();
        // Exactly what an id that never existed gets, but for the id.
        assert_eq!(
            err.message.replace(&record.id, "ID"),
            unknown
                .unwrap_err()
                .message
                .replace("0123456789abcdef0123456789abcdef", "ID"),
        );
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(tasks.cancel(&other, &record.id).await.is_err());
        let mut answers = InputResponses::new();
        answers.insert("approval-1".into(), json!({"action": "accept"}));
        assert!(tasks.update(&other, &record.id, answers).await.is_err());
    }
    assert!(!store.cancel_requested(&record.id).await.unwrap());
    assert!(store.take_answers(&record.id).await.unwrap().is_empty());
    // A record without a tenant (an older version's) is nobody's.
    let mut old = record.clone();
    old.id = "old".into();
    old.tenant = String::new();
    store
        .create(&old, Duration::from_secs(60), TASK_LEASE)
        .await
        .unwrap();
    assert!(tasks.get(&alice, "old").await.is_err());
}

#[tokio::test]
async fn n8_a_task_whose_server_stopped_is_reported_failed() {
    let store = Arc::new(MemoryTaskStore::new());
    let tasks = Tasks::new(store.clone(), TaskSettings::default());
    let local = caller(toolhost_core::tenant::DEFAULT_TENANT, "local");
    let record = stored(&store, &local, Duration::from_millis(1)).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let task = tasks.get(&local, &record.id).await.unwrap();
    assert_eq!(task.status(), TaskStatus::Failed);
    let TaskPayload::Failed { error } = &task.payload else {
        panic!("{task:?}")
    };
    assert!(
        error["message"].as_str().unwrap().contains("stopped"),
        "{error:?}"
    );
    // Settled once: the owner's late end does not overwrite it.
    let late = settled(&record, TaskState::Cancelled, "late");
    assert!(!store.update(&late).await.unwrap());
}

/// A host whose one tool, `guarded`, a hook wants a person to approve.
fn guarded_host() -> ToolHost {
    use toolhost_core::{Decision, FnBeforeHook, HookScope};
    let host = ToolHost::builder()
        .before_hook(
            HookScope::Global,
            FnBeforeHook::deciding("gate", |_| Decision::Ask {
                reason: "a person decides".into(),
            }),
        )
        .build();
    host.register_tool(FnTool::arc(
        ToolSpec::new("guarded", "needs approval", json!({"type": "object"})),
        |_, _| async { Ok(ToolOutput::text("ran")) },
    ))
    .unwrap();
    host
}

/// Starts `guarded` as a task and answers its approval with `answer`:
/// the finished task.
async fn approve_in_task(answer: serde_json::Value) -> rmcp::model::DetailedTask {
    let client = connect(&guarded_host(), Duration::from_secs(600), true).await;
    let id = start_task(&client, "guarded").await;
    let task = poll_until(&client, &id, |s| s == TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = &task.payload else {
        panic!("{task:?}")
    };
    let key = input_requests.keys().next().unwrap().clone();
    assert!(key.starts_with("approval-"), "{key}");
    let wire = serde_json::to_value(&input_requests[&key]).unwrap();
    assert!(
        wire["params"]["message"]
            .as_str()
            .unwrap()
            .contains("guarded"),
        "{wire}"
    );
    let mut answers = InputResponses::new();
    answers.insert(key, answer);
    client
        .update_task(UpdateTaskParams::new(&id, answers))
        .await
        .unwrap();
    let task = poll_until(&client, &id, |s| s.is_terminal()).await;
    client.cancel().await.unwrap();
    task
}

#[tokio::test]
async fn n8_p7_an_approval_in_a_task_is_asked_and_answered_through_the_task() {
    let approved = approve_in_task(json!({"action": "accept", "content": {"approve": true}})).await;
    let TaskPayload::Completed { result } = &approved.payload else {
        panic!("{approved:?}")
    };
    assert_eq!(text_of(result), "ran");
    assert_ne!(result.get("isError"), Some(&json!(true)));

    for refusal in [
        json!({"action": "accept", "content": {"approve": false}}),
        json!({"action": "decline"}),
        json!({"hostile": "not an elicitation result"}),
    ] {
        let denied = approve_in_task(refusal.clone()).await;
        let TaskPayload::Completed { result } = &denied.payload else {
            panic!("{denied:?}")
        };
        assert_eq!(result["isError"], json!(true), "{refusal}: {result:?}");
        assert_ne!(text_of(result), "ran", "{refusal}");
    }
}
