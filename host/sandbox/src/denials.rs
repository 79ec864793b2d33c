//! The reasons the host refused a call's outgoing requests, kept and
//! logged within a bound (rules C3, C11).
//!
//! A refused request costs the guest one host call, so a guest can be
//! refused in a loop until its deadline, each time with a URL of up to the
//! URI's limit: the call keeps the first [`KEPT`] reasons, each cut to
//! [`REASON_BYTES`], logs only those, and counts the rest. What reaches the
//! caller (appended to the tool's failure) is then at most about 4 KiB.

/// How many refusals a call keeps (and logs) in full.
pub(crate) const KEPT: usize = 8;

/// The longest reason kept, in bytes; a longer one is cut at a character
/// boundary and marked with `…`.
pub(crate) const REASON_BYTES: usize = 512;

/// A call's refusals: the first [`KEPT`], and how many more there were.
#[derive(Debug, Default)]
pub(crate) struct Denials {
    kept: Vec<String>,
    more: usize,
}

impl Denials {
    /// Records `reason` (already redacted: cutting it first could split a
    /// secret where redaction no longer finds it). Returns the reason as
    /// kept, for the log, or `None` once [`KEPT`] are kept: the caller logs
    /// nothing more.
    pub(crate) fn record(&mut self, reason: &str) -> Option<&str> {
        if self.kept.len() == KEPT {
            self.more += 1;
            return None;
        }
        self.kept.push(cut(reason, REASON_BYTES));
        self.kept.last().map(String::as_str)
    }

    /// The reasons kept, in order, followed by a count of those not kept.
    pub(crate) fn reasons(&self) -> Vec<String> {
        let mut reasons = self.kept.clone();
        if self.more > 0 {
            reasons.push(format!("and {} more", self.more));
        }
        reasons
    }
}

/// `text` cut to at most `max` bytes at a character boundary, with `…`
/// appended when anything was cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = text.floor_char_boundary(max);
    let mut out = String::with_capacity(end + '…'.len_utf8());
    out.push_str(&text[..end]);
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c3_a_call_refused_in_a_loop_keeps_a_bounded_account() {
        let mut d = Denials::default();
        let long = format!("http://{}/: not granted", "a".repeat(1 << 20));
        let mut logged = 0;
        for _ in 0..100_000 {
            if d.record(&long).is_some() {
                logged += 1;
            }
        }
        assert_eq!(logged, KEPT);
        let reasons = d.reasons();
        assert_eq!(reasons.len(), KEPT + 1);
        assert_eq!(
            reasons.last().unwrap(),
            &format!("and {} more", 100_000 - KEPT)
        );
        let total: usize = reasons.iter().map(String::len).sum();
        assert!(total <= KEPT * (REASON_BYTES + 3) + 32, "{total} bytes");
        assert!(reasons[0].ends_with('…'));
    }

    #[test]
    fn c3_a_reason_is_cut_at_a_character_boundary() {
        let text = "é".repeat(300); // 600 bytes, two per character
        let cut = cut(&text, 511);
        assert!(cut.len() <= 511 + '…'.len_utf8());
        assert!(cut.ends_with('…'));
        assert_eq!(cut.trim_end_matches('…').chars().count(), 255);
        assert_eq!(super::cut("short", 512), "short");
    }
}
