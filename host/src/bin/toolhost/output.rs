//! Where the command writes. Results go to stdout through [`outln!`]: when
//! its reader has gone away (`toolhost inspect p.wasm | head`), the write
//! fails with a broken pipe, and the command stops quietly — no panic, no
//! message, exit status 0 — as a filter killed by SIGPIPE would, without
//! dying of the signal (which would also kill a server whose client hangs
//! up). Messages go to stderr through [`errln!`], which drops what cannot be
//! written instead of panicking.

use std::fmt;
use std::io::{self, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::Failure;

/// Set once a write to stdout found its reader gone.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `args` to stdout and flushes. Fails if it cannot; when the reason
/// is a broken pipe, [`stdout_closed`] is true from then on and the failure
/// is not to be reported.
pub(crate) fn write_out(args: fmt::Arguments<'_>) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Err(Failure("stdout was closed".into()))
        }
        Err(e) => Err(Failure(format!("cannot write to stdout: {e}"))),
    }
}

/// Whether stdout's reader has gone away: the command is to stop quietly.
pub(crate) fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Writes `args` to stderr; what cannot be written is dropped.
pub(crate) fn write_err(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

/// `println!` for results: evaluates to `Result<(), Failure>` (see
/// [`write_out`]).
macro_rules! outln {
    () => {
        $crate::output::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics (see [`write_err`]).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::write_err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {errln, outln};
