//! [`ConfigError`]: what is wrong with a `toolhost.toml`, by kind.
//!
//! Contract: every error names the key it concerns ([`ConfigError::key`]: a
//! dotted key such as `plugins.notes.dirs[0].host`, or the file for what
//! concerns the whole file), its text is `KEY: what is wrong`, and the
//! underlying error, when there is one, is its
//! [`source`](std::error::Error::source) rather than part of its text
//! ([`report`](toolhost_core::report) prints the whole chain). Errors are
//! `Clone` and comparable, so that a caller can keep and match them.

use std::path::PathBuf;

use toolhost_builtin::BuiltinTool;
use toolhost_core::Cause;
use toolhost_core::NameError;
use toolhost_net::RuleError;
use toolhost_sandbox::{GrantOverlap, PolicyError};

/// A configuration error: which key (or file) it concerns and what is wrong
/// with it. Variants that carry another layer's error keep it typed, or as
/// the [`source`](std::error::Error::source) when it is a cause rather than
/// the whole story.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read; the I/O error is the source.
    #[error("{key}: cannot read")]
    Unreadable {
        /// The file.
        key: String,
        /// Why (a [`std::io::Error`]).
        #[source]
        source: Cause,
    },
    /// The text is not TOML, or a value has the wrong type.
    #[error("{key}: {message}")]
    Syntax {
        /// The file, or empty for text given to [`Config::parse`](super::Config::parse).
        key: String,
        /// The line the error is on, counted from 1, when known.
        line: Option<usize>,
        /// The TOML reader's message, which shows the line.
        message: String,
    },
    /// A key no table of `toolhost.toml` has (rule W2).
    #[error("{key}: {message}")]
    UnknownKey {
        /// The file, or empty for text given to [`Config::parse`](super::Config::parse).
        key: String,
        /// The unknown key as written.
        name: String,
        /// The line the key is on, counted from 1, when known.
        line: Option<usize>,
        /// The TOML reader's message, which shows the line and the keys
        /// the table has.
        message: String,
    },
    /// A `[plugins.NAME]` or `[mcp.NAME]` table whose name cannot be a
    /// tool-name prefix.
    #[error("{key}: invalid {what} name")]
    InvalidName {
        /// `plugins.NAME` or `mcp.NAME`.
        key: String,
        /// `plugin` or `server`.
        what: &'static str,
        /// What is wrong with the name.
        #[source]
        source: NameError,
    },
    /// No table of that name.
    #[error("{key}: no such {what}")]
    NotConfigured {
        /// `plugins.NAME` or `mcp.NAME`.
        key: String,
        /// `plugin` or `MCP server`.
        what: &'static str,
    },
    /// A component file the configuration names does not exist.
    #[error("{key}: {} does not exist (build the plugins first, e.g. `make plugins`)", path.display())]
    MissingFile {
        /// The key that names the file.
        key: String,
        /// The file, resolved against the configuration's directory.
        path: PathBuf,
    },
    /// A directory the configuration names does not exist.
    #[error("{key}: directory {} does not exist", path.display())]
    MissingDirectory {
        /// The key that names the directory.
        key: String,
        /// The directory, resolved against the configuration's directory.
        path: PathBuf,
    },
    /// A plugin's file was asked for, but its `wasm` is an OCI reference.
    #[error("{key}: is an OCI reference, not a file (the plugin store holds its component)")]
    NotAFile {
        /// `plugins.NAME.wasm`.
        key: String,
    },
    /// A network grant (`hosts`, `deny_hosts`, `registry_hosts`) that does
    /// not parse.
    #[error("{key}: {error}")]
    BadGrant {
        /// The list the rule is in.
        key: String,
        /// The rule and what is wrong with it.
        error: RuleError,
    },
    /// A plugin's policy that the sandbox refuses: a limit out of range, a
    /// guest path that is relative or granted twice, an environment
    /// variable name that is not one.
    #[error("{key}: {error}")]
    BadPolicy {
        /// `plugins.NAME`.
        key: String,
        /// What the sandbox refuses.
        error: PolicyError,
    },
    /// A setting that cannot be given to a plugin (a float that is not a
    /// number JSON can hold), or settings that do not satisfy the plugin's
    /// schema (rule O1).
    #[error("{key}: {reason}")]
    BadSetting {
        /// `plugins.NAME.settings.KEY` (or `plugins.NAME.settings` for the
        /// table as a whole).
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A `[[rules]]` entry that does not compile: a bad tool pattern,
    /// glob, regular expression or JSON Pointer, an empty range (rule O4).
    #[error("{key}: invalid rule")]
    BadRule {
        /// `rules[I].tool`, `rules[I].when[J].regex`, …
        key: String,
        /// What is wrong; the glob's or regex's own error is its source.
        #[source]
        source: toolhost_core::RuleError,
    },
    /// A secret that cannot be read or used: no source or two, a file
    /// others may read, a value too short to redact, a name no
    /// `[secrets]` table has (rule O2).
    #[error("{key}: {reason}")]
    BadSecret {
        /// `secrets.NAME…` or `plugins.NAME.secrets[i]`.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A limit outside its range.
    #[error("{key}: {reason}")]
    OutOfRange {
        /// The limit's key.
        key: String,
        /// The range, and the value when it helps.
        reason: String,
    },
    /// A directory grant that is, contains or lies inside one of the host's
    /// own paths (rule C5).
    #[error("{key}: {error}")]
    ProtectedPath {
        /// `plugins.NAME.dirs`.
        key: String,
        /// Both paths, and how they overlap.
        error: GrantOverlap,
    },
    /// A `sha256` pin that is not a digest (64 hex digits).
    #[error(
        "{key}: `{pin}` is not a sha256 digest: expected 64 hex digits \
         (`toolhost inspect FILE` prints the file's)"
    )]
    BadDigest {
        /// `plugins.NAME.sha256`.
        key: String,
        /// The pin as written.
        pin: String,
    },
    /// A key set where it has no meaning (`insecure` for a file, `env` for
    /// a `url`, …).
    #[error("{key}: applies {applies_to}")]
    NotApplicable {
        /// The key.
        key: String,
        /// What the key applies to.
        applies_to: &'static str,
    },
    /// Settings that exclude each other.
    #[error("{key}: {reason}")]
    Conflict {
        /// The table or key.
        key: String,
        /// Which settings, and what to do.
        reason: &'static str,
    },
    /// Something the configuration needs and does not have.
    #[error("{key}: {reason}")]
    Required {
        /// The key to set (or the table that lacks one).
        key: String,
        /// What is needed, and why.
        reason: &'static str,
    },
    /// A value that is not one of its choices.
    #[error("{key}: `{value}` is not one of {choices}")]
    UnknownChoice {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// The choices, comma-separated.
        choices: &'static str,
    },
    /// A `[builtin] tools` entry that names no built-in tool.
    #[error("{key}: unknown tool `{name}` (known: {})", known_builtin_tools())]
    UnknownTool {
        /// `builtin.tools`.
        key: String,
        /// The name as written.
        name: String,
    },
    /// A `signed_by` entry that names no `[trust]` key.
    #[error("{key}: no key `{name}` in [trust] keys")]
    UnknownTrustKey {
        /// `plugins.NAME.signed_by[I]`.
        key: String,
        /// The key's name as written.
        name: String,
    },
    /// An environment variable the configuration reads is not set.
    #[error("{key}: the environment variable `{var}` is not set")]
    UnsetVariable {
        /// The key that names the variable.
        key: String,
        /// The variable.
        var: String,
    },
    /// A value another layer refuses (an OCI reference, an MCP server's
    /// settings): its text is the reason, its causes the source.
    #[error("{key}: {reason}")]
    Invalid {
        /// The key.
        key: String,
        /// What is wrong.
        reason: String,
        /// Why, if there is more to it.
        #[source]
        source: Option<Cause>,
    },
    /// A locked run without `toolhost.lock`.
    #[error("{key}: there is no lock file; write it with `toolhost lock`")]
    NoLockFile {
        /// The lock file's path.
        key: String,
    },
    /// The supply chain failed: the lock file or a trusted key cannot be
    /// read, a component cannot be fetched or does not match its lock, its
    /// signature does not verify.
    #[error("{key}: {reason}")]
    Supply {
        /// `plugins.NAME.wasm`, `plugins.NAME.signed_by`,
        /// `trust.keys.NAME` or the lock file.
        key: String,
        /// What failed.
        reason: String,
        /// Why.
        #[source]
        source: Option<Cause>,
    },
    /// Building the host failed: the engine, loading a plugin or an
    /// interpreter, opening the working directory, starting an MCP server.
    #[error("{key}: {reason}")]
    Build {
        /// `host`, `plugins.NAME`, `builtin.KEY` or `mcp.NAME`.
        key: String,
        /// What failed.
        reason: String,
        /// Why.
        #[source]
        source: Option<Cause>,
    },
}

impl ConfigError {
    /// The key (or file) the error concerns.
    pub fn key(&self) -> &str {
        match self {
            Self::Unreadable { key, .. }
            | Self::Syntax { key, .. }
            | Self::UnknownKey { key, .. }
            | Self::InvalidName { key, .. }
            | Self::NotConfigured { key, .. }
            | Self::MissingFile { key, .. }
            | Self::MissingDirectory { key, .. }
            | Self::NotAFile { key }
            | Self::BadGrant { key, .. }
            | Self::BadPolicy { key, .. }
            | Self::BadSetting { key, .. }
            | Self::BadSecret { key, .. }
            | Self::BadRule { key, .. }
            | Self::OutOfRange { key, .. }
            | Self::ProtectedPath { key, .. }
            | Self::BadDigest { key, .. }
            | Self::NotApplicable { key, .. }
            | Self::Conflict { key, .. }
            | Self::Required { key, .. }
            | Self::UnknownChoice { key, .. }
            | Self::UnknownTool { key, .. }
            | Self::UnknownTrustKey { key, .. }
            | Self::UnsetVariable { key, .. }
            | Self::Invalid { key, .. }
            | Self::NoLockFile { key }
            | Self::Supply { key, .. }
            | Self::Build { key, .. } => key,
        }
    }

    /// A TOML reader's error for `text`: an unknown key when serde says
    /// so, else a syntax error; the key is left empty for the caller that
    /// knows the file.
    pub(super) fn from_toml(text: &str, error: &toml::de::Error) -> Self {
        let line = error
            .span()
            .and_then(|span| text.get(..span.start))
            .map(|before| before.matches('\n').count() + 1);
        let message = error.to_string().trim_end().to_owned();
        // serde's words for a field that `deny_unknown_fields` refuses.
        let unknown = error
            .message()
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name.to_owned());
        match unknown {
            Some(name) => Self::UnknownKey {
                key: String::new(),
                name,
                line,
                message,
            },
            None => Self::Syntax {
                key: String::new(),
                line,
                message,
            },
        }
    }

    /// This error, naming `file` if it names no key (a parse error).
    pub(super) fn in_file(mut self, file: impl FnOnce() -> String) -> Self {
        if let Self::Syntax { key, .. } | Self::UnknownKey { key, .. } = &mut self
            && key.is_empty()
        {
            *key = file();
        }
        self
    }

    /// An [`Invalid`](Self::Invalid) value: `error`'s own text is the
    /// reason, its causes the source.
    pub(super) fn invalid(
        key: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        let (reason, source) = split(error);
        Self::Invalid {
            key: key.into(),
            reason,
            source,
        }
    }

    /// A [`Supply`](Self::Supply) failure: `error`'s own text is the
    /// reason, its causes the source.
    pub(super) fn supply(
        key: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        let (reason, source) = split(error);
        Self::Supply {
            key: key.into(),
            reason,
            source,
        }
    }

    /// A [`Build`](Self::Build) failure: `error`'s own text is the reason,
    /// its causes the source.
    pub(super) fn build(
        key: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        let (reason, source) = split(error);
        Self::Build {
            key: key.into(),
            reason,
            source,
        }
    }
}

/// `error`'s own text, and its causes (not itself) as a source.
fn split(error: impl std::error::Error + Send + Sync + 'static) -> (String, Option<Cause>) {
    (error.to_string(), Cause::source_of(error))
}

/// Every built-in tool's name, comma-separated.
fn known_builtin_tools() -> String {
    let known: Vec<&str> = BuiltinTool::ALL.iter().map(|t| t.name()).collect();
    known.join(", ")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::Config;
    use super::*;
    use toolhost_core::report;

    #[test]
    fn r1_config_errors_keep_their_cause_as_source() {
        use std::error::Error as _;
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("toolhost.toml");
        let err = Config::load(&missing).unwrap_err();
        assert_eq!(err.key(), missing.display().to_string());
        let ConfigError::Unreadable { source, .. } = &err else {
            panic!("not an unreadable file: {err:?}");
        };
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("the io error is the source");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert!(err.source().is_some());
        assert!(report(&err).starts_with(&format!("{}: cannot read: ", missing.display())));
        let err = Config::parse("[plugins.\"a b\"]\nwasm = \"x.wasm\"\n", dir.path()).unwrap_err();
        assert_eq!(err.key(), "plugins.a b");
        assert!(matches!(err, ConfigError::InvalidName { .. }), "{err:?}");
        assert_eq!(
            report(&err),
            "plugins.a b: invalid plugin name: `a b` contains ' '; use ASCII letters, digits, `_`, `-` or `.`"
        );
    }

    #[test]
    fn w2_a_parse_error_names_the_file_and_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("toolhost.toml");
        std::fs::write(&file, "[host]\n\ncall_timeout_ms = \"soon\"\n").unwrap();
        let err = Config::load(&file).unwrap_err();
        assert_eq!(err.key(), file.display().to_string());
        assert!(
            matches!(err, ConfigError::Syntax { line: Some(3), .. }),
            "{err:?}"
        );
        let err = Config::parse("[host]\nnope = 1\n", Path::new("/base")).unwrap_err();
        assert_eq!(err.key(), "");
        assert!(
            matches!(&err, ConfigError::UnknownKey { name, line: Some(2), .. } if name == "nope"),
            "{err:?}"
        );
    }
}
