//! Every rule a test name or a comment cites is defined in RULES.md.
//!
//! Tests are named after the rule they pin (`c6_…`) and comments cite rules
//! (`rule C3`, `rules P1–P3`, `(W2, B6)`); what exactly counts is in
//! `citations.rs`. A citation of an ID that RULES.md does not define fails
//! `rules_md_defines_every_cited_rule`, listing each file and line.

mod citations;
mod index;
mod source;
mod walk;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use citations::Id;
use source::Language;

/// A citation of a rule that RULES.md does not define.
#[derive(Debug, PartialEq, Eq)]
struct Undefined {
    file: PathBuf,
    line: usize,
    id: Id,
}

impl fmt::Display for Undefined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.id)
    }
}

/// Every rule cited in `text` (file `file`, in `language`): the line and ID.
fn cited(text: &str, language: Language, sections: &BTreeSet<char>) -> Vec<(usize, Id)> {
    let scanned = source::scan(text, language);
    let python = language == Language::Python;
    let in_names = scanned
        .tests
        .iter()
        .filter_map(|t| citations::in_test_name(&t.name, python, sections).map(|id| (t.line, id)));
    let in_comments = scanned.comments.iter().flat_map(|c| {
        citations::in_comment(&c.text, sections)
            .into_iter()
            .map(|cited| (c.line_of(cited.offset), cited.id))
    });
    let mut all: Vec<(usize, Id)> = in_names.chain(in_comments).collect();
    all.sort();
    all.dedup();
    all
}

/// Reads RULES.md at `root` and every source file under it; returns the
/// citations of undefined rules (paths relative to `root`) and how many
/// citations were read in all.
fn check(root: &Path) -> (Vec<Undefined>, usize) {
    let rules = std::fs::read_to_string(root.join("RULES.md")).expect("RULES.md is readable");
    let defined = index::defined(&rules).unwrap_or_else(|e| panic!("{e}"));
    let sections: BTreeSet<char> = defined.keys().map(|id| id.letter).collect();
    let mut undefined = Vec::new();
    let mut count = 0;
    for (path, language) in walk::sources(root).expect("the tree is readable") {
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => panic!("{}: {e}", path.display()),
        };
        let file = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        for (line, id) in cited(&text, language, &sections) {
            count += 1;
            if !defined.contains_key(&id) {
                undefined.push(Undefined {
                    file: file.clone(),
                    line,
                    id,
                });
            }
        }
    }
    (undefined, count)
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

#[test]
fn rules_md_defines_every_cited_rule() {
    let (undefined, count) = check(&repository());
    let list: Vec<String> = undefined.iter().map(ToString::to_string).collect();
    assert!(
        list.is_empty(),
        "cited but not defined in RULES.md (add an entry, or fix the citation):\n{}",
        list.join("\n")
    );
    // The repository cites hundreds of rules; finding few means the scan
    // broke, and a check that reads nothing cannot fail.
    assert!(count > 500, "only {count} citations found");
}

#[test]
fn a_made_up_citation_fails_the_check() {
    let root = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = root.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "RULES.md",
        "# Rules\n\n## Tools\n\n- **T1** one\n- **T2** two\n\n## Containment\n\n- **C1** one\n",
    );
    write(
        "src/lib.rs",
        "//! The tools (rules T1–T2).\n\n#[test]\nfn t1_defined() {}\n\n#[test]\nfn t9_not_defined() {}\n\n/// Holds rule\n/// Q7 and (C1, C4).\nfn helper() {}\n",
    );
    write(
        "tests/test_it.py",
        "# rule T2\ndef test_c3_named():\n    pass\n",
    );
    // Build output and installed packages are not the project's.
    write("target/debug/build.rs", "// rule C5\n");
    write("node_modules/pkg/x.py", "# rule C6\n");
    write(".git/hooks/h.py", "# rule C7\n");

    let (undefined, count) = check(root.path());
    let list: Vec<String> = undefined.iter().map(ToString::to_string).collect();
    assert_eq!(
        list,
        [
            "src/lib.rs:7: T9",
            "src/lib.rs:10: C4",
            "src/lib.rs:10: Q7",
            "tests/test_it.py:2: C3",
        ]
    );
    // T1, T2 in the module doc; t1_defined; C1; T2 in the Python comment.
    assert_eq!(count, 9);

    // Defining them makes the check pass.
    write(
        "RULES.md",
        "- **T1** one\n- **T2** two\n- **T9** nine\n- **C1** one\n- **C3** three\n- **C4** four\n- **Q7** seven\n",
    );
    assert_eq!(check(root.path()).0, []);
}
