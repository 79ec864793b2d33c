//! [`TraceContext`]: W3C trace context (`traceparent`, `tracestate`) and
//! baggage as a call receives and passes them on (rule X2).
//!
//! What comes from outside is read by the W3C rules and never trusted: a
//! `traceparent` of the wrong length, with upper-case or non-hex digits,
//! an all-zero trace or parent id, or version `ff` is ignored (and its
//! `tracestate` with it); a `tracestate` keeps at most 32 well-formed
//! members and 512 characters, members longer than 128 characters going
//! first; baggage keeps at most 64 well-formed members and 8192 bytes.
//! Values far past those sizes are dropped unread. Nothing here fails or
//! panics on any input.

use std::fmt;
use std::sync::Arc;

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

/// The most `tracestate` members kept (W3C: 32).
const STATE_MEMBERS: usize = 32;
/// The most characters of `tracestate` passed on (W3C: at least 512).
const STATE_CHARS: usize = 512;
/// A `tracestate` member longer than this goes first when truncating.
const STATE_MEMBER_CHARS: usize = 128;
/// The most baggage members kept (W3C baggage: 64).
const BAGGAGE_MEMBERS: usize = 64;
/// The most bytes of baggage passed on (W3C baggage: 8192).
const BAGGAGE_BYTES: usize = 8192;
/// A header value longer than this is dropped without being read.
const UNREAD_PAST: usize = 4 * BAGGAGE_BYTES;

/// A call's place in a distributed trace: the trace, the span it is a
/// child of, whether it is sampled, and the vendors' `tracestate` and
/// baggage to pass on, all already bounded. Cheap to clone.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: TraceId,
    span_id: SpanId,
    flags: TraceFlags,
    state: Option<Arc<str>>,
    baggage: Option<Arc<str>>,
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Baggage is the caller's and may carry anything: shown by size.
        f.debug_struct("TraceContext")
            .field("traceparent", &self.traceparent())
            .field("tracestate", &self.state)
            .field(
                "baggage_bytes",
                &self.baggage.as_ref().map_or(0, |b| b.len()),
            )
            .finish()
    }
}

impl TraceContext {
    /// Reads W3C trace context: `traceparent`, with the `tracestate` and
    /// `baggage` that came beside it. `None` when `traceparent` is absent
    /// or malformed; a malformed `tracestate` or baggage member is left
    /// out, and either is truncated to its bounds.
    pub fn from_w3c(
        traceparent: &str,
        tracestate: Option<&str>,
        baggage: Option<&str>,
    ) -> Option<Self> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent)?;
        Some(Self {
            trace_id,
            span_id,
            flags,
            state: tracestate.and_then(clean_tracestate).map(Arc::from),
            baggage: baggage.and_then(clean_baggage).map(Arc::from),
        })
    }

    /// The context of `span` (one of this host's), carrying on this
    /// context's baggage.
    pub fn for_span(&self, span: &SpanContext) -> Self {
        Self::of_span(span, self.baggage.clone())
    }

    /// The context of `span`, with `baggage` (already bounded).
    pub(crate) fn of_span(span: &SpanContext, baggage: Option<Arc<str>>) -> Self {
        let state = span.trace_state().header();
        Self {
            trace_id: span.trace_id(),
            span_id: span.span_id(),
            flags: span.trace_flags(),
            state: (!state.is_empty()).then(|| Arc::from(state)),
            baggage,
        }
    }

    /// The context of a sampled span `span_id` of `trace_id` whose parent
    /// came with `incoming`: its trace state and baggage carry on as they
    /// came (shared, not parsed again).
    pub(crate) fn sampled_span(
        trace_id: TraceId,
        span_id: SpanId,
        incoming: Option<&TraceContext>,
    ) -> Self {
        Self {
            trace_id,
            span_id,
            flags: TraceFlags::SAMPLED,
            state: incoming.and_then(|tc| tc.state.clone()),
            baggage: incoming.and_then(|tc| tc.baggage.clone()),
        }
    }

    /// The `traceparent` to send on: version 00, this context's trace,
    /// span and flags.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id,
            self.span_id,
            self.flags.to_u8()
        )
    }

    /// The `tracestate` to send on, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The baggage to send on, if any.
    pub fn baggage(&self) -> Option<&str> {
        self.baggage.as_deref()
    }

    /// The baggage as kept, for a child context.
    pub(crate) fn baggage_shared(&self) -> Option<Arc<str>> {
        self.baggage.clone()
    }

    /// The trace this context belongs to.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// The span a call in this context is a child of.
    pub fn span_id(&self) -> SpanId {
        self.span_id
    }

    /// Whether the caller sampled the trace.
    pub fn sampled(&self) -> bool {
        self.flags.is_sampled()
    }

    /// This context as OpenTelemetry's remote parent span context.
    pub fn to_span_context(&self) -> SpanContext {
        remote_span_context(
            self.trace_id,
            self.span_id,
            self.flags,
            self.state.as_deref(),
        )
    }

    /// What a span of this trace needs of this context as its parent.
    pub(crate) fn as_parent(&self) -> ParentSpan {
        ParentSpan {
            span_id: self.span_id,
            flags: self.flags,
            state: self.state.clone(),
        }
    }
}

/// A trace context as the parent of a span of the same trace: its span,
/// flags and trace state, without the trace id (the span's own) nor the
/// baggage (not the span's to record). Half a [`TraceContext`]'s size,
/// for the records a traced call hands to the finisher.
#[derive(Clone)]
pub(crate) struct ParentSpan {
    span_id: SpanId,
    flags: TraceFlags,
    state: Option<Arc<str>>,
}

impl ParentSpan {
    /// The parent as OpenTelemetry's remote parent span context, in the
    /// trace `trace_id`.
    pub(crate) fn to_span_context(&self, trace_id: TraceId) -> SpanContext {
        remote_span_context(trace_id, self.span_id, self.flags, self.state.as_deref())
    }
}

/// A remote span context, its `tracestate` parsed (an unparsable one is
/// left out).
fn remote_span_context(
    trace_id: TraceId,
    span_id: SpanId,
    flags: TraceFlags,
    state: Option<&str>,
) -> SpanContext {
    let state = state
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    SpanContext::new(trace_id, span_id, flags, true, state)
}

/// `version-traceid-parentid-flags`, by the W3C rules: version 00 is
/// exactly 55 characters; a later version may be longer, with a `-` after
/// the flags; `ff` is invalid; ids are lower-case hex and not all zero.
fn parse_traceparent(value: &str) -> Option<(TraceId, SpanId, TraceFlags)> {
    let value = value.trim_matches([' ', '\t']);
    let b = value.as_bytes();
    if b.len() < 55 || b.len() > 512 {
        return None;
    }
    let version = hex_u8(&b[0..2])?;
    if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
        return None;
    }
    if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return None;
    }
    let trace = hex_bytes::<16>(&b[3..35])?;
    let span = hex_bytes::<8>(&b[36..52])?;
    let flags = hex_u8(&b[53..55])?;
    if trace == [0; 16] || span == [0; 8] {
        return None;
    }
    // Of the flags only `sampled` is known; a later version's others are
    // not passed on as if understood.
    let flags = if version == 0 { flags } else { flags & 1 };
    Some((
        TraceId::from_bytes(trace),
        SpanId::from_bytes(span),
        TraceFlags::new(flags),
    ))
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn hex_u8(pair: &[u8]) -> Option<u8> {
    Some(hex_digit(pair[0])? << 4 | hex_digit(pair[1])?)
}

fn hex_bytes<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = hex_u8(pair)?;
    }
    Some(out)
}

/// A `tracestate` key: `lcalpha *(lcalpha / digit / _ - * /)` up to 256,
/// or `tenant@system` (tenant up to 241 starting with lcalpha or digit,
/// system up to 14 starting with lcalpha).
fn state_key(key: &str) -> bool {
    let ok = |c: u8| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/');
    match key.split_once('@') {
        None => {
            key.len() <= 256
                && key.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
                && key.bytes().all(ok)
        }
        Some((tenant, system)) => {
            (1..=241).contains(&tenant.len())
                && (1..=14).contains(&system.len())
                && tenant
                    .as_bytes()
                    .first()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && system
                    .as_bytes()
                    .first()
                    .is_some_and(u8::is_ascii_lowercase)
                && tenant.bytes().all(ok)
                && system.bytes().all(ok)
        }
    }
}

/// A `tracestate` value: 1 to 256 printable ASCII characters but `,` and
/// `=`, not ending in a space.
fn state_value(value: &str) -> bool {
    (1..=256).contains(&value.len())
        && !value.ends_with(' ')
        && value
            .bytes()
            .all(|c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
}

/// The well-formed members of `value`, at most 32 and 512 characters,
/// long members dropped first, then members from the end.
fn clean_tracestate(value: &str) -> Option<String> {
    if value.len() > UNREAD_PAST {
        return None;
    }
    let mut members: Vec<&str> = Vec::new();
    for member in value.split(',') {
        let member = member.trim_matches([' ', '\t']);
        let Some((key, val)) = member.split_once('=') else {
            continue;
        };
        // A key seen before: the first stands.
        if state_key(key)
            && state_value(val)
            && !members
                .iter()
                .any(|m| m.split_once('=').is_some_and(|(k, _)| k == key))
        {
            members.push(member);
        }
        if members.len() == STATE_MEMBERS {
            break;
        }
    }
    let total = |m: &[&str]| m.iter().map(|s| s.len()).sum::<usize>() + m.len().saturating_sub(1);
    if total(&members) > STATE_CHARS {
        members.retain(|m| m.len() <= STATE_MEMBER_CHARS);
    }
    while total(&members) > STATE_CHARS {
        members.pop();
    }
    (!members.is_empty()).then(|| members.join(","))
}

/// A baggage key: an HTTP token.
fn baggage_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
}

/// A baggage value (with any properties): printable ASCII but spaces,
/// `"`, `,` and `\`.
fn baggage_value(value: &str) -> bool {
    value
        .bytes()
        .all(|c| (0x21..=0x7e).contains(&c) && c != b'"' && c != b',' && c != b'\\' || c == b' ')
}

/// The well-formed members of `value`, at most 64 and 8192 bytes.
fn clean_baggage(value: &str) -> Option<String> {
    if value.len() > UNREAD_PAST {
        return None;
    }
    let mut out = String::new();
    let mut kept = 0;
    for member in value.split(',') {
        let member = member.trim_matches([' ', '\t']);
        let Some((key, val)) = member.split_once('=') else {
            continue;
        };
        if !baggage_key(key.trim_end()) || !baggage_value(val) {
            continue;
        }
        let extra = member.len() + usize::from(kept > 0);
        if out.len() + extra > BAGGAGE_BYTES {
            break;
        }
        if kept > 0 {
            out.push(',');
        }
        out.push_str(member);
        kept += 1;
        if kept == BAGGAGE_MEMBERS {
            break;
        }
    }
    (kept > 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn x2_a_well_formed_traceparent_is_read_and_written_back() {
        let tc = TraceContext::from_w3c(GOOD, Some("congo=t61rcWkgMzE"), Some("k=v")).unwrap();
        assert_eq!(tc.traceparent(), GOOD);
        assert_eq!(tc.tracestate(), Some("congo=t61rcWkgMzE"));
        assert_eq!(tc.baggage(), Some("k=v"));
        assert!(tc.sampled());
        let sc = tc.to_span_context();
        assert!(sc.is_valid() && sc.is_remote());
        assert_eq!(sc.trace_state().get("congo"), Some("t61rcWkgMzE"));
    }

    #[test]
    fn x2_hostile_traceparents_are_ignored() {
        let long = format!("{GOOD}-{}", "a".repeat(100_000));
        for bad in [
            "",
            "00",
            "garbage",
            // Wrong length, too short and too long for version 00.
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            // Bad hex, upper case.
            "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333z-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0x",
            // All-zero ids.
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            // Version ff.
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            // Wrong separators.
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331-01",
            // A multi-byte character where a digit belongs.
            "00-0af7651916cd43dd8448eb211c8031é-b7ad6b7169203331-01",
            long.as_str(),
        ] {
            assert!(
                TraceContext::from_w3c(bad, Some("a=b"), Some("k=v")).is_none(),
                "{bad:.80}"
            );
        }
    }

    #[test]
    fn x2_a_later_version_is_read_by_its_first_four_fields() {
        let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03-what-comes-next";
        let tc = TraceContext::from_w3c(later, None, None).unwrap();
        assert_eq!(tc.traceparent(), GOOD);
    }

    #[test]
    fn x2_a_huge_tracestate_is_truncated_or_dropped_never_an_error() {
        // 10 KB of well-formed members: kept to 32 members and 512 chars.
        let members: Vec<String> = (0..1000).map(|i| format!("k{i}=v{i}")).collect();
        let big = members.join(",");
        assert!(big.len() > 8_000);
        let tc = TraceContext::from_w3c(GOOD, Some(&big), None).unwrap();
        let kept = tc.tracestate().unwrap();
        assert!(kept.len() <= STATE_CHARS, "{}", kept.len());
        assert!(kept.split(',').count() <= STATE_MEMBERS);
        assert!(kept.starts_with("k0=v0,k1=v1"));
        // One member of 10 KB: dropped.
        let one = format!("k={}", "v".repeat(10_000));
        let tc = TraceContext::from_w3c(GOOD, Some(&one), None).unwrap();
        assert_eq!(tc.tracestate(), None);
        // Far too long to read at all.
        let huge = "a=b,".repeat(100_000);
        let tc = TraceContext::from_w3c(GOOD, Some(&huge), None).unwrap();
        assert_eq!(tc.tracestate(), None);
        // Long members go before short ones.
        let x = "x".repeat(200);
        let mixed = format!("l1={x},a=1,l2={x},l3={x},b=2");
        let tc = TraceContext::from_w3c(GOOD, Some(&mixed), None).unwrap();
        assert_eq!(tc.tracestate(), Some("a=1,b=2"));
    }

    #[test]
    fn x2_malformed_tracestate_members_are_left_out() {
        let tc = TraceContext::from_w3c(
            GOOD,
            Some("UPPER=x, ok=1,=nokey,nokey,bad=a=b, dup=1,dup=2,t@s=2,x=\u{7f}"),
            None,
        )
        .unwrap();
        assert_eq!(tc.tracestate(), Some("ok=1,dup=1,t@s=2"));
        let none = TraceContext::from_w3c(GOOD, Some(",,, ,"), None).unwrap();
        assert_eq!(none.tracestate(), None);
    }

    #[test]
    fn x2_baggage_is_bounded_in_members_and_bytes() {
        let many: Vec<String> = (0..500).map(|i| format!("k{i}=v{i}")).collect();
        let tc = TraceContext::from_w3c(GOOD, None, Some(&many.join(","))).unwrap();
        assert_eq!(tc.baggage().unwrap().split(',').count(), BAGGAGE_MEMBERS);
        let fat: Vec<String> = (0..10)
            .map(|i| format!("k{i}={}", "v".repeat(2000)))
            .collect();
        let tc = TraceContext::from_w3c(GOOD, None, Some(&fat.join(","))).unwrap();
        assert!(tc.baggage().unwrap().len() <= BAGGAGE_BYTES);
        let tc =
            TraceContext::from_w3c(GOOD, None, Some("a b=1,\"q\"=2,ok=1;prop=x,bad=\\")).unwrap();
        assert_eq!(tc.baggage(), Some("ok=1;prop=x"));
        // Debug shows the baggage's size, not its contents.
        assert!(!format!("{tc:?}").contains("prop"));
    }
}
