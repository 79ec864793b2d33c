//! Hooks that decide, in wasm (rules P7, P8, W1): a 0.3 extension rewrites,
//! asks and replaces, 0.2 and 0.1 extensions keep working beside it, the policy
//! key `hooks` limits what an extension may change, and whatever a hostile
//! extension hands back is checked outside the sandbox.

use std::sync::{Arc, Mutex};

use serde_json::json;
use toolhost::middleware::{Audit, AuditRecord, AuditSink, RedactKeys};
use toolhost::output::{
    Annotations, Audience, ContentBlock, EmbeddedResource, ResourceContents, ResourceLink,
};
use toolhost::sandbox::{HookPower, PluginPolicy, PluginWorld, WitVersion};
use toolhost::tool::approval::ApproveAll;
use toolhost::{
    Arguments, CallContext, ChangeKind, ErrorKind, FnTool, HookChange, Progress, ProgressSink,
    SandboxFault, ToolError, ToolHost, ToolOutput, ToolSpec,
};

use crate::common::{call, load};

fn policy(hooks: HookPower) -> PluginPolicy {
    PluginPolicy {
        hooks,
        ..PluginPolicy::default()
    }
}

/// A native tool `echo` taking `{text?, mask?, ask?}` and nothing else,
/// which echoes its arguments; and `fail`, which fails with its `why`.
fn native_tools(host: &ToolHost) {
    host.register_tool(FnTool::arc(
        ToolSpec::new(
            "echo",
            "echoes",
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string"}, "mask": {}, "ask": {}, "not_json": {},
                    "array": {}, "huge": {}, "add_key": {}, "long_reason": {}
                },
                "additionalProperties": false
            }),
        ),
        |_, args| async move { Ok(ToolOutput::text(format!("echo {}", args.as_str()))) },
    ))
    .unwrap();
    host.register_tool(FnTool::arc(
        ToolSpec::new("fail", "fails", json!({"type": "object"})),
        |_, args| async move {
            Err(ToolError::failed(
                args.as_value()["why"]
                    .as_str()
                    .unwrap_or("no reason")
                    .to_owned(),
            ))
        },
    ))
    .unwrap();
}

async fn host_with_decider(hooks: HookPower, builder: toolhost::HostBuilder) -> ToolHost {
    let host = builder.validate_arguments(true).build();
    host.register_extension(
        load("decider", "decider", policy(hooks))
            .await
            .into_extension(),
    )
    .await
    .unwrap();
    native_tools(&host);
    host
}

async fn decider(hooks: HookPower) -> ToolHost {
    host_with_decider(hooks, ToolHost::builder()).await
}

fn rejection(r: Result<ToolOutput, ToolError>) -> (String, String) {
    match r {
        Err(ToolError::Rejected { hook, reason }) => (hook, reason),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test]
async fn p7_a_0_1_and_a_0_3_extension_run_side_by_side_in_one_host() {
    let legacy = load("legacy", "legacy_guard", PluginPolicy::default()).await;
    let decider = load("decider", "decider", policy(HookPower::Rewrite)).await;
    assert_eq!(
        (legacy.version(), legacy.world()),
        ("0.1.0", PluginWorld::ExtensionPlugin)
    );
    assert_eq!(legacy.wit(), WitVersion::V0_1);
    assert_eq!(decider.version(), "0.3.0");
    assert_eq!(decider.wit(), WitVersion::V0_3);
    let host = ToolHost::new();
    host.register_extension(legacy.into_extension())
        .await
        .unwrap();
    host.register_extension(decider.into_extension())
        .await
        .unwrap();
    native_tools(&host);
    assert_eq!(host.system_prompt().await, "A 0.1 extension is here.");
    // The 0.1 plugin's tool runs, and both extensions' hooks see the call:
    // the 0.3 one rewrites, and the 0.1 one sees the rewritten arguments.
    assert_eq!(
        call(&host, "legacy_echo", r#"{"mask": "x"}"#)
            .await
            .unwrap(),
        ToolOutput::text(r#"legacy: {"mask":"***"}"#)
    );
    let (hook, reason) = rejection(call(&host, "echo", r#"{"text": "LEGACY-NO"}"#).await);
    assert_eq!(
        (hook.as_str(), reason.as_str()),
        ("legacy", "the 0.1 extension says no")
    );
    // The 0.3 extension's after hook replaces; the 0.1 one only observes.
    assert_eq!(
        call(&host, "echo", r#"{"text": "a SECRET"}"#)
            .await
            .unwrap(),
        ToolOutput::text(r#"echo {"text": "a [redacted]"}"#)
    );
}

/// Rule W1: a tool call checks the type of its version's `call-tool` on the
/// plugin's first call and takes it as checked after that. In all three
/// versions the first call and the later ones, each in a fresh instance,
/// answer alike: an answer, and a guest's own error.
#[tokio::test]
async fn w1_every_versions_call_tool_answers_alike_on_its_first_call_and_after() {
    // No argument validation: the 0.3 guest sees arguments its schema
    // refuses, and answers with an error of its own.
    let host = ToolHost::new();
    for (name, krate) in [
        ("legacy", "legacy_guard"),
        ("frozen", "frozen_v02"),
        ("template", "template"),
    ] {
        let plugin = load(name, krate, PluginPolicy::default()).await;
        host.register_extension(plugin.into_extension())
            .await
            .unwrap();
    }
    for round in 0..3 {
        assert_eq!(
            call(&host, "legacy_echo", r#"{"n": 1}"#).await.unwrap(),
            ToolOutput::text(r#"legacy: {"n": 1}"#),
            "0.1, call {round}"
        );
        assert_eq!(
            call(&host, "v02_sum", r#"{"a": 2, "b": 3}"#)
                .await
                .unwrap()
                .structured_value(),
            Some(&json!({"sum": 5})),
            "0.2, call {round}"
        );
        assert_eq!(
            call(&host, "echo", r#"{"text": "hi"}"#).await.unwrap(),
            ToolOutput::text("hi"),
            "0.3, call {round}"
        );
        let refused = call(&host, "echo", r#"{"txt": "hi"}"#).await.unwrap_err();
        assert_eq!(
            refused.kind(),
            ErrorKind::InvalidArguments,
            "0.3, call {round}: {refused}"
        );
    }
}

#[tokio::test]
async fn w1_a_0_2_extension_keeps_every_0_2_feature_beside_a_0_3_one() {
    let frozen = load("frozen", "frozen_v02", policy(HookPower::Rewrite)).await;
    assert_eq!(
        (frozen.version(), frozen.world(), frozen.wit()),
        ("0.2.0", PluginWorld::ExtensionPlugin, WitVersion::V0_2)
    );
    let host = ToolHost::builder()
        .validate_arguments(true)
        .approver(Arc::new(ApproveAll))
        .build();
    host.register_extension(frozen.into_extension())
        .await
        .unwrap();
    host.register_extension(
        load("decider", "decider", policy(HookPower::Rewrite))
            .await
            .into_extension(),
    )
    .await
    .unwrap();
    native_tools(&host);
    assert!(
        host.system_prompt()
            .await
            .contains("A 0.2 extension is here."),
    );
    // A 0.2 tool declares no hints.
    let rich = host.tool_specs().into_iter().find(|s| s.name == "v02_rich");
    assert!(rich.expect("v02_rich is listed").hints.is_empty());
    // Its blocks keep their annotations, and its progress reaches the caller.
    let seen = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = {
        let seen = seen.clone();
        ProgressSink::new(move |p| seen.lock().unwrap().push(p))
    };
    let out = host
        .invoke_tool(
            CallContext::new().with_progress(sink),
            "v02_rich",
            Arguments::parse("{}").unwrap(),
        )
        .await
        .unwrap();
    let ToolOutput::Blocks { blocks } = out else {
        panic!("expected blocks, got {out:?}");
    };
    assert_eq!(
        blocks[0],
        ContentBlock::text("v02: {}").with_annotations(Annotations {
            audience: vec![Audience::User],
            priority: Some(0.5),
            last_modified: None,
        })
    );
    assert!(
        matches!(&blocks[1], ContentBlock::ResourceLink { link, .. } if link.uri == "file:///v02.txt")
    );
    assert_eq!(seen.lock().unwrap()[0].message.as_deref(), Some("half way"));
    // Structured output under its output schema.
    assert_eq!(
        call(&host, "v02_sum", r#"{"a": 2, "b": 3}"#).await.unwrap(),
        ToolOutput::structured(json!({"sum": 5}))
    );
    // Its hooks rewrite, ask (approved here) and replace, through the
    // upgrade to 0.3 and back.
    assert_eq!(
        call(&host, "echo", r#"{"text": "V02-MASK"}"#)
            .await
            .unwrap(),
        ToolOutput::text(r####"echo {"text":"###"}"####)
    );
    assert_eq!(
        call(&host, "echo", r#"{"text": "V02-ASK"}"#).await.unwrap(),
        ToolOutput::text(r#"echo {"text": "V02-ASK"}"#)
    );
    assert_eq!(
        call(&host, "echo", r#"{"text": "V02-HIDDEN"}"#)
            .await
            .unwrap(),
        ToolOutput::text(r#"echo {"text": "[v02]"}"#)
    );
}

#[tokio::test]
async fn p7_a_wasm_rewrite_reaches_the_tool_and_the_audit_trail() {
    #[derive(Default)]
    struct Collect(Mutex<Vec<AuditRecord>>);
    impl AuditSink for Collect {
        fn record(&self, record: AuditRecord) {
            self.0.lock().unwrap().push(record);
        }
    }
    let sink = Arc::new(Collect::default());
    let host = host_with_decider(
        HookPower::Rewrite,
        ToolHost::builder().middleware(Audit::new(sink.clone(), Arc::new(RedactKeys::common()))),
    )
    .await;
    assert_eq!(
        call(&host, "echo", r#"{"mask": "hunter2"}"#).await.unwrap(),
        ToolOutput::text(r#"echo {"mask":"***"}"#)
    );
    assert_eq!(
        call(&host, "echo", r#"{"text": "SECRET"}"#).await.unwrap(),
        ToolOutput::text(r#"echo {"text": "[redacted]"}"#)
    );
    let records = sink.0.lock().unwrap();
    assert_eq!(
        records[0].changes,
        [HookChange {
            hook: "decider".into(),
            kind: ChangeKind::RewroteArguments,
            bytes_before: 19,
            bytes_after: 14,
        }]
    );
    assert_eq!(records[1].changes.len(), 1);
    assert_eq!(records[1].changes[0].kind, ChangeKind::ReplacedOutcome);
    // The records hold what the tool saw and what the caller got: never
    // the masked argument nor the redacted result.
    for r in records.iter() {
        let text = format!("{r:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!format!("{:?}", r.outcome).contains("SECRET"), "{text}");
    }
}

#[tokio::test]
async fn p7_a_wasm_rewrite_that_breaks_the_schema_is_refused_naming_the_extension() {
    let host = decider(HookPower::Rewrite).await;
    let (hook, reason) = rejection(call(&host, "echo", r#"{"add_key": 1}"#).await);
    assert_eq!(hook, "decider");
    assert!(
        reason
            .starts_with("its rewritten arguments do not fit the tool's schema: invalid arguments"),
        "{reason}"
    );
}

#[tokio::test]
async fn p7_the_policy_key_limits_an_extension_to_veto() {
    let host = decider(HookPower::Veto).await;
    let (hook, reason) = rejection(call(&host, "echo", r#"{"mask": "x"}"#).await);
    assert_eq!(hook, "decider");
    assert_eq!(
        reason,
        "extension `decider` tried to rewrite the arguments, and its policy lets its hooks only observe, reject and ask (grant `hooks = \"rewrite\"` to allow it)"
    );
    // A replacement fails the call rather than letting the original through.
    let err = call(&host, "echo", r#"{"text": "SECRET"}"#)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "extension `decider` tried to replace the result, and its policy lets its hooks only observe, reject and ask (grant `hooks = \"rewrite\"` to allow it)"
    );
    // Veto and ask stay: asking is no change to the call.
    assert!(call(&host, "echo", r#"{"text": "plain"}"#).await.is_ok());
    let (_, reason) = rejection(call(&host, "echo", r#"{"ask": 1}"#).await);
    assert!(reason.starts_with("approval was denied"), "{reason}");
}

#[tokio::test]
async fn p7_a_wasm_ask_goes_to_the_approver() {
    let host = host_with_decider(
        HookPower::Veto,
        ToolHost::builder().approver(Arc::new(ApproveAll)),
    )
    .await;
    assert_eq!(
        call(&host, "echo", r#"{"ask": 1}"#).await.unwrap(),
        ToolOutput::text(r#"echo {"ask": 1}"#)
    );
    let denied = decider(HookPower::Veto).await;
    let (hook, reason) = rejection(call(&denied, "echo", r#"{"ask": 1}"#).await);
    assert_eq!(hook, "decider");
    assert_eq!(
        reason,
        "approval was denied: no one can be asked to approve calls here"
    );
}

#[tokio::test]
async fn p7_hostile_decisions_are_refused_outside_the_sandbox() {
    let host = decider(HookPower::Rewrite).await;
    let cases = [
        (
            r#"{"not_json": 1}"#,
            "extension `decider` rewrote the arguments into something that is not acceptable: invalid arguments: arguments are not valid JSON",
        ),
        (
            r#"{"array": 1}"#,
            "extension `decider` rewrote the arguments into JSON that is not an object",
        ),
        (
            r#"{"huge": 1}"#,
            "extension `decider` rewrote the arguments into something that is not acceptable: invalid arguments: arguments of 8388619 bytes exceed the limit of 4194304 bytes",
        ),
        (
            r#"{"long_reason": 1}"#,
            "extension `decider` failed, so the call is refused: plugin `decider` exceeded its limit: message limit of 16384 bytes (an approval reason of 1048576 bytes)",
        ),
    ];
    for (args, expected) in cases {
        let (hook, reason) = rejection(call(&host, "echo", args).await);
        assert_eq!(hook, "decider");
        assert!(reason.starts_with(expected), "{args}: {reason}");
    }
}

#[tokio::test]
async fn p8_a_wasm_after_hook_redacts_explains_and_is_bounded() {
    let host = decider(HookPower::Rewrite).await;
    assert_eq!(
        call(&host, "fail", r#"{"why": "explain this"}"#)
            .await
            .unwrap(),
        ToolOutput::text("The call failed (explain this); try another way.")
    );
    let err = call(&host, "echo", r#"{"text": "FAIL"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "the decider failed it");
    // 100 000 empty blocks count for 3.2 MB against a 16 KiB bound here.
    let small = ToolHost::builder().build();
    small
        .register_extension(
            load(
                "decider",
                "decider",
                PluginPolicy {
                    hooks: HookPower::Rewrite,
                    max_output_bytes: 16 << 10,
                    ..PluginPolicy::default()
                },
            )
            .await
            .into_extension(),
        )
        .await
        .unwrap();
    native_tools(&small);
    let err = call(&small, "echo", r#"{"text": "BOMB"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert_eq!(
        err.to_string(),
        "extension `decider` replaced the result with one the host refuses: plugin `decider` returned an invalid result: the result is 3200000 bytes (100000 content blocks); the limit is 16384 bytes"
    );
}

#[tokio::test]
async fn n3_a_plugins_progress_reaches_its_caller_bounded() {
    let host = decider(HookPower::Veto).await;
    let seen = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = {
        let seen = seen.clone();
        ProgressSink::new(move |p| seen.lock().unwrap().push(p))
    };
    let out = host
        .invoke_tool(
            CallContext::new().with_progress(sink.clone()),
            "count_up",
            Arguments::parse(r#"{"n": 3, "nan": true}"#).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(out.llm_text(), "counted to 3");
    {
        let seen = seen.lock().unwrap();
        let progress: Vec<f64> = seen.iter().map(|p| p.progress).collect();
        assert_eq!(
            progress,
            [1.0, 2.0, 3.0],
            "the report that is not a number is dropped"
        );
        assert_eq!(seen[2].total, Some(3.0));
        assert_eq!(seen[2].message.as_deref(), Some("counting"));
    }
    seen.lock().unwrap().clear();
    host.invoke_tool(
        CallContext::new().with_progress(sink),
        "count_up",
        Arguments::parse(r#"{"n": 5000}"#).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1024);
    // Without a sink, reports go nowhere and the call still succeeds.
    assert!(call(&host, "count_up", r#"{"n": 3}"#).await.is_ok());
}

#[tokio::test]
async fn n2_a_plugins_structured_output_is_checked_against_its_schema() {
    let host = decider(HookPower::Veto).await;
    let specs = host.tool_specs();
    let spec = specs.iter().find(|s| s.name == "sum").unwrap();
    let schema = spec
        .output_schema
        .as_ref()
        .expect("sum declares an output schema");
    assert_eq!(schema["required"], json!(["sum", "count"]));
    let out = call(&host, "sum", r#"{"numbers": [1, 2, 3.5]}"#)
        .await
        .unwrap();
    assert_eq!(
        out.structured_value(),
        Some(&json!({"sum": 6.5, "count": 3}))
    );
    assert_eq!(out.llm_text(), r#"{"count":3,"sum":6.5}"#);
    let err = call(&host, "sum", r#"{"numbers": [], "wrong": true}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidOutput);
}

#[tokio::test]
async fn n1_a_plugins_blocks_keep_their_kind_and_annotations() {
    let host = decider(HookPower::Veto).await;
    let out = call(&host, "rich", r#"{"priority": 0.5}"#).await.unwrap();
    let ToolOutput::Blocks { blocks } = out else {
        panic!("expected blocks, got {out:?}");
    };
    assert_eq!(
        blocks,
        [
            ContentBlock::text("for the person").with_annotations(Annotations {
                audience: vec![Audience::User],
                priority: Some(0.5),
                last_modified: Some("2026-01-02T03:04:05Z".into()),
            }),
            ContentBlock::resource_link(ResourceLink {
                uri: "file:///notes/a.md".into(),
                name: "a.md".into(),
                mime_type: Some("text/markdown".into()),
                size: Some(12),
                ..ResourceLink::default()
            }),
            ContentBlock::resource(EmbeddedResource {
                uri: "file:///notes/b.txt".into(),
                mime_type: Some("text/plain".into()),
                contents: ResourceContents::Text("bee".into()),
            })
            .with_annotations(Annotations::for_audience([Audience::Assistant])),
            ContentBlock::resource(EmbeddedResource {
                uri: "file:///notes/c.bin".into(),
                mime_type: None,
                contents: ResourceContents::Blob(vec![0, 1, 2]),
            }),
        ]
    );
    // A priority outside 0 to 1 is refused, naming the plugin.
    match call(&host, "rich", r#"{"priority": 5}"#).await.unwrap_err() {
        ToolError::Sandbox {
            plugin,
            fault: SandboxFault::InvalidOutput(why),
        } => {
            assert_eq!(plugin, "decider");
            assert_eq!(why, "a block's priority is 5; it must be from 0 to 1");
        }
        other => panic!("expected an invalid output, got {other:?}"),
    }
}
