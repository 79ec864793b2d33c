//! Search on a large generated tree (100,000 files): `glob` and `grep`
//! through each backend, and plain `rg --sort path` / `fd` on the same tree
//! for reference. The tree is generated once into `target/bench-search-tree`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use toolhost::builtin::Workdir;
use toolhost::builtin::search::{
    FdSearch, FileQuery, GrepQuery, NativeSearch, RipgrepSearch, SearchOps,
};

const TOP: usize = 100;
const MID: usize = 100;
const FILES: usize = 10;

/// 100 × 100 directories of 10 files each (half `.rs`, half `.txt`), one
/// line in 50 containing `needle`, and a `.gitignore` in every top
/// directory that ignores `*.tmp`.
fn tree() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-search-tree");
    let done = root.join(".complete");
    if done.exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    for t in 0..TOP {
        let top = root.join(format!("d{t:03}"));
        std::fs::create_dir_all(&top).unwrap();
        std::fs::write(top.join(".gitignore"), "*.tmp\n").unwrap();
        for m in 0..MID {
            let mid = top.join(format!("m{m:03}"));
            std::fs::create_dir_all(&mid).unwrap();
            for f in 0..FILES {
                let n = (t * MID + m) * FILES + f;
                let ext = if f.is_multiple_of(2) { "rs" } else { "txt" };
                let mut body = String::new();
                for line in 0..20 {
                    if (n * 20 + line).is_multiple_of(50) {
                        body.push_str(&format!("fn needle_{n}_{line}() {{}}\n"));
                    } else {
                        body.push_str(&format!(
                            "let value_{line} = {n} + {line}; // filler text\n"
                        ));
                    }
                }
                std::fs::write(mid.join(format!("f{f}.{ext}")), body).unwrap();
            }
            std::fs::write(mid.join("skip.tmp"), "needle ignored\n").unwrap();
        }
    }
    std::fs::write(&done, "").unwrap();
    root
}

fn run(program: &str, args: &[&str], dir: &Path) -> usize {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (install it with `make setup`)"));
    out.stdout.len()
}

fn search(c: &mut Criterion) {
    let root = tree();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let wd = Arc::new(Workdir::open(&root).unwrap());
    let backends: Vec<(&str, Arc<dyn SearchOps>)> = vec![
        (
            "native",
            Arc::new(NativeSearch::new(wd.clone(), 10_000_000)),
        ),
        (
            "ripgrep",
            Arc::new(RipgrepSearch::new(wd.clone(), 10_000_000).expect("rg (make setup)")),
        ),
        (
            "fd",
            Arc::new(FdSearch::new(wd, 10_000_000).expect("fd (make setup)")),
        ),
    ];
    let glob = FileQuery {
        path: String::new(),
        pattern: Some("*.rs".into()),
        hidden: false,
        limit: 200,
    };
    let grep = GrepQuery {
        path: String::new(),
        pattern: "needle".into(),
        glob: None,
        ignore_case: false,
        literal: false,
        hidden: false,
        limit: 200,
        max_line_chars: 300,
    };
    // Same answers from every backend, and the sizes the bench works on.
    let expected = rt.block_on(backends[0].1.grep(&grep)).unwrap();
    let files = rt.block_on(backends[0].1.find_files(&glob)).unwrap();
    assert_eq!(files.total, TOP * MID * FILES / 2);
    for (name, ops) in &backends[1..] {
        assert_eq!(rt.block_on(ops.grep(&grep)).unwrap(), expected, "{name}");
    }

    let mut g = c.benchmark_group("search");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for (name, ops) in &backends {
        g.bench_function(format!("glob/{name}"), |b| {
            b.to_async(&rt).iter(|| ops.find_files(&glob))
        });
        g.bench_function(format!("grep/{name}"), |b| {
            b.to_async(&rt).iter(|| ops.grep(&grep))
        });
    }
    let fd = if Command::new("fd").arg("--version").output().is_ok() {
        "fd"
    } else {
        "fdfind"
    };
    g.bench_function("reference/rg --files --sort path -g *.rs", |b| {
        b.iter(|| run("rg", &["--files", "--sort", "path", "-g", "*.rs"], &root))
    });
    g.bench_function("reference/rg --sort path needle", |b| {
        b.iter(|| run("rg", &["--sort", "path", "needle"], &root))
    });
    g.bench_function("reference/rg needle (unsorted)", |b| {
        b.iter(|| run("rg", &["needle"], &root))
    });
    g.bench_function("reference/fd --type f -e rs (unsorted)", |b| {
        b.iter(|| run(fd, &["--type", "f", "-e", "rs"], &root))
    });
    g.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
