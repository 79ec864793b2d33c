//! `toolhost agent` against a local server that speaks the OpenAI chat
//! completions API, with a wasm plugin as its tool.

mod common;

use std::path::Path;

use common::{toolhost, wasm};
use toolhost_test_support::{HttpServer, Reply};

/// Runs `toolhost agent` in `dir` with `config`, asking for a mean; fails
/// unless it succeeds. Returns its stdout and stderr.
fn ask_for_the_mean(dir: &Path, config: &Path) -> (String, String) {
    let out = toolhost()
        .current_dir(dir)
        .args(["agent", "--config"])
        .arg(config)
        .arg("What is the mean of 2, 4 and 9?")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    (stdout, stderr)
}

// Multi-threaded: the server answers on one worker while the test waits
// for the binary on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2_toolhost_agent_runs_a_model_with_the_configured_tools() {
    let tool_call = r#"{"id":"r1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"stats","arguments":"{\"numbers\":[2,4,9]}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}"#;
    let answer = r#"{"id":"r2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The mean is 5."},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":6,"total_tokens":46}}"#;
    let server =
        HttpServer::script(vec![Reply::raw(200, tool_call), Reply::raw(200, answer)]).await;
    let port = server.port();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(
        dir.path().join("AGENTS.md"),
        "Always answer in one sentence.\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("skills/stats-report")).unwrap();
    std::fs::write(
        dir.path().join("skills/stats-report/SKILL.md"),
        "---\nname: stats-report\ndescription: How to report statistics\n---\nUse the stats tool.\n",
    )
    .unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[host]\ncache_dir = \"cache\"\n\n[plugins.calc]\nwasm = {:?}\n\n[agent]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nstream = false\nproject_rules = true\nskills = [\"skills\"]\n",
            wasm("calc")
        ),
    )
    .unwrap();
    let (stdout, stderr) = ask_for_the_mean(dir.path(), &config);
    assert_eq!(stdout, "The mean is 5.\n");
    assert!(
        stderr.contains("-> stats {\"numbers\":[2,4,9]}"),
        "{stderr}"
    );
    // The user sees the richer for_user text of the dual output.
    assert!(
        stderr.contains("count 3, mean 5, median 4, min 2, max 9"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[2 turn(s); 60 input and 11 output tokens"),
        "{stderr}"
    );
    let requests: Vec<String> = server
        .requests()
        .into_iter()
        .map(|r| String::from_utf8(r.body).unwrap())
        .collect();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0].contains("\"name\":\"stats\""),
        "{}",
        requests[0]
    );
    assert!(
        requests[1].contains("mean 5, median 4"),
        "the model got for_llm: {}",
        requests[1]
    );
}

#[test]
fn e2_toolhost_agent_without_an_agent_table_fails_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[host]\ncache_dir = \"cache\"\n").unwrap();
    let out = toolhost()
        .args(["agent", "--config"])
        .arg(&config)
        .arg("hello")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        format!(
            "error: {}: there is no [agent] table (provider, model, ...) to run an agent with",
            config.display()
        )
    );
}

/// One chat-completions stream chunk whose choice has `delta`.
fn chunk(delta: &str, finish: &str) -> String {
    format!(
        "data: {{\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2_a_streamed_answer_prints_only_the_final_text_on_stdout() {
    // The first turn streams words before its tool call, as models do.
    let first = [
        chunk(r#"{"role":"assistant","content":"Let me compute "}"#, "null"),
        chunk(r#"{"content":"it."}"#, "null"),
        chunk(
            r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"stats","arguments":"{\"numbers\":[2,4,9]}"}}]}"#,
            "null",
        ),
        chunk("{}", r#""tool_calls""#),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let second = [
        chunk(r#"{"role":"assistant","content":"The mean "}"#, "null"),
        chunk(r#"{"content":"is 5."}"#, "null"),
        chunk("{}", r#""stop""#),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = HttpServer::script(vec![
        Reply::ok("text/event-stream", first),
        Reply::ok("text/event-stream", second),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[host]\ncache_dir = \"cache\"\n\n[plugins.calc]\nwasm = {:?}\n\n[agent]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nstream = true\n",
            wasm("calc"),
            server.port()
        ),
    )
    .unwrap();
    let (stdout, stderr) = ask_for_the_mean(dir.path(), &config);
    assert_eq!(stdout, "The mean is 5.\n", "stderr: {stderr}");
    // The text streamed before the tool call is progress, on stderr, and
    // the tool line starts a line of its own.
    assert!(
        stderr.contains("Let me compute it.\n-> stats {\"numbers\":[2,4,9]}"),
        "{stderr}"
    );
}
