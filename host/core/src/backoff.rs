//! [`Backoff`]: the one exponential backoff the host uses, for the retry
//! middleware and for the model providers' retries.

use std::time::Duration;

/// Waits that start at `initial`, double on each retry up to `max`, and add
/// up to `jitter` (a fraction of the wait, 0 for none) at random, so that
/// many clients failing together do not retry together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    jitter: f64,
}

impl Backoff {
    /// `initial` doubling up to `max` (raised to `initial` if below it), no
    /// jitter.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max: max.max(initial),
            jitter: 0.0,
        }
    }

    /// Adds up to `fraction` of each wait at random; clamped to `0..=1`
    /// (a NaN counts as 0).
    pub fn with_jitter(mut self, fraction: f64) -> Self {
        self.jitter = if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 1.0)
        };
        self
    }

    /// The wait before retry number `retry` (the first retry is 1; 0 counts
    /// as 1). Never above `max` plus its jitter, and never overflows.
    pub fn delay(&self, retry: u32) -> Duration {
        let doublings = retry.saturating_sub(1).min(31);
        let exp = self.initial.saturating_mul(1u32 << doublings).min(self.max);
        if self.jitter == 0.0 {
            return exp;
        }
        exp + exp.mul_f64(rand::random::<f64>() * self.jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p5_backoff_doubles_up_to_its_cap_and_never_overflows() {
        let b = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
        let waits: Vec<u128> = (1..=8).map(|r| b.delay(r).as_millis()).collect();
        assert_eq!(waits, [50, 100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(b.delay(0), Duration::from_millis(50));
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(2));
        let huge = Backoff::new(Duration::MAX, Duration::MAX);
        assert_eq!(huge.delay(40), Duration::MAX);
        // A cap below the first wait is raised to it.
        let low = Backoff::new(Duration::from_secs(1), Duration::from_millis(1));
        assert_eq!(low.delay(3), Duration::from_secs(1));
    }

    #[test]
    fn p5_jitter_stays_within_its_fraction() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(1)).with_jitter(0.25);
        for retry in 1..=6 {
            let base =
                Backoff::new(Duration::from_millis(100), Duration::from_secs(1)).delay(retry);
            for _ in 0..50 {
                let d = b.delay(retry);
                assert!(d >= base && d <= base.mul_f64(1.25), "{d:?} vs {base:?}");
            }
        }
        let nan =
            Backoff::new(Duration::from_millis(10), Duration::from_secs(1)).with_jitter(f64::NAN);
        assert_eq!(nan.delay(1), Duration::from_millis(10));
    }
}
