//! Splits a source file into what may cite a rule: its comments and the
//! names of its tests. String literals are skipped, so test data that
//! contains a citation, and a `//` inside a URL, are not read as comments.
//!
//! Written by hand rather than with a Rust parser: what is needed is only
//! where comments, strings and character literals start and end, which a
//! few states track, and `syn` drops ordinary comments. Rust: line and
//! (nested) block comments; strings, byte and C strings, raw strings with
//! any number of `#`; character literals told from lifetimes. Python: `#`
//! comments and docstrings (a string that opens its line, triple-quoted or
//! not); strings of every quote kind and prefix.

/// The language of a source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// `.rs`
    Rust,
    /// `.py`
    Python,
}

/// Comment text from consecutive lines, markers (`//`, `///`, `//!`, `#`,
/// a block comment's `*`) taken off, lines joined with `\n`.
#[derive(Debug, Default)]
pub struct Comment {
    /// The text.
    pub text: String,
    /// For each joined line: the offset in `text` where it starts, and its
    /// line number (1-based) in the file.
    starts: Vec<(usize, usize)>,
}

impl Comment {
    /// The file's line number (1-based) of byte `offset` of the text.
    pub fn line_of(&self, offset: usize) -> usize {
        let i = self.starts.partition_point(|(start, _)| *start <= offset);
        self.starts[i.saturating_sub(1)].1
    }
}

/// A test function: its name and the line of its `fn` or `def`.
#[derive(Debug, PartialEq, Eq)]
pub struct TestFn {
    /// The function's name.
    pub name: String,
    /// 1-based line number.
    pub line: usize,
}

/// What a file holds that may cite a rule.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Its comments, consecutive comment lines joined.
    pub comments: Vec<Comment>,
    /// Its test functions (Rust: under an attribute naming `test`; Python:
    /// every `def test_…`).
    pub tests: Vec<TestFn>,
}

/// Scans `text`, a source file in `language`.
pub fn scan(text: &str, language: Language) -> Scanned {
    let lexed = match language {
        Language::Rust => lex_rust(text.as_bytes()),
        Language::Python => lex_python(text.as_bytes()),
    };
    let lines = LineIndex::new(text);
    let comments = join(&lexed.comments, text, &lines, language);
    let code = String::from_utf8_lossy(&lexed.code);
    let tests = match language {
        Language::Rust => rust_tests(&code, &lines),
        Language::Python => python_tests(&code),
    };
    Scanned { comments, tests }
}

/// A file's text split by the lexer: comment pieces (byte ranges, one
/// per line at most) and the code with comments and strings blanked.
struct Lexed {
    comments: Vec<(usize, usize)>,
    code: Vec<u8>,
}

impl Lexed {
    fn new(bytes: &[u8]) -> Self {
        Lexed {
            comments: Vec::new(),
            code: bytes.to_vec(),
        }
    }

    /// Blanks `from..to` in the code, keeping line breaks.
    fn blank(&mut self, from: usize, to: usize) {
        for b in &mut self.code[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }

    /// Records `from..to` as comment text, one piece per line, and blanks it.
    fn comment(&mut self, bytes: &[u8], from: usize, to: usize) {
        let mut start = from;
        for (i, b) in bytes[from..to].iter().enumerate() {
            if *b == b'\n' {
                self.comments.push((start, from + i));
                start = from + i + 1;
            }
        }
        self.comments.push((start, to));
        self.blank(from, to);
    }
}

fn lex_rust(bytes: &[u8]) -> Lexed {
    let mut out = Lexed::new(bytes);
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.starts_with(b"//") {
            let end = line_end(bytes, at);
            out.comment(bytes, at, end);
            at = end;
        } else if rest.starts_with(b"/*") {
            let end = block_comment_end(bytes, at);
            out.comment(bytes, at, end);
            at = end;
        } else if rest[0] == b'"' {
            let end = quoted_end(bytes, at + 1, b'"');
            out.blank(at, end);
            at = end;
        } else if rest[0] == b'\'' {
            at = char_literal_end(bytes, at).map_or(at + 1, |end| {
                out.blank(at, end);
                end
            });
        } else if rest[0].is_ascii_alphabetic() || rest[0] == b'_' {
            let word_end = at + rest.iter().take_while(|b| is_ident(**b)).count();
            let prefix = &bytes[at..word_end];
            let after_word = bytes.get(word_end).copied();
            if matches!(prefix, b"r" | b"br" | b"cr")
                && matches!(after_word, Some(b'"' | b'#'))
                && let Some(end) = raw_string_end(bytes, word_end)
            {
                out.blank(at, end);
                at = end;
                continue;
            }
            if matches!(prefix, b"b" | b"c") && after_word == Some(b'"') {
                let end = quoted_end(bytes, word_end + 1, b'"');
                out.blank(at, end);
                at = end;
                continue;
            }
            if prefix == b"b"
                && after_word == Some(b'\'')
                && let Some(end) = char_literal_end(bytes, word_end)
            {
                out.blank(at, end);
                at = end;
                continue;
            }
            at = word_end;
        } else {
            at += 1;
        }
    }
    out
}

fn lex_python(bytes: &[u8]) -> Lexed {
    let mut out = Lexed::new(bytes);
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b == b'#' {
            let end = line_end(bytes, at);
            out.comment(bytes, at, end);
            at = end;
        } else if b == b'"' || b == b'\'' {
            let triple = bytes[at..].starts_with(&[b, b, b]);
            let end = if triple {
                triple_quoted_end(bytes, at + 3, b)
            } else {
                quoted_end(bytes, at + 1, b)
            };
            // A triple-quoted string that opens its line (after any prefix
            // such as `r`) is a docstring or a bare string statement:
            // documentation. Other strings are data.
            let line_start = bytes[..at]
                .iter()
                .rposition(|c| *c == b'\n')
                .map_or(0, |i| i + 1);
            let opens_line = bytes[line_start..at]
                .iter()
                .all(|c| matches!(c, b' ' | b'\t' | b'r' | b'R' | b'u' | b'U'));
            if triple && opens_line {
                out.comment(bytes, at, end);
            } else {
                out.blank(at, end);
            }
            at = end;
        } else {
            at += 1;
        }
    }
    out
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Where the line holding `at` ends (its `\n`, or the end).
fn line_end(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(bytes.len(), |i| at + i)
}

/// End (exclusive) of a string whose body starts at `at` and ends at an
/// unescaped `quote`; the end of the file if it never does.
fn quoted_end(bytes: &[u8], mut at: usize, quote: u8) -> usize {
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b if b == quote => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// End of a Python triple-quoted string whose body starts at `at`.
fn triple_quoted_end(bytes: &[u8], mut at: usize, quote: u8) -> usize {
    while at < bytes.len() {
        if bytes[at] == b'\\' {
            at += 2;
        } else if bytes[at..].starts_with(&[quote, quote, quote]) {
            return at + 3;
        } else {
            at += 1;
        }
    }
    bytes.len()
}

/// End of a block comment starting at `at` (`/*`), nested ones included.
fn block_comment_end(bytes: &[u8], mut at: usize) -> usize {
    let mut depth = 0usize;
    while at < bytes.len() {
        if bytes[at..].starts_with(b"/*") {
            depth += 1;
            at += 2;
        } else if bytes[at..].starts_with(b"*/") {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    bytes.len()
}

/// End of a raw string whose `#`s or `"` start at `at` (after `r`), if
/// that is one (`r#ident` is a raw identifier).
fn raw_string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let hashes = bytes[at..].iter().take_while(|b| **b == b'#').count();
    if bytes.get(at + hashes) != Some(&b'"') {
        return None;
    }
    let mut closing = vec![b'"'];
    closing.extend(std::iter::repeat_n(b'#', hashes));
    let body = at + hashes + 1;
    Some(
        bytes[body..]
            .windows(closing.len())
            .position(|w| w == closing.as_slice())
            .map_or(bytes.len(), |i| body + i + closing.len()),
    )
}

/// End of a character literal starting at `at` (`'`), or none if this
/// quote starts a lifetime or a label.
fn char_literal_end(bytes: &[u8], at: usize) -> Option<usize> {
    let first = *bytes.get(at + 1)?;
    if first == b'\\' {
        // An escape: `'\n'`, `'\''`, `'\u{1F600}'`.
        let close = bytes
            .get(at + 3..)?
            .iter()
            .take(10)
            .position(|b| *b == b'\'')?;
        return Some(at + 3 + close + 1);
    }
    let len = match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    };
    (bytes.get(at + 1 + len) == Some(&b'\'')).then_some(at + 2 + len)
}

/// Line numbers of byte offsets in a file.
struct LineIndex(Vec<usize>);

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(
                text.bytes()
                    .enumerate()
                    .filter(|(_, b)| *b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        LineIndex(starts)
    }

    /// 1-based line of byte `offset`.
    fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|start| *start <= offset)
    }
}

/// Joins comment pieces on consecutive lines into comments, taking the
/// markers off each piece.
fn join(
    pieces: &[(usize, usize)],
    text: &str,
    lines: &LineIndex,
    language: Language,
) -> Vec<Comment> {
    let mut comments: Vec<Comment> = Vec::new();
    let mut last_line = 0;
    for &(from, to) in pieces {
        let line = lines.line(from);
        let piece = strip_marker(&text[from..to], language);
        match comments.last_mut() {
            Some(comment) if line <= last_line + 1 => {
                comment.text.push('\n');
                comment.starts.push((comment.text.len(), line));
                comment.text.push_str(piece);
            }
            _ => comments.push(Comment {
                text: piece.to_owned(),
                starts: vec![(0, line)],
            }),
        }
        last_line = line;
    }
    comments
}

/// A comment line without its marker. Rust: `//`, `///`, `//!`, `/*`,
/// `/**`, `/*!`, a continuation line's leading `*`, a closing `*/`.
/// Python: `#`, a docstring's prefix and quotes.
fn strip_marker(piece: &str, language: Language) -> &str {
    let piece = piece.trim_start();
    match language {
        Language::Rust => {
            let piece = if let Some(rest) = piece.strip_prefix("//") {
                rest.trim_start_matches(['/', '!'])
            } else if let Some(rest) = piece.strip_prefix("/*") {
                rest.trim_start_matches(['*', '!'])
            } else {
                piece.trim_start_matches('*')
            };
            piece.strip_suffix("*/").unwrap_or(piece)
        }
        Language::Python => piece
            .strip_prefix('#')
            .unwrap_or_else(|| {
                piece
                    .trim_start_matches(['r', 'R', 'u', 'U'])
                    .trim_start_matches(['"', '\''])
            })
            .trim_end_matches(['"', '\'']),
    }
}

/// Rust test functions: a `fn` under an attribute whose path ends in
/// `test` (`#[test]`, `#[tokio::test(…)]`, `#[rstest]`) or starts with
/// `test_` (`#[test_case(…)]`), other attributes and qualifiers between.
fn rust_tests(code: &str, lines: &LineIndex) -> Vec<TestFn> {
    let bytes = code.as_bytes();
    let mut tests = Vec::new();
    let mut under_test_attribute = false;
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b == b'#' && bytes.get(at + 1) == Some(&b'[') {
            let Some(end) = bracket_end(bytes, at + 1) else {
                break; // an attribute never closed: no function follows
            };
            under_test_attribute |= is_test_attribute(&code[at + 2..end - 1]);
            at = end;
        } else if is_ident(b) && (at == 0 || !is_ident(bytes[at - 1])) {
            let word_end = at + bytes[at..].iter().take_while(|c| is_ident(**c)).count();
            if &bytes[at..word_end] == b"fn" {
                let name_start = word_end
                    + bytes[word_end..]
                        .iter()
                        .take_while(|c| c.is_ascii_whitespace())
                        .count();
                let name_end = name_start
                    + bytes[name_start..]
                        .iter()
                        .take_while(|c| is_ident(**c))
                        .count();
                if under_test_attribute && name_end > name_start {
                    tests.push(TestFn {
                        name: code[name_start..name_end].to_owned(),
                        line: lines.line(at),
                    });
                }
                under_test_attribute = false;
                at = name_end.max(word_end);
            } else {
                at = word_end;
            }
        } else {
            if matches!(b, b'{' | b'}' | b';') {
                under_test_attribute = false;
            }
            at += 1;
        }
    }
    tests
}

/// End (exclusive) of the bracketed group whose `[` is at `at`.
fn bracket_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, b) in bytes[at..].iter().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

fn is_test_attribute(inside: &str) -> bool {
    let path: String = inside
        .split(['(', '='])
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let last = path.rsplit("::").next().unwrap_or_default();
    last.ends_with("test") || last.starts_with("test_")
}

/// Python test functions: every `def test_…`, at any indentation.
fn python_tests(code: &str) -> Vec<TestFn> {
    code.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.trim_start();
            let line = line.strip_prefix("async").map_or(line, str::trim_start);
            let rest = line.strip_prefix("def")?;
            let rest = rest.strip_prefix([' ', '\t'])?.trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            name.starts_with("test_")
                .then_some(TestFn { name, line: i + 1 })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comments(text: &str, language: Language) -> Vec<(usize, String)> {
        scan(text, language)
            .comments
            .iter()
            .map(|c| (c.line_of(0), c.text.clone()))
            .collect()
    }

    #[test]
    fn rust_comments_are_joined_and_stripped() {
        let text = "//! Module (rules C1–C5).\n//! more\nfn main() {} // trailing\n\n/// doc\n";
        assert_eq!(
            comments(text, Language::Rust),
            [
                (1, " Module (rules C1–C5).\n more\n trailing".to_owned()),
                (5, " doc".to_owned())
            ]
        );
    }

    #[test]
    fn rust_strings_are_not_comments() {
        let text = r###"
let url = "https://example.com // rule Q1";
let raw = r#"a "quoted" // rule Q2"#;
let bytes = br"// rule Q3";
let c = '"'; // real
let life: &'static str = "x"; /* block
 * rule C3 */
let esc = "\" // rule Q4";
let ch = '\''; // after
"###;
        let found = comments(text, Language::Rust);
        let texts: Vec<&str> = found.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, [" real\n block\n rule C3 ", " after"]);
        assert_eq!(found[0].0, 5);
    }

    #[test]
    fn line_of_maps_joined_text_back_to_the_file() {
        let scanned = scan("x();\n// one\n// two\n", Language::Rust);
        let comment = &scanned.comments[0];
        let two = comment.text.find("two").unwrap();
        assert_eq!((comment.line_of(0), comment.line_of(two)), (2, 3));
    }

    #[test]
    fn rust_tests_are_functions_under_a_test_attribute() {
        let text = r#"
#[test]
fn c6_plain() {}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(miri, ignore)]
async fn c1_async() {}

fn v4_class() {} // not a test

#[cfg(test)]
mod tests {
    #[test] pub fn on_one_line() {}
    #[test_case(1)]
    fn cased(_: u8) {}
}
#[derive(Debug)]
struct S;
fn after_struct() {}
"#;
        let names: Vec<(String, usize)> = scan(text, Language::Rust)
            .tests
            .into_iter()
            .map(|t| (t.name, t.line))
            .collect();
        let expected = [
            ("c6_plain", 3),
            ("c1_async", 7),
            ("on_one_line", 13),
            ("cased", 15),
        ];
        assert_eq!(names, expected.map(|(n, l)| (n.to_owned(), l)));
    }

    #[test]
    fn python_comments_docstrings_and_tests() {
        let text = r##""""Rule N4: the suite.

more"""

x = "# not (rule Q1)"  # yes

def test_n5_errors():
    '''doc'''
    y = '''# rule Q2''' + r"\" # rule Q3"
    w = f"{x}"  # it's a comment
def helper(): pass
"##;
        let scanned = scan(text, Language::Python);
        let texts: Vec<(usize, String)> = scanned
            .comments
            .iter()
            .map(|c| (c.line_of(0), c.text.clone()))
            .collect();
        assert_eq!(
            texts,
            [
                (1, "Rule N4: the suite.\n\nmore".to_owned()),
                (5, " yes".to_owned()),
                (8, "doc".to_owned()),
                (10, " it's a comment".to_owned()),
            ]
        );
        let test = TestFn {
            name: "test_n5_errors".into(),
            line: 7,
        };
        assert_eq!(scanned.tests, [test]);
    }

    #[test]
    fn unterminated_input_ends_without_panicking() {
        for text in [
            "\"open", "r#\"open", "/* open", "'", "b'", "#[", "fn", "'\\", "/* /* */",
        ] {
            scan(text, Language::Rust);
        }
        for text in ["'''open", "\"open\\", "#"] {
            scan(text, Language::Python);
        }
    }
}
