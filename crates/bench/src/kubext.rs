//! Measurements against a real server through kube-rs: start-up time, RSS,
//! create/get/list latency and throughput, and watch fan-out. Written for
//! kubext; any server behind a [`Handle`] (kube-apiserver too) runs the same.

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams, WatchEvent,
    WatchParams,
};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::cpu;
use crate::handle::Handle;
use crate::launcher::Launcher;
use crate::plan::Plan;
use crate::requests::{
    PER_REQUEST, config_map, create_namespace, current_resource_version, heap, metric, settle,
};
use crate::stats::{self, Latencies, RunResult};

/// Namespace of the create/get/list phases.
const NS: &str = "bench";
/// Namespace the watchers watch.
const WATCH_NS: &str = "bench-watch";

/// A phase reduced to what the report prints.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    pub ok: usize,
    pub errors: usize,
    pub first_error: Option<String>,
    pub cut_short: bool,
    pub ops_per_sec: Option<f64>,
    pub latencies: Latencies,
}

impl From<&RunResult> for Phase {
    fn from(r: &RunResult) -> Self {
        Phase {
            ok: r.samples.len(),
            errors: r.errors,
            first_error: r.first_error.clone(),
            cut_short: r.cut_short,
            ops_per_sec: r.ops_per_sec(),
            latencies: r.latencies(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct WatchResult {
    /// Watches open before the writers started.
    pub established: usize,
    pub failed: usize,
    /// Time to open all of them.
    pub setup: Option<Duration>,
    /// Writes while they were open, as fast as `concurrency` allows.
    pub writes: Phase,
    /// Create-ack → watcher-received, per (watcher, event), for those writes.
    pub delivery: Latencies,
    /// The same for the paced writes (one at a time): fan-out latency without a backlog.
    pub paced_delivery: Latencies,
    /// Deliveries due (acked creates × open watches), both kinds.
    pub expected: usize,
    /// Cores used during the flat-out writes and their delivery.
    pub cpu: cpu::Split,
    /// Flat-out phase: events received by all watchers together per second, from
    /// the first write to the last receipt.
    pub delivered_per_sec: Option<f64>,
    /// Watches the server ended (or that broke) before receiving everything.
    pub ended_early: usize,
    pub first_error: Option<String>,
    pub server_watchers: Option<u64>,
    /// Server RSS with the watches open.
    pub rss: Option<u64>,
}

/// Creates, GETs and LISTs of one kind of object.
#[derive(Debug, Clone, Default)]
pub struct ObjectPhases {
    /// Server RSS right before the creates and right after them: what keeping
    /// the objects costs.
    pub rss_before: Option<u64>,
    pub rss_created: Option<u64>,
    /// The server's live heap (`kubext_heap_live_bytes`) at the same two points.
    pub heap_before: Option<u64>,
    pub heap_created: Option<u64>,
    pub creates: Option<Phase>,
    /// Cores used during the creates.
    pub creates_cpu: Option<cpu::Split>,
    pub gets: Option<Phase>,
    pub lists_small: Option<Phase>,
    pub lists_all: Option<Phase>,
    /// Peak RSS during the LIST-all phase over the RSS before it.
    pub lists_all_peak: Option<u64>,
}

impl ObjectPhases {
    /// RSS added per object created, in bytes.
    pub fn bytes_per_object(&self) -> Option<f64> {
        self.per_object(self.rss_before?, self.rss_created?)
    }

    /// Live heap added per object created, in bytes.
    pub fn heap_per_object(&self) -> Option<f64> {
        self.per_object(self.heap_before?, self.heap_created?)
    }

    fn per_object(&self, before: u64, after: u64) -> Option<f64> {
        let created = self.creates.as_ref()?.ok;
        (created > 0).then(|| after.saturating_sub(before) as f64 / created as f64)
    }

    pub fn all(&self) -> impl Iterator<Item = &Phase> {
        [
            &self.creates,
            &self.gets,
            &self.lists_small,
            &self.lists_all,
        ]
        .into_iter()
        .flatten()
    }
}

/// Everything measured on one backend through kubext.
#[derive(Debug, Clone, Default)]
pub struct KubextResult {
    pub start_to_ready: Latencies,
    pub rss_idle: Option<u64>,
    /// After the ConfigMap phases.
    pub rss_loaded: Option<u64>,
    /// After the custom resource phases, right before the watches open.
    pub rss_custom: Option<u64>,
    pub rss_watchers: Option<u64>,
    /// ConfigMaps (a built-in kind).
    pub configmaps: ObjectPhases,
    /// Custom resources of a CRD with a schema (validation, defaulting, pruning).
    pub custom: ObjectPhases,
    pub watch: Option<WatchResult>,
    pub slow_watchers: Option<crate::slow_watchers::SlowWatchers>,
    /// Errors that stopped a phase, in order.
    pub problems: Vec<String>,
}

/// Run every phase on fresh servers of `launcher`'s kind. Failures are
/// recorded, not returned, so that one broken phase still leaves a report.
pub async fn measure(plan: &Plan, launcher: &Launcher, run_id: &str) -> KubextResult {
    let mut result = KubextResult::default();

    let mut times = Vec::new();
    for i in 0..plan.starts {
        match launcher.start(&format!("{run_id}-start{i}")).await {
            Ok((server, took)) => {
                times.push(took);
                drop(server);
            }
            Err(e) => {
                result.problems.push(format!("start: {e:#}"));
                break;
            }
        }
    }
    result.start_to_ready = Latencies::new(times);

    let server = match launcher.start(&format!("{run_id}-main")).await {
        Ok((server, _)) => server,
        Err(e) => {
            result.problems.push(format!("start: {e:#}"));
            return result;
        }
    };
    let outcome = match server.settle().await {
        Ok(()) => phases(plan, &server.handle, &mut result).await,
        Err(e) => Err(e),
    };
    if let Err(e) = outcome {
        result.problems.push(format!("{e:#}"));
        let tail = server.log_tail(5);
        if !tail.is_empty() {
            result.problems.push(format!("server log tail: {tail}"));
        }
    }
    result
}

async fn phases(plan: &Plan, server: &Handle, result: &mut KubextResult) -> Result<()> {
    let client = server.client().context("kube client")?;
    create_namespace(&client, NS).await?;
    create_namespace(&client, WATCH_NS).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    result.rss_idle = server.rss();

    let payload = Arc::new(payload(1024));
    let configmaps: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NS, &ApiResource::erase::<ConfigMap>(&()));
    let made = payload.clone();
    result.configmaps = object_phases(plan, server, &configmaps, "ConfigMaps", move |i| {
        config_map_object(i, &made)
    })
    .await?;
    result.rss_loaded = server.rss();

    let items = install_bench_crd(&client).await?;
    let made = payload.clone();
    result.custom = object_phases(plan, server, &items, "custom resources", move |i| {
        bench_item(i, &made)
    })
    .await?;
    result.rss_custom = server.rss();

    if plan.watchers > 0 && plan.watch_objects > 0 {
        eprintln!(
            "  watch: {} watchers, {} creates at concurrency {}, then {} paced creates",
            plan.watchers, plan.watch_objects, plan.concurrency, plan.paced_objects
        );
        let watch = watch_phase(plan, server, &client, &payload, result).await?;
        result.watch = Some(watch);
    }
    if plan.slow_watchers > 0 && plan.slow_events > 0 {
        eprintln!(
            "  slow watchers: {} watches that never read, {} creates",
            plan.slow_watchers, plan.slow_events
        );
        result.slow_watchers = Some(crate::slow_watchers::measure(plan, server, &payload).await?);
    }
    Ok(())
}

/// Creates at `plan.concurrency`, then serial GETs, LISTs of 100 and LISTs of all,
/// of the objects `make` builds.
async fn object_phases(
    plan: &Plan,
    server: &Handle,
    api: &Api<DynamicObject>,
    what: &str,
    make: impl Fn(usize) -> DynamicObject + Send + Sync + 'static,
) -> Result<ObjectPhases> {
    let mut out = ObjectPhases::default();
    let make = Arc::new(make);
    // Open every connection and warm the server's buffers first, so that the
    // memory measured next is what the objects themselves cost.
    let warm_up = {
        let (api, make) = (api.clone(), make.clone());
        stats::run(
            plan.concurrency,
            plan.concurrency,
            plan.write_budget,
            PER_REQUEST,
            move |i| {
                let api = api.clone();
                let mut obj = make(i);
                obj.metadata.name = Some(format!("warm-up-{i}"));
                async move {
                    api.create(&PostParams::default(), &obj).await?;
                    Ok(())
                }
            },
        )
        .await
    };
    if let Some(e) = warm_up.first_error {
        bail!("warm-up creates of {what}: {e}");
    }
    settle().await;
    out.rss_before = server.rss();
    out.heap_before = heap(api).await;
    eprintln!(
        "  creates: {} {what}, concurrency {}",
        plan.objects, plan.concurrency
    );
    let meter = server.meter();
    let creates = {
        let api = api.clone();
        stats::run(
            plan.objects,
            plan.concurrency,
            plan.write_budget,
            PER_REQUEST,
            move |i| {
                let api = api.clone();
                let obj = make(i);
                async move {
                    api.create(&PostParams::default(), &obj).await?;
                    Ok(())
                }
            },
        )
        .await
    };
    out.creates_cpu = Some(meter.finish());
    settle().await;
    out.rss_created = server.rss();
    out.heap_created = heap(api).await;
    let mut created: Vec<usize> = creates.samples.iter().map(|s| s.index).collect();
    created.sort_unstable();
    out.creates = Some(Phase::from(&creates));
    if created.is_empty() {
        bail!(
            "no create of {what} succeeded: {}",
            creates.first_error.unwrap_or_default()
        );
    }

    eprintln!(
        "  reads: {} GETs, {} LIST limit=100, {} LIST all",
        plan.gets, plan.lists_small, plan.lists_all
    );
    let created = Arc::new(created);
    let gets = {
        let api = api.clone();
        let created = created.clone();
        stats::run(plan.gets, 1, plan.read_budget, PER_REQUEST, move |i| {
            let api = api.clone();
            // A stride through the created objects, so reads are spread out.
            let pick = created[(i * 7919) % created.len()];
            async move {
                api.get(&object_name(pick)).await?;
                Ok(())
            }
        })
        .await
    };
    out.gets = Some(Phase::from(&gets));
    let lists_small = {
        let api = api.clone();
        stats::run(
            plan.lists_small,
            1,
            plan.read_budget,
            PER_REQUEST,
            move |_| {
                let api = api.clone();
                async move {
                    let list = api.list(&ListParams::default().limit(100)).await?;
                    anyhow::ensure!(!list.items.is_empty(), "empty list");
                    Ok(())
                }
            },
        )
        .await
    };
    out.lists_small = Some(Phase::from(&lists_small));
    let peak_from = server.reset_peak();
    let lists_all = {
        let api = api.clone();
        let want = created.len();
        stats::run(
            plan.lists_all,
            1,
            plan.read_budget,
            PER_REQUEST,
            move |_| {
                let api = api.clone();
                async move {
                    // The body as received, not decoded: the client's JSON decode of
                    // 10,000 objects would dwarf the server's part.
                    let request = http::Request::get(api.resource_url()).body(Vec::new())?;
                    let body = api.clone().into_client().request_stream(request).await?;
                    let listed = count_items(body).await?;
                    anyhow::ensure!(listed >= want, "listed {listed} of {want}");
                    Ok(())
                }
            },
        )
        .await
    };
    out.lists_all = Some(Phase::from(&lists_all));
    out.lists_all_peak = server
        .peak_rss()
        .zip(peak_from)
        .map(|(peak, from)| peak.saturating_sub(from));
    Ok(out)
}

/// Items in a JSON list body, counted as it streams in: each item has one
/// `metadata.uid`, the list's metadata none (whether items lead with `kind`
/// differs between servers: kube-apiserver's built-in lists leave it out). The
/// body is not copied or collected (this runs inside the timed request:
/// `request_text` copied 15 MiB twice and `str::matches` scanned it,
/// milliseconds of the figure), and a match split between two chunks is
/// counted once.
async fn count_items(mut body: impl futures::AsyncBufRead + Unpin) -> std::io::Result<usize> {
    use futures::AsyncBufReadExt;
    const ITEM: &[u8] = br#""uid":""#;
    let finder = memchr::memmem::Finder::new(ITEM);
    // The last bytes seen, too few to hold a whole match.
    let mut tail: Vec<u8> = Vec::with_capacity(2 * ITEM.len());
    let mut found = 0;
    loop {
        let chunk = body.fill_buf().await?;
        if chunk.is_empty() {
            break;
        }
        let across = tail.len();
        tail.extend_from_slice(&chunk[..chunk.len().min(ITEM.len() - 1)]);
        // Only matches that start in the old tail: the rest are in `chunk`.
        found += finder.find_iter(&tail).filter(|&at| at < across).count();
        found += finder.find_iter(chunk).count();
        tail.truncate(across);
        tail.extend_from_slice(&chunk[chunk.len().saturating_sub(ITEM.len() - 1)..]);
        tail.drain(..tail.len().saturating_sub(ITEM.len() - 1));
        let read = chunk.len();
        body.consume_unpin(read);
    }
    Ok(found)
}

pub fn object_name(i: usize) -> String {
    format!("obj-{i:06}")
}

pub fn config_map_object(i: usize, payload: &str) -> DynamicObject {
    let cm = config_map(&object_name(i), payload);
    serde_json::from_value(serde_json::to_value(cm).unwrap_or_default()).unwrap_or_else(|_| {
        DynamicObject::new(&object_name(i), &ApiResource::erase::<ConfigMap>(&()))
    })
}

/// The custom resources' CRD: a schema that validates (bounds, required fields,
/// three CEL rules), defaults (`replicas`) and prunes.
const BENCH_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "benchitems.bench.example.com"},
  "spec": {
    "group": "bench.example.com",
    "scope": "Namespaced",
    "names": {"plural": "benchitems", "kind": "BenchItem"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["payload"], "properties": {
          "payload": {"type": "string", "maxLength": 4096},
          "replicas": {"type": "integer", "minimum": 0, "default": 1},
          "tags": {"type": "array", "x-kubernetes-list-type": "set", "maxItems": 16,
            "items": {"type": "string", "maxLength": 63}}
        }, "x-kubernetes-validations": [
          {"rule": "self.replicas <= 1000", "message": "at most 1000 replicas"},
          {"rule": "!self.payload.startsWith('-')"},
          {"rule": "!has(self.tags) || self.tags.all(t, t != 'forbidden')"}
        ]},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
      }}}
    }]
  }
}"#;

/// Install the benchmark's CRD and wait until its resource is served.
pub async fn install_bench_crd(client: &kube::Client) -> Result<Api<DynamicObject>> {
    install_bench_crd_in(client, NS).await
}

/// Install the benchmark's CRD; its objects in namespace `ns`.
pub async fn install_bench_crd_in(client: &kube::Client, ns: &str) -> Result<Api<DynamicObject>> {
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    crds.create(&PostParams::default(), &serde_json::from_str(BENCH_CRD)?)
        .await
        .context("creating the benchmark CRD")?;
    let items: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("bench.example.com", "v1", "BenchItem"),
            "benchitems",
        ),
    );
    // kube-apiserver takes seconds where kubext takes milliseconds.
    let deadline = Instant::now() + Duration::from_secs(60);
    while items.list(&ListParams::default().limit(1)).await.is_err() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the benchmark CRD was never served"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(items)
}

/// A custom resource of about the size of the ConfigMaps.
pub fn bench_item(i: usize, payload: &str) -> DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "bench.example.com/v1",
        "kind": "BenchItem",
        "metadata": {"name": object_name(i), "labels": {"app": "kubext-bench"}},
        "spec": {"payload": payload, "tags": ["a", "b"]},
    }))
    .unwrap_or_else(|_| DynamicObject::new(&object_name(i), &ApiResource::erase::<ConfigMap>(&())))
}

/// What one watcher saw.
#[derive(Default)]
struct Seen {
    received: Vec<(usize, Instant)>,
    ended_early: bool,
    error: Option<String>,
}

async fn watch_phase(
    plan: &Plan,
    server: &Handle,
    client: &kube::Client,
    payload: &Arc<String>,
    result: &mut KubextResult,
) -> Result<WatchResult> {
    let mut out = WatchResult::default();
    let writer: Api<ConfigMap> = Api::namespaced(client.clone(), WATCH_NS);
    let rv = current_resource_version(&writer).await?;

    // The watchers get their own runtime, so the writers' tasks never queue behind
    // event decoding (the OS still shares the cores between everything).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-watchers")
        .enable_all()
        .build()
        .context("watcher runtime")?;
    let outcome = watch_with(
        plan,
        server,
        client,
        payload,
        &rv,
        runtime.handle(),
        &mut out,
    )
    .await;
    runtime.shutdown_background();
    outcome?;
    if out.failed > 0 && out.first_error.is_none() {
        out.first_error = Some(format!("{} watches failed to open", out.failed));
    }
    result.rss_watchers = out.rss;
    Ok(out)
}

/// Only what a watcher needs of a ConfigMap: its name. Keeps the load generator
/// light (no maps, no managedFields); serde still scans every event in full.
#[derive(Clone, Debug, serde::Deserialize)]
struct NamedConfigMap {
    #[serde(deserialize_with = "name_only")]
    metadata: ObjectMeta,
}

fn name_only<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    #[derive(serde::Deserialize)]
    struct Name {
        name: Option<String>,
    }
    let name = <Name as serde::Deserialize>::deserialize(d)?;
    Ok(ObjectMeta {
        name: name.name,
        ..Default::default()
    })
}

impl kube::Resource for NamedConfigMap {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "ConfigMap".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "configmaps".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

async fn watch_with(
    plan: &Plan,
    server: &Handle,
    client: &kube::Client,
    payload: &Arc<String>,
    rv: &str,
    watch_runtime: &tokio::runtime::Handle,
    out: &mut WatchResult,
) -> Result<()> {
    let writer: Api<ConfigMap> = Api::namespaced(client.clone(), WATCH_NS);
    // kube-rs speaks HTTP/1.1 only, so every watch holds its own connection;
    // spread them over a few clients (connection pools), made on the watcher
    // runtime so that their background tasks run there too.
    let clients = plan.watchers.div_ceil(250).max(1);
    let mut watch_clients = Vec::with_capacity(clients);
    for _ in 0..clients {
        let config = server.config.clone();
        let made = watch_runtime.spawn(async move { kube::Client::try_from(config) });
        watch_clients.push(made.await??);
    }

    let base = Instant::now();
    let ready = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    // Millis after `base` when watchers give up; u64::MAX while writers run.
    let drain_deadline = Arc::new(AtomicU64::new(u64::MAX));
    // How many events each watcher should expect; usize::MAX while writers run.
    let expected = Arc::new(AtomicUsize::new(usize::MAX));
    // Events received by all watchers together.
    let delivered = Arc::new(AtomicUsize::new(0));
    let hard_deadline = base + plan.write_budget * 2 + Duration::from_secs(60);
    let flat_out = plan.watch_objects;
    let want = flat_out + plan.paced_objects;
    let mut tasks = Vec::with_capacity(plan.watchers);
    for w in 0..plan.watchers {
        let api: Api<NamedConfigMap> =
            Api::namespaced(watch_clients[w % clients].clone(), WATCH_NS);
        let rv = rv.to_owned();
        let (ready, failed, drain_deadline, expected, delivered) = (
            ready.clone(),
            failed.clone(),
            drain_deadline.clone(),
            expected.clone(),
            delivered.clone(),
        );
        tasks.push(watch_runtime.spawn(async move {
            let mut seen = Seen::default();
            let params = WatchParams::default().timeout(600);
            let mut stream =
                match tokio::time::timeout(PER_REQUEST * 2, api.watch(&params, &rv)).await {
                    Ok(Ok(s)) => s.boxed(),
                    Ok(Err(e)) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        seen.error = Some(format!("open: {e}"));
                        return seen;
                    }
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        seen.error = Some("open: timed out".into());
                        return seen;
                    }
                };
            ready.fetch_add(1, Ordering::Relaxed);
            seen.received.reserve(want);
            loop {
                if seen.received.len() >= want.min(expected.load(Ordering::Acquire)) {
                    break;
                }
                let drain = drain_deadline.load(Ordering::Acquire);
                if Instant::now() >= hard_deadline
                    || (drain != u64::MAX && base.elapsed() >= Duration::from_millis(drain))
                {
                    seen.ended_early = true;
                    break;
                }
                let event =
                    match tokio::time::timeout(Duration::from_millis(250), stream.next()).await {
                        Err(_) => continue,
                        Ok(None) => {
                            seen.ended_early = true;
                            seen.error
                                .get_or_insert_with(|| "watch ended by the server".into());
                            break;
                        }
                        Ok(Some(Err(e))) => {
                            seen.ended_early = true;
                            seen.error = Some(format!("stream: {e}"));
                            break;
                        }
                        Ok(Some(Ok(event))) => event,
                    };
                let now = Instant::now();
                match event {
                    WatchEvent::Added(cm) => {
                        if let Some(i) = cm
                            .metadata
                            .name
                            .as_deref()
                            .and_then(|n| n.strip_prefix("w-"))
                            .and_then(|n| n.parse::<usize>().ok())
                        {
                            seen.received.push((i, now));
                            delivered.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    WatchEvent::Error(e) => {
                        seen.ended_early = true;
                        seen.error = Some(format!("watch error event: {} {}", e.code, e.message));
                        break;
                    }
                    _ => {}
                }
            }
            seen
        }));
    }

    // Wait (bounded) until every watch is open or failed.
    let setup_deadline = base + Duration::from_secs(60);
    while ready.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < plan.watchers
        && Instant::now() < setup_deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    out.setup = Some(base.elapsed());
    out.established = ready.load(Ordering::Relaxed);
    out.failed = plan.watchers - out.established;
    tokio::time::sleep(Duration::from_millis(200)).await;
    out.rss = server.rss();
    out.server_watchers = metric(client, "apiserver_registered_watchers")
        .await
        .map(|v| v as u64);

    let meter = server.meter();
    let writes = {
        let writer = writer.clone();
        let payload = payload.clone();
        stats::run(
            flat_out,
            plan.concurrency,
            plan.write_budget,
            PER_REQUEST,
            move |i| {
                let writer = writer.clone();
                let cm = config_map(&format!("w-{i:06}"), &payload);
                async move {
                    writer.create(&PostParams::default(), &cm).await?;
                    Ok(())
                }
            },
        )
        .await
    };
    let mut acked: Vec<Option<Instant>> = vec![None; want];
    for s in &writes.samples {
        acked[s.index] = Some(s.end);
    }
    out.writes = Phase::from(&writes);
    // Let the watchers catch up (bounded) before the CPU split and the paced writes.
    let due = writes.samples.len() * out.established;
    let catch_up = Instant::now() + Duration::from_secs(15);
    while delivered.load(Ordering::Relaxed) < due && Instant::now() < catch_up {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    out.cpu = meter.finish();

    let paced_deadline = Instant::now() + plan.write_budget;
    for (i, slot) in acked.iter_mut().enumerate().skip(flat_out) {
        if Instant::now() >= paced_deadline {
            break;
        }
        tokio::time::sleep(plan.paced_interval).await;
        let cm = config_map(&format!("w-{i:06}"), payload);
        match tokio::time::timeout(PER_REQUEST, writer.create(&PostParams::default(), &cm)).await {
            Ok(Ok(_)) => *slot = Some(Instant::now()),
            Ok(Err(e)) => {
                out.first_error.get_or_insert(format!("paced create: {e}"));
            }
            Err(_) => {
                out.first_error
                    .get_or_insert("paced create timed out".into());
            }
        }
    }
    let acked_count = acked.iter().flatten().count();
    expected.store(acked_count, Ordering::Release);
    let drain_ms = (base.elapsed() + Duration::from_secs(10)).as_millis();
    drain_deadline.store(
        u64::try_from(drain_ms).unwrap_or(u64::MAX - 1),
        Ordering::Release,
    );

    let writes_began = writes.samples.iter().map(|s| s.start).min();
    let mut last_flat_receipt: Option<Instant> = None;
    let mut delivery = Vec::with_capacity(acked_count * out.established);
    let mut paced = Vec::with_capacity(plan.paced_objects * out.established);
    for task in tasks {
        let seen = match tokio::time::timeout(Duration::from_secs(30), task).await {
            Ok(Ok(seen)) => seen,
            Ok(Err(e)) => {
                out.first_error.get_or_insert(format!("watcher task: {e}"));
                continue;
            }
            Err(_) => {
                out.first_error
                    .get_or_insert("watcher task did not finish".into());
                continue;
            }
        };
        if seen.ended_early {
            out.ended_early += 1;
        }
        if out.first_error.is_none() {
            out.first_error = seen.error;
        }
        for (i, at) in seen.received {
            if let Some(Some(ack)) = acked.get(i) {
                // An event may beat the writer's own response: that counts as 0.
                let took = at.saturating_duration_since(*ack);
                if i < flat_out {
                    delivery.push(took);
                    last_flat_receipt = last_flat_receipt.max(Some(at));
                } else {
                    paced.push(took);
                }
            }
        }
    }
    out.expected = acked_count * out.established;
    out.delivery = Latencies::new(delivery);
    out.paced_delivery = Latencies::new(paced);
    if let (Some(from), Some(to)) = (writes_began, last_flat_receipt) {
        let secs = (to - from).as_secs_f64();
        out.delivered_per_sec = (secs > 0.0).then(|| out.delivery.len() as f64 / secs);
    }
    Ok(())
}

/// `len` deterministic, incompressible-looking printable characters.
pub fn payload(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut state: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            char::from(ALPHABET[state as usize % ALPHABET.len()])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    /// Every way of cutting the body into chunks counts each item once.
    #[tokio::test]
    async fn items_are_counted_however_the_body_is_cut() {
        let body = br#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"uid":"a"},"data":{"k":"\"uid\":"}},{"kind":"ConfigMap","metadata":{"uid":"b"}},{"metadata":{"name":"c","uid":"c"}}]}"#;
        for size in 1..=body.len() {
            let chunks: Vec<std::io::Result<Vec<u8>>> =
                body.chunks(size).map(|c| Ok(c.to_vec())).collect();
            let stream = futures::stream::iter(chunks).into_async_read();
            assert_eq!(count_items(stream).await.unwrap(), 3, "chunks of {size}");
        }
    }
}
