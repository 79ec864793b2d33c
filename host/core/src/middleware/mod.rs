//! Built-in middleware: deadlines ([`Timeout`]), bounded retries ([`Retry`]),
//! structured logging without payloads ([`Logging`]) and audit records with a
//! redaction point ([`Audit`]).
//!
//! Middleware registered first wraps everything registered after it. A usual
//! stack is `Logging`, then `Retry`, then `Timeout`: each attempt gets its own
//! deadline and the log line covers the whole call.

mod audit;
mod logging;
mod retry;
mod timeout;

pub use audit::{Audit, AuditOutcome, AuditRecord, AuditSink, RedactKeys, Redactor};
pub use logging::Logging;
pub use retry::Retry;
pub use timeout::Timeout;
