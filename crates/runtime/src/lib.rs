//! kubext's controller runtime: what every controller shares, so no controller
//! writes its own restart loop, watch loop or retry loop:
//! - `keep_running`: a run started again whenever it ends, with backoff;
//! - `reflector::Reflector`: list + watch + resume + relist on 410;
//! - `queue::WorkQueue`: deduplicated keys with per-key backoff;
//! - `run`: workers reconciling the queue's keys while feeds (`follow` a store,
//!   `follow_changes` of a watch channel, `every` interval) fill it;
//! - `leader`: which replica runs the writing controllers (a Lease), and
//!   `while_leading` to run a controller only there.
//!
//! It knows stores (`registry::GenericStore`) and storage, nothing of HTTP, CRDs
//! or webhooks, so crates that only follow stores depend on it alone.

pub mod leader;
pub mod queue;
pub mod reflector;

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use registry::{GenericStore, RequestContext};
use storage::Backoff;

pub use queue::WorkQueue;
pub use reflector::{Event, Reflector};

/// The resources a controller may act on, by plural (built-ins) or group/plural.
pub trait Resources: Send + Sync + 'static {
    fn store(&self, group: &str, plural: &str) -> Option<Arc<GenericStore>>;
    /// Every namespaced resource type currently served (one store per storage path).
    fn namespaced(&self) -> Vec<Arc<GenericStore>>;
    /// A store for objects of `kind` in `group` (any served version: they share
    /// storage).
    fn store_for_kind(&self, group: &str, kind: &str) -> Option<Arc<GenericStore>>;
}

/// The identity controllers act as.
pub fn system_context(namespace: &str, manager: &str) -> RequestContext {
    RequestContext {
        user: "system:kube-controller-manager".into(),
        groups: vec!["system:masters".into()],
        namespace: namespace.into(),
        field_manager: manager.into(),
        ..Default::default()
    }
}

/// A controller: brings one key at a time to its wanted state.
#[async_trait::async_trait]
pub trait Reconciler: Send + Sync + 'static {
    type Key: Clone + Eq + Hash + Debug + Send + Sync + 'static;

    /// Why a reconciliation failed: `run` logs it (the one place it is turned
    /// into text) and queues the key again after its backoff.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Names the controller in logs.
    fn name(&self) -> &'static str;

    /// Reconcile `key`; an error queues it again after its backoff.
    async fn reconcile(&self, key: &Self::Key) -> Result<(), Self::Error>;
}

/// A reconciler's failure known only as text: for reconcilers whose steps do
/// not return typed errors yet (rbac's and admission's rebuilds). Not for new
/// code: give the failure a type.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TextError(pub String);

/// Reconcile what `queue` holds with `workers` workers while `feed` fills it;
/// ends when `feed` does.
pub async fn run<R: Reconciler>(
    reconciler: Arc<R>,
    queue: Arc<WorkQueue<R::Key>>,
    workers: usize,
    feed: impl Future<Output = ()>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let (reconciler, queue) = (reconciler.clone(), queue.clone());
        tasks.spawn(async move {
            loop {
                let key = queue.next().await;
                match reconciler.reconcile(&key).await {
                    Ok(()) => queue.done(&key),
                    Err(error) => {
                        let delay = queue.retry(key.clone());
                        tracing::debug!(controller = reconciler.name(), ?key, %error, ?delay, "reconcile failed; retrying");
                    }
                }
            }
        });
    }
    feed.await;
    // Dropping the set stops the workers.
}

/// Queue the keys `keys` finds in each event of `store`, forever.
pub async fn follow<K: Clone + Eq + Hash + Send + 'static>(
    store: Arc<GenericStore>,
    manager: &str,
    queue: Arc<WorkQueue<K>>,
    keys: impl Fn(&Event) -> Vec<K>,
) {
    let mut reflector = Reflector::new(store, manager);
    loop {
        for key in keys(&reflector.next().await) {
            queue.add(key);
        }
    }
}

/// Queue `key` now and whenever `changes` fires; ends when its sender is gone.
pub async fn follow_changes<K: Clone + Eq + Hash + Send + 'static, T>(
    mut changes: tokio::sync::watch::Receiver<T>,
    queue: Arc<WorkQueue<K>>,
    key: K,
) {
    loop {
        queue.add(key.clone());
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// Queue `key` every `interval`, forever.
pub async fn every<K: Clone + Eq + Hash + Send + 'static>(
    interval: Duration,
    queue: Arc<WorkQueue<K>>,
    key: K,
) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        queue.add(key.clone());
    }
}

/// A run that lasted this long was healthy: the next restart starts from the
/// first delay again.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// Run `attempt` forever: whenever it ends (a watch fell behind, storage
/// restarted, an error) start it again after a backoff of 100 ms doubling to 30 s.
pub async fn keep_running<F, Fut, E>(controller: &'static str, mut attempt: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::error::Error,
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
            async { Err(std::io::Error::other("boom")) }
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
