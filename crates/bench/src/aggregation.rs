//! The aggregation phase: what the aggregator's proxy adds to a request (GET of one
//! object through kubext vs straight to the extension server, same client, same
//! run), and discovery latency while another extension server does not answer.
//!
//! The extension server is a second kubext serving `wardle.example.com` from a
//! CRD, trusting the aggregator's front-proxy CA; the silent one is a TCP listener
//! that accepts connections and never answers.

use anyhow::{Context, Result};
use std::time::{Duration, Instant};
use testkit::{Server, Storage};

use crate::stats::Latencies;

pub struct AggregationResult {
    pub gets: usize,
    pub direct: Latencies,
    pub proxied: Latencies,
    /// Aggregated discovery before and while an extension server hangs.
    pub discovery: Latencies,
    pub discovery_backend_down: Latencies,
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

/// Register an extension server on 127.0.0.1:`port` for `group/version` (TLS not
/// verified: the point is the proxy's cost).
fn registration(name: &str, group: &str, version: &str, port: u16) -> String {
    testkit::extension_registration(
        "default",
        name,
        group,
        version,
        port,
        testkit::BackendTls::Insecure,
    )
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

pub async fn measure(gets: usize) -> Result<AggregationResult> {
    let aggregator_dir = tempfile::tempdir()?;
    let aggregator = Server::builder()
        .storage(Storage::Memory)
        .data_dir(aggregator_dir.path())
        .start()
        .context("starting the aggregator")?;
    let backend = Server::builder()
        .storage(Storage::Memory)
        .arg(format!(
            "--requestheader-client-ca-file={}",
            aggregator_dir
                .path()
                .join("pki/front-proxy-ca.crt")
                .display()
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
    aggregator.apply(&registration(
        "wardle",
        "wardle.example.com",
        "v1alpha1",
        backend.addr.port(),
    ));
    aggregator.kubectl_ok(&[
        "wait",
        "--for=condition=Available",
        "apiservice/v1alpha1.wardle.example.com",
        "--timeout=60s",
    ]);
    let via_aggregator = aggregator.client().await?;
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

    // Both discovery samples are paced the same way (the second spans several
    // availability checks of the silent server).
    let pace = Duration::from_millis(100);
    let mut discovery = Vec::new();
    for _ in 0..50 {
        discovery.push(timed_get(&via_aggregator, "/apis", V2).await?);
        tokio::time::sleep(pace).await;
    }
    // An extension server that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0")?;
    let silent_port = silent.local_addr()?.port();
    aggregator.apply(&registration(
        "silent",
        "silent.example.com",
        "v1",
        silent_port,
    ));
    let mut discovery_backend_down = Vec::new();
    for _ in 0..50 {
        discovery_backend_down.push(timed_get(&via_aggregator, "/apis", V2).await?);
        tokio::time::sleep(pace).await;
    }
    drop(silent);
    Ok(AggregationResult {
        gets,
        direct: Latencies::new(direct),
        proxied: Latencies::new(proxied),
        discovery: Latencies::new(discovery),
        discovery_backend_down: Latencies::new(discovery_backend_down),
    })
}

fn us(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.0} µs", d.as_secs_f64() * 1e6))
}

pub fn print(r: &AggregationResult) {
    let added = match (r.proxied.p50(), r.direct.p50()) {
        (Some(p), Some(d)) => format!("{:.0} µs", (p.as_secs_f64() - d.as_secs_f64()) * 1e6),
        _ => "-".into(),
    };
    eprintln!();
    eprintln!(
        "Aggregation (memory stores, {} sequential GETs of one object each way)   goal",
        r.gets
    );
    eprintln!(
        "  GET direct p50 / p99             {} / {}",
        us(r.direct.p50()),
        us(r.direct.p99())
    );
    eprintln!(
        "  GET through kubext p50 / p99     {} / {}",
        us(r.proxied.p50()),
        us(r.proxied.p99())
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
