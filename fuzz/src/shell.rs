//! `run_shell`'s command line: the parser and the allow/block policy.

use std::path::Path;

use toolhost_builtin::shell::{CommandPolicy, CommandRefused, parse};

/// A command line checked under an allowlist or a blocklist (the first
/// byte chooses).
///
/// Must hold: no panic; every command of an accepted line is allowed by
/// name (on the allowlist; under the blocklist, neither it nor its base
/// name is blocked); and a refused line stays refused when it is put in a
/// list or a pipeline with a harmless command, before or after it.
pub fn shell_line(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(line) = std::str::from_utf8(rest) else {
        return;
    };
    const ALLOW: &[&str] = &["ls", "echo", "cat", "true", "grep"];
    const BLOCK: &[&str] = &["rm", "curl", "sh", "bash", "python3"];
    let allowlist = mode & 1 == 1;
    let policy = if allowlist {
        CommandPolicy::open().allow(ALLOW.iter().copied())
    } else {
        CommandPolicy::open().block(BLOCK.iter().copied())
    };
    match policy.check_line(line) {
        Ok(()) => {
            let commands = parse(line).expect("an accepted line parses");
            for c in commands {
                let name = c.words.first().expect("a command has a name");
                if allowlist {
                    assert!(ALLOW.contains(&name.as_str()), "`{name}` ran from `{line}`");
                } else {
                    let base = Path::new(name).file_name().and_then(|b| b.to_str());
                    assert!(
                        !BLOCK.contains(&name.as_str())
                            && !base.is_some_and(|b| BLOCK.contains(&b)),
                        "`{name}` ran from `{line}`"
                    );
                }
            }
        }
        // A line refused for a command it names (not one that does not
        // parse: `\` followed by more text is another line altogether).
        Err(
            CommandRefused::Blocked { .. }
            | CommandRefused::NotAllowed { .. }
            | CommandRefused::Runner { .. }
            | CommandRefused::Uncheckable { .. },
        ) => {
            for wrapped in [
                format!("true; {line}"),
                format!("true && {line}"),
                format!("echo x | {line}"),
                format!("{line} | cat"),
            ] {
                assert!(
                    policy.check_line(&wrapped).is_err(),
                    "`{line}` is refused but `{wrapped}` is not"
                );
            }
        }
        Err(_) => {}
    }
}
