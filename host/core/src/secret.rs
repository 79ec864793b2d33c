//! Secrets: values the host holds by name and never lets out in the clear
//! (rule O2).
//!
//! A [`SecretSet`] knows every secret's value in the forms it commonly
//! takes on the way out: as is, base64 and base64url (padded or not, and
//! at each of the three alignments it can have inside a longer encoded
//! text, so `Basic base64(user:secret)` is caught), hex (either case),
//! percent-encoded and JSON-escaped. [`SecretSet::redact`] replaces each
//! occurrence with `[secret NAME]`; [`SecretSet::find`] says which secret
//! some bytes carry. A plugin can always transform a value beyond
//! recognition (reverse it, split it, encrypt it): this catches carelessness
//! and the common encodings, not a determined adversary.
//!
//! Matching is one Aho-Corasick automaton over every form of every secret,
//! so its cost is linear in the text and does not grow with the number of
//! secrets (written against the `aho-corasick` crate, which the regular
//! expressions already build).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;

use crate::error::ToolError;
use crate::output::ToolOutput;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// Shortest value a secret may have: a shorter one would be found by
/// chance in ordinary text, and its encodings are too short to recognise.
pub const MIN_SECRET_BYTES: usize = 8;

/// Longest value a secret may have (64 KiB): a token or a key, not a file
/// of data. It bounds the matcher every result is scanned with.
pub const MAX_SECRET_BYTES: usize = 64 << 10;

/// One secret: its name and value. `Debug` shows the name only.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    name: String,
    value: Arc<str>,
}

impl Secret {
    /// The secret `name` with `value`, refused when the value is shorter
    /// than [`MIN_SECRET_BYTES`].
    pub fn new(name: impl Into<String>, value: impl Into<Arc<str>>) -> Result<Self, SecretError> {
        let (name, value) = (name.into(), value.into());
        if value.len() < MIN_SECRET_BYTES {
            return Err(SecretError::TooShort { name });
        }
        if value.len() > MAX_SECRET_BYTES {
            return Err(SecretError::TooLong { name });
        }
        Ok(Self { name, value })
    }

    /// The secret's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The secret's value. Hand it only to what it is granted to.
    pub fn expose(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Why a secret is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The value is too short to be told apart from ordinary text.
    #[error(
        "the value of secret `{name}` is shorter than {MIN_SECRET_BYTES} bytes, too short to be recognised and redacted"
    )]
    TooShort {
        /// The secret.
        name: String,
    },
    /// The value is longer than [`MAX_SECRET_BYTES`].
    #[error("the value of secret `{name}` is longer than {MAX_SECRET_BYTES} bytes")]
    TooLong {
        /// The secret.
        name: String,
    },
}

/// Every secret of a host, and the matcher that finds them.
#[derive(Clone, Default)]
pub struct SecretSet {
    inner: Option<Arc<Matcher>>,
}

struct Matcher {
    secrets: Vec<Secret>,
    automaton: AhoCorasick,
    /// For each pattern, the index of its secret.
    owner: Vec<usize>,
}

impl SecretSet {
    /// The set of `secrets`; empty when there are none, and then
    /// [`redact`](Self::redact) and [`find`](Self::find) cost nothing.
    pub fn new(secrets: Vec<Secret>) -> Self {
        if secrets.is_empty() {
            return Self::default();
        }
        let mut patterns = Vec::new();
        let mut owner = Vec::new();
        for (i, secret) in secrets.iter().enumerate() {
            for form in forms(secret.expose()) {
                if form.len() >= MIN_SECRET_BYTES
                    && !patterns
                        .iter()
                        .any(|p: &Vec<u8>| p.eq_ignore_ascii_case(&form))
                {
                    patterns.push(form);
                    owner.push(i);
                }
            }
        }
        // Letters in any case: hex and percent-encoding are written in
        // either case, and a guest may mix them within one value (`%2f%2F`);
        // every mix is one pattern this way, not 2^n. A value is found
        // upper- or lower-cased too, which is as much its leak.
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .ascii_case_insensitive(true)
            .build(&patterns)
            // Each value is at most MAX_SECRET_BYTES (its forms a few times
            // that), far inside what the automaton can hold.
            .expect("literal patterns of bounded size always build");
        Self {
            inner: Some(Arc::new(Matcher {
                secrets,
                automaton,
                owner,
            })),
        }
    }

    /// Whether there are no secrets.
    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// The secrets, in the order given.
    pub fn secrets(&self) -> &[Secret] {
        self.inner.as_ref().map_or(&[], |m| &m.secrets)
    }

    /// `text` with every secret, in any of the forms it knows, replaced by
    /// `[secret NAME]`.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let Some(m) = &self.inner else {
            return Cow::Borrowed(text);
        };
        let mut out = String::new();
        let mut last = 0;
        for found in m.automaton.find_iter(text) {
            out.push_str(&text[last..found.start()]);
            let secret = &m.secrets[m.owner[found.pattern().as_usize()]];
            out.push_str("[secret ");
            out.push_str(secret.name());
            out.push(']');
            last = found.end();
        }
        if last == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }

    /// Redacts `text` in place; whether anything was.
    pub fn redact_string(&self, text: &mut String) -> bool {
        match self.redact(text) {
            Cow::Owned(clean) => {
                *text = clean;
                true
            }
            Cow::Borrowed(_) => false,
        }
    }

    /// Redacts every string in `value`, object keys included; whether
    /// anything was.
    pub fn redact_json(&self, value: &mut serde_json::Value) -> bool {
        if self.is_empty() {
            return false;
        }
        match value {
            serde_json::Value::String(s) => self.redact_string(s),
            serde_json::Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, v| self.redact_json(v) | changed),
            serde_json::Value::Object(map) => {
                let entries = std::mem::take(map);
                let mut changed = false;
                for (mut k, mut v) in entries {
                    changed |= self.redact_string(&mut k);
                    changed |= self.redact_json(&mut v);
                    map.insert(k, v);
                }
                changed
            }
            _ => false,
        }
    }

    /// The first secret `bytes` carry, in any of the forms it knows.
    pub fn find(&self, bytes: &[u8]) -> Option<&Secret> {
        let m = self.inner.as_ref()?;
        let found = m.automaton.find(bytes)?;
        Some(&m.secrets[m.owner[found.pattern().as_usize()]])
    }

    /// Every secret `bytes` carry, each once, in any of the forms it knows.
    pub fn find_all(&self, bytes: &[u8]) -> Vec<&Secret> {
        let Some(m) = &self.inner else {
            return Vec::new();
        };
        let mut found: Vec<&Secret> = Vec::new();
        for hit in m.automaton.find_iter(bytes) {
            let secret = &m.secrets[m.owner[hit.pattern().as_usize()]];
            if !found.iter().any(|s| s.name() == secret.name()) {
                found.push(secret);
            }
        }
        found
    }

    /// Longest form of any secret, in bytes: a stream scanned in pieces
    /// keeps this many bytes less one from each piece for the next, so a
    /// form split across two pieces is still found.
    pub fn longest_form(&self) -> usize {
        self.inner
            .as_ref()
            .map_or(0, |m| m.automaton.max_pattern_len())
    }
}

impl PartialEq for SecretSet {
    fn eq(&self, other: &Self) -> bool {
        self.secrets() == other.secrets()
    }
}

impl fmt::Debug for SecretSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.secrets().iter().map(Secret::name).collect();
        f.debug_struct("SecretSet").field("names", &names).finish()
    }
}

impl SecretSet {
    /// `error` with every secret in its words redacted. A sandbox fault
    /// that carries one (a guest's last words, say) becomes a plain
    /// failure with the fault's redacted words.
    pub fn redact_error(&self, error: ToolError) -> ToolError {
        if self.is_empty() {
            return error;
        }
        let r = |s: String| self.redact(&s).into_owned();
        match error {
            ToolError::InvalidArguments { path, message } => ToolError::InvalidArguments {
                path: r(path),
                message: r(message),
            },
            ToolError::Rejected { hook, reason } => ToolError::Rejected {
                hook,
                reason: r(reason),
            },
            ToolError::Denied { rule, reason } => ToolError::Denied {
                rule,
                reason: r(reason),
            },
            ToolError::ApprovalRequired { hooks, question } => ToolError::ApprovalRequired {
                hooks,
                question: r(question),
            },
            ToolError::Failed { message, retryable } => ToolError::Failed {
                message: r(message),
                retryable,
            },
            ToolError::InvalidOutput { path, message } => ToolError::InvalidOutput {
                path: r(path),
                message: r(message),
            },
            over @ ToolError::OverQuota { .. } => over,
            sandbox @ ToolError::Sandbox { .. } => {
                let words = sandbox.to_string();
                match self.redact(&words) {
                    Cow::Borrowed(_) => sandbox,
                    Cow::Owned(clean) => ToolError::Failed {
                        message: clean,
                        retryable: false,
                    },
                }
            }
            other => other,
        }
    }

    /// `output` with every secret in its text redacted: every string of
    /// it, structured content and resources included. An output that
    /// cannot be rebuilt after redaction is withheld.
    pub fn redact_output(&self, output: ToolOutput) -> Result<ToolOutput, ToolError> {
        if self.is_empty() {
            return Ok(output);
        }
        let withheld = |e: serde_json::Error| ToolError::Failed {
            message: format!("the result was withheld: it could not be checked for secrets ({e})"),
            retryable: false,
        };
        let mut value = serde_json::to_value(&output).map_err(withheld)?;
        if !self.redact_json(&mut value) {
            return Ok(output);
        }
        serde_json::from_value(value).map_err(withheld)
    }
}

/// The forms a value commonly takes on the way out.
fn forms(value: &str) -> Vec<Vec<u8>> {
    let raw = value.as_bytes();
    let mut out = vec![raw.to_vec()];
    // Hex in one case: the matcher ignores case.
    out.push(hex::encode(raw).into_bytes());
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(raw).into_bytes());
    }
    // Inside a longer base64 text the value starts at one of three
    // alignments; the characters that depend only on its own bytes are
    // the same wherever it sits.
    for shift in 1..3 {
        let mut shifted = vec![0u8; shift];
        shifted.extend_from_slice(raw);
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&shifted);
            // The first characters mix in the unknown bytes before it, the
            // last ones those after it.
            let start = (shift * 8).div_ceil(6);
            let end = ((shift + raw.len()) * 8) / 6;
            if let Some(stable) = encoded.get(start..end) {
                out.push(stable.as_bytes().to_vec());
            }
        }
    }
    // Aligned at 0, the last character may mix in what follows.
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        let encoded = engine.encode(raw);
        let end = (raw.len() * 8) / 6;
        if let Some(stable) = encoded.get(..end) {
            out.push(stable.as_bytes().to_vec());
        }
    }
    // Percent-encoders differ in what they leave as is: RFC 3986's
    // unreserved characters; HTML forms and Rust's `form_urlencoded`
    // (space as `+`, `~` encoded); JavaScript's `encodeURIComponent`;
    // Python's `quote` (which keeps `/`) and `quote_plus`. The hex in any
    // case: the matcher ignores it.
    for (safe, plus) in PERCENT_ENCODERS {
        let form = percent_encode_with(raw, safe, *plus).into_bytes();
        if !out.contains(&form) {
            out.push(form);
        }
    }
    if let Ok(json) = serde_json::to_string(value) {
        let escaped = json.as_bytes()[1..json.len() - 1].to_vec();
        // Some JSON writers (PHP's, by default) also escape `/`.
        let slashes = String::from_utf8_lossy(&escaped)
            .replace('/', "\\/")
            .into_bytes();
        out.push(escaped);
        if !out.contains(&slashes) {
            out.push(slashes);
        }
    }
    // Every character as a JSON `\uXXXX` escape (a string any JSON reader
    // takes for the value itself).
    let escaped: String = value
        .encode_utf16()
        .map(|unit| format!("\\u{unit:04x}"))
        .collect();
    out.push(escaped.into_bytes());
    out
}

/// The punctuation each common percent-encoder leaves unencoded (letters
/// and digits always are), and whether it writes a space as `+`.
const PERCENT_ENCODERS: &[(&[u8], bool)] = &[
    (b"-._~", false),
    (b"*-._", true),
    (b"-_.!~*'()", false),
    (b"-_.~/", false),
    (b"-_.~", true),
];

/// `raw` percent-encoded, leaving letters, digits and `safe` as they are,
/// a space as `+` when `plus`, in lower-case hex (the matcher ignores
/// case).
fn percent_encode_with(raw: &[u8], safe: &[u8], plus: bool) -> String {
    let mut out = String::with_capacity(raw.len() * 3);
    for &b in raw {
        if b.is_ascii_alphanumeric() || safe.contains(&b) {
            out.push(char::from(b));
        } else if plus && b == b' ' {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VALUE: &str = "s3cr3t-T0ken/with+odd=chars\"";

    /// `encoded` with the two hex digits after each `%` in upper case.
    fn upper_hex(encoded: &str) -> String {
        let mut digits = 0;
        encoded
            .chars()
            .map(|c| {
                if c == '%' {
                    digits = 2;
                    c
                } else if digits > 0 {
                    digits -= 1;
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect()
    }

    fn set() -> SecretSet {
        SecretSet::new(vec![Secret::new("api", VALUE).unwrap()])
    }

    #[test]
    fn o2_a_secret_is_redacted_raw_and_in_every_common_encoding() {
        let set = set();
        let raw = VALUE.as_bytes();
        let mut encodings = vec![
            VALUE.to_owned(),
            hex::encode(raw),
            hex::encode_upper(raw),
            STANDARD.encode(raw),
            STANDARD_NO_PAD.encode(raw),
            URL_SAFE.encode(raw),
            URL_SAFE_NO_PAD.encode(raw),
        ];
        for (safe, plus) in PERCENT_ENCODERS {
            let lower = percent_encode_with(raw, safe, *plus);
            encodings.push(upper_hex(&lower));
            encodings.push(lower);
        }
        let json = serde_json::to_string(VALUE).unwrap();
        encodings.push(json[1..json.len() - 1].to_owned());
        // Inside longer encoded texts, at every alignment.
        for prefix in ["", "u:", "us:", "use:"] {
            for suffix in ["", "!", "!!", "!!!"] {
                let inner = format!("{prefix}{VALUE}{suffix}");
                encodings.push(format!("Basic {}", STANDARD.encode(&inner)));
                encodings.push(URL_SAFE_NO_PAD.encode(&inner));
            }
        }
        for text in encodings {
            let shown = format!("before {text} after");
            let clean = set.redact(&shown);
            assert!(clean.contains("[secret api]"), "{shown} -> {clean}");
            assert!(set.find(shown.as_bytes()).is_some(), "{shown}");
        }
    }

    #[test]
    fn o2_a_secret_is_found_as_each_common_library_percent_encodes_or_escapes_it() {
        // Written out by hand as each library does, not by the code above.
        let value = "k3y+abc/def~ghi jk!*'()";
        let set = SecretSet::new(vec![Secret::new("k", value).unwrap()]);
        for (library, text) in [
            // RFC 3986 unreserved only.
            ("rfc3986", "k3y%2Babc%2Fdef~ghi%20jk%21%2A%27%28%29"),
            // HTML forms, Rust's form_urlencoded: `~` encoded, space `+`.
            ("form", "k3y%2Babc%2Fdef%7Eghi+jk%21*%27%28%29"),
            // JavaScript's encodeURIComponent.
            ("encodeURIComponent", "k3y%2Babc%2Fdef~ghi%20jk!*'()"),
            // Python's quote (keeps `/`) and quote_plus.
            ("quote", "k3y%2Babc/def~ghi%20jk%21%2A%27%28%29"),
            ("quote_plus", "k3y%2Babc%2Fdef~ghi+jk%21%2A%27%28%29"),
            ("lower hex", "k3y%2babc%2fdef~ghi%20jk%21%2a%27%28%29"),
            // Hex of both cases in one value.
            ("mixed hex", "k3y%2babc%2Fdef~ghi%20jk%21%2A%27%28%29"),
            // Every character a JSON escape, in either case.
            (
                "json \\u",
                &value
                    .chars()
                    .map(|c| format!("\\u{:04X}", u32::from(c)))
                    .collect::<String>(),
            ),
            // JSON with `/` escaped (PHP).
            ("json", "k3y+abc\\/def~ghi jk!*'()"),
        ] {
            let shown = format!("?q={text}&x=1");
            assert!(set.find(shown.as_bytes()).is_some(), "{library}: {shown}");
            assert!(set.redact(&shown).contains("[secret k]"), "{library}");
        }
    }

    #[test]
    fn o2_redaction_reaches_every_string_of_a_json_value() {
        let set = set();
        let mut v = json!({"a": [VALUE, 1, {"k": format!("x{VALUE}y")}], VALUE: true});
        set.redact_json(&mut v);
        let text = v.to_string();
        assert!(!text.contains("s3cr3t"), "{text}");
        assert_eq!(v["a"][0], "[secret api]");
        assert_eq!(v["a"][2]["k"], "x[secret api]y");
    }

    #[tokio::test]
    async fn o2_a_tools_results_errors_and_progress_leave_it_redacted() {
        use crate::tool::{Arguments, CallContext, FnTool, Progress, ProgressSink, ToolSpec};
        use crate::{ToolHost, ToolOutput};
        use std::sync::Mutex;

        let host = ToolHost::builder().secrets(set()).build();
        let b64 = STANDARD.encode(format!("user:{VALUE}"));
        host.register_tool(FnTool::arc(
            ToolSpec::new("leak", "leaks", json!({"type": "object"})),
            move |ctx, args| {
                let b64 = b64.clone();
                async move {
                    if let Some(sink) = ctx.progress_sink() {
                        sink.report(Progress {
                            progress: 1.0,
                            total: None,
                            message: Some(format!("using {VALUE}")),
                        });
                    }
                    match args.to_value()["how"].as_str() {
                        Some("error") => Err(ToolError::failed(format!("bad token {VALUE}"))),
                        Some("structured") => Ok(ToolOutput::structured(
                            json!({"auth": format!("Basic {b64}"), "hex": hex::encode(VALUE)}),
                        )),
                        _ => Ok(ToolOutput::text(format!("the token is {VALUE}"))),
                    }
                }
            },
        ))
        .unwrap();
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let seen = seen.clone();
            ProgressSink::new(move |p: Progress| seen.lock().unwrap().push(p.message))
        };
        for how in ["text", "structured", "error"] {
            let ctx = CallContext::new().with_progress(sink.clone());
            let args = Arguments::parse(&json!({"how": how}).to_string()).unwrap();
            let shown = match host.invoke_tool(ctx, "leak", args).await {
                Ok(out) => serde_json::to_string(&out).unwrap(),
                Err(e) => e.to_string(),
            };
            assert!(shown.contains("[secret api]"), "{how}: {shown}");
            assert!(set().find(shown.as_bytes()).is_none(), "{how}: {shown}");
        }
        for message in seen.lock().unwrap().iter() {
            assert_eq!(message.as_deref(), Some("using [secret api]"));
        }
    }

    #[tokio::test]
    async fn o2_what_hooks_extensions_and_tool_lists_hand_back_is_redacted() {
        use crate::hook::{AfterDecision, Decision, FnAfterHook, FnBeforeHook, HookScope};
        use crate::tool::{Arguments, CallContext, FnTool, ToolSpec};
        use crate::{Extension, RegistryError, ToolHost, ToolOutput};
        use std::sync::{Arc, Mutex};

        /// An extension whose prompt is the secret.
        struct Prompting;
        #[async_trait::async_trait]
        impl Extension for Prompting {
            fn name(&self) -> &str {
                "prompting"
            }
            async fn system_prompt(&self) -> Option<String> {
                Some(format!("Sign with {VALUE}."))
            }
        }

        let name_secret = Secret::new("named", "tok_abcdefgh12345678").unwrap();
        let secrets = SecretSet::new(vec![Secret::new("api", VALUE).unwrap(), name_secret]);
        let tool = |name: &str| ToolSpec::new(name, "does it", json!({"type": "object"}));
        let host = ToolHost::builder()
            .secrets(secrets.clone())
            .before_hook(
                HookScope::Tool("rejected".into()),
                FnBeforeHook::deciding("refuser", |_| Decision::reject(format!("no {VALUE}"))),
            )
            .before_hook(
                HookScope::Tool("asked".into()),
                FnBeforeHook::deciding("asker", |_| Decision::ask(format!("send {VALUE}?"))),
            )
            .before_hook(
                HookScope::Tool("rewritten".into()),
                FnBeforeHook::deciding("rewriter", |_| {
                    Decision::Rewrite(Arguments::parse(&json!({"x": VALUE}).to_string()).unwrap())
                }),
            )
            .after_hook(
                HookScope::Tool("replaced".into()),
                FnAfterHook::deciding("replacer", |_, _| {
                    AfterDecision::Replace(Ok(ToolOutput::text(format!("it is {VALUE}"))))
                }),
            )
            .build();
        // What the tool itself was given.
        let seen = Arc::new(Mutex::new(Vec::new()));
        for name in ["rejected", "asked", "rewritten", "replaced"] {
            let seen = seen.clone();
            host.register_tool(FnTool::arc(tool(name), move |_, args: Arguments| {
                seen.lock().unwrap().push(args.as_str().to_owned());
                async { Ok(ToolOutput::text("fine")) }
            }))
            .unwrap();
        }
        // A tool that lists the secret in its description and schema.
        let listed = ToolSpec::new(
            "listed",
            format!("uses {VALUE}"),
            json!({"type": "object", "properties": {"k": {"const": VALUE}}}),
        );
        host.register_tool(FnTool::arc(listed, |_, _| async {
            Ok(ToolOutput::text(""))
        }))
        .unwrap();
        let spec = host
            .tool_specs()
            .into_iter()
            .find(|s| s.name == "listed")
            .unwrap();
        let shown = format!("{} {}", spec.description, spec.parameters);
        assert!(secrets.find(shown.as_bytes()).is_none(), "{shown}");
        assert!(shown.contains("[secret api]"), "{shown}");
        // A name cannot be redacted: refused, naming the secret, not its value.
        let err = host
            .register_tool(FnTool::arc(tool("tok_abcdefgh12345678"), |_, _| async {
                Ok(ToolOutput::text(""))
            }))
            .unwrap_err();
        assert!(matches!(err, RegistryError::SecretInName { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "a tool's name carries secret `named`; it is not registered"
        );
        // What the hooks hand back.
        for name in ["rejected", "asked", "rewritten", "replaced"] {
            let out = host
                .invoke_tool(CallContext::new(), name, Arguments::parse("{}").unwrap())
                .await;
            let shown = match &out {
                Ok(o) => serde_json::to_string(o).unwrap(),
                Err(e) => e.to_string(),
            };
            assert!(secrets.find(shown.as_bytes()).is_none(), "{name}: {shown}");
        }
        let given = seen.lock().unwrap().clone();
        assert!(
            given.iter().any(|a| a.contains("[secret api]")),
            "{given:?}"
        );
        assert!(
            secrets.find(given.concat().as_bytes()).is_none(),
            "{given:?}"
        );
        // An extension's system prompt.
        host.register_extension(Arc::new(Prompting)).await.unwrap();
        assert_eq!(host.system_prompt().await, "Sign with [secret api].");
    }

    #[test]
    fn o2_a_short_value_is_refused_and_debug_never_shows_a_value() {
        let err = Secret::new("pin", "1234").unwrap_err();
        assert!(err.to_string().contains("secret `pin`"), "{err}");
        let err = Secret::new("blob", "x".repeat(MAX_SECRET_BYTES + 1)).unwrap_err();
        assert!(matches!(err, SecretError::TooLong { .. }), "{err}");
        let s = Secret::new("api", VALUE).unwrap();
        assert!(!format!("{s:?} {:?}", set()).contains("s3cr3t"));
    }

    #[test]
    fn o2_text_without_secrets_is_untouched_and_costs_no_copy() {
        let set = set();
        assert!(matches!(set.redact("nothing here"), Cow::Borrowed(_)));
        assert!(matches!(
            SecretSet::default().redact(VALUE),
            Cow::Borrowed(_)
        ));
        assert!(SecretSet::default().find(VALUE.as_bytes()).is_none());
    }
}
