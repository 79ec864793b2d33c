//! [`Histogram`]: a latency histogram that a call observes without a lock.
//!
//! prometheus-client's histogram takes a mutex for every observation, and
//! a call makes several (its duration and each of its stages), on every
//! call. Written here rather than taken from a crate because what it
//! needs is small and on the call path: each bucket and the sum are
//! atomics, so an observation is a search of the bucket bounds, an atomic
//! addition and a compare-and-swap of the sum (an `f64`, which neither
//! wraps nor loses a long-lived server's total as integer nanoseconds
//! would). Its count is the sum of its buckets as a scrape reads
//! them, so the `+Inf` bucket always equals the count; the sum may lag or
//! lead the buckets by the observations made during the scrape.

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
    /// The sum of every observation, in seconds (an `f64`'s bits).
    sum: AtomicU64,
}

impl Histogram {
    /// Counts one observation of `took`.
    pub(crate) fn observe(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        // The first bound at or above it (`le`), else `+Inf`.
        let bucket = BOUNDS_NANOS.partition_point(|&bound| bound < nanos);
        self.inner.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        if took.is_zero() {
            // Nothing to add (a call that found an instance slot free
            // waited for none): no compare-and-swap.
            return;
        }
        let secs = took.as_secs_f64();
        // The closure always returns Some: this cannot fail.
        let _ = self
            .inner
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + secs).to_bits())
            });
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
        let sum = f64::from_bits(self.inner.sum.load(Ordering::Relaxed));
        (count, sum, buckets)
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
        assert!(sum >= Duration::MAX.as_secs_f64(), "{sum}");
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
