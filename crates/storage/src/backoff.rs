//! Exponential backoff with jitter, for anything that retries: the watch cache
//! reconnecting to its backend, controllers restarting.

use std::time::Duration;

/// Delays that double from `first` up to `max`, each with up to 25% jitter so
/// replicas retrying the same thing do not retry in lockstep.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Self {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// Start again from `first` (after a success).
    pub fn reset(&mut self) {
        self.next = self.first;
    }

    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (delay * 2).min(self.max);
        delay + delay.mul_f64(jitter() * 0.25)
    }
}

/// A number in [0, 1) from the process's random hasher seed (no RNG dependency).
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_cap_with_bounded_jitter_and_resets() {
        let (first, max) = (Duration::from_millis(100), Duration::from_millis(400));
        let mut b = Backoff::new(first, max);
        let delays: Vec<Duration> = (0..4).map(|_| b.next_delay()).collect();
        for (delay, base) in delays.iter().zip([100, 200, 400, 400]) {
            let base = Duration::from_millis(base);
            assert!(
                *delay >= base && *delay <= base.mul_f64(1.25),
                "{delay:?} vs {base:?}"
            );
        }
        b.reset();
        assert!(b.next_delay() <= first.mul_f64(1.25));
    }
}
