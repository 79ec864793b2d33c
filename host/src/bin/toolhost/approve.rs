//! Asking at the terminal whether a call may run (rule P7): the approver of
//! `toolhost call` and `toolhost agent`.
//!
//! The question goes to the controlling terminal (`/dev/tty`), not to
//! stdout or stdin, so it reaches the person even when the command's
//! output is piped or its arguments come from stdin, and never mixes with
//! the result. With no controlling terminal (a service, CI) the call is
//! denied; `[host] approvals = "allow"` approves without asking.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::sync::Arc;

use async_trait::async_trait;
use toolhost::{Approval, ApprovalRequest, Approver};

/// Longest excerpt of a call's arguments shown in the question.
const SHOWN_ARGUMENTS: usize = 400;

/// Longest answer read; the rest of a longer line is ignored.
const MAX_ANSWER: usize = 256;

/// How often the terminal is looked at while waiting for an answer.
const POLL: std::time::Duration = std::time::Duration::from_millis(30);

/// The terminal's turn: whoever holds it is asking the person.
pub(crate) type Turn = Arc<tokio::sync::Mutex<()>>;

/// Asks on the terminal, one question at a time: calls that ask at once
/// wait their turn, so answers never cross.
pub(crate) struct TerminalApprover {
    turn: Turn,
}

impl TerminalApprover {
    /// An approver taking turns on the terminal with whatever shares `turn`
    /// (the [`TerminalElicitor`](crate::elicit::TerminalElicitor)).
    pub(crate) fn new(turn: Turn) -> Arc<Self> {
        Arc::new(Self { turn })
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let _turn = self.turn.lock().await;
        let question = format!("\n{} [y/N] ", request.question(SHOWN_ARGUMENTS));
        match ask(&question).await {
            Ok(answer) if is_yes(&answer) => Approval::Approved,
            Ok(_) => Approval::denied("declined at the terminal"),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Approval::denied("the terminal closed before an answer came")
            }
            Err(_) => Approval::denied(
                "there is no terminal to ask (set `approvals = \"allow\"` in [host] to approve such calls without asking)",
            ),
        }
    }
}

/// `y` or `yes`, in any case, with spaces around.
fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Writes `question` to the terminal and reads one line back. Dropping the
/// future (the approval's timeout) stops the read: the terminal is read
/// without blocking, so no thread is left waiting on it.
pub(crate) async fn ask(question: &str) -> io::Result<String> {
    let reader = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open("/dev/tty")?;
    // What was typed before the question is not its answer.
    discard_pending(&reader);
    let mut writer = OpenOptions::new().write(true).open("/dev/tty")?;
    writer.write_all(question.as_bytes())?;
    writer.flush()?;
    let mut line = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        match (&reader).read(&mut buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                let chunk = &buf[..n];
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(end) => {
                        line.extend_from_slice(&chunk[..end]);
                        break;
                    }
                    None if line.len() < MAX_ANSWER => line.extend_from_slice(chunk),
                    None => {}
                }
            }
            // Nothing typed yet: look again shortly. A person types slowly;
            // polling keeps the read cancellable without a blocked thread
            // or an unsafe registration of the descriptor.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                tokio::time::sleep(POLL).await;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    line.truncate(MAX_ANSWER);
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// Reads and drops whatever is waiting on the terminal.
fn discard_pending(reader: &File) {
    let mut buf = [0u8; 256];
    while matches!((&*reader).read(&mut buf), Ok(n) if n > 0) {}
}

#[cfg(test)]
mod tests {
    use super::is_yes;

    #[test]
    fn p7_only_yes_approves() {
        for yes in ["y", "Y", " yes ", "YES"] {
            assert!(is_yes(yes), "{yes}");
        }
        for no in ["", "n", "no", "yess", "sure", "y y"] {
            assert!(!is_yes(no), "{no}");
        }
    }
}
