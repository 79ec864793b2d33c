//! The YAML front matter of a `SKILL.md`: the lines between an opening
//! `---` on the first line and the next `---`, holding at least `name` and
//! `description`.
//!
//! The front matter is parsed with a real YAML parser (yaml-rust2: pure Rust
//! and maintained, where serde_yaml is deprecated and serde_yml unmaintained)
//! because skill authors use YAML freely — quoted strings, `>` and `|` block
//! scalars for long descriptions, comments, extra keys such as `license` or
//! `metadata`. Other keys are accepted and ignored.

use yaml_rust2::{Yaml, YamlLoader};

/// The longest skill name (the Agent Skills format's limit).
pub(crate) const MAX_NAME_CHARS: usize = 64;
/// The longest description (the Agent Skills format's limit).
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 1024;

/// What the front matter says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    pub(crate) name: String,
    pub(crate) description: String,
}

/// Why the front matter is unusable, and the line of `SKILL.md` (from 1)
/// where the problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrontMatterError {
    pub(crate) line: usize,
    pub(crate) message: String,
}

fn error(line: usize, message: impl Into<String>) -> FrontMatterError {
    FrontMatterError {
        line,
        message: message.into(),
    }
}

/// Parses the front matter at the start of `text`.
pub(crate) fn parse(text: &str) -> Result<FrontMatter, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.lines().next().map(str::trim_end) != Some("---") {
        return Err(error(
            1,
            "SKILL.md must start with a `---` line opening its YAML front matter",
        ));
    }
    let rest: Vec<&str> = text.lines().skip(1).collect();
    let Some(close) = rest.iter().position(|l| l.trim_end() == "---") else {
        return Err(error(
            1,
            "the front matter opened on line 1 is never closed by a `---` line",
        ));
    };
    let yaml_lines = &rest[..close];
    let yaml = yaml_lines.join("\n");
    // Line 1 of the YAML is line 2 of the file.
    let docs = YamlLoader::load_from_str(&yaml)
        .map_err(|e| error(e.marker().line() + 1, format!("invalid YAML: {}", e.info())))?;
    let map = match docs.into_iter().next() {
        Some(Yaml::Hash(map)) => map,
        None | Some(Yaml::Null) => {
            return Err(error(
                2,
                "the front matter is empty; it needs `name` and `description`",
            ));
        }
        Some(_) => {
            return Err(error(
                2,
                "the front matter is not a mapping of keys to values",
            ));
        }
    };
    let field = |key: &str| -> Result<String, FrontMatterError> {
        let line = key_line(yaml_lines, key);
        match map.get(&Yaml::String(key.into())) {
            None => Err(error(1, format!("the front matter has no `{key}`"))),
            Some(Yaml::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
            Some(Yaml::String(_)) | Some(Yaml::Null) => {
                Err(error(line, format!("`{key}` is empty")))
            }
            Some(_) => Err(error(line, format!("`{key}` must be text"))),
        }
    };
    let name = field("name")?;
    let description = field("description")?;
    check_name(&name).map_err(|e| error(key_line(yaml_lines, "name"), e.to_string()))?;
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(error(
            key_line(yaml_lines, "description"),
            format!("`description` is longer than {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    Ok(FrontMatter { name, description })
}

/// Why a skill's `name` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum NameError {
    /// Longer than [`MAX_NAME_CHARS`].
    #[error("`name` is longer than {MAX_NAME_CHARS} characters")]
    TooLong,
    /// A character other than a lower-case ASCII letter, a digit or `-`.
    #[error("`name` `{name}` contains {ch:?}; use lower-case letters, digits and hyphens")]
    BadChar {
        /// The name.
        name: String,
        /// The first character refused.
        ch: char,
    },
    /// A hyphen at either end, or two in a row.
    #[error("`name` `{name}` must not start or end with a hyphen or hold two in a row")]
    BadHyphens {
        /// The name.
        name: String,
    },
}

/// Names are what the model passes to `load_skill`: lower-case ASCII
/// letters, digits and single hyphens inside, at most 64 characters.
fn check_name(name: &str) -> Result<(), NameError> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(NameError::TooLong);
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if let Some(ch) = name.chars().find(|&c| !allowed(c)) {
        return Err(NameError::BadChar {
            name: name.to_owned(),
            ch,
        });
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(NameError::BadHyphens {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// The file line of `key:` at the top level of the front matter, or 1 if
/// it cannot be found.
fn key_line(yaml_lines: &[&str], key: &str) -> usize {
    yaml_lines
        .iter()
        .position(|l| {
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map_or(1, |i| i + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> (usize, String) {
        let e = parse(text).unwrap_err();
        (e.line, e.message)
    }

    #[test]
    fn e3_front_matter_accepts_yaml_as_skill_authors_write_it() {
        let text = "---\n# a comment\nname: pdf-forms\ndescription: >\n  Fills in PDF forms.\n  Use for any PDF with fields.\nlicense: MIT\nmetadata:\n  version: \"1.0\"\n---\n# Body\n";
        assert_eq!(
            parse(text).unwrap(),
            FrontMatter {
                name: "pdf-forms".into(),
                description: "Fills in PDF forms. Use for any PDF with fields.".into()
            }
        );
        let quoted = "\u{feff}---\r\nname: 'x1'\r\ndescription: \"Says: hi\"\r\n---\r\n";
        assert_eq!(parse(quoted).unwrap().description, "Says: hi");
    }

    #[test]
    fn e3_front_matter_problems_name_the_line() {
        assert_eq!(err("# no front matter\n").0, 1);
        assert_eq!(
            err("---\nname: x\ndescription: y\n"),
            (
                1,
                "the front matter opened on line 1 is never closed by a `---` line".into()
            )
        );
        let (line, message) = err("---\nname: x\ndescription: [unclosed\n---\n");
        assert!(message.starts_with("invalid YAML"), "{message}");
        assert_eq!(line, 4, "{message}");
        assert_eq!(
            err("---\nname: good\n---\n"),
            (1, "the front matter has no `description`".into())
        );
        assert_eq!(
            err("---\ndescription: d\nname: [a, b]\n---\n"),
            (3, "`name` must be text".into())
        );
        assert_eq!(err("---\nname: Bad Name\ndescription: d\n---\n").0, 2);
        assert_eq!(err("---\nname: a--b\ndescription: d\n---\n").0, 2);
        assert_eq!(
            err("---\nname: ok\ndescription:\n---\n"),
            (3, "`description` is empty".into())
        );
        assert_eq!(err("---\n---\n").0, 2);
        assert_eq!(
            err("---\n- a\n- b\n---\n"),
            (
                2,
                "the front matter is not a mapping of keys to values".into()
            )
        );
        let long = format!("---\nname: ok\ndescription: {}\n---\n", "x".repeat(1025));
        assert_eq!(err(&long).0, 3);
    }

    #[test]
    fn e3_a_refused_skill_name_says_which_rule_it_breaks() {
        assert_eq!(check_name("pdf-forms"), Ok(()));
        assert_eq!(check_name(&"a".repeat(65)), Err(NameError::TooLong));
        assert_eq!(
            check_name("Bad"),
            Err(NameError::BadChar {
                name: "Bad".into(),
                ch: 'B'
            })
        );
        assert_eq!(
            check_name("a--b"),
            Err(NameError::BadHyphens {
                name: "a--b".into()
            })
        );
        assert_eq!(
            err("---\nname: Bad Name\ndescription: d\n---\n"),
            (
                2,
                "`name` `Bad Name` contains 'B'; use lower-case letters, digits and hyphens".into()
            )
        );
    }
}
