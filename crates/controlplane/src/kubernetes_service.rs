//! `default/kubernetes`: the Service every cluster has, and its Endpoints and
//! EndpointSlice listing every live API server replica (upstream's
//! kubernetesservice controller and lease endpoint reconciler). In-cluster
//! clients and kube-rs's event recorder look it up. And the default
//! ServiceCIDR `kubernetes` of `--service-cluster-ip-range`, ready (upstream's
//! default-servicecidr controller, also inside kube-apiserver).
//!
//! Each replica keeps an entry under `<prefix>/masterleases/<ip>:<port>` (an
//! Endpoints object naming its address, as upstream's, with the time it
//! expires: the etcd backend exposes no TTL leases) renewed every 10 s with a
//! 15 s lifetime, and rewrites the Endpoints and EndpointSlice from the
//! unexpired entries: every 10 s, and as the next entry expires, so a replica
//! killed with `-9` is gone about 15 s after its last renewal. An expired entry
//! is deleted by whichever replica sees it. At graceful shutdown a replica
//! deletes its entry and rewrites the Endpoints first (a pre-shutdown hook).
//!
//! Upstream keys entries by IP and publishes its own `--secure-port`, assuming
//! every replica uses the same one. kubext keys them by IP and port, and when
//! replicas' ports differ (test servers on `--secure-port 0`) it lists the
//! replicas of the port most of them share (on a tie, the lowest port), so that
//! they agree on one port instead of overwriting each other.

use anyhow::{Result, anyhow};
use apimachinery::meta;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use registry::GenericStore;
use registry::builtin::ServiceRanges;

use server::api::Api;

const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";
/// The Service's port (upstream's `APIServerServicePort`).
const SERVICE_PORT: u16 = 443;
/// Upstream's `DefaultEndpointReconcilerTTL`.
pub const LEASE_TTL: Duration = Duration::from_secs(15);
/// Upstream's `EndpointInterval`.
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(10);
/// When an entry stops being live.
const EXPIRES_ANNOTATION: &str = "kubext.io/expires";
/// Bound on waiting for the cache to hold this replica's own write.
const CACHE_WAIT: Duration = Duration::from_secs(5);

/// `--endpoint-reconciler-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReconcilerType {
    /// Every live replica, through the entries above.
    #[default]
    Lease,
    /// No Endpoints or EndpointSlice at all.
    None,
}

/// Keeps this replica in `default/kubernetes`.
pub struct EndpointReconciler {
    endpoints: GenericStore,
    slices: GenericStore,
    storage: Arc<registry::Storage>,
    /// `<prefix>/masterleases/`.
    leases: String,
    own: SocketAddr,
    /// Set at shutdown: nothing renews this replica's entry any more.
    stopped: AtomicBool,
    /// One reconcile at a time (the loop and the shutdown hook).
    reconciling: tokio::sync::Mutex<()>,
}

/// Create the Service and the default ServiceCIDR if they are missing, and
/// (with the lease reconciler) list this replica in the Endpoints and
/// EndpointSlice; the reconciler to run and stop.
pub async fn publish(
    api: &Api,
    ranges: &ServiceRanges,
    address: SocketAddr,
    kind: ReconcilerType,
) -> Result<Option<Arc<EndpointReconciler>>> {
    let ctx = runtime::system_context(NAMESPACE, "kube-apiserver");
    let catalog = api.catalog();
    let lookup = |group: &str, plural: &str| -> Result<GenericStore> {
        catalog
            .lookup(group, "v1", plural)
            .map(|s| s.store.clone_handle())
            .ok_or_else(|| anyhow!("{plural} are not served"))
    };
    default_service_cidr(&lookup("networking.k8s.io", "servicecidrs")?, ranges).await?;
    let services = lookup("", "services")?;
    // Looked up first: creating it again would ask for its cluster IP, which
    // its IPAddress holds (422), before the name's conflict (409).
    if services.get(&ctx, NAME).await.is_err() {
        match services.create(&ctx, service(ranges, address.port())).await {
            Ok(_) => {}
            // Another replica created it meanwhile.
            Err(e) if e.code() == 409 || e.code() == 422 => {}
            Err(e) => return Err(anyhow!("creating default/kubernetes: {e}")),
        }
    }
    if kind == ReconcilerType::None {
        return Ok(None);
    }
    let endpoints = lookup("", "endpoints")?;
    let reconciler = Arc::new(EndpointReconciler {
        storage: endpoints.storage().clone(),
        leases: format!("{}/masterleases/", endpoints.prefix()),
        slices: lookup("discovery.k8s.io", "endpointslices")?,
        endpoints,
        own: address,
        stopped: AtomicBool::new(false),
        reconciling: tokio::sync::Mutex::new(()),
    });
    reconciler.reconcile().await?;
    Ok(Some(reconciler))
}

/// A replica's entry as read back: its address and when it expires.
struct Entry {
    key: String,
    revision: i64,
    address: SocketAddr,
    expires: Option<jiff::Timestamp>,
}

impl EndpointReconciler {
    /// Renew and reconcile every [`RECONCILE_INTERVAL`], and as entries expire.
    pub async fn run(self: Arc<Self>) {
        let mut next = RECONCILE_INTERVAL;
        loop {
            tokio::time::sleep(next).await;
            if self.stopped.load(Ordering::Acquire) {
                return;
            }
            next = match self.reconcile().await {
                Ok(next) => next,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot reconcile the kubernetes service endpoints");
                    RECONCILE_INTERVAL
                }
            };
        }
    }

    /// At shutdown: stop renewing, delete this replica's entry, and list the
    /// others (upstream's `RemoveEndpoints`).
    pub async fn remove(&self) {
        self.stopped.store(true, Ordering::Release);
        let _one = self.reconciling.lock().await;
        let key = self.own_key();
        if let Some(entry) = self.storage.get(&key) {
            match self.storage.delete(&key, Some(entry.mod_revision)).await {
                Ok((revision, _)) => {
                    let _ = self.storage.wait_for(revision, CACHE_WAIT).await;
                }
                Err(e) => tracing::warn!(error = %e, "cannot remove this server's master lease"),
            }
        }
        match self.write_endpoints().await {
            Ok(_) => {
                tracing::info!(address = %self.own, "removed this server from the kubernetes service endpoints")
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot remove this server from the kubernetes service endpoints")
            }
        }
    }

    /// Renew this replica's entry and bring the Endpoints and EndpointSlice in
    /// line with the live entries; how long until the next entry expires (at
    /// most the interval).
    async fn reconcile(&self) -> Result<Duration> {
        let _one = self.reconciling.lock().await;
        if self.stopped.load(Ordering::Acquire) {
            return Ok(RECONCILE_INTERVAL);
        }
        self.renew().await?;
        self.write_endpoints().await
    }

    fn own_key(&self) -> String {
        format!("{}{}", self.leases, self.own)
    }

    /// Write this replica's entry with a fresh expiry; wait until the cache
    /// holds it (the list that follows reads the cache).
    async fn renew(&self) -> Result<()> {
        let key = self.own_key();
        let expires = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::try_from(LEASE_TTL)?)
            .map_err(|e| anyhow!("{e}"))?;
        let value = bytes::Bytes::from(serde_json::to_vec(&lease_entry(self.own, expires))?);
        let mut expected = self.storage.get(&key).map(|e| e.mod_revision);
        for _ in 0..3 {
            let written = match expected {
                Some(revision) => self.storage.update(&key, value.clone(), revision).await,
                None => self.storage.create(&key, value.clone()).await,
            };
            match written {
                Ok(revision) => {
                    self.storage.wait_for(revision, CACHE_WAIT).await?;
                    return Ok(());
                }
                // The cache was behind, or another replica deleted the entry as
                // expired (or storage failed: the read then fails too): go by
                // what is stored.
                Err(e) => {
                    tracing::debug!(error = %e, "renewing this server's master lease again");
                    expected = self
                        .storage
                        .backend()
                        .get(&key)
                        .await?
                        .map(|kv| kv.mod_revision);
                }
            }
        }
        Err(anyhow!("cannot renew {key}: it keeps changing"))
    }

    /// The live entries; expired ones are deleted (whoever sees one first).
    async fn live(&self) -> (Vec<SocketAddr>, Option<jiff::Timestamp>) {
        let now = jiff::Timestamp::now();
        let listed = self.storage.list(&self.leases, None, 0, &|_, _| true);
        let mut live = Vec::new();
        let mut next_expiry: Option<jiff::Timestamp> = None;
        for item in listed.items {
            let Some(entry) = read_entry(&item.key, item.mod_revision, &item.object.value()) else {
                continue;
            };
            match entry.expires {
                Some(expires) if expires > now => {
                    live.push(entry.address);
                    if entry.address != self.own {
                        next_expiry = Some(next_expiry.map_or(expires, |n| n.min(expires)));
                    }
                }
                _ => match self.storage.delete(&entry.key, Some(entry.revision)).await {
                    Ok(_) => {
                        tracing::info!(address = %entry.address, "removed an expired master lease")
                    }
                    Err(e) => tracing::debug!(error = %e, "expired master lease already gone"),
                },
            }
        }
        (live, next_expiry)
    }

    /// Rewrite the Endpoints and EndpointSlice from the live entries.
    async fn write_endpoints(&self) -> Result<Duration> {
        let (live, next_expiry) = self.live().await;
        let published = published(&live);
        if published.is_none() && !self.stopped.load(Ordering::Acquire) {
            return Err(anyhow!(
                "no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service"
            ));
        }
        let ctx = runtime::system_context(NAMESPACE, "kube-apiserver");
        let want = endpoints(published.as_ref());
        let changed = upsert(&self.endpoints, &ctx, want, |current, want| {
            current.get("subsets") != want.get("subsets") || labels(current) != labels(want)
        })
        .await?;
        if changed {
            tracing::warn!(
                addresses = ?published.as_ref().map(|(ips, _)| ips.clone()).unwrap_or_default(),
                "resetting endpoints for master service \"kubernetes\""
            );
        }
        upsert(
            &self.slices,
            &ctx,
            endpoint_slice(published.as_ref()),
            |current, want| {
                ["endpoints", "ports", "addressType"]
                    .iter()
                    .any(|k| current.get(*k) != want.get(*k))
                    || labels(current) != labels(want)
            },
        )
        .await?;
        let until_expiry = next_expiry.and_then(|t| {
            let left = t.duration_since(jiff::Timestamp::now());
            Duration::try_from(left).ok()
        });
        // A moment past the expiry: it must have passed when the list is read.
        Ok(until_expiry.map_or(RECONCILE_INTERVAL, |d| {
            (d + Duration::from_millis(50)).min(RECONCILE_INTERVAL)
        }))
    }
}

/// A replica's entry: an Endpoints object naming its address, as upstream's
/// masterleases hold, with its expiry.
fn lease_entry(address: SocketAddr, expires: jiff::Timestamp) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": address.to_string(),
            "annotations": {EXPIRES_ANNOTATION: expires.to_string()},
        },
        "subsets": [{
            "addresses": [{"ip": address.ip().to_string()}],
            "ports": [{"name": "https", "port": address.port(), "protocol": "TCP"}],
        }],
    })
}

/// An object's `metadata.labels` member, whatever its JSON type.
fn labels(object: &Value) -> Option<&Value> {
    meta::metadata(object).and_then(|m| m.get("labels"))
}

fn read_entry(key: &str, revision: i64, value: &Value) -> Option<Entry> {
    let subset = value.pointer("/subsets/0")?;
    let ip: IpAddr = subset.pointer("/addresses/0/ip")?.as_str()?.parse().ok()?;
    let port = u16::try_from(subset.pointer("/ports/0/port")?.as_u64()?).ok()?;
    let expires = meta::annotations(value)
        .and_then(|a| a.get(EXPIRES_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|t| t.parse().ok());
    Some(Entry {
        key: key.to_string(),
        revision,
        address: SocketAddr::new(ip, port),
        expires,
    })
}

/// What the Endpoints list: the addresses (sorted as upstream sorts them, by
/// their text) of the port most live replicas share (a tie: the lowest), and
/// that port; `None` when no replica is live.
fn published(live: &[SocketAddr]) -> Option<(Vec<String>, u16)> {
    let mut by_port: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    for address in live {
        by_port
            .entry(address.port())
            .or_default()
            .push(address.ip().to_string());
    }
    // max_by_key keeps the last of equals; iterate from the highest port so
    // the lowest wins a tie.
    let (port, mut ips) = by_port.into_iter().rev().max_by_key(|(_, ips)| ips.len())?;
    ips.sort();
    ips.dedup();
    Some((ips, port))
}

/// Create the default ServiceCIDR when it is missing and mark it ready (a
/// ServiceCIDR someone else created under that name is left as it is).
async fn default_service_cidr(store: &GenericStore, ranges: &ServiceRanges) -> Result<()> {
    let ctx = runtime::system_context("", "kube-apiserver");
    let cidr = json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": NAME},
        "spec": {"cidrs": [ranges.cluster_cidr()]},
    });
    match store.create(&ctx, cidr).await {
        Ok(_) => {}
        Err(e) if e.code() == 409 => {}
        Err(e) => return Err(anyhow!("creating the default ServiceCIDR: {e}")),
    }
    let mut status_ctx = runtime::system_context("", "kubernetes-service-cidr-controller");
    status_ctx.subresource = apimachinery::Subresource::Status;
    store
        .update_with(&status_ctx, NAME, |current| {
            let ready = current
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready"));
            let mut next = current.clone();
            if !ready {
                next["status"] = json!({"conditions": [{
                    "type": "Ready",
                    "status": "True",
                    "lastTransitionTime": apimachinery::time::now_rfc3339(),
                    "reason": "",
                    "message": "Kubernetes default Service CIDR is ready",
                }]});
            }
            Ok(next)
        })
        .await
        .map(|_| ())
        .map_err(|e| anyhow!("marking the default ServiceCIDR ready: {e}"))
}

fn service(ranges: &ServiceRanges, target_port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": ranges.first_ip().to_string(),
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "ports": [{"name": "https", "port": SERVICE_PORT, "protocol": "TCP", "targetPort": target_port}],
        },
    })
}

fn port(port: u16) -> Value {
    json!({"name": "https", "port": port, "protocol": "TCP"})
}

/// The Endpoints: one subset of the addresses and port, or none at all.
fn endpoints(published: Option<&(Vec<String>, u16)>) -> Value {
    let mut e = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
    });
    if let Some((ips, p)) = published {
        let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
        e["subsets"] = json!([{"addresses": addresses, "ports": [port(*p)]}]);
    }
    e
}

/// The EndpointSlice made from the Endpoints, as upstream's adapter makes it.
fn endpoint_slice(published: Option<&(Vec<String>, u16)>) -> Value {
    let (ips, ports) = match published {
        Some((ips, p)) => (ips.as_slice(), json!([port(*p)])),
        None => (&[][..], Value::Null),
    };
    let all_v6 = !ips.is_empty() && ips.iter().all(|ip| ip.contains(':'));
    let endpoints: Vec<Value> = ips
        .iter()
        .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
        .collect();
    let mut slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"kubernetes.io/service-name": NAME},
        },
        "addressType": if all_v6 { "IPv6" } else { "IPv4" },
        "endpoints": endpoints,
    });
    if !ports.is_null() {
        slice["ports"] = ports;
    }
    slice
}

/// Create `want`, or bring the stored object's labels and content in line with
/// it when `differs`; whether anything was written.
async fn upsert(
    store: &GenericStore,
    ctx: &registry::RequestContext,
    want: Value,
    differs: impl Fn(&Value, &Value) -> bool,
) -> Result<bool> {
    match store.get(ctx, NAME).await {
        Ok(current) if !differs(&current.value(), &want) => return Ok(false),
        Ok(_) => {}
        Err(e) if e.code() == 404 => match store.create(ctx, want.clone()).await {
            Ok(_) => return Ok(true),
            Err(e) if e.code() != 409 => {
                return Err(anyhow!("creating default/kubernetes: {e}"));
            }
            Err(_) => {}
        },
        Err(e) => return Err(anyhow!("reading default/kubernetes: {e}")),
    }
    store
        .update_with(ctx, NAME, |current| {
            let mut next = current.clone();
            for (key, value) in want.as_object().into_iter().flatten() {
                match key.as_str() {
                    "metadata" => {
                        meta::metadata_mut(&mut next)
                            .insert("labels".into(), value["labels"].clone());
                    }
                    _ => next[key] = value.clone(),
                }
            }
            if let Some(fields) = next.as_object_mut() {
                for gone in ["subsets", "ports"] {
                    if want.get(gone).is_none() {
                        fields.remove(gone);
                    }
                }
            }
            Ok(next)
        })
        .await
        .map(|_| true)
        .map_err(|e| anyhow!("updating default/kubernetes: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn every_live_replica_of_the_shared_port_is_listed_in_text_order() {
        let live = [
            addr("127.0.0.3:6443"),
            addr("127.0.0.10:6443"),
            addr("127.0.0.2:6443"),
        ];
        assert_eq!(
            published(&live),
            Some((
                vec!["127.0.0.10".into(), "127.0.0.2".into(), "127.0.0.3".into()],
                6443
            ))
        );
        assert_eq!(published(&[]), None);
    }

    #[test]
    fn differing_ports_agree_on_the_most_shared_then_the_lowest() {
        let live = [
            addr("127.0.0.1:7000"),
            addr("127.0.0.1:6000"),
            addr("127.0.0.2:7000"),
        ];
        assert_eq!(
            published(&live),
            Some((vec!["127.0.0.1".into(), "127.0.0.2".into()], 7000))
        );
        let tie = [addr("127.0.0.1:7000"), addr("127.0.0.1:6000")];
        assert_eq!(published(&tie), Some((vec!["127.0.0.1".into()], 6000)));
    }

    #[test]
    fn an_entry_reads_back() {
        let expires: jiff::Timestamp = "2026-01-01T00:00:15Z".parse().unwrap();
        let value = lease_entry(addr("[::1]:6443"), expires);
        let entry = read_entry("/registry/masterleases/[::1]:6443", 7, &value).unwrap();
        assert_eq!(entry.address, addr("[::1]:6443"));
        assert_eq!(entry.expires, Some(expires));
        assert_eq!(entry.revision, 7);
    }

    #[test]
    fn no_replica_leaves_no_subsets() {
        assert!(endpoints(None).get("subsets").is_none());
        let slice = endpoint_slice(None);
        assert_eq!(slice["endpoints"], json!([]));
        assert!(slice.get("ports").is_none());
    }
}
