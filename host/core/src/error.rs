//! Typed failures of a call (rule P3) and of registration.
//!
//! A call's error never carries the tool's name: the caller knows which tool it
//! called, and every layer that reports an error (the agent, MCP, the command
//! line) adds it.

use std::sync::Arc;
use std::time::Duration;

use crate::quota::QuotaKind;
use crate::schema::SchemaError;
use crate::tool::NameError;

/// Why a call failed. Each kind is distinct so that callers, hooks and
/// providers can react to it without parsing text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool of that name is registered.
    #[error("unknown tool `{name}`")]
    UnknownTool {
        /// The name that was asked for.
        name: String,
    },
    /// The arguments are not valid JSON, do not match the tool's schema, or
    /// could not be decoded by the tool. The tool did not run (or stopped
    /// before doing anything).
    #[error("invalid arguments{}: {message}", at_path(path))]
    InvalidArguments {
        /// JSON pointer to the offending value (`""` for the whole object).
        path: String,
        /// What was wrong, in the schema's or decoder's words.
        message: String,
    },
    /// A before hook refused the call; the tool did not run.
    #[error("rejected by hook `{hook}`: {reason}")]
    Rejected {
        /// The name of the hook that refused.
        hook: String,
        /// The hook's reason.
        reason: String,
    },
    /// A declarative rule denied the call (rule O4); the tool did not run.
    #[error("denied by {rule}: {reason}")]
    Denied {
        /// The rule that decided: `rules[I]` (its index in the
        /// configuration, from 0) or `rules_default`.
        rule: String,
        /// The rule's reason, or what the rule is when it gives none.
        reason: String,
    },
    /// A before hook asked for a person's approval, and the call's approver
    /// deferred the question to the caller
    /// ([`Approval::Deferred`](crate::tool::approval::Approval::Deferred)):
    /// the tool did not run, and the caller may call again with the answer.
    #[error("approval is needed before `{hooks}` lets this call run: {question}")]
    ApprovalRequired {
        /// The hooks that asked, joined with `, `.
        hooks: String,
        /// The question to put to the person, as one paragraph
        /// ([`ApprovalRequest::question`](crate::tool::approval::ApprovalRequest::question)).
        question: String,
    },
    /// The call's deadline passed before the tool finished. The tool's
    /// future was dropped (wasm tools are interrupted by the host, and a call
    /// whose deadline passed while it waited for an instance never starts).
    #[error("{}timed out after {}", plugin_prefix(plugin), human_duration(*after))]
    Timeout {
        /// How long the call ran (or waited) before it was stopped.
        after: Duration,
        /// The sandboxed plugin (or extension) that overran, when it was one.
        plugin: Option<String>,
    },
    /// The call was cancelled by its caller before it finished.
    #[error("cancelled")]
    Cancelled,
    /// The tool ran and reported a failure of its own.
    #[error("{message}")]
    Failed {
        /// The tool's explanation.
        message: String,
        /// Whether trying again may succeed (a transient failure). Retry
        /// middleware repeats only retryable failures and timeouts.
        retryable: bool,
    },
    /// The tool ran, but its result breaks the output schema it declares
    /// (rule N2): no structured content, or content that does not match.
    #[error(
        "the result does not match the tool's output schema{}: {message}",
        at_path(path)
    )]
    InvalidOutput {
        /// JSON pointer into the structured content (`""` for the whole).
        path: String,
        /// What was wrong, in the schema's words.
        message: String,
    },
    /// A quota of the caller's tenant or of the tool's plugin had no room
    /// (rule A3): the tool did not run. Trying again after `retry_after`
    /// may succeed.
    #[error(
        "over quota: {quota} of {scope} is used up; try again in {}",
        human_duration(*retry_after)
    )]
    OverQuota {
        /// The quota.
        quota: QuotaKind,
        /// Whose quota: `tenant "t"` or `plugin "p" for tenant "t"`.
        scope: String,
        /// How long until the quota has room again.
        retry_after: Duration,
    },
    /// A sandboxed plugin broke a rule of the sandbox (trap, panic, memory
    /// or output limit, malformed result). The call fails; the host and
    /// other calls carry on.
    #[error("plugin `{plugin}` {fault}")]
    Sandbox {
        /// The plugin (or extension) that faulted.
        plugin: String,
        /// What it did.
        fault: SandboxFault,
    },
}

/// What a sandboxed plugin did wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxFault {
    /// The guest trapped (unreachable, bad memory access, stack overflow, …).
    #[error("trapped: {0}")]
    Trap(String),
    /// The guest panicked (a trap preceded by a panic message).
    #[error("panicked: {0}")]
    Panic(String),
    /// The guest ended its own instance (WASI `exit`, e.g. Rust's
    /// `std::process::exit` or Python's `os._exit`) instead of answering.
    /// WASI 0.2's `exit` carries success or failure only, so the status is
    /// 0 or 1 whatever code the guest passed.
    #[error("exited with status {0} instead of answering")]
    Exited(i32),
    /// The guest tried to grow memory or tables past its limit.
    #[error("exceeded its limit: {0}")]
    LimitExceeded(String),
    /// The guest returned something the host cannot accept.
    #[error("returned an invalid result: {0}")]
    InvalidOutput(String),
    /// The host could not run the guest (instantiation, linking).
    #[error("could not be run: {0}")]
    Host(String),
}

fn plugin_prefix(plugin: &Option<String>) -> String {
    plugin
        .as_ref()
        .map(|p| format!("plugin `{p}` "))
        .unwrap_or_default()
}

fn at_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at `{path}`")
    }
}

fn human_duration(d: Duration) -> String {
    if d.as_secs() >= 1 {
        format!("{:.2}s", d.as_secs_f64())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// A short, stable name for each error kind, for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`ToolError::UnknownTool`]
    UnknownTool,
    /// [`ToolError::InvalidArguments`]
    InvalidArguments,
    /// [`ToolError::Rejected`]
    Rejected,
    /// [`ToolError::Denied`]
    Denied,
    /// [`ToolError::ApprovalRequired`]
    ApprovalRequired,
    /// [`ToolError::Timeout`]
    Timeout,
    /// [`ToolError::Cancelled`]
    Cancelled,
    /// [`ToolError::Failed`]
    Failed,
    /// [`ToolError::Sandbox`]
    Sandbox,
    /// [`ToolError::InvalidOutput`]
    InvalidOutput,
    /// [`ToolError::OverQuota`]
    OverQuota,
}

impl ErrorKind {
    /// The kind as a snake_case word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::Rejected => "rejected",
            Self::Denied => "denied",
            Self::ApprovalRequired => "approval_required",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
            Self::Sandbox => "sandbox",
            Self::InvalidOutput => "invalid_output",
            Self::OverQuota => "over_quota",
        }
    }
}

impl ToolError {
    /// A tool's own, permanent failure.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: false,
        }
    }

    /// A tool's own failure that may go away if the call is repeated.
    pub fn transient(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: true,
        }
    }

    /// Invalid arguments at `path` (a JSON pointer).
    pub fn invalid_arguments(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArguments {
            path: path.into(),
            message: message.into(),
        }
    }

    /// A timeout after `after`, not attributed to a plugin.
    pub fn timeout(after: Duration) -> Self {
        Self::Timeout {
            after,
            plugin: None,
        }
    }

    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnknownTool { .. } => ErrorKind::UnknownTool,
            Self::InvalidArguments { .. } => ErrorKind::InvalidArguments,
            Self::Rejected { .. } => ErrorKind::Rejected,
            Self::Denied { .. } => ErrorKind::Denied,
            Self::ApprovalRequired { .. } => ErrorKind::ApprovalRequired,
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::Cancelled => ErrorKind::Cancelled,
            Self::Failed { .. } => ErrorKind::Failed,
            Self::Sandbox { .. } => ErrorKind::Sandbox,
            Self::InvalidOutput { .. } => ErrorKind::InvalidOutput,
            Self::OverQuota { .. } => ErrorKind::OverQuota,
        }
    }

    /// Whether retry middleware may try again: timeouts and failures the
    /// tool marked transient.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Timeout { .. }
                | Self::Failed {
                    retryable: true,
                    ..
                }
        )
    }
}

/// A before hook's refusal (rule P2). The pipeline turns it into
/// [`ToolError::Rejected`] naming the hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Why the call may not run.
    pub reason: String,
}

impl Rejection {
    /// A refusal with `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// Why a tool, hook or extension could not be registered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool of that name is already registered.
    #[error("a tool named `{name}` is already registered{}", by(owner))]
    DuplicateTool {
        /// The clashing name.
        name: String,
        /// The extension that owns the existing tool, if any.
        owner: Option<String>,
    },
    /// A tool's name carries a secret (rule O2): a name cannot be redacted,
    /// and would go to every caller. The name itself is not repeated.
    #[error(
        "a tool's name carries secret `{secret}`; it is not registered{}",
        of(owner)
    )]
    SecretInName {
        /// The secret's name.
        secret: String,
        /// The extension that offered the tool, if any.
        owner: Option<String>,
    },
    /// The tool's name is not acceptable.
    #[error("invalid tool name")]
    InvalidName {
        /// What is wrong with it.
        #[source]
        source: NameError,
    },
    /// The tool's parameters schema is not a valid JSON Schema.
    #[error("the parameters schema of `{tool}` does not compile")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// The schema compiler's complaint.
        #[source]
        source: SchemaError,
    },
    /// The tool's output schema is not a valid JSON Schema.
    #[error("the output schema of `{tool}` does not compile")]
    InvalidOutputSchema {
        /// The tool.
        tool: String,
        /// The schema compiler's complaint.
        #[source]
        source: SchemaError,
    },
    /// An extension of that name is already registered.
    #[error("an extension named `{name}` is already registered")]
    DuplicateExtension {
        /// The clashing name.
        name: String,
    },
    /// No extension of that name is registered.
    #[error("no extension named `{name}` is registered")]
    UnknownExtension {
        /// The name asked for.
        name: String,
    },
    /// An extension's init failed; nothing it contributes was applied.
    #[error("extension `{name}` failed to initialise")]
    ExtensionInit {
        /// The extension.
        name: String,
        /// Its error.
        #[source]
        source: InitError,
    },
    /// The host that owned this handle has been dropped.
    #[error("the host is gone")]
    HostGone,
}

/// Why an extension's [`init`](crate::Extension::init) failed: a message
/// saying what was being done, and the underlying error when there is one,
/// kept as the [`source`](std::error::Error::source) (print the whole chain
/// with [`report`]).
///
/// Cloning shares the cause; two `InitError`s are equal when their messages
/// and their causes' messages are.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct InitError {
    message: String,
    #[source]
    source: Option<Cause>,
}

impl InitError {
    /// An error with only a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// An error with a message and its cause. The message should say what
    /// was being done; the cause says what went wrong.
    pub fn with_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            message: message.into(),
            source: Some(Cause::new(source)),
        }
    }

    /// An error that takes over `error`'s own text as its message and keeps
    /// `error`'s causes as its source (see [`Cause::source_of`]): for an
    /// error that already says what was being done, so that its text is not
    /// repeated in the [`report`].
    pub fn from_error(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self {
            message: error.to_string(),
            source: Cause::source_of(error),
        }
    }
}

impl From<RegistryError> for InitError {
    fn from(err: RegistryError) -> Self {
        Self::with_source("changing the extension's tools", err)
    }
}

/// An underlying error kept as another error's
/// [`source`](std::error::Error::source), shared so that the error holding
/// it stays `Clone`. It is transparent: its text and its own source are the
/// wrapped error's. Two causes are equal when their [`report`]s are.
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Keeps `error` (any error, or a boxed one such as the conversion of
    /// an `anyhow`-style error) as a cause.
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(Arc::from(error.into()))
    }

    /// The causes of `error` without `error` itself: what a wrapper that
    /// takes over the error's own text as its message keeps as its source.
    /// `None` if `error` has no source. [`Cause::downcast_ref`] sees
    /// through to nothing here; match on `error` before wrapping it if its
    /// type matters.
    pub fn source_of(error: impl std::error::Error + Send + Sync + 'static) -> Option<Self> {
        error.source()?;
        Some(Self(Arc::new(SourceOf(Box::new(error)))))
    }

    /// The wrapped error as a `T`, if it is one (for example the
    /// `std::io::Error` behind a failed read).
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Debug for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// An error seen from its first source down (see [`Cause::source_of`]).
struct SourceOf(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for SourceOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.source() {
            Some(source) => std::fmt::Display::fmt(source, f),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for SourceOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.source() {
            Some(source) => std::fmt::Debug::fmt(source, f),
            None => Ok(()),
        }
    }
}

impl std::error::Error for SourceOf {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()?.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        report(self) == report(other)
    }
}

impl Eq for Cause {}

/// An error and its causes on one line, outermost first, joined by `: `
/// (the form a person reads in a log or an error reply).
pub fn report(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

fn of(owner: &Option<String>) -> String {
    owner
        .as_ref()
        .map(|o| format!(" (offered by extension `{o}`)"))
        .unwrap_or_default()
}

fn by(owner: &Option<String>) -> String {
    owner
        .as_ref()
        .map(|o| format!(" by extension `{o}`"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p3_each_failure_has_its_own_kind() {
        let kinds = [
            ToolError::UnknownTool { name: "x".into() }.kind(),
            ToolError::invalid_arguments("/a", "bad").kind(),
            ToolError::Rejected {
                hook: "h".into(),
                reason: "no".into(),
            }
            .kind(),
            ToolError::timeout(Duration::from_millis(5)).kind(),
            ToolError::Cancelled.kind(),
            ToolError::failed("x").kind(),
        ];
        let unique: std::collections::HashSet<_> = kinds.iter().collect();
        assert_eq!(unique.len(), kinds.len());
    }

    #[test]
    fn p3_messages_name_what_was_wrong() {
        assert_eq!(
            ToolError::invalid_arguments("/n", "\"x\" is not of type \"integer\"").to_string(),
            "invalid arguments at `/n`: \"x\" is not of type \"integer\""
        );
        assert_eq!(
            ToolError::Rejected {
                hook: "policy".into(),
                reason: "writes are off".into()
            }
            .to_string(),
            "rejected by hook `policy`: writes are off"
        );
        assert_eq!(
            ToolError::timeout(Duration::from_millis(250)).to_string(),
            "timed out after 250ms"
        );
        assert_eq!(
            ToolError::Timeout {
                after: Duration::from_millis(250),
                plugin: Some("slow".into()),
            }
            .to_string(),
            "plugin `slow` timed out after 250ms"
        );
    }

    #[test]
    fn p5_only_timeouts_and_transient_failures_are_retryable() {
        assert!(ToolError::transient("503").is_retryable());
        assert!(!ToolError::failed("404").is_retryable());
        assert!(!ToolError::Cancelled.is_retryable());
        assert!(
            !ToolError::Rejected {
                hook: "h".into(),
                reason: "r".into()
            }
            .is_retryable()
        );
    }

    #[test]
    fn p3_registration_errors_keep_their_cause_as_source() {
        use std::error::Error as _;
        let registry = crate::Registry::new();
        let tool = |name: &str, schema| {
            crate::FnTool::arc(crate::ToolSpec::new(name, "d", schema), |_, _| async {
                Ok(crate::ToolOutput::text(""))
            })
        };
        let err = registry
            .register(tool("a b", serde_json::json!({"type": "object"})))
            .unwrap_err();
        assert_eq!(err.to_string(), "invalid tool name");
        assert!(
            matches!(
                &err,
                RegistryError::InvalidName {
                    source: NameError::BadChar { ch: ' ', .. }
                }
            ),
            "{err:?}"
        );
        assert!(err.source().is_some());
        assert_eq!(
            report(&err),
            "invalid tool name: `a b` contains ' '; use ASCII letters, digits, `_`, `-` or `.`"
        );
        let err = registry
            .register(tool("odd", serde_json::json!({"type": "no-such-type"})))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the parameters schema of `odd` does not compile"
        );
        assert!(report(&err).contains("no-such-type"), "{}", report(&err));
    }

    #[test]
    fn p3_a_cause_is_transparent_and_shared() {
        use std::error::Error as _;
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let init = InitError::with_source("reading the folder", io);
        let copy = init.clone();
        assert_eq!(init, copy);
        assert_eq!(report(&copy), "reading the folder: gone");
        let cause = copy.source().unwrap();
        assert_eq!(cause.to_string(), "gone");
        let wrapped = Cause::new(std::io::Error::other("x"));
        assert_eq!(
            wrapped.downcast_ref::<std::io::Error>().map(|e| e.kind()),
            Some(std::io::ErrorKind::Other)
        );
        assert!(wrapped.downcast_ref::<std::fmt::Error>().is_none());
        assert_ne!(wrapped, Cause::new(std::io::Error::other("y")));
        let outer = InitError::with_source("outer", InitError::with_source("middle", wrapped));
        let below = Cause::source_of(outer).unwrap();
        assert_eq!(report(&below), "middle: x");
        assert!(Cause::source_of(std::io::Error::other("alone")).is_none());
    }

    #[test]
    fn an_init_error_from_an_error_takes_its_text_and_keeps_its_causes() {
        use std::error::Error as _;
        let inner = InitError::with_source("reading the folder", std::io::Error::other("gone"));
        let init = InitError::from_error(inner);
        assert_eq!(init.to_string(), "reading the folder");
        assert_eq!(
            init.source().map(|s| s.to_string()).as_deref(),
            Some("gone")
        );
        assert_eq!(report(&init), "reading the folder: gone");
        let alone = InitError::from_error(std::io::Error::other("alone"));
        assert!(alone.source().is_none());
        assert_eq!(report(&alone), "alone");
    }
}
