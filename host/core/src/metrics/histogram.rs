//! [`Histogram`]: a latency histogram that a call observes without a lock.
//!
//! prometheus-client's histogram takes a mutex for every observation, and
//! a call makes several (its duration and each of its stages), on every
//! call. Written here rather than taken from a crate because what it
//! needs is small and on the call path: each bucket and the sum are
//! atomics, so an observation is a search of the bucket bounds and two
//! atomic additions. The sum is kept in nanoseconds, exactly, as 128
//! bits: a low word every observation adds to, and a high word that only
//! a carry out of the low one (once per 584 years of summed time) or an
//! observation past `u64::MAX` nanoseconds adds to. (An `f64` of seconds
//! would need a compare-and-swap loop per observation, and rounds.) Its
//! count is the sum of its buckets as a scrape reads them, so the `+Inf`
//! bucket always equals the count; the sum may lag or lead the buckets by
//! the observations made during the scrape.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Latency buckets' upper bounds, in seconds: from 50 µs (an echo call's
/// stages) to a minute (a slow plugin or server). Past the last, `+Inf`.
const LATENCY_BUCKETS: [f64; 19] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The same bounds in nanoseconds, what an observation is compared with.
const BOUNDS_NANOS: [u64; 19] = [
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
    60_000_000_000,
];

/// The buckets: one per bound, then `+Inf`.
const BUCKETS: usize = BOUNDS_NANOS.len() + 1;

/// A histogram of durations over [`LATENCY_BUCKETS`]. Clones share their
/// counts (as a metric family's series do).
#[derive(Clone, Debug, Default)]
pub(crate) struct Histogram {
    inner: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// Observations per bucket (not cumulative).
    buckets: [AtomicU64; BUCKETS],
    /// The sum of every observation in nanoseconds: its low 64 bits...
    sum_low: AtomicU64,
    /// ...and its high 64 bits.
    sum_high: AtomicU64,
}

impl Histogram {
    /// Counts one observation of `took`.
    pub(crate) fn observe(&self, took: Duration) {
        let nanos = took.as_nanos();
        let (high, low) = ((nanos >> 64) as u64, nanos as u64);
        // The first bound at or above it (`le`), else `+Inf`.
        let bucket = if high == 0 {
            BOUNDS_NANOS.partition_point(|&bound| bound < low)
        } else {
            BOUNDS_NANOS.len()
        };
        self.inner.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        if low == 0 && high == 0 {
            // Nothing to add (a call that found an instance slot free
            // waited for none).
            return;
        }
        let before = self.inner.sum_low.fetch_add(low, Ordering::Relaxed);
        let carry = u64::from(before.checked_add(low).is_none());
        if high != 0 || carry != 0 {
            self.inner
                .sum_high
                .fetch_add(high.wrapping_add(carry), Ordering::Relaxed);
        }
    }

    /// The sum of every observation, in seconds. The high word is read
    /// on both sides of the low one, so that a carry made meanwhile is
    /// seen with the low word it came from.
    fn sum_secs(&self) -> f64 {
        let counts = &self.inner;
        loop {
            let high = counts.sum_high.load(Ordering::Relaxed);
            let low = counts.sum_low.load(Ordering::Relaxed);
            if counts.sum_high.load(Ordering::Relaxed) == high {
                let nanos = (u128::from(high) << 64) | u128::from(low);
                return nanos as f64 / 1e9;
            }
        }
    }

    /// The count, the sum in seconds and each bucket as (upper bound,
    /// count in it), as a scrape reads them.
    fn snapshot(&self) -> (u64, f64, [(f64, u64); BUCKETS]) {
        let mut buckets = [(f64::INFINITY, 0); BUCKETS];
        let mut count = 0;
        for (i, (bound, n)) in buckets.iter_mut().enumerate() {
            if let Some(b) = LATENCY_BUCKETS.get(i) {
                *bound = *b;
            }
            *n = self.inner.buckets[i].load(Ordering::Relaxed);
            count += *n;
        }
        (count, self.sum_secs(), buckets)
    }
}

impl TypedMetric for Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (count, sum, buckets) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x1_the_bounds_in_nanoseconds_are_the_bounds_in_seconds() {
        for (secs, nanos) in LATENCY_BUCKETS.iter().zip(BOUNDS_NANOS) {
            assert_eq!(Duration::from_secs_f64(*secs).as_nanos(), u128::from(nanos));
        }
    }

    #[test]
    fn x1_an_observation_counts_in_the_first_bucket_at_or_above_it() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(50)); // on the first bound: le 0.00005
        h.observe(Duration::from_micros(51)); // le 0.0001
        h.observe(Duration::ZERO); // le 0.00005
        h.observe(Duration::from_secs(61)); // +Inf
        h.observe(Duration::MAX); // +Inf, and no overflow of the sum
        let (count, sum, buckets) = h.snapshot();
        assert_eq!(count, 5);
        assert_eq!(buckets[0], (0.000_05, 2));
        assert_eq!(buckets[1], (0.000_1, 1));
        assert_eq!(buckets[BUCKETS - 1], (f64::INFINITY, 2));
        let least = Duration::MAX.as_secs_f64() + 61.0;
        assert!((sum - least).abs() <= least * 1e-12, "{sum}");
    }

    #[test]
    fn x1_the_sum_carries_past_64_bits_of_nanoseconds_exactly() {
        let h = Histogram::default();
        // Two observations whose nanoseconds together pass 2^64, then one
        // more: the sum is theirs, in seconds, not what is left past 2^64.
        let half = Duration::from_nanos(1 << 63);
        h.observe(half);
        h.observe(half);
        h.observe(Duration::from_nanos(1_500));
        let (count, sum, _) = h.snapshot();
        assert_eq!(count, 3);
        assert_eq!(h.inner.sum_high.load(Ordering::Relaxed), 1);
        assert_eq!(h.inner.sum_low.load(Ordering::Relaxed), 1_500);
        let want = (2f64.powi(64) + 1_500.0) / 1e9;
        assert!((sum - want).abs() <= want * 1e-15, "{sum} against {want}");
    }

    #[test]
    fn x1_clones_share_their_counts() {
        let h = Histogram::default();
        h.clone().observe(Duration::from_millis(3));
        let (count, sum, buckets) = h.snapshot();
        assert_eq!(count, 1);
        assert!((sum - 0.003).abs() < 1e-12, "{sum}");
        assert_eq!(buckets[6], (0.005, 1));
    }
}
