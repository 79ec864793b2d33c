//! Allow and block lists of command names (rule B5) — a policy aid that
//! keeps an agent to the commands its host expects, not isolation: an
//! allowed program can still do anything its arguments ask for.

use std::collections::BTreeSet;
use std::path::Path;

use super::parse::{ParseError, parse};

/// Why a command policy refused a command line or program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandRefused {
    /// The line does not parse, or uses constructs that cannot be checked.
    #[error(transparent)]
    Unparseable(#[from] ParseError),
    /// The line holds no command.
    #[error("the command line has no command")]
    NoCommand,
    /// `argv` is empty.
    #[error("argv is empty")]
    EmptyArgv,
    /// The program is on the blocklist (by its name or its path).
    #[error("`{name}` is on the blocklist")]
    Blocked {
        /// The program as written.
        name: String,
    },
    /// The program runs commands given as text (`eval`, `exec`, `.`, …),
    /// which no list can check.
    #[error("`{name}` runs commands that cannot be checked against the command lists")]
    Uncheckable {
        /// The program as written.
        name: String,
    },
    /// An allowlist is set and does not name the program.
    #[error("`{name}` is not on the allowlist")]
    NotAllowed {
        /// The program as written.
        name: String,
    },
    /// Only a blocklist is set and the program runs other programs
    /// (`xargs`, `sh`, …), which a blocklist cannot check.
    #[error(
        "`{name}` runs other commands, which a blocklist cannot check; use an allowlist that names it"
    )]
    Runner {
        /// The program as written.
        name: String,
    },
}

/// Builtins that run text or commands given to them, so a list cannot
/// check what they run. Refused whenever a list is set.
const UNCHECKABLE: &[&str] = &[
    "eval", "exec", "source", ".", "command", "builtin", "trap", "fc",
];

/// Programs whose job is to run another program (or a script). Under a
/// blocklist alone they are refused, since they would run a blocked
/// command; under an allowlist they run only if listed.
const RUNNERS: &[&str] = &[
    "env", "xargs", "sudo", "doas", "su", "nohup", "nice", "ionice", "timeout", "stdbuf", "setsid",
    "chroot", "unshare", "nsenter", "flock", "watch", "strace", "ltrace", "busybox", "sh", "bash",
    "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh",
];

/// Which commands the shell tool may run. With neither list set, every
/// command line runs unchecked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandPolicy {
    allow: Option<BTreeSet<String>>,
    block: BTreeSet<String>,
}

impl CommandPolicy {
    /// No lists: everything runs.
    pub fn open() -> Self {
        Self::default()
    }

    /// Only the listed commands run. An entry without `/` matches a command
    /// name written without a path (looked up on the minimal `PATH`); an
    /// entry with `/` matches exactly that path.
    pub fn allow<S: Into<String>>(mut self, commands: impl IntoIterator<Item = S>) -> Self {
        self.allow
            .get_or_insert_with(BTreeSet::new)
            .extend(commands.into_iter().map(Into::into));
        self
    }

    /// The listed commands never run, however they are spelled (`rm`,
    /// `/bin/rm`, `'r'm`).
    pub fn block<S: Into<String>>(mut self, commands: impl IntoIterator<Item = S>) -> Self {
        self.block.extend(commands.into_iter().map(Into::into));
        self
    }

    /// Whether any list is set (and command lines are therefore parsed and
    /// checked).
    pub fn is_checked(&self) -> bool {
        self.allow.is_some() || !self.block.is_empty()
    }

    /// Checks a shell command line: every command of every pipeline and
    /// list. An unparseable line, or one using constructs that cannot be
    /// checked, is refused when a list is set.
    pub fn check_line(&self, line: &str) -> Result<(), CommandRefused> {
        if !self.is_checked() {
            return Ok(());
        }
        let commands = parse(line)?;
        if commands.is_empty() {
            return Err(CommandRefused::NoCommand);
        }
        commands
            .iter()
            .try_for_each(|c| self.check_name(&c.words[0]))
    }

    /// Checks a program run without a shell (`argv[0]`).
    pub fn check_argv(&self, argv: &[String]) -> Result<(), CommandRefused> {
        match argv.first() {
            None => Err(CommandRefused::EmptyArgv),
            Some(_) if !self.is_checked() => Ok(()),
            Some(name) => self.check_name(name),
        }
    }

    fn check_name(&self, name: &str) -> Result<(), CommandRefused> {
        let name_owned = || name.to_owned();
        let base = Path::new(name)
            .file_name()
            .and_then(|b| b.to_str())
            .unwrap_or(name);
        if self.block.contains(name) || self.block.contains(base) {
            return Err(CommandRefused::Blocked { name: name_owned() });
        }
        if UNCHECKABLE.contains(&base) {
            return Err(CommandRefused::Uncheckable { name: name_owned() });
        }
        match &self.allow {
            Some(allow) if !allow.contains(name) => {
                Err(CommandRefused::NotAllowed { name: name_owned() })
            }
            Some(_) => Ok(()),
            None if RUNNERS.contains(&base) => Err(CommandRefused::Runner { name: name_owned() }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b5_allowlist_checks_every_command_of_a_line() {
        let p = CommandPolicy::open().allow(["ls", "grep", "echo", "/opt/tool"]);
        assert!(p.check_line("ls -la | grep x && echo ok").is_ok());
        assert!(p.check_line("/opt/tool x").is_ok());
        let err = p.check_line("ls | grep x; rm -rf /").unwrap_err();
        assert_eq!(err, CommandRefused::NotAllowed { name: "rm".into() });
        assert_eq!(err.to_string(), "`rm` is not on the allowlist");
        let err = p.check_line("echo ok & /bin/ls").unwrap_err();
        assert_eq!(err.to_string(), "`/bin/ls` is not on the allowlist");
        assert!(p.check_line("env rm x").is_err());
        assert!(p.check_argv(&["grep".into(), "x".into()]).is_ok());
        assert!(p.check_argv(&["rm".into()]).is_err());
    }

    #[test]
    fn b5_blocklist_matches_however_the_command_is_spelled() {
        let p = CommandPolicy::open().block(["rm"]);
        assert!(p.check_line("ls | wc -l").is_ok());
        for line in [
            "rm x",
            "echo a; rm x",
            "/bin/rm x",
            "'r'm x",
            "ls && \\rm x",
            "true || rm x",
        ] {
            assert_eq!(
                p.check_line(line).unwrap_err().to_string(),
                format!(
                    "`{}` is on the blocklist",
                    if line.contains("/bin/rm") {
                        "/bin/rm"
                    } else {
                        "rm"
                    }
                ),
                "{line}"
            );
        }
        let err = p.check_line("xargs rm < list").unwrap_err();
        assert!(matches!(err, CommandRefused::Runner { .. }), "{err}");
        let err = p.check_line("sh -c 'rm x'").unwrap_err();
        assert!(err.to_string().contains("runs other commands"), "{err}");
        assert!(p.check_argv(&["/usr/bin/rm".into()]).is_err());
    }

    #[test]
    fn b5_eval_and_friends_are_refused_when_a_list_is_set() {
        let p = CommandPolicy::open().allow(["eval", "exec", "echo"]);
        for line in [
            "eval 'rm x'",
            "echo; exec rm x",
            ". ./script",
            "command rm x",
        ] {
            assert!(p.check_line(line).is_err(), "{line}");
        }
        let err = p.check_line("echo $(rm x)").unwrap_err();
        assert!(err.to_string().contains("cannot be checked"), "{err}");
        let err = p.check_line("echo 'open").unwrap_err();
        assert!(matches!(err, CommandRefused::Unparseable(_)), "{err}");
        assert!(err.to_string().contains("cannot parse"), "{err}");
    }

    #[test]
    fn b5_without_lists_nothing_is_parsed() {
        let p = CommandPolicy::open();
        assert!(!p.is_checked());
        assert!(p.check_line("echo $(date) `id`; eval x").is_ok());
    }
}
