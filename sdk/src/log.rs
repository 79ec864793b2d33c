//! Logging to the host, and the call's remaining time.

use crate::bindings::host;

pub use crate::bindings::host::LogLevel as Level;

/// Writes a structured line to the host's log, tagged with the plugin's
/// name. The host bounds each record (message and fields together, 8 KiB by
/// default) and the log volume of a call (256 KiB by default): a record past
/// either bound fails the call, naming the bound.
pub fn log(level: Level, message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<(String, String)> = fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    host::log(level, message, &fields);
}

/// Logs at info level.
pub fn info(message: &str) {
    log(Level::Info, message, &[]);
}

/// Logs at warn level.
pub fn warn(message: &str) {
    log(Level::Warn, message, &[]);
}

/// Milliseconds left before the host stops the current call, if it has a
/// deadline.
pub fn remaining_ms() -> Option<u64> {
    host::remaining_ms()
}
