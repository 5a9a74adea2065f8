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

/// client-go's defaults.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

pub struct LeaderElection<R: Resources> {
    pub resources: Arc<R>,
    /// Who this replica is in `spec.holderIdentity`.
    pub identity: String,
    pub namespace: String,
    pub name: String,
}

/// Whether this replica leads; follow it with [`while_leading`].
pub type Leadership = watch::Receiver<bool>;

impl<R: Resources> LeaderElection<R> {
    /// Try to acquire, then keep renewing, forever; `leading` says the outcome.
    pub async fn run(self, leading: watch::Sender<bool>) {
        let mut observed: Option<(Value, Instant)> = None;
        let mut last_renew: Option<Instant> = None;
        loop {
            match self.try_acquire_or_renew(&mut observed).await {
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
                    if last_renew.is_none_or(|t| t.elapsed() > RENEW_DEADLINE) {
                        leading.send_if_modified(|l| std::mem::replace(l, false));
                    }
                }
            }
            tokio::time::sleep(RETRY_PERIOD).await;
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
            .map_or(LEASE_DURATION, Duration::from_secs);
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
            "leaseDurationSeconds": LEASE_DURATION.as_secs(),
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

/// A replica's identity: host name and a random suffix (upstream's
/// `hostname_uuid`).
pub fn identity() -> String {
    format!("{}_{}", crate::identity::hostname(), uuid::Uuid::new_v4())
}

/// Run `controller` while this replica leads; stop it when leadership is lost and
/// start it afresh when regained.
pub async fn while_leading<F, Fut>(mut leadership: Leadership, name: &str, controller: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        if leadership.wait_for(|l| *l).await.is_err() {
            return;
        }
        tracing::debug!(controller = name, "starting (leading)");
        tokio::select! {
            () = controller() => return,
            _ = leadership.wait_for(|l| !*l) => {
                tracing::info!(controller = name, "stopped: no longer the leader");
            }
        }
    }
}
