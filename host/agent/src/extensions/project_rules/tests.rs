use std::fs;
use std::sync::Arc;

use super::*;
use toolhost_core::ToolHost;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// `outer/AGENTS.md` (outside the repository), `outer/repo/.git/`,
/// `repo/AGENTS.md`, `repo/a/CLAUDE.md`, `repo/a/b/AGENTS.md` and
/// `repo/a/b/.cursorrules`.
fn project() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let outer = tmp.path().canonicalize().unwrap();
    let repo = outer.join("repo");
    write(&outer.join("AGENTS.md"), "outside the repository");
    fs::create_dir_all(repo.join(".git")).unwrap();
    write(&repo.join("AGENTS.md"), "root rules");
    write(&repo.join("a/CLAUDE.md"), "middle rules");
    write(&repo.join("a/b/AGENTS.md"), "closest rules");
    write(&repo.join("a/b/.cursorrules"), "closest cursor rules");
    (tmp, repo)
}

fn names() -> ProjectRulesConfig {
    ProjectRulesConfig::new("unused").with_names(["CLAUDE.md", ".cursorrules"])
}

#[test]
fn e3_rules_files_are_found_root_first_up_to_the_repository_root() {
    let (_tmp, repo) = project();
    let config = ProjectRulesConfig {
        working_dir: repo.join("a/b"),
        ..names()
    };
    let found = RulesFound::discover(&config);
    assert_eq!(found.root, repo);
    let paths: Vec<PathBuf> = found.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(
        paths,
        [
            repo.join("AGENTS.md"),
            repo.join("a/CLAUDE.md"),
            repo.join("a/b/AGENTS.md"),
            repo.join("a/b/.cursorrules"),
        ]
    );
    assert!(found.files.iter().all(|f| !f.truncated));
    assert!(found.problems.is_empty() && found.omitted.is_empty());

    let prompt = found.prompt().unwrap();
    let at = |needle: &str| prompt.find(needle).unwrap_or_else(|| panic!("{needle}"));
    assert!(at("root rules") < at("middle rules"));
    assert!(at("middle rules") < at("closest rules"));
    assert!(at("closest rules") < at("closest cursor rules"));
    assert!(prompt.contains(&format!("## {}", repo.join("a/CLAUDE.md").display())));
    assert!(!prompt.contains("outside the repository"));
}

#[test]
fn e3_rules_a_git_file_marks_the_root_and_names_not_configured_are_ignored() {
    let (_tmp, repo) = project();
    fs::remove_dir(repo.join(".git")).unwrap();
    fs::write(repo.join(".git"), "gitdir: /elsewhere").unwrap(); // a worktree
    let found = RulesFound::discover(&ProjectRulesConfig::new(repo.join("a/b")));
    let paths: Vec<PathBuf> = found.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(paths, [repo.join("AGENTS.md"), repo.join("a/b/AGENTS.md")]);
}

#[test]
fn e3_rules_without_git_stop_at_the_stop_dir() {
    let (tmp, repo) = project();
    fs::remove_dir(repo.join(".git")).unwrap();
    let outer = tmp.path().canonicalize().unwrap();
    let with_stop = ProjectRulesConfig {
        working_dir: repo.join("a"),
        stop_dir: Some(repo.join("a")),
        ..names()
    };
    let found = RulesFound::discover(&with_stop);
    assert_eq!(found.root, repo.join("a"));
    assert_eq!(found.files.len(), 1);
    assert_eq!(found.files[0].text, "middle rules");
    // With the stop directory higher up, the walk goes on above the former
    // repository.
    let higher_stop = ProjectRulesConfig {
        working_dir: repo.join("a"),
        stop_dir: Some(outer.clone()),
        ..names()
    };
    let texts: Vec<String> = RulesFound::discover(&higher_stop)
        .files
        .into_iter()
        .map(|f| f.text)
        .collect();
    assert_eq!(
        texts,
        ["outside the repository", "root rules", "middle rules"]
    );
}

#[test]
fn e3_rules_are_capped_per_file_and_in_total_closest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().canonicalize().unwrap();
    fs::create_dir_all(repo.join(".git")).unwrap();
    write(&repo.join("AGENTS.md"), &"r".repeat(100));
    write(&repo.join("x/AGENTS.md"), &"m".repeat(100));
    // 'é' is two bytes: a cut at 41 bytes falls inside one.
    write(&repo.join("x/y/AGENTS.md"), &"é".repeat(50));
    let config = ProjectRulesConfig {
        working_dir: repo.join("x/y"),
        max_file_bytes: 41,
        max_total_bytes: 60,
        ..ProjectRulesConfig::new("unused")
    };
    let found = RulesFound::discover(&config);
    let summary: Vec<(String, usize, bool)> = found
        .files
        .iter()
        .map(|f| {
            (
                f.path.strip_prefix(&repo).unwrap().display().to_string(),
                f.text.len(),
                f.truncated,
            )
        })
        .collect();
    // The closest file gets 40 bytes (41 would split a character), the
    // next the 20 left, the root none.
    assert_eq!(
        summary,
        [
            ("x/AGENTS.md".to_owned(), 20, true),
            ("x/y/AGENTS.md".to_owned(), 40, true),
        ]
    );
    assert_eq!(found.omitted, [repo.join("AGENTS.md")]);
    let prompt = found.prompt().unwrap();
    assert!(prompt.contains("[truncated: the file is 100 bytes; only the first 20 are shown]"));
    assert!(prompt.contains("[truncated: the file is 100 bytes; only the first 40 are shown]"));
    assert!(prompt.contains(&format!(
        "[left out, over the total size limit: {}]",
        repo.join("AGENTS.md").display()
    )));
}

#[test]
fn e3_rules_a_linked_duplicate_is_included_once() {
    let (_tmp, repo) = project();
    std::os::unix::fs::symlink(repo.join("AGENTS.md"), repo.join("CLAUDE.md")).unwrap();
    let config = ProjectRulesConfig {
        working_dir: repo.clone(),
        ..names()
    };
    let found = RulesFound::discover(&config);
    assert_eq!(found.files.len(), 1);
    assert_eq!(found.files[0].path, repo.join("AGENTS.md"));
}

#[test]
fn e3_rules_a_missing_working_dir_is_a_problem_not_a_crash() {
    let found = RulesFound::discover(&ProjectRulesConfig::new("/definitely/not/here"));
    assert!(found.files.is_empty());
    assert_eq!(found.problems.len(), 1);
    assert_eq!(found.prompt(), None);
}

#[tokio::test]
async fn e3_rules_go_into_the_system_prompt_with_their_paths() {
    let (_tmp, repo) = project();
    let host = ToolHost::new();
    host.register_extension(Arc::new(ProjectRules::new(ProjectRulesConfig::new(
        repo.join("a/b"),
    ))))
    .await
    .unwrap();
    let prompt = host.system_prompt().await;
    assert!(prompt.starts_with("# Project rules"), "{prompt}");
    assert!(prompt.contains(&format!(
        "## {}\n\nroot rules",
        repo.join("AGENTS.md").display()
    )));
    assert!(prompt.contains("closest rules"));
    assert!(
        !prompt.contains("middle rules"),
        "CLAUDE.md is not configured"
    );
    // Edits show up on the next run.
    fs::write(repo.join("AGENTS.md"), "new root rules").unwrap();
    assert!(host.system_prompt().await.contains("new root rules"));
}
