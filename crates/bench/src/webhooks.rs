//! The webhook phase: what calling out costs, in one run against one server.
//! Sequential ConfigMap creates without a webhook, then through one
//! validating webhook (testkit's HTTPS test server, by URL, on loopback);
//! and GETs of custom resources in their storage version against GETs in
//! another version converted by a conversion webhook (each object read once:
//! every read is a call). Server CPU per request is kubext's own; the
//! webhook server's is not counted.

use anyhow::{Context, Result};
use std::time::{Duration, Instant};

use serde_json::json;
use testkit::webhook::WebhookServer;
use testkit::{Server, Storage};

use crate::cpu::Meter;
use crate::stats::Latencies;

pub struct Measured {
    pub latencies: Latencies,
    pub cpu_per_request: Option<Duration>,
    pub per_sec: f64,
}

pub struct WebhookResult {
    pub requests: usize,
    pub creates: Measured,
    pub creates_with_webhook: Measured,
    pub gets: Measured,
    pub gets_converted: Measured,
}

/// Run `request(i)` for `i` in `range`, measuring kubext's CPU.
async fn measure<F, Fut>(
    server: &Server,
    range: std::ops::Range<usize>,
    request: F,
) -> Result<Measured>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<Duration>>,
{
    let count = range.len();
    let meter = Meter::start(server.pid().as_slice(), None);
    let mut samples = Vec::with_capacity(count);
    for i in range {
        samples.push(request(i).await?);
    }
    let split = meter.finish();
    Ok(Measured {
        latencies: Latencies::new(samples),
        cpu_per_request: split
            .server
            .map(|cores| Duration::from_secs_f64(cores * split.wall.as_secs_f64() / count as f64)),
        per_sec: count as f64 / split.wall.as_secs_f64(),
    })
}

async fn send(client: &kube::Client, req: http::Request<Vec<u8>>) -> Result<Duration> {
    let started = Instant::now();
    client.request_text(req).await?;
    Ok(started.elapsed())
}

fn crd(hooks: &WebhookServer) -> String {
    let schema = |props: serde_json::Value| json!({"openAPIV3Schema": {"type": "object", "properties": props}});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "endpoints.bench.example.com"},
        "spec": {"group": "bench.example.com", "scope": "Namespaced",
            "names": {"plural": "endpoints", "singular": "endpoint", "kind": "Endpoint"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema(json!({"hostPort": {"type": "string"}}))},
                {"name": "v2", "served": true, "storage": false,
                 "schema": schema(json!({"host": {"type": "string"}, "port": {"type": "string"}}))}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": hooks.url_config("/crdconvert"),
                "conversionReviewVersions": ["v1"]}}}})
    .to_string()
}

pub async fn measure_all(requests: usize) -> Result<WebhookResult> {
    let server = Server::builder()
        .storage(Storage::Memory)
        .start()
        .context("starting kubext")?;
    let hooks = WebhookServer::start(&[]).context("starting the webhook server")?;
    let client = kube::Client::try_from(server.client_config().await?)?;
    let create = |namespace: &'static str| {
        let client = client.clone();
        move |i: usize| {
            let client = client.clone();
            async move {
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i}")}, "data": {"k": "v"}});
                let req = http::Request::post(format!("/api/v1/namespaces/{namespace}/configmaps"))
                    .header("content-type", "application/json")
                    .body(serde_json::to_vec(&body)?)?;
                send(&client, req).await
            }
        }
    };
    server.apply(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: hooked, labels: {hooked: 'yes'}}\n",
    );
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bench"},
        "webhooks": [{"name": "allow.bench.example.com",
            "clientConfig": hooks.url_config("/always-allow"),
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {"hooked": "yes"}},
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
    server.apply(&config.to_string());
    // Warm up both paths; wait until the webhook is called.
    for i in 0..100 {
        create("default")(i).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut i = 0;
    while hooks.requests_to("/always-allow").is_empty() {
        anyhow::ensure!(Instant::now() < deadline, "the webhook was never called");
        create("hooked")(1_000_000 + i).await?;
        i += 1;
    }
    let creates = measure(&server, 100..100 + requests, create("default")).await?;
    let connections = hooks.connections();
    let creates_with_webhook = measure(&server, 100..100 + requests, create("hooked")).await?;
    eprintln!(
        "  connections opened to the webhook during {requests} calls: {}",
        hooks.connections() - connections
    );

    server.apply(&crd(&hooks));
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/endpoints.bench.example.com",
        "--timeout=30s",
    ]);
    let path = |version: &str, name: &str| {
        format!("/apis/bench.example.com/{version}/namespaces/default/endpoints/{name}")
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0..2 * requests {
        let body = json!({"apiVersion": "bench.example.com/v1", "kind": "Endpoint",
            "metadata": {"name": format!("e-{i}")}, "hostPort": "localhost:8080"});
        let req = http::Request::post("/apis/bench.example.com/v1/namespaces/default/endpoints")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body)?)?;
        while send(&client, req.clone()).await.is_err() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "custom resources were never served"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let get = |version: &'static str| {
        let client = client.clone();
        move |i: usize| {
            let client = client.clone();
            let uri = path(version, &format!("e-{i}"));
            async move { send(&client, http::Request::get(uri).body(Vec::new())?).await }
        }
    };
    let gets = measure(&server, 0..requests, get("v1")).await?;
    // Other objects: none was presented at v2 yet, so each GET is a call.
    let gets_converted = measure(&server, requests..2 * requests, get("v2")).await?;
    Ok(WebhookResult {
        requests,
        creates,
        creates_with_webhook,
        gets,
        gets_converted,
    })
}

fn us(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.1} µs", d.as_secs_f64() * 1e6))
}

pub fn print(r: &WebhookResult) {
    eprintln!();
    eprintln!("Webhooks (one kubext, a loopback HTTPS webhook)");
    for (name, m) in [
        ("ConfigMap creates", &r.creates),
        ("  + validating webhook", &r.creates_with_webhook),
        ("CR GETs, storage version", &r.gets),
        ("  + conversion webhook", &r.gets_converted),
    ] {
        eprintln!(
            "  {name:<26} {}: {:.0}/s, p50 / p99 {} / {}, server CPU {} per request",
            r.requests,
            m.per_sec,
            us(m.latencies.p50()),
            us(m.latencies.p99()),
            us(m.cpu_per_request)
        );
    }
    for (what, with, without) in [
        (
            "a validating webhook per create",
            &r.creates_with_webhook,
            &r.creates,
        ),
        ("a conversion webhook per GET", &r.gets_converted, &r.gets),
    ] {
        if let (Some(a), Some(b)) = (with.cpu_per_request, without.cpu_per_request) {
            eprintln!(
                "  server CPU added by {what} {:.1} µs (latency p50 +{:.2} ms)",
                (a.as_secs_f64() - b.as_secs_f64()) * 1e6,
                (with.latencies.p50().unwrap_or_default().as_secs_f64()
                    - without.latencies.p50().unwrap_or_default().as_secs_f64())
                    * 1e3
            );
        }
    }
}
