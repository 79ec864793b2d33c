//! The CPU time a guest's code takes (rule A3), for CPU quotas.
//!
//! wasmtime runs a guest inside its future's `poll`, on the thread that
//! polls it, and a guest that computes for long yields at every epoch slice
//! ([`crate::deadline`]). So the polling thread's CPU clock, read before and
//! after each poll, counts exactly the guest's execution and the host calls
//! it makes, wherever the runtime moves the future between polls, and
//! nothing of the other tasks the thread runs in between.
//!
//! Chosen over wasmtime's fuel, which instruments every guest instruction
//! (the echo call costs more, with or without a quota), and over counting
//! epoch slices, which measures wall time in steps of a slice: a guest
//! waiting for its thread on a busy machine would be charged for the wait.
//! Two clock reads per poll, a system call each: about 1.5 µs an echo
//! call on a 2-core VM, against fuel's 4 µs (BENCHMARKS.md, "Measuring CPU
//! time for quotas"), and only for calls a CPU quota applies to.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use rustix::time::{ClockId, clock_gettime};
use toolhost_core::tool::CpuMeter;

/// The calling thread's CPU time so far.
pub(crate) fn thread_cpu() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// Runs `fut`, adding the CPU time each of its polls takes to `meter`;
/// with no meter, just runs it (no clock is read).
pub(crate) fn metered<F: Future>(meter: Option<&CpuMeter>, fut: F) -> Metered<'_, F> {
    Metered { meter, fut }
}

pin_project_lite::pin_project! {
    /// What [`metered`] returns. A future of its own rather than an `async
    /// fn`, which would hold `fut` twice (the argument and the pinned copy
    /// it polls): this wraps a guest's call, so each call's future would
    /// grow by it.
    pub(crate) struct Metered<'a, F> {
        meter: Option<&'a CpuMeter>,
        #[pin]
        fut: F,
    }
}

impl<F: Future> Future for Metered<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let Some(meter) = this.meter else {
            return this.fut.poll(cx);
        };
        let from = thread_cpu();
        let polled = this.fut.poll(cx);
        meter.add(thread_cpu().saturating_sub(from));
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a3_a_polled_computation_is_charged_and_a_wait_is_not() {
        let meter = CpuMeter::new();
        // A wait: no CPU to speak of.
        metered(Some(&meter), tokio::time::sleep(Duration::from_millis(50))).await;
        let waited = meter.total();
        // A computation of a known CPU time, in one poll.
        let spin = async {
            let from = thread_cpu();
            while thread_cpu() - from < Duration::from_millis(30) {
                std::hint::spin_loop();
            }
        };
        metered(Some(&meter), spin).await;
        let total = meter.total();
        assert!(
            waited < Duration::from_millis(30),
            "a wait was charged {waited:?}"
        );
        assert!(total - waited >= Duration::from_millis(30), "{total:?}");
    }
}
