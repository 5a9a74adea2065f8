//! kubext's controller runtime: what every controller shares, so no controller
//! writes its own restart loop, watch loop or retry loop:
//! - `keep_running`: a run started again whenever it ends, with backoff;
//! - `reflector::Reflector`: list + watch + resume + relist on 410;
//! - `queue::WorkQueue`: deduplicated keys with per-key backoff;
//! - `run`: workers reconciling the queue's keys while feeds (`follow` a store,
//!   `follow_changes` of a watch channel, `every` interval) fill it;
//! - `keep_current`: a snapshot rebuilt after every change to its stores;
//! - `leader`: which replica runs the writing controllers (a Lease), and
//!   `while_leading` to run a controller only there.
//!
//! It knows stores (`registry::GenericStore`) and storage, nothing of HTTP, CRDs
//! or webhooks, so crates that only follow stores depend on it alone.

pub mod leader;
pub mod queue;
pub mod reflector;
#[cfg(test)]
mod testing;

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

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

    /// Whether `error` only says the work is not done yet (a namespace still
    /// holding objects), logged at debug level, rather than that something
    /// failed, logged as a warning (upstream's controllers tell the two apart
    /// the same way).
    fn in_progress(&self, _error: &Self::Error) -> bool {
        false
    }
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
                        let controller = reconciler.name();
                        if reconciler.in_progress(&error) {
                            tracing::debug!(controller, ?key, %error, ?delay, "not done yet; retrying");
                        } else {
                            tracing::warn!(controller, ?key, %error, ?delay, "reconcile failed; retrying");
                        }
                    }
                }
            }
        });
    }
    feed.await;
    // Dropping the set stops the workers.
}

/// Queue the keys `keys` finds in each event `reflector` sees, forever.
pub async fn follow<K: Clone + Eq + Hash + Send + 'static>(
    mut reflector: Reflector,
    queue: Arc<WorkQueue<K>>,
    keys: impl Fn(&Event) -> Vec<K>,
) {
    loop {
        for key in keys(&reflector.next().await) {
            queue.add(key);
        }
    }
}

/// A snapshot built from what some stores hold (RBAC's policy, admission
/// policies, webhook configurations), kept current by [`keep_current`].
#[async_trait::async_trait]
pub trait Snapshot: Send + Sync + 'static {
    type Error: std::error::Error + Send + Sync + 'static;

    /// Names the snapshot's controller in logs.
    fn name(&self) -> &'static str;

    /// Build the snapshot again from what the stores hold now.
    async fn rebuild(&self) -> Result<(), Self::Error>;
}

/// A [`Snapshot`] as a controller of one key: "rebuild".
struct Rebuilds<S>(Arc<S>);

#[async_trait::async_trait]
impl<S: Snapshot> Reconciler for Rebuilds<S> {
    type Key = ();
    type Error = S::Error;

    fn name(&self) -> &'static str {
        self.0.name()
    }

    async fn reconcile(&self, _: &()) -> Result<(), S::Error> {
        self.0.rebuild().await
    }
}

/// Rebuild `snapshot` after every change to any of `stores` (each
/// reflector's first list is a change: so it is built at once), one rebuild
/// at a time: the changes that come during one make one more. A failed
/// rebuild is tried again after `first_retry`, doubling up to 5 s. Forever.
pub async fn keep_current<S: Snapshot>(
    snapshot: Arc<S>,
    stores: Vec<Arc<GenericStore>>,
    manager: &str,
    first_retry: Duration,
) {
    let queue = WorkQueue::new(first_retry, Duration::from_secs(5));
    let mut feeds = tokio::task::JoinSet::new();
    for store in stores {
        let (queue, manager) = (queue.clone(), manager.to_owned());
        feeds.spawn(
            async move { follow(Reflector::new(store, &manager), queue, |_| vec![()]).await },
        );
    }
    let feed = async move { while feeds.join_next().await.is_some() {} };
    run(Arc::new(Rebuilds(snapshot)), queue, 1, feed).await;
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
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, thiserror::Error)]
    #[error("boom")]
    struct Boom;

    /// Counts its rebuilds; fails the next one when told to.
    #[derive(Default)]
    struct Counted {
        rebuilds: AtomicUsize,
        fail_next: std::sync::atomic::AtomicBool,
    }

    #[async_trait::async_trait]
    impl Snapshot for Counted {
        type Error = Boom;

        fn name(&self) -> &'static str {
            "counted"
        }

        async fn rebuild(&self) -> Result<(), Boom> {
            self.rebuilds.fetch_add(1, Ordering::SeqCst);
            match self.fail_next.swap(false, Ordering::SeqCst) {
                true => Err(Boom),
                false => Ok(()),
            }
        }
    }

    impl Counted {
        fn count(&self) -> usize {
            self.rebuilds.load(Ordering::SeqCst)
        }

        /// Wait (up to 10 s) until it has been rebuilt `n` times, then a
        /// little longer: the count it has settled on.
        async fn settled_at_least(&self, n: usize) -> usize {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while self.count() < n {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{} < {n}",
                    self.count()
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            self.count()
        }
    }

    /// A snapshot is built when followed, again after a change to any of its
    /// stores, and a failed rebuild is tried again with no change to prompt
    /// it; then nothing more happens.
    #[tokio::test]
    async fn keep_current_rebuilds_after_each_change_and_retries_a_failure() {
        let storage = testing::storage(1024, 1000).await;
        let configmaps = testing::core(&storage, "configmaps");
        let secrets = testing::core(&storage, "secrets");
        let snapshot = Arc::new(Counted::default());
        let task = tokio::spawn(keep_current(
            snapshot.clone(),
            vec![configmaps.clone(), secrets.clone()],
            "test",
            Duration::from_millis(10),
        ));
        // The two reflectors' first lists: one rebuild, or two.
        let started = snapshot.settled_at_least(1).await;
        assert!(started <= 2, "{started}");
        testing::create(&configmaps, "a").await;
        let changed = snapshot.settled_at_least(started + 1).await;
        assert_eq!(changed, started + 1);
        snapshot.fail_next.store(true, Ordering::SeqCst);
        testing::create(&secrets, "s").await;
        // The failed rebuild and its retry, and no more.
        assert_eq!(snapshot.settled_at_least(changed + 2).await, changed + 2);
        task.abort();
    }

    /// The time between each start and the next.
    fn gaps(starts: &[Instant]) -> Vec<Duration> {
        starts.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// `gap` is `base_ms` plus `storage::Backoff`'s jitter (up to a quarter).
    fn assert_jittered(gap: Duration, base_ms: u64) {
        let base = Duration::from_millis(base_ms);
        assert!(
            gap >= base && gap <= base.mul_f64(1.25),
            "{gap:?} is not {base:?} plus up to 25%"
        );
    }

    /// Run `keep_running` over `attempt` until it has started `runs` times;
    /// when each run started.
    async fn starts_of<F, Fut>(runs: usize, mut attempt: F) -> Vec<Instant>
    where
        F: FnMut(usize) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), Boom>> + Send + 'static,
    {
        let starts = Arc::new(Mutex::new(Vec::new()));
        let seen = starts.clone();
        let task = tokio::spawn(keep_running("test", move || {
            let run = {
                let mut starts = seen.lock().unwrap();
                starts.push(Instant::now());
                starts.len() - 1
            };
            attempt(run)
        }));
        // Paused time jumps from timer to timer while every task waits.
        while starts.lock().unwrap().len() < runs {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        task.abort();
        let starts = starts.lock().unwrap();
        starts[..runs].to_vec()
    }

    #[tokio::test(start_paused = true)]
    async fn failed_runs_restart_after_delays_doubling_from_100_ms_to_30_s() {
        let starts = starts_of(12, |_| async { Err(Boom) }).await;
        let bases = [
            100, 200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000,
        ];
        for (gap, base) in gaps(&starts).into_iter().zip(bases) {
            assert_jittered(gap, base);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_that_lasted_a_minute_starts_the_delays_again() {
        let starts = starts_of(6, |run| async move {
            if run == 3 {
                tokio::time::sleep(HEALTHY_RUN).await;
            }
            Err(Boom)
        })
        .await;
        let gaps = gaps(&starts);
        assert_jittered(gaps[0], 100);
        assert_jittered(gaps[1], 200);
        assert_jittered(gaps[2], 400);
        // The fourth run was healthy: the delay after it is the first again.
        assert_jittered(gaps[3] - HEALTHY_RUN, 100);
        assert_jittered(gaps[4], 200);
    }

    /// Fails its first `failures` reconciliations, recording when each ran.
    struct Flaky {
        failures: AtomicUsize,
        calls: Mutex<Vec<(u32, Instant)>>,
    }

    #[async_trait::async_trait]
    impl Reconciler for Flaky {
        type Key = u32;
        type Error = Boom;

        fn name(&self) -> &'static str {
            "flaky"
        }

        async fn reconcile(&self, key: &u32) -> Result<(), Boom> {
            self.calls.lock().unwrap().push((*key, Instant::now()));
            let failing = self
                .failures
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if failing { Err(Boom) } else { Ok(()) }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn run_reconciles_a_failed_key_again_after_its_backoff_until_it_succeeds() {
        let flaky = Arc::new(Flaky {
            failures: AtomicUsize::new(2),
            calls: Mutex::default(),
        });
        let queue = WorkQueue::new(Duration::from_millis(100), Duration::from_secs(1));
        queue.add(7);
        let start = Instant::now();
        // The feed ends the run after 10 s.
        run(
            flaky.clone(),
            queue,
            2,
            tokio::time::sleep(Duration::from_secs(10)),
        )
        .await;
        let calls: Vec<(u32, Duration)> = flaky
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(|(key, at)| (*key, *at - start))
            .collect();
        // Failed at 0 and 100 ms, succeeded at 300 ms (100 + 200), never again.
        assert_eq!(
            calls,
            [(7, 0), (7, 100), (7, 300)].map(|(k, ms)| (k, Duration::from_millis(ms)))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn every_queues_its_key_once_per_interval() {
        let queue = WorkQueue::new(Duration::from_millis(100), Duration::from_secs(1));
        let ticking = tokio::spawn(every(Duration::from_secs(2), queue.clone(), "tick"));
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(queue.next().await, "tick", "the first tick is at once");
        queue.done(&"tick");
        tokio::time::sleep(Duration::from_millis(1_990)).await;
        assert!(queue.is_empty());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(queue.len(), 1);
        ticking.abort();
    }
}
