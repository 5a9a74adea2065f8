//! The requests phases share: a namespace to work in, the ConfigMaps they
//! write, the collection's resourceVersion, a sample of the server's
//! `/metrics` (its live heap), and the pause before memory is read.

use anyhow::{Context, Result, anyhow};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use std::collections::BTreeMap;
use std::time::Duration;

/// Deadline of any single request.
pub const PER_REQUEST: Duration = Duration::from_secs(15);

pub async fn create_namespace(client: &kube::Client, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("create namespace {name}")),
    }
}

/// The collection's resourceVersion now: where a watch of only what follows starts.
pub async fn current_resource_version(api: &Api<ConfigMap>) -> Result<String> {
    api.list(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .ok_or_else(|| anyhow!("list without resourceVersion"))
}

/// A ConfigMap with `payload` as its data (≈1 KiB with the default payload).
pub fn config_map(name: &str, payload: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("app".into(), "kubext-bench".into())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("payload".into(), payload.into())])),
        ..Default::default()
    }
}

/// The server's live heap bytes, from its `/metrics`.
pub async fn heap<K: kube::Resource + Clone>(api: &Api<K>) -> Option<u64> {
    metric(&api.clone().into_client(), "kubext_heap_live_bytes")
        .await
        .map(|v| v as u64)
}

/// One unlabelled sample from the server's `/metrics`.
pub async fn metric(client: &kube::Client, name: &str) -> Option<f64> {
    let request = http::Request::get("/metrics").body(Vec::new()).ok()?;
    let text = tokio::time::timeout(PER_REQUEST, client.request_text(request))
        .await
        .ok()?
        .ok()?;
    text.lines()
        .filter_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .find_map(|v| v.trim().parse().ok())
}

/// Let freed memory go back (the allocator purges after a short delay) before
/// reading RSS.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}
