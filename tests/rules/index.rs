//! The rules RULES.md defines: one entry per ID, a list item opening with
//! the ID in bold (`- **C3** …`).

use std::collections::BTreeMap;
use std::fmt;

use crate::citations::Id;

/// What is wrong with RULES.md.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexError {
    /// A line opens an entry (`- **`) without a well-formed ID in bold.
    BadEntry {
        /// 1-based line number.
        line: usize,
    },
    /// An ID has two entries.
    Duplicate {
        /// The ID.
        id: Id,
        /// 1-based line of the first entry.
        first: usize,
        /// 1-based line of the second.
        again: usize,
    },
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexError::BadEntry { line } => {
                write!(f, "RULES.md:{line}: an entry must open with `- **ID**`")
            }
            IndexError::Duplicate { id, first, again } => {
                write!(
                    f,
                    "RULES.md:{again}: {id} is defined already on line {first}"
                )
            }
        }
    }
}

impl std::error::Error for IndexError {}

/// Every ID RULES.md (`text`) defines, with the line of its entry.
pub fn defined(text: &str) -> Result<BTreeMap<Id, usize>, IndexError> {
    let mut ids = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let Some(entry) = line.strip_prefix("- **") else {
            continue;
        };
        let id = entry
            .split_once("**")
            .and_then(|(id, _)| Id::parse(id))
            .ok_or(IndexError::BadEntry { line: line_no })?;
        if let Some(first) = ids.insert(id, line_no) {
            return Err(IndexError::Duplicate {
                id,
                first,
                again: line_no,
            });
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_open_with_a_bold_id() {
        let text = "# Rules\n\n## Tools\n\n- **T1** A tool is…\n- **T2** Validation…\n  - **not** an entry, indented\n";
        let ids: Vec<(String, usize)> = defined(text)
            .unwrap()
            .into_iter()
            .map(|(id, line)| (id.to_string(), line))
            .collect();
        assert_eq!(ids, [("T1".to_owned(), 5), ("T2".to_owned(), 6)]);
    }

    #[test]
    fn a_malformed_or_repeated_entry_is_refused() {
        assert_eq!(
            defined("- **T1** ok\n- **t2** lower case\n"),
            Err(IndexError::BadEntry { line: 2 })
        );
        assert_eq!(
            defined("- **T1 no closing"),
            Err(IndexError::BadEntry { line: 1 })
        );
        let again = defined("- **T1** one\n\n- **T1** two\n").unwrap_err();
        assert_eq!(
            again.to_string(),
            "RULES.md:3: T1 is defined already on line 1"
        );
    }
}
