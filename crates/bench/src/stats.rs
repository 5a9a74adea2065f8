//! Latency samples and the bounded concurrent load loop every phase uses.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Sorted latency samples.
#[derive(Debug, Clone, Default)]
pub struct Latencies(Vec<Duration>);

impl Latencies {
    pub fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        Latencies(samples)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Nearest-rank percentile (`q` in 0..=1); `None` without samples.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.0.is_empty() {
            return None;
        }
        let rank = (q * self.0.len() as f64).ceil() as usize;
        self.0.get(rank.clamp(1, self.0.len()) - 1).copied()
    }

    pub fn p50(&self) -> Option<Duration> {
        self.quantile(0.50)
    }

    pub fn p99(&self) -> Option<Duration> {
        self.quantile(0.99)
    }
}

/// One completed request of a [`run`].
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// The request's index (0..count).
    pub index: usize,
    pub start: Instant,
    /// When the answer arrived (the "ack" for writes).
    pub end: Instant,
}

/// What a [`run`] did.
#[derive(Debug, Default)]
pub struct RunResult {
    /// Successful requests.
    pub samples: Vec<Sample>,
    /// Failed or timed-out requests.
    pub errors: usize,
    /// The first error, for the report.
    pub first_error: Option<String>,
    /// Wall time of the whole run.
    pub elapsed: Duration,
    /// The run stopped at its deadline before issuing every request.
    pub cut_short: bool,
}

impl RunResult {
    pub fn ops_per_sec(&self) -> Option<f64> {
        let secs = self.elapsed.as_secs_f64();
        (!self.samples.is_empty() && secs > 0.0).then(|| self.samples.len() as f64 / secs)
    }

    pub fn latencies(&self) -> Latencies {
        Latencies::new(self.samples.iter().map(|s| s.end - s.start).collect())
    }
}

/// Issue requests `0..count` from `concurrency` tasks, each request under
/// `per_request` timeout; no new request starts after `budget` has elapsed.
pub async fn run<F, Fut>(
    count: usize,
    concurrency: usize,
    budget: Duration,
    per_request: Duration,
    request: F,
) -> RunResult
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let request = Arc::new(request);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + budget;
    let mut tasks = Vec::new();
    for _ in 0..concurrency.clamp(1, count.max(1)) {
        let request = request.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut out = RunResult::default();
            loop {
                if Instant::now() >= deadline {
                    out.cut_short = true;
                    break;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    break;
                }
                let start = Instant::now();
                let outcome = tokio::time::timeout(per_request, request(index)).await;
                let end = Instant::now();
                let failure = match outcome {
                    Ok(Ok(())) => {
                        out.samples.push(Sample { index, start, end });
                        continue;
                    }
                    Ok(Err(e)) => format!("{e:#}"),
                    Err(_) => format!("timed out after {per_request:?}"),
                };
                out.errors += 1;
                out.first_error.get_or_insert(failure);
            }
            out
        }));
    }
    let mut total = RunResult::default();
    for task in tasks {
        match task.await {
            Ok(part) => {
                total.samples.extend(part.samples);
                total.errors += part.errors;
                total.cut_short |= part.cut_short;
                if total.first_error.is_none() {
                    total.first_error = part.first_error;
                }
            }
            Err(e) => {
                total.errors += 1;
                total
                    .first_error
                    .get_or_insert(format!("load task failed: {e}"));
            }
        }
    }
    total.elapsed = started.elapsed();
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let l = Latencies::new((1..=100).rev().map(Duration::from_millis).collect());
        assert_eq!(l.p50(), Some(Duration::from_millis(50)));
        assert_eq!(l.p99(), Some(Duration::from_millis(99)));
        assert_eq!(l.quantile(1.0), Some(Duration::from_millis(100)));
        assert_eq!(Latencies::default().p50(), None);
    }

    #[tokio::test]
    async fn run_is_bounded_by_count() {
        let r = run(
            10,
            3,
            Duration::from_secs(5),
            Duration::from_secs(1),
            |i| async move {
                anyhow::ensure!(i != 4, "boom");
                Ok(())
            },
        )
        .await;
        assert_eq!(r.samples.len(), 9);
        assert_eq!(r.errors, 1);
        assert!(!r.cut_short);
    }
}
