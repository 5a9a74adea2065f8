//! Graceful termination in kube-apiserver's order, for rolling restarts behind a
//! load balancer:
//!
//! 1. **ShutdownInitiated** (the signal): `/readyz` fails its `shutdown` check
//!    at once, the pre-shutdown hooks run (a replica takes itself out of
//!    `default/kubernetes`, drops its identity Lease), and requests are served
//!    as before for `--shutdown-delay-duration`, while the balancer's health
//!    check notices.
//! 2. **NotAcceptingNewRequest** (the delay is over and the hooks are done):
//!    the listener closes (with `--shutdown-send-retry-after`: stays open,
//!    answering 429, until the in-flight requests drained), keep-alive
//!    connections close after their current response, new requests on open
//!    connections get upstream's 503 "apiserver is shutting down", and watches
//!    end cleanly (the body's last chunk), spread over at most
//!    `--shutdown-watch-termination-grace-period` so that their clients do not
//!    all re-watch on the other replicas in the same instant.
//! 3. In-flight requests finish, within `--request-timeout` (they are bounded
//!    by it anyway); connections still open after that bound (and the grace
//!    period) are dropped, storage is closed, the process exits 0.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;

/// Where the server is in its termination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    Serving = 0,
    /// Not ready; still serving (the shutdown delay).
    ShutdownInitiated = 1,
    /// No new requests; watches end; in-flight requests finish.
    NotAcceptingNewRequest = 2,
}

impl Phase {
    fn from_u8(value: u8) -> Phase {
        match value {
            0 => Phase::Serving,
            1 => Phase::ShutdownInitiated,
            _ => Phase::NotAcceptingNewRequest,
        }
    }
}

/// kube-apiserver's `--shutdown-*` flags.
#[derive(Debug, Clone, Default)]
pub struct ShutdownOptions {
    /// `--shutdown-delay-duration`: how long a terminating server stays
    /// unready but serving.
    pub delay: Duration,
    /// `--shutdown-send-retry-after`: after the delay, answer 429 with
    /// `Retry-After` (and `Connection: close`) until in-flight requests
    /// drained, instead of closing the listener at once.
    pub send_retry_after: bool,
    /// `--shutdown-watch-termination-grace-period`: the longest the ending of
    /// open watches is spread over (0: all at once).
    pub watch_termination_grace_period: Duration,
}

/// Watches are ended at this rate at least (upstream's floor when it drains
/// them over the grace period).
const WATCH_DRAIN_FLOOR_PER_SECOND: f64 = 200.0;

/// The server's phase, readable on the hot path without a lock, and the count
/// of in-flight requests that are not long-running.
pub struct Lifecycle {
    phase: AtomicU8,
    changes: watch::Sender<Phase>,
    in_flight: AtomicUsize,
    /// Over how long watches are ended, fixed when the server stops accepting.
    watch_spread: parking_lot::Mutex<Duration>,
    pub(crate) options: ShutdownOptions,
}

impl Lifecycle {
    pub fn new(options: ShutdownOptions) -> Lifecycle {
        Lifecycle {
            phase: AtomicU8::new(Phase::Serving as u8),
            changes: watch::Sender::new(Phase::Serving),
            in_flight: AtomicUsize::new(0),
            watch_spread: parking_lot::Mutex::new(Duration::ZERO),
            options,
        }
    }

    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    /// Completes once the server reached `phase`.
    pub async fn reached(&self, phase: Phase) {
        let mut changes = self.changes.subscribe();
        let _ = changes.wait_for(|p| *p >= phase).await;
    }

    /// A receiver of phase changes (for what waits on them, such as watches).
    pub(crate) fn subscribe(&self) -> watch::Receiver<Phase> {
        self.changes.subscribe()
    }

    pub(crate) fn advance(&self, to: Phase) {
        self.phase.fetch_max(to as u8, Ordering::AcqRel);
        self.changes.send_if_modified(|p| {
            let changed = *p < to;
            *p = (*p).max(to);
            changed
        });
    }

    /// Fix how long the ending of `watchers` open watches is spread over:
    /// upstream's rate (the count over the grace period, at least 200 a
    /// second), never longer than the grace period.
    pub(crate) fn spread_watch_ends(&self, watchers: usize) {
        let grace = self.options.watch_termination_grace_period;
        let at_floor = Duration::from_secs_f64(watchers as f64 / WATCH_DRAIN_FLOOR_PER_SECOND);
        *self.watch_spread.lock() = grace.min(at_floor);
    }

    /// How long after the server stops accepting this watch ends: a random
    /// point in the spread.
    pub(crate) fn watch_end_delay(&self) -> Duration {
        let spread = *self.watch_spread.lock();
        if spread.is_zero() {
            return Duration::ZERO;
        }
        let fraction = f64::from(uuid::Uuid::new_v4().as_u128() as u32) / f64::from(u32::MAX);
        spread.mul_f64(fraction)
    }

    /// Count a request that is not long-running until the guard drops.
    pub(crate) fn track(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(&self.in_flight)
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }
}

/// One in-flight request that is not long-running.
pub(crate) struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Health probes and metrics scrapes are answered to the end (upstream's
/// `isRequestExemptFromRetryAfter`), as are other kube-apiservers' requests.
pub(crate) fn exempt(path: &str, user_agent: Option<&str>) -> bool {
    ["/readyz", "/livez", "/healthz", "/metrics"]
        .iter()
        .any(|p| path.starts_with(p))
        || user_agent.is_some_and(|ua| ua.starts_with("kube-apiserver/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_only_advance() {
        let lifecycle = Lifecycle::new(ShutdownOptions::default());
        assert_eq!(lifecycle.phase(), Phase::Serving);
        lifecycle.advance(Phase::NotAcceptingNewRequest);
        lifecycle.advance(Phase::ShutdownInitiated);
        assert_eq!(lifecycle.phase(), Phase::NotAcceptingNewRequest);
        assert_eq!(
            *lifecycle.subscribe().borrow(),
            Phase::NotAcceptingNewRequest
        );
    }

    #[test]
    fn watch_ends_are_spread_at_upstreams_rate_within_the_grace_period() {
        let lifecycle = Lifecycle::new(ShutdownOptions {
            watch_termination_grace_period: Duration::from_secs(10),
            ..Default::default()
        });
        lifecycle.spread_watch_ends(100);
        assert_eq!(*lifecycle.watch_spread.lock(), Duration::from_millis(500));
        assert!(lifecycle.watch_end_delay() <= Duration::from_millis(500));
        lifecycle.spread_watch_ends(1_000_000);
        assert_eq!(*lifecycle.watch_spread.lock(), Duration::from_secs(10));
        let at_once = Lifecycle::new(ShutdownOptions::default());
        at_once.spread_watch_ends(1_000_000);
        assert_eq!(at_once.watch_end_delay(), Duration::ZERO);
    }

    #[test]
    fn probes_and_other_apiservers_are_exempt() {
        assert!(exempt("/readyz", None));
        assert!(exempt("/livez/ping", None));
        assert!(exempt("/metrics", Some("curl")));
        assert!(exempt("/api/v1/pods", Some("kube-apiserver/v1.37.2")));
        assert!(!exempt("/api/v1/pods", Some("kubectl/v1.37.2")));
    }
}
