//! [`RetryPolicy`]: how often and how long a provider waits before sending a
//! failed request again.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use toolhost_core::Backoff;

/// Bounded retries of retryable failures (see
/// [`ModelError::is_retryable`](crate::ModelError::is_retryable)):
/// 429, 5xx, 408 and transport errors. Only the sending of a request is
/// retried; once a streamed response has started, a failure ends the call
/// (its pieces may already have been passed on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Most retries after the first attempt (0 turns retrying off).
    pub max_retries: u32,
    /// The wait before the first retry when the server does not say how
    /// long; it doubles on each later retry, with up to 25 % random jitter.
    pub initial_backoff: Duration,
    /// The longest computed backoff.
    pub max_backoff: Duration,
    /// The longest `retry-after` the policy honours. A server that asks for
    /// a longer wait gets no retry: the call fails at once with the typed
    /// error (for a 429, [`ModelError::RateLimited`](crate::ModelError::RateLimited)
    /// carrying the requested wait), so the caller can decide.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// Two retries, 500 ms doubling to at most 8 s, `retry-after` up to 60 s.
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// How long to wait before retry number `retry` (from 1), given the
    /// server's `retry-after`; `None` means do not retry.
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if retry > self.max_retries {
            return None;
        }
        if let Some(wait) = retry_after {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let backoff = Backoff::new(self.initial_backoff, self.max_backoff).with_jitter(0.25);
        Some(backoff.delay(retry))
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds, sent by
/// some OpenAI-compatible servers), else `retry-after` in seconds (integer
/// or decimal) or as an HTTP date, measured against this machine's clock (a
/// date in the past means "now"). Anything else counts as absent, and the
/// policy's own backoff applies.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

/// [`retry_after`] with the current time given, so that dates can be tested.
fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    // A number too large for a `Duration` (`1e300`) counts as absent:
    // `try_from_secs_f64` refuses it where `from_secs_f64` would panic.
    let number = |name: &str, scale: f64| -> Option<Duration> {
        let v: f64 = text(name)?.parse().ok()?;
        Duration::try_from_secs_f64(v / scale).ok()
    };
    let date = || -> Option<Duration> {
        let when = httpdate::parse_http_date(text("retry-after")?).ok()?;
        Some(when.duration_since(now).unwrap_or(Duration::ZERO))
    };
    number("retry-after-ms", 1000.0)
        .or_else(|| number("retry-after", 1.0))
        .or_else(date)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn e2_retry_after_is_honoured_up_to_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(p.delay(1, Some(Duration::from_secs(600))), None);
        assert_eq!(p.delay(3, Some(Duration::from_secs(1))), None);
        assert_eq!(RetryPolicy::none().delay(1, None), None);
    }

    #[test]
    fn e2_backoff_doubles_within_its_bounds() {
        let p = RetryPolicy::default();
        let first = p.delay(1, None).unwrap();
        let second = p.delay(2, None).unwrap();
        assert!(first >= p.initial_backoff && first <= p.initial_backoff.mul_f64(1.25));
        assert!(second >= p.initial_backoff * 2 && second <= (p.initial_backoff * 2).mul_f64(1.25));
        let far = RetryPolicy {
            max_retries: 40,
            ..p
        };
        assert!(far.delay(40, None).unwrap() <= p.max_backoff.mul_f64(1.25));
    }

    #[test]
    fn e2_retry_after_headers_are_parsed() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        let then = httpdate::parse_http_date("Wed, 21 Oct 2015 07:27:30 GMT").unwrap();
        assert_eq!(retry_after_at(&date, then), Some(Duration::from_secs(30)));
        let later = then + Duration::from_secs(3600);
        assert_eq!(retry_after_at(&date, later), Some(Duration::ZERO));
        let mut junk = HeaderMap::new();
        junk.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&junk), None);
    }

    #[test]
    fn c6_retry_after_values_out_of_range_count_as_absent() {
        for (name, value) in [
            ("retry-after", "1e300"),
            ("retry-after", "-5"),
            ("retry-after", "NaN"),
            ("retry-after", "inf"),
            ("retry-after-ms", "1e300"),
            ("retry-after-ms", "-1"),
        ] {
            let mut h = HeaderMap::new();
            h.insert(name, HeaderValue::from_static(value));
            assert_eq!(retry_after(&h), None, "{name}: {value}");
        }
    }
}
