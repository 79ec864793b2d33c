//! Plugins in Python and JavaScript (plugins/py-text, plugins/js-slug),
//! built with componentize-py and ComponentizeJS against
//! `toolhost:plugin@0.3.0`: their tools run like any plugin's, their
//! expected failures reach the model as the tool's error, and an uncaught
//! error reaches the user with its message (and, in Python, its traceback).

use serde_json::json;
use toolhost::sandbox::PluginPolicy;
use toolhost::{SandboxFault, ToolError, ToolOutput};

use crate::common::{call, host_with, load};

/// Interpreters need more than the default 64 MiB.
fn roomy() -> PluginPolicy {
    PluginPolicy {
        memory_bytes: 256 << 20,
        ..PluginPolicy::default()
    }
}

#[tokio::test]
async fn w5_a_python_plugin_answers_fails_and_reports_its_traceback() {
    let host = host_with(vec![load("text", "py_text", roomy()).await]).await;
    let out = call(
        &host,
        "word_count",
        r#"{"text": "the cat and the hat", "top": 1}"#,
    )
    .await
    .unwrap();
    assert_eq!(
        out.structured_value(),
        Some(&json!({"words": 5, "lines": 1, "top": [["the", 2]]}))
    );
    assert_eq!(
        out.llm_text(),
        "5 words on 1 line(s); most frequent: the (2)"
    );
    assert_eq!(
        call(&host, "word_count", r#"{"text": "  "}"#)
            .await
            .unwrap_err(),
        ToolError::failed("the text has no words")
    );
    match call(&host, "ratio", r#"{"part": 1, "whole": 0}"#)
        .await
        .unwrap_err()
    {
        ToolError::Sandbox {
            plugin,
            fault: SandboxFault::Panic(traceback),
        } => {
            assert_eq!(plugin, "text");
            assert!(
                traceback.starts_with("Traceback (most recent call last):"),
                "{traceback}"
            );
            assert!(traceback.contains("in ratio"), "{traceback}");
            assert!(
                traceback.ends_with("ZeroDivisionError: division by zero"),
                "{traceback}"
            );
        }
        other => panic!("expected the traceback, got {other:?}"),
    }
    // The instance that trapped is gone; the next call runs in a fresh one.
    assert_eq!(
        call(&host, "ratio", r#"{"part": 1, "whole": 4}"#)
            .await
            .unwrap(),
        ToolOutput::text("0.25")
    );
}

#[tokio::test]
async fn w5_a_javascript_plugin_answers_fails_and_reports_its_error() {
    let host = host_with(vec![load("slug", "js_slug", roomy()).await]).await;
    assert_eq!(
        call(&host, "slugify", r#"{"text": "Héllo, World! Ça va?"}"#)
            .await
            .unwrap(),
        ToolOutput::text("hello-world-ca-va")
    );
    assert_eq!(
        call(&host, "slugify", r#"{"text": "a b c d", "max": 3}"#)
            .await
            .unwrap(),
        ToolOutput::text("a-b")
    );
    assert_eq!(
        call(&host, "slugify", r#"{"text": "!!!"}"#)
            .await
            .unwrap_err(),
        ToolError::failed("the text has no letters or digits to make a slug from")
    );
    let err = call(&host, "shout", r#"{"text": "hi"}"#).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ToolError::Sandbox { .. }), "{err:?}");
    assert!(
        text.contains("TypeError: can't access property \"toUpperCase\", args.txt is undefined"),
        "{text}"
    );
}
