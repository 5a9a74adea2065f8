//! The aggregation phase: what the aggregator's proxy adds to a request (GET of one
//! object through the aggregator vs straight to the extension server, same client,
//! same run), and discovery latency while another extension server does not answer.
//!
//! The extension server is a kubext serving `wardle.example.com` from a CRD,
//! trusting the aggregator's front-proxy CA; the aggregator is any server behind
//! a [`Handle`] (a second kubext, or kube-apiserver); the silent one is a TCP
//! listener that accepts connections and never answers.

use anyhow::{Context, Result};
use kube::api::{Api, DynamicObject, GroupVersionKind, PostParams};
use kube::discovery::Scope;
use std::time::{Duration, Instant};
use testkit::{Server, Storage};

use crate::handle::Handle;
use crate::stats::Latencies;

pub struct AggregationResult {
    pub proxy: ProxyResult,
    /// Aggregated discovery before and while an extension server hangs.
    pub discovery: Latencies,
    pub discovery_backend_down: Latencies,
}

/// Sequential GETs of one object, alternating straight to the extension server
/// and through the aggregator.
pub struct ProxyResult {
    pub gets: usize,
    pub direct: Latencies,
    pub proxied: Latencies,
}

impl ProxyResult {
    /// Latency the proxy adds at p50.
    pub fn added_p50(&self) -> Option<f64> {
        Some(self.proxied.p50()?.as_secs_f64() - self.direct.p50()?.as_secs_f64())
    }
}

const FLUNDERS_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: flunders.wardle.example.com}
spec:
  group: wardle.example.com
  scope: Namespaced
  names: {plural: flunders, kind: Flunder}
  versions:
  - {name: v1alpha1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"#;

/// Register an extension server on 127.0.0.1:`port` for `group/version`: an
/// `ExternalName` Service, which kube-apiserver and kubext both route to its
/// name and the APIService's port (an EndpointSlice may not name a loopback
/// address on kube-apiserver, and a ClusterIP leads nowhere here), and the
/// APIService (TLS not verified: the point is the proxy's cost).
fn registration(name: &str, group: &str, version: &str, port: u16) -> String {
    format!(
        r#"
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: default}}
spec: {{type: ExternalName, externalName: 127.0.0.1}}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {version}.{group}}}
spec:
  group: {group}
  version: {version}
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
  service: {{namespace: default, name: {name}, port: {port}}}
"#
    )
}

/// Create every object of a multi-document YAML manifest (`kubectl create -f`).
async fn create_all(client: &kube::Client, manifest: &str) -> Result<()> {
    for doc in manifest.split("\n---\n").filter(|d| !d.trim().is_empty()) {
        let value: serde_json::Value = serde_saphyr::from_str(doc)?;
        let object: DynamicObject = serde_json::from_value(value)?;
        let types = object.types.as_ref().context("no apiVersion or kind")?;
        let gvk = GroupVersionKind::try_from(types)?;
        let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk).await?;
        let api: Api<DynamicObject> = match capabilities.scope {
            Scope::Namespaced => {
                let namespace = object.metadata.namespace.as_deref().unwrap_or("default");
                Api::namespaced_with(client.clone(), namespace, &resource)
            }
            Scope::Cluster => Api::all_with(client.clone(), &resource),
        };
        api.create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating a {}", gvk.kind))?;
    }
    Ok(())
}

/// Wait until the APIService `name` is `Available`.
async fn wait_available(client: &kube::Client, name: &str) -> Result<()> {
    let path = format!("/apis/apiregistration.k8s.io/v1/apiservices/{name}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let request = http::Request::get(&path).body(Vec::new())?;
        let service: serde_json::Value = client.request(request).await?;
        let available = service["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        if available {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "APIService {name} not Available within 60 s: {}",
            service["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn timed_get(client: &kube::Client, path: &str, accept: &str) -> Result<Duration> {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(Vec::new())?;
    let started = Instant::now();
    client.request_text(req).await?;
    Ok(started.elapsed())
}

const V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The whole phase, on a fresh memory-backed kubext as the aggregator.
pub async fn measure(gets: usize) -> Result<AggregationResult> {
    let server = Server::builder()
        .storage(Storage::Memory)
        .start()
        .context("starting the aggregator")?;
    let aggregator = Handle::of_kubext(&server, None).await?;
    let proxy = proxy(&aggregator, gets).await?;
    let (discovery, discovery_backend_down) = discovery(&aggregator).await?;
    Ok(AggregationResult {
        proxy,
        discovery,
        discovery_backend_down,
    })
}

/// Start an extension server behind `aggregator` and time `gets` GETs each way.
pub async fn proxy(aggregator: &Handle, gets: usize) -> Result<ProxyResult> {
    let backend = Server::builder()
        .storage(Storage::Memory)
        .arg(format!(
            "--requestheader-client-ca-file={}",
            aggregator.front_proxy_ca.display()
        ))
        .start()
        .context("starting the extension server")?;
    backend.apply(FLUNDERS_CRD);
    backend.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/flunders.wardle.example.com",
    ]);
    backend.apply(
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: one, namespace: default}\nspec: {reference: x}\n",
    );
    let via_aggregator = aggregator.client()?;
    let manifest = registration(
        "wardle",
        "wardle.example.com",
        "v1alpha1",
        backend.addr.port(),
    );
    create_all(&via_aggregator, &manifest).await?;
    wait_available(&via_aggregator, "v1alpha1.wardle.example.com").await?;
    let direct_client = backend.client().await?;
    let path = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/one";
    // Warm both paths (connections, caches), then alternate so drift hits both.
    for _ in 0..20 {
        timed_get(&direct_client, path, "application/json").await?;
        timed_get(&via_aggregator, path, "application/json").await?;
    }
    let (mut direct, mut proxied) = (Vec::with_capacity(gets), Vec::with_capacity(gets));
    for _ in 0..gets {
        direct.push(timed_get(&direct_client, path, "application/json").await?);
        proxied.push(timed_get(&via_aggregator, path, "application/json").await?);
    }
    Ok(ProxyResult {
        gets,
        direct: Latencies::new(direct),
        proxied: Latencies::new(proxied),
    })
}

/// Aggregated discovery, paced, before and while an extension server hangs.
async fn discovery(aggregator: &Handle) -> Result<(Latencies, Latencies)> {
    let client = aggregator.client()?;
    // Both samples are paced the same way (the second spans several
    // availability checks of the silent server).
    let pace = Duration::from_millis(100);
    let mut before = Vec::new();
    for _ in 0..50 {
        before.push(timed_get(&client, "/apis", V2).await?);
        tokio::time::sleep(pace).await;
    }
    // An extension server that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0")?;
    let silent_port = silent.local_addr()?.port();
    let manifest = registration("silent", "silent.example.com", "v1", silent_port);
    create_all(&client, &manifest).await?;
    let mut hanging = Vec::new();
    for _ in 0..50 {
        hanging.push(timed_get(&client, "/apis", V2).await?);
        tokio::time::sleep(pace).await;
    }
    drop(silent);
    Ok((Latencies::new(before), Latencies::new(hanging)))
}

fn us(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.0} µs", d.as_secs_f64() * 1e6))
}

pub fn print(r: &AggregationResult) {
    let added = r
        .proxy
        .added_p50()
        .map_or("-".into(), |s| format!("{:.0} µs", s * 1e6));
    eprintln!();
    eprintln!(
        "Aggregation (memory stores, {} sequential GETs of one object each way)   goal",
        r.proxy.gets
    );
    eprintln!(
        "  GET direct p50 / p99             {} / {}",
        us(r.proxy.direct.p50()),
        us(r.proxy.direct.p99())
    );
    eprintln!(
        "  GET through kubext p50 / p99     {} / {}",
        us(r.proxy.proxied.p50()),
        us(r.proxy.proxied.p99())
    );
    eprintln!("  added by the proxy at p50        {added}   < 200 µs");
    eprintln!(
        "  aggregated discovery p50 / p99   {} / {}",
        us(r.discovery.p50()),
        us(r.discovery.p99())
    );
    eprintln!(
        "  … with a backend hanging         {} / {}",
        us(r.discovery_backend_down.p50()),
        us(r.discovery_backend_down.p99())
    );
}
