//! What counts as citing a rule: in a test's name, and in comment text.
//!
//! A rule ID is one capital letter (its section) and a number from 1 to 99
//! without a leading zero, standing as a word of its own: `C3`, `P7`. Three
//! forms cite one:
//!
//! - a test named after it: `c6_...` in Rust, `test_c6_...` in Python, the
//!   number followed by `_` and a letter (so `x86_64_...` is not `X86`);
//! - a list after the word "rule" or "rules", in any case: `rule C3`,
//!   `rules P7, P8`, `rules P7 and P8`, `rules W1–W5, E4, P4` (a range is
//!   written with `-`, `–` or `—` and covers every number between);
//! - a list standing alone where the project writes one: in parentheses
//!   (`(W2, B6)`), in a table cell (`| T2, T3 |`), or opening a comment line
//!   before a colon (`---- C1: ...`).
//!
//! Only the first form with the word "rule" takes any letter. The others
//! take only the letters of sections that RULES.md defines, so that `u8`,
//! `v4_class`, an `S3` bucket or `h2` in passing are not read as rules.

use std::collections::BTreeSet;
use std::fmt;

/// A rule ID: a section letter and a number, shown as `C3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id {
    /// The section's letter, upper case.
    pub letter: char,
    /// The rule's number in its section, 1 to 99.
    pub number: u8,
}

impl Id {
    /// Reads exactly one ID (`C3`, `N12`) from `text`, nothing around it.
    pub fn parse(text: &str) -> Option<Id> {
        let (id, len) = id_at(text.as_bytes(), 0)?;
        (len == text.len()).then_some(id)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.letter, self.number)
    }
}

/// One citation in a piece of text: the byte offset of the cited ID's
/// first character (of a range's first end) and the ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cited {
    /// Byte offset in the text the citation was found in.
    pub offset: usize,
    /// The rule cited.
    pub id: Id,
}

/// The rule a test is named after, if any. `python` asks for pytest's
/// `test_` prefix before the ID; `sections` are the letters an ID may have.
pub fn in_test_name(name: &str, python: bool, sections: &BTreeSet<char>) -> Option<Id> {
    let name = if python {
        name.strip_prefix("test_")?
    } else {
        name
    };
    let bytes = name.as_bytes();
    let letter = *bytes.first()?;
    if !letter.is_ascii_lowercase() {
        return None;
    }
    let (number, digits) = number_at(bytes, 1)?;
    let rest = &bytes[1 + digits..];
    let named = rest.first() == Some(&b'_') && rest.get(1).is_some_and(u8::is_ascii_lowercase);
    let letter = char::from(letter.to_ascii_uppercase());
    (named && sections.contains(&letter)).then_some(Id { letter, number })
}

/// Every rule cited in comment `text` (the comment markers already taken
/// off, lines joined with `\n`), in order of appearance.
pub fn in_comment(text: &str, sections: &BTreeSet<char>) -> Vec<Cited> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let list = after_rule_word(bytes, at)
            .and_then(|start| list_at(bytes, start))
            .or_else(|| standing_list_at(bytes, at, sections));
        match list {
            Some((list, end)) => {
                found.extend(list);
                at = end;
            }
            None => at += 1,
        }
    }
    found
}

/// If the word "rule" or "rules" (any case) starts at `at`, followed by
/// white space, where the list after it would start.
fn after_rule_word(bytes: &[u8], at: usize) -> Option<usize> {
    if char_before(bytes, at).is_some_and(is_word_char) {
        return None;
    }
    let word = bytes.get(at..at + 4)?;
    if !word.eq_ignore_ascii_case(b"rule") {
        return None;
    }
    let mut end = at + 4;
    if bytes
        .get(end)
        .is_some_and(|b| b.eq_ignore_ascii_case(&b's'))
    {
        end += 1;
    }
    let spaced = skip_space(bytes, end);
    (spaced > end).then_some(spaced)
}

/// A list of IDs of known sections starting at `at` that stands alone: in
/// parentheses, in a table cell, or opening a line before a colon.
fn standing_list_at(
    bytes: &[u8],
    at: usize,
    sections: &BTreeSet<char>,
) -> Option<(Vec<Cited>, usize)> {
    let (list, end) = list_at(bytes, at)?;
    if !list.iter().all(|c| sections.contains(&c.id.letter)) {
        return None;
    }
    let before = bytes[..at]
        .iter()
        .rev()
        .find(|b| !matches!(b, b' ' | b'\t'));
    let after = bytes[end..].iter().find(|b| !matches!(b, b' ' | b'\t'));
    let opens_line = bytes[..at]
        .iter()
        .rev()
        .find(|b| !matches!(b, b' ' | b'\t' | b'-' | b'=' | b'*' | b'#'))
        .is_none_or(|b| *b == b'\n');
    let stands_alone = matches!(
        (before, after),
        (Some(b'('), Some(b')')) | (Some(b'|'), Some(b'|'))
    ) || (opens_line && after == Some(&b':'));
    stands_alone.then_some((list, end))
}

/// A list of IDs and ranges starting at `at` (`W1–W5, E4 and P4`), and
/// where it ends.
fn list_at(bytes: &[u8], at: usize) -> Option<(Vec<Cited>, usize)> {
    let mut found = Vec::new();
    let mut end = item_at(bytes, at, &mut found)?;
    while let Some(next) = separator_at(bytes, end) {
        match item_at(bytes, next, &mut found) {
            Some(item_end) => end = item_end,
            None => break,
        }
    }
    Some((found, end))
}

/// One ID or range at `at`: pushes what it cites, returns where it ends.
fn item_at(bytes: &[u8], at: usize, found: &mut Vec<Cited>) -> Option<usize> {
    let (first, len) = id_at(bytes, at)?;
    let end = at + len;
    let range_end = dash_at(bytes, skip_space(bytes, end))
        .map(|next| skip_space(bytes, next))
        .and_then(|next| id_at(bytes, next).map(|(last, len)| (last, next + len)));
    match range_end {
        Some((last, range_end)) => {
            if last.letter == first.letter && first.number <= last.number {
                found.extend((first.number..=last.number).map(|number| Cited {
                    offset: at,
                    id: Id { number, ..first },
                }));
            } else {
                // Not a range of one section: both ends are cited, so a
                // mistyped end is still looked up.
                found.push(Cited {
                    offset: at,
                    id: first,
                });
                found.push(Cited {
                    offset: at,
                    id: last,
                });
            }
            Some(range_end)
        }
        None => {
            found.push(Cited {
                offset: at,
                id: first,
            });
            Some(end)
        }
    }
}

/// A separator between two items of a list (`, `, ` and `, `/`, `, or `…),
/// and where the next item would start.
fn separator_at(bytes: &[u8], at: usize) -> Option<usize> {
    let mut next = skip_space(bytes, at);
    let mut punctuated = false;
    if matches!(bytes.get(next), Some(b',' | b'/' | b'&')) {
        punctuated = true;
        next = skip_space(bytes, next + 1);
    }
    for word in [&b"and"[..], b"or"] {
        let end = next + word.len();
        if next > at
            && bytes.get(next..end) == Some(word)
            && bytes.get(end).is_some_and(u8::is_ascii_whitespace)
        {
            return Some(skip_space(bytes, end));
        }
    }
    punctuated.then_some(next)
}

/// A range's dash at `at` (`-`, `–` or `—`), and where it ends.
fn dash_at(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = bytes.get(at..)?;
    if rest.starts_with(b"-") {
        Some(at + 1)
    } else if rest.starts_with("–".as_bytes()) || rest.starts_with("—".as_bytes()) {
        Some(at + 3)
    } else {
        None
    }
}

/// An ID standing as a word at `at`, and its length.
fn id_at(bytes: &[u8], at: usize) -> Option<(Id, usize)> {
    let letter = *bytes.get(at)?;
    if !letter.is_ascii_uppercase() || char_before(bytes, at).is_some_and(is_word_char) {
        return None;
    }
    let (number, digits) = number_at(bytes, at + 1)?;
    let end = at + 1 + digits;
    if char_at(bytes, end).is_some_and(is_word_char) {
        return None;
    }
    // `C1.2` is a version or a section number, not a rule.
    if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let letter = char::from(letter);
    Some((Id { letter, number }, 1 + digits))
}

/// A rule number at `at` (1 to 99, no leading zero) and its digit count;
/// none if a third digit follows.
fn number_at(bytes: &[u8], at: usize) -> Option<(u8, usize)> {
    let digits = bytes
        .get(at..)?
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if !(1..=2).contains(&digits) || bytes[at] == b'0' {
        return None;
    }
    let number = bytes[at..at + digits]
        .iter()
        .fold(0u8, |n, d| n * 10 + (d - b'0'));
    Some((number, digits))
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// A character that continues a word: a letter or digit of any script, or
/// `_` (`éC3` holds no ID; `–C3` does).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The character that ends just before byte `at`, if any.
fn char_before(bytes: &[u8], at: usize) -> Option<char> {
    let start = bytes[..at]
        .iter()
        .rposition(|b| !(0x80..0xc0).contains(b))?;
    std::str::from_utf8(&bytes[start..at]).ok()?.chars().next()
}

/// The character that starts at byte `at`, if any.
fn char_at(bytes: &[u8], at: usize) -> Option<char> {
    let rest = bytes.get(at..at + 4).unwrap_or(bytes.get(at..)?);
    let valid = match std::str::from_utf8(rest) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).ok()?,
    };
    valid.chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections() -> BTreeSet<char> {
        "TPMEBWCNSHOAX".chars().collect()
    }

    fn cited(text: &str) -> Vec<String> {
        in_comment(text, &sections())
            .iter()
            .map(|c| c.id.to_string())
            .collect()
    }

    #[test]
    fn ids_are_a_capital_and_one_or_two_digits_without_a_leading_zero() {
        assert_eq!(
            Id::parse("C3").map(|i| i.to_string()).as_deref(),
            Some("C3")
        );
        assert_eq!(
            Id::parse("N12").map(|i| i.to_string()).as_deref(),
            Some("N12")
        );
        for not_an_id in ["c3", "C0", "C03", "C123", "CC3", "C", "3", "C3 ", "C3x"] {
            assert_eq!(Id::parse(not_an_id), None, "{not_an_id}");
        }
    }

    #[test]
    fn test_names_cite_the_rule_they_start_with() {
        let s = sections();
        let name = |n: &str, py| in_test_name(n, py, &s).map(|i| i.to_string());
        assert_eq!(
            name("c6_deep_nesting_is_refused", false).as_deref(),
            Some("C6")
        );
        assert_eq!(
            name("n12_the_client_hears_it", false).as_deref(),
            Some("N12")
        );
        assert_eq!(name("test_b4_sorted", true).as_deref(), Some("B4"));
        for (not_cited, py) in [
            ("b4_sorted", true),       // pytest names start with test_
            ("test_b4_sorted", false), // in Rust this is not the convention
            ("x86_64_builds", false),  // an architecture, not X86
            ("u8_overflow", false),    // not a section
            ("v4_class", false),       // not a section
            ("sha256_of_empty", false),
            ("c6", false), // a name must follow the ID
            ("c6_", false),
            ("c06_zero", false),
            ("c100_three_digits", false),
            ("layers_core", false),
        ] {
            assert_eq!(name(not_cited, py), None, "{not_cited}");
        }
    }

    #[test]
    fn the_word_rule_cites_lists_and_ranges() {
        assert_eq!(cited("see rule C3 for the bound"), ["C3"]);
        assert_eq!(cited("Rule N5: 200 or 204"), ["N5"]);
        assert_eq!(cited("(rules P7, P8)"), ["P7", "P8"]);
        assert_eq!(cited("rules P7 and P8, including"), ["P7", "P8"]);
        assert_eq!(cited("rules P2/P7 or P8"), ["P2", "P7", "P8"]);
        assert_eq!(cited("rules P1–P3"), ["P1", "P2", "P3"]);
        assert_eq!(cited("rule P4-P6"), ["P4", "P5", "P6"]);
        assert_eq!(
            cited("The WebAssembly sandbox (rules W1–W5, E4, P4)."),
            ["W1", "W2", "W3", "W4", "W5", "E4", "P4"]
        );
        // Across a line break of a joined comment.
        assert_eq!(cited("its output schema (rule\nN2): the path"), ["N2"]);
        // After the word, any letter: a mistyped section is still caught.
        assert_eq!(cited("rule Q7 holds"), ["Q7"]);
        // A range across sections or backwards cites both ends.
        assert_eq!(cited("rules C5–C1"), ["C5", "C1"]);
        assert_eq!(cited("rules C1–P3"), ["C1", "P3"]);
    }

    #[test]
    fn the_word_rule_alone_cites_nothing() {
        for text in [
            "project rules (AGENTS.md, …)",
            "rules_files names other files",
            "a ruleset C3",
            "rule-based C3",
            "the rules: none",
            "rule C0 and rule C123",
            "rule C1.2 of the draft",
            "overrule C3",
        ] {
            assert!(cited(text).is_empty(), "{text}: {:?}", cited(text));
        }
    }

    #[test]
    fn a_list_standing_alone_cites_its_rules() {
        assert_eq!(
            cited("checked on resolved addresses (W2, B6) |"),
            ["W2", "B6"]
        );
        assert_eq!(cited("at most once per key (P5)."), ["P5"]);
        assert_eq!(cited("| the live registry | T2, T3 |"), ["T2", "T3"]);
        assert_eq!(cited("| timeout, retry | P4–P6 |"), ["P4", "P5", "P6"]);
        assert_eq!(cited(" ---- C1: every wait on a guest"), ["C1"]);
        assert_eq!(cited(" P7: the secret is masked"), ["P7"]);
        assert_eq!(cited("first line\n  C4: second"), ["C4"]);
    }

    #[test]
    fn ids_in_passing_are_not_citations() {
        for text in [
            "an S3 bucket, an H2 stream, C1 control characters",
            "the M1 and M2 chips",
            "HTTP/2 over h2; x86_64; sha256; u8; P256 keys",
            "E2E tests and A1B2 hex",
            "(the S3 bucket)",        // not alone in the parentheses
            "text, then C1: a colon", // not opening the line
            "(Q7)",                   // not a section, and no word rule
            "(C3x)",
            "(é3) and (Cé3) and (éC3) and (C3é)",
            "version (N1.2)",
        ] {
            assert!(cited(text).is_empty(), "{text}: {:?}", cited(text));
        }
    }

    #[test]
    fn offsets_point_at_the_cited_id() {
        let text = "see rules C3 and\nP7";
        let found = in_comment(text, &sections());
        let at: Vec<&str> = found
            .iter()
            .map(|c| &text[c.offset..c.offset + 2])
            .collect();
        assert_eq!(at, ["C3", "P7"]);
    }
}
