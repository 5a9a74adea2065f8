//! What every controller shares: a run that is started again whenever it ends,
//! with exponential backoff, so no controller writes its own restart loop.

use std::future::Future;
use std::time::{Duration, Instant};

use storage::Backoff;

/// A run that lasted this long was healthy: the next restart starts from the
/// first delay again.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// Run `attempt` forever: whenever it ends (a watch fell behind, storage
/// restarted, an error) start it again after a backoff of 100 ms doubling to 30 s.
pub async fn keep_running<F, Fut>(controller: &'static str, mut attempt: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(30));
    loop {
        let started = Instant::now();
        match attempt().await {
            Ok(()) => tracing::debug!(controller, "run ended; restarting"),
            Err(error) => tracing::warn!(controller, %error, "run failed; restarting"),
        }
        if started.elapsed() >= HEALTHY_RUN {
            backoff.reset();
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn failed_runs_are_restarted_with_growing_delays() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let task = tokio::spawn(keep_running("test", move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Err("boom".to_string()) }
        }));
        // 100 + 200 + 400 + 800 ms (plus jitter) fit in 2 s; the next 1.6 s do not.
        tokio::time::sleep(Duration::from_millis(2_000)).await;
        let after_two_seconds = runs.load(Ordering::SeqCst);
        assert!(
            (4..=5).contains(&after_two_seconds),
            "{after_two_seconds} runs"
        );
        task.abort();
    }
}
