//! A conservative reader of POSIX shell command lines, for checking command
//! names against allow and block lists (rule B5).
//!
//! Written here rather than taken from a crate on purpose: a full shell
//! parser (brush-parser, yash-syntax) accepts the whole language and
//! leaves the checker to walk every construct correctly, and a word
//! splitter (shell-words) does not see operators at all. What a policy
//! check needs is the opposite — a small reader that understands simple
//! commands joined by `|`, `||`, `&&`, `;`, `&` and newlines, quoting,
//! comments and redirections, and refuses everything else: command and
//! process substitution, subshells and groups, compound commands (`if`,
//! `for`, `case`, …), here-documents, bash-only operators, leading variable
//! assignments and command names that are expansions. What it accepts, the
//! shell reads the same way; what it cannot be sure of, it refuses.

use std::fmt;

/// One simple command: its words after quote removal. `words[0]` is the
/// command name; redirection targets are not words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The words, unquoted.
    pub words: Vec<String>,
}

/// Why a line was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The line uses a construct that cannot be checked.
    Unsupported(String),
    /// The line is not complete shell syntax.
    Syntax(String),
}

impl std::error::Error for ParseError {}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(what) => {
                write!(f, "{what} cannot be checked against the command lists")
            }
            Self::Syntax(what) => write!(f, "cannot parse the command line: {what}"),
        }
    }
}

/// Reserved words that start or belong to compound commands.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "function", "{", "}", "!", "[[", "]]", "in", "coproc", "time",
];

/// A word being read: its text, and whether the shell would expand it
/// (parameter expansion, globbing, tilde) into something not written here.
#[derive(Default)]
struct Word {
    text: String,
    expands: bool,
    started: bool,
    /// Every character so far was an unquoted digit (a redirection's
    /// descriptor number, if an operator follows directly).
    digits_only: bool,
}

struct Reader<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    commands: Vec<SimpleCommand>,
    words: Vec<Word>,
    word: Word,
    /// The next word is a redirection target.
    redirect: bool,
    /// The last separator needs a command after it (`|`, `&&`, `||`).
    need_command: Option<&'static str>,
}

fn unsupported<T>(what: &str) -> Result<T, ParseError> {
    Err(ParseError::Unsupported(what.to_owned()))
}

fn syntax<T>(what: &str) -> Result<T, ParseError> {
    Err(ParseError::Syntax(what.to_owned()))
}

/// Reads `line` into its simple commands. Every command of every pipeline,
/// list and background job is returned, in order.
pub fn parse(line: &str) -> Result<Vec<SimpleCommand>, ParseError> {
    let mut r = Reader {
        chars: line.char_indices().peekable(),
        commands: Vec::new(),
        words: Vec::new(),
        word: Word {
            digits_only: true,
            ..Word::default()
        },
        redirect: false,
        need_command: None,
    };
    while let Some((_, c)) = r.chars.next() {
        r.step(c)?;
    }
    r.end_command(None)?;
    if let Some(op) = r.need_command {
        return syntax(&format!(
            "`{op}` at the end of the line needs a command after it"
        ));
    }
    Ok(r.commands)
}

impl Reader<'_> {
    fn peek_is(&mut self, c: char) -> bool {
        self.chars.peek().is_some_and(|&(_, n)| n == c)
    }

    fn push(&mut self, c: char) {
        self.word.digits_only &= c.is_ascii_digit();
        self.word.started = true;
        self.word.text.push(c);
    }

    fn push_quoted(&mut self, c: char) {
        self.push(c);
        self.word.digits_only = false;
    }

    fn step(&mut self, c: char) -> Result<(), ParseError> {
        match c {
            ' ' | '\t' => self.end_word(),
            '\n' | ';' => {
                if c == ';' && self.peek_is(';') {
                    return unsupported("`;;` (case syntax)");
                }
                self.end_command(None)
            }
            '&' => {
                if self.peek_is('&') {
                    self.chars.next();
                    self.end_command(Some("&&"))
                } else if self.peek_is('>') {
                    unsupported("`&>` (a bash-only redirection)")
                } else {
                    self.end_command(None)
                }
            }
            '|' => {
                if self.peek_is('|') {
                    self.chars.next();
                    self.end_command(Some("||"))
                } else if self.peek_is('&') {
                    unsupported("`|&` (a bash-only pipe)")
                } else {
                    self.end_command(Some("|"))
                }
            }
            '<' | '>' => self.redirection(c),
            '(' | ')' => unsupported("a subshell, group or function definition (`(`, `)`)"),
            '`' => unsupported("command substitution (backticks)"),
            '\'' => self.single_quoted(),
            '"' => self.double_quoted(),
            '\\' => match self.chars.next() {
                Some((_, '\n')) => Ok(()),
                Some((_, n)) => {
                    self.push_quoted(n);
                    Ok(())
                }
                None => syntax("a `\\` at the end of the line"),
            },
            '$' => self.dollar(),
            '#' if !self.word.started => {
                while self.chars.next_if(|&(_, n)| n != '\n').is_some() {}
                Ok(())
            }
            '*' | '?' | '[' => {
                self.word.expands = true;
                self.push(c);
                Ok(())
            }
            '~' if !self.word.started => {
                self.word.expands = true;
                self.push(c);
                Ok(())
            }
            _ => {
                self.push(c);
                Ok(())
            }
        }
    }

    fn single_quoted(&mut self) -> Result<(), ParseError> {
        self.word.started = true;
        self.word.digits_only = false;
        for (_, c) in self.chars.by_ref() {
            if c == '\'' {
                return Ok(());
            }
            self.word.text.push(c);
        }
        syntax("an unterminated `'`")
    }

    fn double_quoted(&mut self) -> Result<(), ParseError> {
        self.word.started = true;
        self.word.digits_only = false;
        while let Some((_, c)) = self.chars.next() {
            match c {
                '"' => return Ok(()),
                '`' => return unsupported("command substitution (backticks)"),
                '$' => self.dollar()?,
                '\\' => match self.chars.next() {
                    Some((_, '\n')) => {}
                    Some((_, n @ ('"' | '\\' | '$' | '`'))) => self.word.text.push(n),
                    Some((_, n)) => {
                        self.word.text.push('\\');
                        self.word.text.push(n);
                    }
                    None => break,
                },
                _ => self.word.text.push(c),
            }
        }
        syntax("an unterminated `\"`")
    }

    /// After a `$`: a parameter expansion is fine in an argument (the word
    /// is marked as expanding); command substitution and bash's `$'…'` and
    /// `$"…"` are refused.
    fn dollar(&mut self) -> Result<(), ParseError> {
        match self.chars.peek().map(|&(_, c)| c) {
            Some('(') => unsupported("command substitution or arithmetic (`$(`)"),
            Some('\'' | '"') => unsupported("`$'…'` or `$\"…\"` quoting"),
            Some('{') => {
                self.chars.next();
                let mut body = String::new();
                for (_, c) in self.chars.by_ref() {
                    if c == '}' {
                        if body.contains('$') || body.contains('`') || body.contains('{') {
                            return unsupported("a nested expansion inside `${…}`");
                        }
                        self.word.expands = true;
                        self.word.started = true;
                        self.word.digits_only = false;
                        self.word.text.push_str("${");
                        self.word.text.push_str(&body);
                        self.word.text.push('}');
                        return Ok(());
                    }
                    body.push(c);
                }
                syntax("an unterminated `${`")
            }
            Some(c) if c.is_ascii_alphanumeric() || "_@*#?$!-".contains(c) => {
                self.word.expands = true;
                self.push_quoted('$');
                Ok(())
            }
            _ => {
                self.push_quoted('$');
                Ok(())
            }
        }
    }

    fn redirection(&mut self, c: char) -> Result<(), ParseError> {
        // A word of digits directly before the operator is its descriptor.
        if self.word.started && self.word.digits_only {
            self.word = Word {
                digits_only: true,
                ..Word::default()
            };
        } else {
            self.end_word()?;
        }
        if self.redirect {
            return syntax("a redirection without a target");
        }
        match (c, self.chars.peek().map(|&(_, n)| n)) {
            ('<', Some('<')) => return unsupported("a here-document (`<<`)"),
            (_, Some('(')) => return unsupported("process substitution"),
            ('>', Some('>' | '|' | '&')) | ('<', Some('&' | '>')) => {
                self.chars.next();
            }
            _ => {}
        }
        self.redirect = true;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), ParseError> {
        let word = std::mem::replace(
            &mut self.word,
            Word {
                digits_only: true,
                ..Word::default()
            },
        );
        if !word.started {
            return Ok(());
        }
        if std::mem::take(&mut self.redirect) {
            return Ok(());
        }
        self.words.push(word);
        Ok(())
    }

    fn end_command(&mut self, separator: Option<&'static str>) -> Result<(), ParseError> {
        self.end_word()?;
        if self.redirect {
            return syntax("a redirection without a target");
        }
        let words = std::mem::take(&mut self.words);
        match words.first() {
            None => {
                if let Some(op) = separator.or(self.need_command) {
                    return syntax(&format!("`{op}` without a command on one side"));
                }
            }
            Some(name) => {
                check_name(name)?;
                self.commands.push(SimpleCommand {
                    words: words.into_iter().map(|w| w.text).collect(),
                });
            }
        }
        self.need_command = separator;
        Ok(())
    }
}

fn check_name(name: &Word) -> Result<(), ParseError> {
    if RESERVED.contains(&name.text.as_str()) {
        return unsupported(&format!(
            "the compound command or reserved word `{}`",
            name.text
        ));
    }
    if name.expands {
        return unsupported(&format!(
            "the command name `{}` (an expansion decides what runs)",
            name.text
        ));
    }
    if let Some((var, _)) = name.text.split_once('=')
        && !var.is_empty()
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return unsupported(&format!(
            "the variable assignment `{var}=` before a command"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(line: &str) -> Vec<String> {
        parse(line)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .into_iter()
            .map(|c| c.words[0].clone())
            .collect()
    }

    fn refused(line: &str) -> String {
        match parse(line) {
            Ok(cmds) => panic!("{line} was accepted as {cmds:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn b5_every_command_of_pipelines_and_lists_is_found() {
        assert_eq!(
            names("ls -la | grep x && echo ok || rm -rf /; cat f & wc -l\nuniq"),
            ["ls", "grep", "echo", "rm", "cat", "wc", "uniq"]
        );
        assert_eq!(names("a;b"), ["a", "b"]);
    }

    #[test]
    fn b5_quotes_escapes_comments_and_redirections_are_read_like_the_shell() {
        let cmds = parse(r#"echo 'a | b' "c; $HOME" \; d 2>&1 >out.txt <in # rm -rf /"#).unwrap();
        assert_eq!(cmds.len(), 1);
        assert_eq!(cmds[0].words, ["echo", "a | b", "c; $HOME", ";", "d"]);
        assert_eq!(names("'r''m' x"), ["rm"]);
        assert_eq!(names("r\\m x"), ["rm"]);
        assert_eq!(names("echo a#b"), ["echo"]);
        assert_eq!(names("cat < x"), ["cat"]);
        assert_eq!(names(">out echo hi"), ["echo"]);
        assert_eq!(names("echo a \\\n| wc"), ["echo", "wc"]);
    }

    #[test]
    fn b5_constructs_that_cannot_be_checked_are_refused() {
        for line in [
            "echo $(rm -rf /)",
            "echo \"$(rm x)\"",
            "echo `rm x`",
            "echo \"`rm x`\"",
            "(rm x)",
            "{ rm x; }",
            "if true; then rm x; fi",
            "for f in *; do rm $f; done",
            "while true; do :; done",
            "! rm x",
            "X=1 rm x",
            "$CMD x",
            "${CMD} x",
            "\"$CMD\" x",
            "*/rm x",
            "~/bin/rm x",
            "diff <(ls) <(ls)",
            "cat <<EOF\nx\nEOF",
            "a |& b",
            "ls &> f",
            "echo $'\\x41'",
            "echo ${x:-$(rm y)}",
            "echo $((1+2))",
            "f() { rm x; }",
            "case x in x) rm;; esac",
        ] {
            let why = refused(line);
            assert!(why.contains("cannot be checked"), "{line}: {why}");
        }
    }

    #[test]
    fn b5_incomplete_lines_are_refused() {
        for line in [
            "echo 'open",
            "echo \"open",
            "ls |",
            "| ls",
            "ls && && ls",
            "ls >",
            "ls > | wc",
            "echo \\",
        ] {
            let why = refused(line);
            assert!(why.contains("cannot parse"), "{line}: {why}");
        }
    }
}
