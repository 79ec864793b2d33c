use std::fs;
use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::scripted::ScriptedProvider;
use crate::{Agent, Message, ModelResponse, ModelToolCall};
use toolhost_core::ToolHost;
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

const PDF_SKILL: &str = "---\nname: pdf-forms\ndescription: >\n  Fills in PDF forms.\n  Use for any PDF with form fields.\n---\n\n# Filling PDF forms\n\nRun `scripts/fill.py` with the field values.\n";

/// Two roots: `first` with `pdf-forms` (plus files) and a broken skill,
/// `second` with `commit-messages` and another `pdf-forms`.
fn roots() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    let second = tmp.path().join("second");
    write(&first.join("pdf/SKILL.md"), PDF_SKILL);
    write(&first.join("pdf/scripts/fill.py"), "print('fill')\n");
    write(&first.join("pdf/reference.md"), "# Fields\n");
    write(&first.join("pdf/.cache/junk"), "x");
    write(
        &first.join("broken/SKILL.md"),
        "---\nname: broken\ndescription: \"unterminated\n---\nbody\n",
    );
    write(&first.join("not-a-skill/README.md"), "no SKILL.md here");
    write(
        &second.join("commits/SKILL.md"),
        "---\nname: commit-messages\ndescription: Writes commit messages that explain why.\n---\nUse the imperative mood.\n",
    );
    write(
        &second.join("pdf-copy/SKILL.md"),
        "---\nname: pdf-forms\ndescription: A second skill of the same name.\n---\n",
    );
    (tmp, first, second)
}

async fn host_with(skills: &Skills) -> ToolHost {
    let host = ToolHost::new();
    host.register_extension(Arc::new(skills.clone()))
        .await
        .unwrap();
    host
}

async fn load(host: &ToolHost, name: &str) -> Result<ToolOutput, ToolError> {
    host.invoke_tool(
        CallContext::new(),
        LOAD_SKILL_TOOL,
        Arguments::from_value(&json!({ "name": name })).unwrap(),
    )
    .await
}

#[tokio::test]
async fn e3_skills_are_listed_compactly_and_loaded_on_demand() {
    let (_tmp, first, second) = roots();
    let skills = Skills::new(SkillsConfig::new([&first, &second]));
    let host = host_with(&skills).await;
    let names: Vec<String> = skills.skills().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["commit-messages", "pdf-forms"]);

    let prompt = host.system_prompt().await;
    assert!(prompt.contains(
        "- commit-messages: Writes commit messages that explain why.\n- pdf-forms: Fills in PDF forms. Use for any PDF with form fields.\n"
    ), "{prompt}");
    assert!(prompt.contains("`load_skill`"));
    assert!(
        !prompt.contains("Run `scripts/fill.py`"),
        "bodies load on demand"
    );

    let out = load(&host, "pdf-forms").await.unwrap();
    let text = out.llm_text();
    assert!(
        text.contains("# Filling PDF forms\n\nRun `scripts/fill.py`"),
        "{text}"
    );
    assert!(text.contains(&format!("Folder: {}", first.join("pdf").display())));
    assert!(
        text.contains("- reference.md\n- scripts/fill.py\n"),
        "{text}"
    );
    assert!(
        !text.contains(".cache") && !text.contains("- SKILL.md"),
        "{text}"
    );
    assert_eq!(
        out.user_text().unwrap(),
        format!(
            "Loaded skill `pdf-forms` ({} bytes, 2 other files)",
            PDF_SKILL.len()
        )
    );
}

#[tokio::test]
async fn e3_skills_a_model_loads_a_skill_through_the_agent() {
    let (_tmp, first, second) = roots();
    let host = host_with(&Skills::new(SkillsConfig::new([first, second]))).await;
    let provider = Arc::new(ScriptedProvider::new([
        ModelResponse::tool_calls(vec![ModelToolCall {
            id: "c1".into(),
            name: LOAD_SKILL_TOOL.into(),
            arguments: r#"{"name":"commit-messages"}"#.into(),
        }]),
        ModelResponse::text("done"),
    ]));
    Agent::new(host, provider.clone())
        .run("write a commit message", CancellationToken::new())
        .await
        .unwrap();
    let requests = provider.requests();
    assert!(requests[0].system.contains("- commit-messages:"));
    match requests[1].messages.last() {
        Some(Message::ToolResult {
            result: Ok(out), ..
        }) => assert!(out.llm_text().contains("Use the imperative mood.")),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn e3_skills_with_bad_front_matter_are_skipped_and_reported_with_file_and_line() {
    let (_tmp, first, second) = roots();
    let missing = first.join("nope");
    let skills = Skills::new(SkillsConfig::new([
        first.clone(),
        second.clone(),
        missing.clone(),
    ]));
    host_with(&skills).await;
    let problems = skills.problems();
    assert_eq!(problems.len(), 3, "{problems:#?}");
    let broken = &problems[0];
    assert_eq!(broken.path, first.join("broken/SKILL.md"));
    assert!(broken.message.starts_with("invalid YAML"), "{broken}");
    let line = broken.line.unwrap();
    assert_eq!(line, 3, "{broken}");
    assert!(broken.to_string().starts_with(&format!(
        "{}:{line}: invalid YAML",
        first.join("broken/SKILL.md").display()
    )));
    assert_eq!(problems[1].path, second.join("pdf-copy/SKILL.md"));
    assert!(
        problems[1].message.contains("already defined in"),
        "{}",
        problems[1]
    );
    assert_eq!(problems[2].path, missing);
    assert!(problems[2].line.is_none());
    // The first `pdf-forms` is the one kept.
    let pdf = skills
        .skills()
        .into_iter()
        .find(|s| s.name == "pdf-forms")
        .unwrap();
    assert_eq!(pdf.dir, first.join("pdf"));
}

#[tokio::test]
async fn e3_skills_an_unknown_name_is_invalid_arguments_naming_the_skills() {
    let (_tmp, first, second) = roots();
    let host = host_with(&Skills::new(SkillsConfig::new([first, second]))).await;
    match load(&host, "tax-returns").await.unwrap_err() {
        ToolError::InvalidArguments { path, message } => {
            assert_eq!(path, "/name");
            assert_eq!(
                message,
                "no skill is named `tax-returns`; the skills are: commit-messages, pdf-forms"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn e3_skills_refresh_finds_new_skills_and_long_files_are_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = Skills::new(SkillsConfig {
        max_skill_bytes: 80,
        ..SkillsConfig::new([tmp.path()])
    });
    let host = host_with(&skills).await;
    assert_eq!(host.system_prompt().await, "");
    let long = format!(
        "---\nname: long\ndescription: Long.\n---\n{}",
        "word ".repeat(100)
    );
    write(&tmp.path().join("long/SKILL.md"), &long);
    skills.refresh();
    assert!(host.system_prompt().await.contains("- long: Long."));
    let text = load(&host, "long").await.unwrap().llm_text().into_owned();
    let mark = format!(
        "[truncated: SKILL.md is {} bytes; only the first 80 are shown]",
        long.len()
    );
    assert!(text.contains(&mark), "{text}");
}
