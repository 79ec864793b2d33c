//! Every backend against one fixture tree: nested .gitignore files, hidden
//! files, binary files, non-ASCII names, symlinks and many matches.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use super::*;

fn write(root: &Path, rel: &str, contents: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, contents).unwrap();
}

/// The fixture tree, and a directory outside it that a symlink points to.
pub(crate) fn fixture() -> (tempfile::TempDir, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "outside.txt", b"needle outside\n");
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, ".gitignore", b"*.log\nbuild/\n/top-only.txt\n");
    write(r, "top-only.txt", b"needle ignored at the top\n");
    write(r, "a/top-only.txt", b"needle not ignored below\n");
    write(r, "app.log", b"needle in a log\n");
    write(r, "build/out.txt", b"needle in build\n");
    write(r, "sub/.gitignore", b"secret.txt\n!keep.log\n");
    write(r, "sub/secret.txt", b"needle secret\n");
    write(r, "sub/keep.log", b"needle kept log\n");
    write(r, "sub/deeper/.gitignore", b"*.tmp\n");
    write(r, "sub/deeper/x.tmp", b"needle tmp\n");
    write(r, "sub/deeper/y.txt", b"needle y\r\nNEEDLE upper\r\n");
    write(r, "sub/.ignore", b"dot-ignored.txt\n");
    write(r, "sub/dot-ignored.txt", b"needle dot ignored\n");
    write(r, ".hidden.txt", b"needle hidden\n");
    write(r, ".config/settings.txt", b"needle in hidden dir\n");
    write(r, ".git/HEAD", b"needle in .git\n");
    write(r, "bin.dat", b"needle\0binary\n");
    let mut late = b"needle early\n".repeat(20_000);
    late.extend_from_slice(b"\0late binary\n");
    write(r, "late-binary.txt", &late);
    write(r, "ünïcödé/файл.txt", "needle ünïcödé\n".as_bytes());
    write(r, "日本.txt", "needle 日本語\n".as_bytes());
    write(r, "a.txt", b"needle a\n");
    write(r, "a-b.txt", b"needle a-b\n");
    write(r, "a/b.txt", b"x\nneedle a/b\n");
    write(r, "a.b/c.txt", b"needle a.b/c\n");
    write(r, "B.txt", b"needle B\n");
    write(r, "regex.txt", b"a+b (literal)\naab\n");
    let many: String = (1..=500).map(|i| format!("needle {i}\n")).collect();
    write(r, "many.txt", many.as_bytes());
    let long = format!("needle {}\n", "x".repeat(1000));
    write(r, "long.txt", long.as_bytes());
    // A name that is not UTF-8.
    std::fs::write(
        r.join(OsStr::from_bytes(b"bad\xffname.txt")),
        b"needle bad name\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("out-link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("outside.txt"), r.join("file-link.txt"))
        .unwrap();
    std::os::unix::fs::symlink("a.txt", r.join("in-link.txt")).unwrap();
    (dir, outside)
}

fn backends(root: &Path) -> Vec<(&'static str, Arc<dyn SearchOps>)> {
    let wd = Arc::new(Workdir::open(root).unwrap());
    let rg = RipgrepSearch::new(wd.clone(), 1_000_000)
        .unwrap_or_else(|e| panic!("{e}: install it with `make setup`"));
    let fd = FdSearch::new(wd.clone(), 1_000_000)
        .unwrap_or_else(|e| panic!("{e}: install it with `make setup`"));
    vec![
        ("native", Arc::new(NativeSearch::new(wd, 1_000_000))),
        ("ripgrep", Arc::new(rg)),
        ("fd", Arc::new(fd)),
    ]
}

fn files(pattern: Option<&str>, path: &str, hidden: bool, limit: usize) -> FileQuery {
    FileQuery {
        path: path.into(),
        pattern: pattern.map(Into::into),
        hidden,
        limit,
    }
}

fn grep(pattern: &str, limit: usize) -> GrepQuery {
    GrepQuery {
        path: String::new(),
        pattern: pattern.into(),
        glob: None,
        ignore_case: false,
        literal: false,
        hidden: false,
        limit,
        max_line_chars: 40,
    }
}

fn file_queries() -> Vec<FileQuery> {
    vec![
        files(None, "", false, 1000),
        files(None, "", true, 1000),
        files(Some("*.txt"), "", false, 1000),
        files(Some("*.txt"), "", false, 3),
        files(Some("sub/**"), "", false, 1000),
        files(Some("*.txt"), "sub", false, 1000),
        files(Some("**/*.log"), "", true, 1000),
        files(Some("*.txt"), "./a", false, 1000),
    ]
}

fn grep_queries() -> Vec<GrepQuery> {
    let mut qs = vec![
        grep("needle", 10_000),
        grep("needle", 7),
        grep("needle 4[0-9]{2}$", 10_000),
        grep("ünïcödé|日本", 10_000),
        grep("^x", 10_000),
        GrepQuery {
            ignore_case: true,
            ..grep("needle (y|upper)", 100)
        },
        GrepQuery {
            literal: true,
            ..grep("a+b (", 100)
        },
        GrepQuery {
            glob: Some("*.txt".into()),
            ..grep("needle", 10_000)
        },
        GrepQuery {
            hidden: true,
            ..grep("needle", 10_000)
        },
        GrepQuery {
            path: "sub".into(),
            ..grep("needle", 10_000)
        },
    ];
    qs.push(GrepQuery {
        glob: Some("sub/**/*.txt".into()),
        ..grep("needle", 10_000)
    });
    qs
}

#[tokio::test]
async fn b4_backends_give_identical_answers() {
    let (dir, _outside) = fixture();
    let backends = backends(dir.path());
    for q in file_queries() {
        let reference = backends[0].1.find_files(&q).await.unwrap();
        for (name, ops) in &backends[1..] {
            let answer = ops.find_files(&q).await.unwrap();
            assert_eq!(answer, reference, "{name} differs on {q:?}");
            assert_eq!(answer.render(), reference.render());
        }
    }
    for q in grep_queries() {
        let reference = backends[0].1.grep(&q).await.unwrap();
        for (name, ops) in &backends[1..] {
            let answer = ops.grep(&q).await.unwrap();
            assert_eq!(answer, reference, "{name} differs on {q:?}");
        }
    }
}

#[tokio::test]
async fn b4_file_answers_follow_the_documented_rules() {
    let (dir, _outside) = fixture();
    for (name, ops) in backends(dir.path()) {
        let all = ops.find_files(&files(None, "", false, 1000)).await.unwrap();
        let mut sorted = all.paths.clone();
        sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        assert_eq!(all.paths, sorted, "{name}: paths are in byte order");
        for ignored in [
            "app.log",
            "build/out.txt",
            "top-only.txt",
            "sub/secret.txt",
            "sub/deeper/x.tmp",
            "sub/dot-ignored.txt",
            ".hidden.txt",
            "out-link",
            "file-link.txt",
            "in-link.txt",
        ] {
            assert!(
                !all.paths.iter().any(|p| p == ignored),
                "{name}: {ignored} listed"
            );
        }
        for listed in [
            "a/top-only.txt",
            "sub/keep.log",
            "bin.dat",
            "ünïcödé/файл.txt",
            "日本.txt",
            "bad\u{fffd}name.txt",
        ] {
            assert!(
                all.paths.iter().any(|p| p == listed),
                "{name}: {listed} missing"
            );
        }
        assert_eq!(all.total, all.paths.len());
        let hidden = ops.find_files(&files(None, "", true, 1000)).await.unwrap();
        assert!(hidden.paths.iter().any(|p| p == ".config/settings.txt"));
        assert!(
            !hidden.paths.iter().any(|p| p.starts_with(".git/")),
            "{name}"
        );
        let cut = ops
            .find_files(&files(Some("*.txt"), "", false, 3))
            .await
            .unwrap();
        let full = ops
            .find_files(&files(Some("*.txt"), "", false, 1000))
            .await
            .unwrap();
        assert_eq!(
            cut.paths,
            full.paths[..3],
            "{name}: a truncated answer is a prefix"
        );
        assert_eq!(cut.total, full.total);
        assert!(
            cut.render().ends_with(&format!(
                "[{} more paths not shown; {} in all]",
                full.total - 3,
                full.total
            )),
            "{}",
            cut.render()
        );
        let sub = ops
            .find_files(&files(Some("*.txt"), "./a", false, 100))
            .await
            .unwrap();
        assert_eq!(sub.paths, ["a/b.txt", "a/top-only.txt"], "{name}");
    }
}

#[tokio::test]
async fn b4_grep_orders_by_path_then_line_and_skips_binary_files() {
    let (dir, _outside) = fixture();
    for (name, ops) in backends(dir.path()) {
        let all = ops.grep(&grep("needle", 100_000)).await.unwrap();
        let keys: Vec<_> = all
            .matches
            .iter()
            .map(|m| (m.path.as_bytes(), m.line))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "{name}");
        assert!(!all.matches.iter().any(|m| m.path == "bin.dat"), "{name}");
        assert!(
            !all.matches.iter().any(|m| m.path == "late-binary.txt"),
            "{name}"
        );
        assert!(
            !all.matches.iter().any(|m| m.path.contains("outside")),
            "{name}"
        );
        assert_eq!(
            all.matches.iter().filter(|m| m.path == "many.txt").count(),
            500
        );
        let y = all
            .matches
            .iter()
            .find(|m| m.path == "sub/deeper/y.txt")
            .unwrap();
        assert_eq!(y.text, "needle y", "{name}: CRLF is stripped");
        let long = all.matches.iter().find(|m| m.path == "long.txt").unwrap();
        assert!(
            long.text.ends_with("… [line cut: 1007 chars]"),
            "{}",
            long.text
        );
        let first = ops.grep(&grep("needle", 7)).await.unwrap();
        assert_eq!(first.matches, all.matches[..7], "{name}");
        assert_eq!(first.total, all.total);
        let err = ops.grep(&grep("(", 7)).await.unwrap_err();
        assert_eq!(
            err.kind(),
            toolhost_core::ErrorKind::InvalidArguments,
            "{name}: {err}"
        );
    }
}

#[tokio::test]
async fn b4_search_cannot_start_outside_the_working_directory() {
    let (dir, outside) = fixture();
    for (name, ops) in backends(dir.path()) {
        for path in ["..", "out-link", outside.path().to_str().unwrap()] {
            let err = ops
                .find_files(&files(None, path, false, 10))
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains("is outside the working directory"),
                "{name}: {err}"
            );
            let q = GrepQuery {
                path: path.into(),
                ..grep("needle", 10)
            };
            let err = ops.grep(&q).await.unwrap_err();
            assert_eq!(
                err.kind(),
                toolhost_core::ErrorKind::InvalidArguments,
                "{name}: {err}"
            );
        }
    }
}

#[tokio::test]
async fn b4_too_many_results_fail_instead_of_returning_a_subset() {
    let (dir, _outside) = fixture();
    let wd = Arc::new(Workdir::open(dir.path()).unwrap());
    let native = NativeSearch::new(wd.clone(), 100);
    let rg = RipgrepSearch::new(wd.clone(), 100).unwrap();
    let fd = FdSearch::new(wd, 100).unwrap();
    let ops: [&dyn SearchOps; 3] = [&native, &rg, &fd];
    for ops in ops {
        let err = ops.grep(&grep("needle", 10)).await.unwrap_err();
        assert!(err.to_string().contains("more than 100 lines"), "{err}");
    }
}

#[test]
fn b4_missing_program_falls_back_to_the_native_backend() {
    let dir = tempfile::tempdir().unwrap();
    let wd = Arc::new(Workdir::open(dir.path()).unwrap());
    let nowhere = Some(OsStr::new("/nonexistent"));
    for backend in [SearchBackend::Ripgrep, SearchBackend::Fd] {
        let (_, chosen) = select(backend, wd.clone(), 10, nowhere);
        assert_eq!(chosen, SearchBackend::Native);
    }
    let (_, chosen) = select(SearchBackend::Ripgrep, wd, 10, None);
    assert_eq!(
        chosen,
        SearchBackend::Ripgrep,
        "rg must be installed (`make setup`)"
    );
}
