//! The CRD phase: how fast a new CRD becomes servable, discoverable and published in
//! OpenAPI, what each CRD costs in memory, and discovery latency with many CRDs.

use anyhow::{Context, Result};
use std::time::{Duration, Instant};
use testkit::{Server, Storage};

use crate::handle::Handle;
use crate::stats::Latencies;

/// How long one CRD may take to be servable and published (kube-apiserver
/// rebuilds its OpenAPI on every CRD: seconds, with many).
const DEADLINE_PER_CRD: Duration = Duration::from_secs(30);
/// About how many CRDs are timed into discovery and OpenAPI (each a fetch of
/// the whole discovery document).
const PUBLISHED_SAMPLES: usize = 100;

pub struct CrdResult {
    pub crds: usize,
    pub servable: Latencies,
    pub discoverable: Latencies,
    /// Create → listed in the `/openapi/v3` index and its document served.
    pub in_openapi: Latencies,
    pub rss_before: u64,
    /// After the first half of the CRDs: the second half's growth is the marginal
    /// cost per CRD, without one-time costs (first OpenAPI build, allocator arenas).
    pub rss_half: u64,
    pub rss_after: u64,
    pub discovery: Latencies,
    pub openapi_index: Latencies,
}

impl CrdResult {
    /// RSS added per CRD, in bytes, one-time costs included.
    pub fn rss_per_crd(&self) -> f64 {
        self.rss_after.saturating_sub(self.rss_before) as f64 / self.crds.max(1) as f64
    }

    /// RSS added per CRD over the second half, in bytes: the slope, without
    /// one-time costs.
    pub fn rss_slope(&self) -> f64 {
        let second_half = self.crds - self.crds / 2;
        self.rss_after.saturating_sub(self.rss_half) as f64 / second_half.max(1) as f64
    }
}

fn crd(i: usize) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things{i}.g{i}.bench.example.com")},
        "spec": {
            "group": format!("g{i}.bench.example.com"),
            "scope": "Namespaced",
            "names": {"plural": format!("things{i}"), "kind": format!("Thing{i}")},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "minimum": 0, "default": 1},
                        "name": {"type": "string", "maxLength": 63},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    }},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                }}},
            }],
        },
    })
}

async fn get_status(client: &kube::Client, path: &str, accept: &str) -> u16 {
    let Ok(req) = http::Request::get(path)
        .header("accept", accept)
        .body(Vec::new())
    else {
        return 0;
    };
    match client.send(req.map(kube::client::Body::from)).await {
        Ok(resp) => resp.status().as_u16(),
        Err(_) => 0,
    }
}

async fn get_text(client: &kube::Client, path: &str, accept: &str) -> String {
    let Ok(req) = http::Request::get(path)
        .header("accept", accept)
        .body(Vec::new())
    else {
        return String::new();
    };
    client.request_text(req).await.unwrap_or_default()
}

const V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Create `n` CRDs one after another on a fresh memory-backed kubext.
pub async fn measure(n: usize) -> Result<CrdResult> {
    let server = Server::builder()
        .storage(Storage::Memory)
        .start()
        .context("starting kubext")?;
    measure_on(&Handle::of_kubext(&server, None).await?, n).await
}

/// Create `n` CRDs one after another on `server`.
pub async fn measure_on(server: &Handle, n: usize) -> Result<CrdResult> {
    let client = server.client()?;
    let rss = || server.rss().unwrap_or(0);
    let rss_before = rss();
    let crds: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(
        client.clone(),
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
            ),
            "customresourcedefinitions",
        ),
    );
    let (mut servable, mut discoverable, mut in_openapi) = (Vec::new(), Vec::new(), Vec::new());
    let every = (n / PUBLISHED_SAMPLES).max(1);
    let mut rss_half = rss_before;
    for i in 0..n {
        if i == n / 2 {
            rss_half = rss();
        }
        let obj: kube::api::DynamicObject = serde_json::from_value(crd(i))?;
        let started = Instant::now();
        crds.create(&Default::default(), &obj).await?;
        let path = format!("/apis/g{i}.bench.example.com/v1/namespaces/default/things{i}");
        while get_status(&client, &path, "application/json").await != 200 {
            anyhow::ensure!(
                started.elapsed() < DEADLINE_PER_CRD,
                "CRD {i} never became servable"
            );
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        servable.push(started.elapsed());
        // Discovery of a large document on every CRD would dominate; sample some.
        if i % every == 0 {
            let group = format!("\"g{i}.bench.example.com\"");
            while !get_text(&client, "/apis", V2).await.contains(&group) {
                anyhow::ensure!(
                    started.elapsed() < DEADLINE_PER_CRD,
                    "CRD {i} never discoverable"
                );
                tokio::time::sleep(Duration::from_micros(500)).await;
            }
            discoverable.push(started.elapsed());
            let gv = format!("apis/g{i}.bench.example.com/v1");
            while !get_text(&client, "/openapi/v3", "application/json")
                .await
                .contains(&gv)
                || get_status(&client, &format!("/openapi/v3/{gv}"), "application/json").await
                    != 200
            {
                anyhow::ensure!(
                    started.elapsed() < DEADLINE_PER_CRD,
                    "CRD {i} never in OpenAPI"
                );
                tokio::time::sleep(Duration::from_micros(500)).await;
            }
            in_openapi.push(started.elapsed());
        }
    }
    let rss_after = rss();
    let mut discovery = Vec::new();
    let mut openapi_index = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let _ = get_text(&client, "/apis", V2).await;
        discovery.push(t.elapsed());
        let t = Instant::now();
        let _ = get_text(&client, "/openapi/v3", "application/json").await;
        openapi_index.push(t.elapsed());
    }
    Ok(CrdResult {
        crds: n,
        servable: Latencies::new(servable),
        discoverable: Latencies::new(discoverable),
        in_openapi: Latencies::new(in_openapi),
        rss_before,
        rss_half,
        rss_after,
        discovery: Latencies::new(discovery),
        openapi_index: Latencies::new(openapi_index),
    })
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| {
        format!("{:.2} ms", d.as_secs_f64() * 1000.0)
    })
}

pub fn print(r: &CrdResult) {
    let per_crd = r.rss_per_crd() / 1024.0;
    let marginal = r.rss_slope() / 1024.0;
    eprintln!();
    eprintln!(
        "CRDs (memory store, {} CRDs created one after another)          goal",
        r.crds
    );
    eprintln!(
        "  create → servable p50 / p99      {} / {}   p99 < 100 ms",
        ms(r.servable.p50()),
        ms(r.servable.p99())
    );
    eprintln!(
        "  create → in discovery p50 / p99  {} / {}",
        ms(r.discoverable.p50()),
        ms(r.discoverable.p99())
    );
    eprintln!(
        "  create → in OpenAPI v3 p50 / p99 {} / {}   p99 < 100 ms",
        ms(r.in_openapi.p50()),
        ms(r.in_openapi.p99())
    );
    eprintln!(
        "  RSS before / after / per CRD     {:.1} MiB / {:.1} MiB / {:.0} KiB",
        r.rss_before as f64 / 1048576.0,
        r.rss_after as f64 / 1048576.0,
        per_crd
    );
    eprintln!("  RSS per CRD, second half         {marginal:.0} KiB   ≤ 100 KiB per CRD");
    eprintln!(
        "  aggregated discovery p50 / p99   {} / {}   < 50 ms",
        ms(r.discovery.p50()),
        ms(r.discovery.p99())
    );
    eprintln!(
        "  /openapi/v3 index p50 / p99      {} / {}",
        ms(r.openapi_index.p50()),
        ms(r.openapi_index.p99())
    );
}
