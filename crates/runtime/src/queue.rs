//! The work queue: keys waiting to be reconciled, each at most once in the
//! queue and never reconciled by two workers at once (a key added while it is
//! being worked on is queued again when that work is done), with per-key
//! exponential backoff for keys whose reconciliation failed (client-go's
//! rate-limited queue).

use foldhash::{HashMap, HashSet};
use std::collections::VecDeque;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    first_retry: Duration,
    max_retry: Duration,
}

struct State<K> {
    order: VecDeque<K>,
    queued: HashSet<K>,
    processing: HashSet<K>,
    /// Added while processing: queued again by `done`.
    again: HashSet<K>,
    /// Consecutive failures per key.
    failures: HashMap<K, u32>,
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    /// Failed keys come back after `first_retry`, doubling per consecutive
    /// failure up to `max_retry`.
    pub fn new(first_retry: Duration, max_retry: Duration) -> Arc<Self> {
        Arc::new(WorkQueue {
            state: Mutex::new(State {
                order: VecDeque::new(),
                queued: HashSet::default(),
                processing: HashSet::default(),
                again: HashSet::default(),
                failures: HashMap::default(),
            }),
            ready: Notify::new(),
            first_retry,
            max_retry,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // No code panics while holding it; a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue `key` unless it is queued already.
    pub fn add(&self, key: K) {
        let mut state = self.lock();
        if state.processing.contains(&key) {
            state.again.insert(key);
        } else if state.queued.insert(key.clone()) {
            state.order.push_back(key);
            drop(state);
            self.ready.notify_one();
        }
    }

    /// The next key to work on; call `done` (or `retry`) when finished with it.
    pub async fn next(&self) -> K {
        loop {
            let ready = self.ready.notified();
            {
                let mut state = self.lock();
                if let Some(key) = state.order.pop_front() {
                    state.queued.remove(&key);
                    state.processing.insert(key.clone());
                    let more = !state.order.is_empty();
                    drop(state);
                    if more {
                        // Wake the next worker too.
                        self.ready.notify_one();
                    }
                    return key;
                }
            }
            ready.await;
        }
    }

    /// `key` was reconciled: forget its failures.
    pub fn done(&self, key: &K) {
        let requeue = {
            let mut state = self.lock();
            state.failures.remove(key);
            state.processing.remove(key);
            state.again.remove(key)
        };
        if requeue {
            self.add(key.clone());
        }
    }

    /// Reconciling `key` failed: queue it again after its backoff.
    pub fn retry(self: &Arc<Self>, key: K) -> Duration {
        let delay = {
            let mut state = self.lock();
            state.processing.remove(&key);
            state.again.remove(&key);
            let failures = state.failures.entry(key.clone()).or_insert(0);
            let delay = self
                .first_retry
                .saturating_mul(1 << (*failures).min(20))
                .min(self.max_retry);
            *failures += 1;
            delay
        };
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(queue) = queue.upgrade() {
                queue.add(key);
            }
        });
        delay
    }

    /// How many keys wait (not counting those being worked on).
    pub fn len(&self) -> usize {
        self.lock().order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> Arc<WorkQueue<&'static str>> {
        WorkQueue::new(Duration::from_millis(100), Duration::from_secs(1))
    }

    #[tokio::test]
    async fn a_key_is_queued_once() {
        let q = queue();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(q.next().await, "a");
        assert_eq!(q.next().await, "b");
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn a_key_added_while_processed_comes_back_after_done() {
        let q = queue();
        q.add("a");
        let key = q.next().await;
        q.add("a");
        // Not handed to a second worker while the first holds it.
        assert!(q.is_empty());
        q.done(&key);
        assert_eq!(q.len(), 1);
        assert_eq!(q.next().await, "a");
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_per_key_and_success_resets() {
        let q = queue();
        q.add("a");
        let mut delays = Vec::new();
        for _ in 0..5 {
            let key = q.next().await;
            delays.push(q.retry(key));
        }
        assert_eq!(
            delays,
            [100, 200, 400, 800, 1000]
                .map(Duration::from_millis)
                .to_vec()
        );
        // Another key is not slowed by "a"'s failures.
        q.add("b");
        assert_eq!(q.next().await, "b");
        q.done(&"b");
        // After a success the backoff starts again.
        let key = q.next().await;
        q.done(&key);
        q.add("a");
        let key = q.next().await;
        assert_eq!(q.retry(key), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn a_retried_key_returns_after_its_delay() {
        let q = queue();
        q.add("a");
        let key = q.next().await;
        q.retry(key);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(q.is_empty());
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_that_fails_after_being_added_again_waits_for_its_backoff() {
        let q = queue();
        q.add("a");
        let key = q.next().await;
        // Changed while being worked on, but the work failed: its backoff, not
        // the change, decides when it comes back.
        q.add("a");
        q.retry(key);
        assert!(q.is_empty());
        tokio::time::sleep(Duration::from_millis(99)).await;
        assert!(q.is_empty());
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_added_while_it_waits_out_its_backoff_is_queued_once() {
        let q = queue();
        q.add("a");
        let key = q.next().await;
        q.retry(key);
        // A new change queues it at once...
        q.add("a");
        assert_eq!(q.len(), 1);
        // ...and the retry that comes due while it waits adds nothing.
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(q.len(), 1);
        assert_eq!(q.next().await, "a");
        assert!(q.is_empty());
    }
}
