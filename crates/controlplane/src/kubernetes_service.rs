//! `default/kubernetes`: the Service every cluster has, with its Endpoints and
//! EndpointSlice pointing at this server (upstream's kubernetesservice controller
//! and lease endpoint reconciler). In-cluster clients and kube-rs's event
//! recorder look it up. And the default ServiceCIDR `kubernetes` of
//! `--service-cluster-ip-range`, ready (upstream's default-servicecidr
//! controller, also inside kube-apiserver).

use anyhow::{Result, anyhow};
use serde_json::{Value, json};
use std::net::SocketAddr;

use registry::GenericStore;
use registry::builtin::ServiceRanges;

use server::api::Api;

const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";
/// The Service's port (upstream's `APIServerServicePort`).
const SERVICE_PORT: u16 = 443;

/// Create the Service if it is missing, and point its Endpoints and EndpointSlice
/// at `address` (this server's port changes between runs with `--secure-port 0`).
pub async fn publish(api: &Api, ranges: &ServiceRanges, address: SocketAddr) -> Result<()> {
    let ctx = controllers::system_context(NAMESPACE, "kube-apiserver");
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
    let missing = services.get(&ctx, NAME).await.is_err();
    if missing {
        match services.create(&ctx, service(ranges, address.port())).await {
            Ok(_) => {}
            // Another replica created it meanwhile.
            Err(e) if e.code() == 409 || e.code() == 422 => {}
            Err(e) => return Err(anyhow!("creating default/kubernetes: {e}")),
        }
    }
    upsert(&lookup("", "endpoints")?, &ctx, endpoints(address)).await?;
    upsert(
        &lookup("discovery.k8s.io", "endpointslices")?,
        &ctx,
        endpoint_slice(address),
    )
    .await
}

/// Create the default ServiceCIDR when it is missing and mark it ready (a
/// ServiceCIDR someone else created under that name is left as it is).
async fn default_service_cidr(store: &GenericStore, ranges: &ServiceRanges) -> Result<()> {
    let ctx = controllers::system_context("", "kube-apiserver");
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
    let mut status_ctx = controllers::system_context("", "kubernetes-service-cidr-controller");
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

fn endpoints(address: SocketAddr) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": [{
            "addresses": [{"ip": address.ip().to_string()}],
            "ports": [{"name": "https", "port": address.port(), "protocol": "TCP"}],
        }],
    })
}

fn endpoint_slice(address: SocketAddr) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"kubernetes.io/service-name": NAME},
        },
        "addressType": if address.is_ipv4() { "IPv4" } else { "IPv6" },
        "endpoints": [{"addresses": [address.ip().to_string()], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": address.port(), "protocol": "TCP"}],
    })
}

/// Create `want`, or bring the stored object's labels and content in line with it.
async fn upsert(store: &GenericStore, ctx: &registry::RequestContext, want: Value) -> Result<()> {
    match store.create(ctx, want.clone()).await {
        Ok(_) => return Ok(()),
        Err(e) if e.code() != 409 => return Err(anyhow!("creating default/kubernetes: {e}")),
        Err(_) => {}
    }
    store
        .update_with(ctx, NAME, |current| {
            let mut next = current.clone();
            for (key, value) in want.as_object().into_iter().flatten() {
                match key.as_str() {
                    "metadata" => next["metadata"]["labels"] = value["labels"].clone(),
                    _ => next[key] = value.clone(),
                }
            }
            Ok(next)
        })
        .await
        .map(|_| ())
        .map_err(|e| anyhow!("updating default/kubernetes: {e}"))
}
