//! Reconcile a Network: compute its allocation, publish it in `status` and in an
//! owned ConfigMap `network-<name>`, record Events, and clean up through a
//! finalizer on delete. Writes are server-side applies, so reconciling an
//! unchanged Network writes nothing (a restarted operator does no duplicate work).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::finalizer::{self, finalizer};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use crate::network::{Allocation, Invalid, Network, NetworkStatus, allocate};

pub const MANAGER: &str = "network-controller";
const FINALIZER: &str = "samplecrd.k8s.io/network-controller";
/// Valid networks are looked at again this often even without changes.
const RESYNC: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("finalizer: {0}")]
    Finalizer(String),
    #[error("{0} has no namespace")]
    NoNamespace(String),
}

pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    /// Consecutive failures per Network, for the backoff.
    pub failures: Mutex<HashMap<String, u32>>,
}

pub async fn reconcile(network: Arc<Network>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = network
        .namespace()
        .ok_or_else(|| Error::NoNamespace(network.name_any()))?;
    let name = network.name_any();
    let api: Api<Network> = Api::namespaced(ctx.client.clone(), &namespace);
    let action = finalizer(&api, FINALIZER, network, |event| async {
        match event {
            finalizer::Event::Apply(n) => apply(&api, &n, &ctx).await,
            finalizer::Event::Cleanup(n) => cleanup(&n, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(e.to_string()))?;
    if let Ok(mut failures) = ctx.failures.lock() {
        failures.remove(&key(&namespace, &name));
    }
    Ok(action)
}

fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// Requeue a failed Network after 1 s, 2 s, 4 s … at most 5 minutes.
pub fn error_policy(network: Arc<Network>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = key(
        &network.namespace().unwrap_or_default(),
        &network.name_any(),
    );
    let attempts = ctx.failures.lock().map_or(1, |mut f| {
        let n = f.entry(key.clone()).or_insert(0);
        *n += 1;
        *n
    });
    let delay = Duration::from_secs(1 << attempts.min(8)).min(Duration::from_secs(300));
    tracing::warn!(network = %key, %error, attempts, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

async fn apply(api: &Api<Network>, network: &Network, ctx: &Context) -> Result<Action, Error> {
    let name = network.name_any();
    let allocation = allocate(&network.spec);
    if let Ok(a) = &allocation {
        publish_config_map(network, a, ctx).await?;
    }
    let old = network.status.clone().unwrap_or_default();
    let new = status(network, &allocation, &old);
    if new == old {
        tracing::debug!(network = %name, "up to date");
        return Ok(Action::requeue(RESYNC));
    }
    let patch = json!({"apiVersion": "samplecrd.k8s.io/v1", "kind": "Network", "status": new});
    api.patch_status(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    let event = match &allocation {
        Ok(a) => Event {
            type_: EventType::Normal,
            reason: "Allocated".into(),
            note: Some(format!(
                "{}/{}: {} usable addresses, {}–{}",
                a.network, a.prefix, a.usable_hosts, a.first_usable, a.last_usable
            )),
            action: "Allocate".into(),
            secondary: None,
        },
        Err(invalid) => Event {
            type_: EventType::Warning,
            reason: invalid.reason.into(),
            note: Some(invalid.message.clone()),
            action: "Allocate".into(),
            secondary: None,
        },
    };
    record(ctx, network, &event).await;
    tracing::info!(network = %name, ready = allocation.is_ok(), "status updated");
    Ok(match allocation {
        Ok(_) => Action::requeue(RESYNC),
        // Nothing to retry: the spec has to change.
        Err(_) => Action::await_change(),
    })
}

async fn cleanup(network: &Network, ctx: &Context) -> Result<Action, Error> {
    // The ConfigMap is owned by the Network: the garbage collector removes it.
    let event = Event {
        type_: EventType::Normal,
        reason: "Released".into(),
        note: Some(format!("released {}", network.spec.cidr)),
        action: "Release".into(),
        secondary: None,
    };
    record(ctx, network, &event).await;
    tracing::info!(network = %network.name_any(), "released");
    Ok(Action::await_change())
}

/// Events are best effort: a failure is logged, not retried.
async fn record(ctx: &Context, network: &Network, event: &Event) {
    if let Err(e) = ctx.recorder.publish(event, &network.object_ref(&())).await {
        tracing::warn!(error = %e, "cannot record event");
    }
}

/// `network-<name>`, owned by the Network (garbage-collected with it).
async fn publish_config_map(network: &Network, a: &Allocation, ctx: &Context) -> Result<(), Error> {
    let namespace = network.namespace().unwrap_or_default();
    let name = format!("network-{}", network.name_any());
    let owner = network
        .controller_owner_ref(&())
        .ok_or_else(|| Error::NoNamespace(network.name_any()))?;
    let data = BTreeMap::from([
        ("cidr".to_string(), format!("{}/{}", a.network, a.prefix)),
        ("gateway".to_string(), network.spec.gateway.clone()),
        ("network".to_string(), a.network.to_string()),
        ("broadcast".to_string(), a.broadcast.to_string()),
        ("firstUsable".to_string(), a.first_usable.to_string()),
        ("lastUsable".to_string(), a.last_usable.to_string()),
        ("usableHosts".to_string(), a.usable_hosts.to_string()),
    ]);
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            owner_references: Some(vec![owner]),
            labels: Some(BTreeMap::from([(
                "samplecrd.k8s.io/network".to_string(),
                network.name_any(),
            )])),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    };
    let mut patch = serde_json::to_value(&cm).unwrap_or_default();
    patch["apiVersion"] = json!("v1");
    patch["kind"] = json!("ConfigMap");
    Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace)
        .patch(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// The status `allocation` calls for; conditions keep their transition time while
/// their status stays.
fn status(
    network: &Network,
    allocation: &Result<Allocation, Invalid>,
    old: &NetworkStatus,
) -> NetworkStatus {
    let generation = network.metadata.generation;
    let condition = |kind: &str, status: bool, reason: &str, message: String| {
        let status = if status { "True" } else { "False" };
        let since = old
            .conditions
            .iter()
            .find(|c| c.type_ == kind && c.status == status)
            .map(|c| c.last_transition_time.clone())
            .unwrap_or_else(|| Time(jiff::Timestamp::now()));
        Condition {
            type_: kind.into(),
            status: status.into(),
            reason: reason.into(),
            message,
            last_transition_time: since,
            observed_generation: generation,
        }
    };
    match allocation {
        Ok(a) => NetworkStatus {
            conditions: vec![
                condition(
                    "Ready",
                    true,
                    "Allocated",
                    format!("{} usable addresses", a.usable_hosts),
                ),
                condition("Invalid", false, "Valid", "the spec is valid".into()),
            ],
            observed_generation: generation,
            network: Some(a.network.to_string()),
            broadcast: Some(a.broadcast.to_string()),
            first_usable: Some(a.first_usable.to_string()),
            last_usable: Some(a.last_usable.to_string()),
            usable_hosts: Some(a.usable_hosts),
        },
        Err(invalid) => NetworkStatus {
            conditions: vec![
                condition(
                    "Ready",
                    false,
                    "InvalidSpec",
                    "the spec cannot be allocated".into(),
                ),
                condition("Invalid", true, invalid.reason, invalid.message.clone()),
            ],
            observed_generation: generation,
            ..Default::default()
        },
    }
}
