//! Leader election over a `coordination.k8s.io/v1` Lease, as client-go's
//! leaderelection does: when several kubext replicas share one etcd, each of
//! kubext's writing controllers runs in one of them.
//!
//! Expiry is judged by when this replica last *saw the lease change*, on its own
//! clock, never by comparing timestamps written by other machines (clock skew).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::{Resources, system_context};

const MANAGER: &str = "kubext-leader-election";

/// kube-controller-manager's `--leader-elect-lease-duration`,
/// `--leader-elect-renew-deadline` and `--leader-elect-retry-period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// How long a lease not renewed keeps others out.
    pub lease_duration: Duration,
    /// How long a leader that cannot renew keeps leading.
    pub renew_deadline: Duration,
    /// How often candidates try, and the leader renews.
    pub retry_period: Duration,
}

impl Default for Timings {
    /// client-go's (and kube-controller-manager's) defaults.
    fn default() -> Self {
        Timings {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

pub struct LeaderElection<R: Resources> {
    pub resources: Arc<R>,
    /// Who this replica is in `spec.holderIdentity`.
    pub identity: String,
    pub namespace: String,
    pub name: String,
    pub timings: Timings,
    /// Held by a round and by [`LeaderElection::release`]; true once released.
    pub released: tokio::sync::Mutex<bool>,
}

/// Whether this replica leads; follow it with [`while_leading`].
pub type Leadership = watch::Receiver<bool>;

impl<R: Resources> LeaderElection<R> {
    /// Try to acquire, then keep renewing, until released; `leading` says the
    /// outcome.
    pub async fn run(self: Arc<Self>, leading: watch::Sender<bool>) {
        let mut observed: Option<(Value, Instant)> = None;
        let mut last_renew: Option<Instant> = None;
        loop {
            let round = {
                let released = self.released.lock().await;
                if *released {
                    leading.send_if_modified(|l| std::mem::replace(l, false));
                    return;
                }
                self.try_acquire_or_renew(&mut observed).await
            };
            match round {
                Ok(true) => {
                    last_renew = Some(Instant::now());
                    if !*leading.borrow() {
                        tracing::info!(identity = %self.identity, lease = %self.name, "became the leader");
                    }
                    leading.send_if_modified(|l| !std::mem::replace(l, true));
                }
                Ok(false) => {
                    if *leading.borrow() {
                        tracing::warn!(identity = %self.identity, lease = %self.name, "lost the lease");
                    }
                    leading.send_if_modified(|l| std::mem::replace(l, false));
                }
                Err(e) => {
                    tracing::warn!(error = %e, lease = %self.name, "leader election: cannot reach the lease");
                    // A leader that cannot renew within the deadline steps down
                    // before anyone else may take over.
                    if last_renew.is_none_or(|t| t.elapsed() > self.timings.renew_deadline) {
                        leading.send_if_modified(|l| std::mem::replace(l, false));
                    }
                }
            }
            tokio::time::sleep(self.timings.retry_period).await;
        }
    }

    /// Stop taking part and, if this replica holds the lease, give it up so
    /// another takes over at its next try instead of after the lease runs out
    /// (client-go's `ReleaseOnCancel`, which kube-controller-manager sets).
    pub async fn release(&self) {
        let mut released = self.released.lock().await;
        *released = true;
        let Some(leases) = self.resources.store("coordination.k8s.io", "leases") else {
            return;
        };
        let ctx = system_context(&self.namespace, MANAGER);
        let Ok(current) = leases.get(&ctx, &self.name).await else {
            return;
        };
        let mut lease = current.to_value();
        if lease
            .pointer("/spec/holderIdentity")
            .and_then(Value::as_str)
            != Some(&self.identity)
        {
            return;
        }
        let now = micro_time();
        lease["spec"] = json!({
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": lease.pointer("/spec/leaseTransitions").cloned().unwrap_or(json!(0)),
        });
        match leases.update(&ctx, &self.name, lease).await {
            Ok(_) => {
                tracing::info!(identity = %self.identity, lease = %self.name, "released the lease")
            }
            Err(e) => tracing::warn!(error = %e, lease = %self.name, "cannot release the lease"),
        }
    }

    /// One round: `Ok(true)` when this replica holds the lease afterwards.
    async fn try_acquire_or_renew(
        &self,
        observed: &mut Option<(Value, Instant)>,
    ) -> Result<bool, apimachinery::StatusError> {
        let leases = self
            .resources
            .store("coordination.k8s.io", "leases")
            .ok_or_else(|| apimachinery::StatusError::internal("leases are not served"))?;
        let ctx = system_context(&self.namespace, MANAGER);
        let now = micro_time();
        let current = match leases.get(&ctx, &self.name).await {
            Ok(lease) => lease.to_value(),
            Err(e) if e.code() == 404 => {
                let lease = json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self.spec(&now, &now, 0),
                });
                return match leases.create(&ctx, lease).await {
                    Ok(created) => {
                        *observed = Some((created.value()["spec"].clone(), Instant::now()));
                        Ok(true)
                    }
                    Err(e) if e.code() == 409 => Ok(false),
                    Err(e) => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        let spec = current.get("spec").cloned().unwrap_or(json!({}));
        if observed.as_ref().is_none_or(|(seen, _)| *seen != spec) {
            *observed = Some((spec.clone(), Instant::now()));
        }
        let holder = spec["holderIdentity"].as_str().unwrap_or_default();
        let duration = spec["leaseDurationSeconds"]
            .as_u64()
            .map_or(self.timings.lease_duration, Duration::from_secs);
        let unchanged_for = observed
            .as_ref()
            .map_or(Duration::ZERO, |(_, at)| at.elapsed());
        if !holder.is_empty() && holder != self.identity && unchanged_for < duration {
            return Ok(false);
        }
        let (acquired, transitions) = if holder == self.identity {
            (
                spec["acquireTime"].as_str().unwrap_or(&now).to_string(),
                spec["leaseTransitions"].as_i64().unwrap_or(0),
            )
        } else {
            (
                now.clone(),
                spec["leaseTransitions"].as_i64().unwrap_or(0) + 1,
            )
        };
        let mut next = current.clone();
        next["spec"] = self.spec(&acquired, &now, transitions);
        match leases.update(&ctx, &self.name, next).await {
            Ok(updated) => {
                *observed = Some((updated.value()["spec"].clone(), Instant::now()));
                Ok(true)
            }
            // Someone else wrote first (resourceVersion precondition).
            Err(e) if e.code() == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn spec(&self, acquired: &str, renewed: &str, transitions: i64) -> Value {
        json!({
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.timings.lease_duration.as_secs(),
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        })
    }
}

/// `metav1.MicroTime`: RFC 3339 with microseconds.
fn micro_time() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// This host's name, as `os.Hostname` reads it.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "kubext".into())
}

/// A replica's identity: host name and a random suffix (upstream's
/// `hostname_uuid`).
pub fn identity() -> String {
    format!("{}_{}", hostname(), uuid::Uuid::new_v4())
}

/// Run `controller` while this replica leads; stop it when leadership is lost and
/// start it afresh when regained.
///
/// The controller runs as a task of its own: the events it follows wake it,
/// not this one. (Polled here, inside a `select!` with the leadership, every
/// event it was woken for would also look at the leadership and draw the
/// `select!`'s random order: a few hundred instructions per write for each
/// controller following it.)
pub async fn while_leading<F, Fut>(mut leadership: Leadership, name: &str, controller: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        if leadership.wait_for(|l| *l).await.is_err() {
            return;
        }
        tracing::debug!(controller = name, "starting (leading)");
        let mut running = Running(tokio::spawn(controller()));
        let ended = tokio::select! {
            ended = &mut running.0 => Some(ended),
            _ = leadership.wait_for(|l| !*l) => None,
        };
        match ended {
            // A panic goes on from here, as it did from the controller
            // polled in place.
            Some(Err(error)) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Some(_) => return,
            None => {
                // Stopped before it may start afresh.
                running.0.abort();
                let _ = (&mut running.0).await;
                tracing::info!(controller = name, "stopped: no longer the leader");
            }
        }
    }
}

/// A controller's task, stopped when this is dropped (with the
/// [`while_leading`] that started it).
struct Running(tokio::task::JoinHandle<()>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the controller's starts and how many run now.
    #[derive(Default)]
    struct Runs {
        started: AtomicUsize,
        running: AtomicUsize,
    }

    struct Counted(Arc<Runs>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.running.fetch_sub(1, Ordering::SeqCst);
        }
    }

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_controller_runs_only_while_leading() {
        let (leading, leadership) = watch::channel(false);
        let runs = Arc::new(Runs::default());
        let controller = {
            let runs = runs.clone();
            move || {
                runs.started.fetch_add(1, Ordering::SeqCst);
                runs.running.fetch_add(1, Ordering::SeqCst);
                let counted = Counted(runs.clone());
                // Runs until stopped.
                async move {
                    let _counted = counted;
                    std::future::pending::<()>().await
                }
            }
        };
        let task = tokio::spawn(async move { while_leading(leadership, "test", controller).await });
        settle().await;
        assert_eq!(runs.started.load(Ordering::SeqCst), 0);
        leading.send_replace(true);
        settle().await;
        assert_eq!(runs.running.load(Ordering::SeqCst), 1);
        // Lost: stopped; regained: started afresh, never two at once.
        leading.send_replace(false);
        settle().await;
        assert_eq!(runs.running.load(Ordering::SeqCst), 0);
        leading.send_replace(true);
        settle().await;
        assert_eq!(runs.started.load(Ordering::SeqCst), 2);
        assert_eq!(runs.running.load(Ordering::SeqCst), 1);
        // Stopping the caller stops the controller.
        task.abort();
        let _ = task.await;
        settle().await;
        assert_eq!(runs.running.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn while_leading_ends_with_its_controller_and_passes_its_panic_on() {
        let (_leading, leadership) = watch::channel(true);
        while_leading(leadership, "test", || async {}).await;
        let (_leading, leadership) = watch::channel(true);
        let panicked = tokio::spawn(async move {
            while_leading(leadership, "test", || async { panic!("controller") }).await
        })
        .await;
        assert!(panicked.is_err_and(|e| e.is_panic()));
    }
}
