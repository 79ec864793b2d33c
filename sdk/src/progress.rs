//! Progress of the tool call in progress.

use crate::bindings::host;

/// Tells the caller how far the current call has come: `progress` should
/// grow from one report to the next, `total` is the end if known. The host
/// forwards reports to a caller that asked for progress (an MCP client's
/// progress token) and drops them otherwise; it keeps at most 1024 per call
/// and drops reports whose numbers are not finite or whose message is over
/// the log record bound. Reports from a hook go nowhere.
pub fn report(progress: f64, total: Option<f64>, message: Option<&str>) {
    host::report_progress(progress, total, message);
}
