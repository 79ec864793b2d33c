//! Replays every input kept for each fuzz target: the seed corpus in
//! `fuzz/corpus/<target>/` and the inputs that once broke a rule in
//! `fuzz/regressions/<target>/`. A crash seen once fails `make test` from
//! then on.

use std::path::{Path, PathBuf};

use toolhost_fuzz::TARGETS;

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn every_target_replays_its_corpus_and_regressions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut replayed = 0;
    for target in TARGETS {
        let seeds = inputs(&root.join("corpus").join(target.name));
        assert!(
            !seeds.is_empty(),
            "fuzz/corpus/{} holds no seed inputs",
            target.name
        );
        let regressions = inputs(&root.join("regressions").join(target.name));
        for input in seeds.iter().chain(&regressions) {
            let data = std::fs::read(input).unwrap();
            let outcome = std::panic::catch_unwind(|| (target.run)(&data));
            assert!(
                outcome.is_ok(),
                "{} broke a rule on {}",
                target.name,
                input.display()
            );
            replayed += 1;
        }
    }
    assert!(replayed >= TARGETS.len());
}

#[test]
fn every_target_has_a_libfuzzer_entry_point() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for target in TARGETS {
        let entry = root
            .join("targets/fuzz_targets")
            .join(format!("{}.rs", target.name));
        let text =
            std::fs::read_to_string(&entry).unwrap_or_else(|e| panic!("{}: {e}", entry.display()));
        assert!(
            text.contains(&format!("toolhost_fuzz::target(\"{}\")", target.name)),
            "{} does not run its target",
            entry.display()
        );
    }
    let manifest = std::fs::read_to_string(root.join("targets/Cargo.toml")).unwrap();
    for target in TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{}\"", target.name)),
            "targets/Cargo.toml has no [[bin]] for {}",
            target.name
        );
    }
}
